//! `fq` (sch_fq.c): per-flow round robin by credit and quantum, the three priority bands,
//! flow and band limits, EDT departure times, socket pacing rates and `maxrate` to the
//! nanosecond as `fq_dequeue()` computes them, horizon, ce_threshold and the fast path.
mod common;
use common::*;
use wirelab_core::{Duration, Instant, Pkt, PktMeta};
use wirelab_qdisc::{Qdisc, QdiscStats, TcConfig, Verdict};

fn build(script: &str) -> Box<dyn Qdisc> {
    TcConfig::parse(script).unwrap().build(1, "fq").unwrap()
}

fn ns(x: u64) -> Instant {
    Instant::from_nanos(x)
}
fn ms(x: u64) -> Instant {
    Instant::ZERO + Duration::from_millis(x)
}

/// A 1514-byte (with link header) UDP packet of socket `sk` (0 = orphan).
fn pkt(sk: u64, id: u64) -> Pkt {
    let mut p = ip_packet(&FlowSpec::new(UDP, sk as u16), id as u16, None);
    p.meta.id = id;
    p.meta.sk = sk;
    p
}

fn xstat(s: &QdiscStats, k: &str) -> i64 {
    s.xstats.iter().find(|x| x.0 == k).unwrap_or_else(|| panic!("no xstat {k} in {s:?}")).1
}

/// Drives `q` like a device: arrivals at their times, a link of `link_bps` (0 = infinitely
/// fast), dequeue whenever the link is idle, wake at `next_wakeup`. Returns (id, departure).
fn serve(q: &mut dyn Qdisc, mut arrivals: Vec<(Instant, Pkt)>, link_bps: u64, end: Instant) -> Vec<(u64, Instant)> {
    arrivals.sort_by_key(|a| a.0);
    let mut arrivals = std::collections::VecDeque::from(arrivals);
    let (mut now, mut busy) = (Instant::ZERO, Instant::ZERO);
    let mut out = Vec::new();
    let mut d = Vec::new();
    loop {
        while arrivals.front().is_some_and(|a| a.0 <= now) {
            let (_, p) = arrivals.pop_front().unwrap();
            q.enqueue(now, p, &mut d);
        }
        if busy <= now {
            if let Some(p) = q.dequeue(now, &mut d) {
                out.push((p.meta.id, now));
                busy = now + if link_bps == 0 { Duration::ZERO } else { Duration::transmit_time(p.len() as u64, link_bps) };
                continue;
            }
        }
        let wake = if busy > now { Some(busy) } else { q.next_wakeup(now) };
        if let Some(w) = wake {
            assert!(w > now || busy > now, "wakeup {w:?} not after {now:?}");
        }
        let next = [wake, arrivals.front().map(|a| a.0)].into_iter().flatten().min();
        match next {
            Some(t) if t < end => now = t,
            _ => break,
        }
    }
    out
}

#[test]
fn round_robin_by_credit_and_quantum() {
    let mut q = build("fq nopacing");
    let arr: Vec<_> = (0..60u64).map(|i| (Instant::ZERO, pkt(1 + i / 30, i))).collect();
    let out = serve(q.as_mut(), arr, 0, ms(1));
    let flows: String = out.iter().map(|(id, _)| if *id < 30 { 'A' } else { 'B' }).collect();
    // an idle qdisc takes 8 packets on the fast path (fq_fastpath_check()), then
    // initial_quantum 15140 = 10 packets per flow, then quantum 3028 = 2 packets per turn
    assert_eq!(&flows[..36], "AAAAAAAA AAAAAAAAAABBBBBBBBBBAABBAABB".replace(' ', ""), "{flows}");
    assert_eq!(out.len(), 60);
    // quantum 1514 and initial_quantum 3028: 2 packets each, then strict alternation
    let mut q = build("fq nopacing quantum 1514 initial_quantum 3028");
    let arr: Vec<_> = (0..40u64).map(|i| (Instant::ZERO, pkt(1 + i / 20, i))).collect();
    let flows: String = serve(q.as_mut(), arr, 0, ms(1)).iter().map(|(id, _)| if *id < 20 { 'A' } else { 'B' }).collect();
    assert_eq!(flows, format!("AAAAAAAAAABB{}BBBBBBBB", "AB".repeat(10)));
    // per-packet order inside a flow is kept
    assert!(out.iter().filter(|x| x.0 < 30).map(|x| x.0).collect::<Vec<_>>().windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn orphans_hash_by_five_tuple_and_share_by_mask() {
    // orphan packets (no socket) of 4 UDP flows: 4 fq flows; orphan_mask 0 puts them in one
    let mut q = build("fq nopacing");
    let mut d = Vec::new();
    // (the first 8 take the fast path)
    for i in 0..20u64 {
        q.enqueue(Instant::ZERO, pkt(0, i).with_port(i as u16 % 4), &mut d);
    }
    assert_eq!(xstat(&q.stats(), "flows"), 4);
    let mut q = build("fq nopacing orphan_mask 0");
    for i in 0..20u64 {
        q.enqueue(Instant::ZERO, pkt(0, i).with_port(i as u16 % 4), &mut d);
    }
    assert_eq!(xstat(&q.stats(), "flows"), 1);
}

trait WithPort {
    fn with_port(self, port: u16) -> Self;
}
impl WithPort for Pkt {
    fn with_port(mut self, port: u16) -> Self {
        self.data[20..22].copy_from_slice(&(10000 + port).to_be_bytes());
        self
    }
}

#[test]
fn bands_share_by_weight() {
    // priority 6 (interactive) -> band 0, 0 -> band 1, 1 (filler) -> band 2; weights 9:3:1
    let mut q = build("fq nopacing flow_limit 10000");
    let mut d = Vec::new();
    let mut id = 0;
    for (sk, prio) in [(1u64, 6u32), (2, 0), (3, 1)] {
        for _ in 0..3000 {
            let mut p = pkt(sk, id);
            p.meta.priority = prio;
            assert_eq!(q.enqueue(Instant::ZERO, p, &mut d), Verdict::Queued);
            id += 1;
        }
    }
    let s = q.stats();
    // the first 8 took the fast path, which counts in no band
    assert_eq!([xstat(&s, "band0_pkts"), xstat(&s, "band1_pkts"), xstat(&s, "band2_pkts")], [2992, 3000, 3000]);
    for _ in 0..8 {
        q.dequeue(Instant::ZERO, &mut d).unwrap();
    }
    // runs of consecutive packets per flow
    let mut runs: Vec<(u64, u32)> = Vec::new();
    for _ in 0..5000 {
        let f = q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id / 3000;
        match runs.last_mut() {
            Some(r) if r.0 == f => r.1 += 1,
            _ => runs.push((f, 1)),
        }
    }
    // A new flow's first activation goes on band 0's list (fq_flow_add_tail() runs before
    // f->band is set, and a zeroed flow has band 0): the three flows spend their initial
    // quantum (10 packets each) in band 0's first turn. Then weighted round robin: a band
    // turn lasts while its credit is positive, credit = min(credit + weight, weight).
    let weights = [9i64 << 16, 3 << 16, 1 << 16];
    let mut credit = [0i64; 3];
    let mut want: Vec<(u64, u32)> = vec![(0, 10), (1, 10), (2, 10)];
    let mut first = true;
    while want.iter().map(|r| r.1).sum::<u32>() < 4000 {
        for b in 0..3 {
            credit[b] = (credit[b] + weights[b]).min(weights[b]);
            let mut n = 0;
            while credit[b] > 0 {
                credit[b] -= 1514;
                n += 1;
            }
            if first {
                // band 0's first turn started with the 30 packets above
                first = false;
                n -= 30;
            }
            want.push((b as u64, n));
        }
    }
    // the first turn visits band 1 and 2 empty (credit refilled, nothing sent)
    assert_eq!(&runs[..want.len() - 6], &want[..want.len() - 6]);
    assert!(runs[4..10].iter().all(|r| (43..=45).contains(&r.1) || (129..=131).contains(&r.1) || (388..=391).contains(&r.1)), "{runs:?}");
    // custom weights and priomap
    let mut q = build("fq nopacing flow_limit 10000 bands 3 priomap 2 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 weights 65536 65536 65536");
    for i in 0..2000u64 {
        let mut p = pkt(1 + i % 2, i);
        p.meta.priority = (i % 2) as u32; // prio 0 -> band 2, prio 1 -> band 0
        q.enqueue(Instant::ZERO, p, &mut d);
    }
    let s = q.stats();
    assert_eq!([xstat(&s, "band0_pkts"), xstat(&s, "band2_pkts")], [996, 996]);
    let first: Vec<u64> = (0..400).map(|_| q.dequeue(Instant::ZERO, &mut d).unwrap().meta.id % 2).collect();
    let share = first.iter().filter(|&&x| x == 0).count();
    assert!((180..=220).contains(&share), "equal weights: {share} of 400");
}

#[test]
fn flow_limit_and_band_limit_drop() {
    let mut q = build("fq");
    let mut d = Vec::new();
    let v: Vec<Verdict> = (0..150u64).map(|i| q.enqueue(ms(1), pkt(7, i), &mut d)).collect();
    // the first 8 take the fast path (idle qdisc); the flow then holds 100
    assert_eq!(v.iter().filter(|v| **v == Verdict::Dropped).count(), 42);
    assert_eq!(d.len(), 42);
    let s = q.stats();
    assert_eq!((xstat(&s, "flows_plimit"), s.drops, s.qlen), (42, 42, 108));
    assert_eq!(xstat(&s, "fastpath"), 8);
    // limit counts packets per band
    let mut q = build("fq limit 20 flow_limit 1000");
    d.clear();
    for i in 0..30u64 {
        q.enqueue(ms(1), pkt(3, i), &mut d);
    }
    let mut p = pkt(4, 99);
    p.meta.priority = 6; // band 0 has room
    assert_eq!(q.enqueue(ms(1), p, &mut d), Verdict::Queued);
    let s = q.stats();
    assert_eq!((xstat(&s, "band1_drops"), xstat(&s, "band1_pkts"), s.qlen), (2, 20, 29));
}

#[test]
fn edt_txtime_is_honoured_exactly() {
    let mut q = build("fq flow_limit 1000");
    // one socket, departure times 1.234567 ms apart, offered out of order
    let times: Vec<u64> = (1..=200u64).map(|i| i * 1_234_567).collect();
    let mut arr = Vec::new();
    for (i, &t) in times.iter().enumerate() {
        let mut p = pkt(5, i as u64);
        p.meta.txtime = ns(t);
        arr.push((Instant::ZERO, p));
    }
    arr.swap(10, 11);
    arr.swap(50, 80);
    let out = serve(q.as_mut(), arr, 0, ms(1000));
    assert_eq!(out.len(), 200);
    for (i, (id, t)) in out.iter().enumerate() {
        assert_eq!((*id, *t), (i as u64, ns(times[i])), "packet {i}");
    }
    let s = q.stats();
    assert_eq!(xstat(&s, "throttled"), 200);
    // a due EDT time on an idle qdisc takes the fast path and leaves at once
    let mut p = pkt(5, 1000);
    p.meta.txtime = ms(500);
    assert_eq!(serve(q.as_mut(), vec![(ms(600), p)], 0, ms(700)), vec![(1000, ms(600))]);
}

#[test]
fn pacing_rate_spacing_is_exact() {
    // 1 234 567 B/s: fq charges max(len, quantum) = 3028 B per gap once the credit is
    // spent: 3028e9 / 1234567 = 2 452 709.19 ns, truncated (div64_ul)
    let rate = 1_234_567u64;
    let gap = 3028 * 1_000_000_000 / rate;
    assert_eq!(gap, 2_452_681);
    let mut q = build("fq");
    let arr: Vec<_> = (0..40u64)
        .map(|i| {
            let mut p = pkt(9, i);
            p.meta.pacing_rate = rate;
            (ms(1), p)
        })
        .collect();
    let out = serve(q.as_mut(), arr, 0, ms(1000));
    // (a UDP socket with a pacing rate has SO_MAX_PACING_RATE: no fast path) the flow
    // spends its initial 15140 B credit (10 packets), then 2 packets (3028 B) per gap
    let t: Vec<u64> = out.iter().map(|x| x.1.as_nanos()).collect();
    let t0 = ms(1).as_nanos();
    assert!(t[..10].iter().all(|&x| x == t0), "{t:?}");
    for k in 0..15u64 {
        let due = t0 + (k + 1) * gap;
        assert_eq!((t[10 + 2 * k as usize], t[11 + 2 * k as usize]), (due, due), "pair {k}");
    }
    // a rate at or below low_rate_threshold (550kbit = 68750 B/s) paces every packet by
    // its own length: 1514e9 / 50000 = 30.28 ms
    let mut q = build("fq");
    let arr: Vec<_> = (0..10u64)
        .map(|i| {
            let mut p = pkt(9, i);
            p.meta.pacing_rate = 50_000;
            (ms(1), p)
        })
        .collect();
    let out = serve(q.as_mut(), arr, 0, ms(1000));
    let t: Vec<u64> = out.iter().map(|x| x.1.as_nanos()).collect();
    assert_eq!(t.len(), 10);
    for w in t.windows(2) {
        assert_eq!(w[1] - w[0], 30_280_000);
    }
    // orphans (no socket) carry no sk_pacing_rate: not paced
    let mut q = build("fq nopacing");
    let arr: Vec<_> = (0..20u64).map(|i| (ms(1), Pkt { meta: PktMeta { pacing_rate: 50_000, sk: 0, ..pkt(0, i).meta }, ..pkt(0, i) })).collect();
    assert!(serve(q.as_mut(), arr, 0, ms(1000)).iter().all(|x| x.1 == ms(1)));
}

#[test]
fn late_dequeue_shortens_the_next_gap_by_the_drift() {
    // every packet paced by 30.28 ms (50 000 B/s, below low_rate_threshold); the device
    // comes back `late` after each due time: the next gap is len - min(len/2, drift)
    for late_us in [0u64, 5_000, 20_000] {
        let late = Duration::from_micros(late_us);
        let mut q = build("fq");
        let mut d = Vec::new();
        for i in 0..6u64 {
            let mut p = pkt(9, i);
            p.meta.pacing_rate = 50_000;
            q.enqueue(Instant::ZERO, p, &mut d);
        }
        let mut now = Instant::ZERO;
        let mut sent = Vec::new();
        while q.qlen() > 0 {
            match q.dequeue(now, &mut d) {
                Some(_) => sent.push(now),
                None => now = q.next_wakeup(now).unwrap() + late,
            }
        }
        let len = 30_280_000u64;
        let drift = late.as_nanos().min(len / 2);
        assert_eq!(sent.len(), 6);
        for w in sent[1..].windows(2) {
            // due = previous send + len - drift; sent `late` after that
            assert_eq!((w[1] - w[0]).as_nanos(), len - drift + late.as_nanos(), "late {late:?}");
        }
    }
}

#[test]
fn maxrate_caps_a_flow() {
    // maxrate 1mbit = 125 000 B/s: after the initial burst, 2 packets per 3028 B / 125 000 B/s
    let mut q = build("fq maxrate 1mbit");
    let arr: Vec<_> = (0..2000u64).map(|i| (Instant::ZERO, pkt(2, i))).collect();
    let out = serve(q.as_mut(), arr.into_iter().take(100).collect(), 0, Instant::ZERO + Duration::from_secs(10));
    let t: Vec<u64> = out.iter().map(|x| x.1.as_nanos()).collect();
    assert!(t[..10].iter().all(|&x| x == 0), "maxrate disables the fast path; initial quantum");
    for k in 0..40usize {
        let due = (k as u64 + 1) * 24_224_000;
        assert_eq!((t[10 + 2 * k], t[11 + 2 * k]), (due, due), "pair {k}");
    }
    // a greedy flow through a 100 Mbit/s link gets 1 Mbit/s (within the initial burst)
    let mut q = build("fq maxrate 1mbit flow_limit 100000");
    let arr: Vec<_> = (0..6000u64).map(|i| (Instant::ZERO, pkt(2, i))).collect();
    let out = serve(q.as_mut(), arr, 100_000_000, Instant::ZERO + Duration::from_secs(20));
    let in_10s = out.iter().filter(|x| x.1 < ms(10_000)).count() as f64 * 1514.0 * 8.0 / 10.0;
    assert!((in_10s / 1e6 - 1.0).abs() < 0.02, "{in_10s} bit/s");
    // a paced socket below maxrate keeps its own rate; EDT packets are capped by maxrate
    let mut q = build("fq maxrate 100kbit");
    let arr: Vec<_> = (0..5u64)
        .map(|i| {
            let mut p = pkt(3, i);
            p.meta.txtime = ms(1);
            (Instant::ZERO, p)
        })
        .collect();
    let t: Vec<Instant> = serve(q.as_mut(), arr, 0, ms(10_000)).iter().map(|x| x.1).collect();
    // 12 500 B/s: EDT packets are charged their own length, 1514e9/12500 = 121.12 ms
    assert_eq!(t, vec![ms(1), ms(1) + Duration::from_nanos(121_120_000), ms(1) + Duration::from_nanos(242_240_000), ms(1) + Duration::from_nanos(363_360_000), ms(1) + Duration::from_nanos(484_480_000)]);
}


#[test]
fn horizon_drops_or_caps() {
    let mut q = build("fq");
    let mut d = Vec::new();
    let mut p = pkt(1, 1);
    p.meta.txtime = ms(10_000) + Duration::from_nanos(1);
    assert_eq!(q.enqueue(Instant::ZERO, p, &mut d), Verdict::Dropped);
    let mut p = pkt(1, 2);
    p.meta.txtime = ms(10_000);
    assert_eq!(q.enqueue(Instant::ZERO, p, &mut d), Verdict::Queued);
    assert_eq!((xstat(&q.stats(), "horizon_drops"), q.stats().drops), (1, 1));
    // horizon 1s horizon_cap: sent at now + 1 s
    let mut q = build("fq horizon 1s horizon_cap");
    let mut p = pkt(1, 3);
    p.meta.txtime = ms(5_000);
    let out = serve(q.as_mut(), vec![(ms(2), p)], 0, ms(10_000));
    assert_eq!(out, vec![(3, ms(1_002))]);
    assert_eq!(xstat(&q.stats(), "horizon_caps"), 1);
}

#[test]
fn ce_threshold_marks_packets_sent_late() {
    // a 10 Mbit/s link behind fq: packets of a 20 Mbit/s burst wait; those that leave
    // more than 2 ms after they were due are CE-marked (ECT(0))
    // (a huge SO_MAX_PACING_RATE keeps the fast path, which never marks, out of the way;
    // `nopacing` keeps time_next_packet at 0, so a packet is due at its enqueue time)
    let mut q = build("fq nopacing ce_threshold 2ms flow_limit 1000");
    let mut d = Vec::new();
    let mut out = Vec::new();
    let (mut busy, mut next_id) = (Instant::ZERO, 0u64);
    loop {
        let arr = ns(next_id * 605_600);
        if next_id < 100 && arr <= busy {
            let mut f = FlowSpec::new(UDP, 1);
            f.tos = 2;
            let mut p = ip_packet(&f, next_id as u16, None);
            p.meta.id = next_id;
            p.meta.sk = 1;
            p.meta.pacing_rate = u64::MAX - 1;
            q.enqueue(arr, p, &mut d);
            next_id += 1;
            continue;
        }
        match q.dequeue(busy, &mut d) {
            Some(p) => {
                out.push((busy, p));
                busy += Duration::from_nanos(1_211_200); // 1514 B at 10 Mbit/s
            }
            None if next_id < 100 => busy = busy.max(arr),
            None => break,
        }
    }
    assert_eq!(out.len(), 100);
    let mut marked = 0;
    for (t, p) in &out {
        let due = ns(p.meta.id * 605_600);
        let ce = p.data[1] & 3 == 3;
        assert_eq!(ce, t.saturating_since(due) > Duration::from_millis(2), "packet {} waited {:?}", p.meta.id, t.saturating_since(due));
        assert!(wirelab_wire::ipv4::Ipv4Packet::new_checked(&p.data[..]).unwrap().verify_checksum());
        marked += ce as i64;
    }
    assert!(marked > 50);
    assert_eq!(xstat(&q.stats(), "ce_mark"), marked);
}

#[test]
fn fast_path_and_tc_counters() {
    let mut q = build("fq");
    let mut d = Vec::new();
    // idle qdisc: due packets take the internal queue (up to 8 while no flow is eligible)
    for i in 0..10u64 {
        q.enqueue(ms(1), pkt(1, i), &mut d);
    }
    let s = q.stats();
    assert_eq!((xstat(&s, "fastpath"), xstat(&s, "flows")), (8, 1), "{s:?}");
    // a TCP socket's paced packets may take it, a UDP socket with a pacing rate not
    let mut q2 = build("fq");
    let mut f = FlowSpec::new(TCP, 1);
    f.size = 1500;
    let mut p = ip_packet(&f, 1, None);
    p.meta.sk = 1;
    p.meta.pacing_rate = 1000;
    q2.enqueue(ms(1), p, &mut d);
    let mut p = pkt(2, 2);
    p.meta.pacing_rate = 1000;
    q2.enqueue(ms(1), p, &mut d);
    assert_eq!((xstat(&q2.stats(), "fastpath"), xstat(&q2.stats(), "flows")), (1, 1));
    let ids: Vec<u64> = std::iter::from_fn(|| q.dequeue(ms(1), &mut d)).map(|p| p.meta.id).collect();
    assert_eq!(ids, (0..10).collect::<Vec<_>>());
    let s = q.stats();
    assert_eq!((s.packets, s.bytes, s.qlen, s.backlog_bytes), (10, 15140, 0, 0));
    assert_eq!((xstat(&s, "inactive"), xstat(&s, "throttled_flows")), (1, 0));
    // defaults as fq_init() and tc print them
    for (k, v) in [("limit", 10000), ("flow_limit", 100), ("buckets", 1024), ("orphan_mask", 1023), ("quantum", 3028), ("initial_quantum", 15140), ("low_rate_threshold_Bps", 68750), ("refill_delay_ns", 40_000_000), ("horizon_ns", 10_000_000_000), ("horizon_drop", 1), ("pacing", 1)] {
        assert_eq!(xstat(&s, k), v, "{k}");
    }
    let show = wirelab_qdisc::tc_show(q.as_ref());
    assert!(show.contains("qdisc fq 1: root") && show.contains(" fastpath 8") && show.contains(" flows 1"), "{show}");
}

#[test]
fn options_errors_name_the_option_and_range() {
    for (cfg, want) in [
        ("fq buckets 1", "2..=262144"),
        ("fq buckets 1000000", "2..=262144"),
        ("fq initial_quantum 2000000", "1048576"),
        ("fq weights 100 65536 65536", "16384"),
        ("fq weights 65536 65536", "not enough"),
        ("fq bands 4 priomap 0", "must be 3"),
        ("fq bands 3 priomap 0 1 2 3", "0..=2"),
        ("fq maxrate 100gbit", "34359738360bit"),
        ("fq offload_horizon 1ms", "only 0"),
        ("fq flow_limit", "needs a value"),
        ("fq pacing_rate 1mbit", "pacing_rate"),
    ] {
        let e = TcConfig::parse(cfg).unwrap_err();
        assert!(e.to_string().contains(want), "{cfg}: {e}");
    }
    // quantum is clamped silently to 256..=1<<20, as fq_change()
    let q = build("fq quantum 10");
    assert_eq!(xstat(&q.stats(), "quantum"), 256);
    let q = build("fq buckets 1000 nopacing horizon_cap timer_slack 50us refill_delay 10ms");
    let s = q.stats();
    assert_eq!([xstat(&s, "buckets"), xstat(&s, "pacing"), xstat(&s, "horizon_drop"), xstat(&s, "timer_slack_ns"), xstat(&s, "refill_delay_ns")], [1024, 0, 0, 50_000, 10_000_000]);
}
