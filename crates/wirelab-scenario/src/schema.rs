//! The scenario schema. Field docs double as the reference in `docs/scenario.md`.
use crate::{Scenario, ScenarioError};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use toml::Spanned;
use wirelab_core::units;
use wirelab_core::Duration;

/// A string with its position in the file.
pub type S = Spanned<String>;

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// `[scenario]`: name, duration, seed, defaults.
    pub scenario: Meta,
    /// `[[node]]`: hosts and routers.
    #[serde(default, rename = "node")]
    pub nodes: Vec<NodeSpec>,
    /// `[[link]]`: point-to-point links between two node interfaces.
    #[serde(default, rename = "link")]
    pub links: Vec<LinkSpec>,
    /// `[[route]]`: static routes (in addition to automatic ones).
    #[serde(default, rename = "route")]
    pub routes: Vec<RouteSpec>,
    /// `[[app]]`: traffic sources and sinks.
    #[serde(default, rename = "app")]
    pub apps: Vec<AppSpec>,
    /// `[[event]]`: scheduled link changes.
    #[serde(default, rename = "event")]
    pub events: Vec<EventSpec>,
    /// `[measure]`: captures, probes, sampling.
    #[serde(default)]
    pub measure: MeasureSpec,
    /// `[sweep]`: parameters for `wirelab sweep` (docs/sweeps.md); ignored by a single run.
    #[serde(default)]
    pub sweep: Option<toml::Value>,
}

/// `[scenario]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// Short name, used in outputs.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Simulated time to run, e.g. `"10s"`.
    pub duration: S,
    /// Run seed (default 1); `wirelab run --seed` overrides it.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Default stack profile for hosts (`linux-6` unless given).
    #[serde(default)]
    pub profile: Option<S>,
    /// Compute shortest-path routes to every subnet automatically (default true).
    #[serde(default)]
    pub auto_routes: Option<bool>,
    /// Checksum offload (default true): receivers verify transport checksums only of
    /// packets a link or netem qdisc corrupted; `false` verifies every packet.
    #[serde(default)]
    pub checksum_offload: Option<bool>,
}

/// `[[node]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// Unique name.
    pub name: S,
    /// `host` (default), `router`, or `tun` (live mode: a TUN interface in a network
    /// namespace, through which the machine's kernel sockets join the topology; docs/live.md).
    #[serde(default)]
    pub kind: Option<S>,
    /// `tun` nodes: the network namespace the interface goes into. Default: one the live
    /// driver creates (`wl-PID-NODE`) and deletes at exit; a named one is created if missing
    /// (and then deleted at exit) or used as it is.
    #[serde(default)]
    pub netns: Option<S>,
    /// `tun` nodes: commands run in the namespace (`sh -c`) once the interface is up; the
    /// live run ends when all of them have exited (or at `duration`).
    #[serde(default)]
    pub run: Vec<S>,
    /// `tun` nodes: background commands (servers) started in the namespace before `run`,
    /// stopped at the end of the live run.
    #[serde(default)]
    pub spawn: Vec<S>,
    /// `tun` nodes: sockets the commands must have open before the clock starts, as
    /// `tcp:PORT` (listening) or `udp:PORT` (bound), e.g. `["tcp:8000"]`: simulated clients
    /// then never race a server that is still starting.
    #[serde(default)]
    pub ready: Vec<S>,
    /// Stack profile, e.g. `linux-3.14`.
    #[serde(default)]
    pub profile: Option<S>,
    /// Sysctls by Linux name: `"net.ipv4.tcp_rmem" = "4096 87380 6291456"`.
    #[serde(default)]
    pub sysctl: BTreeMap<String, Spanned<toml::Value>>,
    /// TCP-to-SCTP shim rules (seed 5), one per entry: `["remote enable 10.1.1.0/24",
    /// "local enable any port 5001"]`. Present = TCP applications on this node use the shim.
    #[serde(default)]
    pub shim: Option<Vec<S>>,
    /// Shim fallback timer: fall back to TCP if the association is not up this long after
    /// `connect()` (default `3s`, one RTO.Initial; `off` = only on ABORT/ICMP).
    #[serde(default)]
    pub shim_fallback: Option<S>,
}

/// One end of a link.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointSpec {
    /// Node name.
    pub node: S,
    /// Interface name (default `ethN`, numbered per node in link order).
    #[serde(default)]
    pub iface: Option<S>,
    /// Address with prefix, `10.0.1.1/24` (default: automatic `172.16.L.1/24` / `.2`).
    #[serde(default)]
    pub addr: Option<S>,
    /// Root qdisc on this end's egress in short `tc` form, e.g. `"pfifo limit 100"`.
    #[serde(default)]
    pub qdisc: Option<S>,
    /// Full `tc` command lines for this interface (without `tc` and `dev X`).
    #[serde(default)]
    pub tc: Vec<S>,
    /// netem for this end's egress direction only (overrides the link's `netem`).
    #[serde(default)]
    pub netem: Option<S>,
}

/// `[[link]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Name used by events and outputs (default `A-B`).
    #[serde(default)]
    pub name: Option<S>,
    /// First end.
    pub a: EndpointSpec,
    /// Second end.
    pub b: EndpointSpec,
    /// netem for both directions: `"rate 10mbit delay 20ms loss 1%"`.
    #[serde(default)]
    pub netem: Option<S>,
    /// Link-layer header bytes counted by rates and byte limits (default 14, Ethernet).
    #[serde(default)]
    pub l2_overhead: Option<u16>,
}

/// `[[route]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// Node the route is installed on.
    pub node: S,
    /// `default` or a prefix `10.0.2.0/24`.
    pub dst: S,
    /// Next-hop address on a connected subnet.
    #[serde(default)]
    pub via: Option<S>,
    /// Outgoing interface name.
    #[serde(default)]
    pub dev: Option<S>,
}

/// `[[app]]`. Which keys apply depends on `kind` (see `docs/scenario.md`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// Kind: `udp-cbr`, `udp-sink`, `tcp-bulk`, `tcp-file`, `tcp-sink`, `tcp-echo`,
    /// `tcp-rr`, `sctp-bulk`, `sctp-sink`, `sctp-echo`.
    pub kind: S,
    /// Node the application runs on.
    pub node: S,
    /// Name in outputs (default `kind#index`).
    #[serde(default)]
    pub name: Option<S>,
    /// Destination `ADDR:PORT` or `NODE:PORT`.
    #[serde(default)]
    pub dst: Option<S>,
    /// Local port.
    #[serde(default)]
    pub port: Option<Spanned<u16>>,
    /// Sending rate (`1mbit`), counted over UDP payload + headers as iperf does.
    #[serde(default)]
    pub rate: Option<S>,
    /// Time between datagrams (alternative to `rate`).
    #[serde(default)]
    pub interval: Option<S>,
    /// Payload bytes per datagram (UDP), per `write()` (TCP bulk, default 131072 as
    /// iperf3), per message (SCTP, default 65536 as iperf3), per request (`tcp-rr`).
    #[serde(default)]
    pub size: Option<Spanned<u32>>,
    /// Total bytes to send (`"25mb"`, `"500kb"`, or a byte count; default: until `stop`).
    #[serde(default, deserialize_with = "size_or_int")]
    pub bytes: Option<S>,
    /// Congestion control (`TCP_CONGESTION`): `cubic`, `reno`.
    #[serde(default)]
    pub cc: Option<S>,
    /// `TCP_NODELAY` / `SCTP_NODELAY`.
    #[serde(default)]
    pub nodelay: Option<bool>,
    /// `SO_SNDBUF` (locks send-buffer autotuning; Linux doubles the value).
    #[serde(default)]
    pub sndbuf: Option<S>,
    /// `SO_RCVBUF` (locks receive-buffer autotuning; Linux doubles the value).
    #[serde(default)]
    pub rcvbuf: Option<S>,
    /// `TCP_WINDOW_CLAMP`.
    #[serde(default)]
    pub window_clamp: Option<S>,
    /// `SO_MAX_PACING_RATE` (a rate, `100mbit`): caps `sk_pacing_rate` and turns pacing on.
    #[serde(default)]
    pub max_pacing_rate: Option<S>,
    /// `IP_TOS` byte.
    #[serde(default)]
    pub tos: Option<Spanned<u8>>,
    /// `TCP_MAXSEG`.
    #[serde(default)]
    pub mss: Option<Spanned<u16>>,
    /// Honour MSS options after the handshake (wirelab extension, seed 003 §6.4; no stack
    /// does this).
    #[serde(default)]
    pub midstream_mss: Option<bool>,
    /// Request/response rounds before the data (`tcp-file`, default 4).
    #[serde(default)]
    pub exchanges: Option<Spanned<u32>>,
    /// Application read rate of a `tcp-sink` (default: read immediately).
    #[serde(default)]
    pub read_rate: Option<S>,
    /// SCTP outbound streams used round-robin (default 1).
    #[serde(default)]
    pub streams: Option<Spanned<u16>>,
    /// SCTP unordered delivery.
    #[serde(default)]
    pub unordered: Option<bool>,
    /// SCTP: bind only the route's source address instead of all interface addresses.
    #[serde(default)]
    pub single_homed: Option<bool>,
    /// SCTP concurrent multipath transfer for this app's socket, 0…4 as FreeBSD's
    /// `SCTP_CMT_ON_OFF` / `net.inet.sctp.cmt_on_off` (default: the node's sysctl).
    #[serde(default)]
    pub cmt: Option<Spanned<u8>>,
    /// Per-socket sysctls of a TCP app, by Linux name, applied as the socket option Linux
    /// has for them (`net.ipv4.tcp_congestion_control` = `TCP_CONGESTION`, …; see
    /// `socket_sysctl` in build/apps.rs). Host-wide names are an error naming the node's
    /// `sysctl` table instead.
    #[serde(default)]
    pub sysctl: BTreeMap<String, Spanned<toml::Value>>,
    /// `tcp-thin`: ± uniform jitter on the inter-transmission time (`10ms`).
    #[serde(default)]
    pub jitter: Option<S>,
    /// `tcp-thin`: `fixed` (default; `uniform` when `jitter` is given) or `exponential`.
    #[serde(default)]
    pub itt_dist: Option<S>,
    /// `tcp-thin`: replayed `GAP:BYTES` writes, e.g. `["100ms:120", "30ms:500"]`, repeated.
    #[serde(default)]
    pub replay: Option<Vec<S>>,
    /// `tcp-thin`: an application of the thin-stream thesis's Table 2.1 (`ssh`, `wow`, …),
    /// giving defaults for `size`, `interval` and `itt_dist` (see [`THIN_PRESETS`]).
    #[serde(default)]
    pub preset: Option<S>,
    /// `tcp-bulk`, `tcp-file`, `tcp-sink`: keep a SHA-256 of the bytes written / read
    /// (`sha256` in `flows.csv`), to compare with a real peer's.
    #[serde(default)]
    pub sha256: Option<bool>,
    /// Number of datagrams (default unlimited).
    #[serde(default)]
    pub count: Option<Spanned<u64>>,
    /// Start time (default 0s).
    #[serde(default)]
    pub start: Option<S>,
    /// Stop time (default: end of run).
    #[serde(default)]
    pub stop: Option<S>,
}

/// Accepts a size as a string (`"5mb"`) or an integer byte count (`5000000`); anything
/// else (a negative count, a float, a boolean) is an error saying what is expected.
fn size_or_int<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<S>, D::Error> {
    let v: Spanned<toml::Value> = Spanned::deserialize(d)?;
    let span = v.span();
    let s = match v.into_inner() {
        toml::Value::Integer(i) if i >= 0 => i.to_string(),
        toml::Value::String(s) => s,
        other => {
            return Err(serde::de::Error::custom(format!(
                "expected a size like \"25mb\" or \"500kb\", or a byte count 0..=18446744073709551615, got {other}"
            )))
        }
    };
    Ok(Some(Spanned::new(span, s)))
}

/// `[[event]]`: a link change (`link` + `down`/`up`/`netem`) or an application's
/// `setsockopt()` at a time (`app` + `setsockopt` + option keys).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    /// When.
    pub at: S,
    /// Link name (link events).
    #[serde(default)]
    pub link: Option<S>,
    /// App name (`setsockopt` events): the option goes to the app's open TCP sockets.
    #[serde(default)]
    pub app: Option<S>,
    /// `down`, `up`, `netem` or `setsockopt`.
    pub action: S,
    /// `setsockopt`: `TCP_MAXSEG`.
    #[serde(default)]
    pub mss: Option<Spanned<u16>>,
    /// `setsockopt`: `TCP_NODELAY`.
    #[serde(default)]
    pub nodelay: Option<bool>,
    /// `setsockopt`: `TCP_WINDOW_CLAMP`.
    #[serde(default)]
    pub window_clamp: Option<S>,
    /// `setsockopt`: honour MSS options after the handshake (wirelab extension, seed 003 §6.4).
    #[serde(default)]
    pub midstream_mss: Option<bool>,
    /// New netem spec for `action = "netem"`.
    #[serde(default)]
    pub netem: Option<S>,
    /// `ab`, `ba` or `both` (default).
    #[serde(default)]
    pub direction: Option<S>,
}

/// `[measure]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasureSpec {
    /// Time-series sampling interval (default `100ms`).
    #[serde(default)]
    pub sample_interval: Option<S>,
    /// Interfaces to capture, `NODE:IFACE` (or `NODE` for all its interfaces).
    #[serde(default)]
    pub capture: Vec<S>,
    /// `pcap` (default) or `pcapng`.
    #[serde(default)]
    pub capture_format: Option<S>,
    /// Interfaces whose egress queue gets a per-packet probe (aqmprobe-like).
    #[serde(default)]
    pub queue_probe: Vec<S>,
}

/// An IPv4 interface address with prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Cidr {
    /// Address.
    pub addr: Ipv4Addr,
    /// Prefix length 0..=32.
    pub prefix: u8,
}

impl Cidr {
    /// Parses `A.B.C.D/N`.
    pub fn parse(s: &str) -> Option<Cidr> {
        let (a, p) = s.trim().split_once('/')?;
        let addr: Ipv4Addr = a.parse().ok()?;
        let prefix: u8 = p.parse().ok()?;
        (prefix <= 32).then_some(Cidr { addr, prefix })
    }
    /// The network mask.
    pub fn mask(&self) -> u32 {
        if self.prefix == 0 {
            0
        } else {
            u32::MAX << (32 - self.prefix)
        }
    }
    /// The network address.
    pub fn network(&self) -> u32 {
        u32::from(self.addr) & self.mask()
    }
    /// True if `a` is inside this prefix.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & self.mask() == self.network()
    }
}

/// `tcp-thin` presets: thin-stream TCP applications of the thin-stream thesis's Table 2.1
/// (Markussen 2014, after Petlund et al.) as `(name, mean payload bytes, mean packet
/// inter-arrival time in ms, description)`. The payload means are from our copy of the
/// table; that copy is cut before the inter-arrival columns, so the ITT means are the
/// values published for the same traces by Petlund et al. and are not checked against it
/// (docs/scenario.md). A preset sets `size` to the mean payload and draws exponential
/// inter-transmission times with the mean ITT; explicit keys override it.
pub const THIN_PRESETS: &[(&str, u32, u64, &str)] = &[
    ("anarchy-online", 98, 632, "Anarchy Online (MMORPG) server stream"),
    ("age-of-conan", 80, 86, "Age of Conan (MMORPG)"),
    ("bzflag", 30, 24, "BZFlag (first-person shooter)"),
    ("wow", 26, 314, "World of Warcraft"),
    ("skype-tcp", 236, 34, "Skype voice call over TCP (2 users)"),
    ("rdc", 111, 318, "Windows Remote Desktop"),
    ("ssh", 48, 323, "SSH text session"),
];

/// App kinds this version knows, with the keys each accepts.
pub const APP_KINDS: &[(&str, &[&str])] = &[
    ("udp-cbr", &["dst", "port", "rate", "interval", "size", "count", "start", "stop"]),
    ("udp-sink", &["port", "start", "stop"]),
    ("tcp-bulk", &["dst", "size", "bytes", "start", "stop", "cc", "nodelay", "sndbuf", "rcvbuf", "window_clamp", "tos", "mss", "sha256", "max_pacing_rate", "midstream_mss"]),
    ("tcp-file", &["dst", "size", "bytes", "start", "exchanges", "cc", "nodelay", "sndbuf", "rcvbuf", "window_clamp", "tos", "mss", "sha256", "max_pacing_rate", "midstream_mss"]),
    ("tcp-sink", &["port", "read_rate", "cc", "nodelay", "sndbuf", "rcvbuf", "window_clamp", "tos", "mss", "sha256", "max_pacing_rate", "midstream_mss"]),
    ("tcp-echo", &["port", "cc", "nodelay", "sndbuf", "rcvbuf", "window_clamp", "tos", "mss", "max_pacing_rate", "midstream_mss"]),
    ("tcp-thin", &["dst", "preset", "size", "interval", "jitter", "itt_dist", "replay", "start", "stop", "cc", "nodelay", "sndbuf", "rcvbuf", "tos", "mss", "max_pacing_rate", "midstream_mss"]),
    ("tcp-rr", &["dst", "size", "interval", "start", "stop", "cc", "nodelay", "sndbuf", "rcvbuf", "tos", "mss", "max_pacing_rate", "midstream_mss"]),
    ("sctp-bulk", &["dst", "size", "bytes", "start", "stop", "nodelay", "sndbuf", "rcvbuf", "streams", "unordered", "single_homed", "cmt"]),
    ("sctp-sink", &["port", "nodelay", "sndbuf", "rcvbuf", "cmt"]),
    ("sctp-echo", &["port", "nodelay", "sndbuf", "rcvbuf", "cmt"]),
];

fn span<T>(s: &Spanned<T>) -> core::ops::Range<usize> {
    s.span()
}

impl Scenario {
    /// The index of the `[[app]]` named `name` (its `name`, or the default `kind#index`).
    pub fn app_index(&self, name: &S) -> Result<usize, ScenarioError> {
        let names: Vec<String> = self.doc.apps.iter().enumerate().map(|(i, a)| a.name.as_ref().map(|n| n.get_ref().clone()).unwrap_or_else(|| format!("{}#{i}", a.kind.get_ref()))).collect();
        names.iter().position(|n| n == name.get_ref()).ok_or_else(|| self.error_at(span(name), format!("no app named `{}` (apps: {})", name.get_ref(), names.join(", "))))
    }

    /// A `setsockopt` event: an existing TCP app, at least one option, no link keys.
    fn check_sockopt_event(&self, e: &EventSpec) -> Result<(), ScenarioError> {
        let Some(app) = &e.app else {
            return Err(self.error_at(span(&e.action), "a `setsockopt` event needs `app` (the application whose sockets get the option)"));
        };
        let a = &self.doc.apps[self.app_index(app)?];
        if !a.kind.get_ref().starts_with("tcp-") {
            return Err(self.error_at(span(app), format!("app `{}` is a `{}`: `setsockopt` events take TCP apps (tcp-*)", app.get_ref(), a.kind.get_ref())));
        }
        for (k, v) in [("link", &e.link), ("netem", &e.netem), ("direction", &e.direction)] {
            if let Some(v) = v {
                return Err(self.error_at(span(v), format!("key `{k}` is not used by action `setsockopt`")));
            }
        }
        if e.mss.is_none() && e.nodelay.is_none() && e.window_clamp.is_none() && e.midstream_mss.is_none() {
            return Err(self.error_at(span(&e.action), "a `setsockopt` event needs an option: mss, nodelay, window_clamp or midstream_mss"));
        }
        if let Some(m) = &e.mss {
            if *m.get_ref() < 88 {
                return Err(self.error_at(m.span(), "mss must be at least 88 bytes (TCP_MIN_MSS)"));
            }
        }
        if let Some(w) = &e.window_clamp {
            self.size(w)?;
        }
        Ok(())
    }

    /// Parses a time value at `s`.
    pub fn time(&self, s: &S) -> Result<Duration, ScenarioError> {
        units::parse_time(s.get_ref()).map_err(|e| self.error_at(span(s), e.to_string()))
    }
    /// Parses a rate value at `s`.
    pub fn rate(&self, s: &S) -> Result<u64, ScenarioError> {
        units::parse_rate(s.get_ref()).map_err(|e| self.error_at(span(s), e.to_string()))
    }
    /// Parses a byte size (`64KB`, `1MB`, `1500b`, or a bare byte count) at `s`.
    pub fn size(&self, s: &S) -> Result<u64, ScenarioError> {
        let t = s.get_ref().trim();
        if let Ok(n) = t.parse::<u64>() {
            return Ok(n);
        }
        units::parse_size(t).map_err(|e| self.error_at(span(s), e.to_string()))
    }
    /// Parses a CIDR value at `s`.
    pub fn cidr(&self, s: &S) -> Result<Cidr, ScenarioError> {
        Cidr::parse(s.get_ref()).ok_or_else(|| {
            self.error_at(span(s), format!("`{}` is not an IPv4 address with prefix like 10.0.1.1/24", s.get_ref()))
        })
    }
    /// Index of node `name`, or an error naming the known nodes.
    pub fn node_index(&self, name: &S) -> Result<usize, ScenarioError> {
        self.find_node(name.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = self.doc.nodes.iter().map(|n| n.name.get_ref().as_str()).collect();
            self.error_at(span(name), format!("no node named `{}` (nodes: {})", name.get_ref(), known.join(", ")))
        })
    }
    /// The scenario duration.
    pub fn duration(&self) -> Result<Duration, ScenarioError> {
        self.time(&self.doc.scenario.duration)
    }
    /// The link's name (explicit or `A-B`).
    pub fn link_name(&self, i: usize) -> String {
        let l = &self.doc.links[i];
        match &l.name {
            Some(n) => n.get_ref().clone(),
            None => format!("{}-{}", l.a.node.get_ref(), l.b.node.get_ref()),
        }
    }

    /// Checks everything that does not need the simulator's vocabularies (netem, tc,
    /// sysctls are checked when the simulation is built).
    pub(crate) fn validate(&self) -> Result<(), ScenarioError> {
        let d = &self.doc;
        let dur = self.duration()?;
        if dur == Duration::ZERO {
            return Err(self.error_at(span(&d.scenario.duration), "duration must be positive"));
        }
        let mut names = BTreeMap::new();
        for n in &d.nodes {
            if n.name.get_ref().is_empty() || n.name.get_ref().contains([':', ' ', '/']) {
                return Err(self.error_at(span(&n.name), "node names must be non-empty without ':', '/' or spaces"));
            }
            if names.insert(n.name.get_ref().clone(), ()).is_some() {
                return Err(self.error_at(span(&n.name), format!("duplicate node name `{}`", n.name.get_ref())));
            }
            if let Some(k) = &n.kind {
                if !matches!(k.get_ref().as_str(), "host" | "router" | "tun") {
                    return Err(self.error_at(span(k), format!("`{}` is not a node kind; expected `host`, `router` or `tun`", k.get_ref())));
                }
            }
            self.validate_tun_node(n)?;
        }
        let mut link_names = BTreeMap::new();
        for (i, l) in d.links.iter().enumerate() {
            for ep in [&l.a, &l.b] {
                self.node_index(&ep.node)?;
                if let Some(a) = &ep.addr {
                    self.cidr(a)?;
                }
                if let (Some(q), false) = (&ep.qdisc, ep.tc.is_empty()) {
                    return Err(self.error_at(span(q), "give either `qdisc` (short form) or `tc` (command lines), not both"));
                }
            }
            if l.a.node.get_ref() == l.b.node.get_ref() {
                return Err(self.error_at(span(&l.b.node), "a link must join two different nodes"));
            }
            let name = self.link_name(i);
            if link_names.insert(name.clone(), ()).is_some() {
                let at = l.name.as_ref().map(span).unwrap_or(span(&l.a.node));
                return Err(self.error_at(at, format!("duplicate link name `{name}`; give the link a `name`")));
            }
        }
        for r in &d.routes {
            self.node_index(&r.node)?;
            if r.dst.get_ref() != "default" {
                self.cidr(&r.dst)?;
            }
            if let Some(v) = &r.via {
                v.get_ref().parse::<Ipv4Addr>().map_err(|_| self.error_at(span(v), format!("`{}` is not an IPv4 address", v.get_ref())))?;
            }
            if r.via.is_none() && r.dev.is_none() {
                return Err(self.error_at(span(&r.dst), "a route needs `via` (next hop) or `dev` (interface)"));
            }
        }
        for a in &d.apps {
            self.node_index(&a.node)?;
            let Some((_, allowed)) = APP_KINDS.iter().find(|(k, _)| k == a.kind.get_ref()) else {
                let kinds: Vec<&str> = APP_KINDS.iter().map(|(k, _)| *k).collect();
                return Err(self.error_at(span(&a.kind), format!("unknown app kind `{}`; expected one of {}", a.kind.get_ref(), kinds.join(", "))));
            };
            // booleans carry no span; report them at the app's `kind`
            let flag = |b: Option<bool>| b.map(|_| span(&a.kind));
            let given: [(&str, Option<core::ops::Range<usize>>); 28] = [
                ("sha256", flag(a.sha256)),
                ("jitter", a.jitter.as_ref().map(span)),
                ("itt_dist", a.itt_dist.as_ref().map(span)),
                ("replay", a.replay.as_ref().and_then(|r| r.first()).map(span)),
                ("dst", a.dst.as_ref().map(span)),
                ("port", a.port.as_ref().map(span)),
                ("rate", a.rate.as_ref().map(span)),
                ("interval", a.interval.as_ref().map(span)),
                ("size", a.size.as_ref().map(span)),
                ("count", a.count.as_ref().map(span)),
                ("start", a.start.as_ref().map(span)),
                ("stop", a.stop.as_ref().map(span)),
                ("bytes", a.bytes.as_ref().map(span)),
                ("cc", a.cc.as_ref().map(span)),
                ("nodelay", flag(a.nodelay)),
                ("sndbuf", a.sndbuf.as_ref().map(span)),
                ("rcvbuf", a.rcvbuf.as_ref().map(span)),
                ("window_clamp", a.window_clamp.as_ref().map(span)),
                ("max_pacing_rate", a.max_pacing_rate.as_ref().map(span)),
                ("tos", a.tos.as_ref().map(span)),
                ("mss", a.mss.as_ref().map(span)),
                ("midstream_mss", flag(a.midstream_mss)),
                ("exchanges", a.exchanges.as_ref().map(span)),
                ("read_rate", a.read_rate.as_ref().map(span)),
                ("streams", a.streams.as_ref().map(span)),
                ("unordered", flag(a.unordered)),
                ("single_homed", flag(a.single_homed)),
                ("name", None),
            ];
            for (k, sp) in given {
                if let Some(sp) = sp {
                    if !allowed.contains(&k) {
                        return Err(self.error_at(sp, format!("key `{k}` is not used by app kind `{}` (it takes: {})", a.kind.get_ref(), allowed.join(", "))));
                    }
                }
            }
            for t in [&a.start, &a.stop, &a.interval].into_iter().flatten() {
                self.time(t)?;
            }
            for r in [&a.rate, &a.read_rate, &a.max_pacing_rate].into_iter().flatten() {
                self.rate(r)?;
            }
            for z in [&a.bytes, &a.sndbuf, &a.rcvbuf, &a.window_clamp].into_iter().flatten() {
                self.size(z)?;
            }
            if let Some(dst) = &a.dst {
                self.endpoint_addr(dst)?;
            }
        }
        for e in &d.events {
            self.time(&e.at)?;
            if e.action.get_ref() == "setsockopt" {
                self.check_sockopt_event(e)?;
                continue;
            }
            let Some(link) = &e.link else {
                return Err(self.error_at(span(&e.action), format!("a `{}` event needs a `link`", e.action.get_ref())));
            };
            if let Some(a) = &e.app {
                return Err(self.error_at(span(a), "`app` is only used by action `setsockopt`"));
            }
            let opt_key = [("mss", e.mss.is_some()), ("nodelay", e.nodelay.is_some()), ("window_clamp", e.window_clamp.is_some()), ("midstream_mss", e.midstream_mss.is_some())];
            if let Some((k, _)) = opt_key.iter().find(|x| x.1) {
                return Err(self.error_at(span(&e.action), format!("key `{k}` is only used by action `setsockopt`")));
            }
            if !(0..d.links.len()).any(|i| &self.link_name(i) == link.get_ref()) {
                let known: Vec<String> = (0..d.links.len()).map(|i| self.link_name(i)).collect();
                return Err(self.error_at(span(link), format!("no link named `{}` (links: {})", link.get_ref(), known.join(", "))));
            }
            match e.action.get_ref().as_str() {
                "down" | "up" => {}
                "netem" if e.netem.is_some() => {}
                "netem" => return Err(self.error_at(span(&e.action), "action `netem` needs a `netem` key with the new spec")),
                other => return Err(self.error_at(span(&e.action), format!("`{other}` is not an event action; expected down, up, netem or setsockopt"))),
            }
            if let Some(dir) = &e.direction {
                if !matches!(dir.get_ref().as_str(), "ab" | "ba" | "both") {
                    return Err(self.error_at(span(dir), "direction must be `ab`, `ba` or `both`"));
                }
            }
        }
        if let Some(si) = &d.measure.sample_interval {
            if self.time(si)? == Duration::ZERO {
                return Err(self.error_at(span(si), "sample_interval must be positive"));
            }
        }
        if let Some(f) = &d.measure.capture_format {
            if !matches!(f.get_ref().as_str(), "pcap" | "pcapng") {
                return Err(self.error_at(span(f), "capture_format must be `pcap` or `pcapng`"));
            }
        }
        for c in d.measure.capture.iter().chain(d.measure.queue_probe.iter()) {
            let node = c.get_ref().split(':').next().unwrap_or("");
            if !d.nodes.iter().any(|n| n.name.get_ref() == node) {
                return Err(self.error_at(span(c), format!("no node named `{node}`; expected NODE or NODE:IFACE")));
            }
        }
        crate::validate::check(self)
    }

    /// A `ready` entry as `(is_tcp, port)`.
    pub fn ready_socket(s: &str) -> Option<(bool, u16)> {
        let (proto, port) = s.split_once(':')?;
        let port = port.parse::<u16>().ok().filter(|p| *p != 0)?;
        match proto {
            "tcp" => Some((true, port)),
            "udp" => Some((false, port)),
            _ => None,
        }
    }

    /// True if node `n` is a live-mode TUN node.
    pub fn is_tun(n: &NodeSpec) -> bool {
        n.kind.as_ref().is_some_and(|k| k.get_ref() == "tun")
    }

    /// `netns`, `run` and `spawn` belong to `tun` nodes, which take no profile or shim; a
    /// namespace name is one `ip netns` accepts.
    fn validate_tun_node(&self, n: &NodeSpec) -> Result<(), ScenarioError> {
        if !Self::is_tun(n) {
            let stray = n.netns.as_ref().map(|s| ("netns", span(s))).or(n.run.first().map(|s| ("run", span(s)))).or(n.spawn.first().map(|s| ("spawn", span(s)))).or(n.ready.first().map(|s| ("ready", span(s))));
            if let Some((k, sp)) = stray {
                return Err(self.error_at(sp, format!("`{k}` is for nodes of kind `tun` (live mode); node `{}` is not one", n.name.get_ref())));
            }
            return Ok(());
        }
        if let Some(p) = &n.profile {
            return Err(self.error_at(span(p), "a `tun` node runs the machine's own kernel stack: it takes no `profile` (set kernel sysctls in `sysctl`)"));
        }
        if let Some(sh) = n.shim.as_ref().and_then(|s| s.first()) {
            return Err(self.error_at(span(sh), "a `tun` node takes no `shim` rules"));
        }
        for r in &n.ready {
            if Self::ready_socket(r.get_ref()).is_none() {
                return Err(self.error_at(span(r), format!("`{}` is not `tcp:PORT` or `udp:PORT`", r.get_ref())));
            }
        }
        if let Some(ns) = &n.netns {
            let ok = !ns.get_ref().is_empty() && ns.get_ref().len() <= 64 && ns.get_ref().chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) && !ns.get_ref().starts_with('.');
            if !ok {
                return Err(self.error_at(span(ns), "a namespace name is 1-64 characters of letters, digits, `-`, `_` and `.`"));
            }
        }
        Ok(())
    }

    /// Splits `ADDR:PORT` or `NODE:PORT`; a node name stands for its first address.
    pub fn endpoint_addr(&self, s: &S) -> Result<(EndpointHost, u16), ScenarioError> {
        let bad = || self.error_at(span(s), format!("`{}` is not ADDR:PORT or NODE:PORT", s.get_ref()));
        let (h, p) = s.get_ref().rsplit_once(':').ok_or_else(bad)?;
        let port: u16 = p.parse().map_err(|_| bad())?;
        if let Ok(a) = h.parse::<Ipv4Addr>() {
            return Ok((EndpointHost::Addr(a), port));
        }
        let idx = self.find_node(h).ok_or_else(|| {
            self.error_at(span(s), format!("`{h}` is neither an IPv4 address nor a node name"))
        })?;
        Ok((EndpointHost::Node(idx), port))
    }
}

/// A destination host given by address or by node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointHost {
    /// A literal address.
    Addr(Ipv4Addr),
    /// A node (index into `nodes`): its first interface address.
    Node(usize),
}
