//! The per-host SCTP endpoint: socket table, demultiplexing, stateless INIT handling with a
//! verified state cookie, out-of-the-blue rules, and one timer heap for all associations.
//!
//! Call order (see `wirelab_core::transport`): after every `handle_*` or command, drain
//! `poll_transmit` until `None`, then `poll_event`, then read `poll_timeout`.
use crate::assoc::{pick_local, Assoc, CookieData, SockSettings, MAX_ADDRS};
use crate::config::SctpConfig;
use crate::types::*;
use crate::wire::*;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::net::Ipv4Addr;
use wirelab_core::{Duration, Instant, Rng, SockEvent, Transmit, HEADROOM};
use wirelab_wire::ip_proto;

/// Linux `SOCK_MIN_SNDBUF` (2 × 2304 on 64-bit; approximated).
const SOCK_MIN_SNDBUF: u64 = 4608;
/// Linux `SOCK_MIN_RCVBUF`.
const SOCK_MIN_RCVBUF: u64 = 2304;
const COOKIE_FIXED: usize = 44;

struct Listener {
    addrs: Vec<Ipv4Addr>,
    backlog: u32,
    accept: VecDeque<u32>,
    settings: SockSettings,
}

enum Slot {
    Listener(Listener),
    Assoc(Box<Assoc>),
}

/// An SCTP stack for one host: one-to-one style sockets over any number of associations.
///
/// Sans-IO: no clock, no I/O, no threads; all randomness (verification tags, initial TSNs,
/// the cookie secret, ephemeral ports, heartbeat jitter and nonces) comes from the [`Rng`]
/// given to [`SctpEndpoint::new`]. Timers of all associations live in one binary heap with
/// lazy deletion, so thousands of associations cost O(log n) per timer change.
pub struct SctpEndpoint {
    cfg: SctpConfig,
    rng: Rng,
    secret: u64,
    slots: Vec<Slot>,
    /// (local port, peer port, peer address) → slot.
    by_peer: HashMap<(u16, u16, Ipv4Addr), u32>,
    listeners: HashMap<u16, u32>,
    timers: BinaryHeap<Reverse<(Instant, u32)>>,
    dirty: VecDeque<u32>,
    replies: VecDeque<(Transmit, Vec<u8>)>,
    events: VecDeque<(SocketId, SockEvent)>,
    /// SCTP over UDP: remote encapsulation ports (RFC 6951; `crate::encap`).
    pub(crate) encap: crate::encap::EncapPorts,
}

impl SctpEndpoint {
    /// A new endpoint with configuration `cfg`, drawing randomness from `rng`.
    pub fn new(cfg: SctpConfig, mut rng: Rng) -> Self {
        let secret = rng.next_u64();
        SctpEndpoint {
            cfg,
            rng,
            secret,
            slots: Vec::new(),
            by_peer: HashMap::new(),
            listeners: HashMap::new(),
            timers: BinaryHeap::new(),
            dirty: VecDeque::new(),
            replies: VecDeque::new(),
            events: VecDeque::new(),
            encap: crate::encap::EncapPorts::default(),
        }
    }

    /// The configuration in use.
    pub fn config(&self) -> &SctpConfig {
        &self.cfg
    }

    // ------------------------------------------------------------------------------
    // driver interface
    // ------------------------------------------------------------------------------

    /// An SCTP packet (the IPv4 payload) addressed to this host.
    pub fn handle_packet(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, tos: u8, packet: &[u8]) {
        self.handle_packet_csum(now, src, dst, tos, packet, true);
    }

    /// [`Self::handle_packet`] with the CRC32c check optional: `verify = false` is a
    /// driver's promise that the checksum is right (`CHECKSUM_UNNECESSARY`, as for a NIC
    /// with SCTP CRC offload).
    pub fn handle_packet_csum(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, tos: u8, packet: &[u8], verify: bool) {
        let _ = tos;
        let Ok(pkt) = SctpPacket::new_checked(packet) else { return };
        if verify && !pkt.verify_checksum() {
            return; // §6.8: silently discard
        }
        let key = (pkt.dst_port(), pkt.src_port(), src);
        if let Some(&idx) = self.by_peer.get(&key) {
            self.with_assoc(idx, |a, cfg, rng| a.on_packet(now, cfg, rng, src, &pkt));
            return;
        }
        let Some(Ok(first)) = pkt.chunks().next() else { return };
        match first.kind() {
            kind::INIT => self.on_init(now, src, dst, &pkt, &first),
            kind::COOKIE_ECHO => self.on_cookie_echo(now, src, dst, &pkt, &first),
            // §8.4 items 2, 6, 7: discard silently.
            kind::ABORT | kind::SHUTDOWN_COMPLETE | kind::COOKIE_ACK | kind::ERROR => {}
            kind::SHUTDOWN_ACK => {
                // §8.4 item 5: SHUTDOWN-COMPLETE with the T bit, tag reflected.
                self.reply(dst, src, pkt.dst_port(), pkt.src_port(), pkt.vtag(), &ChunkRepr::ShutdownComplete { t_bit: true });
            }
            _ => {
                // §8.4 item 8: ABORT with the T bit.
                self.reply(dst, src, pkt.dst_port(), pkt.src_port(), pkt.vtag(), &ChunkRepr::Abort { t_bit: true, causes: &[] });
            }
        }
    }

    /// Runs all timers due at `now` (no-op if none is due).
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&Reverse((t, idx))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let valid = matches!(self.slots.get(idx as usize), Some(Slot::Assoc(a)) if a.armed == Some(t));
            if !valid {
                continue;
            }
            if let Some(Slot::Assoc(a)) = self.slots.get_mut(idx as usize) {
                a.armed = None;
            }
            self.with_assoc(idx, |a, cfg, rng| a.on_timeout(now, cfg, rng));
        }
        self.tidy();
    }

    /// Writes the next SCTP packet after the `HEADROOM` bytes already in `buf`
    /// (`poll_transmit`, in engine.rs, adds the UDP encapsulation).
    pub(crate) fn poll_transmit_sctp(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        buf.truncate(HEADROOM.min(buf.len()));
        buf.resize(HEADROOM, 0);
        if let Some((t, bytes)) = self.replies.pop_front() {
            buf.extend_from_slice(&bytes);
            return Some(t);
        }
        while let Some(&idx) = self.dirty.front() {
            let Some(Slot::Assoc(a)) = self.slots.get_mut(idx as usize) else {
                self.dirty.pop_front();
                continue;
            };
            if let Some(t) = a.poll_transmit(now, &self.cfg, buf) {
                self.touch(idx);
                return Some(t);
            }
            a.in_dirty = false;
            self.dirty.pop_front();
            self.touch(idx);
        }
        self.tidy();
        None
    }

    /// Earliest time `handle_timeout` has work (may be slightly early; never late).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((t, _))| *t)
    }

    /// Next application event.
    pub fn poll_event(&mut self) -> Option<(SocketId, SockEvent)> {
        self.events.pop_front()
    }

    // ------------------------------------------------------------------------------
    // sockets
    // ------------------------------------------------------------------------------

    /// `socket(); bind(local_addrs, port); listen(backlog)`. An empty address list means
    /// INADDR_ANY (the packet's destination address is used).
    pub fn listen(&mut self, local_addrs: &[Ipv4Addr], port: u16, backlog: u32) -> Result<SocketId, SockError> {
        if port == 0 {
            return Err(SockError::Invalid);
        }
        if self.listeners.contains_key(&port) {
            return Err(SockError::AddrInUse);
        }
        let idx = self.slots.len() as u32;
        self.slots.push(Slot::Listener(Listener { addrs: local_addrs.to_vec(), backlog: backlog.max(1), accept: VecDeque::new(), settings: SockSettings::new(&self.cfg) }));
        self.listeners.insert(port, idx);
        Ok(SocketId(idx))
    }

    /// `accept()`: the next established association of `listener`.
    pub fn accept(&mut self, listener: SocketId) -> Option<SocketId> {
        match self.slots.get_mut(listener.0 as usize) {
            Some(Slot::Listener(l)) => l.accept.pop_front().map(SocketId),
            _ => None,
        }
    }

    /// `connect()` from `local_addrs` (bound with `sctp_bindx`) to the peer's addresses;
    /// the first remote address is the primary path. Sends INIT.
    pub fn connect(&mut self, now: Instant, local_addrs: &[Ipv4Addr], remote_addrs: &[Ipv4Addr], remote_port: u16) -> Result<SocketId, SockError> {
        if local_addrs.is_empty() || remote_addrs.is_empty() || remote_port == 0 {
            return Err(SockError::Invalid);
        }
        let remote: Vec<Ipv4Addr> = remote_addrs.iter().copied().take(MAX_ADDRS).collect();
        // Ephemeral port: Linux ip_local_port_range 32768..60999, random start.
        let mut lport = 0;
        for _ in 0..64 {
            let p = self.rng.range_inclusive(32768, 60999) as u16;
            if !self.listeners.contains_key(&p) && remote.iter().all(|&r| !self.by_peer.contains_key(&(p, remote_port, r))) {
                lport = p;
                break;
            }
        }
        if lport == 0 {
            return Err(SockError::NoPorts);
        }
        let settings = SockSettings::new(&self.cfg);
        let a = Assoc::new_client(now, &self.cfg, settings, lport, remote_port, local_addrs.to_vec(), &remote, &mut self.rng);
        let idx = self.slots.len() as u32;
        for &r in &remote {
            self.by_peer.insert((lport, remote_port, r), idx);
        }
        self.slots.push(Slot::Assoc(Box::new(a)));
        self.after(idx, false);
        Ok(SocketId(idx))
    }

    /// `sctp_sendmsg()`: queues one message on `stream`. Returns `Ok(data.len())`, or
    /// `Ok(0)` if the send buffer is full (a `Writable` event follows when space frees).
    pub fn send(&mut self, now: Instant, s: SocketId, stream: u16, data: &[u8], unordered: bool) -> Result<usize, SockError> {
        let _ = now;
        self.assoc_cmd(s, |a, cfg, _| {
            a.begin_flush(cfg);
            a.send(cfg, stream, data, unordered)
        })?
    }

    /// `recvmsg()`: copies up to `buf.len()` bytes of the next message. `Ok(None)` = would
    /// block; `len == 0` with `end_of_message` = the peer shut down and everything was read.
    pub fn recv(&mut self, now: Instant, s: SocketId, buf: &mut [u8]) -> Result<Option<RecvInfo>, SockError> {
        self.assoc_cmd(s, |a, cfg, _| a.recv(now, cfg, buf))?
    }

    /// Reads and discards up to `max` bytes (a sink that only counts); same return as `recv`.
    pub fn recv_discard(&mut self, now: Instant, s: SocketId, max: usize) -> Result<Option<RecvInfo>, SockError> {
        let mut scratch = [0u8; 16384];
        let mut total = 0usize;
        let mut last = None;
        while total < max {
            let n = (max - total).min(scratch.len());
            match self.recv(now, s, &mut scratch[..n])? {
                Some(r) if r.len > 0 => {
                    total += r.len;
                    last = Some(RecvInfo { len: total, ..r });
                }
                Some(r) => {
                    if total == 0 {
                        return Ok(Some(r));
                    }
                    break;
                }
                None => break,
            }
        }
        Ok(last)
    }

    /// Graceful shutdown (`shutdown(SHUT_WR)`/`close()`): SHUTDOWN after all data is acked.
    pub fn shutdown(&mut self, now: Instant, s: SocketId) -> Result<(), SockError> {
        self.assoc_cmd(s, |a, _, _| a.shutdown(now))
    }

    /// `close()` on a one-to-one socket: graceful shutdown; ignored for unknown sockets.
    pub fn close(&mut self, now: Instant, s: SocketId) {
        let _ = self.assoc_cmd(s, |a, _, _| a.shutdown(now));
    }

    /// Abortive close (`SO_LINGER` 0): ABORT with a user-initiated-abort cause; no-op for
    /// unknown or already closed sockets.
    pub fn abort(&mut self, now: Instant, s: SocketId) {
        let _ = now;
        let _ = self.assoc_cmd(s, |a, _, _| a.abort());
    }

    /// Association state (`None` for listeners and unknown sockets).
    pub fn state(&self, s: SocketId) -> Option<AssocState> {
        match self.slots.get(s.0 as usize) {
            Some(Slot::Assoc(a)) => Some(a.state),
            _ => None,
        }
    }

    /// (local port, peer port, primary peer address) of an association socket.
    pub fn addrs(&self, s: SocketId) -> Option<(u16, u16, Ipv4Addr)> {
        match self.slots.get(s.0 as usize) {
            Some(Slot::Assoc(a)) => Some((a.lport, a.pport, a.paths.get(a.primary)?.addr)),
            _ => None,
        }
    }

    /// All association sockets, in creation order.
    pub fn sockets(&self) -> impl Iterator<Item = SocketId> + '_ {
        self.slots.iter().enumerate().filter(|(_, s)| matches!(s, Slot::Assoc(_))).map(|(i, _)| SocketId(i as u32))
    }

    /// `setsockopt()`. On a listener, the setting is inherited by accepted associations.
    pub fn set_option(&mut self, s: SocketId, opt: SockOpt) -> Result<(), SockError> {
        let cfg = &self.cfg;
        let apply = |st: &mut SockSettings| match opt {
            SockOpt::NoDelay(b) => st.nodelay = b,
            // Linux sock_setsockopt: doubled, clamped to [SOCK_MIN_*, 2·*mem_max], locked.
            SockOpt::SndBuf(v) => {
                st.sndbuf = ((v as u64).min(cfg.wmem_max) * 2).max(SOCK_MIN_SNDBUF);
                st.sndbuf_locked = true;
            }
            SockOpt::RcvBuf(v) => {
                st.rcvbuf = ((v as u64).min(cfg.rmem_max) * 2).max(SOCK_MIN_RCVBUF);
                st.rcvbuf_locked = true;
            }
            SockOpt::MaxBurst(n) => st.max_burst = n,
            SockOpt::CmtOnOff(v) => st.cmt = crate::Cmt::from_value(v).unwrap_or(st.cmt),
            SockOpt::Primary(_) => {}
        };
        if matches!(opt, SockOpt::CmtOnOff(v) if crate::Cmt::from_value(v).is_none()) {
            return Err(SockError::Invalid);
        }
        match self.slots.get_mut(s.0 as usize) {
            Some(Slot::Listener(l)) => {
                if matches!(opt, SockOpt::Primary(_)) {
                    return Err(SockError::IsListener);
                }
                apply(&mut l.settings);
                Ok(())
            }
            Some(Slot::Assoc(a)) => {
                if let SockOpt::Primary(addr) = opt {
                    return if a.set_primary(addr) { Ok(()) } else { Err(SockError::Invalid) };
                }
                apply(&mut a.sock);
                if matches!(opt, SockOpt::RcvBuf(_)) && a.state == AssocState::CookieWait {
                    // Not yet advertised beyond a (re)sent INIT: recompute rwnd = rcvbuf/2.
                    a.rcvbuf_changed_before_init();
                }
                Ok(())
            }
            None => Err(SockError::BadSocket),
        }
    }

    /// Association snapshot (`None` for listeners and unknown sockets).
    pub fn info(&self, s: SocketId) -> Option<AssocInfo> {
        match self.slots.get(s.0 as usize) {
            Some(Slot::Assoc(a)) => Some(a.info()),
            _ => None,
        }
    }

    /// Number of sockets ever created (listeners and associations).
    pub fn num_sockets(&self) -> usize {
        self.slots.len()
    }

    // ------------------------------------------------------------------------------
    // internals
    // ------------------------------------------------------------------------------

    fn assoc_cmd<R>(&mut self, s: SocketId, f: impl FnOnce(&mut Assoc, &SctpConfig, &mut Rng) -> R) -> Result<R, SockError> {
        match self.slots.get(s.0 as usize) {
            Some(Slot::Assoc(_)) => {}
            Some(Slot::Listener(_)) => return Err(SockError::IsListener),
            None => return Err(SockError::BadSocket),
        }
        let mut out = None;
        self.with_assoc(s.0, |a, cfg, rng| out = Some(f(a, cfg, rng)));
        out.ok_or(SockError::BadSocket)
    }

    /// Runs `f` on association `idx`, then updates timers, output and events.
    /// An ICMP protocol unreachable (or, over UDP, port unreachable) quoting a packet we
    /// sent from `lport` to `peer:pport` with verification tag `vtag` (the INIT's initiate
    /// tag when `vtag` is 0): Linux `sctp_err_lookup()` checks the tag, then
    /// `sctp_icmp_proto_unreachable()` aborts an association in COOKIE-WAIT
    /// (`sctp_sf_cookie_wait_icmp_abort`, ECONNREFUSED) and ignores it in other states.
    pub(crate) fn icmp_proto_unreachable(&mut self, lport: u16, pport: u16, peer: Ipv4Addr, vtag: u32, init_tag: Option<u32>) {
        let Some(&idx) = self.by_peer.get(&(lport, pport, peer)) else { return };
        let Some(Slot::Assoc(a)) = self.slots.get(idx as usize) else { return };
        let tag_ok = if vtag == 0 { init_tag == Some(a.my_tag) } else { vtag == a.peer_tag };
        if !tag_ok || a.state != AssocState::CookieWait {
            return;
        }
        self.with_assoc(idx, |a, _, _| a.on_abort());
        self.tidy();
    }

    fn with_assoc(&mut self, idx: u32, f: impl FnOnce(&mut Assoc, &SctpConfig, &mut Rng)) {
        let Some(Slot::Assoc(a)) = self.slots.get_mut(idx as usize) else { return };
        let was_readable = a.readable();
        a.begin_flush(&self.cfg);
        f(a, &self.cfg, &mut self.rng);
        let now_readable = a.readable();
        self.after(idx, !was_readable && now_readable);
    }

    fn after(&mut self, idx: u32, became_readable: bool) {
        let Some(Slot::Assoc(a)) = self.slots.get_mut(idx as usize) else { return };
        let sid = SocketId(idx);
        let mut incoming_for: Option<u32> = None;
        for e in a.events.drain(..) {
            if e == SockEvent::Connected && a.listener.is_some() {
                incoming_for = a.listener;
                continue;
            }
            self.events.push_back((sid, e));
        }
        if became_readable {
            self.events.push_back((sid, SockEvent::Readable));
        }
        if !a.in_dirty && a.has_output(&self.cfg) {
            a.in_dirty = true;
            self.dirty.push_back(idx);
        }
        if a.state == AssocState::Closed {
            let keys: Vec<(u16, u16, Ipv4Addr)> = a.paths.iter().map(|p| (a.lport, a.pport, p.addr)).collect();
            for k in keys {
                if self.by_peer.get(&k) == Some(&idx) {
                    self.by_peer.remove(&k);
                }
            }
        }
        let _ = incoming_for;
        self.touch(idx);
        self.tidy();
    }

    /// Re-arms the heap entry of association `idx` if its earliest timer changed.
    fn touch(&mut self, idx: u32) {
        let Some(Slot::Assoc(a)) = self.slots.get_mut(idx as usize) else { return };
        let t = a.next_timeout();
        if t != a.armed {
            a.armed = t;
            if let Some(t) = t {
                self.timers.push(Reverse((t, idx)));
            }
        }
    }

    /// Drops stale heap entries at the top so `poll_timeout` is exact in the common case.
    fn tidy(&mut self) {
        while let Some(&Reverse((t, idx))) = self.timers.peek() {
            let valid = matches!(self.slots.get(idx as usize), Some(Slot::Assoc(a)) if a.armed == Some(t));
            if valid {
                break;
            }
            self.timers.pop();
        }
    }

    fn reply(&mut self, src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, vtag: u32, chunk: &ChunkRepr<'_>) {
        let mut b = vec![0u8; COMMON_HEADER_LEN + chunk.buffer_len()];
        let mut at = COMMON_HEADER_LEN;
        chunk.emit_at(&mut b, &mut at);
        let mut p = SctpPacket::new_unchecked(&mut b[..]);
        p.set_header(sport, dport, vtag);
        p.fill_checksum();
        self.replies.push_back((Transmit { src, dst, proto: ip_proto::SCTP, tos: 0, dont_frag: true, ..Default::default() }, b));
    }

    fn listener_for(&self, port: u16, dst: Ipv4Addr) -> Option<u32> {
        let &idx = self.listeners.get(&port)?;
        match &self.slots[idx as usize] {
            Slot::Listener(l) if l.addrs.is_empty() || l.addrs.contains(&dst) => Some(idx),
            _ => None,
        }
    }

    /// §5.1 B: answer an INIT statelessly with an INIT-ACK carrying a state cookie.
    fn on_init(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, pkt: &SctpPacket<&[u8]>, c: &Chunk<&[u8]>) {
        if pkt.vtag() != 0 {
            return; // §8.5.1 A
        }
        let Ok(ChunkRepr::Init(init)) = ChunkRepr::parse(c) else { return };
        let Some(lidx) = self.listener_for(pkt.dst_port(), dst) else {
            // No listener: ABORT, tag = the INIT's initiate tag, T bit clear (§8.4 item 3).
            self.reply(dst, src, pkt.dst_port(), pkt.src_port(), init.init_tag, &ChunkRepr::Abort { t_bit: false, causes: &[] });
            return;
        };
        let Slot::Listener(l) = &self.slots[lidx as usize] else { return };
        let rcvbuf = l.settings.rcvbuf;
        let local_addrs = if l.addrs.is_empty() { wildcard_addrs(&self.cfg, dst) } else { l.addrs.clone() };
        let mut peer_addrs = vec![src];
        let mut unrec: Vec<u8> = Vec::new();
        let mut preservative_ms = 0u32;
        for t in init.params() {
            let Ok(t) = t else { break };
            match ParamRepr::parse(&t) {
                Ok(ParamRepr::Ipv4Addr(a)) if !peer_addrs.contains(&a) && peer_addrs.len() < MAX_ADDRS => peer_addrs.push(a),
                Ok(ParamRepr::CookiePreservative(ms)) => preservative_ms = ms,
                Ok(ParamRepr::Unknown { kind: param::ADAPTATION_LAYER_IND, .. }) => {} // RFC 5061: known, no report
                Ok(ParamRepr::Unknown { kind, .. }) => {
                    // §3.2.1 upper-two-bit rules for parameters.
                    let act = UnknownAction::for_param(kind);
                    if act.reports() {
                        let mut b = vec![0u8; pad4(4 + t.raw.len())];
                        let mut at = 0;
                        ParamRepr::Unrecognized(t.raw).emit(&mut b, &mut at);
                        unrec.extend_from_slice(&b[..at]);
                    }
                    if !act.continues() {
                        break;
                    }
                }
                _ => {}
            }
        }
        let my_tag = loop {
            let v = self.rng.next_u32();
            if v != 0 {
                break v;
            }
        };
        let my_itsn = self.rng.next_u32();
        let a_rwnd = (rcvbuf / 2).max(1500) as u32;
        // Linux sctp_process_param: cookie life extended by the preservative (capped).
        let life = self.cfg.valid_cookie_life + Duration::from_millis(preservative_ms.min(3_600_000) as u64);
        let cd = CookieData {
            created: now,
            life,
            my_tag,
            peer_tag: init.init_tag,
            my_itsn,
            peer_itsn: init.initial_tsn.0,
            peer_rwnd: init.a_rwnd,
            os: self.cfg.out_streams.min(init.mis),
            is: self.cfg.max_in_streams.min(init.os),
            lport: pkt.dst_port(),
            pport: pkt.src_port(),
            peer_addrs,
        };
        let cookie = self.encode_cookie(&cd);
        let mut params = vec![0u8; 8 * (MAX_ADDRS + 2) + cookie.len() + unrec.len() + 16];
        let mut at = 0;
        if local_addrs.len() > 1 {
            for &a in local_addrs.iter().take(MAX_ADDRS) {
                ParamRepr::Ipv4Addr(a).emit(&mut params, &mut at);
            }
        }
        ParamRepr::StateCookie(&cookie).emit(&mut params, &mut at);
        params[at..at + unrec.len()].copy_from_slice(&unrec);
        at += unrec.len();
        let ack = ChunkRepr::InitAck(InitRepr { init_tag: my_tag, a_rwnd, os: cd.os, mis: self.cfg.max_in_streams, initial_tsn: Tsn(my_itsn), params: &params[..at] });
        let src_local = if local_addrs.contains(&dst) { dst } else { pick_local(&self.cfg, &local_addrs, src) };
        self.reply(src_local, src, pkt.dst_port(), pkt.src_port(), init.init_tag, &ack);
    }

    fn on_cookie_echo(&mut self, now: Instant, src: Ipv4Addr, dst: Ipv4Addr, pkt: &SctpPacket<&[u8]>, c: &Chunk<&[u8]>) {
        let Ok(ChunkRepr::CookieEcho { cookie }) = ChunkRepr::parse(c) else { return };
        let Some(cd) = self.decode_cookie(cookie) else { return }; // bad MAC: discard (§5.1.5)
        if cd.my_tag != pkt.vtag() || cd.lport != pkt.dst_port() || cd.pport != pkt.src_port() {
            return;
        }
        let expires = cd.created.saturating_add(cd.life);
        if now > expires {
            // §5.1.5 item 3: Stale Cookie error, staleness in µs.
            let stale_us = now.saturating_since(expires).as_micros().min(u32::MAX as u64) as u32;
            let mut cause = [0u8; 8];
            let mut at = 0;
            put_tlv(&mut cause, &mut at, cause::STALE_COOKIE, &stale_us.to_be_bytes());
            self.reply(dst, src, pkt.dst_port(), pkt.src_port(), cd.peer_tag, &ChunkRepr::Error { causes: &cause });
            return;
        }
        let Some(lidx) = self.listener_for(pkt.dst_port(), dst) else { return };
        let Slot::Listener(l) = &self.slots[lidx as usize] else { return };
        if l.accept.len() as u32 >= l.backlog {
            return; // Linux sctp_sf_do_5_1D_ce: accept queue full → discard
        }
        let settings = l.settings;
        let local_addrs = if l.addrs.is_empty() { wildcard_addrs(&self.cfg, dst) } else { l.addrs.clone() };
        let mut a = Assoc::new_server(now, &self.cfg, settings, &cd, local_addrs, &mut self.rng);
        a.listener = Some(lidx);
        let idx = self.slots.len() as u32;
        for p in &a.paths {
            self.by_peer.insert((cd.lport, cd.pport, p.addr), idx);
        }
        self.slots.push(Slot::Assoc(Box::new(a)));
        if let Some(Slot::Listener(l)) = self.slots.get_mut(lidx as usize) {
            l.accept.push_back(idx);
        }
        self.events.push_back((SocketId(lidx), SockEvent::Incoming));
        // Process the rest of the packet (the COOKIE-ECHO itself queues COOKIE-ACK; bundled
        // DATA is accepted).
        self.with_assoc(idx, |a, cfg, rng| a.on_packet(now, cfg, rng, src, pkt));
    }

    /// Cookie = fixed fields ‖ peer addresses ‖ 64-bit keyed hash. Not HMAC: a keyed,
    /// stable hash with the endpoint's secret, enough to reject forged or altered cookies
    /// in simulation (documented deviation from RFC 9260 §5.1.3's HMAC).
    fn encode_cookie(&self, c: &CookieData) -> Vec<u8> {
        let n = c.peer_addrs.len().min(MAX_ADDRS);
        let mut b = vec![0u8; COOKIE_FIXED + 4 * n + 8];
        b[0..4].copy_from_slice(&c.my_tag.to_be_bytes());
        b[4..8].copy_from_slice(&c.peer_tag.to_be_bytes());
        b[8..12].copy_from_slice(&c.my_itsn.to_be_bytes());
        b[12..16].copy_from_slice(&c.peer_itsn.to_be_bytes());
        b[16..20].copy_from_slice(&c.peer_rwnd.to_be_bytes());
        b[20..22].copy_from_slice(&c.os.to_be_bytes());
        b[22..24].copy_from_slice(&c.is.to_be_bytes());
        b[24..26].copy_from_slice(&c.lport.to_be_bytes());
        b[26..28].copy_from_slice(&c.pport.to_be_bytes());
        b[28..36].copy_from_slice(&c.created.as_nanos().to_be_bytes());
        b[36..40].copy_from_slice(&(c.life.as_millis().min(u32::MAX as u64) as u32).to_be_bytes());
        b[40] = n as u8;
        for (i, a) in c.peer_addrs.iter().take(n).enumerate() {
            b[COOKIE_FIXED + 4 * i..COOKIE_FIXED + 4 * i + 4].copy_from_slice(&a.octets());
        }
        let l = b.len();
        let m = keyed_hash(self.secret, &b[..l - 8]);
        b[l - 8..].copy_from_slice(&m.to_be_bytes());
        b
    }

    fn decode_cookie(&self, b: &[u8]) -> Option<CookieData> {
        if b.len() < COOKIE_FIXED + 8 {
            return None;
        }
        let n = b[40] as usize;
        if n == 0 || n > MAX_ADDRS || b.len() != COOKIE_FIXED + 4 * n + 8 {
            return None;
        }
        let l = b.len();
        let m = u64::from_be_bytes(b[l - 8..].try_into().ok()?);
        if m != keyed_hash(self.secret, &b[..l - 8]) {
            return None;
        }
        let u32at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u16at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        Some(CookieData {
            my_tag: u32at(0),
            peer_tag: u32at(4),
            my_itsn: u32at(8),
            peer_itsn: u32at(12),
            peer_rwnd: u32at(16),
            os: u16at(20).max(1),
            is: u16at(22).max(1),
            lport: u16at(24),
            pport: u16at(26),
            created: Instant::from_nanos(u64::from_be_bytes(b[28..36].try_into().ok()?)),
            life: Duration::from_millis(u32at(36) as u64),
            peer_addrs: (0..n).map(|i| Ipv4Addr::from(u32at(COOKIE_FIXED + 4 * i))).collect(),
        })
    }
}

/// A keyed 64-bit hash (SplitMix64-style mixing of 8-byte words with the secret). Stable
/// across platforms; not cryptographic.
fn keyed_hash(key: u64, data: &[u8]) -> u64 {
    let mix = |mut z: u64| {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut h = mix(key ^ 0x9E37_79B9_7F4A_7C15 ^ data.len() as u64);
    for ch in data.chunks(8) {
        let mut w = [0u8; 8];
        w[..ch.len()].copy_from_slice(ch);
        h = mix(h ^ u64::from_le_bytes(w)).wrapping_add(key);
    }
    mix(h ^ key.rotate_left(32))
}

/// Local addresses of an association accepted by a wildcard listener: the INIT's
/// destination first, then the host's other addresses (`sctp_bind_addr_copy()`), at most
/// `MAX_ADDRS`.
fn wildcard_addrs(cfg: &SctpConfig, dst: Ipv4Addr) -> Vec<Ipv4Addr> {
    let mut v = vec![dst];
    for &a in &cfg.host_addrs {
        if !v.contains(&a) && !a.is_loopback() && !a.is_unspecified() && v.len() < crate::assoc::MAX_ADDRS {
            v.push(a);
        }
    }
    v
}
