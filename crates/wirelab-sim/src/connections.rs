//! One row per TCP connection (`connections.csv`), in the spirit of ns-3's FlowMonitor:
//! the 5-tuple, both ends (client and server app), bytes each way, receiver goodput,
//! retransmissions of each end, RTT statistics and the flow completion time.
//!
//! The two ends are paired by their addresses: a client's `(local, remote)` is the server
//! connection's `(remote, local)`. RTT statistics are the sender's: `rtt_min_ms` is
//! `tcpi_min_rtt` at the end, `srtt_mean_ms`/`srtt_max_ms` are over the `srtt` samples of
//! `tcp_timeseries` (every `measure.sample_interval` while the socket was open), so a
//! connection shorter than one interval has no samples and NaN there.
use crate::record::TcpSample;
use crate::sim::Sim;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::SocketAddrV4;
use wirelab_apps::tcp::ClientState;
use wirelab_apps::AppKind;

/// One TCP connection, both ends.
#[derive(Clone, Debug, Serialize)]
pub struct ConnectionSummary {
    /// Transport (`tcp`, or `sctp` when a shim carried it).
    pub proto: &'static str,
    /// Client (connecting) address.
    pub src: String,
    /// Client port.
    pub sport: u16,
    /// Server address.
    pub dst: String,
    /// Server port.
    pub dport: u16,
    /// Client app (empty if the connection has no client app in this run).
    pub client: String,
    /// Client node.
    pub client_node: String,
    /// Server app (empty if none accepted it).
    pub server: String,
    /// Server node.
    pub server_node: String,
    /// Client's congestion control (`tcpi` `TCP_CONGESTION` name).
    pub cc: String,
    /// `connect()` time (s).
    pub start_s: f64,
    /// Handshake done (s); NaN if never.
    pub established_s: f64,
    /// Bytes the client wrote.
    pub bytes_sent: u64,
    /// Of those, bytes the server acknowledged.
    pub bytes_acked: u64,
    /// Bytes the server app read.
    pub bytes_received: u64,
    /// Bytes the server wrote back (echo, request/response, file-transfer exchanges).
    pub bytes_returned: u64,
    /// Receiver goodput: bytes the server read over first to last read (bit/s).
    pub goodput_bps: f64,
    /// Segments the client sent.
    pub client_segs_out: u64,
    /// Segments the client retransmitted (`total_retrans`).
    pub client_retrans: u64,
    /// Segments the server retransmitted.
    pub server_retrans: u64,
    /// Retransmitted share of the client's segments.
    pub retrans_ratio: f64,
    /// Client's minimum RTT (`tcpi_min_rtt`, ms); NaN before any sample.
    pub rtt_min_ms: f64,
    /// Mean of the client's sampled smoothed RTT (ms).
    pub srtt_mean_ms: f64,
    /// Largest sampled smoothed RTT (ms).
    pub srtt_max_ms: f64,
    /// Flow completion time: `connect()` to the server's FIN after all data (s); NaN if
    /// the transfer did not finish (a bulk flow running until the end, a thin stream).
    pub fct_s: f64,
    /// Client phase at the end (`done`, `sending`, `failed`, …).
    pub state: String,
}

/// A server's end of a connection, found by its `(local, peer)`.
struct ServerEnd<'a> {
    app: &'a str,
    node: &'a str,
    conn: &'a wirelab_apps::tcp::ServerConn,
}

impl Sim {
    /// One row per TCP connection, clients first in app order, then connections a server
    /// accepted from no client app of this run.
    pub(crate) fn connection_rows(&self, samples: &[TcpSample]) -> Vec<ConnectionSummary> {
        let mut servers: BTreeMap<(SocketAddrV4, SocketAddrV4), ServerEnd> = BTreeMap::new();
        for a in &self.apps {
            if let AppKind::TcpServer(v) = &a.kind {
                for c in &v.conns {
                    if let (Some(l), Some(p)) = (c.local, c.peer) {
                        servers.insert((l, p), ServerEnd { app: &a.name, node: &self.nodes[a.node as usize].name, conn: c });
                    }
                }
            }
        }
        let srtt = srtt_stats(samples);
        let mut rows = Vec::new();
        let mut paired = std::collections::BTreeSet::new();
        for a in &self.apps {
            let st: &ClientState = match &a.kind {
                AppKind::TcpBulk(b) => &b.state,
                AppKind::TcpRr(r) => &r.state,
                AppKind::TcpThin(t) => &t.state,
                _ => continue,
            };
            let Some((local, remote)) = st.addrs else { continue };
            let node = &self.nodes[a.node as usize].name;
            let server = servers.get(&(remote, local));
            if server.is_some() {
                paired.insert((remote, local));
            }
            let info = st.last_info.as_ref();
            let (mean, max) = st.sock.and_then(|s| srtt.get(&(node.as_str(), s.0))).copied().unwrap_or((f64::NAN, f64::NAN));
            let segs = info.map_or(0, |i| i.segs_out);
            let retrans = info.map_or(0, |i| i.total_retrans as u64);
            let mut row = ConnectionSummary {
                proto: if st.transport.is_empty() { "tcp" } else { st.transport },
                src: local.ip().to_string(),
                sport: local.port(),
                dst: remote.ip().to_string(),
                dport: remote.port(),
                client: a.name.clone(),
                client_node: node.clone(),
                server: String::new(),
                server_node: String::new(),
                cc: info.map_or(String::new(), |i| i.congestion.to_string()),
                start_s: st.t_start.map_or(f64::NAN, |t| t.as_secs_f64()),
                established_s: st.t_connected.map_or(f64::NAN, |t| t.as_secs_f64()),
                bytes_sent: st.written,
                bytes_acked: info.map_or(0, |i| i.bytes_acked),
                bytes_received: 0,
                bytes_returned: st.read,
                goodput_bps: 0.0,
                client_segs_out: segs,
                client_retrans: retrans,
                server_retrans: 0,
                retrans_ratio: if segs > 0 { retrans as f64 / segs as f64 } else { 0.0 },
                rtt_min_ms: info.filter(|i| i.min_rtt_us != u32::MAX).map_or(f64::NAN, |i| i.min_rtt_us as f64 / 1000.0),
                srtt_mean_ms: mean,
                srtt_max_ms: max,
                fct_s: match (st.t_start, st.t_done) {
                    (Some(a), Some(d)) => (d - a).as_secs_f64(),
                    _ => f64::NAN,
                },
                state: format!("{:?}", st.phase).to_lowercase(),
            };
            if let Some(s) = server {
                fill_server(&mut row, s);
            }
            rows.push(row);
        }
        for ((l, p), s) in &servers {
            if paired.contains(&(*l, *p)) {
                continue;
            }
            let mut row = ConnectionSummary {
                proto: if s.conn.transport.is_empty() { "tcp" } else { s.conn.transport },
                src: p.ip().to_string(),
                sport: p.port(),
                dst: l.ip().to_string(),
                dport: l.port(),
                client: String::new(),
                client_node: String::new(),
                server: String::new(),
                server_node: String::new(),
                cc: String::new(),
                start_s: s.conn.accepted.as_secs_f64(),
                established_s: s.conn.accepted.as_secs_f64(),
                bytes_sent: 0,
                bytes_acked: 0,
                bytes_received: 0,
                bytes_returned: 0,
                goodput_bps: 0.0,
                client_segs_out: 0,
                client_retrans: 0,
                server_retrans: 0,
                retrans_ratio: 0.0,
                rtt_min_ms: f64::NAN,
                srtt_mean_ms: f64::NAN,
                srtt_max_ms: f64::NAN,
                fct_s: f64::NAN,
                state: String::new(),
            };
            fill_server(&mut row, s);
            rows.push(row);
        }
        rows
    }
}

fn fill_server(row: &mut ConnectionSummary, s: &ServerEnd) {
    row.server = s.app.to_string();
    row.server_node = s.node.to_string();
    row.bytes_received = s.conn.rx_bytes;
    row.bytes_returned = s.conn.tx_bytes;
    row.server_retrans = s.conn.last_info.map_or(0, |i| i.total_retrans as u64);
    row.goodput_bps = match (s.conn.first_rx, s.conn.last_rx) {
        (Some(a), Some(b)) if b > a => s.conn.rx_bytes as f64 * 8.0 / (b - a).as_secs_f64(),
        _ => 0.0,
    };
}

/// `(node, socket) → (mean, max)` of the positive `srtt_ms` samples.
fn srtt_stats(samples: &[TcpSample]) -> BTreeMap<(&str, u32), (f64, f64)> {
    let mut acc: BTreeMap<(&str, u32), (f64, u64, f64)> = BTreeMap::new();
    for s in samples.iter().filter(|s| s.srtt_ms > 0.0) {
        let e = acc.entry((s.node.as_str(), s.sock)).or_insert((0.0, 0, 0.0));
        e.0 += s.srtt_ms;
        e.1 += 1;
        e.2 = e.2.max(s.srtt_ms);
    }
    acc.into_iter().map(|(k, (sum, n, max))| (k, (sum / n as f64, max))).collect()
}
