//! Operation-sequence fuzzing (style.md §7): random enqueues, dequeues and time steps on
//! every qdisc kind; packets are conserved, backlog and counters agree, verdicts are honest,
//! throttled qdiscs always name a future wake-up, and runs are deterministic.
mod common;
use common::*;
use std::collections::BTreeMap;
use wirelab_core::{Duration, Instant, Pkt, Rng};
use wirelab_qdisc::{ClassId, TcConfig, Verdict};

const CONFIGS: &[&str] = &[
    "pfifo limit 10",
    "bfifo limit 5000",
    "pfifo_head_drop limit 5",
    "pfifo_fast",
    "qdisc add root handle 1: prio bands 4 priomap 3 2 1 0 3 2 1 0 3 2 1 0 3 2 1 0\nqdisc add parent 1:2 handle 20: sfq limit 10\nfilter add parent 1: u32 match ip protocol 17 0xff flowid 1:4",
    "tbf rate 1mbit burst 3k limit 10000",
    "tbf rate 1mbit burst 2k latency 10ms peakrate 2mbit mtu 1600",
    "qdisc add root handle 1: tbf rate 2mbit burst 5k latency 20ms\nqdisc add parent 1:1 handle 10: codel limit 20 target 1ms interval 10ms",
    "sfq limit 20 perturb 1",
    "sfq headdrop depth 5 limit 30 flows 8 divisor 16 perturb 2 quantum 500",
    "codel limit 50 target 1ms interval 10ms",
    "codel limit 50 target 1ms interval 10ms ecn ce_threshold 2ms",
    "fq_codel limit 30 flows 4 target 1ms interval 10ms drop_batch 4",
    "fq_codel limit 30 flows 64 noecn quantum 300 memory_limit 20000",
    "red limit 20000 min 3000 max 9000 avpkt 1000 burst 5 probability 0.5 ecn",
    "red limit 20000 min 3000 max 9000 avpkt 1000 burst 5 harddrop bandwidth 1mbit",
    "red limit 20000 min 3000 max 9000 avpkt 1000 burst 5 probability 0.5 ecn nodrop",
    "fq_codel limit 30 flows 8 target 1ms interval 10ms ce_threshold 1ms ce_threshold_selector 0x1/0x3",
    "qdisc add root handle 1: htb default 30 r2q 5\n\
     class add parent 1: classid 1:1 htb rate 2mbit ceil 4mbit burst 3k\n\
     class add parent 1:1 classid 1:10 htb rate 500kbit ceil 4mbit prio 1\n\
     class add parent 1:1 classid 1:20 htb rate 500kbit ceil 1mbit quantum 1000\n\
     class add parent 1: classid 1:30 htb rate 1mbit\n\
     qdisc add parent 1:10 handle 10: tbf rate 300kbit burst 2k limit 5000\n\
     qdisc add parent 1:20 handle 20: codel limit 10 target 1ms interval 5ms\n\
     qdisc add parent 1:30 handle 30: sfq limit 10 perturb 1\n\
     filter add parent 1: protocol ip prio 1 u32 match ip protocol 6 0xff flowid 1:10\n\
     filter add parent 1: protocol ip prio 2 u32 match ip protocol 17 0xff flowid 1:20\n\
     filter add parent 1: protocol ip prio 3 handle 5 fw flowid 1:0",
    "qdisc add root handle 1: cbq bandwidth 10mbit avpkt 1000 ewma 4\n\
     class add parent 1: classid 1:1 cbq bandwidth 10mbit rate 5mbit allot 1514 prio 2 avpkt 1000 maxburst 20 minburst 2\n\
     class add parent 1:1 classid 1:10 cbq bandwidth 10mbit rate 1mbit prio 1 avpkt 500 bounded split 1:0 defmap 3f\n\
     class add parent 1:1 classid 1:20 cbq bandwidth 10mbit rate 2mbit prio 3 avpkt 1000 isolated weight 100k\n\
     class add parent 1: classid 1:30 cbq bandwidth 10mbit rate 500kbit avpkt 1000 minidle 100\n\
     qdisc add parent 1:20 handle 20: tbf rate 800kbit burst 3k limit 6000\n\
     qdisc add parent 1:30 handle 30: sfq limit 8\n\
     filter add parent 1: protocol ip prio 1 u32 match ip protocol 6 0xff flowid 1:20\n\
     filter add parent 1: protocol ip prio 2 u32 match ip protocol 132 0xff flowid 1:30",
    "fq limit 40 flow_limit 8 quantum 1000 initial_quantum 2000",
    "fq maxrate 2mbit flow_limit 20 buckets 4 orphan_mask 3 ce_threshold 1ms horizon 20ms",
    "fq nopacing horizon 5ms horizon_cap bands 3 priomap 0 1 2 0 1 2 0 1 2 0 1 2 0 1 2 0 weights 16384 20000 30000",
    "qdisc add root handle 1: tbf rate 3mbit burst 5k latency 50ms\nqdisc add parent 1:1 handle 10: fq low_rate_threshold 1mbit refill_delay 1ms",
    "qdisc add root handle 1: htb default 1\nclass add parent 1: classid 1:1 htb rate 2mbit\nqdisc add parent 1:1 handle 10: fq flow_limit 5",
    "dualpi2 limit 30 target 1ms tupdate 2ms step_thresh 1ms",
    "dualpi2 any_ect drop_enqueue overflow coupling_factor 5 limit 20 target 500us tupdate 1ms step_thresh 2p min_qlen_step 1",
    // no default class: unclassified packets take the direct queue
    "htb direct_qlen 3\n1:1 htb rate 1mbit\nu32 match ip protocol 132 0xff flowid 1:1",
];

fn random_packet(r: &mut Rng, id: u64) -> Pkt {
    let mut p = if r.chance(0.05) {
        // garbage: truncated or random bytes
        let n = r.below(40) as usize;
        let mut d: Vec<u8> = (0..n).map(|_| r.next_u32() as u8).collect();
        if n > 0 && r.chance(0.5) {
            d[0] = 0x45;
        }
        let mut p = Pkt::new(d);
        p.meta.l2_len = 14;
        p
    } else {
        let proto = [TCP, UDP, SCTP, 1][r.below(4) as usize];
        let mut f = FlowSpec::new(proto, r.below(12) as u16);
        f.size = 40 + r.below(1461) as usize;
        f.tos = (r.below(4) as u8) | ((r.below(4) as u8) << 3);
        let chunk = (r.chance(0.3)).then(|| (0x96, r.below(11) as u8));
        ip_packet(&f, id as u16, chunk)
    };
    p.meta.id = id;
    p.meta.mark = r.below(8) as u32;
    // scheduling metadata (fq): a socket or none, a pacing rate or none, an EDT time or none
    p.meta.sk = r.below(6);
    if r.chance(0.5) {
        p.meta.pacing_rate = [0, 50_000, 1_000_000, 100_000_000][r.below(4) as usize];
    }
    if r.chance(0.3) {
        p.meta.txtime = Instant::from_nanos(1 + r.below(200_000_000));
    }
    if r.chance(0.05) {
        p.meta.priority = ClassId::new(1, r.below(0x31) as u16).0;
    }
    p
}

/// Runs `ops` random operations; returns the ids in dequeue order.
fn exercise(cfg: &str, seed: u64, ops: usize) -> Vec<u64> {
    let mut q = TcConfig::parse(cfg).unwrap().build(seed, "fuzz").unwrap();
    let mut r = Rng::stream(seed, "ops");
    let mut inq: BTreeMap<u64, usize> = BTreeMap::new();
    let mut now = Instant::ZERO;
    let (mut n_enq, mut n_deq, mut n_drop, mut deq_bytes) = (0u64, 0u64, 0u64, 0u64);
    let mut dropped = Vec::new();
    let mut order = Vec::new();
    let mut next_id = 1u64;
    let check_dropped = |dropped: &mut Vec<Pkt>, inq: &mut BTreeMap<u64, usize>, n_drop: &mut u64| {
        for p in dropped.drain(..) {
            let len = inq.remove(&p.meta.id).unwrap_or_else(|| panic!("{cfg}: dropped packet {} was not queued", p.meta.id));
            assert_eq!(len, p.len());
            *n_drop += 1;
        }
    };
    for step in 0..ops + 100_000 {
        let draining = step >= ops;
        if draining && inq.is_empty() {
            break;
        }
        let x = r.next_f64();
        if !draining && x < 0.6 {
            let p = random_packet(&mut r, next_id);
            let id = p.meta.id;
            next_id += 1;
            inq.insert(id, p.len());
            n_enq += 1;
            let v = q.enqueue(now, p, &mut dropped);
            let own = dropped.iter().any(|d| d.meta.id == id);
            match v {
                Verdict::Queued => assert!(dropped.is_empty(), "{cfg}: Queued but dropped {}", dropped.len()),
                Verdict::Congested => assert!(!dropped.is_empty() && !own, "{cfg}: bad Congested"),
                Verdict::Dropped => assert!(own, "{cfg}: Dropped but packet not in dropped"),
            }
            check_dropped(&mut dropped, &mut inq, &mut n_drop);
        } else if draining || x < 0.9 {
            match q.dequeue(now, &mut dropped) {
                Some(p) => {
                    let len = inq.remove(&p.meta.id).unwrap_or_else(|| panic!("{cfg}: dequeued unknown packet {}", p.meta.id));
                    assert_eq!(len, p.len());
                    n_deq += 1;
                    deq_bytes += p.len() as u64;
                    order.push(p.meta.id);
                    // a link of 10 Mbit/s
                    if draining {
                        now += Duration::transmit_time(p.len() as u64, 10_000_000);
                    }
                }
                None => {
                    check_dropped(&mut dropped, &mut inq, &mut n_drop);
                    if q.qlen() > 0 {
                        let w = q.next_wakeup(now).unwrap_or_else(|| panic!("{cfg}: throttled without wakeup"));
                        assert!(w > now, "{cfg}: wakeup {w:?} not after {now:?}");
                        if draining {
                            now = w;
                        }
                    }
                }
            }
            check_dropped(&mut dropped, &mut inq, &mut n_drop);
        } else if r.chance(0.02) {
            now += Duration::from_millis(1500);
        } else {
            now += Duration::from_micros(r.below(5000));
        }
        assert_eq!(q.qlen(), inq.len(), "{cfg}: qlen");
        assert_eq!(q.backlog_bytes(), inq.values().sum::<usize>(), "{cfg}: backlog");
        assert_eq!(n_enq, n_deq + n_drop + inq.len() as u64, "{cfg}: conservation");
        let s = q.stats();
        assert_eq!(s.drops, n_drop, "{cfg}: drop counter");
        assert_eq!(s.packets, n_deq, "{cfg}: sent counter");
        assert_eq!(s.bytes, deq_bytes, "{cfg}: sent bytes");
        assert_eq!(s.qlen as usize, inq.len());
    }
    assert!(inq.is_empty(), "{cfg}: {} packets never left", inq.len());
    // classful: leaf classes' counters add up to the root's
    let mut cs = Vec::new();
    q.class_stats(&mut cs);
    let s = q.stats();
    if s.kind == "htb" {
        let direct = s.xstats.iter().find(|x| x.0 == "direct_packets_stat").unwrap().1 as u64;
        let leaves: u64 = cs.iter().filter(|c| c.kind == "htb" && c.leaf.is_some()).map(|c| c.packets).sum();
        assert_eq!(leaves + direct, s.packets, "{cfg}");
    }
    if s.kind == "cbq" {
        assert_eq!(cs[0].packets, s.packets, "{cfg}: the link class counts every packet");
    }
    if s.kind == "prio" {
        assert_eq!(cs.iter().filter(|c| c.kind == "prio").map(|c| c.packets).sum::<u64>(), s.packets);
    }
    assert!(n_enq > 0);
    order
}

#[test]
fn packets_are_conserved_in_every_qdisc() {
    for cfg in CONFIGS {
        for seed in 0..3 {
            exercise(cfg, seed, 3000);
        }
    }
}

#[test]
fn runs_are_deterministic() {
    for cfg in CONFIGS {
        assert_eq!(exercise(cfg, 5, 2000), exercise(cfg, 5, 2000), "{cfg}");
    }
}

#[test]
fn sfq_perturbation_depends_on_seed() {
    // the dequeue order through SFQ with many flows depends on the hash key
    let outs: Vec<Vec<u64>> = (0..4).map(exercise_sfq_order).collect();
    assert!(outs.windows(2).any(|w| w[0] != w[1]));
}

fn exercise_sfq_order(seed: u64) -> Vec<u64> {
    let mut q = TcConfig::parse("sfq divisor 16 flows 4 limit 40").unwrap().build(seed, "sfq").unwrap();
    let mut d = Vec::new();
    for i in 0..40u16 {
        let mut p = ip_packet(&FlowSpec::new(UDP, i % 10), i, None);
        p.meta.id = i as u64;
        q.enqueue(Instant::ZERO, p, &mut d);
    }
    std::iter::from_fn(|| q.dequeue(Instant::ZERO, &mut d)).map(|p| p.meta.id).collect()
}
