//! Per-application totals for `summary.json`: one [`FlowSummary`] row per app.
use crate::tcp::ClientState;
use crate::{App, AppKind};
use serde::Serialize;
use wirelab_core::Instant;

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
    /// SHA-256 (hex) of the data written (clients) or of each connection's bytes read
    /// (servers, comma-separated in accept order), for apps with `sha256 = true`.
    pub sha256: String,
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
            sha256: String::new(),
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
                if let Some(t) = k.killed_at {
                    // receiver-side UDP rate policy (seed 003 §5.2.2): KILL closed the socket
                    s.state = "killed".into();
                    s.error = format!("closed by the UDP rate policy (KILL) at {:.3} s, as by an ICMP port unreachable", t.as_secs_f64());
                }
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
                s.kind = if b.cfg.exchanges > 0 { "tcp-file" } else { "tcp-bulk" };
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
                s.kind = if v.cfg.echo { "tcp-echo" } else { "tcp-sink" };
                // the transports the accepted streams ran over (a shim listener takes both)
                let tcp = v.conns.iter().any(|c| c.transport != "sctp");
                let sctp = v.conns.iter().any(|c| c.transport == "sctp");
                s.proto = if sctp && tcp { "tcp+sctp" } else if sctp { "sctp" } else { "tcp" };
                s.conns = v.conns.len() as u64;
                s.rx_bytes = v.rx_bytes();
                // segments received (`tcpi_segs_in`: data, and the handshake's and FIN's)
                s.rx_packets = v.conns.iter().filter_map(|c| c.last_info.map(|i| i.segs_in)).sum();
                s.tx_packets = v.conns.iter().filter_map(|c| c.last_info.map(|i| i.segs_out)).sum();
                s.tx_bytes = v.conns.iter().map(|c| c.tx_bytes).sum();
                s.retrans = v.conns.iter().filter_map(|c| c.last_info.map(|i| i.total_retrans as u64)).sum::<u64>()
                    + v.conns.iter().filter_map(|c| c.last_sctp.map(|x| x.retransmits)).sum::<u64>();
                let first = v.conns.iter().filter_map(|c| c.first_rx).min();
                let last = v.conns.iter().filter_map(|c| c.last_rx).max();
                s.goodput_bps = span_rate(s.rx_bytes, first, last);
                s.sha256 = v.conns.iter().filter_map(|c| c.sha256.as_ref()).map(crate::tcp::sha256_hex).collect::<Vec<_>>().join(",");
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
                s.kind = if v.cfg.echo { "sctp-echo" } else { "sctp-sink" };
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

}

fn span_rate(bytes: u64, first: Option<Instant>, last: Option<Instant>) -> f64 {
    match (first, last) {
        (Some(a), Some(b)) if b > a => bytes as f64 * 8.0 / (b - a).as_secs_f64(),
        _ => 0.0,
    }
}

fn client_summary(s: &mut FlowSummary, st: &ClientState) {
    if !st.transport.is_empty() {
        s.proto = st.transport;
    }
    s.tx_bytes = st.written;
    s.rx_bytes = st.read;
    if let Some(h) = &st.sha256 {
        s.sha256 = crate::tcp::sha256_hex(h);
    }
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

