//! `netem` as a qdisc (net/sched/sch_netem.c), stackable like any other qdisc.
//!
//! The impairment decisions (duplicate, loss with every loss model, corrupt, reorder/gap,
//! delay + jitter with correlation and distribution tables) are wirelab-link's netem
//! machinery: a [`LinkDirection`] without `rate` is driven with a stand-in for each packet
//! (a copy of its IPv4 header, so that `ecn` can tell ECN-capable packets) and its
//! [`TxResult`] tells the fate of the original and the duplicate. The queue
//! itself is Linux's *tfifo*: every packet gets a `time_to_send` at enqueue and leaves in
//! `time_to_send` order (`tfifo_enqueue`: a linear list while times are monotone, an
//! ordered tree for packets that overtake). Consequences, as in Linux:
//!
//! * **jitter reorders** (the classic pitfall): two packets 1 ms apart with `delay 10ms 5ms`
//!   leave in the order of their drawn delays, unless `rate` is set;
//! * with `rate`, `time_to_send` is computed from the last queued packet's
//!   (`netem_enqueue`: `delay -= last->time_to_send - now; now = last->time_to_send`)
//!   plus the packet's transmit time, so packets are spaced by `rate` and never reordered;
//! * `reorder P% gap N` packets go to the *head* of the queue (`__qdisc_enqueue_head`) and
//!   leave at once;
//! * loss happens at enqueue and counts as a drop; `limit` (default 1000) caps the tfifo;
//! * `ecn`: a packet the loss model hits is CE-marked instead if it is ECT(0)/ECT(1)
//!   (`if (q->ecn && INET_ECN_set_ce(skb)) qdisc_qstats_drop(sch)`): as in Linux 6.18 the
//!   mark is counted in `dropped` although the packet is sent, and in the `ecn_marked` xstat.
//!
//! `dequeue` returns `None` until the earliest `time_to_send` is reached;
//! [`Qdisc::next_wakeup`] returns that time (`qdisc_watchdog_schedule_ns`).
use crate::{ClassId, Counters, Qdisc, QdiscStats, Verdict};
use core::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use wirelab_core::{Duration, Instant, Pkt, Rng};
use wirelab_link::{Fate, JitterOrder, LinkDirection, NetemSpec, RateSpec};

/// One queued packet with its `netem_skb_cb->time_to_send`.
struct Slot {
    tts: Instant,
    seq: u64,
    pkt: Pkt,
}
impl PartialEq for Slot {
    fn eq(&self, o: &Self) -> bool {
        (self.tts, self.seq) == (o.tts, o.seq)
    }
}
impl Eq for Slot {}
impl PartialOrd for Slot {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Slot {
    /// Reversed: `BinaryHeap` pops the earliest `(tts, seq)` (the rbtree's leftmost node;
    /// equal times keep insertion order as `tfifo_enqueue` goes right on `>=`).
    fn cmp(&self, o: &Self) -> Ordering {
        (o.tts, o.seq).cmp(&(self.tts, self.seq))
    }
}

/// Extended counters of a [`NetemQdisc`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetemCounters {
    /// Copies dropped by the loss model at enqueue.
    pub lost: u64,
    /// Packets refused because the tfifo held `limit` packets.
    pub limit_drops: u64,
    /// Extra copies made by `duplicate`.
    pub duplicated: u64,
    /// Copies with one flipped bit.
    pub corrupted: u64,
    /// Packets sent to the head of the queue by `reorder`/`gap` (Linux counts them as
    /// `requeues`).
    pub reordered: u64,
    /// Copies the loss model hit that `ecn` CE-marked instead of dropping.
    pub ecn_marked: u64,
}

/// `netem` as a queueing discipline: a tfifo of packets ordered by `time_to_send`.
pub struct NetemQdisc {
    spec: NetemSpec,
    /// The decision engine: `spec` without `rate` (serialisation is this qdisc's business),
    /// jitter order `reorder` (raw draws; ordering is decided here).
    engine: LinkDirection,
    rate: Option<RateSpec>,
    /// wirelab's `jitter-order fifo` without `rate`: `time_to_send` never earlier than the
    /// tfifo tail's.
    clamp_fifo: bool,
    limit: usize,
    /// `sch->q`: packets sent ahead by `reorder`, enqueued at the head.
    head: VecDeque<Slot>,
    /// `t_head … t_tail`: monotone `time_to_send`.
    lin: VecDeque<Slot>,
    /// `t_root`: packets that would overtake the linear list's tail.
    tree: BinaryHeap<Slot>,
    seq: u64,
    backlog: usize,
    /// The reusable stand-in handed to the engine (a copy of the packet's IPv4 header).
    spare: Option<Pkt>,
    rng_corrupt: Rng,
    x: NetemCounters,
    c: Counters,
}

impl core::fmt::Debug for NetemQdisc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NetemQdisc").field("spec", &self.spec.to_string()).field("qlen", &self.qlen()).finish()
    }
}

impl NetemQdisc {
    /// A netem qdisc with `spec` (its `limit` is the tfifo limit; Linux's default is 1000).
    /// `rng` is the qdisc's stream (`TcConfig::build` passes
    /// `Rng::stream(seed, "{name}/qdisc/{handle}/netem")`).
    ///
    /// A spec with jitter and no `jitter_order` behaves as Linux (`reorder`); `jitter-order
    /// fifo` (a wirelab extension) clamps each `time_to_send` to the tfifo tail's. With
    /// `rate`, the jitter order is irrelevant: Linux's rate rule never reorders.
    pub fn new(spec: NetemSpec, mut rng: Rng) -> Self {
        let rng_corrupt = Rng::stream(rng.next_u64(), "corrupt-bit");
        let mut inner = spec.clone();
        inner.rate = None;
        if inner.jitter > Duration::ZERO {
            inner.jitter_order = Some(JitterOrder::Reorder);
        }
        NetemQdisc {
            engine: LinkDirection::new(inner, rng),
            rate: spec.rate,
            clamp_fifo: spec.rate.is_none() && spec.jitter_order == Some(JitterOrder::Fifo),
            limit: spec.limit as usize,
            spec,
            head: VecDeque::new(),
            lin: VecDeque::new(),
            tree: BinaryHeap::new(),
            seq: 0,
            backlog: 0,
            spare: None,
            rng_corrupt,
            x: NetemCounters::default(),
            c: Counters::new(),
        }
    }

    /// Parses the words after `netem` (tc-netem(8) syntax as [`NetemSpec::parse`] reads
    /// it, except that jitter needs no `jitter-order`: as in Linux it reorders).
    pub fn parse_spec(s: &str) -> Result<NetemSpec, String> {
        let has_order = s.split_whitespace().any(|w| w == "jitter-order");
        let r = NetemSpec::parse(s);
        match r {
            Err(_) if !has_order => {
                // retry with Linux's behaviour made explicit; report the original error
                // if that does not help
                NetemSpec::parse(&format!("{s} jitter-order reorder")).map_err(|_| format!("netem: {}", r.unwrap_err()))
            }
            r => r.map_err(|e| format!("netem: {e}")),
        }
    }

    /// The configuration.
    pub fn spec(&self) -> &NetemSpec {
        &self.spec
    }

    /// Extended counters.
    pub fn counters(&self) -> NetemCounters {
        self.x
    }

    fn t_len(&self) -> usize {
        self.lin.len() + self.tree.len()
    }

    /// Latest `time_to_send` among queued packets (`netem_enqueue`'s `last`: the tail of
    /// `sch->q`, the rbtree's last node and `t_tail`). While the linear list is non-empty
    /// its tail is later than every tree node (nodes enter the tree only when earlier than
    /// the tail, and the tail leaves after them), and the tree is empty when it is empty.
    fn last_tts(&self) -> Option<Instant> {
        let a = self.lin.back().map(|s| s.tts);
        let b = self.head.back().map(|s| s.tts);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Places one surviving copy: corrupt, then `time_to_send` and `tfifo_enqueue`.
    fn place(&mut self, now: Instant, mut pkt: Pkt, fate: Fate) {
        let Fate::InFlight { arrival, corrupted, reordered, ecn_marked } = fate else { return };
        if ecn_marked {
            // the engine marked the stand-in: mark the packet (a no-op on the clone of an
            // already marked original) and count it as Linux does
            pkt.inet_ecn_set_ce();
            self.x.ecn_marked += 1;
            self.c.drops += 1;
        }
        if corrupted && !pkt.is_empty() {
            // a bit anywhere in the datagram, the tail included
            pkt.materialize();
            // "Randomized packet corruption": one bit of one byte of the datagram
            let i = self.rng_corrupt.below(pkt.data.len() as u64) as usize;
            let bit = self.rng_corrupt.below(8);
            pkt.data[i] ^= 1 << bit;
            pkt.meta.corrupted = true;
            self.x.corrupted += 1;
        }
        self.backlog += pkt.len();
        let seq = self.seq;
        self.seq += 1;
        if reordered {
            // "Do re-ordering by putting one out of N packets at the front of the queue."
            self.x.reordered += 1;
            self.head.push_front(Slot { tts: now, seq, pkt });
            return;
        }
        let delay = arrival.saturating_since(now);
        let mut tts = now.saturating_add(delay);
        if let Some(r) = self.rate {
            // delay -= last->time_to_send - now; delay = max(0, delay); now = last->time_to_send
            if let Some(last) = self.last_tts() {
                tts = tts.max(last);
            }
            tts = tts.saturating_add(Duration::transmit_time(r.charged_bytes(pkt.len()), r.bps));
        } else if self.clamp_fifo {
            if let Some(last) = self.lin.back() {
                tts = tts.max(last.tts);
            }
        }
        let s = Slot { tts, seq, pkt };
        // tfifo_enqueue(): append while monotone, else into the tree
        if self.lin.back().is_none_or(|t| tts >= t.tts) {
            self.lin.push_back(s);
        } else {
            self.tree.push(s);
        }
    }

    /// The next packet to leave and its `time_to_send` (`netem_peek`: the tree's first node
    /// if strictly earlier than `t_head`).
    fn peek_tts(&self) -> Option<Instant> {
        match (self.tree.peek(), self.lin.front()) {
            (Some(t), Some(l)) => Some(t.tts.min(l.tts)),
            (Some(t), None) => Some(t.tts),
            (None, Some(l)) => Some(l.tts),
            (None, None) => None,
        }
    }

    fn drop_pkt(&mut self, pkt: Pkt, dropped: &mut Vec<Pkt>) {
        self.c.drops += 1;
        dropped.push(pkt);
    }
}

impl Qdisc for NetemQdisc {
    fn kind(&self) -> &'static str {
        "netem"
    }

    fn orphans_on_enqueue(&self) -> bool {
        // netem_enqueue(): `if (q->latency || q->jitter || q->rate) skb_orphan_partial(skb);`
        self.spec.delay > Duration::ZERO || self.spec.jitter > Duration::ZERO || self.rate.is_some()
    }

    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        pkt.meta.enqueued = now;
        // `if (unlikely(q->t_len >= sch->limit))`: checked before the random draws here
        // (Linux draws duplicate/loss/corrupt first; either way the packet is a drop)
        if self.t_len() >= self.limit {
            self.x.limit_drops += 1;
            self.drop_pkt(pkt, dropped);
            return Verdict::Dropped;
        }
        let mut stand_in = self.spare.take().unwrap_or_else(|| Pkt::new(Vec::with_capacity(20)));
        stand_in.data.clear();
        stand_in.data.extend_from_slice(&pkt.data[..pkt.data.len().min(20)]);
        let r = self.engine.transmit(now, stand_in);
        // the stand-ins are in the engine's flight list: take them back (a clone made by
        // `duplicate` is freed; the original is reused)
        while let Some(p) = self.engine.poll_arrival(Instant::MAX) {
            self.spare = Some(p);
        }
        if let Fate::Lost(_) = r.original {
            // count == 0: qdisc_qstats_drop(); __qdisc_drop()
            self.x.lost += 1;
            self.drop_pkt(pkt, dropped);
            return Verdict::Dropped;
        }
        // the clone is taken after `ecn` marked the original and before it is corrupted
        // (skb_clone in netem_enqueue)
        if let Fate::InFlight { ecn_marked: true, .. } = r.original {
            pkt.inet_ecn_set_ce();
        }
        let dup = r.duplicate.map(|f| (f, pkt.clone()));
        self.place(now, pkt, r.original);
        let mut verdict = Verdict::Queued;
        if let Some((f, copy)) = dup {
            self.x.duplicated += 1;
            // Linux enqueues the clone at the root qdisc with duplication off; here it
            // re-enters this qdisc, having met the loss model once more in the engine
            match f {
                Fate::Lost(_) => {
                    self.x.lost += 1;
                    self.drop_pkt(copy, dropped);
                    verdict = Verdict::Congested;
                }
                f if self.t_len() >= self.limit => {
                    let _ = f;
                    self.x.limit_drops += 1;
                    self.drop_pkt(copy, dropped);
                    verdict = Verdict::Congested;
                }
                f => self.place(now, copy, f),
            }
        }
        verdict
    }

    fn dequeue(&mut self, now: Instant, _dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        let s = if let Some(s) = self.head.pop_front() {
            s
        } else {
            let tts = self.peek_tts()?;
            if tts > now {
                // qdisc_watchdog_schedule_ns(time_to_send)
                return None;
            }
            let from_tree = match (self.tree.peek(), self.lin.front()) {
                (Some(t), Some(l)) => t.tts < l.tts,
                (Some(_), None) => true,
                _ => false,
            };
            if from_tree {
                self.tree.pop()?
            } else {
                self.lin.pop_front()?
            }
        };
        self.backlog -= s.pkt.len();
        self.c.sent(&s.pkt);
        Some(s.pkt)
    }

    fn peek_len(&self) -> Option<usize> {
        if let Some(s) = self.head.front() {
            return Some(s.pkt.len());
        }
        match (self.tree.peek(), self.lin.front()) {
            (Some(t), Some(l)) => Some(if t.tts < l.tts { t.pkt.len() } else { l.pkt.len() }),
            (Some(t), None) => Some(t.pkt.len()),
            (None, Some(l)) => Some(l.pkt.len()),
            (None, None) => None,
        }
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if !self.head.is_empty() {
            return Some(now);
        }
        self.peek_tts().map(|t| t.max(now))
    }

    fn qlen(&self) -> usize {
        self.head.len() + self.lin.len() + self.tree.len()
    }

    fn backlog_bytes(&self) -> usize {
        self.backlog
    }

    fn stats(&self) -> QdiscStats {
        let mut s = self.c.snapshot("netem", self.qlen(), self.backlog);
        let ns = |d: Duration| d.as_nanos().min(i64::MAX as u64) as i64;
        s.xstats.push(("limit", self.limit.min(i64::MAX as usize) as i64));
        s.xstats.push(("delay_ns", ns(self.spec.delay)));
        s.xstats.push(("jitter_ns", ns(self.spec.jitter)));
        s.xstats.push(("rate_bps", self.rate.map_or(0, |r| r.bps.min(i64::MAX as u64) as i64)));
        s.xstats.push(("lost", self.x.lost as i64));
        s.xstats.push(("limit_drops", self.x.limit_drops as i64));
        s.xstats.push(("duplicated", self.x.duplicated as i64));
        s.xstats.push(("corrupted", self.x.corrupted as i64));
        s.xstats.push(("reordered", self.x.reordered as i64));
        s.xstats.push(("ecn_marked", self.x.ecn_marked as i64));
        s
    }

    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn q(s: &str, seed: u64) -> NetemQdisc {
        NetemQdisc::new(NetemQdisc::parse_spec(s).unwrap(), Rng::stream(seed, "test/netem"))
    }
    fn pkt(len: usize, id: u64) -> Pkt {
        let mut p = Pkt::new(vec![0x45; len]);
        p.meta.id = id;
        p
    }
    fn ms(x: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(x)
    }

    #[test]
    fn delay_is_exact_and_next_wakeup_is_time_to_send() {
        let mut n = q("delay 10ms", 1);
        let mut d = Vec::new();
        for i in 0..5 {
            assert_eq!(n.enqueue(ms(i), pkt(100, i), &mut d), Verdict::Queued);
        }
        assert_eq!(n.dequeue(ms(9), &mut d).map(|p| p.meta.id), None);
        assert_eq!(n.next_wakeup(ms(9)), Some(ms(10)));
        for i in 0..5 {
            assert!(n.dequeue(ms(10 + i) - Duration::from_nanos(1), &mut d).is_none());
            assert_eq!(n.dequeue(ms(10 + i), &mut d).unwrap().meta.id, i);
        }
        assert_eq!(n.qlen(), 0);
        assert_eq!(n.next_wakeup(ms(20)), None);
        assert!(d.is_empty());
    }

    #[test]
    fn parse_spec_defaults_jitter_to_reorder_and_names_errors() {
        let s = NetemQdisc::parse_spec("delay 10ms 2ms").unwrap();
        assert_eq!(s.jitter_order, Some(JitterOrder::Reorder));
        assert_eq!(s.limit, 1000);
        let e = NetemQdisc::parse_spec("delay 10ms bogus").unwrap_err();
        assert!(e.contains("netem") && e.contains("bogus"), "{e}");
    }

    /// Drives `n` like a device would: dequeue at every wakeup; returns (id, time) in
    /// departure order.
    fn drain(n: &mut dyn Qdisc, mut now: Instant) -> Vec<(u64, Instant)> {
        let mut d = Vec::new();
        let mut out = Vec::new();
        while n.qlen() > 0 {
            while let Some(p) = n.dequeue(now, &mut d) {
                out.push((p.meta.id, now));
            }
            match n.next_wakeup(now) {
                Some(t) => {
                    assert!(t > now || n.qlen() == 0, "throttled qdisc must wake later");
                    now = t;
                }
                None => break,
            }
        }
        out
    }

    #[test]
    fn loss_ratio_counts_as_drops() {
        let mut n = q("delay 1ms loss 10%", 7);
        let mut d = Vec::new();
        let mut refused = 0;
        for i in 0..50_000u64 {
            if n.enqueue(ms(i), pkt(100, i), &mut d) == Verdict::Dropped {
                refused += 1;
            }
            while n.dequeue(ms(i), &mut d).is_some() {}
        }
        assert!((4_700..=5_300).contains(&refused), "{refused}");
        let s = n.stats();
        assert_eq!(s.drops, refused);
        assert_eq!(d.len() as u64, refused, "every lost packet is handed back");
        assert_eq!(n.counters().lost, refused);
        assert_eq!(s.packets + s.qlen, 50_000 - refused);
    }

    #[test]
    fn jitter_reorders_unless_rate_is_set() {
        // the classic pitfall: packets 1 ms apart with 10 ms +- 5 ms leave in delay order
        let run = |s: &str| {
            let mut n = q(&format!("{s} limit 10000"), 3);
            let mut d = Vec::new();
            for i in 0..2000u64 {
                n.enqueue(ms(i), pkt(100, i), &mut d);
            }
            let out = drain(&mut n, Instant::ZERO);
            assert_eq!(out.len(), 2000);
            assert!(out.windows(2).all(|w| w[0].1 <= w[1].1), "time_to_send order");
            out.windows(2).filter(|w| w[0].0 > w[1].0).count()
        };
        let inv = run("delay 10ms 5ms");
        assert!(inv > 300, "jitter must reorder in tfifo: {inv} inversions");
        // with rate, time_to_send is relative to the last queued packet: never reordered
        assert_eq!(run("delay 10ms 5ms rate 100mbit"), 0);
        // wirelab's jitter-order fifo does the same without rate
        assert_eq!(run("delay 10ms 5ms jitter-order fifo"), 0);
    }

    #[test]
    fn rate_spaces_packets_from_the_last_queued_one() {
        // 1250 bytes at 1 Mbit/s = 10 ms each
        let mut n = q("rate 1mbit delay 5ms", 1);
        let mut d = Vec::new();
        for i in 0..3 {
            n.enqueue(Instant::ZERO, pkt(1250, i), &mut d);
        }
        // first: now + delay + t; next: last + t (the delay is absorbed)
        assert_eq!(drain(&mut n, Instant::ZERO), vec![(0, ms(15)), (1, ms(25)), (2, ms(35))]);
        // an empty queue starts from now again
        n.enqueue(ms(100), pkt(1250, 3), &mut d);
        assert_eq!(drain(&mut n, ms(100)), vec![(3, ms(115))]);
    }

    #[test]
    fn reorder_gap_goes_to_the_head() {
        let mut n = q("delay 10ms reorder 100% gap 4", 1);
        let mut d = Vec::new();
        for i in 0..8 {
            n.enqueue(Instant::ZERO, pkt(100, i), &mut d);
        }
        // every 4th packet leaves at once (head of the queue), the rest after 10 ms
        let out = drain(&mut n, Instant::ZERO);
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![7, 3, 0, 1, 2, 4, 5, 6]);
        assert_eq!(out[1].1, Instant::ZERO);
        assert_eq!(out[2].1, ms(10));
        assert_eq!(n.counters().reordered, 2);
    }

    #[test]
    fn limit_caps_the_tfifo() {
        let mut n = q("delay 1s limit 10", 1);
        let mut d = Vec::new();
        let v: Vec<Verdict> = (0..15).map(|i| n.enqueue(ms(i), pkt(100, i), &mut d)).collect();
        assert!(v[..10].iter().all(|v| *v == Verdict::Queued));
        assert!(v[10..].iter().all(|v| *v == Verdict::Dropped));
        assert_eq!(n.qlen(), 10);
        assert_eq!(n.backlog_bytes(), 1000);
        assert_eq!(n.stats().drops, 5);
        assert_eq!(d.iter().map(|p| p.meta.id).collect::<Vec<_>>(), vec![10, 11, 12, 13, 14]);
        // default limit is Linux's 1000
        assert_eq!(q("delay 1ms", 1).limit, 1000);
    }

    #[test]
    fn duplicate_and_corrupt() {
        let mut n = q("duplicate 10% corrupt 10% limit 100000", 5);
        let mut d = Vec::new();
        for i in 0..20_000u64 {
            n.enqueue(ms(i), pkt(40, i), &mut d);
        }
        let x = n.counters();
        assert!((1_800..=2_200).contains(&x.duplicated), "{x:?}");
        assert!((1_900..=2_500).contains(&x.corrupted), "{x:?}");
        let mut flipped = 0;
        let mut got = 0;
        while let Some(p) = n.dequeue(ms(20_000), &mut d) {
            got += 1;
            let bits: u32 = p.data.iter().map(|b| (b ^ 0x45).count_ones()).sum();
            assert!(bits <= 1);
            flipped += bits as u64;
        }
        assert_eq!(got, 20_000 + x.duplicated);
        assert_eq!(flipped, x.corrupted);
    }

    #[test]
    fn same_seed_same_schedule() {
        let sched = |seed| {
            let mut n = q("delay 20ms 10ms distribution normal loss 5% duplicate 2%", seed);
            let mut d = Vec::new();
            for i in 0..500u64 {
                n.enqueue(ms(i), pkt(100, i), &mut d);
            }
            drain(&mut n, Instant::ZERO)
        };
        assert_eq!(sched(1), sched(1));
        assert_ne!(sched(1), sched(2));
    }

    /// A UDP datagram with a valid IPv4 header and ECN field `ecn`.
    fn ip(id: u64, ecn: u8) -> Pkt {
        let mut d = vec![0u8; 100];
        d[0] = 0x45;
        d[1] = ecn;
        d[2..4].copy_from_slice(&100u16.to_be_bytes());
        d[8] = 64;
        d[9] = 17;
        let c = wirelab_wire::checksum::finish(wirelab_wire::checksum::sum(&d[..20]));
        d[10..12].copy_from_slice(&c.to_be_bytes());
        let mut p = Pkt::new(d);
        p.meta.id = id;
        p
    }

    #[test]
    fn ecn_marks_ect_instead_of_losing_it() {
        // one seed, two runs: the ECT packets marked are exactly the Not-ECT ones lost
        let run = |ecn: u8| {
            let mut n = q("delay 1ms loss 5% ecn limit 100000", 11);
            let mut d = Vec::new();
            let v: Vec<Verdict> = (0..40_000u64).map(|i| n.enqueue(ms(i), ip(i, ecn), &mut d)).collect();
            let out: Vec<Pkt> = std::iter::from_fn(|| n.dequeue(ms(50_000), &mut d)).collect();
            (n, v, out, d)
        };
        let (n0, v0, out0, d0) = run(0);
        let lost: Vec<u64> = d0.iter().map(|p| p.meta.id).collect();
        assert!((1_700..=2_300).contains(&lost.len()), "{}", lost.len());
        assert_eq!(v0.iter().filter(|v| **v == Verdict::Dropped).count(), lost.len());
        assert_eq!(out0.len() + lost.len(), 40_000);
        assert_eq!(n0.counters().ecn_marked, 0);
        for ect in [1u8, 2] {
            let (n, v, out, d) = run(ect);
            assert!(d.is_empty() && v.iter().all(|v| *v == Verdict::Queued));
            let marked: Vec<u64> = out.iter().filter(|p| p.data[1] & 3 == 3).map(|p| p.meta.id).collect();
            assert_eq!(marked, lost);
            assert!(out.iter().all(|p| wirelab_wire::checksum::finish(wirelab_wire::checksum::sum(&p.data[..20])) == 0));
            let s = n.stats();
            assert_eq!(n.counters().ecn_marked, lost.len() as u64);
            assert!(s.xstats.contains(&("ecn_marked", lost.len() as i64)));
            // Linux 6.18 counts a netem mark in the qdisc's drops (qdisc_qstats_drop)
            assert_eq!((s.drops, s.packets), (lost.len() as u64, 40_000));
        }
        assert!(crate::TcConfig::parse("netem delay 10ms ecn").is_err(), "ecn without a loss model");
    }

    #[test]
    fn stacked_under_htb_delays_only_its_class() {
        use crate::TcConfig;
        let c = TcConfig::parse(
            "qdisc add dev eth0 root handle 1: htb default 20\n\
             class add dev eth0 parent 1: classid 1:10 htb rate 100mbit\n\
             class add dev eth0 parent 1: classid 1:20 htb rate 100mbit\n\
             qdisc add dev eth0 parent 1:10 handle 10: netem delay 10ms loss 0%\n\
             filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff flowid 1:10",
        )
        .unwrap();
        let mut h = c.build(9, "r1/eth0").unwrap();
        let mut d = Vec::new();
        let ip = |proto: u8, id: u64| {
            let mut b = vec![0u8; 100];
            b[0] = 0x45;
            b[9] = proto;
            let mut p = Pkt::new(b);
            p.meta.id = id;
            p
        };
        h.enqueue(Instant::ZERO, ip(17, 1), &mut d); // udp -> 1:10 (netem)
        h.enqueue(Instant::ZERO, ip(6, 2), &mut d); // tcp -> default 1:20
        let out = drain(h.as_mut(), Instant::ZERO);
        assert_eq!(out, vec![(2, Instant::ZERO), (1, ms(10))]);
        let mut st = Vec::new();
        h.tree_stats(&mut st);
        let n = st.iter().find(|s| s.kind == "netem").unwrap();
        assert_eq!((n.handle, n.parent, n.packets), (ClassId::new(0x10, 0), ClassId::new(1, 0x10), 1));
        // as root, with tc's spelling and Linux defaults
        let mut r = TcConfig::parse("tc qdisc add dev eth0 root netem delay 10ms 2ms loss 1%").unwrap().build(1, "x").unwrap();
        assert_eq!(r.kind(), "netem");
        r.enqueue(Instant::ZERO, ip(6, 1), &mut d);
        assert!(r.dequeue(ms(7), &mut d).is_none());
        assert!(r.next_wakeup(ms(7)).is_some_and(|t| t >= ms(8) && t < ms(12)));
        assert!(TcConfig::parse("netem delay 10ms bogus 3").is_err());
    }
}
