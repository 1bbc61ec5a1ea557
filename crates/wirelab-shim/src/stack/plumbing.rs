//! The shim's plumbing behind its socket API: mapping engine sockets to shim sockets,
//! pushing bytes between the TCP-semantics side and the chosen transport (`pump`,
//! `transport_send`, `sctp_recv`), SCTP-first fallback, and the engines' events.
use super::*;

impl ShimStack {
    pub(super) fn conn_mut(&mut self, idx: u32) -> Result<&mut ConnSock, SockError> {
        match self.slots.get_mut(idx as usize) {
            Some(Slot::Conn(c, _)) if !c.app_closed => Ok(c),
            Some(Slot::Listener(..)) => Err(SockError::InvalidState),
            _ => Err(SockError::InvalidSocket),
        }
    }
    pub(super) fn conn_any(&mut self, idx: u32) -> Option<&mut ConnSock> {
        match self.slots.get_mut(idx as usize) {
            Some(Slot::Conn(c, _)) => Some(c),
            _ => None,
        }
    }

    pub(super) fn map_tcp(&mut self, t: TcpId, idx: u32) {
        self.by_tcp.insert(t, idx);
        mark(&mut self.owned_tcp, t.0);
    }
    pub(super) fn map_sctp(&mut self, a: SctpId, idx: u32) {
        self.by_sctp.insert(a, idx);
        mark(&mut self.owned_sctp, a.0);
    }
    /// The pending SCTP open of a connecting socket is over (connected, fallen back,
    /// failed or closed): its INIT retransmissions stop advertising.
    pub(super) fn unadvertise_connect(&mut self, a: SctpId) {
        if let Some((lport, _, _)) = self.sctp.addrs(a) {
            unbump(&mut self.adv_connect_ports, lport);
        }
    }

    pub(super) fn note_cap(&mut self, now: Instant, key: (u16, u16, Ipv4Addr)) {
        if self.caps.len() >= CAP_MAX {
            self.caps.retain(|_, t| now.saturating_since(*t) < CAP_TTL);
            if self.caps.len() >= CAP_MAX {
                // still full: forget the oldest record (deterministic: smallest time, then key)
                if let Some(k) = self.caps.iter().min_by_key(|(k, t)| (**t, **k)).map(|(k, _)| *k) {
                    self.caps.remove(&k);
                }
            }
        }
        self.caps.insert(key, now);
    }

    /// Hands `data` to the socket's transport; counts stream-0 bytes.
    pub(super) fn transport_send(&mut self, now: Instant, idx: u32, data: &[u8]) -> Result<usize, SockError> {
        let max_msg = self.cfg.max_msg_bytes.max(1);
        let c = self.conn_any(idx).ok_or(SockError::InvalidSocket)?;
        match (c.transport, c.tcp, c.sctp) {
            (Some(Transport::Tcp), Some(t), _) => {
                let n = self.tcp.send(now, t, data)?;
                if let Some(c) = self.conn_any(idx) {
                    c.tx_bytes += n as u64;
                }
                Ok(n)
            }
            (Some(Transport::Sctp), _, Some(a)) => {
                let mut total = 0;
                for piece in data.chunks(max_msg) {
                    match self.sctp.send(now, a, 0, piece, false) {
                        Ok(0) => break,
                        Ok(n) => total += n,
                        Err(e) => {
                            if total == 0 {
                                return Err(map_sctp_err(e));
                            }
                            break;
                        }
                    }
                }
                if let Some(c) = self.conn_any(idx) {
                    c.tx_bytes += total as u64;
                }
                Ok(total)
            }
            _ => Err(SockError::NotConnected),
        }
    }

    /// Flushes held bytes, then carries out a pending half-close or close.
    pub(super) fn pump(&mut self, now: Instant, idx: u32) {
        let Some(c) = self.conn_any(idx) else { return };
        if !c.connected {
            return;
        }
        if c.outbox_off < c.outbox.len() {
            let pending = std::mem::take(&mut c.outbox);
            let off = c.outbox_off;
            let r = self.transport_send(now, idx, &pending[off..]);
            let Some(c) = self.conn_any(idx) else { return };
            c.outbox = pending;
            match r {
                Ok(n) => c.outbox_off += n,
                Err(_) => {
                    c.outbox.clear();
                    c.outbox_off = 0;
                }
            }
            if c.outbox_off >= c.outbox.len() {
                c.outbox = Vec::new();
                c.outbox_off = 0;
                if c.want_writable && !c.app_closed {
                    c.want_writable = false;
                    self.events.push_back((ShimSocketId(idx), SockEvent::Writable));
                }
            } else {
                return;
            }
        }
        let emulate_cfg = self.cfg.half_close == HalfClose::ControlStream;
        let Some(c) = self.conn_any(idx) else { return };
        if !c.wr_closed || c.fin_done {
            return;
        }
        match (c.transport, c.tcp, c.sctp) {
            (Some(Transport::Tcp), Some(t), _) => {
                c.fin_done = true;
                if c.app_closed {
                    self.by_tcp.remove(&t);
                    self.tcp.close(now, t);
                    self.slots[idx as usize] = Slot::Free;
                } else {
                    let _ = self.tcp.shutdown_write(now, t);
                }
            }
            (Some(Transport::Sctp), _, Some(a)) => {
                let emulate = c.peer_is_shim && emulate_cfg;
                if emulate {
                    let mut mark = [0u8; MARK_LEN];
                    mark[0] = MARK_FIN;
                    mark[1..].copy_from_slice(&c.tx_bytes.to_be_bytes());
                    match self.sctp.send(now, a, self.cfg.control_stream, &mark, false) {
                        Ok(0) => return, // send buffer full: retried on Writable
                        Ok(_) => {}
                        Err(_) => {
                            // no control stream (peer offered too few streams) or the
                            // association is going away: fall through to SHUTDOWN
                            self.sctp_down(now, idx, a);
                            return;
                        }
                    }
                    let Some(c) = self.conn_any(idx) else { return };
                    c.fin_done = true;
                    let peer_done = c.peer_eof_at.is_some_and(|e| c.rx_bytes >= e);
                    if c.app_closed || peer_done {
                        self.sctp_down(now, idx, a);
                    }
                } else {
                    self.sctp_down(now, idx, a);
                }
            }
            _ => {}
        }
    }

    /// SCTP SHUTDOWN for both directions.
    pub(super) fn sctp_down(&mut self, now: Instant, idx: u32, a: SctpId) {
        let Some(c) = self.conn_any(idx) else { return };
        c.fin_done = true;
        if c.sctp_down {
            return;
        }
        c.sctp_down = true;
        let _ = self.sctp.shutdown(now, a);
    }

    pub(super) fn sctp_recv(&mut self, now: Instant, idx: u32, a: SctpId, buf: &mut [u8]) -> Result<usize, SockError> {
        let ctrl_stream = self.cfg.control_stream;
        let mut n = 0;
        let mut eof = false;
        let mut err = None;
        while let Some(c) = self.conn_any(idx) {
            if c.peer_eof_at.is_some_and(|e| c.rx_bytes >= e) {
                eof = true;
                break;
            }
            if n >= buf.len() {
                break;
            }
            let shim_peer = c.peer_is_shim;
            match self.sctp.recv(now, a, &mut buf[n..]) {
                Ok(None) => break,
                Ok(Some(r)) if r.len == 0 => {
                    if r.end_of_message {
                        eof = true;
                    }
                    break;
                }
                Ok(Some(r)) => {
                    let Some(c) = self.conn_any(idx) else { break };
                    if shim_peer && r.stream == ctrl_stream {
                        c.ctrl.extend_from_slice(&buf[n..n + r.len]);
                        if r.end_of_message {
                            if c.ctrl.len() == MARK_LEN && c.ctrl[0] == MARK_FIN {
                                let mut b = [0u8; 8];
                                b.copy_from_slice(&c.ctrl[1..]);
                                c.peer_eof_at = Some(u64::from_be_bytes(b));
                            }
                            // anything else on the control stream is ignored (future markers)
                            c.ctrl.clear();
                        }
                    } else {
                        n += r.len;
                        c.rx_bytes += r.len as u64;
                    }
                }
                Err(e) => {
                    err = Some(map_sctp_err(e));
                    break;
                }
            }
        }
        let Some(c) = self.conn_any(idx) else { return Err(SockError::InvalidSocket) };
        let peer_done = c.peer_eof_at.is_some_and(|e| c.rx_bytes >= e);
        if peer_done || eof {
            if !c.peer_closed_reported {
                c.peer_closed_reported = true;
                self.events.push_back((ShimSocketId(idx), SockEvent::PeerClosed));
            }
            let c = self.conn_any(idx).expect("checked above");
            if peer_done && c.fin_done && !c.sctp_down {
                // both directions closed: now the association itself can go
                self.sctp_down(now, idx, a);
            }
        }
        if n > 0 {
            Ok(n)
        } else if peer_done || eof {
            Ok(0)
        } else if let Some(e) = err {
            Err(e)
        } else {
            Err(SockError::WouldBlock)
        }
    }

    pub(super) fn fail_connect(&mut self, now: Instant, idx: u32) {
        let Some(Slot::Conn(c, _)) = self.slots.get_mut(idx as usize) else { return };
        if let Some(d) = c.deadline.take() {
            self.deadlines.remove(&(d, idx));
        }
        if let Some(a) = c.sctp.take() {
            self.by_sctp.remove(&a);
            self.unadvertise_connect(a);
            self.sctp.abort(now, a);
        }
        self.events.push_back((ShimSocketId(idx), SockEvent::ConnectFailed));
    }

    /// Tears the SCTP attempt down and opens TCP on the same shim socket.
    pub(super) fn fall_back(&mut self, now: Instant, idx: u32, why: FallbackReason) {
        let Some(Slot::Conn(c, _)) = self.slots.get_mut(idx as usize) else { return };
        if c.transport.is_some() {
            return;
        }
        if let Some(d) = c.deadline.take() {
            self.deadlines.remove(&(d, idx));
        }
        if let Some(a) = c.sctp.take() {
            self.by_sctp.remove(&a);
            self.unadvertise_connect(a);
            self.sctp.abort(now, a);
        }
        let c = self.conn_any(idx).expect("checked above");
        c.fallback = Some(why);
        c.transport = Some(Transport::Tcp);
        self.note_outcome(idx, Transport::Tcp, Some(why));
        let c = self.conn_any(idx).expect("checked above");
        let local = c.local_ips.first().copied().unwrap_or(Ipv4Addr::UNSPECIFIED);
        let remote = SocketAddrV4::new(c.remote_ips.first().copied().unwrap_or(Ipv4Addr::UNSPECIFIED), c.remote_port);
        match self.tcp.connect(now, local, remote) {
            Ok(t) => {
                self.map_tcp(t, idx);
                let mut opts = Vec::new();
                if let Some(c) = self.conn_any(idx) {
                    c.tcp = Some(t);
                    opts = std::mem::take(&mut c.opts);
                }
                for o in opts {
                    let _ = self.tcp.set_option(t, o);
                }
            }
            Err(_) => self.events.push_back((ShimSocketId(idx), SockEvent::ConnectFailed)),
        }
    }

    /// Translates engine events into shim events (and acts on them).
    pub(super) fn drain(&mut self, now: Instant) {
        loop {
            if let Some((t, ev)) = self.tcp.poll_event() {
                self.on_tcp_event(now, t, ev);
                continue;
            }
            if let Some((a, ev)) = self.sctp.poll_event() {
                self.on_sctp_event(now, a, ev);
                continue;
            }
            break;
        }
    }

    pub(super) fn emit(&mut self, idx: u32, ev: SockEvent) {
        let live = match self.slots.get(idx as usize) {
            Some(Slot::Conn(c, _)) => !c.app_closed,
            Some(Slot::Listener(..)) => true,
            _ => false,
        };
        if live {
            self.events.push_back((ShimSocketId(idx), ev));
        }
    }

    pub(super) fn on_tcp_event(&mut self, now: Instant, t: TcpId, ev: SockEvent) {
        let Some(&idx) = self.by_tcp.get(&t) else {
            if !self.owned_tcp.get(t.0 as usize).copied().unwrap_or(false) {
                self.native.push_back(NativeEvent::Tcp(t, ev));
            }
            return;
        };
        match self.slots.get_mut(idx as usize) {
            Some(Slot::Listener(l, _)) if ev == SockEvent::Incoming => {
                l.tokens.push_back(Transport::Tcp);
                self.emit(idx, ev);
            }
            Some(Slot::Conn(c, _)) => match ev {
                SockEvent::Connected => {
                    c.connected = true;
                    self.pump(now, idx);
                    self.emit(idx, ev);
                }
                SockEvent::Writable => {
                    self.pump(now, idx);
                    self.emit(idx, ev);
                }
                SockEvent::Closed | SockEvent::Reset | SockEvent::ConnectFailed => {
                    let done = c.app_closed;
                    self.emit(idx, ev);
                    if done {
                        self.by_tcp.remove(&t);
                        self.slots[idx as usize] = Slot::Free;
                    }
                }
                _ => self.emit(idx, ev),
            },
            _ => {}
        }
    }

    pub(super) fn on_sctp_event(&mut self, now: Instant, a: SctpId, ev: SockEvent) {
        let Some(&idx) = self.by_sctp.get(&a) else {
            if self.dead_sctp_listeners.contains(&a) {
                if ev == SockEvent::Incoming {
                    while let Some(x) = self.sctp.accept(a) {
                        mark(&mut self.owned_sctp, x.0);
                        self.sctp.abort(now, x);
                    }
                }
            } else if !self.owned_sctp.get(a.0 as usize).copied().unwrap_or(false) {
                self.native.push_back(NativeEvent::Sctp(a, ev));
            }
            return;
        };
        match self.slots.get_mut(idx as usize) {
            Some(Slot::Listener(l, _)) if ev == SockEvent::Incoming => {
                l.tokens.push_back(Transport::Sctp);
                self.emit(idx, ev);
            }
            Some(Slot::Conn(c, _)) => match ev {
                SockEvent::Connected if c.transport.is_none() => {
                    c.transport = Some(Transport::Sctp);
                    if let Some(m) = self.matches.iter_mut().rev().find(|m| m.socket.0 == idx) {
                        m.transport = Some(Transport::Sctp);
                    }
                    c.connected = true;
                    if let Some(d) = c.deadline.take() {
                        self.deadlines.remove(&(d, idx));
                    }
                    self.unadvertise_connect(a);
                    if self.cfg.advertise {
                        if let Some((lport, pport, _)) = self.sctp.addrs(a) {
                            let c = self.conn_any(idx).expect("slot is a connection");
                            let keys: Vec<_> = c.remote_ips.iter().map(|&ip| (lport, pport, ip)).collect();
                            let mut hit = false;
                            for k in keys {
                                hit |= self.caps.remove(&k).is_some();
                            }
                            if let Some(c) = self.conn_any(idx) {
                                c.peer_is_shim = hit;
                            }
                        }
                    }
                    self.pump(now, idx);
                    self.emit(idx, SockEvent::Connected);
                }
                SockEvent::ConnectFailed if c.transport.is_none() => {
                    if self.cfg.fallback.on_abort {
                        self.fall_back(now, idx, FallbackReason::Abort);
                    } else {
                        self.fail_connect(now, idx);
                    }
                }
                SockEvent::Writable => {
                    self.pump(now, idx);
                    self.emit(idx, ev);
                }
                SockEvent::PeerClosed => {
                    if !c.peer_closed_reported {
                        c.peer_closed_reported = true;
                        self.emit(idx, ev);
                    }
                }
                SockEvent::Closed | SockEvent::Reset | SockEvent::ConnectFailed => {
                    let done = c.app_closed;
                    if ev == SockEvent::Closed && !c.peer_closed_reported {
                        // graceful SHUTDOWN complete (a native peer has no half-close marker):
                        // the peer is done sending, so the TCP app reads EOF first, as a
                        // one-to-one SCTP socket's recv() returns 0
                        c.peer_closed_reported = true;
                        self.emit(idx, SockEvent::PeerClosed);
                    }
                    self.emit(idx, ev);
                    if done {
                        self.by_sctp.remove(&a);
                        self.slots[idx as usize] = Slot::Free;
                    }
                }
                _ => self.emit(idx, ev),
            },
            _ => {}
        }
    }
}
