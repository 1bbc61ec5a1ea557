//! Checks that catch wrong experiments before they run (issue 22): names that end up in
//! file paths, sysctl values as Linux reads them, and combinations that would otherwise be
//! silently ignored or only show up as an error code in a CSV.
//!
//! [`check`] runs from `Scenario::validate` (so `wirelab validate`, `run` and the Python
//! API all see it); [`ip_forward`] is what the builder uses to read that sysctl.
use crate::schema::{Cidr, EndpointSpec, S};
use crate::{Scenario, ScenarioError};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use wirelab_core::Duration;

/// The longest scenario: 2⁶² ns (about 146 years), leaving three quarters of the 64-bit
/// clock for timers that fire after the end (RTOs, TIME-WAIT) so none can overflow it.
pub const MAX_DURATION: Duration = Duration::from_nanos(1 << 62);

/// Runs every check of this module.
pub(crate) fn check(sc: &Scenario) -> Result<(), ScenarioError> {
    let d = &sc.doc;
    let dur = sc.duration()?;
    if dur > MAX_DURATION {
        return Err(sc.error_at(d.scenario.duration.span(), format!("duration must be at most {}s (about 146 years), got {dur}", MAX_DURATION.as_nanos() / 1_000_000_000)));
    }
    for n in &d.nodes {
        if n.name.get_ref().chars().any(|c| c.is_whitespace() || c.is_control()) || matches!(n.name.get_ref().as_str(), "." | "..") {
            return Err(sc.error_at(n.name.span(), "node names must be non-empty without ':', '/', whitespace or control characters, and not `.` or `..`"));
        }
        ip_forward(sc, n)?;
    }
    let ifaces = interfaces(sc)?;
    unique_addresses(sc, &ifaces)?;
    routes(sc, &ifaces)?;
    apps(sc)?;
    for e in &d.events {
        if let (Some(n), "down" | "up") = (&e.netem, e.action.get_ref().as_str()) {
            return Err(sc.error_at(n.span(), format!("`netem` is only used by action `netem`; an `{}` event would ignore it (give the new spec in a separate `netem` event)", e.action.get_ref())));
        }
    }
    Ok(())
}

/// Linux's `dev_valid_name()` (net/core/dev.c): 1..=15 bytes (`IFNAMSIZ` - 1), not `.` or
/// `..`, no `/`, `:` or whitespace. Interface names become parts of capture file names, so
/// this also keeps them inside the output directory.
pub fn valid_iface_name(name: &str) -> bool {
    !name.is_empty() && name.len() < 16 && name != "." && name != ".." && !name.bytes().any(|b| b == b'/' || b == b':' || b.is_ascii_whitespace() || b == 0x0b)
}

/// `net.ipv4.ip_forward` of node `n` as Linux reads it: `proc_dointvec` takes an integer
/// and forwarding is on for any non-zero value (`devinet_sysctl_forward()`); TOML booleans
/// count as 1 and 0, strings must hold an integer. `None` if not set.
pub(crate) fn ip_forward(sc: &Scenario, n: &crate::NodeSpec) -> Result<Option<bool>, ScenarioError> {
    let Some(v) = n.sysctl.get("net.ipv4.ip_forward") else { return Ok(None) };
    let bad = |got: String| sc.error_at(v.span(), format!("sysctl `net.ipv4.ip_forward`: expected an integer in -2147483648..=2147483647 (0 = off, any other value = on, as Linux's proc_dointvec) or true/false, got {got}"));
    let x: i64 = match v.get_ref() {
        toml::Value::Integer(i) => *i,
        toml::Value::Boolean(b) => *b as i64,
        toml::Value::String(s) => s.trim().parse::<i64>().map_err(|_| bad(format!("\"{s}\"")))?,
        other => return Err(bad(other.to_string())),
    };
    i32::try_from(x).map_err(|_| bad(x.to_string()))?;
    Ok(Some(x != 0))
}

/// One interface as the builder will create it.
pub(crate) struct Iface<'a> {
    pub node: usize,
    pub name: String,
    pub addr: Cidr,
    pub ep: &'a EndpointSpec,
}

/// Every interface with the name and address the builder gives it (`ethN` in link order
/// per node; `10.128+L/256.L%256.{1,2}/24` for link L without an address).
pub(crate) fn interfaces(sc: &Scenario) -> Result<Vec<Iface<'_>>, ScenarioError> {
    let d = &sc.doc;
    let mut count = vec![0u32; d.nodes.len()];
    let mut out = Vec::with_capacity(d.links.len() * 2);
    for (li, l) in d.links.iter().enumerate() {
        for (k, ep) in [&l.a, &l.b].into_iter().enumerate() {
            let node = sc.node_index(&ep.node)?;
            let name = match &ep.iface {
                Some(i) => {
                    if !valid_iface_name(i.get_ref()) {
                        return Err(sc.error_at(i.span(), format!("`{}` is not a valid interface name: 1 to 15 bytes, without '/', ':' or whitespace, not `.` or `..` (as Linux's dev_valid_name)", i.get_ref().escape_debug())));
                    }
                    i.get_ref().clone()
                }
                None => format!("eth{}", count[node]),
            };
            count[node] += 1;
            let addr = match &ep.addr {
                Some(a) => sc.cidr(a)?,
                None => Cidr { addr: Ipv4Addr::new(10, 128u8.wrapping_add((li / 256) as u8), (li % 256) as u8, 1 + k as u8), prefix: 24 },
            };
            out.push(Iface { node, name, addr, ep });
        }
    }
    Ok(out)
}

fn ep_span(ep: &EndpointSpec) -> core::ops::Range<usize> {
    ep.addr.as_ref().map(S::span).unwrap_or_else(|| ep.node.span())
}

/// No address on two nodes: packets to it would go to whichever the routes reach first.
fn unique_addresses(sc: &Scenario, ifaces: &[Iface]) -> Result<(), ScenarioError> {
    let mut seen: BTreeMap<Ipv4Addr, &Iface> = BTreeMap::new();
    for i in ifaces {
        if let Some(prev) = seen.get(&i.addr.addr) {
            if prev.node != i.node {
                let name = |n: usize| sc.doc.nodes[n].name.get_ref().as_str();
                let auto = |x: &Iface| if x.ep.addr.is_none() { ", automatic address" } else { "" };
                // 10.128+L/256 wraps past 10.255 (`as u8` in the builder) after 32768 links
                let hint = if i.ep.addr.is_none() && prev.ep.addr.is_none() { " (automatic addresses repeat after 32768 links: give these links an `addr`)" } else { "" };
                return Err(sc.error_at(
                    ep_span(i.ep),
                    format!("address {} (`{}` {}{}) is already on node `{}` ({}{}); one address cannot be on two nodes{hint}", i.addr.addr, name(i.node), i.name, auto(i), name(prev.node), prev.name, auto(prev)),
                ));
            }
        } else {
            seen.insert(i.addr.addr, i);
        }
    }
    Ok(())
}

/// A route's next hop must be a neighbour: on the subnet of the route's `dev` (or of some
/// interface of the node) and not the node's own address. Linux refuses both (`ip route
/// add … via X dev D`: "Nexthop has invalid gateway").
fn routes(sc: &Scenario, ifaces: &[Iface]) -> Result<(), ScenarioError> {
    for r in &sc.doc.routes {
        let (Some(via_s), Ok(node)) = (&r.via, sc.node_index(&r.node)) else { continue };
        let Ok(via) = via_s.get_ref().parse::<Ipv4Addr>() else { continue };
        let mine: Vec<&Iface> = ifaces.iter().filter(|i| i.node == node).collect();
        if mine.iter().any(|i| i.addr.addr == via) {
            return Err(sc.error_at(via_s.span(), format!("next hop {via} is an address of node `{}` itself", r.node.get_ref())));
        }
        match &r.dev {
            Some(dev) => {
                if let Some(i) = mine.iter().find(|i| &i.name == dev.get_ref()) {
                    if !i.addr.contains(via) {
                        return Err(sc.error_at(via_s.span(), format!("next hop {via} is not on the subnet of `{}` ({}/{}); Linux refuses such a route (\"Nexthop has invalid gateway\")", dev.get_ref(), i.addr.addr, i.addr.prefix)));
                    }
                }
            }
            None => {
                if !mine.iter().any(|i| i.addr.contains(via)) {
                    let nets: Vec<String> = mine.iter().map(|i| format!("{}/{}", Ipv4Addr::from(i.addr.network()), i.addr.prefix)).collect();
                    return Err(sc.error_at(via_s.span(), format!("next hop {via} is not on any subnet of node `{}` ({})", r.node.get_ref(), nets.join(", "))));
                }
            }
        }
    }
    Ok(())
}

/// Per-app checks: unique names, `preset` only where it means something, start before
/// stop, and one listener per (node, protocol, port), as `bind()` would insist.
fn apps(sc: &Scenario) -> Result<(), ScenarioError> {
    let d = &sc.doc;
    let mut names: BTreeMap<String, ()> = BTreeMap::new();
    let mut ports: BTreeMap<(usize, &str, u16), String> = BTreeMap::new();
    for (ai, a) in d.apps.iter().enumerate() {
        let kind = a.kind.get_ref().as_str();
        let name = a.name.as_ref().map(|n| n.get_ref().clone()).unwrap_or_else(|| format!("{kind}#{ai}"));
        if names.insert(name.clone(), ()).is_some() {
            let at = a.name.as_ref().map(S::span).unwrap_or_else(|| a.kind.span());
            return Err(sc.error_at(at, format!("duplicate app name `{name}`; outputs are keyed by app name")));
        }
        if let (Some(p), false) = (&a.preset, kind == "tcp-thin") {
            return Err(sc.error_at(p.span(), format!("key `preset` is only used by app kind `tcp-thin`, not `{kind}`")));
        }
        if let (Some(s), Some(e)) = (&a.start, &a.stop) {
            let (t0, t1) = (sc.time(s)?, sc.time(e)?);
            if t0 >= t1 {
                return Err(sc.error_at(e.span(), format!("stop ({t1}) must be after start ({t0})")));
            }
        }
        let Ok(node) = sc.node_index(&a.node) else { continue };
        let shim = d.nodes[node].shim.is_some();
        let protos: &[&str] = match kind {
            "tcp-sink" | "tcp-echo" if shim => &["TCP", "SCTP"], // a shim listens on both
            "tcp-sink" | "tcp-echo" => &["TCP"],
            "sctp-sink" | "sctp-echo" => &["SCTP"],
            "udp-sink" => &["UDP"],
            _ => &[],
        };
        let Some(port) = &a.port else { continue };
        for proto in protos {
            if let Some(other) = ports.insert((node, proto, *port.get_ref()), name.clone()) {
                return Err(sc.error_at(port.span(), format!("{proto} port {} on node `{}` is already taken by app `{other}` (bind() would fail with EADDRINUSE)", port.get_ref(), a.node.get_ref())));
            }
        }
    }
    Ok(())
}
