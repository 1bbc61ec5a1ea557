//! Applications: traffic sources and sinks that drive host sockets.
//!
//! * UDP: [`UdpCbr`] and [`UdpSink`] (this module).
//! * TCP ([`tcp`]): bulk sender / scp-like file transfer, sink, echo, request/response.
//! * SCTP ([`sctp`]): iperf3-like client and a sink/echo server.
//!
//! UDP apps write real datagrams: the first 16 payload bytes carry a sequence number and
//! the send time, so the sink measures one-way delay, loss and reordering from the bytes
//! alone, as a real measurement tool (e.g. iperf's UDP mode) does.
use serde::Serialize;
use std::net::{Ipv4Addr, SocketAddrV4};
use wirelab_core::{Duration, Instant};

pub mod sctp;
pub mod tcp;
pub use sctp::{SctpBulk, SctpServer};
pub use tcp::{AppCtx, AppInput, ClientPhase, Itt, TcpBulk, TcpRr, TcpServer, TcpThin};

/// Bytes of IPv4 + UDP header, counted by a UDP source's `rate`.
pub const UDP_IP_OVERHEAD: u32 = 28;

/// A constant-bit-rate UDP source.
#[derive(Clone, Debug)]
pub struct UdpCbr {
    /// Destination.
    pub dst: SocketAddrV4,
    /// Source port.
    pub src_port: u16,
    /// Payload bytes per datagram (≥ 16).
    pub payload: u32,
    /// Time between datagrams.
    pub interval: Duration,
    /// First datagram.
    pub start: Instant,
    /// No datagram at or after this time.
    pub stop: Instant,
    /// Stop after this many datagrams.
    pub count: Option<u64>,
    /// Datagrams sent so far.
    pub sent_pkts: u64,
    /// Payload bytes sent so far.
    pub sent_bytes: u64,
    /// Datagrams that found no route.
    pub unroutable: u64,
}

/// A UDP sink that measures what arrives.
#[derive(Clone, Debug, Default)]
pub struct UdpSink {
    /// Local port.
    pub port: u16,
    /// Datagrams received.
    pub rx_pkts: u64,
    /// Payload bytes received.
    pub rx_bytes: u64,
    /// Link-layer frame bytes received (IP datagram + link header): the wire rate.
    pub rx_wire_bytes: u64,
    /// Sum of one-way delays (ns).
    pub delay_sum_ns: u128,
    /// Minimum one-way delay.
    pub delay_min_ns: u64,
    /// Maximum one-way delay.
    pub delay_max_ns: u64,
    /// Highest sequence number seen + 1.
    pub seq_end: u64,
    /// Datagrams that arrived with a sequence number below the highest seen.
    pub reordered: u64,
    /// Datagrams whose checksum failed (corrupted in transit).
    pub bad_checksum: u64,
    /// Datagrams dropped by the receiver's UDP rate policy (DROP/WARN states).
    pub policy_drops: u64,
    /// When the UDP rate policy killed the socket.
    pub killed_at: Option<Instant>,
    /// First and last arrival.
    pub first_rx: Option<Instant>,
    /// Last arrival.
    pub last_rx: Option<Instant>,
}

/// An application instance.
#[derive(Clone, Debug)]
pub enum AppKind {
    /// CBR UDP source.
    UdpCbr(UdpCbr),
    /// UDP sink.
    UdpSink(UdpSink),
    /// TCP bulk sender / file transfer.
    TcpBulk(TcpBulk),
    /// TCP sink or echo server.
    TcpServer(TcpServer),
    /// TCP request/response client.
    TcpRr(TcpRr),
    /// Thin-stream TCP source.
    TcpThin(TcpThin),
    /// SCTP bulk client.
    SctpBulk(SctpBulk),
    /// SCTP sink or echo server.
    SctpServer(SctpServer),
}

/// An application on a node.
#[derive(Clone, Debug)]
pub struct App {
    /// Name in outputs.
    pub name: String,
    /// Node index.
    pub node: u32,
    /// What it is.
    pub kind: AppKind,
}

/// Per-application totals for `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct FlowSummary {
    /// App name.
    pub name: String,
    /// App kind.
    pub kind: &'static str,
    /// Node name.
    pub node: String,
    /// Packets sent (sources).
    pub tx_packets: u64,
    /// Payload bytes sent (sources).
    pub tx_bytes: u64,
    /// Packets received (sinks).
    pub rx_packets: u64,
    /// Payload bytes received (sinks).
    pub rx_bytes: u64,
    /// Mean payload rate between first and last arrival, bit/s (sinks).
    pub goodput_bps: f64,
    /// Mean wire rate (frames incl. link header) between first and last arrival, bit/s.
    pub wire_rate_bps: f64,
    /// Datagrams missing (sequence gaps) at the end of the run (sinks).
    pub lost: u64,
    /// Loss ratio (sinks).
    pub loss_ratio: f64,
    /// Reordered datagrams (sinks).
    pub reordered: u64,
    /// One-way delay min/mean/max in ms (sinks).
    pub delay_min_ms: f64,
    /// Mean one-way delay in ms.
    pub delay_mean_ms: f64,
    /// Max one-way delay in ms.
    pub delay_max_ms: f64,
    /// Transport protocol (`udp`, `tcp`, `sctp`).
    pub proto: &'static str,
    /// Connections (servers: accepted; clients: 1 once connected).
    pub conns: u64,
    /// Retransmitted segments (TCP `total_retrans`) or chunks (SCTP).
    pub retrans: u64,
    /// Client: start (`connect()`) to completion (peer's close after all data), s; NaN if
    /// not finished. For `tcp-file` this is the scp-like transfer time.
    pub transfer_time_s: f64,
    /// Client phase at the end (`done`, `sending`, `failed`, …) or empty.
    pub state: String,
    /// Last socket error, if any.
    pub error: String,
}

impl App {
    /// Summary row.
    pub fn summary(&self, node: &str) -> FlowSummary {
        let mut s = FlowSummary {
            name: self.name.clone(),
            kind: "",
            node: node.to_string(),
            tx_packets: 0,
            tx_bytes: 0,
            rx_packets: 0,
            rx_bytes: 0,
            goodput_bps: 0.0,
            wire_rate_bps: 0.0,
            lost: 0,
            loss_ratio: 0.0,
            reordered: 0,
            delay_min_ms: 0.0,
            delay_mean_ms: 0.0,
            delay_max_ms: 0.0,
            proto: "udp",
            conns: 0,
            retrans: 0,
            transfer_time_s: f64::NAN,
            state: String::new(),
            error: String::new(),
        };
        match &self.kind {
            AppKind::UdpCbr(c) => {
                s.kind = "udp-cbr";
                s.tx_packets = c.sent_pkts;
                s.tx_bytes = c.sent_bytes;
            }
            AppKind::UdpSink(k) => {
                s.kind = "udp-sink";
                s.rx_packets = k.rx_pkts;
                s.rx_bytes = k.rx_bytes;
                s.reordered = k.reordered;
                s.lost = k.seq_end.saturating_sub(k.rx_pkts);
                if k.seq_end > 0 {
                    s.loss_ratio = s.lost as f64 / k.seq_end as f64;
                }
                if k.rx_pkts > 0 {
                    s.delay_min_ms = k.delay_min_ns as f64 / 1e6;
                    s.delay_max_ms = k.delay_max_ns as f64 / 1e6;
                    s.delay_mean_ms = k.delay_sum_ns as f64 / k.rx_pkts as f64 / 1e6;
                }
                if let (Some(a), Some(b)) = (k.first_rx, k.last_rx) {
                    // rate over the interval spanned by arrivals: (n-1) gaps carry n-1 packets
                    let span = (b - a).as_secs_f64();
                    if span > 0.0 && k.rx_pkts > 1 {
                        let frac = (k.rx_pkts - 1) as f64 / k.rx_pkts as f64;
                        s.goodput_bps = k.rx_bytes as f64 * 8.0 * frac / span;
                        s.wire_rate_bps = k.rx_wire_bytes as f64 * 8.0 * frac / span;
                    }
                }
            }
            AppKind::TcpBulk(b) => {
                s.kind = if b.exchanges > 0 { "tcp-file" } else { "tcp-bulk" };
                s.proto = "tcp";
                client_summary(&mut s, &b.state);
            }
            AppKind::TcpRr(r) => {
                s.kind = "tcp-rr";
                s.proto = "tcp";
                client_summary(&mut s, &r.state);
                s.rx_packets = r.latencies.len() as u64;
                if !r.latencies.is_empty() {
                    let n = r.latencies.len() as f64;
                    s.delay_min_ms = *r.latencies.iter().min().unwrap_or(&0) as f64 / 1e6;
                    s.delay_max_ms = *r.latencies.iter().max().unwrap_or(&0) as f64 / 1e6;
                    s.delay_mean_ms = r.latencies.iter().sum::<u64>() as f64 / n / 1e6;
                }
            }
            AppKind::TcpThin(t) => {
                s.kind = "tcp-thin";
                s.proto = "tcp";
                client_summary(&mut s, &t.state);
                s.tx_packets = t.writes;
                s.lost = t.blocked;
            }
            AppKind::TcpServer(v) => {
                s.kind = if v.echo { "tcp-echo" } else { "tcp-sink" };
                // the transports the accepted streams ran over (a shim listener takes both)
                let tcp = v.conns.iter().any(|c| c.transport != "sctp");
                let sctp = v.conns.iter().any(|c| c.transport == "sctp");
                s.proto = if sctp && tcp { "tcp+sctp" } else if sctp { "sctp" } else { "tcp" };
                s.conns = v.conns.len() as u64;
                s.rx_bytes = v.rx_bytes();
                s.tx_bytes = v.conns.iter().map(|c| c.tx_bytes).sum();
                s.retrans = v.conns.iter().filter_map(|c| c.last_info.map(|i| i.total_retrans as u64)).sum::<u64>()
                    + v.conns.iter().filter_map(|c| c.last_sctp.map(|x| x.retransmits)).sum::<u64>();
                let first = v.conns.iter().filter_map(|c| c.first_rx).min();
                let last = v.conns.iter().filter_map(|c| c.last_rx).max();
                s.goodput_bps = span_rate(s.rx_bytes, first, last);
                if let Some(e) = v.error {
                    s.error = e.to_string();
                }
            }
            AppKind::SctpBulk(b) => {
                s.kind = "sctp-bulk";
                s.proto = "sctp";
                s.tx_bytes = b.st.written;
                s.tx_packets = b.st.msgs;
                s.rx_bytes = b.st.read;
                s.conns = b.st.t_connected.is_some() as u64;
                s.state = format!("{:?}", b.st.phase).to_lowercase();
                s.error = b.st.error.clone().unwrap_or_default();
                if let Some(i) = &b.st.last_info {
                    s.retrans = i.stats.retransmits;
                }
                if let (Some(a), Some(d)) = (b.st.t_start, b.st.t_done) {
                    s.transfer_time_s = (d - a).as_secs_f64();
                }
            }
            AppKind::SctpServer(v) => {
                s.kind = if v.echo { "sctp-echo" } else { "sctp-sink" };
                s.proto = "sctp";
                s.conns = v.conns.len() as u64;
                s.rx_bytes = v.rx_bytes();
                s.rx_packets = v.conns.iter().map(|c| c.rx_msgs).sum();
                s.tx_bytes = v.conns.iter().map(|c| c.tx_bytes).sum();
                let first = v.conns.iter().filter_map(|c| c.first_rx).min();
                let last = v.conns.iter().filter_map(|c| c.last_rx).max();
                s.goodput_bps = span_rate(s.rx_bytes, first, last);
                s.error = v.error.clone().unwrap_or_default();
            }
        }
        s
    }

    /// Cumulative bytes received (sinks) or sent (sources), for time series.
    pub fn counter_bytes(&self) -> (u64, u64) {
        match &self.kind {
            AppKind::UdpCbr(c) => (c.sent_bytes, 0),
            AppKind::UdpSink(k) => (0, k.rx_bytes),
            AppKind::TcpBulk(b) => (b.state.written, b.state.read),
            AppKind::TcpRr(r) => (r.state.written, r.state.read),
            AppKind::TcpThin(t) => (t.state.written, t.state.read),
            AppKind::TcpServer(v) => (v.conns.iter().map(|c| c.tx_bytes).sum(), v.rx_bytes()),
            AppKind::SctpBulk(b) => (b.st.written, b.st.read),
            AppKind::SctpServer(v) => (v.conns.iter().map(|c| c.tx_bytes).sum(), v.rx_bytes()),
        }
    }

    /// The client destination the routing table must resolve (source address selection).
    pub fn dst_addr(&self) -> Option<Ipv4Addr> {
        match &self.kind {
            AppKind::TcpBulk(b) => Some(*b.dst.ip()),
            AppKind::TcpRr(r) => Some(*r.dst.ip()),
            AppKind::TcpThin(t) => Some(*t.dst.ip()),
            AppKind::SctpBulk(b) => b.dst.first().copied(),
            _ => None,
        }
    }

    /// When the app first needs to run (servers listen at time zero).
    pub fn start_time(&self) -> Option<Instant> {
        match &self.kind {
            AppKind::UdpCbr(c) => Some(c.start),
            AppKind::UdpSink(_) => None,
            AppKind::TcpBulk(b) => Some(b.start),
            AppKind::TcpRr(r) => Some(r.start),
            AppKind::TcpThin(t) => Some(t.start),
            AppKind::SctpBulk(b) => Some(b.start),
            AppKind::TcpServer(_) | AppKind::SctpServer(_) => Some(Instant::ZERO),
        }
    }

    /// Calls `f` for each live TCP socket of this app (for time series).
    pub fn tcp_sockets(&self, f: &mut dyn FnMut(wirelab_tcp::SocketId)) {
        match &self.kind {
            AppKind::TcpBulk(b) => b.state.sock.into_iter().for_each(f),
            AppKind::TcpRr(r) => r.state.sock.into_iter().for_each(f),
            AppKind::TcpThin(t) => t.state.sock.into_iter().for_each(f),
            AppKind::TcpServer(v) => v.conns.iter().filter(|c| !c.closed).for_each(|c| f(c.sock)),
            _ => {}
        }
    }
    /// Calls `f` for each live SCTP association of this app.
    pub fn sctp_sockets(&self, f: &mut dyn FnMut(wirelab_sctp::SocketId)) {
        match &self.kind {
            AppKind::SctpBulk(b) => b.st.sock.into_iter().for_each(f),
            AppKind::SctpServer(v) => v.conns.iter().filter(|c| !c.closed).for_each(|c| f(c.sock)),
            _ => {}
        }
    }

    /// Takes the final `tcp_info` / association info of sockets still open at the end of
    /// a run, so per-flow totals (retransmissions, segments) cover running flows too.
    pub fn refresh_final_info(&mut self, st: &crate::stack::HostStack) {
        match &mut self.kind {
            AppKind::TcpBulk(b) => {
                if let Some(i) = b.state.sock.and_then(|s| st.s_info(s)) {
                    b.state.last_info = Some(i);
                }
                if let Some(x) = b.state.sock.and_then(|s| st.s_sctp_stats(s)) {
                    b.state.last_sctp = Some(x);
                }
            }
            AppKind::TcpRr(r) => {
                if let Some(i) = r.state.sock.and_then(|s| st.s_info(s)) {
                    r.state.last_info = Some(i);
                }
                if let Some(x) = r.state.sock.and_then(|s| st.s_sctp_stats(s)) {
                    r.state.last_sctp = Some(x);
                }
            }
            AppKind::TcpThin(t) => {
                if let Some(i) = t.state.sock.and_then(|s| st.s_info(s)) {
                    t.state.last_info = Some(i);
                }
                if let Some(x) = t.state.sock.and_then(|s| st.s_sctp_stats(s)) {
                    t.state.last_sctp = Some(x);
                }
            }
            AppKind::TcpServer(v) => {
                for c in v.conns.iter_mut().filter(|c| !c.closed) {
                    if let Some(i) = st.s_info(c.sock) {
                        c.last_info = Some(i);
                    }
                    if let Some(x) = st.s_sctp_stats(c.sock) {
                        c.last_sctp = Some(x);
                    }
                }
            }
            AppKind::SctpBulk(b) => {
                if let Some(i) = b.st.sock.and_then(|s| st.sctp().info(s)) {
                    b.st.last_info = Some(i);
                }
            }
            AppKind::SctpServer(v) => {
                for c in v.conns.iter_mut().filter(|c| !c.closed) {
                    if let Some(i) = st.sctp().info(c.sock) {
                        c.last_info = Some(i);
                    }
                }
            }
            AppKind::UdpCbr(_) | AppKind::UdpSink(_) => {}
        }
    }

    /// True for apps that use the host's TCP/SCTP stack.
    pub fn uses_stack(&self) -> bool {
        !matches!(self.kind, AppKind::UdpCbr(_) | AppKind::UdpSink(_))
    }
}

fn span_rate(bytes: u64, first: Option<Instant>, last: Option<Instant>) -> f64 {
    match (first, last) {
        (Some(a), Some(b)) if b > a => bytes as f64 * 8.0 / (b - a).as_secs_f64(),
        _ => 0.0,
    }
}

fn client_summary(s: &mut FlowSummary, st: &tcp::ClientState) {
    if !st.transport.is_empty() {
        s.proto = st.transport;
    }
    s.tx_bytes = st.written;
    s.rx_bytes = st.read;
    s.conns = st.t_connected.is_some() as u64;
    s.state = format!("{:?}", st.phase).to_lowercase();
    s.error = st.error.map(|e| e.to_string()).unwrap_or_default();
    if let Some(i) = &st.last_info {
        s.retrans = i.total_retrans as u64;
        s.tx_packets = i.segs_out;
    } else if let Some(x) = &st.last_sctp {
        // carried over SCTP by the shim: DATA chunks (first transmissions) and retransmissions
        s.retrans = x.retransmits;
        s.tx_packets = x.data_chunks_sent;
    }
    if let (Some(a), Some(d)) = (st.t_start, st.t_done) {
        s.transfer_time_s = (d - a).as_secs_f64();
    }
    // sender-side goodput: bytes written (all ACKed once done) over data start → done
    if let (Some(a), Some(d)) = (st.t_data, st.t_done) {
        if d > a {
            s.goodput_bps = st.written as f64 * 8.0 / (d - a).as_secs_f64();
        }
    }
}

/// Writes a CBR datagram's measurement header into `payload`.
pub fn write_probe_header(payload: &mut [u8], seq: u64, sent: Instant) {
    if payload.len() >= 16 {
        payload[0..8].copy_from_slice(&seq.to_be_bytes());
        payload[8..16].copy_from_slice(&sent.as_nanos().to_be_bytes());
    }
}

/// Reads `(seq, send time)` from a CBR datagram's payload.
pub fn read_probe_header(payload: &[u8]) -> Option<(u64, Instant)> {
    if payload.len() < 16 {
        return None;
    }
    let seq = u64::from_be_bytes(payload[0..8].try_into().ok()?);
    let t = u64::from_be_bytes(payload[8..16].try_into().ok()?);
    Some((seq, Instant::from_nanos(t)))
}

impl UdpSink {
    /// Accounts one datagram.
    pub fn on_datagram(&mut self, now: Instant, payload: &[u8], wire_len: usize) {
        self.rx_pkts += 1;
        self.rx_bytes += payload.len() as u64;
        self.rx_wire_bytes += wire_len as u64;
        self.first_rx.get_or_insert(now);
        self.last_rx = Some(now);
        if let Some((seq, sent)) = read_probe_header(payload) {
            let d = now.saturating_since(sent).as_nanos();
            self.delay_sum_ns += d as u128;
            if self.rx_pkts == 1 || d < self.delay_min_ns {
                self.delay_min_ns = d;
            }
            self.delay_max_ns = self.delay_max_ns.max(d);
            if seq < self.seq_end {
                self.reordered += 1;
            } else {
                self.seq_end = seq + 1;
            }
        }
    }
}

/// The address a node-name destination resolves to is chosen by the builder.
pub fn unspecified() -> Ipv4Addr {
    Ipv4Addr::UNSPECIFIED
}
