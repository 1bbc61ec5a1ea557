//! `pfifo`, `bfifo` and `pfifo_head_drop` (net/sched/sch_fifo.c).
use crate::{ClassId, Counters, Qdisc, QdiscStats, Verdict};
use wirelab_core::packed::PktQueue;
use wirelab_core::{Instant, Pkt};

/// Which limit a [`Fifo`] enforces and how it drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FifoKind {
    /// `pfifo`: tail drop at `limit` packets.
    Pfifo,
    /// `bfifo`: tail drop when backlog + packet would exceed `limit` bytes.
    Bfifo,
    /// `pfifo_head_drop`: at `limit` packets drop the oldest packet instead.
    PfifoHeadDrop,
}

/// A drop-tail (or head-drop) FIFO.
#[derive(Debug)]
pub struct Fifo {
    kind: FifoKind,
    limit: u64,
    /// One 64-byte line per packet (`PktQueue`): the queue in front of a bottleneck holds
    /// thousands, written and read cold.
    q: PktQueue,
    backlog: usize,
    c: Counters,
}

impl Fifo {
    /// A FIFO with `limit` packets (pfifo, pfifo_head_drop) or bytes (bfifo). Linux's
    /// `fifo_init()` defaults: pfifo `txqueuelen`, bfifo `txqueuelen * psched_mtu()`.
    pub fn new(kind: FifoKind, limit: u64) -> Self {
        Fifo { kind, limit, q: PktQueue::new(), backlog: 0, c: Counters::new() }
    }
    /// `pfifo limit N`.
    pub fn pfifo(limit: u32) -> Self {
        Fifo::new(FifoKind::Pfifo, limit as u64)
    }
    /// `bfifo limit N` (bytes).
    pub fn bfifo(limit_bytes: u64) -> Self {
        Fifo::new(FifoKind::Bfifo, limit_bytes)
    }
    /// The configured limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }
}

impl Qdisc for Fifo {
    fn kind(&self) -> &'static str {
        match self.kind {
            FifoKind::Pfifo => "pfifo",
            FifoKind::Bfifo => "bfifo",
            FifoKind::PfifoHeadDrop => "pfifo_head_drop",
        }
    }
    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        pkt.meta.enqueued = now;
        let fits = match self.kind {
            // bfifo_enqueue(): backlog + len <= limit
            FifoKind::Bfifo => (self.backlog + pkt.len()) as u64 <= self.limit,
            // pfifo_enqueue(): qlen < limit
            _ => (self.q.len() as u64) < self.limit,
        };
        if fits {
            self.backlog += pkt.len();
            self.q.push_back(pkt);
            return Verdict::Queued;
        }
        self.c.drops += 1;
        if self.kind == FifoKind::PfifoHeadDrop && self.limit > 0 {
            // pfifo_tail_enqueue(): drop the head, queue the new one, NET_XMIT_CN
            if let Some(old) = self.q.pop_front() {
                self.backlog -= old.len();
                dropped.push(old);
            }
            self.backlog += pkt.len();
            self.q.push_back(pkt);
            return Verdict::Congested;
        }
        dropped.push(pkt);
        Verdict::Dropped
    }
    fn dequeue(&mut self, _now: Instant, _dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        let p = self.q.pop_front()?;
        self.backlog -= p.len();
        self.c.sent(&p);
        Some(p)
    }
    fn peek_len(&self) -> Option<usize> {
        self.q.front_len()
    }
    fn qlen(&self) -> usize {
        self.q.len()
    }
    fn may_wake(&self) -> bool {
        false
    }
    fn idle_dequeue_is_noop(&self) -> bool {
        self.q.is_empty()
    }
    fn bypass(&mut self, now: Instant, pkt: &mut Pkt) -> bool {
        // the enqueue's admission test on an empty queue (a limit of 0 refuses everything)
        let fits = match self.kind {
            FifoKind::Bfifo => pkt.len() as u64 <= self.limit,
            _ => self.limit > 0,
        };
        if !self.q.is_empty() || !fits {
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
        let mut s = self.c.snapshot(self.kind(), self.q.len(), self.backlog);
        s.xstats.push(("limit", self.limit as i64));
        s
    }
    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
    }
}
