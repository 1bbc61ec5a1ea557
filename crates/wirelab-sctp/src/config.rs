//! SCTP configuration: Linux sysctl names, era profiles, and wirelab's research options.
//!
//! Every knob keeps its Linux spelling (`net.sctp.rto_min`, `net.core.wmem_default`, …) and
//! unit: times given to [`SctpConfig::set_sysctl`] are milliseconds as in
//! `/proc/sys/net/sctp/*` (Linux `proc_dointvec_ms_jiffies`/`proc_dointvec` on ms values).
use core::fmt;
use wirelab_core::Duration;

/// A configuration string that cannot be applied; the message says what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The key (or profile name) that was rejected.
    pub key: String,
    /// What went wrong.
    pub msg: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.msg)
    }
}
impl std::error::Error for ConfigError {}

fn err(key: &str, msg: impl Into<String>) -> ConfigError {
    ConfigError { key: key.to_string(), msg: msg.into() }
}

/// Which send-buffer advertisement (chunk 0x96, seed system 1 §1.3) a sender emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SndbufAdv {
    /// Not emitted; a received 0x96 is handled by its type bits (skipped silently).
    Off,
    /// V1 (`sctp_sndbuf_adv.patch` @ 7b3caca): timer, length 8, 32-bit `lhs − rhs`.
    V1Bytes,
    /// V2 (@ b398117): timer, length 4, flags = ⌊100·(lhs−rhs)/sndbuf_used⌋.
    V2Percent,
    /// V3 (`latest.patch` @ 0508e00): timer and per-packet, flags = decile 0…10.
    V3Decile,
    /// V4 (`new_design.patch` @ 2e839e6): per-packet decile only; DATA capped at 1448 B.
    V4Decile,
}

/// How the backlog in chunk 0x96 is defined (seed-systems.md §1.7 item 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BacklogDef {
    /// The patch's formula: `out_qlen + outstanding − min(peer.rwnd, cwnd)` over
    /// `asoc->sndbuf_used` (`SctpConfig::chunk_asoc_charge`). Faithful default.
    Btech2016,
    /// Agache & Raiciu: unsent bytes (`out_qlen`) over `sk_sndbuf`.
    Agache,
}

/// How a queued chunk is charged against `sk_sndbuf`/`sk_rcvbuf` (skb truesize model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TruesizeModel {
    /// Linux ≥ 3.x: `SKB_TRUESIZE(kmalloc_size_roundup(len))` + `sizeof(struct sctp_chunk)`.
    Modern,
    /// Linux 2.6.37: `SKB_DATA_ALIGN(len) + sizeof(struct sk_buff)` + chunk struct.
    Linux2637,
    /// Payload bytes only (a simplification for comparisons).
    Payload,
}

/// SCTP buffer autotuning (seed system 2); never merged upstream, so off by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Autotune {
    /// Fixed buffers (every real Linux release).
    Off,
    /// The project document's rules literally (2·cwnd in payload bytes).
    Faithful,
    /// As `Faithful`, with buffer targets scaled by the truesize/payload ratio.
    OverheadCorrected,
}

/// Which RTT paces the autotuning receiver's once-per-RTT rule (seed system 2), and what it
/// does before it has one (`net.sctp.autotune_rtt_fallback`, wirelab name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RttFallback {
    /// The patch's `sctp_rcvbuf_adjust()`: the last RTT sample of the path data came from
    /// (`transport->rtt`); none measured yet → no receive-buffer growth ("the receive
    /// buffer size will consequently remain constant", seed 001). Sysctl value `none`.
    None,
    /// The path's SRTT, or `rto_initial` (3 s) before any sample: seed-systems §2.4's
    /// recommendation for one-way transfers. Sysctl value `rto_initial`.
    RtoInitial,
}

/// Concurrent multipath transfer (CMT; Iyengar, Amer, Stewart, IEEE/ACM ToN 2006), as
/// FreeBSD's `net.inet.sctp.cmt_on_off` spells it (`SCTP_CMT_*` in `netinet/sctp.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmt {
    /// 0 `SCTP_CMT_OFF`: new data goes to one path (the active one).
    Off,
    /// 1 `SCTP_CMT_BASE`: new data on every path, each within its own cwnd; SFR, CUC,
    /// (DAC), a retransmission policy.
    Base,
    /// 2 `SCTP_CMT_RPV1`: as `Base` with FreeBSD's resource-pooling cwnd rules, version 1
    /// (increase and decrease in proportion to the path's share of Σ ssthresh).
    RpV1,
    /// 3 `SCTP_CMT_RPV2`: resource pooling version 2 (share of Σ cwnd/srtt).
    RpV2,
    /// 4 `SCTP_CMT_MPTCP`: MPTCP-like coupled increase (FreeBSD's `mptcp_like_alpha`).
    Mptcp,
}

impl Cmt {
    /// The FreeBSD value 0…4.
    pub fn from_value(v: u8) -> Option<Cmt> {
        Some(match v {
            0 => Cmt::Off,
            1 => Cmt::Base,
            2 => Cmt::RpV1,
            3 => Cmt::RpV2,
            4 => Cmt::Mptcp,
            _ => return None,
        })
    }
    /// True for every value but `Off`.
    pub fn on(self) -> bool {
        self != Cmt::Off
    }
}

/// Where a CMT sender sends retransmissions (ToN 2006 §V; `net.inet.sctp.cmt_rtx_policy`,
/// wirelab name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtxPolicy {
    /// RTX-SAME: to the path the chunk was last sent on.
    Same,
    /// RTX-ASAP: to any active path with cwnd space at the time (random among them).
    Asap,
    /// RTX-CWND: to the active path with the largest cwnd (random among ties). What
    /// FreeBSD's code does (`sctp_find_alternate_net(…, 1)`), although its comments say
    /// RTX-SSTHRESH; the default.
    Cwnd,
    /// RTX-SSTHRESH: to the active path with the largest ssthresh (random among ties).
    Ssthresh,
}

/// When a CMT path's cwnd may grow on a SACK (`net.inet.sctp.cmt_cuc`, wirelab name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cuc {
    /// Only when the SACK advances the cumulative TSN ack point (RFC 4960 §7.2.1/§7.2.2 as
    /// first published; the CMT paper's baseline without CUC).
    Off,
    /// Cwnd Update for CMT: also when the path's pseudo-cumack advances (CUCv2: first
    /// transmissions and retransmissions tracked apart; FreeBSD `new_pseudo_cumack`).
    On,
    /// On every SACK that newly acks the path's data (RFC 9260 / errata 3.22, what Linux
    /// and this engine do without CMT).
    Any,
}

/// SCTP endpoint configuration. Field names follow Linux `struct netns_sctp` and the
/// `net.sctp.*` sysctls; defaults come from [`SctpConfig::profile`].
#[derive(Clone, Debug, PartialEq)]
pub struct SctpConfig {
    /// Profile this was built from.
    pub profile: String,
    /// `net.sctp.rto_initial` (Linux 3000 ms; RFC 9260 recommends 1 s).
    pub rto_initial: Duration,
    /// `net.sctp.rto_min` (1000 ms).
    pub rto_min: Duration,
    /// `net.sctp.rto_max` (60000 ms).
    pub rto_max: Duration,
    /// `net.sctp.rto_alpha_exp_divisor` (3 → α = 1/8).
    pub rto_alpha_exp: u32,
    /// `net.sctp.rto_beta_exp_divisor` (2 → β = 1/4).
    pub rto_beta_exp: u32,
    /// `net.sctp.sack_timeout` (200 ms).
    pub sack_timeout: Duration,
    /// SACK frequency (`SCTP_DELAYED_SACK` sack_freq, default 2 packets).
    pub sack_freq: u32,
    /// `net.sctp.hb_interval` (30000 ms).
    pub hb_interval: Duration,
    /// `net.sctp.path_max_retrans` (5).
    pub path_max_retrans: u32,
    /// `net.sctp.association_max_retrans` (10).
    pub association_max_retrans: u32,
    /// `net.sctp.max_init_retransmits` (8).
    pub max_init_retransmits: u32,
    /// `net.sctp.max_burst` (4).
    pub max_burst: u32,
    /// `net.sctp.valid_cookie_life` (60000 ms).
    pub valid_cookie_life: Duration,
    /// `net.sctp.pf_retrans` (0): errors after which a path becomes potentially failed.
    pub pf_retrans: u32,
    /// `net.sctp.pf_enable`: potentially-failed state on (Linux ≥ 3.8 behaviour) or off.
    pub pf_enable: bool,
    /// `net.sctp.sndbuf_policy` (0 = per socket; 1 = per association). One-to-one sockets
    /// have one association, so both give the same numbers here.
    pub sndbuf_policy: u32,
    /// `net.sctp.rcvbuf_policy` (0 = per socket; 1 = per association).
    pub rcvbuf_policy: u32,
    /// `net.sctp.sctp_mem` in pages (min, pressure, max); used by autotuning only.
    pub sctp_mem: [u64; 3],
    /// `net.sctp.sctp_rmem` bytes (min, default, max); default/max used by autotuning only.
    pub sctp_rmem: [u64; 3],
    /// `net.sctp.sctp_wmem` bytes (min, default, max); default/max used by autotuning only.
    pub sctp_wmem: [u64; 3],
    /// `net.core.rmem_default`: initial `sk_rcvbuf`.
    pub rmem_default: u64,
    /// `net.core.wmem_default`: initial `sk_sndbuf`.
    pub wmem_default: u64,
    /// `net.core.rmem_max`: clamp for `SO_RCVBUF`.
    pub rmem_max: u64,
    /// `net.core.wmem_max`: clamp for `SO_SNDBUF`.
    pub wmem_max: u64,
    /// `net.sctp.sndbuf_adv_interval` (btech patch, ms, default 5000): V1–V3 timer.
    pub sndbuf_adv_interval: Duration,
    /// The host's routes as `(network, prefix length, source address)`, provided by the
    /// driver (the simulator fills it from the node's routing table). Paths take their
    /// local address from the longest matching route, as Linux's `sctp_v4_get_dst()` does
    /// with a route lookup; empty = longest common prefix with the peer address.
    pub source_routes: Vec<(std::net::Ipv4Addr, u8, std::net::Ipv4Addr)>,
    /// The host's interface addresses, provided by the driver. An association accepted by
    /// a wildcard (0.0.0.0) listener binds all of them, the INIT's destination first, as
    /// Linux's `sctp_bind_addr_copy()` of the local address list does; empty = only the
    /// INIT's destination.
    pub host_addrs: Vec<std::net::Ipv4Addr>,
    /// Which chunk-0x96 variant this host sends (`net.sctp.sndbuf_adv`, wirelab name).
    pub sndbuf_adv: SndbufAdv,
    /// Backlog definition for chunk 0x96 (`net.sctp.sndbuf_adv_backlog`, wirelab name).
    pub sndbuf_adv_backlog: BacklogDef,
    /// Buffer autotuning (`net.sctp.autotune`, wirelab name); off by default.
    pub autotune: Autotune,
    /// The autotuning receiver's RTT rule (`net.sctp.autotune_rtt_fallback`, wirelab
    /// name); `None` = the mode's own: `Faithful` → [`RttFallback::None`] (the patch),
    /// `OverheadCorrected` → [`RttFallback::RtoInitial`]. See [`SctpConfig::rtt_fallback`].
    pub autotune_rtt_fallback: Option<RttFallback>,
    /// `net.inet.sctp.cmt_on_off` (FreeBSD): concurrent multipath transfer; off by default.
    /// Per socket: [`crate::SockOpt::CmtOnOff`] (FreeBSD's `SCTP_CMT_ON_OFF`).
    pub cmt: Cmt,
    /// `net.inet.sctp.cmt_use_dac` (FreeBSD, default 0): the delayed-ack rules for CMT.
    pub cmt_use_dac: bool,
    /// `net.inet.sctp.cmt_sfr` (wirelab, default 1): split fast retransmit; 0 = plain HTNA.
    pub cmt_sfr: bool,
    /// `net.inet.sctp.cmt_cuc` (wirelab, default `on`).
    pub cmt_cuc: Cuc,
    /// `net.inet.sctp.cmt_rtx_policy` (wirelab, default `cwnd` as FreeBSD).
    pub cmt_rtx_policy: RtxPolicy,
    /// Path MTU (no PMTU discovery; every path uses this).
    pub pmtu: u32,
    /// Outbound streams requested in INIT (Linux `SCTP_DEFAULT_OUTSTREAMS` 10).
    pub out_streams: u16,
    /// Maximum inbound streams (Linux `SCTP_DEFAULT_INSTREAMS` 65535).
    pub max_in_streams: u16,
    /// Buffer-charging model.
    pub truesize: TruesizeModel,
    /// `asoc->sndbuf_used` counts payload + `sizeof(struct sk_buff)` + `sizeof(struct
    /// sctp_chunk)` per DATA chunk (`sctp_set_owner_w()` up to 4.19 at least:
    /// `SCTP_DATA_SNDSIZE(chunk) + sizeof(struct sk_buff) + sizeof(struct sctp_chunk)`),
    /// not the truesize charge it counts in 5.x. Only chunk 0x96's value reads that
    /// counter here; send space (`sk_wmem_alloc`/`sk_wmem_queued`) is always truesize.
    pub sndbuf_used_payload: bool,
    /// `sendmsg` takes messages larger than `sk_sndbuf` (Linux ≥ 4.17,
    /// `sctp_sendmsg_to_asoc`); older kernels return EMSGSIZE when `msg_len > sk_sndbuf`.
    /// Every version accepts a message while any send space is left.
    pub send_overcommit: bool,
    /// RFC 9260 §6.1 rule B bundling of a SACK into outgoing DATA to the same address.
    pub bundle_sack: bool,
    /// RFC 7053 SACK-IMMEDIATELY: set the I bit on DATA sent in SHUTDOWN-PENDING
    /// (`sctp_outq_flush_data()`) and SACK at once on DATA that carries it
    /// (`sctp_sf_eat_data_6_2()`). Off for linux-2.6.37, which predates it.
    pub sack_immediately: bool,
    /// `net.sctp.udp_port` (Linux ≥ 5.11, default 0 = off): the local UDP port of SCTP over
    /// UDP (RFC 6951; 9899 is IANA's `sctp-tunneling`). See the `encap` module.
    pub udp_port: u16,
    /// `net.sctp.encap_port` (default 0): remote UDP encapsulation port for peers nothing
    /// was heard from yet; others use the source port of their last packet.
    pub encap_port: u16,
}

/// `sizeof(struct sk_buff)` on x86-64 [inferred; 4.x].
const SIZEOF_SK_BUFF: u64 = 232;
/// `sizeof(struct sctp_chunk)` on x86-64 [inferred].
const SIZEOF_SCTP_CHUNK: u64 = 192;

impl Default for SctpConfig {
    fn default() -> Self {
        Self::linux6()
    }
}

impl SctpConfig {
    fn linux6() -> Self {
        SctpConfig {
            profile: "linux-6".into(),
            rto_initial: Duration::from_millis(3000),
            rto_min: Duration::from_millis(1000),
            rto_max: Duration::from_millis(60000),
            rto_alpha_exp: 3,
            rto_beta_exp: 2,
            sack_timeout: Duration::from_millis(200),
            sack_freq: 2,
            hb_interval: Duration::from_millis(30000),
            path_max_retrans: 5,
            association_max_retrans: 10,
            max_init_retransmits: 8,
            max_burst: 4,
            valid_cookie_life: Duration::from_millis(60000),
            pf_retrans: 0,
            pf_enable: true,
            sndbuf_policy: 0,
            rcvbuf_policy: 0,
            // A 64-bit box with ~4 GiB; sctp_mem scales with RAM (protocol.c sctp_init).
            sctp_mem: [93504, 124672, 187008],
            sctp_rmem: [4096, 865500, 4194304],
            sctp_wmem: [4096, 16384, 4194304],
            rmem_default: 212992,
            wmem_default: 212992,
            rmem_max: 212992,
            wmem_max: 212992,
            sndbuf_adv_interval: Duration::from_millis(5000),
            source_routes: Vec::new(),
            host_addrs: Vec::new(),
            sndbuf_adv: SndbufAdv::Off,
            sndbuf_adv_backlog: BacklogDef::Btech2016,
            autotune: Autotune::Off,
            autotune_rtt_fallback: None,
            cmt: Cmt::Off,
            cmt_use_dac: false,
            cmt_sfr: true,
            cmt_cuc: Cuc::On,
            cmt_rtx_policy: RtxPolicy::Cwnd,
            pmtu: 1500,
            out_streams: 10,
            max_in_streams: 65535,
            truesize: TruesizeModel::Modern,
            sndbuf_used_payload: false,
            send_overcommit: true,
            bundle_sack: true,
            sack_immediately: true,
            udp_port: 0,
            encap_port: 0,
        }
    }

    /// A named profile: `"linux-6"` (default), `"linux-4.6"`, `"linux-2.6.37"`, or
    /// `"rfc9260"` (linux-6 with RTO.Initial 1 s and no PF state).
    pub fn profile(name: &str) -> Result<SctpConfig, ConfigError> {
        let mut c = Self::linux6();
        match name {
            "linux-6" | "linux-6.x" | "default" => {}
            "linux-4.6" => {
                c.profile = name.into();
                // pf_enable did not exist yet; pf_retrans (3.8+) defaulted to 0 with PF on.
                c.send_overcommit = false;
                c.sndbuf_used_payload = true;
                c.sctp_rmem = [4096, 865500, 4194304];
            }
            "linux-2.6.37" => {
                c.profile = name.into();
                c.pf_enable = false; // no PF state before 3.8
                c.send_overcommit = false;
                c.sndbuf_used_payload = true;
                c.sack_immediately = false;
                c.truesize = TruesizeModel::Linux2637;
                // (sizeof(sk_buff)+256)*256 on a 64-bit 2.6.37 kernel (seed-systems §2.2).
                c.rmem_default = 124928;
                c.wmem_default = 124928;
                c.rmem_max = 131071;
                c.wmem_max = 131071;
                c.sctp_mem = [93504, 124672, 187008];
                c.sctp_rmem = [4096, 349500, 3989504];
                c.sctp_wmem = [4096, 16384, 3989504];
            }
            "rfc9260" => {
                c.profile = name.into();
                c.rto_initial = Duration::from_millis(1000);
                c.pf_enable = false;
            }
            _ => return Err(err(name, "unknown SCTP profile; expected linux-6, linux-4.6, linux-2.6.37 or rfc9260")),
        }
        Ok(c)
    }

    /// Sets one sysctl by its Linux name, e.g. `("net.sctp.rto_min", "1000")` (ms) or
    /// `("net.sctp.sctp_wmem", "4096 16384 4194304")`.
    pub fn set_sysctl(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let before = self.clone();
        let r = self.set_sysctl_inner(key, value);
        if r.is_err() {
            *self = before; // a rejected value leaves the configuration unchanged
        }
        r
    }

    fn set_sysctl_inner(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let v = value.trim();
        let int = |lo: u64, hi: u64| -> Result<u64, ConfigError> {
            let n: u64 = v.parse().map_err(|_| err(key, format!("`{v}` is not an integer")))?;
            if n < lo || n > hi {
                return Err(err(key, format!("{n} is out of range {lo}..={hi}")));
            }
            Ok(n)
        };
        let ms = |lo: u64, hi: u64| -> Result<Duration, ConfigError> { int(lo, hi).map(Duration::from_millis) };
        let triple = || -> Result<[u64; 3], ConfigError> {
            let parts: Vec<&str> = v.split_whitespace().collect();
            if parts.len() != 3 {
                return Err(err(key, format!("`{v}` must be three integers, e.g. \"4096 16384 4194304\"")));
            }
            let mut out = [0u64; 3];
            for (o, p) in out.iter_mut().zip(parts) {
                *o = p.parse().map_err(|_| err(key, format!("`{p}` is not an integer")))?;
            }
            if out[0] > out[1] || out[1] > out[2] {
                return Err(err(key, "values must be non-decreasing (min default max)"));
            }
            Ok(out)
        };
        const TMAX: u64 = 86_400_000;
        if let Some(name) = key.strip_prefix("net.inet.sctp.") {
            return self.set_freebsd_sysctl(key, name, v);
        }
        let name = key.strip_prefix("net.sctp.").or_else(|| key.strip_prefix("net.core.").map(|k| if k.ends_with("mem_default") || k.ends_with("mem_max") { k } else { "" }));
        let Some(name) = name else {
            return Err(err(key, "not an SCTP sysctl (expected net.sctp.*, net.inet.sctp.cmt_* or net.core.[rw]mem_{default,max})"));
        };
        match name {
            "rto_initial" => self.rto_initial = ms(1, TMAX)?,
            "rto_min" => self.rto_min = ms(1, TMAX)?,
            "rto_max" => self.rto_max = ms(1, TMAX)?,
            "rto_alpha_exp_divisor" => self.rto_alpha_exp = int(0, 16)? as u32,
            "rto_beta_exp_divisor" => self.rto_beta_exp = int(0, 16)? as u32,
            "sack_timeout" => self.sack_timeout = ms(1, 500)?,
            "sack_freq" => self.sack_freq = int(1, 1_000_000)? as u32,
            "hb_interval" => self.hb_interval = ms(1, TMAX)?,
            "path_max_retrans" => self.path_max_retrans = int(1, 1_000_000)? as u32,
            "association_max_retrans" => self.association_max_retrans = int(1, 1_000_000)? as u32,
            "max_init_retransmits" => self.max_init_retransmits = int(1, 1_000_000)? as u32,
            "max_burst" => self.max_burst = int(0, 1_000_000)? as u32,
            "valid_cookie_life" => self.valid_cookie_life = ms(1, TMAX)?,
            "pf_retrans" => self.pf_retrans = int(0, 65535)? as u32,
            "pf_enable" => self.pf_enable = int(0, 1)? == 1,
            "sndbuf_policy" => self.sndbuf_policy = int(0, 1)? as u32,
            "rcvbuf_policy" => self.rcvbuf_policy = int(0, 1)? as u32,
            "sctp_mem" => self.sctp_mem = triple()?,
            "sctp_rmem" => self.sctp_rmem = triple()?,
            "sctp_wmem" => self.sctp_wmem = triple()?,
            "rmem_default" => self.rmem_default = int(256, 1 << 31)?,
            "wmem_default" => self.wmem_default = int(256, 1 << 31)?,
            "rmem_max" => self.rmem_max = int(256, 1 << 31)?,
            "wmem_max" => self.wmem_max = int(256, 1 << 31)?,
            "sndbuf_adv_interval" => self.sndbuf_adv_interval = ms(1, TMAX)?,
            "sndbuf_adv" => {
                self.sndbuf_adv = match v {
                    "0" | "off" => SndbufAdv::Off,
                    "1" | "v1" | "bytes32" => SndbufAdv::V1Bytes,
                    "2" | "v2" | "percent" => SndbufAdv::V2Percent,
                    "3" | "v3" => SndbufAdv::V3Decile,
                    "4" | "v4" | "decile" => SndbufAdv::V4Decile,
                    _ => return Err(err(key, format!("`{v}` is not one of off, v1, v2, v3, v4"))),
                }
            }
            "sndbuf_adv_backlog" => {
                self.sndbuf_adv_backlog = match v {
                    "btech2016" => BacklogDef::Btech2016,
                    "agache" => BacklogDef::Agache,
                    _ => return Err(err(key, format!("`{v}` is not btech2016 or agache"))),
                }
            }
            "autotune" => {
                self.autotune = match v {
                    "0" | "off" => Autotune::Off,
                    "1" | "faithful" => Autotune::Faithful,
                    "2" | "overhead_corrected" => Autotune::OverheadCorrected,
                    _ => return Err(err(key, format!("`{v}` is not off, faithful or overhead_corrected"))),
                }
            }
            "autotune_rtt_fallback" => {
                self.autotune_rtt_fallback = match v {
                    "auto" | "default" => None,
                    "none" | "0" => Some(RttFallback::None),
                    "rto_initial" | "1" => Some(RttFallback::RtoInitial),
                    _ => return Err(err(key, format!("`{v}` is not none, rto_initial or auto"))),
                }
            }
            "pmtu" => self.pmtu = int(576, 65535)? as u32,
            "udp_port" => self.udp_port = int(0, 65535)? as u16,
            "encap_port" => self.encap_port = int(0, 65535)? as u16,
            _ => return Err(err(key, "unknown SCTP sysctl")),
        }
        if self.rto_min > self.rto_max {
            return Err(err(key, "rto_min must not exceed rto_max"));
        }
        Ok(())
    }

    /// FreeBSD's `net.inet.sctp.*` names: the CMT family only.
    fn set_freebsd_sysctl(&mut self, key: &str, name: &str, v: &str) -> Result<(), ConfigError> {
        let flag = || match v {
            "0" => Ok(false),
            "1" => Ok(true),
            _ => Err(err(key, format!("`{v}` is not 0 or 1"))),
        };
        match name {
            "cmt_on_off" => {
                let n: u8 = v.parse().map_err(|_| err(key, format!("`{v}` is not an integer")))?;
                self.cmt = Cmt::from_value(n).ok_or_else(|| err(key, format!("{n} is out of range 0..=4 (0 off, 1 base, 2 RPv1, 3 RPv2, 4 MPTCP-like)")))?;
            }
            "cmt_use_dac" => self.cmt_use_dac = flag()?,
            "cmt_sfr" => self.cmt_sfr = flag()?,
            "cmt_cuc" => {
                self.cmt_cuc = match v {
                    "0" | "off" => Cuc::Off,
                    "1" | "on" => Cuc::On,
                    "2" | "any" | "rfc9260" => Cuc::Any,
                    _ => return Err(err(key, format!("`{v}` is not off, on or any (0, 1, 2)"))),
                }
            }
            "cmt_rtx_policy" => {
                self.cmt_rtx_policy = match v {
                    "same" => RtxPolicy::Same,
                    "asap" => RtxPolicy::Asap,
                    "cwnd" => RtxPolicy::Cwnd,
                    "ssthresh" => RtxPolicy::Ssthresh,
                    _ => return Err(err(key, format!("`{v}` is not same, asap, cwnd or ssthresh"))),
                }
            }
            _ => return Err(err(key, "unknown sysctl; the net.inet.sctp.* names wirelab knows are cmt_on_off, cmt_use_dac, cmt_sfr, cmt_cuc and cmt_rtx_policy")),
        }
        Ok(())
    }

    /// The autotuning receiver's RTT rule in effect (the mode's own unless set).
    pub fn rtt_fallback(&self) -> RttFallback {
        self.autotune_rtt_fallback.unwrap_or(match self.autotune {
            Autotune::Faithful => RttFallback::None,
            _ => RttFallback::RtoInitial,
        })
    }

    /// User bytes in a full DATA chunk: `((PMTU − IP − common − DATA header) & ~3)`, minus 4
    /// with the per-packet 0x96 marker (V3/V4; `new_design.patch`'s frag point), minus the
    /// UDP header when SCTP runs over UDP (`sctp_mtu_payload()`: `if (sp->udp_port)
    /// overhead += sizeof(struct udphdr)`, RFC 6951 §5.6).
    pub fn frag_point(&self) -> usize {
        let udp = if self.udp_port != 0 { crate::encap::UDP_HDR } else { 0 };
        let base = (self.pmtu as usize).saturating_sub(20 + 12 + 16 + udp) & !3;
        match self.sndbuf_adv {
            SndbufAdv::V3Decile | SndbufAdv::V4Decile => base - 4,
            _ => base,
        }
    }

    /// What a DATA chunk with `payload` user bytes adds to `asoc->sndbuf_used`
    /// (`sctp_set_owner_w()`): see [`SctpConfig::sndbuf_used_payload`].
    pub fn chunk_asoc_charge(&self, payload: usize) -> u64 {
        if self.sndbuf_used_payload {
            payload as u64 + SIZEOF_SK_BUFF + SIZEOF_SCTP_CHUNK
        } else {
            self.chunk_truesize(payload)
        }
    }

    /// Bytes a chunk with `payload` user bytes is charged against a socket buffer.
    /// Modern: `SKB_TRUESIZE(kmalloc_size_roundup(SKB_DATA_ALIGN(16+len) + shinfo))` +
    /// `sizeof(struct sctp_chunk)` (sctp_set_owner_w); sizes for x86-64 [inferred].
    pub fn chunk_truesize(&self, payload: usize) -> u64 {
        const SK_BUFF: u64 = 256; // SKB_DATA_ALIGN(sizeof(struct sk_buff)) = 232 → 256
        const SHINFO: u64 = 320; // SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
        const SCTP_CHUNK: u64 = SIZEOF_SCTP_CHUNK;
        let len = (16 + payload) as u64;
        match self.truesize {
            TruesizeModel::Payload => payload as u64,
            TruesizeModel::Modern => {
                let data = ((len + 63) & !63) + SHINFO;
                let alloc = if data <= 8192 { data.next_power_of_two().max(64) } else { (data + 4095) & !4095 };
                alloc + SK_BUFF + SCTP_CHUNK
            }
            TruesizeModel::Linux2637 => ((len + 63) & !63) + 233 + SCTP_CHUNK,
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn profiles_and_defaults() {
        let c = SctpConfig::profile("linux-6").unwrap();
        assert_eq!(c.rto_initial, Duration::from_secs(3));
        assert_eq!(c.rto_min, Duration::from_secs(1));
        assert_eq!(c.wmem_default, 212992);
        assert_eq!(c.frag_point(), 1452);
        let o = SctpConfig::profile("linux-2.6.37").unwrap();
        assert_eq!(o.rmem_default, 124928);
        assert_eq!(o.sctp_rmem, [4096, 349500, 3989504]);
        assert!(SctpConfig::profile("linux-9").unwrap_err().to_string().contains("linux-6"));
        assert_eq!(SctpConfig::profile("rfc9260").unwrap().rto_initial, Duration::from_secs(1));
    }

    #[test]
    fn sysctls() {
        let mut c = SctpConfig::default();
        c.set_sysctl("net.sctp.rto_min", "200").unwrap();
        assert_eq!(c.rto_min, Duration::from_millis(200));
        c.set_sysctl("net.sctp.sctp_wmem", "4096 16384 4194304").unwrap();
        c.set_sysctl("net.core.wmem_default", "65536").unwrap();
        assert_eq!(c.wmem_default, 65536);
        c.set_sysctl("net.sctp.sndbuf_adv", "v4").unwrap();
        assert_eq!(c.frag_point(), 1448);
        assert!(c.set_sysctl("net.sctp.sctp_wmem", "1 2").is_err());
        assert!(c.set_sysctl("net.sctp.rto_min", "abc").unwrap_err().msg.contains("integer"));
        assert!(c.set_sysctl("net.sctp.nope", "1").is_err());
        assert!(c.set_sysctl("net.core.somaxconn", "1").is_err());
        assert!(c.set_sysctl("net.sctp.rto_min", "70000").is_err()); // > rto_max
        assert_eq!(c.rto_min, Duration::from_millis(200), "rejected values change nothing");
    }

    #[test]
    fn cmt_sysctls_in_freebsd_spelling() {
        let mut c = SctpConfig::default();
        assert_eq!(c.cmt, Cmt::Off);
        c.set_sysctl("net.inet.sctp.cmt_on_off", "1").unwrap();
        c.set_sysctl("net.inet.sctp.cmt_use_dac", "1").unwrap();
        c.set_sysctl("net.inet.sctp.cmt_rtx_policy", "ssthresh").unwrap();
        c.set_sysctl("net.inet.sctp.cmt_cuc", "off").unwrap();
        c.set_sysctl("net.inet.sctp.cmt_sfr", "0").unwrap();
        assert_eq!((c.cmt, c.cmt_use_dac, c.cmt_rtx_policy, c.cmt_cuc, c.cmt_sfr), (Cmt::Base, true, RtxPolicy::Ssthresh, Cuc::Off, false));
        let e = c.set_sysctl("net.inet.sctp.cmt_on_off", "5").unwrap_err();
        assert!(e.msg.contains("0..=4"), "{e}");
        assert!(c.set_sysctl("net.inet.sctp.cmt_rtx_policy", "lossrate").unwrap_err().msg.contains("same, asap"));
        assert!(c.set_sysctl("net.inet.sctp.blackhole", "1").unwrap_err().msg.contains("cmt_on_off"));
        assert_eq!(c.cmt, Cmt::Base, "rejected values change nothing");
    }

    #[test]
    fn truesize_charges_more_than_payload() {
        let c = SctpConfig::default();
        let t = c.chunk_truesize(1452);
        assert!(t > 2000 && t < 3000, "{t}");
        assert!(c.chunk_truesize(100) < t);
    }
}
