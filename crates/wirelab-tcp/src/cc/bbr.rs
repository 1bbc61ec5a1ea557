//! BBR v1 as net/ipv4/tcp_bbr.c ships it (Cardwell et al., ACM Queue 2016): a model of
//! the path — max delivery rate over 10 round trips, min RTT over 10 s — sets the
//! pacing rate (gain × bw) and cwnd (gain × BDP). STARTUP (gain 2/ln 2) until the
//! bandwidth stops growing 25 % in 3 rounds, DRAIN to empty the queue, PROBE_BW cycling
//! through 8 gain phases (1.25, 0.75, 1 × 6) from a random start, PROBE_RTT (cwnd 4 for
//! 200 ms and a round) when the min RTT is 10 s old; long-term bandwidth sampling for
//! policers; ACK-aggregation allowance; packet conservation in the first round of
//! recovery. It uses `cong_control` (not `cong_avoid`) and asks for pacing.
use super::minmax::Minmax;
use super::{CaEvent, CaState, CcInfo, CcModule, CcSock, CongestionOps, RateSample, TCP_INFINITE_SSTHRESH};
use crate::config::TcpConfig;
use wirelab_core::Rng;

/// Registry entry.
pub const MODULE: CcModule = CcModule { name: "bbr", new: new_module };

fn new_module(_cfg: &TcpConfig, seed: u64) -> Box<dyn CongestionOps> {
    Box::new(Bbr::new(seed))
}

/// `BW_SCALE`: bandwidth in packets/µs << 24.
pub const BW_SCALE: u32 = 24;
/// `BW_UNIT`.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// `BBR_SCALE`: gains are fractions << 8.
pub const BBR_SCALE: u32 = 8;
/// `BBR_UNIT` (gain 1.0).
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// `CYCLE_LEN`: phases of the PROBE_BW gain cycle.
pub const CYCLE_LEN: u32 = 8;
/// `bbr_bw_rtts`: window of the max-bandwidth filter, in round trips.
pub const BBR_BW_RTTS: u32 = CYCLE_LEN + 2;
/// `bbr_min_rtt_win_sec`: window of the min-RTT filter.
pub const BBR_MIN_RTT_WIN_SEC: u32 = 10;
/// `bbr_probe_rtt_mode_ms`: minimum time in PROBE_RTT.
pub const BBR_PROBE_RTT_MODE_MS: u32 = 200;
/// `bbr_min_tso_rate` (bits/s): below it, TSO bursts of one segment.
const BBR_MIN_TSO_RATE: u64 = 1_200_000;
/// `bbr_pacing_margin_percent`: pace 1 % below the estimated bandwidth.
pub const BBR_PACING_MARGIN_PERCENT: u64 = 1;
/// `bbr_high_gain` = 2/ln(2) ≈ 2.885: STARTUP doubles the rate each round.
pub const BBR_HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// `bbr_drain_gain` = 1/high_gain: DRAIN empties STARTUP's queue in one round.
pub const BBR_DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain`: cwnd is 2 BDP in PROBE_BW.
pub const BBR_CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_pacing_gain[]`: the PROBE_BW cycle.
pub const BBR_PACING_GAIN: [u32; CYCLE_LEN as usize] =
    [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT, BBR_UNIT];
/// `bbr_cycle_rand`: the cycle starts at a random one of the phases but the drain one.
pub const BBR_CYCLE_RAND: u64 = 7;
/// `bbr_cwnd_min_target`: at least 4 packets in flight.
pub const BBR_CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh`: STARTUP goes on while bandwidth grows by 25 % ...
pub const BBR_FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
/// `bbr_full_bw_cnt`: ... per round, for 3 rounds.
pub const BBR_FULL_BW_CNT: u32 = 3;
/// `bbr_lt_intvl_min_rtts`: rounds in a long-term sampling interval (at least).
pub const BBR_LT_INTVL_MIN_RTTS: u32 = 4;
/// `bbr_lt_loss_thresh`: lost/delivered above 50/256 (20 %) means "lossy".
pub const BBR_LT_LOSS_THRESH: u32 = 50;
/// `bbr_lt_bw_ratio`: two intervals within 1/8 have a consistent bandwidth ...
pub const BBR_LT_BW_RATIO: u32 = BBR_UNIT / 8;
/// `bbr_lt_bw_diff`: ... or within 4 kbit/s (bytes/s here).
pub const BBR_LT_BW_DIFF: u64 = 4000 / 8;
/// `bbr_lt_bw_max_rtts`: rounds to keep using the long-term bandwidth.
pub const BBR_LT_BW_MAX_RTTS: u32 = 48;
/// `bbr_extra_acked_gain`.
const BBR_EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
/// `bbr_extra_acked_win_rtts`.
const BBR_EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// `bbr_ack_epoch_acked_reset_thresh`.
const BBR_ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// `bbr_extra_acked_max_us`.
const BBR_EXTRA_ACKED_MAX_US: u64 = 100 * 1000;
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u32 = 10;
/// `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (MAX_TCP_HEADER is 320 on x86-64).
const TSO_MAX_BYTES: u64 = 65536 - 1 - 320;
/// `sk_pacing_shift`: TSO autosizing aims at ~1 ms of data (2^-10 s).
const SK_PACING_SHIFT: u32 = 10;

/// `enum bbr_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    /// Ramp up the sending rate rapidly to fill the pipe.
    Startup,
    /// Drain the queue created during startup.
    Drain,
    /// Discover and share bandwidth: pace around the estimate.
    ProbeBw,
    /// Cut inflight to the minimum to probe min_rtt.
    ProbeRtt,
}

/// `struct bbr`.
#[derive(Clone, Debug)]
pub struct Bbr {
    rng: Rng,
    /// `min_rtt_us` in the `bbr_min_rtt_win_sec` window (`u32::MAX` = none).
    pub min_rtt_us: u32,
    /// `min_rtt_stamp` (jiffies).
    pub min_rtt_stamp: u32,
    probe_rtt_done_stamp: u32,
    /// `bw`: max recent delivery rate in packets/µs << 24.
    bw: Minmax,
    /// `rtt_cnt`: packet-timed round trips elapsed.
    pub rtt_cnt: u32,
    next_rtt_delivered: u32,
    cycle_mstamp: u64,
    /// `mode`.
    pub mode: BbrMode,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    probe_rtt_round_done: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    /// `lt_use_bw`: a policer was detected; `lt_bw` is the bandwidth.
    pub lt_use_bw: bool,
    /// `lt_bw` (packets/µs << 24).
    pub lt_bw: u32,
    lt_last_delivered: u32,
    lt_last_stamp: u32,
    lt_last_lost: u32,
    /// `pacing_gain` (<< 8).
    pub pacing_gain: u32,
    /// `cwnd_gain` (<< 8).
    pub cwnd_gain: u32,
    /// `full_bw_reached`.
    pub full_bw_reached: bool,
    full_bw_cnt: u32,
    /// `cycle_idx`.
    pub cycle_idx: u32,
    has_seen_rtt: bool,
    prior_cwnd: u32,
    full_bw: u32,
    ack_epoch_mstamp: u64,
    extra_acked: [u32; 2],
    ack_epoch_acked: u32,
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
}

/// `tcp_stamp_us_delta()`.
#[inline]
fn us_delta(t1: u64, t0: u64) -> u64 {
    t1.saturating_sub(t0)
}

impl Bbr {
    /// Module state drawing its cycle phases from `seed`; `init` must run before use.
    pub fn new(seed: u64) -> Self {
        Bbr {
            rng: Rng::stream(seed, "tcp/bbr"),
            min_rtt_us: u32::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: 0,
            bw: Minmax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: BbrMode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: BBR_HIGH_GAIN,
            cwnd_gain: BBR_HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            ack_epoch_mstamp: 0,
            extra_acked: [0; 2],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
        }
    }

    /// `bbr_max_bw()`.
    #[inline]
    pub fn max_bw(&self) -> u32 {
        self.bw.get()
    }

    /// `bbr_bw()`: the estimate in use (the long-term one when policed).
    #[inline]
    pub fn bw(&self) -> u32 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// `bbr_rate_bytes_per_sec()`: a rate in bytes/s with a gain and the 1 % margin.
    fn rate_bytes_per_sec(tp: &CcSock, rate: u64, gain: u32) -> u64 {
        let mut rate = rate as u128 * tp.mss_cache as u128;
        rate *= gain as u128;
        rate >>= BBR_SCALE;
        rate *= (1_000_000 / 100 * (100 - BBR_PACING_MARGIN_PERCENT)) as u128;
        (rate >> BW_SCALE) as u64
    }

    /// `bbr_bw_to_pacing_rate()`.
    fn bw_to_pacing_rate(tp: &CcSock, bw: u32, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(tp, bw as u64, gain).min(tp.max_pacing_rate)
    }

    /// `bbr_init_pacing_rate_from_rtt()`: high_gain × init cwnd / RTT (1 ms without one).
    fn init_pacing_rate_from_rtt(&mut self, tp: &mut CcSock) {
        let rtt_us = if tp.srtt_us != 0 {
            self.has_seen_rtt = true;
            (tp.srtt_us >> 3).max(1) as u64
        } else {
            1000
        };
        let bw = tp.snd_cwnd as u64 * BW_UNIT / rtt_us;
        tp.pacing_rate = Self::bw_to_pacing_rate(tp, bw.min(u32::MAX as u64) as u32, BBR_HIGH_GAIN);
    }

    /// `bbr_set_pacing_rate()`: never slower while still in STARTUP.
    fn set_pacing_rate(&mut self, tp: &mut CcSock, bw: u32, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tp, bw, gain);
        if !self.has_seen_rtt && tp.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        if self.full_bw_reached || rate > tp.pacing_rate {
            tp.pacing_rate = rate;
        }
    }

    /// `bbr_min_tso_segs()`.
    fn min_tso_segs(tp: &CcSock) -> u32 {
        if tp.pacing_rate < BBR_MIN_TSO_RATE >> 3 {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal()`: ~1 ms of data per burst, as `tcp_tso_autosize()`.
    fn tso_segs_goal(tp: &CcSock) -> u32 {
        let bytes = (tp.pacing_rate >> SK_PACING_SHIFT).min(TSO_MAX_BYTES);
        let segs = ((bytes / tp.mss_cache.max(1) as u64) as u32).max(Self::min_tso_segs(tp));
        segs.min(0x7f)
    }

    /// `bbr_save_cwnd()`: the last known good cwnd, to restore after recovery/PROBE_RTT.
    fn save_cwnd(&mut self, tp: &CcSock) {
        if self.prev_ca_state < CaState::Recovery && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = tp.snd_cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(tp.snd_cwnd);
        }
    }

    /// `bbr_bdp()`: ceil(bw × min_rtt × gain), or the initial window without an RTT.
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        let w = bw as u128 * self.min_rtt_us as u128;
        (((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128)) as u32
    }

    /// `bbr_quantization_budget()`: room for the end hosts' TSO/GRO bursts, an even
    /// cwnd, and +2 in the probing phase so that small BDPs still probe.
    fn quantization_budget(&self, tp: &CcSock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd + 3 * Self::tso_segs_goal(tp);
        cwnd = (cwnd + 1) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight()`.
    fn inflight(&self, tp: &CcSock, bw: u32, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(tp, bdp)
    }

    /// `bbr_packets_in_net_at_edt()`: what will still be in the network when the next
    /// packet leaves at its departure time.
    fn packets_in_net_at_edt(&self, tp: &CcSock, inflight_now: u32) -> u32 {
        let now_ns = tp.clock_ns;
        let edt_ns = tp.wstamp_ns.max(now_ns);
        let interval_us = (edt_ns - now_ns) / 1000;
        let interval_delivered = ((self.bw() as u64 * interval_us) >> BW_SCALE) as u32;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += Self::tso_segs_goal(tp);
        }
        inflight_at_edt.saturating_sub(interval_delivered)
    }

    /// `bbr_ack_aggregation_cwnd()`.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if BBR_EXTRA_ACKED_GAIN == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr_cwnd = (self.bw() as u64 * BBR_EXTRA_ACKED_MAX_US / BW_UNIT) as u32;
        let aggr_cwnd = (BBR_EXTRA_ACKED_GAIN * self.extra_acked[0].max(self.extra_acked[1])) >> BBR_SCALE;
        aggr_cwnd.min(max_aggr_cwnd)
    }

    /// `bbr_set_cwnd_to_recover_or_restore()`: packet conservation in the first round
    /// of recovery, cwnd restored when recovery ends. Returns the cwnd to use and whether
    /// conservation decides it.
    fn set_cwnd_to_recover_or_restore(&mut self, tp: &CcSock, rs: &RateSample, acked: u32) -> (u32, bool) {
        let prev_state = self.prev_ca_state;
        let state = tp.ca_state;
        let mut cwnd = tp.snd_cwnd;
        // an ACK for P packets should release at most 2·P: first deduct the losses
        if rs.losses > 0 {
            cwnd = (cwnd as i64 - rs.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // starting the 1st round of recovery: packet conservation
            self.packet_conservation = true;
            self.next_rtt_delivered = tp.delivered; // start round now
            cwnd = tp.in_flight + acked;
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            // exiting loss recovery: restore the cwnd saved before it
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(tp.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd()`: slow-start toward the target (gain × BDP plus allowances), or
    /// snap down to it once the pipe was filled; 4 packets in PROBE_RTT.
    fn set_cwnd(&mut self, tp: &mut CcSock, rs: &RateSample, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tp.snd_cwnd;
        if acked != 0 {
            let (c, conserving) = self.set_cwnd_to_recover_or_restore(tp, rs, acked);
            cwnd = c;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target += self.ack_aggregation_cwnd();
                target = self.quantization_budget(tp, target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || tp.delivered < TCP_INIT_CWND {
                    cwnd += acked;
                }
                cwnd = cwnd.max(BBR_CWND_MIN_TARGET);
            }
        }
        tp.snd_cwnd = cwnd.min(tp.snd_cwnd_clamp);
        if self.mode == BbrMode::ProbeRtt {
            tp.snd_cwnd = tp.snd_cwnd.min(BBR_CWND_MIN_TARGET);
        }
    }

    /// `bbr_is_next_cycle_phase()`.
    fn is_next_cycle_phase(&self, tp: &CcSock, rs: &RateSample) -> bool {
        let is_full_length = us_delta(tp.delivered_mstamp_us, self.cycle_mstamp) > self.min_rtt_us as u64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            // probe until pacing_gain × BDP is in flight (not persisting after losses)
            return is_full_length && (rs.losses > 0 || inflight >= self.inflight(tp, bw, self.pacing_gain));
        }
        // drain until inflight is down to one BDP
        is_full_length || inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase()`.
    fn advance_cycle_phase(&mut self, tp: &CcSock) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = tp.delivered_mstamp_us;
    }

    /// `bbr_reset_probe_bw_mode()`: gain cycling from a random phase (never the 0.75 one).
    fn reset_probe_bw_mode(&mut self, tp: &CcSock) {
        self.mode = BbrMode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(BBR_CYCLE_RAND) as u32;
        self.advance_cycle_phase(tp);
    }

    /// `bbr_reset_mode()`.
    fn reset_mode(&mut self, tp: &CcSock) {
        if !self.full_bw_reached {
            self.mode = BbrMode::Startup;
        } else {
            self.reset_probe_bw_mode(tp);
        }
    }

    /// `bbr_reset_lt_bw_sampling_interval()`.
    fn reset_lt_bw_sampling_interval(&mut self, tp: &CcSock) {
        self.lt_last_stamp = (tp.delivered_mstamp_us / 1000) as u32;
        self.lt_last_delivered = tp.delivered;
        self.lt_last_lost = tp.lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling()`.
    fn reset_lt_bw_sampling(&mut self, tp: &CcSock) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_interval_done()`: two consistent lossy intervals mean a policer.
    fn lt_bw_interval_done(&mut self, tp: &CcSock, bw: u32) {
        if self.lt_bw != 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff as u64 * BBR_UNIT as u64 <= BBR_LT_BW_RATIO as u64 * self.lt_bw as u64
                || Self::rate_bytes_per_sec(tp, diff as u64, BBR_UNIT) <= BBR_LT_BW_DIFF
            {
                // all criteria are met: estimate we are policed
                self.lt_bw = ((bw as u64 + self.lt_bw as u64) >> 1) as u32;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_sampling()`: long-term bandwidth over lossy intervals (policers).
    fn lt_bw_sampling(&mut self, tp: &CcSock, rs: &RateSample) {
        if self.lt_use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= BBR_LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tp);
                    self.reset_probe_bw_mode(tp);
                }
            }
            return;
        }
        // wait for the first loss, to let a policer exhaust its tokens
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tp);
            self.lt_is_sampling = true;
        }
        // running out of data would under-estimate
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < BBR_LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * BBR_LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        // end the interval on a loss: the policer's tokens are exhausted
        if rs.losses == 0 {
            return;
        }
        let lost = tp.lost.wrapping_sub(self.lt_last_lost);
        let delivered = tp.delivered.wrapping_sub(self.lt_last_delivered);
        if delivered == 0 || (lost as u64) << BBR_SCALE < BBR_LT_LOSS_THRESH as u64 * delivered as u64 {
            return;
        }
        let t = ((tp.delivered_mstamp_us / 1000) as u32).wrapping_sub(self.lt_last_stamp);
        if (t as i32) < 1 {
            return; // less than a millisecond
        }
        if t >= u32::MAX / 1000 {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        let bw = delivered as u64 * BW_UNIT / (t as u64 * 1000);
        self.lt_bw_interval_done(tp, bw.min(u32::MAX as u64) as u32);
    }

    /// `bbr_update_bw()`: round counting and the max-bandwidth filter.
    fn update_bw(&mut self, tp: &CcSock, rs: &RateSample) {
        self.round_start = false;
        let (Some(delivered), Some(interval_us)) = (rs.delivered, rs.interval_us) else { return };
        if interval_us == 0 {
            return;
        }
        // a round ends when a packet sent after the previous round's end is ACKed
        if (rs.prior_delivered.wrapping_sub(self.next_rtt_delivered) as i32) >= 0 {
            self.next_rtt_delivered = tp.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(tp, rs);
        let bw = (delivered as u64 * BW_UNIT / interval_us).min(u32::MAX as u64) as u32;
        // app-limited samples only count when they are at least as good as the model
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(BBR_BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation()`: the recent max of data ACKed beyond bw × time.
    fn update_ack_aggregation(&mut self, tp: &CcSock, rs: &RateSample) {
        if BBR_EXTRA_ACKED_GAIN == 0 || rs.acked_sacked == 0 || rs.delivered.is_none() || rs.interval_us.is_none_or(|i| i == 0) {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= BBR_EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        let epoch_us = us_delta(tp.delivered_mstamp_us, self.ack_epoch_mstamp);
        let mut expected_acked = (self.bw() as u64 * epoch_us / BW_UNIT) as u32;
        if self.ack_epoch_acked <= expected_acked || self.ack_epoch_acked + rs.acked_sacked >= BBR_ACK_EPOCH_ACKED_RESET_THRESH {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = tp.delivered_mstamp_us;
            expected_acked = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected_acked).min(tp.snd_cwnd);
        if extra > self.extra_acked[self.extra_acked_win_idx] {
            self.extra_acked[self.extra_acked_win_idx] = extra;
        }
    }

    /// `bbr_check_full_bw_reached()`: bandwidth grew less than 25 % for 3 rounds.
    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = (self.full_bw as u64 * BBR_FULL_BW_THRESH as u64) >> BBR_SCALE;
        if self.max_bw() as u64 >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= BBR_FULL_BW_CNT;
    }

    /// `bbr_check_drain()`: STARTUP → DRAIN → PROBE_BW.
    fn check_drain(&mut self, tp: &mut CcSock) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
        }
        if self.mode == BbrMode::Drain && self.packets_in_net_at_edt(tp, tp.in_flight) <= self.inflight(tp, self.max_bw(), BBR_UNIT) {
            self.reset_probe_bw_mode(tp); // we estimate the queue is drained
        }
    }

    /// `bbr_check_probe_rtt_done()`.
    fn check_probe_rtt_done(&mut self, tp: &mut CcSock) {
        if !(self.probe_rtt_done_stamp != 0 && (tp.jiffies.wrapping_sub(self.probe_rtt_done_stamp) as i32) > 0) {
            return;
        }
        self.min_rtt_stamp = tp.jiffies; // wait a while until PROBE_RTT
        tp.snd_cwnd = tp.snd_cwnd.max(self.prior_cwnd);
        self.reset_mode(tp);
    }

    /// `bbr_update_min_rtt()`: the 10 s min-RTT filter and PROBE_RTT.
    fn update_min_rtt(&mut self, tp: &mut CcSock, rs: &RateSample) {
        let hz = tp.hz.max(1);
        let filter_expired = (tp.jiffies.wrapping_sub(self.min_rtt_stamp.wrapping_add(BBR_MIN_RTT_WIN_SEC * hz)) as i32) > 0;
        if let Some(rtt) = rs.rtt_us {
            if rtt <= self.min_rtt_us as u64 || (filter_expired && !rs.is_ack_delayed) {
                self.min_rtt_us = rtt.min(u32::MAX as u64) as u32;
                self.min_rtt_stamp = tp.jiffies;
            }
        }
        if BBR_PROBE_RTT_MODE_MS > 0 && filter_expired && !self.idle_restart && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt; // dip, drain queue
            self.save_cwnd(tp);
            self.probe_rtt_done_stamp = 0;
        }
        if self.mode == BbrMode::ProbeRtt {
            // ignore low rate samples during this mode
            tp.app_limited = (tp.delivered + tp.in_flight).max(1);
            // maintain min packets in flight for max(200 ms, 1 round)
            if self.probe_rtt_done_stamp == 0 && tp.in_flight <= BBR_CWND_MIN_TARGET {
                let j = (BBR_PROBE_RTT_MODE_MS as u64 * hz as u64).div_ceil(1000) as u32; // msecs_to_jiffies
                self.probe_rtt_done_stamp = tp.jiffies.wrapping_add(j).max(1);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tp.delivered;
            } else if self.probe_rtt_done_stamp != 0 {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tp);
                }
            }
        }
        // restart after idle ends only once we process a new S/ACK for data
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains()`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            BbrMode::Startup => (BBR_HIGH_GAIN, BBR_HIGH_GAIN),
            BbrMode::Drain => (BBR_DRAIN_GAIN, BBR_HIGH_GAIN),
            BbrMode::ProbeBw => {
                (if self.lt_use_bw { BBR_UNIT } else { BBR_PACING_GAIN[self.cycle_idx as usize] }, BBR_CWND_GAIN)
            }
            BbrMode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_update_model()`.
    fn update_model(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.update_bw(tp, rs);
        self.update_ack_aggregation(tp, rs);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(tp, rs) {
            self.advance_cycle_phase(tp);
        }
        self.check_full_bw_reached(rs);
        self.check_drain(tp);
        self.update_min_rtt(tp, rs);
        self.update_gains();
    }
}

impl CongestionOps for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }
    /// `bbr_min_tso_segs()` as the `min_tso_segs` hook.
    fn min_tso_segs(&self, tp: &CcSock) -> Option<u32> {
        Some(Self::min_tso_segs(tp))
    }
    /// `bbr_init()`.
    fn init(&mut self, tp: &mut CcSock) {
        self.prior_cwnd = 0;
        tp.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = tp.delivered;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt_done_stamp = 0;
        self.probe_rtt_round_done = false;
        self.min_rtt_us = tp.min_rtt_us;
        self.min_rtt_stamp = tp.jiffies;
        self.bw.reset(self.rtt_cnt, 0);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tp);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(tp);
        self.mode = BbrMode::Startup;
        self.update_gains();
        self.ack_epoch_mstamp = tp.now_us;
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
        tp.request_pacing = true;
    }
    /// `bbr_ssthresh()`: entering recovery; save cwnd for when it ends.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        self.save_cwnd(tp);
        tp.snd_ssthresh
    }
    fn cong_avoid(&mut self, _tp: &mut CcSock, _acked: u32) {}
    fn has_cong_control(&self) -> bool {
        true
    }
    /// `bbr_main()`.
    fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.update_model(tp, rs);
        let bw = self.bw();
        self.set_pacing_rate(tp, bw, self.pacing_gain);
        self.set_cwnd(tp, rs, rs.acked_sacked, bw, self.cwnd_gain);
    }
    /// `bbr_set_state()`: an RTO ends a round and counts as a loss for lt sampling.
    fn set_state(&mut self, tp: &mut CcSock, new: CaState) {
        if new == CaState::Loss {
            let rs = RateSample { losses: 1, ..RateSample::default() };
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            self.lt_bw_sampling(tp, &rs);
        }
    }
    /// `bbr_cwnd_event()`: restarting from idle while app-limited paces at the estimate.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if ev == CaEvent::TxStart && tp.app_limited != 0 {
            self.idle_restart = true;
            self.ack_epoch_mstamp = tp.now_us;
            self.ack_epoch_acked = 0;
            if self.mode == BbrMode::ProbeBw {
                let bw = self.bw();
                self.set_pacing_rate(tp, bw, BBR_UNIT);
            } else if self.mode == BbrMode::ProbeRtt {
                self.check_probe_rtt_done(tp);
            }
        }
    }
    /// `bbr_undo_cwnd()`: a spurious slow-down resets full-pipe detection.
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(tp);
        tp.snd_cwnd
    }
    /// `bbr_sndbuf_expand()`: 3 × cwnd, BBR may slow-start even in recovery.
    fn sndbuf_expand(&self) -> u32 {
        3
    }
    /// `bbr_get_info()`.
    fn get_info(&self, tp: &CcSock) -> CcInfo {
        let bw = (self.bw() as u128 * tp.mss_cache as u128 * 1_000_000) >> BW_SCALE;
        CcInfo::Bbr { bw: bw as u64, min_rtt: self.min_rtt_us, pacing_gain: self.pacing_gain, cwnd_gain: self.cwnd_gain }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::wire::SeqNumber;

    #[test]
    fn constants_as_tcp_bbr_c() {
        assert_eq!(BBR_HIGH_GAIN, 739); // 2/ln 2 = 2.885 << 8
        assert_eq!(BBR_DRAIN_GAIN, 88);
        assert_eq!(BBR_CWND_GAIN, 512);
        assert_eq!(BBR_PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
        assert_eq!((CYCLE_LEN, BBR_BW_RTTS, BBR_CYCLE_RAND), (8, 10, 7));
        assert_eq!((BBR_MIN_RTT_WIN_SEC, BBR_PROBE_RTT_MODE_MS, BBR_CWND_MIN_TARGET), (10, 200, 4));
        assert_eq!((BBR_FULL_BW_THRESH, BBR_FULL_BW_CNT), (320, 3));
        assert_eq!((BBR_LT_INTVL_MIN_RTTS, BBR_LT_LOSS_THRESH, BBR_LT_BW_RATIO, BBR_LT_BW_DIFF, BBR_LT_BW_MAX_RTTS), (4, 50, 32, 500, 48));
    }

    /// A view with `cwnd`, 1448-byte MSS, at time `t_us`.
    fn sock(cwnd: u32, t_us: u64) -> CcSock {
        let mut tp = CcSock::new(cwnd, 1000);
        tp.mss_cache = 1448;
        tp.now_us = t_us;
        tp.clock_ns = t_us * 1000;
        tp.wstamp_ns = t_us * 1000;
        tp.jiffies = (t_us / 1000) as u32;
        tp.delivered_mstamp_us = t_us;
        tp.snd_nxt = SeqNumber(1);
        tp
    }

    /// Runs `rounds` round trips of a bottleneck of `pkts_per_rtt` packets per `rtt_us`,
    /// one ACK per round (the whole window delivered), and returns the modes seen. The
    /// flight follows the mode: STARTUP up to cwnd, DRAIN empties below one BDP, the
    /// probing phase fills cwnd (the queue builds), the others hold one BDP, PROBE_RTT 4.
    fn drive(b: &mut Bbr, tp: &mut CcSock, rounds: u32, pkts_per_rtt: u32, rtt_us: u64) -> Vec<BbrMode> {
        let mut modes = vec![];
        for _ in 0..rounds {
            let prior = tp.delivered;
            let acked = tp.snd_cwnd.min(pkts_per_rtt);
            tp.delivered += acked;
            tp.now_us += rtt_us;
            tp.clock_ns = tp.now_us * 1000;
            tp.wstamp_ns = tp.clock_ns;
            tp.jiffies = (tp.now_us / 1000) as u32;
            tp.delivered_mstamp_us = tp.now_us;
            tp.in_flight = match b.mode {
                BbrMode::Startup => tp.snd_cwnd,
                BbrMode::Drain => pkts_per_rtt / 2,
                BbrMode::ProbeBw if b.pacing_gain > BBR_UNIT => tp.snd_cwnd,
                BbrMode::ProbeBw => pkts_per_rtt,
                BbrMode::ProbeRtt => BBR_CWND_MIN_TARGET,
            };
            let rs = RateSample {
                prior_delivered: prior,
                delivered: Some(acked),
                interval_us: Some(rtt_us),
                rtt_us: Some(rtt_us),
                acked_sacked: acked,
                prior_in_flight: tp.in_flight,
                ..RateSample::default()
            };
            b.cong_control(tp, &rs);
            modes.push(b.mode);
        }
        modes
    }

    #[test]
    fn startup_drain_probe_bw_and_probe_rtt() {
        let mut tp = sock(10, 0);
        tp.srtt_us = 100_000 << 3;
        tp.min_rtt_us = 100_000;
        let mut b = Bbr::new(1);
        b.init(&mut tp);
        assert!(tp.request_pacing);
        assert_eq!((b.mode, b.pacing_gain, b.cwnd_gain), (BbrMode::Startup, BBR_HIGH_GAIN, BBR_HIGH_GAIN));
        // pacing rate = high_gain × 10 packets / 100 ms, less 1 %
        let want = (((10u128 * BW_UNIT as u128 / 100_000 * 1448 * 739) >> 8) * 990_000) >> 24;
        assert_eq!(tp.pacing_rate as u128, want);
        // 100 packets per 100 ms bottleneck: startup until 3 rounds without 25 % growth
        let modes = drive(&mut b, &mut tp, 12, 100, 100_000);
        let first_drain = modes.iter().position(|&m| m == BbrMode::Drain || m == BbrMode::ProbeBw).unwrap();
        assert!(b.full_bw_reached);
        // cwnd doubles per round in STARTUP (10, 20, 40, 80, >100); growth stops after round 4
        assert!((5..=8).contains(&first_drain), "{modes:?}");
        assert_eq!(modes.last(), Some(&BbrMode::ProbeBw));
        // bw = 100 packets / 100 ms = 1448 · 1000 bytes/s (to the << 24 fixed point), as
        // ss -ti shows it
        let CcInfo::Bbr { bw, min_rtt, cwnd_gain, .. } = b.get_info(&tp) else { panic!() };
        let fixed = 100 * BW_UNIT / 100_000;
        assert_eq!((bw, min_rtt, cwnd_gain), ((fixed * 1448 * 1_000_000) >> 24, 100_000, 512));
        assert!(bw.abs_diff(1_448_000) < 100);
        // PROBE_BW cycles 8 phases, never starting with the 0.75 one
        assert_ne!(b.cycle_idx, 1);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..16 {
            drive(&mut b, &mut tp, 1, 100, 100_000);
            seen.insert(b.pacing_gain);
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![192, 256, 320]);
        // the cwnd target: 2 BDP = 200, plus the ACK aggregation seen (one ACK per round
        // acks a whole window: capped at bw × 100 ms, 99.99 in the << 24 fixed point), plus
        // 3 TSO bursts of 2, even, +2 in the probing phase
        assert_eq!(b.bdp(b.bw(), BBR_CWND_GAIN), 200);
        assert_eq!(b.ack_aggregation_cwnd(), 99);
        let target = b.quantization_budget(&tp, 299);
        assert_eq!(tp.snd_cwnd, target);
        assert!(target == 306 || target == 308, "{target}");
        // min_rtt 10 s old (samples 10 % higher): PROBE_RTT at cwnd 4 for 200 ms + a round
        let t0 = tp.now_us;
        let modes = drive(&mut b, &mut tp, 120, 100, 110_000);
        let i = modes.iter().position(|&m| m == BbrMode::ProbeRtt).unwrap();
        assert!(tp.now_us - t0 >= (i as u64) * 110_000);
        assert!(i as u64 * 110_000 >= 10_000_000 - t0.min(10_000_000), "entered after 10 s: {i}");
        let n = modes[i..].iter().take_while(|&&m| m == BbrMode::ProbeRtt).count();
        assert!((2..=4).contains(&n), "PROBE_RTT for 200 ms and a round trip: {n} rounds of 110 ms");
        assert_eq!(modes[i + n], BbrMode::ProbeBw, "full pipe: back to PROBE_BW");
        assert_eq!(b.min_rtt_us, 110_000, "the expired filter took the new samples");
    }

    #[test]
    fn bdp_quantization_and_pacing_margin() {
        let mut tp = sock(10, 0);
        let mut b = Bbr::new(7);
        b.init(&mut tp);
        assert_eq!(b.bdp(123, BBR_UNIT), TCP_INIT_CWND, "no RTT sample: the initial window");
        b.min_rtt_us = 50_000;
        // 1000 packets/s = 0.001 packets/µs: BDP at 50 ms = 50 packets
        let bw = (BW_UNIT / 1000) as u32;
        assert_eq!(b.bdp(bw, BBR_UNIT), 50);
        assert_eq!(b.bdp(bw, BBR_CWND_GAIN), 100);
        tp.pacing_rate = 1_448_000;
        assert_eq!(Bbr::tso_segs_goal(&tp), 2); // 1 ms of 1.4 MB/s = 1414 B < 1 MSS -> min 2
        assert_eq!(b.quantization_budget(&tp, 51), 58);
        tp.pacing_rate = 100_000; // below 1.2 Mbit/s: single segments
        assert_eq!(Bbr::tso_segs_goal(&tp), 1);
        // pacing 1 % below the bandwidth: 1/1024 packets/µs = 976.5625 pkt/s · 1448 B · 0.99
        assert_eq!(Bbr::rate_bytes_per_sec(&tp, BW_UNIT / 1024, BBR_UNIT), 1_399_921);
    }

    #[test]
    fn long_term_bandwidth_detects_a_policer() {
        let mut tp = sock(100, 0);
        tp.min_rtt_us = 10_000;
        let mut b = Bbr::new(3);
        b.init(&mut tp);
        let mut lost = 0;
        // 8 rounds per interval at 1000 packets/s with 30 % loss: two consistent intervals
        for round in 0..40u32 {
            let prior = tp.delivered;
            tp.delivered += 10;
            lost += 3;
            tp.lost = lost;
            tp.now_us += 10_000;
            tp.delivered_mstamp_us = tp.now_us;
            tp.jiffies = (tp.now_us / 1000) as u32;
            let rs = RateSample {
                prior_delivered: prior,
                delivered: Some(10),
                interval_us: Some(10_000),
                rtt_us: Some(10_000),
                acked_sacked: 10,
                losses: 3,
                ..RateSample::default()
            };
            b.cong_control(&mut tp, &rs);
            if b.lt_use_bw {
                // sampling starts at the first loss (round 0); two 4-round intervals
                assert_eq!(round, 2 * BBR_LT_INTVL_MIN_RTTS - 1);
                break;
            }
        }
        assert!(b.lt_use_bw, "policer detected");
        // 10 packets per 10 ms (the delivered count spans the interval's ms)
        let pkts_per_us = b.lt_bw as f64 / BW_UNIT as f64;
        assert!((pkts_per_us - 0.001).abs() < 0.0002, "{pkts_per_us}");
        assert_eq!(b.bw(), b.lt_bw);
    }
}
