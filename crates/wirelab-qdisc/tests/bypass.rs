//! `Qdisc::bypass` (TCQ_F_CAN_BYPASS): where a qdisc takes it, its counters and the packet
//! end up exactly as after `enqueue` + `dequeue` at the same instant; where it refuses, the
//! ordinary path is still what decides (a full or zero-limit queue, a packet too large for
//! a bfifo, a classful or AQM qdisc).
mod common;
use common::*;
use wirelab_core::{Instant, Pkt};
use wirelab_qdisc::{Qdisc, TcConfig};

fn build(spec: &str) -> Box<dyn Qdisc> {
    TcConfig::parse(spec).unwrap().build(11, "bypass-test").unwrap()
}
fn pkt(flow: u16, size: usize, id: u64) -> Pkt {
    let mut f = FlowSpec::new(UDP, flow);
    f.size = size;
    let mut p = ip_packet(&f, id as u16, None);
    p.meta.id = id;
    p
}

#[test]
fn bypass_counts_as_enqueue_then_dequeue() {
    for spec in ["pfifo_fast", "pfifo limit 5", "bfifo limit 3000", "pfifo_head_drop limit 2"] {
        let (mut a, mut b) = (build(spec), build(spec));
        let mut d = Vec::new();
        for i in 0..4u64 {
            let now = Instant::from_nanos(1_000 * (i + 1));
            let mut p = pkt(i as u16, 200 + 300 * i as usize, i);
            assert!(a.bypass(now, &mut p), "{spec}: empty qdisc takes the bypass");
            a.enqueue(now, pkt(9, 100, 99), &mut d);
            // not empty any more: refused
            let mut q = pkt(1, 100, 100);
            assert!(!a.bypass(now, &mut q), "{spec}: a non-empty qdisc must refuse");
            assert!(a.dequeue(now, &mut d).is_some());
            b.enqueue(now, pkt(i as u16, 200 + 300 * i as usize, i), &mut d);
            let out = b.dequeue(now, &mut d).unwrap();
            assert_eq!((out.meta.enqueued, out.meta.id), (p.meta.enqueued, p.meta.id), "{spec}");
            b.enqueue(now, pkt(9, 100, 99), &mut d);
            assert!(b.dequeue(now, &mut d).is_some());
        }
        assert!(d.is_empty());
        assert_eq!(a.stats(), b.stats(), "{spec}: tc -s counters");
        assert!(a.idle_dequeue_is_noop() && b.idle_dequeue_is_noop());
    }
}

#[test]
fn bypass_refused_where_enqueue_would_drop_or_decide() {
    let mut p = pkt(0, 1000, 1);
    assert!(!build("pfifo limit 0").bypass(Instant::ZERO, &mut p));
    assert!(!build("bfifo limit 500").bypass(Instant::ZERO, &mut p));
    for spec in ["sfq", "fq_codel", "codel", "fq", "tbf rate 1mbit burst 10k latency 10ms", "prio"] {
        let mut q = build(spec);
        assert!(!q.bypass(Instant::ZERO, &mut p), "{spec}");
        assert!(!q.idle_dequeue_is_noop(), "{spec}");
    }
}
