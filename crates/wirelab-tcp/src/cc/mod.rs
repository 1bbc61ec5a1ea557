//! Congestion control, shaped like Linux's `struct tcp_congestion_ops` (include/net/tcp.h)
//! and its registry (net/ipv4/tcp_cong.c).
//!
//! A module is one file under `cc/` implementing [`CongestionOps`] plus one line in
//! [`MODULES`] (name → constructor). The engine calls the hooks where Linux does:
//! `ssthresh` when a reduction starts, `cong_avoid` (or `cong_control` when a module
//! provides it, as BBR does) on every ACK, `set_state` on `tcp_set_ca_state()`,
//! `cwnd_event` on `tcp_ca_event()`, `pkts_acked` from `tcp_clean_rtx_queue()`,
//! `in_ack_event` from `tcp_in_ack_event()`, `undo_cwnd` from
//! `tcp_undo_cwnd_reduction()`. [`CcSock`] is the part of `tcp_sock` a module may read or
//! write (cwnd in packets, as Linux).
//!
//! Modules are boxed trait objects: one indirect call per hook, a few per ACK.
use crate::config::{ConfigError, TcpConfig};
use crate::wire::SeqNumber;
use core::fmt;

pub mod bbr;
pub mod cubic;
pub mod dctcp;
pub mod minmax;
pub mod reno;
pub mod vegas;

pub use bbr::Bbr;
pub use cubic::Cubic;
pub use dctcp::Dctcp;
pub use reno::Reno;
pub use vegas::Vegas;

/// `TCP_INFINITE_SSTHRESH`.
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Congestion-avoidance state (`enum tcp_ca_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    /// Nothing bad has been seen.
    Open = 0,
    /// Dupacks/SACKs seen, no loss yet.
    Disorder = 1,
    /// cwnd reduced for ECN/local congestion.
    Cwr = 2,
    /// Fast recovery.
    Recovery = 3,
    /// RTO recovery.
    Loss = 4,
}

impl CaState {
    /// Name as `ss -ti` prints it.
    pub fn name(self) -> &'static str {
        match self {
            CaState::Open => "open",
            CaState::Disorder => "disorder",
            CaState::Cwr => "cwr",
            CaState::Recovery => "recovery",
            CaState::Loss => "loss",
        }
    }
}

/// Events passed to `cwnd_event` (`enum tcp_ca_event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// First transmit when no packets in flight.
    TxStart,
    /// Congestion window restart after idle.
    CwndRestart,
    /// RTO loss.
    Loss,
    /// A data segment arrived without CE (ECT) on an ECN connection
    /// (`CA_EVENT_ECN_NO_CE`; only for modules that need ECN).
    EcnNoCe,
    /// A data segment arrived with CE (`CA_EVENT_ECN_IS_CE`).
    EcnIsCe,
}

/// `in_ack_event` flags (`enum tcp_ca_ack_event_flags`): not a pure ACK in the fast path.
pub const CA_ACK_SLOWPATH: u32 = 1 << 0;
/// The ACK updated the send window.
pub const CA_ACK_WIN_UPDATE: u32 = 1 << 1;
/// The ACK carried ECE.
pub const CA_ACK_ECE: u32 = 1 << 2;

/// The part of `struct tcp_sock` (and `struct sock`) a module may read or write.
///
/// The module changes cwnd (in packets), ssthresh, the pacing rate, `prior_cwnd`,
/// `app_limited` and `demand_cwr`; the connection refreshes the snapshot fields ("at the
/// time of the call", the clocks; the full snapshot only for modules that ask,
/// [`CongestionOps::needs_snapshot`]) before each call, and acts on the requests
/// (`tx_ack`, `ack_now`, `request_pacing`) after it. `repr(C)`: what every ACK touches
/// first, in one cache line (issue 17, docs/performance.md "Session 9").
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct CcSock {
    // ---- what every ACK reads or writes (`sync_tp`, `cong_avoid`, `tcp_update_pacing_rate()`): one line ----
    /// `sk_pacing_rate` in bytes/s (`u64::MAX` = `~0UL`, unpaced).
    pub pacing_rate: u64,
    /// `sk_max_pacing_rate` (`SO_MAX_PACING_RATE`; `u64::MAX` = none).
    pub max_pacing_rate: u64,
    /// Now, in microseconds (`tcp_clock_us()`, `tp->tcp_mstamp`).
    pub now_us: u64,
    /// `snd_cwnd` (packets).
    pub snd_cwnd: u32,
    /// `snd_ssthresh` (packets).
    pub snd_ssthresh: u32,
    /// `snd_cwnd_cnt`: AI accumulator.
    pub snd_cwnd_cnt: u32,
    /// `snd_cwnd_clamp`.
    pub snd_cwnd_clamp: u32,
    /// `snd_una` at the time of the call.
    pub snd_una: SeqNumber,
    /// `snd_nxt` at the time of the call.
    pub snd_nxt: SeqNumber,
    /// Now, in jiffies (`tcp_jiffies32`).
    pub jiffies: u32,
    /// `lsndtime` in jiffies (last data send).
    pub lsndtime: u32,
    /// Kernel HZ.
    pub hz: u32,
    /// `ecn_flags & TCP_ECN_DEMAND_CWR`: echo ECE on the ACKs we send (DCTCP sets it).
    pub demand_cwr: bool,
    /// `tcp_is_cwnd_limited()` at the time of the call.
    pub cwnd_limited: bool,
    /// ACK the current data at once (`icsk_ack.pending |= ICSK_ACK_NOW`).
    pub ack_now: bool,
    /// Pace this socket (`sk_pacing_status` NONE → NEEDED, as `bbr_init()` does).
    pub request_pacing: bool,
    // ---- the rest ----
    /// `prior_cwnd`: cwnd when the current reduction started (read by `undo_cwnd`).
    pub prior_cwnd: u32,
    /// `tp->app_limited`: `delivered` + in flight when the sender became
    /// application-limited, 0 when it is not (BBR's PROBE_RTT sets it too).
    pub app_limited: u32,
    /// Send an ACK for this `rcv_nxt` with ECE as given, now (`__tcp_send_ack(sk,
    /// prior_rcv_nxt)`, DCTCP's ACK reflecting the previous CE state).
    pub tx_ack: Option<(SeqNumber, bool)>,
    /// Now, in nanoseconds (`tp->tcp_clock_cache`).
    pub clock_ns: u64,
    /// Earliest departure time of the next packet (`tp->tcp_wstamp_ns`).
    pub wstamp_ns: u64,
    /// `tp->delivered_mstamp` (µs).
    pub delivered_mstamp_us: u64,
    /// `rcv_nxt` at the time of the call.
    pub rcv_nxt: SeqNumber,
    /// `mss_cache`.
    pub mss_cache: u32,
    /// `srtt_us` (smoothed RTT << 3, µs; 0 = no sample).
    pub srtt_us: u32,
    /// `tcp_min_rtt()` in µs (`u32::MAX` = none yet).
    pub min_rtt_us: u32,
    /// `tp->delivered`: packets delivered so far.
    pub delivered: u32,
    /// `tp->delivered_ce`: of those, delivered with an ECE echo.
    pub delivered_ce: u32,
    /// `tp->lost`: packets marked lost so far.
    pub lost: u32,
    /// `packets_out`.
    pub packets_out: u32,
    /// `tcp_packets_in_flight()`.
    pub in_flight: u32,
    /// `icsk_ca_state`.
    pub ca_state: CaState,
    /// ECN was negotiated (`ecn_flags & TCP_ECN_OK`).
    pub ecn_ok: bool,
    /// A delayed ACK is pending (`icsk_ack.pending & ICSK_ACK_TIMER`).
    pub ack_timer_pending: bool,
}

impl CcSock {
    /// A socket view with cwnd `cwnd`, infinite ssthresh, unpaced, at time zero.
    pub fn new(cwnd: u32, hz: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            snd_cwnd_cnt: 0,
            snd_cwnd_clamp: u32::MAX,
            prior_cwnd: 0,
            pacing_rate: u64::MAX,
            max_pacing_rate: u64::MAX,
            app_limited: 0,
            demand_cwr: false,
            snd_una: SeqNumber(0),
            snd_nxt: SeqNumber(0),
            rcv_nxt: SeqNumber(0),
            cwnd_limited: false,
            jiffies: 0,
            now_us: 0,
            clock_ns: 0,
            wstamp_ns: 0,
            lsndtime: 0,
            hz,
            mss_cache: 1448,
            srtt_us: 0,
            min_rtt_us: u32::MAX,
            delivered: 0,
            delivered_ce: 0,
            lost: 0,
            delivered_mstamp_us: 0,
            packets_out: 0,
            in_flight: 0,
            ca_state: CaState::Open,
            ecn_ok: false,
            ack_timer_pending: false,
            tx_ack: None,
            ack_now: false,
            request_pacing: false,
        }
    }

    /// `tcp_in_slow_start()`.
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.snd_ssthresh
    }

    /// `tcp_in_initial_slowstart()`: ssthresh still "infinite".
    #[inline]
    pub fn in_initial_slowstart(&self) -> bool {
        self.snd_ssthresh >= TCP_INFINITE_SSTHRESH
    }

    /// `tcp_slow_start()`: returns the leftover `acked` once ssthresh is reached.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = self.snd_cwnd.saturating_add(acked).min(self.snd_ssthresh);
        let left = acked - (cwnd - self.snd_cwnd).min(acked);
        self.snd_cwnd = cwnd.min(self.snd_cwnd_clamp);
        left
    }

    /// `tcp_cong_avoid_ai()`: one packet per `w` acked.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.snd_cwnd_cnt >= w {
            self.snd_cwnd_cnt = 0;
            self.snd_cwnd += 1;
        }
        self.snd_cwnd_cnt += acked;
        if self.snd_cwnd_cnt >= w {
            let delta = self.snd_cwnd_cnt / w;
            self.snd_cwnd_cnt -= delta * w;
            self.snd_cwnd += delta;
        }
        self.snd_cwnd = self.snd_cwnd.min(self.snd_cwnd_clamp);
    }
}

/// `struct ack_sample`: what `pkts_acked` learns from one ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckSample {
    /// Packets newly (cumulatively or selectively) acknowledged.
    pub pkts_acked: u32,
    /// RTT sample of this ACK in µs (`rtt_us`; `None` where Linux passes -1).
    pub rtt_us: Option<u64>,
    /// Packets in flight before this ACK.
    pub in_flight: u32,
}

/// `struct rate_sample` (include/net/tcp.h), as `cong_control` receives it
/// (`tcp_rate_gen()` fills it at the end of `tcp_ack()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSample {
    /// `prior_delivered`: `tp->delivered` when the most recently sent (S)ACKed packet
    /// was sent.
    pub prior_delivered: u32,
    /// `delivered`: packets delivered over the interval; `None` is Linux's -1 (invalid).
    pub delivered: Option<u32>,
    /// `interval_us`: the sample's interval, max(send phase, ACK phase); `None` = -1.
    pub interval_us: Option<u64>,
    /// `rtt_us`: RTT of the most recently sent (S)ACKed never-retransmitted packet
    /// (`None` = -1).
    pub rtt_us: Option<u64>,
    /// `losses`: packets newly marked lost by this ACK.
    pub losses: u32,
    /// `acked_sacked`: packets newly (S)ACKed by this ACK.
    pub acked_sacked: u32,
    /// `prior_in_flight`: packets in flight before this ACK.
    pub prior_in_flight: u32,
    /// `is_app_limited`: the sample was taken while application-limited.
    pub is_app_limited: bool,
    /// `is_retrans`: the sample's packet was retransmitted.
    pub is_retrans: bool,
    /// `is_ack_delayed`: the ACK may have been delayed (`FLAG_ACK_MAYBE_DELAYED`).
    pub is_ack_delayed: bool,
}

/// Module-specific `ss -ti` fields (`union tcp_cc_info`, returned by `get_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CcInfo {
    /// The module reports nothing (Reno, CUBIC).
    #[default]
    None,
    /// `struct tcpvegas_info`.
    Vegas {
        /// `tcpv_enabled`.
        enabled: u32,
        /// `tcpv_rttcnt`: RTT samples this round.
        rttcnt: u32,
        /// `tcpv_rtt` (µs).
        rtt: u32,
        /// `tcpv_minrtt` (µs).
        minrtt: u32,
    },
    /// `struct tcp_dctcp_info`.
    Dctcp {
        /// `dctcp_enabled`.
        enabled: u16,
        /// `dctcp_ce_state`.
        ce_state: u16,
        /// `dctcp_alpha` (out of 1024).
        alpha: u32,
        /// `dctcp_ab_ecn`: bytes acked with ECE this window.
        ab_ecn: u32,
        /// `dctcp_ab_tot`: bytes acked this window.
        ab_tot: u32,
    },
    /// `struct tcp_bbr_info`.
    Bbr {
        /// Max-filtered bandwidth, bytes/s (`bbr_bw_lo | bbr_bw_hi << 32`).
        bw: u64,
        /// `bbr_min_rtt` (µs).
        min_rtt: u32,
        /// `bbr_pacing_gain` (<< 8).
        pacing_gain: u32,
        /// `bbr_cwnd_gain` (<< 8).
        cwnd_gain: u32,
    },
}

/// `struct tcp_congestion_ops`: the hooks a congestion-control module implements.
pub trait CongestionOps: fmt::Debug {
    /// `name`, as `ss` prints it and `TCP_CONGESTION` takes it.
    fn name(&self) -> &'static str;
    /// `init()`: a connection starts using this module (`tcp_init_congestion_control()`:
    /// at the end of the handshake, or at once when set on an open socket).
    fn init(&mut self, _tp: &mut CcSock) {}
    /// `release()`: the connection stops using it.
    fn release(&mut self) {}
    /// `ssthresh()`: the slow-start threshold after a congestion event (required).
    fn ssthresh(&mut self, tp: &CcSock) -> u32;
    /// `cong_avoid()`: grow cwnd for `acked` delivered packets (required unless
    /// `cong_control` is provided).
    fn cong_avoid(&mut self, tp: &mut CcSock, acked: u32);
    /// Whether the module provides `cong_control()`; then the engine calls it on every
    /// ACK instead of PRR and `cong_avoid` (`tcp_cong_control()`).
    fn has_cong_control(&self) -> bool {
        false
    }
    /// `cong_control()`: full control of cwnd (and pacing) from a delivery-rate sample.
    fn cong_control(&mut self, _tp: &mut CcSock, _rs: &RateSample) {}
    /// `set_state()`: the CA state changes to `new` (`tp.ca_state` may be stale; the
    /// module is only called on a real change).
    fn set_state(&mut self, _tp: &mut CcSock, _new: CaState) {}
    /// `cwnd_event()`.
    fn cwnd_event(&mut self, _tp: &mut CcSock, _ev: CaEvent) {}
    /// `in_ack_event()` with `CA_ACK_*` flags.
    fn in_ack_event(&mut self, _tp: &CcSock, _flags: u32) {}
    /// `pkts_acked()`: packets were acknowledged (with the ACK's RTT sample, if any).
    fn pkts_acked(&mut self, _tp: &mut CcSock, _sample: &AckSample) {}
    /// `undo_cwnd()`: the cwnd to restore when a reduction proves spurious (required).
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32;
    /// `flags & TCP_CONG_NEEDS_ECN`: the module requires ECN (negotiated whatever
    /// `tcp_ecn` says, ECT on every packet).
    fn needs_ecn(&self) -> bool {
        false
    }
    /// Whether the module reads the snapshot fields beyond cwnd, sequence numbers and
    /// time (delivery counters, RTT, in-flight, ECN, ...): the connection refreshes them
    /// before each call only then (an engine economy, not a Linux flag).
    fn needs_snapshot(&self) -> bool {
        true
    }
    /// `min_tso_segs()`: the module's floor for `tcp_tso_segs()` (None: the
    /// `tcp_min_tso_segs` sysctl).
    fn min_tso_segs(&self, _tp: &CcSock) -> Option<u32> {
        None
    }
    /// `sndbuf_expand()`: send-buffer segments per cwnd segment (`tcp_sndbuf_expand()`).
    fn sndbuf_expand(&self) -> u32 {
        2
    }
    /// `get_info()`: module fields for `tcp_info` / `ss -ti`.
    fn get_info(&self, _tp: &CcSock) -> CcInfo {
        CcInfo::None
    }
    /// Bytes of private state (`icsk_ca_priv` use), for the per-connection memory figure.
    fn mem_size(&self) -> usize {
        core::mem::size_of_val(self)
    }
}

/// A registered module: name and constructor (`tcp_register_congestion_control()`).
pub struct CcModule {
    /// The name (`tcp_congestion_ops.name`).
    pub name: &'static str,
    /// Creates the module's per-connection state (not yet `init`ed); the seed is for
    /// modules that draw random numbers (BBR's `prandom_u32_max()`).
    pub new: fn(&TcpConfig, u64) -> Box<dyn CongestionOps>,
}

/// The registry: every module the engine knows, in `tcp_available_congestion_control`
/// order. Adding a module = one file under `cc/` + one line here.
pub const MODULES: &[&CcModule] = &[&reno::MODULE, &cubic::MODULE, &bbr::MODULE, &dctcp::MODULE, &vegas::MODULE];

/// A congestion-control algorithm chosen by name (`net.ipv4.tcp_congestion_control`,
/// `TCP_CONGESTION`): a handle on a [`MODULES`] entry.
#[derive(Clone, Copy)]
pub struct CongestionAlgo(&'static CcModule);

impl CongestionAlgo {
    /// `reno`.
    pub const RENO: CongestionAlgo = CongestionAlgo(&reno::MODULE);
    /// `cubic`.
    pub const CUBIC: CongestionAlgo = CongestionAlgo(&cubic::MODULE);

    /// From the name Linux uses (`tcp_ca_find()`); unknown names are an error listing the
    /// available ones. `newreno` is accepted for `reno` (FreeBSD's spelling).
    pub fn from_name(name: &str) -> Result<Self, ConfigError> {
        let n = match name.trim() {
            "newreno" => "reno",
            n => n,
        };
        MODULES.iter().find(|m| m.name == n).map(|m| CongestionAlgo(m)).ok_or_else(|| {
            ConfigError::new(format!(
                "unknown congestion control `{}` (available: {})",
                name.trim(),
                MODULES.iter().map(|m| m.name).collect::<Vec<_>>().join(" ")
            ))
        })
    }
    /// The Linux name.
    pub fn name(self) -> &'static str {
        self.0.name
    }
    /// A new instance for a connection; the caller runs `init` when Linux's
    /// `tcp_init_congestion_control()` would. `seed` feeds the module's own random draws.
    pub fn instantiate(self, cfg: &TcpConfig, seed: u64) -> Box<dyn CongestionOps> {
        (self.0.new)(cfg, seed)
    }
}

impl PartialEq for CongestionAlgo {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}
impl Eq for CongestionAlgo {}
impl fmt::Debug for CongestionAlgo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CongestionAlgo({})", self.0.name)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn registry_names_and_errors() {
        assert_eq!(CongestionAlgo::from_name("cubic").unwrap(), CongestionAlgo::CUBIC);
        assert_eq!(CongestionAlgo::from_name(" reno ").unwrap().name(), "reno");
        assert_eq!(CongestionAlgo::from_name("newreno").unwrap(), CongestionAlgo::RENO);
        let e = CongestionAlgo::from_name("westwood").unwrap_err().to_string();
        assert!(e.contains("`westwood`") && e.contains("available: reno cubic bbr dctcp vegas"), "{e}");
        // every registered module instantiates under its own name
        let cfg = TcpConfig::default();
        for m in MODULES {
            let a = CongestionAlgo::from_name(m.name).unwrap();
            let mut cc = a.instantiate(&cfg, 1);
            let mut tp = CcSock::new(10, 1000);
            tp.ecn_ok = true; // else DCTCP is dctcp-reno
            cc.init(&mut tp);
            assert_eq!(cc.name(), m.name);
        }
    }
}
