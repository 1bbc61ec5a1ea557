//! Turns a validated [`Scenario`] into a runnable [`Sim`], one section at a time, in the
//! file's order: nodes (profile, sysctls, shim rules), links (addresses, qdiscs, netem),
//! routes, applications (one conversion per kind, in [`apps`]), events, measurement.
//! Every error points at the value that caused it.
use crate::schema::{EndpointSpec, NodeSpec, S};
use crate::{Scenario, ScenarioError};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use wirelab_core::{Duration, Instant};
use wirelab_link::NetemSpec;
use wirelab_sim::stack::StackConfig;
use wirelab_sim::capture::CaptureFormat;
use wirelab_sim::{Change, IfAddr, Sim};

mod apps;

pub use crate::sysctl::PROFILES;

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Overrides `scenario.seed`.
    pub seed: Option<u64>,
    /// Where captures go; `None` disables file captures.
    pub out_dir: Option<PathBuf>,
    /// Building for the live driver (`wirelab live`): `tun` nodes become external nodes.
    /// Without it a scenario with `tun` nodes is an error.
    pub live: bool,
}

/// A built simulation and what is needed to run it.
pub struct Built {
    /// The simulation.
    pub sim: Sim,
    /// How long to run.
    pub duration: Duration,
    /// The seed in use.
    pub seed: u64,
    /// Capture files written.
    pub captures: Vec<PathBuf>,
}

fn span(s: &S) -> core::ops::Range<usize> {
    s.span()
}

impl Scenario {
    fn netem(&self, s: Option<&S>) -> Result<NetemSpec, ScenarioError> {
        match s {
            None => NetemSpec::parse("").map_err(|e| ScenarioError { file: self.file.clone(), line: 0, col: 0, key: String::new(), message: e.to_string() }),
            Some(s) => NetemSpec::parse(s.get_ref()).map_err(|e| self.error_at(span(s), format!("netem: {e}"))),
        }
    }

    fn qdisc(&self, ep: &EndpointSpec, seed: u64, name: &str) -> Result<Box<dyn wirelab_qdisc::Qdisc>, ScenarioError> {
        if let Some(q) = &ep.qdisc {
            return crate::tc::build_short(q.get_ref(), seed, name).map_err(|e| self.error_at(span(q), format!("qdisc: {e}")));
        }
        if !ep.tc.is_empty() {
            let lines: Vec<&str> = ep.tc.iter().map(|s| s.get_ref().as_str()).collect();
            return crate::tc::build_lines(&lines, seed, name).map_err(|(i, e)| self.error_at(span(&ep.tc[i.min(ep.tc.len() - 1)]), format!("tc: {e}")));
        }
        crate::tc::build_short("pfifo_fast", seed, name).map_err(|e| ScenarioError { file: self.file.clone(), line: 0, col: 0, key: String::new(), message: e })
    }

    /// Builds the simulation.
    pub fn build(&self, opts: &BuildOptions) -> Result<Built, ScenarioError> {
        let d = &self.doc;
        let seed = opts.seed.or(d.scenario.seed).unwrap_or(1);
        let duration = self.duration()?;
        let mut sim = Sim::new(seed);
        if let Some(si) = &d.measure.sample_interval {
            sim.set_sample_interval(self.time(si)?);
        }
        self.check_profiles()?;
        for n in &d.nodes {
            if Self::is_tun(n) {
                if !opts.live {
                    return Err(self.error_at(span(n.kind.as_ref().unwrap_or(&n.name)), format!("node `{}` is a `tun` node: run this scenario with `wirelab live` (root or CAP_NET_ADMIN)", n.name.get_ref())));
                }
                // the kernel behind the TUN interface is the node's stack; its sysctls are
                // the live driver's to apply in the namespace
                let id = sim.add_node(n.name.get_ref(), false);
                sim.set_external(id);
                continue;
            }
            let stack = self.node_stack(n)?;
            let router = n.kind.as_ref().is_some_and(|k| k.get_ref() == "router");
            let fwd = crate::validate::ip_forward(self, n)?;
            let id = sim.add_node(n.name.get_ref(), fwd.unwrap_or(router));
            sim.set_stack_config(id, stack);
        }
        self.build_links(&mut sim, seed)?;
        self.build_routes(&mut sim)?;
        sim.set_verify_checksums(!d.scenario.checksum_offload.unwrap_or(true));
        if d.scenario.auto_routes.unwrap_or(true) {
            sim.auto_routes();
        }
        self.build_apps(&mut sim, seed, duration)?;
        self.build_events(&mut sim)?;
        let captures = self.build_measure(&mut sim, opts)?;
        Ok(Built { sim, duration, seed, captures })
    }

    /// Every profile named (scenario-wide or per node) is one this version knows.
    fn check_profiles(&self) -> Result<(), ScenarioError> {
        let d = &self.doc;
        for p in d.scenario.profile.iter().chain(d.nodes.iter().filter_map(|n| n.profile.as_ref())) {
            if !PROFILES.contains(&p.get_ref().as_str()) {
                return Err(self.error_at(span(p), format!("unknown profile `{}`; expected one of {}", p.get_ref(), PROFILES.join(", "))));
            }
        }
        Ok(())
    }

    /// A node's transport configuration: its profile, then its sysctls in file order,
    /// then its shim rules.
    fn node_stack(&self, n: &NodeSpec) -> Result<StackConfig, ScenarioError> {
        let d = &self.doc;
        let profile = n.profile.as_ref().or(d.scenario.profile.as_ref()).map(|p| p.get_ref().as_str()).unwrap_or("linux-6");
        let mut stack = crate::sysctl::stack_profile(profile).map_err(|e| {
            let at = n.profile.as_ref().or(d.scenario.profile.as_ref()).map(span).unwrap_or(span(&n.name));
            self.error_at(at, e)
        })?;
        for (k, v) in &n.sysctl {
            if k == crate::sysctl::IP_FORWARD {
                continue;
            }
            let val = crate::sysctl::sysctl_text(v.get_ref())
                .ok_or_else(|| self.error_at(v.span(), format!("sysctl `{k}`: expected a string, an integer or a list of integers")))?;
            crate::sysctl::apply_sysctl(&mut stack, k, &val).map_err(|e| self.error_at(v.span(), format!("sysctl `{k}`: {e}")))?;
        }
        if let Some(lines) = &n.shim {
            let mut rules = wirelab_shim::RuleTable::default();
            for (i, l) in lines.iter().enumerate() {
                rules.parse_line(i + 1, l.get_ref()).map_err(|e| self.error_at(span(l), format!("shim rule: {e}")))?;
            }
            let mut cfg = wirelab_shim::ShimConfig { rules, ..Default::default() };
            if let Some(f) = &n.shim_fallback {
                cfg.fallback.timeout = match f.get_ref().as_str() {
                    "off" | "none" => None,
                    _ => Some(self.time(f)?),
                };
            }
            stack.shim = Some(cfg);
        } else if let Some(f) = &n.shim_fallback {
            return Err(self.error_at(span(f), "`shim_fallback` needs `shim` rules on the same node"));
        }
        Ok(stack)
    }

    /// Point-to-point links: interface names and addresses (defaults `ethN` and
    /// 10.128+.x.1/2), each end's root qdisc and netem spec.
    fn build_links(&self, sim: &mut Sim, seed: u64) -> Result<(), ScenarioError> {
        let d = &self.doc;
        let mut iface_count = vec![0u32; d.nodes.len()];
        for (li, l) in d.links.iter().enumerate() {
            let name = self.link_name(li);
            let shared = self.netem(l.netem.as_ref())?;
            let mut ends = Vec::new();
            for (k, ep) in [&l.a, &l.b].into_iter().enumerate() {
                let n = self.node_index(&ep.node)?;
                let iname = match &ep.iface {
                    Some(i) => i.get_ref().clone(),
                    None => format!("eth{}", iface_count[n]),
                };
                iface_count[n] += 1;
                let addr = match &ep.addr {
                    Some(a) => {
                        let c = self.cidr(a)?;
                        IfAddr { addr: c.addr, prefix: c.prefix }
                    }
                    None => IfAddr { addr: Ipv4Addr::new(10, 128 + (li / 256) as u8, (li % 256) as u8, 1 + k as u8), prefix: 24 },
                };
                let spec = match &ep.netem {
                    Some(s) => self.netem(Some(s))?,
                    None => shared.clone(),
                };
                let q = self.qdisc(ep, seed, &format!("{}:{}", ep.node.get_ref(), iname))?;
                ends.push((n as u32, iname, addr, q, spec));
            }
            let b = ends.pop().unwrap();
            let a = ends.pop().unwrap();
            if a.2.network() == b.2.network() && a.2.prefix == b.2.prefix {
                if a.2.addr == b.2.addr {
                    return Err(self.error_at(l.b.addr.as_ref().map(span).unwrap_or(span(&l.b.node)), "both ends of a link have the same address"));
                }
            } else {
                return Err(self.error_at(l.b.addr.as_ref().map(span).unwrap_or(span(&l.b.node)), format!("the ends of link `{name}` are on different subnets ({}/{} and {}/{})", a.2.addr, a.2.prefix, b.2.addr, b.2.prefix)));
            }
            sim.add_link(&name, (a.0, &a.1, a.2, a.3, a.4), (b.0, &b.1, b.2, b.3, b.4), l.l2_overhead.unwrap_or(14))
                .map_err(|e| self.error_at(span(&l.a.node), e.0))?;
        }
        Ok(())
    }

    /// Static routes (`ip route add DST via GW dev IFACE`).
    fn build_routes(&self, sim: &mut Sim) -> Result<(), ScenarioError> {
        for r in &self.doc.routes {
            let n = self.node_index(&r.node)? as u32;
            let (net, len) = if r.dst.get_ref() == "default" {
                (Ipv4Addr::UNSPECIFIED, 0)
            } else {
                let c = self.cidr(&r.dst)?;
                (c.addr, c.prefix)
            };
            let via: Option<Ipv4Addr> = r.via.as_ref().map(|v| v.get_ref().parse().unwrap_or(Ipv4Addr::UNSPECIFIED));
            let iface = match (&r.dev, via) {
                (Some(dev), _) => sim.iface_id(n, dev.get_ref()).ok_or_else(|| {
                    self.error_at(span(dev), format!("node `{}` has no interface `{}` (it has: {})", r.node.get_ref(), dev.get_ref(), sim.iface_names(n).join(", ")))
                })?,
                (None, Some(v)) => sim.iface_towards(n, v).ok_or_else(|| {
                    self.error_at(span(r.via.as_ref().unwrap()), format!("next hop {v} is not on any subnet of node `{}`", r.node.get_ref()))
                })?,
                (None, None) => unreachable!("validated"),
            };
            sim.add_route(n, net, len, iface, via);
        }
        Ok(())
    }

    /// Scheduled link changes (`down`, `up`, a new netem spec) and applications'
    /// `setsockopt()` calls.
    fn build_events(&self, sim: &mut Sim) -> Result<(), ScenarioError> {
        for e in &self.doc.events {
            let at = Instant::ZERO + self.time(&e.at)?;
            if e.action.get_ref() == "setsockopt" {
                let app = self.app_index(e.app.as_ref().expect("validated"))? as u32;
                let mut opts = Vec::new();
                if let Some(m) = &e.mss {
                    opts.push(wirelab_tcp::SockOpt::MaxSeg(*m.get_ref()));
                }
                if let Some(v) = e.nodelay {
                    opts.push(wirelab_tcp::SockOpt::NoDelay(v));
                }
                if let Some(w) = &e.window_clamp {
                    opts.push(wirelab_tcp::SockOpt::WindowClamp(self.size_u32(w)?));
                }
                if let Some(v) = e.midstream_mss {
                    opts.push(wirelab_tcp::SockOpt::MidstreamMss(v));
                }
                for opt in opts {
                    sim.schedule(at, Change::SockOpt { app, opt });
                }
                continue;
            }
            let dirs = sim.link_dirs(e.link.as_ref().expect("validated").get_ref());
            let which: Vec<u32> = match e.direction.as_ref().map(|s| s.get_ref().as_str()).unwrap_or("both") {
                "ab" => vec![dirs[0]],
                "ba" => vec![dirs[1]],
                _ => dirs.clone(),
            };
            for dir in which {
                let c = match e.action.get_ref().as_str() {
                    "down" => Change::SetUp { dir, up: false },
                    "up" => Change::SetUp { dir, up: true },
                    _ => Change::SetSpec { dir, spec: self.netem(e.netem.as_ref())? },
                };
                sim.schedule(at, c);
            }
        }
        Ok(())
    }

    /// Captures (files under `out_dir/pcap/`) and queue probes; returns the capture paths.
    fn build_measure(&self, sim: &mut Sim, opts: &BuildOptions) -> Result<Vec<PathBuf>, ScenarioError> {
        let d = &self.doc;
        let mut captures = Vec::new();
        let format = match d.measure.capture_format.as_ref().map(|s| s.get_ref().as_str()) {
            Some("pcapng") => CaptureFormat::Pcapng,
            _ => CaptureFormat::Pcap,
        };
        for c in &d.measure.capture {
            for (n, i) in self.ifaces_of(sim, c)? {
                if let Some(dir) = &opts.out_dir {
                    let ext = if format == CaptureFormat::Pcapng { "pcapng" } else { "pcap" };
                    let path = capture_path(dir, sim.node_name(n), &sim.iface_names(n)[i as usize], ext);
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent).map_err(|e| self.error_at(span(c), format!("cannot create {}: {e}", parent.display())))?;
                    }
                    sim.capture_file(n, i, &path, format).map_err(|e| self.error_at(span(c), format!("cannot create {}: {e}", path.display())))?;
                    captures.push(path);
                }
            }
        }
        for c in &d.measure.queue_probe {
            for (n, i) in self.ifaces_of(sim, c)? {
                sim.probe_queue(n, i);
            }
        }
        Ok(captures)
    }

    fn ifaces_of(&self, sim: &Sim, c: &S) -> Result<Vec<(u32, u32)>, ScenarioError> {
        let (node, iface) = match c.get_ref().split_once(':') {
            Some((n, i)) => (n, Some(i)),
            None => (c.get_ref().as_str(), None),
        };
        let n = sim.node_id(node).ok_or_else(|| self.error_at(span(c), format!("no node named `{node}`")))?;
        match iface {
            None => Ok((0..sim.iface_names(n).len() as u32).map(|i| (n, i)).collect()),
            Some(i) => {
                let idx = sim.iface_id(n, i).ok_or_else(|| self.error_at(span(c), format!("node `{node}` has no interface `{i}` (it has: {})", sim.iface_names(n).join(", "))))?;
                Ok(vec![(n, idx)])
            }
        }
    }
}

/// `DIR/pcap/NODE-IFACE.EXT`.
pub fn capture_path(dir: &Path, node: &str, iface: &str, ext: &str) -> PathBuf {
    dir.join("pcap").join(format!("{node}-{iface}.{ext}"))
}

