//! Retransmission (RFC 9260 §6.3.3 T3-rtx, §7.2.4 fast retransmit; Linux
//! `sctp_sf_do_6_3_3_rtx()`, `sctp_retransmit()`, `sctp_retransmit_mark()`): which chunks
//! are marked for retransmission, the cwnd reaction, and where they go.
use super::cmt::Pool;
use super::outqueue::{TxChunk, TxState};
use super::{Assoc, MAX_ADDRS};
use crate::config::SctpConfig;
use wirelab_core::{Instant, Rng, SockEvent};

impl Assoc {
    /// T3-rtx (RFC 9260 §6.3.3; Linux `sctp_sf_do_6_3_3_rtx` + `sctp_retransmit(T3_RTX)`).
    /// With CMT the retransmissions go where the RTX policy says (chosen, as FreeBSD's
    /// `sctp_t3rxt_timer()`, before the path's cwnd collapses), may not be fast
    /// retransmitted again (`no_fr_allowed`), the path leaves its fast recovery, and the
    /// resource-pooling modes set ssthresh.
    pub(super) fn t3_expired(&mut self, i: usize, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        self.paths[i].t3 = None;
        if self.paths[i].flight == 0 {
            return;
        }
        self.stats.t3_expiries += 1;
        if self.error_count >= cfg.association_max_retrans {
            self.fail(SockEvent::Reset, true);
            return;
        }
        self.strike(i, now, cfg, rng);
        let cmt = self.sock.cmt.on();
        let alt = if cmt { self.rtx_destination(cfg, i, rng) } else { self.alternate(i) };
        let pool = Pool::new(self.sock.cmt, &self.paths, cfg.pmtu);
        // E1 (sctp_transport_lower_cwnd SCTP_LOWER_CWND_T3_RTX)
        let p = &mut self.paths[i];
        let rp = pool.and_then(|pl| pl.t3_ssthresh(p));
        p.lower_cwnd_t3(cfg.pmtu);
        if let Some(ss) = rp {
            p.ssthresh = ss;
        }
        p.fast_recovery = None;
        self.fast_recovery = None;
        self.mark_rtx(|c| c.path as usize == i, alt, false, cmt);
    }

    /// §7.2.4 fast retransmit; Linux `sctp_retransmit(SCTP_RTXR_FAST_RTX)`. Without CMT
    /// the chunks go back to the path they were sent on and cwnd is lowered once per
    /// association fast recovery; with CMT each chunk goes where the RTX policy says
    /// (chosen, as FreeBSD's `sctp_strike_gap_ack_chunks()`, before the cwnd reduction) and
    /// each path lowers its cwnd once per fast recovery of its own
    /// (`sctp_cwnd_update_after_fr()`'s `net->fast_recovery_tsn`).
    pub(super) fn fast_retransmit(&mut self, cfg: &SctpConfig, rng: &mut Rng) {
        let mut paths_hit = [false; MAX_ADDRS];
        for k in 0..self.out.first_unsent {
            let c = self.out.q[k];
            if c.state == TxState::InFlight && c.misses >= 3 && !c.fast_done && (c.path as usize) < MAX_ADDRS {
                paths_hit[c.path as usize] = true;
            }
        }
        if self.sock.cmt.on() {
            self.fast_retransmit_cmt(cfg, rng, &paths_hit);
            return;
        }
        if self.fast_recovery.is_none() {
            for (i, p) in self.paths.iter_mut().enumerate() {
                if i < MAX_ADDRS && paths_hit[i] {
                    p.lower_cwnd_fast_rtx(cfg.pmtu);
                }
            }
            // §7.2.4 item 4: exit point = highest TSN outstanding (sent), not queued.
            self.fast_recovery = Some(self.out.highest_sent());
        }
        let n = self.mark_rtx(|c| c.misses >= 3 && !c.fast_done, usize::MAX, true, false);
        // fast retransmissions go back to the path they were sent on
        for k in 0..self.out.first_unsent {
            let c = &mut self.out.q[k];
            if c.state == TxState::NeedRtx && c.fast && c.rtx_path == u8::MAX {
                c.rtx_path = c.path;
            }
        }
        if n > 0 {
            self.stats.fast_retransmits += 1;
        }
    }

    fn fast_retransmit_cmt(&mut self, cfg: &SctpConfig, rng: &mut Rng, paths_hit: &[bool; MAX_ADDRS]) {
        let n = self.mark_rtx(|c| c.misses >= 3 && !c.fast_done, usize::MAX, true, false);
        for k in 0..self.out.first_unsent {
            let c = self.out.q[k];
            if c.state == TxState::NeedRtx && c.fast && c.rtx_path == u8::MAX {
                let to = self.rtx_destination(cfg, c.path as usize, rng);
                self.out.q[k].rtx_path = to as u8;
            }
        }
        let pool = Pool::new(self.sock.cmt, &self.paths, cfg.pmtu);
        let exit = self.out.highest_sent();
        for (i, p) in self.paths.iter_mut().enumerate().take(MAX_ADDRS) {
            if paths_hit[i] && p.fast_recovery.is_none() {
                match pool.and_then(|pl| pl.fr_ssthresh(p)) {
                    Some(ss) => {
                        p.ssthresh = ss;
                        p.cwnd = ss;
                        p.pba = 0;
                    }
                    None => p.lower_cwnd_fast_rtx(cfg.pmtu),
                }
                p.fast_recovery = Some(exit);
            }
        }
        if n > 0 {
            self.stats.fast_retransmits += 1;
        }
    }

    /// Linux `sctp_retransmit_mark()`: chunks in flight matching `pred` leave flight and
    /// wait for retransmission to path `to`; returns how many were marked.
    /// `no_fr`: the chunk may not be fast retransmitted later (FreeBSD's CMT
    /// `no_fr_allowed` on timeout retransmissions).
    pub(super) fn mark_rtx(&mut self, pred: impl Fn(&TxChunk) -> bool, to: usize, fast: bool, no_fr: bool) -> usize {
        let mut n = 0;
        for k in 0..self.out.first_unsent {
            let c = self.out.q[k];
            if c.state != TxState::InFlight || !pred(&c) {
                continue;
            }
            let p = &mut self.paths[c.path as usize];
            p.flight -= c.len;
            if c.probe {
                p.rtt_pending = false;
            }
            self.out.outstanding -= c.len as u64;
            self.peer_rwnd = self.peer_rwnd.saturating_add(c.len);
            let c = &mut self.out.q[k];
            c.state = TxState::NeedRtx;
            c.rtx_path = to as u8;
            c.probe = false;
            c.fast = fast;
            if fast || no_fr {
                c.fast_done = true;
            }
            self.out.rtx_count += 1;
            n += 1;
        }
        n
    }
}
