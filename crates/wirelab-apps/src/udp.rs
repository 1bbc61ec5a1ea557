//! UDP applications: a constant-bit-rate source and a measuring sink.
//!
//! They write real datagrams: the first 16 payload bytes carry a sequence number and the
//! send time, so the sink measures one-way delay, loss and reordering from the bytes
//! alone, as a real measurement tool (e.g. iperf's UDP mode) does. The driver builds and
//! delivers the datagrams (UDP has no engine); these types decide what and when.
use std::net::SocketAddrV4;
use wirelab_core::{Duration, Instant};

/// Bytes of IPv4 + UDP header, counted by a UDP source's `rate`.
pub const UDP_IP_OVERHEAD: u32 = 28;

/// A constant-bit-rate UDP source as the scenario configures it.
#[derive(Clone, Debug)]
pub struct UdpCbrConfig {
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
}

impl UdpCbrConfig {
    /// Interval between datagrams of `payload` bytes for a rate of `rate_bps` counted
    /// over IP bytes.
    pub fn interval_for(payload: u32, rate_bps: u64) -> Duration {
        Duration::transmit_time((payload + UDP_IP_OVERHEAD) as u64, rate_bps)
    }
}

/// A constant-bit-rate UDP source.
#[derive(Clone, Debug)]
pub struct UdpCbr {
    /// What the scenario configured.
    pub cfg: UdpCbrConfig,
    /// Datagrams sent so far.
    pub sent_pkts: u64,
    /// Payload bytes sent so far.
    pub sent_bytes: u64,
    /// Datagrams that found no route.
    pub unroutable: u64,
}

/// One datagram a CBR source wants sent now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CbrDatagram {
    /// Destination.
    pub dst: SocketAddrV4,
    /// Source port.
    pub src_port: u16,
    /// Payload bytes.
    pub payload: usize,
    /// Sequence number written into the payload.
    pub seq: u64,
    /// When the source's timer fires next.
    pub next: Instant,
}

impl UdpCbr {
    /// A source that has sent nothing yet.
    pub fn new(cfg: UdpCbrConfig) -> Self {
        UdpCbr { cfg, sent_pkts: 0, sent_bytes: 0, unroutable: 0 }
    }
    /// The source's timer fired: the datagram to send, or `None` once it is done.
    pub fn on_timer(&mut self, now: Instant) -> Option<CbrDatagram> {
        let c = &self.cfg;
        if now >= c.stop || c.count.is_some_and(|n| self.sent_pkts >= n) {
            return None;
        }
        let seq = self.sent_pkts;
        self.sent_pkts += 1;
        self.sent_bytes += c.payload as u64;
        Some(CbrDatagram { dst: c.dst, src_port: c.src_port, payload: c.payload as usize, seq, next: now + c.interval })
    }
}

/// A UDP sink as the scenario configures it.
#[derive(Clone, Copy, Debug, Default)]
pub struct UdpSinkConfig {
    /// Local port.
    pub port: u16,
}

/// A UDP sink that measures what arrives.
#[derive(Clone, Debug, Default)]
pub struct UdpSink {
    /// What the scenario configured.
    pub cfg: UdpSinkConfig,
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
    /// First arrival.
    pub first_rx: Option<Instant>,
    /// Last arrival.
    pub last_rx: Option<Instant>,
}

impl UdpSink {
    /// A sink that has received nothing yet.
    pub fn new(cfg: UdpSinkConfig) -> Self {
        UdpSink { cfg, ..Default::default() }
    }

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
