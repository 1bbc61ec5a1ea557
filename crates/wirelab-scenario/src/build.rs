//! Turns a validated [`Scenario`] into a runnable [`Sim`].
use crate::schema::{Cidr, EndpointHost, EndpointSpec, S};
use crate::{Scenario, ScenarioError};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use wirelab_core::{Duration, Instant};
use wirelab_link::NetemSpec;
use wirelab_sim::apps::tcp::ClientState;
use wirelab_sim::apps::{App, AppKind, Itt, SctpBulk, SctpServer, TcpBulk, TcpRr, TcpServer, TcpThin, UdpCbr, UdpSink};
use wirelab_sim::stack::StackConfig;
use wirelab_sim::capture::CaptureFormat;
use wirelab_sim::{Change, IfAddr, Sim};

/// Stack profiles this version knows (the TCP and SCTP engines define their constants).
pub const PROFILES: &[&str] = &["linux-6", "linux-4.6", "linux-3.14", "linux-2.6.37", "linux-2.2", "freebsd-4.10"];

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Overrides `scenario.seed`.
    pub seed: Option<u64>,
    /// Where captures go; `None` disables file captures.
    pub out_dir: Option<PathBuf>,
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
        for p in d.scenario.profile.iter().chain(d.nodes.iter().filter_map(|n| n.profile.as_ref())) {
            if !PROFILES.contains(&p.get_ref().as_str()) {
                return Err(self.error_at(span(p), format!("unknown profile `{}`; expected one of {}", p.get_ref(), PROFILES.join(", "))));
            }
        }
        for n in &d.nodes {
            let router = n.kind.as_ref().is_some_and(|k| k.get_ref() == "router");
            let profile = n.profile.as_ref().or(d.scenario.profile.as_ref()).map(|p| p.get_ref().as_str()).unwrap_or("linux-6");
            let mut stack = StackConfig::profile(profile).map_err(|e| {
                let at = n.profile.as_ref().or(d.scenario.profile.as_ref()).map(span).unwrap_or(span(&n.name));
                self.error_at(at, e)
            })?;
            for (k, v) in &n.sysctl {
                if k == "net.ipv4.ip_forward" {
                    continue;
                }
                let val = match v.get_ref() {
                    toml::Value::String(s) => s.clone(),
                    toml::Value::Integer(i) => i.to_string(),
                    toml::Value::Boolean(b) => (*b as u8).to_string(),
                    toml::Value::Array(a) if a.iter().all(|x| x.is_integer()) => a.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" "),
                    _ => return Err(self.error_at(v.span(), format!("sysctl `{k}`: expected a string, an integer or a list of integers"))),
                };
                stack.set_sysctl(k, &val).map_err(|e| self.error_at(v.span(), format!("sysctl `{k}`: {e}")))?;
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
            let fwd = n.sysctl.get("net.ipv4.ip_forward").map(|v| matches!(v.get_ref(), toml::Value::Integer(1)) || v.get_ref().as_str() == Some("1"));
            let id = sim.add_node(n.name.get_ref(), fwd.unwrap_or(router));
            sim.set_stack_config(id, stack);
        }
        // links
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
        // routes
        for r in &d.routes {
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
        sim.set_verify_checksums(!d.scenario.checksum_offload.unwrap_or(true));
        if d.scenario.auto_routes.unwrap_or(true) {
            sim.auto_routes();
        }
        // apps
        let end = Instant::ZERO + duration;
        for (ai, a) in d.apps.iter().enumerate() {
            let node = self.node_index(&a.node)? as u32;
            let name = a.name.as_ref().map(|n| n.get_ref().clone()).unwrap_or_else(|| format!("{}#{ai}", a.kind.get_ref()));
            let start = Instant::ZERO + a.start.as_ref().map(|s| self.time(s)).transpose()?.unwrap_or(Duration::ZERO);
            let stop = a.stop.as_ref().map(|s| self.time(s)).transpose()?.map(|d| Instant::ZERO + d).unwrap_or(end);
            let kind = match a.kind.get_ref().as_str() {
                "udp-cbr" => {
                    let dst_s = a.dst.as_ref().ok_or_else(|| self.error_at(span(&a.kind), "app `udp-cbr` needs `dst` (ADDR:PORT or NODE:PORT)"))?;
                    let dst = self.resolve(&sim, dst_s)?;
                    let size = a.size.as_ref().map(|s| *s.get_ref()).unwrap_or(1472);
                    if !(16..=65507).contains(&size) {
                        return Err(self.error_at(a.size.as_ref().unwrap().span(), "size must be 16..=65507 bytes (16 carry sequence number and send time)"));
                    }
                    let interval = match (&a.rate, &a.interval) {
                        (Some(r), None) => {
                            let bps = self.rate(r)?;
                            if bps == 0 {
                                return Err(self.error_at(span(r), "rate must be positive"));
                            }
                            Sim::cbr_interval(size, bps)
                        }
                        (None, Some(i)) => self.time(i)?,
                        (Some(r), Some(_)) => return Err(self.error_at(span(r), "give `rate` or `interval`, not both")),
                        (None, None) => return Err(self.error_at(span(&a.kind), "app `udp-cbr` needs `rate` or `interval`")),
                    };
                    if interval == Duration::ZERO {
                        return Err(self.error_at(span(&a.kind), "the datagram interval is zero"));
                    }
                    AppKind::UdpCbr(UdpCbr {
                        dst,
                        src_port: a.port.as_ref().map(|p| *p.get_ref()).unwrap_or(40000 + ai as u16),
                        payload: size,
                        interval,
                        start,
                        stop,
                        count: a.count.as_ref().map(|c| *c.get_ref()),
                        sent_pkts: 0,
                        sent_bytes: 0,
                        unroutable: 0,
                    })
                }
                "udp-sink" => {
                    let port = a.port.as_ref().ok_or_else(|| self.error_at(span(&a.kind), "app `udp-sink` needs `port`"))?;
                    AppKind::UdpSink(UdpSink { port: *port.get_ref(), ..Default::default() })
                }
                "tcp-bulk" | "tcp-file" => {
                    let kind = a.kind.get_ref().as_str();
                    let dst_s = a.dst.as_ref().ok_or_else(|| self.error_at(span(&a.kind), format!("app `{kind}` needs `dst` (ADDR:PORT or NODE:PORT)")))?;
                    let dst = self.resolve(&sim, dst_s)?;
                    let bytes = a.bytes.as_ref().map(|b| self.size(b)).transpose()?;
                    let file = kind == "tcp-file";
                    if file && bytes.is_none() {
                        return Err(self.error_at(span(&a.kind), "app `tcp-file` needs `bytes` (the file size, e.g. \"5MB\")"));
                    }
                    AppKind::TcpBulk(TcpBulk {
                        dst,
                        start,
                        stop: if a.stop.is_some() || bytes.is_none() { Some(stop) } else { None },
                        bytes,
                        write_size: self.positive_size(a.size.as_ref(), 131072)?,
                        opts: self.tcp_opts(a)?,
                        exchanges: if file { a.exchanges.as_ref().map(|e| *e.get_ref()).unwrap_or(4) } else { 0 },
                        exchange_size: 512,
                        dst_alt: match self.endpoint_addr(dst_s)?.0 {
                            EndpointHost::Node(i) => sim.node_addrs(i as u32).into_iter().filter(|a| a != dst.ip()).collect(),
                            EndpointHost::Addr(_) => Vec::new(),
                        },
                        state: ClientState::default(),
                    })
                }
                "tcp-sink" | "tcp-echo" => {
                    let kind = a.kind.get_ref().as_str();
                    let port = a.port.as_ref().ok_or_else(|| self.error_at(span(&a.kind), format!("app `{kind}` needs `port`")))?;
                    let mut srv = TcpServer::new(*port.get_ref());
                    srv.echo = kind == "tcp-echo";
                    srv.read_rate = a.read_rate.as_ref().map(|r| self.rate(r).map(|bps| bps / 8)).transpose()?;
                    srv.opts = self.tcp_opts(a)?;
                    AppKind::TcpServer(srv)
                }
                "tcp-rr" => {
                    let dst_s = a.dst.as_ref().ok_or_else(|| self.error_at(span(&a.kind), "app `tcp-rr` needs `dst` (the echo server, ADDR:PORT or NODE:PORT)"))?;
                    AppKind::TcpRr(TcpRr {
                        dst: self.resolve(&sim, dst_s)?,
                        start,
                        stop,
                        size: self.positive_size(a.size.as_ref(), 100)?,
                        interval: a.interval.as_ref().map(|i| self.time(i)).transpose()?.unwrap_or(Duration::ZERO),
                        opts: self.tcp_opts(a)?,
                        state: ClientState::default(),
                        req_start: None,
                        latencies: Vec::new(),
                        skipped: 0,
                    })
                }
                "tcp-thin" => {
                    let dst_s = a.dst.as_ref().ok_or_else(|| self.error_at(span(&a.kind), "app `tcp-thin` needs `dst` (ADDR:PORT or NODE:PORT)"))?;
                    let preset = match &a.preset {
                        Some(p) => Some(crate::THIN_PRESETS.iter().find(|x| x.0 == p.get_ref().as_str()).ok_or_else(|| {
                            let names: Vec<&str> = crate::THIN_PRESETS.iter().map(|x| x.0).collect();
                            self.error_at(span(p), format!("unknown thin-stream preset `{}` (available: {})", p.get_ref(), names.join(", ")))
                        })?),
                        None => None,
                    };
                    let itt_default = Duration::from_millis(preset.map_or(100, |x| x.2));
                    let itt_d = a.interval.as_ref().map(|i| self.time(i)).transpose()?.unwrap_or(itt_default);
                    if itt_d == Duration::ZERO {
                        return Err(self.error_at(span(a.interval.as_ref().unwrap()), "interval must be positive"));
                    }
                    let jitter = a.jitter.as_ref().map(|j| self.time(j)).transpose()?;
                    let itt = if let Some(list) = &a.replay {
                        let mut v = Vec::new();
                        for item in list {
                            let bad = || self.error_at(span(item), format!("`{}` is not GAP:BYTES like \"100ms:120\"", item.get_ref()));
                            let (g, b) = item.get_ref().split_once(':').ok_or_else(bad)?;
                            let gap = wirelab_core::units::parse_time(g).map_err(|_| bad())?;
                            let bytes: u32 = b.trim().parse().map_err(|_| bad())?;
                            if bytes == 0 || bytes > 65536 {
                                return Err(self.error_at(span(item), "write size must be 1..=65536 bytes"));
                            }
                            v.push((gap, bytes));
                        }
                        if v.is_empty() || v.iter().all(|(g, _)| *g == Duration::ZERO) {
                            return Err(self.error_at(span(&a.kind), "`replay` needs at least one write with a positive gap"));
                        }
                        Itt::Replay(v)
                    } else {
                        let dist = a.itt_dist.as_ref().map(|d| d.get_ref().as_str()).or(preset.map(|_| "exponential"));
                        match dist {
                            None | Some("fixed") | Some("uniform") => match jitter {
                                Some(j) if j > itt_d => return Err(self.error_at(span(a.jitter.as_ref().unwrap()), "jitter must not exceed the interval")),
                                Some(j) => Itt::Uniform(itt_d, j),
                                None => Itt::Fixed(itt_d),
                            },
                            Some("exponential") => Itt::Exponential(itt_d),
                            Some(other) => return Err(self.error_at(span(a.itt_dist.as_ref().unwrap()), format!("`{other}` is not fixed, uniform or exponential"))),
                        }
                    };
                    let mut opts = self.tcp_opts(a)?;
                    if a.nodelay.is_none() {
                        // thin-stream applications (games, VoIP, SSH) set TCP_NODELAY
                        opts.insert(0, wirelab_tcp::SockOpt::NoDelay(true));
                    }
                    let size = self.positive_size(a.size.as_ref(), preset.map_or(120, |x| x.1))?;
                    AppKind::TcpThin(TcpThin {
                        dst: self.resolve(&sim, dst_s)?,
                        start,
                        stop,
                        size,
                        itt,
                        opts,
                        state: ClientState::default(),
                        writes: 0,
                        blocked: 0,
                        replay_pos: 0,
                        size_next: size,
                        rng: wirelab_core::Rng::stream(seed, &format!("app/{name}/itt")),
                    })
                }
                "sctp-bulk" => {
                    let dst_s = a.dst.as_ref().ok_or_else(|| self.error_at(span(&a.kind), "app `sctp-bulk` needs `dst` (ADDR:PORT, or NODE:PORT for all of the node's addresses)"))?;
                    let (h, port) = self.endpoint_addr(dst_s)?;
                    let dst = match h {
                        EndpointHost::Addr(x) => vec![x],
                        EndpointHost::Node(i) => sim.node_addrs(i as u32),
                    };
                    if dst.is_empty() {
                        return Err(self.error_at(span(dst_s), "the destination node has no interfaces"));
                    }
                    let bytes = a.bytes.as_ref().map(|b| self.size(b)).transpose()?;
                    AppKind::SctpBulk(SctpBulk {
                        dst,
                        port,
                        single_homed: a.single_homed.unwrap_or(false),
                        start,
                        stop: if a.stop.is_some() || bytes.is_none() { Some(stop) } else { None },
                        bytes,
                        msg_size: self.positive_size(a.size.as_ref(), 65536)?,
                        streams: a.streams.as_ref().map(|x| *x.get_ref()).unwrap_or(1).max(1),
                        unordered: a.unordered.unwrap_or(false),
                        opts: self.sctp_opts(a)?,
                        st: Default::default(),
                    })
                }
                "sctp-sink" | "sctp-echo" => {
                    let kind = a.kind.get_ref().as_str();
                    let port = a.port.as_ref().ok_or_else(|| self.error_at(span(&a.kind), format!("app `{kind}` needs `port`")))?;
                    let mut srv = SctpServer::new(*port.get_ref());
                    srv.echo = kind == "sctp-echo";
                    srv.opts = self.sctp_opts(a)?;
                    AppKind::SctpServer(srv)
                }
                _ => unreachable!("validated"),
            };
            sim.add_app(App { name, node, kind }).map_err(|e| self.error_at(span(&a.node), e.0))?;
        }
        // events
        for e in &d.events {
            let at = Instant::ZERO + self.time(&e.at)?;
            let dirs = sim.link_dirs(e.link.get_ref());
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
        // measurement
        let mut captures = Vec::new();
        let format = match d.measure.capture_format.as_ref().map(|s| s.get_ref().as_str()) {
            Some("pcapng") => CaptureFormat::Pcapng,
            _ => CaptureFormat::Pcap,
        };
        for c in &d.measure.capture {
            for (n, i) in self.ifaces_of(&sim, c)? {
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
            for (n, i) in self.ifaces_of(&sim, c)? {
                sim.probe_queue(n, i);
            }
        }
        Ok(Built { sim, duration, seed, captures })
    }

    fn positive_size(&self, v: Option<&toml::Spanned<u32>>, default: u32) -> Result<u32, ScenarioError> {
        match v {
            None => Ok(default),
            Some(x) if *x.get_ref() == 0 => Err(self.error_at(x.span(), "size must be positive")),
            Some(x) if *x.get_ref() > 65536 => Err(self.error_at(x.span(), "size must be at most 65536 bytes")),
            Some(x) => Ok(*x.get_ref()),
        }
    }

    fn size_u32(&self, s: &S) -> Result<u32, ScenarioError> {
        let v = self.size(s)?;
        u32::try_from(v).map_err(|_| self.error_at(span(s), "value too large (at most 4 GiB)"))
    }

    /// Socket options of a TCP app, in the order a program would set them.
    fn tcp_opts(&self, a: &crate::schema::AppSpec) -> Result<Vec<wirelab_tcp::SockOpt>, ScenarioError> {
        use wirelab_tcp::SockOpt;
        let mut o = Vec::new();
        if let Some(c) = &a.cc {
            if !matches!(c.get_ref().as_str(), "cubic" | "reno" | "newreno") {
                return Err(self.error_at(span(c), format!("unknown congestion control `{}`; expected cubic or reno", c.get_ref())));
            }
            o.push(SockOpt::Congestion(c.get_ref().clone()));
        }
        if let Some(v) = a.nodelay {
            o.push(SockOpt::NoDelay(v));
        }
        if let Some(v) = &a.sndbuf {
            o.push(SockOpt::SndBuf(self.size_u32(v)?));
        }
        if let Some(v) = &a.rcvbuf {
            o.push(SockOpt::RcvBuf(self.size_u32(v)?));
        }
        if let Some(v) = &a.window_clamp {
            o.push(SockOpt::WindowClamp(self.size_u32(v)?));
        }
        if let Some(v) = &a.tos {
            o.push(SockOpt::Tos(*v.get_ref()));
        }
        if let Some(v) = &a.mss {
            if *v.get_ref() < 88 {
                return Err(self.error_at(v.span(), "mss must be at least 88 bytes (TCP_MIN_MSS)"));
            }
            o.push(SockOpt::MaxSeg(*v.get_ref()));
        }
        Ok(o)
    }

    /// Socket options of an SCTP app.
    fn sctp_opts(&self, a: &crate::schema::AppSpec) -> Result<Vec<wirelab_sctp::SockOpt>, ScenarioError> {
        use wirelab_sctp::SockOpt;
        let mut o = Vec::new();
        if let Some(v) = a.nodelay {
            o.push(SockOpt::NoDelay(v));
        }
        if let Some(v) = &a.sndbuf {
            o.push(SockOpt::SndBuf(self.size_u32(v)?));
        }
        if let Some(v) = &a.rcvbuf {
            o.push(SockOpt::RcvBuf(self.size_u32(v)?));
        }
        if let Some(v) = &a.cmt {
            if wirelab_sctp::Cmt::from_value(*v.get_ref()).is_none() {
                return Err(self.error_at(v.span(), format!("cmt = {} is out of range 0..=4 (0 off, 1 CMT, 2 RPv1, 3 RPv2, 4 MPTCP-like)", v.get_ref())));
            }
            o.push(SockOpt::CmtOnOff(*v.get_ref()));
        }
        Ok(o)
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

    fn resolve(&self, sim: &Sim, s: &S) -> Result<SocketAddrV4, ScenarioError> {
        let (h, port) = self.endpoint_addr(s)?;
        let addr = match h {
            EndpointHost::Addr(a) => a,
            EndpointHost::Node(i) => sim
                .primary_addr(i as u32)
                .ok_or_else(|| self.error_at(span(s), format!("node `{}` has no interfaces", self.doc.nodes[i].name.get_ref())))?,
        };
        Ok(SocketAddrV4::new(addr, port))
    }
}

/// `DIR/pcap/NODE-IFACE.EXT`.
pub fn capture_path(dir: &Path, node: &str, iface: &str, ext: &str) -> PathBuf {
    dir.join("pcap").join(format!("{node}-{iface}.{ext}"))
}

#[allow(dead_code)]
fn _cidr_unused(_: Cidr) {}
