//! `prio` (net/sched/sch_prio.c) and `pfifo_fast` (net/sched/sch_generic.c).
use crate::classify::FilterChain;
use crate::fifo::Fifo;
use crate::util::skb_priority;
use crate::{ClassId, ClassStats, Counters, Qdisc, QdiscStats, Verdict};
use wirelab_core::packed::PktQueue;
use wirelab_core::{Instant, Pkt};

/// `TC_PRIO_MAX`.
pub const TC_PRIO_MAX: u32 = 15;
/// `TCQ_PRIO_BANDS`: most bands a prio qdisc may have.
pub const TCQ_PRIO_BANDS: usize = 16;
/// `sch_default_prio2band` / `prio_qdisc`'s default priomap.
pub const DEFAULT_PRIOMAP: [u8; 16] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];

/// `pfifo_fast`: three FIFO bands chosen by `skb->priority` through the priomap; band 0
/// is always served first. Limit: `txqueuelen` packets in total (the ≤ 4.15 list-based
/// implementation; newer kernels give each band its own ring of that size).
#[derive(Debug)]
pub struct PfifoFast {
    /// One 64-byte line per packet (`PktQueue`).
    bands: [PktQueue; 3],
    limit: u32,
    backlog: usize,
    c: Counters,
}

impl PfifoFast {
    /// `pfifo_fast` on a device with `txqueuelen`.
    pub fn new(txqueuelen: u32) -> Self {
        PfifoFast { bands: Default::default(), limit: txqueuelen, backlog: 0, c: Counters::new() }
    }
    fn qlen_total(&self) -> usize {
        self.bands.iter().map(|b| b.len()).sum()
    }
}

impl Qdisc for PfifoFast {
    fn kind(&self) -> &'static str {
        "pfifo_fast"
    }
    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        pkt.meta.enqueued = now;
        if self.qlen_total() >= self.limit as usize {
            self.c.drops += 1;
            dropped.push(pkt);
            return Verdict::Dropped;
        }
        let band = DEFAULT_PRIOMAP[(skb_priority(&pkt) & TC_PRIO_MAX) as usize] as usize;
        self.backlog += pkt.len();
        self.bands[band].push_back(pkt);
        Verdict::Queued
    }
    fn dequeue(&mut self, _now: Instant, _dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        for b in &mut self.bands {
            if let Some(p) = b.pop_front() {
                self.backlog -= p.len();
                self.c.sent(&p);
                return Some(p);
            }
        }
        None
    }
    fn peek_len(&self) -> Option<usize> {
        self.bands.iter().find_map(|b| b.front_len())
    }
    fn qlen(&self) -> usize {
        self.qlen_total()
    }
    fn may_wake(&self) -> bool {
        false
    }
    fn idle_dequeue_is_noop(&self) -> bool {
        // every queued packet's bytes are in `backlog`, and no packet is empty (an IPv4
        // header at least)
        self.backlog == 0
    }
    fn bypass(&mut self, now: Instant, pkt: &mut Pkt) -> bool {
        // empty, and a limit of 0 (`txqueuelen 0`) would refuse it
        if self.backlog != 0 || self.limit == 0 {
            return false;
        }
        pkt.meta.enqueued = now;
        self.c.sent(pkt);
        true
    }
    fn backlog_bytes(&self) -> usize {
        self.backlog
    }
    fn stats(&self) -> QdiscStats {
        self.c.snapshot("pfifo_fast", self.qlen_total(), self.backlog)
    }
    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
    }
}

struct Band {
    q: Box<dyn Qdisc>,
    bytes: u64,
    packets: u64,
    drops: u64,
}

/// `prio`: `bands` child qdiscs (default `pfifo limit txqueuelen`), strict priority.
pub struct Prio {
    bands: Vec<Band>,
    prio2band: [u8; 16],
    filters: FilterChain,
    c: Counters,
}

impl core::fmt::Debug for Prio {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Prio {{ bands: {}, handle: {} }}", self.bands.len(), self.c.handle)
    }
}

impl Prio {
    /// A prio qdisc with the given children (2..=16 of them) and priomap.
    pub fn new(children: Vec<Box<dyn Qdisc>>, prio2band: [u8; 16], filters: FilterChain) -> Self {
        let bands = children.into_iter().map(|q| Band { q, bytes: 0, packets: 0, drops: 0 }).collect();
        Prio { bands, prio2band, filters, c: Counters::new() }
    }
    /// `prio bands N` with default pfifo children of `txqueuelen`.
    pub fn with_bands(n: usize, txqueuelen: u32) -> Self {
        let kids = (0..n).map(|_| Box::new(Fifo::pfifo(txqueuelen.max(1))) as Box<dyn Qdisc>).collect();
        Prio::new(kids, DEFAULT_PRIOMAP, FilterChain::default())
    }

    /// `prio_classify()`.
    fn classify(&self, pkt: &Pkt) -> usize {
        let prio = skb_priority(pkt);
        let n = self.bands.len();
        let map = |p: u32| -> usize { (self.prio2band[(p & TC_PRIO_MAX) as usize] as usize).min(n - 1) };
        if (prio >> 16) as u16 != self.c.handle.major() || self.c.handle.major() == 0 {
            if let Some(cid) = self.filters.classify(pkt) {
                let m = cid.minor() as usize;
                if (1..=n).contains(&m) {
                    return m - 1;
                }
                return map(0);
            }
            if prio >> 16 != 0 {
                return map(0);
            }
            return map(prio);
        }
        let m = (prio & 0xffff) as usize;
        if (1..=n).contains(&m) {
            m - 1
        } else {
            map(0)
        }
    }
}

impl Qdisc for Prio {
    fn kind(&self) -> &'static str {
        "prio"
    }
    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        pkt.meta.enqueued = now;
        let b = self.classify(&pkt);
        let before = dropped.len();
        let v = self.bands[b].q.enqueue(now, pkt, dropped);
        let d = (dropped.len() - before) as u64;
        self.c.drops += d;
        self.bands[b].drops += d;
        v
    }
    fn dequeue(&mut self, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        for band in &mut self.bands {
            let before = dropped.len();
            let p = band.q.dequeue(now, dropped);
            let d = (dropped.len() - before) as u64;
            self.c.drops += d;
            band.drops += d;
            if let Some(p) = p {
                band.bytes += p.len() as u64;
                band.packets += 1;
                self.c.sent(&p);
                return Some(p);
            }
        }
        None
    }
    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        self.bands.iter().filter(|b| b.q.qlen() > 0).filter_map(|b| b.q.next_wakeup(now)).min()
    }
    fn qlen(&self) -> usize {
        self.bands.iter().map(|b| b.q.qlen()).sum()
    }
    fn backlog_bytes(&self) -> usize {
        self.bands.iter().map(|b| b.q.backlog_bytes()).sum()
    }
    fn stats(&self) -> QdiscStats {
        let mut s = self.c.snapshot("prio", self.qlen(), self.backlog_bytes());
        s.xstats.push(("bands", self.bands.len() as i64));
        s
    }
    fn tree_stats(&self, out: &mut Vec<QdiscStats>) {
        out.push(self.stats());
        for b in &self.bands {
            b.q.tree_stats(out);
        }
    }
    fn class_stats(&self, out: &mut Vec<ClassStats>) {
        for (i, b) in self.bands.iter().enumerate() {
            out.push(ClassStats {
                kind: "prio",
                classid: ClassId::new(self.c.handle.major(), i as u16 + 1),
                parent: self.c.handle,
                leaf: Some(b.q.stats().handle),
                bytes: b.bytes,
                packets: b.packets,
                drops: b.drops,
                backlog_bytes: b.q.backlog_bytes() as u64,
                qlen: b.q.qlen() as u64,
                ..Default::default()
            });
        }
        for b in &self.bands {
            b.q.class_stats(out);
        }
    }
    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
    }
    fn leaf_class(&self, pkt: &Pkt) -> Option<ClassId> {
        // band b is class major:(b + 1)
        Some(ClassId::new(self.c.handle.major(), self.classify(pkt) as u16 + 1))
    }
}
