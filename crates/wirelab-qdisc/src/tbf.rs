//! `tbf`: token bucket filter (net/sched/sch_tbf.c).
//!
//! Tokens are kept in nanoseconds of transmission time as Linux does: `tokens` ≤ `buffer`
//! (the burst's transmit time at `rate`), each packet costs `psched_l2t_ns(rate, len)`. An
//! optional `peakrate` bucket of depth `mtu` limits the burst's own speed. Packets are held
//! in a child qdisc (default `bfifo limit <limit>`), peeked with `qdisc_peek_dequeued()`
//! semantics: the head is taken out of the child and kept until tokens allow it.
use crate::util::l2t_ns;
use crate::{ClassId, ClassStats, Counters, Qdisc, QdiscStats, Verdict};
use wirelab_core::{Instant, Pkt};

/// Resolved `tbf` parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TbfParams {
    /// `rate`, bits/s.
    pub rate_bps: u64,
    /// Bucket depth as transmit time at `rate` (`buffer`), ns.
    pub buffer_ns: i64,
    /// `peakrate`, bits/s, if any.
    pub peak_bps: Option<u64>,
    /// Peak bucket depth (`mtu`) as transmit time at `peakrate`, ns.
    pub mtu_ns: i64,
    /// Largest packet that can ever conform (`q->max_size`); larger ones are dropped.
    pub max_size: usize,
}

/// The token bucket filter.
pub struct Tbf {
    p: TbfParams,
    child: Box<dyn Qdisc>,
    tokens: i64,
    ptokens: i64,
    t_c: Instant,
    peeked: Option<Pkt>,
    c: Counters,
    child_drops: u64,
}

impl core::fmt::Debug for Tbf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tbf").field("p", &self.p).field("tokens", &self.tokens).finish()
    }
}

impl Tbf {
    /// A TBF with full buckets at time zero (`tbf_change()` sets `tokens = buffer`).
    pub fn new(p: TbfParams, child: Box<dyn Qdisc>) -> Self {
        Tbf { p, child, tokens: p.buffer_ns, ptokens: p.mtu_ns, t_c: Instant::ZERO, peeked: None, c: Counters::new(), child_drops: 0 }
    }

    /// `(toks, ptoks)` after sending `len` at `now` (negative: not yet).
    fn tokens_after(&self, now: Instant, len: usize) -> (i64, i64) {
        let elapsed = now.saturating_since(self.t_c).as_nanos().min(i64::MAX as u64) as i64;
        let mut toks = elapsed.min(self.p.buffer_ns);
        let mut ptoks = 0;
        if let Some(peak) = self.p.peak_bps {
            ptoks = (toks + self.ptokens).min(self.p.mtu_ns) - l2t_ns(len, peak);
        }
        toks = (toks + self.tokens).min(self.p.buffer_ns) - l2t_ns(len, self.p.rate_bps);
        (toks, ptoks)
    }
}

impl Qdisc for Tbf {
    fn kind(&self) -> &'static str {
        "tbf"
    }
    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        pkt.meta.enqueued = now;
        if pkt.len() > self.p.max_size {
            // tbf_enqueue(): a packet (one segment) larger than max_size is dropped; GSO
            // skbs the sender cut into segments were re-charged per segment before
            // (`gso_segments_above()`, the simulator's send path: tbf_segment())
            self.c.drops += 1;
            dropped.push(pkt);
            return Verdict::Dropped;
        }
        let before = dropped.len();
        let v = self.child.enqueue(now, pkt, dropped);
        let d = (dropped.len() - before) as u64;
        self.c.drops += d;
        self.child_drops += d;
        v
    }
    fn dequeue(&mut self, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        if self.peeked.is_none() {
            let before = dropped.len();
            self.peeked = self.child.dequeue(now, dropped);
            let d = (dropped.len() - before) as u64;
            self.c.drops += d;
            self.child_drops += d;
        }
        let len = self.peeked.as_ref()?.len();
        let (toks, ptoks) = self.tokens_after(now, len);
        if (toks | ptoks) >= 0 {
            self.t_c = now;
            self.tokens = toks;
            self.ptokens = ptoks;
            let p = self.peeked.take()?;
            self.c.sent(&p);
            return Some(p);
        }
        // qdisc_watchdog_schedule_ns(now + max(-toks, -ptoks)); qdisc_qstats_overlimit()
        self.c.overlimits += 1;
        None
    }
    fn gso_segments_above(&self) -> Option<usize> {
        // tbf_enqueue(): a GSO skb above max_size goes to tbf_segment()
        Some(self.p.max_size)
    }
    fn peek_len(&self) -> Option<usize> {
        self.peeked.as_ref().map(|p| p.len()).or_else(|| self.child.peek_len())
    }
    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        match &self.peeked {
            Some(p) => {
                let (toks, ptoks) = self.tokens_after(now, p.len());
                let wait = (-toks).max(-ptoks).max(0) as u64;
                Some(now.saturating_add(wirelab_core::Duration::from_nanos(wait)))
            }
            None if self.child.qlen() > 0 => self.child.next_wakeup(now).or(Some(now)),
            None => None,
        }
    }
    fn qlen(&self) -> usize {
        self.child.qlen() + self.peeked.is_some() as usize
    }
    fn backlog_bytes(&self) -> usize {
        self.child.backlog_bytes() + self.peeked.as_ref().map_or(0, |p| p.len())
    }
    fn stats(&self) -> QdiscStats {
        let mut s = self.c.snapshot("tbf", self.qlen(), self.backlog_bytes());
        s.xstats.push(("rate_bps", self.p.rate_bps.min(i64::MAX as u64) as i64));
        s.xstats.push(("buffer_ns", self.p.buffer_ns));
        s.xstats.push(("max_size", self.p.max_size as i64));
        s
    }
    fn tree_stats(&self, out: &mut Vec<QdiscStats>) {
        out.push(self.stats());
        self.child.tree_stats(out);
    }
    fn class_stats(&self, out: &mut Vec<ClassStats>) {
        out.push(ClassStats {
            kind: "tbf",
            classid: ClassId::new(self.c.handle.major(), 1),
            parent: self.c.handle,
            leaf: Some(self.child.stats().handle),
            bytes: self.c.bytes,
            packets: self.c.packets,
            drops: self.child_drops,
            backlog_bytes: self.backlog_bytes() as u64,
            qlen: self.qlen() as u64,
            ..Default::default()
        });
        self.child.class_stats(out);
    }
    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
    }
}
