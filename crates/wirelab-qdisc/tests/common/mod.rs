//! Test harness: real IPv4 packets from synthetic flows, served by a link of fixed rate.
#![allow(dead_code)]
use wirelab_core::{Duration, Instant, Pkt, Rng};
use wirelab_qdisc::Qdisc;

pub const TCP: u8 = 6;
pub const UDP: u8 = 17;
pub const SCTP: u8 = 132;

/// A flow's 5-tuple plus packet shape.
#[derive(Clone, Copy, Debug)]
pub struct FlowSpec {
    pub proto: u8,
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    pub tos: u8,
    /// IPv4 datagram length.
    pub size: usize,
}

impl FlowSpec {
    pub fn new(proto: u8, i: u16) -> Self {
        FlowSpec { proto, src: [10, 0, (i >> 8) as u8, i as u8 + 1], dst: [10, 1, 0, 1], sport: 10000 + i, dport: 5001, tos: 0, size: 1500 }
    }
}

/// Builds a real IPv4 + TCP/UDP/SCTP datagram (checksums filled). `tag` goes in the IP ID.
/// For SCTP the first chunk is DATA (type 0) unless `chunk` gives `(type, flags)`.
pub fn ip_packet(f: &FlowSpec, tag: u16, chunk: Option<(u8, u8)>) -> Pkt {
    let l4 = match f.proto {
        TCP => 20,
        UDP => 8,
        SCTP => 12 + 16,
        _ => 0,
    };
    let len = f.size.max(20 + l4);
    let mut d = vec![0u8; len];
    d[0] = 0x45;
    d[1] = f.tos;
    d[2..4].copy_from_slice(&(len as u16).to_be_bytes());
    d[4..6].copy_from_slice(&tag.to_be_bytes());
    d[6] = 0x40; // DF
    d[8] = 64;
    d[9] = f.proto;
    d[12..16].copy_from_slice(&f.src);
    d[16..20].copy_from_slice(&f.dst);
    let c = wirelab_wire::checksum::finish(wirelab_wire::checksum::sum(&d[..20]));
    d[10..12].copy_from_slice(&c.to_be_bytes());
    let t = &mut d[20..];
    match f.proto {
        TCP | UDP | SCTP => {
            t[0..2].copy_from_slice(&f.sport.to_be_bytes());
            t[2..4].copy_from_slice(&f.dport.to_be_bytes());
        }
        _ => {}
    }
    match f.proto {
        TCP => {
            t[12] = 5 << 4;
            t[13] = 0x10; // ACK
        }
        UDP => {
            let ul = (len - 20) as u16;
            t[4..6].copy_from_slice(&ul.to_be_bytes());
        }
        SCTP => {
            t[4..8].copy_from_slice(&0x1234_5678u32.to_be_bytes()); // vtag
            let (ty, fl) = chunk.unwrap_or((0, 0x03));
            t[12] = ty;
            t[13] = fl;
            let cl = (len - 32) as u16;
            t[14..16].copy_from_slice(&cl.to_be_bytes());
        }
        _ => {}
    }
    if f.proto == SCTP {
        wirelab_wire::crc32c::sctp_fill(&mut d[20..]);
    }
    let mut p = Pkt::new(d);
    p.meta.l2_len = 14;
    p
}

/// An open-loop source: one packet every `gap` from `start` until `stop`.
#[derive(Clone, Debug)]
pub struct Source {
    pub flow: FlowSpec,
    pub chunk: Option<(u8, u8)>,
    pub next: Instant,
    pub gap: Duration,
    pub stop: Instant,
    pub sent: u64,
    /// If set, each gap is drawn uniformly from [0.5, 1.5] × `gap` (breaks the phase
    /// locking that perfectly periodic sources show at a drop-tail queue).
    pub jitter: Option<Rng>,
}

impl Source {
    /// A source offering `rate_bps` of (l2-inclusive) traffic.
    pub fn at_rate(flow: FlowSpec, rate_bps: u64, start: Instant, stop: Instant) -> Self {
        let gap = Duration::transmit_time((flow.size + 14) as u64, rate_bps);
        Source { flow, chunk: None, next: start, gap, stop, sent: 0, jitter: None }
    }
}

/// What came out of the link.
#[derive(Default, Debug)]
pub struct Outcome {
    /// Per source: (bytes, packets) delivered within the measurement window.
    pub delivered: Vec<(u64, u64)>,
    /// Per source: packets dropped.
    pub dropped: Vec<u64>,
    /// Per delivered packet in the window: (dequeue time, sojourn).
    pub sojourn: Vec<(Instant, Duration)>,
    /// Per source: sojourn of each of its packets delivered in the window.
    pub sojourn_by_src: Vec<Vec<Duration>>,
    pub enqueued: u64,
    pub total_dropped: u64,
    pub total_delivered: u64,
}

fn source_of(p: &Pkt, srcs: &[Source]) -> Option<usize> {
    let ports = p.ports();
    srcs.iter().position(|s| {
        p.src_addr() == s.flow.src && p.dst_addr() == s.flow.dst && p.ip_proto() == s.flow.proto && ports.is_none_or(|(a, b)| a == s.flow.sport && b == s.flow.dport)
    })
}

/// Serves `q` at `link_bps` from time 0 to `end`, feeding the sources; counts deliveries
/// that *finish* inside `[from, end)`. Follows the sans-IO contract: dequeue whenever the
/// link is idle, wake at `next_wakeup` when throttled.
pub fn run_link(q: &mut dyn Qdisc, srcs: &mut [Source], link_bps: u64, from: Instant, end: Instant) -> Outcome {
    let mut out = Outcome { delivered: vec![(0, 0); srcs.len()], dropped: vec![0; srcs.len()], sojourn_by_src: vec![Vec::new(); srcs.len()], ..Default::default() };
    let mut now = Instant::ZERO;
    let mut busy_until = Instant::ZERO;
    let mut wake: Option<Instant> = None;
    let mut dropped = Vec::new();
    let mut tag: u16 = 0;
    let mut try_now = false;
    loop {
        let next_arr = srcs.iter().filter(|s| s.next < s.stop).map(|s| s.next).min().unwrap_or(Instant::MAX);
        let next_link = if q.qlen() == 0 {
            Instant::MAX
        } else if busy_until > now {
            busy_until
        } else if try_now {
            now
        } else {
            wake.unwrap_or(Instant::MAX)
        };
        let t = next_arr.min(next_link);
        if t >= end {
            break;
        }
        assert!(t >= now, "time went backwards");
        now = t;
        try_now = false;
        for s in srcs.iter_mut() {
            while s.next == now && s.next < s.stop {
                tag = tag.wrapping_add(1);
                let p = ip_packet(&s.flow, tag, s.chunk);
                out.enqueued += 1;
                q.enqueue(now, p, &mut dropped);
                s.next += match s.jitter.as_mut() {
                    Some(r) => Duration::from_nanos((s.gap.as_nanos() as f64 * (0.5 + r.next_f64())) as u64),
                    None => s.gap,
                };
                s.sent += 1;
                try_now = true;
            }
        }
        if busy_until <= now && q.qlen() > 0 && (try_now || wake.is_some_and(|w| w <= now) || busy_until == now) {
            match q.dequeue(now, &mut dropped) {
                Some(p) => {
                    busy_until = now + Duration::transmit_time(p.len() as u64, link_bps);
                    wake = None;
                    out.total_delivered += 1;
                    if busy_until >= from && busy_until < end {
                        if let Some(i) = source_of(&p, srcs) {
                            out.delivered[i].0 += p.len() as u64;
                            out.delivered[i].1 += 1;
                            out.sojourn_by_src[i].push(now.saturating_since(p.meta.enqueued));
                        }
                        out.sojourn.push((now, now.saturating_since(p.meta.enqueued)));
                    }
                    try_now = false;
                }
                None => {
                    if q.qlen() > 0 {
                        let w = q.next_wakeup(now).expect("throttled qdisc must give a wakeup");
                        assert!(w > now, "next_wakeup {w:?} not after {now:?}");
                        wake = Some(w);
                    }
                    try_now = false;
                }
            }
        }
        for p in dropped.drain(..) {
            out.total_dropped += 1;
            if let Some(i) = source_of(&p, srcs) {
                out.dropped[i] += 1;
            }
        }
    }
    out
}

/// Jain's fairness index of `x`.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

pub fn secs(s: f64) -> Instant {
    Instant::ZERO + Duration::from_secs_f64(s)
}

/// Window-based greedy flows (a Reno-like sender: slow start, +1/cwnd per ACK, halve on a
/// loss at most once per RTT), attached directly to the queue; ACKs return one base RTT
/// after the packet leaves the link. Returns (dequeue time, sojourn) of every packet.
pub fn reno_run(q: &mut dyn Qdisc, n: usize, link_bps: u64, base_rtt: Duration, end: Instant) -> Vec<(Instant, Duration)> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let flows: Vec<FlowSpec> = (0..n as u16).map(|i| FlowSpec::new(TCP, i)).collect();
    let mut cwnd = vec![2.0f64; n];
    let mut ssthresh = vec![f64::MAX; n];
    let mut inflight = vec![0usize; n];
    let mut last_cut = vec![Instant::ZERO; n];
    // (time, flow, real ACK?) — non-ACK entries are loss-recovery timers that free the lost
    // packet's window slot one RTT later without growing cwnd
    let mut acks: BinaryHeap<Reverse<(Instant, usize, bool)>> = BinaryHeap::new();
    let mut starts: Vec<Instant> = (0..n).map(|i| Instant::ZERO + Duration::from_millis(7 * i as u64)).collect();
    let mut now;
    let mut busy = Instant::ZERO;
    let mut dropped = Vec::new();
    let mut soj = Vec::new();
    let mut tag = 0u16;
    loop {
        let na = acks.peek().map(|r| r.0 .0).unwrap_or(Instant::MAX);
        let ns = starts.iter().copied().min().unwrap_or(Instant::MAX);
        let nl = if q.qlen() > 0 { busy } else { Instant::MAX };
        now = na.min(ns).min(nl);
        if now >= end {
            break;
        }
        let mut wake: Vec<usize> = Vec::new();
        for (i, s) in starts.iter_mut().enumerate() {
            if *s == now {
                *s = Instant::MAX;
                wake.push(i);
            }
        }
        while let Some(Reverse((t, i, real))) = acks.peek().copied() {
            if t != now {
                break;
            }
            acks.pop();
            inflight[i] -= 1;
            if !real {
                wake.push(i);
                continue;
            }
            if cwnd[i] < ssthresh[i] {
                cwnd[i] += 1.0;
            } else {
                cwnd[i] += 1.0 / cwnd[i];
            }
            wake.push(i);
        }
        for i in wake {
            while (inflight[i] as f64) < cwnd[i].floor() {
                tag = tag.wrapping_add(1);
                inflight[i] += 1;
                q.enqueue(now, ip_packet(&flows[i], tag, None), &mut dropped);
            }
        }
        if busy <= now && q.qlen() > 0 {
            if let Some(p) = q.dequeue(now, &mut dropped) {
                busy = now + Duration::transmit_time(p.len() as u64, link_bps);
                soj.push((now, now - p.meta.enqueued));
                let i = (p.src_addr()[3] - 1) as usize;
                acks.push(Reverse((busy + base_rtt, i, true)));
            }
        }
        for p in dropped.drain(..) {
            let i = (p.src_addr()[3] - 1) as usize;
            if now.saturating_since(last_cut[i]) > base_rtt * 2 {
                cwnd[i] = (cwnd[i] / 2.0).max(2.0);
                ssthresh[i] = cwnd[i];
                last_cut[i] = now;
            }
            // the loss is detected one RTT later, freeing its window slot
            acks.push(Reverse((now + base_rtt, i, false)));
        }
    }
    soj
}
