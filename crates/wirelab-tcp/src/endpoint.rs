//! One host's TCP: demultiplexing, listeners, ephemeral ports, RSTs, and the timer heap.
//!
//! Like quinn's `Endpoint`, this layer only routes: a segment goes to the connection that
//! owns its 4-tuple, to a listener (which creates a SYN-RECV child), or is answered with an
//! RST (`tcp_v4_send_reset`). All protocol state lives in [`crate::conn`].
//!
//! Call order (see `wirelab_core::transport`): after every `handle_*` or command, drain
//! `poll_transmit` until `None`, then `poll_event`, then read `poll_timeout`.
use crate::api::{SockError, SockOpt, SocketId, TcpInfo, TcpState};
use crate::config::TcpConfig;
use crate::conn::{Conn, Out, RstSpec};
use crate::wire::{flags, TcpPacket, TcpRepr};
use core::hash::{BuildHasherDefault, Hasher};
use crate::small::{CachedMap, InlineQueue, InlineVec, TimerHeap};
use std::collections::{HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use wirelab_core::{Instant, Rng, SockEvent, Transmit, HEADROOM};

/// A small multiplicative hasher for fixed-size keys (lookups only; never iterated).
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);
impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64)
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
type FxBuild = BuildHasherDefault<FxHasher>;

/// (local ip, remote ip, local port << 16 | remote port)
type Tuple = (u32, u32, u32);

fn tuple(local: SocketAddrV4, remote: SocketAddrV4) -> Tuple {
    (u32::from(*local.ip()), u32::from(*remote.ip()), (local.port() as u32) << 16 | remote.port() as u32)
}

struct Listener {
    local: SocketAddrV4,
    backlog: u32,
    accept_q: VecDeque<SocketId>,
    synrecv: u32,
    /// Options set on the listener, inherited by every child (as Linux clones the
    /// listening socket in `tcp_create_openreq_child`).
    opts: Vec<SockOpt>,
}

#[derive(Default)]
enum Slot {
    #[default]
    Free,
    Listener(Box<Listener>),
    Conn(Box<Conn>),
}

/// A host's TCP stack (sans-IO).
///
/// `repr(C)`, what every segment reads first (slots, configuration, timer heap, queues,
/// the demux caches), the maps and the RNG last: at many flows each host is cold when its
/// next segment comes (docs/performance.md, issue 17, "Session 9").
#[repr(C)]
pub struct TcpEndpoint {
    slots: InlineVec<Slot>,
    /// Shared by the hosts of a simulation that have the same configuration
    /// ([`Self::new_shared`]): the fields a segment reads then stay in cache however many
    /// hosts there are, instead of a ~300-byte copy per host that is cold at every segment.
    cfg: Arc<TcpConfig>,
    heap: TimerHeap<(Instant, u32)>,
    ready: InlineQueue<u32>,
    events: InlineQueue<(SocketId, SockEvent)>,
    demux: CachedMap<Tuple, SocketId, FxBuild>,
    /// Socket key ([`wirelab_core::socket_key`], the `sk` of every [`Transmit`] of a
    /// connection) → slot, for [`tx_complete`](Self::tx_complete) (one per data segment
    /// sent; cached like `demux`, so a host with one sending connection reads no table).
    by_sk: CachedMap<u64, u32, FxBuild>,
    rsts: VecDeque<RstSpec>,
    lazy_payload: bool,
    /// The driver reports transmit completions ([`set_tx_completions`](Self::set_tx_completions)).
    tx_completions: bool,
    /// The host's egress qdisc is `fq` (sockets leave pacing to it, `SK_PACING_FQ`).
    fq_pacing: bool,
    /// The egress qdisc refuses every packet ([`set_local_drop`](Self::set_local_drop)).
    local_drop: bool,
    listeners: HashMap<(u32, u16), SocketId, FxBuild>,
    rng: Rng,
}

impl TcpEndpoint {
    /// A stack with configuration `cfg`; `rng` draws ISNs, timestamp offsets and ports.
    pub fn new(cfg: TcpConfig, rng: Rng) -> Self {
        Self::new_shared(Arc::new(cfg), rng)
    }

    /// [`Self::new`] with a configuration other endpoints may share (it is never changed).
    pub fn new_shared(cfg: Arc<TcpConfig>, rng: Rng) -> Self {
        TcpEndpoint {
            cfg,
            rng,
            slots: InlineVec::default(),
            demux: CachedMap::default(),
            by_sk: CachedMap::default(),
            listeners: HashMap::default(),
            heap: TimerHeap::default(),
            ready: InlineQueue::default(),
            events: InlineQueue::default(),
            rsts: VecDeque::new(),
            lazy_payload: false,
            tx_completions: false,
            fq_pacing: false,
            local_drop: false,
        }
    }

    /// Pass `send_static` payload at the end of segments by reference
    /// ([`Transmit::tail`]) from now on (off by default: a driver must then append the
    /// tail to what `poll_transmit` wrote). The simulator turns it on.
    pub fn set_lazy_payload(&mut self, on: bool) {
        self.lazy_payload = on;
        for s in self.slots.iter_mut() {
            if let Slot::Conn(c) = s {
                c.lazy_payload = on;
            }
        }
    }

    /// The driver reports when each charged datagram leaves the host
    /// ([`tx_complete`](Self::tx_complete)), so TCP Small Queues can work: sockets charge
    /// their datagrams' truesize to `sk_wmem_alloc` ([`Transmit::tsq`]) and hold data back
    /// above the limit. Off by default, for drivers whose datagrams leave at once (a TUN
    /// device orphans skbs in `tun_net_xmit()`, so TSQ never throttles there); the
    /// simulator turns it on.
    pub fn set_tx_completions(&mut self, on: bool) {
        self.tx_completions = on;
        for s in self.slots.iter_mut() {
            if let Slot::Conn(c) = s {
                c.tsq.on = on;
            }
        }
    }

    /// Tells the stack that its egress qdisc is (`true`) or is no longer `fq`, which
    /// honours each packet's departure time ([`Transmit::txtime`]): as `fq_classify()`
    /// marks the sockets it sees `SK_PACING_FQ`, every connection (present and future)
    /// then stamps departure times at its `sk_pacing_rate` instead of pacing internally.
    /// Drivers call it when they set up the host's qdisc.
    pub fn set_fq_pacing(&mut self, on: bool) {
        self.fq_pacing = on;
        for s in self.slots.iter_mut() {
            if let Slot::Conn(c) = s {
                c.set_fq_pacing(on);
            }
        }
    }

    /// Tells the stack that its egress qdisc drops (`true`) or again accepts every
    /// packet, as `tc qdisc … pfifo limit 0` does: from now on each transmission fails
    /// locally (`tcp_transmit_skb()` > 0, `NET_XMIT_DROP`) and nothing reaches the wire;
    /// the connections react as Linux's do (`tcp_enter_cwr()`, the probe and
    /// retransmission timers retrying every `TCP_RESOURCE_PROBE_INTERVAL`). Off by default;
    /// drivers whose host queue can refuse packets call it.
    pub fn set_local_drop(&mut self, on: bool) {
        self.local_drop = on;
        for s in self.slots.iter_mut() {
            if let Slot::Conn(c) = s {
                c.local_drop = on;
            }
        }
    }

    /// The configuration.
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }

    fn conn_mut(&mut self, s: SocketId) -> Option<&mut Conn> {
        match self.slots.get_mut(s.0 as usize) {
            Some(Slot::Conn(c)) => Some(c),
            _ => None,
        }
    }
    fn conn(&self, s: SocketId) -> Option<&Conn> {
        match self.slots.get(s.0 as usize) {
            Some(Slot::Conn(c)) => Some(c),
            _ => None,
        }
    }

    /// After anything touched connection `id`: queue it for transmission, re-key its
    /// timer, and free it if it is closed and orphaned.
    fn touch(&mut self, id: u32) {
        let Some(Slot::Conn(c)) = self.slots.get_mut(id as usize) else { return };
        if !c.in_ready && c.state != TcpState::Closed {
            c.in_ready = true;
            self.ready.push_back(id);
        }
        Self::rekey(&mut self.heap, id, c);
        if c.state == TcpState::Closed {
            let key = tuple(c.local, c.remote);
            let orphan = c.orphan;
            let parent = c.listener;
            self.demux.remove_if(&key, SocketId(id));
            self.by_sk.remove_if(&c.tsq.sk, id);
            if orphan {
                if let Some(p) = parent {
                    if let Some(Slot::Listener(l)) = self.slots.get_mut(p.0 as usize) {
                        l.synrecv = l.synrecv.saturating_sub(1);
                        l.accept_q.retain(|&x| x != SocketId(id));
                    }
                }
                self.slots[id as usize] = Slot::Free;
            }
        }
    }

    /// Timer heap with lazy deletion *and* lazy postponement. Invariant: a connection
    /// whose earliest timer is `d` has a heap entry `(k, id)` with `k == heap_key <= d`.
    /// Moving a deadline later (the RTO re-armed on every ACK) costs nothing here; the
    /// entry is re-keyed when it reaches the top ([`Self::clean_heap`]), so the heap sees
    /// about one push per timer period instead of one per ACK.
    ///
    /// A deadline moved earlier replaces the connection's entry when that entry is one of
    /// the heap's two inline ones, instead of leaving it behind as a stale entry: under
    /// pacing every pacing wake-up re-keys to the RTO and then, one transmit later, to
    /// the next pacing time, and the stale RTO entries (one per wake-up, ~100 per host)
    /// would otherwise sit in the heap's buffer until their time comes (issue 17,
    /// docs/performance.md "Session 10"). Stale entries are never popped as timers, so
    /// which of them remain changes nothing.
    fn rekey(heap: &mut TimerHeap<(Instant, u32)>, id: u32, c: &mut Conn) {
        if let Some(d) = c.next_deadline() {
            match c.heap_key {
                None => {}
                Some(k) if d < k => {
                    heap.remove_inline((k, id));
                }
                Some(_) => return,
            }
            heap.push((d, id));
            c.heap_key = Some(d);
        }
    }

    /// Makes the heap top exact: drops stale entries and re-keys postponed ones, so that
    /// `poll_timeout` returns the true earliest deadline.
    fn clean_heap(&mut self) {
        while let Some(&(t, id)) = self.heap.peek() {
            let Some(Slot::Conn(c)) = self.slots.get_mut(id as usize) else {
                self.heap.pop();
                continue;
            };
            if c.heap_key != Some(t) {
                self.heap.pop();
                continue;
            }
            let d = c.next_deadline();
            if d == Some(t) {
                break;
            }
            self.heap.pop();
            c.heap_key = None;
            if let Some(d) = d {
                self.heap.push((d, id));
                c.heap_key = Some(d);
            }
        }
    }

    fn out_parts(&mut self) -> (&TcpConfig, &mut InlineVec<Slot>, Out<'_>) {
        (&self.cfg, &mut self.slots, Out { ev: &mut self.events, rst: &mut self.rsts })
    }

    /// Feeds one TCP segment (the IPv4 payload) that arrived for this host.
    pub fn handle_packet(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, tos: u8, segment: &[u8]) {
        self.handle_packet_csum(now, src, dst, tos, segment, true);
    }

    /// [`Self::handle_packet`] with the checksum check optional: `verify = false` is a
    /// driver's promise that the checksum is right (a checksum-offloading NIC's
    /// `CHECKSUM_UNNECESSARY`); a segment that fails the check is dropped, as in
    /// `tcp_v4_rcv()` → `csum_error`.
    pub fn handle_packet_csum(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, tos: u8, segment: &[u8], verify: bool) {
        let Ok(p) = TcpPacket::new_checked(segment) else { return };
        let parsed = if verify { TcpRepr::parse(&p, src, dst) } else { TcpRepr::parse_unverified(&p) };
        let Ok(r) = parsed else { return };
        let local = SocketAddrV4::new(dst, r.dst_port);
        let remote = SocketAddrV4::new(src, r.src_port);
        let key = tuple(local, remote);
        if let Some(id) = self.demux.get(&key) {
            // listen overflow: drop the handshake-completing ACK (tcp_check_req)
            if let Some(Slot::Conn(c)) = self.slots.get(id.0 as usize) {
                if c.state == TcpState::SynRecv && r.has(flags::ACK) && !r.has(flags::RST) && !r.has(flags::SYN) {
                    if let Some(Some(Slot::Listener(l))) = c.listener.map(|p| self.slots.get(p.0 as usize)) {
                        if l.accept_q.len() as u32 > l.backlog {
                            return;
                        }
                    }
                }
            }
            // A new SYN may reuse a TIME_WAIT 4-tuple (below); the listener lookup only then
            // (two cold hash probes per segment otherwise)
            let tw_syn = r.has(flags::SYN)
                && !r.has(flags::ACK)
                && matches!(self.slots.get(id.0 as usize), Some(Slot::Conn(c)) if c.state == TcpState::TimeWait);
            let listening = tw_syn && self.find_listener(local).is_some();
            let (cfg, slots, mut out) = self.out_parts();
            let Some(Slot::Conn(c)) = slots.get_mut(id.0 as usize) else { return };
            // A new SYN may reuse a TIME_WAIT 4-tuple (tcp_timewait_state_process TCP_TW_SYN).
            let tw_reuse = tw_syn && listening;
            if !tw_reuse {
                let was_synrecv = c.state == TcpState::SynRecv;
                c.process(cfg, now, &r, tos, &mut out);
                let established = was_synrecv && !matches!(c.state, TcpState::SynRecv | TcpState::Closed);
                let parent = c.listener;
                if established {
                    if let Some(p) = parent {
                        if let Some(Slot::Listener(l)) = slots.get_mut(p.0 as usize) {
                            l.synrecv = l.synrecv.saturating_sub(1);
                            l.accept_q.push_back(id);
                            out.ev.push_back((p, SockEvent::Incoming));
                        }
                    }
                }
                self.touch(id.0);
                self.clean_heap();
                return;
            }
            c.enter_closed(now);
            c.orphan = true;
            self.touch(id.0);
        }
        if let Some(lid) = self.find_listener(local) {
            if r.has(flags::RST) {
                return;
            }
            if r.has(flags::ACK) {
                self.rsts.push_back(RstSpec { src: local, dst: remote, seq: r.ack, ack: None, tos, window: 0, ts: None });
                return;
            }
            if !r.has(flags::SYN) {
                return;
            }
            let Some(Slot::Listener(l)) = self.slots.get(lid.0 as usize) else { return };
            // sk_acceptq_is_full(): drop the SYN. The SYN queue itself is not limited, which
            // is what tcp_syncookies = 1 (the default) amounts to for a well-behaved peer.
            if l.accept_q.len() as u32 > l.backlog {
                return;
            }
            let id = SocketId(self.slots.len() as u32);
            let iss = self.rng.next_u32();
            let tso = self.rng.next_u32();
            // Replies use the socket's TOS (0), not the SYN's (no tcp_reflect_tos); the SYN's
            // ECN field matters to tcp_ecn_create_request().
            let mut c = Conn::new_passive(&self.cfg, id, local, remote, now, iss, tso, &r, lid, 0, tos);
            c.lazy_payload = self.lazy_payload;
            c.tsq.on = self.tx_completions;
            if self.fq_pacing {
                c.set_fq_pacing(true);
            }
            c.local_drop = self.local_drop;
            if let Some(Slot::Listener(l)) = self.slots.get_mut(lid.0 as usize) {
                l.synrecv += 1;
                for o in &l.opts {
                    let _ = c.set_option(&self.cfg, o);
                }
            }
            self.by_sk.insert(c.tsq.sk, id.0);
            self.slots.push(Slot::Conn(Box::new(c)));
            self.demux.insert(key, id);
            self.touch(id.0);
            self.clean_heap();
            return;
        }
        if !r.has(flags::RST) {
            // tcp_v4_send_reset()
            let spec = if r.has(flags::ACK) {
                RstSpec { src: local, dst: remote, seq: r.ack, ack: None, tos, window: 0, ts: None }
            } else {
                RstSpec { src: local, dst: remote, seq: crate::wire::SeqNumber(0), ack: Some(r.seq + r.segment_len() as u32), tos, window: 0, ts: None }
            };
            self.rsts.push_back(spec);
        }
    }

    fn find_listener(&self, local: SocketAddrV4) -> Option<SocketId> {
        self.listeners
            .get(&(u32::from(*local.ip()), local.port()))
            .or_else(|| self.listeners.get(&(0, local.port())))
            .copied()
    }

    /// Runs all timers due at `now`. Spurious calls are no-ops.
    pub fn handle_timeout(&mut self, now: Instant) {
        loop {
            self.clean_heap();
            let Some(&(t, id)) = self.heap.peek() else { break };
            if t > now {
                break;
            }
            self.heap.pop();
            let (cfg, slots, mut out) = self.out_parts();
            let Some(Slot::Conn(c)) = slots.get_mut(id as usize) else { continue };
            c.heap_key = None;
            c.on_timeout(cfg, now, &mut out);
            self.touch(id);
        }
    }

    /// Next segment to send: the TCP bytes are appended to `buf` (which holds exactly
    /// [`HEADROOM`] bytes on entry).
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        buf.truncate(HEADROOM);
        if buf.len() < HEADROOM {
            buf.resize(HEADROOM, 0);
        }
        if let Some(rst) = self.rsts.pop_front() {
            let mut r = TcpRepr::new(rst.src.port(), rst.dst.port());
            r.seq = rst.seq;
            r.flags = flags::RST;
            if let Some(a) = rst.ack {
                r.flags |= flags::ACK;
                r.ack = a;
            }
            r.window = rst.window;
            r.timestamp = rst.ts;
            let n = r.buffer_len();
            buf.resize(HEADROOM + n, 0);
            r.emit(&mut TcpPacket::new_unchecked(&mut buf[HEADROOM..]), *rst.src.ip(), *rst.dst.ip());
            return Some(Transmit {
                src: *rst.src.ip(),
                dst: *rst.dst.ip(),
                proto: wirelab_wire::ip_proto::TCP,
                tos: rst.tos,
                dont_frag: true,
                ..Default::default()
            });
        }
        while let Some(id) = self.ready.pop_front() {
            let cfg = &self.cfg;
            let Some(Slot::Conn(c)) = self.slots.get_mut(id as usize) else { continue };
            c.in_ready = false;
            let t = c.poll_transmit(cfg, now, buf);
            if t.is_some() {
                if c.wants_transmit() {
                    c.in_ready = true;
                    self.ready.push_back(id);
                }
                self.touch(id);
                self.clean_heap();
                return t;
            }
            buf.truncate(HEADROOM);
            self.touch_timer_only(id);
        }
        self.clean_heap();
        None
    }

    /// A datagram of socket `sk` that this endpoint charged ([`Transmit::tsq`]) left the
    /// host or was dropped in it (`tcp_wfree()`): `truesize` bytes of its
    /// `sk_wmem_alloc` are released. A socket that TCP Small Queues throttled is queued
    /// for transmission (`tcp_tsq_handler()`), and the call returns true: run
    /// `poll_transmit`. Unknown or closed sockets are ignored.
    pub fn tx_complete(&mut self, _now: Instant, sk: u64, truesize: u32) -> bool {
        let Some(id) = self.by_sk.get(&sk) else { return false };
        let Some(Slot::Conn(c)) = self.slots.get_mut(id as usize) else { return false };
        if !c.tx_complete(truesize) {
            return false;
        }
        // tcp_tsq_write(): only in states that send
        if !c.in_ready && matches!(c.state, TcpState::Established | TcpState::FinWait1 | TcpState::Closing | TcpState::CloseWait | TcpState::LastAck) {
            c.in_ready = true;
            self.ready.push_back(id);
        }
        true
    }

    /// A qdisc segmented a GSO skb of socket `sk` on enqueue (`tbf_segment()`): its
    /// charge changes by `delta` bytes (the segments' truesizes for the skb's;
    /// [`wirelab_core::tsq::GSO_SEG`]). Unknown or closed sockets are ignored.
    pub fn tx_recharge(&mut self, sk: u64, delta: i32) {
        let Some(id) = self.by_sk.get(&sk) else { return };
        if let Some(Slot::Conn(c)) = self.slots.get_mut(id as usize) {
            c.tx_recharge(delta);
        }
    }

    /// TCP Small Queues state of socket `s`: bytes (truesize) it has in its host's queues
    /// (`sk_wmem_alloc`, `ss -m`'s `t`) and how often a check held its data back.
    pub fn tsq_state(&self, s: SocketId) -> Option<(u32, u64)> {
        self.conn(s).map(|c| (c.wmem_alloc(), c.tsq.throttles))
    }

    fn touch_timer_only(&mut self, id: u32) {
        if let Some(Slot::Conn(c)) = self.slots.get_mut(id as usize) {
            Self::rekey(&mut self.heap, id, c);
        }
    }

    /// Earliest armed timer of any connection.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.heap.peek().map(|&(t, _)| t)
    }

    /// Next application event.
    pub fn poll_event(&mut self) -> Option<(SocketId, SockEvent)> {
        self.events.pop_front()
    }

    /// `listen()` on `local` (0.0.0.0 = any address). The backlog is capped by
    /// `somaxconn`; as in Linux, `backlog + 1` established connections may wait.
    pub fn listen(&mut self, local: SocketAddrV4, backlog: u32) -> Result<SocketId, SockError> {
        let key = (u32::from(*local.ip()), local.port());
        if local.port() == 0 {
            return Err(SockError::InvalidState);
        }
        if self.listeners.contains_key(&key) {
            return Err(SockError::AddrInUse);
        }
        let id = SocketId(self.slots.len() as u32);
        self.slots.push(Slot::Listener(Box::new(Listener {
            local,
            backlog: backlog.min(self.cfg.somaxconn),
            accept_q: VecDeque::new(),
            synrecv: 0,
            opts: Vec::new(),
        })));
        self.listeners.insert(key, id);
        Ok(id)
    }

    /// `accept()`: the next established connection, if any.
    pub fn accept(&mut self, listener: SocketId) -> Option<SocketId> {
        let Some(Slot::Listener(l)) = self.slots.get_mut(listener.0 as usize) else { return None };
        let id = l.accept_q.pop_front()?;
        if let Some(c) = self.conn_mut(id) {
            c.listener = None;
        }
        Some(id)
    }

    /// `connect()` from `local` (an ephemeral port is chosen) to `remote`.
    pub fn connect(&mut self, now: Instant, local: Ipv4Addr, remote: SocketAddrV4) -> Result<SocketId, SockError> {
        let (lo, hi) = self.cfg.ip_local_port_range;
        let span = (hi - lo) as u64 + 1;
        let start = self.rng.below(span);
        let mut chosen = None;
        for i in 0..span {
            let port = lo + ((start + i) % span) as u16;
            let la = SocketAddrV4::new(local, port);
            if !self.demux.contains_key(&tuple(la, remote)) {
                chosen = Some(la);
                break;
            }
        }
        let la = chosen.ok_or(SockError::AddrNotAvailable)?;
        let id = SocketId(self.slots.len() as u32);
        let iss = self.rng.next_u32();
        let tso = self.rng.next_u32();
        let mut c = Conn::new_active(&self.cfg, id, la, remote, now, iss, tso);
        c.lazy_payload = self.lazy_payload;
        c.tsq.on = self.tx_completions;
        if self.fq_pacing {
            c.set_fq_pacing(true);
        }
        c.local_drop = self.local_drop;
        self.by_sk.insert(c.tsq.sk, id.0);
        self.slots.push(Slot::Conn(Box::new(c)));
        self.demux.insert(tuple(la, remote), id);
        self.touch(id.0);
        self.clean_heap();
        Ok(id)
    }

    /// `write()`: copies what fits in the send buffer; `Ok(0)` means "would block" and a
    /// `Writable` event follows when space frees up.
    pub fn send(&mut self, now: Instant, s: SocketId, data: &[u8]) -> Result<usize, SockError> {
        self.send_more(now, s, data, false)
    }

    /// `sendmsg()` with `MSG_MORE` when `more`: like [`send`](Self::send), but the data is
    /// not pushed: no PSH mark and Nagle corked for this write (`tcp_push()`), so a partial
    /// segment waits for more data, an ACK-driven push or the probe timer.
    pub fn send_more(&mut self, now: Instant, s: SocketId, data: &[u8], more: bool) -> Result<usize, SockError> {
        let cfg = &self.cfg;
        let Some(Slot::Conn(c)) = self.slots.get_mut(s.0 as usize) else { return Err(SockError::InvalidSocket) };
        let r = c.send_more(cfg, now, data, more);
        self.touch(s.0);
        self.clean_heap();
        r
    }

    /// [`Self::send`] of a `'static` slice (a fixed pattern, say): the same bytes go out,
    /// but the send buffer references the slice instead of copying it.
    pub fn send_static(&mut self, now: Instant, s: SocketId, data: &'static [u8]) -> Result<usize, SockError> {
        let cfg = &self.cfg;
        let Some(Slot::Conn(c)) = self.slots.get_mut(s.0 as usize) else { return Err(SockError::InvalidSocket) };
        let r = c.send_static(cfg, now, data);
        self.touch(s.0);
        self.clean_heap();
        r
    }

    /// `read()`: `Ok(0)` only at end of stream; `Err(WouldBlock)` when nothing is queued.
    pub fn recv(&mut self, now: Instant, s: SocketId, buf: &mut [u8]) -> Result<usize, SockError> {
        let cfg = &self.cfg;
        let Some(Slot::Conn(c)) = self.slots.get_mut(s.0 as usize) else { return Err(SockError::InvalidSocket) };
        let r = c.recv(cfg, now, buf);
        self.touch(s.0);
        self.clean_heap();
        r
    }

    /// The application reads socket `s` only with [`TcpEndpoint::recv_discard`] from now
    /// on: its payload bytes need not be stored (see `Conn::discard_payload`).
    pub fn discard_payload(&mut self, s: SocketId) {
        if let Some(c) = self.conn_mut(s) {
            c.discard_payload();
        }
    }

    /// Reads and discards up to `max` bytes (for sinks).
    pub fn recv_discard(&mut self, now: Instant, s: SocketId, max: usize) -> Result<usize, SockError> {
        let cfg = &self.cfg;
        let Some(Slot::Conn(c)) = self.slots.get_mut(s.0 as usize) else { return Err(SockError::InvalidSocket) };
        let r = c.recv_discard(cfg, now, max);
        self.touch(s.0);
        self.clean_heap();
        r
    }

    /// `shutdown(SHUT_WR)`: a FIN follows the queued data.
    pub fn shutdown_write(&mut self, _now: Instant, s: SocketId) -> Result<(), SockError> {
        let c = self.conn_mut(s).ok_or(SockError::InvalidSocket)?;
        let r = c.shutdown_write();
        self.touch(s.0);
        self.clean_heap();
        r
    }

    /// `close()`: graceful (FIN), or RST if unread data is thrown away. The socket id is
    /// invalid afterwards. Closing a listener resets its pending connections.
    pub fn close(&mut self, now: Instant, s: SocketId) {
        match self.slots.get(s.0 as usize) {
            Some(Slot::Listener(_)) => self.close_listener(now, s),
            Some(Slot::Conn(_)) => {
                let (cfg, slots, mut out) = self.out_parts();
                if let Some(Slot::Conn(c)) = slots.get_mut(s.0 as usize) {
                    c.close(cfg, now, &mut out);
                }
                self.touch(s.0);
                self.clean_heap();
            }
            _ => {}
        }
    }

    fn close_listener(&mut self, now: Instant, s: SocketId) {
        let Some(Slot::Listener(l)) = self.slots.get(s.0 as usize) else { return };
        let key = (u32::from(*l.local.ip()), l.local.port());
        self.listeners.remove(&key);
        let children: Vec<u32> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, sl)| match sl {
                Slot::Conn(c) if c.listener == Some(s) => Some(i as u32),
                _ => None,
            })
            .collect();
        self.slots[s.0 as usize] = Slot::Free;
        for id in children {
            self.abort(now, SocketId(id));
        }
    }

    /// Sends RST and frees the socket.
    pub fn abort(&mut self, now: Instant, s: SocketId) {
        let (cfg, slots, mut out) = self.out_parts();
        if let Some(Slot::Conn(c)) = slots.get_mut(s.0 as usize) {
            c.listener = None;
            c.abort(cfg, now, &mut out);
            self.touch(s.0);
            self.clean_heap();
        }
    }

    /// `setsockopt()`. On a listener the option is validated, kept and applied to every
    /// connection it accepts from then on.
    pub fn set_option(&mut self, s: SocketId, opt: SockOpt) -> Result<(), SockError> {
        if let Some(Slot::Listener(l)) = self.slots.get_mut(s.0 as usize) {
            match &opt {
                SockOpt::Congestion(n) => {
                    crate::config::CongestionAlgo::from_name(n).map_err(|_| SockError::BadOption)?;
                }
                SockOpt::WindowClamp(0) => return Err(SockError::BadOption),
                SockOpt::MaxSeg(v) if *v != 0 && *v < 88 => return Err(SockError::BadOption),
                SockOpt::EarlyRetrans(v) if *v > 4 => return Err(SockError::BadOption),
                _ => {}
            }
            l.opts.retain(|o| core::mem::discriminant(o) != core::mem::discriminant(&opt));
            l.opts.push(opt);
            return Ok(());
        }
        let cfg = &self.cfg;
        let Some(Slot::Conn(c)) = self.slots.get_mut(s.0 as usize) else { return Err(SockError::InvalidSocket) };
        let r = c.set_option(cfg, &opt);
        self.touch(s.0);
        self.clean_heap();
        r
    }

    /// Installs (or with `None` removes) a receiver-side advertised-window policy on a
    /// connection. It applies from the next segment sent; installed right after
    /// [`connect`](Self::connect) it also limits the SYN's window. Listeners cannot carry
    /// one (`InvalidState`): install it on the accepted socket.
    pub fn set_rcv_window_policy(
        &mut self,
        s: SocketId,
        p: Option<Box<dyn crate::api::RcvWindowPolicy>>,
    ) -> Result<(), SockError> {
        match self.slots.get_mut(s.0 as usize) {
            Some(Slot::Conn(c)) => {
                c.set_rcv_window_policy(p);
                Ok(())
            }
            Some(Slot::Listener(_)) => Err(SockError::InvalidState),
            _ => Err(SockError::InvalidSocket),
        }
    }

    /// `getsockopt(TCP_INFO)`; `None` for listeners and freed sockets. The busy /
    /// rwnd-limited / sndbuf-limited times count up to the last change of condition (see
    /// [`info_at`](Self::info_at)).
    pub fn info(&self, s: SocketId) -> Option<TcpInfo> {
        self.conn(s).map(|c| c.info(None))
    }

    /// [`info`](Self::info) at `now`: the busy / rwnd-limited / sndbuf-limited times
    /// include the running condition up to `now`, as `getsockopt(TCP_INFO)` does.
    pub fn info_at(&self, now: Instant, s: SocketId) -> Option<TcpInfo> {
        self.conn(s).map(|c| c.info(Some(now)))
    }

    /// State of a socket (listeners report `Listen`).
    pub fn state(&self, s: SocketId) -> Option<TcpState> {
        match self.slots.get(s.0 as usize) {
            Some(Slot::Conn(c)) => Some(c.state),
            Some(Slot::Listener(_)) => Some(TcpState::Listen),
            _ => None,
        }
    }

    /// Local and remote address of a connection.
    pub fn addrs(&self, s: SocketId) -> Option<(SocketAddrV4, SocketAddrV4)> {
        self.conn(s).map(|c| (c.local, c.remote))
    }

    /// Approximate memory held by a connection (struct, buffers, queues), for the
    /// per-flow memory budget.
    pub fn socket_memory(&self, s: SocketId) -> Option<usize> {
        self.conn(s).map(|c| c.memory_bytes())
    }

    /// `ioctl(SIOCINQ)`, `ioctl(SIOCOUTQ)`, `ioctl(SIOCOUTQNSD)`: bytes readable, bytes
    /// written but not yet acknowledged, bytes written but not yet sent. `None` for
    /// listeners (`EINVAL`) and freed sockets.
    pub fn queue_lengths(&self, s: SocketId) -> Option<(u32, u32, u32)> {
        self.conn(s).map(|c| c.queue_lengths())
    }

    /// All live sockets (listeners and connections), in id order.
    pub fn sockets(&self) -> impl Iterator<Item = SocketId> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !matches!(s, Slot::Free))
            .map(|(i, _)| SocketId(i as u32))
    }

    #[cfg(test)]
    pub(crate) fn conn_for_test(&mut self, s: SocketId) -> Option<&mut Conn> {
        self.conn_mut(s)
    }
}
