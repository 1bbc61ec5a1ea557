//! The behaviours issue 4 requires, on synthetic greedy flows served by a link.
mod common;
use common::*;
use wirelab_core::{Duration, Instant};
use wirelab_qdisc::{ClassId, Qdisc, TcConfig};

const MBIT: u64 = 1_000_000;

fn build(script: &str, seed: u64) -> Box<dyn Qdisc> {
    TcConfig::parse(script).unwrap().build(seed, "test/eth0").unwrap()
}

#[test]
fn htb_prio_decides_who_borrows_first() {
    // both leaves are over their 1 Mbit/s rate and borrow from 1:1; prio 0 takes the
    // parent's spare bandwidth first (htb_dequeue() scans prios from 0)
    let mut q = build(
        "htb default 10\n1:1 htb rate 10mbit\n1:10 parent 1:1 htb rate 1mbit ceil 10mbit prio 0\n\
         1:20 parent 1:1 htb rate 1mbit ceil 10mbit prio 1\nu32 match ip dport 5002 0xffff flowid 1:20",
        0,
    );
    let mut f2 = FlowSpec::new(UDP, 1);
    f2.dport = 5002;
    let mut s = vec![
        Source::at_rate(FlowSpec::new(UDP, 0), 30 * MBIT, Instant::ZERO, secs(6.0)),
        Source::at_rate(f2, 30 * MBIT, Instant::ZERO, secs(6.0)),
    ];
    let o = run_link(q.as_mut(), &mut s, 100 * MBIT, secs(1.0), secs(6.0));
    let t = throughputs(&o, 5.0);
    assert!((t[0] / 9e6 - 1.0).abs() < 0.02 && (t[1] / 1e6 - 1.0).abs() < 0.03, "{t:?}");
}

/// 8 UDP flows with different offered rates (all above the fair share), starting 100 ms
/// apart; throughput measured from 1 s to 10 s.
fn eight_flows(proto: u8) -> Vec<Source> {
    (0..8u16)
        .map(|i| {
            let mut f = FlowSpec::new(proto, i);
            f.dport = 5001 + i;
            let mut s = Source::at_rate(f, (2 + i as u64) * MBIT, secs(0.1 * i as f64), secs(10.0));
            s.jitter = Some(wirelab_core::Rng::stream(99, &format!("test/src{i}")));
            s
        })
        .collect()
}

fn throughputs(o: &Outcome, secs_: f64) -> Vec<f64> {
    o.delivered.iter().map(|&(b, _)| b as f64 * 8.0 / secs_).collect()
}

#[test]
fn sfq_eight_greedy_flows_are_fair() {
    for proto in [UDP, TCP, SCTP] {
        let mut q = build("root sfq perturb 10", 42);
        let mut s = eight_flows(proto);
        let o = run_link(q.as_mut(), &mut s, 10 * MBIT, secs(1.0), secs(10.0));
        let t = throughputs(&o, 9.0);
        let j = jain(&t);
        assert!(j >= 0.98, "proto {proto}: Jain {j:.4}, throughputs {t:?}");
        let total: f64 = t.iter().sum();
        assert!(total > 0.98 * 10e6, "link not saturated: {total}");
        // SFQ holds at most 127 packets
        let st = q.stats();
        assert!(st.qlen <= 127);
    }
}

#[test]
fn pfifo_rewards_aggressive_flows() {
    let mut q = build("pfifo limit 100", 1);
    let mut s = eight_flows(UDP);
    let o = run_link(q.as_mut(), &mut s, 10 * MBIT, secs(1.0), secs(10.0));
    let t = throughputs(&o, 9.0);
    let j = jain(&t);
    // drop-tail FIFO: each flow's share follows its offered load (2..9 Mbit/s)
    assert!(j < 0.9, "Jain {j:.4} {t:?}");
    assert!(t[7] > 3.0 * t[0], "{t:?}");
    let ratio = t[7] / t[0];
    assert!((3.5..6.0).contains(&ratio), "share ratio {ratio} should follow offered 9/2");
}

#[test]
fn tbf_enforces_rate_within_one_percent() {
    for (rate, script) in [(MBIT, "tbf rate 1mbit burst 10k latency 50ms"), (5 * MBIT, "root tbf rate 5mbit burst 5k limit 30000")] {
        let mut q = build(script, 0);
        let mut s = vec![Source::at_rate(FlowSpec::new(UDP, 0), 3 * rate, Instant::ZERO, secs(11.0))];
        let o = run_link(q.as_mut(), &mut s, 100 * MBIT, secs(1.0), secs(11.0));
        let r = o.delivered[0].0 as f64 * 8.0 / 10.0;
        assert!((r / rate as f64 - 1.0).abs() < 0.01, "{script}: {r}");
        assert!(q.stats().overlimits > 0);
        assert!(q.stats().drops > 0);
    }
}

#[test]
fn htb_enforces_rate_within_one_percent() {
    let mut q = build(
        "qdisc add root handle 1: htb default 10\n\
         class add parent 1: classid 1:1 htb rate 8mbit\n\
         class add parent 1:1 classid 1:10 htb rate 2mbit ceil 8mbit",
        0,
    );
    let mut s = vec![Source::at_rate(FlowSpec::new(UDP, 0), 20 * MBIT, Instant::ZERO, secs(11.0))];
    let o = run_link(q.as_mut(), &mut s, 100 * MBIT, secs(1.0), secs(11.0));
    let r = o.delivered[0].0 as f64 * 8.0 / 10.0;
    assert!((r / 8e6 - 1.0).abs() < 0.01, "{r}");
    // the parent keeps hitting its ceil: htb_change_class_mode() counts each CANT_SEND entry
    let mut cs = Vec::new();
    q.class_stats(&mut cs);
    assert!(cs[0].overlimits > 100 && q.stats().overlimits >= cs[0].overlimits, "{:?}", cs[0]);
    // ceil == rate: no borrowing possible
    let mut q = build("htb default 1\n1:1 htb rate 3mbit", 0);
    let mut s = vec![Source::at_rate(FlowSpec::new(TCP, 0), 20 * MBIT, Instant::ZERO, secs(11.0))];
    let o = run_link(q.as_mut(), &mut s, 100 * MBIT, secs(1.0), secs(11.0));
    let r = o.delivered[0].0 as f64 * 8.0 / 10.0;
    assert!((r / 3e6 - 1.0).abs() < 0.01, "{r}");
}

fn borrow_tree() -> &'static str {
    "qdisc add root handle 1: htb default 20\n\
     class add parent 1: classid 1:1 htb rate 10mbit ceil 10mbit\n\
     class add parent 1:1 classid 1:10 htb rate 3mbit ceil 10mbit\n\
     class add parent 1:1 classid 1:20 htb rate 7mbit ceil 10mbit\n\
     filter add parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10\n\
     filter add parent 1: protocol ip prio 2 u32 match ip dport 5002 0xffff flowid 1:20"
}

#[test]
fn htb_borrowing_lets_lone_class_reach_ceil() {
    let mut q = build(borrow_tree(), 0);
    let mut s = vec![Source::at_rate(FlowSpec::new(UDP, 0), 30 * MBIT, Instant::ZERO, secs(11.0))];
    let o = run_link(q.as_mut(), &mut s, 100 * MBIT, secs(1.0), secs(11.0));
    let r = o.delivered[0].0 as f64 * 8.0 / 10.0;
    assert!((r / 10e6 - 1.0).abs() < 0.01, "lone 3mbit class got {r}");
    let mut cs = Vec::new();
    q.class_stats(&mut cs);
    let c10 = cs.iter().find(|c| c.classid == ClassId::new(1, 0x10)).unwrap();
    assert!(c10.borrows > 0 && c10.lends > 0, "{c10:?}");
    let c20 = cs.iter().find(|c| c.classid == ClassId::new(1, 0x20)).unwrap();
    assert_eq!(c20.packets, 0);
}

#[test]
fn htb_both_classes_get_their_rates() {
    let mut q = build(borrow_tree(), 0);
    let mut f2 = FlowSpec::new(UDP, 1);
    f2.dport = 5002;
    let mut s = vec![
        Source::at_rate(FlowSpec::new(UDP, 0), 30 * MBIT, Instant::ZERO, secs(11.0)),
        Source::at_rate(f2, 30 * MBIT, Instant::ZERO, secs(11.0)),
    ];
    let o = run_link(q.as_mut(), &mut s, 100 * MBIT, secs(1.0), secs(11.0));
    let t = throughputs(&o, 10.0);
    assert!((t[0] / 3e6 - 1.0).abs() < 0.02, "{t:?}");
    assert!((t[1] / 7e6 - 1.0).abs() < 0.02, "{t:?}");
}

#[test]
fn htb_spare_bandwidth_shared_by_quantum() {
    // both borrow from the parent: rates 1 and 1, leftover 8 split by equal quanta
    let mut q = build(
        "htb default 10\n1:1 htb rate 10mbit\n1:10 parent 1:1 htb rate 1mbit ceil 10mbit quantum 1514\n\
         1:20 parent 1:1 htb rate 1mbit ceil 10mbit quantum 1514\n\
         u32 match ip dport 5002 0xffff flowid 1:20",
        0,
    );
    let mut f2 = FlowSpec::new(UDP, 1);
    f2.dport = 5002;
    let mut s = vec![
        Source::at_rate(FlowSpec::new(UDP, 0), 30 * MBIT, Instant::ZERO, secs(6.0)),
        Source::at_rate(f2, 30 * MBIT, Instant::ZERO, secs(6.0)),
    ];
    let o = run_link(q.as_mut(), &mut s, 100 * MBIT, secs(1.0), secs(6.0));
    let t = throughputs(&o, 5.0);
    assert!((t[0] / 5e6 - 1.0).abs() < 0.02 && (t[1] / 5e6 - 1.0).abs() < 0.02, "{t:?}");
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() - 1) as f64 * p) as usize]
}

#[test]
fn codel_keeps_standing_queue_near_target() {
    let mut q = build("codel", 0);
    let soj = reno_run(q.as_mut(), 4, 10 * MBIT, Duration::from_millis(40), secs(30.0));
    let mut late: Vec<Duration> = soj.iter().filter(|(t, _)| *t > secs(10.0)).map(|x| x.1).collect();
    let n = late.len();
    let med = percentile(&mut late, 0.5);
    let p90 = percentile(&mut late, 0.9);
    eprintln!("codel: median {med:?} p90 {p90:?} packets {n} drops {}", q.stats().drops);
    assert!(med <= Duration::from_millis(15), "median sojourn {med:?}");
    assert!(p90 <= Duration::from_millis(40), "p90 sojourn {p90:?}");
    // and the link stays busy: ≥ 85 % of 10 Mbit/s over 20 s
    assert!(n as f64 * 1514.0 * 8.0 / 20.0 > 0.85e7, "{n} packets");
    assert!(q.stats().drops > 0);
    // the same load on a 1000-packet pfifo builds a standing queue far above target
    let mut f = build("pfifo", 0);
    let soj = reno_run(f.as_mut(), 4, 10 * MBIT, Duration::from_millis(40), secs(30.0));
    let mut late: Vec<Duration> = soj.iter().filter(|(t, _)| *t > secs(10.0)).map(|x| x.1).collect();
    let fmed = percentile(&mut late, 0.5);
    eprintln!("pfifo: median {fmed:?}");
    assert!(fmed > Duration::from_millis(100), "pfifo median {fmed:?}");
}

#[test]
fn fq_codel_is_fair_and_keeps_delay_low() {
    let mut q = build("fq_codel", 3);
    let soj = reno_run(q.as_mut(), 4, 10 * MBIT, Duration::from_millis(40), secs(20.0));
    let mut late: Vec<Duration> = soj.iter().filter(|(t, _)| *t > secs(8.0)).map(|x| x.1).collect();
    let med = percentile(&mut late, 0.5);
    assert!(med <= Duration::from_millis(15), "median sojourn {med:?}");
    let mut q = build("fq_codel", 3);
    let mut s = eight_flows(UDP);
    let o = run_link(q.as_mut(), &mut s, 10 * MBIT, secs(1.0), secs(10.0));
    let j = jain(&throughputs(&o, 9.0));
    assert!(j >= 0.98, "{j}");
}

/// The send-buffer study's router script (seed-systems.md §1.4), built from tc lines.
fn sendbuffer_script() -> String {
    let mut s = String::from("qdisc add root handle 1: htb default 1\nclass add parent 1: classid 1:1 htb rate 100mbit\n");
    for i in 1..=10 {
        s += &format!("class add parent 1: classid 1:{} htb rate 100mbit\n", i * 10);
    }
    s += "qdisc add parent 1:1 handle 5: sfq perturb 10\n";
    for i in 1..=10 {
        s += &format!("qdisc add parent 1:{0} handle {0}: sfq perturb 10\n", i * 10);
    }
    for i in 1..=9 {
        s += &format!(
            "filter add parent 1:0 protocol ip prio {} u32 match ip protocol 132 0xff match u8 0x96 0xff at 32 match u8 0x{:02x} 0xff at 33 flowid 1:{}\n",
            11 - i,
            i,
            i * 10
        );
    }
    s
}

#[test]
fn u32_classifies_sctp_chunk_flags_like_the_sendbuffer_script() {
    let mut q = build(&sendbuffer_script(), 7);
    let mut dropped = Vec::new();
    let now = Instant::ZERO;
    let mut expect = std::collections::BTreeMap::<ClassId, u64>::new();
    let mut tag = 0;
    let mut send = |q: &mut Box<dyn Qdisc>, f: &FlowSpec, chunk: Option<(u8, u8)>, class: ClassId, copies: u64| {
        for _ in 0..copies {
            tag += 1;
            q.enqueue(now, ip_packet(f, tag, chunk), &mut dropped);
        }
        *expect.entry(class).or_default() += copies;
    };
    let sctp = FlowSpec { size: 400, ..FlowSpec::new(SCTP, 1) };
    for flag in 1..=9u8 {
        send(&mut q, &sctp, Some((0x96, flag)), ClassId::parse(&format!("1:{}", flag as u32 * 10)).unwrap(), flag as u64 + 1);
    }
    let default = ClassId::new(1, 1);
    send(&mut q, &sctp, Some((0x96, 0)), default, 3); // flag 0
    send(&mut q, &sctp, Some((0x96, 10)), default, 2); // flag 10
    send(&mut q, &sctp, None, default, 4); // unmarked SCTP (DATA first)
    send(&mut q, &sctp, Some((0x97, 1)), default, 1); // other chunk type
    send(&mut q, &FlowSpec::new(TCP, 2), None, default, 5);
    send(&mut q, &FlowSpec::new(UDP, 3), None, default, 6);
    // TCP packet whose byte 32/33 happen to be 0x96 0x01 is not SCTP: default
    let mut t = FlowSpec::new(TCP, 4);
    t.size = 100;
    let mut p = ip_packet(&t, 999, None);
    p.data[32] = 0x96;
    p.data[33] = 0x01;
    q.enqueue(now, p, &mut dropped);
    *expect.entry(default).or_default() += 1;
    assert!(dropped.is_empty());
    // drain, letting time pass as HTB's tokens require (100 Mbit/s classes, 1600 B burst)
    let mut total = 0;
    let mut t = now;
    while q.qlen() > 0 {
        match q.dequeue(t, &mut dropped) {
            Some(_) => total += 1,
            None => t = q.next_wakeup(t).unwrap(),
        }
    }
    let mut cs = Vec::new();
    q.class_stats(&mut cs);
    let htb: Vec<_> = cs.iter().filter(|c| c.kind == "htb").collect();
    assert_eq!(htb.len(), 11);
    for c in &htb {
        let want = expect.get(&c.classid).copied().unwrap_or(0);
        assert_eq!(c.packets, want, "class {}", c.classid);
    }
    // the class text "1:10" is hex, as tc reads it
    assert_eq!(htb.iter().find(|c| c.classid == ClassId::new(1, 0x10)).unwrap().packets, 2);
    assert_eq!(htb.iter().find(|c| c.classid == ClassId::new(1, 0x100)).unwrap().packets, 0);
    // per-class counters sum to the root's
    let root = q.stats();
    assert_eq!(root.packets, total);
    assert_eq!(htb.iter().map(|c| c.packets).sum::<u64>(), root.packets);
    assert_eq!(htb.iter().map(|c| c.bytes).sum::<u64>(), root.bytes);
    // and each leaf sfq's own counters match its class
    let mut qs = Vec::new();
    q.tree_stats(&mut qs);
    assert_eq!(qs.len(), 12);
    for c in &htb {
        let leaf = qs.iter().find(|s| Some(s.handle) == c.leaf).unwrap();
        assert_eq!(leaf.kind, "sfq");
        assert_eq!(leaf.packets, c.packets);
        assert_eq!(leaf.parent, c.classid);
    }
}

#[test]
fn sendbuffer_tree_shares_equally_among_busy_classes() {
    // Net effect noted in §1.4: equal split among non-empty classes (each 100mbit on a
    // 10mbit link, so HTB round-robins by quantum).
    let mut q = build(&sendbuffer_script(), 7);
    let mut s = Vec::new();
    for (i, flag) in [1u8, 5, 9].iter().enumerate() {
        let f = FlowSpec { sport: 3000 + i as u16, ..FlowSpec::new(SCTP, i as u16) };
        let mut src = Source::at_rate(f, 8 * MBIT, Instant::ZERO, secs(6.0));
        src.chunk = Some((0x96, *flag));
        s.push(src);
    }
    let o = run_link(q.as_mut(), &mut s, 10 * MBIT, secs(1.0), secs(6.0));
    let t = throughputs(&o, 5.0);
    assert!(jain(&t) > 0.99, "{t:?}");
}

#[test]
fn skb_priority_selects_class_directly() {
    let mut q = build("htb default 1\n1:1 htb rate 10mbit\n1:2 htb rate 10mbit", 0);
    let mut d = Vec::new();
    let mut p = ip_packet(&FlowSpec::new(UDP, 0), 1, None);
    p.meta.priority = ClassId::new(1, 2).0;
    q.enqueue(Instant::ZERO, p, &mut d);
    let mut p = ip_packet(&FlowSpec::new(UDP, 0), 2, None);
    p.meta.priority = ClassId::new(1, 0).0; // == handle: direct queue
    q.enqueue(Instant::ZERO, p, &mut d);
    while q.dequeue(Instant::ZERO, &mut d).is_some() {}
    let mut cs = Vec::new();
    q.class_stats(&mut cs);
    assert_eq!(cs[1].packets, 1);
    assert_eq!(cs[0].packets, 0);
    assert!(q.stats().xstats.contains(&("direct_packets_stat", 1)));
}

#[test]
fn fw_filter_and_prio_bands() {
    let mut q = build(
        "qdisc add root handle 1: prio\nfilter add parent 1: protocol ip prio 1 handle 6 fw flowid 1:3",
        0,
    );
    let mut d = Vec::new();
    let mut low = ip_packet(&FlowSpec::new(UDP, 0), 1, None);
    low.meta.mark = 6;
    q.enqueue(Instant::ZERO, low, &mut d);
    let mut f = FlowSpec::new(UDP, 1);
    f.tos = 0x10; // IPTOS_LOWDELAY -> TC_PRIO_INTERACTIVE -> band 0
    q.enqueue(Instant::ZERO, ip_packet(&f, 2, None), &mut d);
    q.enqueue(Instant::ZERO, ip_packet(&FlowSpec::new(UDP, 2), 3, None), &mut d); // band 1
    let order: Vec<u8> = std::iter::from_fn(|| q.dequeue(Instant::ZERO, &mut d)).map(|p| p.src_addr()[3]).collect();
    assert_eq!(order, vec![2, 3, 1]);
    let mut q = build("pfifo_fast", 0);
    q.enqueue(Instant::ZERO, ip_packet(&FlowSpec { tos: 0x08, ..FlowSpec::new(UDP, 0) }, 1, None), &mut d); // bulk: band 2
    q.enqueue(Instant::ZERO, ip_packet(&FlowSpec::new(UDP, 1), 2, None), &mut d);
    q.enqueue(Instant::ZERO, ip_packet(&f, 3, None), &mut d);
    let order: Vec<u8> = std::iter::from_fn(|| q.dequeue(Instant::ZERO, &mut d)).map(|p| p.src_addr()[3]).collect();
    assert_eq!(order, vec![2, 2, 1]);
}

fn cbq_tree(c1: &str, c2: &str) -> String {
    format!(
        "qdisc add root handle 1: cbq bandwidth 10mbit avpkt 1000\n\
         class add parent 1: classid 1:1 cbq bandwidth 10mbit {c1} avpkt 1000\n\
         class add parent 1: classid 1:2 cbq bandwidth 10mbit {c2} avpkt 1000\n\
         filter add parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:1\n\
         filter add parent 1: protocol ip prio 2 u32 match ip dport 5002 0xffff flowid 1:2"
    )
}

fn two_greedy(end: f64) -> Vec<Source> {
    let mut f2 = FlowSpec::new(UDP, 1);
    f2.dport = 5002;
    vec![Source::at_rate(FlowSpec::new(UDP, 0), 20 * MBIT, Instant::ZERO, secs(end)), Source::at_rate(f2, 20 * MBIT, Instant::ZERO, secs(end))]
}

#[test]
fn cbq_bounded_class_is_held_to_its_rate() {
    let mut q = build(&cbq_tree("rate 3mbit prio 1 bounded", "rate 7mbit prio 1 bounded"), 0);
    let mut s = two_greedy(11.0);
    s[1].stop = Instant::ZERO; // only class 1:1 is busy
    let o = run_link(q.as_mut(), &mut s, 10 * MBIT, secs(1.0), secs(11.0));
    let r = o.delivered[0].0 as f64 * 8.0 / 10.0;
    eprintln!("cbq bounded: {r}");
    assert!((r / 3e6 - 1.0).abs() < 0.05, "{r}");
    assert!(q.stats().overlimits > 0);
}

#[test]
fn cbq_borrowing_class_uses_idle_bandwidth() {
    let mut q = build(&cbq_tree("rate 3mbit prio 1", "rate 7mbit prio 1"), 0);
    let mut s = two_greedy(11.0);
    s[1].stop = Instant::ZERO;
    let o = run_link(q.as_mut(), &mut s, 10 * MBIT, secs(1.0), secs(11.0));
    let r = o.delivered[0].0 as f64 * 8.0 / 10.0;
    eprintln!("cbq borrow alone: {r}");
    assert!(r > 0.97 * 10e6, "{r}");
    let mut cs = Vec::new();
    q.class_stats(&mut cs);
    assert!(cs.iter().find(|c| c.classid == ClassId::new(1, 1)).unwrap().borrows > 0);
    // both busy: the link is split roughly by rate (weights 3:7)
    let mut q = build(&cbq_tree("rate 3mbit prio 1", "rate 7mbit prio 1"), 0);
    let mut s = two_greedy(11.0);
    let o = run_link(q.as_mut(), &mut s, 10 * MBIT, secs(1.0), secs(11.0));
    let t = throughputs(&o, 10.0);
    eprintln!("cbq both: {t:?}");
    assert!((t[0] / 3e6 - 1.0).abs() < 0.1 && (t[1] / 7e6 - 1.0).abs() < 0.1, "{t:?}");
}

#[test]
fn cbq_priority_band_wins_spare_bandwidth() {
    let mut q = build(&cbq_tree("rate 1mbit prio 1", "rate 1mbit prio 2"), 0);
    let mut s = two_greedy(11.0);
    let o = run_link(q.as_mut(), &mut s, 10 * MBIT, secs(1.0), secs(11.0));
    let t = throughputs(&o, 10.0);
    eprintln!("cbq prio: {t:?}");
    assert!(t[0] > 4.0 * t[1], "{t:?}");
    assert!(t[0] + t[1] > 0.97 * 10e6, "{t:?}");
}

#[test]
fn cbq_defmap_and_priority_classify() {
    let mut q = build(
        "qdisc add root handle 1: cbq bandwidth 10mbit avpkt 1000\n\
         class add parent 1: classid 1:1 cbq bandwidth 10mbit rate 5mbit prio 1 avpkt 1000 split 1:0 defmap 40\n\
         class add parent 1: classid 1:2 cbq bandwidth 10mbit rate 5mbit prio 1 avpkt 1000",
        0,
    );
    let mut d = Vec::new();
    let lowdelay = FlowSpec { tos: 0x10, ..FlowSpec::new(UDP, 0) }; // TC_PRIO_INTERACTIVE = 6
    for i in 0..3 {
        q.enqueue(Instant::ZERO, ip_packet(&lowdelay, i, None), &mut d);
    }
    q.enqueue(Instant::ZERO, ip_packet(&FlowSpec::new(UDP, 1), 9, None), &mut d); // prio 0: no default -> root class
    let mut direct = ip_packet(&FlowSpec::new(UDP, 2), 10, None);
    direct.meta.priority = ClassId::new(1, 2).0; // SO_PRIORITY = 1:2
    q.enqueue(Instant::ZERO, direct, &mut d);
    let mut t = Instant::ZERO;
    while q.qlen() > 0 {
        match q.dequeue(t, &mut d) {
            Some(_) => {}
            None => t = q.next_wakeup(t).unwrap(),
        }
    }
    let mut cs = Vec::new();
    q.class_stats(&mut cs);
    let get = |id: ClassId| cs.iter().find(|c| c.classid == id).unwrap().packets;
    assert_eq!(get(ClassId::new(1, 1)), 3);
    assert_eq!(get(ClassId::new(1, 2)), 1);
    assert_eq!(get(ClassId::new(1, 0)), 5); // the link class carries everything
}

#[test]
fn tbf_peakrate_limits_the_burst() {
    // a 50 KB bucket would let the first burst out at line rate; peakrate caps it at 2 Mbit/s
    let mut q = build("tbf rate 1mbit burst 50k limit 100k peakrate 2mbit mtu 1600", 0);
    let mut s = vec![Source::at_rate(FlowSpec::new(UDP, 0), 20 * MBIT, Instant::ZERO, secs(2.0))];
    let o = run_link(q.as_mut(), &mut s, 100 * MBIT, Instant::ZERO, secs(0.1));
    let r = o.delivered[0].0 as f64 * 8.0 / 0.1;
    assert!((r / 2e6 - 1.0).abs() < 0.05, "burst went out at {r}");
    let mut q = build("tbf rate 1mbit burst 50k limit 100k", 0);
    let mut s = vec![Source::at_rate(FlowSpec::new(UDP, 0), 20 * MBIT, Instant::ZERO, secs(2.0))];
    let o = run_link(q.as_mut(), &mut s, 100 * MBIT, Instant::ZERO, secs(0.1));
    let r = o.delivered[0].0 as f64 * 8.0 / 0.1;
    assert!(r > 4e6, "without peakrate the bucket empties fast: {r}");
}

#[test]
fn red_drops_early_and_holds_average_between_thresholds() {
    let mut q = build("red limit 400000 min 30000 max 90000 avpkt 1000 burst 55 probability 0.1 bandwidth 10mbit", 5);
    let soj = reno_run(q.as_mut(), 4, 10 * MBIT, Duration::from_millis(40), secs(20.0));
    let st = q.stats();
    let early = st.xstats.iter().find(|x| x.0 == "early").unwrap().1;
    assert!(early > 0, "{st:?}");
    // 30 000..90 000 B at 10 Mbit/s is 24..72 ms of queue
    let mut late: Vec<Duration> = soj.iter().filter(|(t, _)| *t > secs(5.0)).map(|x| x.1).collect();
    let med = percentile(&mut late, 0.5);
    eprintln!("red: early {early}, median sojourn {med:?}");
    assert!(med > Duration::from_millis(10) && med < Duration::from_millis(80), "median sojourn {med:?}");
}

#[test]
fn fq_codel_gives_sparse_flows_low_delay() {
    let thin = |q: &mut dyn Qdisc| {
        let mut s: Vec<Source> = (0..4u16).map(|i| Source::at_rate(FlowSpec { dport: 6000 + i, ..FlowSpec::new(UDP, i) }, 5 * MBIT, Instant::ZERO, secs(10.0))).collect();
        let mut f = FlowSpec::new(TCP, 9);
        f.size = 200;
        s.push(Source::at_rate(f, 40_000, Instant::ZERO + Duration::from_millis(3), secs(10.0)));
        let mut o = run_link(q, &mut s, 10 * MBIT, secs(2.0), secs(10.0));
        assert!(o.sojourn_by_src[4].len() > 100);
        percentile(&mut o.sojourn_by_src[4], 0.5)
    };
    let fq = thin(build("fq_codel", 1).as_mut());
    let fifo = thin(build("pfifo", 1).as_mut());
    eprintln!("thin flow median sojourn: fq_codel {fq:?}, pfifo {fifo:?}");
    assert!(fq < Duration::from_millis(3), "fq_codel thin-flow median sojourn {fq:?}");
    assert!(fifo > Duration::from_millis(500), "pfifo thin-flow median sojourn {fifo:?}");
}
