//! Conventions shared by the sans-IO transport engines (TCP, SCTP, the shim) and their
//! drivers.
//!
//! An engine is a state machine. The driver calls, in this order after every input:
//!
//! 1. `handle_packet(now, src, dst, bytes)` for a datagram addressed to it, or
//!    `handle_timeout(now)` when `poll_timeout()` has passed (spurious calls are no-ops),
//!    or an application command (`connect`, `send`, `recv`, `shutdown`, …);
//! 2. `poll_transmit(now, buf)` until it returns `None`;
//! 3. `poll_event()` until it returns `None`;
//! 4. `poll_timeout()` to learn when to call again.
//!
//! Time never goes backwards. No engine reads a clock, sleeps, or draws randomness other
//! than from an [`crate::Rng`] handed to it.
use crate::time::Instant;
use std::net::Ipv4Addr;

/// Bytes an engine must leave at the front of a transmit buffer for the IPv4 header.
/// The driver writes the header there afterwards, so a segment is never copied.
pub const HEADROOM: usize = 20;

/// What an engine wants sent. The transport bytes (header, with its checksum computed over
/// the pseudo-header of `src`/`dst`, and payload) are in the caller's buffer after
/// [`HEADROOM`] reserved bytes.
///
/// The last three fields are scheduling metadata the driver copies into the packet's
/// [`crate::PktMeta`] (`sk`, `txtime`, `pacing_rate`) for qdiscs such as `fq`; an engine
/// that does not pace leaves them at their defaults (`..Transmit::default()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Source address (an engine with several local addresses picks one per path).
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// IP protocol number (6 TCP, 17 UDP, 132 SCTP).
    pub proto: u8,
    /// The IPv4 TOS byte (DSCP + ECN).
    pub tos: u8,
    /// Don't-fragment bit (Linux sets DF on TCP/SCTP when PMTU discovery is on).
    pub dont_frag: bool,
    /// The sending socket as an opaque non-zero key (`skb->sk`), or 0: the driver then
    /// derives one from the 5-tuple, so every connection is one `fq` flow.
    pub sk: u64,
    /// Earliest departure time (`skb->tstamp`, EDT), [`Instant::ZERO`] for none.
    pub txtime: Instant,
    /// `sk->sk_pacing_rate` in bytes/s, `u64::MAX` for none (`~0UL`).
    pub pacing_rate: u64,
    /// The datagram's last payload bytes by reference ([`crate::Pkt::tail`]): they follow
    /// what the engine wrote into the buffer, and the transport checksum covers them.
    /// Empty unless the engine was asked to pass `'static` payload by reference (the
    /// simulator does, for `send_static` data); a driver that writes datagrams out appends
    /// them.
    pub tail: &'static [u8],
    /// How the sending socket charged the datagram to its `sk_wmem_alloc` (TCP Small
    /// Queues, [`tsq`]): [`tsq::NONE`], [`tsq::SEG`] or [`tsq::SKB_HEAD`]. A driver that
    /// sees a charged datagram reports its release with the engine's `tx_complete(sk,
    /// truesize)` once it has left the host (see docs/tcp.md, "TCP Small Queues").
    pub tsq: u8,
    /// The TSO skb this datagram is a segment of, for qdiscs that segment GSO skbs on
    /// enqueue (`tbf_segment()`): its segment count (`gso_segs`; 0 or 1: not a GSO skb)
    /// and the IP bytes of all its segments together.
    pub gso: (u16, u32),
}

/// TCP Small Queues bookkeeping shared by the TCP engine and the drivers: what one
/// datagram adds to its socket's `sk_wmem_alloc` (`skb->truesize`).
///
/// Linux charges `skb->truesize` per skb: a TSO skb of n segments is one skb, its
/// truesize the fixed allocation (`SKB_TRUESIZE(skb_end_offset)` of
/// `tcp_stream_alloc_skb()`) plus the payload in page fragments. wirelab sends a TSO skb
/// as n datagrams; the first carries the fixed part ([`SKB_HEAD`]), every one its IP
/// length. The kind travels in one byte of the packet ([`crate::PktMeta::tsq`]), so
/// engine and driver compute the same truesize from the datagram's length.
pub mod tsq {
    /// Not charged (pure ACKs: Linux gives them `truesize = 2` and `__sock_wfree`, which
    /// never wakes TSQ; RSTs; other protocols).
    pub const NONE: u8 = 0;
    /// Charged its IP length: a later segment of a TSO skb.
    pub const SEG: u8 = 1;
    /// Charged its IP length plus [`SKB_OVERHEAD`]: the first (or only) segment of an skb.
    pub const SKB_HEAD: u8 = 2;
    /// Charged its IP length plus [`GSO_SEG_OVERHEAD`]: a segment of a GSO skb that a
    /// qdisc segmented on enqueue (`tbf_segment()`), each segment then an skb of its own.
    pub const GSO_SEG: u8 = 3;
    /// The fixed part of a TCP skb's truesize less the 52 header bytes wirelab counts in
    /// the IP length: `SKB_TRUESIZE(704)` = 704 + 256 (`struct sk_buff`) + 320
    /// (`skb_shared_info`) = 1 280 on x86-64 Linux 6.18 (`MAX_TCP_HEADER` 320 rounded
    /// by `kmalloc_reserve()` to 1 KiB), measured with `ss -tm` (docs/tcp.md).
    pub const SKB_OVERHEAD: u32 = 1280 - 52;
    /// The fixed truesize of one segment `skb_segment()` cuts from a GSO skb, less the 52
    /// header bytes: each segment gets a head of the GSO skb's headroom plus headers
    /// (`__alloc_skb(hsize + doffset + headroom)`: the `MAX_TCP_HEADER` = 256 bytes
    /// `tcp_stream_alloc_skb()` allocated, from the 576-byte small-head cache),
    /// `SKB_TRUESIZE(256)` = 256 + 256 + 320 = 832, plus its payload (`nskb->truesize +=
    /// nskb->data_len`); `tcp_gso_segment()` charges the socket the sum. 832 is the head
    /// `SO_MEMINFO` shows on this 6.18 kernel (`wmem_queued` 932 after a 100-byte write).
    pub const GSO_SEG_OVERHEAD: u32 = 832 - 52;

    /// The truesize of a datagram of `ip_len` bytes charged as `kind`.
    #[inline]
    pub fn truesize(ip_len: usize, kind: u8) -> u32 {
        match kind {
            NONE => 0,
            SEG => ip_len as u32,
            GSO_SEG => ip_len as u32 + GSO_SEG_OVERHEAD,
            _ => ip_len as u32 + SKB_OVERHEAD,
        }
    }
}

/// The opaque socket key (`skb->sk`) of a connection: its 5-tuple mixed (splitmix64),
/// never 0. Drivers use it for datagrams whose engine names no socket (so each TCP or
/// SCTP connection is one `fq` flow), and the TCP engine names its sockets with it, so
/// that `fq` sees the same keys either way. `ports` is the transport header's first
/// four bytes (source port << 16 | destination port), 0 for other protocols.
pub fn socket_key(proto: u8, src: Ipv4Addr, dst: Ipv4Addr, ports: u32) -> u64 {
    let ports = match proto {
        6 | 17 | 132 => ports as u64,
        _ => 0,
    };
    let mut x = (u64::from(u32::from(src)) << 32 | u64::from(u32::from(dst))) ^ (ports << 8 | proto as u64).rotate_left(29);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^= x >> 31;
    x.max(1)
}

impl Default for Transmit {
    /// Unspecified addresses, protocol 0, no scheduling metadata.
    fn default() -> Self {
        Transmit {
            src: Ipv4Addr::UNSPECIFIED,
            dst: Ipv4Addr::UNSPECIFIED,
            proto: 0,
            tos: 0,
            dont_frag: false,
            sk: 0,
            txtime: Instant::ZERO,
            pacing_rate: u64::MAX,
            tail: &[],
            tsq: tsq::NONE,
            gso: (0, 0),
        }
    }
}

/// Application-visible events, as `poll`/`epoll` would report them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockEvent {
    /// An active open completed.
    Connected,
    /// A passive open is ready to be accepted.
    Incoming,
    /// New data can be read.
    Readable,
    /// Send-buffer space became available again.
    Writable,
    /// The peer closed its sending direction (TCP FIN / emulated half-close).
    PeerClosed,
    /// The connection is fully closed.
    Closed,
    /// The peer reset/aborted the connection.
    Reset,
    /// The active open failed (RST/ABORT/ICMP unreachable/timeout).
    ConnectFailed,
}

/// A datagram handed to an engine: the IPv4 header's fields the transports read, and the
/// transport bytes (the IPv4 payload).
#[derive(Clone, Copy, Debug)]
pub struct Datagram<'a> {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address (one of the host's).
    pub dst: Ipv4Addr,
    /// IP protocol number.
    pub proto: u8,
    /// The IPv4 TOS byte (ECN bits included).
    pub tos: u8,
    /// Transport header and payload.
    pub payload: &'a [u8],
    /// Verify the transport checksum. With checksum offload (Linux's
    /// `CHECKSUM_UNNECESSARY`) a driver vouches for intact packets and asks only for those
    /// a link corrupted.
    pub verify: bool,
}

/// A socket as a driver sees it: the engine family and the engine's own socket number.
/// `Stream` sockets have TCP semantics (TCP's, or the TCP-to-SCTP shim's); `Sctp` sockets
/// are native one-to-one SCTP sockets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SocketRef {
    /// A stream (TCP-semantics) socket.
    Stream(u32),
    /// A native SCTP socket.
    Sctp(u32),
}

/// A sans-IO transport engine, as every driver (the simulator, a live TUN driver) runs it.
///
/// The call order is the module's: one input (`handle_packet`, `handle_timeout` or an
/// application call on the engine's own socket API), then `poll_transmit` until `None`,
/// `poll_event` until `None`, and `poll_timeout` for the next wake-up. TCP, SCTP and the
/// TCP-to-SCTP shim implement it (quinn-proto's and smoltcp's poll style); socket calls
/// stay on each engine's own type, since their signatures differ by protocol.
pub trait Engine {
    /// A datagram addressed to this host.
    fn handle_packet(&mut self, now: crate::Instant, dgram: Datagram<'_>);
    /// Runs the timers due at `now` (`poll_timeout() <= now`).
    fn handle_timeout(&mut self, now: crate::Instant);
    /// Writes the next segment after [`HEADROOM`] bytes of `buf` and says where it goes.
    fn poll_transmit(&mut self, now: crate::Instant, buf: &mut Vec<u8>) -> Option<Transmit>;
    /// When `handle_timeout` next has work.
    fn poll_timeout(&self) -> Option<crate::Instant>;
    /// The next application event.
    fn poll_event(&mut self) -> Option<(SocketRef, SockEvent)>;
    /// A datagram the engine charged to socket `sk` ([`Transmit::tsq`]) left the host or
    /// was dropped in it, releasing `truesize` bytes (Linux's `tcp_wfree()` at TX
    /// completion). Returns true when a socket throttled by TCP Small Queues may send
    /// again: the driver then runs `poll_transmit` (the TSQ handler, `tcp_tsq_handler()`).
    /// Engines that charge nothing keep the default.
    fn tx_complete(&mut self, _now: crate::Instant, _sk: u64, _truesize: u32) -> bool {
        false
    }
}
