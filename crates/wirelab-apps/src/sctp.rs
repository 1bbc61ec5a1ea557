//! SCTP applications: an iperf3-like client that writes messages greedily (one-to-one
//! style socket, messages spread round-robin over `streams`), and a server that discards
//! or echoes what arrives.
use crate::socket::{AppCtx, AppInput};
use crate::tcp::{ClientPhase, PATTERN};
use std::net::Ipv4Addr;
use wirelab_core::{Instant, SockEvent};
use wirelab_sctp::{SockOpt, SocketId};

/// An SCTP client as the scenario configures it.
#[derive(Clone, Debug)]
pub struct SctpBulkConfig {
    /// Peer addresses (the first is the primary path).
    pub dst: Vec<Ipv4Addr>,
    /// Peer port.
    pub port: u16,
    /// Use only the route's source address instead of every interface address.
    pub single_homed: bool,
    /// Association start.
    pub start: Instant,
    /// Stop writing at.
    pub stop: Option<Instant>,
    /// Total bytes to write.
    pub bytes: Option<u64>,
    /// Message size (iperf3's SCTP default: 64 KiB).
    pub msg_size: u32,
    /// Outbound streams used round-robin.
    pub streams: u16,
    /// Unordered delivery.
    pub unordered: bool,
    /// Options set after `connect()`, before the INIT is sent.
    pub opts: Vec<SockOpt>,
}

/// An iperf3-like SCTP client.
#[derive(Clone, Debug)]
pub struct SctpBulk {
    /// What the scenario configured.
    pub cfg: SctpBulkConfig,
    /// State.
    pub st: SctpClientState,
}

/// Run-time state of an SCTP client.
#[derive(Clone, Debug)]
pub struct SctpClientState {
    /// Phase.
    pub phase: ClientPhase,
    /// Socket.
    pub sock: Option<SocketId>,
    /// Bytes written.
    pub written: u64,
    /// Messages written.
    pub msgs: u64,
    /// Bytes read back (echo).
    pub read: u64,
    /// `connect()` time.
    pub t_start: Option<Instant>,
    /// COMM_UP.
    pub t_connected: Option<Instant>,
    /// Association closed after our shutdown.
    pub t_done: Option<Instant>,
    /// Last error text.
    pub error: Option<String>,
    /// Final association info.
    pub last_info: Option<wirelab_sctp::AssocInfo>,
}

impl Default for SctpClientState {
    fn default() -> Self {
        SctpClientState { phase: ClientPhase::Idle, sock: None, written: 0, msgs: 0, read: 0, t_start: None, t_connected: None, t_done: None, error: None, last_info: None }
    }
}

impl SctpBulk {
    /// A client that has not connected yet.
    pub fn new(cfg: SctpBulkConfig) -> Self {
        SctpBulk { cfg, st: SctpClientState::default() }
    }

    /// Handles one input; returns the next timer to arm.
    pub fn on_input(&mut self, ctx: &mut AppCtx, input: AppInput) -> Option<Instant> {
        match input {
            AppInput::Timer => {
                if self.st.phase == ClientPhase::Idle {
                    let locals: Vec<Ipv4Addr> = if self.cfg.single_homed { ctx.src.into_iter().collect() } else { ctx.local_addrs.to_vec() };
                    match ctx.sockets.sctp_connect(ctx.now, &locals, &self.cfg.dst, self.cfg.port) {
                        Ok(s) => {
                            for o in &self.cfg.opts {
                                let _ = ctx.sockets.sctp_set_option(s, *o);
                            }
                            ctx.sockets.own_sctp(s, ctx.app);
                            self.st.sock = Some(s);
                            self.st.phase = ClientPhase::Connecting;
                            self.st.t_start = Some(ctx.now);
                        }
                        Err(e) => {
                            self.st.phase = ClientPhase::Failed;
                            self.st.error = Some(e.to_string());
                        }
                    }
                    return self.cfg.stop;
                }
                if self.st.phase == ClientPhase::Sending {
                    self.finish(ctx);
                }
                None
            }
            AppInput::Sctp(s, ev) if Some(s) == self.st.sock => {
                match ev {
                    SockEvent::Connected => {
                        self.st.t_connected = Some(ctx.now);
                        self.st.phase = ClientPhase::Sending;
                        self.write_more(ctx);
                    }
                    SockEvent::Writable => {
                        if self.st.phase == ClientPhase::Sending {
                            self.write_more(ctx);
                        }
                    }
                    SockEvent::Readable | SockEvent::PeerClosed => {
                        while let Ok(Some(r)) = ctx.sockets.sctp_recv_discard(ctx.now, s, usize::MAX) {
                            if r.len == 0 {
                                break;
                            }
                            self.st.read += r.len as u64;
                        }
                    }
                    SockEvent::Closed => {
                        if self.st.phase == ClientPhase::Closing {
                            self.st.phase = ClientPhase::Done;
                            self.st.t_done = Some(ctx.now);
                        }
                    }
                    SockEvent::Reset | SockEvent::ConnectFailed => {
                        self.st.phase = ClientPhase::Failed;
                        self.st.error = Some(format!("{ev:?}"));
                    }
                    SockEvent::Incoming => {}
                }
                if let Some(i) = ctx.sockets.sctp_info(s) {
                    if matches!(ev, SockEvent::Closed | SockEvent::Reset | SockEvent::PeerClosed) {
                        self.st.last_info = Some(i);
                    }
                }
                None
            }
            _ => None,
        }
    }

    fn write_more(&mut self, ctx: &mut AppCtx) {
        let Some(s) = self.st.sock else { return };
        if self.cfg.stop.is_some_and(|t| ctx.now >= t) {
            self.finish(ctx);
            return;
        }
        loop {
            let rem = self.cfg.bytes.map_or(u64::MAX, |b| b.saturating_sub(self.st.written));
            if rem == 0 {
                self.finish(ctx);
                return;
            }
            let n = (self.cfg.msg_size as u64).min(rem).min(PATTERN.len() as u64).max(1) as usize;
            let stream = (self.st.msgs % self.cfg.streams.max(1) as u64) as u16;
            match ctx.sockets.sctp_send(ctx.now, s, stream, &PATTERN[..n], self.cfg.unordered) {
                Ok(0) => return,
                Ok(k) => {
                    self.st.written += k as u64;
                    self.st.msgs += 1;
                }
                Err(e) => {
                    self.st.phase = ClientPhase::Failed;
                    self.st.error = Some(e.to_string());
                    return;
                }
            }
        }
    }

    fn finish(&mut self, ctx: &mut AppCtx) {
        if let Some(s) = self.st.sock {
            self.st.last_info = ctx.sockets.sctp_info(s);
            let _ = ctx.sockets.sctp_shutdown(ctx.now, s);
        }
        self.st.phase = ClientPhase::Closing;
    }
}

/// One accepted association.
#[derive(Clone, Debug)]
pub struct SctpServerConn {
    /// Socket.
    pub sock: SocketId,
    /// Bytes read.
    pub rx_bytes: u64,
    /// Messages completed.
    pub rx_msgs: u64,
    /// Bytes echoed.
    pub tx_bytes: u64,
    /// Bytes waiting to be echoed.
    pub echo_backlog: u64,
    /// First byte.
    pub first_rx: Option<Instant>,
    /// Last byte.
    pub last_rx: Option<Instant>,
    /// Final info.
    pub last_info: Option<wirelab_sctp::AssocInfo>,
    /// File-transfer exchange (the `tcp-file` client's rounds, reaching a native SCTP
    /// server through a shim): rounds left and message size, once the header was read.
    pub exchange: Option<(u32, u32)>,
    /// Bytes of the current exchange message still to read before replying.
    pub exchange_left: u64,
    /// Closed.
    pub closed: bool,
}

/// An SCTP server as the scenario configures it.
#[derive(Clone, Debug)]
pub struct SctpServerConfig {
    /// Port.
    pub port: u16,
    /// Echo what arrives (on the stream it arrived on).
    pub echo: bool,
    /// Options on the listener (inherited).
    pub opts: Vec<SockOpt>,
}

/// An SCTP server (sink or echo) listening on all of the node's addresses.
#[derive(Clone, Debug)]
pub struct SctpServer {
    /// What the scenario configured.
    pub cfg: SctpServerConfig,
    /// Listener.
    pub listener: Option<SocketId>,
    /// Associations in accept order.
    pub conns: Vec<SctpServerConn>,
    /// Bind error.
    pub error: Option<String>,
}

impl SctpServer {
    /// A server that has not started listening yet.
    pub fn new(cfg: SctpServerConfig) -> Self {
        SctpServer { cfg, listener: None, conns: Vec::new(), error: None }
    }

    /// Handles one input.
    pub fn on_input(&mut self, ctx: &mut AppCtx, input: AppInput) -> Option<Instant> {
        match input {
            AppInput::Timer => {
                if self.listener.is_none() && self.error.is_none() {
                    match ctx.sockets.sctp_listen(ctx.local_addrs, self.cfg.port, 128) {
                        Ok(l) => {
                            for o in &self.cfg.opts {
                                let _ = ctx.sockets.sctp_set_option(l, *o);
                            }
                            ctx.sockets.own_sctp(l, ctx.app);
                            self.listener = Some(l);
                        }
                        Err(e) => self.error = Some(e.to_string()),
                    }
                }
                None
            }
            AppInput::Sctp(s, ev) => {
                if Some(s) == self.listener {
                    while let Some(c) = ctx.sockets.sctp_accept(s) {
                        ctx.sockets.own_sctp(c, ctx.app);
                        self.conns.push(SctpServerConn {
                            sock: c,
                            rx_bytes: 0,
                            rx_msgs: 0,
                            tx_bytes: 0,
                            echo_backlog: 0,
                            first_rx: None,
                            last_rx: None,
                            last_info: None,
                            exchange: None,
                            exchange_left: 0,
                            closed: false,
                        });
                        let i = self.conns.len() - 1;
                        self.read(ctx, i);
                    }
                    return None;
                }
                let i = self.conns.iter().rposition(|c| c.sock == s)?;
                match ev {
                    SockEvent::Readable | SockEvent::PeerClosed => self.read(ctx, i),
                    SockEvent::Writable => {
                        self.flush(ctx, i);
                        self.read(ctx, i);
                    }
                    SockEvent::Closed | SockEvent::Reset => {
                        let c = &mut self.conns[i];
                        c.closed = true;
                        if c.last_info.is_none() {
                            c.last_info = ctx.sockets.sctp_info(s);
                        }
                    }
                    _ => {}
                }
                None
            }
            AppInput::Tcp(..) => None,
        }
    }

    fn read(&mut self, ctx: &mut AppCtx, i: usize) {
        use crate::tcp::{parse_exchange_header, EXCHANGE_HDR};
        let s = self.conns[i].sock;
        loop {
            if self.conns[i].echo_backlog > 0 || self.conns[i].closed {
                return;
            }
            let c = &mut self.conns[i];
            let got = if c.exchange.is_none() && c.rx_bytes < EXCHANGE_HDR as u64 {
                // peek the stream's first bytes for a file-transfer exchange header
                let mut hdr = [0u8; EXCHANGE_HDR];
                let want = EXCHANGE_HDR - c.rx_bytes as usize;
                let r = ctx.sockets.sctp_recv(ctx.now, s, &mut hdr[..want]);
                if let Ok(Some(r)) = r {
                    if let Some((rounds, size)) = parse_exchange_header(&hdr[..r.len]).filter(|_| c.rx_bytes == 0) {
                        c.exchange = Some((rounds, size));
                        c.exchange_left = (size as usize - EXCHANGE_HDR) as u64;
                    } else if r.len > 0 {
                        c.exchange = Some((0, 0)); // a plain stream
                    }
                }
                r
            } else {
                let max = if c.exchange_left > 0 { c.exchange_left as usize } else { 1 << 20 };
                ctx.sockets.sctp_recv_discard(ctx.now, s, max)
            };
            match got {
                Ok(Some(r)) if r.len > 0 => {
                    let c = &mut self.conns[i];
                    c.rx_bytes += r.len as u64;
                    if r.end_of_message {
                        c.rx_msgs += 1;
                    }
                    c.first_rx.get_or_insert(ctx.now);
                    c.last_rx = Some(ctx.now);
                    if c.exchange_left > 0 && c.exchange.is_some_and(|(_, size)| size > 0) && c.rx_bytes > EXCHANGE_HDR as u64 {
                        c.exchange_left = c.exchange_left.saturating_sub(r.len as u64);
                    }
                    if c.exchange_left == 0 {
                        if let Some((rounds, size)) = c.exchange.filter(|&(r, sz)| r > 0 && sz > 0) {
                            // reply (as one message on stream 0), then expect the next round
                            let n = (size as usize).min(PATTERN.len());
                            if let Ok(k) = ctx.sockets.sctp_send(ctx.now, s, 0, &PATTERN[..n], false) {
                                c.tx_bytes += k as u64;
                            }
                            let left = rounds - 1;
                            c.exchange = Some((left, size));
                            c.exchange_left = if left > 0 { size as u64 } else { 0 };
                            continue;
                        }
                    }
                    if self.cfg.echo {
                        let c = &mut self.conns[i];
                        c.echo_backlog += r.len as u64;
                        self.flush(ctx, i);
                    }
                }
                Ok(Some(_)) => {
                    // end of stream: the peer shut down
                    let c = &mut self.conns[i];
                    c.last_info = ctx.sockets.sctp_info(s);
                    ctx.sockets.sctp_close(ctx.now, s);
                    return;
                }
                _ => return,
            }
        }
    }

    fn flush(&mut self, ctx: &mut AppCtx, i: usize) {
        let c = &mut self.conns[i];
        while c.echo_backlog > 0 {
            let n = c.echo_backlog.min(16384) as usize;
            match ctx.sockets.sctp_send(ctx.now, c.sock, 0, &PATTERN[..n], false) {
                Ok(0) | Err(_) => return,
                Ok(k) => {
                    c.echo_backlog -= k as u64;
                    c.tx_bytes += k as u64;
                }
            }
        }
    }

    /// Bytes received over all associations.
    pub fn rx_bytes(&self) -> u64 {
        self.conns.iter().map(|c| c.rx_bytes).sum()
    }
}
