//! The connection's side of congestion control (`tcp_cong.c`, `tcp_cong_control()` and
//! `tcp_update_pacing_rate()` of tcp_input.c): module life cycle, `tcp_ca_event()`,
//! the per-ACK cwnd update and the pacing rate.
use super::Conn;
use crate::api::TcpState;
use crate::cc::{CaEvent, CaState, CongestionAlgo, RateSample};
use crate::config::TcpConfig;
use wirelab_core::Instant;

impl Conn {
    /// `tcp_init_congestion_control()`: the module's `init` with a fresh view.
    pub(super) fn init_congestion_control(&mut self, cfg: &TcpConfig, now: Instant) {
        self.sync_tp(cfg, now);
        self.cc.init(&mut self.tp);
        self.apply_tp();
        self.cc_initialized = true;
    }

    /// `tcp_set_congestion_control()` (`TCP_CONGESTION`): release the old module, take
    /// the new one; an open socket initialises it at once (`tcp_reinit_congestion_control`),
    /// a connecting or passive one at the end of the handshake.
    pub(super) fn set_congestion_control(&mut self, cfg: &TcpConfig, now: Instant, algo: CongestionAlgo) {
        if algo.name() == self.cc.name() {
            return;
        }
        self.cc.release();
        let seed = (self.iss.0 as u64) << 32 | self.ts_offset as u64;
        self.cc = algo.instantiate(cfg, seed);
        self.cc_snapshot = self.cc.needs_snapshot();
        self.cc_initialized = false;
        if !matches!(self.state, TcpState::Closed | TcpState::Listen | TcpState::SynRecv) {
            self.init_congestion_control(cfg, now);
        }
    }

    /// `tcp_ca_event()`.
    pub(super) fn ca_event(&mut self, cfg: &TcpConfig, now: Instant, ev: CaEvent) {
        self.sync_tp(cfg, now);
        self.cc.cwnd_event(&mut self.tp, ev);
        self.apply_tp();
    }

    /// `tcp_cong_control()`: the module's `cong_control` if it has one, else PRR during a
    /// reduction, otherwise `cong_avoid` when `tcp_may_raise_cwnd()`; then
    /// `tcp_update_pacing_rate()`.
    pub(super) fn cong_control(&mut self, cfg: &TcpConfig, now: Instant, rs: &RateSample, una_advanced: bool, data_acked: bool) {
        if self.cc.has_cong_control() {
            self.sync_tp(cfg, now);
            self.cc.cong_control(&mut self.tp, rs);
            self.apply_tp();
            return;
        }
        let acked_sacked = rs.acked_sacked;
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            if cfg.prr {
                self.cwnd_reduction(acked_sacked, una_advanced);
            }
        } else if data_acked {
            // tcp_may_raise_cwnd(): FLAG_DATA_ACKED
            self.sync_tp(cfg, now);
            self.cc.cong_avoid(&mut self.tp, acked_sacked.max(1));
        }
        self.update_pacing_rate(cfg);
    }

    /// `tcp_cwnd_reduction()`: Proportional Rate Reduction (RFC 6937).
    pub(super) fn cwnd_reduction(&mut self, newly_acked_sacked: u32, una_advanced: bool) {
        let in_flight = self.in_flight();
        if let Some(c) = self.prr.cwnd_reduction(newly_acked_sacked, una_advanced, in_flight, self.tp.snd_ssthresh, self.tp.prior_cwnd) {
            self.tp.snd_cwnd = c;
        }
    }

    /// `tcp_update_pacing_rate()`: `tcp_pacing_ss_ratio` % (200) of cwnd·mss/srtt while
    /// cwnd is below half of ssthresh, `tcp_pacing_ca_ratio` % (120) after, capped by
    /// `sk_max_pacing_rate`.
    pub(super) fn update_pacing_rate(&mut self, cfg: &TcpConfig) {
        let tp = &self.tp;
        let mut rate = self.mss_cache as u128 * ((1_000_000 / 100) << 3);
        rate *= if tp.snd_cwnd < tp.snd_ssthresh / 2 { cfg.tcp_pacing_ss_ratio } else { cfg.tcp_pacing_ca_ratio } as u128;
        rate *= tp.snd_cwnd.max(self.rtx.packets_out) as u128;
        if self.rtt.srtt_us != 0 {
            rate /= self.rtt.srtt_us as u128;
        }
        self.tp.pacing_rate = rate.min(tp.max_pacing_rate as u128) as u64;
    }

    /// `tcp_tso_segs()`: segments per TSO packet, `tcp_tso_autosize()` of this pacing
    /// rate with the module's `min_tso_segs()` (BBR) or the `tcp_min_tso_segs` sysctl.
    pub(super) fn tso_segs(&self, cfg: &TcpConfig) -> u32 {
        let min = self.cc.min_tso_segs(&self.tp).unwrap_or(cfg.tcp_min_tso_segs);
        super::tso::tso_segs(self.tp.pacing_rate, self.mss_cache, self.rtt.min_rtt_us, min)
    }

    /// `SO_MAX_PACING_RATE`: caps the pacing rate and turns pacing on.
    pub(super) fn set_max_pacing_rate(&mut self, rate: u64) {
        self.tp.max_pacing_rate = rate;
        self.tp.pacing_rate = self.tp.pacing_rate.min(rate);
        if rate != u64::MAX {
            self.request_pacing();
        }
    }
}
