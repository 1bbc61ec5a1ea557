//! TCP Vegas (net/ipv4/tcp_vegas.c; Brakmo and Peterson, JSAC 1995): once per RTT,
//! compare the expected and the actual rate from the minimum RTT of that round against
//! the base RTT; keep between `alpha` and `beta` packets queued, leave slow start when
//! more than `gamma` are. Loss handling is Reno's.
use super::{reno::Reno, CaEvent, CaState, CcInfo, CcModule, CcSock, CongestionOps};
use crate::config::{TcpConfig, VegasParams};
use crate::wire::SeqNumber;

/// Registry entry.
pub const MODULE: CcModule = CcModule { name: "vegas", new: new_module };

fn new_module(cfg: &TcpConfig, _seed: u64) -> Box<dyn CongestionOps> {
    Box::new(Vegas::new(cfg.vegas))
}

/// `struct vegas`.
#[derive(Clone, Debug)]
pub struct Vegas {
    p: VegasParams,
    /// `doing_vegas_now`.
    pub doing_vegas_now: bool,
    beg_snd_nxt: SeqNumber,
    /// `baseRTT` (µs + 1): the minimum RTT ever seen.
    pub base_rtt: u32,
    /// `minRTT` (µs + 1): the minimum RTT of this round.
    pub min_rtt: u32,
    /// `cntRTT`: RTT samples this round.
    pub cnt_rtt: u32,
}

impl Vegas {
    /// Module state with parameters `p`; `init` must run before use.
    pub fn new(p: VegasParams) -> Self {
        Vegas { p, doing_vegas_now: false, beg_snd_nxt: SeqNumber(0), base_rtt: 0x7fff_ffff, min_rtt: 0x7fff_ffff, cnt_rtt: 0 }
    }

    /// `vegas_enable()`: start sampling at the next send window.
    fn enable(&mut self, tp: &CcSock) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = tp.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt = 0x7fff_ffff;
    }

    /// `tcp_vegas_ssthresh()`.
    fn vegas_ssthresh(tp: &CcSock) -> u32 {
        tp.snd_ssthresh.min(tp.snd_cwnd)
    }

    /// `tcp_current_ssthresh()`.
    fn current_ssthresh(tp: &CcSock) -> u32 {
        if matches!(tp.ca_state, CaState::Cwr | CaState::Recovery) {
            tp.snd_ssthresh
        } else {
            tp.snd_ssthresh.max((tp.snd_cwnd >> 1) + (tp.snd_cwnd >> 2))
        }
    }

    /// The once-per-RTT Vegas adjustment.
    fn adjust(&mut self, tp: &mut CcSock, acked: u32) {
        let rtt = self.min_rtt as u64;
        let base = self.base_rtt as u64;
        // expected cwnd at the actual rate: cwnd · baseRTT / rtt
        let target_cwnd = tp.snd_cwnd as u64 * base / rtt;
        // "Diff": packets queued at the bottleneck
        let diff = (tp.snd_cwnd as u64 * (rtt - base) / base) as u32;
        if diff > self.p.gamma && tp.in_slow_start() {
            // going too fast: leave slow start at the actual rate (+1 for truncation)
            tp.snd_cwnd = tp.snd_cwnd.min(target_cwnd as u32 + 1);
            tp.snd_ssthresh = Self::vegas_ssthresh(tp);
        } else if tp.in_slow_start() {
            tp.slow_start(acked);
        } else if diff > self.p.beta {
            tp.snd_cwnd -= 1;
            tp.snd_ssthresh = Self::vegas_ssthresh(tp);
        } else if diff < self.p.alpha {
            tp.snd_cwnd += 1;
        }
        tp.snd_cwnd = tp.snd_cwnd.clamp(2, tp.snd_cwnd_clamp.max(2));
        tp.snd_ssthresh = Self::current_ssthresh(tp);
    }
}

impl CongestionOps for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }
    /// `tcp_vegas_init()`.
    fn init(&mut self, tp: &mut CcSock) {
        self.base_rtt = 0x7fff_ffff;
        self.enable(tp);
    }
    /// `tcp_reno_ssthresh()`.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        Reno.ssthresh(tp)
    }
    /// `tcp_vegas_cong_avoid()`: the ACK number is `snd_una` after this ACK.
    fn cong_avoid(&mut self, tp: &mut CcSock, acked: u32) {
        if !self.doing_vegas_now {
            return Reno.cong_avoid(tp, acked);
        }
        if tp.snd_una.after(self.beg_snd_nxt) {
            self.beg_snd_nxt = tp.snd_nxt;
            // fewer than 3 samples means delayed ACKs only: behave like Reno
            if self.cnt_rtt <= 2 {
                Reno.cong_avoid(tp, acked);
            } else {
                self.adjust(tp, acked);
            }
            self.cnt_rtt = 0;
            self.min_rtt = 0x7fff_ffff;
        } else if tp.in_slow_start() {
            tp.slow_start(acked);
        }
    }
    /// `tcp_vegas_pkts_acked()`.
    fn pkts_acked(&mut self, _tp: &mut CcSock, sample: &super::AckSample) {
        let Some(rtt) = sample.rtt_us else { return };
        // never allow zero rtt or baseRTT
        let vrtt = (rtt.min(0x7fff_fffe) as u32) + 1;
        self.base_rtt = self.base_rtt.min(vrtt);
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt += 1;
    }
    /// `tcp_vegas_state()`.
    fn set_state(&mut self, tp: &mut CcSock, new: CaState) {
        if new == CaState::Open {
            self.enable(tp);
        } else {
            self.doing_vegas_now = false;
        }
    }
    /// `tcp_vegas_cwnd_event()`: restart after idle.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if matches!(ev, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.init(tp);
        }
    }
    /// `tcp_reno_undo_cwnd()`.
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        Reno.undo_cwnd(tp)
    }
    /// `tcp_vegas_get_info()`.
    fn get_info(&self, _tp: &CcSock) -> CcInfo {
        CcInfo::Vegas { enabled: self.doing_vegas_now as u32, rttcnt: self.cnt_rtt, rtt: self.base_rtt, minrtt: self.min_rtt }
    }
}

#[cfg(test)]
mod test {
    use super::super::AckSample;
    use super::*;

    fn round(v: &mut Vegas, tp: &mut CcSock, rtt_us: u64, acks: u32) {
        for _ in 0..acks {
            v.pkts_acked(tp, &AckSample { pkts_acked: 1, rtt_us: Some(rtt_us), in_flight: 0 });
        }
        // the round's data was sent after the last adjustment and is ACKed now
        tp.snd_nxt = tp.snd_nxt + 100_000;
        tp.snd_una = tp.snd_nxt;
        v.cong_avoid(tp, 1);
    }

    #[test]
    fn keeps_alpha_to_beta_packets_queued() {
        let mut tp = CcSock::new(10, 1000);
        tp.cwnd_limited = true;
        let mut v = Vegas::new(VegasParams::default());
        v.init(&mut tp);
        // base RTT 100 ms, no queue: slow start goes on (+1 for this one ACK)
        round(&mut v, &mut tp, 99_999, 3);
        assert_eq!(tp.snd_cwnd, 11);
        // 20 % more: diff = 10 · 0.2 = 2 > gamma in slow start -> cwnd to the actual rate
        // + 1 = 10·100/120 + 1 = 9, slow start over
        tp.snd_cwnd = 10;
        round(&mut v, &mut tp, 119_999, 3);
        assert_eq!(tp.snd_cwnd, 9);
        assert_eq!(tp.snd_ssthresh, 9);
        assert!(!tp.in_slow_start());
        // no queueing: diff 0 < alpha -> +1 per RTT
        round(&mut v, &mut tp, 99_999, 3);
        assert_eq!(tp.snd_cwnd, 10);
        // 3 packets queued (alpha..=beta): hold
        tp.snd_cwnd = 20;
        round(&mut v, &mut tp, 114_999, 3); // diff = 20 · 15/100 = 3
        assert_eq!(tp.snd_cwnd, 20);
        // 6 queued (> beta): -1
        round(&mut v, &mut tp, 129_999, 3);
        assert_eq!(tp.snd_cwnd, 19);
        // too few samples: Reno's additive increase instead
        let c = tp.snd_cwnd;
        round(&mut v, &mut tp, 99_999, 2);
        assert!(tp.snd_cwnd <= c + 1);
        assert_eq!(v.get_info(&tp), CcInfo::Vegas { enabled: 1, rttcnt: 0, rtt: 100_000, minrtt: 0x7fff_ffff });
    }
}
