//! Retransmission (RFC 9260 §6.3.3 T3-rtx, §7.2.4 fast retransmit; Linux
//! `sctp_sf_do_6_3_3_rtx()`, `sctp_retransmit()`, `sctp_retransmit_mark()`): which chunks
//! are marked for retransmission, the cwnd reaction, and where they go.
use super::outqueue::{TxChunk, TxState};
use super::{Assoc, MAX_ADDRS};
use crate::config::SctpConfig;
use wirelab_core::{Instant, Rng, SockEvent};

impl Assoc {
    /// T3-rtx (RFC 9260 §6.3.3; Linux `sctp_sf_do_6_3_3_rtx` + `sctp_retransmit(T3_RTX)`).
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
        // E1 (sctp_transport_lower_cwnd SCTP_LOWER_CWND_T3_RTX)
        self.paths[i].lower_cwnd_t3(cfg.pmtu);
        self.fast_recovery = None;
        let alt = self.alternate(i);
        self.mark_rtx(|c| c.path as usize == i, alt, false);
    }

    /// §7.2.4 fast retransmit; Linux `sctp_retransmit(SCTP_RTXR_FAST_RTX)`.
    pub(super) fn fast_retransmit(&mut self, cfg: &SctpConfig) {
        let mut paths_hit = [false; MAX_ADDRS];
        for k in 0..self.out.first_unsent {
            let c = self.out.q[k];
            if c.state == TxState::InFlight && c.misses >= 3 && !c.fast_done && (c.path as usize) < MAX_ADDRS {
                paths_hit[c.path as usize] = true;
            }
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
        let n = self.mark_rtx(|c| c.misses >= 3 && !c.fast_done, usize::MAX, true);
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

    /// Linux `sctp_retransmit_mark()`: chunks in flight matching `pred` leave flight and
    /// wait for retransmission to path `to`; returns how many were marked.
    pub(super) fn mark_rtx(&mut self, pred: impl Fn(&TxChunk) -> bool, to: usize, fast: bool) -> usize {
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
            if fast {
                c.fast_done = true;
            }
            self.out.rtx_count += 1;
            n += 1;
        }
        n
    }
}
