//! What an application sees of its host: the socket calls a real program makes, and the
//! inputs that wake it. The driver (the simulator, or a live driver) implements
//! [`HostSockets`] for its host stack; applications never see the driver.
use std::net::{Ipv4Addr, SocketAddrV4};
use wirelab_core::{Instant, SockEvent};
use wirelab_sctp::{AssocInfo, AssocStats, RecvInfo};
use wirelab_tcp::{SockError, SockOpt, SocketId, TcpInfo};

/// The host's socket API. Stream sockets have TCP semantics (TCP's own, or the
/// TCP-to-SCTP shim's on a shim host); `sctp_*` calls are native one-to-one SCTP sockets.
pub trait HostSockets {
    /// `connect()` from `local`; a shim host may offer SCTP every address in `locals` and
    /// the destination's other addresses `remote_alt` (a plain TCP connect ignores them).
    fn connect(&mut self, now: Instant, local: Ipv4Addr, locals: &[Ipv4Addr], remote: SocketAddrV4, remote_alt: &[Ipv4Addr]) -> Result<SocketId, SockError>;
    /// `listen()`.
    fn listen(&mut self, local: SocketAddrV4, backlog: u32) -> Result<SocketId, SockError>;
    /// `accept()`.
    fn accept(&mut self, listener: SocketId) -> Option<SocketId>;
    /// `write()`.
    fn send(&mut self, now: Instant, s: SocketId, data: &[u8]) -> Result<usize, SockError>;
    /// `write()` of a `'static` slice; the engine may queue it by reference instead of
    /// copying it (the bytes on the wire are the same).
    fn send_static(&mut self, now: Instant, s: SocketId, data: &'static [u8]) -> Result<usize, SockError> {
        self.send(now, s, data)
    }
    /// `read()`.
    fn recv(&mut self, now: Instant, s: SocketId, buf: &mut [u8]) -> Result<usize, SockError>;
    /// Reads and discards up to `max` bytes.
    fn recv_discard(&mut self, now: Instant, s: SocketId, max: usize) -> Result<usize, SockError>;
    /// A promise that the application reads `s` only with `recv_discard` from now on, so
    /// the stack may count arriving bytes without storing them (no Linux counterpart;
    /// nothing observable changes). A stack may ignore it.
    fn discard_payload(&mut self, _s: SocketId) {}
    /// `shutdown(SHUT_WR)`.
    fn shutdown_write(&mut self, now: Instant, s: SocketId) -> Result<(), SockError>;
    /// `close()`.
    fn close(&mut self, now: Instant, s: SocketId);
    /// `setsockopt()`.
    fn set_option(&mut self, s: SocketId, opt: SockOpt) -> Result<(), SockError>;
    /// Routes the socket's events to application `app`.
    fn own_stream(&mut self, s: SocketId, app: u32);
    /// `getsockopt(TCP_INFO)`, while the stream runs over TCP.
    fn info(&self, s: SocketId) -> Option<TcpInfo>;
    /// Counters of the SCTP association a shim carries the stream over.
    fn sctp_stats(&self, s: SocketId) -> Option<AssocStats>;
    /// `(local, remote)` of a TCP-carried stream.
    fn addrs(&self, s: SocketId) -> Option<(SocketAddrV4, SocketAddrV4)>;
    /// Transport the stream ended up on (`tcp`, `sctp`, or empty while undecided).
    fn transport(&self, s: SocketId) -> &'static str;

    /// SCTP `connect()` (`sctp_connectx` over `locals` and `remotes`).
    fn sctp_connect(&mut self, now: Instant, locals: &[Ipv4Addr], remotes: &[Ipv4Addr], port: u16) -> Result<wirelab_sctp::SocketId, wirelab_sctp::SockError>;
    /// SCTP `listen()` on `locals`.
    fn sctp_listen(&mut self, locals: &[Ipv4Addr], port: u16, backlog: u32) -> Result<wirelab_sctp::SocketId, wirelab_sctp::SockError>;
    /// SCTP `accept()`.
    fn sctp_accept(&mut self, listener: wirelab_sctp::SocketId) -> Option<wirelab_sctp::SocketId>;
    /// SCTP `setsockopt()`.
    fn sctp_set_option(&mut self, s: wirelab_sctp::SocketId, opt: wirelab_sctp::SockOpt) -> Result<(), wirelab_sctp::SockError>;
    /// `sctp_sendmsg()` of one message on `stream`.
    fn sctp_send(&mut self, now: Instant, s: wirelab_sctp::SocketId, stream: u16, data: &[u8], unordered: bool) -> Result<usize, wirelab_sctp::SockError>;
    /// `sctp_recvmsg()`.
    fn sctp_recv(&mut self, now: Instant, s: wirelab_sctp::SocketId, buf: &mut [u8]) -> Result<Option<RecvInfo>, wirelab_sctp::SockError>;
    /// Reads and discards up to `max` bytes of one message.
    fn sctp_recv_discard(&mut self, now: Instant, s: wirelab_sctp::SocketId, max: usize) -> Result<Option<RecvInfo>, wirelab_sctp::SockError>;
    /// `shutdown()`: graceful SHUTDOWN.
    fn sctp_shutdown(&mut self, now: Instant, s: wirelab_sctp::SocketId) -> Result<(), wirelab_sctp::SockError>;
    /// `close()`.
    fn sctp_close(&mut self, now: Instant, s: wirelab_sctp::SocketId);
    /// Association and path info (`SCTP_STATUS`, `SCTP_GET_PEER_ADDR_INFO`).
    fn sctp_info(&self, s: wirelab_sctp::SocketId) -> Option<AssocInfo>;
    /// Routes the association's events to application `app`.
    fn own_sctp(&mut self, s: wirelab_sctp::SocketId, app: u32);
}

/// What drives an application.
#[derive(Clone, Copy, Debug)]
pub enum AppInput {
    /// The app's own timer fired.
    Timer,
    /// A stream (TCP-semantics) socket event.
    Tcp(SocketId, SockEvent),
    /// An SCTP socket event.
    Sctp(wirelab_sctp::SocketId, SockEvent),
}

/// Per-call context handed to an app.
pub struct AppCtx<'a> {
    /// Now.
    pub now: Instant,
    /// This app's index (what [`HostSockets::own_stream`] routes events to).
    pub app: u32,
    /// The host's sockets.
    pub sockets: &'a mut dyn HostSockets,
    /// Source address the routing table picks for the app's destination (clients).
    pub src: Option<Ipv4Addr>,
    /// All of the node's interface addresses (SCTP multihoming).
    pub local_addrs: &'a [Ipv4Addr],
}
