//! Recorders: captures, the queue probe, time series and the run fingerprint.
//!
//! Recorders see snapshots only — `tcp_info` ([`wirelab_tcp::TcpInfo`]), SCTP association
//! and path info ([`wirelab_sctp::AssocInfo`]), the rate controller's
//! [`wirelab_ratectl::RateSnapshot`], a qdisc's counters — never the driver's nodes or
//! links; the driver (`sample.rs`) walks its hosts and hands them over. Each time-series
//! row declares its columns once, with the snapshot expression that fills each (the
//! `snapshot_row!` macro): a new counter is one line there, plus the engine's field.
use serde::Serialize;
use wirelab_core::{Instant, Pkt};
use wirelab_qdisc::Qdisc;
use wirelab_tcp::cc::bbr::{BBR_CWND_GAIN, BBR_DRAIN_GAIN, BBR_HIGH_GAIN, BBR_UNIT};
use wirelab_tcp::cc::CcInfo;

/// Declares a time-series row type: one `column: type = expression` per column, the
/// expression reading the snapshot context `$c`. Generates the struct (serialised as CSV
/// in declaration order) and `fn from_snapshot(c) -> Self`.
macro_rules! snapshot_row {
    ($(#[$sm:meta])* $name:ident from $ctx:ty as $c:ident { $( $(#[$m:meta])* $f:ident : $t:ty = $e:expr ),* $(,)? }) => {
        $(#[$sm])*
        #[derive(Clone, Debug, Serialize)]
        pub struct $name { $( $(#[$m])* pub $f: $t, )* }
        impl $name {
            fn from_snapshot($c: &$ctx) -> Self {
                $name { $( $f: $e, )* }
            }
        }
    };
}

/// Where a socket snapshot was taken: time, owning app, node, socket, and the snapshot.
struct At<'a, T> {
    t: Instant,
    flow: &'a str,
    node: &'a str,
    sock: u32,
    conn: String,
    info: &'a T,
}

impl At<'_, wirelab_sctp::AssocInfo> {
    /// The association's active path.
    fn act(&self) -> Option<&wirelab_sctp::PathInfo> {
        self.info.paths.get(self.info.active_path)
    }
}

/// Direction of a captured packet relative to the interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureDir {
    /// Received on the interface.
    In,
    /// Transmitted by the interface.
    Out,
}

/// Where captured packets go (a pcap file, memory, …). `ip` is the IPv4 datagram.
pub trait CaptureSink {
    /// Records one packet seen on interface `iface` (node-local index).
    fn record(&mut self, t: Instant, iface: u32, dir: CaptureDir, ip: &[u8]);
    /// Flushes buffered output.
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A capture that keeps packets in memory (tests, Python).
#[derive(Default, Clone, Debug)]
pub struct MemoryCapture {
    /// `(time, iface, direction, datagram)`.
    pub packets: Vec<(Instant, u32, CaptureDir, Vec<u8>)>,
}
impl CaptureSink for MemoryCapture {
    fn record(&mut self, t: Instant, iface: u32, dir: CaptureDir, ip: &[u8]) {
        self.packets.push((t, iface, dir, ip.to_vec()));
    }
}

/// Queue-probe event kinds (aqmprobe-like).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeEvent {
    /// Accepted by the qdisc.
    Enqueue,
    /// Left the qdisc for the wire.
    Dequeue,
    /// Dropped (at enqueue or, for AQMs, at dequeue).
    Drop,
}

/// The 5-tuple of a packet, for probe rows.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct FlowKey {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// IP protocol.
    pub proto: u8,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
}

/// One probe row.
#[derive(Clone, Debug, Serialize)]
pub struct ProbeRecord {
    /// Time (ns).
    pub time_ns: u64,
    /// `node:iface`.
    pub dev: String,
    /// What happened.
    pub event: ProbeEvent,
    /// Packet id.
    pub pkt_id: u64,
    /// Packet length as qdiscs count it.
    pub len: usize,
    /// Queue length (packets) after the event.
    pub qlen: usize,
    /// Backlog (bytes) after the event.
    pub backlog: usize,
    /// Sojourn time (dequeue/drop) in ns.
    pub sojourn_ns: u64,
    /// Flow.
    pub flow: FlowKey,
}

impl ProbeRecord {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(t: Instant, dev: &str, event: ProbeEvent, id: u64, len: usize, q: &dyn Qdisc, sojourn_ns: u64, flow: FlowKey) -> Self {
        ProbeRecord { time_ns: t.as_nanos(), dev: dev.to_string(), event, pkt_id: id, len, qlen: q.qlen(), backlog: q.backlog_bytes(), sojourn_ns, flow }
    }
    pub(crate) fn flow_of(p: &Pkt) -> FlowKey {
        let (sport, dport) = p.ports().unwrap_or((0, 0));
        FlowKey { src: p.src_addr(), dst: p.dst_addr(), proto: p.ip_proto(), sport, dport }
    }
}

/// A per-application time-series row.
#[derive(Clone, Debug, Serialize)]
pub struct FlowSample {
    /// Time (s).
    pub time_s: f64,
    /// App name.
    pub flow: String,
    /// Cumulative payload bytes sent.
    pub tx_bytes: u64,
    /// Cumulative payload bytes received.
    pub rx_bytes: u64,
    /// Receive rate over the last interval, bit/s.
    pub rx_rate_bps: f64,
    /// Send rate over the last interval, bit/s.
    pub tx_rate_bps: f64,
}

/// A per-queue time-series row.
#[derive(Clone, Debug, Serialize)]
pub struct QueueSample {
    /// Time (s).
    pub time_s: f64,
    /// `node:iface`.
    pub dev: String,
    /// Packets queued.
    pub qlen: usize,
    /// Bytes queued.
    pub backlog: usize,
    /// Cumulative drops.
    pub drops: u64,
    /// Cumulative bytes sent.
    pub sent_bytes: u64,
}

snapshot_row! {
    /// A TCP socket time-series row, with `tcp_info` / `ss -ti` field names.
    TcpSample from At<'_, wirelab_tcp::TcpInfo> as c {
        /// Time (s).
        time_s: f64 = c.t.as_secs_f64(),
        /// Owning app.
        flow: String = c.flow.to_string(),
        /// Node.
        node: String = c.node.to_string(),
        /// Socket id on that node.
        sock: u32 = c.sock,
        /// `local -> remote`.
        conn: String = c.conn.clone(),
        /// State (`ss` spelling).
        state: &'static str = c.info.state.name(),
        /// Congestion-avoidance state (`Open`, `Disorder`, `CWR`, `Recovery`, `Loss`).
        ca_state: String = format!("{:?}", c.info.ca_state),
        /// `snd_cwnd` (segments).
        cwnd: u32 = c.info.cwnd,
        /// `snd_ssthresh` (segments; 2147483647 = infinite).
        ssthresh: u32 = c.info.ssthresh,
        /// Smoothed RTT (ms).
        srtt_ms: f64 = c.info.srtt_us as f64 / 1000.0,
        /// RTT variation (ms).
        rttvar_ms: f64 = c.info.rttvar_us as f64 / 1000.0,
        /// RTO (ms).
        rto_ms: f64 = c.info.rto_us as f64 / 1000.0,
        /// Sending MSS.
        snd_mss: u32 = c.info.snd_mss,
        /// `packets_out`.
        unacked: u32 = c.info.unacked,
        /// `sacked_out`.
        sacked: u32 = c.info.sacked,
        /// `lost_out`.
        lost: u32 = c.info.lost,
        /// `retrans_out`.
        retrans: u32 = c.info.retrans,
        /// `total_retrans`.
        total_retrans: u32 = c.info.total_retrans,
        /// Peer's advertised window (bytes).
        snd_wnd: u32 = c.info.snd_wnd,
        /// Our advertised window (bytes).
        rcv_wnd: u32 = c.info.rcv_wnd,
        /// `sk_sndbuf`.
        sndbuf: u32 = c.info.sndbuf,
        /// `sk_rcvbuf`.
        rcvbuf: u32 = c.info.rcvbuf,
        /// Unsent bytes.
        notsent: u32 = c.info.notsent_bytes,
        /// Delivery rate (bit/s).
        delivery_rate_bps: f64 = c.info.delivery_rate as f64 * 8.0,
        /// Bytes ACKed by the peer.
        bytes_acked: u64 = c.info.bytes_acked,
        /// Bytes received in order.
        bytes_received: u64 = c.info.bytes_received,
        /// Stream is thin now (`tcp_stream_is_thin()`).
        thin: bool = c.info.thin,
        /// RTO expirations.
        rto_count: u32 = c.info.rto_count,
        /// Linear (non-backed-off) thin-stream timeouts.
        thin_linear_timeouts: u32 = c.info.thin_linear_timeouts,
        /// Thin-stream fast retransmits on the first dupACK.
        thin_dupack_retrans: u32 = c.info.thin_dupack_retrans,
        /// Early retransmits.
        early_retrans: u32 = c.info.early_retrans,
        /// Tail loss probes.
        tlp_probes: u32 = c.info.tlp_probes,
        /// Packets carrying bundled redundant data (RDB).
        rdb_packets: u32 = c.info.rdb_packets,
        /// Redundant bytes bundled (RDB).
        rdb_bytes_bundled: u64 = c.info.rdb_bytes_bundled,
        /// RDB (2015): losses detected through bundles that triggered a cwnd reduction (CWR).
        rdb_loss_cwr: u32 = c.info.rdb_loss_cwr,
        /// Congestion-control module (`ss -ti`'s first word: `cubic`, `bbr`, `dctcp`, …).
        congestion: &'static str = c.info.congestion,
        /// `delivery_rate_app_limited` (`ss -ti`: `app_limited`): the delivery-rate sample
        /// above was application-limited.
        delivery_rate_app_limited: bool = c.info.delivery_rate_app_limited,
        /// `sk_pacing_rate` (bit/s, `ss -ti`: `pacing_rate`; empty = unpaced, `~0`).
        pacing_rate_bps: Option<f64> = bps(c.info.pacing_rate),
        /// `sk_max_pacing_rate` (bit/s; empty = none, `SO_MAX_PACING_RATE` unset).
        max_pacing_rate_bps: Option<f64> = bps(c.info.max_pacing_rate),
        /// Who paces: `none`, `internal` (`SK_PACING_NEEDED`) or `fq` (`SK_PACING_FQ`).
        pacing: &'static str = c.info.pacing,
        /// `tcp_min_rtt()` (ms, `ss -ti`: `minrtt`; empty before any RTT sample).
        min_rtt_ms: Option<f64> = (c.info.min_rtt_us != u32::MAX).then(|| c.info.min_rtt_us as f64 / 1000.0),
        /// ECN negotiated (`TCPI_OPT_ECN`, `ss -ti`: `ecn`).
        ecn: bool = c.info.ecn,
        /// ECT or CE seen on received data (`TCPI_OPT_ECN_SEEN`, `ss -ti`: `ecnseen`).
        ecn_seen: bool = c.info.ecn_seen,
        /// Packets delivered with an ECE echo (`tcpi_delivered_ce`).
        delivered_ce: u64 = c.info.delivered_ce,
        /// Packets delivered (`tcpi_delivered`).
        delivered: u64 = c.info.delivered,
        /// BBR: max-filtered bottleneck bandwidth (bit/s, `ss -ti`: `bbr:(bw:…)`).
        bbr_bw_bps: Option<f64> = match c.info.cc_info { CcInfo::Bbr { bw, .. } => Some(bw as f64 * 8.0), _ => None },
        /// BBR: `bbr_min_rtt` (ms, `bbr:(mrtt:…)`).
        bbr_min_rtt_ms: Option<f64> = match c.info.cc_info { CcInfo::Bbr { min_rtt, .. } => Some(min_rtt as f64 / 1000.0), _ => None },
        /// BBR: `pacing_gain` (`bbr_pacing_gain / 256`, `bbr:(pacing_gain:…)`).
        bbr_pacing_gain: Option<f64> = match c.info.cc_info { CcInfo::Bbr { pacing_gain, .. } => Some(pacing_gain as f64 / 256.0), _ => None },
        /// BBR: `cwnd_gain` (`bbr_cwnd_gain / 256`).
        bbr_cwnd_gain: Option<f64> = match c.info.cc_info { CcInfo::Bbr { cwnd_gain, .. } => Some(cwnd_gain as f64 / 256.0), _ => None },
        /// BBR: mode (`STARTUP`, `DRAIN`, `PROBE_BW`, `PROBE_RTT`). `struct tcp_bbr_info`
        /// has no mode; it follows from the gains `bbr_update_gains()` sets per mode.
        bbr_mode: Option<&'static str> = match c.info.cc_info { CcInfo::Bbr { pacing_gain, cwnd_gain, .. } => Some(bbr_mode(pacing_gain, cwnd_gain)), _ => None },
        /// DCTCP: `dctcp_ce_state` (the receiver's CE state: 1 = last data was CE).
        dctcp_ce_state: Option<u16> = match c.info.cc_info { CcInfo::Dctcp { ce_state, .. } => Some(ce_state), _ => None },
        /// DCTCP: `dctcp_alpha` as a fraction (`alpha / 1024`, `dctcp:(alpha:…)`).
        dctcp_alpha: Option<f64> = match c.info.cc_info { CcInfo::Dctcp { alpha, .. } => Some(alpha as f64 / 1024.0), _ => None },
        /// DCTCP: bytes ACKed with ECE in the current observation window (`dctcp_ab_ecn`).
        dctcp_ab_ecn: Option<u32> = match c.info.cc_info { CcInfo::Dctcp { ab_ecn, .. } => Some(ab_ecn), _ => None },
        /// DCTCP: bytes ACKed in the current observation window (`dctcp_ab_tot`).
        dctcp_ab_tot: Option<u32> = match c.info.cc_info { CcInfo::Dctcp { ab_tot, .. } => Some(ab_tot), _ => None },
    }
}

/// A rate in bytes/s as bit/s, `None` for "unlimited" (`~0UL`).
fn bps(bytes_per_s: u64) -> Option<f64> {
    (bytes_per_s != u64::MAX).then_some(bytes_per_s as f64 * 8.0)
}

/// BBR's mode from the gains `bbr_update_gains()` (tcp_bbr.c) sets for it: STARTUP uses
/// `bbr_high_gain` for both, DRAIN `bbr_drain_gain` with the high cwnd gain, PROBE_BW
/// `bbr_cwnd_gain` (2) with the cycle's pacing gain, PROBE_RTT 1 for both.
fn bbr_mode(pacing_gain: u32, cwnd_gain: u32) -> &'static str {
    match (pacing_gain, cwnd_gain) {
        (_, BBR_CWND_GAIN) => "PROBE_BW",
        (BBR_UNIT, BBR_UNIT) => "PROBE_RTT",
        (BBR_HIGH_GAIN, BBR_HIGH_GAIN) => "STARTUP",
        (BBR_DRAIN_GAIN, BBR_HIGH_GAIN) => "DRAIN",
        _ => "",
    }
}

snapshot_row! {
    /// An SCTP association time-series row.
    SctpSample from At<'_, wirelab_sctp::AssocInfo> as c {
        /// Time (s).
        time_s: f64 = c.t.as_secs_f64(),
        /// Owning app.
        flow: String = c.flow.to_string(),
        /// Node.
        node: String = c.node.to_string(),
        /// Socket id on that node.
        sock: u32 = c.sock,
        /// State.
        state: String = format!("{:?}", c.info.state),
        /// cwnd summed over active paths (bytes).
        cwnd: u64 = c.info.paths.iter().filter(|p| p.state == wirelab_sctp::PathState::Active).map(|p| p.cwnd as u64).sum(),
        /// ssthresh of the active path (bytes).
        ssthresh: u32 = c.act().map_or(0, |p| p.ssthresh),
        /// Bytes in flight over all paths.
        flight: u64 = c.info.paths.iter().map(|p| p.flight as u64).sum(),
        /// RTO of the active path (ms).
        rto_ms: f64 = c.act().map_or(0.0, |p| p.rto_ms),
        /// SRTT of the active path (ms).
        srtt_ms: f64 = c.act().map_or(0.0, |p| p.srtt_ms),
        /// Active path index.
        active_path: usize = c.info.active_path,
        /// Peer's receive window.
        peer_rwnd: u32 = c.info.peer_rwnd,
        /// Our receive window.
        rwnd: u32 = c.info.rwnd,
        /// `sk_sndbuf`.
        sndbuf: u64 = c.info.sndbuf,
        /// `sk_rcvbuf`.
        rcvbuf: u64 = c.info.rcvbuf,
        /// Send-buffer charge.
        sndbuf_used: u64 = c.info.sndbuf_used,
        /// Send-buffer occupancy in percent of `sndbuf` (truesize charge / `sk_sndbuf`; the
        /// value chunk 0x96 carries depends on `net.sctp.sndbuf_adv`, see the next columns).
        sndbuf_occupancy_pct: f64 = if c.info.sndbuf > 0 { c.info.sndbuf_used as f64 * 100.0 / c.info.sndbuf as f64 } else { 0.0 },
        /// Chunk-0x96 advertisements this end has sent so far.
        sndbuf_adv_sent: u64 = c.info.stats.sndbuf_adv_sent,
        /// Flags byte of the last chunk 0x96 this end received from its peer (the peer's
        /// advertised occupancy, e.g. a decile 0–10 with `v4`); 0 if none.
        sndbuf_adv_rx_flags: u8 = c.info.stats.last_sndbuf_adv_flags,
        /// Unsent bytes.
        out_qlen: u64 = c.info.out_qlen,
        /// Sent, unacked bytes.
        outstanding: u64 = c.info.outstanding_bytes,
        /// Chunks retransmitted.
        retransmits: u64 = c.info.stats.retransmits,
        /// Bytes delivered to the app.
        bytes_delivered: u64 = c.info.stats.bytes_delivered,
        /// Bytes cumulatively acked.
        bytes_acked: u64 = c.info.stats.bytes_acked,
        /// Fast retransmit events.
        fast_retransmits: u64 = c.info.stats.fast_retransmits,
        /// T3-rtx timeouts.
        t3_expiries: u64 = c.info.stats.t3_expiries,
        /// Duplicate TSNs received (spurious retransmissions reaching this end).
        dup_tsns: u64 = c.info.stats.dup_tsns,
        /// SACKs sent.
        sacks_sent: u64 = c.info.stats.sacks_sent,
    }
}

/// An SCTP path snapshot: the association's context and one of its paths.
struct PathAt<'a> {
    at: &'a At<'a, wirelab_sctp::AssocInfo>,
    k: usize,
    p: &'a wirelab_sctp::PathInfo,
}

snapshot_row! {
    /// An SCTP path time-series row.
    SctpPathSample from PathAt<'_> as c {
        /// Time (s).
        time_s: f64 = c.at.t.as_secs_f64(),
        /// Owning app.
        flow: String = c.at.flow.to_string(),
        /// Node.
        node: String = c.at.node.to_string(),
        /// Socket id on that node.
        sock: u32 = c.at.sock,
        /// Path index.
        path: usize = c.k,
        /// Peer address.
        addr: String = c.p.addr.to_string(),
        /// Path state.
        state: String = format!("{:?}", c.p.state),
        /// Primary path.
        primary: bool = c.p.primary,
        /// cwnd (bytes).
        cwnd: u32 = c.p.cwnd,
        /// ssthresh (bytes).
        ssthresh: u32 = c.p.ssthresh,
        /// Flight (bytes).
        flight: u32 = c.p.flight,
        /// RTO (ms).
        rto_ms: f64 = c.p.rto_ms,
        /// SRTT (ms).
        srtt_ms: f64 = c.p.srtt_ms,
        /// Error count.
        error_count: u32 = c.p.error_count,
        /// User bytes sent on the path, retransmissions included.
        bytes_sent: u64 = c.p.bytes_sent,
        /// User bytes acked while in flight on the path.
        bytes_acked: u64 = c.p.bytes_acked,
        /// DATA chunks retransmitted on the path.
        retransmits: u64 = c.p.retransmits,
    }
}

/// One completed `tcp-rr` transaction (`rr_latency.csv`): what the application saw,
/// whichever transport carried it (TCP, or SCTP under the shim).
#[derive(Clone, Debug, Serialize)]
pub struct RrLatency {
    /// The `tcp-rr` app.
    pub flow: String,
    /// When the request was written (s).
    pub start_s: f64,
    /// Request written → whole response read (ms).
    pub latency_ms: f64,
}

/// A receiver-side rate-control row (seed 003): one controlled TCP connection per sample,
/// the columns of the thesis's `/proc/net/tcp_rate` plus the window in force.
#[derive(Clone, Debug, Serialize)]
pub struct RateSample {
    /// Time (s).
    pub time_s: f64,
    /// Receiving node.
    pub node: String,
    /// `local->remote` (local = receiver).
    pub conn: String,
    /// Measured rate (bit/s).
    pub rate_bps: f64,
    /// Measured rate (packets/s, the thesis's unit).
    pub rate_pps: u64,
    /// Window offered by the controller (bytes).
    pub window: u32,
    /// Window Linux would have offered (bytes).
    pub linux_window: u32,
    /// Control mode (`Off`, `Controlled`, `Important`, `Fixed`); for a UDP socket
    /// (`conn` = `udp *:PORT`) the policy state, `OKAY`, `DROP`, `WARN` or `KILL`.
    pub mode: String,
}

/// One decision of a node's TCP-to-SCTP shim rule table (seed 005): which rule decided
/// which socket, and the transport the socket ended up on.
#[derive(Clone, Debug, Serialize)]
pub struct ShimMatchRow {
    /// Time of the decision (s).
    pub time_s: f64,
    /// Node.
    pub node: String,
    /// Application owning the socket (empty if none).
    pub app: String,
    /// Shim socket number on the node.
    pub socket: u32,
    /// Chain consulted: `local` (listeners) or `remote` (connecting sockets).
    pub chain: &'static str,
    /// Address looked up (`addr:port`): bound address for a `local` listener, peer for
    /// `remote`; for a connection a listener accepted, its peer (it inherits the
    /// listener's rule).
    pub addr: String,
    /// `#i <rule text>` of the first matching rule, or `default`.
    pub rule: String,
    /// Resulting policy: `enable` or `disable`.
    pub policy: &'static str,
    /// Transport at the end of the run: `sctp`, `tcp`, `tcp+sctp` (a listener with the
    /// shim enabled listens on both) or empty while undecided.
    pub transport: &'static str,
    /// Why an SCTP-first connect fell back to TCP (`abort`, `icmp`, `timer`), if it did.
    pub fallback: String,
}

/// Collects everything a run records.
#[derive(Default)]
pub struct Recorder {
    pub(crate) captures: Vec<Box<dyn CaptureSink>>,
    pub(crate) probe: Vec<ProbeRecord>,
    pub(crate) flow_series: Vec<FlowSample>,
    pub(crate) queue_series: Vec<QueueSample>,
    pub(crate) tcp_series: Vec<TcpSample>,
    pub(crate) sctp_series: Vec<SctpSample>,
    pub(crate) path_series: Vec<SctpPathSample>,
    pub(crate) rate_series: Vec<RateSample>,
    last_sample: Option<(Instant, Vec<(u64, u64)>)>,
    fingerprint: u64,
}

#[inline]
fn mix(h: u64, v: u64) -> u64 {
    // splitmix-style finaliser over the running hash: cheap and order-sensitive
    let mut z = (h ^ v).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A fast hash of a datagram's bytes for the fingerprint (not for adversaries): wyhash's
/// folded 64×64→128-bit multiply, 16 bytes per multiply, in four independent lanes so the
/// CPU overlaps them (~40 ns for 1500 bytes), then the tail and the length.
#[cfg(test)]
fn frame_hash(b: &[u8]) -> u64 {
    frame_hash_parts(b, &[])
}

const LANE: [u64; 4] = [0xa076_1d64_78bd_642f, 0xe703_7ed1_a0b4_28db, 0x8ebc_6af0_9c88_c6e3, 0x5899_65cc_7537_4cc3];

#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let m = (a as u128).wrapping_mul(b as u128);
    (m as u64) ^ ((m >> 64) as u64)
}

#[inline(always)]
fn word(c: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&c[8 * i..8 * i + 8]);
    u64::from_le_bytes(w)
}

/// One 64-byte block into the four lanes.
#[inline(always)]
fn block(l: &mut [u64; 4], c: &[u8]) {
    for k in 0..4 {
        l[k] = fold(word(c, 2 * k) ^ LANE[k], word(c, 2 * k + 1) ^ l[k]);
    }
}

/// `frame_hash` of the concatenation `a ++ b` (a datagram's buffer and its by-reference
/// tail) without copying them together: the one block that straddles the two is assembled
/// on the stack, and so are the last bytes if they straddle.
#[inline]
fn frame_hash_parts(a: &[u8], b: &[u8]) -> u64 {
    let mut l = LANE;
    let mut blocks = a.chunks_exact(64);
    for c in &mut blocks {
        block(&mut l, c);
    }
    let ra = blocks.remainder();
    let need = 64 - ra.len();
    let mut joint = [0u8; 64];
    let rest: &[u8] = if b.len() >= need {
        joint[..ra.len()].copy_from_slice(ra);
        joint[ra.len()..].copy_from_slice(&b[..need]);
        block(&mut l, &joint);
        let mut blocks = b[need..].chunks_exact(64);
        for c in &mut blocks {
            block(&mut l, c);
        }
        blocks.remainder()
    } else {
        // fewer than 64 bytes left in all: the last bytes, joined
        joint[..ra.len()].copy_from_slice(ra);
        joint[ra.len()..ra.len() + b.len()].copy_from_slice(b);
        &joint[..ra.len() + b.len()]
    };
    let mut h = mix(mix(l[0], l[1]), mix(l[2], l[3]));
    let mut words = rest.chunks_exact(8);
    for c in &mut words {
        h = fold(word(c, 0) ^ LANE[0], h ^ LANE[1]);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    mix(h ^ u64::from_le_bytes(tail), (a.len() + b.len()) as u64)
}

impl Recorder {
    /// A TCP socket's `tcp_info` snapshot.
    pub(crate) fn tcp(&mut self, t: Instant, flow: &str, node: &str, sock: u32, conn: String, info: &wirelab_tcp::TcpInfo) {
        self.tcp_series.push(TcpSample::from_snapshot(&At { t, flow, node, sock, conn, info }));
    }

    /// An SCTP association's info snapshot: one association row and one row per path.
    pub(crate) fn sctp(&mut self, t: Instant, flow: &str, node: &str, sock: u32, info: &wirelab_sctp::AssocInfo) {
        let at = At { t, flow, node, sock, conn: String::new(), info };
        self.sctp_series.push(SctpSample::from_snapshot(&at));
        for (k, p) in info.paths.iter().enumerate() {
            self.path_series.push(SctpPathSample::from_snapshot(&PathAt { at: &at, k, p }));
        }
    }

    /// A rate-controlled connection's snapshot.
    pub(crate) fn rate(&mut self, t: Instant, node: &str, conn: String, snap: &wirelab_ratectl::RateSnapshot) {
        self.rate_series.push(RateSample {
            time_s: t.as_secs_f64(),
            node: node.to_string(),
            conn,
            rate_bps: snap.rate_bytes_per_sec as f64 * 8.0,
            rate_pps: snap.rate_pps(),
            window: snap.window,
            linux_window: snap.linux_window,
            mode: match snap.udp_state {
                Some(u) => u.name().to_string(),
                None => format!("{:?}", snap.mode),
            },
        });
    }

    /// An egress queue's counters.
    pub(crate) fn queue(&mut self, t: Instant, dev: &str, q: &dyn Qdisc) {
        let st = q.stats();
        self.queue_series.push(QueueSample { time_s: t.as_secs_f64(), dev: dev.to_string(), qlen: q.qlen(), backlog: q.backlog_bytes(), drops: st.drops, sent_bytes: st.bytes });
    }

    /// Starts a sample at `now` with each app's cumulative `(tx, rx)` bytes: pushes the
    /// per-app rate rows. False if `now` was sampled already (the end-of-run sample can
    /// coincide with a periodic one); the caller then records nothing else.
    pub(crate) fn begin_sample<'a>(&mut self, now: Instant, apps: impl Iterator<Item = (&'a str, (u64, u64))>) -> bool {
        let (names, counters): (Vec<&str>, Vec<(u64, u64)>) = apps.unzip();
        if let Some((t0, prev)) = &self.last_sample {
            if *t0 == now {
                return false;
            }
            let dt = (now - *t0).as_secs_f64();
            for (i, name) in names.iter().enumerate() {
                let (tx, rx) = counters[i];
                self.flow_series.push(FlowSample {
                    time_s: now.as_secs_f64(),
                    flow: name.to_string(),
                    tx_bytes: tx,
                    rx_bytes: rx,
                    rx_rate_bps: (rx - prev[i].1) as f64 * 8.0 / dt,
                    tx_rate_bps: (tx - prev[i].0) as f64 * 8.0 / dt,
                });
            }
        }
        self.last_sample = Some((now, counters));
        true
    }

    pub(crate) fn capture(&mut self, c: u32, t: Instant, iface: u32, dir: CaptureDir, ip: &[u8]) {
        self.captures[c as usize].record(t, iface, dir, ip);
    }
    pub(crate) fn probe(&mut self, r: ProbeRecord) {
        self.probe.push(r);
    }
    pub(crate) fn drop_hash(&mut self, t: Instant, id: u64) {
        self.fingerprint = mix(mix(self.fingerprint, t.as_nanos()), id ^ 0xD0D0);
    }
    pub(crate) fn deliver_hash(&mut self, t: Instant, id: u64, node: u32) {
        self.fingerprint = mix(mix(self.fingerprint, t.as_nanos()), id.rotate_left(20) ^ node as u64);
    }
    /// Folds every byte of a new datagram into the fingerprint. Hashed once, when it is
    /// created (its bytes are still in cache there; hashing each delivery cost 6-14 % of
    /// `wirelab bench` at 1 Gbit/s): after that only routers change a datagram (TTL, and
    /// the header checksum, both functions of the rest) and netem's `corrupt` (drawn from
    /// the seeded link RNG), and every delivery and drop is hashed by time and packet.
    /// `bytes` and `tail` are the datagram's buffer and its by-reference tail ([`Pkt::tail`]),
    /// hashed as one byte string.
    pub(crate) fn packet_bytes_hash(&mut self, bytes: &[u8], tail: &[u8]) {
        self.fingerprint = mix(self.fingerprint, frame_hash_parts(bytes, tail));
    }
    /// Hash of every packet's bytes (at creation), every delivery (time, packet, node) and
    /// every drop (time, packet), in order.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
}

#[cfg(test)]
mod frame_hash_test {
    use super::{frame_hash, frame_hash_parts};

    /// Hashing a datagram in two parts (buffer and tail) gives the hash of the whole, at
    /// every split point and length (blocks, words and the last bytes straddling the split).
    #[test]
    fn parts_hash_as_the_whole() {
        let base: Vec<u8> = (0..300u32).map(|i| (i * 13 + 5) as u8).collect();
        for n in [0, 1, 7, 8, 63, 64, 65, 127, 128, 129, 200, 300] {
            let whole = &base[..n];
            for k in 0..=n {
                assert_eq!(frame_hash_parts(&whole[..k], &whole[k..]), frame_hash(whole), "len {n} split {k}");
            }
        }
    }

    #[test]
    fn every_bit_and_the_length_count() {
        let base: Vec<u8> = (0..1500u32).map(|i| (i * 7 + 3) as u8).collect();
        let h0 = frame_hash(&base);
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..base.len() {
            for bit in [0, 3, 7] {
                let mut b = base.clone();
                b[i] ^= 1 << bit;
                assert!(seen.insert(frame_hash(&b)), "byte {i} bit {bit} collides");
            }
        }
        assert!(!seen.contains(&h0));
        // a trailing zero byte, and every length from 0 to 130 (blocks, words, tail)
        let mut z = base.clone();
        z.push(0);
        assert_ne!(frame_hash(&z), h0);
        let lens: std::collections::BTreeSet<u64> = (0..130).map(|n| frame_hash(&vec![0u8; n])).collect();
        assert_eq!(lens.len(), 130);
    }
}
