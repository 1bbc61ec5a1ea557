//! The RTT estimator and RTO (`tcp_rtt_estimator()`, `__tcp_set_rto()`,
//! `tcp_bound_rto()`, `tcp_ack_update_rtt()` in tcp_input.c; `tcp_probe0_when()`).
//!
//! Times in µs with Linux's fixed-point scaling: `srtt_us` is srtt << 3, `mdev_us` is
//! mdev << 2; `rttvar_us` and `mdev_max_us` are plain.
use super::timer::round_jiffies;
use crate::config::TcpConfig;
use crate::wire::SeqNumber;
use wirelab_core::Duration;

/// `srtt_us`, `mdev_us`, `mdev_max_us`, `rttvar_us`, `rtt_seq`, `icsk_rto`,
/// `icsk_backoff` and the minimum RTT of a connection.
#[derive(Clone, Debug)]
pub(crate) struct RttEstimator {
    /// Smoothed RTT << 3 (µs); 0 = no sample yet.
    pub srtt_us: u32,
    /// Mean deviation << 2 (µs).
    pub mdev_us: u32,
    /// Maximal mdev over the last RTT (µs).
    pub mdev_max_us: u32,
    /// RTT variance used for the RTO (µs), never below `rto_min`.
    pub rttvar_us: u32,
    /// `snd_nxt` when the per-RTT `mdev_max` decay last ran.
    pub rtt_seq: SeqNumber,
    /// Current RTO, backoff included (`icsk_rto`).
    pub rto: Duration,
    /// Exponential backoff count (`icsk_backoff`).
    pub backoff: u32,
    /// Minimum RTT seen (µs; `u32::MAX` = none). Linux keeps a 5-minute windowed minimum
    /// (`tcp_min_rtt()`); this is the all-time minimum (docs/tcp.md).
    pub min_rtt_us: u32,
}

impl RttEstimator {
    pub fn new(rto_init: Duration, iss: SeqNumber) -> Self {
        RttEstimator {
            srtt_us: 0,
            mdev_us: 0,
            mdev_max_us: 0,
            rttvar_us: 0,
            rtt_seq: iss,
            rto: rto_init,
            backoff: 0,
            min_rtt_us: u32::MAX,
        }
    }

    /// `tcp_rtt_estimator()`: Linux's RFC 6298 variant with mdev_max and an rto_min floor
    /// on rttvar; `snd_una`/`snd_nxt` drive the once-per-RTT decay of rttvar.
    #[inline]
    pub fn estimate(&mut self, cfg: &TcpConfig, mrtt_us: u64, snd_una: SeqNumber, snd_nxt: SeqNumber) {
        let mut m = mrtt_us.min(i32::MAX as u64) as i64;
        let rto_min_us = cfg.rto_min.as_micros() as i64;
        let mut srtt = self.srtt_us as i64;
        if srtt != 0 {
            m -= srtt >> 3;
            srtt += m;
            let mut mdev = self.mdev_us as i64;
            if m < 0 {
                m = -m;
                m -= mdev >> 2;
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= mdev >> 2;
            }
            mdev += m;
            self.mdev_us = mdev.max(0) as u32;
            if self.mdev_us > self.mdev_max_us {
                self.mdev_max_us = self.mdev_us;
                if self.mdev_max_us > self.rttvar_us {
                    self.rttvar_us = self.mdev_max_us;
                }
            }
            if snd_una.after(self.rtt_seq) {
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_us = rto_min_us as u32;
            }
        } else {
            srtt = m << 3;
            self.mdev_us = (m << 1) as u32;
            self.rttvar_us = (self.mdev_us as i64).max(rto_min_us) as u32;
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = snd_nxt;
        }
        self.srtt_us = srtt.max(1) as u32;
    }

    /// `__tcp_set_rto()` + `tcp_bound_rto()`: RTO = srtt + rttvar, in whole jiffies.
    pub fn base_rto(&self, cfg: &TcpConfig) -> Duration {
        let us = (self.srtt_us >> 3) as u64 + self.rttvar_us as u64;
        round_jiffies(cfg, Duration::from_micros(us)).min(cfg.rto_max)
    }

    /// `tcp_set_rto()`.
    pub fn set_rto(&mut self, cfg: &TcpConfig) {
        self.rto = self.base_rto(cfg);
    }

    /// `tcp_ack_update_rtt()`: feed a sample (if any), recompute the RTO, reset backoff.
    /// Returns whether there was a sample.
    #[inline]
    pub fn ack_update_rtt(&mut self, cfg: &TcpConfig, seq_rtt_us: Option<u64>, snd_una: SeqNumber, snd_nxt: SeqNumber) -> bool {
        let Some(rtt) = seq_rtt_us else { return false };
        self.min_rtt_us = self.min_rtt_us.min(rtt.min(u32::MAX as u64 - 1) as u32);
        self.estimate(cfg, rtt, snd_una, snd_nxt);
        self.set_rto(cfg);
        self.backoff = 0;
        true
    }

    /// Doubles the RTO after a timeout (`icsk_rto = min(icsk_rto << 1, TCP_RTO_MAX)`).
    pub fn double_rto(&mut self, cfg: &TcpConfig) {
        self.rto = (self.rto * 2).min(cfg.rto_max);
    }

    /// `tcp_probe0_when()`: the persist-timer interval.
    pub fn probe0_when(&self, cfg: &TcpConfig) -> Duration {
        let base = self.rto.max(cfg.rto_min);
        base.saturating_mul(1u64 << self.backoff.min(20)).min(cfg.rto_max)
    }

    /// Smoothed RTT in µs (unscaled; 0 = none).
    #[inline]
    pub fn srtt(&self) -> u64 {
        (self.srtt_us >> 3) as u64
    }

    /// The minimum RTT in µs, 0 when none was measured.
    #[inline]
    pub fn min_rtt(&self) -> u64 {
        if self.min_rtt_us == u32::MAX {
            0
        } else {
            self.min_rtt_us as u64
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn first_sample_and_rto_min_floor() {
        let cfg = TcpConfig::default();
        let mut e = RttEstimator::new(cfg.rto_init, SeqNumber(0));
        assert_eq!(e.rto, ms(1000));
        assert!(e.ack_update_rtt(&cfg, Some(100_000), SeqNumber(1), SeqNumber(1)));
        assert_eq!(e.srtt(), 100_000);
        // rttvar = max(2m/4 · 4 = 200 ms, rto_min)
        assert_eq!(e.rttvar_us, 200_000);
        assert_eq!(e.rto, ms(300));
        assert_eq!(e.min_rtt(), 100_000);
        assert!(!e.ack_update_rtt(&cfg, None, SeqNumber(1), SeqNumber(1)));
    }

    #[test]
    fn short_rtt_rto_is_srtt_plus_rto_min() {
        // RTO = SRTT + 200 ms (rto_min floors rttvar), not max(200, srtt + 4 rttvar)
        let cfg = TcpConfig::default();
        let mut e = RttEstimator::new(cfg.rto_init, SeqNumber(0));
        for i in 0..50u32 {
            e.estimate(&cfg, 10_000, SeqNumber(i * 1000), SeqNumber(i * 1000 + 1000));
        }
        e.set_rto(&cfg);
        assert_eq!(e.rto, ms(210));
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let cfg = TcpConfig::default();
        let mut e = RttEstimator::new(cfg.rto_init, SeqNumber(0));
        for _ in 0..10 {
            e.double_rto(&cfg);
        }
        assert_eq!(e.rto, cfg.rto_max);
        e.backoff = 3;
        e.rto = ms(300);
        assert_eq!(e.probe0_when(&cfg), ms(2400));
    }
}
