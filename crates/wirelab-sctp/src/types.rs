//! Public socket-level types of the SCTP endpoint.
use core::fmt;
use std::net::Ipv4Addr;

/// A socket handle (listener or one-to-one association socket) of one [`crate::SctpEndpoint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SocketId(pub u32);

/// Why a socket call failed (the `errno` Linux would return is named).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockError {
    /// No such socket (`EBADF`).
    BadSocket,
    /// Operation needs an association in ESTABLISHED (`ENOTCONN`, `EPIPE` after shutdown).
    NotConnected,
    /// Port already bound (`EADDRINUSE`).
    AddrInUse,
    /// Invalid argument (`EINVAL`): empty address list, zero-length message, unknown address.
    Invalid,
    /// Stream number ≥ the negotiated outbound streams (`EINVAL` in Linux).
    InvalidStream,
    /// Message can never fit the send buffer (`EMSGSIZE`).
    MsgSize,
    /// The association was aborted by the peer or failed (`ECONNRESET`/`ETIMEDOUT`).
    Reset,
    /// Operation not valid on a listening socket (`EOPNOTSUPP`).
    IsListener,
    /// No free ephemeral port (`EAGAIN`).
    NoPorts,
}

impl fmt::Display for SockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SockError::BadSocket => "bad socket",
            SockError::NotConnected => "not connected",
            SockError::AddrInUse => "address in use",
            SockError::Invalid => "invalid argument",
            SockError::InvalidStream => "invalid stream",
            SockError::MsgSize => "message too long for the send buffer",
            SockError::Reset => "association reset",
            SockError::IsListener => "listening socket",
            SockError::NoPorts => "no free port",
        })
    }
}
impl std::error::Error for SockError {}

/// Socket options (`setsockopt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockOpt {
    /// `SCTP_NODELAY`: disable Nagle-like bundling delay.
    NoDelay(bool),
    /// `SO_SNDBUF` (Linux stores twice the value, clamped to `wmem_max`; locks the size).
    SndBuf(u32),
    /// `SO_RCVBUF` (doubled, clamped to `rmem_max`; locks the size).
    RcvBuf(u32),
    /// `SCTP_PRIMARY_ADDR`: set the primary path by peer address.
    Primary(Ipv4Addr),
    /// `SCTP_MAXBURST` for this association.
    MaxBurst(u32),
    /// FreeBSD's `SCTP_CMT_ON_OFF`: concurrent multipath transfer for this socket's
    /// associations, 0…4 as `net.inet.sctp.cmt_on_off` ([`crate::Cmt`]); other values are
    /// `Invalid`. (FreeBSD refuses the option unless the sysctl is non-zero; wirelab
    /// accepts it either way.)
    CmtOnOff(u8),
}

/// What [`crate::SctpEndpoint::recv`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvInfo {
    /// Bytes copied (0 with `end_of_message` = end of stream: the peer shut down).
    pub len: usize,
    /// Stream the message arrived on.
    pub stream: u16,
    /// True if the message's last byte was copied (`MSG_EOR`).
    pub end_of_message: bool,
}

/// Association state (RFC 9260 §4, Linux `sctp_state_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssocState {
    /// No association (closed, or a listener).
    Closed,
    /// INIT sent.
    CookieWait,
    /// COOKIE-ECHO sent.
    CookieEchoed,
    /// Established.
    Established,
    /// Local shutdown requested, waiting for outstanding data.
    ShutdownPending,
    /// SHUTDOWN sent.
    ShutdownSent,
    /// SHUTDOWN received, waiting for outstanding data.
    ShutdownReceived,
    /// SHUTDOWN-ACK sent.
    ShutdownAckSent,
}

/// Path (transport) state, as `SCTP_ACTIVE`/`SCTP_PF`/`SCTP_INACTIVE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathState {
    /// Reachable.
    Active,
    /// Potentially failed (RFC 7829): errors exceeded `pf_retrans`.
    PotentiallyFailed,
    /// Errors exceeded `path_max_retrans`.
    Inactive,
}

/// Per-path snapshot (what `SCTP_GET_PEER_ADDR_INFO` and `ss` would show).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathInfo {
    /// Peer address of the path.
    pub addr: Ipv4Addr,
    /// Local address used as source.
    pub local: Ipv4Addr,
    /// State.
    pub state: PathState,
    /// Congestion window, bytes.
    pub cwnd: u32,
    /// Slow-start threshold, bytes.
    pub ssthresh: u32,
    /// Bytes in flight on this path.
    pub flight: u32,
    /// Current RTO, ms.
    pub rto_ms: f64,
    /// Smoothed RTT, ms (0 before the first sample).
    pub srtt_ms: f64,
    /// Consecutive error count.
    pub error_count: u32,
    /// partial_bytes_acked.
    pub partial_bytes_acked: u32,
    /// True for the primary path.
    pub primary: bool,
    /// User bytes sent as DATA on this path, retransmissions included.
    pub bytes_sent: u64,
    /// User bytes acknowledged (cumulatively or by gap blocks) while in flight on this path.
    pub bytes_acked: u64,
    /// DATA chunks retransmitted on this path.
    pub retransmits: u64,
    /// In fast recovery of its own (CMT's per-destination fast recovery).
    pub fast_recovery: bool,
}

/// Association snapshot for results and tests.
#[derive(Clone, Debug, PartialEq)]
pub struct AssocInfo {
    /// State.
    pub state: AssocState,
    /// Peer's receive window as the sender tracks it (`asoc->peer.rwnd`).
    pub peer_rwnd: u32,
    /// Our receive window (`asoc->rwnd`).
    pub rwnd: u32,
    /// `sk_sndbuf`.
    pub sndbuf: u64,
    /// `sk_rcvbuf`.
    pub rcvbuf: u64,
    /// Send-buffer charge (`asoc->sndbuf_used`, truesize accounting).
    pub sndbuf_used: u64,
    /// Receive-memory charge.
    pub rcvbuf_used: u64,
    /// Unsent user bytes (`outqueue.out_qlen`).
    pub out_qlen: u64,
    /// Sent-but-unacked user bytes (`outqueue.outstanding_bytes`).
    pub outstanding_bytes: u64,
    /// Paths in peer-address order.
    pub paths: Vec<PathInfo>,
    /// Index of the path new data uses.
    pub active_path: usize,
    /// Association error count.
    pub error_count: u32,
    /// Counters.
    pub stats: AssocStats,
}

/// Cumulative counters of one association.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AssocStats {
    /// DATA chunks sent (first transmissions).
    pub data_chunks_sent: u64,
    /// DATA chunks retransmitted (any reason).
    pub retransmits: u64,
    /// Fast retransmit events.
    pub fast_retransmits: u64,
    /// T3-rtx expiries.
    pub t3_expiries: u64,
    /// SACKs sent.
    pub sacks_sent: u64,
    /// User bytes delivered to the application.
    pub bytes_delivered: u64,
    /// User bytes acknowledged cumulatively by the peer.
    pub bytes_acked: u64,
    /// Chunk-0x96 advertisements sent.
    pub sndbuf_adv_sent: u64,
    /// Chunk-0x96 advertisements received (recognized or skipped).
    pub sndbuf_adv_received: u64,
    /// Last received 0x96 flags byte.
    pub last_sndbuf_adv_flags: u8,
    /// Unknown chunks skipped.
    pub unknown_chunks_skipped: u64,
    /// ERROR chunks received.
    pub errors_received: u64,
    /// Duplicate TSNs received.
    pub dup_tsns: u64,
    /// Heartbeats sent.
    pub heartbeats_sent: u64,
    /// CMT split fast retransmit: miss indications HTNA alone would have counted but SFR
    /// withheld (no newer TSN to the chunk's path was acked).
    pub sfr_withheld_misses: u64,
    /// CMT cwnd updates allowed only by a new pseudo-cumack (CUC; the cumulative TSN did
    /// not move).
    pub cuc_cwnd_updates: u64,
    /// Extra miss indications added by CMT's delayed-ack algorithm (DAC).
    pub dac_extra_misses: u64,
    /// Gap-acked chunks a later SACK no longer covered, put back in flight (reneging, or
    /// with CMT an older SACK overtaken on a faster return path: FreeBSD's "revoked").
    pub reneged_chunks: u64,
    /// Out-of-order TSNs this receiver dropped to make room for the next one (Linux
    /// `sctp_ulpq_renege()`).
    pub reneged_tsns: u64,
}
