//! Per-host TCP configuration: Linux sysctl knobs plus the era constants a profile fixes.
//!
//! Knobs keep their sysctl spelling (`tcp_rmem`, `tcp_congestion_control`, …). Constants
//! that Linux compiles in (`TCP_RTO_MIN`, `TCP_DELACK_MIN`, HZ …) are fields too, so a
//! profile can pin the values of its era. See docs/tcp.md for the profile table.
use core::fmt;
use wirelab_core::Duration;

pub use crate::cc::CongestionAlgo;

/// Which era's `tcp_rcv_space_adjust()` grows the receive buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RcvSpaceStyle {
    /// Up to 3.14: `space = max(space, 2·copied)`, `window_clamp = space`.
    Legacy,
    /// 3.15 to 4.18: `2·copied + 16·advmss`, ×1.5 or ×2 when the rate grew 25 % / 50 %.
    Steps,
    /// 4.19 to 6.15: `2·copied + 16·advmss` plus twice the relative growth.
    Modern,
    /// 6.16 and later (`tcp_rcvbuf_grow()`): `2·copied` plus twice the relative growth
    /// plus the out-of-order span, `copied` less the bytes still queued; the receiver RTT
    /// latches lower samples and skips zero, repeated-echo and queued-data ones.
    Linux616,
}

/// Which era's TCP Small Queues (`conn/tsq.rs`) limits what a socket keeps in its host's
/// qdiscs and device (`sk_wmem_alloc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TsqModel {
    /// No TSQ (before Linux 3.6; FreeBSD).
    Off,
    /// 3.6 to 3.x (`tcp_write_xmit()`): limit = max(`tcp_limit_output_bytes`,
    /// `sk_pacing_rate >> 10`); retransmissions are not checked.
    Linux3,
    /// 4.x (`tcp_small_queue_check()`): limit = min(max(2·truesize, `sk_pacing_rate >>
    /// 10`), `tcp_limit_output_bytes`), doubled for retransmissions.
    Linux4,
    /// 6.7 and later: as 4.x, and a socket with at most one skb in its retransmit queue
    /// always sends (`tcp_rtx_queue_empty_or_single_skb()`).
    Linux6,
}

/// Redundant data bundling (RDB) variant: `net.ipv4.tcp_rdb` / [`crate::SockOpt::Rdb`].
///
/// `tcp_rdb = 1` is the value of the 2015 patch's boolean sysctl; `2` is a wirelab
/// extension selecting the original 2008 mechanism (docs/tcp.md "Thin streams").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RdbMode {
    /// No bundling (0).
    #[default]
    Off,
    /// The 2015 patch series (Opstad et al., IEEE LCN 2015, `net/ipv4/tcp_rdb.c`, 1):
    /// bundle when the DPIFL thin test holds, up to `tcp_rdb_max_bytes` /
    /// `tcp_rdb_max_packets` previous segments, and treat loss revealed by a bundle as
    /// congestion (enter CWR).
    Lcn2015,
    /// The original thin-stream RDB (Evensen 2008, Petlund 2009, 2): when the stream is
    /// thin (`tcp_stream_is_thin()`), put all unacknowledged data in front of a new
    /// segment as long as the packet stays within one MSS; no congestion reaction.
    Orig2008,
}

impl RdbMode {
    /// From the sysctl value 0, 1 or 2.
    pub fn from_sysctl(v: u32) -> Option<RdbMode> {
        match v {
            0 => Some(RdbMode::Off),
            1 => Some(RdbMode::Lcn2015),
            2 => Some(RdbMode::Orig2008),
            _ => None,
        }
    }
}

/// A configuration string that could not be applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// What went wrong, naming the key or profile.
    pub msg: String,
}
impl ConfigError {
    pub(crate) fn new(msg: String) -> Self {
        ConfigError { msg }
    }
}
impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}
impl std::error::Error for ConfigError {}

/// CUBIC module parameters (`/sys/module/tcp_cubic/parameters/*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubicParams {
    /// `beta` (out of 1024): multiplicative decrease, 717 ≈ 0.7.
    pub beta: u32,
    /// `bic_scale`: C = bic_scale·10/1024 ≈ 0.4 for 41.
    pub bic_scale: u32,
    /// `fast_convergence`.
    pub fast_convergence: bool,
    /// `tcp_friendliness`.
    pub tcp_friendliness: bool,
    /// `hystart`.
    pub hystart: bool,
    /// `hystart_detect`: bit 0 ACK train, bit 1 delay.
    pub hystart_detect: u8,
    /// `hystart_low_window` (segments).
    pub hystart_low_window: u32,
    /// `hystart_ack_delta_us`.
    pub hystart_ack_delta_us: u32,
    /// Lower clamp of the HyStart delay threshold (`HYSTART_DELAY_MIN`): 4 ms since 5.7,
    /// 2 ms before.
    pub hystart_delay_min_us: u32,
    /// Upper clamp (`HYSTART_DELAY_MAX`), 16 ms.
    pub hystart_delay_max_us: u32,
}

impl Default for CubicParams {
    fn default() -> Self {
        CubicParams {
            beta: 717,
            bic_scale: 41,
            fast_convergence: true,
            tcp_friendliness: true,
            hystart: true,
            hystart_detect: 3,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2000,
            hystart_delay_min_us: 4000,
            hystart_delay_max_us: 16000,
        }
    }
}

/// DCTCP module parameters (`/sys/module/tcp_dctcp/parameters/*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DctcpParams {
    /// `dctcp_shift_g`: g = 1/2^shift_g in the alpha update (0–10, default 4).
    pub shift_g: u32,
    /// `dctcp_alpha_on_init`: initial alpha out of 1024 (default 1024, capped there).
    pub alpha_on_init: u32,
}

impl Default for DctcpParams {
    fn default() -> Self {
        DctcpParams { shift_g: 4, alpha_on_init: 1024 }
    }
}

/// Vegas module parameters (`/sys/module/tcp_vegas/parameters/*`), in packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VegasParams {
    /// `alpha`: lower bound of packets queued at the bottleneck (2).
    pub alpha: u32,
    /// `beta`: upper bound (4).
    pub beta: u32,
    /// `gamma`: slow-start exit threshold (1).
    pub gamma: u32,
}

impl Default for VegasParams {
    fn default() -> Self {
        VegasParams { alpha: 2, beta: 4, gamma: 1 }
    }
}

/// Per-host TCP configuration (one per [`crate::TcpEndpoint`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// Profile name this configuration started from.
    pub profile: &'static str,
    /// `net.ipv4.tcp_rmem`: min, default, max receive buffer (bytes).
    pub tcp_rmem: [u32; 3],
    /// `net.ipv4.tcp_wmem`: min, default, max send buffer (bytes).
    pub tcp_wmem: [u32; 3],
    /// `net.core.rmem_max`: ceiling for `SO_RCVBUF`.
    pub rmem_max: u32,
    /// `net.core.wmem_max`: ceiling for `SO_SNDBUF`.
    pub wmem_max: u32,
    /// `net.ipv4.tcp_sack`.
    pub tcp_sack: bool,
    /// `net.ipv4.tcp_dsack`.
    pub tcp_dsack: bool,
    /// `net.ipv4.tcp_timestamps`.
    pub tcp_timestamps: bool,
    /// `net.ipv4.tcp_window_scaling`.
    pub tcp_window_scaling: bool,
    /// `net.ipv4.tcp_congestion_control`.
    pub tcp_congestion_control: CongestionAlgo,
    /// `net.ipv4.tcp_moderate_rcvbuf`: receive-buffer autotuning.
    pub tcp_moderate_rcvbuf: bool,
    /// The era's autotuning rule (profile constant).
    pub rcv_space_style: RcvSpaceStyle,
    /// `net.ipv4.tcp_slow_start_after_idle` (RFC 2861 cwnd validation).
    pub tcp_slow_start_after_idle: bool,
    /// Where the idle check runs (profile property). True (Linux 6):
    /// `tcp_slow_start_after_idle_check()` when a write queues data on an empty write
    /// queue (`tcp_skb_entail()`) and when the peer's window changes with data unsent
    /// (`tcp_ack_update_window()`) — not when a window probe or an opening window lets
    /// held data go. False (the older profiles): when data is sent after idle
    /// (`tcp_event_data_sent()` of 3.x).
    pub idle_check_at_write: bool,
    /// `tcp_may_raise_cwnd()` as Linux 6 has it: with `tp->reordering` above
    /// `tcp_reordering`, any forward progress (a new SACK too) may raise cwnd; otherwise
    /// only a cumulative ACK of new data. Off in the older profiles (not claimed there).
    pub raise_cwnd_on_reordering: bool,
    /// The tail loss probe as Linux 6.x has it (checked against 6.18 with packetdrill,
    /// `own/tlp-*.pkt`): at most one probe per flight, new data included, while
    /// `tp->tlp_high_seq` is set (5.8+ `tcp_send_loss_probe()`: "At most one outstanding
    /// TLP"); a retransmitted probe goes through `__tcp_retransmit_skb()`, so it is not
    /// counted in `retrans_out` (`tcpi_retrans`) nor marked `TCPCB_SACKED_RETRANS`, only
    /// `TCPCB_EVER_RETRANS`; and `tcp_schedule_loss_probe()` arms the probe although
    /// unsent data waits with cwnd room left (held by the receive window), where 3.x/4.x
    /// required the flow to be cwnd- or application-limited. Off in the older RACK
    /// profile (`linux-4.6`: the earlier model, not checked against a kernel).
    pub tlp_6: bool,
    /// D-SACK handling as Linux 6.x has it (`tcp_dsack_seen()` of 5.14+, checked against
    /// 6.18: `own/dsack-counts-delivered.pkt`): a D-SACK counts its duplicate segments as
    /// delivered (`state->sack_delivered`), is ignored when it reports more duplicates
    /// than were retransmitted (`dsack_dups > total_retrans`) or spans more than the
    /// largest window, widens RACK's reordering window only after reordering was seen and
    /// not for a loss probe's duplicate (`FLAG_DSACK_TLP`), and only that duplicate ends a
    /// TLP episode without a cwnd reduction (`tcp_process_tlp_ack()`). Off in the older
    /// profiles (their D-SACK model: every D-SACK widens RACK's window, none is delivered).
    pub dsack_6: bool,
    /// `net.ipv4.tcp_no_metrics_save`. wirelab never caches per-destination metrics, i.e.
    /// always behaves as if this were 1; 0 is accepted and documented as a deviation.
    pub tcp_no_metrics_save: bool,
    /// `net.ipv4.tcp_adv_win_scale`: share of buffer space offered as window (profiles
    /// without [`scaling_ratio`](Self::scaling_ratio); Linux >= 6.6 ignores it).
    pub tcp_adv_win_scale: i32,
    /// Linux >= 6.6's `tp->scaling_ratio` (linux-6 profile): `tcp_win_from_space()` offers
    /// `space x scaling_ratio / 256`, the ratio measured from the received skbs' `len /
    /// truesize` (`tcp_measure_rcv_mss()`), receive memory is charged in truesize
    /// ([`rx_truesize`](Self::rx_truesize)). Off: `tcp_adv_win_scale` and payload bytes.
    pub scaling_ratio: bool,
    /// `net.ipv4.tcp_reordering`: initial dupthresh.
    pub tcp_reordering: u32,
    /// `net.ipv4.tcp_max_reordering`: ceiling of the dynamic dupthresh.
    pub tcp_max_reordering: u32,
    /// `net.ipv4.tcp_retries2`.
    pub tcp_retries2: u32,
    /// `net.ipv4.tcp_syn_retries`.
    pub tcp_syn_retries: u32,
    /// `net.ipv4.tcp_synack_retries`.
    pub tcp_synack_retries: u32,
    /// `net.ipv4.tcp_fin_timeout`: FIN_WAIT2 lifetime of orphaned sockets.
    pub tcp_fin_timeout: Duration,
    /// `net.ipv4.tcp_early_retrans` as in 3.x kernels: 0 off, 1 RFC 5827 early
    /// retransmit, 2 ER delayed by a quarter RTT, 3 delayed ER + tail loss probe, 4 TLP
    /// only. ER is disabled while RACK (`tcp_recovery` bit 0) is on, as in 4.4+.
    pub tcp_early_retrans: u32,
    /// `net.ipv4.tcp_recovery` (stored; RACK not yet implemented).
    pub tcp_recovery: u32,
    /// `net.ipv4.tcp_frto`: F-RTO spurious-timeout detection (RFC 5682); 1 and 2 both
    /// select the SACK-enhanced variant as Linux does.
    pub tcp_frto: u32,
    /// Undo of cwnd reductions proven unnecessary by timestamps (Eifel) or D-SACK
    /// (`tcp_init_undo()` and the `tcp_try_undo_*()` family, Linux ≥ 2.4). Profile
    /// property, no sysctl: off for `linux-2.2`, whose recovery had no undo.
    pub undo: bool,
    /// `net.ipv4.tcp_thin_linear_timeouts`: no RTO backoff for the first
    /// `TCP_THIN_LINEAR_RETRIES` (6) timeouts of a thin stream.
    pub tcp_thin_linear_timeouts: bool,
    /// `net.ipv4.tcp_thin_dupack`: fast retransmit on the first dupACK of a thin stream
    /// (Linux 2.6.34–4.12).
    pub tcp_thin_dupack: bool,
    /// `net.ipv4.tcp_rdb` (0 off, 1 the 2015 patch, 2 the original 2008 RDB).
    pub tcp_rdb: RdbMode,
    /// `net.ipv4.tcp_rdb_max_bytes`: cap on a bundled packet's payload (0 = MSS only).
    pub tcp_rdb_max_bytes: u32,
    /// `net.ipv4.tcp_rdb_max_packets`: previous segments one packet may bundle (2015 RDB).
    pub tcp_rdb_max_packets: u32,
    /// `net.ipv4.tcp_thin_dpifl_itt_lower_bound` (µs, at least 10 000): the 2015 RDB's
    /// thin test is `packets_in_flight < srtt / itt_lower_bound`.
    pub tcp_thin_dpifl_itt_lower_bound_us: u32,
    /// `net.ipv4.ip_local_port_range`.
    pub ip_local_port_range: (u16, u16),
    /// `net.core.somaxconn`: ceiling for `listen()` backlogs.
    pub somaxconn: u32,
    /// PRR (RFC 6937, Linux 3.2+) paces the cwnd reduction in recovery. Without it the
    /// window drops to ssthresh at once (an approximation of pre-3.2 rate halving).
    pub prr: bool,
    /// `TCP_INIT_CWND` (segments).
    pub init_cwnd: u32,
    /// `TCP_RTO_MIN` (also the route `rto_min`).
    pub rto_min: Duration,
    /// `TCP_RTO_MAX`.
    pub rto_max: Duration,
    /// `TCP_TIMEOUT_INIT`: RTO before any sample.
    pub rto_init: Duration,
    /// `TCP_DELACK_MIN`.
    pub delack_min: Duration,
    /// `TCP_DELACK_MAX`.
    pub delack_max: Duration,
    /// `TCP_ATO_MIN`.
    pub ato_min: Duration,
    /// `TCP_MAX_QUICKACKS`.
    pub max_quickacks: u32,
    /// `TCP_TIMEWAIT_LEN` (2·MSL).
    pub timewait_len: Duration,
    /// Kernel HZ: timers are rounded up to whole jiffies, CUBIC runs on jiffies.
    pub hz: u32,
    /// Interface MTU; the advertised MSS is `mtu - 40`.
    pub mtu: u32,
    /// TSO/GSO as Linux 6 sizes it (profile property): writes become skbs of up to
    /// `size_goal`, sent in TSO packets of `tcp_tso_autosize()` segments (PSH on each
    /// multi-segment packet), small ones deferred by `tcp_tso_should_defer()`. Off (the
    /// older profiles): one segment at a time, PSH where the unsent data ends.
    pub tso: bool,
    /// `net.ipv4.tcp_min_tso_segs`: fewest segments a TSO packet is sized for.
    pub tcp_min_tso_segs: u32,
    /// `net.ipv4.tcp_tso_win_divisor`: defer a TSO packet smaller than
    /// min(snd_wnd, cwnd) / divisor (0: at most 3 MSS deferred).
    pub tcp_tso_win_divisor: u32,
    /// CUBIC module parameters.
    pub cubic: CubicParams,
    /// DCTCP module parameters.
    pub dctcp: DctcpParams,
    /// Vegas module parameters.
    pub vegas: VegasParams,
    /// `net.ipv4.tcp_ecn`: 0 off, 1 request ECN on outgoing connections and accept it,
    /// 2 accept it when asked (Linux's default). Linux 6.18 as run here rejects 3–5
    /// (AccECN), so does this.
    pub tcp_ecn: u8,
    /// `net.ipv4.tcp_ecn_fallback`: a retransmitted SYN no longer asks for ECN.
    pub tcp_ecn_fallback: bool,
    /// `net.ipv4.tcp_pacing_ss_ratio` (%, 200): pacing rate vs cwnd·mss/srtt in slow start.
    pub tcp_pacing_ss_ratio: u32,
    /// `net.ipv4.tcp_pacing_ca_ratio` (%, 120): the same in congestion avoidance.
    pub tcp_pacing_ca_ratio: u32,
    /// TCP Small Queues as in this era (profile property).
    pub tsq: TsqModel,
    /// `net.ipv4.tcp_limit_output_bytes`: TSQ's cap on a socket's bytes (truesize) in
    /// its host's qdiscs and device (4 MiB in 6.18, 256 KiB in 4.x, 128 KiB in 3.x).
    pub tcp_limit_output_bytes: u32,
}

/// All profile names.
pub const PROFILES: &[&str] =
    &["linux-6", "linux-4.6", "linux-3.14", "linux-2.6.37", "linux-2.2", "freebsd-4.10"];

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig::linux6()
    }
}

/// A boolean TCP sysctl as Linux 6 reads it: `proc_dou8vec_minmax` without bounds takes
/// 0..=255 and the stack tests `!= 0` (`tcp_sack = 2` is on). Anything else is an error.
fn parse_bool(key: &str, v: &str) -> Result<bool, ConfigError> {
    match v.trim().parse::<u8>() {
        Ok(x) => Ok(x != 0),
        Err(_) => Err(ConfigError::new(format!("{key}: expected an integer in 0..=255 (0 = off, any other value = on, as Linux's proc_dou8vec_minmax), got `{}`", v.trim()))),
    }
}
fn parse_u32(key: &str, v: &str) -> Result<u32, ConfigError> {
    v.trim()
        .parse::<u32>()
        .map_err(|_| ConfigError::new(format!("{key}: expected an unsigned integer, got `{v}`")))
}
fn parse_triple(key: &str, v: &str) -> Result<[u32; 3], ConfigError> {
    let parts: Vec<&str> = v.split_whitespace().collect();
    if parts.len() != 3 {
        return Err(ConfigError::new(format!("{key}: expected three numbers `min default max`, got `{v}`")));
    }
    let mut out = [0u32; 3];
    for (o, p) in out.iter_mut().zip(parts) {
        *o = parse_u32(key, p)?;
    }
    if !(out[0] <= out[1] && out[1] <= out[2]) || out[0] == 0 {
        return Err(ConfigError::new(format!("{key}: need 0 < min <= default <= max, got `{v}`")));
    }
    Ok(out)
}

impl TcpConfig {
    fn linux6() -> Self {
        TcpConfig {
            profile: "linux-6",
            tcp_rmem: [4096, 131072, 6291456],
            tcp_wmem: [4096, 16384, 4194304],
            rmem_max: 212992,
            wmem_max: 212992,
            tcp_sack: true,
            tcp_dsack: true,
            tcp_timestamps: true,
            tcp_window_scaling: true,
            tcp_congestion_control: CongestionAlgo::CUBIC,
            tcp_moderate_rcvbuf: true,
            rcv_space_style: RcvSpaceStyle::Linux616,
            tcp_slow_start_after_idle: true,
            tcp_no_metrics_save: true,
            tcp_adv_win_scale: 1,
            scaling_ratio: true,
            tcp_reordering: 3,
            tcp_max_reordering: 300,
            tcp_retries2: 15,
            tcp_syn_retries: 6,
            tcp_synack_retries: 5,
            tcp_fin_timeout: Duration::from_secs(60),
            tcp_early_retrans: 3,
            tcp_recovery: 1,
            tcp_frto: 2,
            undo: true,
            tcp_thin_linear_timeouts: false,
            tcp_thin_dupack: false,
            tcp_rdb: RdbMode::Off,
            tcp_rdb_max_bytes: 0,
            tcp_rdb_max_packets: 1,
            tcp_thin_dpifl_itt_lower_bound_us: 10_000,
            ip_local_port_range: (32768, 60999),
            somaxconn: 4096,
            prr: true,
            init_cwnd: 10,
            rto_min: Duration::from_millis(200),
            rto_max: Duration::from_secs(120),
            rto_init: Duration::from_secs(1),
            delack_min: Duration::from_millis(40),
            delack_max: Duration::from_millis(200),
            ato_min: Duration::from_millis(40),
            max_quickacks: 16,
            timewait_len: Duration::from_secs(60),
            hz: 1000,
            mtu: 1500,
            tso: true,
            idle_check_at_write: true,
            raise_cwnd_on_reordering: true,
            tlp_6: true,
            dsack_6: true,
            tcp_min_tso_segs: 2,
            tcp_tso_win_divisor: 3,
            cubic: CubicParams::default(),
            dctcp: DctcpParams::default(),
            vegas: VegasParams::default(),
            tcp_ecn: 2,
            tcp_ecn_fallback: true,
            tcp_pacing_ss_ratio: 200,
            tcp_pacing_ca_ratio: 120,
            tsq: TsqModel::Linux6,
            tcp_limit_output_bytes: 4 << 20,
        }
    }

    /// The constants and defaults of a named era: `linux-6` (default), `linux-4.6`,
    /// `linux-3.14`, `linux-2.6.37`, `linux-2.2`, `freebsd-4.10`. Values that could not be
    /// verified for an era are approximations, listed in docs/tcp.md.
    pub fn profile(name: &str) -> Result<TcpConfig, ConfigError> {
        let mut c = TcpConfig::linux6();
        match name {
            "linux-6" | "default" => {}
            "linux-4.6" => {
                c.profile = "linux-4.6";
                c.scaling_ratio = false; // tcp_adv_win_scale until 6.6
                c.tsq = TsqModel::Linux4;
                c.tcp_limit_output_bytes = 262_144;
                c.tso = false; // the 6.x TSO model is not claimed for this era
                c.idle_check_at_write = false;
                c.raise_cwnd_on_reordering = false;
                c.tlp_6 = false;
                c.dsack_6 = false;
                c.rcv_space_style = RcvSpaceStyle::Steps;
                c.tcp_rmem = [4096, 87380, 6291456];
                c.hz = 250;
                c.somaxconn = 128;
                c.cubic.hystart_delay_min_us = 2000;
            }
            "linux-3.14" => {
                c.profile = "linux-3.14";
                c.scaling_ratio = false; // tcp_adv_win_scale until 6.6
                c.tsq = TsqModel::Linux3;
                c.tcp_limit_output_bytes = 131_072;
                c.tso = false; // the 6.x TSO model is not claimed for this era
                c.idle_check_at_write = false;
                c.raise_cwnd_on_reordering = false;
                c.tlp_6 = false;
                c.dsack_6 = false;
                c.rcv_space_style = RcvSpaceStyle::Legacy;
                c.tcp_rmem = [4096, 87380, 6291456];
                c.hz = 250;
                c.somaxconn = 128;
                c.tcp_recovery = 0;
                c.cubic.hystart_delay_min_us = 2000;
            }
            "linux-2.6.37" => {
                c.profile = "linux-2.6.37";
                c.scaling_ratio = false; // tcp_adv_win_scale until 6.6
                c.tsq = TsqModel::Off; // TSQ came with Linux 3.6
                c.tso = false; // the 6.x TSO model is not claimed for this era
                c.idle_check_at_write = false;
                c.raise_cwnd_on_reordering = false;
                c.tlp_6 = false;
                c.dsack_6 = false;
                c.rcv_space_style = RcvSpaceStyle::Legacy;
                c.tcp_rmem = [4096, 87380, 4194304];
                c.tcp_wmem = [4096, 16384, 4194304];
                c.rmem_max = 131071;
                c.wmem_max = 131071;
                c.tcp_adv_win_scale = 2;
                c.hz = 250;
                c.somaxconn = 128;
                c.init_cwnd = 3; // RFC 3390 at MSS 1460
                c.rto_init = Duration::from_secs(3);
                c.prr = false;
                c.tcp_recovery = 0;
                c.tcp_early_retrans = 0;
                c.cubic.hystart_delay_min_us = 2000;
            }
            "linux-2.2" => {
                c.profile = "linux-2.2";
                c.scaling_ratio = false; // tcp_adv_win_scale until 6.6
                c.tsq = TsqModel::Off; // TSQ came with Linux 3.6
                c.tso = false; // the 6.x TSO model is not claimed for this era
                c.idle_check_at_write = false;
                c.raise_cwnd_on_reordering = false;
                c.tlp_6 = false;
                c.dsack_6 = false;
                c.rcv_space_style = RcvSpaceStyle::Legacy;
                // 2.2 had no tcp_rmem/tcp_wmem; net.core.{r,w}mem_default was 64 KiB.
                c.tcp_rmem = [4096, 65535, 65535];
                c.tcp_wmem = [4096, 65535, 65535];
                c.rmem_max = 65535;
                c.wmem_max = 65535;
                c.tcp_moderate_rcvbuf = false;
                c.tcp_congestion_control = CongestionAlgo::RENO;
                c.tcp_dsack = false;
                c.tcp_adv_win_scale = 1;
                c.hz = 100;
                c.somaxconn = 128;
                c.init_cwnd = 2;
                c.rto_init = Duration::from_secs(3);
                c.delack_min = Duration::from_millis(20);
                c.ato_min = Duration::from_millis(20);
                c.prr = false;
                c.tcp_recovery = 0;
                c.tcp_early_retrans = 0;
                c.tcp_frto = 0;
                c.undo = false;
                c.cubic.hystart = false;
                c.tcp_ecn = 0; // ECN came with 2.4
            }
            "freebsd-4.10" => {
                // Approximation: Linux machinery with FreeBSD 4.x defaults (docs/tcp.md).
                c.profile = "freebsd-4.10";
                c.scaling_ratio = false; // tcp_adv_win_scale until 6.6
                c.tsq = TsqModel::Off; // TSQ came with Linux 3.6
                c.tso = false; // the 6.x TSO model is not claimed for this era
                c.idle_check_at_write = false;
                c.raise_cwnd_on_reordering = false;
                c.tlp_6 = false;
                c.dsack_6 = false;
                c.rcv_space_style = RcvSpaceStyle::Legacy;
                // FreeBSD's sb_hiwat counts payload (net.inet.tcp.recvspace 65536,
                // sendspace 32768); Linux charges truesize and advertises rcvbuf/2
                // (tcp_adv_win_scale), so the Linux-side values are doubled to give the
                // same payload in flight (found by the shim study, docs/tcp.md).
                c.tcp_rmem = [4096, 131072, 131072];
                c.tcp_wmem = [4096, 65536, 65536];
                c.rmem_max = 262144;
                c.wmem_max = 262144;
                c.tcp_moderate_rcvbuf = false;
                c.tcp_sack = false;
                c.tcp_dsack = false;
                c.tcp_congestion_control = CongestionAlgo::RENO;
                c.hz = 100;
                c.somaxconn = 128;
                c.init_cwnd = 1; // net.inet.tcp.slowstart_flightsize
                c.rto_init = Duration::from_secs(3);
                c.delack_min = Duration::from_millis(100);
                c.delack_max = Duration::from_millis(100);
                c.ato_min = Duration::from_millis(100);
                c.max_quickacks = 0;
                c.prr = false;
                c.tcp_recovery = 0;
                c.tcp_early_retrans = 0;
                c.tcp_frto = 0;
                c.ip_local_port_range = (49152, 65535);
                c.cubic.hystart = false;
                c.tcp_ecn = 0; // FreeBSD has ECN since 8.0
            }
            other => {
                return Err(ConfigError::new(format!(
                    "unknown TCP profile `{other}` (available: {})",
                    PROFILES.join(", ")
                )))
            }
        }
        Ok(c)
    }

    /// Sets a knob by its sysctl name (with or without the `net.ipv4.`/`net.core.` prefix,
    /// `/` or `.` separated). Unknown keys and bad values are errors naming the key.
    pub fn set_sysctl(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let k = key.trim().replace('/', ".");
        let k = k.trim_start_matches('.');
        if let Some(m) = k.strip_prefix("sys.module.") {
            // /sys/module/MODULE/parameters/NAME
            return self.set_module_param(key, &m.replacen(".parameters.", ".", 1), value);
        }
        if k.starts_with("tcp_dctcp.") || k.starts_with("tcp_vegas.") {
            return self.set_module_param(key, k, value);
        }
        let short = k
            .strip_prefix("net.ipv4.")
            .or_else(|| k.strip_prefix("net.core."))
            .unwrap_or(k);
        let v = value;
        match short {
            "tcp_rmem" => self.tcp_rmem = parse_triple(key, v)?,
            "tcp_wmem" => self.tcp_wmem = parse_triple(key, v)?,
            "rmem_max" => self.rmem_max = parse_u32(key, v)?,
            "wmem_max" => self.wmem_max = parse_u32(key, v)?,
            "tcp_sack" => self.tcp_sack = parse_bool(key, v)?,
            "tcp_dsack" => self.tcp_dsack = parse_bool(key, v)?,
            "tcp_timestamps" => self.tcp_timestamps = parse_u32(key, v)? != 0,
            "tcp_window_scaling" => self.tcp_window_scaling = parse_bool(key, v)?,
            "tcp_congestion_control" => {
                self.tcp_congestion_control = CongestionAlgo::from_name(v)
                    .map_err(|e| ConfigError::new(format!("{key}: {e}")))?
            }
            "tcp_moderate_rcvbuf" => self.tcp_moderate_rcvbuf = parse_bool(key, v)?,
            "tcp_slow_start_after_idle" => self.tcp_slow_start_after_idle = parse_bool(key, v)?,
            "tcp_no_metrics_save" => self.tcp_no_metrics_save = parse_bool(key, v)?,
            "tcp_adv_win_scale" => {
                let x: i32 = v.trim().parse().map_err(|_| {
                    ConfigError::new(format!("{key}: expected an integer in -31..=31, got `{v}`"))
                })?;
                if !(-31..=31).contains(&x) || x == 0 {
                    return Err(ConfigError::new(format!("{key}: must be in -31..=31 and non-zero")));
                }
                self.tcp_adv_win_scale = x;
            }
            "tcp_reordering" => self.tcp_reordering = parse_u32(key, v)?.max(1),
            "tcp_max_reordering" => self.tcp_max_reordering = parse_u32(key, v)?.max(1),
            "tcp_retries2" => self.tcp_retries2 = parse_u32(key, v)?,
            "tcp_syn_retries" => self.tcp_syn_retries = parse_u32(key, v)?.clamp(1, 127),
            "tcp_synack_retries" => self.tcp_synack_retries = parse_u32(key, v)?,
            "tcp_fin_timeout" => self.tcp_fin_timeout = Duration::from_secs(parse_u32(key, v)? as u64),
            "tcp_early_retrans" => {
                let x = parse_u32(key, v)?;
                if x > 4 {
                    return Err(ConfigError::new(format!("{key}: expected 0..=4, got `{v}`")));
                }
                self.tcp_early_retrans = x;
            }
            "tcp_recovery" => self.tcp_recovery = parse_u32(key, v)?,
            "tcp_frto" => self.tcp_frto = parse_u32(key, v)?.min(2),
            "tcp_ecn" => {
                let x = parse_u32(key, v)?;
                if x > 2 {
                    return Err(ConfigError::new(format!(
                        "{key}: expected 0 (off), 1 (request and accept) or 2 (accept), got `{v}` (Linux 6.18 rejects 3-5, AccECN, with EINVAL)"
                    )));
                }
                self.tcp_ecn = x as u8;
            }
            "tcp_ecn_fallback" => self.tcp_ecn_fallback = parse_bool(key, v)?,
            "tcp_pacing_ss_ratio" | "tcp_pacing_ca_ratio" => {
                let x = parse_u32(key, v)?;
                if x > 1000 {
                    return Err(ConfigError::new(format!("{key}: expected 0..=1000 (%), got `{v}`")));
                }
                if short == "tcp_pacing_ss_ratio" {
                    self.tcp_pacing_ss_ratio = x;
                } else {
                    self.tcp_pacing_ca_ratio = x;
                }
            }
            "tcp_thin_linear_timeouts" => self.tcp_thin_linear_timeouts = parse_bool(key, v)?,
            "tcp_thin_dupack" => self.tcp_thin_dupack = parse_bool(key, v)?,
            "tcp_rdb" => {
                self.tcp_rdb = RdbMode::from_sysctl(parse_u32(key, v)?).ok_or_else(|| {
                    ConfigError::new(format!("{key}: expected 0 (off), 1 (2015 patch) or 2 (original 2008), got `{v}`"))
                })?
            }
            "tcp_rdb_max_bytes" => self.tcp_rdb_max_bytes = parse_u32(key, v)?,
            "tcp_rdb_max_packets" => self.tcp_rdb_max_packets = parse_u32(key, v)?,
            "tcp_min_tso_segs" => {
                let x = parse_u32(key, v)?;
                if !(1..=255).contains(&x) {
                    return Err(ConfigError::new(format!("{key}: expected 1..=255, got `{v}`")));
                }
                self.tcp_min_tso_segs = x;
            }
            "tcp_tso_win_divisor" => self.tcp_tso_win_divisor = parse_u32(key, v)?,
            "tcp_limit_output_bytes" => {
                // proc_dointvec: any non-negative int
                let x = parse_u32(key, v)?;
                if x > i32::MAX as u32 {
                    return Err(ConfigError::new(format!("{key}: expected 0..=2147483647 (bytes), got `{v}`")));
                }
                if self.tsq == TsqModel::Off {
                    return Err(ConfigError::new(format!(
                        "{key}: profile {} has no TCP Small Queues (Linux 3.6 and later)",
                        self.profile
                    )));
                }
                self.tcp_limit_output_bytes = x;
            }
            "tcp_thin_dpifl_itt_lower_bound" => {
                let x = parse_u32(key, v)?;
                if x < 10_000 {
                    return Err(ConfigError::new(format!("{key}: minimum is 10000 (µs), got `{v}`")));
                }
                self.tcp_thin_dpifl_itt_lower_bound_us = x;
            }
            "somaxconn" => self.somaxconn = parse_u32(key, v)?,
            "ip_local_port_range" => {
                let p: Vec<&str> = v.split_whitespace().collect();
                let bad = || ConfigError::new(format!("{key}: expected `low high` ports, got `{v}`"));
                if p.len() != 2 {
                    return Err(bad());
                }
                let lo: u16 = p[0].parse().map_err(|_| bad())?;
                let hi: u16 = p[1].parse().map_err(|_| bad())?;
                if lo == 0 || lo > hi {
                    return Err(bad());
                }
                self.ip_local_port_range = (lo, hi);
            }
            _ => {
                return Err(ConfigError::new(format!("unknown or unsupported TCP sysctl `{key}`")))
            }
        }
        Ok(())
    }

    /// A module parameter `MODULE.NAME` (`tcp_dctcp.dctcp_shift_g`, …), as
    /// `/sys/module/MODULE/parameters/NAME` takes it.
    fn set_module_param(&mut self, key: &str, name: &str, v: &str) -> Result<(), ConfigError> {
        match name {
            "tcp_dctcp.dctcp_shift_g" => {
                let x = parse_u32(key, v)?;
                if x > 10 {
                    return Err(ConfigError::new(format!("{key}: expected 0..=10 (param_set_uint_minmax), got `{v}`")));
                }
                self.dctcp.shift_g = x;
            }
            "tcp_dctcp.dctcp_alpha_on_init" => self.dctcp.alpha_on_init = parse_u32(key, v)?,
            "tcp_vegas.alpha" => self.vegas.alpha = parse_u32(key, v)?,
            "tcp_vegas.beta" => self.vegas.beta = parse_u32(key, v)?,
            "tcp_vegas.gamma" => self.vegas.gamma = parse_u32(key, v)?,
            _ => {
                return Err(ConfigError::new(format!(
                    "unknown module parameter `{key}` (known: tcp_dctcp.dctcp_shift_g, tcp_dctcp.dctcp_alpha_on_init, tcp_vegas.alpha, tcp_vegas.beta, tcp_vegas.gamma)"
                )))
            }
        }
        Ok(())
    }

    /// Our advertised MSS (`advmss`), before subtracting the timestamp option.
    pub fn advmss(&self) -> u32 {
        self.mtu.saturating_sub(40).max(88)
    }

    /// The truesize of a received skb of `ip_len` bytes (IP header on), as a TUN device
    /// allocates it: one linear buffer (`tun_alloc_skb()`) of `SKB_DATA_ALIGN(ip_len)` plus
    /// `skb_shared_info` (320), rounded up to its kmalloc cache, plus the `sk_buff` (256):
    /// 2304 for every full-sized segment at MTU 1500. The receiver this machine's 6.18 is
    /// checked against (packetdrill, `wirelab live`); another NIC's skbs differ
    /// (docs/tcp.md).
    pub(crate) fn rx_truesize(&self, ip_len: u32) -> u32 {
        let data = ip_len.div_ceil(64) * 64 + 320;
        let slab = match data {
            0..=96 => 96,
            97..=192 => 192,
            _ => data.next_power_of_two(),
        };
        slab + 256
    }

    /// `tcp_win_from_space()`: the share of `space` bytes offered as window.
    pub(crate) fn win_from_space(&self, space: i64) -> i64 {
        let s = self.tcp_adv_win_scale;
        if s <= 0 {
            space >> (-s)
        } else {
            space - (space >> s)
        }
    }
    /// `tcp_space_from_win()`: inverse of [`win_from_space`](Self::win_from_space).
    pub(crate) fn space_from_win(&self, win: i64) -> i64 {
        let s = self.tcp_adv_win_scale;
        let w = win as i128;
        let r = if s <= 0 {
            w << (-s)
        } else {
            // win = space * (1 - 2^-s)  =>  space = win * 2^s / (2^s - 1)
            let d = (1i128 << s) - 1;
            (w << s) / d.max(1)
        };
        r.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
    /// One jiffy.
    pub(crate) fn jiffy(&self) -> Duration {
        Duration::from_nanos(1_000_000_000 / self.hz.max(1) as u64)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn profiles_parse_and_differ() {
        for p in PROFILES {
            let c = TcpConfig::profile(p).unwrap();
            assert_eq!(&c.profile, p);
        }
        assert_eq!(TcpConfig::profile("linux-2.6.37").unwrap().init_cwnd, 3);
        assert_eq!(TcpConfig::profile("linux-6").unwrap().tcp_rmem[1], 131072);
        assert!(!TcpConfig::profile("freebsd-4.10").unwrap().tcp_sack);
        let e = TcpConfig::profile("linux-9").unwrap_err();
        assert!(e.to_string().contains("linux-9"));
    }

    #[test]
    fn sysctl_keys() {
        let mut c = TcpConfig::default();
        c.set_sysctl("net.ipv4.tcp_rmem", "4096 87380 1000000").unwrap();
        assert_eq!(c.tcp_rmem, [4096, 87380, 1000000]);
        c.set_sysctl("net.ipv4.tcp_congestion_control", "reno").unwrap();
        assert_eq!(c.tcp_congestion_control, CongestionAlgo::RENO);
        c.set_sysctl("net/ipv4/tcp_sack", "0").unwrap();
        assert!(!c.tcp_sack);
        let e = c.set_sysctl("net.ipv4.tcp_bogus", "1").unwrap_err();
        assert!(e.to_string().contains("net.ipv4.tcp_bogus"));
        assert!(c.set_sysctl("net.ipv4.tcp_rmem", "1 2").is_err());
        assert!(c.set_sysctl("net.ipv4.tcp_sack", "yes").is_err());
        // issue 22: non-zero is on, as in Linux; out of the u8 range is an error
        c.set_sysctl("net.ipv4.tcp_sack", "2").unwrap();
        assert!(c.tcp_sack);
        let e = c.set_sysctl("net.ipv4.tcp_sack", "256").unwrap_err().to_string();
        assert!(e.contains("expected an integer in 0..=255 (0 = off, any other value = on"), "{e}");
        assert!(c.set_sysctl("net.ipv4.tcp_congestion_control", "westwood").is_err());
        c.set_sysctl("net.ipv4.tcp_congestion_control", "bbr").unwrap();
        assert_eq!(c.tcp_congestion_control.name(), "bbr");
        c.set_sysctl("net.ipv4.tcp_ecn", "1").unwrap();
        assert!(c.set_sysctl("net.ipv4.tcp_ecn", "3").unwrap_err().to_string().contains("AccECN"));
        c.set_sysctl("/sys/module/tcp_dctcp/parameters/dctcp_shift_g", "5").unwrap();
        assert_eq!(c.dctcp.shift_g, 5);
        assert!(c.set_sysctl("tcp_dctcp.dctcp_shift_g", "11").is_err());
        c.set_sysctl("tcp_vegas.beta", "6").unwrap();
        assert_eq!(c.vegas.beta, 6);
        assert!(c.set_sysctl("tcp_bbr.foo", "1").is_err());
        c.set_sysctl("net.ipv4.tcp_pacing_ss_ratio", "150").unwrap();
        assert!(c.set_sysctl("net.ipv4.tcp_pacing_ca_ratio", "1001").is_err());
    }

    #[test]
    fn win_space_inverse() {
        let mut c = TcpConfig::default();
        assert_eq!(c.win_from_space(131072), 65536);
        assert_eq!(c.space_from_win(65536), 131072);
        c.tcp_adv_win_scale = 2;
        assert_eq!(c.win_from_space(87380), 65535);
        assert!((c.space_from_win(65535) - 87380).abs() <= 2);
    }
}
