//! A host's transport stack: its engines behind one [`Transports`] object (plain TCP and
//! SCTP side by side, or both under the TCP-to-SCTP shim), created on first use, plus the
//! table saying which application owns which socket.
//!
//! The simulator is the sans-IO engines' driver (`wirelab_core::transport`): after every
//! input it drains `poll_transmit` into IPv4 datagrams, hands `poll_event`s to the owning
//! applications, and keeps one `Event::Stack(node)` heap entry at the earliest engine timer.
//! It sees only the [`Engine`] trait; applications see the stream-socket calls below.
use std::net::{Ipv4Addr, SocketAddrV4};
use wirelab_core::{Datagram, Engine, Instant, SockEvent, SocketRef, Transmit};
use wirelab_shim::{ShimSocketId as ShimId, ShimStack};
use wirelab_tcp::{SockError, SocketId as TcpId};
use wirelab_sctp::{SctpConfig, SctpEndpoint, SocketId as SctpId};
use wirelab_tcp::{TcpConfig, TcpEndpoint};

/// Owner value for "no application".
const NO_OWNER: u32 = u32::MAX;

/// A host's engines as the driver and the applications use them: one [`Engine`] (the
/// packets, timers and events of every transport on the host) that also answers the
/// stream-socket calls of TCP applications and gives access to the engines underneath.
///
/// Stream sockets have TCP semantics: on a plain host they are the TCP endpoint's, on a
/// shim host (`shim = [...]` rules in the scenario) the shim's, which carries the same
/// byte stream over SCTP when the rules say so (seed 5); applications run unchanged, as
/// with the paper's socket-layer shim. A live driver reuses these objects as they are.
pub trait Transports: Engine {
    /// The TCP endpoint (under the shim on a shim host).
    fn tcp(&self) -> &TcpEndpoint;
    /// The TCP endpoint, mutably.
    fn tcp_mut(&mut self) -> &mut TcpEndpoint;
    /// The SCTP endpoint (native SCTP apps; under the shim on a shim host).
    fn sctp(&self) -> &SctpEndpoint;
    /// The SCTP endpoint, mutably.
    fn sctp_mut(&mut self) -> &mut SctpEndpoint;
    /// The shim, on a shim host (rule matches, fallback reasons).
    fn shim(&self) -> Option<&ShimStack> {
        None
    }
    /// `connect()` of a stream socket.
    fn connect(&mut self, now: Instant, local: Ipv4Addr, remote: SocketAddrV4) -> Result<TcpId, SockError>;
    /// `connect()` offering every local address and the destination's other addresses
    /// (`remote_alt`), for a shim that may carry the stream over a multihomed association.
    fn connect_multi(&mut self, now: Instant, local: Ipv4Addr, _locals: &[Ipv4Addr], remote: SocketAddrV4, _remote_alt: &[Ipv4Addr]) -> Result<TcpId, SockError> {
        self.connect(now, local, remote)
    }
    /// `listen()`.
    fn listen(&mut self, local: SocketAddrV4, backlog: u32) -> Result<TcpId, SockError>;
    /// `accept()`.
    fn accept(&mut self, l: TcpId) -> Option<TcpId>;
    /// `write()`.
    fn send(&mut self, now: Instant, s: TcpId, data: &[u8]) -> Result<usize, SockError>;
    /// `write()` of a `'static` slice, which an engine may queue by reference.
    fn send_static(&mut self, now: Instant, s: TcpId, data: &'static [u8]) -> Result<usize, SockError> {
        self.send(now, s, data)
    }
    /// `read()`.
    fn recv(&mut self, now: Instant, s: TcpId, buf: &mut [u8]) -> Result<usize, SockError>;
    /// Reads and discards up to `max` bytes.
    fn recv_discard(&mut self, now: Instant, s: TcpId, max: usize) -> Result<usize, SockError>;
    /// The application reads `s` only with `recv_discard` from now on: its bytes need not
    /// be stored (`wirelab_apps::HostSockets::discard_payload`). Ignored by default.
    fn discard_payload(&mut self, _s: TcpId) {}
    /// `shutdown(SHUT_WR)`.
    fn shutdown_write(&mut self, now: Instant, s: TcpId) -> Result<(), SockError>;
    /// `close()`.
    fn close(&mut self, now: Instant, s: TcpId);
    /// `setsockopt()`.
    fn set_option(&mut self, s: TcpId, opt: wirelab_tcp::SockOpt) -> Result<(), SockError>;
    /// The TCP connection carrying a stream socket (itself on a plain host; the shim's
    /// TCP connection on a shim host, `None` while it has none).
    fn stream_tcp(&self, s: TcpId) -> Option<TcpId>;
    /// The SCTP association carrying a stream socket (`None` unless a shim carries it
    /// over SCTP).
    fn stream_sctp(&self, _s: TcpId) -> Option<wirelab_sctp::SocketId> {
        None
    }
    /// Transport a stream socket ended up on (`tcp`, `sctp`, or empty while undecided).
    fn stream_transport(&self, _s: TcpId) -> &'static str {
        "tcp"
    }
}

/// Plain TCP and SCTP endpoints side by side: TCP segments go to TCP, everything else to
/// SCTP; TCP transmits first. The common case and the hot path.
///
/// `repr(C, align(64))`: `sctp_used`, read by every poll, in the TCP endpoint's first
/// line (Rust's own order put it after the SCTP endpoint, a line of its own).
#[repr(C, align(64))]
pub struct DualStack {
    /// The SCTP endpoint has been handed a packet or a socket call: until then it has
    /// nothing to send, no timer and no event, and the per-packet polls skip it (with
    /// thousands of TCP-only hosts its state would be one more cold cache line each time).
    sctp_used: bool,
    tcp: TcpEndpoint,
    sctp: SctpEndpoint,
}

impl Engine for DualStack {
    fn handle_packet(&mut self, now: Instant, d: Datagram<'_>) {
        if d.proto == wirelab_wire::ip_proto::TCP {
            Engine::handle_packet(&mut self.tcp, now, d);
        } else {
            self.sctp_used = true;
            Engine::handle_packet(&mut self.sctp, now, d);
        }
    }
    fn handle_timeout(&mut self, now: Instant) {
        // each engine runs only when its own timer is due
        if self.tcp.poll_timeout().is_some_and(|t| t <= now) {
            self.tcp.handle_timeout(now);
        }
        if self.sctp_used && self.sctp.poll_timeout().is_some_and(|t| t <= now) {
            self.sctp.handle_timeout(now);
        }
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        match self.tcp.poll_transmit(now, buf) {
            Some(t) => Some(t),
            None if self.sctp_used => self.sctp.poll_transmit(now, buf),
            None => None,
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        if !self.sctp_used {
            return Engine::poll_timeout(&self.tcp);
        }
        match (Engine::poll_timeout(&self.tcp), Engine::poll_timeout(&self.sctp)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    fn tx_complete(&mut self, now: Instant, sk: u64, truesize: u32) -> bool {
        // only TCP charges its datagrams (TCP Small Queues)
        self.tcp.tx_complete(now, sk, truesize)
    }
    fn poll_event(&mut self) -> Option<(SocketRef, SockEvent)> {
        match Engine::poll_event(&mut self.tcp) {
            None if self.sctp_used => Engine::poll_event(&mut self.sctp),
            e => e,
        }
    }
}

impl Transports for DualStack {
    fn tcp(&self) -> &TcpEndpoint {
        &self.tcp
    }
    fn tcp_mut(&mut self) -> &mut TcpEndpoint {
        &mut self.tcp
    }
    fn sctp(&self) -> &SctpEndpoint {
        &self.sctp
    }
    fn sctp_mut(&mut self) -> &mut SctpEndpoint {
        self.sctp_used = true;
        &mut self.sctp
    }
    fn connect(&mut self, now: Instant, local: Ipv4Addr, remote: SocketAddrV4) -> Result<TcpId, SockError> {
        self.tcp.connect(now, local, remote)
    }
    fn listen(&mut self, local: SocketAddrV4, backlog: u32) -> Result<TcpId, SockError> {
        self.tcp.listen(local, backlog)
    }
    fn accept(&mut self, l: TcpId) -> Option<TcpId> {
        self.tcp.accept(l)
    }
    fn send(&mut self, now: Instant, s: TcpId, data: &[u8]) -> Result<usize, SockError> {
        self.tcp.send(now, s, data)
    }
    fn send_static(&mut self, now: Instant, s: TcpId, data: &'static [u8]) -> Result<usize, SockError> {
        self.tcp.send_static(now, s, data)
    }
    fn recv(&mut self, now: Instant, s: TcpId, buf: &mut [u8]) -> Result<usize, SockError> {
        self.tcp.recv(now, s, buf)
    }
    fn recv_discard(&mut self, now: Instant, s: TcpId, max: usize) -> Result<usize, SockError> {
        self.tcp.recv_discard(now, s, max)
    }
    fn discard_payload(&mut self, s: TcpId) {
        self.tcp.discard_payload(s)
    }
    fn shutdown_write(&mut self, now: Instant, s: TcpId) -> Result<(), SockError> {
        self.tcp.shutdown_write(now, s)
    }
    fn close(&mut self, now: Instant, s: TcpId) {
        self.tcp.close(now, s)
    }
    fn set_option(&mut self, s: TcpId, opt: wirelab_tcp::SockOpt) -> Result<(), SockError> {
        self.tcp.set_option(s, opt)
    }
    fn stream_tcp(&self, s: TcpId) -> Option<TcpId> {
        Some(s)
    }
}

impl Transports for ShimStack {
    fn tcp(&self) -> &TcpEndpoint {
        ShimStack::tcp(self)
    }
    fn tcp_mut(&mut self) -> &mut TcpEndpoint {
        ShimStack::tcp_mut(self)
    }
    fn sctp(&self) -> &SctpEndpoint {
        ShimStack::sctp(self)
    }
    fn sctp_mut(&mut self) -> &mut SctpEndpoint {
        ShimStack::sctp_mut(self)
    }
    fn shim(&self) -> Option<&ShimStack> {
        Some(self)
    }
    fn connect(&mut self, now: Instant, local: Ipv4Addr, remote: SocketAddrV4) -> Result<TcpId, SockError> {
        ShimStack::connect(self, now, local, remote).map(|s| TcpId(s.0))
    }
    fn connect_multi(&mut self, now: Instant, local: Ipv4Addr, locals: &[Ipv4Addr], remote: SocketAddrV4, remote_alt: &[Ipv4Addr]) -> Result<TcpId, SockError> {
        if remote_alt.is_empty() {
            return Transports::connect(self, now, local, remote);
        }
        let mut l = vec![local];
        l.extend(locals.iter().copied().filter(|a| *a != local));
        let mut r = vec![*remote.ip()];
        r.extend(remote_alt.iter().copied().filter(|a| a != remote.ip()));
        ShimStack::connect_multi(self, now, &l, &r, remote.port()).map(|s| TcpId(s.0))
    }
    fn listen(&mut self, local: SocketAddrV4, backlog: u32) -> Result<TcpId, SockError> {
        ShimStack::listen(self, local, backlog).map(|s| TcpId(s.0))
    }
    fn accept(&mut self, l: TcpId) -> Option<TcpId> {
        ShimStack::accept(self, ShimId(l.0)).map(|s| TcpId(s.0))
    }
    fn send(&mut self, now: Instant, s: TcpId, data: &[u8]) -> Result<usize, SockError> {
        ShimStack::send(self, now, ShimId(s.0), data)
    }
    fn recv(&mut self, now: Instant, s: TcpId, buf: &mut [u8]) -> Result<usize, SockError> {
        ShimStack::recv(self, now, ShimId(s.0), buf)
    }
    fn recv_discard(&mut self, now: Instant, s: TcpId, max: usize) -> Result<usize, SockError> {
        ShimStack::recv_discard(self, now, ShimId(s.0), max)
    }
    fn shutdown_write(&mut self, now: Instant, s: TcpId) -> Result<(), SockError> {
        ShimStack::shutdown_write(self, now, ShimId(s.0))
    }
    fn close(&mut self, now: Instant, s: TcpId) {
        ShimStack::close(self, now, ShimId(s.0))
    }
    fn set_option(&mut self, s: TcpId, opt: wirelab_tcp::SockOpt) -> Result<(), SockError> {
        ShimStack::set_option(self, ShimId(s.0), opt)
    }
    fn stream_tcp(&self, s: TcpId) -> Option<TcpId> {
        self.info(ShimId(s.0)).and_then(|i| i.tcp)
    }
    fn stream_sctp(&self, s: TcpId) -> Option<wirelab_sctp::SocketId> {
        self.info(ShimId(s.0)).filter(|i| i.transport == Some(wirelab_shim::Transport::Sctp)).and_then(|i| i.sctp)
    }
    fn stream_transport(&self, s: TcpId) -> &'static str {
        match self.info(ShimId(s.0)).and_then(|i| i.transport) {
            Some(wirelab_shim::Transport::Sctp) => "sctp",
            Some(wirelab_shim::Transport::Tcp) => "tcp",
            None => "",
        }
    }
}

/// A host's transports, the socket-ownership table, and receiver-side rate control.
///
/// `repr(C, align(64))`: what every visit reads (engines, pending entry, the rate-class
/// check) in the first cache line, the owner tables next (Rust's own order spread them
/// over four lines, each cold per visit with thousands of hosts).
#[repr(C, align(64))]
pub struct HostStack {
    engines: Box<dyn Transports>,
    /// Time of this stack's pending `Event::Stack` entry.
    pub(crate) scheduled: Option<Instant>,
    /// Rate-controlled sockets waiting for their qdisc class (`net.ipv4.cbq_class` set).
    pub(crate) rate_class_pending: Vec<wirelab_tcp::SocketId>,
    /// Owning app per stream socket, then per SCTP socket.
    tcp_owner: Vec<u32>,
    sctp_owner: Vec<u32>,
    /// Receiver-side rate control (seed 003), when the node sets `net.ipv4.rate_*`.
    pub rate: Option<wirelab_ratectl::RateConfig>,
    /// Rate probes of the controlled TCP sockets, in creation order.
    pub rate_probes: Vec<(wirelab_tcp::SocketId, wirelab_ratectl::RateProbe)>,
    /// UDP rate policies by local port.
    pub udp_rate: std::collections::BTreeMap<u16, wirelab_ratectl::UdpRatePolicy>,
}

impl HostStack {
    pub(crate) fn new(tcp: TcpEndpoint, sctp: SctpEndpoint, shim: Option<wirelab_shim::ShimConfig>) -> Self {
        let engines: Box<dyn Transports> = match shim {
            None => Box::new(DualStack { tcp, sctp_used: false, sctp }),
            Some(cfg) => Box::new(ShimStack::new(cfg, tcp, sctp)),
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
    /// Owner of a socket.
    pub fn owner(&self, s: SocketRef) -> Option<u32> {
        match s {
            SocketRef::Stream(i) => Self::get(&self.tcp_owner, i),
            SocketRef::Sctp(i) => Self::get(&self.sctp_owner, i),
        }
    }
    /// The host's engines: what the driver runs.
    pub fn engine(&mut self) -> &mut dyn Transports {
        self.engines.as_mut()
    }
    /// Earliest timer of the host's engines.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.engines.poll_timeout()
    }
    /// True on a shim host.
    pub fn is_shim(&self) -> bool {
        self.engines.shim().is_some()
    }
    /// The shim, on a shim host (rule matches, fallback reasons).
    pub fn shim(&self) -> Option<&ShimStack> {
        self.engines.shim()
    }
    /// The TCP endpoint (under the shim on a shim host).
    pub fn tcp(&self) -> &TcpEndpoint {
        self.engines.tcp()
    }
    /// The TCP endpoint, mutably.
    pub fn tcp_mut(&mut self) -> &mut TcpEndpoint {
        self.engines.tcp_mut()
    }
    /// The SCTP endpoint (native SCTP apps; under the shim on a shim host).
    pub fn sctp(&self) -> &SctpEndpoint {
        self.engines.sctp()
    }
    /// The SCTP endpoint, mutably.
    pub fn sctp_mut(&mut self) -> &mut SctpEndpoint {
        self.engines.sctp_mut()
    }

    /// Next socket event as `(owning app, input)`; events of unowned sockets are dropped.
    pub(crate) fn poll_app_event(&mut self) -> Option<Option<(u32, wirelab_apps::AppInput)>> {
        use wirelab_apps::AppInput;
        let (s, e) = self.engines.poll_event()?;
        Some(self.owner(s).map(|a| match s {
            SocketRef::Stream(i) => (a, AppInput::Tcp(TcpId(i), e)),
            SocketRef::Sctp(i) => (a, AppInput::Sctp(wirelab_sctp::SocketId(i), e)),
        }))
    }

    // ---- what the driver and recorders read of stream sockets ----

    /// `tcp_info` of a stream socket (when it runs over TCP).
    pub fn s_info(&self, s: TcpId) -> Option<wirelab_tcp::TcpInfo> {
        self.engines.stream_tcp(s).and_then(|t| self.tcp().info(t))
    }
    /// The SCTP association under a stream socket that the shim carries over SCTP
    /// (`None` on plain hosts and for TCP-carried sockets).
    pub fn s_sctp(&self, s: TcpId) -> Option<wirelab_sctp::SocketId> {
        self.engines.stream_sctp(s)
    }
    /// Counters of the SCTP association under a shim-carried stream socket.
    pub fn s_sctp_stats(&self, s: TcpId) -> Option<wirelab_sctp::AssocStats> {
        self.s_sctp(s).and_then(|x| self.sctp().info(x)).map(|i| i.stats)
    }
    /// (local, remote) of a stream socket (when it runs over TCP).
    pub fn s_addrs(&self, s: TcpId) -> Option<(SocketAddrV4, SocketAddrV4)> {
        self.engines.stream_tcp(s).and_then(|t| self.tcp().addrs(t))
    }
    /// Transport a stream socket ended up on (`tcp` or `sctp`).
    pub fn s_transport(&self, s: TcpId) -> &'static str {
        self.engines.stream_transport(s)
    }
}

/// The socket API applications use: stream calls go to the host's [`Transports`]
/// (TCP, or the shim), `sctp_*` calls to its SCTP endpoint.
impl wirelab_apps::HostSockets for HostStack {
    fn connect(&mut self, now: Instant, local: Ipv4Addr, locals: &[Ipv4Addr], remote: SocketAddrV4, remote_alt: &[Ipv4Addr]) -> Result<TcpId, SockError> {
        self.engines.connect_multi(now, local, locals, remote, remote_alt)
    }
    fn listen(&mut self, local: SocketAddrV4, backlog: u32) -> Result<TcpId, SockError> {
        self.engines.listen(local, backlog)
    }
    fn accept(&mut self, l: TcpId) -> Option<TcpId> {
        self.engines.accept(l)
    }
    fn send(&mut self, now: Instant, s: TcpId, data: &[u8]) -> Result<usize, SockError> {
        self.engines.send(now, s, data)
    }
    fn send_static(&mut self, now: Instant, s: TcpId, data: &'static [u8]) -> Result<usize, SockError> {
        self.engines.send_static(now, s, data)
    }
    fn recv(&mut self, now: Instant, s: TcpId, buf: &mut [u8]) -> Result<usize, SockError> {
        self.engines.recv(now, s, buf)
    }
    fn recv_discard(&mut self, now: Instant, s: TcpId, max: usize) -> Result<usize, SockError> {
        self.engines.recv_discard(now, s, max)
    }
    fn discard_payload(&mut self, s: TcpId) {
        self.engines.discard_payload(s)
    }
    fn shutdown_write(&mut self, now: Instant, s: TcpId) -> Result<(), SockError> {
        self.engines.shutdown_write(now, s)
    }
    fn close(&mut self, now: Instant, s: TcpId) {
        self.engines.close(now, s)
    }
    fn set_option(&mut self, s: TcpId, opt: wirelab_tcp::SockOpt) -> Result<(), SockError> {
        self.engines.set_option(s, opt)
    }
    fn own_stream(&mut self, s: TcpId, app: u32) {
        self.own_tcp(s, app)
    }
    fn info(&self, s: TcpId) -> Option<wirelab_tcp::TcpInfo> {
        self.s_info(s)
    }
    fn sctp_stats(&self, s: TcpId) -> Option<wirelab_sctp::AssocStats> {
        self.s_sctp_stats(s)
    }
    fn addrs(&self, s: TcpId) -> Option<(SocketAddrV4, SocketAddrV4)> {
        self.s_addrs(s)
    }
    fn transport(&self, s: TcpId) -> &'static str {
        self.s_transport(s)
    }
    fn sctp_connect(&mut self, now: Instant, locals: &[Ipv4Addr], remotes: &[Ipv4Addr], port: u16) -> Result<SctpId, wirelab_sctp::SockError> {
        self.sctp_mut().connect(now, locals, remotes, port)
    }
    fn sctp_listen(&mut self, locals: &[Ipv4Addr], port: u16, backlog: u32) -> Result<SctpId, wirelab_sctp::SockError> {
        self.sctp_mut().listen(locals, port, backlog)
    }
    fn sctp_accept(&mut self, l: SctpId) -> Option<SctpId> {
        self.sctp_mut().accept(l)
    }
    fn sctp_set_option(&mut self, s: SctpId, opt: wirelab_sctp::SockOpt) -> Result<(), wirelab_sctp::SockError> {
        self.sctp_mut().set_option(s, opt)
    }
    fn sctp_send(&mut self, now: Instant, s: SctpId, stream: u16, data: &[u8], unordered: bool) -> Result<usize, wirelab_sctp::SockError> {
        self.sctp_mut().send(now, s, stream, data, unordered)
    }
    fn sctp_recv(&mut self, now: Instant, s: SctpId, buf: &mut [u8]) -> Result<Option<wirelab_sctp::RecvInfo>, wirelab_sctp::SockError> {
        self.sctp_mut().recv(now, s, buf)
    }
    fn sctp_recv_discard(&mut self, now: Instant, s: SctpId, max: usize) -> Result<Option<wirelab_sctp::RecvInfo>, wirelab_sctp::SockError> {
        self.sctp_mut().recv_discard(now, s, max)
    }
    fn sctp_shutdown(&mut self, now: Instant, s: SctpId) -> Result<(), wirelab_sctp::SockError> {
        self.sctp_mut().shutdown(now, s)
    }
    fn sctp_close(&mut self, now: Instant, s: SctpId) {
        self.sctp_mut().close(now, s)
    }
    fn sctp_info(&self, s: SctpId) -> Option<wirelab_sctp::AssocInfo> {
        self.sctp().info(s)
    }
    fn own_sctp(&mut self, s: SctpId, app: u32) {
        HostStack::own_sctp(self, s, app)
    }
}

/// Per-node transport configuration, applied when the node's stack is first created. The
/// scenario builder fills it from profiles and sysctl names (`wirelab_scenario::sysctl`).
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
