//! Engine-pair tests: a small in-test network moves packets between ShimStacks and plain
//! TCP/SCTP endpoints with a fixed one-way latency, optional random loss, black-holed
//! addresses and ICMP unreachable generation.
use crate::*;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};
use wirelab_core::{Duration, Instant, Rng, SockEvent, Transmit, HEADROOM};
use wirelab_sctp::{SctpConfig, SctpEndpoint};
use wirelab_tcp::{TcpConfig, TcpEndpoint};

enum Stack {
    Shim(Box<ShimStack>),
    Tcp(Box<TcpEndpoint>),
    Sctp(Box<SctpEndpoint>),
}

struct Node {
    ips: Vec<Ipv4Addr>,
    st: Stack,
    events: VecDeque<(u32, SockEvent)>,
    /// Events of native sockets on a shim host.
    native: VecDeque<NativeEvent>,
    /// A host without SCTP answers SCTP packets with ICMP protocol unreachable.
    icmp_no_sctp: bool,
}

enum Item {
    Pkt { dst_node: usize, t: Transmit, bytes: Vec<u8> },
    Icmp { dst_node: usize, local: SocketAddrV4, remote: SocketAddrV4 },
}

struct Net {
    nodes: Vec<Node>,
    now: Instant,
    latency: Duration,
    q: BTreeMap<(Instant, u64), Item>,
    seq: u64,
    rng: Rng,
    loss: f64,
    /// Destination addresses whose packets vanish (a failed interface).
    down: BTreeSet<Ipv4Addr>,
    /// Packets delivered per protocol.
    delivered: BTreeMap<u8, u64>,
}

fn ip(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}
fn sa(s: &str) -> SocketAddrV4 {
    s.parse().unwrap()
}

fn shim_cfg(rules: &str) -> ShimConfig {
    ShimConfig { rules: RuleTable::parse(rules).unwrap(), ..Default::default() }
}

fn shim(name: &str, cfg: ShimConfig) -> Stack {
    // RFC 9260 RTO.Initial 1 s keeps handshake retries short; other values default.
    let s = SctpConfig { rto_initial: Duration::from_secs(1), ..Default::default() };
    Stack::Shim(Box::new(ShimStack::new(cfg, TcpEndpoint::new(TcpConfig::default(), Rng::stream(7, &format!("{name}/tcp"))), SctpEndpoint::new(s, Rng::stream(7, &format!("{name}/sctp"))))))
}

impl Net {
    fn new(latency_ms: u64) -> Self {
        Net { nodes: Vec::new(), now: Instant::ZERO, latency: Duration::from_millis(latency_ms), q: BTreeMap::new(), seq: 0, rng: Rng::stream(7, "net"), loss: 0.0, down: BTreeSet::new(), delivered: BTreeMap::new() }
    }
    fn add(&mut self, ips: &[&str], st: Stack) -> usize {
        self.nodes.push(Node { ips: ips.iter().map(|s| ip(s)).collect(), st, events: VecDeque::new(), native: VecDeque::new(), icmp_no_sctp: false });
        self.nodes.len() - 1
    }
    fn shim(&mut self, n: usize) -> &mut ShimStack {
        match &mut self.nodes[n].st {
            Stack::Shim(s) => s,
            _ => panic!("node {n} is not a shim"),
        }
    }
    fn tcp(&mut self, n: usize) -> &mut TcpEndpoint {
        match &mut self.nodes[n].st {
            Stack::Tcp(s) => s,
            _ => panic!("node {n} is not TCP"),
        }
    }
    fn sctp(&mut self, n: usize) -> &mut SctpEndpoint {
        match &mut self.nodes[n].st {
            Stack::Sctp(s) => s,
            _ => panic!("node {n} is not SCTP"),
        }
    }
    fn events(&mut self, n: usize) -> Vec<(u32, SockEvent)> {
        self.nodes[n].events.drain(..).collect()
    }

    fn node_of(&self, a: Ipv4Addr) -> Option<usize> {
        self.nodes.iter().position(|n| n.ips.contains(&a))
    }

    /// Drains every node's transmissions onto the wire and its events into `events`.
    fn flush(&mut self) {
        let mut buf = vec![0u8; HEADROOM];
        for i in 0..self.nodes.len() {
            let now = self.now;
            loop {
                buf.truncate(HEADROOM);
                let t = match &mut self.nodes[i].st {
                    Stack::Shim(s) => s.poll_transmit(now, &mut buf),
                    Stack::Tcp(s) => s.poll_transmit(now, &mut buf),
                    Stack::Sctp(s) => s.poll_transmit(now, &mut buf),
                };
                let Some(t) = t else { break };
                let bytes = buf[HEADROOM..].to_vec();
                if self.down.contains(&t.dst) || (self.loss > 0.0 && self.rng.chance(self.loss)) {
                    continue;
                }
                let Some(d) = self.node_of(t.dst) else { continue };
                self.seq += 1;
                self.q.insert((now + self.latency, self.seq), Item::Pkt { dst_node: d, t, bytes });
            }
            let n = &mut self.nodes[i];
            loop {
                let e = match &mut n.st {
                    Stack::Shim(s) => s.poll_event().map(|(a, e)| (a.0, e)),
                    Stack::Tcp(s) => s.poll_event().map(|(a, e)| (a.0, e)),
                    Stack::Sctp(s) => s.poll_event().map(|(a, e)| (a.0, e)),
                };
                let Some(e) = e else { break };
                n.events.push_back(e);
            }
            if let Stack::Shim(s) = &mut n.st {
                while let Some(e) = s.poll_native_event() {
                    n.native.push_back(e);
                }
            }
        }
    }

    fn next_time(&self) -> Option<Instant> {
        let mut t = self.q.keys().next().map(|k| k.0);
        for n in &self.nodes {
            let nt = match &n.st {
                Stack::Shim(s) => s.poll_timeout(),
                Stack::Tcp(s) => s.poll_timeout(),
                Stack::Sctp(s) => s.poll_timeout(),
            };
            t = match (t, nt) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        t
    }

    /// Advances to the next event; false if nothing is scheduled.
    fn step(&mut self) -> bool {
        let Some(t) = self.next_time() else { return false };
        self.now = self.now.max(t);
        let now = self.now;
        while let Some(e) = self.q.first_entry() {
            if e.key().0 > now {
                break;
            }
            match e.remove() {
                Item::Pkt { dst_node, t, bytes } => {
                    *self.delivered.entry(t.proto).or_default() += 1;
                    let icmp = self.nodes[dst_node].icmp_no_sctp;
                    match &mut self.nodes[dst_node].st {
                        Stack::Shim(s) => s.handle_packet(now, t.src, t.dst, t.proto, t.tos, &bytes),
                        Stack::Tcp(s) if t.proto == 6 => s.handle_packet(now, t.src, t.dst, t.tos, &bytes),
                        Stack::Tcp(_) if t.proto == 132 && icmp && bytes.len() >= 4 => {
                            let sport = u16::from_be_bytes([bytes[0], bytes[1]]);
                            let dport = u16::from_be_bytes([bytes[2], bytes[3]]);
                            if let Some(back) = self.node_of(t.src) {
                                self.seq += 1;
                                self.q.insert((now + self.latency, self.seq), Item::Icmp { dst_node: back, local: SocketAddrV4::new(t.src, sport), remote: SocketAddrV4::new(t.dst, dport) });
                            }
                        }
                        Stack::Sctp(s) if t.proto == 132 => s.handle_packet(now, t.src, t.dst, t.tos, &bytes),
                        _ => {}
                    }
                }
                Item::Icmp { dst_node, local, remote } => {
                    if let Stack::Shim(s) = &mut self.nodes[dst_node].st {
                        s.handle_icmp_unreachable(now, 132, local, remote);
                    }
                }
            }
        }
        for n in &mut self.nodes {
            match &mut n.st {
                Stack::Shim(s) => s.handle_timeout(now),
                Stack::Tcp(s) => s.handle_timeout(now),
                Stack::Sctp(s) => s.handle_timeout(now),
            }
        }
        true
    }

    /// Runs until `f` returns true (checked after every step) or `limit` passes.
    fn run(&mut self, limit: Duration, mut f: impl FnMut(&mut Net) -> bool) -> bool {
        let end = self.now + limit;
        loop {
            self.flush();
            if f(self) {
                self.flush();
                return true;
            }
            self.flush();
            if !self.step() || self.now > end {
                return false;
            }
        }
    }
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut r = Rng::stream(seed, "data");
    (0..len).map(|_| r.next_u32() as u8).collect()
}

/// Sends `data[*off..]` through a shim socket as far as it goes.
fn shim_push(net: &mut Net, n: usize, s: ShimSocketId, data: &[u8], off: &mut usize) {
    let now = net.now;
    while *off < data.len() {
        match net.shim(n).send(now, s, &data[*off..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => *off += k,
        }
    }
}

/// Reads everything available from a shim socket; returns true at EOF.
fn shim_pull(net: &mut Net, n: usize, s: ShimSocketId, out: &mut Vec<u8>) -> bool {
    let now = net.now;
    let mut b = [0u8; 8192];
    loop {
        match net.shim(n).recv(now, s, &mut b) {
            Ok(0) => return true,
            Ok(k) => out.extend_from_slice(&b[..k]),
            Err(SockError::WouldBlock) => return false,
            Err(e) => panic!("recv error {e}"),
        }
    }
}

fn shim_pair(latency_ms: u64) -> (Net, usize, usize) {
    let mut net = Net::new(latency_ms);
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote default enable")));
    let s = net.add(&["10.0.0.2"], shim("s", shim_cfg("local default enable")));
    (net, c, s)
}

/// Connects client node `c` to a listener on node `s` port `port`; returns (client
/// socket, accepted server socket) once both exist.
fn connect_accept(net: &mut Net, c: usize, s: usize, port: u16) -> (ShimSocketId, ShimSocketId) {
    let l = net.shim(s).listen(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port), 16).unwrap();
    let now = net.now;
    let cs = net.shim(c).connect(now, ip("10.0.0.1"), SocketAddrV4::new(ip("10.0.0.2"), port)).unwrap();
    let mut acc = None;
    let mut conn = false;
    assert!(net.run(Duration::from_secs(30), |net| {
        conn |= net.events(c).contains(&(cs.0, SockEvent::Connected));
        if acc.is_none() {
            acc = net.shim(s).accept(l);
        }
        conn && acc.is_some()
    }));
    (cs, acc.unwrap())
}

// ----------------------------------------------------------------------------------
// rules at the stack level
// ----------------------------------------------------------------------------------

#[test]
fn rules_decide_transport_and_are_logged() {
    let mut net = Net::new(5);
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote disable 10.0.0.2 port 22\nremote enable 10.0.0.0/24\nremote default disable")));
    let s = net.add(&["10.0.0.2"], shim("s", shim_cfg("local disable port 22\nlocal enable any")));
    let l22 = net.shim(s).listen(sa("0.0.0.0:22"), 8).unwrap();
    let l80 = net.shim(s).listen(sa("0.0.0.0:80"), 8).unwrap();
    assert!(net.shim(s).info(l22).unwrap().sctp.is_none(), "port 22 listens on TCP only");
    assert!(net.shim(s).info(l80).unwrap().sctp.is_some(), "port 80 listens on both");
    let a = net.shim(c).connect(Instant::ZERO, ip("10.0.0.1"), sa("10.0.0.2:22")).unwrap();
    let b = net.shim(c).connect(Instant::ZERO, ip("10.0.0.1"), sa("10.0.0.2:80")).unwrap();
    let mut up = BTreeSet::new();
    assert!(net.run(Duration::from_secs(5), |net| {
        for (id, e) in net.events(c) {
            if e == SockEvent::Connected {
                up.insert(id);
            }
        }
        up.len() == 2
    }));
    let ia = net.shim(c).info(a).unwrap();
    let ib = net.shim(c).info(b).unwrap();
    assert_eq!((ia.transport, ia.rule.rule, ia.rule.policy), (Some(Transport::Tcp), Some(0), Policy::Disable));
    assert_eq!((ib.transport, ib.rule.rule, ib.rule.policy), (Some(Transport::Sctp), Some(1), Policy::Enable));
    assert_eq!(ib.fallback, None);
    let log = net.shim(c).matches().to_vec();
    assert_eq!(log.len(), 2);
    assert_eq!((log[0].socket, log[0].addr, log[0].matched.rule), (a, sa("10.0.0.2:22"), Some(0)));
    assert_eq!((log[1].socket, log[1].matched.rule), (b, Some(1)));
    let table = net.shim(c).matches_table();
    assert!(table.contains("#0 remote disable 10.0.0.2 port 22"), "{table}");
    assert!(table.contains("#1 remote enable 10.0.0.0/24"), "{table}");
    let slog = net.shim(s).matches().to_vec();
    assert_eq!((slog[0].matched.chain, slog[0].matched.rule, slog[0].matched.policy), (Chain::Local, Some(0), Policy::Disable));
    assert_eq!((slog[1].matched.rule, slog[1].matched.policy), (Some(1), Policy::Enable));
    // nothing but TCP went to port 22: the SCTP packets are the port-80 association's
    assert!(net.delivered.get(&132).copied().unwrap_or(0) >= 4);
}

// ----------------------------------------------------------------------------------
// fallback
// ----------------------------------------------------------------------------------

/// Connects and returns (socket, time of the Connected event, all client events).
fn connect_and_wait(net: &mut Net, c: usize, to: &str) -> (ShimSocketId, Instant, Vec<SockEvent>) {
    let now = net.now;
    let cs = net.shim(c).connect(now, ip("10.0.0.1"), sa(to)).unwrap();
    let mut evs = Vec::new();
    let mut at = None;
    net.run(Duration::from_secs(60), |net| {
        for (id, e) in net.events(c) {
            assert_eq!(id, cs.0);
            evs.push(e);
            if e == SockEvent::Connected || e == SockEvent::ConnectFailed {
                at = Some(net.now);
            }
        }
        at.is_some()
    });
    (cs, at.expect("connect finished"), evs)
}

#[test]
fn fallback_on_abort_when_server_has_no_sctp_listener() {
    let mut net = Net::new(10);
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote default enable")));
    // server shim with the shim disabled for listeners: TCP only; its SCTP stack answers
    // the INIT with ABORT (RFC 9260 §8.4 item 3)
    let s = net.add(&["10.0.0.2"], shim("s", shim_cfg("local default disable")));
    let l = net.shim(s).listen(sa("0.0.0.0:8000"), 8).unwrap();
    let (cs, at, evs) = connect_and_wait(&mut net, c, "10.0.0.2:8000");
    assert_eq!(evs, vec![SockEvent::Connected], "one socket, one Connected, no failure seen");
    // INIT → ABORT (1 RTT), SYN → SYN-ACK (1 RTT)
    assert!(at >= Instant::from_nanos(40_000_000) && at < Instant::from_nanos(100_000_000), "{at:?}");
    let i = net.shim(c).info(cs).unwrap();
    assert_eq!((i.transport, i.fallback), (Some(Transport::Tcp), Some(FallbackReason::Abort)));
    assert!(i.sctp.is_none() && i.tcp.is_some());
    // and the connection carries data
    let t_ = net.now;
    net.shim(c).send(t_, cs, b"ping").unwrap();
    let mut acc = None;
    let mut got = Vec::new();
    assert!(net.run(Duration::from_secs(2), |net| {
        if acc.is_none() {
            acc = net.shim(s).accept(l);
        }
        if let Some(a) = acc {
            shim_pull(net, s, a, &mut got);
        }
        got == b"ping"
    }));
    assert_eq!(net.shim(s).info(acc.unwrap()).unwrap().transport, Some(Transport::Tcp));
}

#[test]
fn fallback_on_timer_when_sctp_is_silently_dropped() {
    let mut net = Net::new(10);
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote default enable")));
    // a legacy host: TCP only, SCTP packets vanish
    let s = net.add(&["10.0.0.2"], Stack::Tcp(Box::new(TcpEndpoint::new(TcpConfig::default(), Rng::stream(7, "legacy")))));
    net.tcp(s).listen(sa("0.0.0.0:22"), 8).unwrap();
    let (cs, at, evs) = connect_and_wait(&mut net, c, "10.0.0.2:22");
    assert_eq!(evs, vec![SockEvent::Connected]);
    // fallback timer 3 s, then one RTT for the TCP handshake
    assert!(at >= Instant::from_nanos(3_020_000_000) && at < Instant::from_nanos(3_100_000_000), "{at:?}");
    assert_eq!(net.shim(c).info(cs).unwrap().fallback, Some(FallbackReason::Timer));
    // the legacy server completes the handshake half an RTT later
    assert!(net.run(Duration::from_millis(100), |net| net.events(s).iter().any(|e| e.1 == SockEvent::Incoming)));
}

#[test]
fn fallback_on_icmp_unreachable() {
    let mut net = Net::new(10);
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote default enable")));
    let s = net.add(&["10.0.0.2"], Stack::Tcp(Box::new(TcpEndpoint::new(TcpConfig::default(), Rng::stream(7, "legacy")))));
    net.nodes[s].icmp_no_sctp = true;
    net.tcp(s).listen(sa("0.0.0.0:22"), 8).unwrap();
    let (cs, at, evs) = connect_and_wait(&mut net, c, "10.0.0.2:22");
    assert_eq!(evs, vec![SockEvent::Connected]);
    assert!(at >= Instant::from_nanos(40_000_000) && at < Instant::from_nanos(100_000_000), "{at:?}");
    assert_eq!(net.shim(c).info(cs).unwrap().fallback, Some(FallbackReason::IcmpUnreachable));
}

#[test]
fn without_fallback_triggers_the_connect_fails() {
    let mut net = Net::new(10);
    let mut cfg = shim_cfg("remote default enable");
    cfg.fallback = Fallback { on_abort: false, on_icmp: false, timeout: None };
    let c = net.add(&["10.0.0.1"], shim("c", cfg));
    let s = net.add(&["10.0.0.2"], shim("s", shim_cfg("local default disable")));
    net.shim(s).listen(sa("0.0.0.0:8000"), 8).unwrap();
    let (cs, _, evs) = connect_and_wait(&mut net, c, "10.0.0.2:8000");
    assert_eq!(evs, vec![SockEvent::ConnectFailed]);
    let i = net.shim(c).info(cs).unwrap();
    assert_eq!((i.transport, i.fallback), (None, None));
    let t_ = net.now;
    assert_eq!(net.shim(c).send(t_, cs, b"x").ok(), Some(1), "held: never connected");
}

// ----------------------------------------------------------------------------------
// non-blocking connect, dual listen
// ----------------------------------------------------------------------------------

#[test]
fn nonblocking_connect_reports_once_and_holds_early_writes() {
    let (mut net, c, s) = shim_pair(20);
    let l = net.shim(s).listen(sa("0.0.0.0:5001"), 4).unwrap();
    let cs = net.shim(c).connect(Instant::ZERO, ip("10.0.0.1"), sa("10.0.0.2:5001")).unwrap();
    // connect returned at once: nothing decided yet
    let i = net.shim(c).info(cs).unwrap();
    assert_eq!(i.transport, None);
    assert_eq!(net.shim(c).recv(Instant::ZERO, cs, &mut [0u8; 4]), Err(SockError::WouldBlock));
    let early = pattern(100_000, 3);
    // only pending_limit_bytes are held before the transport is known
    let n = net.shim(c).send(Instant::ZERO, cs, &early).unwrap();
    assert_eq!(n, 64 * 1024);
    let mut off = n;
    let mut evs = Vec::new();
    let mut acc = None;
    let mut got = Vec::new();
    assert!(net.run(Duration::from_secs(10), |net| {
        for (_, e) in net.events(c) {
            evs.push((net.now, e));
            if e == SockEvent::Writable || e == SockEvent::Connected {
                shim_push(net, c, cs, &early, &mut off);
            }
        }
        if acc.is_none() {
            acc = net.shim(s).accept(l);
        }
        if let Some(a) = acc {
            shim_pull(net, s, a, &mut got);
        }
        got.len() == early.len()
    }));
    assert_eq!(got, early);
    let connected: Vec<_> = evs.iter().filter(|e| e.1 == SockEvent::Connected).collect();
    assert_eq!(connected.len(), 1);
    // SCTP four-way handshake: COOKIE-ACK arrives after 2 RTT = 80 ms
    assert_eq!(connected[0].0, Instant::from_nanos(80_000_000));
    assert!(evs.iter().any(|e| e.1 == SockEvent::Writable), "held bytes drained → Writable");
    assert!(!evs.iter().any(|e| e.1 == SockEvent::ConnectFailed));
    assert_eq!(net.shim(c).info(cs).unwrap().transport, Some(Transport::Sctp));
}

#[test]
fn dual_listen_serves_tcp_only_and_shim_clients() {
    let mut net = Net::new(5);
    let s = net.add(&["10.0.0.2"], shim("s", shim_cfg("local enable any port 21")));
    let legacy = net.add(&["10.0.0.3"], Stack::Tcp(Box::new(TcpEndpoint::new(TcpConfig::default(), Rng::stream(7, "legacy")))));
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote enable 10.0.0.2")));
    let l = net.shim(s).listen(sa("0.0.0.0:21"), 8).unwrap();
    let t = net.tcp(legacy).connect(Instant::ZERO, ip("10.0.0.3"), sa("10.0.0.2:21")).unwrap();
    net.tcp(legacy).send(Instant::ZERO, t, b"from tcp").unwrap();
    let cs = net.shim(c).connect(Instant::ZERO, ip("10.0.0.1"), sa("10.0.0.2:21")).unwrap();
    net.shim(c).send(Instant::ZERO, cs, b"from shim").unwrap();
    let mut accepted: Vec<ShimSocketId> = Vec::new();
    let mut got: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
    let mut incoming = 0;
    assert!(net.run(Duration::from_secs(5), |net| {
        incoming += net.events(s).iter().filter(|e| e == &&(l.0, SockEvent::Incoming)).count();
        while let Some(a) = net.shim(s).accept(l) {
            accepted.push(a);
        }
        for &a in &accepted {
            shim_pull(net, s, a, got.entry(a.0).or_default());
        }
        got.values().filter(|v| !v.is_empty()).count() == 2
    }));
    assert_eq!(incoming, 2);
    assert_eq!(accepted.len(), 2);
    let mut by_transport = BTreeMap::new();
    for &a in &accepted {
        let i = net.shim(s).info(a).unwrap();
        by_transport.insert(i.transport.unwrap(), got[&a.0].clone());
    }
    assert_eq!(by_transport[&Transport::Tcp], b"from tcp");
    assert_eq!(by_transport[&Transport::Sctp], b"from shim");
    // the TCP client connects in one RTT, the SCTP one in two: TCP arrives first
    assert_eq!(net.shim(s).info(accepted[0]).unwrap().transport, Some(Transport::Tcp));
}

// ----------------------------------------------------------------------------------
// half-close emulation
// ----------------------------------------------------------------------------------

/// One side shuts down writing after `first` bytes; the other reads EOF, then sends
/// `second` bytes and shuts down; the first reads them and EOF. Returns the net.
fn half_close_run(client_closes_first: bool) {
    let (mut net, c, s) = shim_pair(10);
    let (cs, ss) = connect_accept(&mut net, c, s, 21);
    assert!(net.shim(c).info(cs).unwrap().peer_is_shim);
    assert!(net.shim(s).info(ss).unwrap().peer_is_shim);
    let (a, asock, b, bsock) = if client_closes_first { (c, cs, s, ss) } else { (s, ss, c, cs) };
    let first = pattern(50_000, 1);
    let second = pattern(300_000, 2);
    let (mut off1, mut off2) = (0, 0);
    let (mut a_got, mut b_got) = (Vec::new(), Vec::new());
    let (mut a_shut, mut b_eof, mut b_shut, mut a_eof) = (false, false, false, false);
    let mut b_eof_at_len = 0;
    assert!(net.run(Duration::from_secs(60), |net| {
        if !a_shut {
            shim_push(net, a, asock, &first, &mut off1);
            if off1 == first.len() {
                let t_ = net.now;
                net.shim(a).shutdown_write(t_, asock).unwrap();
                let t_ = net.now;
                assert_eq!(net.shim(a).send(t_, asock, b"x"), Err(SockError::BrokenPipe));
                a_shut = true;
            }
        }
        if !b_eof {
            b_eof = shim_pull(net, b, bsock, &mut b_got);
            b_eof_at_len = b_got.len();
        }
        // b keeps sending after it saw EOF (the FTP pattern), then closes its side
        if b_eof && !b_shut {
            shim_push(net, b, bsock, &second, &mut off2);
            if off2 == second.len() {
                let t_ = net.now;
                net.shim(b).shutdown_write(t_, bsock).unwrap();
                b_shut = true;
            }
        }
        if !a_eof {
            a_eof = shim_pull(net, a, asock, &mut a_got);
        }
        a_eof && b_eof
    }));
    assert_eq!(b_got, first);
    assert_eq!(b_eof_at_len, first.len());
    assert_eq!(a_got, second);
    // both directions closed → the association shuts down and both apps see Closed
    let (mut ca, mut cb) = (false, false);
    assert!(net.run(Duration::from_secs(10), |net| {
        ca |= net.events(a).contains(&(asock.0, SockEvent::Closed));
        cb |= net.events(b).contains(&(bsock.0, SockEvent::Closed));
        ca && cb
    }));
    for (n, sk) in [(a, asock), (b, bsock)] {
        let aid = net.shim(n).info(sk).unwrap().sctp.unwrap();
        assert_eq!(net.shim(n).sctp().state(aid), Some(wirelab_sctp::AssocState::Closed));
        let t_ = net.now;
        net.shim(n).close(t_, sk);
        assert!(net.shim(n).info(sk).is_none());
    }
}

#[test]
fn half_close_client_first_server_keeps_sending() {
    half_close_run(true);
}

#[test]
fn half_close_server_first_client_keeps_sending() {
    half_close_run(false);
}

#[test]
fn half_close_over_fallback_tcp_is_native() {
    let mut net = Net::new(5);
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote default enable")));
    let s = net.add(&["10.0.0.2"], shim("s", shim_cfg("local default disable")));
    let (cs, ss) = connect_accept(&mut net, c, s, 2121);
    assert_eq!(net.shim(c).info(cs).unwrap().transport, Some(Transport::Tcp));
    let t_ = net.now;
    net.shim(c).send(t_, cs, b"QUIT").unwrap();
    let t_ = net.now;
    net.shim(c).shutdown_write(t_, cs).unwrap();
    let (mut sgot, mut seof, mut sent, mut cgot) = (Vec::new(), false, false, Vec::new());
    assert!(net.run(Duration::from_secs(5), |net| {
        if !seof {
            seof = shim_pull(net, s, ss, &mut sgot);
        }
        if seof && !sent {
            let t_ = net.now;
            net.shim(s).send(t_, ss, b"221 bye").unwrap();
            let t_ = net.now;
            net.shim(s).shutdown_write(t_, ss).unwrap();
            sent = true;
        }
        shim_pull(net, c, cs, &mut cgot)
    }));
    assert_eq!((sgot.as_slice(), cgot.as_slice()), (&b"QUIT"[..], &b"221 bye"[..]));
}

// ----------------------------------------------------------------------------------
// TCP–SCTP configuration: shim client, native SCTP server
// ----------------------------------------------------------------------------------

#[test]
fn shim_client_talks_to_native_sctp_server() {
    let mut net = Net::new(10);
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote enable 10.0.0.2 port 80")));
    let s = net.add(&["10.0.0.2"], Stack::Sctp(Box::new(SctpEndpoint::new(SctpConfig::default(), Rng::stream(7, "native")))));
    let l = net.sctp(s).listen(&[], 80, 8).unwrap();
    let cs = net.shim(c).connect(Instant::ZERO, ip("10.0.0.1"), sa("10.0.0.2:80")).unwrap();
    let request = pattern(40_000, 5);
    let reply = pattern(200_000, 6);
    let mut off = net.shim(c).send(Instant::ZERO, cs, &request).unwrap();
    let (mut srv, mut sgot, mut streams, mut s_eof) = (None, Vec::new(), BTreeSet::new(), false);
    let (mut roff, mut cgot, mut c_eof, mut c_shut) = (0usize, Vec::new(), false, false);
    assert!(net.run(Duration::from_secs(30), |net| {
        let now = net.now;
        shim_push(net, c, cs, &request, &mut off);
        if off == request.len() && !c_shut {
            // the client half-closes: a native peer gets an SCTP SHUTDOWN, i.e. EOF
            net.shim(c).shutdown_write(now, cs).unwrap();
            c_shut = true;
        }
        if srv.is_none() {
            srv = net.sctp(s).accept(l);
        }
        if let Some(a) = srv {
            let mut b = [0u8; 4096];
            while !s_eof {
                match net.sctp(s).recv(now, a, &mut b) {
                    Ok(Some(r)) if r.len == 0 => s_eof = true,
                    Ok(Some(r)) => {
                        streams.insert(r.stream);
                        sgot.extend_from_slice(&b[..r.len]);
                    }
                    _ => break,
                }
            }
            // the native server answers while the association is open
            while roff < reply.len() {
                let k = (reply.len() - roff).min(1400);
                match net.sctp(s).send(now, a, 0, &reply[roff..roff + k], false) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => roff += n,
                }
            }
        }
        if !c_eof {
            c_eof = shim_pull(net, c, cs, &mut cgot);
        }
        s_eof && c_eof
    }));
    assert_eq!(sgot, request, "the native server reads the plain byte stream");
    assert_eq!(streams, BTreeSet::from([0]), "only stream 0: no control messages reach a native app");
    let i = net.shim(c).info(cs).unwrap();
    assert_eq!((i.transport, i.peer_is_shim), (Some(Transport::Sctp), false));
    // SCTP has no half-closed state: what the server sent before the SHUTDOWN arrives
    assert_eq!(cgot, reply[..cgot.len()]);
    assert!(!cgot.is_empty());
}

#[test]
fn native_sctp_client_is_accepted_by_shim_listener() {
    let mut net = Net::new(5);
    let n = net.add(&["10.0.0.1"], Stack::Sctp(Box::new(SctpEndpoint::new(SctpConfig::default(), Rng::stream(7, "native")))));
    let s = net.add(&["10.0.0.2"], shim("s", shim_cfg("local enable any")));
    let l = net.shim(s).listen(sa("10.0.0.2:80"), 8).unwrap();
    let a = net.sctp(n).connect(Instant::ZERO, &[ip("10.0.0.1")], &[ip("10.0.0.2")], 80).unwrap();
    let mut sent = false;
    let mut acc = None;
    let mut got = Vec::new();
    assert!(net.run(Duration::from_secs(5), |net| {
        if !sent && net.events(n).contains(&(a.0, SockEvent::Connected)) {
            // two messages: the shim returns them as one byte stream
            let t_ = net.now;
            net.sctp(n).send(t_, a, 0, b"GET / ", false).unwrap();
            let t_ = net.now;
            net.sctp(n).send(t_, a, 0, b"HTTP/1.0\r\n", false).unwrap();
            sent = true;
        }
        if acc.is_none() {
            acc = net.shim(s).accept(l);
        }
        if let Some(x) = acc {
            shim_pull(net, s, x, &mut got);
        }
        got.len() == 16
    }));
    assert_eq!(got, b"GET / HTTP/1.0\r\n");
    let i = net.shim(s).info(acc.unwrap()).unwrap();
    assert_eq!((i.transport, i.peer_is_shim), (Some(Transport::Sctp), false));
}

// ----------------------------------------------------------------------------------
// bulk transfer, loss, multihoming
// ----------------------------------------------------------------------------------

fn transfer_both_ways(net: &mut Net, c: usize, s: usize, cs: ShimSocketId, ss: ShimSocketId, len: usize, limit_s: u64) {
    let up = pattern(len, 11);
    let down = pattern(len, 12);
    let (mut uo, mut dof) = (0, 0);
    let (mut sgot, mut cgot) = (Vec::new(), Vec::new());
    let (mut cshut, mut sshut, mut ceof, mut seof) = (false, false, false, false);
    assert!(
        net.run(Duration::from_secs(limit_s), |net| {
            shim_push(net, c, cs, &up, &mut uo);
            shim_push(net, s, ss, &down, &mut dof);
            if uo == up.len() && !cshut {
                let t_ = net.now;
                net.shim(c).shutdown_write(t_, cs).unwrap();
                cshut = true;
            }
            if dof == down.len() && !sshut {
                let t_ = net.now;
                net.shim(s).shutdown_write(t_, ss).unwrap();
                sshut = true;
            }
            if !seof {
                seof = shim_pull(net, s, ss, &mut sgot);
            }
            if !ceof {
                ceof = shim_pull(net, c, cs, &mut cgot);
            }
            ceof && seof
        }),
        "transfer did not finish: up {} / down {}",
        sgot.len(),
        cgot.len()
    );
    assert!(sgot == up, "upstream bytes differ");
    assert!(cgot == down, "downstream bytes differ");
    assert_eq!(net.shim(c).info(cs).unwrap().bytes_sent, len as u64);
    assert_eq!(net.shim(c).info(cs).unwrap().bytes_received, len as u64);
}

#[test]
fn one_megabyte_each_way_is_byte_exact() {
    let (mut net, c, s) = shim_pair(10);
    let (cs, ss) = connect_accept(&mut net, c, s, 22);
    assert_eq!(net.shim(c).info(cs).unwrap().transport, Some(Transport::Sctp));
    transfer_both_ways(&mut net, c, s, cs, ss, 1 << 20, 60);
}

#[test]
fn lossy_transfer_is_byte_exact() {
    let (mut net, c, s) = shim_pair(10);
    let (cs, ss) = connect_accept(&mut net, c, s, 22);
    net.loss = 0.02;
    transfer_both_ways(&mut net, c, s, cs, ss, 256 * 1024, 300);
    let aid = net.shim(c).info(cs).unwrap().sctp.unwrap();
    assert!(net.shim(c).sctp().info(aid).unwrap().stats.retransmits > 0, "loss exercised retransmission");
}

#[test]
fn multihomed_association_survives_primary_path_failure() {
    let mut net = Net::new(10);
    let c = net.add(&["10.0.0.1", "10.1.0.1"], shim("c", shim_cfg("remote default enable")));
    let s = net.add(&["10.0.0.2", "10.1.0.2"], shim("s", shim_cfg("local default enable")));
    let l = net.shim(s).listen_multi(&[ip("10.0.0.2"), ip("10.1.0.2")], 80, 8).unwrap();
    let cs = net.shim(c).connect_multi(Instant::ZERO, &[ip("10.0.0.1"), ip("10.1.0.1")], &[ip("10.0.0.2"), ip("10.1.0.2")], 80).unwrap();
    let data = pattern(400_000, 9);
    let mut off = 0;
    let mut acc = None;
    let mut got = Vec::new();
    let mut failed = false;
    assert!(net.run(Duration::from_secs(300), |net| {
        shim_push(net, c, cs, &data, &mut off);
        if acc.is_none() {
            acc = net.shim(s).accept(l);
        }
        if let Some(a) = acc {
            shim_pull(net, s, a, &mut got);
        }
        if !failed && got.len() > 100_000 {
            // the server's primary interface dies mid-transfer
            net.down.insert(ip("10.0.0.2"));
            failed = true;
        }
        got.len() == data.len()
    }));
    assert!(got == data);
    let aid = net.shim(c).info(cs).unwrap().sctp.unwrap();
    let info = net.shim(c).sctp().info(aid).unwrap();
    assert_eq!(info.paths.len(), 2, "both peer addresses are paths");
    assert_eq!(info.paths[info.active_path].addr, ip("10.1.0.2"), "failed over to the alternate");
}

#[test]
fn abort_and_close_free_sockets_and_listener_close_stops_accepting() {
    let (mut net, c, s) = shim_pair(5);
    let (cs, ss) = connect_accept(&mut net, c, s, 9000);
    let t_ = net.now;
    net.shim(c).abort(t_, cs);
    assert!(net.shim(c).info(cs).is_none());
    let t_ = net.now;
    assert_eq!(net.shim(c).send(t_, cs, b"x"), Err(SockError::InvalidSocket));
    let mut reset = false;
    assert!(net.run(Duration::from_secs(2), |net| {
        reset |= net.events(s).contains(&(ss.0, SockEvent::Reset));
        reset
    }));
    let t_ = net.now;
    assert_eq!(net.shim(s).recv(t_, ss, &mut [0u8; 8]), Err(SockError::ConnectionReset));
}

#[test]
fn native_sctp_app_on_a_shim_host_is_not_advertised_as_shim() {
    let (mut net, c, s) = shim_pair(5);
    // a native SCTP server on the shim host, opened on the engine directly
    let l = net.shim(s).sctp_mut().listen(&[], 7000, 8).unwrap();
    let cs = net.shim(c).connect(Instant::ZERO, ip("10.0.0.1"), sa("10.0.0.2:7000")).unwrap();
    net.shim(c).send(Instant::ZERO, cs, b"hello native").unwrap();
    net.shim(c).shutdown_write(Instant::ZERO, cs).unwrap();
    let (mut acc, mut got, mut eof, mut streams) = (None, Vec::new(), false, BTreeSet::new());
    let mut incoming = false;
    assert!(net.run(Duration::from_secs(5), |net| {
        incoming |= net.nodes[s].native.drain(..).any(|e| e == NativeEvent::Sctp(l, SockEvent::Incoming));
        if acc.is_none() {
            acc = net.shim(s).sctp_mut().accept(l);
        }
        if let Some(a) = acc {
            let now = net.now;
            let mut b = [0u8; 64];
            while let Ok(Some(r)) = net.shim(s).sctp_mut().recv(now, a, &mut b) {
                if r.len == 0 {
                    eof = true;
                    break;
                }
                streams.insert(r.stream);
                got.extend_from_slice(&b[..r.len]);
            }
        }
        eof
    }));
    assert!(incoming, "native listener events go to poll_native_event");
    assert_eq!(got, b"hello native");
    assert_eq!(streams, BTreeSet::from([0]));
    assert!(!net.shim(c).info(cs).unwrap().peer_is_shim);
    assert!(net.events(s).is_empty(), "no shim events for native sockets");
}

#[test]
fn closed_listener_refuses_new_connections_on_both_transports() {
    let mut net = Net::new(5);
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote default enable")));
    let s = net.add(&["10.0.0.2"], shim("s", shim_cfg("local default enable")));
    let legacy = net.add(&["10.0.0.3"], Stack::Tcp(Box::new(TcpEndpoint::new(TcpConfig::default(), Rng::stream(7, "legacy")))));
    let l = net.shim(s).listen(sa("0.0.0.0:80"), 8).unwrap();
    net.shim(s).close(Instant::ZERO, l);
    assert!(net.shim(s).info(l).is_none());
    let cs = net.shim(c).connect(Instant::ZERO, ip("10.0.0.1"), sa("10.0.0.2:80")).unwrap();
    let t = net.tcp(legacy).connect(Instant::ZERO, ip("10.0.0.3"), sa("10.0.0.2:80")).unwrap();
    let (mut shim_evs, mut tcp_evs) = (Vec::new(), Vec::new());
    net.run(Duration::from_secs(2), |net| {
        shim_evs.extend(net.events(c).into_iter().map(|e| e.1));
        tcp_evs.extend(net.events(legacy).into_iter().map(|e| e.1));
        false
    });
    assert_eq!(tcp_evs, vec![SockEvent::ConnectFailed], "TCP: RST from the closed port ({t})");
    // SCTP: the engine still answers the COOKIE-ECHO, but the shim aborts the new
    // association before its COOKIE-ACK leaves, so the client falls back to TCP and gets
    // that RST: one ConnectFailed, as for a plain TCP client
    assert_eq!(shim_evs, vec![SockEvent::ConnectFailed]);
    assert_eq!(net.shim(c).info(cs).unwrap().fallback, Some(FallbackReason::Abort));
    assert!(net.events(s).is_empty() && net.nodes[s].native.is_empty());
    let t_ = net.now;
    assert_eq!(net.shim(c).recv(t_, cs, &mut [0u8; 4]).ok(), None);
}

#[test]
fn options_reach_the_transport_in_use_and_survive_fallback() {
    let mut net = Net::new(5);
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote default enable")));
    let s = net.add(&["10.0.0.2"], shim("s", shim_cfg("local enable port 80")));
    net.shim(s).listen(sa("0.0.0.0:80"), 8).unwrap();
    net.shim(s).listen(sa("0.0.0.0:81"), 8).unwrap(); // TCP only: fallback
    let a = net.shim(c).connect(Instant::ZERO, ip("10.0.0.1"), sa("10.0.0.2:80")).unwrap();
    let b = net.shim(c).connect(Instant::ZERO, ip("10.0.0.1"), sa("10.0.0.2:81")).unwrap();
    for x in [a, b] {
        net.shim(c).set_option(x, wirelab_tcp::SockOpt::SndBuf(50_000)).unwrap();
        net.shim(c).set_option(x, wirelab_tcp::SockOpt::NoDelay(true)).unwrap();
    }
    let mut up = 0;
    assert!(net.run(Duration::from_secs(5), |net| {
        up += net.events(c).iter().filter(|e| e.1 == SockEvent::Connected).count();
        up == 2
    }));
    let ia = net.shim(c).info(a).unwrap();
    let ib = net.shim(c).info(b).unwrap();
    assert_eq!((ia.transport, ib.transport), (Some(Transport::Sctp), Some(Transport::Tcp)));
    assert_eq!(net.shim(c).sctp().info(ia.sctp.unwrap()).unwrap().sndbuf, 100_000, "SO_SNDBUF doubled as Linux does");
    assert_eq!(net.shim(c).tcp().info(ib.tcp.unwrap()).unwrap().sndbuf, 100_000, "replayed on the fallback TCP socket");
    assert_eq!(net.shim(c).set_option(ShimSocketId(999), wirelab_tcp::SockOpt::NoDelay(true)), Err(SockError::InvalidSocket));
}

#[test]
fn recv_discard_counts_bytes_on_both_transports() {
    let mut net = Net::new(5);
    let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote enable port 80")));
    let s = net.add(&["10.0.0.2"], shim("s", shim_cfg("local default enable")));
    let mut pairs = Vec::new();
    for port in [80, 81] {
        pairs.push(connect_accept(&mut net, c, s, port));
    }
    let data = pattern(100_000, 4);
    let mut offs = [0usize; 2];
    let mut counts = [0usize; 2];
    let mut eofs = [false; 2];
    let mut shut = [false; 2];
    assert!(net.run(Duration::from_secs(10), |net| {
        for i in 0..2 {
            let (cs, ss) = pairs[i];
            shim_push(net, c, cs, &data, &mut offs[i]);
            if offs[i] == data.len() && !shut[i] {
                let t_ = net.now;
                net.shim(c).shutdown_write(t_, cs).unwrap();
                shut[i] = true;
            }
            loop {
                let t_ = net.now;
                match net.shim(s).recv_discard(t_, ss, 7000) {
                    Ok(0) => {
                        eofs[i] = true;
                        break;
                    }
                    Ok(n) => counts[i] += n,
                    Err(_) => break,
                }
            }
        }
        eofs == [true, true]
    }));
    assert_eq!(counts, [data.len(), data.len()]);
    let t0 = net.shim(s).info(pairs[0].1).unwrap();
    let t1 = net.shim(s).info(pairs[1].1).unwrap();
    assert_eq!((t0.transport, t1.transport), (Some(Transport::Sctp), Some(Transport::Tcp)));
    assert_eq!((t0.bytes_received, t1.bytes_received), (data.len() as u64, data.len() as u64));
}

#[test]
fn simultaneous_half_close_shuts_the_association_down() {
    let (mut net, c, s) = shim_pair(20);
    let (cs, ss) = connect_accept(&mut net, c, s, 23);
    let t_ = net.now;
    net.shim(c).send(t_, cs, b"client bytes").unwrap();
    net.shim(s).send(t_, ss, b"server bytes").unwrap();
    // both shut down before either marker can arrive (one-way latency 20 ms)
    net.shim(c).shutdown_write(t_, cs).unwrap();
    net.shim(s).shutdown_write(t_, ss).unwrap();
    let (mut cg, mut sg, mut ce, mut se) = (Vec::new(), Vec::new(), false, false);
    let (mut cc, mut sc) = (false, false);
    assert!(net.run(Duration::from_secs(10), |net| {
        if !ce {
            ce = shim_pull(net, c, cs, &mut cg);
        }
        if !se {
            se = shim_pull(net, s, ss, &mut sg);
        }
        cc |= net.events(c).contains(&(cs.0, SockEvent::Closed));
        sc |= net.events(s).contains(&(ss.0, SockEvent::Closed));
        ce && se && cc && sc
    }));
    assert_eq!((cg.as_slice(), sg.as_slice()), (&b"server bytes"[..], &b"client bytes"[..]));
}

#[test]
fn close_delivers_queued_bytes_then_eof() {
    let (mut net, c, s) = shim_pair(5);
    let (cs, ss) = connect_accept(&mut net, c, s, 24);
    let data = pattern(30_000, 8);
    let t_ = net.now;
    assert_eq!(net.shim(c).send(t_, cs, &data), Ok(data.len()));
    net.shim(c).close(t_, cs);
    assert_eq!(net.shim(c).send(t_, cs, b"x"), Err(SockError::InvalidSocket));
    assert!(net.shim(c).info(cs).is_none());
    assert_eq!(net.shim(c).lingering(), 1, "kept until the association is down");
    let mut got = Vec::new();
    let mut closed = false;
    assert!(net.run(Duration::from_secs(5), |net| {
        let eof = shim_pull(net, s, ss, &mut got);
        closed |= net.events(s).contains(&(ss.0, SockEvent::Closed));
        eof && closed
    }));
    assert!(got == data);
    assert!(net.events(c).is_empty(), "no events for a closed socket");
    // the client's slot is released once the association is gone
    assert_eq!(net.shim(c).lingering(), 0);
}

#[test]
fn shutdown_before_connect_completes_is_deferred() {
    for rules in ["local default enable", "local default disable"] {
        let mut net = Net::new(10);
        let c = net.add(&["10.0.0.1"], shim("c", shim_cfg("remote default enable")));
        let s = net.add(&["10.0.0.2"], shim("s", shim_cfg(rules)));
        let l = net.shim(s).listen(sa("0.0.0.0:25"), 8).unwrap();
        let cs = net.shim(c).connect(Instant::ZERO, ip("10.0.0.1"), sa("10.0.0.2:25")).unwrap();
        assert_eq!(net.shim(c).send(Instant::ZERO, cs, b"HELO x\r\nQUIT\r\n"), Ok(14));
        net.shim(c).shutdown_write(Instant::ZERO, cs).unwrap();
        let (mut acc, mut got) = (None, Vec::new());
        assert!(net.run(Duration::from_secs(5), |net| {
            if acc.is_none() {
                acc = net.shim(s).accept(l);
            }
            acc.is_some_and(|a| shim_pull(net, s, a, &mut got))
        }), "{rules}");
        assert_eq!(got, b"HELO x\r\nQUIT\r\n", "{rules}");
    }
}

#[test]
fn garbage_input_never_panics() {
    let (mut net, c, s) = shim_pair(5);
    let (_cs, _ss) = connect_accept(&mut net, c, s, 80);
    let mut r = Rng::stream(3, "fuzz");
    let (a, b) = (ip("10.0.0.2"), ip("10.0.0.1"));
    let mut buf = vec![0u8; HEADROOM];
    let t_ = net.now;
    // a valid shim INIT as a template for mutations
    let mut init = Vec::new();
    {
        let mut tmp = ShimStack::new(shim_cfg("remote default enable"), TcpEndpoint::new(TcpConfig::default(), Rng::stream(1, "t")), SctpEndpoint::new(SctpConfig::default(), Rng::stream(1, "u")));
        tmp.connect(Instant::ZERO, b, SocketAddrV4::new(a, 80)).unwrap();
        tmp.poll_transmit(Instant::ZERO, &mut buf).unwrap();
        init.extend_from_slice(&buf[HEADROOM..]);
    }
    assert!(matches!(adapt::strip_indication(&init), adapt::Found::Yes(1, _)));
    for i in 0..3000 {
        let mut p = if i % 2 == 0 { init.clone() } else { (0..r.below(200)).map(|_| r.next_u32() as u8).collect() };
        if !p.is_empty() {
            for _ in 0..=r.below(4) {
                let k = r.below(p.len() as u64) as usize;
                p[k] = r.next_u32() as u8;
            }
            if r.chance(0.5) {
                wirelab_wire::crc32c::sctp_fill(&mut p);
            }
            if r.chance(0.2) {
                p.truncate(r.below(p.len() as u64) as usize);
            }
        }
        let proto = [6u8, 132, 17][i % 3];
        net.shim(s).handle_packet(t_, b, a, proto, 0, &p);
        while net.shim(s).poll_transmit(t_, &mut buf).is_some() {}
        while net.shim(s).poll_event().is_some() {}
        while net.shim(s).poll_native_event().is_some() {}
    }
}
