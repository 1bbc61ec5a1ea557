//! `dualpi2`: the coupled dual-queue AQM for L4S (net/sched/sch_dualpi2.c, Linux 6.17+;
//! RFC 9332).
//!
//! * **Classification** (`dualpi2_skb_classify()`): a packet whose ECN field `& ecn_mask`
//!   is non-zero (`l4s_ect`: ECT(1) and CE; `any_ect`: also ECT(0)) goes to the L-queue;
//!   `skb->priority` = `handle:1` / `handle:2` also selects the L-queue (`:2` = never
//!   marked or dropped); everything else goes to the C-queue.
//! * **PI2** (`calculate_probability()`, every `tupdate`): the base probability `p` moves by
//!   `alpha·(qdelay − target) + beta·(qdelay − qdelay_prev)`, `qdelay` the larger of the
//!   two head packets' sojourn times, kept as a `u32` fraction of `MAX_PROB`. The C-queue
//!   drops or marks with `p²` (two random rolls), the L-queue marks with `k·p`
//!   (`coupling_factor`); with `k·p ≥ 1` (overload) L4S packets are treated as classic
//!   (`drop_on_overload`) or keep being marked (`overflow`).
//! * **Step AQM** (`do_step_aqm()`): an L4S packet that waited longer than `step_thresh`
//!   (or found more than `step_thresh` packets in the L-queue) is CE-marked at dequeue.
//! * **Scheduling** (`dequeue_packet()`): weighted round robin between the queues with
//!   `classic_protection` (C-queue weight, default 10 %); the sign of a byte credit picks the
//!   queue.
//! * AQM decisions happen at dequeue (`drop_dequeue`, default) or enqueue (`drop_enqueue`);
//!   a standing backlog under 2 MTUs is never marked or dropped.
//!
//! The PI2 timer (an hrtimer restarted `tupdate` after each expiry, first expiry `tupdate`
//! after the qdisc is created at time 0) is applied lazily: expiries due by `now` are
//! replayed in order at the start of the next enqueue/dequeue. Nothing the computation
//! reads changes between events, so the result equals Linux's timer; an expiry at exactly
//! the time of an event is applied before the event.
//!
//! Deviations (docs/qdisc.md): memory is counted as packet length (Linux: `truesize`);
//! tc filters on dualpi2 are not supported (`skb->priority` classification is); GSO
//! splitting is moot (one packet = one segment).
use crate::config::{bad, time_us_opt, u32_opt, unsupported, Args, R};
use crate::util::{parse_c_u32, skb_priority};
use crate::{ClassId, Counters, DevParams, Qdisc, QdiscStats, Verdict};
use std::collections::VecDeque;
use wirelab_core::pkt::ecn;
use wirelab_core::{Duration, Instant, Pkt, Rng};

/// `MAX_PROB`: probabilities are fractions of `u32::MAX`.
pub const MAX_PROB: u32 = u32::MAX;
/// `ALPHA_BETA_SHIFT - ALPHA_BETA_GRANULARITY`.
const ALPHA_BETA_SCALING: u32 = 8 - 6;
/// `ALPHA_BETA_GRANULARITY`.
const ALPHA_BETA_GRANULARITY: u32 = 6;
/// `ALPHA_BETA_MAX`: alpha/beta as tc sends them (×256) are at most this.
pub const ALPHA_BETA_MAX: u32 = (1 << 31) - 1;
/// `TC_DUALPI2_ECN_MASK_L4S_ECT`.
pub const ECN_MASK_L4S_ECT: u8 = 1;
/// `TC_DUALPI2_ECN_MASK_ANY_ECT`.
pub const ECN_MASK_ANY_ECT: u8 = 3;

/// `dualpi2_scale_alpha_beta()`: tc's alpha/beta (Hz × 256) to the internal gain.
pub fn scale_alpha_beta(param: u32) -> u32 {
    (((param as u64 * MAX_PROB as u64) >> ALPHA_BETA_SCALING) / 1_000_000_000) as u32
}

/// Resolved parameters; [`DualPi2Params::new`] gives `dualpi2_reset_default()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DualPi2Params {
    /// `limit` packets (both queues), 10000.
    pub limit: u32,
    /// `memlimit` bytes, `limit × 2 × psched_mtu`.
    pub memory_limit: u32,
    /// `target` ns (15 ms).
    pub target_ns: u64,
    /// `tupdate` ns (16 ms).
    pub tupdate_ns: u64,
    /// Internal alpha (`scale_alpha_beta(41)`, ~0.16 Hz).
    pub alpha: u32,
    /// Internal beta (`scale_alpha_beta(819)`, ~3.2 Hz).
    pub beta: u32,
    /// `step_thresh`: ns, or packets when `step_in_packets` (1 ms).
    pub step_thresh: u64,
    /// `step_thresh N` given in packets.
    pub step_in_packets: bool,
    /// `min_qlen_step` (0).
    pub min_qlen_step: u32,
    /// `coupling_factor` k (2).
    pub coupling_factor: u8,
    /// `drop_on_overload` (default) or `overflow`.
    pub drop_overload: bool,
    /// `drop_enqueue`, or `drop_dequeue` (default).
    pub drop_early: bool,
    /// `classic_protection` percent (10).
    pub c_protection_wc: u8,
    /// `l4s_ect` (1, default) or `any_ect` (3).
    pub ecn_mask: u8,
    /// `split_gso` (default) / `no_split_gso`: recorded only.
    pub split_gso: bool,
}

impl DualPi2Params {
    /// `dualpi2_reset_default()`.
    pub fn new(dev: &DevParams) -> Self {
        DualPi2Params {
            limit: 10_000,
            memory_limit: memory_limit(10_000, dev),
            target_ns: 15_000_000,
            tupdate_ns: 16_000_000,
            alpha: scale_alpha_beta(41),
            beta: scale_alpha_beta(819),
            step_thresh: 1_000_000,
            step_in_packets: false,
            min_qlen_step: 0,
            coupling_factor: 2,
            drop_overload: true,
            drop_early: false,
            c_protection_wc: 10,
            ecn_mask: ECN_MASK_L4S_ECT,
            split_gso: true,
        }
    }
}

/// `get_memory_limit()`: `limit × 2 × psched_mtu`, saturating at `u32::MAX`.
pub fn memory_limit(limit: u32, dev: &DevParams) -> u32 {
    (limit as u64 * 2 * dev.psched_mtu() as u64).min(u32::MAX as u64) as u32
}

/// `enum dualpi2_classification_results`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Classic,
    L4s,
    Llll,
}

#[derive(Debug)]
struct Entry {
    /// `dualpi2_skb_cb->ts` (internal clock, see [`DualPi2::kt`]).
    ts: u64,
    class: Class,
    ect: u8,
    apply_step: bool,
    pkt: Pkt,
}

/// The `dualpi2` qdisc.
#[derive(Debug)]
pub struct DualPi2 {
    p: DualPi2Params,
    psched_mtu: u32,
    rng: Rng,
    c_queue: VecDeque<Entry>,
    l_queue: VecDeque<Entry>,
    backlog: usize,
    pi2_prob: u32,
    last_qdelay: u64,
    next_timer: u64,
    c_head_ts: u64,
    l_head_ts: u64,
    c_protection_credit: i32,
    c_protection_init: i32,
    memory_used: u32,
    max_memory_used: u32,
    packets_in_c: u32,
    packets_in_l: u32,
    maxq: u32,
    ecn_mark: u32,
    step_marks: u32,
    last_kt: u64,
    c: Counters,
}

impl DualPi2 {
    /// A dualpi2 qdisc created at time 0; `rng` draws the marking rolls
    /// (`get_random_u32()`).
    pub fn new(p: DualPi2Params, dev: &DevParams, rng: Rng) -> Self {
        let wc = p.c_protection_wc as i32;
        let init = dev.psched_mtu() as i32 * (wc - (100 - wc));
        DualPi2 {
            psched_mtu: dev.psched_mtu(),
            rng,
            c_queue: VecDeque::new(),
            l_queue: VecDeque::new(),
            backlog: 0,
            pi2_prob: 0,
            last_qdelay: 0,
            next_timer: Self::kt(Instant::ZERO) + p.tupdate_ns,
            c_head_ts: 0,
            l_head_ts: 0,
            c_protection_credit: init,
            c_protection_init: init,
            memory_used: 0,
            max_memory_used: 0,
            packets_in_c: 0,
            packets_in_l: 0,
            maxq: 0,
            ecn_mark: 0,
            step_marks: 0,
            last_kt: 0,
            c: Counters::new(),
            p,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &DualPi2Params {
        &self.p
    }

    /// The base PI probability (`pi2_prob`, a fraction of [`MAX_PROB`]).
    pub fn prob(&self) -> u32 {
        self.pi2_prob
    }

    /// The internal clock: simulated ns + 1, because Linux's `ktime_get_ns()` is never 0
    /// and dualpi2 uses a zero head timestamp to mean "queue empty".
    fn kt(now: Instant) -> u64 {
        now.as_nanos() + 1
    }

    /// `calculate_probability()` at timer expiry `t`.
    fn calculate_probability(&mut self, t: u64) -> u32 {
        let qc = if self.c_head_ts != 0 { t - self.c_head_ts } else { 0 };
        let ql = if self.l_head_ts != 0 { t - self.l_head_ts } else { 0 };
        let qdelay = qc.max(ql);
        let mut delta = (qdelay as i64).wrapping_sub(self.p.target_ns as i64).wrapping_mul(self.p.alpha as i64);
        delta = delta.wrapping_add((qdelay as i64).wrapping_sub(self.last_qdelay as i64).wrapping_mul(self.p.beta as i64));
        self.last_qdelay = qdelay;
        let prob = self.pi2_prob;
        // __scale_delta() divides by 64; the result is truncated to u32 as in C
        let new_prob = if delta > 0 {
            let n = ((delta as u64 >> ALPHA_BETA_GRANULARITY) as u32).wrapping_add(prob);
            if n < prob {
                MAX_PROB
            } else {
                n
            }
        } else {
            let n = prob.wrapping_sub((delta.wrapping_neg() as u64 >> ALPHA_BETA_GRANULARITY) as u32);
            if n > prob {
                0
            } else {
                n
            }
        };
        if !self.p.drop_overload {
            return new_prob.min(MAX_PROB / self.p.coupling_factor as u32);
        }
        new_prob
    }

    /// Replays the PI2 timer expiries due by `kt`.
    fn run_timer(&mut self, kt: u64) {
        while self.next_timer <= kt {
            if self.c_queue.is_empty() && self.l_queue.is_empty() && self.pi2_prob == 0 && self.last_qdelay == 0 {
                // fixed point: every further expiry computes 0 again
                let skip = (kt - self.next_timer) / self.p.tupdate_ns + 1;
                self.next_timer += skip * self.p.tupdate_ns;
                break;
            }
            let t = self.next_timer;
            self.pi2_prob = self.calculate_probability(t);
            self.next_timer = t + self.p.tupdate_ns;
        }
        self.last_kt = kt;
    }

    /// `dualpi2_roll()`: `get_random_u32() <= prob`.
    fn roll(&mut self, prob: u32) -> bool {
        self.rng.next_u32() <= prob
    }

    fn mark(&mut self, pkt: &mut Pkt) -> bool {
        if pkt.inet_ecn_set_ce() {
            self.ecn_mark += 1;
            true
        } else {
            false
        }
    }

    /// `must_drop()`: true if the packet must be dropped (it may have been CE-marked).
    fn must_drop(&mut self, e: &mut Entry) -> bool {
        if self.backlog < 2 * self.psched_mtu as usize {
            return false;
        }
        let prob = self.pi2_prob;
        let local_l_prob = prob as u64 * self.p.coupling_factor as u64;
        let overload = local_l_prob > MAX_PROB as u64;
        match e.class {
            // dualpi2_classic_marking(): p² by two rolls
            Class::Classic => {
                if self.roll(prob) && self.roll(prob) {
                    if overload || e.ect == ecn::NOT_ECT {
                        return true;
                    }
                    self.mark(&mut e.pkt);
                }
                false
            }
            // dualpi2_scalable_marking()
            Class::L4s => {
                if overload {
                    // `!drop_overload || !(roll && roll)`: the rolls only happen with drop_overload
                    if !(self.p.drop_overload && self.roll(prob) && self.roll(prob)) {
                        self.mark(&mut e.pkt);
                        return false;
                    }
                    return true;
                }
                if self.roll(local_l_prob as u32) {
                    if e.ect == ecn::NOT_ECT {
                        return true;
                    }
                    self.mark(&mut e.pkt);
                }
                false
            }
            Class::Llll => false,
        }
    }

    fn classify(&self, pkt: &Pkt) -> (Class, u8) {
        let ect = pkt.ecn().unwrap_or(ecn::NOT_ECT);
        if ect & self.p.ecn_mask != 0 {
            return (Class::L4s, ect);
        }
        let prio = skb_priority(pkt);
        if prio & 0xFFFF_0000 == self.c.handle.0 & 0xFFFF_0000 && self.c.handle.0 != 0 {
            match prio & 0xFFFF {
                1 => return (Class::L4s, ect),
                2 => return (Class::Llll, ect),
                _ => {}
            }
        }
        (Class::Classic, ect)
    }

    /// `dequeue_packet()`: the WRR between the queues; (entry, credit change).
    fn dequeue_packet(&mut self) -> Option<(Entry, i32, bool)> {
        let c_len = self.c_queue.len();
        let (e, change, from_l) = if !self.l_queue.is_empty() && (c_len == 0 || self.c_protection_credit <= 0) {
            let e = self.l_queue.pop_front()?;
            self.l_head_ts = self.l_queue.front().map_or(0, |h| h.ts);
            (e, if c_len > 0 { self.p.c_protection_wc as i32 } else { 0 }, true)
        } else if c_len > 0 {
            let e = self.c_queue.pop_front()?;
            self.c_head_ts = self.c_queue.front().map_or(0, |h| h.ts);
            (e, if self.l_queue.is_empty() { 0 } else { -(100 - self.p.c_protection_wc as i32) }, false)
        } else {
            self.c_protection_credit = self.c_protection_init;
            return None;
        };
        self.memory_used -= e.pkt.len() as u32;
        self.backlog -= e.pkt.len();
        let change = change * e.pkt.len() as i32;
        Some((e, change, from_l))
    }

    /// `do_step_aqm()`: true if the packet must be dropped (a Not-ECT packet over the step).
    fn step_aqm(&mut self, e: &mut Entry, kt: u64) -> bool {
        let qdelay = if self.p.step_in_packets { self.l_queue.len() as u64 } else { kt - e.ts };
        if e.apply_step && qdelay > self.p.step_thresh {
            if e.ect == ecn::NOT_ECT {
                return true;
            }
            if self.mark(&mut e.pkt) {
                self.step_marks += 1;
            }
        }
        false
    }
}

impl Qdisc for DualPi2 {
    fn kind(&self) -> &'static str {
        "dualpi2"
    }

    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        let kt = Self::kt(now);
        self.run_timer(kt);
        pkt.meta.enqueued = now;
        let (class, ect) = self.classify(&pkt);
        let len = pkt.len();
        let qlen = self.c_queue.len() + self.l_queue.len();
        if qlen as u64 >= self.p.limit as u64 || self.memory_used as u64 + len as u64 > self.p.memory_limit as u64 {
            self.c.overlimits += 1;
            self.c.drops += 1;
            dropped.push(pkt);
            return Verdict::Dropped;
        }
        let mut e = Entry { ts: kt, class, ect, apply_step: false, pkt };
        if self.p.drop_early && self.must_drop(&mut e) {
            self.c.drops += 1;
            dropped.push(e.pkt);
            return Verdict::Dropped;
        }
        self.memory_used += len as u32;
        self.max_memory_used = self.max_memory_used.max(self.memory_used);
        self.maxq = self.maxq.max(qlen as u32);
        self.backlog += len;
        if class != Class::Classic {
            e.apply_step = class == Class::L4s && self.l_queue.len() as u32 >= self.p.min_qlen_step;
            self.packets_in_l += 1;
            if self.l_head_ts == 0 {
                self.l_head_ts = kt;
            }
            self.l_queue.push_back(e);
        } else {
            self.packets_in_c += 1;
            if self.c_head_ts == 0 {
                self.c_head_ts = kt;
            }
            self.c_queue.push_back(e);
        }
        Verdict::Queued
    }

    fn dequeue(&mut self, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        let kt = Self::kt(now);
        self.run_timer(kt);
        while let Some((mut e, change, from_l)) = self.dequeue_packet() {
            if !self.p.drop_early && self.must_drop(&mut e) {
                self.c.drops += 1;
                dropped.push(e.pkt);
                continue;
            }
            if from_l && self.step_aqm(&mut e, kt) {
                self.c.drops += 1;
                dropped.push(e.pkt);
                continue;
            }
            self.c_protection_credit += change;
            self.c.sent(&e.pkt);
            return Some(e.pkt);
        }
        None
    }

    fn qlen(&self) -> usize {
        self.c_queue.len() + self.l_queue.len()
    }

    fn backlog_bytes(&self) -> usize {
        self.backlog
    }

    fn stats(&self) -> QdiscStats {
        let mut s = self.c.snapshot("dualpi2", self.qlen(), self.backlog);
        let us = |head: u64| if head == 0 { 0 } else { Duration::from_nanos(self.last_kt.saturating_sub(head)).as_micros() as i64 };
        s.xstats.extend([
            ("prob", self.pi2_prob as i64),
            ("delay_c_us", us(self.c_head_ts)),
            ("delay_l_us", us(self.l_head_ts)),
            ("pkts_in_c", self.packets_in_c as i64),
            ("pkts_in_l", self.packets_in_l as i64),
            ("maxq", self.maxq as i64),
            ("ecn_mark", self.ecn_mark as i64),
            ("step_mark", self.step_marks as i64),
            ("credit", self.c_protection_credit as i64),
            ("memory_used", self.memory_used as i64),
            ("max_memory_used", self.max_memory_used as i64),
            ("memory_limit", self.p.memory_limit as i64),
            ("limit", self.p.limit as i64),
            ("coupling_factor", self.p.coupling_factor as i64),
            ("classic_protection", self.p.c_protection_wc as i64),
        ]);
        s
    }

    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
    }
}

/// `tc qdisc … dualpi2` options as given (after tc's `max_rtt` auto-configuration).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct DualPi2Opts {
    limit: Option<u32>,
    memlimit: Option<u32>,
    target_us: Option<u64>,
    tupdate_us: Option<u64>,
    alpha: Option<u32>,
    beta: Option<u32>,
    step: Option<(u64, bool)>,
    min_qlen_step: Option<u32>,
    coupling: Option<u8>,
    drop_overload: Option<bool>,
    drop_early: Option<bool>,
    c_protection: Option<u8>,
    ecn_mask: Option<u8>,
    split_gso: Option<bool>,
}

impl DualPi2Opts {
    /// `dualpi2_parse_opt()` (tc/q_dualpi2.c) with the kernel's `dualpi2_policy` ranges.
    pub(crate) fn parse(a: &mut Args) -> R<DualPi2Opts> {
        let w = "dualpi2";
        let mut o_ = DualPi2Opts::default();
        let (mut rtt_max, mut rtt_typ) = (0u64, 0u64);
        // parse_alpha_beta(): a float (Hz) in [0, 2^24 - 1], sent as (u32)(f * 256)
        let alpha_beta = |o: &str, v: &str| -> R<u32> {
            let f: f32 = v.parse().map_err(|_| bad(w, o, v, "expected a number (Hz)"))?;
            if !(0.0..=((2u32 << 23) - 1) as f32).contains(&f) {
                return Err(bad(w, o, v, "must be 0..=16777215"));
            }
            let x = (f * 256.0) as u32;
            if x == 0 {
                return Err(bad(w, o, v, "rounds to zero: must be at least 1/256 (the kernel takes 1..=2147483647 in 1/256)"));
            }
            Ok(x)
        };
        let nonzero_u32 = |o: &str, v: &str| -> R<u32> {
            let n = v.parse::<u32>().map_err(|_| bad(w, o, v, "expected an integer"))?;
            if n == 0 {
                return Err(bad(w, o, v, "must be at least 1"));
            }
            Ok(n)
        };
        while let Some(o) = a.next() {
            match o {
                "limit" => o_.limit = Some(nonzero_u32(o, a.val(w, o)?)?),
                "memlimit" => o_.memlimit = Some(nonzero_u32(o, a.val(w, o)?)?),
                "target" => o_.target_us = Some(time_us_opt(w, o, a.val(w, o)?)?),
                "tupdate" => {
                    let v = a.val(w, o)?;
                    let us = time_us_opt(w, o, v)?;
                    if us == 0 {
                        return Err(bad(w, o, v, "must be at least 1us"));
                    }
                    o_.tupdate_us = Some(us);
                }
                "alpha" => o_.alpha = Some(alpha_beta(o, a.val(w, o)?)?),
                "beta" => o_.beta = Some(alpha_beta(o, a.val(w, o)?)?),
                "coupling_factor" => {
                    let v = a.val(w, o)?;
                    let n = parse_c_u32(v).filter(|n| (1..=255).contains(n)).ok_or_else(|| bad(w, o, v, "must be 1..=255"))?;
                    o_.coupling = Some(n as u8);
                }
                "l4s_ect" => o_.ecn_mask = Some(ECN_MASK_L4S_ECT),
                "any_ect" => o_.ecn_mask = Some(ECN_MASK_ANY_ECT),
                "step_thresh" => {
                    // a time first, then packets with a p/pkt/pkts/packet/packets suffix
                    let v = a.val(w, o)?;
                    let pk = ["packets", "packet", "pkts", "pkt", "p"].iter().find_map(|s| v.strip_suffix(s)).and_then(|n| n.parse::<u32>().ok());
                    o_.step = Some(match pk {
                        Some(n) => (n as u64, true),
                        None => (time_us_opt(w, o, v).map_err(|_| bad(w, o, v, "expected a time like 1ms or packets like 5p"))? * 1000, false),
                    });
                }
                "min_qlen_step" => o_.min_qlen_step = Some(u32_opt(w, o, a.val(w, o)?)?),
                "overflow" => o_.drop_overload = Some(false),
                "drop_on_overload" => o_.drop_overload = Some(true),
                "drop_enqueue" => o_.drop_early = Some(true),
                "drop_dequeue" => o_.drop_early = Some(false),
                "split_gso" => o_.split_gso = Some(true),
                "no_split_gso" => o_.split_gso = Some(false),
                "classic_protection" => {
                    let v = a.val(w, o)?;
                    let n: f64 = v.strip_suffix('%').unwrap_or(v).parse().map_err(|_| bad(w, o, v, "expected a percentage like 10%"))?;
                    if !(0.0..=100.0).contains(&n) {
                        return Err(bad(w, o, v, "must be 0%..=100%"));
                    }
                    o_.c_protection = Some(n.round() as u8);
                }
                "max_rtt" => rtt_max = time_us_opt(w, o, a.val(w, o)?)?,
                "typical_rtt" => rtt_typ = time_us_opt(w, o, a.val(w, o)?)?,
                _ => return Err(unsupported(w, o)),
            }
        }
        if rtt_max != 0 || rtt_typ != 0 {
            // tc's auto-configuration from the RTT range (RTT_TYP_TO_MAX = 6)
            if rtt_typ == 0 {
                rtt_typ = (rtt_max / 6).max(1);
            } else if rtt_max == 0 {
                rtt_max = rtt_typ * 6;
            } else if rtt_typ > rtt_max {
                return Err("dualpi2: `typical_rtt` must be <= `max_rtt`".into());
            }
            let (typ, max) = (rtt_typ as f64, rtt_max as f64);
            let tupdate = (if typ < max / 3.0f32 as f64 { typ } else { max / 3.0f32 as f64 } as u64).max(1);
            let alpha_f = tupdate as f64 / max / max * 1e6 * 0.1f32 as f64;
            let beta_f = 0.3f32 as f64 / max * 1e6;
            if beta_f > ((2u32 << 23) - 1) as f64 {
                return Err(format!("dualpi2: max_rtt={rtt_max}us is too low and cause beta to overflow"));
            }
            if alpha_f < 1.0 / 256.0 || beta_f < 1.0 / 256.0 {
                return Err(format!("dualpi2: large max_rtt={rtt_max}us rounds down alpha={alpha_f} and/or beta={beta_f}"));
            }
            o_.target_us = Some(rtt_typ);
            o_.tupdate_us = Some(tupdate);
            o_.alpha = Some((alpha_f * 256.0) as u32);
            o_.beta = Some((beta_f * 256.0) as u32);
        }
        for (o, v) in [("alpha", o_.alpha), ("beta", o_.beta)] {
            if v.is_some_and(|v| v == 0 || v > ALPHA_BETA_MAX) {
                return Err(format!("dualpi2: `{o}` out of range (the kernel takes 1..=2147483647 in 1/256 Hz)"));
            }
        }
        Ok(o_)
    }

    /// The parameters: `dualpi2_reset_default()` for `dev`, then the options given.
    pub(crate) fn params(&self, dev: &DevParams) -> DualPi2Params {
        let o = self;
        let mut p = DualPi2Params::new(dev);
        if let Some(l) = o.limit {
            // dualpi2_change(): a new limit also resets memory_limit
            p.limit = l;
            p.memory_limit = memory_limit(l, dev);
        }
        if let Some(m) = o.memlimit {
            p.memory_limit = m;
        }
        if let Some(t) = o.target_us {
            p.target_ns = t * 1000;
        }
        if let Some(t) = o.tupdate_us {
            p.tupdate_ns = (t * 1000).min(u32::MAX as u64); // convert_us_to_nsec()
        }
        if let Some(x) = o.alpha {
            p.alpha = scale_alpha_beta(x);
        }
        if let Some(x) = o.beta {
            p.beta = scale_alpha_beta(x);
        }
        if let Some((v, pkts)) = o.step {
            p.step_thresh = if pkts { v } else { v.min(u32::MAX as u64) };
            p.step_in_packets = pkts;
        }
        if let Some(m) = o.min_qlen_step {
            p.min_qlen_step = m;
        }
        if let Some(k) = o.coupling {
            p.coupling_factor = k;
        }
        if let Some(d) = o.drop_overload {
            p.drop_overload = d;
        }
        if let Some(d) = o.drop_early {
            p.drop_early = d;
        }
        if let Some(c) = o.c_protection {
            p.c_protection_wc = c;
        }
        if let Some(m) = o.ecn_mask {
            p.ecn_mask = m;
        }
        if let Some(g) = o.split_gso {
            p.split_gso = g;
        }
        p
    }
}
