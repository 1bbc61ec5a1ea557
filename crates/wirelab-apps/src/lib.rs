//! Applications: traffic sources and sinks that drive host sockets.
//!
//! * UDP ([`udp`]): [`UdpCbr`] and [`UdpSink`].
//! * TCP ([`tcp`]): bulk sender / scp-like file transfer, sink, echo, request/response,
//!   thin-stream source.
//! * SCTP ([`sctp`]): iperf3-like client and a sink/echo server.
//!
//! Each application is a config (what the scenario says, [`AppConfig`]) and a private run
//! state. Stream and SCTP applications talk to their host only through the socket calls
//! of [`HostSockets`] and are woken by [`AppInput`]s; they never see the driver, so the
//! simulator and a live driver run the same applications.
#![warn(missing_docs)]

use std::net::Ipv4Addr;
use wirelab_core::Instant;

pub mod sctp;
pub mod socket;
pub mod summary;
pub mod tcp;
pub mod udp;
pub use sctp::{SctpBulk, SctpBulkConfig, SctpServer, SctpServerConfig};
pub use socket::{AppCtx, AppInput, HostSockets};
pub use summary::FlowSummary;
pub use tcp::{ClientPhase, Itt, TcpBulk, TcpBulkConfig, TcpRr, TcpRrConfig, TcpServer, TcpServerConfig, TcpThin, TcpThinConfig};
pub use udp::{read_probe_header, write_probe_header, CbrDatagram, UdpCbr, UdpCbrConfig, UdpSink, UdpSinkConfig, UDP_IP_OVERHEAD};

/// What the scenario configures for one application.
#[derive(Clone, Debug)]
pub enum AppConfig {
    /// CBR UDP source.
    UdpCbr(UdpCbrConfig),
    /// UDP sink.
    UdpSink(UdpSinkConfig),
    /// TCP bulk sender / file transfer.
    TcpBulk(TcpBulkConfig),
    /// TCP sink or echo server.
    TcpServer(TcpServerConfig),
    /// TCP request/response client.
    TcpRr(TcpRrConfig),
    /// Thin-stream TCP source.
    TcpThin(TcpThinConfig),
    /// SCTP bulk client.
    SctpBulk(SctpBulkConfig),
    /// SCTP sink or echo server.
    SctpServer(SctpServerConfig),
}

/// An application instance: its config and run state.
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

impl App {
    /// A fresh application `name` on node `node`; `seed` is the run seed (apps that draw
    /// randomness get a stream of their own, keyed by their name).
    pub fn new(name: String, node: u32, cfg: AppConfig, seed: u64) -> App {
        let kind = match cfg {
            AppConfig::UdpCbr(c) => AppKind::UdpCbr(UdpCbr::new(c)),
            AppConfig::UdpSink(c) => AppKind::UdpSink(UdpSink::new(c)),
            AppConfig::TcpBulk(c) => AppKind::TcpBulk(TcpBulk::new(c)),
            AppConfig::TcpServer(c) => AppKind::TcpServer(TcpServer::new(c)),
            AppConfig::TcpRr(c) => AppKind::TcpRr(TcpRr::new(c)),
            AppConfig::TcpThin(c) => AppKind::TcpThin(TcpThin::new(c, wirelab_core::Rng::stream(seed, &format!("app/{name}/itt")))),
            AppConfig::SctpBulk(c) => AppKind::SctpBulk(SctpBulk::new(c)),
            AppConfig::SctpServer(c) => AppKind::SctpServer(SctpServer::new(c)),
        };
        App { name, node, kind }
    }

    /// Runs one input through a socket-using app; returns the timer to arm next. UDP apps
    /// are driven by the driver directly ([`UdpCbr::on_timer`], [`UdpSink::on_datagram`]).
    pub fn on_input(&mut self, ctx: &mut AppCtx, input: AppInput) -> Option<Instant> {
        match &mut self.kind {
            AppKind::TcpBulk(b) => b.on_input(ctx, input),
            AppKind::TcpServer(v) => v.on_input(ctx, input),
            AppKind::TcpRr(r) => r.on_input(ctx, input),
            AppKind::TcpThin(t) => t.on_input(ctx, input),
            AppKind::SctpBulk(b) => b.on_input(ctx, input),
            AppKind::SctpServer(v) => v.on_input(ctx, input),
            AppKind::UdpCbr(_) | AppKind::UdpSink(_) => None,
        }
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
            AppKind::TcpBulk(b) => Some(*b.cfg.dst.ip()),
            AppKind::TcpRr(r) => Some(*r.cfg.dst.ip()),
            AppKind::TcpThin(t) => Some(*t.cfg.dst.ip()),
            AppKind::SctpBulk(b) => b.cfg.dst.first().copied(),
            _ => None,
        }
    }

    /// When the app first needs to run (servers listen at time zero).
    pub fn start_time(&self) -> Option<Instant> {
        match &self.kind {
            AppKind::UdpCbr(c) => Some(c.cfg.start),
            AppKind::UdpSink(_) => None,
            AppKind::TcpBulk(b) => Some(b.cfg.start),
            AppKind::TcpRr(r) => Some(r.cfg.start),
            AppKind::TcpThin(t) => Some(t.cfg.start),
            AppKind::SctpBulk(b) => Some(b.cfg.start),
            AppKind::TcpServer(_) | AppKind::SctpServer(_) => Some(Instant::ZERO),
        }
    }

    /// Records a socket error of a client (a failed scheduled `setsockopt()`); servers
    /// keep none.
    pub fn note_error(&mut self, e: wirelab_tcp::SockError) {
        match &mut self.kind {
            AppKind::TcpBulk(tcp::TcpBulk { state: c, .. }) | AppKind::TcpRr(tcp::TcpRr { state: c, .. }) | AppKind::TcpThin(tcp::TcpThin { state: c, .. }) => c.error = Some(e),
            _ => {}
        }
    }

    /// A `tcp-rr` client's completed transactions: request start times and latencies (ns).
    pub fn rr_latencies(&self) -> Option<(&[wirelab_core::Instant], &[u64])> {
        match &self.kind {
            AppKind::TcpRr(r) => Some((&r.latency_starts, &r.latencies)),
            _ => None,
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
    pub fn refresh_final_info(&mut self, st: &dyn HostSockets) {
        match &mut self.kind {
            AppKind::TcpBulk(tcp::TcpBulk { state: c, .. }) | AppKind::TcpRr(tcp::TcpRr { state: c, .. }) | AppKind::TcpThin(tcp::TcpThin { state: c, .. }) => {
                if let Some(s) = c.sock {
                    tcp::keep_final(st, s, &mut c.last_info, &mut c.last_sctp);
                }
            }
            AppKind::TcpServer(v) => {
                for c in v.conns.iter_mut().filter(|c| !c.closed) {
                    tcp::keep_final(st, c.sock, &mut c.last_info, &mut c.last_sctp);
                }
            }
            AppKind::SctpBulk(b) => {
                if let Some(i) = b.st.sock.and_then(|s| st.sctp_info(s)) {
                    b.st.last_info = Some(i);
                }
            }
            AppKind::SctpServer(v) => {
                for c in v.conns.iter_mut().filter(|c| !c.closed) {
                    if let Some(i) = st.sctp_info(c.sock) {
                        c.last_info = Some(i);
                    }
                }
            }
            AppKind::UdpCbr(_) | AppKind::UdpSink(_) => {}
        }
    }

    /// One line for `wirelab validate --show`: kind, where it sends or listens, and the
    /// socket options it sets (they act on this app's own socket only).
    pub fn describe(&self) -> String {
        fn opts<T: std::fmt::Debug>(o: &[T]) -> String {
            if o.is_empty() {
                String::new()
            } else {
                format!(", socket options {o:?}")
            }
        }
        match &self.kind {
            AppKind::UdpCbr(c) => format!("udp-cbr to {} from port {}", c.cfg.dst, c.cfg.src_port),
            AppKind::UdpSink(k) => format!("udp-sink on port {}", k.cfg.port),
            AppKind::TcpBulk(b) => format!("{} to {}{}", if b.cfg.exchanges > 0 { "tcp-file" } else { "tcp-bulk" }, b.cfg.dst, opts(&b.cfg.opts)),
            AppKind::TcpServer(v) => format!("{} on port {}{}", if v.cfg.echo { "tcp-echo" } else { "tcp-sink" }, v.cfg.port, opts(&v.cfg.opts)),
            AppKind::TcpRr(r) => format!("tcp-rr to {}{}", r.cfg.dst, opts(&r.cfg.opts)),
            AppKind::TcpThin(t) => format!("tcp-thin to {}{}", t.cfg.dst, opts(&t.cfg.opts)),
            AppKind::SctpBulk(b) => format!("sctp-bulk to {:?} port {}{}", b.cfg.dst, b.cfg.port, opts(&b.cfg.opts)),
            AppKind::SctpServer(v) => format!("{} on port {}{}", if v.cfg.echo { "sctp-echo" } else { "sctp-sink" }, v.cfg.port, opts(&v.cfg.opts)),
        }
    }

    /// True for apps that use the host's TCP/SCTP stack.
    pub fn uses_stack(&self) -> bool {
        !matches!(self.kind, AppKind::UdpCbr(_) | AppKind::UdpSink(_))
    }
}


