//! `sfq`: Stochastic Fairness Queueing, Linux ≥ 3.3 (net/sched/sch_sfq.c).
//!
//! Packets are hashed (addresses, protocol, ports — SCTP included — and a random
//! perturbation key) into `divisor` buckets that map to at most `flows` active slots. Each
//! slot is a FIFO; active slots form a ring served by deficit round robin with `quantum`
//! bytes (counted in 8-byte "allot" units as Linux does). A new flow joins the *end* of the
//! round: putting it first could let a stream of new flows starve the old ones. On
//! overflow of `limit` a packet is dropped from the tail of the longest slot (`sfq_drop()`),
//! or its head with `headdrop`; no slot holds more than `depth` (≤ 127) packets.
//!
//! Perturbation (`perturb N`): every N seconds a fresh key is drawn from this qdisc's own
//! [`Rng`] stream and queued packets are rehashed (`sfq_rehash()`). The timer needs no
//! wake-up: nothing observable happens between timer expiry and the next enqueue/dequeue,
//! so expiries are applied, in order, at the start of the next call.
use crate::util::flow_hash;
use crate::{ClassId, Counters, DevParams, Qdisc, QdiscStats, Verdict};
use std::collections::VecDeque;
use wirelab_core::{Duration, Instant, Pkt, Rng};

/// `SFQ_MAX_DEPTH`: max packets per flow (slot qlen is stored in 7 bits' worth of lists).
pub const SFQ_MAX_DEPTH: u32 = 127;
/// `SFQ_DEFAULT_FLOWS`: number of flow slots.
pub const SFQ_DEFAULT_FLOWS: u32 = 128;
/// `SFQ_MAX_FLOWS`: slot indexes above this are depth-list anchors.
pub const SFQ_MAX_FLOWS: u32 = 0x10000 - SFQ_MAX_DEPTH - 1;
/// `SFQ_DEFAULT_HASH_DIVISOR`: hash buckets.
pub const SFQ_DEFAULT_HASH_DIVISOR: u32 = 1024;
/// `SFQ_EMPTY_SLOT`: bucket not mapped to a slot.
const SFQ_EMPTY_SLOT: u32 = 0xffff;
/// `SFQ_ALLOT_SHIFT`: allot is kept in units of 8 bytes.
const SFQ_ALLOT_SHIFT: u32 = 3;

#[inline]
fn sfq_allot_size(x: usize) -> i32 {
    x.div_ceil(1 << SFQ_ALLOT_SHIFT) as i32
}

/// `tc qdisc … sfq` options as given (unset ones take Linux defaults).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SfqOpts {
    /// `limit` packets (default 127).
    pub limit: Option<u32>,
    /// `perturb` seconds (default 0 = never).
    pub perturb_secs: u32,
    /// `quantum` bytes (default `psched_mtu()` = 1514).
    pub quantum: Option<u32>,
    /// `divisor` (power of two ≤ 65536; default 1024).
    pub divisor: Option<u32>,
    /// `flows` (default 128).
    pub flows: Option<u32>,
    /// `depth` (default and max 127).
    pub depth: Option<u32>,
    /// `headdrop`.
    pub headdrop: bool,
}

#[derive(Debug, Default)]
struct Slot {
    q: VecDeque<Pkt>,
    next: u32,
    hash: u32,
    allot: i32,
    backlog: usize,
    dep_next: u32,
    dep_prev: u32,
}

/// The SFQ qdisc.
#[derive(Debug)]
pub struct Sfq {
    limit: u32,
    maxdepth: u32,
    maxflows: u32,
    divisor: u32,
    quantum: u32,
    scaled_quantum: i32,
    headdrop: bool,
    perturb_period: Duration,
    next_perturb: Option<Instant>,
    perturbation: u32,
    rng: Rng,
    ht: Vec<u32>,
    slots: Vec<Slot>,
    /// Depth-list anchors `(next, prev)`, index = depth.
    dep: Vec<(u32, u32)>,
    cur_depth: u32,
    tail: Option<u32>,
    qlen: u32,
    backlog: usize,
    perturbations: u64,
    c: Counters,
}

impl Sfq {
    /// `sfq_init()` + `sfq_change()`. Errors name the offending option.
    pub fn new(o: &SfqOpts, dev: &DevParams, mut rng: Rng) -> Result<Self, String> {
        let mut limit = SFQ_MAX_DEPTH;
        let mut maxdepth = SFQ_MAX_DEPTH;
        let mut maxflows = SFQ_DEFAULT_FLOWS;
        let mut divisor = SFQ_DEFAULT_HASH_DIVISOR;
        let quantum = o.quantum.filter(|&q| q != 0).unwrap_or(dev.psched_mtu());
        if quantum == 0 || quantum > 0x7fff_ffff {
            return Err(format!("invalid quantum {quantum}"));
        }
        if let Some(f) = o.flows.filter(|&f| f != 0) {
            maxflows = f.min(SFQ_MAX_FLOWS);
        }
        if let Some(d) = o.divisor.filter(|&d| d != 0) {
            if !d.is_power_of_two() || d > 65536 {
                return Err(format!("invalid divisor {d}: must be a power of two ≤ 65536"));
            }
            divisor = d;
            maxflows = maxflows.min(divisor);
        }
        if let Some(d) = o.depth.filter(|&d| d != 0) {
            maxdepth = d.min(SFQ_MAX_DEPTH);
        }
        if let Some(l) = o.limit.filter(|&l| l != 0) {
            limit = l.min(maxdepth * maxflows);
            maxflows = maxflows.min(limit);
        }
        let perturbation = rng.next_u32();
        let period = Duration::from_secs(o.perturb_secs as u64);
        let mut s = Sfq {
            limit,
            maxdepth,
            maxflows,
            divisor,
            quantum,
            scaled_quantum: sfq_allot_size(quantum as usize),
            headdrop: o.headdrop,
            perturb_period: period,
            next_perturb: (o.perturb_secs > 0).then(|| Instant::ZERO + period),
            perturbation,
            rng,
            ht: vec![SFQ_EMPTY_SLOT; divisor as usize],
            slots: (0..maxflows).map(|_| Slot::default()).collect(),
            dep: vec![(0, 0); SFQ_MAX_DEPTH as usize + 1],
            cur_depth: 0,
            tail: None,
            qlen: 0,
            backlog: 0,
            perturbations: 0,
            c: Counters::new(),
        };
        for d in 0..=SFQ_MAX_DEPTH {
            let a = SFQ_MAX_FLOWS + d;
            s.dep[d as usize] = (a, a);
        }
        for i in 0..maxflows {
            s.link(i);
        }
        Ok(s)
    }

    /// Effective `(limit, flows, depth, divisor, quantum)` after Linux's clamping.
    pub fn params(&self) -> (u32, u32, u32, u32, u32) {
        (self.limit, self.maxflows, self.maxdepth, self.divisor, self.quantum)
    }

    fn set_next(&mut self, n: u32, v: u32) {
        if n >= SFQ_MAX_FLOWS {
            self.dep[(n - SFQ_MAX_FLOWS) as usize].0 = v
        } else {
            self.slots[n as usize].dep_next = v
        }
    }
    fn set_prev(&mut self, n: u32, v: u32) {
        if n >= SFQ_MAX_FLOWS {
            self.dep[(n - SFQ_MAX_FLOWS) as usize].1 = v
        } else {
            self.slots[n as usize].dep_prev = v
        }
    }
    /// `sfq_link()`: put slot x at the head of the list for its depth.
    fn link(&mut self, x: u32) {
        let d = self.slots[x as usize].q.len() as u32;
        let p = d + SFQ_MAX_FLOWS;
        let n = self.dep[d as usize].0;
        self.slots[x as usize].dep_next = n;
        self.slots[x as usize].dep_prev = p;
        self.dep[d as usize].0 = x;
        self.set_prev(n, x);
    }
    fn unlink(&mut self, x: u32) -> (u32, u32) {
        let (n, p) = (self.slots[x as usize].dep_next, self.slots[x as usize].dep_prev);
        self.set_next(p, n);
        self.set_prev(n, p);
        (n, p)
    }
    /// `sfq_dec()`: called after a packet left slot x.
    fn dec(&mut self, x: u32) {
        let (n, p) = self.unlink(x);
        let d = self.slots[x as usize].q.len() as u32;
        if n == p && self.cur_depth == d + 1 {
            self.cur_depth -= 1;
        }
        self.link(x);
    }
    /// `sfq_inc()`: called after a packet joined slot x.
    fn inc(&mut self, x: u32) {
        self.unlink(x);
        let d = self.slots[x as usize].q.len() as u32;
        if self.cur_depth < d {
            self.cur_depth = d;
        }
        self.link(x);
    }

    fn hash(&self, pkt: &Pkt) -> u32 {
        flow_hash(pkt, self.perturbation) & (self.divisor - 1)
    }

    /// Appends to slot x and links a newly active slot at the end of the round.
    fn slot_add(&mut self, x: u32, pkt: Pkt) {
        let len = pkt.len();
        let s = &mut self.slots[x as usize];
        s.backlog += len;
        s.q.push_back(pkt);
        self.inc(x);
        if self.slots[x as usize].q.len() == 1 {
            match self.tail {
                None => self.slots[x as usize].next = x,
                Some(t) => {
                    self.slots[x as usize].next = self.slots[t as usize].next;
                    self.slots[t as usize].next = x;
                }
            }
            self.tail = Some(x);
            self.slots[x as usize].allot = self.scaled_quantum;
        }
    }

    /// `sfq_drop()`: drop from the longest slot; returns the slot it dropped from.
    fn drop_one(&mut self, dropped: &mut Vec<Pkt>) -> Option<u32> {
        let d = self.cur_depth;
        let x;
        if d > 1 {
            x = self.dep[d as usize].0;
        } else if d == 1 {
            // all slots have length 1: drop the next flow in the round and deactivate it
            let t = self.tail?;
            x = self.slots[t as usize].next;
            self.slots[t as usize].next = self.slots[x as usize].next;
            let h = self.slots[x as usize].hash;
            self.ht[h as usize] = SFQ_EMPTY_SLOT;
            if x == t {
                self.tail = None;
            }
        } else {
            return None;
        }
        let s = &mut self.slots[x as usize];
        let p = if self.headdrop { s.q.pop_front() } else { s.q.pop_back() }?;
        s.backlog -= p.len();
        self.backlog -= p.len();
        self.dec(x);
        self.qlen -= 1;
        self.c.drops += 1;
        dropped.push(p);
        Some(x)
    }

    /// Fires perturbation timers due at or before `now` (`sfq_perturbation()`).
    fn run_timers(&mut self, now: Instant, dropped: &mut Vec<Pkt>) {
        let Some(mut t) = self.next_perturb else { return };
        if t > now {
            return;
        }
        while t <= now {
            self.perturbation = self.rng.next_u32();
            self.perturbations += 1;
            t = t.saturating_add(self.perturb_period);
        }
        self.next_perturb = Some(t);
        if self.tail.is_some() {
            self.rehash(dropped);
        }
    }

    /// `sfq_rehash()`: re-files every queued packet under the new key.
    fn rehash(&mut self, dropped: &mut Vec<Pkt>) {
        let mut list = Vec::with_capacity(self.qlen as usize);
        for i in 0..self.maxflows {
            if self.slots[i as usize].q.is_empty() {
                continue;
            }
            while let Some(p) = self.slots[i as usize].q.pop_front() {
                self.dec(i);
                list.push(p);
            }
            self.slots[i as usize].backlog = 0;
            let h = self.slots[i as usize].hash;
            self.ht[h as usize] = SFQ_EMPTY_SLOT;
        }
        self.tail = None;
        for p in list {
            let h = self.hash(&p);
            let mut x = self.ht[h as usize];
            if x == SFQ_EMPTY_SLOT {
                x = self.dep[0].0;
                if x >= SFQ_MAX_FLOWS {
                    self.drop_rehash(p, dropped);
                    continue;
                }
                self.ht[h as usize] = x;
                self.slots[x as usize].hash = h;
            }
            if self.slots[x as usize].q.len() as u32 >= self.maxdepth {
                self.drop_rehash(p, dropped);
                continue;
            }
            self.slot_add(x, p);
        }
    }
    fn drop_rehash(&mut self, p: Pkt, dropped: &mut Vec<Pkt>) {
        self.backlog -= p.len();
        self.qlen -= 1;
        self.c.drops += 1;
        dropped.push(p);
    }
}

impl Sfq {
    fn enqueue_inner(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        pkt.meta.enqueued = now;
        let hash = self.hash(&pkt);
        let mut x = self.ht[hash as usize];
        if x == SFQ_EMPTY_SLOT {
            x = self.dep[0].0; // a free slot
            if x >= SFQ_MAX_FLOWS {
                self.c.drops += 1;
                dropped.push(pkt);
                return Verdict::Dropped;
            }
            self.ht[hash as usize] = x;
            self.slots[x as usize].hash = hash;
            self.slots[x as usize].backlog = 0;
        } else if self.slots[x as usize].q.len() as u32 >= self.maxdepth {
            self.c.drops += 1;
            if !self.headdrop {
                dropped.push(pkt);
                return Verdict::Dropped;
            }
            // headdrop: replace the slot's head packet with this one
            let s = &mut self.slots[x as usize];
            if let Some(head) = s.q.pop_front() {
                s.backlog -= head.len();
                self.backlog -= head.len();
                s.backlog += pkt.len();
                self.backlog += pkt.len();
                s.q.push_back(pkt);
                dropped.push(head);
            }
            return Verdict::Congested;
        }
        self.backlog += pkt.len();
        self.slot_add(x, pkt);
        self.qlen += 1;
        if self.qlen <= self.limit {
            return Verdict::Queued;
        }
        // over limit: drop from the longest slot; if that is this flow without headdrop,
        // the victim is the packet just queued (the tail of its slot)
        let from = self.drop_one(dropped);
        if from == Some(x) && !self.headdrop {
            Verdict::Dropped
        } else {
            Verdict::Congested
        }
    }
    fn dequeue_inner(&mut self) -> Option<Pkt> {
        let mut t = self.tail?;
        let mut a = self.slots[t as usize].next;
        while self.slots[a as usize].allot <= 0 {
            self.tail = Some(a);
            t = a;
            self.slots[a as usize].allot += self.scaled_quantum;
            a = self.slots[t as usize].next;
        }
        let p = self.slots[a as usize].q.pop_front()?;
        self.dec(a);
        self.qlen -= 1;
        self.backlog -= p.len();
        self.c.sent(&p);
        let s = &mut self.slots[a as usize];
        s.backlog -= p.len();
        if s.q.is_empty() {
            let h = s.hash;
            let next_a = s.next;
            self.ht[h as usize] = SFQ_EMPTY_SLOT;
            if a == next_a {
                self.tail = None;
            } else {
                self.slots[t as usize].next = next_a;
            }
        } else {
            s.allot -= sfq_allot_size(p.len());
        }
        Some(p)
    }
}

impl Qdisc for Sfq {
    fn kind(&self) -> &'static str {
        "sfq"
    }
    fn enqueue(&mut self, now: Instant, pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        let before = dropped.len();
        self.run_timers(now, dropped);
        let v = self.enqueue_inner(now, pkt, dropped);
        if v == Verdict::Queued && dropped.len() > before {
            Verdict::Congested // the rehash at a perturbation dropped packets
        } else {
            v
        }
    }
    fn dequeue(&mut self, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        self.run_timers(now, dropped);
        self.dequeue_inner()
    }
    fn peek_len(&self) -> Option<usize> {
        let mut t = self.tail?;
        // the slot dequeue would serve: first in the round with positive allot
        for _ in 0..=self.maxflows {
            let a = self.slots[t as usize].next;
            if self.slots[a as usize].allot > 0 {
                return self.slots[a as usize].q.front().map(|p| p.len());
            }
            t = a;
        }
        self.slots[self.slots[self.tail? as usize].next as usize].q.front().map(|p| p.len())
    }
    fn qlen(&self) -> usize {
        self.qlen as usize
    }
    fn backlog_bytes(&self) -> usize {
        self.backlog
    }
    fn stats(&self) -> QdiscStats {
        let mut s = self.c.snapshot("sfq", self.qlen as usize, self.backlog);
        s.xstats.push(("limit", self.limit as i64));
        s.xstats.push(("flows", self.maxflows as i64));
        s.xstats.push(("divisor", self.divisor as i64));
        s.xstats.push(("depth", self.maxdepth as i64));
        s.xstats.push(("quantum", self.quantum as i64));
        s.xstats.push(("perturbations", self.perturbations as i64));
        s
    }
    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
    }
}
