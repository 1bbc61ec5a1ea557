//! User-given flow classes: `--class NAME=RULE[,RULE…]`.
//!
//! A rule is a port or port range, or an IPv4 address or prefix, optionally qualified:
//! `dport:5000-5100`, `sport:80`, `port:443` (either end), `5000-5100` (= `port:`),
//! `src:10.0.0.0/24`, `dst:10.0.1.2`, `net:10.0.0.0/8` or a bare prefix (either end).
//! A flow is in the first class (in command-line order) one of whose rules matches.
use crate::analysis::FlowKey;
use std::net::Ipv4Addr;

/// Which end of the data direction a rule looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The data sender.
    Src,
    /// The data receiver.
    Dst,
    /// Either.
    Any,
}

/// One matcher.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Port in `lo..=hi`.
    Port(End, u16, u16),
    /// Address within `net/len`.
    Prefix(End, Ipv4Addr, u8),
}

impl Rule {
    /// True if the flow matches.
    pub fn matches(&self, f: &FlowKey) -> bool {
        let either = |e: End, s: bool, d: bool| match e {
            End::Src => s,
            End::Dst => d,
            End::Any => s || d,
        };
        match *self {
            Rule::Port(e, lo, hi) => {
                let inr = |p: u16| (lo..=hi).contains(&p);
                either(e, inr(f.sport), inr(f.dport))
            }
            Rule::Prefix(e, net, len) => {
                let mask = if len == 0 { 0 } else { u32::MAX << (32 - len as u32) };
                let inp = |a: Ipv4Addr| u32::from(a) & mask == u32::from(net) & mask;
                either(e, inp(f.src), inp(f.dst))
            }
        }
    }
}

/// A named class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassRule {
    /// Class name.
    pub name: String,
    /// Rules, OR-ed.
    pub rules: Vec<Rule>,
}

impl ClassRule {
    /// Parses `NAME=RULE[,RULE…]`.
    pub fn parse(s: &str) -> Result<ClassRule, String> {
        let (name, spec) = s
            .split_once('=')
            .ok_or_else(|| format!("class `{s}`: expected NAME=RULE, e.g. thin=dport:5000-5100"))?;
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("class `{s}`: empty name"));
        }
        let rules = spec
            .split(',')
            .map(|r| parse_rule(r.trim()).map_err(|e| format!("class `{name}`: rule `{}`: {e}", r.trim())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ClassRule { name: name.to_string(), rules })
    }

    /// True if any rule matches.
    pub fn matches(&self, f: &FlowKey) -> bool {
        self.rules.iter().any(|r| r.matches(f))
    }
}

fn parse_rule(r: &str) -> Result<Rule, String> {
    let (qual, val) = match r.split_once(':') {
        Some((q, v)) => (q, v),
        None => ("", r),
    };
    let is_addr = val.contains('.');
    let end = match (qual, is_addr) {
        ("sport", false) | ("src", true) => End::Src,
        ("dport", false) | ("dst", true) => End::Dst,
        ("port", false) | ("net", true) | ("", _) => End::Any,
        _ => return Err(format!("unknown qualifier `{qual}` for `{val}` (sport, dport, port, src, dst, net)")),
    };
    if is_addr {
        let (a, len) = match val.split_once('/') {
            Some((a, l)) => (a, l.parse::<u8>().ok().filter(|&l| l <= 32).ok_or("prefix length must be 0..=32")?),
            None => (val, 32),
        };
        let a: Ipv4Addr = a.parse().map_err(|_| format!("`{a}` is not an IPv4 address"))?;
        Ok(Rule::Prefix(end, a, len))
    } else {
        let port = |p: &str| p.parse::<u16>().map_err(|_| format!("`{p}` is not a port (0..=65535)"));
        let (lo, hi) = match val.split_once('-') {
            Some((lo, hi)) => (port(lo)?, port(hi)?),
            None => (port(val)?, port(val)?),
        };
        if lo > hi {
            return Err(format!("empty port range {lo}-{hi}"));
        }
        Ok(Rule::Port(end, lo, hi))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn flow(sport: u16, dport: u16) -> FlowKey {
        FlowKey { src: Ipv4Addr::new(10, 0, 0, 1), sport, dst: Ipv4Addr::new(10, 0, 1, 2), dport }
    }

    #[test]
    fn parses_and_matches() {
        let c = ClassRule::parse("thin=dport:5000-5100").unwrap();
        assert!(c.matches(&flow(40000, 5050)));
        assert!(!c.matches(&flow(5050, 80)));
        let c = ClassRule::parse("web=80,src:10.0.0.0/24").unwrap();
        assert!(c.matches(&flow(80, 1)));
        assert!(c.matches(&flow(1, 1)), "src prefix");
        let c = ClassRule::parse("far=dst:10.0.1.0/24").unwrap();
        assert!(c.matches(&flow(1, 1)));
        let c = ClassRule::parse("none=dst:10.0.0.0/24").unwrap();
        assert!(!c.matches(&flow(1, 1)));
    }

    #[test]
    fn errors_are_clear() {
        for (s, want) in [
            ("thin", "expected NAME=RULE"),
            ("=80", "empty name"),
            ("t=dport:99999", "not a port"),
            ("t=port:9-3", "empty port range"),
            ("t=foo:80", "unknown qualifier"),
            ("t=10.0.0.0/40", "prefix length"),
            ("t=10.0.0.300", "not an IPv4 address"),
        ] {
            let e = ClassRule::parse(s).unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }
}
