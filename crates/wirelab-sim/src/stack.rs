//! A host's transport stack: one TCP and one SCTP endpoint, created on first use, plus the
//! table saying which application owns which socket.
//!
//! The simulator is the sans-IO engines' driver (`wirelab_core::transport`): after every
//! input it drains `poll_transmit` into IPv4 datagrams, hands `poll_event`s to the owning
//! applications, and keeps one `Event::Stack(node)` heap entry at the earliest engine timer.
use std::net::{Ipv4Addr, SocketAddrV4};
use wirelab_core::Instant;
use wirelab_shim::ShimSocketId as ShimId;
use wirelab_tcp::{SockError, SocketId as TcpId};
use wirelab_sctp::{SctpConfig, SctpEndpoint};
use wirelab_tcp::{TcpConfig, TcpEndpoint};

/// Owner value for "no application".
const NO_OWNER: u32 = u32::MAX;

/// The engines of a host: plain TCP and SCTP, or both behind the TCP-to-SCTP shim.
/// `Plain` stays inline: it is the common case, the hot path, and `HostStack` is boxed.
#[allow(clippy::large_enum_variant)]
enum Engines {
    Plain { tcp: TcpEndpoint, sctp: SctpEndpoint },
    Shim(Box<wirelab_shim::ShimStack>),
}

/// A host's TCP and SCTP endpoints.
///
/// TCP applications use the `s_*` stream-socket calls: on a plain host they are the TCP
/// endpoint's, on a shim host (`shim = [...]` rules in the scenario) the shim's, which
/// carries the same byte stream over SCTP when the rules say so (seed 5) — applications
/// run unchanged, as with the paper's socket-layer shim.
pub struct HostStack {
    engines: Engines,
    tcp_owner: Vec<u32>,
    sctp_owner: Vec<u32>,
    /// Time of this stack's pending `Event::Stack` entry.
    pub(crate) scheduled: Option<Instant>,
    /// Receiver-side rate control (seed 003), when the node sets `net.ipv4.rate_*`.
    pub rate: Option<wirelab_ratectl::RateConfig>,
    /// Rate probes of the controlled TCP sockets, in creation order.
    pub rate_probes: Vec<(wirelab_tcp::SocketId, wirelab_ratectl::RateProbe)>,
    /// UDP rate policies by local port.
    pub udp_rate: std::collections::BTreeMap<u16, wirelab_ratectl::UdpRatePolicy>,
    /// Rate-controlled sockets waiting for their qdisc class (`net.ipv4.cbq_class` set).
    pub(crate) rate_class_pending: Vec<wirelab_tcp::SocketId>,
}

impl HostStack {
    pub(crate) fn new(tcp: TcpEndpoint, sctp: SctpEndpoint, shim: Option<wirelab_shim::ShimConfig>) -> Self {
        let engines = match shim {
            None => Engines::Plain { tcp, sctp },
            Some(cfg) => Engines::Shim(Box::new(wirelab_shim::ShimStack::new(cfg, tcp, sctp))),
        };
        HostStack { engines, tcp_owner: Vec::new(), sctp_owner: Vec::new(), scheduled: None, rate: None, rate_probes: Vec::new(), udp_rate: Default::default(), rate_class_pending: Vec::new() }
    }

    fn set(v: &mut Vec<u32>, id: u32, app: u32) {
        let i = id as usize;
        if v.len() <= i {
            v.resize(i + 1, NO_OWNER);
        }
        v[i] = app;
    }
    fn get(v: &[u32], id: u32) -> Option<u32> {
        v.get(id as usize).copied().filter(|&a| a != NO_OWNER)
    }

    /// Marks TCP socket `s` as owned by application `app` (its events go there). On a
    /// node with rate control every new connection gets a [`TcpRateController`]
    /// (`wirelab_ratectl`) as its receive-window policy, like the thesis's kernel patch
    /// applied to every socket.
    ///
    /// [`TcpRateController`]: wirelab_ratectl::TcpRateController
    pub fn own_tcp(&mut self, s: wirelab_tcp::SocketId, app: u32) {
        Self::set(&mut self.tcp_owner, s.0, app);
        if self.is_shim() {
            return; // rate control applies to native TCP sockets only
        }
        if let Some(cfg) = self.rate.clone() {
            if self.tcp().state(s) == Some(wirelab_tcp::TcpState::Listen) {
                // rate_mss (§6.5) on a listener: accepted sockets inherit it before their SYN-ACK
                if let Some(m) = cfg.mss {
                    let _ = self.tcp_mut().set_option(s, wirelab_tcp::SockOpt::MaxSeg(m));
                }
                return;
            }
            if self.tcp().state(s).is_some_and(|st| st != wirelab_tcp::TcpState::Listen) && !self.rate_probes.iter().any(|(x, _)| *x == s) {
                if let Some(m) = cfg.mss {
                    let _ = self.tcp_mut().set_option(s, wirelab_tcp::SockOpt::MaxSeg(m));
                }
                if cfg.cbq_class.is_some() {
                    // the simulator asks the egress qdisc for the socket's class first
                    // (Simulator::bind_rate_classes), then calls install_rate
                    if !self.rate_class_pending.contains(&s) {
                        self.rate_class_pending.push(s);
                    }
                } else {
                    self.install_rate(s, None);
                }
            }
        }
    }

    /// Installs the rate controller on connected socket `s`, bound to qdisc class `class`
    /// (the leaf its outgoing packets are classified into; `None` if unknown or classless).
    /// A stream in the `cbq_class` class is "important" and never throttled (seed 003 §5.4).
    pub(crate) fn install_rate(&mut self, s: wirelab_tcp::SocketId, class: Option<u32>) {
        let Some(cfg) = self.rate.as_ref() else { return };
        if self.rate_probes.iter().any(|(x, _)| *x == s) {
            return;
        }
        let ctl = wirelab_ratectl::TcpRateController::new(cfg).with_class(class);
        let probe = ctl.probe();
        if self.tcp_mut().set_rcv_window_policy(s, Some(Box::new(ctl))).is_ok() {
            self.rate_probes.push((s, probe));
        }
    }
    /// Marks SCTP socket `s` as owned by application `app`.
    pub fn own_sctp(&mut self, s: wirelab_sctp::SocketId, app: u32) {
        Self::set(&mut self.sctp_owner, s.0, app);
    }
    /// Owner of a TCP socket.
    pub fn tcp_owner(&self, s: wirelab_tcp::SocketId) -> Option<u32> {
        Self::get(&self.tcp_owner, s.0)
    }
    /// Owner of an SCTP socket.
    pub fn sctp_owner(&self, s: wirelab_sctp::SocketId) -> Option<u32> {
        Self::get(&self.sctp_owner, s.0)
    }
    /// Earliest timer of either engine.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.engines {
            Engines::Plain { tcp, sctp } => match (tcp.poll_timeout(), sctp.poll_timeout()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            Engines::Shim(sh) => sh.poll_timeout(),
        }
    }

    /// True on a shim host.
    pub fn is_shim(&self) -> bool {
        matches!(self.engines, Engines::Shim(_))
    }
    /// The shim, on a shim host (rule matches, fallback reasons).
    pub fn shim(&self) -> Option<&wirelab_shim::ShimStack> {
        match &self.engines {
            Engines::Shim(sh) => Some(sh),
            Engines::Plain { .. } => None,
        }
    }
    /// The TCP endpoint (under the shim on a shim host).
    pub fn tcp(&self) -> &TcpEndpoint {
        match &self.engines {
            Engines::Plain { tcp, .. } => tcp,
            Engines::Shim(sh) => sh.tcp(),
        }
    }
    /// The TCP endpoint, mutably.
    pub fn tcp_mut(&mut self) -> &mut TcpEndpoint {
        match &mut self.engines {
            Engines::Plain { tcp, .. } => tcp,
            Engines::Shim(sh) => sh.tcp_mut(),
        }
    }
    /// The SCTP endpoint (native SCTP apps; under the shim on a shim host).
    pub fn sctp(&self) -> &SctpEndpoint {
        match &self.engines {
            Engines::Plain { sctp, .. } => sctp,
            Engines::Shim(sh) => sh.sctp(),
        }
    }
    /// The SCTP endpoint, mutably.
    pub fn sctp_mut(&mut self) -> &mut SctpEndpoint {
        match &mut self.engines {
            Engines::Plain { sctp, .. } => sctp,
            Engines::Shim(sh) => sh.sctp_mut(),
        }
    }

    /// A TCP or SCTP datagram payload for this host; `verify` = check its transport
    /// checksum (only packets a link corrupted need it, see `PktMeta::corrupted`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn handle_packet(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, proto: u8, tos: u8, payload: &[u8], verify: bool) {
        match &mut self.engines {
            Engines::Plain { tcp, sctp } => {
                if proto == wirelab_wire::ip_proto::TCP {
                    tcp.handle_packet_csum(now, src, dst, tos, payload, verify);
                } else {
                    sctp.handle_packet_csum(now, src, dst, tos, payload, verify);
                }
            }
            Engines::Shim(sh) => sh.handle_packet_csum(now, src, dst, proto, tos, payload, verify),
        }
    }

    pub(crate) fn handle_timeout(&mut self, now: Instant) {
        match &mut self.engines {
            Engines::Plain { tcp, sctp } => {
                if tcp.poll_timeout().is_some_and(|t| t <= now) {
                    tcp.handle_timeout(now);
                }
                if sctp.poll_timeout().is_some_and(|t| t <= now) {
                    sctp.handle_timeout(now);
                }
            }
            Engines::Shim(sh) => sh.handle_timeout(now),
        }
    }

    pub(crate) fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<wirelab_core::Transmit> {
        match &mut self.engines {
            Engines::Plain { tcp, sctp } => match tcp.poll_transmit(now, buf) {
                Some(t) => Some(t),
                None => sctp.poll_transmit(now, buf),
            },
            Engines::Shim(sh) => sh.poll_transmit(now, buf),
        }
    }

    /// Next socket event as `(owning app, input)`; events of unowned sockets are dropped.
    pub(crate) fn poll_app_event(&mut self) -> Option<Option<(u32, crate::apps::AppInput)>> {
        use crate::apps::AppInput;
        match &mut self.engines {
            Engines::Plain { tcp, sctp } => {
                if let Some((s, e)) = tcp.poll_event() {
                    return Some(Self::get(&self.tcp_owner, s.0).map(|a| (a, AppInput::Tcp(s, e))));
                }
                if let Some((s, e)) = sctp.poll_event() {
                    return Some(Self::get(&self.sctp_owner, s.0).map(|a| (a, AppInput::Sctp(s, e))));
                }
                None
            }
            Engines::Shim(sh) => {
                // stream sockets are shim sockets; their ids live in the TCP owner table
                if let Some((s, e)) = sh.poll_event() {
                    let s = wirelab_tcp::SocketId(s.0);
                    return Some(Self::get(&self.tcp_owner, s.0).map(|a| (a, AppInput::Tcp(s, e))));
                }
                match sh.poll_native_event() {
                    Some(wirelab_shim::NativeEvent::Sctp(s, e)) => Some(Self::get(&self.sctp_owner, s.0).map(|a| (a, AppInput::Sctp(s, e)))),
                    Some(wirelab_shim::NativeEvent::Tcp(..)) => Some(None),
                    None => None,
                }
            }
        }
    }

    // ---- stream sockets (TCP semantics; the shim's on a shim host) ----

    /// `connect()`.
    pub fn s_connect(&mut self, now: Instant, local: Ipv4Addr, remote: SocketAddrV4) -> Result<TcpId, SockError> {
        match &mut self.engines {
            Engines::Plain { tcp, .. } => tcp.connect(now, local, remote),
            Engines::Shim(sh) => sh.connect(now, local, remote).map(|s| TcpId(s.0)),
        }
    }
    /// `connect()` that, on a shim host, offers SCTP every local address and the
    /// destination's other addresses (`remote_alt`) so the association is multihomed; a
    /// plain TCP connect uses `local` and `remote` only.
    pub fn s_connect_multi(&mut self, now: Instant, local: Ipv4Addr, locals: &[Ipv4Addr], remote: SocketAddrV4, remote_alt: &[Ipv4Addr]) -> Result<TcpId, SockError> {
        match &mut self.engines {
            Engines::Shim(sh) if !remote_alt.is_empty() => {
                let mut l = vec![local];
                l.extend(locals.iter().copied().filter(|a| *a != local));
                let mut r = vec![*remote.ip()];
                r.extend(remote_alt.iter().copied().filter(|a| a != remote.ip()));
                sh.connect_multi(now, &l, &r, remote.port()).map(|s| TcpId(s.0))
            }
            _ => self.s_connect(now, local, remote),
        }
    }
    /// `listen()`.
    pub fn s_listen(&mut self, local: SocketAddrV4, backlog: u32) -> Result<TcpId, SockError> {
        match &mut self.engines {
            Engines::Plain { tcp, .. } => tcp.listen(local, backlog),
            Engines::Shim(sh) => sh.listen(local, backlog).map(|s| TcpId(s.0)),
        }
    }
    /// `accept()`.
    pub fn s_accept(&mut self, l: TcpId) -> Option<TcpId> {
        match &mut self.engines {
            Engines::Plain { tcp, .. } => tcp.accept(l),
            Engines::Shim(sh) => sh.accept(ShimId(l.0)).map(|s| TcpId(s.0)),
        }
    }
    /// `write()`.
    pub fn s_send(&mut self, now: Instant, s: TcpId, data: &[u8]) -> Result<usize, SockError> {
        match &mut self.engines {
            Engines::Plain { tcp, .. } => tcp.send(now, s, data),
            Engines::Shim(sh) => sh.send(now, ShimId(s.0), data),
        }
    }
    /// `read()`.
    pub fn s_recv(&mut self, now: Instant, s: TcpId, buf: &mut [u8]) -> Result<usize, SockError> {
        match &mut self.engines {
            Engines::Plain { tcp, .. } => tcp.recv(now, s, buf),
            Engines::Shim(sh) => sh.recv(now, ShimId(s.0), buf),
        }
    }
    /// Reads and discards up to `max` bytes.
    pub fn s_recv_discard(&mut self, now: Instant, s: TcpId, max: usize) -> Result<usize, SockError> {
        match &mut self.engines {
            Engines::Plain { tcp, .. } => tcp.recv_discard(now, s, max),
            Engines::Shim(sh) => sh.recv_discard(now, ShimId(s.0), max),
        }
    }
    /// `shutdown(SHUT_WR)`.
    pub fn s_shutdown_write(&mut self, now: Instant, s: TcpId) -> Result<(), SockError> {
        match &mut self.engines {
            Engines::Plain { tcp, .. } => tcp.shutdown_write(now, s),
            Engines::Shim(sh) => sh.shutdown_write(now, ShimId(s.0)),
        }
    }
    /// `close()`.
    pub fn s_close(&mut self, now: Instant, s: TcpId) {
        match &mut self.engines {
            Engines::Plain { tcp, .. } => tcp.close(now, s),
            Engines::Shim(sh) => sh.close(now, ShimId(s.0)),
        }
    }
    /// `setsockopt()`.
    pub fn s_set_option(&mut self, s: TcpId, opt: wirelab_tcp::SockOpt) -> Result<(), SockError> {
        match &mut self.engines {
            Engines::Plain { tcp, .. } => tcp.set_option(s, opt),
            Engines::Shim(sh) => sh.set_option(ShimId(s.0), opt),
        }
    }
    /// The TCP connection carrying a stream socket (itself on a plain host; the shim's
    /// fallback TCP connection on a shim host, `None` while it runs over SCTP).
    fn tcp_of(&self, s: TcpId) -> Option<TcpId> {
        match &self.engines {
            Engines::Plain { .. } => Some(s),
            Engines::Shim(sh) => sh.info(ShimId(s.0)).and_then(|i| i.tcp),
        }
    }
    /// `tcp_info` of a stream socket (when it runs over TCP).
    pub fn s_info(&self, s: TcpId) -> Option<wirelab_tcp::TcpInfo> {
        self.tcp_of(s).and_then(|t| self.tcp().info(t))
    }
    /// The SCTP association under a stream socket that the shim carries over SCTP
    /// (`None` on plain hosts and for TCP-carried sockets).
    pub fn s_sctp(&self, s: TcpId) -> Option<wirelab_sctp::SocketId> {
        match &self.engines {
            Engines::Plain { .. } => None,
            Engines::Shim(sh) => sh.info(ShimId(s.0)).filter(|i| i.transport == Some(wirelab_shim::Transport::Sctp)).and_then(|i| i.sctp),
        }
    }
    /// Counters of the SCTP association under a shim-carried stream socket.
    pub fn s_sctp_stats(&self, s: TcpId) -> Option<wirelab_sctp::AssocStats> {
        self.s_sctp(s).and_then(|x| self.sctp().info(x)).map(|i| i.stats)
    }
    /// (local, remote) of a stream socket (when it runs over TCP).
    pub fn s_addrs(&self, s: TcpId) -> Option<(SocketAddrV4, SocketAddrV4)> {
        self.tcp_of(s).and_then(|t| self.tcp().addrs(t))
    }
    /// Transport a stream socket ended up on (`tcp` or `sctp`).
    pub fn s_transport(&self, s: TcpId) -> &'static str {
        match &self.engines {
            Engines::Plain { .. } => "tcp",
            Engines::Shim(sh) => match sh.info(ShimId(s.0)).and_then(|i| i.transport) {
                Some(wirelab_shim::Transport::Sctp) => "sctp",
                Some(wirelab_shim::Transport::Tcp) => "tcp",
                None => "",
            },
        }
    }
}

/// Per-node transport configuration (profile plus sysctl overrides), applied when the
/// node's stack is first created.
#[derive(Clone, Debug, Default)]
pub struct StackConfig {
    /// TCP configuration (`None` = the `linux-6` profile).
    pub tcp: Option<TcpConfig>,
    /// SCTP configuration (`None` = the `linux-6` profile).
    pub sctp: Option<SctpConfig>,
    /// Receiver-side rate control (`net.ipv4.rate_*`, seed 003); `None` = off.
    pub rate: Option<wirelab_ratectl::RateConfig>,
    /// TCP-to-SCTP shim (seed 005) with its rule table; `None` = plain stacks.
    pub shim: Option<wirelab_shim::ShimConfig>,
}

impl StackConfig {
    /// A stack configuration from a profile name shared by TCP and SCTP. SCTP has no
    /// `linux-3.14`, `linux-2.2` or `freebsd-4.10` profile; those fall back to the
    /// nearest SCTP profile (`linux-2.6.37` for older eras), as documented in docs/scenario.md.
    pub fn profile(name: &str) -> Result<Self, String> {
        let tcp = TcpConfig::profile(name).map_err(|e| e.to_string())?;
        let sctp_name = match name {
            "linux-6" | "default" => "linux-6",
            "linux-4.6" => "linux-4.6",
            "linux-3.14" | "linux-2.6.37" | "linux-2.2" | "freebsd-4.10" => "linux-2.6.37",
            other => other,
        };
        let sctp = SctpConfig::profile(sctp_name).map_err(|e| e.to_string())?;
        Ok(StackConfig { tcp: Some(tcp), sctp: Some(sctp), rate: None, shim: None })
    }

    /// Applies one sysctl by its Linux name: `net.ipv4.tcp_*` go to TCP, `net.sctp.*` to
    /// SCTP, `net.core.*` to both (each engine takes the ones it models).
    pub fn set_sysctl(&mut self, key: &str, value: &str) -> Result<(), String> {
        let tcp = self.tcp.get_or_insert_with(|| TcpConfig::profile("linux-6").expect("linux-6 profile"));
        let sctp = self.sctp.get_or_insert_with(|| SctpConfig::profile("linux-6").expect("linux-6 profile"));
        if key.starts_with("net.ipv4.rate_") || key.starts_with("/proc/sys/net/ipv4/rate_") || wirelab_ratectl::SYSCTL_NAMES.contains(&key) {
            self.rate.get_or_insert_with(wirelab_ratectl::RateConfig::default).set_sysctl(key, value)
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
}
