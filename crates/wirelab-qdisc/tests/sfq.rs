//! SFQ details that mirror sch_sfq.c.
mod common;
use common::*;
use wirelab_core::{Instant, Pkt};
use wirelab_qdisc::{Qdisc, TcConfig, Verdict};

fn sfq(opts: &str) -> Box<dyn Qdisc> {
    TcConfig::parse(&format!("sfq {opts}")).unwrap().build(11, "sfq-test").unwrap()
}
fn pkt(flow: u16, size: usize, id: u64) -> Pkt {
    let mut f = FlowSpec::new(UDP, flow);
    f.size = size;
    let mut p = ip_packet(&f, id as u16, None);
    p.meta.id = id;
    p
}
fn flow_of(p: &Pkt) -> u16 {
    p.src_addr()[3] as u16 - 1
}
fn drain(q: &mut Box<dyn Qdisc>) -> Vec<Pkt> {
    let mut d = Vec::new();
    std::iter::from_fn(|| q.dequeue(Instant::ZERO, &mut d)).collect()
}

#[test]
fn overflow_drops_from_longest_slot() {
    let mut q = sfq("limit 10");
    let mut d = Vec::new();
    let now = Instant::ZERO;
    for i in 0..8 {
        assert_eq!(q.enqueue(now, pkt(0, 100, i), &mut d), Verdict::Queued);
    }
    for i in 8..10 {
        assert_eq!(q.enqueue(now, pkt(1, 100, i), &mut d), Verdict::Queued);
    }
    // an 11th packet from a third flow: the tail of flow 0 (longest) goes
    assert_eq!(q.enqueue(now, pkt(2, 100, 10), &mut d), Verdict::Congested);
    assert_eq!(d.len(), 1);
    assert_eq!((flow_of(&d[0]), d[0].meta.id), (0, 7));
    // a packet of the longest flow itself is its own victim
    d.clear();
    assert_eq!(q.enqueue(now, pkt(0, 100, 11), &mut d), Verdict::Dropped);
    assert_eq!(d[0].meta.id, 11);
    let out = drain(&mut q);
    let count = |f| out.iter().filter(|p| flow_of(p) == f).count();
    assert_eq!((count(0), count(1), count(2)), (7, 2, 1));
}

#[test]
fn depth_limits_each_flow() {
    let mut q = sfq("depth 3");
    let mut d = Vec::new();
    for i in 0..3 {
        assert_eq!(q.enqueue(Instant::ZERO, pkt(0, 100, i), &mut d), Verdict::Queued);
    }
    assert_eq!(q.enqueue(Instant::ZERO, pkt(0, 100, 3), &mut d), Verdict::Dropped);
    assert_eq!(q.enqueue(Instant::ZERO, pkt(1, 100, 4), &mut d), Verdict::Queued);
    // headdrop replaces the oldest packet instead
    let mut q = sfq("depth 3 headdrop");
    for i in 0..3 {
        q.enqueue(Instant::ZERO, pkt(0, 100, i), &mut d);
    }
    d.clear();
    assert_eq!(q.enqueue(Instant::ZERO, pkt(0, 100, 3), &mut d), Verdict::Congested);
    assert_eq!(d[0].meta.id, 0);
    let ids: Vec<u64> = drain(&mut q).iter().map(|p| p.meta.id).collect();
    assert_eq!(ids, vec![1, 2, 3]);
}

#[test]
fn drr_is_byte_fair() {
    let mut q = sfq("limit 127 quantum 1514");
    let mut d = Vec::new();
    let (mut a, mut b) = (0usize, 0usize);
    let mut queued = [0usize; 2];
    let mut id = 0;
    // keep both flows backlogged; count bytes served
    for _ in 0..4000 {
        for (f, size) in [(0u16, 1500usize), (1, 300)] {
            while queued[f as usize] < 20 {
                id += 1;
                assert_eq!(q.enqueue(Instant::ZERO, pkt(f, size, id), &mut d), Verdict::Queued);
                queued[f as usize] += 1;
            }
        }
        let p = q.dequeue(Instant::ZERO, &mut d).unwrap();
        queued[flow_of(&p) as usize] -= 1;
        if flow_of(&p) == 0 {
            a += p.len();
        } else {
            b += p.len();
        }
    }
    let r = a as f64 / b as f64;
    assert!((r - 1.0).abs() < 0.05, "byte ratio {r}");
}

#[test]
fn new_flow_joins_end_of_round() {
    let mut q = sfq("quantum 100");
    let mut d = Vec::new();
    for i in 0..3 {
        q.enqueue(Instant::ZERO, pkt(0, 200, i), &mut d);
        q.enqueue(Instant::ZERO, pkt(1, 200, 10 + i), &mut d);
    }
    let first = q.dequeue(Instant::ZERO, &mut d).unwrap();
    assert_eq!(flow_of(&first), 0);
    q.enqueue(Instant::ZERO, pkt(2, 200, 20), &mut d);
    let order: Vec<u16> = drain(&mut q).iter().map(flow_of).collect();
    // flow 1 has its turn before the newcomer
    assert_eq!(&order[..2], &[1, 2]);
}

#[test]
fn perturbation_rehashes_queued_packets() {
    let mut q = sfq("perturb 1 limit 50");
    let mut d = Vec::new();
    for i in 0..30u64 {
        q.enqueue(Instant::ZERO, pkt((i % 6) as u16, 500, i), &mut d);
    }
    // one dequeue after 3.5 s fires three perturbations, rehashing everything
    let t = Instant::ZERO + wirelab_core::Duration::from_millis(3500);
    assert!(q.dequeue(t, &mut d).is_some());
    let perturbs = q.stats().xstats.iter().find(|x| x.0 == "perturbations").unwrap().1;
    assert_eq!(perturbs, 3);
    assert_eq!(q.qlen() + d.len(), 29);
    // per flow, packets still leave in FIFO order
    let out = drain(&mut q);
    for f in 0..6 {
        let ids: Vec<u64> = out.iter().filter(|p| flow_of(p) == f).map(|p| p.meta.id).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    }
}
