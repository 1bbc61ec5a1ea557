//! One destination transport address (Linux `struct sctp_transport`, `transport.c`): RTT
//! estimator and RTO, the per-path congestion window, and the heartbeat timer.
use crate::config::SctpConfig;
use crate::types::{PathInfo, PathState};
use crate::wire::Tsn;
use std::net::Ipv4Addr;
use wirelab_core::{Duration, Instant, Rng};

/// cwnd increments for one SACK: in slow start, and per cwnd of data in congestion
/// avoidance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Increase {
    pub slow_start: u32,
    pub avoidance: u32,
}

/// One destination transport address (Linux `struct sctp_transport`).
#[derive(Clone, Debug)]
pub(crate) struct Path {
    pub addr: Ipv4Addr,
    pub local: Ipv4Addr,
    pub state: PathState,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub pba: u32,
    pub flight: u32,
    pub(super) srtt: Option<u64>,
    /// The most recent RTT sample, ns (Linux `transport->rtt`).
    pub(super) rtt_last: Option<u64>,
    rttvar: u64,
    pub rto: Duration,
    pub error_count: u32,
    /// An RTT measurement is under way (one per path per RTT; Karn).
    pub(super) rtt_pending: bool,
    /// T3-rtx expiry.
    pub(super) t3: Option<Instant>,
    /// Heartbeat timer expiry.
    pub(super) hb_at: Option<Instant>,
    pub(super) hb_outstanding: bool,
    pub(super) hb_nonce: u64,
    pub(super) last_data_send: Instant,
    pub(super) hb_armed_from: Instant,
    /// cwnd cap for this flush (`sctp_transport_burst_limited()`).
    pub(super) burst_cap: u32,
    /// Bytes newly acked on this path by the SACK being processed.
    pub(super) acked: u32,
    /// Flight before the SACK being processed.
    pub(super) flight_before: u32,
    /// User bytes sent / acked on this path, DATA chunks retransmitted on it (counters).
    pub(super) bytes_sent: u64,
    pub(super) bytes_acked: u64,
    pub(super) retransmits: u64,
    /// CMT, per SACK: some TSN sent here was newly acked (FreeBSD `saw_newack`).
    pub(super) saw_newack: bool,
    /// CMT, per SACK: highest TSN sent here newly acked by a gap block, else the cumulative
    /// TSN (`this_sack_highest_newack`).
    pub(super) highest_newack: Tsn,
    /// CMT, per SACK: the path's pseudo-cumack (its lowest TSN in flight, first
    /// transmissions and retransmissions apart: CUCv2) was newly acked (`new_pseudo_cumack`).
    pub(super) new_pca: bool,
    /// CMT per-destination fast recovery: its exit point (`net->fast_recovery_tsn`).
    pub(super) fast_recovery: Option<Tsn>,
}

impl Path {
    pub(super) fn new(addr: Ipv4Addr, local: Ipv4Addr, cfg: &SctpConfig, ssthresh: u32) -> Path {
        let mtu = cfg.pmtu;
        Path {
            addr,
            local,
            state: PathState::Active,
            // RFC 9260 §7.2.1: IW = min(4·MTU, max(2·MTU, 4380)).
            cwnd: (4 * mtu).min((2 * mtu).max(4380)),
            ssthresh,
            pba: 0,
            flight: 0,
            srtt: None,
            rtt_last: None,
            rttvar: 0,
            rto: cfg.rto_initial,
            error_count: 0,
            rtt_pending: false,
            t3: None,
            hb_at: None,
            hb_outstanding: false,
            hb_nonce: 0,
            last_data_send: Instant::ZERO,
            hb_armed_from: Instant::ZERO,
            burst_cap: u32::MAX,
            acked: 0,
            flight_before: 0,
            bytes_sent: 0,
            bytes_acked: 0,
            retransmits: 0,
            saw_newack: false,
            highest_newack: Tsn(0),
            new_pca: false,
            fast_recovery: None,
        }
    }

    /// RFC 9260 §6.3.1 (C2/C3); Linux `sctp_transport_update_rto()`.
    pub(super) fn rtt_sample(&mut self, r: Duration, cfg: &SctpConfig) {
        let r = r.as_nanos();
        self.rtt_last = Some(r);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let d = s.abs_diff(r);
                self.rttvar = self.rttvar - (self.rttvar >> cfg.rto_beta_exp) + (d >> cfg.rto_beta_exp);
                self.srtt = Some(s - (s >> cfg.rto_alpha_exp) + (r >> cfg.rto_alpha_exp));
            }
        }
        // Linux: "if (!tp->rttvar) tp->rttvar = 1 jiffy" (clock granularity G).
        if self.rttvar == 0 {
            self.rttvar = 1_000_000;
        }
        let rto = Duration::from_nanos(self.srtt.unwrap_or(0) + 4 * self.rttvar);
        self.rto = rto.max(cfg.rto_min).min(cfg.rto_max);
        self.rtt_pending = false;
    }

    /// cwnd growth for `self.acked` newly acknowledged bytes (RFC 9260 §7.2.1 slow start,
    /// §7.2.2 congestion avoidance; Linux `sctp_transport_raise_cwnd()`): slow start only
    /// when the window was fully used before the SACK and not in fast recovery.
    pub(super) fn raise_cwnd(&mut self, in_fast_recovery: bool, mtu: u32) {
        let inc = Increase { slow_start: self.acked.min(mtu), avoidance: mtu };
        self.raise_cwnd_by(in_fast_recovery, inc);
    }

    /// As [`Path::raise_cwnd`] with the increments given (CMT/RP computes its own).
    pub(super) fn raise_cwnd_by(&mut self, in_fast_recovery: bool, inc: Increase) {
        if self.cwnd <= self.ssthresh {
            if !in_fast_recovery && self.flight_before >= self.cwnd {
                self.cwnd += inc.slow_start;
            }
        } else {
            self.pba += self.acked;
            if self.flight_before >= self.cwnd && self.pba >= self.cwnd {
                self.pba -= self.cwnd;
                self.cwnd += inc.avoidance;
            }
        }
    }

    /// T3-rtx expiry, §7.2.3 (Linux `sctp_transport_lower_cwnd(SCTP_LOWER_CWND_T3_RTX)`).
    pub(super) fn lower_cwnd_t3(&mut self, mtu: u32) {
        self.ssthresh = (self.cwnd / 2).max(4 * mtu);
        self.cwnd = mtu;
        self.pba = 0;
        self.rtt_pending = false;
    }

    /// Fast retransmit, §7.2.3 (Linux `sctp_transport_lower_cwnd(SCTP_LOWER_CWND_FAST_RTX)`).
    pub(super) fn lower_cwnd_fast_rtx(&mut self, mtu: u32) {
        self.ssthresh = (self.cwnd / 2).max(4 * mtu);
        self.cwnd = self.ssthresh;
        self.pba = 0;
    }

    /// `SCTP_CMD_TRANSPORT_IDLE` → `sctp_transport_lower_cwnd(SCTP_LOWER_CWND_INACTIVE)`:
    /// an idle path decays to max(cwnd/2, 4·MTU), ssthresh = cwnd (errata 3.27.2).
    pub(super) fn lower_cwnd_inactive(&mut self, mtu: u32) {
        self.cwnd = (self.cwnd / 2).max(4 * mtu);
        self.ssthresh = self.cwnd;
    }

    /// Linux `sctp_transport_reset_hb_timer()`: timeout = RTO (+ hb_interval unless PF),
    /// plus a uniform jitter in [0, RTO).
    pub(super) fn arm_hb(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        let mut to = self.rto;
        if self.state != PathState::PotentiallyFailed {
            to += cfg.hb_interval;
        }
        let to = to.max(Duration::from_millis(200));
        let jitter = Duration::from_nanos(rng.below(self.rto.as_nanos().max(1)));
        self.hb_at = Some(now + to + jitter);
        self.hb_armed_from = now;
    }

    pub(super) fn info(&self, primary: bool) -> PathInfo {
        PathInfo {
            addr: self.addr,
            local: self.local,
            state: self.state,
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            flight: self.flight,
            rto_ms: self.rto.as_nanos() as f64 / 1e6,
            srtt_ms: self.srtt.unwrap_or(0) as f64 / 1e6,
            error_count: self.error_count,
            partial_bytes_acked: self.pba,
            primary,
            bytes_sent: self.bytes_sent,
            bytes_acked: self.bytes_acked,
            retransmits: self.retransmits,
            fast_recovery: self.fast_recovery.is_some(),
        }
    }
}
