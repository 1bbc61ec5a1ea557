//! The shim's rule tables (Bickhart §"Controlling the shim"): two ordered chains, `local`
//! for listening sockets and `remote` for connecting sockets. A rule matches an address or
//! subnet and/or a port or port range and carries a policy (enable/disable the shim).
//! First match wins; otherwise the chain's global default policy applies.
//!
//! Syntax, one rule per line (`#` starts a comment):
//!
//! ```text
//! remote enable 10.1.1.0/24
//! remote enable 128.4.30.25 port 8000-9000
//! local disable port 22
//! local enable any port 80
//! remote default disable
//! ```
use core::fmt;
use std::net::{Ipv4Addr, SocketAddrV4};

/// Which chain a rule belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Chain {
    /// Listening (server) sockets: matched against the bound address and port.
    Local,
    /// Connecting (client) sockets: matched against the remote address and port.
    Remote,
}

impl Chain {
    /// Spelling in the rule syntax.
    pub fn name(self) -> &'static str {
        match self {
            Chain::Local => "local",
            Chain::Remote => "remote",
        }
    }
}

/// A rule's action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Policy {
    /// Use SCTP (connect: SCTP first with fallback; listen: dual TCP + SCTP).
    Enable,
    /// Plain TCP only.
    Disable,
}

impl Policy {
    /// Spelling in the rule syntax.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Enable => "enable",
            Policy::Disable => "disable",
        }
    }
}

/// One rule: an optional subnet and an optional inclusive port range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Chain the rule lives in.
    pub chain: Chain,
    /// Action when it matches.
    pub policy: Policy,
    /// `(network, prefix length)`; `None` = any address. A host address is a /32.
    pub net: Option<(Ipv4Addr, u8)>,
    /// Inclusive port range; `None` = any port.
    pub ports: Option<(u16, u16)>,
}

impl Rule {
    /// True if `addr` (remote address for `remote`, bound address for `local`) matches.
    pub fn matches(&self, addr: SocketAddrV4) -> bool {
        let a_ok = match self.net {
            None => true,
            Some((net, len)) => {
                let mask = prefix_mask(len);
                u32::from(*addr.ip()) & mask == u32::from(net) & mask
            }
        };
        let p_ok = match self.ports {
            None => true,
            Some((lo, hi)) => (lo..=hi).contains(&addr.port()),
        };
        a_ok && p_ok
    }
}

fn prefix_mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len.min(32) as u32)
    }
}

impl fmt::Display for Rule {
    /// The canonical rule-syntax line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.chain.name(), self.policy.name())?;
        match self.net {
            None => {
                if self.ports.is_none() {
                    f.write_str(" any")?;
                }
            }
            Some((a, 32)) => write!(f, " {a}")?,
            Some((a, l)) => write!(f, " {a}/{l}")?,
        }
        match self.ports {
            None => Ok(()),
            Some((lo, hi)) if lo == hi => write!(f, " port {lo}"),
            Some((lo, hi)) => write!(f, " port {lo}-{hi}"),
        }
    }
}

/// Which rule decided a socket's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleMatch {
    /// Chain consulted.
    pub chain: Chain,
    /// Index of the matching rule within its chain (0-based), or `None` for the chain's
    /// default policy.
    pub rule: Option<usize>,
    /// The resulting policy.
    pub policy: Policy,
}

/// A rule-syntax error: the line, the offending token and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    /// 1-based line number.
    pub line: usize,
    /// The bad token (empty when the line ended too early).
    pub token: String,
    /// What the parser expected at that position.
    pub expected: &'static str,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.token.is_empty() {
            write!(f, "shim rules line {}: line ended early, expected {}", self.line, self.expected)
        } else {
            write!(f, "shim rules line {}: bad token `{}`, expected {}", self.line, self.token, self.expected)
        }
    }
}
impl std::error::Error for RuleError {}

/// The two chains with their default policies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleTable {
    local: Vec<Rule>,
    remote: Vec<Rule>,
    /// Default policy of the `local` chain (the talk's example table: disable).
    pub local_default: Policy,
    /// Default policy of the `remote` chain (the talk's example table: disable).
    pub remote_default: Policy,
}

impl Default for RuleTable {
    /// Empty chains, both defaults `disable`: the shim is off until rules enable it.
    fn default() -> Self {
        RuleTable { local: Vec::new(), remote: Vec::new(), local_default: Policy::Disable, remote_default: Policy::Disable }
    }
}

impl RuleTable {
    /// Both defaults `enable`, no rules: every socket tries SCTP.
    pub fn enable_all() -> Self {
        RuleTable { local_default: Policy::Enable, remote_default: Policy::Enable, ..Default::default() }
    }

    /// Appends `rule` to the end of its chain.
    pub fn push(&mut self, rule: Rule) {
        match rule.chain {
            Chain::Local => self.local.push(rule),
            Chain::Remote => self.remote.push(rule),
        }
    }

    /// Rules of a chain, in order.
    pub fn chain(&self, c: Chain) -> &[Rule] {
        match c {
            Chain::Local => &self.local,
            Chain::Remote => &self.remote,
        }
    }

    /// First-match lookup in chain `c` for `addr`.
    pub fn lookup(&self, c: Chain, addr: SocketAddrV4) -> RuleMatch {
        let (rules, def) = match c {
            Chain::Local => (&self.local, self.local_default),
            Chain::Remote => (&self.remote, self.remote_default),
        };
        match rules.iter().position(|r| r.matches(addr)) {
            Some(i) => RuleMatch { chain: c, rule: Some(i), policy: rules[i].policy },
            None => RuleMatch { chain: c, rule: None, policy: def },
        }
    }

    /// Parses a whole rule file (rules are appended in order; `default` lines set the
    /// chain default wherever they appear).
    pub fn parse(text: &str) -> Result<RuleTable, RuleError> {
        let mut t = RuleTable::default();
        for (i, line) in text.lines().enumerate() {
            t.parse_line(i + 1, line)?;
        }
        Ok(t)
    }

    /// Parses one line into this table; `line_no` is used in errors.
    pub fn parse_line(&mut self, line_no: usize, line: &str) -> Result<(), RuleError> {
        let line = line.split('#').next().unwrap_or("");
        let mut toks = line.split_whitespace().peekable();
        let err = |token: Option<&str>, expected: &'static str| RuleError { line: line_no, token: token.unwrap_or("").to_string(), expected };
        let Some(first) = toks.next() else { return Ok(()) };
        let chain = match first {
            "local" => Chain::Local,
            "remote" => Chain::Remote,
            other => return Err(err(Some(other), "`local` or `remote`")),
        };
        let second = toks.next();
        let policy = match second {
            Some("enable") => Policy::Enable,
            Some("disable") => Policy::Disable,
            Some("default") => {
                let p = match toks.next() {
                    Some("enable") => Policy::Enable,
                    Some("disable") => Policy::Disable,
                    t => return Err(err(t, "`enable` or `disable` after `default`")),
                };
                if let Some(extra) = toks.next() {
                    return Err(err(Some(extra), "end of line after a default policy"));
                }
                match chain {
                    Chain::Local => self.local_default = p,
                    Chain::Remote => self.remote_default = p,
                }
                return Ok(());
            }
            t => return Err(err(t, "`enable`, `disable` or `default`")),
        };
        let mut rule = Rule { chain, policy, net: None, ports: None };
        let mut any = false;
        if let Some(&tok) = toks.peek() {
            if tok != "port" {
                toks.next();
                if tok == "any" {
                    any = true;
                } else {
                    rule.net = Some(parse_net(tok).ok_or_else(|| err(Some(tok), "an IPv4 address, a subnet a.b.c.d/len (len 0-32), `any` or `port`"))?);
                }
            }
        }
        match toks.next() {
            None => {
                if rule.net.is_none() && !any {
                    return Err(err(None, "an address, a subnet, `any` or `port <n>[-<m>]`"));
                }
            }
            Some("port") => {
                let p = toks.next();
                rule.ports = Some(parse_ports(p.unwrap_or("")).ok_or_else(|| err(p, "a port 1-65535 or a range lo-hi with lo <= hi"))?);
            }
            Some(t) => return Err(err(Some(t), "`port` or end of line")),
        }
        if let Some(extra) = toks.next() {
            return Err(err(Some(extra), "end of line"));
        }
        self.push(rule);
        Ok(())
    }
}

impl fmt::Display for RuleTable {
    /// The table in rule syntax (re-parses to an equal table).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in self.local.iter().chain(self.remote.iter()) {
            writeln!(f, "{r}")?;
        }
        writeln!(f, "local default {}", self.local_default.name())?;
        writeln!(f, "remote default {}", self.remote_default.name())
    }
}

fn parse_net(s: &str) -> Option<(Ipv4Addr, u8)> {
    match s.split_once('/') {
        None => Some((s.parse().ok()?, 32)),
        Some((a, l)) => {
            let a: Ipv4Addr = a.parse().ok()?;
            let l: u8 = l.parse().ok()?;
            (l <= 32).then_some((a, l))
        }
    }
}

fn parse_ports(s: &str) -> Option<(u16, u16)> {
    let (lo, hi) = match s.split_once('-') {
        None => {
            let p: u16 = s.parse().ok()?;
            (p, p)
        }
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
    };
    (lo >= 1 && lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod test {
    use super::*;

    fn sa(s: &str) -> SocketAddrV4 {
        s.parse().unwrap()
    }

    #[test]
    fn address_rule_matches_host_only() {
        let t = RuleTable::parse("remote enable 128.4.30.25").unwrap();
        assert_eq!(t.lookup(Chain::Remote, sa("128.4.30.25:22")).rule, Some(0));
        assert_eq!(t.lookup(Chain::Remote, sa("128.4.30.25:22")).policy, Policy::Enable);
        let m = t.lookup(Chain::Remote, sa("128.4.30.26:22"));
        assert_eq!((m.rule, m.policy), (None, Policy::Disable));
    }

    #[test]
    fn subnet_rule_matches_prefix() {
        let t = RuleTable::parse("remote enable 10.1.1.0/24").unwrap();
        assert_eq!(t.lookup(Chain::Remote, sa("10.1.1.200:80")).policy, Policy::Enable);
        assert_eq!(t.lookup(Chain::Remote, sa("10.1.2.3:22")).policy, Policy::Disable);
        // host bits in the network are masked, as `route` does
        let t = RuleTable::parse("remote enable 10.1.1.77/24").unwrap();
        assert_eq!(t.lookup(Chain::Remote, sa("10.1.1.1:1")).policy, Policy::Enable);
        let t = RuleTable::parse("remote enable 0.0.0.0/0").unwrap();
        assert_eq!(t.lookup(Chain::Remote, sa("1.2.3.4:1")).policy, Policy::Enable);
    }

    #[test]
    fn port_rule_matches_any_address() {
        let t = RuleTable::parse("local disable port 22\nlocal default enable").unwrap();
        assert_eq!(t.lookup(Chain::Local, sa("0.0.0.0:22")).policy, Policy::Disable);
        assert_eq!(t.lookup(Chain::Local, sa("10.0.0.2:22")).policy, Policy::Disable);
        assert_eq!(t.lookup(Chain::Local, sa("10.0.0.2:80")), RuleMatch { chain: Chain::Local, rule: None, policy: Policy::Enable });
    }

    #[test]
    fn port_range_is_inclusive_and_combined_with_address() {
        let t = RuleTable::parse("remote enable 128.4.30.25 port 8000-9000").unwrap();
        for (a, want) in [("128.4.30.25:8000", true), ("128.4.30.25:9000", true), ("128.4.30.25:7999", false), ("128.4.30.25:9001", false), ("128.4.30.24:8500", false)] {
            assert_eq!(t.lookup(Chain::Remote, sa(a)).policy == Policy::Enable, want, "{a}");
        }
    }

    #[test]
    fn first_match_wins() {
        let t = RuleTable::parse("remote disable 10.1.1.5\nremote enable 10.1.1.0/24\nremote disable 10.1.0.0/16").unwrap();
        assert_eq!(t.lookup(Chain::Remote, sa("10.1.1.5:1")), RuleMatch { chain: Chain::Remote, rule: Some(0), policy: Policy::Disable });
        assert_eq!(t.lookup(Chain::Remote, sa("10.1.1.6:1")), RuleMatch { chain: Chain::Remote, rule: Some(1), policy: Policy::Enable });
        assert_eq!(t.lookup(Chain::Remote, sa("10.1.9.6:1")), RuleMatch { chain: Chain::Remote, rule: Some(2), policy: Policy::Disable });
    }

    #[test]
    fn defaults_per_chain() {
        let t = RuleTable::default();
        assert_eq!(t.lookup(Chain::Local, sa("0.0.0.0:80")).policy, Policy::Disable);
        assert_eq!(t.lookup(Chain::Remote, sa("1.1.1.1:80")).policy, Policy::Disable);
        let t = RuleTable::parse("remote default enable\nlocal default disable\nlocal enable any port 80").unwrap();
        assert_eq!(t.lookup(Chain::Remote, sa("1.1.1.1:80")), RuleMatch { chain: Chain::Remote, rule: None, policy: Policy::Enable });
        assert_eq!(t.lookup(Chain::Local, sa("0.0.0.0:81")).policy, Policy::Disable);
        assert_eq!(t.lookup(Chain::Local, sa("0.0.0.0:80")).rule, Some(0));
        // chains are independent: a local rule never decides a remote lookup
        assert_eq!(t.lookup(Chain::Remote, sa("0.0.0.0:80")).rule, None);
    }

    #[test]
    fn parse_errors_name_token_and_expectation() {
        let cases = [
            ("lokal enable any", "lokal", "`local` or `remote`"),
            ("remote enabel 10.0.0.1", "enabel", "`enable`, `disable` or `default`"),
            ("remote enable 10.0.0.300", "10.0.0.300", "an IPv4 address"),
            ("remote enable 10.0.0.0/33", "10.0.0.0/33", "an IPv4 address"),
            ("remote enable 10.0.0.1 port 9000-8000", "9000-8000", "a port"),
            ("remote enable 10.0.0.1 port", "", "a port"),
            ("remote enable 10.0.0.1 prot 80", "prot", "`port` or end of line"),
            ("remote default maybe", "maybe", "`enable` or `disable`"),
            ("remote enable", "", "an address"),
            ("local enable port 80 extra", "extra", "end of line"),
        ];
        for (i, (text, tok, exp)) in cases.iter().enumerate() {
            let src = format!("# header\n\n{text}");
            let e = RuleTable::parse(&src).unwrap_err();
            assert_eq!(e.line, 3, "case {i}");
            assert_eq!(e.token, *tok, "case {i}");
            assert!(e.expected.starts_with(exp), "case {i}: {}", e.expected);
            assert!(e.to_string().contains("line 3"), "{e}");
        }
    }

    #[test]
    fn display_round_trips() {
        let src = "remote enable 10.1.1.0/24\nremote enable 128.4.30.25 port 8000-9000\nlocal disable port 22\nlocal enable any\nremote default enable\n";
        let t = RuleTable::parse(src).unwrap();
        let again = RuleTable::parse(&t.to_string()).unwrap();
        assert_eq!(t, again);
        assert_eq!(t.chain(Chain::Remote)[1].to_string(), "remote enable 128.4.30.25 port 8000-9000");
    }
}
