//! [`ShimStack`]: one host's TCP and SCTP engines behind a TCP-semantics socket API.
//!
//! Call order is `wirelab_core::transport`'s: after every `handle_*` or command, drain
//! [`ShimStack::poll_transmit`], then [`ShimStack::poll_event`], then read
//! [`ShimStack::poll_timeout`].
use crate::adapt::{self, Found};
use crate::rules::{Chain, Policy, RuleMatch, RuleTable};
use core::fmt;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};
use wirelab_core::{Duration, Instant, SockEvent, Transmit, HEADROOM};
use wirelab_sctp::{SctpEndpoint, SockError as SctpError, SockOpt as SctpOpt, SocketId as SctpId};
use wirelab_tcp::{SockError, SockOpt, SocketId as TcpId, TcpEndpoint};

mod plumbing;

/// A socket handle of the shim (listener or connection); never reused within a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ShimSocketId(pub u32);

impl fmt::Display for ShimSocketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shim#{}", self.0)
    }
}

/// The transport a shim socket ended up on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Transport {
    /// Plain TCP (rule disabled the shim, fallback, or a TCP client on a dual listener).
    Tcp,
    /// SCTP (one association, all given addresses).
    Sctp,
}

/// Why a connecting socket left SCTP for TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FallbackReason {
    /// The SCTP open failed: an ABORT arrived (no SCTP listener on the port) or INIT
    /// retransmissions ran out (`max_init_retransmits`).
    Abort,
    /// [`ShimStack::handle_icmp_unreachable`] reported the SCTP destination unreachable.
    IcmpUnreachable,
    /// The association was not up within [`Fallback::timeout`].
    Timer,
}

/// Which events make a connecting socket fall back to TCP (Bickhart: "ABORT / ICMP
/// unreachable / fallback timer"). With a trigger off, that event fails the connect instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fallback {
    /// Fall back when the SCTP open fails (ABORT, INIT retransmissions exhausted).
    pub on_abort: bool,
    /// Fall back on ICMP protocol/port unreachable for the INIT.
    pub on_icmp: bool,
    /// Fall back if the association is not established this long after `connect`. The
    /// original value is unknown; seed-systems.md §5.2 recommends one RTO.Initial (3 s).
    pub timeout: Option<Duration>,
}

impl Default for Fallback {
    fn default() -> Self {
        Fallback { on_abort: true, on_icmp: true, timeout: Some(Duration::from_secs(3)) }
    }
}

/// How `shutdown(SHUT_WR)` is carried over SCTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalfClose {
    /// With a shim peer: an end-of-stream marker on the control stream; the SCTP
    /// association is shut down only when both directions are closed. With a native SCTP
    /// peer: SCTP SHUTDOWN (the peer sees EOF but can no longer send; SCTP has no
    /// half-closed state).
    ControlStream,
    /// Always SCTP SHUTDOWN (what a shim without the emulation does).
    SctpShutdown,
}

/// Shim configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShimConfig {
    /// The `local` and `remote` chains.
    pub rules: RuleTable,
    /// Fallback triggers.
    pub fallback: Fallback,
    /// Half-close emulation.
    pub half_close: HalfClose,
    /// The reserved SCTP stream carrying half-close markers (stream 0 carries the bytes).
    pub control_stream: u16,
    /// Largest SCTP message the shim cuts the byte stream into (bytes).
    pub max_msg_bytes: usize,
    /// Bytes `send` accepts while the connect is still in progress (the shim holds them
    /// until it knows which transport to use).
    pub pending_limit_bytes: usize,
    /// Advertise "I am a shim" in INIT/INIT-ACK (RFC 5061 Adaptation Layer Indication)
    /// and honour the peer's advertisement. Off: behave as a native SCTP endpoint would
    /// see a shim without the emulation (control stream never used).
    pub advertise: bool,
}

impl Default for ShimConfig {
    fn default() -> Self {
        ShimConfig {
            rules: RuleTable::default(),
            fallback: Fallback::default(),
            half_close: HalfClose::ControlStream,
            control_stream: 1,
            max_msg_bytes: 16 * 1024,
            pending_limit_bytes: 64 * 1024,
            advertise: true,
        }
    }
}

/// One entry of the rule-match log: which rule decided which socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatchRecord {
    /// When the decision was taken.
    pub at: Instant,
    /// The shim socket (listener or connecting socket).
    pub socket: ShimSocketId,
    /// Address looked up: remote address for `remote`, bound address for `local`
    /// listeners; for sockets a listener accepted (which inherit its decision), the peer.
    pub addr: SocketAddrV4,
    /// The decision.
    pub matched: RuleMatch,
    /// Transport a connecting socket ended up on (kept after the socket is gone);
    /// `None` for listeners and while undecided.
    pub transport: Option<Transport>,
    /// Why it fell back from SCTP to TCP, if it did.
    pub fallback: Option<FallbackReason>,
}

/// What [`ShimStack::info`] reports about a socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShimInfo {
    /// True for listeners.
    pub listener: bool,
    /// Transport in use; `None` while an SCTP-first connect is still undecided.
    pub transport: Option<Transport>,
    /// The rule decision (for accepted sockets: their listener's).
    pub rule: RuleMatch,
    /// Set if the socket fell back from SCTP to TCP.
    pub fallback: Option<FallbackReason>,
    /// The peer advertised the shim (half-close emulation in use).
    pub peer_is_shim: bool,
    /// The underlying TCP socket (query `tcp().info()` with it).
    pub tcp: Option<TcpId>,
    /// The underlying SCTP socket (query `sctp().info()` with it).
    pub sctp: Option<SctpId>,
    /// Bytes the application handed to `send` and the shim passed to a transport.
    pub bytes_sent: u64,
    /// Bytes delivered to the application by `recv`.
    pub bytes_received: u64,
}

struct ListenerSock {
    port: u16,
    tcp: Vec<TcpId>,
    sctp: Option<SctpId>,
    /// Transport of each `Incoming` not yet accepted, in arrival order.
    tokens: VecDeque<Transport>,
}

#[derive(Default)]
struct ConnSock {
    transport: Option<Transport>,
    tcp: Option<TcpId>,
    sctp: Option<SctpId>,
    local_ips: Vec<Ipv4Addr>,
    remote_ips: Vec<Ipv4Addr>,
    remote_port: u16,
    fallback: Option<FallbackReason>,
    deadline: Option<Instant>,
    connected: bool,
    peer_is_shim: bool,
    /// Bytes accepted from the application but not yet given to a transport.
    outbox: Vec<u8>,
    outbox_off: usize,
    want_writable: bool,
    /// Application called `shutdown_write` or `close`.
    wr_closed: bool,
    /// TCP: FIN/close issued. SCTP: the control marker or SHUTDOWN issued.
    fin_done: bool,
    /// SCTP SHUTDOWN (or close) issued.
    sctp_down: bool,
    app_closed: bool,
    /// Stream-0 bytes handed to SCTP (the marker carries this count).
    tx_bytes: u64,
    rx_bytes: u64,
    peer_eof_at: Option<u64>,
    peer_closed_reported: bool,
    ctrl: Vec<u8>,
    /// Options set before the transport was known, replayed on a TCP fallback.
    opts: Vec<SockOpt>,
}

enum Slot {
    Free,
    Listener(ListenerSock, RuleMatch),
    Conn(Box<ConnSock>, RuleMatch),
}

/// Marker kind byte of the half-close control message: `b'F'` + 8-byte stream-0 length.
const MARK_FIN: u8 = b'F';
const MARK_LEN: usize = 9;
/// Capability records older than this are dropped (an INIT whose COOKIE-ECHO never came).
const CAP_TTL: Duration = Duration::from_secs(120);
const CAP_MAX: usize = 4096;

/// A host's transport stack with the TCP-to-SCTP shim (Bickhart, U. Delaware 2005/2007).
///
/// Applications see TCP semantics (byte stream, half-close, RST-like errors as
/// [`SockError`]); per the rule tables each socket runs over TCP or over SCTP, with
/// SCTP-first connects falling back to TCP transparently. See the crate docs and
/// docs/shim.md.
pub struct ShimStack {
    cfg: ShimConfig,
    tcp: TcpEndpoint,
    sctp: SctpEndpoint,
    slots: Vec<Slot>,
    by_tcp: BTreeMap<TcpId, u32>,
    by_sctp: BTreeMap<SctpId, u32>,
    deadlines: BTreeSet<(Instant, u32)>,
    /// (local port, peer port, peer address) of INIT/INIT-ACKs that carried the shim's
    /// indication, with their arrival time.
    caps: BTreeMap<(u16, u16, Ipv4Addr), Instant>,
    events: VecDeque<(ShimSocketId, SockEvent)>,
    matches: Vec<MatchRecord>,
    now: Instant,
    /// Engine sockets the shim ever used (ids are never reused), so events of released
    /// ones are dropped instead of being reported as native.
    owned_tcp: Vec<bool>,
    owned_sctp: Vec<bool>,
    /// Events of engine sockets opened directly through [`ShimStack::tcp_mut`] /
    /// [`ShimStack::sctp_mut`] by native applications.
    native: VecDeque<NativeEvent>,
    /// SCTP ports whose INIT-ACKs (listeners) or INITs (pending connects) advertise the shim.
    adv_listen_ports: BTreeMap<u16, u32>,
    adv_connect_ports: BTreeMap<u16, u32>,
    /// Listeners closed by the application: SCTP associations still completing on them are
    /// aborted (SctpEndpoint cannot unbind a listener).
    dead_sctp_listeners: BTreeSet<SctpId>,
}

/// An event of an engine socket that native (non-shim) applications opened through
/// [`ShimStack::tcp_mut`] or [`ShimStack::sctp_mut`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NativeEvent {
    /// A TCP socket's event.
    Tcp(TcpId, SockEvent),
    /// An SCTP socket's event.
    Sctp(SctpId, SockEvent),
}

fn bump(m: &mut BTreeMap<u16, u32>, port: u16) {
    *m.entry(port).or_default() += 1;
}
fn unbump(m: &mut BTreeMap<u16, u32>, port: u16) {
    if let Some(n) = m.get_mut(&port) {
        *n -= 1;
        if *n == 0 {
            m.remove(&port);
        }
    }
}
fn mark(v: &mut Vec<bool>, i: u32) {
    let i = i as usize;
    if v.len() <= i {
        v.resize(i + 1, false);
    }
    v[i] = true;
}

fn map_sctp_err(e: SctpError) -> SockError {
    match e {
        SctpError::BadSocket => SockError::InvalidSocket,
        SctpError::NotConnected => SockError::NotConnected,
        SctpError::AddrInUse => SockError::AddrInUse,
        SctpError::Reset => SockError::ConnectionReset,
        SctpError::NoPorts => SockError::AddrNotAvailable,
        SctpError::Invalid | SctpError::InvalidStream | SctpError::MsgSize | SctpError::IsListener => SockError::InvalidState,
    }
}

impl ShimStack {
    /// A stack over the given engines (their configurations and RNG streams are the
    /// caller's: the shim draws no randomness of its own).
    pub fn new(cfg: ShimConfig, tcp: TcpEndpoint, sctp: SctpEndpoint) -> Self {
        ShimStack {
            cfg,
            tcp,
            sctp,
            slots: Vec::new(),
            by_tcp: BTreeMap::new(),
            by_sctp: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            caps: BTreeMap::new(),
            events: VecDeque::new(),
            matches: Vec::new(),
            now: Instant::ZERO,
            owned_tcp: Vec::new(),
            owned_sctp: Vec::new(),
            native: VecDeque::new(),
            adv_listen_ports: BTreeMap::new(),
            adv_connect_ports: BTreeMap::new(),
            dead_sctp_listeners: BTreeSet::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ShimConfig {
        &self.cfg
    }
    /// Replaces the rule table; existing sockets keep their decisions.
    pub fn set_rules(&mut self, rules: RuleTable) {
        self.cfg.rules = rules;
    }
    /// The TCP engine (for `info`/`state` of [`ShimInfo::tcp`] sockets).
    pub fn tcp(&self) -> &TcpEndpoint {
        &self.tcp
    }
    /// The SCTP engine (for `info` of [`ShimInfo::sctp`] sockets).
    pub fn sctp(&self) -> &SctpEndpoint {
        &self.sctp
    }
    /// The TCP engine, for native TCP applications sharing this host (their events come
    /// from [`Self::poll_native_event`]). Do not touch the shim's own sockets through it.
    pub fn tcp_mut(&mut self) -> &mut TcpEndpoint {
        &mut self.tcp
    }
    /// The SCTP engine, for native SCTP applications sharing this host (events from
    /// [`Self::poll_native_event`]; their INIT/INIT-ACKs never advertise the shim).
    pub fn sctp_mut(&mut self) -> &mut SctpEndpoint {
        &mut self.sctp
    }
    /// Next event of a native application's engine socket. Drain it after
    /// [`Self::poll_event`].
    pub fn poll_native_event(&mut self) -> Option<NativeEvent> {
        let now = self.now;
        self.drain(now);
        self.native.pop_front()
    }
    /// Every rule decision taken so far, in order.
    pub fn matches(&self) -> &[MatchRecord] {
        &self.matches
    }
    /// Records a connecting socket's outcome in its (latest) match-log entry.
    fn note_outcome(&mut self, idx: u32, t: Transport, fallback: Option<FallbackReason>) {
        if let Some(m) = self.matches.iter_mut().rev().find(|m| m.socket.0 == idx) {
            m.transport = Some(t);
            m.fallback = fallback;
        }
    }
    /// The match log as a text table (`time socket chain addr rule policy`).
    pub fn matches_table(&self) -> String {
        let mut s = String::from("time_s      socket   chain  addr                   rule                                     policy\n");
        for m in &self.matches {
            let rule = match m.matched.rule {
                Some(i) => self.cfg.rules.chain(m.matched.chain).get(i).map(|r| format!("#{i} {r}")).unwrap_or_else(|| format!("#{i}")),
                None => "default".to_string(),
            };
            s.push_str(&format!("{:<11.6} {:<8} {:<6} {:<22} {:<40} {}\n", m.at.as_secs_f64(), m.socket.to_string(), m.matched.chain.name(), m.addr.to_string(), rule, m.matched.policy.name()));
        }
        s
    }

    // --------------------------------------------------------------------------------
    // driver interface
    // --------------------------------------------------------------------------------

    /// A TCP (`proto` 6) or SCTP (`proto` 132) packet, the IPv4 payload, addressed to
    /// this host. Other protocols are ignored.
    pub fn handle_packet(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, proto: u8, tos: u8, bytes: &[u8]) {
        self.handle_packet_csum(now, src, dst, proto, tos, bytes, true);
    }

    /// [`Self::handle_packet`] with the transport checksum check optional (`verify =
    /// false`: the driver vouches for it, `CHECKSUM_UNNECESSARY`).
    #[allow(clippy::too_many_arguments)]
    pub fn handle_packet_csum(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, proto: u8, tos: u8, bytes: &[u8], verify: bool) {
        self.now = now;
        match proto {
            6 => self.tcp.handle_packet_csum(now, src, dst, tos, bytes, verify),
            132 => {
                match if self.cfg.advertise { adapt::strip_indication(bytes) } else { Found::No } {
                    Found::Yes(_, stripped) => {
                        if bytes.len() >= 4 {
                            let sport = u16::from_be_bytes([bytes[0], bytes[1]]);
                            let dport = u16::from_be_bytes([bytes[2], bytes[3]]);
                            self.note_cap(now, (dport, sport, src));
                        }
                        self.sctp.handle_packet_csum(now, src, dst, tos, &stripped, verify);
                    }
                    Found::No => self.sctp.handle_packet_csum(now, src, dst, tos, bytes, verify),
                }
            }
            _ => return,
        }
        self.drain(now);
    }

    /// ICMP destination unreachable (protocol or port unreachable) quoting an SCTP packet
    /// (`proto` 132) sent from `local` to `remote`: with [`Fallback::on_icmp`] a pending
    /// SCTP-first connect falls back to TCP (Bickhart: "ICMP proto- or port-unreachable"),
    /// otherwise it fails. The driver extracts the addresses and ports from the quoted
    /// header. Other protocols are ignored (TCP's own ICMP handling is not modelled).
    pub fn handle_icmp_unreachable(&mut self, now: Instant, proto: u8, local: SocketAddrV4, remote: SocketAddrV4) {
        self.now = now;
        if proto != 132 {
            return;
        }
        let hit = self.by_sctp.iter().find_map(|(&aid, &idx)| {
            let (lport, pport, _) = self.sctp.addrs(aid)?;
            let Some(Slot::Conn(c, _)) = self.slots.get(idx as usize) else { return None };
            (c.transport.is_none() && lport == local.port() && pport == remote.port() && c.remote_ips.contains(remote.ip())).then_some(idx)
        });
        if let Some(idx) = hit {
            if self.cfg.fallback.on_icmp {
                self.fall_back(now, idx, FallbackReason::IcmpUnreachable);
            } else {
                self.fail_connect(now, idx);
            }
        }
        self.drain(now);
    }

    /// Runs due timers of both engines and the shim's fallback timers.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        self.tcp.handle_timeout(now);
        self.sctp.handle_timeout(now);
        self.drain(now);
        while let Some(&(t, idx)) = self.deadlines.first() {
            if t > now {
                break;
            }
            self.deadlines.pop_first();
            let live = matches!(self.slots.get(idx as usize), Some(Slot::Conn(c, _)) if c.transport.is_none() && c.deadline == Some(t));
            if live {
                self.fall_back(now, idx, FallbackReason::Timer);
            }
        }
        self.drain(now);
    }

    /// Next packet: transport bytes after the [`HEADROOM`] bytes `buf` holds on entry,
    /// exactly like the engines. TCP segments first, then SCTP packets.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.now = now;
        if let Some(t) = self.tcp.poll_transmit(now, buf) {
            return Some(t);
        }
        let t = self.sctp.poll_transmit(now, buf)?;
        if self.cfg.advertise && buf.len() >= HEADROOM + 16 {
            let sport = u16::from_be_bytes([buf[HEADROOM], buf[HEADROOM + 1]]);
            let ours = match buf[HEADROOM + 12] {
                1 => self.adv_connect_ports.contains_key(&sport),
                2 => self.adv_listen_ports.contains_key(&sport),
                _ => false,
            };
            if ours {
                adapt::append_indication(buf, HEADROOM);
            }
        }
        Some(t)
    }

    /// Earliest time [`Self::handle_timeout`] has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        [self.tcp.poll_timeout(), self.sctp.poll_timeout(), self.deadlines.first().map(|d| d.0)].into_iter().flatten().min()
    }

    /// Next application event, for shim sockets.
    pub fn poll_event(&mut self) -> Option<(ShimSocketId, SockEvent)> {
        let now = self.now;
        self.drain(now);
        self.events.pop_front()
    }

    // --------------------------------------------------------------------------------
    // application interface (TCP semantics)
    // --------------------------------------------------------------------------------

    /// `listen()` on `local` (0.0.0.0 = any address). If the `local` chain enables the
    /// shim, listens on TCP and SCTP; [`Self::accept`] returns whichever arrives first.
    pub fn listen(&mut self, local: SocketAddrV4, backlog: u32) -> Result<ShimSocketId, SockError> {
        let ips: Vec<Ipv4Addr> = if local.ip().is_unspecified() { Vec::new() } else { vec![*local.ip()] };
        self.listen_multi(&ips, local.port(), backlog)
    }

    /// `listen()` bound to several local addresses (empty = any): TCP listens on each, the
    /// SCTP listener binds all of them (multihomed associations).
    pub fn listen_multi(&mut self, local_ips: &[Ipv4Addr], port: u16, backlog: u32) -> Result<ShimSocketId, SockError> {
        let key = SocketAddrV4::new(local_ips.first().copied().unwrap_or(Ipv4Addr::UNSPECIFIED), port);
        let m = self.cfg.rules.lookup(Chain::Local, key);
        let mut tcp = Vec::new();
        let tcp_ips: Vec<Ipv4Addr> = if local_ips.is_empty() { vec![Ipv4Addr::UNSPECIFIED] } else { local_ips.to_vec() };
        for ip in tcp_ips {
            match self.tcp.listen(SocketAddrV4::new(ip, port), backlog) {
                Ok(l) => tcp.push(l),
                Err(e) => {
                    for l in tcp {
                        self.tcp.close(self.now, l);
                    }
                    return Err(e);
                }
            }
        }
        let sctp = if m.policy == Policy::Enable {
            match self.sctp.listen(local_ips, port, backlog) {
                Ok(l) => Some(l),
                Err(e) => {
                    for l in tcp {
                        self.tcp.close(self.now, l);
                    }
                    return Err(map_sctp_err(e));
                }
            }
        } else {
            None
        };
        let idx = self.slots.len() as u32;
        for &l in &tcp {
            self.map_tcp(l, idx);
        }
        if let Some(l) = sctp {
            self.map_sctp(l, idx);
            bump(&mut self.adv_listen_ports, port);
        }
        self.slots.push(Slot::Listener(ListenerSock { port, tcp, sctp, tokens: VecDeque::new() }, m));
        self.matches.push(MatchRecord { at: self.now, socket: ShimSocketId(idx), addr: key, matched: m, transport: None, fallback: None });
        Ok(ShimSocketId(idx))
    }

    /// `accept()`: the next connection of either transport, in arrival order.
    pub fn accept(&mut self, listener: ShimSocketId) -> Option<ShimSocketId> {
        loop {
            let Some(Slot::Listener(l, m)) = self.slots.get_mut(listener.0 as usize) else { return None };
            let m = *m;
            let tok = l.tokens.pop_front()?;
            let (tcp, sctp) = match tok {
                Transport::Tcp => (l.tcp.iter().find_map(|&t| self.tcp.accept(t)), None),
                Transport::Sctp => (None, l.sctp.and_then(|s| self.sctp.accept(s))),
            };
            if tcp.is_none() && sctp.is_none() {
                continue;
            }
            let idx = self.slots.len() as u32;
            let mut c = ConnSock { transport: Some(tok), tcp, sctp, connected: true, ..Default::default() };
            if let Some(t) = tcp {
                self.map_tcp(t, idx);
                if let Some((la, ra)) = self.tcp.addrs(t) {
                    c.local_ips = vec![*la.ip()];
                    c.remote_ips = vec![*ra.ip()];
                    c.remote_port = ra.port();
                }
            }
            if let Some(s) = sctp {
                self.map_sctp(s, idx);
                if let Some((lport, pport, peer)) = self.sctp.addrs(s) {
                    c.remote_ips = vec![peer];
                    c.remote_port = pport;
                    c.peer_is_shim = self.cfg.advertise && self.caps.remove(&(lport, pport, peer)).is_some();
                }
            }
            let peer = SocketAddrV4::new(c.remote_ips.first().copied().unwrap_or(Ipv4Addr::UNSPECIFIED), c.remote_port);
            self.slots.push(Slot::Conn(Box::new(c), m));
            // accepted sockets inherit the listener's decision; log them with their peer
            self.matches.push(MatchRecord { at: self.now, socket: ShimSocketId(idx), addr: peer, matched: m, transport: Some(tok), fallback: None });
            return Some(ShimSocketId(idx));
        }
    }

    /// Non-blocking `connect()` from `local` to `remote`. `Connected` (or
    /// `ConnectFailed`) follows once either transport completes; see
    /// [`Self::connect_multi`].
    pub fn connect(&mut self, now: Instant, local: Ipv4Addr, remote: SocketAddrV4) -> Result<ShimSocketId, SockError> {
        self.connect_multi(now, &[local], &[*remote.ip()], remote.port())
    }

    /// `connect()` with all local and peer addresses: SCTP binds them all (multihoming,
    /// first peer address = primary path); a TCP connect uses the first of each. The
    /// `remote` chain is looked up with the first peer address and the port.
    pub fn connect_multi(&mut self, now: Instant, local_ips: &[Ipv4Addr], remote_ips: &[Ipv4Addr], port: u16) -> Result<ShimSocketId, SockError> {
        self.now = now;
        let (Some(&l0), Some(&r0)) = (local_ips.first(), remote_ips.first()) else { return Err(SockError::InvalidState) };
        let remote = SocketAddrV4::new(r0, port);
        let m = self.cfg.rules.lookup(Chain::Remote, remote);
        let idx = self.slots.len() as u32;
        let mut c = ConnSock { local_ips: local_ips.to_vec(), remote_ips: remote_ips.to_vec(), remote_port: port, ..Default::default() };
        if m.policy == Policy::Enable {
            let a = self.sctp.connect(now, local_ips, remote_ips, port).map_err(map_sctp_err)?;
            self.map_sctp(a, idx);
            c.sctp = Some(a);
            if let Some((lport, _, _)) = self.sctp.addrs(a) {
                bump(&mut self.adv_connect_ports, lport);
            }
            if let Some(d) = self.cfg.fallback.timeout {
                let t = now + d;
                c.deadline = Some(t);
                self.deadlines.insert((t, idx));
            }
        } else {
            let t = self.tcp.connect(now, l0, remote)?;
            self.map_tcp(t, idx);
            c.tcp = Some(t);
            c.transport = Some(Transport::Tcp);
        }
        let transport = c.transport;
        self.slots.push(Slot::Conn(Box::new(c), m));
        self.matches.push(MatchRecord { at: now, socket: ShimSocketId(idx), addr: remote, matched: m, transport, fallback: None });
        self.drain(now);
        Ok(ShimSocketId(idx))
    }

    /// `write()`: bytes accepted (`Ok(0)` = would block; `Writable` follows). While the
    /// connect is pending, up to [`ShimConfig::pending_limit_bytes`] are held by the shim.
    pub fn send(&mut self, now: Instant, s: ShimSocketId, data: &[u8]) -> Result<usize, SockError> {
        self.now = now;
        let idx = s.0;
        let limit = self.cfg.pending_limit_bytes;
        let c = self.conn_mut(idx)?;
        if c.wr_closed {
            return Err(SockError::BrokenPipe);
        }
        if data.is_empty() {
            return Ok(0);
        }
        if !c.connected {
            let room = limit.saturating_sub(c.outbox.len() - c.outbox_off);
            let n = room.min(data.len());
            c.outbox.extend_from_slice(&data[..n]);
            if n < data.len() {
                c.want_writable = true;
            }
            return Ok(n);
        }
        self.pump(now, idx);
        let c = self.conn_mut(idx)?;
        if c.outbox_off < c.outbox.len() {
            c.want_writable = true;
            return Ok(0);
        }
        let r = self.transport_send(now, idx, data);
        self.drain(now);
        r
    }

    /// `read()`: `Ok(0)` only at end of stream, `Err(WouldBlock)` when nothing is queued.
    /// Over SCTP the bytes of stream 0 are returned as one stream (message boundaries are
    /// not preserved) and control-stream markers are consumed here.
    pub fn recv(&mut self, now: Instant, s: ShimSocketId, buf: &mut [u8]) -> Result<usize, SockError> {
        self.now = now;
        let idx = s.0;
        let c = self.conn_mut(idx)?;
        let r = match (c.transport, c.tcp, c.sctp) {
            (Some(Transport::Tcp), Some(t), _) => {
                let r = self.tcp.recv(now, t, buf);
                if let (Ok(n), Ok(c)) = (&r, self.conn_mut(idx)) {
                    c.rx_bytes += *n as u64;
                }
                r
            }
            (Some(Transport::Sctp), _, Some(a)) => self.sctp_recv(now, idx, a, buf),
            _ => Err(SockError::WouldBlock),
        };
        self.drain(now);
        r
    }

    /// Reads and discards up to `max` bytes (a sink that only counts); returns like
    /// [`Self::recv`].
    pub fn recv_discard(&mut self, now: Instant, s: ShimSocketId, max: usize) -> Result<usize, SockError> {
        self.now = now;
        let c = self.conn_mut(s.0)?;
        if let (Some(Transport::Tcp), Some(t)) = (c.transport, c.tcp) {
            let r = self.tcp.recv_discard(now, t, max);
            if let (Ok(n), Ok(c)) = (&r, self.conn_mut(s.0)) {
                c.rx_bytes += *n as u64;
            }
            self.drain(now);
            return r;
        }
        let mut scratch = [0u8; 16 * 1024];
        let mut total = 0;
        while total < max {
            let k = (max - total).min(scratch.len());
            match self.recv(now, s, &mut scratch[..k]) {
                Ok(0) if total == 0 => return Ok(0),
                Ok(0) => break,
                Ok(n) => total += n,
                Err(e) if total == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(total)
    }

    /// `setsockopt()` with TCP's option vocabulary. `TCP_NODELAY`, `SO_SNDBUF` and
    /// `SO_RCVBUF` also apply to the SCTP association (`SCTP_NODELAY`, same buffers); the
    /// TCP-only options are kept for a TCP fallback and ignored by SCTP. On a listener
    /// the option is inherited by both transports' accepted connections.
    pub fn set_option(&mut self, s: ShimSocketId, opt: SockOpt) -> Result<(), SockError> {
        let sctp_opt = match opt {
            SockOpt::NoDelay(b) => Some(SctpOpt::NoDelay(b)),
            SockOpt::SndBuf(v) => Some(SctpOpt::SndBuf(v)),
            SockOpt::RcvBuf(v) => Some(SctpOpt::RcvBuf(v)),
            _ => None,
        };
        let (tcp, sctp): (Vec<TcpId>, Option<SctpId>) = match self.slots.get_mut(s.0 as usize) {
            Some(Slot::Listener(l, _)) => (l.tcp.clone(), l.sctp),
            Some(Slot::Conn(c, _)) if !c.app_closed => {
                if c.transport.is_none() {
                    c.opts.retain(|o| core::mem::discriminant(o) != core::mem::discriminant(&opt));
                    c.opts.push(opt.clone());
                }
                (c.tcp.into_iter().collect(), c.sctp)
            }
            _ => return Err(SockError::InvalidSocket),
        };
        for t in tcp {
            self.tcp.set_option(t, opt.clone())?;
        }
        if let (Some(a), Some(o)) = (sctp, sctp_opt) {
            self.sctp.set_option(a, o).map_err(map_sctp_err)?;
        }
        Ok(())
    }

    /// `shutdown(SHUT_WR)`: the peer reads EOF after the queued bytes and may keep
    /// sending. Over SCTP with a shim peer this is the control-stream marker; with a
    /// native SCTP peer it is an SCTP SHUTDOWN (see [`HalfClose`]).
    pub fn shutdown_write(&mut self, now: Instant, s: ShimSocketId) -> Result<(), SockError> {
        self.now = now;
        let c = self.conn_mut(s.0)?;
        if c.wr_closed {
            return Ok(());
        }
        c.wr_closed = true;
        self.pump(now, s.0);
        self.drain(now);
        Ok(())
    }

    /// `close()`: graceful; the id is invalid afterwards. Bytes still held by the shim are
    /// sent first. Closing a listener closes its TCP and SCTP listeners.
    pub fn close(&mut self, now: Instant, s: ShimSocketId) {
        self.now = now;
        let idx = s.0;
        match self.slots.get_mut(idx as usize) {
            Some(Slot::Listener(l, _)) => {
                let tcp = std::mem::take(&mut l.tcp);
                for t in tcp {
                    self.by_tcp.remove(&t);
                    self.tcp.close(now, t);
                }
                if let Some(a) = l.sctp.take() {
                    self.by_sctp.remove(&a);
                    // SctpEndpoint cannot unbind a listener: associations that still
                    // complete on it are aborted as they arrive (like RSTs from a closed
                    // TCP port), and it no longer advertises the shim.
                    self.dead_sctp_listeners.insert(a);
                    let port = l.port;
                    unbump(&mut self.adv_listen_ports, port);
                }
                self.slots[idx as usize] = Slot::Free;
            }
            Some(Slot::Conn(c, _)) => {
                c.app_closed = true;
                c.wr_closed = true;
                if let Some(d) = c.deadline.take() {
                    self.deadlines.remove(&(d, idx));
                }
                if c.transport.is_none() && c.outbox_off == c.outbox.len() {
                    // Nothing to deliver: drop the pending open.
                    if let Some(a) = c.sctp.take() {
                        self.by_sctp.remove(&a);
                        self.unadvertise_connect(a);
                        self.sctp.abort(now, a);
                    }
                    self.slots[idx as usize] = Slot::Free;
                } else {
                    self.pump(now, idx);
                    self.finish_close(now, idx);
                }
            }
            _ => {}
        }
        self.drain(now);
    }

    /// After `close()` on an SCTP socket: SHUTDOWN once the marker is out, and free the
    /// slot if the association is already gone.
    fn finish_close(&mut self, now: Instant, idx: u32) {
        let Some(c) = self.conn_any(idx) else { return };
        let (Some(Transport::Sctp), Some(a)) = (c.transport, c.sctp) else { return };
        if c.fin_done && !c.sctp_down {
            self.sctp_down(now, idx, a);
        }
        if matches!(self.sctp.state(a), None | Some(wirelab_sctp::AssocState::Closed)) {
            self.by_sctp.remove(&a);
            self.slots[idx as usize] = Slot::Free;
        }
    }

    /// Abortive close (`SO_LINGER` 0): TCP RST or SCTP ABORT; the id is invalid afterwards.
    pub fn abort(&mut self, now: Instant, s: ShimSocketId) {
        self.now = now;
        let idx = s.0;
        if let Some(Slot::Conn(c, _)) = self.slots.get_mut(idx as usize) {
            if let Some(t) = c.tcp.take() {
                self.by_tcp.remove(&t);
                self.tcp.abort(now, t);
            }
            let pending = c.transport.is_none();
            if let Some(d) = c.deadline.take() {
                self.deadlines.remove(&(d, idx));
            }
            if let Some(a) = c.sctp.take() {
                self.by_sctp.remove(&a);
                if pending {
                    self.unadvertise_connect(a);
                }
                self.sctp.abort(now, a);
            }
            self.slots[idx as usize] = Slot::Free;
        } else if matches!(self.slots.get(idx as usize), Some(Slot::Listener(..))) {
            self.close(now, s);
        }
        self.drain(now);
    }

    /// Which transport and rule a socket uses, and its byte counters.
    pub fn info(&self, s: ShimSocketId) -> Option<ShimInfo> {
        match self.slots.get(s.0 as usize)? {
            Slot::Free => None,
            Slot::Listener(l, m) => Some(ShimInfo {
                listener: true,
                transport: None,
                rule: *m,
                fallback: None,
                peer_is_shim: false,
                tcp: l.tcp.first().copied(),
                sctp: l.sctp,
                bytes_sent: 0,
                bytes_received: 0,
            }),
            Slot::Conn(c, _) if c.app_closed => None,
            Slot::Conn(c, m) => Some(ShimInfo {
                listener: false,
                transport: c.transport,
                rule: *m,
                fallback: c.fallback,
                peer_is_shim: c.peer_is_shim,
                tcp: c.tcp,
                sctp: c.sctp,
                bytes_sent: c.tx_bytes,
                bytes_received: c.rx_bytes,
            }),
        }
    }

    /// Live shim sockets (not yet closed by the application) in id order.
    pub fn sockets(&self) -> impl Iterator<Item = ShimSocketId> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| match s {
                Slot::Free => false,
                Slot::Conn(c, _) => !c.app_closed,
                Slot::Listener(..) => true,
            })
            .map(|(i, _)| ShimSocketId(i as u32))
    }

    /// Connections closed by the application whose SCTP association is still shutting
    /// down (the shim keeps them until SCTP's shutdown completes).
    pub fn lingering(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s, Slot::Conn(c, _) if c.app_closed)).count()
    }
}
