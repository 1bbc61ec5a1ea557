//! Knobs: the thesis's `/proc/sys/net/ipv4/rate_*` entries (§5.3) as sysctl names.
//!
//! `/proc/sys/net/ipv4/rate_X` is spelled `net.ipv4.rate_X` (the `sysctl(8)` mapping);
//! [`RateConfig::set_sysctl`] accepts either spelling. Knobs marked *ours* are not in the
//! thesis: they expose constants the thesis fixed at compile time or left unnamed, and the
//! options seed-systems.md §4.6 asks for. docs/rate-control.md lists all with units.
use crate::meter::{AgingMode, MeterConfig};
use crate::policy::{PolicyKind, StepTrigger};
use wirelab_core::units::{parse_rate, parse_time};
use wirelab_core::Duration;

/// A rate threshold or target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateTarget {
    /// Packets per second: the thesis's unit for `rate_acceptable_tcp`/`rate_control_udp`.
    Pps(u64),
    /// Bits per second (a `tc` rate like `4mbit`; thesis §6 states targets in Mbit/s).
    Bits(u64),
}

impl RateTarget {
    /// Compares a measured rate (bytes/s and 1/1000 pps) with this target, widened by
    /// `tol_pct` percent either side: `Greater` = over target + tol, `Less` = under
    /// target − tol, `Equal` = inside the band.
    pub fn compare(&self, bytes_per_sec: u64, milli_pps: u64, tol_pct: u32) -> core::cmp::Ordering {
        use core::cmp::Ordering::*;
        let (measured, target) = match *self {
            RateTarget::Pps(p) => (milli_pps as u128, p as u128 * 1000),
            RateTarget::Bits(b) => (bytes_per_sec as u128 * 8, b as u128),
        };
        let tol = target * tol_pct as u128 / 100;
        if measured > target + tol {
            Greater
        } else if measured + tol < target {
            Less
        } else {
            Equal
        }
    }

    fn to_sysctl(self) -> String {
        match self {
            RateTarget::Pps(p) => p.to_string(),
            RateTarget::Bits(b) => format!("{b}bit"),
        }
    }
}

/// All rate-control settings. Defaults: thesis values where it gives one, else ours (see
/// each field).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateConfig {
    /// `rate_status`: on/off switch for all rate control (default on). Off: windows and
    /// datagrams pass untouched; meters still run so the rate tables stay filled.
    pub status: bool,
    /// `rate_debug`: carried for completeness (the thesis logged to syslog); no effect.
    pub debug: bool,
    /// `rate_acceptable_tcp`: per-connection threshold/target for TCP. Plain integer =
    /// packets/s (thesis); a tc rate (`4mbit`) = bits/s. 0 = none (default).
    pub acceptable_tcp: Option<RateTarget>,
    /// `rate_control_udp`: same for UDP sockets. 0 = none (default).
    pub control_udp: Option<RateTarget>,
    /// `rate_microsec_per_chunk`: chunk length (µs; default 100 000, the §6.2 setting).
    pub chunk: Duration,
    /// `rate_udp_drop_time`: time in DROP before WARN (seconds; default 1 s, ours: the
    /// thesis gives no value).
    pub udp_drop_time: Duration,
    /// `rate_udp_warn_time`: time in WARN before the rate is re-checked (seconds; default
    /// 2 s, ours).
    pub udp_warn_time: Duration,
    /// `cbq_class` (`/proc/sys/net/ipv4/cbq_class`, §5.4): class whose streams are
    /// "important" (never throttled). 0 = none.
    pub cbq_class: Option<u32>,
    /// *ours* `rate_chunks`: ring size K (compile-time in the thesis; default 30 = 3 s of
    /// 100 ms chunks, §6.2).
    pub chunks: usize,
    /// *ours* `rate_idle_time`: silence after which a socket's history is zeroed (seconds;
    /// default 2).
    pub idle_time: Duration,
    /// *ours* `rate_aging`: `lazy` (default, seed-systems.md §4.6) or `timer` (thesis).
    pub aging: AgingMode,
    /// *ours* `rate_window_policy`: `revised` (default: the 1-MSS algorithm of §5.2.1/§6.6
    /// used for all later experiments) or `original`.
    pub policy: PolicyKind,
    /// *ours* `rate_step_trigger`: `chunk` (default: one step per new rate value) or
    /// `window` (one step per window computation, the literal §5.2.1 reading).
    pub step_trigger: StepTrigger,
    /// *ours* `rate_tolerance`: dead band around the target, percent (default 0: thesis).
    pub tolerance_pct: u32,
    /// *ours* `rate_allow_retract`: let the offered right edge move left (default 0).
    pub allow_retract: bool,
    /// *ours* `rate_fixed_window`: constant user-set window in bytes (§6.3; 0 = off).
    pub fixed_window: Option<u32>,
    /// *ours* `rate_mss`: MSS for every new connection (§6.5; 0 = off). Carried only: the
    /// simulator applies it with `SockOpt::MaxSeg`.
    pub mss: Option<u16>,
    /// *ours* `rate_mss_option`: re-advertise the MSS in the ACKs after the handshake
    /// (§6.4; default `off`).
    pub mss_option: MssOption,
}

/// §6.4 "Evaluating the MSS changeability": what the receiver's pure ACKs carry after
/// the handshake (`net.ipv4.rate_mss_option`). No Linux sends an MSS option outside a
/// SYN, and Linux ignores one (`tcp_parse_options()` reads it only if `th->syn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MssOption {
    /// No MSS option after the handshake (Linux).
    #[default]
    Off,
    /// Phase 1 of §6.4: "advertise the MSS in each TCP header": the receive MSS of the
    /// SYN, on every ACK.
    Every,
    /// Phase 2: "should the TCP window fall below the current MSS, the MSS will shrink
    /// with it": the offered window when it is below the MSS (and at least 88 bytes,
    /// `TCP_MIN_MSS`), else the MSS.
    Window,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            status: true,
            debug: false,
            acceptable_tcp: None,
            control_udp: None,
            chunk: Duration::from_millis(100),
            udp_drop_time: Duration::from_secs(1),
            udp_warn_time: Duration::from_secs(2),
            cbq_class: None,
            chunks: 30,
            idle_time: Duration::from_secs(2),
            aging: AgingMode::Lazy,
            policy: PolicyKind::Revised,
            step_trigger: StepTrigger::RateUpdate,
            tolerance_pct: 0,
            allow_retract: false,
            fixed_window: None,
            mss: None,
            mss_option: MssOption::Off,
        }
    }
}

/// Largest accepted ring (memory per socket is 24 bytes per chunk).
pub const MAX_CHUNKS: usize = 4096;

/// Every knob, as `sysctl` names, in documentation order.
pub const SYSCTL_NAMES: &[&str] = &[
    "net.ipv4.rate_status",
    "net.ipv4.rate_debug",
    "net.ipv4.rate_acceptable_tcp",
    "net.ipv4.rate_control_udp",
    "net.ipv4.rate_microsec_per_chunk",
    "net.ipv4.rate_udp_drop_time",
    "net.ipv4.rate_udp_warn_time",
    "net.ipv4.cbq_class",
    "net.ipv4.rate_chunks",
    "net.ipv4.rate_idle_time",
    "net.ipv4.rate_aging",
    "net.ipv4.rate_window_policy",
    "net.ipv4.rate_step_trigger",
    "net.ipv4.rate_tolerance",
    "net.ipv4.rate_allow_retract",
    "net.ipv4.rate_fixed_window",
    "net.ipv4.rate_mss",
    "net.ipv4.rate_mss_option",
];

/// `/proc/sys/net/ipv4/rate_x`, `net/ipv4/rate_x` or `net.ipv4.rate_x` → `rate_x`.
fn short_name(name: &str) -> Option<&str> {
    let n = name.trim();
    let n = n.strip_prefix("/proc/sys/").unwrap_or(n);
    n.strip_prefix("net.ipv4.").or_else(|| n.strip_prefix("net/ipv4/"))
}

fn parse_bool(key: &str, v: &str) -> Result<bool, String> {
    match v {
        "0" | "off" | "false" | "no" => Ok(false),
        "1" | "on" | "true" | "yes" => Ok(true),
        _ => Err(format!("{key}: expected 0 or 1 (or on/off), got `{v}`")),
    }
}

fn parse_u64(key: &str, v: &str, what: &str) -> Result<u64, String> {
    v.parse::<u64>().map_err(|_| format!("{key}: expected {what}, got `{v}`"))
}

/// A time knob: a bare integer is in `unit_ns` (the thesis unit), else a tc time (`50ms`).
fn parse_time_knob(key: &str, v: &str, unit_ns: u64, unit: &str) -> Result<Duration, String> {
    if let Ok(n) = v.parse::<u64>() {
        return n
            .checked_mul(unit_ns)
            .map(Duration::from_nanos)
            .ok_or_else(|| format!("{key}: `{v}` {unit} is out of range"));
    }
    parse_time(v).map_err(|_| format!("{key}: expected a whole number of {unit} or a time like 50ms, got `{v}`"))
}

fn parse_target(key: &str, v: &str) -> Result<Option<RateTarget>, String> {
    if let Ok(n) = v.parse::<u64>() {
        return Ok((n > 0).then_some(RateTarget::Pps(n)));
    }
    let bits = parse_rate(v).map_err(|_| {
        format!("{key}: expected packets per second (a whole number, 0 = off) or a tc rate like 4mbit, got `{v}`")
    })?;
    Ok((bits > 0).then_some(RateTarget::Bits(bits)))
}

/// A CBQ/HTB class: tc handle `1:2` (→ 0x0001_0002), hex `0x3432CC2A` or decimal; 0 = none.
fn parse_class(key: &str, v: &str) -> Result<Option<u32>, String> {
    let err = || format!("{key}: expected a class handle like 1:2, a hex id like 0x3432CC2A, or 0, got `{v}`");
    let id = if let Some((maj, min)) = v.split_once(':') {
        let maj = u32::from_str_radix(maj, 16).map_err(|_| err())?;
        let min = if min.is_empty() { 0 } else { u32::from_str_radix(min, 16).map_err(|_| err())? };
        if maj > 0xffff || min > 0xffff {
            return Err(err());
        }
        (maj << 16) | min
    } else if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).map_err(|_| err())?
    } else {
        v.parse::<u32>().map_err(|_| err())?
    };
    Ok((id != 0).then_some(id))
}

fn fmt_secs(d: Duration) -> String {
    if d.as_nanos().checked_rem(1_000_000_000) == Some(0) {
        (d.as_nanos() / 1_000_000_000).to_string()
    } else {
        format!("{}us", d.as_micros())
    }
}

impl RateConfig {
    /// Sets one knob by its sysctl name (`net.ipv4.rate_microsec_per_chunk`) or `/proc` path
    /// (`/proc/sys/net/ipv4/rate_microsec_per_chunk`). Errors name the knob, say what was
    /// expected and what was given; on error nothing changes.
    pub fn set_sysctl(&mut self, name: &str, value: &str) -> Result<(), String> {
        let short = short_name(name).ok_or_else(|| {
            format!("unknown rate-control sysctl `{name}`: expected net.ipv4.<knob>, one of {}", SYSCTL_NAMES.join(", "))
        })?;
        let key = format!("net.ipv4.{short}");
        let v = value.trim();
        match short {
            "rate_status" => self.status = parse_bool(&key, v)?,
            "rate_debug" => self.debug = parse_bool(&key, v)?,
            "rate_acceptable_tcp" => self.acceptable_tcp = parse_target(&key, v)?,
            "rate_control_udp" => self.control_udp = parse_target(&key, v)?,
            "rate_microsec_per_chunk" => {
                let d = parse_time_knob(&key, v, 1_000, "microseconds")?;
                if d.as_nanos() == 0 {
                    return Err(format!("{key}: a chunk must be longer than 0 µs, got `{v}`"));
                }
                self.chunk = d;
            }
            "rate_udp_drop_time" => self.udp_drop_time = parse_time_knob(&key, v, 1_000_000_000, "seconds")?,
            "rate_udp_warn_time" => self.udp_warn_time = parse_time_knob(&key, v, 1_000_000_000, "seconds")?,
            "cbq_class" => self.cbq_class = parse_class(&key, v)?,
            "rate_chunks" => {
                let n = parse_u64(&key, v, "a whole number of chunks")?;
                if n == 0 || n > MAX_CHUNKS as u64 {
                    return Err(format!("{key}: expected 1..={MAX_CHUNKS} chunks, got `{v}`"));
                }
                self.chunks = n as usize;
            }
            "rate_idle_time" => {
                let d = parse_time_knob(&key, v, 1_000_000_000, "seconds")?;
                if d.as_nanos() == 0 {
                    return Err(format!("{key}: the idle interval must be > 0, got `{v}`"));
                }
                self.idle_time = d;
            }
            "rate_aging" => {
                self.aging = match v {
                    "lazy" | "0" => AgingMode::Lazy,
                    "timer" | "1" => AgingMode::Timer,
                    _ => return Err(format!("{key}: expected `lazy` (0) or `timer` (1), got `{v}`")),
                }
            }
            "rate_window_policy" => {
                self.policy = match v {
                    "original" | "0" => PolicyKind::Original,
                    "revised" | "1" => PolicyKind::Revised,
                    _ => return Err(format!("{key}: expected `original` (0) or `revised` (1), got `{v}`")),
                }
            }
            "rate_step_trigger" => {
                self.step_trigger = match v {
                    "chunk" => StepTrigger::RateUpdate,
                    "window" => StepTrigger::EveryWindow,
                    _ => return Err(format!("{key}: expected `chunk` or `window`, got `{v}`")),
                }
            }
            "rate_tolerance" => {
                let t = v.strip_suffix('%').unwrap_or(v);
                let n = parse_u64(&key, t, "a whole percentage 0..=100")?;
                if n > 100 {
                    return Err(format!("{key}: expected a whole percentage 0..=100, got `{v}`"));
                }
                self.tolerance_pct = n as u32;
            }
            "rate_allow_retract" => self.allow_retract = parse_bool(&key, v)?,
            "rate_fixed_window" => {
                let n = parse_u64(&key, v, "a window in bytes (0 = off)")?;
                if n > u32::MAX as u64 {
                    return Err(format!("{key}: window `{v}` exceeds {} bytes", u32::MAX));
                }
                self.fixed_window = (n > 0).then_some(n as u32);
            }
            "rate_mss" => {
                let n = parse_u64(&key, v, "an MSS in bytes (0 = off)")?;
                if n != 0 && !(64..=65535).contains(&n) {
                    return Err(format!("{key}: expected an MSS of 64..=65535 bytes or 0, got `{v}`"));
                }
                self.mss = (n > 0).then_some(n as u16);
            }
            "rate_mss_option" => {
                self.mss_option = match v {
                    "off" | "0" => MssOption::Off,
                    "every" | "1" => MssOption::Every,
                    "window" | "2" => MssOption::Window,
                    _ => return Err(format!("{key}: expected `off` (0), `every` (1) or `window` (2), got `{v}`")),
                }
            }
            _ => {
                return Err(format!("unknown rate-control sysctl `{name}`: expected one of {}", SYSCTL_NAMES.join(", ")));
            }
        }
        Ok(())
    }

    /// All knobs with their current values as `(sysctl name, value)`, in
    /// [`SYSCTL_NAMES`] order; each value parses back with [`set_sysctl`](Self::set_sysctl).
    pub fn sysctls(&self) -> Vec<(&'static str, String)> {
        let b = |x: bool| if x { "1".to_string() } else { "0".to_string() };
        let t = |x: Option<RateTarget>| x.map_or("0".to_string(), RateTarget::to_sysctl);
        let vals = [
            b(self.status),
            b(self.debug),
            t(self.acceptable_tcp),
            t(self.control_udp),
            if self.chunk.as_nanos().checked_rem(1000) == Some(0) { self.chunk.as_micros().to_string() } else { format!("{}ns", self.chunk.as_nanos()) },
            fmt_secs(self.udp_drop_time),
            fmt_secs(self.udp_warn_time),
            self.cbq_class.map_or("0".to_string(), |c| format!("{:x}:{:x}", c >> 16, c & 0xffff)),
            self.chunks.to_string(),
            fmt_secs(self.idle_time),
            match self.aging {
                AgingMode::Lazy => "lazy",
                AgingMode::Timer => "timer",
            }
            .to_string(),
            match self.policy {
                PolicyKind::Original => "original",
                PolicyKind::Revised => "revised",
            }
            .to_string(),
            match self.step_trigger {
                StepTrigger::RateUpdate => "chunk",
                StepTrigger::EveryWindow => "window",
            }
            .to_string(),
            self.tolerance_pct.to_string(),
            b(self.allow_retract),
            self.fixed_window.unwrap_or(0).to_string(),
            self.mss.unwrap_or(0).to_string(),
            match self.mss_option {
                MssOption::Off => "off",
                MssOption::Every => "every",
                MssOption::Window => "window",
            }
            .to_string(),
        ];
        SYSCTL_NAMES.iter().copied().zip(vals).collect()
    }

    /// The meter parameters these knobs give.
    pub fn meter_config(&self) -> MeterConfig {
        MeterConfig { chunk: self.chunk, chunks: self.chunks.clamp(1, MAX_CHUNKS), idle: self.idle_time, aging: self.aging }
    }

    /// Is a stream in CBQ/HTB class `class` "important" (never throttled, §5.4)?
    pub fn is_important_class(&self, class: Option<u32>) -> bool {
        matches!((self.cbq_class, class), (Some(a), Some(b)) if a == b)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn proc_and_sysctl_spellings() {
        let mut c = RateConfig::default();
        c.set_sysctl("/proc/sys/net/ipv4/rate_microsec_per_chunk", "50000").unwrap();
        assert_eq!(c.chunk, Duration::from_micros(50_000));
        c.set_sysctl("net.ipv4.rate_microsec_per_chunk", "20ms").unwrap();
        assert_eq!(c.chunk, Duration::from_millis(20));
        c.set_sysctl("net/ipv4/rate_acceptable_tcp", "350").unwrap();
        assert_eq!(c.acceptable_tcp, Some(RateTarget::Pps(350)));
        c.set_sysctl("net.ipv4.rate_acceptable_tcp", "4mbit").unwrap();
        assert_eq!(c.acceptable_tcp, Some(RateTarget::Bits(4_000_000)));
        c.set_sysctl("net.ipv4.rate_acceptable_tcp", "0").unwrap();
        assert_eq!(c.acceptable_tcp, None);
        c.set_sysctl("net.ipv4.rate_udp_drop_time", "3").unwrap();
        assert_eq!(c.udp_drop_time, Duration::from_secs(3));
        c.set_sysctl("net.ipv4.cbq_class", "1:2").unwrap();
        assert_eq!(c.cbq_class, Some(0x0001_0002));
        c.set_sysctl("net.ipv4.cbq_class", "0x3432CC2A").unwrap();
        assert_eq!(c.cbq_class, Some(0x3432_CC2A));
        assert!(c.is_important_class(Some(0x3432_CC2A)));
        assert!(!c.is_important_class(Some(0x0001_0001)));
        assert!(!c.is_important_class(None));
        c.set_sysctl("net.ipv4.rate_window_policy", "original").unwrap();
        assert_eq!(c.policy, PolicyKind::Original);
        c.set_sysctl("net.ipv4.rate_tolerance", "5%").unwrap();
        assert_eq!(c.tolerance_pct, 5);
    }

    #[test]
    fn sysctl_parse_errors_are_clear_and_atomic() {
        let mut c = RateConfig::default();
        let before = c.clone();
        let cases: &[(&str, &str, &str)] = &[
            ("net.ipv4.rate_bogus", "1", "unknown rate-control sysctl `net.ipv4.rate_bogus`"),
            ("kernel.rate_status", "1", "unknown rate-control sysctl `kernel.rate_status`"),
            ("net.ipv4.rate_status", "2", "net.ipv4.rate_status: expected 0 or 1"),
            ("net.ipv4.rate_microsec_per_chunk", "0", "a chunk must be longer than 0"),
            ("net.ipv4.rate_microsec_per_chunk", "fast", "net.ipv4.rate_microsec_per_chunk: expected a whole number of microseconds"),
            ("net.ipv4.rate_microsec_per_chunk", "-5", "net.ipv4.rate_microsec_per_chunk: expected"),
            ("net.ipv4.rate_udp_warn_time", "99999999999999999999", "net.ipv4.rate_udp_warn_time: expected"),
            ("net.ipv4.rate_udp_drop_time", "18446744073709551615", "out of range"),
            ("net.ipv4.rate_acceptable_tcp", "4 furlongs", "expected packets per second"),
            ("net.ipv4.rate_acceptable_tcp", "-3", "expected packets per second"),
            ("net.ipv4.cbq_class", "1:zz", "expected a class handle like 1:2"),
            ("net.ipv4.cbq_class", "10000:1", "expected a class handle"),
            ("net.ipv4.rate_chunks", "0", "expected 1..=4096 chunks"),
            ("net.ipv4.rate_chunks", "1e3", "expected a whole number of chunks"),
            ("net.ipv4.rate_aging", "sometimes", "expected `lazy` (0) or `timer` (1)"),
            ("net.ipv4.rate_window_policy", "2", "expected `original` (0) or `revised` (1)"),
            ("net.ipv4.rate_tolerance", "150", "0..=100"),
            ("net.ipv4.rate_fixed_window", "5000000000", "exceeds"),
            ("net.ipv4.rate_mss", "10", "64..=65535"),
            ("net.ipv4.rate_mss_option", "always", "`off` (0), `every` (1) or `window` (2)"),
            ("net.ipv4.rate_idle_time", "0", "must be > 0"),
        ];
        for (k, v, want) in cases {
            let e = c.set_sysctl(k, v).expect_err(k);
            assert!(e.contains(want), "{k}={v}: {e}");
            assert!(e.contains(v) || e.contains(k), "error names neither knob nor value: {e}");
        }
        assert_eq!(c, before, "a failed set must not change anything");
    }

    #[test]
    fn sysctls_round_trip() {
        let mut c = RateConfig::default();
        c.set_sysctl("net.ipv4.rate_acceptable_tcp", "4mbit").unwrap();
        c.set_sysctl("net.ipv4.rate_control_udp", "200").unwrap();
        c.set_sysctl("net.ipv4.cbq_class", "1:2").unwrap();
        c.set_sysctl("net.ipv4.rate_aging", "timer").unwrap();
        c.set_sysctl("net.ipv4.rate_idle_time", "1500ms").unwrap();
        c.set_sysctl("net.ipv4.rate_fixed_window", "1280").unwrap();
        c.set_sysctl("net.ipv4.rate_mss", "536").unwrap();
        c.set_sysctl("net.ipv4.rate_step_trigger", "window").unwrap();
        c.set_sysctl("net.ipv4.rate_mss_option", "window").unwrap();
        let list = c.sysctls();
        assert_eq!(list.len(), SYSCTL_NAMES.len());
        let mut d = RateConfig::default();
        for (k, v) in &list {
            d.set_sysctl(k, v).unwrap_or_else(|e| panic!("{k}={v}: {e}"));
        }
        assert_eq!(c, d);
    }

    #[test]
    fn target_compare_with_tolerance() {
        use core::cmp::Ordering::*;
        let t = RateTarget::Bits(8_000_000); // 1 MB/s
        assert_eq!(t.compare(1_000_001, 0, 0), Greater);
        assert_eq!(t.compare(999_999, 0, 0), Less);
        assert_eq!(t.compare(1_000_000, 0, 0), Equal);
        assert_eq!(t.compare(1_040_000, 0, 5), Equal);
        assert_eq!(t.compare(1_060_000, 0, 5), Greater);
        assert_eq!(t.compare(940_000, 0, 5), Less);
        let p = RateTarget::Pps(100);
        assert_eq!(p.compare(u64::MAX, 100_001, 0), Greater);
        assert_eq!(p.compare(0, 99_999, 0), Less);
    }
}
