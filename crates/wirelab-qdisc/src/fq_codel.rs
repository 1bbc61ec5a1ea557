//! `fq_codel`: Fair Queue CoDel (net/sched/sch_fq_codel.c).
//!
//! Packets hash into `flows` queues. Flows with new traffic go on the *new* list and get one
//! quantum of priority before joining the *old* list; both are served by DRR with `quantum`
//! bytes, each flow running its own CoDel state. When the whole qdisc exceeds `limit`
//! packets (or `memory_limit`), `fq_codel_drop()` drops from the head of the fattest flow a
//! batch of up to `drop_batch` packets, stopping at half that flow's backlog.
use crate::codel::{codel_dequeue, CodelParams, CodelSource, CodelStats, CodelVars};
use crate::util::{flow_hash, reciprocal_scale};
use crate::{ClassId, Counters, Qdisc, QdiscStats, Verdict};
use std::collections::VecDeque;
use wirelab_core::{Instant, Pkt, Rng};

/// Resolved fq_codel parameters (Linux defaults in [`FqCodelParams::new`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FqCodelParams {
    /// `limit` packets (10240).
    pub limit: u32,
    /// `flows` (1024).
    pub flows: u32,
    /// `quantum` bytes (`psched_mtu()` = 1514).
    pub quantum: u32,
    /// `memory_limit` bytes (32 MB); memory is counted as packet length (no `truesize`).
    pub memory_limit: u64,
    /// `drop_batch` (64).
    pub drop_batch: u32,
    /// CoDel parameters (target 5 ms, interval 100 ms, **ecn on** as in `fq_codel_init()`).
    pub codel: CodelParams,
}

impl FqCodelParams {
    /// `fq_codel_init()` defaults.
    pub fn new(dev: &crate::DevParams) -> Self {
        let mut codel = CodelParams::new(dev);
        codel.ecn = true;
        FqCodelParams { limit: 10 * 1024, flows: 1024, quantum: dev.psched_mtu(), memory_limit: 32 << 20, drop_batch: 64, codel }
    }
}

#[derive(Debug, Default)]
struct Flow {
    q: VecDeque<Pkt>,
    deficit: i64,
    cvars: CodelVars,
    /// 0 = in no list, 1 = new_flows, 2 = old_flows
    list: u8,
}

/// The fq_codel qdisc.
#[derive(Debug)]
pub struct FqCodel {
    p: FqCodelParams,
    key: u32,
    flows: Vec<Flow>,
    backlogs: Vec<usize>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    qlen: u32,
    backlog: usize,
    memory_usage: u64,
    cstats: CodelStats,
    drop_overlimit: u64,
    drop_overmemory: u64,
    new_flow_count: u64,
    c: Counters,
}

struct FlowSrc<'a> {
    f: &'a mut Flow,
    flow_backlog: &'a mut usize,
    backlog: &'a mut usize,
    qlen: &'a mut u32,
    mem: &'a mut u64,
}
impl CodelSource for FlowSrc<'_> {
    fn pop(&mut self) -> Option<Pkt> {
        let p = self.f.q.pop_front()?;
        *self.flow_backlog -= p.len();
        *self.backlog -= p.len();
        *self.qlen -= 1;
        *self.mem -= p.len() as u64;
        Some(p)
    }
    fn backlog(&self) -> usize {
        *self.backlog
    }
}

impl FqCodel {
    /// A fq_codel qdisc; the flow-hash key (Linux's boot-time `hashrnd`) comes from `rng`.
    pub fn new(p: FqCodelParams, mut rng: Rng) -> Self {
        let n = p.flows.max(1) as usize;
        FqCodel {
            p,
            key: rng.next_u32(),
            flows: (0..n).map(|_| Flow::default()).collect(),
            backlogs: vec![0; n],
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            qlen: 0,
            backlog: 0,
            memory_usage: 0,
            cstats: CodelStats::default(),
            drop_overlimit: 0,
            drop_overmemory: 0,
            new_flow_count: 0,
            c: Counters::new(),
        }
    }

    /// `fq_codel_drop()`: returns (flow index, packets dropped).
    fn drop_batch(&mut self, dropped: &mut Vec<Pkt>) -> (usize, u32) {
        let mut idx = 0;
        let mut max = 0;
        for (i, &b) in self.backlogs.iter().enumerate() {
            if b > max {
                max = b;
                idx = i;
            }
        }
        let threshold = max >> 1;
        let mut len = 0;
        let mut i = 0;
        let f = &mut self.flows[idx];
        while let Some(p) = f.q.pop_front() {
            len += p.len();
            self.memory_usage -= p.len() as u64;
            dropped.push(p);
            i += 1;
            if i >= self.p.drop_batch || len >= threshold {
                break;
            }
        }
        // "Tell codel to increase its signal strength also"
        f.cvars.count = f.cvars.count.wrapping_add(i);
        self.backlogs[idx] -= len;
        self.backlog -= len;
        self.qlen -= i;
        self.c.drops += i as u64;
        (idx, i)
    }
}

impl Qdisc for FqCodel {
    fn kind(&self) -> &'static str {
        "fq_codel"
    }
    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        let idx = reciprocal_scale(flow_hash(&pkt, self.key), self.flows.len() as u32) as usize;
        pkt.meta.enqueued = now;
        let len = pkt.len();
        let f = &mut self.flows[idx];
        f.q.push_back(pkt);
        self.backlogs[idx] += len;
        self.backlog += len;
        if f.list == 0 {
            f.list = 1;
            self.new_flows.push_back(idx as u32);
            self.new_flow_count += 1;
            f.deficit = self.p.quantum as i64;
        }
        self.memory_usage += len as u64;
        let memory_limited = self.memory_usage > self.p.memory_limit;
        self.qlen += 1;
        if self.qlen <= self.p.limit && !memory_limited {
            return Verdict::Queued;
        }
        let own_before = self.flows[idx].q.len() as u32;
        let (victim, n) = self.drop_batch(dropped);
        self.drop_overlimit += n as u64;
        if memory_limited {
            self.drop_overmemory += n as u64;
        }
        if victim == idx && n >= own_before {
            Verdict::Dropped
        } else {
            Verdict::Congested
        }
    }
    fn dequeue(&mut self, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        loop {
            let from_new = !self.new_flows.is_empty();
            let idx = if from_new { *self.new_flows.front()? } else { *self.old_flows.front()? } as usize;
            let f = &mut self.flows[idx];
            if f.deficit <= 0 {
                f.deficit += self.p.quantum as i64;
                f.list = 2;
                if from_new { self.new_flows.pop_front() } else { self.old_flows.pop_front() };
                self.old_flows.push_back(idx as u32);
                continue;
            }
            let before = dropped.len();
            let mut src = FlowSrc {
                f,
                flow_backlog: &mut self.backlogs[idx],
                backlog: &mut self.backlog,
                qlen: &mut self.qlen,
                mem: &mut self.memory_usage,
            };
            let mut vars = src.f.cvars;
            let skb = codel_dequeue(&mut src, &self.p.codel, &mut vars, &mut self.cstats, now, dropped);
            self.flows[idx].cvars = vars;
            self.c.drops += (dropped.len() - before) as u64;
            match skb {
                None => {
                    // force a pass through old_flows to prevent starvation
                    if from_new {
                        self.new_flows.pop_front();
                    } else {
                        self.old_flows.pop_front();
                    }
                    if from_new && !self.old_flows.is_empty() {
                        self.flows[idx].list = 2;
                        self.old_flows.push_back(idx as u32);
                    } else {
                        self.flows[idx].list = 0;
                    }
                }
                Some(p) => {
                    self.flows[idx].deficit -= p.len() as i64;
                    self.c.sent(&p);
                    return Some(p);
                }
            }
        }
    }
    fn qlen(&self) -> usize {
        self.qlen as usize
    }
    fn backlog_bytes(&self) -> usize {
        self.backlog
    }
    fn stats(&self) -> QdiscStats {
        let mut s = self.c.snapshot("fq_codel", self.qlen as usize, self.backlog);
        s.xstats.extend([
            ("maxpacket", self.cstats.maxpacket as i64),
            ("drop_overlimit", self.drop_overlimit as i64),
            ("drop_overmemory", self.drop_overmemory as i64),
            ("new_flow_count", self.new_flow_count as i64),
            ("ecn_mark", self.cstats.ecn_mark as i64),
            ("ce_mark", self.cstats.ce_mark as i64),
            ("new_flows_len", self.new_flows.len() as i64),
            ("old_flows_len", self.old_flows.len() as i64),
        ]);
        s
    }
    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
    }
}
