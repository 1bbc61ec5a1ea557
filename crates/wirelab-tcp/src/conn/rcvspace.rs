//! Receive-buffer autotuning state: the receiver's RTT estimate (`rcv_rtt_est`,
//! `tcp_rcv_rtt_update()`, `tcp_rcv_rtt_measure()`, `tcp_rcv_rtt_measure_ts()`) and the
//! per-RTT copied-bytes measurement of `tcp_rcv_space_adjust()` (`rcvq_space`), in the
//! era's variant ([`RcvSpaceStyle`]).
use crate::config::{RcvSpaceStyle, TcpConfig};
use crate::wire::SeqNumber;
use wirelab_core::Instant;

/// `rcv_rtt_est` and `rcvq_space`.
#[derive(Clone, Debug)]
pub(crate) struct RcvSpace {
    /// Receiver RTT << 3 (µs); 0 = none.
    pub rtt_us: u32,
    /// Sequence that ends the current per-window measurement.
    pub rtt_seq: SeqNumber,
    /// Start of the current per-window measurement.
    pub rtt_time: Option<Instant>,
    /// Bytes copied to the application in the last measured RTT (`rcvq_space.space`).
    pub space: u32,
    /// `copied_seq` at the start of the current RTT (`rcvq_space.seq`).
    pub seq: SeqNumber,
    /// Start of the current RTT (`rcvq_space.time`).
    pub time: Instant,
}

impl RcvSpace {
    pub fn new(now: Instant) -> Self {
        RcvSpace { rtt_us: 0, rtt_seq: SeqNumber(0), rtt_time: None, space: 0, seq: SeqNumber(0), time: now }
    }

    /// `tcp_rcv_rtt_update()`: timestamp samples are smoothed (1/8), window samples only
    /// lower the estimate.
    pub fn rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        let m = sample_us.min(u32::MAX as u64 >> 4) as i64;
        let mut new = self.rtt_us as i64;
        if new != 0 {
            if !win_dep {
                let mm = m - (new >> 3);
                new += mm;
            } else if (m << 3) < new {
                new = m << 3;
            }
        } else {
            new = m << 3;
        }
        self.rtt_us = new.max(1) as u32;
    }

    /// `tcp_rcv_rtt_measure_ts()` when the segment carries a timestamp echo (`ts`:
    /// (echo, our clock now)) on a timestamp connection, else `tcp_rcv_rtt_measure()`: one
    /// sample per window of data.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn measure(&mut self, now: Instant, ts: Option<(u32, u32)>, len: u32, rcv_mss: u32, rcv_nxt: SeqNumber, rcv_wnd: u32) {
        if let Some((ecr, ts_now)) = ts {
            if ecr != 0 && len >= rcv_mss {
                let d = ts_now.wrapping_sub(ecr) as i32;
                if d >= 0 {
                    self.rtt_update((d as u64 * 1000).max(1), false);
                }
            }
            return;
        }
        match self.rtt_time {
            Some(t) if !rcv_nxt.before(self.rtt_seq) => {
                self.rtt_update(now.saturating_since(t).as_micros().max(1), true);
                self.rtt_seq = rcv_nxt + rcv_wnd;
                self.rtt_time = Some(now);
            }
            None => {
                self.rtt_seq = rcv_nxt + rcv_wnd;
                self.rtt_time = Some(now);
            }
            _ => {}
        }
    }

    /// The measurement of `tcp_rcv_space_adjust()`, once per receiver RTT: returns the
    /// (rcvbuf, window_clamp) the era's rule asks for when `tune` (`tcp_moderate_rcvbuf`
    /// and the buffer not locked) and the copied rate grew; `u64::MAX` as clamp means
    /// "`tcp_win_from_space(rcvbuf)`". "rcvbuf for a window w" is `tcp_space_from_win(w)`
    /// throughout: by `ratio` (the socket's `scaling_ratio`) on 6.6+ profiles, else by
    /// `tcp_adv_win_scale`.
    #[inline]
    pub fn adjust(
        &mut self, cfg: &TcpConfig, now: Instant, copied_seq: SeqNumber, tune: bool, advmss: u32, ratio: Option<u8>,
    ) -> Option<(u64, u64)> {
        // tcp_space_from_win(): by the socket's scaling_ratio on 6.6+ profiles
        let space_from_win = |w: i64| match ratio {
            Some(r) => (((w as i128) << 8) / r.max(1) as i128).min(i64::MAX as i128) as i64,
            None => cfg.space_from_win(w),
        };
        let rtt_us = (self.rtt_us >> 3) as u64;
        let elapsed = now.saturating_since(self.time).as_micros();
        if self.rtt_us == 0 || elapsed < rtt_us {
            return None;
        }
        let copied = copied_seq.dist(self.seq);
        let mut grow_to: Option<(u64, u64)> = None;
        match cfg.rcv_space_style {
            RcvSpaceStyle::Legacy => {
                // <= 3.14: space = max(space, 2 * copied); window_clamp = space
                let space = self.space.max(copied.saturating_mul(2));
                if space != self.space {
                    self.space = space;
                    if tune {
                        let buf = space_from_win(space as i64).max(0) as u64;
                        grow_to = Some((buf, space as u64));
                    }
                }
            }
            RcvSpaceStyle::Steps => {
                // 3.15 - 4.18: 2 * copied + 16 MSS, x1.5 / x2 when the rate grew 25 / 50 %
                if copied > self.space {
                    if tune {
                        let sp = self.space as u64;
                        let c = copied as u64;
                        let mut rcvwin = c * 2 + 16 * advmss as u64;
                        if c >= sp + (sp >> 2) {
                            if c >= sp + (sp >> 1) {
                                rcvwin <<= 1;
                            } else {
                                rcvwin += rcvwin >> 1;
                            }
                        }
                        let buf = space_from_win(rcvwin.min(u32::MAX as u64) as i64).max(0) as u64;
                        grow_to = Some((buf, rcvwin));
                    }
                    self.space = copied;
                }
            }
            RcvSpaceStyle::Modern => {
                // 4.19+: 2 * copied + 16 MSS plus twice the relative growth
                if copied > self.space {
                    if tune {
                        let mut rcvwin = (copied as u64) * 2 + 16 * advmss as u64;
                        let grow = rcvwin * (copied - self.space) as u64 / self.space.max(1) as u64;
                        rcvwin += grow * 2;
                        let buf = space_from_win(rcvwin.min(i64::MAX as u64 / 4) as i64).max(0) as u64;
                        grow_to = Some((buf, u64::MAX));
                    }
                    self.space = copied;
                }
            }
        }
        self.seq = copied_seq;
        self.time = now;
        grow_to
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use wirelab_core::Duration;

    #[test]
    fn modern_growth_once_per_rtt() {
        let cfg = TcpConfig::default();
        let t0 = Instant::ZERO;
        let mut r = RcvSpace::new(t0);
        r.space = 14_600;
        r.rtt_update(10_000, false);
        assert_eq!(r.rtt_us >> 3, 10_000);
        // before one receiver RTT has passed: nothing
        assert_eq!(r.adjust(&cfg, t0 + Duration::from_millis(5), SeqNumber(50_000), true, 1460, None), None);
        // 29 200 bytes copied in 10 ms (double the space): 2·copied + 16·MSS, plus 2·growth
        let g = r.adjust(&cfg, t0 + Duration::from_millis(10), SeqNumber(29_200), true, 1460, None).unwrap();
        let rcvwin = 2 * 29_200 + 16 * 1460;
        let rcvwin = rcvwin + 2 * (rcvwin * 14_600 / 14_600);
        assert_eq!(g, (cfg.space_from_win(rcvwin as i64) as u64, u64::MAX));
        assert_eq!((r.space, r.seq), (29_200, SeqNumber(29_200)));
    }

    #[test]
    fn window_samples_only_lower_the_estimate() {
        let mut r = RcvSpace::new(Instant::ZERO);
        r.rtt_update(50_000, true);
        r.rtt_update(80_000, true);
        assert_eq!(r.rtt_us >> 3, 50_000);
        r.rtt_update(20_000, true);
        assert_eq!(r.rtt_us >> 3, 20_000);
    }
}
