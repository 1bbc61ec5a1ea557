//! `fq`: the Fair Queue packet scheduler with per-flow pacing (net/sched/sch_fq.c, Linux
//! 6.18), the qdisc that paces TCP.
//!
//! * **Flows** are sockets (`fq_classify()`): a packet with a socket key
//!   ([`wirelab_core::PktMeta::sk`]) belongs to that socket's flow; a packet without one is
//!   an *orphan*, keyed by its 5-tuple hash `& orphan_mask` (`(hash << 1) | 1`). Flows live
//!   in `buckets` hash buckets (`hash_ptr(sk, log)`).
//! * **Bands**: `skb->priority` picks one of three bands through `priomap`
//!   (`fq_prio2band()`); bands share the link by weighted round robin with `weights` bytes
//!   per turn (`fq_pband_head_select()`); `limit` caps each band's packets.
//! * **Round robin** within a band: a flow that becomes active joins the *new* list with
//!   `initial_quantum` credit (or `quantum` after `refill_delay` idle); flows are served by
//!   credit, a flow with no credit left gets `quantum` more and goes to the tail of the
//!   *old* list; an empty flow on the new list passes once through the old list before it
//!   is detached (`fq_dequeue()`).
//! * **Pacing** (`fq_dequeue()`): a packet leaves no earlier than its `time_to_send` (its
//!   EDT departure time [`wirelab_core::PktMeta::txtime`], else its enqueue time) nor
//!   before its flow's `time_next_packet`. A flow whose next packet is not due goes to the
//!   *throttled* set (Linux's rb-tree `q->delayed`, here a heap by `time_next_packet`) and
//!   [`Qdisc::next_wakeup`] is the earliest one (`qdisc_watchdog_schedule_range_ns`). After
//!   a packet without EDT time, `time_next_packet = now + max(len, quantum) / rate` with
//!   `rate = min(sk_pacing_rate, maxrate)` once the flow's credit is spent (every packet
//!   when the rate is at most `low_rate_threshold`); with EDT times only `maxrate` adds
//!   spacing. Delays are capped at 1 s; a late dequeue shortens the next gap by up to half
//!   (the drift correction).
//! * **Fast path** (`fq_fastpath_check()`): a packet that is due when no flow is eligible
//!   (and fewer than 8 wait there, no `maxrate`, and not from a non-TCP socket with a
//!   pacing rate, i.e. `SO_MAX_PACING_RATE`) goes to an internal FIFO served first,
//!   unpaced and never CE-marked.
//! * `horizon`: EDT times more than `horizon` ahead are dropped (`horizon_drop`, default)
//!   or capped (`horizon_cap`); `ce_threshold`: a packet dequeued more than that after it
//!   was due is CE-marked (`INET_ECN_set_ce()`; `ce_mark` counts attempts, as Linux).
//!
//! Deviations (docs/qdisc.md): jiffies-based ages (`refill_delay`, garbage collection
//! after 3 s idle) are compared in nanoseconds; the hrtimer `timer_slack` is reported but
//! the wakeup is exact; garbage collection looks at every flow of the bucket (Linux: the
//! rb-tree path searched); `offload_horizon` must be 0 (no device offloads pacing);
//! socket reallocation (`sk_hash` change) and `SO_MAX_PACING_RATE` on non-TCP sockets are
//! not modelled.
use crate::config::{bad, rate32_opt, time_opt, time_us_opt, u32_opt, unsupported, Args, R};
use crate::util::{flow_hash, skb_priority};
use crate::{ClassId, Counters, DevParams, Qdisc, QdiscStats, Verdict};
use core::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use wirelab_core::{Instant, Pkt, PktMeta, Rng};

/// `FQ_BANDS`.
pub const FQ_BANDS: usize = 3;
/// `FQ_MIN_WEIGHT` (include/uapi/linux/pkt_sched.h): the smallest band weight.
pub const FQ_MIN_WEIGHT: i32 = 16384;
/// `sch_default_prio2band` (net/sched/sch_generic.c).
pub const FQ_DEFAULT_PRIOMAP: [u8; 16] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
/// `FQ_GC_MAX`: flows collected per lookup.
const FQ_GC_MAX: usize = 8;
/// `FQ_GC_AGE` (3 × HZ): a detached flow idle this long may be collected.
const FQ_GC_AGE_NS: u64 = 3_000_000_000;
const NSEC_PER_SEC: u64 = 1_000_000_000;
/// `flow_max_rate` / `sk_pacing_rate` "unlimited" (`~0UL`).
pub const NO_RATE: u64 = u64::MAX;

/// Resolved `fq` parameters; [`FqParams::new`] gives `fq_init()`'s defaults. (Fields in
/// the order the data path reads them: the first 64 bytes are the per-packet ones.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct FqParams {
    /// `priomap`: `skb->priority` (0..15) to band.
    pub prio2band: [u8; 16],
    /// `limit`: packets per band (`band_pkt_count[band] >= sch->limit` drops), 10000.
    pub limit: u32,
    /// `flow_limit`: packets per flow, 100.
    pub flow_limit: u32,
    /// `quantum` bytes, `2 × psched_mtu()` (3028).
    pub quantum: u32,
    /// `pacing` (default) / `nopacing`.
    pub rate_enable: bool,
    /// `horizon_drop` (default) or `horizon_cap`.
    pub horizon_drop: bool,
    /// log2(`buckets`), 10.
    pub buckets_log: u8,
    /// `maxrate` bytes/s ([`NO_RATE`] = none).
    pub flow_max_rate: u64,
    /// `low_rate_threshold` bytes/s (550 kbit/s = 68750).
    pub low_rate_threshold: u64,
    /// `ce_threshold` ns (default `NSEC_PER_USEC * ~0U`, about 4295 s: off).
    pub ce_threshold_ns: u64,
    /// `horizon` ns (10 s).
    pub horizon_ns: u64,
    /// `refill_delay` ns (40 ms): idle time after which a flow gets `quantum` credit again.
    pub refill_delay_ns: u64,
    /// `initial_quantum` bytes, `10 × psched_mtu()` (15140).
    pub initial_quantum: u32,
    /// `orphan_mask`, 1023.
    pub orphan_mask: u32,
    /// `timer_slack` ns (10 µs; reported only).
    pub timer_slack_ns: u64,
    /// `weights`: bytes per band turn (589824, 196608, 65536).
    pub weights: [i32; FQ_BANDS],
}

impl FqParams {
    /// `fq_init()` defaults for a device.
    pub fn new(dev: &DevParams) -> Self {
        let mtu = dev.psched_mtu().clamp(1, 1 << 20);
        FqParams {
            limit: 10_000,
            flow_limit: 100,
            quantum: (2 * mtu).clamp(256, 1 << 20),
            initial_quantum: (10 * mtu).min(1 << 20),
            refill_delay_ns: 40_000_000,
            flow_max_rate: NO_RATE,
            rate_enable: true,
            buckets_log: 10,
            orphan_mask: 1024 - 1,
            low_rate_threshold: 550_000 / 8,
            ce_threshold_ns: 1000 * u32::MAX as u64,
            timer_slack_ns: 10_000,
            horizon_ns: 10 * NSEC_PER_SEC,
            horizon_drop: true,
            prio2band: FQ_DEFAULT_PRIOMAP,
            weights: [9 << 16, 3 << 16, 1 << 16],
        }
    }
}

/// A FIFO of packets by `time_to_send` (`flow->head`/`tail`): the packets whose times are
/// monotone, i.e. all of them unless one would overtake the tail, which goes to the
/// flow's [`Ooo`] instead (`flow_queue_add()`). Restarts at its first slot when it
/// empties, so a flow that holds one or two packets at a time reuses the same lines of
/// its buffer instead of cycling through its capacity.
type Lin = VecDeque<(u64, Pkt)>;

/// The packets that would overtake their queue's tail (Linux's per-flow rb-tree `t_root`),
/// ordered by (time, insertion). Almost always empty: it is kept apart from the hot
/// [`Lin`] and read only when the queue's count says it holds something.
#[derive(Debug, Default)]
struct Ooo {
    tree: BTreeMap<(u64, u64), Pkt>,
    seq: u64,
}

/// `flow_queue_add()`.
fn tq_push(lin: &mut Lin, ooo: &mut Ooo, tts: u64, pkt: Pkt) {
    if lin.back().is_none_or(|b| tts >= b.0) {
        lin.push_back((tts, pkt));
    } else {
        // rb-tree insertion goes right on >=: equal times keep arrival order
        ooo.seq += 1;
        ooo.tree.insert((tts, ooo.seq), pkt);
    }
}

/// `fq_peek()`: the tree's first node if strictly earlier than the list head. `ooo` is
/// `None` when the caller knows it is empty (its count equals `lin`'s length).
fn tq_peek<'a>(lin: &'a Lin, ooo: Option<&'a Ooo>) -> Option<(u64, &'a Pkt)> {
    let h = lin.front().map(|(t, p)| (*t, p));
    let Some(ooo) = ooo else { return h };
    let t = ooo.tree.first_key_value().map(|(k, p)| (k.0, p));
    match (t, h) {
        (Some(t), Some(h)) => Some(if t.0 < h.0 { t } else { h }),
        (t, h) => t.or(h),
    }
}

/// `fq_dequeue_skb()`'s removal of the packet [`tq_peek`] returns.
fn tq_pop(lin: &mut Lin, ooo: Option<&mut Ooo>) -> Option<(u64, Pkt)> {
    if let Some(ooo) = ooo {
        let from_tree = match (ooo.tree.first_key_value(), lin.front()) {
            (Some((k, _)), Some(h)) => k.0 < h.0,
            (Some(_), None) => true,
            _ => false,
        };
        if from_tree {
            return ooo.tree.pop_first().map(|(k, p)| (k.0, p));
        }
    }
    let r = lin.pop_front();
    if lin.is_empty() {
        // back to the first slot (VecDeque::clear resets the head)
        lin.clear();
    }
    r
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Where {
    /// On no list (`fq_flow_is_detached()`), since `age`.
    Detached,
    /// On its band's new or old list.
    Listed,
    /// In the throttled set (`fq_flow_is_throttled()`).
    Throttled,
}

/// No flow (the end of a list, an empty throttled slot).
const NIL: u32 = u32::MAX;

/// A flow (`struct fq_flow`): two aligned cache lines, the first holding everything an
/// enqueue or dequeue of an in-order packet reads or writes (the queue, the list link,
/// credit, pacing time, age), the second the hash key and the out-of-order tree, which
/// only a bucket lookup and a reordered packet read.
#[derive(Debug)]
#[repr(C, align(64))]
struct Flow {
    // -- line 0
    lin: Lin,
    time_next_packet: u64,
    /// `f->age`: when the flow was detached, ns.
    age: u64,
    /// `f->credit` (an `int` in Linux).
    credit: i32,
    /// Packets queued, `lin` and `ooo` together (`f->qlen`).
    qlen: u32,
    /// `f->next`: the next flow on the same band list ([`NIL`]: the last).
    next: u32,
    band: u8,
    at: Where,
    // -- line 1
    key: u64,
    ooo: Ooo,
}

impl Flow {
    /// The out-of-order tree if it may hold packets (`qlen` counts more than `lin`).
    fn ooo(&self) -> Option<&Ooo> {
        (self.qlen as usize != self.lin.len()).then_some(&self.ooo)
    }
    /// Takes the packet [`tq_peek`] returns.
    fn pop(&mut self) -> Option<(u64, Pkt)> {
        let ooo = (self.qlen as usize != self.lin.len()).then_some(&mut self.ooo);
        tq_pop(&mut self.lin, ooo)
    }
}

/// A band list (`struct fq_flow_head`): flows linked through [`Flow::next`].
#[derive(Clone, Copy, Debug)]
struct FlowList {
    first: u32,
    last: u32,
}

impl FlowList {
    const EMPTY: FlowList = FlowList { first: NIL, last: NIL };
    fn is_empty(&self) -> bool {
        self.first == NIL
    }
}

/// `struct fq_perband_flows`: 32 bytes, so that the three bands take a line and a half.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Band {
    new_flows: FlowList,
    old_flows: FlowList,
    credit: i64,
    quantum: i64,
}


/// `tc -s qdisc` counters of `fq` (`struct tc_fq_qd_stats`); the per-packet ones first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct FqStats {
    /// `fastpath`: packets that took the internal queue.
    pub fastpath_packets: u64,
    /// `throttled`: times a flow was throttled.
    pub throttled: u64,
    /// `latency`: EWMA (1/8) of how late throttled flows were released, ns.
    pub unthrottle_latency_ns: u64,
    /// `gc`: flows garbage-collected.
    pub gc_flows: u64,
    /// `flows_plimit`: drops at `flow_limit`.
    pub flows_plimit: u64,
    /// `pkts_too_long`: packets whose pacing delay was capped at 1 s.
    pub pkts_too_long: u64,
    /// `ce_mark`: packets sent more than `ce_threshold` after they were due.
    pub ce_mark: u64,
    /// `horizon_drops`.
    pub horizon_drops: u64,
    /// `horizon_caps`.
    pub horizon_caps: u64,
    /// `band0_drops` … `band2_drops`: drops at `limit`.
    pub band_drops: [u64; FQ_BANDS],
}

/// The `fq` qdisc. The layout is chosen for the simulator's locality (every field keeps
/// its meaning): with paced senders, each packet's enqueue and its dequeue at its departure
/// time are separate visits to a qdisc that has gone cold in between, so what a packet
/// reads is packed into six consecutive lines (`repr(C)`, line-aligned; a unit test keeps
/// the offsets) and nothing else is read on the way: the band lists are linked through
/// the flows, as Linux's are (no list buffers), the throttled set's smallest entry is
/// inline (its heap's buffer is read only when two or more flows are throttled), the
/// internal queue only when it holds packets, a flow's hash bucket only when the socket
/// differs from the last one's. The configuration and counters that `tc -s` alone reads
/// come last.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Fq {
    // -- line 0: queue state, read by every enqueue and dequeue
    /// `sch->q.qlen` (a `__u32` in Linux).
    qlen: u32,
    internal_qlen: u32,
    backlog: usize,
    time_next_delayed_flow: u64,
    /// The flow `lookup()` found last, (socket key, flow), kept only while that flow is
    /// alone in its hash bucket: then a lookup of the same key would find it first and
    /// garbage-collect nothing, so the bucket need not be read (key 0: none; keys are
    /// never 0).
    last_key: u64,
    last_flow: u32,
    n_flows: u32,
    inactive_flows: u32,
    /// Flows in the throttled set (`delayed_min` and `delayed_rest`).
    throttled_flows: u32,
    band_nr: u32,
    band_pkt_count: [u32; FQ_BANDS],
    // -- line 1: the per-packet parameters (FqParams is repr(C), those first); line 2:
    // the rest of them and the flow table
    p: FqParams,
    flows: Vec<Flow>,
    // -- lines 3-4: the bands, then the throttled set's smallest entry
    bands: [Band; FQ_BANDS],
    /// `q->delayed`'s first node: (time_next_packet, insertion order, flow); flow [`NIL`]
    /// when no flow is throttled. The others are in `delayed_rest`.
    delayed_min: (u64, u64, u32),
    delayed_seq: u64,
    // -- line 5: the counters every dequeue or throttling writes (FqStats is repr(C))
    c: Counters,
    st: FqStats,
    // -- cold
    delayed_rest: BinaryHeap<Reverse<(u64, u64, u32)>>,
    /// The fast path's FIFO (`q->internal`), read only while `internal_qlen` > 0.
    internal: Lin,
    internal_ooo: Ooo,
    hash_key: u32,
    free: Vec<u32>,
    /// Hash bucket → 1 + its index in `bucket_vecs` (0: never used). Allocated zeroed and
    /// dropped without a walk: `2^buckets_log` (1024) vectors per qdisc cost 24 KB to
    /// create and to drop, per host, although a host's qdisc sees a handful of sockets.
    bucket_slot: Vec<u32>,
    /// The flows of each bucket in use (`q->fq_root[]`'s trees; lookup order as before).
    bucket_vecs: Vec<Vec<u32>>,
}

/// `hash_ptr()` / `hash_64()`: multiplicative hashing with `GOLDEN_RATIO_64`.
fn hash_ptr(key: u64, bits: u8) -> usize {
    (key.wrapping_mul(0x61C8_8646_80B5_83EB) >> (64 - bits as u32)) as usize
}

impl Fq {
    /// An `fq` qdisc; `rng` keys the orphan hash (Linux's boot-time `hashrnd`).
    pub fn new(p: FqParams, mut rng: Rng) -> Self {
        let bands = p.weights.map(|w| Band { new_flows: FlowList::EMPTY, old_flows: FlowList::EMPTY, credit: 0, quantum: w as i64 });
        Fq {
            hash_key: rng.next_u32(),
            flows: Vec::new(),
            free: Vec::new(),
            bucket_slot: vec![0; 1 << p.buckets_log],
            bucket_vecs: Vec::new(),
            bands,
            band_nr: 0,
            last_key: 0,
            last_flow: 0,
            band_pkt_count: [0; FQ_BANDS],
            internal: Lin::new(),
            internal_ooo: Ooo::default(),
            internal_qlen: 0,
            delayed_min: (u64::MAX, 0, NIL),
            delayed_rest: BinaryHeap::new(),
            delayed_seq: 0,
            time_next_delayed_flow: u64::MAX,
            n_flows: 0,
            inactive_flows: 0,
            throttled_flows: 0,
            qlen: 0,
            backlog: 0,
            st: FqStats::default(),
            c: Counters::new(),
            p,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &FqParams {
        &self.p
    }

    /// `tc -s` counters.
    pub fn fq_stats(&self) -> FqStats {
        self.st
    }

    /// `fq_flow_add_tail()`: `f` to the tail of its band's new or old list.
    fn add_tail(&mut self, f: u32, new: bool) {
        let fl = &mut self.flows[f as usize];
        fl.at = Where::Listed;
        fl.next = NIL;
        let b = &mut self.bands[fl.band as usize];
        let head = if new { &mut b.new_flows } else { &mut b.old_flows };
        let last = std::mem::replace(&mut head.last, f);
        if last == NIL {
            head.first = f;
        } else {
            self.flows[last as usize].next = f;
        }
    }

    /// Takes the first flow off band `b`'s new (or old) list.
    fn pop_head(&mut self, b: usize, new: bool, f: u32) {
        let next = self.flows[f as usize].next;
        let band = &mut self.bands[b];
        let head = if new { &mut band.new_flows } else { &mut band.old_flows };
        head.first = next;
        if next == NIL {
            head.last = NIL;
        }
    }

    /// `fq_flow_set_throttled()`.
    fn set_throttled(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        fl.at = Where::Throttled;
        let t = fl.time_next_packet;
        self.delayed_seq += 1;
        let e = (t, self.delayed_seq, f);
        if self.throttled_flows == 0 {
            self.delayed_min = e;
        } else if e < self.delayed_min {
            self.delayed_rest.push(Reverse(std::mem::replace(&mut self.delayed_min, e)));
        } else {
            self.delayed_rest.push(Reverse(e));
        }
        self.throttled_flows += 1;
        self.st.throttled += 1;
        self.time_next_delayed_flow = self.time_next_delayed_flow.min(t);
    }

    /// `fq_check_throttled()`.
    fn check_throttled(&mut self, now: u64) {
        if self.time_next_delayed_flow > now {
            return;
        }
        let sample = now - self.time_next_delayed_flow;
        self.st.unthrottle_latency_ns -= self.st.unthrottle_latency_ns >> 3;
        self.st.unthrottle_latency_ns += sample >> 3;
        self.time_next_delayed_flow = u64::MAX;
        while self.throttled_flows > 0 {
            let (t, _, f) = self.delayed_min;
            if t > now {
                self.time_next_delayed_flow = t;
                break;
            }
            self.throttled_flows -= 1;
            self.delayed_min = if self.throttled_flows > 0 { self.delayed_rest.pop().map_or((u64::MAX, 0, NIL), |Reverse(e)| e) } else { (u64::MAX, 0, NIL) };
            self.add_tail(f, false);
        }
    }

    /// `fq_fastpath_check()` (`offload_horizon` 0). A non-TCP socket with a pacing rate
    /// is one with `SO_MAX_PACING_RATE` (`sk_max_pacing_rate != ~0UL`): never fast path.
    fn fastpath(&self, pkt: &Pkt, tts: u64, now: u64) -> bool {
        if tts > now {
            return false;
        }
        if self.qlen != 0 && (self.n_flows != self.inactive_flows + self.throttled_flows || self.internal_qlen >= 8 || self.time_next_delayed_flow <= now) {
            return false;
        }
        if pkt.meta.sk != 0 && pkt.meta.pacing_rate != NO_RATE && pkt.ip_proto() != 6 {
            return false;
        }
        self.p.flow_max_rate == NO_RATE
    }

    /// `fq_gc()` + the lookup of `fq_classify()`: the flow of socket key `key`, created
    /// with `initial_quantum` credit if new.
    fn lookup(&mut self, key: u64, now: u64) -> u32 {
        if self.last_key == key {
            return self.last_flow;
        }
        let (f, alone) = self.lookup_bucket(key, now);
        (self.last_key, self.last_flow) = if alone { (key, f) } else { (0, 0) };
        f
    }

    /// [`Self::lookup`] through the hash bucket: (the flow, whether it is now alone in its
    /// bucket). Buckets change nowhere else, so `last_key` stays exact until the next
    /// lookup through a bucket.
    fn lookup_bucket(&mut self, key: u64, now: u64) -> (u32, bool) {
        let h = hash_ptr(key, self.p.buckets_log);
        let b = match self.bucket_slot[h] {
            0 => {
                self.bucket_vecs.push(Vec::new());
                self.bucket_slot[h] = self.bucket_vecs.len() as u32;
                self.bucket_vecs.len() - 1
            }
            s => s as usize - 1,
        };
        let mut found = None;
        let mut gc = 0;
        let mut i = 0;
        let bucket = &mut self.bucket_vecs[b];
        while i < bucket.len() {
            let f = bucket[i];
            let fl = &self.flows[f as usize];
            if fl.key == key {
                found = Some(f);
                break;
            }
            if gc < FQ_GC_MAX && fl.at == Where::Detached && now > fl.age + FQ_GC_AGE_NS {
                // fq_gc_candidate(): detached and idle for 3 s
                gc += 1;
                bucket.swap_remove(i);
                self.free.push(f);
                self.n_flows -= 1;
                self.inactive_flows -= 1;
                self.st.gc_flows += 1;
                continue;
            }
            i += 1;
        }
        if let Some(f) = found {
            return (f, bucket.len() == 1);
        }
        let fl = Flow {
            key,
            lin: Lin::new(),
            ooo: Ooo::default(),
            qlen: 0,
            credit: self.p.initial_quantum as i32,
            band: 0,
            at: Where::Detached,
            next: NIL,
            age: now,
            time_next_packet: 0,
        };
        let f = match self.free.pop() {
            Some(f) => {
                self.flows[f as usize] = fl;
                f
            }
            None => {
                self.flows.push(fl);
                (self.flows.len() - 1) as u32
            }
        };
        bucket.push(f);
        self.n_flows += 1;
        self.inactive_flows += 1;
        (f, bucket.len() == 1)
    }

    fn drop_pkt(&mut self, pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        self.c.drops += 1;
        dropped.push(pkt);
        Verdict::Dropped
    }

    /// The pacing after a flow sent `plen` bytes at `now` (the tail of `fq_dequeue()`).
    fn pace(&mut self, f: u32, meta: &PktMeta, plen: u32, now: u64) {
        let quantum = self.p.quantum;
        let mut rate = self.p.flow_max_rate;
        let mut plen = plen;
        let fl = &mut self.flows[f as usize];
        // with an EDT time only maxrate adds spacing
        if meta.txtime == Instant::ZERO {
            if meta.sk != 0 {
                rate = rate.min(meta.pacing_rate);
            }
            if rate <= self.p.low_rate_threshold {
                fl.credit = 0;
            } else {
                plen = plen.max(quantum);
                if fl.credit > 0 {
                    return;
                }
            }
        }
        if rate == NO_RATE {
            return;
        }
        // div64_ul() when the rate is non-zero
        let mut len = plen as u64 * NSEC_PER_SEC;
        len = len.checked_div(rate).unwrap_or(len);
        // "Since socket rate can change later, clamp the delay to 1 second."
        if len > NSEC_PER_SEC {
            len = NSEC_PER_SEC;
            self.st.pkts_too_long += 1;
        }
        // "Account for schedule/timers drifts."
        if fl.time_next_packet != 0 {
            let drift = now as i64 - fl.time_next_packet as i64;
            if drift > 0 {
                len -= (len / 2).min(drift as u64);
            }
        }
        fl.time_next_packet = now + len;
    }

    /// `fq_pband_head_select()` + the WRR band loop of `fq_dequeue()`: the band and list
    /// (new = true) to serve, or `None` when no band has an eligible flow.
    fn select(&mut self, retry: &mut usize) -> Option<(usize, bool)> {
        loop {
            let nr = self.band_nr as usize;
            let pb = &self.bands[nr];
            if pb.credit > 0 {
                if !pb.new_flows.is_empty() {
                    return Some((nr, true));
                }
                if !pb.old_flows.is_empty() {
                    return Some((nr, false));
                }
            }
            loop {
                *retry += 1;
                if *retry > FQ_BANDS {
                    return None;
                }
                self.band_nr = (self.band_nr + 1) % FQ_BANDS as u32;
                let pb = &mut self.bands[self.band_nr as usize];
                pb.credit = (pb.credit + pb.quantum).min(pb.quantum);
                if pb.credit > 0 {
                    break;
                }
                *retry = 0;
            }
        }
    }
}

impl Qdisc for Fq {
    fn kind(&self) -> &'static str {
        "fq"
    }

    fn enqueue(&mut self, now_i: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        pkt.meta.enqueued = now_i;
        let now = now_i.as_nanos();
        let band = self.p.prio2band[(skb_priority(&pkt) & 15) as usize] as usize;
        if self.band_pkt_count[band] >= self.p.limit {
            self.st.band_drops[band] += 1;
            return self.drop_pkt(pkt, dropped);
        }
        let tts = if pkt.meta.txtime == Instant::ZERO {
            now
        } else {
            // fq_packet_beyond_horizon(): (s64)tstamp > (s64)(now + horizon)
            let t = pkt.meta.txtime.as_nanos();
            if t as i64 > now.saturating_add(self.p.horizon_ns) as i64 {
                if self.p.horizon_drop {
                    self.st.horizon_drops += 1;
                    return self.drop_pkt(pkt, dropped);
                }
                self.st.horizon_caps += 1;
                pkt.meta.txtime = Instant::from_nanos(now + self.p.horizon_ns);
            }
            pkt.meta.txtime.as_nanos()
        };
        let len = pkt.len();
        // fq_classify(): a socket's flow, or an orphan keyed by the packet hash
        let key = if pkt.meta.sk != 0 {
            pkt.meta.sk << 1
        } else {
            (((flow_hash(&pkt, self.hash_key) & self.p.orphan_mask) as u64) << 1) | 1
        };
        if self.fastpath(&pkt, tts, now) {
            self.st.fastpath_packets += 1;
            self.internal_qlen += 1;
            tq_push(&mut self.internal, &mut self.internal_ooo, tts, pkt);
        } else {
            let f = self.lookup(key, now);
            let (quantum, refill, flow_limit) = (self.p.quantum as i32, self.p.refill_delay_ns, self.p.flow_limit);
            if self.flows[f as usize].qlen >= flow_limit {
                self.st.flows_plimit += 1;
                return self.drop_pkt(pkt, dropped);
            }
            if self.flows[f as usize].at == Where::Detached {
                // the list is chosen by the flow's band *before* this packet's band is
                // recorded, as in fq_enqueue()
                self.add_tail(f, true);
                let fl = &mut self.flows[f as usize];
                if now > fl.age + refill {
                    // max_t(u32, credit, quantum): a negative credit (huge as u32) is kept
                    if fl.credit >= 0 {
                        fl.credit = fl.credit.max(quantum);
                    }
                }
            }
            let fl = &mut self.flows[f as usize];
            fl.band = band as u8;
            if fl.qlen == 0 {
                self.inactive_flows -= 1;
            }
            fl.qlen += 1;
            // fq_skb_cb(skb)->band is recomputed at dequeue from the unchanged priority
            tq_push(&mut fl.lin, &mut fl.ooo, tts, pkt);
            self.band_pkt_count[band] += 1;
        }
        self.qlen += 1;
        self.backlog += len;
        Verdict::Queued
    }

    fn dequeue(&mut self, now_i: Instant, _dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        if self.qlen == 0 {
            return None;
        }
        if self.internal_qlen > 0 {
            let ooo = (self.internal_qlen as usize != self.internal.len()).then_some(&mut self.internal_ooo);
            if let Some((_, p)) = tq_pop(&mut self.internal, ooo) {
                self.internal_qlen -= 1;
                self.qlen -= 1;
                self.backlog -= p.len();
                self.c.sent(&p);
                return Some(p);
            }
        }
        let now = now_i.as_nanos();
        self.check_throttled(now);
        let mut retry = 0;
        loop {
            let (b, new) = self.select(&mut retry)?;
            retry = 0;
            let f = if new { self.bands[b].new_flows.first } else { self.bands[b].old_flows.first };
            if f == NIL {
                continue;
            }
            let fl = &mut self.flows[f as usize];
            if fl.credit <= 0 {
                fl.credit += self.p.quantum as i32;
                self.pop_head(b, new, f);
                self.add_tail(f, false);
                continue;
            }
            let Some((tts, _)) = tq_peek(&fl.lin, fl.ooo()) else {
                self.pop_head(b, new, f);
                // force a pass through old_flows to prevent starvation
                if new {
                    self.add_tail(f, false);
                } else {
                    let fl = &mut self.flows[f as usize];
                    fl.at = Where::Detached;
                    fl.age = now;
                }
                continue;
            };
            let time_next_packet = tts.max(fl.time_next_packet);
            if now < time_next_packet {
                fl.time_next_packet = time_next_packet;
                self.pop_head(b, new, f);
                self.set_throttled(f);
                continue;
            }
            let (_, mut p) = fl.pop()?;
            fl.qlen -= 1;
            if fl.qlen == 0 {
                self.inactive_flows += 1;
            }
            if (now as i64).wrapping_sub(time_next_packet as i64).wrapping_sub(self.p.ce_threshold_ns as i64) > 0 {
                p.inet_ecn_set_ce();
                self.st.ce_mark += 1;
            }
            let pband = self.p.prio2band[(skb_priority(&p) & 15) as usize] as usize;
            self.band_pkt_count[pband] -= 1;
            let plen = p.len() as u32;
            self.flows[f as usize].credit -= plen as i32;
            self.bands[b].credit -= plen as i64;
            self.qlen -= 1;
            self.backlog -= p.len();
            self.c.sent(&p);
            if self.p.rate_enable {
                let meta = p.meta;
                self.pace(f, &meta, plen, now);
            }
            return Some(p);
        }
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if self.qlen == 0 {
            return None;
        }
        if self.internal_qlen > 0 {
            return Some(now);
        }
        (self.time_next_delayed_flow != u64::MAX).then(|| Instant::from_nanos(self.time_next_delayed_flow).max(now))
    }

    fn qlen(&self) -> usize {
        self.qlen as usize
    }

    fn backlog_bytes(&self) -> usize {
        self.backlog
    }

    fn stats(&self) -> QdiscStats {
        let mut s = self.c.snapshot("fq", self.qlen as usize, self.backlog);
        let p = &self.p;
        let rate = |r: u64| if r == NO_RATE { -1 } else { r.min(i64::MAX as u64) as i64 };
        s.xstats.extend([
            ("limit", p.limit as i64),
            ("flow_limit", p.flow_limit as i64),
            ("buckets", 1i64 << p.buckets_log),
            ("orphan_mask", p.orphan_mask as i64),
            ("quantum", p.quantum as i64),
            ("initial_quantum", p.initial_quantum as i64),
            ("maxrate_Bps", rate(p.flow_max_rate)),
            ("low_rate_threshold_Bps", rate(p.low_rate_threshold)),
            ("pacing", p.rate_enable as i64),
            ("refill_delay_ns", p.refill_delay_ns as i64),
            ("timer_slack_ns", p.timer_slack_ns as i64),
            ("horizon_ns", p.horizon_ns.min(i64::MAX as u64) as i64),
            ("horizon_drop", p.horizon_drop as i64),
            ("flows", self.n_flows as i64),
            ("inactive", self.inactive_flows as i64),
            ("throttled_flows", self.throttled_flows as i64),
            ("band0_pkts", self.band_pkt_count[0] as i64),
            ("band1_pkts", self.band_pkt_count[1] as i64),
            ("band2_pkts", self.band_pkt_count[2] as i64),
            ("gc", self.st.gc_flows as i64),
            ("highprio", 0),
            ("fastpath", self.st.fastpath_packets as i64),
            ("throttled", self.st.throttled as i64),
            ("latency_ns", self.st.unthrottle_latency_ns as i64),
            ("ce_mark", self.st.ce_mark as i64),
            ("flows_plimit", self.st.flows_plimit as i64),
            ("pkts_too_long", self.st.pkts_too_long as i64),
            ("horizon_drops", self.st.horizon_drops as i64),
            ("horizon_caps", self.st.horizon_caps as i64),
            ("band0_drops", self.st.band_drops[0] as i64),
            ("band1_drops", self.st.band_drops[1] as i64),
            ("band2_drops", self.st.band_drops[2] as i64),
        ]);
        s
    }

    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
    }
}

/// `tc qdisc … fq` options as given; unset ones take `fq_init()`'s defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct FqOpts {
    limit: Option<u32>,
    flow_limit: Option<u32>,
    quantum: Option<u32>,
    initial_quantum: Option<u32>,
    maxrate: Option<u64>,
    buckets_log: Option<u8>,
    pacing: Option<bool>,
    refill_delay_us: Option<u64>,
    low_rate_threshold: Option<u64>,
    orphan_mask: Option<u32>,
    ce_threshold_us: Option<u64>,
    timer_slack_ns: Option<u64>,
    horizon_us: Option<u64>,
    horizon_drop: Option<bool>,
    priomap: Option<[u8; 16]>,
    weights: Option<[i32; FQ_BANDS]>,
}

impl FqOpts {
    /// `fq_parse_opt()` (tc/q_fq.c) with `fq_change()`'s range checks.
    pub(crate) fn parse(a: &mut Args) -> R<FqOpts> {
        let w = "fq";
        let mut o_ = FqOpts::default();
        while let Some(o) = a.next() {
            match o {
                "limit" => o_.limit = Some(u32_opt(w, o, a.val(w, o)?)?),
                "flow_limit" => o_.flow_limit = Some(u32_opt(w, o, a.val(w, o)?)?),
                // clamp_t(u32, quantum, 256, 1 << 20) in fq_change()
                "quantum" => o_.quantum = Some(u32_opt(w, o, a.val(w, o)?)?.clamp(256, 1 << 20)),
                "initial_quantum" => {
                    let v = a.val(w, o)?;
                    let q = u32_opt(w, o, v)?;
                    if q > 1 << 20 {
                        return Err(bad(w, o, v, "must be 0..=1048576 (NLA_POLICY_FULL_RANGE)"));
                    }
                    o_.initial_quantum = Some(q);
                }
                "maxrate" => o_.maxrate = Some(rate32_opt(w, o, a.val(w, o)?)?),
                "low_rate_threshold" => o_.low_rate_threshold = Some(rate32_opt(w, o, a.val(w, o)?)?),
                "defrate" => {
                    // "sch_fq: defrate %u ignored." (fq_change())
                    rate32_opt(w, o, a.val(w, o)?)?;
                }
                "buckets" => {
                    let v = a.val(w, o)?;
                    let n = u32_opt(w, o, v)?;
                    // tc sends ilog2 rounded up; the kernel takes 1..=18
                    let log = if n <= 1 { 0 } else { 32 - (n - 1).leading_zeros() };
                    if !(1..=18).contains(&log) {
                        return Err(bad(w, o, v, "must be 2..=262144 (rounded up to a power of two)"));
                    }
                    o_.buckets_log = Some(log as u8);
                }
                "orphan_mask" => o_.orphan_mask = Some(u32_opt(w, o, a.val(w, o)?)?),
                "refill_delay" => o_.refill_delay_us = Some(time_us_opt(w, o, a.val(w, o)?)?),
                "ce_threshold" => o_.ce_threshold_us = Some(time_us_opt(w, o, a.val(w, o)?)?),
                "horizon" => o_.horizon_us = Some(time_us_opt(w, o, a.val(w, o)?)?),
                "timer_slack" => {
                    let v = a.val(w, o)?;
                    let ns = time_opt(w, o, v)?.as_nanos();
                    if ns > u32::MAX as u64 {
                        return Err(bad(w, o, v, "out of range: at most 4294967295ns"));
                    }
                    o_.timer_slack_ns = Some(ns);
                }
                "offload_horizon" => {
                    let v = a.val(w, o)?;
                    if time_us_opt(w, o, v)? != 0 {
                        return Err(bad(w, o, v, "invalid offload_horizon: a simulated device offloads no pacing (max_pacing_offload_horizon 0), so only 0 is valid"));
                    }
                }
                "horizon_drop" => o_.horizon_drop = Some(true),
                "horizon_cap" => o_.horizon_drop = Some(false),
                "pacing" => o_.pacing = Some(true),
                "nopacing" => o_.pacing = Some(false),
                "bands" => {
                    if o_.priomap.is_some() {
                        return Err("fq: duplicate `bands`".into());
                    }
                    let v = a.val(w, o)?;
                    if v != "3" {
                        return Err(bad(w, o, v, "`bands` must be 3"));
                    }
                    if a.next() != Some("priomap") {
                        return Err("fq: `priomap` expected after `bands 3`".into());
                    }
                    let mut map = [0u8; 16];
                    for (i, m) in map.iter_mut().enumerate() {
                        let v = a.next().ok_or_else(|| format!("fq: not enough elements in `priomap` ({i} of 16)"))?;
                        let b = v.parse::<u32>().map_err(|_| bad(w, "priomap", v, "expected a band number in [0..2]"))?;
                        if b >= FQ_BANDS as u32 {
                            return Err(bad(w, "priomap", v, "band too big: must be 0..=2"));
                        }
                        *m = b as u8;
                    }
                    o_.priomap = Some(map);
                }
                "weights" => {
                    if o_.weights.is_some() {
                        return Err("fq: duplicate `weights`".into());
                    }
                    let mut ws = [0i32; FQ_BANDS];
                    for (i, x) in ws.iter_mut().enumerate() {
                        let v = a.next().ok_or_else(|| format!("fq: not enough elements in `weights` ({i} of 3)"))?;
                        let n = v.parse::<i32>().map_err(|_| bad(w, "weights", v, "expected a positive number"))?;
                        if n < FQ_MIN_WEIGHT {
                            return Err(bad(w, "weights", v, format!("weight too small: each must be at least {FQ_MIN_WEIGHT}")));
                        }
                        *x = n;
                    }
                    o_.weights = Some(ws);
                }
                _ => return Err(unsupported(w, o)),
            }
        }
        Ok(o_)
    }

    /// The parameters: `fq_init()`'s defaults for `dev`, then the options given.
    pub(crate) fn params(&self, dev: &DevParams) -> FqParams {
        let o = self;
        let mut p = FqParams::new(dev);
        let set = |dst: &mut u32, v: Option<u32>| {
            if let Some(v) = v {
                *dst = v;
            }
        };
        set(&mut p.limit, o.limit);
        set(&mut p.flow_limit, o.flow_limit);
        set(&mut p.quantum, o.quantum);
        set(&mut p.initial_quantum, o.initial_quantum);
        set(&mut p.orphan_mask, o.orphan_mask);
        if let Some(r) = o.maxrate {
            // (rate == ~0U) ? ~0UL : rate
            p.flow_max_rate = if r == u32::MAX as u64 { NO_RATE } else { r };
        }
        if let Some(r) = o.low_rate_threshold {
            p.low_rate_threshold = r;
        }
        if let Some(l) = o.buckets_log {
            p.buckets_log = l;
        }
        if let Some(e) = o.pacing {
            p.rate_enable = e;
        }
        if let Some(us) = o.refill_delay_us {
            p.refill_delay_ns = us * 1000;
        }
        if let Some(us) = o.ce_threshold_us {
            p.ce_threshold_ns = us * 1000;
        }
        if let Some(us) = o.horizon_us {
            p.horizon_ns = us * 1000;
        }
        if let Some(ns) = o.timer_slack_ns {
            p.timer_slack_ns = ns;
        }
        if let Some(d) = o.horizon_drop {
            p.horizon_drop = d;
        }
        if let Some(m) = o.priomap {
            p.prio2band = m;
        }
        if let Some(ws) = o.weights {
            p.weights = ws;
        }
        p
    }
}

#[cfg(test)]
mod layout {
    use super::*;
    use core::mem::{offset_of, size_of};

    /// What a packet's enqueue and dequeue read stays on `Fq`'s first six lines and a
    /// flow's first line (see the comments on [`Fq`] and [`Flow`]).
    #[test]
    fn hot_fields_stay_on_their_lines() {
        assert_eq!(offset_of!(Fq, band_pkt_count) + size_of::<[u32; FQ_BANDS]>(), 64, "queue state: line 0");
        assert_eq!(offset_of!(Fq, p), 64);
        assert_eq!(offset_of!(FqParams, refill_delay_ns), 64, "per-packet parameters: line 1");
        assert!(offset_of!(Fq, flows) + size_of::<Vec<Flow>>() <= 192);
        assert_eq!(offset_of!(Fq, bands), 192);
        assert_eq!(size_of::<Band>(), 32);
        assert!(offset_of!(Fq, delayed_seq) + 8 <= 320, "the throttled set's head: line 4");
        assert_eq!(offset_of!(Fq, c), 320);
        assert!(offset_of!(Fq, st) + offset_of!(FqStats, gc_flows) <= 384, "counters: line 5");
        assert!(offset_of!(Flow, at) < 64 && offset_of!(Flow, key) == 64);
        assert_eq!(size_of::<Flow>(), 128);
    }
}
