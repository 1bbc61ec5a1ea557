//! `codel`: Controlled Delay AQM (net/sched/sch_codel.c, include/net/codel_impl.h).
//!
//! Time is kept in CoDel's own unit, 1024 ns (`CODEL_SHIFT` = 10), and the control law
//! `drop_next = t + interval / sqrt(count)` uses the same 16-bit reciprocal square root
//! with one Newton step per count change as Linux, so drop times match the kernel's to the
//! nanosecond. Linux keeps 32-bit wrapping CoDel times; we keep 64 bits (no wrap after
//! 73 minutes). Drops happen at dequeue.
use crate::util::ecn_set_ce;
use crate::{ClassId, Counters, DevParams, Qdisc, QdiscStats, Verdict};
use std::collections::VecDeque;
use wirelab_core::{Duration, Instant, Pkt};

/// `CODEL_SHIFT`: CoDel time unit is 2^10 ns.
pub const CODEL_SHIFT: u32 = 10;
const REC_INV_SQRT_SHIFT: u32 = 16;

/// ns → CoDel time.
#[inline]
pub fn codel_time(t: Instant) -> u64 {
    t.as_nanos() >> CODEL_SHIFT
}
/// Duration → CoDel time.
#[inline]
pub fn codel_dur(d: Duration) -> u64 {
    d.as_nanos() >> CODEL_SHIFT
}

/// A `tc` time option → CoDel time as it reaches the kernel: iproute2's `get_time()` gives
/// whole microseconds (truncated), `codel_change()` computes `(us * NSEC_PER_USEC) >>
/// CODEL_SHIFT`.
#[inline]
pub fn codel_tc_time(d: Duration) -> u64 {
    (d.as_micros() * 1000) >> CODEL_SHIFT
}

/// `struct codel_params`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodelParams {
    /// `target`, CoDel time units.
    pub target: u64,
    /// `interval`, CoDel time units.
    pub interval: u64,
    /// `ce_threshold` (`u64::MAX` = disabled, `CODEL_DISABLED_THRESHOLD`).
    pub ce_threshold: u64,
    /// `ce_threshold_selector VALUE/MASK` (fq_codel): only packets whose DS field
    /// (TOS byte) `& mask == selector` are CE-marked above `ce_threshold`; mask 0 = all.
    pub ce_threshold_selector: u8,
    /// The mask of `ce_threshold_selector`.
    pub ce_threshold_mask: u8,
    /// Mark ECT packets instead of dropping.
    pub ecn: bool,
    /// Backlog at or below which CoDel never drops (`psched_mtu()`).
    pub mtu: u32,
}

impl CodelParams {
    /// `codel_params_init()`: target 5 ms, interval 100 ms, no ECN.
    pub fn new(dev: &DevParams) -> Self {
        CodelParams {
            target: codel_dur(Duration::from_millis(5)),
            interval: codel_dur(Duration::from_millis(100)),
            ce_threshold: u64::MAX,
            ce_threshold_selector: 0,
            ce_threshold_mask: 0,
            ecn: false,
            mtu: dev.psched_mtu(),
        }
    }
}

/// `struct codel_vars`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelVars {
    /// Packets dropped since entering the dropping state.
    pub count: u32,
    /// `count` at the previous dropping-state entry.
    pub lastcount: u32,
    /// In the dropping state.
    pub dropping: bool,
    /// 1/sqrt(count), Q0.16.
    pub rec_inv_sqrt: u16,
    /// When sojourn first stayed above target, plus interval (0 = not above).
    pub first_above_time: u64,
    /// Next scheduled drop.
    pub drop_next: u64,
    /// Sojourn time of the last dequeued packet.
    pub ldelay: u64,
}

/// `struct codel_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CodelStats {
    /// Largest packet seen.
    pub maxpacket: u32,
    /// Packets dropped by the control law.
    pub drop_count: u64,
    /// Bytes dropped by the control law.
    pub drop_len: u64,
    /// Packets ECN-marked instead of dropped.
    pub ecn_mark: u64,
    /// Packets CE-marked for exceeding `ce_threshold`.
    pub ce_mark: u64,
}

/// The queue CoDel dequeues from.
pub(crate) trait CodelSource {
    /// Removes the head packet (updating backlogs).
    fn pop(&mut self) -> Option<Pkt>;
    /// The backlog CoDel compares with `mtu` (Linux: the qdisc's whole backlog).
    fn backlog(&self) -> usize;
}

fn newton_step(v: &mut CodelVars) {
    let invsqrt = (v.rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT;
    let invsqrt2 = ((invsqrt as u64 * invsqrt as u64) >> 32) as u32;
    let mut val = (3u64 << 32).wrapping_sub(v.count as u64 * invsqrt2 as u64);
    val >>= 2;
    val = val.wrapping_mul(invsqrt as u64) >> (32 - 2 + 1);
    v.rec_inv_sqrt = (val >> REC_INV_SQRT_SHIFT) as u16;
}

fn control_law(t: u64, interval: u64, rec_inv_sqrt: u16) -> u64 {
    let scale = ((interval as u32 as u64) * (((rec_inv_sqrt as u32) << REC_INV_SQRT_SHIFT) as u64)) >> 32;
    t + scale
}

fn should_drop(pkt: Option<&Pkt>, v: &mut CodelVars, p: &CodelParams, st: &mut CodelStats, backlog: usize, now: u64) -> bool {
    let Some(pkt) = pkt else {
        v.first_above_time = 0;
        return false;
    };
    v.ldelay = now.saturating_sub(codel_time(pkt.meta.enqueued));
    st.maxpacket = st.maxpacket.max(pkt.len() as u32);
    if v.ldelay < p.target || backlog <= p.mtu as usize {
        v.first_above_time = 0;
        return false;
    }
    if v.first_above_time == 0 {
        v.first_above_time = now + p.interval;
        false
    } else {
        now > v.first_above_time
    }
}

/// `codel_dequeue()`.
pub(crate) fn codel_dequeue<S: CodelSource>(
    src: &mut S,
    p: &CodelParams,
    v: &mut CodelVars,
    st: &mut CodelStats,
    now: Instant,
    dropped: &mut Vec<Pkt>,
) -> Option<Pkt> {
    let mut skb = src.pop();
    if skb.is_none() {
        v.dropping = false;
        return None;
    }
    let now = codel_time(now);
    let drop = should_drop(skb.as_ref(), v, p, st, src.backlog(), now);
    if v.dropping {
        if !drop {
            v.dropping = false;
        } else if now >= v.drop_next {
            while v.dropping && now >= v.drop_next {
                v.count = v.count.wrapping_add(1);
                newton_step(v);
                if p.ecn {
                    if let Some(s) = skb.as_mut() {
                        if ecn_set_ce(s) {
                            st.ecn_mark += 1;
                            v.drop_next = control_law(v.drop_next, p.interval, v.rec_inv_sqrt);
                            return finish(skb, p, v, st);
                        }
                    }
                }
                if let Some(s) = skb.take() {
                    st.drop_len += s.len() as u64;
                    st.drop_count += 1;
                    dropped.push(s);
                }
                skb = src.pop();
                if !should_drop(skb.as_ref(), v, p, st, src.backlog(), now) {
                    v.dropping = false;
                } else {
                    v.drop_next = control_law(v.drop_next, p.interval, v.rec_inv_sqrt);
                }
            }
        }
    } else if drop {
        let marked = p.ecn && skb.as_mut().is_some_and(ecn_set_ce);
        if marked {
            st.ecn_mark += 1;
        } else {
            if let Some(s) = skb.take() {
                st.drop_len += s.len() as u64;
                st.drop_count += 1;
                dropped.push(s);
            }
            skb = src.pop();
            should_drop(skb.as_ref(), v, p, st, src.backlog(), now);
        }
        v.dropping = true;
        // if min went above target close to when we last went below it, assume that the
        // drop rate that controlled the queue on the last cycle is a good starting point
        let delta = v.count.wrapping_sub(v.lastcount);
        if delta > 1 && (now as i64 - v.drop_next as i64) < 16 * p.interval as i64 {
            v.count = delta;
            newton_step(v);
        } else {
            v.count = 1;
            v.rec_inv_sqrt = (!0u32 >> REC_INV_SQRT_SHIFT) as u16;
        }
        v.lastcount = v.count;
        v.drop_next = control_law(now, p.interval, v.rec_inv_sqrt);
    }
    finish(skb, p, v, st)
}

/// `codel_dequeue()`'s `end:` label: a packet whose sojourn exceeds `ce_threshold` is
/// CE-marked (if ECN-capable and, with a selector, if its DS field matches).
fn finish(mut skb: Option<Pkt>, p: &CodelParams, v: &CodelVars, st: &mut CodelStats) -> Option<Pkt> {
    if p.ce_threshold != u64::MAX && v.ldelay > p.ce_threshold {
        if let Some(s) = skb.as_mut() {
            let set_ce = p.ce_threshold_mask == 0 || s.ecn().is_some_and(|_| s.data[1] & p.ce_threshold_mask == p.ce_threshold_selector);
            if set_ce && ecn_set_ce(s) {
                st.ce_mark += 1;
            }
        }
    }
    skb
}

struct FifoSrc<'a> {
    q: &'a mut VecDeque<Pkt>,
    backlog: &'a mut usize,
}
impl CodelSource for FifoSrc<'_> {
    fn pop(&mut self) -> Option<Pkt> {
        let p = self.q.pop_front()?;
        *self.backlog -= p.len();
        Some(p)
    }
    fn backlog(&self) -> usize {
        *self.backlog
    }
}

/// The `codel` qdisc: one FIFO of at most `limit` packets (tail drop beyond), CoDel at dequeue.
#[derive(Debug)]
pub struct Codel {
    /// Parameters (public for inspection).
    pub params: CodelParams,
    limit: u32,
    q: VecDeque<Pkt>,
    backlog: usize,
    vars: CodelVars,
    cstats: CodelStats,
    drop_overlimit: u64,
    c: Counters,
}

impl Codel {
    /// `codel limit <limit>` with `params`.
    pub fn new(limit: u32, params: CodelParams) -> Self {
        Codel { params, limit, q: VecDeque::new(), backlog: 0, vars: CodelVars::default(), cstats: CodelStats::default(), drop_overlimit: 0, c: Counters::new() }
    }
    /// Current CoDel state (count, dropping, …).
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl Qdisc for Codel {
    fn kind(&self) -> &'static str {
        "codel"
    }
    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        if (self.q.len() as u32) < self.limit {
            pkt.meta.enqueued = now;
            self.backlog += pkt.len();
            self.q.push_back(pkt);
            return Verdict::Queued;
        }
        self.drop_overlimit += 1;
        self.c.drops += 1;
        dropped.push(pkt);
        Verdict::Dropped
    }
    fn dequeue(&mut self, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        let before = dropped.len();
        let mut src = FifoSrc { q: &mut self.q, backlog: &mut self.backlog };
        let p = codel_dequeue(&mut src, &self.params, &mut self.vars, &mut self.cstats, now, dropped);
        self.c.drops += (dropped.len() - before) as u64;
        if let Some(p) = &p {
            self.c.sent(p);
        }
        p
    }
    fn peek_len(&self) -> Option<usize> {
        self.q.front().map(|p| p.len())
    }
    fn qlen(&self) -> usize {
        self.q.len()
    }
    fn backlog_bytes(&self) -> usize {
        self.backlog
    }
    fn stats(&self) -> QdiscStats {
        let mut s = self.c.snapshot("codel", self.q.len(), self.backlog);
        let v = &self.vars;
        s.xstats.extend([
            ("count", v.count as i64),
            ("lastcount", v.lastcount as i64),
            ("ldelay_ns", (v.ldelay << CODEL_SHIFT) as i64),
            ("dropping", v.dropping as i64),
            ("drop_next_ns", (v.drop_next << CODEL_SHIFT) as i64),
            ("maxpacket", self.cstats.maxpacket as i64),
            ("ecn_mark", self.cstats.ecn_mark as i64),
            ("ce_mark", self.cstats.ce_mark as i64),
            ("drop_overlimit", self.drop_overlimit as i64),
        ]);
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
    #[test]
    fn rec_inv_sqrt_converges() {
        let mut v = CodelVars { count: 1, rec_inv_sqrt: (!0u32 >> 16) as u16, ..Default::default() };
        // one Newton step per count increment, as Linux: coarse at first, then tracks
        for c in 2..400u32 {
            v.count = c;
            newton_step(&mut v);
            let exact = 65536.0 / (c as f64).sqrt();
            let err = (v.rec_inv_sqrt as f64 - exact).abs() / exact;
            if c == 2 {
                assert_eq!(v.rec_inv_sqrt, 32769); // 0.5 after the first step from 1.0
            }
            if c >= 50 {
                assert!(err < 0.05, "count {c}: {} vs {exact}", v.rec_inv_sqrt);
            }
        }
        // interval 100 ms / sqrt(4) = 50 ms
        let i = codel_dur(Duration::from_millis(100));
        let r = (65536.0 / 2.0) as u16;
        let d = control_law(0, i, r);
        assert!((d as i64 - (i / 2) as i64).abs() <= 2);
    }
}
