//! TCP applications: a bulk sender (iperf/ttcp-like, and the scp-like file transfer), a
//! sink that reads immediately or at a configured rate, an echo server, and a
//! request/response client.
//!
//! Apps talk to the host's [`TcpEndpoint`](wirelab_tcp::TcpEndpoint) through the socket
//! calls a real program would make, and react to its [`SockEvent`]s.
use crate::socket::{AppCtx, AppInput, HostSockets};
use std::net::{Ipv4Addr, SocketAddrV4};
use wirelab_core::{Duration, Instant, SockEvent};
use wirelab_tcp::{SockError, SockOpt, SocketId};
pub use sha2::Sha256;
use sha2::Digest;

/// Lower-case hex of a finished SHA-256.
pub fn sha256_hex(h: &Sha256) -> String {
    h.clone().finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes apps write: a fixed pattern, so captures carry recognisable payload (one static
/// shared with the checksum code, which sums slices of it in O(1)).
pub(crate) use wirelab_core::pattern::PATTERN;

/// Magic that opens a file-transfer client's pre-transfer exchange (see [`TcpBulk::exchanges`]).
pub const EXCHANGE_MAGIC: [u8; 4] = *b"WLX1";
/// Length of the exchange header: magic, round count, message size.
pub const EXCHANGE_HDR: usize = 12;

/// The `(rounds, message size)` of a file-transfer exchange header, if `hdr` (the stream's
/// first [`EXCHANGE_HDR`] bytes) is one; servers answer such a client's rounds.
pub fn parse_exchange_header(hdr: &[u8]) -> Option<(u32, u32)> {
    if hdr.len() != EXCHANGE_HDR || hdr[..4] != EXCHANGE_MAGIC {
        return None;
    }
    let rounds = u32::from_be_bytes(hdr[4..8].try_into().ok()?);
    let size = u32::from_be_bytes(hdr[8..12].try_into().ok()?).max(EXCHANGE_HDR as u32);
    Some((rounds, size))
}

/// Phase of a client connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientPhase {
    /// Before `start`.
    Idle,
    /// SYN sent.
    Connecting,
    /// Pre-transfer request/response rounds (file transfer).
    Exchanging,
    /// Writing data.
    Sending,
    /// All data written, FIN sent; waiting for the peer's FIN.
    Closing,
    /// Finished (peer closed after our FIN).
    Done,
    /// Connect failed or the connection was reset.
    Failed,
}

/// A bulk sender / file transfer as the scenario configures it.
#[derive(Clone, Debug)]
pub struct TcpBulkConfig {
    /// Destination.
    pub dst: SocketAddrV4,
    /// Connect time.
    pub start: Instant,
    /// Stop writing at this time (duration mode).
    pub stop: Option<Instant>,
    /// Total bytes to write.
    pub bytes: Option<u64>,
    /// Bytes per `write()`.
    pub write_size: u32,
    /// Socket options set before `connect()`.
    pub opts: Vec<SockOpt>,
    /// Request/response rounds before the data (scp-like).
    pub exchanges: u32,
    /// Bytes per exchange message.
    pub exchange_size: u32,
    /// The destination node's other addresses (a shim host offers them to SCTP).
    pub dst_alt: Vec<Ipv4Addr>,
    /// Keep a SHA-256 of the data bytes written ([`ClientState::sha256`]).
    pub sha256: bool,
}

/// A bulk sender: connects at `start`, writes `write_size` chunks greedily until `bytes`
/// are written or `stop` is reached, then half-closes and waits for the peer's FIN.
/// With `exchanges > 0` it is the scp-like file transfer: that many request/response
/// rounds of `exchange_size` bytes precede the data (key exchange, authentication…).
#[derive(Clone, Debug)]
pub struct TcpBulk {
    /// What the scenario configured.
    pub cfg: TcpBulkConfig,
    /// State.
    pub state: ClientState,
}

/// Run-time state of a client.
#[derive(Clone, Debug)]
pub struct ClientState {
    /// Phase.
    pub phase: ClientPhase,
    /// The socket.
    pub sock: Option<SocketId>,
    /// Data bytes written (excluding exchange messages).
    pub written: u64,
    /// Bytes read back (echo/exchange replies).
    pub read: u64,
    /// Exchange rounds completed.
    pub rounds: u32,
    /// Bytes of the current exchange reply still expected.
    pub pending_reply: u64,
    /// `connect()` time.
    pub t_start: Option<Instant>,
    /// Handshake completion.
    pub t_connected: Option<Instant>,
    /// First data byte written.
    pub t_data: Option<Instant>,
    /// Last data byte written.
    pub t_last_write: Option<Instant>,
    /// Peer's FIN after ours: the transfer is complete and acknowledged.
    pub t_done: Option<Instant>,
    /// Last error.
    pub error: Option<SockError>,
    /// Final `tcp_info` (kept when the socket closes).
    pub last_info: Option<wirelab_tcp::TcpInfo>,
    /// Transport the stream ran over (`tcp`, or `sctp` through the shim).
    pub transport: &'static str,
    /// Final counters of the SCTP association when the shim carried the stream over SCTP.
    pub last_sctp: Option<wirelab_sctp::AssocStats>,
    /// `(local, remote)` of the TCP connection, once known (the 4-tuple that pairs it with
    /// the server's end in `connections.csv`).
    pub addrs: Option<(SocketAddrV4, SocketAddrV4)>,
    /// Running SHA-256 of the data bytes written, when the app asks for it.
    pub sha256: Option<Sha256>,
}

impl Default for ClientState {
    fn default() -> Self {
        ClientState {
            phase: ClientPhase::Idle,
            sock: None,
            written: 0,
            read: 0,
            rounds: 0,
            pending_reply: 0,
            t_start: None,
            t_connected: None,
            t_data: None,
            t_last_write: None,
            t_done: None,
            error: None,
            last_info: None,
            transport: "",
            last_sctp: None,
            addrs: None,
            sha256: None,
        }
    }
}

impl ClientState {
    /// Records the handshake's completion and the transport it ended up on.
    fn connected(&mut self, ctx: &mut AppCtx, s: SocketId) {
        self.t_connected = Some(ctx.now);
        self.transport = ctx.sockets.transport(s);
        self.addrs = ctx.sockets.addrs(s).or(self.addrs);
    }

    /// The peer's FIN: after our own FIN it completes the transfer; closes the socket.
    fn peer_closed(&mut self, ctx: &mut AppCtx, s: SocketId) {
        keep_final(ctx.sockets, s, &mut self.last_info, &mut self.last_sctp);
        if self.phase == ClientPhase::Closing {
            self.phase = ClientPhase::Done;
            self.t_done = Some(ctx.now);
        }
        ctx.sockets.close(ctx.now, s);
    }

    /// Reset or refused.
    fn failed(&mut self, ctx: &mut AppCtx, s: SocketId, ev: SockEvent) {
        keep_final(ctx.sockets, s, &mut self.last_info, &mut self.last_sctp);
        self.phase = ClientPhase::Failed;
        self.error = Some(if ev == SockEvent::Reset { SockError::ConnectionReset } else { SockError::ConnectionRefused });
    }
}

/// Keeps the latest `tcp_info` (and, for a shim-carried stream, SCTP counters) of `s`:
/// they outlive the socket in the app's totals.
pub(crate) fn keep_final(sockets: &dyn HostSockets, s: SocketId, info: &mut Option<wirelab_tcp::TcpInfo>, sctp: &mut Option<wirelab_sctp::AssocStats>) {
    *info = sockets.info(s).or(*info);
    *sctp = sockets.sctp_stats(s).or(*sctp);
}

fn connect(ctx: &mut AppCtx, dst: SocketAddrV4, opts: &[SockOpt], st: &mut ClientState) -> bool {
    connect_alt(ctx, dst, &[], opts, st)
}

fn connect_alt(ctx: &mut AppCtx, dst: SocketAddrV4, dst_alt: &[Ipv4Addr], opts: &[SockOpt], st: &mut ClientState) -> bool {
    let Some(src) = ctx.src else {
        st.phase = ClientPhase::Failed;
        st.error = Some(SockError::AddrNotAvailable);
        return false;
    };
    // options set right after connect() apply before the SYN is built (the engine emits
    // it only on poll_transmit), as a program's setsockopt() before connect() would
    match ctx.sockets.connect(ctx.now, src, ctx.local_addrs, dst, dst_alt) {
        Ok(s) => {
            for o in opts {
                let _ = ctx.sockets.set_option(s, o.clone());
            }
            ctx.sockets.own_stream(s, ctx.app);
            st.sock = Some(s);
            st.addrs = ctx.sockets.addrs(s);
            st.phase = ClientPhase::Connecting;
            st.t_start = Some(ctx.now);
            true
        }
        Err(e) => {
            st.phase = ClientPhase::Failed;
            st.error = Some(e);
            false
        }
    }
}

/// Drains everything readable on `s`, returning the byte count and whether EOF was seen.
fn drain(ctx: &mut AppCtx, s: SocketId, max: usize) -> (u64, bool) {
    let mut n = 0u64;
    loop {
        let want = max.saturating_sub(n as usize);
        if want == 0 {
            return (n, false);
        }
        match ctx.sockets.recv_discard(ctx.now, s, want) {
            Ok(0) => return (n, true),
            Ok(k) => n += k as u64,
            Err(_) => return (n, false),
        }
    }
}

/// [`drain`], reading the bytes into a buffer to hash them.
fn drain_hashed(ctx: &mut AppCtx, s: SocketId, max: usize, h: &mut Sha256) -> (u64, bool) {
    let mut buf = [0u8; 16384];
    let mut n = 0u64;
    loop {
        let want = max.saturating_sub(n as usize).min(buf.len());
        if want == 0 {
            return (n, false);
        }
        match ctx.sockets.recv(ctx.now, s, &mut buf[..want]) {
            Ok(0) => return (n, true),
            Ok(k) => {
                h.update(&buf[..k]);
                n += k as u64;
            }
            Err(_) => return (n, false),
        }
    }
}

impl TcpBulk {
    /// A client that has not connected yet.
    pub fn new(cfg: TcpBulkConfig) -> Self {
        let state = ClientState { sha256: cfg.sha256.then(Sha256::new), ..ClientState::default() };
        TcpBulk { cfg, state }
    }

    /// Handles one input; returns the next timer to arm.
    pub fn on_input(&mut self, ctx: &mut AppCtx, input: AppInput) -> Option<Instant> {
        let st = &mut self.state;
        match input {
            AppInput::Timer => {
                if st.phase == ClientPhase::Idle {
                    if !connect_alt(ctx, self.cfg.dst, &self.cfg.dst_alt, &self.cfg.opts, st) {
                        return None;
                    }
                    return self.cfg.stop;
                }
                // stop time reached: finish writing
                if st.phase == ClientPhase::Sending {
                    self.finish(ctx);
                }
                None
            }
            AppInput::Tcp(s, ev) if Some(s) == st.sock => {
                match ev {
                    SockEvent::Connected => {
                        st.connected(ctx, s);
                        // replies are only counted (`drain`): the stack need not keep them
                        ctx.sockets.discard_payload(s);
                        if self.cfg.exchanges > 0 {
                            st.phase = ClientPhase::Exchanging;
                            self.send_exchange(ctx);
                        } else {
                            st.phase = ClientPhase::Sending;
                            self.write_more(ctx);
                        }
                    }
                    SockEvent::Writable => {
                        if st.phase == ClientPhase::Sending {
                            self.write_more(ctx);
                        }
                    }
                    SockEvent::Readable => {
                        let (n, _) = drain(ctx, s, usize::MAX);
                        let st = &mut self.state;
                        st.read += n;
                        if st.phase == ClientPhase::Exchanging {
                            st.pending_reply = st.pending_reply.saturating_sub(n);
                            if st.pending_reply == 0 {
                                st.rounds += 1;
                                if st.rounds >= self.cfg.exchanges {
                                    st.phase = ClientPhase::Sending;
                                    self.write_more(ctx);
                                } else {
                                    self.send_exchange(ctx);
                                }
                            }
                        }
                    }
                    SockEvent::PeerClosed => {
                        drain(ctx, s, usize::MAX);
                        st.peer_closed(ctx, s);
                    }
                    SockEvent::Reset | SockEvent::ConnectFailed => st.failed(ctx, s, ev),
                    SockEvent::Closed => {
                        if st.last_info.is_none() {
                            keep_final(ctx.sockets, s, &mut st.last_info, &mut st.last_sctp);
                        }
                    }
                    SockEvent::Incoming => {}
                }
                None
            }
            _ => None,
        }
    }

    fn send_exchange(&mut self, ctx: &mut AppCtx) {
        let st = &mut self.state;
        let Some(s) = st.sock else { return };
        let size = (self.cfg.exchange_size as usize).max(EXCHANGE_HDR);
        let mut msg = [0u8; 1024];
        let size = size.min(msg.len());
        if st.rounds == 0 {
            msg[..4].copy_from_slice(&EXCHANGE_MAGIC);
            msg[4..8].copy_from_slice(&self.cfg.exchanges.to_be_bytes());
            msg[8..12].copy_from_slice(&(size as u32).to_be_bytes());
        }
        // small messages always fit an empty send buffer
        let _ = ctx.sockets.send(ctx.now, s, &msg[..size]);
        st.pending_reply = size as u64;
    }

    fn remaining(&self) -> u64 {
        self.cfg.bytes.map_or(u64::MAX, |b| b.saturating_sub(self.state.written))
    }

    fn write_more(&mut self, ctx: &mut AppCtx) {
        let Some(s) = self.state.sock else { return };
        if self.cfg.stop.is_some_and(|t| ctx.now >= t) {
            self.finish(ctx);
            return;
        }
        loop {
            let rem = self.remaining();
            if rem == 0 {
                self.finish(ctx);
                return;
            }
            let n = (self.cfg.write_size as u64).min(rem).min(PATTERN.len() as u64) as usize;
            match ctx.sockets.send_static(ctx.now, s, &PATTERN[..n]) {
                Ok(0) => return, // send buffer full: wait for Writable
                Ok(k) => {
                    let st = &mut self.state;
                    if let Some(h) = &mut st.sha256 {
                        h.update(&PATTERN[..k]);
                    }
                    st.t_data.get_or_insert(ctx.now);
                    st.written += k as u64;
                    st.t_last_write = Some(ctx.now);
                }
                Err(e) => {
                    self.state.error = Some(e);
                    self.state.phase = ClientPhase::Failed;
                    return;
                }
            }
        }
    }

    fn finish(&mut self, ctx: &mut AppCtx) {
        let st = &mut self.state;
        if let Some(s) = st.sock {
            let _ = ctx.sockets.shutdown_write(ctx.now, s);
        }
        st.phase = ClientPhase::Closing;
    }
}

/// One accepted connection of a server app.
#[derive(Clone, Debug)]
pub struct ServerConn {
    /// Socket.
    pub sock: SocketId,
    /// Peer.
    pub peer: Option<SocketAddrV4>,
    /// Local address and port of the accepted connection.
    pub local: Option<SocketAddrV4>,
    /// Bytes read.
    pub rx_bytes: u64,
    /// Bytes written (echo, exchange replies).
    pub tx_bytes: u64,
    /// First byte read.
    pub first_rx: Option<Instant>,
    /// Last byte read.
    pub last_rx: Option<Instant>,
    /// Accepted at.
    pub accepted: Instant,
    /// Peer's FIN seen.
    pub eof: bool,
    /// File-transfer exchange: rounds left and reply size (after parsing the header).
    pub exchange: Option<(u32, u32)>,
    /// Bytes of the current exchange message still to read before replying.
    pub exchange_left: u64,
    /// Bytes not yet echoed back (echo server; waiting for send-buffer space).
    pub echo_backlog: u64,
    /// Final `tcp_info`.
    pub last_info: Option<wirelab_tcp::TcpInfo>,
    /// Final SCTP counters when the shim carried the stream over SCTP.
    pub last_sctp: Option<wirelab_sctp::AssocStats>,
    /// Transport the accepted stream runs over (`tcp`, or `sctp` through the shim).
    pub transport: &'static str,
    /// Closed.
    pub closed: bool,
    /// Running SHA-256 of the bytes read, when the server asks for it.
    pub sha256: Option<Sha256>,
    /// The stack was told that the bytes are only counted from now on
    /// ([`crate::HostSockets::discard_payload`]).
    pub discarding: bool,
}

/// A TCP server as the scenario configures it.
#[derive(Clone, Debug)]
pub struct TcpServerConfig {
    /// Local port.
    pub port: u16,
    /// Echo received bytes back.
    pub echo: bool,
    /// Read at most this many bytes per second (application-limited receiver).
    pub read_rate: Option<u64>,
    /// Listen backlog.
    pub backlog: u32,
    /// Options set on the listener (inherited by accepted sockets).
    pub opts: Vec<SockOpt>,
    /// Keep a SHA-256 of each connection's bytes read ([`ServerConn::sha256`]).
    pub sha256: bool,
}

/// A server: listens on `port`, accepts every connection, and either discards what
/// arrives (sink), or echoes it back (echo). A sink may read at a limited rate.
#[derive(Clone, Debug)]
pub struct TcpServer {
    /// What the scenario configured.
    pub cfg: TcpServerConfig,
    /// Listener socket.
    pub listener: Option<SocketId>,
    /// Connections in accept order.
    pub conns: Vec<ServerConn>,
    /// Index into `conns` by socket: a server of many short flows (`wirelab bench --mix`
    /// gives each host thousands) finds a connection without scanning them all.
    by_sock: std::collections::HashMap<SocketId, usize>,
    /// Read budget carried between rate-limited reads (bytes).
    pub budget: f64,
    /// Time of the last rate-limited read.
    pub last_read: Option<Instant>,
    /// Bind error.
    pub error: Option<SockError>,
}

/// Tick of a rate-limited reader.
const READ_TICK: Duration = Duration::from_millis(10);

impl TcpServer {
    /// A server that has not started listening yet.
    pub fn new(cfg: TcpServerConfig) -> Self {
        TcpServer { cfg, listener: None, conns: Vec::new(), by_sock: Default::default(), budget: 0.0, last_read: None, error: None }
    }

    /// Starts listening (called at time zero).
    pub fn start(&mut self, ctx: &mut AppCtx) -> Option<Instant> {
        let addr = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, self.cfg.port);
        match ctx.sockets.listen(addr, self.cfg.backlog) {
            Ok(l) => {
                for o in &self.cfg.opts {
                    let _ = ctx.sockets.set_option(l, o.clone());
                }
                ctx.sockets.own_stream(l, ctx.app);
                self.listener = Some(l);
            }
            Err(e) => self.error = Some(e),
        }
        self.cfg.read_rate.map(|_| ctx.now + READ_TICK)
    }

    fn conn_idx(&self, s: SocketId) -> Option<usize> {
        self.by_sock.get(&s).copied()
    }

    /// Handles one input; returns the next timer to arm.
    pub fn on_input(&mut self, ctx: &mut AppCtx, input: AppInput) -> Option<Instant> {
        match input {
            AppInput::Timer => {
                if self.listener.is_none() && self.error.is_none() {
                    return self.start(ctx);
                }
                if let Some(rate) = self.cfg.read_rate {
                    let dt = self.last_read.map_or(READ_TICK, |t| ctx.now - t);
                    self.last_read = Some(ctx.now);
                    // at most one tick of unused budget carries over, like a reader that
                    // wakes up every tick and reads what its rate allows
                    let cap = rate as f64 * READ_TICK.as_secs_f64() * 2.0;
                    self.budget = (self.budget + rate as f64 * dt.as_secs_f64()).min(cap);
                    for i in 0..self.conns.len() {
                        if self.budget < 1.0 {
                            break;
                        }
                        self.read_conn(ctx, i);
                    }
                    return Some(ctx.now + READ_TICK);
                }
                None
            }
            AppInput::Tcp(s, ev) => {
                if Some(s) == self.listener {
                    if ev == SockEvent::Incoming {
                        while let Some(c) = ctx.sockets.accept(s) {
                            ctx.sockets.own_stream(c, ctx.app);
                            let addrs = ctx.sockets.addrs(c);
                            // a reused socket id maps to its newest connection, as the
                            // scan from the newest did
                            self.by_sock.insert(c, self.conns.len());
                            self.conns.push(ServerConn {
                                sock: c,
                                peer: addrs.map(|(_, r)| r),
                                local: addrs.map(|(l, _)| l),
                                rx_bytes: 0,
                                tx_bytes: 0,
                                first_rx: None,
                                last_rx: None,
                                accepted: ctx.now,
                                eof: false,
                                exchange: None,
                                exchange_left: 0,
                                echo_backlog: 0,
                                last_info: None,
                                last_sctp: None,
                                transport: ctx.sockets.transport(c),
                                closed: false,
                                sha256: self.cfg.sha256.then(Sha256::new),
                                discarding: false,
                            });
                            // data may already be queued
                            let i = self.conns.len() - 1;
                            self.read_conn(ctx, i);
                        }
                    }
                    return None;
                }
                let i = self.conn_idx(s)?;
                match ev {
                    SockEvent::Readable | SockEvent::PeerClosed => self.read_conn(ctx, i),
                    SockEvent::Writable => {
                        self.flush_echo(ctx, i);
                        self.read_conn(ctx, i);
                    }
                    SockEvent::Reset | SockEvent::Closed => {
                        let c = &mut self.conns[i];
                        if c.last_info.is_none() {
                            keep_final(ctx.sockets, s, &mut c.last_info, &mut c.last_sctp);
                        }
                        c.closed = true;
                    }
                    _ => {}
                }
                None
            }
            AppInput::Sctp(..) => None,
        }
    }

    fn read_conn(&mut self, ctx: &mut AppCtx, i: usize) {
        let s = self.conns[i].sock;
        loop {
            let c = &mut self.conns[i];
            if c.closed {
                return;
            }
            // an echo server stops reading while its replies are stuck (TCP flow control
            // then pushes back on the client, as with a blocking echo loop)
            if c.echo_backlog > 0 {
                return;
            }
            let mut max = usize::MAX;
            if self.cfg.read_rate.is_some() {
                max = self.budget as usize;
                if max == 0 {
                    return;
                }
            }
            if c.exchange_left > 0 {
                max = max.min(c.exchange_left as usize);
            }
            let (n, eof) = if c.exchange.is_none() && c.rx_bytes < EXCHANGE_HDR as u64 {
                // peek the first bytes for a file-transfer exchange header
                let mut hdr = [0u8; EXCHANGE_HDR];
                let want = (EXCHANGE_HDR - c.rx_bytes as usize).min(max);
                match ctx.sockets.recv(ctx.now, s, &mut hdr[..want]) {
                    Ok(0) => (0, true),
                    Ok(k) => {
                        if let Some(h) = &mut c.sha256 {
                            h.update(&hdr[..k]);
                        }
                        if let Some((rounds, size)) = parse_exchange_header(&hdr[..k]).filter(|_| c.rx_bytes == 0) {
                            c.exchange = Some((rounds, size));
                            c.exchange_left = (size as usize - EXCHANGE_HDR) as u64;
                        } else if c.rx_bytes == 0 && k < EXCHANGE_HDR {
                            // too short to tell; treat as a plain stream
                            c.exchange = Some((0, 0));
                        }
                        (k as u64, false)
                    }
                    Err(_) => (0, false),
                }
            } else {
                let got = match &mut c.sha256 {
                    Some(h) => drain_hashed(ctx, s, max, h),
                    None => drain(ctx, s, max),
                };
                (got.0, got.1 && got.0 == 0)
            };
            let c = &mut self.conns[i];
            if !c.discarding && c.sha256.is_none() && (c.exchange.is_some() || c.rx_bytes + n >= EXCHANGE_HDR as u64) {
                // past the exchange header nothing reads the bytes (echo and replies send
                // the pattern): the stack need not keep them
                c.discarding = true;
                ctx.sockets.discard_payload(s);
            }
            if n > 0 {
                c.first_rx.get_or_insert(ctx.now);
                c.last_rx = Some(ctx.now);
                c.rx_bytes += n;
                if self.cfg.read_rate.is_some() {
                    self.budget -= n as f64;
                }
                if c.exchange_left > 0 {
                    c.exchange_left = c.exchange_left.saturating_sub(n);
                    if c.exchange_left == 0 {
                        if let Some((rounds, size)) = c.exchange {
                            // reply, then expect the next round's message
                            let _ = ctx.sockets.send_static(ctx.now, s, &PATTERN[..size as usize]);
                            c.tx_bytes += size as u64;
                            let left = rounds.saturating_sub(1);
                            c.exchange = Some((left, size));
                            c.exchange_left = if left > 0 { size as u64 } else { 0 };
                        }
                    }
                } else if self.cfg.echo {
                    c.echo_backlog += n;
                    self.flush_echo(ctx, i);
                }
            }
            let c = &mut self.conns[i];
            if eof && !c.eof {
                c.eof = true;
                keep_final(ctx.sockets, s, &mut c.last_info, &mut c.last_sctp);
                // the client half-closed: finish our side (echo data first, then FIN)
                ctx.sockets.close(ctx.now, s);
                c.closed = true;
                return;
            }
            if n == 0 {
                return;
            }
        }
    }

    fn flush_echo(&mut self, ctx: &mut AppCtx, i: usize) {
        let c = &mut self.conns[i];
        while c.echo_backlog > 0 {
            let n = c.echo_backlog.min(PATTERN.len() as u64) as usize;
            match ctx.sockets.send_static(ctx.now, c.sock, &PATTERN[..n]) {
                Ok(0) | Err(_) => return,
                Ok(k) => {
                    c.echo_backlog -= k as u64;
                    c.tx_bytes += k as u64;
                }
            }
        }
    }

    /// Bytes received over all connections.
    pub fn rx_bytes(&self) -> u64 {
        self.conns.iter().map(|c| c.rx_bytes).sum()
    }
}

/// A request/response client as the scenario configures it.
#[derive(Clone, Debug)]
pub struct TcpRrConfig {
    /// Destination (an echo server).
    pub dst: SocketAddrV4,
    /// First request.
    pub start: Instant,
    /// No request at or after this time.
    pub stop: Instant,
    /// Request (and response) size.
    pub size: u32,
    /// Time between request starts; zero = next request right after the response.
    pub interval: Duration,
    /// Options set before `connect()`.
    pub opts: Vec<SockOpt>,
}

/// Request/response client: writes `size` bytes, waits for `size` bytes back from an echo
/// server, records the round-trip time, and repeats every `interval` (or back-to-back).
#[derive(Clone, Debug)]
pub struct TcpRr {
    /// What the scenario configured.
    pub cfg: TcpRrConfig,
    /// Connection state.
    pub state: ClientState,
    /// Start of the outstanding request.
    pub req_start: Option<Instant>,
    /// Completed transaction latencies (ns).
    pub latencies: Vec<u64>,
    /// When each completed transaction's request was written (`latencies[i]`'s start).
    pub latency_starts: Vec<Instant>,
    /// Requests whose turn came while the previous one was outstanding.
    pub skipped: u64,
}

impl TcpRr {
    /// A client that has not connected yet.
    pub fn new(cfg: TcpRrConfig) -> Self {
        TcpRr { cfg, state: ClientState::default(), req_start: None, latencies: Vec::new(), latency_starts: Vec::new(), skipped: 0 }
    }

    /// Handles one input; returns the next timer to arm.
    pub fn on_input(&mut self, ctx: &mut AppCtx, input: AppInput) -> Option<Instant> {
        match input {
            AppInput::Timer => {
                if self.state.phase == ClientPhase::Idle {
                    connect(ctx, self.cfg.dst, &self.cfg.opts, &mut self.state);
                    return None;
                }
                if ctx.now >= self.cfg.stop {
                    return self.finish(ctx);
                }
                if self.req_start.is_some() {
                    self.skipped += 1;
                } else {
                    self.request(ctx);
                }
                (self.cfg.interval > Duration::ZERO).then(|| ctx.now + self.cfg.interval)
            }
            AppInput::Tcp(s, ev) if Some(s) == self.state.sock => {
                match ev {
                    SockEvent::Connected => {
                        self.state.connected(ctx, s);
                        self.state.phase = ClientPhase::Sending;
                        self.request(ctx);
                        if self.cfg.interval > Duration::ZERO {
                            return Some(ctx.now + self.cfg.interval);
                        }
                    }
                    SockEvent::Readable | SockEvent::PeerClosed => {
                        let (n, _) = drain(ctx, s, usize::MAX);
                        self.state.read += n;
                        self.state.pending_reply = self.state.pending_reply.saturating_sub(n);
                        if self.state.pending_reply == 0 {
                            if let Some(t0) = self.req_start.take() {
                                self.latencies.push((ctx.now - t0).as_nanos());
                                self.latency_starts.push(t0);
                                if self.cfg.interval == Duration::ZERO {
                                    if ctx.now >= self.cfg.stop {
                                        return self.finish(ctx);
                                    }
                                    self.request(ctx);
                                }
                            }
                        }
                        if ev == SockEvent::PeerClosed {
                            self.state.peer_closed(ctx, s);
                        }
                    }
                    SockEvent::Reset | SockEvent::ConnectFailed => self.state.failed(ctx, s, ev),
                    _ => {}
                }
                None
            }
            _ => None,
        }
    }

    fn request(&mut self, ctx: &mut AppCtx) {
        let Some(s) = self.state.sock else { return };
        let n = (self.cfg.size as usize).min(PATTERN.len());
        match ctx.sockets.send_static(ctx.now, s, &PATTERN[..n]) {
            Ok(k) if k > 0 => {
                self.state.written += k as u64;
                self.state.pending_reply = k as u64;
                self.req_start = Some(ctx.now);
            }
            _ => self.skipped += 1,
        }
    }

    fn finish(&mut self, ctx: &mut AppCtx) -> Option<Instant> {
        if let Some(s) = self.state.sock {
            if self.state.phase == ClientPhase::Sending {
                let _ = ctx.sockets.shutdown_write(ctx.now, s);
                self.state.phase = ClientPhase::Closing;
            }
        }
        None
    }
}

/// How a thin-stream source spaces its writes.
#[derive(Clone, Debug, PartialEq)]
pub enum Itt {
    /// Every `itt`.
    Fixed(Duration),
    /// Uniform in `itt ± jitter` (the thesis harness's `-i 100:10`, application-level
    /// jitter: no network reordering).
    Uniform(Duration, Duration),
    /// Exponentially distributed with mean `itt` (Poisson writes).
    Exponential(Duration),
    /// Replays `(gap before the write, payload bytes)` pairs in order, then repeats.
    Replay(Vec<(Duration, u32)>),
}

/// A thin-stream source as the scenario configures it.
#[derive(Clone, Debug)]
pub struct TcpThinConfig {
    /// Destination.
    pub dst: SocketAddrV4,
    /// Connect time.
    pub start: Instant,
    /// No write at or after this time.
    pub stop: Instant,
    /// Payload bytes per write (for Fixed/Uniform/Exponential).
    pub size: u32,
    /// Spacing of writes.
    pub itt: Itt,
    /// Options set before `connect()`.
    pub opts: Vec<SockOpt>,
}

/// A thin-stream source (seed system 3): small writes at an inter-transmission time,
/// application-limited, `TCP_NODELAY` by default; the payload carries an 8-byte write
/// sequence number and the 8-byte write time so a receiver trace gives application delay.
#[derive(Clone, Debug)]
pub struct TcpThin {
    /// What the scenario configured.
    pub cfg: TcpThinConfig,
    /// Connection state.
    pub state: ClientState,
    /// Writes made.
    pub writes: u64,
    /// Writes that did not fit the send buffer (the application would have blocked).
    pub blocked: u64,
    /// Position in a replay list.
    pub replay_pos: usize,
    /// Payload of the next write.
    pub size_next: u32,
    /// The app's own random stream.
    pub rng: wirelab_core::Rng,
}

impl TcpThin {
    /// A source that has not connected yet, drawing its write spacing from `rng`.
    pub fn new(cfg: TcpThinConfig, rng: wirelab_core::Rng) -> Self {
        let size_next = cfg.size;
        TcpThin { cfg, state: ClientState::default(), writes: 0, blocked: 0, replay_pos: 0, size_next, rng }
    }

    fn next_gap(&mut self) -> (Duration, u32) {
        match &self.cfg.itt {
            Itt::Fixed(d) => (*d, self.cfg.size),
            Itt::Uniform(d, j) => {
                let lo = d.as_nanos().saturating_sub(j.as_nanos());
                let span = 2 * j.as_nanos() + 1;
                (Duration::from_nanos(lo + self.rng.below(span)), self.cfg.size)
            }
            Itt::Exponential(d) => (Duration::from_nanos(self.rng.exponential(d.as_nanos() as f64).round() as u64), self.cfg.size),
            Itt::Replay(list) => {
                if list.is_empty() {
                    return (Duration::from_millis(100), self.cfg.size);
                }
                let (g, s) = list[self.replay_pos % list.len()];
                self.replay_pos += 1;
                (g, s)
            }
        }
    }

    /// Handles one input; returns the next timer to arm.
    pub fn on_input(&mut self, ctx: &mut AppCtx, input: AppInput) -> Option<Instant> {
        match input {
            AppInput::Timer => {
                match self.state.phase {
                    ClientPhase::Idle => {
                        connect(ctx, self.cfg.dst, &self.cfg.opts, &mut self.state);
                        None
                    }
                    ClientPhase::Sending => {
                        if ctx.now >= self.cfg.stop {
                            if let Some(s) = self.state.sock {
                                let _ = ctx.sockets.shutdown_write(ctx.now, s);
                            }
                            self.state.phase = ClientPhase::Closing;
                            return None;
                        }
                        self.write(ctx, self.size_next);
                        let (gap, next_size) = self.next_gap();
                        self.size_next = next_size;
                        Some(ctx.now + gap)
                    }
                    _ => None,
                }
            }
            AppInput::Tcp(s, ev) if Some(s) == self.state.sock => {
                match ev {
                    SockEvent::Connected => {
                        self.state.connected(ctx, s);
                        self.state.phase = ClientPhase::Sending;
                        let (gap, size) = self.next_gap();
                        self.size_next = size;
                        // first write after one gap, like a game or VoIP tick
                        return Some(ctx.now + gap);
                    }
                    SockEvent::Readable | SockEvent::PeerClosed => {
                        let (n, _) = drain(ctx, s, usize::MAX);
                        self.state.read += n;
                        if ev == SockEvent::PeerClosed {
                            self.state.peer_closed(ctx, s);
                        }
                    }
                    SockEvent::Reset | SockEvent::ConnectFailed => self.state.failed(ctx, s, ev),
                    _ => {}
                }
                None
            }
            _ => None,
        }
    }

    fn write(&mut self, ctx: &mut AppCtx, _size: u32) {
        let Some(s) = self.state.sock else { return };
        let n = (self.size_next.max(16) as usize).min(PATTERN.len());
        let mut buf = [0u8; 1500];
        let msg: &[u8] = if n <= buf.len() {
            buf[..8].copy_from_slice(&self.writes.to_be_bytes());
            buf[8..16].copy_from_slice(&ctx.now.as_nanos().to_be_bytes());
            &buf[..n]
        } else {
            &PATTERN[..n]
        };
        match ctx.sockets.send(ctx.now, s, msg) {
            Ok(k) if k == msg.len() => {
                self.writes += 1;
                self.state.written += k as u64;
                self.state.t_data.get_or_insert(ctx.now);
                self.state.t_last_write = Some(ctx.now);
            }
            Ok(k) => {
                // a partial write: count what went in, the rest is dropped by the app
                self.blocked += 1;
                self.state.written += k as u64;
            }
            Err(e) => self.state.error = Some(e),
        }
    }
}
