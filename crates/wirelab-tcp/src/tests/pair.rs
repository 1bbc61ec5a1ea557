//! Two endpoints joined by a pair of links, in the style of quinn-proto's `Pair`:
//! one-way latency, a bottleneck rate with a drop-tail queue, optional random loss, and
//! time that jumps to the next event.
use crate::wire::{TcpPacket, TcpRepr};
use crate::{SockEvent, SocketId, TcpConfig, TcpEndpoint};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};
use wirelab_core::{Duration, Instant, Rng, HEADROOM};

pub const A_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
pub const B_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);

/// One direction of the path.
pub struct Link {
    pub rate_bps: u64,
    pub delay: Duration,
    pub limit_pkts: usize,
    pub loss: f64,
    rng: Rng,
    busy_until: Instant,
    queue: VecDeque<Instant>,
    pub delivered_bytes: u64,
    pub drops_queue: u64,
    pub drops_random: u64,
    pub sent_pkts: u64,
    /// Drop the next n data-carrying packets (deterministic loss injection).
    pub drop_next_data: u32,
    /// Apply `loss` to pure ACKs too.
    pub loss_acks: bool,
    /// Drop the data-carrying packets with these indices (0 = first data packet sent).
    pub drop_data_idx: Vec<u64>,
    data_idx: u64,
    /// Delay this share of data packets by `reorder_extra` after the queue (reordering).
    pub reorder: f64,
    pub reorder_extra: Duration,
    last_arrival: Instant,
    /// ECN marking: CE on ECT packets that find at least this many packets queued (a
    /// step threshold K, as DCTCP's switches or RED with min = max do).
    pub ce_threshold: Option<usize>,
    /// CE-mark the ECT data-carrying packets with these indices (0 = first data packet).
    pub ce_data_idx: Vec<u64>,
    /// Packets CE-marked.
    pub ce_marked: u64,
    /// Largest queue seen (packets).
    pub max_queue: usize,
}

impl Link {
    pub fn new(rate_bps: u64, delay: Duration, limit_pkts: usize, seed: u64) -> Self {
        Link {
            rate_bps,
            delay,
            limit_pkts,
            loss: 0.0,
            rng: Rng::stream(seed, "link"),
            busy_until: Instant::ZERO,
            queue: VecDeque::new(),
            delivered_bytes: 0,
            drops_queue: 0,
            drops_random: 0,
            sent_pkts: 0,
            drop_next_data: 0,
            loss_acks: false,
            drop_data_idx: Vec::new(),
            data_idx: 0,
            reorder: 0.0,
            reorder_extra: Duration::ZERO,
            last_arrival: Instant::ZERO,
            ce_threshold: None,
            ce_data_idx: Vec::new(),
            ce_marked: 0,
            max_queue: 0,
        }
    }
    /// Returns the arrival time and the (possibly CE-marked) TOS, or None if dropped.
    /// `len` counts the IPv4 datagram.
    fn enqueue(&mut self, now: Instant, len: usize, has_data: bool, tos: u8) -> Option<(Instant, u8)> {
        self.sent_pkts += 1;
        if has_data {
            self.data_idx += 1;
            if self.drop_data_idx.contains(&(self.data_idx - 1)) {
                self.drops_random += 1;
                return None;
            }
        }
        if has_data && self.drop_next_data > 0 {
            self.drop_next_data -= 1;
            self.drops_random += 1;
            return None;
        }
        if self.loss > 0.0 && (has_data || self.loss_acks) && self.rng.chance(self.loss) {
            self.drops_random += 1;
            return None;
        }
        while self.queue.front().is_some_and(|&d| d <= now) {
            self.queue.pop_front();
        }
        if self.queue.len() >= self.limit_pkts {
            self.drops_queue += 1;
            return None;
        }
        let mut tos = tos;
        let ect = tos & 3 != 0;
        let marked_idx = has_data && self.ce_data_idx.contains(&(self.data_idx - 1));
        if ect && (marked_idx || self.ce_threshold.is_some_and(|k| self.queue.len() >= k)) {
            tos |= 3;
            self.ce_marked += 1;
        }
        self.max_queue = self.max_queue.max(self.queue.len() + 1);
        let start = self.busy_until.max(now);
        let dep = start + Duration::transmit_time(len as u64, self.rate_bps);
        self.busy_until = dep;
        self.queue.push_back(dep);
        self.delivered_bytes += len as u64;
        if has_data && self.reorder > 0.0 && self.rng.chance(self.reorder) {
            return Some((dep + self.delay + self.reorder_extra, tos));
        }
        // a wire keeps FIFO order even when its delay changes (delay spikes)
        let at = (dep + self.delay).max(self.last_arrival);
        self.last_arrival = at;
        Some((at, tos))
    }
}

/// A captured segment: (send time, from A?, TCP bytes).
pub type Captured = (Instant, bool, Vec<u8>);

pub struct Pair {
    pub now: Instant,
    pub a: TcpEndpoint,
    pub b: TcpEndpoint,
    pub ab: Link,
    pub ba: Link,
    inflight: BinaryHeap<Reverse<(Instant, u64, bool, u8, Vec<u8>)>>,
    seq: u64,
    pub events: Vec<(bool, SocketId, SockEvent, Instant)>,
    pub capture: Option<Vec<Captured>>,
    /// The TOS byte of each captured segment as sent (same order as `capture`).
    pub capture_tos: Vec<u8>,
    /// Bulk senders: (on A?, socket, bytes left to write).
    pub bulk: Vec<(bool, SocketId, u64)>,
    /// Sinks that read everything at once: (on A?, socket, bytes read, eof seen).
    pub sinks: Vec<(bool, SocketId, u64, bool)>,
    /// Accept incoming connections on these listeners and turn them into sinks.
    pub auto_sink: Vec<(bool, SocketId)>,
    buf: Vec<u8>,
    chunk: Vec<u8>,
    /// Sockets with an event since the applications last ran.
    dirty: Vec<(bool, SocketId)>,
    known: (usize, usize),
    index: std::collections::HashMap<(bool, SocketId), (Option<usize>, Option<usize>)>,
}

impl Pair {
    pub fn new(cfg_a: TcpConfig, cfg_b: TcpConfig, rate_bps: u64, one_way: Duration, limit_pkts: usize, seed: u64) -> Self {
        Pair {
            now: Instant::ZERO,
            a: TcpEndpoint::new(cfg_a, Rng::stream(seed, "a")),
            b: TcpEndpoint::new(cfg_b, Rng::stream(seed, "b")),
            ab: Link::new(rate_bps, one_way, limit_pkts, seed ^ 1),
            ba: Link::new(rate_bps, one_way, limit_pkts, seed ^ 2),
            inflight: BinaryHeap::new(),
            seq: 0,
            events: Vec::new(),
            capture: None,
            capture_tos: Vec::new(),
            bulk: Vec::new(),
            sinks: Vec::new(),
            auto_sink: Vec::new(),
            buf: Vec::with_capacity(2048),
            dirty: Vec::new(),
            known: (0, 0),
            index: std::collections::HashMap::new(),
            chunk: (0..65536u32).map(|i| (i * 31 + 7) as u8).collect(),
        }
    }

    /// Default pair: linux-6 both sides, 10 Mbit/s, 20 ms one way, 100-packet queues.
    pub fn default_pair(seed: u64) -> Self {
        Pair::new(TcpConfig::default(), TcpConfig::default(), 10_000_000, Duration::from_millis(20), 100, seed)
    }

    fn flush(&mut self) {
        for from_a in [true, false] {
            loop {
                self.buf.clear();
                self.buf.resize(HEADROOM, 0);
                let ep = if from_a { &mut self.a } else { &mut self.b };
                let Some(t) = ep.poll_transmit(self.now, &mut self.buf) else { break };
                assert_eq!(t.src, if from_a { A_ADDR } else { B_ADDR });
                let seg = self.buf[HEADROOM..].to_vec();
                let has_data = {
                    let p = TcpPacket::new_checked(&seg[..]).unwrap();
                    p.segment_len() > 0
                };
                if let Some(c) = self.capture.as_mut() {
                    c.push((self.now, from_a, seg.clone()));
                    self.capture_tos.push(t.tos);
                }
                let link = if from_a { &mut self.ab } else { &mut self.ba };
                if let Some((at, tos)) = link.enqueue(self.now, seg.len() + 20, has_data, t.tos) {
                    self.seq += 1;
                    self.inflight.push(Reverse((at, self.seq, !from_a, tos, seg)));
                }
            }
        }
    }

    fn drain_events(&mut self) {
        for on_a in [true, false] {
            loop {
                let ep = if on_a { &mut self.a } else { &mut self.b };
                let Some((s, e)) = ep.poll_event() else { break };
                self.events.push((on_a, s, e, self.now));
                self.dirty.push((on_a, s));
                if e == SockEvent::Incoming
                    && self.auto_sink.contains(&(on_a, s)) {
                        while let Some(c) = ep.accept(s) {
                            self.sinks.push((on_a, c, 0, false));
                        }
                    }
            }
        }
    }

    fn apps(&mut self) {
        let now = self.now;
        // event-driven, like an epoll loop: only sockets with news (or new apps) act
        if self.known != (self.bulk.len(), self.sinks.len()) {
            self.known = (self.bulk.len(), self.sinks.len());
            self.index.clear();
            for (i, b) in self.bulk.iter().enumerate() {
                self.index.insert((b.0, b.1), (Some(i), None));
            }
            for (i, k) in self.sinks.iter().enumerate() {
                self.index.entry((k.0, k.1)).or_insert((None, None)).1 = Some(i);
            }
            self.dirty = self.index.keys().copied().collect();
        }
        if self.dirty.is_empty() {
            return;
        }
        let mut dirty = std::mem::take(&mut self.dirty);
        dirty.sort();
        dirty.dedup();
        for key in dirty.iter() {
            let Some(&(bi, si)) = self.index.get(key) else { continue };
            if let Some(i) = bi {
                let (on_a, s, left) = self.bulk[i];
                let ep = if on_a { &mut self.a } else { &mut self.b };
                let mut left = left;
                while left > 0 {
                    let n = (left as usize).min(self.chunk.len());
                    match ep.send(now, s, &self.chunk[..n]) {
                        Ok(0) | Err(_) => break,
                        Ok(k) => left -= k as u64,
                    }
                }
                self.bulk[i].2 = left;
            }
            if let Some(i) = si {
                let (on_a, s, _, eof) = self.sinks[i];
                if eof {
                    continue;
                }
                let ep = if on_a { &mut self.a } else { &mut self.b };
                loop {
                    match ep.recv_discard(now, s, 1 << 20) {
                        Ok(0) => {
                            self.sinks[i].3 = true;
                            break;
                        }
                        Ok(n) => self.sinks[i].2 += n as u64,
                        Err(_) => break,
                    }
                }
            }
        }
        dirty.clear();
        self.dirty = dirty;
    }

    /// Listens on B:port and opens `n` connections from A at once.
    pub fn connect_many(&mut self, port: u16, n: usize) -> Vec<(SocketId, SocketId)> {
        let l = self.b.listen(SocketAddrV4::new(B_ADDR, port), 4096).unwrap();
        let cs: Vec<SocketId> =
            (0..n).map(|_| self.a.connect(self.now, A_ADDR, SocketAddrV4::new(B_ADDR, port)).unwrap()).collect();
        let mut accepted = Vec::new();
        let deadline = self.now + Duration::from_secs(30);
        while accepted.len() < n {
            self.step();
            while let Some(s) = self.b.accept(l) {
                accepted.push(s);
            }
            assert!(self.now < deadline, "handshakes did not complete");
        }
        // pair them up by the client's local port
        let mut out = Vec::new();
        for c in cs {
            let (la, _) = self.a.addrs(c).unwrap();
            let s = *accepted.iter().find(|&&s| self.b.addrs(s).unwrap().1 == la).unwrap();
            out.push((c, s));
        }
        out
    }

    /// Lets applications act, sends everything, collects events.
    pub fn settle(&mut self) {
        for _ in 0..4 {
            self.apps();
            self.flush();
            self.drain_events();
            if self.dirty.is_empty() {
                break;
            }
        }
    }

    /// Advances to the next event (arrival or timer). Returns false when nothing is left.
    pub fn step(&mut self) -> bool {
        self.settle();
        let mut next = self.inflight.peek().map(|Reverse((t, ..))| *t);
        for t in [self.a.poll_timeout(), self.b.poll_timeout()].into_iter().flatten() {
            next = Some(next.map_or(t, |n: Instant| n.min(t)));
        }
        let Some(next) = next else { return false };
        assert!(next >= self.now, "time went backwards: next {next:?} now {:?} a {:?} b {:?} inflight {:?}", self.now, self.a.poll_timeout(), self.b.poll_timeout(), self.inflight.peek().map(|x| x.0 .0));
        self.now = next;
        while let Some(Reverse((t, ..))) = self.inflight.peek() {
            if *t > self.now {
                break;
            }
            let Reverse((_, _, to_a, tos, seg)) = self.inflight.pop().unwrap();
            if to_a {
                self.a.handle_packet(self.now, B_ADDR, A_ADDR, tos, &seg);
            } else {
                self.b.handle_packet(self.now, A_ADDR, B_ADDR, tos, &seg);
            }
            self.settle();
        }
        if self.a.poll_timeout().is_some_and(|t| t <= self.now) {
            self.a.handle_timeout(self.now);
        }
        if self.b.poll_timeout().is_some_and(|t| t <= self.now) {
            self.b.handle_timeout(self.now);
        }
        self.settle();
        true
    }

    pub fn run_until(&mut self, t: Instant) {
        loop {
            self.settle();
            let mut next = self.inflight.peek().map(|Reverse((t, ..))| *t);
            for x in [self.a.poll_timeout(), self.b.poll_timeout()].into_iter().flatten() {
                next = Some(next.map_or(x, |n: Instant| n.min(x)));
            }
            match next {
                Some(n) if n <= t => {
                    self.step();
                }
                _ => {
                    self.now = self.now.max(t);
                    break;
                }
            }
        }
        self.settle();
    }

    pub fn run_for(&mut self, d: Duration) {
        let t = self.now + d;
        self.run_until(t);
    }

    /// Listens on B:port and connects from A; runs until the handshake completes.
    pub fn connect(&mut self, port: u16) -> (SocketId, SocketId) {
        let l = self.b.listen(SocketAddrV4::new(B_ADDR, port), 128).unwrap();
        let c = self.a.connect(self.now, A_ADDR, SocketAddrV4::new(B_ADDR, port)).unwrap();
        let deadline = self.now + Duration::from_secs(10);
        loop {
            self.step();
            if let Some(s) = self.b.accept(l) {
                // let the final ACK settle on A too
                assert!(self.events.iter().any(|e| e.0 && e.1 == c && e.2 == SockEvent::Connected));
                return (c, s);
            }
            assert!(self.now < deadline, "handshake did not complete");
        }
    }

    pub fn has_event(&self, on_a: bool, s: SocketId, e: SockEvent) -> bool {
        self.events.iter().any(|x| x.0 == on_a && x.1 == s && x.2 == e)
    }
}

/// Parses a captured segment (the pair only ever carries valid ones).
pub fn parse(seg: &[u8]) -> TcpRepr<'_> {
    let p = TcpPacket::new_checked(seg).unwrap();
    TcpRepr::parse_unverified(&p).unwrap()
}
