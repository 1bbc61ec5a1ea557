//! CUBIC with HyStart, mirroring net/ipv4/tcp_cubic.c (Linux 6.x): `bictcp_update()`
//! with an exact integer cube root, fast convergence, TCP friendliness, the
//! `cubictcp_cwnd_event(TX_START)` epoch shift, and the HyStart ACK-train and delay
//! detectors with the era's `HYSTART_DELAY_MIN` (module parameters in [`CubicParams`]).
use super::{AckSample, CaEvent, CaState, CcModule, CcSock, CongestionOps};
use crate::config::{CubicParams, TcpConfig};
use crate::wire::SeqNumber;

/// Registry entry.
pub const MODULE: CcModule = CcModule { name: "cubic", new: new_module };

fn new_module(cfg: &TcpConfig, _seed: u64) -> Box<dyn CongestionOps> {
    Box::new(Cubic::new(cfg.cubic))
}

const BICTCP_BETA_SCALE: u64 = 1024;
const BICTCP_HZ: u32 = 10;
const HYSTART_ACK_TRAIN: u8 = 0x1;
const HYSTART_DELAY: u8 = 0x2;
const HYSTART_MIN_SAMPLES: u32 = 8;

/// CUBIC state (`struct bictcp`), mirroring net/ipv4/tcp_cubic.c (Linux 6.x).
#[derive(Clone, Debug)]
pub struct Cubic {
    p: CubicParams,
    beta_scale: u32,
    cube_rtt_scale: u64,
    cube_factor: u64,
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    bic_origin_point: u32,
    bic_k: u32,
    delay_min: u32,
    epoch_start: u32,
    ack_cnt: u32,
    tcp_cwnd: u32,
    sample_cnt: u32,
    found: bool,
    round_start: u64,
    end_seq: SeqNumber,
    last_ack: u64,
    curr_rtt: u32,
    /// Exposed for traces: whether HyStart ended slow start.
    pub hystart_found: bool,
}

/// Integer cube root (deterministic replacement for `cubic_root()`'s table+Newton).
fn icbrt(a: u64) -> u64 {
    if a == 0 {
        return 0;
    }
    let mut x = (a as f64).cbrt() as u64;
    // fix up to the exact floor; f64 is only a starting point
    while x > 0 && x.saturating_mul(x).saturating_mul(x) > a {
        x -= 1;
    }
    while (x + 1).saturating_mul(x + 1).saturating_mul(x + 1) <= a {
        x += 1;
    }
    x
}

impl Cubic {
    /// Module state with parameters `p`; `init` must run before use.
    pub fn new(p: CubicParams) -> Self {
        let beta = p.beta as u64;
        // cubictcp_register()
        let beta_scale = (8 * (BICTCP_BETA_SCALE + beta) / 3 / (BICTCP_BETA_SCALE - beta).max(1)) as u32;
        let cube_rtt_scale = p.bic_scale as u64 * 10;
        let cube_factor = (1u64 << (10 + 3 * BICTCP_HZ)) / (p.bic_scale as u64 * 10).max(1);
        Cubic {
            p,
            beta_scale,
            cube_rtt_scale,
            cube_factor,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            bic_origin_point: 0,
            bic_k: 0,
            delay_min: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            sample_cnt: 0,
            found: false,
            round_start: 0,
            end_seq: SeqNumber(0),
            last_ack: 0,
            curr_rtt: 0,
            hystart_found: false,
        }
    }

    /// `bictcp_reset()`.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.bic_origin_point = 0;
        self.bic_k = 0;
        self.delay_min = 0;
        self.epoch_start = 0;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    /// `bictcp_hystart_reset()`.
    fn hystart_reset(&mut self, tp: &CcSock) {
        self.round_start = tp.now_us;
        self.last_ack = tp.now_us;
        self.end_seq = tp.snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// `cubictcp_cwnd_event(CA_EVENT_TX_START)`: shift the epoch by the idle time so
    /// the cubic curve does not jump after an application-limited pause.
    fn on_tx_start(&mut self, tp: &CcSock) {
        if self.epoch_start != 0 {
            let delta = tp.jiffies.wrapping_sub(tp.lsndtime) as i32;
            if delta > 0 {
                self.epoch_start = self.epoch_start.wrapping_add(delta as u32);
                if (self.epoch_start.wrapping_sub(tp.jiffies) as i32) > 0 {
                    self.epoch_start = tp.jiffies;
                }
            }
        }
    }

    /// `bictcp_update()`.
    fn update(&mut self, tp: &CcSock, cwnd: u32, acked: u32) {
        let hz = tp.hz.max(1);
        let now = tp.jiffies;
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i32) <= (hz / 32) as i32 {
            return;
        }
        let skip_to_friendliness = self.epoch_start != 0 && now == self.last_time;
        if !skip_to_friendliness {
            self.last_cwnd = cwnd;
            self.last_time = now;
            if self.epoch_start == 0 {
                self.epoch_start = now.max(1); // 0 means "no epoch"
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.bic_k = 0;
                    self.bic_origin_point = cwnd;
                } else {
                    self.bic_k =
                        icbrt(self.cube_factor * (self.last_max_cwnd - cwnd) as u64) as u32;
                    self.bic_origin_point = self.last_max_cwnd;
                }
            }
            // t = time since epoch + delay_min, in 1/1024 s (BICTCP_HZ)
            let mut t = now.wrapping_sub(self.epoch_start) as u64;
            t += (self.delay_min as u64 * hz as u64).div_ceil(1_000_000); // usecs_to_jiffies
            t = (t << BICTCP_HZ) / hz as u64;
            let offs = t.abs_diff(self.bic_k as u64);
            let delta = self.cube_rtt_scale.saturating_mul(offs).saturating_mul(offs).saturating_mul(offs)
                >> (10 + 3 * BICTCP_HZ);
            let target = if t < self.bic_k as u64 {
                (self.bic_origin_point as u64).saturating_sub(delta)
            } else {
                self.bic_origin_point as u64 + delta
            };
            self.cnt = if target > cwnd as u64 {
                (cwnd as u64 / (target - cwnd as u64)) as u32
            } else {
                100 * cwnd
            };
            // The initial growth of the cubic function may be too conservative when the
            // available bandwidth is still unknown.
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }
        // tcp_friendliness: Reno-equivalent window estimate
        if self.p.tcp_friendliness {
            let delta = (cwnd * self.beta_scale) >> 3;
            let delta = delta.max(1);
            while self.ack_cnt > delta {
                self.ack_cnt -= delta;
                self.tcp_cwnd += 1;
            }
            if self.tcp_cwnd > cwnd {
                let d = self.tcp_cwnd - cwnd;
                let max_cnt = cwnd / d;
                if self.cnt > max_cnt {
                    self.cnt = max_cnt;
                }
            }
        }
        self.cnt = self.cnt.max(2);
    }

    /// `cubictcp_cong_avoid()`.
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
        let cwnd = tp.snd_cwnd;
        self.update(tp, cwnd, acked);
        let cnt = self.cnt;
        tp.cong_avoid_ai(cnt, acked);
    }

    /// `cubictcp_recalc_ssthresh()`.
    fn recalc_ssthresh(&mut self, tp: &CcSock) -> u32 {
        self.epoch_start = 0; // end of epoch
        let cwnd = tp.snd_cwnd;
        if cwnd < self.last_max_cwnd && self.p.fast_convergence {
            self.last_max_cwnd =
                ((cwnd as u64 * (BICTCP_BETA_SCALE + self.p.beta as u64)) / (2 * BICTCP_BETA_SCALE)) as u32;
        } else {
            self.last_max_cwnd = cwnd;
        }
        (((cwnd as u64 * self.p.beta as u64) / BICTCP_BETA_SCALE) as u32).max(2)
    }

    /// `hystart_update()`.
    fn hystart_update(&mut self, tp: &mut CcSock, delay: u32) {
        if tp.snd_una.after(self.end_seq) {
            self.hystart_reset(tp);
        }
        if self.p.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = tp.now_us;
            if now.saturating_sub(self.last_ack) <= self.p.hystart_ack_delta_us as u64 {
                self.last_ack = now;
                // no pacing: threshold = delay_min / 2 (hystart_ack_delay() is 0 without
                // a pacing rate in our model)
                let threshold = (self.delay_min as u64) >> 1;
                if now.saturating_sub(self.round_start) > threshold {
                    self.found = true;
                    self.hystart_found = true;
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }
        if self.p.hystart_detect & HYSTART_DELAY != 0 {
            if self.curr_rtt > delay {
                self.curr_rtt = delay;
            }
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let thresh = (self.delay_min >> 3)
                    .clamp(self.p.hystart_delay_min_us, self.p.hystart_delay_max_us);
                if self.curr_rtt > self.delay_min + thresh {
                    self.found = true;
                    self.hystart_found = true;
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }
    }

    /// `cubictcp_acked()`.
    fn acked(&mut self, tp: &mut CcSock, rtt_us: Option<u64>) {
        let Some(rtt) = rtt_us else { return };
        // Discard delay samples right after fast recovery.
        if self.epoch_start != 0 && (tp.jiffies.wrapping_sub(self.epoch_start) as i32) < tp.hz as i32 {
            return;
        }
        let delay = (rtt.min(u32::MAX as u64) as u32).max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && tp.in_slow_start() && self.p.hystart && tp.snd_cwnd >= self.p.hystart_low_window
        {
            self.hystart_update(tp, delay);
        }
    }
}


impl CongestionOps for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    /// `cubictcp_init()`.
    fn init(&mut self, tp: &mut CcSock) {
        self.reset();
        if self.p.hystart {
            self.hystart_reset(tp);
        }
    }
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        self.recalc_ssthresh(tp)
    }
    fn cong_avoid(&mut self, tp: &mut CcSock, acked: u32) {
        Cubic::cong_avoid(self, tp, acked)
    }
    /// `cubictcp_state()`.
    fn set_state(&mut self, tp: &mut CcSock, new: CaState) {
        if new == CaState::Loss {
            self.reset();
            self.hystart_reset(tp);
        }
    }
    /// `cubictcp_cwnd_event()`.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if ev == CaEvent::TxStart {
            self.on_tx_start(tp);
        }
    }
    fn pkts_acked(&mut self, tp: &mut CcSock, sample: &AckSample) {
        self.acked(tp, sample.rtt_us);
    }
    /// `tcp_reno_undo_cwnd()`, as CUBIC uses it.
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

    fn sock() -> CcSock {
        let mut tp = CcSock::new(10, 1000);
        tp.cwnd_limited = true;
        tp.jiffies = 1;
        tp.now_us = 1000;
        tp
    }

    fn cubic(tp: &CcSock) -> Cubic {
        let mut c = Cubic::new(CubicParams::default());
        c.init(&mut tp.clone());
        c
    }

    #[test]
    fn cube_root_exact() {
        for a in [0u64, 1, 7, 8, 26, 27, 1_000_000, 123_456_789_012] {
            let r = icbrt(a);
            assert!(r * r * r <= a && (r + 1) * (r + 1) * (r + 1) > a, "{a}");
        }
    }

    #[test]
    fn cubic_beta_and_fast_convergence() {
        let mut tp = sock();
        let mut cc = cubic(&tp);
        tp.snd_cwnd = 100;
        assert_eq!(CongestionOps::ssthresh(&mut cc, &tp), 70); // 100*717/1024
        tp.snd_cwnd = 80; // below last_max 100: fast convergence
        CongestionOps::ssthresh(&mut cc, &tp);
        assert_eq!(cc.last_max_cwnd, 80 * (1024 + 717) / 2048);
    }

    #[test]
    fn cubic_grows_back_to_wmax_around_k() {
        // After a loss at W_max=100 and cwnd=70, cubic should regain ~100 at t≈K:
        // K = cbrt(W_max*(1-beta)/C) = cbrt(100*0.3/0.4) ≈ 4.2 s.
        let mut tp = sock();
        let mut cc = cubic(&tp);
        tp.snd_cwnd = 100;
        tp.snd_ssthresh = CongestionOps::ssthresh(&mut cc, &tp);
        tp.snd_cwnd = tp.snd_ssthresh;
        // ACK clock: one ACK per packet, RTT 100 ms -> cwnd ACKs per 100 ms
        let mut t_ms = 1u64;
        let mut at_k = 0;
        while t_ms < 8000 {
            tp.jiffies = t_ms as u32;
            tp.now_us = t_ms * 1000;
            let acks = tp.snd_cwnd as u64;
            for _ in 0..acks {
                CongestionOps::cong_avoid(&mut cc, &mut tp, 1);
            }
            if t_ms >= 4200 && at_k == 0 {
                at_k = tp.snd_cwnd;
            }
            t_ms += 100;
        }
        assert!((90..=110).contains(&at_k), "cwnd at K = {at_k}");
        assert!(tp.snd_cwnd >= 115, "convex growth after K: {}", tp.snd_cwnd);
    }
}
