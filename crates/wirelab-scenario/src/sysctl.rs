//! The Linux vocabulary of a node's transport stack: stack profiles and sysctl names, and
//! which engine each name configures. The engines own their constants (`TcpConfig`,
//! `SctpConfig`, `RateConfig` parse their own sysctls); this module only routes names to
//! them and spells values, so a new sysctl needs an edit in its engine's config alone.
use wirelab_sctp::SctpConfig;
use wirelab_sim::stack::StackConfig;
use wirelab_tcp::TcpConfig;

/// Stack profiles this version knows (the TCP and SCTP engines define their constants).
pub const PROFILES: &[&str] = &["linux-6", "linux-4.6", "linux-3.14", "linux-2.6.37", "linux-2.2", "freebsd-4.10"];

/// The sysctl that makes a node a router; the builder reads it, the stack does not.
pub const IP_FORWARD: &str = "net.ipv4.ip_forward";

/// The SCTP profile a stack profile uses. SCTP has no `linux-3.14`, `linux-2.2` or
/// `freebsd-4.10` profile; those fall back to the nearest SCTP profile (`linux-2.6.37` for
/// older eras), as documented in docs/scenario.md.
pub fn sctp_profile_for(name: &str) -> &str {
    match name {
        "linux-6" | "default" => "linux-6",
        "linux-4.6" => "linux-4.6",
        "linux-3.14" | "linux-2.6.37" | "linux-2.2" | "freebsd-4.10" => "linux-2.6.37",
        other => other,
    }
}

/// A stack configuration from a profile name shared by TCP and SCTP.
pub fn stack_profile(name: &str) -> Result<StackConfig, String> {
    let tcp = TcpConfig::profile(name).map_err(|e| e.to_string())?;
    let sctp = SctpConfig::profile(sctp_profile_for(name)).map_err(|e| e.to_string())?;
    Ok(StackConfig { tcp: Some(tcp), sctp: Some(sctp), rate: None, shim: None })
}

/// Applies one sysctl by its Linux name: `net.ipv4.rate_*` (and the rate-control names
/// `wirelab_ratectl::SYSCTL_NAMES` lists) go to receiver-side rate control, `net.sctp.*`
/// and FreeBSD's `net.inet.sctp.cmt_*` to SCTP, `net.core.*` to both TCP and SCTP (each engine takes the ones it models, an
/// error only if neither does), every other name to TCP.
pub fn apply_sysctl(stack: &mut StackConfig, key: &str, value: &str) -> Result<(), String> {
    let tcp = stack.tcp.get_or_insert_with(|| TcpConfig::profile("linux-6").expect("linux-6 profile"));
    let sctp = stack.sctp.get_or_insert_with(|| SctpConfig::profile("linux-6").expect("linux-6 profile"));
    if key.starts_with("net.ipv4.rate_") || key.starts_with("/proc/sys/net/ipv4/rate_") || wirelab_ratectl::SYSCTL_NAMES.contains(&key) {
        stack.rate.get_or_insert_with(wirelab_ratectl::RateConfig::default).set_sysctl(key, value)
    } else if key.starts_with("net.sctp.") || key.starts_with("net.inet.sctp.") {
        sctp.set_sysctl(key, value).map_err(|e| e.to_string())
    } else if key.starts_with("net.core.") {
        let a = tcp.set_sysctl(key, value);
        let b = sctp.set_sysctl(key, value);
        match (a, b) {
            (Err(e), Err(_)) => Err(e.to_string()),
            _ => Ok(()),
        }
    } else {
        tcp.set_sysctl(key, value).map_err(|e| e.to_string())
    }
}

/// A TOML sysctl value as `sysctl -w` would take it: strings as they are, integers and
/// booleans as numbers, a list of integers space-separated (`tcp_rmem = [4096, 131072,
/// 6291456]`). `None` for anything else.
pub fn sysctl_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Boolean(b) => Some((*b as u8).to_string()),
        toml::Value::Array(a) if a.iter().all(|x| x.is_integer()) => Some(a.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" ")),
        _ => None,
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn names_route_to_their_engine() {
        let mut s = stack_profile("linux-6").unwrap();
        apply_sysctl(&mut s, "net.ipv4.tcp_sack", "0").unwrap();
        assert!(!s.tcp.as_ref().unwrap().tcp_sack);
        apply_sysctl(&mut s, "net.ipv4.rate_acceptable_tcp", "1mbit").unwrap();
        assert!(s.rate.is_some());
        assert!(apply_sysctl(&mut s, "net.sctp.no_such_knob", "1").is_err());
        assert!(apply_sysctl(&mut s, "net.core.no_such_knob", "1").is_err());
    }

    #[test]
    fn old_profiles_fall_back_to_the_nearest_sctp_profile() {
        assert_eq!(sctp_profile_for("freebsd-4.10"), "linux-2.6.37");
        assert_eq!(sctp_profile_for("linux-4.6"), "linux-4.6");
        for p in PROFILES {
            stack_profile(p).unwrap();
        }
        assert!(stack_profile("linux-1.0").is_err());
    }

    #[test]
    fn values_are_spelled_like_sysctl_w() {
        let v: toml::Value = toml::from_str::<toml::Table>("a = [4096, 131072, 6291456]").unwrap()["a"].clone();
        assert_eq!(sysctl_text(&v).unwrap(), "4096 131072 6291456");
        assert_eq!(sysctl_text(&toml::Value::Boolean(true)).unwrap(), "1");
        assert!(sysctl_text(&toml::Value::Float(1.5)).is_none());
    }
}
