//! DCTCP (net/ipv4/tcp_dctcp.c, tcp_dctcp.h; Alizadeh et al., SIGCOMM 2010): Reno's
//! window growth, but on ECN marks cwnd shrinks by alpha/2, where alpha is a moving
//! average (gain g = 1/2^`dctcp_shift_g`) of the fraction of packets delivered with ECE
//! per window. The receiver echoes CE exactly: each change of the CE state of arriving
//! data forces an immediate ACK (first, if an ACK was being delayed, one for the data
//! before the change with the old ECE).
//!
//! Needs ECN (`TCP_CONG_NEEDS_ECN`): negotiated whatever `tcp_ecn` says, ECT on every
//! packet. Without ECN on the connection it falls back to Reno (`dctcp-reno`).
use super::{reno::Reno, CaEvent, CaState, CcInfo, CcModule, CcSock, CongestionOps};
use crate::config::{DctcpParams, TcpConfig};
use crate::wire::SeqNumber;

/// Registry entry.
pub const MODULE: CcModule = CcModule { name: "dctcp", new: new_module };

fn new_module(cfg: &TcpConfig, _seed: u64) -> Box<dyn CongestionOps> {
    Box::new(Dctcp::new(cfg.dctcp))
}

/// `DCTCP_MAX_ALPHA`: alpha is out of 1024.
pub const DCTCP_MAX_ALPHA: u32 = 1024;

/// `struct dctcp`.
#[derive(Clone, Debug)]
pub struct Dctcp {
    p: DctcpParams,
    old_delivered: u32,
    old_delivered_ce: u32,
    prior_rcv_nxt: SeqNumber,
    /// `dctcp_alpha` (out of 1024).
    pub alpha: u32,
    next_seq: SeqNumber,
    /// `ce_state`: the last data segment received was CE (1) or not (0).
    pub ce_state: u32,
    loss_cwnd: u32,
    /// `icsk_ca_ops == &dctcp_reno`: no ECN on this connection.
    pub fallback: bool,
}

impl Dctcp {
    /// Module state with parameters `p`; `init` must run before use.
    pub fn new(p: DctcpParams) -> Self {
        Dctcp {
            p,
            old_delivered: 0,
            old_delivered_ce: 0,
            prior_rcv_nxt: SeqNumber(0),
            alpha: 0,
            next_seq: SeqNumber(0),
            ce_state: 0,
            loss_cwnd: 0,
            fallback: false,
        }
    }

    /// `dctcp_reset()`: a new observation window starts.
    fn reset(&mut self, tp: &CcSock) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered = tp.delivered;
        self.old_delivered_ce = tp.delivered_ce;
    }

    /// `dctcp_update_alpha()`, once per window of data: alpha = (1 − g)·alpha + g·F.
    fn update_alpha(&mut self, tp: &CcSock) {
        if tp.snd_una.before(self.next_seq) {
            return;
        }
        let shift_g = self.p.shift_g;
        let mut delivered_ce = tp.delivered_ce.wrapping_sub(self.old_delivered_ce);
        let mut alpha = self.alpha;
        // min_not_zero(alpha, alpha >> dctcp_shift_g)
        let dec = if alpha >> shift_g == 0 { alpha } else { alpha >> shift_g };
        alpha -= dec.min(alpha);
        if delivered_ce != 0 {
            let delivered = tp.delivered.wrapping_sub(self.old_delivered);
            delivered_ce <<= 10 - shift_g;
            delivered_ce /= delivered.max(1);
            alpha = (alpha + delivered_ce).min(DCTCP_MAX_ALPHA);
        }
        self.alpha = alpha;
        self.reset(tp);
    }

    /// `dctcp_react_to_loss()`: a loss halves the window like Reno.
    fn react_to_loss(&mut self, tp: &mut CcSock) {
        self.loss_cwnd = tp.snd_cwnd;
        tp.snd_ssthresh = (tp.snd_cwnd >> 1).max(2);
    }

    /// `dctcp_ece_ack_update()`: the CE state machine of the receiver.
    fn ece_ack_update(&mut self, tp: &mut CcSock, ev: CaEvent) {
        let new_state = (ev == CaEvent::EcnIsCe) as u32;
        if self.ce_state != new_state {
            // CE state changed: force an immediate ACK to reflect it; if an ACK was
            // delayed, send that first with the prior CE state (dctcp_ece_ack_cwr)
            if tp.ack_timer_pending {
                tp.tx_ack = Some((self.prior_rcv_nxt, self.ce_state == 1));
            }
            tp.ack_now = true;
        }
        self.prior_rcv_nxt = tp.rcv_nxt;
        self.ce_state = new_state;
        tp.demand_cwr = new_state == 1;
    }
}

impl CongestionOps for Dctcp {
    fn name(&self) -> &'static str {
        if self.fallback {
            "dctcp-reno"
        } else {
            "dctcp"
        }
    }
    /// `dctcp_init()`: without ECN, `dctcp_reno` takes over.
    fn init(&mut self, tp: &mut CcSock) {
        if !tp.ecn_ok {
            self.fallback = true;
            return;
        }
        self.prior_rcv_nxt = tp.rcv_nxt;
        self.alpha = self.p.alpha_on_init.min(DCTCP_MAX_ALPHA);
        self.loss_cwnd = 0;
        self.ce_state = 0;
        self.reset(tp);
    }
    fn needs_ecn(&self) -> bool {
        !self.fallback
    }
    /// `dctcp_ssthresh()`: cwnd · (1 − alpha/2).
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        if self.fallback {
            return Reno.ssthresh(tp);
        }
        self.loss_cwnd = tp.snd_cwnd;
        (tp.snd_cwnd - ((tp.snd_cwnd as u64 * self.alpha as u64) >> 11) as u32).max(2)
    }
    /// `tcp_reno_cong_avoid()`.
    fn cong_avoid(&mut self, tp: &mut CcSock, acked: u32) {
        Reno.cong_avoid(tp, acked)
    }
    /// `dctcp_state()`: fast recovery reacts to loss like Reno (RTO: `cwnd_event`).
    fn set_state(&mut self, tp: &mut CcSock, new: CaState) {
        if !self.fallback && new == CaState::Recovery {
            self.react_to_loss(tp);
        }
    }
    /// `dctcp_cwnd_event()`.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if self.fallback {
            return;
        }
        match ev {
            CaEvent::EcnIsCe | CaEvent::EcnNoCe => self.ece_ack_update(tp, ev),
            CaEvent::Loss => self.react_to_loss(tp),
            _ => {}
        }
    }
    /// `dctcp_update_alpha()` as `in_ack_event`.
    fn in_ack_event(&mut self, tp: &CcSock, _flags: u32) {
        if !self.fallback {
            self.update_alpha(tp);
        }
    }
    /// `dctcp_cwnd_undo()`.
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        if self.fallback {
            return Reno.undo_cwnd(tp);
        }
        tp.snd_cwnd.max(self.loss_cwnd)
    }
    /// `dctcp_get_info()`.
    fn get_info(&self, tp: &CcSock) -> CcInfo {
        if self.fallback {
            return CcInfo::Dctcp { enabled: 0, ce_state: 0, alpha: 0, ab_ecn: 0, ab_tot: 0 };
        }
        CcInfo::Dctcp {
            enabled: 1,
            ce_state: self.ce_state as u16,
            alpha: self.alpha,
            ab_ecn: tp.mss_cache.wrapping_mul(tp.delivered_ce.wrapping_sub(self.old_delivered_ce)),
            ab_tot: tp.mss_cache.wrapping_mul(tp.delivered.wrapping_sub(self.old_delivered)),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn sock() -> CcSock {
        let mut tp = CcSock::new(100, 1000);
        tp.ecn_ok = true;
        tp
    }

    #[test]
    fn alpha_update_by_hand() {
        let mut tp = sock();
        let mut d = Dctcp::new(DctcpParams::default());
        d.init(&mut tp);
        assert_eq!(d.alpha, 1024, "dctcp_alpha_on_init");
        // one window (snd_nxt 10 000): 100 delivered, 25 with ECE
        tp.snd_nxt = SeqNumber(10_000);
        d.in_ack_event(&tp, 0); // snd_una 0 >= next_seq 0: a window closes with F = 0
        assert_eq!(d.alpha, 1024 - 64); // alpha -= alpha >> 4
        tp.delivered = 100;
        tp.delivered_ce = 25;
        tp.snd_una = SeqNumber(5_000);
        d.in_ack_event(&tp, 0); // window not over yet
        assert_eq!(d.alpha, 960);
        tp.snd_una = SeqNumber(10_000);
        d.in_ack_event(&tp, 0);
        // 960 - 60 + (25 << 6) / 100 = 900 + 16
        assert_eq!(d.alpha, 916);
        // the reduction is cwnd · alpha / 2
        tp.snd_cwnd = 100;
        assert_eq!(d.ssthresh(&tp), 100 - ((100 * 916) >> 11));
        // g = 1/2: alpha halves and adds F/2 · 1024
        let mut d2 = Dctcp::new(DctcpParams { shift_g: 1, alpha_on_init: 0 });
        let mut tp2 = sock();
        d2.init(&mut tp2);
        tp2.delivered = 10;
        tp2.delivered_ce = 10;
        d2.in_ack_event(&tp2, 0);
        assert_eq!(d2.alpha, 512);
        // shift_g 0: alpha = F
        let mut d3 = Dctcp::new(DctcpParams { shift_g: 0, alpha_on_init: 300 });
        let mut tp3 = sock();
        d3.init(&mut tp3);
        tp3.delivered = 4;
        tp3.delivered_ce = 1;
        d3.in_ack_event(&tp3, 0);
        assert_eq!(d3.alpha, 256);
    }

    #[test]
    fn ce_state_changes_force_acks() {
        let mut tp = sock();
        let mut d = Dctcp::new(DctcpParams::default());
        d.init(&mut tp);
        tp.rcv_nxt = SeqNumber(1000);
        d.cwnd_event(&mut tp, CaEvent::EcnNoCe);
        assert!(!tp.ack_now && tp.tx_ack.is_none() && !tp.demand_cwr);
        // CE after non-CE with a delayed ACK pending: ACK the old data without ECE first
        tp.ack_timer_pending = true;
        tp.rcv_nxt = SeqNumber(2000);
        d.cwnd_event(&mut tp, CaEvent::EcnIsCe);
        assert_eq!(tp.tx_ack, Some((SeqNumber(1000), false)));
        assert!(tp.ack_now && tp.demand_cwr);
        assert_eq!(d.ce_state, 1);
        // back to non-CE: immediate ACK (no delayed one pending)
        tp.tx_ack = None;
        tp.ack_now = false;
        tp.ack_timer_pending = false;
        tp.rcv_nxt = SeqNumber(3000);
        d.cwnd_event(&mut tp, CaEvent::EcnNoCe);
        assert!(tp.ack_now && tp.tx_ack.is_none() && !tp.demand_cwr);
    }

    #[test]
    fn without_ecn_it_is_reno() {
        let mut tp = CcSock::new(100, 1000);
        let mut d = Dctcp::new(DctcpParams::default());
        d.init(&mut tp);
        assert_eq!((d.name(), d.needs_ecn()), ("dctcp-reno", false));
        assert_eq!(d.ssthresh(&tp), 50);
        // loss in recovery: Reno's halving
        let mut tp = sock();
        let mut d = Dctcp::new(DctcpParams::default());
        d.init(&mut tp);
        d.set_state(&mut tp, CaState::Recovery);
        assert_eq!(tp.snd_ssthresh, 50);
        tp.snd_cwnd = 10;
        assert_eq!(d.undo_cwnd(&tp), 100);
    }
}
