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
    /// The TS echo of the last timestamp sample (`rcv_rtt_last_tsecr`, 6.16+ style only).
    pub last_tsecr: u32,
}

impl RcvSpace {
    pub fn new(now: Instant) -> Self {
        RcvSpace { rtt_us: 0, rtt_seq: SeqNumber(0), rtt_time: None, space: 0, seq: SeqNumber(0), time: now, last_tsecr: 0 }
    }

    /// `tcp_rcv_rtt_update()` of 6.16+: a lower sample is taken at once ("tcp: always seek
    /// for minimal rtt in tcp_rcv_rtt_update()"); a higher one only from timestamps, and
    /// only when nothing waits in the receive queue ("tcp: skip big rtt sample if receive
    /// queue is not empty"), smoothed by 1/8.
    pub fn rtt_update_616(&mut self, sample_us: u64, win_dep: bool, queue_empty: bool) {
        let m = (sample_us.min(u32::MAX as u64 >> 4) as u32) << 3;
        let old = self.rtt_us;
        if old == 0 || m < old {
            self.rtt_us = m.max(1);
        } else if !win_dep && queue_empty {
            self.rtt_us = old - (old >> 3) + (m >> 3);
        }
    }

    /// `tcp_rcv_rtt_update()` up to 6.15: timestamp samples are smoothed (1/8), window
    /// samples only lower the estimate.
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
    /// sample per window of data. `queue_empty`: nothing was waiting to be read when the
    /// segment arrived (`rcv_nxt == copied_seq` before it). With the 6.16+ style a
    /// timestamp echo gives one sample only (`rcv_rtt_last_tsecr`) and a zero delta none
    /// ("tcp: remove zero TCP TS samples for autotuning").
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn measure(
        &mut self, style: RcvSpaceStyle, now: Instant, ts: Option<(u32, u32)>, len: u32, rcv_mss: u32, rcv_nxt: SeqNumber,
        rcv_wnd: u32, queue_empty: bool,
    ) {
        let v616 = style == RcvSpaceStyle::Linux616;
        if let Some((ecr, ts_now)) = ts {
            if v616 {
                // tcp_rcv_rtt_measure_ts(): one sample per echoed value
                if ecr == self.last_tsecr {
                    return;
                }
                self.last_tsecr = ecr;
            }
            if ecr != 0 && len >= rcv_mss {
                let d = ts_now.wrapping_sub(ecr) as i32;
                if v616 {
                    if d > 0 {
                        self.rtt_update_616(d as u64 * 1000, false, queue_empty);
                    }
                } else if d >= 0 {
                    self.rtt_update((d as u64 * 1000).max(1), false);
                }
            }
            return;
        }
        match self.rtt_time {
            Some(t) if !rcv_nxt.before(self.rtt_seq) => {
                let sample = now.saturating_since(t).as_micros().max(1);
                if v616 {
                    self.rtt_update_616(sample, true, queue_empty);
                } else {
                    self.rtt_update(sample, true);
                }
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
    /// `rcv_nxt` and `ooo_span` (the out-of-order queue's end less `rcv_nxt`, 0 when
    /// empty) matter to the 6.16+ style only.
    #[allow(clippy::too_many_arguments)]
    pub fn adjust(
        &mut self, cfg: &TcpConfig, now: Instant, copied_seq: SeqNumber, rcv_nxt: SeqNumber, ooo_span: u32, tune: bool,
        advmss: u32, ratio: Option<u8>,
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
            RcvSpaceStyle::Linux616 => {
                // 6.16+ tcp_rcv_space_adjust(): bytes still in the receive queue are not
                // counted ("tcp: add receive queue awareness in tcp_rcv_space_adjust()")
                let inq = rcv_nxt.dist(copied_seq);
                let copied = copied as i64 - inq as i64;
                if copied > self.space as i64 {
                    let (old, new) = (self.space, copied as u32);
                    self.space = new;
                    if tune {
                        let rcvwin = rcvbuf_grow_win(old, new, ooo_span);
                        let buf = space_from_win(rcvwin.min(i64::MAX as u64 / 4) as i64).max(0) as u64;
                        grow_to = Some((buf, u64::MAX));
                    }
                }
            }
        }
        self.seq = copied_seq;
        self.time = now;
        grow_to
    }
}

/// The window `tcp_rcvbuf_grow()` (6.16+) asks for when `rcvq_space.space` goes from `old`
/// to `new`: `2·new` ("DRS is always one RTT late"; "tcp: fix sk_rcvbuf overshoot" dropped
/// the `16·advmss` cushion), plus twice the relative growth ("tcp: fix too slow
/// tcp_rcvbuf_grow() action", in this kernel's 6.18), plus the out-of-order span ("tcp:
/// adjust rcvbuf in presence of reorders").
pub(crate) fn rcvbuf_grow_win(old: u32, new: u32, ooo_span: u32) -> u64 {
    let mut rcvwin = (new as u64) << 1;
    if new > old {
        let grow = rcvwin * (new - old) as u64 / old.max(1) as u64;
        rcvwin += grow << 1;
    }
    rcvwin + ooo_span as u64
}

#[cfg(test)]
mod test {
    use super::*;
    use wirelab_core::Duration;

    #[test]
    fn modern_growth_once_per_rtt() {
        let cfg = TcpConfig { rcv_space_style: RcvSpaceStyle::Modern, ..TcpConfig::default() };
        let t0 = Instant::ZERO;
        let mut r = RcvSpace::new(t0);
        r.space = 14_600;
        r.rtt_update(10_000, false);
        assert_eq!(r.rtt_us >> 3, 10_000);
        // before one receiver RTT has passed: nothing
        assert_eq!(r.adjust(&cfg, t0 + Duration::from_millis(5), SeqNumber(50_000), SeqNumber(50_000), 0, true, 1460, None), None);
        // 29 200 bytes copied in 10 ms (double the space): 2·copied + 16·MSS, plus 2·growth
        let g = r.adjust(&cfg, t0 + Duration::from_millis(10), SeqNumber(29_200), SeqNumber(29_200), 0, true, 1460, None).unwrap();
        let rcvwin = 2 * 29_200 + 16 * 1460;
        let rcvwin = rcvwin + 2 * (rcvwin * 14_600 / 14_600);
        assert_eq!(g, (cfg.space_from_win(rcvwin as i64) as u64, u64::MAX));
        assert_eq!((r.space, r.seq), (29_200, SeqNumber(29_200)));
    }

    #[test]
    fn linux616_counts_only_what_left_the_queue() {
        let cfg = TcpConfig::default();
        assert_eq!(cfg.rcv_space_style, RcvSpaceStyle::Linux616);
        let t0 = Instant::ZERO;
        let mut r = RcvSpace::new(t0);
        r.space = 15_928;
        r.rtt_update_616(40_000, false, true);
        let t1 = t0 + Duration::from_millis(40);
        // 20 272 read, nothing queued: 2·20 272 + 2·(40 544·4 344/15 928) = 62 658 of window
        let g = r.adjust(&cfg, t1, SeqNumber(20_272), SeqNumber(20_272), 0, true, 1448, Some(160)).unwrap();
        assert_eq!(g, ((62_658u64 << 8) / 160, u64::MAX));
        assert_eq!(r.space, 20_272);
        // 40 000 read, 30 000 of it still queued behind: 10 000 counted, no growth
        let t2 = t1 + Duration::from_millis(40);
        assert_eq!(r.adjust(&cfg, t2, SeqNumber(60_272), SeqNumber(90_272), 0, true, 1448, Some(160)), None);
        assert_eq!((r.space, r.seq, r.time), (20_272, SeqNumber(60_272), t2));
        // the out-of-order span adds to the window asked for
        assert_eq!(rcvbuf_grow_win(20_272, 20_272, 5_000), 45_544);
    }

    #[test]
    fn linux616_rtt_latches_lower_and_skips_queued_higher() {
        let mut r = RcvSpace::new(Instant::ZERO);
        r.rtt_update_616(40_000, false, true);
        r.rtt_update_616(80_000, false, false); // data waiting: ignored
        assert_eq!(r.rtt_us >> 3, 40_000);
        r.rtt_update_616(80_000, true, true); // window sample, higher: ignored
        assert_eq!(r.rtt_us >> 3, 40_000);
        r.rtt_update_616(80_000, false, true); // smoothed by 1/8
        assert_eq!(r.rtt_us >> 3, 45_000);
        r.rtt_update_616(10_000, false, false); // lower: latched at once
        assert_eq!(r.rtt_us >> 3, 10_000);
        // one sample per TS echo, none of 0 ms
        let mut r = RcvSpace::new(Instant::ZERO);
        let m = |r: &mut RcvSpace, ecr: u32, now: u32| {
            r.measure(RcvSpaceStyle::Linux616, Instant::ZERO, Some((ecr, now)), 1448, 1448, SeqNumber(0), 0, true)
        };
        m(&mut r, 100, 100);
        assert_eq!(r.rtt_us, 0);
        m(&mut r, 100, 140);
        assert_eq!(r.rtt_us, 0, "same echo as the zero sample: no sample");
        m(&mut r, 101, 141);
        assert_eq!(r.rtt_us >> 3, 40_000);
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
