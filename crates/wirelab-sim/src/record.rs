//! Recorders: captures, the queue probe, time series and the run fingerprint.
use crate::apps::App;
use crate::sim::{LinkDir, Node};
use serde::Serialize;
use wirelab_core::{Instant, Pkt};
use wirelab_qdisc::Qdisc;

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

/// A TCP socket time-series row, with `tcp_info` / `ss -ti` field names.
#[derive(Clone, Debug, Serialize)]
pub struct TcpSample {
    /// Time (s).
    pub time_s: f64,
    /// Owning app.
    pub flow: String,
    /// Node.
    pub node: String,
    /// Socket id on that node.
    pub sock: u32,
    /// `local -> remote`.
    pub conn: String,
    /// State (`ss` spelling).
    pub state: &'static str,
    /// Congestion-avoidance state (`Open`, `Disorder`, `CWR`, `Recovery`, `Loss`).
    pub ca_state: String,
    /// `snd_cwnd` (segments).
    pub cwnd: u32,
    /// `snd_ssthresh` (segments; 2147483647 = infinite).
    pub ssthresh: u32,
    /// Smoothed RTT (ms).
    pub srtt_ms: f64,
    /// RTT variation (ms).
    pub rttvar_ms: f64,
    /// RTO (ms).
    pub rto_ms: f64,
    /// Sending MSS.
    pub snd_mss: u32,
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
    /// Peer's advertised window (bytes).
    pub snd_wnd: u32,
    /// Our advertised window (bytes).
    pub rcv_wnd: u32,
    /// `sk_sndbuf`.
    pub sndbuf: u32,
    /// `sk_rcvbuf`.
    pub rcvbuf: u32,
    /// Unsent bytes.
    pub notsent: u32,
    /// Delivery rate (bit/s).
    pub delivery_rate_bps: f64,
    /// Bytes ACKed by the peer.
    pub bytes_acked: u64,
    /// Bytes received in order.
    pub bytes_received: u64,
    /// Stream is thin now (`tcp_stream_is_thin()`).
    pub thin: bool,
    /// RTO expirations.
    pub rto_count: u32,
    /// Linear (non-backed-off) thin-stream timeouts.
    pub thin_linear_timeouts: u32,
    /// Thin-stream fast retransmits on the first dupACK.
    pub thin_dupack_retrans: u32,
    /// Early retransmits.
    pub early_retrans: u32,
    /// Tail loss probes.
    pub tlp_probes: u32,
    /// Packets carrying bundled redundant data (RDB).
    pub rdb_packets: u32,
    /// Redundant bytes bundled (RDB).
    pub rdb_bytes_bundled: u64,
    /// RDB (2015): losses detected through bundles that triggered a cwnd reduction (CWR).
    pub rdb_loss_cwr: u32,
}

impl TcpSample {
    fn new(t: Instant, flow: &str, node: &str, sock: u32, conn: String, i: &wirelab_tcp::TcpInfo) -> Self {
        TcpSample {
            time_s: t.as_secs_f64(),
            flow: flow.to_string(),
            node: node.to_string(),
            sock,
            conn,
            state: i.state.name(),
            ca_state: format!("{:?}", i.ca_state),
            cwnd: i.cwnd,
            ssthresh: i.ssthresh,
            srtt_ms: i.srtt_us as f64 / 1000.0,
            rttvar_ms: i.rttvar_us as f64 / 1000.0,
            rto_ms: i.rto_us as f64 / 1000.0,
            snd_mss: i.snd_mss,
            unacked: i.unacked,
            sacked: i.sacked,
            lost: i.lost,
            retrans: i.retrans,
            total_retrans: i.total_retrans,
            snd_wnd: i.snd_wnd,
            rcv_wnd: i.rcv_wnd,
            sndbuf: i.sndbuf,
            rcvbuf: i.rcvbuf,
            notsent: i.notsent_bytes,
            delivery_rate_bps: i.delivery_rate as f64 * 8.0,
            bytes_acked: i.bytes_acked,
            bytes_received: i.bytes_received,
            thin: i.thin,
            rto_count: i.rto_count,
            thin_linear_timeouts: i.thin_linear_timeouts,
            thin_dupack_retrans: i.thin_dupack_retrans,
            early_retrans: i.early_retrans,
            tlp_probes: i.tlp_probes,
            rdb_packets: i.rdb_packets,
            rdb_bytes_bundled: i.rdb_bytes_bundled,
            rdb_loss_cwr: i.rdb_loss_cwr,
        }
    }
}

/// An SCTP association time-series row.
#[derive(Clone, Debug, Serialize)]
pub struct SctpSample {
    /// Time (s).
    pub time_s: f64,
    /// Owning app.
    pub flow: String,
    /// Node.
    pub node: String,
    /// Socket id on that node.
    pub sock: u32,
    /// State.
    pub state: String,
    /// cwnd summed over active paths (bytes).
    pub cwnd: u64,
    /// ssthresh of the active path (bytes).
    pub ssthresh: u32,
    /// Bytes in flight over all paths.
    pub flight: u64,
    /// RTO of the active path (ms).
    pub rto_ms: f64,
    /// SRTT of the active path (ms).
    pub srtt_ms: f64,
    /// Active path index.
    pub active_path: usize,
    /// Peer's receive window.
    pub peer_rwnd: u32,
    /// Our receive window.
    pub rwnd: u32,
    /// `sk_sndbuf`.
    pub sndbuf: u64,
    /// `sk_rcvbuf`.
    pub rcvbuf: u64,
    /// Send-buffer charge.
    pub sndbuf_used: u64,
    /// Send-buffer occupancy in percent of `sndbuf` (truesize charge / `sk_sndbuf`; the
    /// value chunk 0x96 carries depends on `net.sctp.sndbuf_adv`, see the next columns).
    pub sndbuf_occupancy_pct: f64,
    /// Chunk-0x96 advertisements this end has sent so far.
    pub sndbuf_adv_sent: u64,
    /// Flags byte of the last chunk 0x96 this end received from its peer (the peer's
    /// advertised occupancy, e.g. a decile 0–10 with `v4`); 0 if none.
    pub sndbuf_adv_rx_flags: u8,
    /// Unsent bytes.
    pub out_qlen: u64,
    /// Sent, unacked bytes.
    pub outstanding: u64,
    /// Chunks retransmitted.
    pub retransmits: u64,
    /// Bytes delivered to the app.
    pub bytes_delivered: u64,
    /// Bytes cumulatively acked.
    pub bytes_acked: u64,
    /// Fast retransmit events.
    pub fast_retransmits: u64,
    /// T3-rtx timeouts.
    pub t3_expiries: u64,
    /// Duplicate TSNs received (spurious retransmissions reaching this end).
    pub dup_tsns: u64,
    /// SACKs sent.
    pub sacks_sent: u64,
}

/// An SCTP path time-series row.
#[derive(Clone, Debug, Serialize)]
pub struct SctpPathSample {
    /// Time (s).
    pub time_s: f64,
    /// Owning app.
    pub flow: String,
    /// Node.
    pub node: String,
    /// Socket id on that node.
    pub sock: u32,
    /// Path index.
    pub path: usize,
    /// Peer address.
    pub addr: String,
    /// Path state.
    pub state: String,
    /// Primary path.
    pub primary: bool,
    /// cwnd (bytes).
    pub cwnd: u32,
    /// ssthresh (bytes).
    pub ssthresh: u32,
    /// Flight (bytes).
    pub flight: u32,
    /// RTO (ms).
    pub rto_ms: f64,
    /// SRTT (ms).
    pub srtt_ms: f64,
    /// Error count.
    pub error_count: u32,
    /// User bytes sent on the path, retransmissions included.
    pub bytes_sent: u64,
    /// User bytes acked while in flight on the path.
    pub bytes_acked: u64,
    /// DATA chunks retransmitted on the path.
    pub retransmits: u64,
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
    /// Control mode.
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

impl Recorder {
    fn push_sctp(&mut self, now: Instant, flow: &str, node: &str, sock: u32, i: &wirelab_sctp::AssocInfo) {
        let t = now.as_secs_f64();
        let act = i.paths.get(i.active_path);
        self.sctp_series.push(SctpSample {
            time_s: t,
            flow: flow.to_string(),
            node: node.to_string(),
            sock,
            state: format!("{:?}", i.state),
            cwnd: i.paths.iter().filter(|p| p.state == wirelab_sctp::PathState::Active).map(|p| p.cwnd as u64).sum(),
            ssthresh: act.map_or(0, |p| p.ssthresh),
            flight: i.paths.iter().map(|p| p.flight as u64).sum(),
            rto_ms: act.map_or(0.0, |p| p.rto_ms),
            srtt_ms: act.map_or(0.0, |p| p.srtt_ms),
            active_path: i.active_path,
            peer_rwnd: i.peer_rwnd,
            rwnd: i.rwnd,
            sndbuf: i.sndbuf,
            rcvbuf: i.rcvbuf,
            sndbuf_used: i.sndbuf_used,
            sndbuf_occupancy_pct: if i.sndbuf > 0 { i.sndbuf_used as f64 * 100.0 / i.sndbuf as f64 } else { 0.0 },
            sndbuf_adv_sent: i.stats.sndbuf_adv_sent,
            sndbuf_adv_rx_flags: i.stats.last_sndbuf_adv_flags,
            out_qlen: i.out_qlen,
            outstanding: i.outstanding_bytes,
            retransmits: i.stats.retransmits,
            bytes_delivered: i.stats.bytes_delivered,
            bytes_acked: i.stats.bytes_acked,
            fast_retransmits: i.stats.fast_retransmits,
            t3_expiries: i.stats.t3_expiries,
            dup_tsns: i.stats.dup_tsns,
            sacks_sent: i.stats.sacks_sent,
        });
        for (k, p) in i.paths.iter().enumerate() {
            self.path_series.push(SctpPathSample {
                time_s: t,
                flow: flow.to_string(),
                node: node.to_string(),
                sock,
                path: k,
                addr: p.addr.to_string(),
                state: format!("{:?}", p.state),
                primary: p.primary,
                cwnd: p.cwnd,
                ssthresh: p.ssthresh,
                flight: p.flight,
                rto_ms: p.rto_ms,
                srtt_ms: p.srtt_ms,
                error_count: p.error_count,
                bytes_sent: p.bytes_sent,
                bytes_acked: p.bytes_acked,
                retransmits: p.retransmits,
            });
        }
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
    /// Hash of every packet delivery and drop (time, packet, node) in order.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    pub(crate) fn sample(&mut self, now: Instant, apps: &[App], nodes: &[Node], _dirs: &[LinkDir]) {
        let counters: Vec<(u64, u64)> = apps.iter().map(|a| a.counter_bytes()).collect();
        if let Some((t0, prev)) = &self.last_sample {
            if *t0 == now {
                return;
            }
            let dt = (now - *t0).as_secs_f64();
            for (i, a) in apps.iter().enumerate() {
                let (tx, rx) = counters[i];
                self.flow_series.push(FlowSample {
                    time_s: now.as_secs_f64(),
                    flow: a.name.clone(),
                    tx_bytes: tx,
                    rx_bytes: rx,
                    rx_rate_bps: (rx - prev[i].1) as f64 * 8.0 / dt,
                    tx_rate_bps: (tx - prev[i].0) as f64 * 8.0 / dt,
                });
            }
        }
        for a in apps {
            let node = &nodes[a.node as usize];
            let Some(stack) = node.stack.as_deref() else { continue };
            a.tcp_sockets(&mut |s| {
                if let Some(i) = stack.s_info(s) {
                    let conn = stack.s_addrs(s).map(|(l, r)| format!("{l}->{r}")).unwrap_or_default();
                    self.tcp_series.push(TcpSample::new(now, &a.name, &node.name, s.0, conn, &i));
                } else if let Some(i) = stack.s_sctp(s).and_then(|x| stack.sctp().info(x)) {
                    // a TCP application whose shim carries it over SCTP
                    self.push_sctp(now, &a.name, &node.name, s.0, &i);
                }
            });
            a.sctp_sockets(&mut |s| {
                if let Some(i) = stack.sctp().info(s) {
                    self.push_sctp(now, &a.name, &node.name, s.0, &i);
                }
            });
        }
        for n in nodes {
            let Some(stack) = n.stack.as_deref() else { continue };
            for (s, probe) in &stack.rate_probes {
                let snap = probe.snapshot_at(now);
                let conn = stack.tcp().addrs(*s).map(|(l, r)| format!("{l}->{r}")).unwrap_or_default();
                self.rate_series.push(RateSample {
                    time_s: now.as_secs_f64(),
                    node: n.name.clone(),
                    conn,
                    rate_bps: snap.rate_bytes_per_sec as f64 * 8.0,
                    rate_pps: snap.rate_pps(),
                    window: snap.window,
                    linux_window: snap.linux_window,
                    mode: format!("{:?}", snap.mode),
                });
            }
        }
        for n in nodes {
            for f in &n.ifaces {
                let st = f.qdisc.stats();
                self.queue_series.push(QueueSample {
                    time_s: now.as_secs_f64(),
                    dev: f.dev.clone(),
                    qlen: f.qdisc.qlen(),
                    backlog: f.qdisc.backlog_bytes(),
                    drops: st.drops,
                    sent_bytes: st.bytes,
                });
            }
        }
        self.last_sample = Some((now, counters));
    }
}
