//! SACK processing on the sender (RFC 9260 §6.2.1, §7.2; Linux `sctp_outq_sack()`,
//! `sctp_check_transmitted()`, `sctp_mark_missing()`): acked and gap-acked chunks leave
//! flight, miss indications trigger fast retransmit, cwnd grows per path, the send buffer
//! frees.
use super::outqueue::TxState;
use super::{Assoc, MAX_ADDRS};
use crate::config::SctpConfig;
use crate::types::*;
use crate::wire::*;
use wirelab_core::{Instant, SockEvent};

/// What walking the sent chunks against one SACK found.
struct Acked {
    /// Highest TSN newly acknowledged (cumulatively or by a gap block).
    htna: Option<Tsn>,
    /// Paths with a chunk newly acked by the cumulative TSN (§6.3.2 R3 restarts T3).
    restart_t3: [bool; MAX_ADDRS],
}

impl Assoc {
    pub(super) fn on_sack(&mut self, now: Instant, cfg: &SctpConfig, s: &SackRepr<'_>) {
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
        }
        let acked = self.check_transmitted(now, cfg, s);
        let need_fr = self.mark_missing(acked.htna);
        // Drop cumulatively acked chunks from the queue, freeing send buffer.
        let cum_advanced = cum > self.out.cum_acked;
        self.out.cum_acked = cum;
        let (freed, bytes) = self.out.pop_acked(cum);
        self.stats.bytes_acked += bytes;
        // Fast recovery exit (§7.2.4 item 4).
        if self.fast_recovery.is_some_and(|x| cum >= x) {
            self.fast_recovery = None;
        }
        self.paths_after_sack(now, cfg, cum_advanced, &acked.restart_t3);
        self.update_active();
        // §6.2.1: peer rwnd = a_rwnd − bytes still outstanding.
        self.peer_rwnd = s.a_rwnd.saturating_sub(self.out.outstanding.min(u32::MAX as u64) as u32);
        if need_fr {
            self.fast_retransmit(cfg);
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
    /// no longer covered were reneged (§6.2.1) and go back in flight.
    fn check_transmitted(&mut self, now: Instant, cfg: &SctpConfig, s: &SackRepr<'_>) -> Acked {
        let cum = s.cum_tsn;
        let ng = s.num_gaps();
        let mut gi = 0usize;
        let mut r = Acked { htna: None, restart_t3: [false; MAX_ADDRS] };
        for k in 0..self.out.first_unsent {
            let c = self.out.q[k];
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
            } else if c.state == TxState::GapAcked {
                // Reneged (§6.2.1): back in flight, awaiting ack or T3.
                let p = &mut self.paths[c.path as usize];
                p.flight += c.len;
                self.out.outstanding += c.len as u64;
                self.out.q[k].state = TxState::InFlight;
                if p.t3.is_none() {
                    p.t3 = Some(now + p.rto);
                }
            }
        }
        r
    }

    /// Miss indications (§7.2.4, the HTNA rule; Linux `sctp_mark_missing()`): every chunk
    /// in flight below the highest TSN newly acked gets one; true when one reaches 3.
    fn mark_missing(&mut self, htna: Option<Tsn>) -> bool {
        let mut need_fr = false;
        if let Some(h) = htna {
            for k in 0..self.out.first_unsent {
                let c = &mut self.out.q[k];
                if c.tsn >= h {
                    break;
                }
                if c.state == TxState::InFlight && !c.fast_done {
                    c.misses = c.misses.saturating_add(1);
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
    /// the cumulative TSN advanced over the path's data (R3).
    fn paths_after_sack(&mut self, now: Instant, cfg: &SctpConfig, cum_advanced: bool, restart_t3: &[bool; MAX_ADDRS]) {
        let in_fr = self.fast_recovery.is_some();
        for (i, p) in self.paths.iter_mut().enumerate() {
            if p.acked > 0 {
                p.raise_cwnd(in_fr, cfg.pmtu);
                p.error_count = 0;
                if p.state != PathState::Active {
                    p.state = PathState::Active;
                }
                self.error_count = 0;
            }
            if p.flight == 0 {
                p.pba = 0;
                p.t3 = None; // §6.3.2 R2
            } else if i < MAX_ADDRS && restart_t3[i] && cum_advanced {
                p.t3 = Some(now + p.rto); // §6.3.2 R3
            }
        }
    }
}
