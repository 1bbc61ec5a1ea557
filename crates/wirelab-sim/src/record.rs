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

/// Collects everything a run records.
#[derive(Default)]
pub struct Recorder {
    pub(crate) captures: Vec<Box<dyn CaptureSink>>,
    pub(crate) probe: Vec<ProbeRecord>,
    pub(crate) flow_series: Vec<FlowSample>,
    pub(crate) queue_series: Vec<QueueSample>,
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
