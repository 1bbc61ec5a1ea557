//! Driver- and application-facing value types: socket ids, errors, options, `tcp_info`.
use crate::cc::CaState;
use core::fmt;

/// A socket handle (index into the endpoint's table; never reused within a run).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SocketId(pub u32);

impl fmt::Display for SocketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sock#{}", self.0)
    }
}

/// Why a socket call failed (the errno it mirrors in parentheses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockError {
    /// No such socket, or it has been freed (`EBADF`).
    InvalidSocket,
    /// The call does not apply to this socket or state (`EINVAL`).
    InvalidState,
    /// Not connected (`ENOTCONN`).
    NotConnected,
    /// Nothing to read now (`EAGAIN`).
    WouldBlock,
    /// Writing after `shutdown(SHUT_WR)` or close (`EPIPE`).
    BrokenPipe,
    /// The peer reset the connection (`ECONNRESET`).
    ConnectionReset,
    /// Active open refused (`ECONNREFUSED`).
    ConnectionRefused,
    /// Retransmissions gave up (`ETIMEDOUT`).
    TimedOut,
    /// Address/port already in use (`EADDRINUSE`).
    AddrInUse,
    /// No free ephemeral port (`EADDRNOTAVAIL`).
    AddrNotAvailable,
    /// Unknown congestion control or bad option value (`ENOENT`/`EINVAL`).
    BadOption,
}

impl fmt::Display for SockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SockError::InvalidSocket => "invalid socket (EBADF)",
            SockError::InvalidState => "invalid in this socket state (EINVAL)",
            SockError::NotConnected => "not connected (ENOTCONN)",
            SockError::WouldBlock => "operation would block (EAGAIN)",
            SockError::BrokenPipe => "broken pipe (EPIPE)",
            SockError::ConnectionReset => "connection reset by peer (ECONNRESET)",
            SockError::ConnectionRefused => "connection refused (ECONNREFUSED)",
            SockError::TimedOut => "connection timed out (ETIMEDOUT)",
            SockError::AddrInUse => "address in use (EADDRINUSE)",
            SockError::AddrNotAvailable => "no ephemeral port available (EADDRNOTAVAIL)",
            SockError::BadOption => "bad socket option value (EINVAL)",
        })
    }
}
impl std::error::Error for SockError {}

/// Socket options (`setsockopt`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SockOpt {
    /// `TCP_NODELAY`: disable Nagle.
    NoDelay(bool),
    /// `SO_SNDBUF` in bytes: doubled as Linux does, clamped to `wmem_max`, locks autotuning.
    SndBuf(u32),
    /// `SO_RCVBUF` in bytes: doubled as Linux does, clamped to `rmem_max`, locks autotuning.
    RcvBuf(u32),
    /// `TCP_CORK`: hold partial segments (`TCP_NAGLE_CORK`) until uncorked, which pushes
    /// what is queued (`__tcp_sock_set_cork()`), or the probe timer sends it.
    Cork(bool),
    /// `TCP_USER_TIMEOUT` in ms (0: off): how long retransmissions or zero-window probes
    /// may go on before the connection fails with `ETIMEDOUT` (`icsk_user_timeout`).
    UserTimeout(u32),
    /// `TCP_WINDOW_CLAMP` in bytes.
    WindowClamp(u32),
    /// `TCP_CONGESTION` by name ("reno", "cubic").
    Congestion(String),
    /// `TCP_QUICKACK`: enter quick-ACK mode now.
    QuickAck(bool),
    /// `IP_TOS`: the TOS byte of every segment this socket sends (DSCP for classifiers).
    Tos(u8),
    /// `TCP_THIN_LINEAR_TIMEOUTS`: linear RTO for the first `TCP_THIN_LINEAR_RETRIES`
    /// timeouts of a thin stream. On if this or `net.ipv4.tcp_thin_linear_timeouts` is set.
    ThinLinearTimeouts(bool),
    /// `TCP_THIN_DUPACK`: fast retransmit on the first duplicate ACK of a thin stream. On
    /// if this or `net.ipv4.tcp_thin_dupack` is set.
    ThinDupack(bool),
    /// `TCP_MAXSEG`: clamps the advertised and the used MSS (`rx_opt.user_mss`) when set
    /// before the SYN / SYN-ACK is sent (right after `connect`, or on a listener). On a
    /// synchronized connection it is accepted and kept but changes nothing, as in Linux
    /// (`do_tcp_setsockopt()` only stores `user_mss`, read at connection set-up; checked
    /// against the kernel by `scenarios/rate-control/packetdrill/tcp-maxseg-established.pkt`);
    /// between a sent SYN and the handshake's end it is `InvalidState`. Values outside
    /// 88..=65535 are `BadOption`; 0 clears it.
    MaxSeg(u16),
    /// Honour an MSS option on a non-SYN segment: the send MSS becomes the advertised
    /// value (never above the handshake's). A wirelab extension modelling the sender
    /// the rate-control thesis (seed 003 §6.4) hoped for; no stack does this (RFC 9293
    /// §3.7.1 sends MSS only in SYNs, Linux's `tcp_parse_options()` reads it only there).
    /// Off by default.
    MidstreamMss(bool),
    /// Per-socket `net.ipv4.tcp_early_retrans` mode 0–4 (a wirelab extension; Linux has
    /// only the sysctl). Overrides the host value for this socket.
    EarlyRetrans(u8),
    /// Redundant data bundling for this socket (the 2015 patch's `TCP_RDB`, extended
    /// with the variant). Overrides `net.ipv4.tcp_rdb`.
    Rdb(crate::config::RdbMode),
    /// `SO_MAX_PACING_RATE` in bytes/s: caps `sk_pacing_rate` and turns pacing on
    /// (`u64::MAX` = no cap).
    MaxPacingRate(u64),
}

/// Receiver-side advertised-window policy (rate control, seed 003). Installed per socket
/// with [`crate::TcpEndpoint::set_rcv_window_policy`].
///
/// The engine calls [`limit`](Self::limit) each time it builds a window field (every
/// segment it sends, SYN and SYN-ACK included; docs/tcp.md "Receive-window policy"), after
/// Linux's `__tcp_select_window()` has produced its offer, including receiver SWS
/// avoidance. A
/// smaller answer replaces that offer as is: it is not rounded down to a multiple of the
/// MSS nor turned into 0 below one MSS, so a policy may offer sub-MSS windows (the SWS
/// cliff the thesis studies). It is only rounded *up* to the window-scale unit
/// (`1 << rcv_wscale` bytes), as Linux rounds scaled windows, so the scaled field does not
/// lose it. A larger answer than Linux's offer is ignored (the policy can only limit).
/// Unless [`allow_retract`](Self::allow_retract) the right edge already offered is never
/// moved left (`tcp_select_window()`), so a shrinking policy takes effect as the peer's
/// data consumes the old window.
pub trait RcvWindowPolicy: std::fmt::Debug {
    /// Called for each arriving segment with `payload` data bytes (0 for pure ACKs is not reported).
    fn on_data(&mut self, now: wirelab_core::Instant, payload: usize);
    /// Called from window selection with the window Linux would offer (bytes, unscaled) and the
    /// receive MSS; returns the window to offer (the engine still applies scaling/rounding).
    fn limit(&mut self, now: wirelab_core::Instant, linux_window: u32, mss: u32) -> u32;
    /// The window `limit` would offer now, without changing any state; used by the read
    /// path's "window opened a lot" test (`tcp_cleanup_rbuf()`), which in a patched kernel
    /// sees the policy's window as `__tcp_select_window()` does. Default: `linux_window`.
    fn peek(&self, linux_window: u32, mss: u32) -> u32 {
        let _ = mss;
        linux_window
    }
    /// May the policy retract the right edge (thesis flag)? Default false: never-retract is kept.
    fn allow_retract(&self) -> bool {
        false
    }
    /// An MSS option to put on a pure ACK after the handshake, given the window (bytes)
    /// that ACK offers and the receive MSS. No Linux does this; seed 003 §6.4 tried it
    /// ("advertise the MSS in each TCP header", then shrink it with the window). Peers
    /// ignore it (`tcp_parse_options()`) unless they opted into
    /// [`SockOpt::MidstreamMss`]. Default: none.
    fn mss_option(&self, offered: u32, mss: u32) -> Option<u16> {
        let _ = (offered, mss);
        None
    }
}

/// TCP states (RFC 9293 names, as `ss` prints them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpState {
    /// No connection.
    Closed,
    /// Passive open.
    Listen,
    /// SYN sent.
    SynSent,
    /// SYN received (passive child).
    SynRecv,
    /// Data transfer.
    Established,
    /// FIN sent, not yet ACKed.
    FinWait1,
    /// Our FIN ACKed, waiting for the peer's.
    FinWait2,
    /// Peer's FIN received.
    CloseWait,
    /// Both FINs sent, ours not ACKed.
    Closing,
    /// FIN sent after CloseWait.
    LastAck,
    /// 2·MSL wait.
    TimeWait,
}

impl TcpState {
    /// `ss` spelling.
    pub fn name(self) -> &'static str {
        match self {
            TcpState::Closed => "CLOSE",
            TcpState::Listen => "LISTEN",
            TcpState::SynSent => "SYN-SENT",
            TcpState::SynRecv => "SYN-RECV",
            TcpState::Established => "ESTAB",
            TcpState::FinWait1 => "FIN-WAIT-1",
            TcpState::FinWait2 => "FIN-WAIT-2",
            TcpState::CloseWait => "CLOSE-WAIT",
            TcpState::Closing => "CLOSING",
            TcpState::LastAck => "LAST-ACK",
            TcpState::TimeWait => "TIME-WAIT",
        }
    }
}

/// A snapshot with `tcp_info` / `ss -ti` field names. Times in µs, windows and buffers in
/// bytes, cwnd/ssthresh and the scoreboard counters in packets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TcpInfo {
    /// Connection state.
    pub state: TcpState,
    /// Congestion-avoidance state.
    pub ca_state: CaState,
    /// `snd_cwnd` (packets).
    pub cwnd: u32,
    /// `snd_ssthresh` (packets; 0x7fffffff = infinite).
    pub ssthresh: u32,
    /// Smoothed RTT (µs).
    pub srtt_us: u32,
    /// RTT variation (µs, `mdev_us >> 2` as `tcpi_rttvar`).
    pub rttvar_us: u32,
    /// Current RTO including backoff (µs).
    pub rto_us: u32,
    /// Exponential backoff count.
    pub backoff: u32,
    /// Timeouts of the current episode (`icsk_retransmits`, `tcpi_retransmits`).
    pub retransmits: u32,
    /// Sending MSS (`mss_cache`).
    pub snd_mss: u32,
    /// Receiver's estimate of the peer's MSS (`icsk_ack.rcv_mss`).
    pub rcv_mss: u32,
    /// MSS we advertise (`tp->advmss`).
    pub advmss: u32,
    /// Unanswered zero-window / keepalive probes (`icsk_probes_out`).
    pub probes: u32,
    /// Time with data queued or in flight (µs, `tcpi_busy_time`; jiffy granularity).
    pub busy_time_us: u64,
    /// Of that, time limited by the peer's receive window (µs, `tcpi_rwnd_limited`).
    pub rwnd_limited_us: u64,
    /// Of that, time limited by the send buffer (µs, `tcpi_sndbuf_limited`).
    pub sndbuf_limited_us: u64,
    /// `packets_out`.
    pub unacked: u32,
    /// `sacked_out`.
    pub sacked: u32,
    /// `lost_out`.
    pub lost: u32,
    /// `retrans_out`.
    pub retrans: u32,
    /// `total_retrans`.
    pub total_retrans: u32,
    /// Peer's advertised window (bytes, scaled).
    pub snd_wnd: u32,
    /// Our last advertised window (bytes).
    pub rcv_wnd: u32,
    /// `rcv_ssthresh`.
    pub rcv_ssthresh: u32,
    /// `rcvq_space.space`: bytes the reader took in the last measured receiver RTT.
    pub rcv_space: u32,
    /// The receiver's RTT estimate (`rcv_rtt_est.rtt_us >> 3`, µs; 0 = none).
    pub rcv_rtt_us: u32,
    /// `window_clamp`.
    pub window_clamp: u32,
    /// `sk_sndbuf`.
    pub sndbuf: u32,
    /// `sk_rcvbuf`.
    pub rcvbuf: u32,
    /// Bytes written but not yet sent.
    pub notsent_bytes: u32,
    /// Bytes cumulatively ACKed by the peer.
    pub bytes_acked: u64,
    /// Bytes received in order.
    pub bytes_received: u64,
    /// Segments sent / received.
    pub segs_out: u64,
    /// Segments received.
    pub segs_in: u64,
    /// Packets delivered (`tp->delivered`).
    pub delivered: u64,
    /// Packets delivered with an ECE echo (`tcpi_delivered_ce`).
    pub delivered_ce: u64,
    /// Current dupthresh estimate (`tcpi_reordering`).
    pub reordering: u32,
    /// Reordering events seen (`tcpi_reord_seen`).
    pub reord_seen: u32,
    /// D-SACK blocks received (`tcpi_dsack_dups`-like count of blocks).
    pub dsack_dups: u32,
    /// Congestion-window reductions undone (`TCPFullUndo`+`TCPPartialUndo`+`TCPDSACKUndo`+`TCPLossUndo`).
    pub undo_count: u32,
    /// Delivery rate (bytes/s) of the last non-app-limited sample or the highest
    /// app-limited one (`tcpi_delivery_rate`, `tcp_compute_delivery_rate()`).
    pub delivery_rate: u64,
    /// That sample was application-limited (`tcpi_delivery_rate_app_limited`).
    pub delivery_rate_app_limited: bool,
    /// `sk_pacing_rate` in bytes/s (`tcpi_pacing_rate`; `u64::MAX` = unpaced).
    pub pacing_rate: u64,
    /// `sk_max_pacing_rate` (`tcpi_max_pacing_rate`; `u64::MAX` = none).
    pub max_pacing_rate: u64,
    /// Who paces: "none", "internal" (`SK_PACING_NEEDED`) or "fq" (`SK_PACING_FQ`).
    pub pacing: &'static str,
    /// `tcp_min_rtt()` in µs (`tcpi_min_rtt`; `u32::MAX` before any sample).
    pub min_rtt_us: u32,
    /// ECN negotiated (`TCPI_OPT_ECN`).
    pub ecn: bool,
    /// ECT or CE seen on received data (`TCPI_OPT_ECN_SEEN`).
    pub ecn_seen: bool,
    /// The module's `ss -ti` fields (`INET_DIAG_{BBR,DCTCP,VEGAS}INFO`).
    pub cc_info: crate::cc::CcInfo,
    /// Our receive window scale.
    pub rcv_wscale: u8,
    /// Peer's window scale.
    pub snd_wscale: u8,
    /// Congestion-control algorithm name.
    pub congestion: &'static str,
    /// The stream is thin now (`tcp_stream_is_thin()`: packets_out < 4 and not in
    /// initial slow start).
    pub thin: bool,
    /// Retransmission timeouts that fired on this connection (`TCPTimeouts`-like count;
    /// SYN timeouts included).
    pub rto_count: u32,
    /// Of those, timeouts re-armed linearly by `tcp_thin_linear_timeouts`.
    pub thin_linear_timeouts: u32,
    /// Fast retransmits triggered by the thin-stream rule (`tcp_thin_dupack`) alone.
    pub thin_dupack_retrans: u32,
    /// Early retransmits (RFC 5827, `tcp_early_retrans` 1–3) performed.
    pub early_retrans: u32,
    /// Tail loss probes sent (`TCPLossProbes`).
    pub tlp_probes: u32,
    /// Segments sent with redundantly bundled data (RDB).
    pub rdb_packets: u32,
    /// Bytes of already-sent data bundled into new segments (RDB).
    pub rdb_bytes_bundled: u64,
    /// Losses detected through RDB bundles that triggered a cwnd reduction (CWR).
    pub rdb_loss_cwr: u32,
}
