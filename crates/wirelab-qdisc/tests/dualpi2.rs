//! `dualpi2` (sch_dualpi2.c, RFC 9332): L4S classification by ECT(1), the step threshold,
//! the PI2 probability update, the coupling (C-queue drops with p², L-queue marks with
//! k·p), the WRR classic protection, and the tc options.
mod common;
use common::*;
use wirelab_core::{Duration, Instant, Pkt};
use wirelab_qdisc::{ClassId, Qdisc, QdiscStats, TcConfig};

fn build(script: &str) -> Box<dyn Qdisc> {
    TcConfig::parse(script).unwrap().build(3, "dualpi2").unwrap()
}
fn xstat(s: &QdiscStats, k: &str) -> i64 {
    s.xstats.iter().find(|x| x.0 == k).unwrap_or_else(|| panic!("no xstat {k} in {s:?}")).1
}
fn pkt(flow: u16, ecn: u8, id: u64) -> Pkt {
    let mut f = FlowSpec::new(UDP, flow);
    f.tos = ecn;
    let mut p = ip_packet(&f, id as u16, None);
    p.meta.id = id;
    p
}
fn ms(x: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(x)
}

#[test]
fn classifies_by_ect1_and_priority() {
    let mut q = build("dualpi2");
    let mut d = Vec::new();
    for (i, e) in [0u8, 1, 2, 3].into_iter().enumerate() {
        q.enqueue(ms(1), pkt(1, e, i as u64), &mut d);
    }
    let s = q.stats();
    // l4s_ect (default): ECT(1) and CE to the L-queue
    assert_eq!((xstat(&s, "pkts_in_l"), xstat(&s, "pkts_in_c")), (2, 2));
    let mut q = build("dualpi2 any_ect");
    for (i, e) in [0u8, 1, 2, 3].into_iter().enumerate() {
        q.enqueue(ms(1), pkt(1, e, i as u64), &mut d);
    }
    assert_eq!(xstat(&q.stats(), "pkts_in_l"), 3);
    // skb->priority = handle:1 or handle:2 selects the L-queue too
    let mut q = build("dualpi2");
    let mut p = pkt(1, 0, 9);
    p.meta.priority = ClassId::new(1, 2).0;
    q.enqueue(ms(1), p, &mut d);
    assert_eq!(xstat(&q.stats(), "pkts_in_l"), 1);
}

#[test]
fn wrr_classic_protection_serves_nine_l_per_c() {
    let mut q = build("dualpi2 step_thresh 1s");
    let mut d = Vec::new();
    for i in 0..200u64 {
        q.enqueue(ms(0), pkt(1, if i % 2 == 0 { 1 } else { 0 }, i), &mut d);
    }
    let order: String = (0..100).map(|_| if q.dequeue(ms(0), &mut d).unwrap().meta.id % 2 == 0 { 'L' } else { 'C' }).collect();
    // credit starts at 1514 × (10 − 90) < 0: L first; +10·len per L, −90·len per C
    assert_eq!(order, "LLLLLLLLLC".repeat(10));
    // classic_protection 50: alternate (credit 0 → L, then +50·len → C, …)
    let mut q = build("dualpi2 step_thresh 1s classic_protection 50%");
    for i in 0..40u64 {
        q.enqueue(ms(0), pkt(1, if i % 2 == 0 { 1 } else { 0 }, i), &mut d);
    }
    let order: String = (0..20).map(|_| if q.dequeue(ms(0), &mut d).unwrap().meta.id % 2 == 0 { 'L' } else { 'C' }).collect();
    assert_eq!(order, "LC".repeat(10));
}

#[test]
fn step_threshold_marks_l4s_packets_that_waited_too_long() {
    // L4S traffic at 12 Mbit/s into 10 Mbit/s: the L-queue grows; with a 1 s target the
    // PI probability stays 0, so every mark is a step mark
    let mut q = build("dualpi2 target 1s step_thresh 2ms");
    let mut d = Vec::new();
    let gap = Duration::transmit_time(1514, 12_000_000);
    let (mut next, mut busy, mut id) = (Instant::ZERO, Instant::ZERO, 0u64);
    let mut seen = 0;
    while next < ms(300) {
        if next <= busy {
            q.enqueue(next, pkt(1, 1, id), &mut d);
            id += 1;
            next += gap;
            continue;
        }
        let p = q.dequeue(busy, &mut d).unwrap();
        let soj = busy.saturating_since(p.meta.enqueued);
        assert_eq!(p.data[1] & 3 == 3, soj > Duration::from_millis(2), "sojourn {soj:?}");
        seen += 1;
        busy += Duration::transmit_time(1514, 10_000_000);
    }
    assert!(seen > 200);
    let s = q.stats();
    assert!(xstat(&s, "step_mark") > 100 && xstat(&s, "step_mark") == xstat(&s, "ecn_mark"), "{s:?}");
    assert_eq!(xstat(&s, "prob"), 0);
    // in packets: more than 3 packets behind in the L-queue
    let mut q = build("dualpi2 step_thresh 3p");
    for i in 0..10u64 {
        q.enqueue(ms(0), pkt(1, 1, i), &mut d);
    }
    let ce: Vec<bool> = (0..10).map(|_| q.dequeue(ms(0), &mut d).unwrap().data[1] & 3 == 3).collect();
    assert_eq!(ce, [true, true, true, true, true, true, false, false, false, false]);
}

#[test]
fn pi2_probability_follows_the_controller() {
    // a packet stuck at the head from t=0: at the k-th update (every 16 ms) qdelay = 16k ms;
    // p += alpha·(qdelay − 15 ms) + beta·(qdelay − previous), alpha = 41/256 Hz, beta =
    // 819/256 Hz as the kernel quantises them (dualpi2_scale_alpha_beta(): per-ns gains in
    // units of MAX_PROB/64, truncated, so alpha is 0.05 % low)
    let mut q = build("dualpi2");
    let mut d = Vec::new();
    q.enqueue(Instant::ZERO, pkt(1, 0, 0), &mut d);
    let gain = |x: u32| wirelab_qdisc::dualpi2::scale_alpha_beta(x) as f64 * 1e9 / 64.0 / u32::MAX as f64;
    let (a, b) = (gain(41), gain(819));
    assert!((a / (41.0 / 256.0) - 1.0).abs() < 1e-3 && (b / (819.0 / 256.0) - 1.0).abs() < 1e-3);
    let (mut p, mut last) = (0.0f64, 0.0f64);
    for k in 1..=40u64 {
        let qd = 0.016 * k as f64;
        p = (p + a * (qd - 0.015) + b * (qd - last)).clamp(0.0, 1.0);
        last = qd;
        // an enqueue just after the update applies it (the head packet stays)
        q.enqueue(ms(16 * k) + Duration::from_nanos(1), pkt(1, 0, k), &mut d);
        let got = xstat(&q.stats(), "prob") as f64 / u32::MAX as f64;
        assert!((got - p).abs() < 1e-8, "update {k}: prob {got}, want {p}");
        if p >= 1.0 {
            break;
        }
    }
    assert!(p >= 1.0, "the probability saturates");
}

#[test]
fn coupling_drops_classic_with_p_squared_and_marks_l4s_with_k_p() {
    // Not-ECT classic at 9 Mbit/s + ECT(1) L4S at 2 Mbit/s into 10 Mbit/s: PI2 settles
    // where classic loses ~1 Mbit/s; every AQM decision uses the current p (read after
    // each dequeue, which applies the due updates first)
    let mut q = build("dualpi2 step_thresh 1s");
    let mut d = Vec::new();
    let (gc, gl) = (Duration::transmit_time(1514, 9_000_000), Duration::transmit_time(1514, 2_000_000));
    let (mut nc, mut nl, mut busy, mut id) = (Instant::ZERO, Instant::ZERO + Duration::from_micros(333), Instant::ZERO, 0u64);
    let (mut exp_c, mut obs_c, mut exp_l, mut obs_l) = (0.0f64, 0u64, 0.0f64, 0u64);
    let end = ms(60_000);
    while busy < end {
        if nc <= busy || nl <= busy {
            let l = nl < nc;
            let t = if l { nl } else { nc };
            q.enqueue(t, pkt(if l { 2 } else { 1 }, if l { 1 } else { 0 }, id), &mut d);
            id += 1;
            if l {
                nl += gl;
            } else {
                nc += gc;
            }
            assert!(d.is_empty(), "no tail drops");
            continue;
        }
        let out = q.dequeue(busy, &mut d);
        let p = xstat(&q.stats(), "prob") as f64 / u32::MAX as f64;
        let warm = busy > ms(10_000);
        for x in d.drain(..) {
            assert_eq!(x.data[1] & 3, 0, "only classic packets are dropped below overload");
            if warm {
                obs_c += 1;
                exp_c += p * p;
            }
        }
        match out {
            Some(x) => {
                if warm {
                    if x.data[1] & 3 == 0 {
                        exp_c += p * p;
                    } else {
                        exp_l += (2.0 * p).min(1.0);
                        obs_l += (x.data[1] & 3 == 3) as u64;
                    }
                }
                busy += Duration::transmit_time(x.len() as u64, 10_000_000);
            }
            None => busy = nc.min(nl),
        }
    }
    let s = q.stats();
    let p_end = xstat(&s, "prob") as f64 / u32::MAX as f64;
    eprintln!("classic drops {obs_c} (expected {exp_c:.0}), L4S marks {obs_l} (expected {exp_l:.0}), p {p_end:.3}, {s:?}");
    assert!(obs_c > 2000 && obs_l > 2000, "{obs_c} {obs_l}");
    assert!((obs_c as f64 / exp_c - 1.0).abs() < 0.05, "classic drops {obs_c} vs Σp² {exp_c}");
    assert!((obs_l as f64 / exp_l - 1.0).abs() < 0.05, "L4S marks {obs_l} vs Σ2p {exp_l}");
    // PI2 settles where classic loses what exceeds the link: 1 of 9 Mbit/s, p ≈ 1/3
    assert!((p_end - 1.0 / 3.0).abs() < 0.1, "p {p_end}");
}

#[test]
fn options_and_counters() {
    let q = build("dualpi2");
    let s = q.stats();
    for (k, v) in [("limit", 10000), ("memory_limit", 10000 * 2 * 1514), ("coupling_factor", 2), ("classic_protection", 10), ("credit", -121120)] {
        assert_eq!(xstat(&s, k), v, "{k}");
    }
    let q = build("dualpi2 limit 100 coupling_factor 3 classic_protection 20 any_ect overflow drop_enqueue max_rtt 200ms");
    let s = q.stats();
    assert_eq!([xstat(&s, "limit"), xstat(&s, "memory_limit"), xstat(&s, "coupling_factor"), xstat(&s, "credit")], [100, 100 * 3028, 3, 1514 * (20 - 80)]);
    for (cfg, want) in [
        ("dualpi2 coupling_factor 0", "1..=255"),
        ("dualpi2 classic_protection 120%", "0%..=100%"),
        ("dualpi2 alpha 0.001", "rounds to zero"),
        ("dualpi2 step_thresh 5q", "packets like 5p"),
        ("dualpi2 max_rtt 10ms typical_rtt 20ms", "typical_rtt"),
        ("dualpi2 limit 0", "at least 1"),
        ("dualpi2 ecn", "unsupported option `ecn` (valid: limit, memlimit"),
    ] {
        let e = TcConfig::parse(cfg).unwrap_err();
        assert!(e.to_string().contains(want), "{cfg}: {e}");
    }
}
