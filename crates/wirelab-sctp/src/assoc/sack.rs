//! SACK processing on the sender (RFC 9260 §6.2.1, §7.2; Linux `sctp_outq_sack()`,
//! `sctp_check_transmitted()`, `sctp_mark_missing()`): acked and gap-acked chunks leave
//! flight, miss indications trigger fast retransmit, cwnd grows per path, the send buffer
//! frees.
use super::cmt::{misses_for, Dac, Pool, SACK_CMT_DAC};
use super::outqueue::TxState;
use super::path::Increase;
use super::{Assoc, MAX_ADDRS};
use crate::config::{Cuc, SctpConfig};
use crate::types::*;
use crate::wire::*;
use wirelab_core::{Instant, Rng, SockEvent};

/// What walking the sent chunks against one SACK found.
struct Acked {
    /// Highest TSN newly acknowledged (cumulatively or by a gap block).
    htna: Option<Tsn>,
    /// Lowest TSN newly acknowledged by a gap block (CMT DAC).
    lowest_gap_newack: Option<Tsn>,
    /// Paths with a chunk newly acked by the cumulative TSN (§6.3.2 R3 restarts T3).
    restart_t3: [bool; MAX_ADDRS],
    /// Per path, the lowest TSN still unacknowledged after this SACK (in flight or waiting
    /// for retransmission): CMT's per-destination fast recovery ends when it passes the
    /// exit point.
    lowest_open: [Option<Tsn>; MAX_ADDRS],
}

impl Assoc {
    pub(super) fn on_sack(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng, s: &SackRepr<'_>) {
        if !matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownSent | AssocState::ShutdownReceived) {
            return;
        }
        let cum = s.cum_tsn;
        if cum < self.out.cum_acked {
            return; // §6.2.1 D i: out of order SACK
        }
        if cum > self.out.highest_sent() {
            return; // acks data never sent: ignore (Linux aborts on this violation)
        }
        for p in &mut self.paths {
            p.acked = 0;
            p.flight_before = p.flight;
            // CMT (FreeBSD sctp_handle_sack): per-SACK SFR and CUC state
            p.saw_newack = false;
            p.highest_newack = cum;
            p.new_pca = false;
        }
        let acked = self.check_transmitted(now, cfg, s);
        let cum_advanced = cum > self.out.cum_acked;
        let need_fr = self.mark_missing(cfg, s, &acked, cum_advanced);
        // Drop cumulatively acked chunks from the queue, freeing send buffer.
        self.out.cum_acked = cum;
        let (freed, bytes) = self.out.pop_acked(cum);
        self.stats.bytes_acked += bytes;
        // Fast recovery exit (§7.2.4 item 4); CMT's per-destination recovery ends when the
        // cumulative TSN or the path's own lowest open TSN passes its exit point.
        if self.fast_recovery.is_some_and(|x| cum >= x) {
            self.fast_recovery = None;
        }
        for (i, p) in self.paths.iter_mut().enumerate().take(MAX_ADDRS) {
            if p.fast_recovery.is_some_and(|x| cum >= x || acked.lowest_open[i].is_none_or(|t| t > x)) {
                p.fast_recovery = None;
            }
        }
        self.paths_after_sack(now, cfg, cum_advanced, &acked.restart_t3);
        self.update_active();
        // §6.2.1: peer rwnd = a_rwnd − bytes still outstanding.
        self.peer_rwnd = s.a_rwnd.saturating_sub(self.out.outstanding.min(u32::MAX as u64) as u32);
        if need_fr {
            self.fast_retransmit(cfg, rng);
        }
        if freed && self.out.want_writable {
            self.autotune_sndbuf(cfg);
        }
        if freed && self.out.want_writable && self.wspace() >= self.out.blocked_len.max(1) as i64 {
            self.out.want_writable = false;
            self.events.push(SockEvent::Writable);
        }
        self.check_shutdown_progress(now);
    }

    /// Linux `sctp_check_transmitted()`: chunks covered by the cumulative TSN or a gap
    /// block leave flight (RTT sample from an unretransmitted probe, Karn); gap-acked chunks
    /// no longer covered were reneged (§6.2.1) and go back in flight. Also records, per
    /// path, what CMT needs (FreeBSD `sctp_process_segment_range()`): whether any of its
    /// TSNs was newly acked (`saw_newack`), the highest one newly acked by a gap block, and
    /// whether its pseudo-cumack (its lowest TSN in flight, first transmissions and
    /// retransmissions tracked apart: CUCv2) was newly acked.
    fn check_transmitted(&mut self, now: Instant, cfg: &SctpConfig, s: &SackRepr<'_>) -> Acked {
        let cum = s.cum_tsn;
        let ng = s.num_gaps();
        let mut gi = 0usize;
        let mut r = Acked { htna: None, lowest_gap_newack: None, restart_t3: [false; MAX_ADDRS], lowest_open: [None; MAX_ADDRS] };
        // With CMT, SACKs come back over paths of different delay and overtake each other.
        // As FreeBSD's sctp_check_for_revoked(), only a SACK with gap blocks revokes, and
        // only up to its highest acked TSN; a revoked chunk's size is added to its path's
        // cwnd until it is acked again (Linux, and this engine without CMT, revoke every
        // gap-acked chunk the SACK does not cover).
        let cmt = self.sock.cmt.on();
        let highest_acked = if ng > 0 { cum.add(s.gap(ng - 1).end as u32) } else { cum };
        // per path: pseudo-cumack of first transmissions / of retransmissions already seen
        let mut pca_seen = [[false; 2]; MAX_ADDRS];
        for k in 0..self.out.first_unsent {
            let c = self.out.q[k];
            let pi = (c.path as usize).min(MAX_ADDRS - 1);
            let in_cum = c.tsn <= cum;
            let mut in_gap = false;
            if !in_cum {
                let off = c.tsn.diff(cum);
                while gi < ng && (s.gap(gi).end as i32) < off {
                    gi += 1;
                }
                if gi < ng {
                    let g = s.gap(gi);
                    in_gap = (g.start as i32) <= off && off <= g.end as i32;
                }
            }
            let is_pca = c.state == TxState::InFlight && !std::mem::replace(&mut pca_seen[pi][c.rtx as usize], true);
            if in_cum || in_gap {
                match c.state {
                    TxState::InFlight => {
                        let p = &mut self.paths[c.path as usize];
                        p.flight -= c.len;
                        p.acked += c.len;
                        self.out.outstanding -= c.len as u64;
                        if c.probe && !c.rtx {
                            p.rtt_sample(now.saturating_since(c.sent_at), cfg);
                        }
                        if c.revoked {
                            // FreeBSD: "deflate the cwnd"; not a new ack for SFR or CUC
                            p.cwnd = p.cwnd.saturating_sub(c.len).max(cfg.pmtu);
                            self.out.q[k].revoked = false;
                        } else {
                            p.bytes_acked += c.len as u64;
                            p.saw_newack = true;
                            p.new_pca |= is_pca;
                        }
                        if in_gap {
                            if c.tsn > p.highest_newack {
                                p.highest_newack = c.tsn;
                            }
                            r.lowest_gap_newack.get_or_insert(c.tsn);
                        }
                        r.htna = Some(c.tsn);
                        if in_cum && (c.path as usize) < MAX_ADDRS {
                            r.restart_t3[c.path as usize] = true;
                        }
                    }
                    TxState::NeedRtx => {
                        self.out.rtx_count -= 1;
                        r.htna = Some(c.tsn);
                    }
                    TxState::GapAcked | TxState::Unsent => {}
                }
                let cc = &mut self.out.q[k];
                cc.state = TxState::GapAcked;
                cc.probe = false;
            } else {
                // (the first missing TSN is revoked for certain: a SACK older than the one
                // that gap-acked it would have a lower cumulative TSN and was dropped)
                if c.state == TxState::GapAcked && (!cmt || (ng > 0 && c.tsn <= highest_acked) || c.tsn == cum.next()) {
                    // Reneged (§6.2.1): back in flight, awaiting ack or T3.
                    self.stats.reneged_chunks += 1;
                    let p = &mut self.paths[c.path as usize];
                    p.flight += c.len;
                    if cmt {
                        p.cwnd += c.len; // FreeBSD: compensate the inflated flight
                        self.out.q[k].revoked = true;
                    }
                    self.out.outstanding += c.len as u64;
                    self.out.q[k].state = TxState::InFlight;
                    if p.t3.is_none() {
                        p.t3 = Some(now + p.rto);
                    }
                }
                r.lowest_open[pi].get_or_insert(c.tsn);
            }
        }
        r
    }

    /// Miss indications (§7.2.4, the HTNA rule; Linux `sctp_mark_missing()`): every chunk
    /// in flight below the highest TSN newly acked gets one; true when one reaches 3.
    /// With CMT (FreeBSD `sctp_strike_gap_ack_chunks()`): split fast retransmit counts a
    /// miss only when a later TSN sent to the chunk's own path was newly gap-acked, and DAC
    /// adds one more when the SACK's DAC flag says two packets arrived, it acks one path
    /// only and nothing cumulatively (see `cmt::misses_for`).
    fn mark_missing(&mut self, cfg: &SctpConfig, s: &SackRepr<'_>, acked: &Acked, cum_advanced: bool) -> bool {
        let Some(h) = acked.htna else { return false };
        let cmt = self.sock.cmt.on();
        let sfr = cmt && cfg.cmt_sfr;
        let dac = self.dac_on(cfg).then(|| Dac {
            extra: s.flags & SACK_CMT_DAC != 0 && self.paths.iter().filter(|p| p.saw_newack).count() == 1,
            lowest_newack: if cum_advanced { s.cum_tsn } else { acked.lowest_gap_newack.unwrap_or(s.cum_tsn) },
        });
        let mut need_fr = false;
        for k in 0..self.out.first_unsent {
            let c = &mut self.out.q[k];
            if c.tsn >= h {
                break;
            }
            if c.state != TxState::InFlight || c.fast_done {
                continue;
            }
            let inc = if cmt { misses_for(sfr, dac, &self.paths[c.path as usize], c.tsn) } else { Some(1) };
            match inc {
                None => self.stats.sfr_withheld_misses += 1,
                Some(n) => {
                    self.stats.dac_extra_misses += (n - 1) as u64;
                    c.misses = c.misses.saturating_add(n);
                    if c.misses >= 3 {
                        need_fr = true;
                    }
                }
            }
        }
        need_fr
    }

    /// Per path after a SACK: cwnd growth (§7.2.1/§7.2.2), error counters cleared by an
    /// ack (§8.2/8.3), T3 stopped when nothing is in flight (§6.3.2 R2) or restarted when
    /// the cumulative TSN advanced over the path's data (R3). With CMT, whether a path's
    /// cwnd may grow is `net.inet.sctp.cmt_cuc` (CUC: also when its pseudo-cumack moved,
    /// FreeBSD `sctp_cwnd_update_after_sack_common()`), its fast recovery is its own, the
    /// resource-pooling modes size the step, and T3 restarts with the pseudo-cumack.
    fn paths_after_sack(&mut self, now: Instant, cfg: &SctpConfig, cum_advanced: bool, restart_t3: &[bool; MAX_ADDRS]) {
        let cmt = self.sock.cmt.on();
        let pool = Pool::new(self.sock.cmt, &self.paths, cfg.pmtu);
        let in_fr = self.fast_recovery.is_some();
        for (i, p) in self.paths.iter_mut().enumerate() {
            if p.acked > 0 {
                if !cmt {
                    p.raise_cwnd(in_fr, cfg.pmtu);
                } else if match cfg.cmt_cuc {
                    Cuc::Off => cum_advanced,
                    Cuc::On => cum_advanced || p.new_pca,
                    Cuc::Any => true,
                } {
                    if !cum_advanced && cfg.cmt_cuc == Cuc::On {
                        self.stats.cuc_cwnd_updates += 1;
                    }
                    let inc = pool.map_or(Increase { slow_start: p.acked.min(cfg.pmtu), avoidance: cfg.pmtu }, |pl| pl.increase(p));
                    p.raise_cwnd_by(p.fast_recovery.is_some(), inc);
                }
                p.error_count = 0;
                if p.state != PathState::Active {
                    p.state = PathState::Active;
                }
                self.error_count = 0;
            }
            let restart = if cmt { p.new_pca } else { i < MAX_ADDRS && restart_t3[i] && cum_advanced };
            if p.flight == 0 {
                p.pba = 0;
                p.t3 = None; // §6.3.2 R2
            } else if restart {
                p.t3 = Some(now + p.rto); // §6.3.2 R3
            }
        }
    }
}
