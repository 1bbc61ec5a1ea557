//! Issue 4's scenario-level "must show" checks: Linux qdiscs at a router, driven by real TCP
//! and SCTP flows through the simulator.
//!
//! Topology (all tests): N senders → r1 → bottleneck → r2 → N receivers, 1 Gbit/s access
//! links. The qdisc under test is r1's egress on the bottleneck (`r1:eth0`).
use wirelab_core::{Duration, Instant};
use wirelab_scenario::{BuildOptions, Scenario};
use wirelab_sim::record::ProbeEvent;
use wirelab_sim::RunResults;

/// Payload bytes per full TCP segment (MSS 1448 with timestamps) and the bytes the qdisc
/// and the link count for it: 1448 + 32 (TCP + timestamps) + 20 (IPv4) + 14 (Ethernet).
const MSS: f64 = 1448.0;
const FRAME: f64 = 1514.0;

struct Dumbbell {
    n: usize,
    /// Bottleneck rate and one-way delay.
    rate: &'static str,
    owd_ms: f64,
    /// r1's bottleneck root qdisc (short form) or a `tc` script (one command per line).
    qdisc: String,
    tc: Vec<String>,
    /// Per-flow extra one-way delay on the sender's access link (ms).
    access_ms: Vec<f64>,
    /// Per-flow start times (s).
    start_s: Vec<f64>,
    /// `tcp` or `sctp`.
    proto: &'static str,
    /// Per-sender `[node.sysctl]` lines.
    sysctl: Vec<String>,
    /// Per-flow extra app keys.
    app: Vec<String>,
    dur_s: f64,
    probe: bool,
}

impl Dumbbell {
    fn new(n: usize) -> Self {
        Dumbbell {
            n,
            rate: "10mbit",
            owd_ms: 10.0,
            qdisc: "pfifo limit 100".into(),
            tc: Vec::new(),
            access_ms: vec![0.5; n],
            start_s: vec![0.0; n],
            proto: "tcp",
            sysctl: vec![String::new(); n],
            app: vec![String::new(); n],
            dur_s: 10.0,
            probe: false,
        }
    }
    fn text(&self) -> String {
        let mut s = format!("[scenario]\nname = \"qdisc-dumbbell\"\nduration = \"{}s\"\n", self.dur_s);
        s += "[[node]]\nname = \"r1\"\nkind = \"router\"\n[[node]]\nname = \"r2\"\nkind = \"router\"\n";
        for i in 0..self.n {
            s += &format!("[[node]]\nname = \"s{i}\"\n");
            if !self.sysctl[i].is_empty() {
                s += &format!("[node.sysctl]\n{}\n", self.sysctl[i]);
            }
            s += &format!("[[node]]\nname = \"d{i}\"\n");
            if !self.sysctl[i].is_empty() {
                s += &format!("[node.sysctl]\n{}\n", self.sysctl[i]);
            }
        }
        let q = if self.tc.is_empty() {
            format!("qdisc = \"{}\"", self.qdisc)
        } else {
            format!("tc = [{}]", self.tc.iter().map(|l| format!("\"{l}\"")).collect::<Vec<_>>().join(", "))
        };
        s += &format!(
            "[[link]]\nname = \"bottleneck\"\na = {{ node = \"r1\", {q} }}\nb = {{ node = \"r2\" }}\nnetem = \"rate {r} delay {d}ms\"\n",
            r = self.rate,
            d = self.owd_ms,
        );
        for i in 0..self.n {
            s += &format!("[[link]]\na = {{ node = \"s{i}\" }}\nb = {{ node = \"r1\" }}\nnetem = \"rate 1gbit delay {}ms\"\n", self.access_ms[i]);
            s += &format!("[[link]]\na = {{ node = \"r2\" }}\nb = {{ node = \"d{i}\" }}\nnetem = \"rate 1gbit delay 500us\"\n");
        }
        for i in 0..self.n {
            let start = if self.start_s[i] > 0.0 { format!("start = \"{}ms\"\n", (self.start_s[i] * 1000.0).round()) } else { String::new() };
            s += &format!("[[app]]\nname = \"f{i}\"\nkind = \"{p}-bulk\"\nnode = \"s{i}\"\ndst = \"d{i}:5001\"\n{start}{}\n", self.app[i], p = self.proto);
            s += &format!("[[app]]\nname = \"k{i}\"\nkind = \"{}-sink\"\nnode = \"d{i}\"\nport = 5001\n", self.proto);
        }
        s += "[measure]\nsample_interval = \"100ms\"\n";
        if self.probe {
            s += "queue_probe = [\"r1:eth0\"]\n";
        }
        s
    }
    fn run(&self) -> RunResults {
        let text = self.text();
        let sc = Scenario::from_text("<test>", &text, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let b = sc.build(&BuildOptions { seed: None, out_dir: None, live: false }).unwrap();
        let mut sim = b.sim;
        sim.run(Instant::ZERO + b.duration, Duration::ZERO, &mut |_| {});
        sim.finish().unwrap()
    }
}

/// Payload bytes sink `sink` received between `t0` and `t1` (flow time series).
fn rx_between(r: &RunResults, sink: &str, t0: f64, t1: f64) -> f64 {
    let at = |t: f64| r.flow_series.iter().filter(|s| s.flow == sink && s.time_s <= t + 1e-9).map(|s| s.rx_bytes).next_back().unwrap_or(0);
    (at(t1) - at(t0)) as f64
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let q: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * q)
}

fn bottleneck(r: &RunResults) -> &wirelab_sim::results::QueueSummary {
    r.queues.iter().find(|q| q.dev == "r1:eth0").expect("r1:eth0 queue")
}

/// Per-flow goodputs (bit/s) over [t0, t1].
fn goodputs(r: &RunResults, n: usize, t0: f64, t1: f64) -> Vec<f64> {
    (0..n).map(|i| rx_between(r, &format!("k{i}"), t0, t1) * 8.0 / (t1 - t0)).collect()
}

fn mbit(v: &[f64]) -> Vec<String> {
    v.iter().map(|x| format!("{:.2}", x / 1e6)).collect()
}

#[test]
fn sfq_shares_a_bottleneck_fairly_among_8_tcp_flows() {
    let d = Dumbbell { qdisc: "sfq perturb 10".into(), ..Dumbbell::new(8) };
    let r = d.run();
    let g = goodputs(&r, 8, 2.0, 10.0);
    let j = jain(&g);
    let total: f64 = g.iter().sum();
    eprintln!("sfq: goodputs {:?} Mbit/s, total {:.2}, Jain {j:.4}", mbit(&g), total / 1e6);
    assert!(j >= 0.98, "Jain {j}");
    assert!(total > 0.9 * 10e6 * MSS / FRAME, "the bottleneck stays busy: {total}");
}

/// Flows with different RTTs (access delays 0.5 … 30 ms) and staggered starts.
fn unequal(qdisc: &str) -> Dumbbell {
    let n = 8;
    Dumbbell {
        qdisc: qdisc.into(),
        access_ms: (0..n).map(|i| 0.5 + 4.0 * i as f64).collect(),
        start_s: (0..n).map(|i| 0.25 * i as f64).collect(),
        ..Dumbbell::new(n)
    }
}

#[test]
fn pfifo_is_unfair_to_late_long_rtt_flows_where_sfq_is_not() {
    let rp = unequal("pfifo limit 100").run();
    let rs = unequal("sfq perturb 10").run();
    let gp = goodputs(&rp, 8, 3.0, 10.0);
    let gs = goodputs(&rs, 8, 3.0, 10.0);
    let (jp, js) = (jain(&gp), jain(&gs));
    eprintln!("pfifo (RTT 21..77 ms, staggered): {:?} Mbit/s, Jain {jp:.4}", mbit(&gp));
    eprintln!("sfq   (same flows):               {:?} Mbit/s, Jain {js:.4}", mbit(&gs));
    assert!(js >= 0.95, "sfq Jain {js}");
    assert!(jp < js - 0.1, "pfifo Jain {jp} should be clearly below sfq's {js}");
    // spread between the best and worst served flow
    let spread = |g: &[f64]| g.iter().cloned().fold(0.0, f64::max) / g.iter().cloned().fold(f64::MAX, f64::min);
    let (sp, ss) = (spread(&gp), spread(&gs));
    eprintln!("max/min goodput: pfifo {sp:.2}, sfq {ss:.2}");
    assert!(sp > 2.0 && ss < 1.3, "pfifo spread {sp}, sfq spread {ss}");
}

/// Receiver goodput of one greedy flow over [t0, t1] against a shaper's configured rate,
/// converted to payload: the shaper charges `qdisc_pkt_len` = 1514 bytes per 1448-byte
/// segment. Returns (measured payload bit/s, expected payload bit/s).
fn shaped(r: &RunResults, rate_bps: f64, t0: f64, t1: f64) -> (f64, f64) {
    let got = rx_between(r, "k0", t0, t1) * 8.0 / (t1 - t0);
    (got, rate_bps * MSS / FRAME)
}

#[test]
fn tbf_shapes_a_greedy_tcp_flow_to_its_rate_within_1_percent() {
    let d = Dumbbell { rate: "100mbit", qdisc: "tbf rate 5mbit burst 10kb latency 100ms".into(), dur_s: 12.0, ..Dumbbell::new(1) };
    let r = d.run();
    let (got, want) = shaped(&r, 5e6, 2.0, 12.0);
    let err = got / want - 1.0;
    eprintln!("tbf 5mbit: payload {:.4} Mbit/s, expected {:.4} (error {:+.3} %)", got / 1e6, want / 1e6, err * 100.0);
    assert!(err.abs() < 0.01, "{err}");
    // the frames the qdisc sent over the whole run: rate * time + the initial bucket
    let q = bottleneck(&r);
    let max_bytes = 5e6 / 8.0 * 12.0 + 10.0 * 1024.0;
    assert!((q.sent_bytes as f64) <= max_bytes, "{} > {max_bytes}", q.sent_bytes);
    assert!(q.sent_bytes as f64 > 0.97 * max_bytes, "{}", q.sent_bytes);
}

fn htb_tree(leaf_rate: &str, ceil: &str) -> Vec<String> {
    vec![
        "qdisc add root handle 1: htb default 10".into(),
        "class add parent 1: classid 1:1 htb rate 10mbit ceil 10mbit".into(),
        format!("class add parent 1:1 classid 1:10 htb rate {leaf_rate} ceil {ceil}"),
        "class add parent 1:1 classid 1:20 htb rate 7mbit ceil 10mbit".into(),
    ]
}

#[test]
fn htb_shapes_a_greedy_tcp_flow_to_its_ceil_within_1_percent() {
    let d = Dumbbell { rate: "100mbit", tc: htb_tree("5mbit", "5mbit"), dur_s: 12.0, ..Dumbbell::new(1) };
    let r = d.run();
    let (got, want) = shaped(&r, 5e6, 2.0, 12.0);
    let err = got / want - 1.0;
    eprintln!("htb rate=ceil 5mbit: payload {:.4} Mbit/s, expected {:.4} (error {:+.3} %)", got / 1e6, want / 1e6, err * 100.0);
    assert!(err.abs() < 0.01, "{err}");
    let c = bottleneck(&r).classes.iter().find(|c| c.classid == "1:10").unwrap();
    assert!(c.packets > 4000, "{c:?}");
}

#[test]
fn htb_class_borrows_the_idle_siblings_rate_up_to_its_ceil() {
    // 1:10 rate 3mbit ceil 10mbit is busy, 1:20 rate 7mbit ceil 10mbit is idle
    let d = Dumbbell { rate: "100mbit", tc: htb_tree("3mbit", "10mbit"), dur_s: 12.0, ..Dumbbell::new(1) };
    let r = d.run();
    let (got, want) = shaped(&r, 10e6, 2.0, 12.0);
    let err = got / want - 1.0;
    eprintln!("htb borrow (3mbit ceil 10mbit, sibling idle): payload {:.4} Mbit/s, ceil-limited {:.4} (error {:+.3} %)", got / 1e6, want / 1e6, err * 100.0);
    assert!(err.abs() < 0.02, "{err}");
    assert!(got > 3e6 * MSS / FRAME * 3.0, "far above its own rate");
    let q = bottleneck(&r);
    let c10 = q.classes.iter().find(|c| c.classid == "1:10").unwrap();
    let c20 = q.classes.iter().find(|c| c.classid == "1:20").unwrap();
    assert!(c10.packets > 8000 && c20.packets == 0, "{c10:?} {c20:?}");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Dequeue sojourn times (ms) at the bottleneck after `t0`.
fn sojourns(r: &RunResults, t0: f64) -> Vec<f64> {
    r.probe.iter().filter(|p| p.dev == "r1:eth0" && matches!(p.event, ProbeEvent::Dequeue) && p.time_ns as f64 >= t0 * 1e9).map(|p| p.sojourn_ns as f64 / 1e6).collect()
}

#[test]
fn codel_keeps_the_sojourn_near_target_where_pfifo_keeps_a_standing_queue() {
    let mk = |q: &str| Dumbbell { qdisc: q.into(), probe: true, dur_s: 8.0, ..Dumbbell::new(2) };
    let rc = mk("codel").run();
    let rp = mk("pfifo limit 1000").run();
    let (mc, mp) = (median(sojourns(&rc, 2.0)), median(sojourns(&rp, 2.0)));
    let gc: f64 = goodputs(&rc, 2, 2.0, 8.0).iter().sum();
    let gp: f64 = goodputs(&rp, 2, 2.0, 8.0).iter().sum();
    eprintln!("median dequeue sojourn: codel {mc:.2} ms (target 5 ms), pfifo 1000 {mp:.1} ms; goodput codel {:.2}, pfifo {:.2} Mbit/s", gc / 1e6, gp / 1e6);
    assert!((2.5..=10.0).contains(&mc), "codel median sojourn {mc} ms");
    assert!(mp > 10.0 * mc, "pfifo median sojourn {mp} ms");
    assert!(gc > 0.9 * 10e6 * MSS / FRAME, "codel keeps the link busy: {gc}");
    assert!(bottleneck(&rc).drops > 0);
}

#[test]
fn probe_drops_and_dequeues_match_the_qdisc_counters() {
    let d = Dumbbell { qdisc: "pfifo limit 30".into(), probe: true, dur_s: 5.0, ..Dumbbell::new(4) };
    let r = d.run();
    let q = bottleneck(&r);
    let rows: Vec<_> = r.probe.iter().filter(|p| p.dev == "r1:eth0").collect();
    let count = |e: fn(&ProbeEvent) -> bool| rows.iter().filter(|p| e(&p.event)).count() as u64;
    let drops = count(|e| matches!(e, ProbeEvent::Drop));
    let deq = count(|e| matches!(e, ProbeEvent::Dequeue));
    let enq = count(|e| matches!(e, ProbeEvent::Enqueue));
    eprintln!("probe: {enq} enqueues, {deq} dequeues, {drops} drops; qdisc: sent {} drops {} qlen {}", q.sent_packets, q.drops, q.qlen);
    assert!(q.drops > 10, "the small pfifo must overflow: {}", q.drops);
    assert_eq!(drops, q.drops);
    assert_eq!(deq, q.sent_packets);
    // every accepted packet left or is still queued
    assert_eq!(enq, deq + q.qlen);
    // the link put exactly the dequeued packets on the wire
    let l = r.links.iter().find(|l| l.name.starts_with("bottleneck") && l.name.contains("r1->")).unwrap();
    assert_eq!(l.tx_packets, q.sent_packets, "{l:?}");
    let bytes: u64 = rows.iter().filter(|p| matches!(p.event, ProbeEvent::Dequeue)).map(|p| p.len as u64).sum();
    assert_eq!(bytes, q.sent_bytes);
}


/// Seed system 1's router tree (seed-systems §1.4): HTB default 1:1, classes 1:10…1:100, SFQ
/// leaves, and u32 filters `ip protocol 132` + chunk type 0x96 at byte 32 + flags = i at byte
/// 33 → class 1:(10·i) for i = 1…9.
fn sndbuf_tree() -> Vec<String> {
    let mut t = vec!["qdisc add root handle 1: htb default 1".to_string(), "class add parent 1: classid 1:1 htb rate 100mbit".into(), "qdisc add parent 1:1 handle 5: sfq perturb 10".into()];
    for i in 1..=10 {
        t.push(format!("class add parent 1: classid 1:{i}0 htb rate 100mbit"));
        t.push(format!("qdisc add parent 1:{i}0 handle {i}0: sfq perturb 10"));
    }
    for i in 1..=9 {
        t.push(format!("filter add parent 1:0 protocol ip prio {} u32 match ip protocol 132 0xff match u8 0x96 0xff at 32 match u8 0x{i:02x} 0xff at 33 flowid 1:{i}0", 11 - i));
    }
    t
}

/// Decile the V4 marking would carry for one SCTP sample (seed-systems §1.3 `make_adv`).
fn decile(s: &wirelab_sim::record::SctpSample) -> u64 {
    let lhs = s.out_qlen + s.outstanding;
    let rhs = (s.peer_rwnd as u64).min(s.cwnd);
    if lhs > rhs && s.sndbuf_used > 0 {
        10 * (lhs - rhs) / s.sndbuf_used
    } else {
        0
    }
}

#[test]
fn u32_filter_classifies_sctp_packets_by_the_senders_sndbuf_occupancy() {
    // s0 marks every DATA packet with its send-buffer decile (V4), s1 sends unmarked packets
    let mk = |marking: bool| {
        let mut d = Dumbbell { proto: "sctp", tc: sndbuf_tree(), dur_s: 6.0, ..Dumbbell::new(2) };
        if marking {
            d.sysctl[0] = "\"net.sctp.sndbuf_adv\" = \"v4\"".into();
        }
        d.run()
    };
    let r = mk(true);
    let q = bottleneck(&r);
    let class = |minor: u64| q.classes.iter().find(|c| c.classid == format!("1:{minor:x}")).map_or(0, |c| c.packets);
    let per_decile: Vec<u64> = (1..=9).map(|i| class(0x10 * i)).collect();
    let marked: u64 = per_decile.iter().sum();
    // DATA packets each sender got through: at most 1448 (V4) / 1452 user bytes each
    let rx = |k: &str| r.flows.iter().find(|f| f.name == k).unwrap().rx_bytes;
    let (p0, p1) = (rx("k0").div_ceil(1448), rx("k1").div_ceil(1452));
    // deciles the sender's state implies, sampled every 100 ms once data flows
    let mut seen = vec![0u64; 11];
    for s in r.sctp_series.iter().filter(|s| s.flow == "f0" && s.time_s >= 0.1) {
        seen[decile(s).min(10) as usize] += 1;
    }
    eprintln!("packets per class 1:10..1:90 {per_decile:?}, 1:1 {}, 1:100 {}; s0 delivered >= {p0} DATA packets, s1 >= {p1}", class(1), class(0x100));
    eprintln!("f0 decile samples (0..10): {seen:?}");
    let mode_seen = (0..=10).max_by_key(|&d| (seen[d], d)).unwrap() as i64;
    let mode_class = (1..=9).max_by_key(|&d| (per_decile[d - 1], d)).unwrap() as i64;
    assert!(marked > p0 * 9 / 10, "the marking sender's packets are classified: {marked} of {p0}");
    assert!((mode_class - mode_seen).abs() <= 1, "busiest class 1:{mode_class}0 vs the senders' usual decile {mode_seen}");
    // no packets in deciles the sender never came near
    let (lo, hi) = ((1..=10).find(|&d| seen[d] > 0).unwrap(), (1..=10).rev().find(|&d| seen[d] > 0).unwrap());
    for d in 1..=9usize {
        if d + 1 < lo || d > hi + 1 {
            assert_eq!(per_decile[d - 1], 0, "class 1:{d}0 outside the sampled deciles {lo}..={hi}");
        }
    }
    // the unmarked sender and everything else fall into the default class
    assert!(class(1) >= p1, "{} < {p1}", class(1));
    assert_eq!(class(0x100), 0, "nothing is filtered into 1:100");
    assert_eq!(marked + class(1), q.sent_packets);
    // control: without the advertisement chunk every packet is in 1:1
    let r = mk(false);
    let q = bottleneck(&r);
    let c1 = q.classes.iter().find(|c| c.classid == "1:1").unwrap().packets;
    assert_eq!(c1, q.sent_packets);
    assert!(c1 > 4000);
}
/// Data packets of the bottleneck in dequeue order: (packet id, sojourn ms).
fn dequeued_data(r: &RunResults) -> Vec<(u64, f64)> {
    r.probe.iter().filter(|p| p.dev == "r1:eth0" && matches!(p.event, ProbeEvent::Dequeue) && p.len > 1000).map(|p| (p.pkt_id, p.sojourn_ns as f64 / 1e6)).collect()
}

#[test]
fn netem_qdisc_at_a_router_delays_and_its_jitter_reorders_tcp_unless_rate_is_set() {
    let mk = |q: &str| Dumbbell { qdisc: q.into(), owd_ms: 1.0, probe: true, dur_s: 4.0, ..Dumbbell::new(1) }.run();
    let inversions = |d: &[(u64, f64)]| d.windows(2).filter(|w| w[0].0 > w[1].0).count();
    let sacked = |r: &RunResults| r.tcp_series.iter().filter(|x| x.flow == "f0" && x.node == "s0" && x.sacked > 0).count();
    let retrans = |r: &RunResults| r.tcp_series.iter().filter(|x| x.flow == "f0").map(|x| x.total_retrans).max().unwrap_or(0);
    // plain delay: every packet waits at least 10 ms in the qdisc, nothing is reordered
    let r = mk("netem delay 10ms");
    let d = dequeued_data(&r);
    let min = d.iter().map(|x| x.1).fold(f64::MAX, f64::min);
    eprintln!("netem delay 10ms: {} data packets, min sojourn {min:.3} ms, {} inversions, goodput {:.2} Mbit/s", d.len(), inversions(&d), goodputs(&r, 1, 1.0, 4.0)[0] / 1e6);
    assert!(min >= 10.0, "{min}");
    assert_eq!(inversions(&d), 0);
    assert_eq!(sacked(&r), 0, "no reordering, no loss: the receiver never SACKs");
    // no serialisation of its own: the flow still fills the 10 Mbit/s link
    assert!(goodputs(&r, 1, 1.0, 4.0)[0] > 0.97 * 10e6 * MSS / FRAME);
    // jitter: tfifo reorders (the pitfall); the receiver SACKs around the holes
    let r = mk("netem delay 10ms 5ms");
    let d = dequeued_data(&r);
    let (inv, sk) = (inversions(&d), sacked(&r));
    eprintln!("netem delay 10ms 5ms: {inv} inversions in {} data packets, {sk} samples with SACKed data, sender total_retrans {}", d.len(), retrans(&r));
    assert!(inv * 5 > d.len(), "jitter without rate must reorder: {inv} of {}", d.len());
    assert!(sk > 5, "{sk}");
    // with rate, time_to_send follows the last queued packet: no reordering
    let r = mk("netem delay 10ms 5ms rate 10mbit");
    let d = dequeued_data(&r);
    eprintln!("netem delay 10ms 5ms rate 10mbit: {} inversions, {} samples with SACKed data", inversions(&d), sacked(&r));
    assert_eq!(inversions(&d), 0);
    assert_eq!(sacked(&r), 0);
}

#[test]
fn fq_maxrate_at_a_router_paces_each_tcp_flow_to_the_cap() {
    // issue 17: fq's throttled flows wake the router's transmitter (next_wakeup) and cap
    // each flow (forwarded packets are orphans, one fq flow per 5-tuple) at maxrate
    let d = Dumbbell { rate: "100mbit", qdisc: "fq maxrate 2mbit".into(), dur_s: 12.0, ..Dumbbell::new(3) };
    let r = d.run();
    let g = goodputs(&r, 3, 2.0, 12.0);
    let want = 2e6 * MSS / FRAME;
    eprintln!("fq maxrate 2mbit: payload {:?} Mbit/s, expected {:.4} each", mbit(&g), want / 1e6);
    for x in &g {
        assert!((x / want - 1.0).abs() < 0.02, "{x} vs {want}");
    }
    let q = bottleneck(&r);
    assert_eq!(q.kind, "fq");
    assert!(q.sent_packets > 4500, "{q:?}");
}
