//! Reno (`tcp_reno_*` in net/ipv4/tcp_cong.c): slow start, additive increase of one
//! packet per window, halving on loss. NewReno recovery is the engine's, not the module's.
use super::{CcModule, CcSock, CongestionOps};
use crate::config::TcpConfig;

/// Registry entry.
pub const MODULE: CcModule = CcModule { name: "reno", new: new_module };

fn new_module(_cfg: &TcpConfig, _seed: u64) -> Box<dyn CongestionOps> {
    Box::new(Reno)
}

/// `tcp_reno` (no private state).
#[derive(Clone, Copy, Debug, Default)]
pub struct Reno;

impl CongestionOps for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }
    /// `tcp_reno_ssthresh()`.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        (tp.snd_cwnd >> 1).max(2)
    }
    /// `tcp_reno_cong_avoid()`.
    fn cong_avoid(&mut self, tp: &mut CcSock, acked: u32) {
        if !tp.cwnd_limited {
            return;
        }
        let mut acked = acked;
        if tp.in_slow_start() {
            acked = tp.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let w = tp.snd_cwnd;
        tp.cong_avoid_ai(w, acked);
    }
    /// `tcp_reno_undo_cwnd()`.
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        tp.snd_cwnd.max(tp.prior_cwnd)
    }
    fn needs_snapshot(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn reno_slow_start_then_ai() {
        let mut tp = CcSock::new(10, 1000);
        tp.cwnd_limited = true;
        let mut cc = Reno;
        cc.cong_avoid(&mut tp, 10);
        assert_eq!(tp.snd_cwnd, 20);
        tp.snd_ssthresh = 20;
        for _ in 0..20 {
            cc.cong_avoid(&mut tp, 1);
        }
        assert_eq!(tp.snd_cwnd, 21);
        assert_eq!(cc.ssthresh(&tp), 10);
        // not cwnd-limited: no growth (tcp_is_cwnd_limited gate)
        tp.cwnd_limited = false;
        cc.cong_avoid(&mut tp, 30);
        assert_eq!(tp.snd_cwnd, 21);
        tp.prior_cwnd = 30;
        assert_eq!(cc.undo_cwnd(&tp), 30);
    }
}
