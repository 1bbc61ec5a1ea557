//! `[[app]]` sections: one conversion per application kind, from the section's keys to a
//! [`wirelab_apps::AppConfig`]. The common keys (`node`, `name`, `start`, `stop`) are read
//! once in [`Scenario::build_apps`].
use super::span;
use crate::schema::{AppSpec, EndpointHost, S};
use crate::{Scenario, ScenarioError};
use std::net::SocketAddrV4;
use wirelab_apps::{App, AppConfig, Itt, SctpBulkConfig, SctpServerConfig, TcpBulkConfig, TcpRrConfig, TcpServerConfig, TcpThinConfig, UdpCbrConfig, UdpSinkConfig};
use wirelab_core::{Duration, Instant};
use wirelab_sim::Sim;

/// The keys every application kind shares, resolved.
struct Common<'a> {
    /// The section.
    a: &'a AppSpec,
    /// Its index among the `[[app]]` sections.
    index: usize,
    /// `start` (default: time zero).
    start: Instant,
    /// `stop` (default: the end of the run).
    stop: Instant,
}

impl Scenario {
    /// Adds every application, in file order.
    pub(super) fn build_apps(&self, sim: &mut Sim, seed: u64, duration: Duration) -> Result<(), ScenarioError> {
        let end = Instant::ZERO + duration;
        for (ai, a) in self.doc.apps.iter().enumerate() {
            let node = self.node_index(&a.node)? as u32;
            if Self::is_tun(&self.doc.nodes[node as usize]) {
                return Err(self.error_at(span(&a.node), format!("node `{}` is a `tun` node: its applications are real programs (`run`/`spawn` on the node), not `[[app]]`s", a.node.get_ref())));
            }
            let name = a.name.as_ref().map(|n| n.get_ref().clone()).unwrap_or_else(|| format!("{}#{ai}", a.kind.get_ref()));
            let start = Instant::ZERO + a.start.as_ref().map(|s| self.time(s)).transpose()?.unwrap_or(Duration::ZERO);
            let stop = a.stop.as_ref().map(|s| self.time(s)).transpose()?.map(|d| Instant::ZERO + d).unwrap_or(end);
            let c = Common { a, index: ai, start, stop };
            let cfg = self.app_config(sim, &c)?;
            sim.add_app(App::new(name, node, cfg, seed)).map_err(|e| self.error_at(span(&a.node), e.0))?;
        }
        Ok(())
    }

    /// The conversion for the section's `kind`.
    fn app_config(&self, sim: &Sim, c: &Common) -> Result<AppConfig, ScenarioError> {
        let kind = c.a.kind.get_ref().as_str();
        if let (true, Some((k, v))) = (kind.starts_with("udp"), c.a.sysctl.iter().next()) {
            return Err(self.error_at(v.span(), format!("sysctl `{k}`: per-app sysctls are TCP socket options; a `{kind}` app has no TCP socket")));
        }
        Ok(match kind {
            "udp-cbr" => AppConfig::UdpCbr(self.udp_cbr(sim, c)?),
            "udp-sink" => AppConfig::UdpSink(UdpSinkConfig { port: *self.need(c.a, c.a.port.as_ref(), "port")?.get_ref() }),
            "tcp-bulk" | "tcp-file" => AppConfig::TcpBulk(self.tcp_bulk(sim, c, kind == "tcp-file")?),
            "tcp-sink" | "tcp-echo" => AppConfig::TcpServer(self.tcp_server(c, kind == "tcp-echo")?),
            "tcp-rr" => AppConfig::TcpRr(self.tcp_rr(sim, c)?),
            "tcp-thin" => AppConfig::TcpThin(self.tcp_thin(sim, c)?),
            "sctp-bulk" => AppConfig::SctpBulk(self.sctp_bulk(sim, c)?),
            "sctp-sink" | "sctp-echo" => {
                let port = *self.need(c.a, c.a.port.as_ref(), "port")?.get_ref();
                AppConfig::SctpServer(SctpServerConfig { port, echo: kind == "sctp-echo", opts: self.sctp_opts(c.a)? })
            }
            _ => unreachable!("validated"),
        })
    }

    /// A key the kind requires, or an error at `kind` naming it.
    fn need<'v, T>(&self, a: &AppSpec, v: Option<&'v T>, what: &str) -> Result<&'v T, ScenarioError> {
        v.ok_or_else(|| self.error_at(span(&a.kind), format!("app `{}` needs `{what}`", a.kind.get_ref())))
    }

    /// The destination of a client (`dst`, ADDR:PORT or NODE:PORT).
    fn dst_of<'v>(&self, a: &'v AppSpec, what: &str) -> Result<&'v S, ScenarioError> {
        a.dst.as_ref().ok_or_else(|| self.error_at(span(&a.kind), format!("app `{}` needs `dst` ({what})", a.kind.get_ref())))
    }

    fn udp_cbr(&self, sim: &Sim, c: &Common) -> Result<UdpCbrConfig, ScenarioError> {
        let a = c.a;
        let dst = self.resolve(sim, self.dst_of(a, "ADDR:PORT or NODE:PORT")?)?;
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
                UdpCbrConfig::interval_for(size, bps)
            }
            (None, Some(i)) => self.time(i)?,
            (Some(r), Some(_)) => return Err(self.error_at(span(r), "give `rate` or `interval`, not both")),
            (None, None) => return Err(self.error_at(span(&a.kind), "app `udp-cbr` needs `rate` or `interval`")),
        };
        if interval == Duration::ZERO {
            return Err(self.error_at(span(&a.kind), "the datagram interval is zero"));
        }
        Ok(UdpCbrConfig {
            dst,
            src_port: a.port.as_ref().map(|p| *p.get_ref()).unwrap_or(40000 + c.index as u16),
            payload: size,
            interval,
            start: c.start,
            stop: c.stop,
            count: a.count.as_ref().map(|c| *c.get_ref()),
        })
    }

    fn tcp_bulk(&self, sim: &Sim, c: &Common, file: bool) -> Result<TcpBulkConfig, ScenarioError> {
        let a = c.a;
        let dst_s = self.dst_of(a, "ADDR:PORT or NODE:PORT")?;
        let dst = self.resolve(sim, dst_s)?;
        let bytes = a.bytes.as_ref().map(|b| self.size(b)).transpose()?;
        if file && bytes.is_none() {
            return Err(self.error_at(span(&a.kind), "app `tcp-file` needs `bytes` (the file size, e.g. \"5MB\")"));
        }
        Ok(TcpBulkConfig {
            dst,
            start: c.start,
            stop: if a.stop.is_some() || bytes.is_none() { Some(c.stop) } else { None },
            bytes,
            write_size: self.positive_size(a.size.as_ref(), 131072)?,
            opts: self.tcp_opts(a)?,
            exchanges: if file { a.exchanges.as_ref().map(|e| *e.get_ref()).unwrap_or(4) } else { 0 },
            exchange_size: 512,
            dst_alt: match self.endpoint_addr(dst_s)?.0 {
                EndpointHost::Node(i) => sim.node_addrs(i as u32).into_iter().filter(|a| a != dst.ip()).collect(),
                EndpointHost::Addr(_) => Vec::new(),
            },
            sha256: a.sha256.unwrap_or(false),
        })
    }

    fn tcp_server(&self, c: &Common, echo: bool) -> Result<TcpServerConfig, ScenarioError> {
        let a = c.a;
        Ok(TcpServerConfig {
            port: *self.need(a, a.port.as_ref(), "port")?.get_ref(),
            echo,
            read_rate: a.read_rate.as_ref().map(|r| self.rate(r).map(|bps| bps / 8)).transpose()?,
            backlog: 128,
            opts: self.tcp_opts(a)?,
            sha256: a.sha256.unwrap_or(false),
        })
    }

    fn tcp_rr(&self, sim: &Sim, c: &Common) -> Result<TcpRrConfig, ScenarioError> {
        let a = c.a;
        Ok(TcpRrConfig {
            dst: self.resolve(sim, self.dst_of(a, "the echo server, ADDR:PORT or NODE:PORT")?)?,
            start: c.start,
            stop: c.stop,
            size: self.positive_size(a.size.as_ref(), 100)?,
            interval: a.interval.as_ref().map(|i| self.time(i)).transpose()?.unwrap_or(Duration::ZERO),
            opts: self.tcp_opts(a)?,
        })
    }

    fn tcp_thin(&self, sim: &Sim, c: &Common) -> Result<TcpThinConfig, ScenarioError> {
        let a = c.a;
        let dst_s = self.dst_of(a, "ADDR:PORT or NODE:PORT")?;
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
        let itt = match &a.replay {
            Some(list) => self.thin_replay(a, list)?,
            None => self.thin_itt(a, itt_d, preset.is_some())?,
        };
        let mut opts = self.tcp_opts(a)?;
        if a.nodelay.is_none() {
            // thin-stream applications (games, VoIP, SSH) set TCP_NODELAY
            opts.insert(0, wirelab_tcp::SockOpt::NoDelay(true));
        }
        let size = self.positive_size(a.size.as_ref(), preset.map_or(120, |x| x.1))?;
        Ok(TcpThinConfig { dst: self.resolve(sim, dst_s)?, start: c.start, stop: c.stop, size, itt, opts })
    }

    /// `replay = ["GAP:BYTES", ...]`.
    fn thin_replay(&self, a: &AppSpec, list: &[S]) -> Result<Itt, ScenarioError> {
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
        Ok(Itt::Replay(v))
    }

    /// `itt_dist` with `interval` and `jitter` (a preset defaults to exponential).
    fn thin_itt(&self, a: &AppSpec, itt_d: Duration, preset: bool) -> Result<Itt, ScenarioError> {
        let jitter = a.jitter.as_ref().map(|j| self.time(j)).transpose()?;
        let dist = a.itt_dist.as_ref().map(|d| d.get_ref().as_str()).or(preset.then_some("exponential"));
        Ok(match dist {
            None | Some("fixed") | Some("uniform") => match jitter {
                Some(j) if j > itt_d => return Err(self.error_at(span(a.jitter.as_ref().unwrap()), "jitter must not exceed the interval")),
                Some(j) => Itt::Uniform(itt_d, j),
                None => Itt::Fixed(itt_d),
            },
            Some("exponential") => Itt::Exponential(itt_d),
            Some(other) => return Err(self.error_at(span(a.itt_dist.as_ref().unwrap()), format!("`{other}` is not fixed, uniform or exponential"))),
        })
    }

    fn sctp_bulk(&self, sim: &Sim, c: &Common) -> Result<SctpBulkConfig, ScenarioError> {
        let a = c.a;
        let dst_s = self.dst_of(a, "ADDR:PORT, or NODE:PORT for all of the node's addresses")?;
        let (h, port) = self.endpoint_addr(dst_s)?;
        let dst = match h {
            EndpointHost::Addr(x) => vec![x],
            EndpointHost::Node(i) => sim.node_addrs(i as u32),
        };
        if dst.is_empty() {
            return Err(self.error_at(span(dst_s), "the destination node has no interfaces"));
        }
        let bytes = a.bytes.as_ref().map(|b| self.size(b)).transpose()?;
        Ok(SctpBulkConfig {
            dst,
            port,
            single_homed: a.single_homed.unwrap_or(false),
            start: c.start,
            stop: if a.stop.is_some() || bytes.is_none() { Some(c.stop) } else { None },
            bytes,
            msg_size: self.positive_size(a.size.as_ref(), 65536)?,
            streams: a.streams.as_ref().map(|x| *x.get_ref()).unwrap_or(1).max(1),
            unordered: a.unordered.unwrap_or(false),
            opts: self.sctp_opts(a)?,
        })
    }

    fn positive_size(&self, v: Option<&toml::Spanned<u32>>, default: u32) -> Result<u32, ScenarioError> {
        match v {
            None => Ok(default),
            Some(x) if *x.get_ref() == 0 => Err(self.error_at(x.span(), "size must be positive")),
            Some(x) if *x.get_ref() > 65536 => Err(self.error_at(x.span(), "size must be at most 65536 bytes")),
            Some(x) => Ok(*x.get_ref()),
        }
    }

    pub(super) fn size_u32(&self, s: &S) -> Result<u32, ScenarioError> {
        let v = self.size(s)?;
        u32::try_from(v).map_err(|_| self.error_at(span(s), "value too large (at most 4 GiB)"))
    }

    /// Socket options of a TCP app, in the order a program would set them.
    fn tcp_opts(&self, a: &AppSpec) -> Result<Vec<wirelab_tcp::SockOpt>, ScenarioError> {
        use wirelab_tcp::SockOpt;
        let mut o = Vec::new();
        // per-app sysctls first: the explicit keys below (`cc`, ...) are set after them and win
        for (k, v) in &a.sysctl {
            let val = crate::sysctl::sysctl_text(v.get_ref()).ok_or_else(|| self.error_at(v.span(), format!("sysctl `{k}`: expected a string, an integer or a list of integers")))?;
            o.push(socket_sysctl(k, &val).map_err(|e| self.error_at(v.span(), format!("sysctl `{k}`: {e}")))?);
        }
        if let Some(c) = &a.cc {
            // the TCP engine's module registry is the one list of names (tcp_ca_find())
            wirelab_tcp::CongestionAlgo::from_name(c.get_ref()).map_err(|e| self.error_at(span(c), e.to_string()))?;
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
        if let Some(v) = &a.max_pacing_rate {
            o.push(SockOpt::MaxPacingRate(self.rate(v)? / 8));
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
        if let Some(v) = a.midstream_mss {
            o.push(SockOpt::MidstreamMss(v));
        }
        Ok(o)
    }

    /// Socket options of an SCTP app.
    fn sctp_opts(&self, a: &AppSpec) -> Result<Vec<wirelab_sctp::SockOpt>, ScenarioError> {
        use wirelab_sctp::SockOpt;
        if let Some((k, v)) = a.sysctl.iter().next() {
            return Err(self.error_at(v.span(), format!("sysctl `{k}`: per-app sysctls are TCP socket options (see docs/scenario.md); set SCTP sysctls in the node's `sysctl` table")));
        }
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

    /// A client's destination as a socket address (a node name resolves to its first
    /// interface's address).
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

/// The sysctls a TCP app may set for its own socket, and the socket option each becomes
/// (Linux's per-socket counterpart of the host-wide sysctl).
pub const SOCKET_SYSCTLS: &[(&str, &str)] = &[
    ("net.ipv4.tcp_congestion_control", "TCP_CONGESTION"),
    ("net.ipv4.tcp_thin_linear_timeouts", "TCP_THIN_LINEAR_TIMEOUTS"),
    ("net.ipv4.tcp_thin_dupack", "TCP_THIN_DUPACK"),
    ("net.ipv4.tcp_rdb", "TCP_RDB (the 2015 RDB patch's socket option)"),
    ("net.ipv4.tcp_early_retrans", "a wirelab extension: Linux has only the sysctl"),
];

/// A per-app sysctl as the socket option it is in Linux, with the value checked by the
/// TCP engine's own sysctl parser; a host-wide name is an error saying where it goes.
fn socket_sysctl(key: &str, val: &str) -> Result<wirelab_tcp::SockOpt, String> {
    use wirelab_tcp::SockOpt;
    let mut c = wirelab_tcp::TcpConfig::profile("linux-6").map_err(|e| e.to_string())?;
    if !SOCKET_SYSCTLS.iter().any(|(k, _)| *k == key) {
        let hint = match key {
            "net.ipv4.tcp_rmem" | "net.ipv4.tcp_wmem" => " (the app's `rcvbuf`/`sndbuf` keys set SO_RCVBUF/SO_SNDBUF, which lock autotuning)",
            _ => "",
        };
        c.set_sysctl(key, val).map_err(|e| e.to_string())?;
        let names: Vec<&str> = SOCKET_SYSCTLS.iter().map(|(k, _)| *k).collect();
        return Err(format!(
            "Linux has no per-socket setting for it: it is host-wide, so set it in the node's `sysctl` table{hint}; per app: {}",
            names.join(", ")
        ));
    }
    c.set_sysctl(key, val).map_err(|e| e.to_string())?;
    Ok(match key {
        "net.ipv4.tcp_congestion_control" => SockOpt::Congestion(val.trim().to_string()),
        "net.ipv4.tcp_thin_linear_timeouts" => SockOpt::ThinLinearTimeouts(c.tcp_thin_linear_timeouts),
        "net.ipv4.tcp_thin_dupack" => SockOpt::ThinDupack(c.tcp_thin_dupack),
        "net.ipv4.tcp_rdb" => SockOpt::Rdb(c.tcp_rdb),
        "net.ipv4.tcp_early_retrans" => SockOpt::EarlyRetrans(c.tcp_early_retrans as u8),
        _ => unreachable!("listed in SOCKET_SYSCTLS"),
    })
}
