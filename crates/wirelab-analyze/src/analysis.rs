//! The analysis proper: per-direction sequence tracking over decoded segments.
//!
//! A *flow* is one direction of data of a TCP connection, keyed by its 4-tuple as the
//! data sender sees it (`src:sport>dst:dport`). Every byte range is tracked from its
//! first transmission seen in the sender capture ("row"); later transmissions covering it
//! count as retransmissions of that row. ACKs of the reverse direction close rows:
//! cumulatively (`acked`) and, SACK-aware, by the first SACK block or cumulative ACK
//! covering the whole row (`sacked`). A receiver capture adds which transmissions never
//! arrived and when each row became in-order deliverable there.
//!
//! Sequence numbers are unwrapped to 64 bits relative to the ISN (the SYN's sequence
//! number, or one below the first sequence number seen when the handshake was not
//! captured), so relative numbers read as tshark's (data starts at 1).
use crate::capture::{CaptureStats, Loaded, Packet};
use crate::class::ClassRule;
use crate::decode::{flags, TcpSeg};
use crate::stats::{jain, Pctl};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::Ipv4Addr;
use wirelab_core::Duration;

/// A data direction: the sender's address and port, then the receiver's. Orders by
/// source address, source port, destination address, destination port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlowKey {
    /// Data sender address.
    pub src: Ipv4Addr,
    /// Data sender port.
    pub sport: u16,
    /// Data receiver address.
    pub dst: Ipv4Addr,
    /// Data receiver port.
    pub dport: u16,
}

impl FlowKey {
    fn of(s: &TcpSeg) -> FlowKey {
        FlowKey { src: s.src, sport: s.sport, dst: s.dst, dport: s.dport }
    }
    fn reversed(self) -> FlowKey {
        FlowKey { src: self.dst, sport: self.dport, dst: self.src, dport: self.sport }
    }
}

impl fmt::Display for FlowKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}>{}:{}", self.src, self.sport, self.dst, self.dport)
    }
}

impl Serialize for FlowKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Analysis settings.
#[derive(Clone, Debug)]
pub struct AnalyzeOptions {
    /// Width of the throughput/goodput/fairness intervals.
    pub interval: Duration,
    /// Flow classes, first match wins.
    pub classes: Vec<ClassRule>,
    /// Fail on the first undecodable frame instead of counting it.
    pub strict: bool,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions { interval: Duration::from_secs(1), classes: Vec::new(), strict: false }
    }
}

/// One byte range as first transmitted. Times are ns since the first TCP packet of the
/// sender capture (`Analysis::t0_ns`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SegmentRow {
    /// Index into [`Analysis::flows`].
    pub flow: usize,
    /// Relative sequence number of the first byte (negative when data below the first
    /// sequence number seen turns up later).
    pub seq: i64,
    /// Bytes.
    pub len: u32,
    /// First transmission seen.
    pub first_sent_ns: i64,
    /// Its frame number.
    pub first_frame: u32,
    /// Latest transmission covering (part of) the range.
    pub last_sent_ns: i64,
    /// Its frame number.
    pub last_frame: u32,
    /// Transmissions after the first that covered (part of) the range (the first
    /// counts even when the capture missed it, see `original_unseen`).
    pub retransmissions: u32,
    /// The capture missed the first transmission: `first_sent_ns` is the first one seen
    /// and the latency columns are empty.
    pub original_unseen: bool,
    /// First cumulative ACK covering the range.
    pub acked_ns: Option<i64>,
    /// Its frame number.
    pub acked_frame: Option<u32>,
    /// `acked_ns - first_sent_ns`.
    pub latency_ns: Option<i64>,
    /// First SACK block or cumulative ACK covering the range.
    pub sacked_ns: Option<i64>,
    /// `sacked_ns - first_sent_ns`.
    pub latency_sack_ns: Option<i64>,
    /// Transmissions covering the range that the receiver capture never saw.
    pub lost: Option<u32>,
    /// When the range became in-order deliverable in the receiver capture.
    pub delivered_ns: Option<i64>,
    /// `delivered_ns - first_sent_ns`: the application-layer delay.
    pub app_delay_ns: Option<i64>,
}

/// Per-flow totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowSummary {
    /// The data direction.
    pub flow: FlowKey,
    /// Class name (first matching `--class`), if any.
    pub class: Option<String>,
    /// Data-carrying segments sent (retransmissions included, keep-alives excluded).
    pub data_segments: u64,
    /// Of those, segments carrying bytes already sent before.
    pub retransmitted_segments: u64,
    /// `retransmitted_segments / data_segments`.
    pub est_loss: f64,
    /// Data segments the receiver capture never saw (with a receiver capture).
    pub lost_segments: Option<u64>,
    /// `lost_segments / data_segments`.
    pub true_loss: Option<f64>,
    /// Payload bytes sent, retransmissions included.
    pub tx_bytes: u64,
    /// Payload bytes of retransmitted segments.
    pub retx_bytes: u64,
    /// Distinct payload bytes cumulatively acknowledged.
    pub acked_bytes: u64,
    /// Bytes delivered in order at the receiver capture.
    pub delivered_bytes: Option<u64>,
    /// First data transmission, ns since `t0_ns`.
    pub start_ns: i64,
    /// From the first data transmission to the last packet of the flow (either way).
    pub duration_ns: i64,
    /// `tx_bytes · 8 / duration`.
    pub throughput_bps: f64,
    /// `acked_bytes · 8 / duration`.
    pub goodput_bps: f64,
    /// First transmission to first cumulative ACK, over acknowledged rows.
    pub ack_latency: Pctl,
    /// First transmission to first SACK or cumulative ACK.
    pub ack_latency_sack: Pctl,
    /// First transmission to in-order deliverability at the receiver.
    pub app_delay: Option<Pctl>,
    /// Rows never cumulatively acknowledged in the capture.
    pub unacked_segments: u64,
    /// Keep-alive probes (one byte below the ACKed edge) ignored.
    pub keepalives: u64,
    /// ACKs for data beyond anything sent (the capture missed packets).
    pub acked_unseen: u64,
    /// Rows whose first transmission the capture missed: data first seen below the
    /// highest sequence sent, not out of order (see docs/analyze.md). Counted as
    /// retransmissions; no latency is reported for them.
    pub original_unseen: u64,
    /// Segments below the highest sequence sent, seen for the first time, within the
    /// handshake RTT of the one that advanced it (tshark's out-of-order test); they are
    /// first transmissions reordered before the capture point, not retransmissions.
    pub out_of_order: u64,
}

/// One point of an empirical CDF.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CdfRow {
    /// Index into [`Analysis::flows`].
    pub flow: usize,
    /// `ack_latency`, `ack_latency_sack` or `app_delay`.
    pub metric: &'static str,
    /// Sample value.
    pub value_ns: i64,
    /// Fraction of samples at or below it.
    pub fraction: f64,
}

/// One retransmitted data segment (a transmission carrying bytes sent before).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RetxRow {
    /// Index into [`Analysis::flows`].
    pub flow: usize,
    /// Frame number in the sender capture.
    pub frame: u32,
    /// Time, ns since `t0_ns`.
    pub sent_ns: i64,
    /// Relative sequence number of its first byte.
    pub seq: i64,
    /// Payload bytes.
    pub len: u32,
}

/// Per-flow, per-interval volumes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IntervalRow {
    /// Index into [`Analysis::flows`].
    pub flow: usize,
    /// Interval start, ns since `t0_ns`.
    pub start_ns: i64,
    /// Payload bytes sent.
    pub tx_bytes: u64,
    /// Of which retransmitted.
    pub retx_bytes: u64,
    /// Bytes newly cumulatively acknowledged.
    pub acked_bytes: u64,
    /// Bytes that became in-order deliverable at the receiver.
    pub delivered_bytes: Option<u64>,
    /// `tx_bytes · 8 / interval`.
    pub throughput_bps: f64,
    /// `acked_bytes · 8 / interval`.
    pub goodput_bps: f64,
}

/// Jain's index over the flows active in one interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FairnessRow {
    /// Interval start, ns since `t0_ns`.
    pub start_ns: i64,
    /// Flows that sent or had data acknowledged in the interval.
    pub active_flows: u64,
    /// Jain over their goodput.
    pub jain_goodput: Option<f64>,
    /// Jain over their throughput.
    pub jain_throughput: Option<f64>,
}

/// Per-class totals.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassSummary {
    /// Class name.
    pub name: String,
    /// Flows in the class.
    pub flows: u64,
    /// Sum of the flows' goodput.
    pub goodput_sum_bps: f64,
    /// Mean goodput per flow.
    pub goodput_mean_bps: f64,
    /// Jain across the class's flows' goodput.
    pub jain_within: Option<f64>,
    /// ACK latency over all the class's rows.
    pub ack_latency: Pctl,
    /// Retransmitted / data segments over the class.
    pub est_loss: f64,
}

/// Everything the analyzer computes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Analysis {
    /// Timestamp (capture clock, ns) all times are relative to: the first TCP packet of
    /// the sender capture.
    pub t0_ns: u64,
    /// Interval width, ns.
    pub interval_ns: u64,
    /// Sender capture counts.
    pub sender_stats: CaptureStats,
    /// Receiver capture counts.
    pub receiver_stats: Option<CaptureStats>,
    /// Flows in [`FlowKey`] order.
    pub flows: Vec<FlowSummary>,
    /// Rows by flow, then sequence.
    pub segments: Vec<SegmentRow>,
    /// Retransmitted segments by flow, then frame.
    pub retransmissions: Vec<RetxRow>,
    /// Out-of-order segments (first transmissions reordered before the capture point)
    /// by flow, then frame.
    pub out_of_order: Vec<RetxRow>,
    /// Empirical CDFs by flow, metric, value.
    pub cdf: Vec<CdfRow>,
    /// Intervals by flow, then time (every interval from the flow's first to its last).
    pub intervals: Vec<IntervalRow>,
    /// Per-interval fairness across flows.
    pub fairness: Vec<FairnessRow>,
    /// Jain across all flows' goodput.
    pub jain_flows: Option<f64>,
    /// Classes in command-line order.
    pub classes: Vec<ClassSummary>,
    /// Jain across classes' mean per-flow goodput.
    pub jain_classes: Option<f64>,
    /// Capture problems (first few).
    pub warnings: Vec<String>,
}

/// Unwraps 32-bit sequence numbers to i64 relative to `base`, around the highest seen.
#[derive(Clone, Copy, Debug)]
struct Unwrap {
    base: u32,
    hi: Option<i64>,
}

impl Unwrap {
    fn new(base: u32) -> Self {
        Unwrap { base, hi: None }
    }
    fn rel(&mut self, x: u32) -> i64 {
        let v = match self.hi {
            None => x.wrapping_sub(self.base) as i32 as i64,
            Some(hi) => {
                let at_hi = self.base.wrapping_add(hi as u32);
                hi + x.wrapping_sub(at_hi) as i32 as i64
            }
        };
        self.hi = Some(self.hi.map_or(v, |h| h.max(v)));
        v
    }
}

#[derive(Clone, Debug)]
struct Row {
    seq: i64,
    end: i64,
    first_ts: u64,
    first_frame: u32,
    last_ts: u64,
    last_frame: u32,
    retx: u32,
    acked: Option<(u64, u32)>,
    sacked: Option<u64>,
    lost: u32,
    delivered: Option<u64>,
    original_unseen: bool,
}

impl Row {
    fn new(seq: i64, end: i64, ts: u64, frame: u32) -> Self {
        Row {
            seq,
            end,
            first_ts: ts,
            first_frame: frame,
            last_ts: ts,
            last_frame: frame,
            retx: 0,
            acked: None,
            sacked: None,
            lost: 0,
            delivered: None,
            original_unseen: false,
        }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Ivl {
    tx: u64,
    retx: u64,
    acked: u64,
    delivered: u64,
}

/// Receiver-side state of one direction.
#[derive(Debug)]
struct RxState {
    uw: Unwrap,
    rcv_nxt: Option<i64>,
    ooo: BTreeMap<i64, i64>,
    /// (time, in-order edge) each time the edge advanced.
    deliveries: Vec<(u64, i64)>,
    arrivals: BTreeMap<(i64, i64), u32>,
    delivered_bytes: u64,
}

/// Sender-side state of one direction (the data it sends, the ACKs it gets).
#[derive(Debug)]
struct Dir {
    seq_uw: Unwrap,
    ack_uw: Unwrap,
    high: i64,
    rows: Vec<Row>,
    first_unacked: usize,
    acked_upto: Option<i64>,
    goodput_upto: Option<i64>,
    sends: Vec<(i64, i64)>,
    retx_list: Vec<(u32, u64, i64, u32)>,
    ooo_list: Vec<(u32, u64, i64, u32)>,
    data_segments: u64,
    retx_segments: u64,
    tx_bytes: u64,
    retx_bytes: u64,
    acked_bytes: u64,
    keepalives: u64,
    acked_unseen: u64,
    original_unseen: u64,
    out_of_order: u64,
    high_ts: u64,
    first_data_ts: Option<u64>,
    last_ts: u64,
    ivl: BTreeMap<u64, Ivl>,
    rx: Option<RxState>,
}

struct Ctx {
    t0: u64,
    interval: u64,
}

impl Ctx {
    fn ivl(&self, t: u64) -> u64 {
        t.saturating_sub(self.t0) / self.interval
    }
}

impl Dir {
    fn new(s: &TcpSeg) -> Dir {
        // tshark's relative numbering: the SYN is 0, data starts at 1.
        let isn = if s.has(flags::SYN) { s.seq } else { s.seq.wrapping_sub(1) };
        Dir {
            seq_uw: Unwrap::new(isn),
            ack_uw: Unwrap::new(isn),
            high: if s.has(flags::SYN) { 0 } else { 1 },
            rows: Vec::new(),
            first_unacked: 0,
            acked_upto: None,
            goodput_upto: None,
            sends: Vec::new(),
            retx_list: Vec::new(),
            ooo_list: Vec::new(),
            data_segments: 0,
            retx_segments: 0,
            tx_bytes: 0,
            retx_bytes: 0,
            acked_bytes: 0,
            keepalives: 0,
            acked_unseen: 0,
            original_unseen: 0,
            out_of_order: 0,
            high_ts: 0,
            first_data_ts: None,
            last_ts: 0,
            ivl: BTreeMap::new(),
            rx: None,
        }
    }

    fn on_send(&mut self, cx: &Ctx, p: &Packet, ooo_thres_ns: u64) {
        let s = &p.seg;
        let t = p.ts_ns;
        let mut start = self.seq_uw.rel(s.seq);
        if s.has(flags::SYN) {
            self.high = self.high.max(start + 1);
            start += 1;
        }
        if s.payload_len == 0 {
            return;
        }
        let end = start + s.payload_len as i64;
        // Keep-alive (tcp_write_wakeup / tcp_xmit_probe_skb): snd_una - 1, at most a byte.
        if s.payload_len == 1
            && start == self.high - 1
            && self.acked_upto.is_some_and(|a| a >= self.high)
        {
            self.keepalives += 1;
            return;
        }
        self.last_ts = self.last_ts.max(t);
        self.first_data_ts.get_or_insert(t);
        self.data_segments += 1;
        self.tx_bytes += s.payload_len as u64;
        let iv = self.ivl.entry(cx.ivl(t)).or_default();
        iv.tx += s.payload_len as u64;
        let old_high = self.high;
        let mut seen_before = false;
        let mut fills: Vec<(i64, i64)> = Vec::new();
        if start < old_high {
            let hi = end.min(old_high);
            let mut i = self.rows.partition_point(|r| r.end <= start);
            let mut cursor = start;
            while let Some(r) = self.rows.get_mut(i).filter(|r| r.seq < hi) {
                if r.seq > cursor {
                    fills.push((cursor, r.seq));
                }
                r.retx += 1;
                r.last_ts = t;
                r.last_frame = p.frame;
                seen_before = true;
                cursor = r.end;
                i += 1;
            }
            if cursor < hi {
                fills.push((cursor, hi));
            }
        }
        // Below the highest sequence sent but never seen sent: either reordered before
        // the capture point (tshark's out-of-order test: within the handshake RTT of the
        // segment that advanced the highest sequence, and not ending exactly there) or a
        // retransmission whose original the capture missed (lost upstream of it).
        let ooo = start < old_high
            && !seen_before
            && t.saturating_sub(self.high_ts) < ooo_thres_ns
            && end != old_high;
        let retx = start < old_high && !ooo;
        for (a, b) in fills {
            // bytes already cumulatively ACKed need no row
            let a = self.acked_upto.map_or(a, |u| a.max(u));
            if a < b {
                let at = self.rows.partition_point(|r| r.seq < a);
                let mut row = Row::new(a, b, t, p.frame);
                if !ooo {
                    row.original_unseen = true;
                    row.retx = 1;
                    self.original_unseen += 1;
                }
                self.rows.insert(at, row);
            }
        }
        if end > old_high {
            let from = start.max(old_high);
            self.rows.push(Row::new(from, end, t, p.frame));
            self.high = end;
            self.high_ts = t;
        }
        if ooo {
            self.out_of_order += 1;
            self.ooo_list.push((p.frame, t, start, s.payload_len));
        }
        if retx {
            self.retx_segments += 1;
            self.retx_bytes += s.payload_len as u64;
            iv.retx += s.payload_len as u64;
            self.retx_list.push((p.frame, t, start, s.payload_len));
        }
        self.sends.push((start, end));
    }

    fn on_ack(&mut self, cx: &Ctx, p: &Packet) {
        let s = &p.seg;
        let t = p.ts_ns;
        let a = self.ack_uw.rel(s.ack);
        if self.rows.is_empty() {
            self.acked_upto = Some(self.acked_upto.map_or(a, |u| u.max(a)));
            return;
        }
        self.last_ts = self.last_ts.max(t);
        // A FIN takes one sequence number past the data: allow for it.
        if a > self.high + 1 {
            self.acked_unseen += 1;
        }
        if self.acked_upto.is_none_or(|u| a > u) {
            self.acked_upto = Some(a);
            let lo = self.rows[0].seq;
            let q = a.clamp(lo, self.high);
            let pv = self.goodput_upto.unwrap_or(lo);
            if q > pv {
                let n = (q - pv) as u64;
                self.acked_bytes += n;
                self.ivl.entry(cx.ivl(t)).or_default().acked += n;
                self.goodput_upto = Some(q);
            }
            while let Some(r) = self.rows.get_mut(self.first_unacked) {
                if r.end > a {
                    break;
                }
                r.acked = Some((t, p.frame));
                r.sacked.get_or_insert(t);
                self.first_unacked += 1;
            }
        }
        for &(l, r) in s.sack_blocks() {
            let l = a + l.wrapping_sub(s.ack) as i32 as i64;
            let r = a + r.wrapping_sub(s.ack) as i32 as i64;
            if r <= l || r <= a {
                continue; // malformed or a D-SACK (RFC 2883) below the cumulative ACK
            }
            let mut i = self.rows.partition_point(|x| x.seq < l);
            while let Some(x) = self.rows.get_mut(i) {
                if x.end > r {
                    break;
                }
                x.sacked.get_or_insert(t);
                i += 1;
            }
        }
    }

    fn on_receive(&mut self, cx: &Ctx, p: &Packet, isn_base: u32) {
        let s = &p.seg;
        let lo = self.rows.first().map(|r| r.seq);
        let rx = self.rx.get_or_insert_with(|| RxState {
            uw: Unwrap::new(isn_base),
            rcv_nxt: None,
            ooo: BTreeMap::new(),
            deliveries: Vec::new(),
            arrivals: BTreeMap::new(),
            delivered_bytes: 0,
        });
        let mut start = rx.uw.rel(s.seq);
        if s.has(flags::SYN) {
            start += 1;
        }
        if s.payload_len == 0 {
            return;
        }
        let end = start + s.payload_len as i64;
        *rx.arrivals.entry((start, end)).or_insert(0) += 1;
        let nxt = rx.rcv_nxt.get_or_insert(lo.unwrap_or(start));
        let before = *nxt;
        if start <= *nxt && end > *nxt {
            *nxt = end;
            while let Some((&k, &v)) = rx.ooo.first_key_value() {
                if k > *nxt {
                    break;
                }
                rx.ooo.pop_first();
                *nxt = (*nxt).max(v);
            }
            let n = (*nxt - before) as u64;
            rx.delivered_bytes += n;
            rx.deliveries.push((p.ts_ns, *nxt));
            self.ivl.entry(cx.ivl(p.ts_ns)).or_default().delivered += n;
        } else if start > *nxt {
            let e = rx.ooo.entry(start).or_insert(end);
            *e = (*e).max(end);
        }
    }

    /// Receiver-side results onto the rows: losses and delivery times.
    fn settle_receiver(&mut self) -> u64 {
        let Some(rx) = self.rx.as_mut() else {
            // Nothing of this flow reached the receiver capture: every send was lost.
            for r in &mut self.rows {
                r.lost = 0;
            }
            let mut lost = 0;
            for &(s, e) in &self.sends {
                lost += 1;
                let mut i = self.rows.partition_point(|r| r.end <= s);
                while let Some(r) = self.rows.get_mut(i).filter(|r| r.seq < e) {
                    r.lost += 1;
                    i += 1;
                }
            }
            return lost;
        };
        let mut lost = 0;
        for &(s, e) in &self.sends {
            match rx.arrivals.get_mut(&(s, e)).filter(|n| **n > 0) {
                Some(n) => *n -= 1,
                None => {
                    lost += 1;
                    let mut i = self.rows.partition_point(|r| r.end <= s);
                    while let Some(r) = self.rows.get_mut(i).filter(|r| r.seq < e) {
                        r.lost += 1;
                        i += 1;
                    }
                }
            }
        }
        let mut d = rx.deliveries.iter().peekable();
        for r in &mut self.rows {
            while d.peek().is_some_and(|&&(_, upto)| upto < r.end) {
                d.next();
            }
            r.delivered = d.peek().map(|&&(t, _)| t);
        }
        lost
    }
}

/// Out-of-order threshold without a captured handshake (tshark's 3 ms default).
pub const DEFAULT_OOO_THRES_NS: u64 = 3_000_000;

/// Longest run of empty intervals written as zero rows in the interval table.
pub const MAX_ZERO_FILL: u64 = 10_000;

/// `t - t0` in signed ns, saturating (pcapng timestamps can be anything up to 2^64).
fn rel(t: u64, t0: u64) -> i64 {
    (t as i128 - t0 as i128).clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

fn bps(bytes: u64, ns: i64) -> f64 {
    if ns <= 0 {
        0.0
    } else {
        bytes as f64 * 8.0 * 1e9 / ns as f64
    }
}

/// Replays the captures through per-direction state: every packet of the sender-side
/// capture as sent (and, with the ACK flag, as an ACK of the reverse direction), then every
/// packet of the receiver-side capture as received.
fn replay(sender: &Loaded, receiver: Option<&Loaded>, cx: &Ctx) -> BTreeMap<FlowKey, Dir> {
    let mut dirs: BTreeMap<FlowKey, Dir> = BTreeMap::new();
    // Per connection (lower endpoint first): the latest SYN (without ACK) and the
    // handshake RTT as tshark's `ts_first_rtt`: first pure ACK minus that SYN's time.
    let mut conns: BTreeMap<FlowKey, (Option<u64>, Option<u64>)> = BTreeMap::new();
    for p in &sender.packets {
        let k = FlowKey::of(&p.seg);
        let c = conns.entry(k.min(k.reversed())).or_insert((None, None));
        match (p.seg.has(flags::SYN), p.seg.has(flags::ACK)) {
            (true, false) => c.0 = Some(p.ts_ns),
            (false, true) if c.1.is_none() => c.1 = c.0.map(|syn| p.ts_ns.saturating_sub(syn)),
            _ => {}
        }
        let ooo_thres = c.1.filter(|&r| r > 0).unwrap_or(DEFAULT_OOO_THRES_NS);
        dirs.entry(k).or_insert_with(|| Dir::new(&p.seg)).on_send(cx, p, ooo_thres);
        if p.seg.has(flags::ACK) {
            if let Some(d) = dirs.get_mut(&k.reversed()) {
                d.on_ack(cx, p);
            }
        }
    }
    if let Some(rcv) = receiver {
        for p in &rcv.packets {
            if let Some(d) = dirs.get_mut(&FlowKey::of(&p.seg)) {
                let base = d.seq_uw.base;
                d.on_receive(cx, p, base);
            }
        }
    }
    dirs
}

/// Analyses decoded captures: the sender-side capture and optionally one taken at the
/// receiver on the same clock (wirelab's captures share the simulation clock; for real
/// captures, synchronise hosts or application delays shift by the clock offset).
pub fn analyze_loaded(sender: &Loaded, receiver: Option<&Loaded>, opts: &AnalyzeOptions) -> Analysis {
    let t0 = sender.packets.iter().map(|p| p.ts_ns).min().unwrap_or(0);
    let cx = Ctx { t0, interval: opts.interval.as_nanos().clamp(1, i64::MAX as u64) };
    let mut dirs = replay(sender, receiver, &cx);
    let has_rx = receiver.is_some();
    let mut a = Analysis {
        t0_ns: t0,
        interval_ns: cx.interval,
        sender_stats: sender.stats.clone(),
        receiver_stats: receiver.map(|r| r.stats.clone()),
        flows: Vec::new(),
        segments: Vec::new(),
        retransmissions: Vec::new(),
        out_of_order: Vec::new(),
        cdf: Vec::new(),
        intervals: Vec::new(),
        fairness: Vec::new(),
        jain_flows: None,
        classes: Vec::new(),
        jain_classes: None,
        warnings: sender.warnings.iter().chain(receiver.iter().flat_map(|r| r.warnings.iter())).cloned().collect(),
    };
    // per class: (goodputs, latencies, data segs, retx segs)
    let mut by_class: Vec<(Vec<f64>, Vec<i64>, u64, u64)> = vec![Default::default(); opts.classes.len()];
    let mut per_ivl: BTreeMap<u64, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut goodputs = Vec::new();
    for (key, d) in dirs.iter_mut().filter(|(_, d)| !d.rows.is_empty()) {
        let fi = a.flows.len();
        let lost = has_rx.then(|| d.settle_receiver());
        let (mut lat, mut lat_sack, mut app) = (Vec::new(), Vec::new(), Vec::new());
        for r in &d.rows {
            let first = rel(r.first_ts, t0);
            let known = !r.original_unseen;
            let latency = r.acked.filter(|_| known).map(|(t, _)| rel(t, r.first_ts));
            let latency_sack = r.sacked.filter(|_| known).map(|t| rel(t, r.first_ts));
            let app_delay = r.delivered.filter(|_| known).map(|t| rel(t, r.first_ts));
            lat.extend(latency);
            lat_sack.extend(latency_sack);
            app.extend(app_delay);
            a.segments.push(SegmentRow {
                flow: fi,
                seq: r.seq,
                len: (r.end - r.seq) as u32,
                first_sent_ns: first,
                first_frame: r.first_frame,
                last_sent_ns: rel(r.last_ts, t0),
                last_frame: r.last_frame,
                retransmissions: r.retx,
                original_unseen: r.original_unseen,
                acked_ns: r.acked.map(|(t, _)| rel(t, t0)),
                acked_frame: r.acked.map(|(_, f)| f),
                latency_ns: latency,
                sacked_ns: r.sacked.map(|t| rel(t, t0)),
                latency_sack_ns: latency_sack,
                lost: has_rx.then_some(r.lost),
                delivered_ns: r.delivered.map(|t| rel(t, t0)),
                app_delay_ns: app_delay,
            });
        }
        for &(frame, t, seq, len) in &d.retx_list {
            a.retransmissions.push(RetxRow { flow: fi, frame, sent_ns: rel(t, t0), seq, len });
        }
        for &(frame, t, seq, len) in &d.ooo_list {
            a.out_of_order.push(RetxRow { flow: fi, frame, sent_ns: rel(t, t0), seq, len });
        }
        lat.sort_unstable();
        lat_sack.sort_unstable();
        app.sort_unstable();
        for (metric, v) in [("ack_latency", &lat), ("ack_latency_sack", &lat_sack), ("app_delay", &app)] {
            let n = v.len() as f64;
            for (i, &x) in v.iter().enumerate() {
                if v.get(i + 1) != Some(&x) {
                    a.cdf.push(CdfRow { flow: fi, metric, value_ns: x, fraction: (i + 1) as f64 / n });
                }
            }
        }
        let start = d.first_data_ts.unwrap_or(t0);
        let duration = rel(d.last_ts, start);
        let goodput = bps(d.acked_bytes, duration);
        let class = opts.classes.iter().position(|c| c.matches(key));
        if let Some(ci) = class {
            let c = &mut by_class[ci];
            c.0.push(goodput);
            c.1.extend_from_slice(&lat);
            c.2 += d.data_segments;
            c.3 += d.retx_segments;
        }
        goodputs.push(goodput);
        let rx_bytes = d.rx.as_ref().map_or(0, |r| r.delivered_bytes);
        a.flows.push(FlowSummary {
            flow: *key,
            class: class.map(|c| opts.classes[c].name.clone()),
            data_segments: d.data_segments,
            retransmitted_segments: d.retx_segments,
            est_loss: ratio(d.retx_segments, d.data_segments),
            lost_segments: lost,
            true_loss: lost.map(|l| ratio(l, d.data_segments)),
            tx_bytes: d.tx_bytes,
            retx_bytes: d.retx_bytes,
            acked_bytes: d.acked_bytes,
            delivered_bytes: has_rx.then_some(rx_bytes),
            start_ns: rel(start, t0),
            duration_ns: duration,
            throughput_bps: bps(d.tx_bytes, duration),
            goodput_bps: goodput,
            ack_latency: Pctl::of(&lat),
            ack_latency_sack: Pctl::of(&lat_sack),
            app_delay: has_rx.then(|| Pctl::of(&app)),
            unacked_segments: d.rows.iter().filter(|r| r.acked.is_none()).count() as u64,
            keepalives: d.keepalives,
            acked_unseen: d.acked_unseen,
            original_unseen: d.original_unseen,
            out_of_order: d.out_of_order,
        });
        // Every interval from the flow's first to its last, zeros included (except across
        // idle gaps longer than MAX_ZERO_FILL intervals, so a stray timestamp cannot
        // produce billions of rows).
        {
            let w = cx.interval as i64;
            let mut keys: Vec<u64> = Vec::new();
            let mut prev: Option<u64> = None;
            for &k in d.ivl.keys() {
                if let Some(p) = prev.filter(|&p| k - p <= MAX_ZERO_FILL) {
                    keys.extend(p + 1..k);
                }
                keys.push(k);
                prev = Some(k);
            }
            for k in keys {
                let v = d.ivl.get(&k).copied().unwrap_or_default();
                let row = IntervalRow {
                    flow: fi,
                    start_ns: (k as i64).saturating_mul(w),
                    tx_bytes: v.tx,
                    retx_bytes: v.retx,
                    acked_bytes: v.acked,
                    delivered_bytes: has_rx.then_some(v.delivered),
                    throughput_bps: bps(v.tx, w),
                    goodput_bps: bps(v.acked, w),
                };
                if v.tx > 0 || v.acked > 0 {
                    let e = per_ivl.entry(k).or_default();
                    e.0.push(row.goodput_bps);
                    e.1.push(row.throughput_bps);
                }
                a.intervals.push(row);
            }
        }
    }
    a.jain_flows = jain(&goodputs);
    for (k, (g, t)) in per_ivl {
        a.fairness.push(FairnessRow {
            start_ns: (k as i64).saturating_mul(cx.interval as i64),
            active_flows: g.len() as u64,
            jain_goodput: jain(&g),
            jain_throughput: jain(&t),
        });
    }
    (a.classes, a.jain_classes) = class_summaries(opts, by_class);
    a
}

/// Per traffic class: goodput sum and mean, Jain's index within the class, ACK latency
/// percentiles and the estimated loss; and Jain's index over the classes' mean goodputs.
fn class_summaries(opts: &AnalyzeOptions, by_class: Vec<(Vec<f64>, Vec<i64>, u64, u64)>) -> (Vec<ClassSummary>, Option<f64>) {
    let mut classes = Vec::new();
    let mut means = Vec::new();
    for (c, (g, mut lat, data, retx)) in opts.classes.iter().zip(by_class) {
        lat.sort_unstable();
        // fold from +0.0: `Sum for f64` starts at -0.0, so an empty class would print `-0`
        let sum: f64 = g.iter().fold(0.0, |a, x| a + x);
        let mean = if g.is_empty() { 0.0 } else { sum / g.len() as f64 };
        if !g.is_empty() {
            means.push(mean);
        }
        classes.push(ClassSummary {
            name: c.name.clone(),
            flows: g.len() as u64,
            goodput_sum_bps: sum,
            goodput_mean_bps: mean,
            jain_within: jain(&g),
            ack_latency: Pctl::of(&lat),
            est_loss: ratio(retx, data),
        });
    }
    (classes, jain(&means))
}

fn ratio(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 / d as f64
    }
}
