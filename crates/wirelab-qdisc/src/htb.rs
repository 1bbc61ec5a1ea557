//! `htb`: Hierarchical Token Bucket (net/sched/sch_htb.c).
//!
//! Each class has two token buckets kept in nanoseconds of transmit time: `tokens` at `rate`
//! (depth `buffer`, from `burst`) and `ctokens` at `ceil` (depth `cbuffer`, from `cburst`).
//! A class is in one of three modes (`htb_class_mode()`): `CanSend` (tokens ≥ 0),
//! `MayBorrow` (tokens < 0 but ctokens ≥ 0) or `CantSend` (ctokens < 0). A backlogged leaf is
//! served at the level of its lowest ancestor-or-self in `CanSend`, provided every class on
//! the way there may borrow; classes borrow from their parent only (`htb_activate_prios()`).
//! Dequeue (`htb_dequeue()`) scans levels from the leaves up and, within a level, priorities
//! from 0 (highest); among the leaves eligible at that level and priority it runs deficit
//! round robin with each leaf's `quantum` and a per-level deficit, moving the round pointer
//! when the deficit goes negative (`htb_dequeue_tree()`). The sent packet is charged to the
//! leaf and every ancestor (`htb_charge_class()`): classes at or above the serving level
//! pay tokens, those below only record a borrow; everyone pays ctokens.
//!
//! Deviations: Linux keeps per-level red-black "feed" trees and round-robins among *inner*
//! classes too; we round-robin among the eligible leaves of each (level, prio) in classid
//! order, which is identical for trees of depth ≤ 2 (the seed systems' trees). Class modes
//! are evaluated at `now` instead of via the wait queue's event times; the results are the
//! same because mode changes only happen at those event times. No `htb_hysteresis`.
use crate::classify::FilterChain;
use crate::util::l2t_ns;
use crate::{ClassId, ClassStats, Counters, Qdisc, QdiscStats, Verdict};
use std::collections::VecDeque;
use wirelab_core::{Duration, Instant, Pkt};

/// `TC_HTB_MAXDEPTH`: levels 0 (leaves) … 7.
pub const TC_HTB_MAXDEPTH: usize = 8;
/// `TC_HTB_NUMPRIO`: priorities 0 … 7.
pub const TC_HTB_NUMPRIO: usize = 8;
/// `mbuffer`: tokens never lag more than 60 s.
const MBUFFER_NS: i64 = 60_000_000_000;

/// A class's mode (`enum htb_cmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `HTB_CANT_SEND`: over ceil.
    CantSend,
    /// `HTB_MAY_BORROW`: over rate, under ceil.
    MayBorrow,
    /// `HTB_CAN_SEND`: under rate.
    CanSend,
}

/// Resolved parameters of one HTB class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HtbClassParams {
    /// `classid`.
    pub classid: ClassId,
    /// Parent class, or `None` for a class directly under the qdisc.
    pub parent: Option<ClassId>,
    /// `rate`, bits/s.
    pub rate_bps: u64,
    /// `ceil`, bits/s.
    pub ceil_bps: u64,
    /// `buffer`: `burst` as transmit time at `rate`, ns.
    pub buffer_ns: i64,
    /// `cbuffer`: `cburst` as transmit time at `ceil`, ns.
    pub cbuffer_ns: i64,
    /// `prio` 0..7.
    pub prio: u8,
    /// DRR quantum, bytes.
    pub quantum: u32,
}

struct Class {
    p: HtbClassParams,
    parent: Option<usize>,
    level: u8,
    tokens: i64,
    ctokens: i64,
    t_c: Instant,
    leaf: Option<Box<dyn Qdisc>>,
    deficit: [i64; TC_HTB_MAXDEPTH],
    filters: FilterChain,
    bytes: u64,
    packets: u64,
    drops: u64,
    overlimits: u64,
    lends: u64,
    borrows: u64,
}

/// A class definition handed to [`Htb::new`].
pub struct HtbClassDef {
    /// Parameters.
    pub params: HtbClassParams,
    /// The leaf qdisc (`None` for inner classes).
    pub leaf: Option<Box<dyn Qdisc>>,
    /// Filters attached to this class (consulted when classification reaches it).
    pub filters: FilterChain,
}

enum Target {
    Direct,
    Class(usize),
}

/// The HTB qdisc.
pub struct Htb {
    classes: Vec<Class>,
    /// Leaf indexes in classid order.
    leaves: Vec<usize>,
    defcls: u16,
    filters: FilterChain,
    direct: VecDeque<Pkt>,
    direct_qlen: u32,
    direct_backlog: usize,
    direct_pkts: u64,
    /// Round pointer per (level, prio): the classid to start from.
    ptr: [[u32; TC_HTB_NUMPRIO]; TC_HTB_MAXDEPTH],
    scratch: Vec<(u8, u8, usize)>,
    qlen: usize,
    backlog: usize,
    c: Counters,
}

impl core::fmt::Debug for Htb {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Htb {{ classes: {}, default: {:x} }}", self.classes.len(), self.defcls)
    }
}

impl Htb {
    /// Builds the class tree. `defcls` is the `default` minor; `direct_qlen` the length of
    /// the direct queue for unclassified packets when no default class exists. Classes must
    /// be given parents-before-children is not required; inner classes must have no leaf.
    pub fn new(handle: ClassId, defcls: u16, direct_qlen: u32, defs: Vec<HtbClassDef>, filters: FilterChain) -> Result<Self, String> {
        let mut defs = defs;
        defs.sort_by_key(|d| d.params.classid);
        let ids: Vec<ClassId> = defs.iter().map(|d| d.params.classid).collect();
        let mut classes: Vec<Class> = Vec::with_capacity(defs.len());
        for d in defs {
            let p = d.params;
            let parent = match p.parent {
                None => None,
                Some(pid) => Some(ids.binary_search(&pid).map_err(|_| format!("class {}: parent class {} does not exist", p.classid, pid))?),
            };
            classes.push(Class {
                p,
                parent,
                level: 0,
                tokens: p.buffer_ns,
                ctokens: p.cbuffer_ns,
                t_c: Instant::ZERO,
                leaf: d.leaf,
                deficit: [0; TC_HTB_MAXDEPTH],
                filters: d.filters,
                bytes: 0,
                packets: 0,
                drops: 0,
                overlimits: 0,
                lends: 0,
                borrows: 0,
            });
        }
        let n = classes.len();
        let mut has_child = vec![false; n];
        for c in &classes {
            if let Some(p) = c.parent {
                has_child[p] = true;
            }
        }
        // levels: leaves 0; inner classes TC_HTB_MAXDEPTH-1 at the top, one less per step
        for i in 0..n {
            if has_child[i] {
                if classes[i].leaf.is_some() {
                    return Err(format!("class {} has children, so it cannot hold a qdisc", classes[i].p.classid));
                }
                let mut depth = 0;
                let mut a = classes[i].parent;
                while let Some(x) = a {
                    depth += 1;
                    if depth >= TC_HTB_MAXDEPTH - 1 {
                        return Err(format!("class {}: tree deeper than TC_HTB_MAXDEPTH ({TC_HTB_MAXDEPTH})", classes[i].p.classid));
                    }
                    a = classes[x].parent;
                }
                classes[i].level = (TC_HTB_MAXDEPTH - 1 - depth) as u8;
            } else if classes[i].leaf.is_none() {
                return Err(format!("leaf class {} has no qdisc", classes[i].p.classid));
            }
        }
        let leaves = (0..n).filter(|&i| !has_child[i]).collect();
        let mut c = Counters::new();
        c.handle = handle;
        Ok(Htb {
            classes,
            leaves,
            defcls,
            filters,
            direct: VecDeque::new(),
            direct_qlen: direct_qlen.max(2),
            direct_backlog: 0,
            direct_pkts: 0,
            ptr: [[0; TC_HTB_NUMPRIO]; TC_HTB_MAXDEPTH],
            scratch: Vec::new(),
            qlen: 0,
            backlog: 0,
            c,
        })
    }

    fn find(&self, id: ClassId) -> Option<usize> {
        self.classes.binary_search_by_key(&id, |c| c.p.classid).ok()
    }

    /// `htb_classify()`.
    fn classify(&self, pkt: &Pkt) -> Target {
        let prio = pkt.meta.priority;
        let handle = self.c.handle;
        if prio == handle.0 {
            return Target::Direct;
        }
        let mut chain = &self.filters;
        if let Some(i) = self.find(ClassId(prio)) {
            if self.classes[i].leaf.is_some() {
                return Target::Class(i);
            }
            chain = &self.classes[i].filters;
        }
        let mut guard = 0;
        while let Some(res) = chain.classify(pkt) {
            if res == handle {
                return Target::Direct;
            }
            let Some(i) = self.find(res) else { break };
            if self.classes[i].leaf.is_some() {
                return Target::Class(i);
            }
            chain = &self.classes[i].filters;
            guard += 1;
            if guard > TC_HTB_MAXDEPTH {
                break;
            }
        }
        match self.find(ClassId::new(handle.major(), self.defcls)) {
            Some(i) if self.classes[i].leaf.is_some() => Target::Class(i),
            _ => Target::Direct,
        }
    }

    #[inline]
    fn diff(c: &Class, now: Instant) -> i64 {
        (now.saturating_since(c.t_c).as_nanos().min(MBUFFER_NS as u64)) as i64
    }

    /// `htb_class_mode()` at `now` (lowater = hiwater = 0, no hysteresis).
    fn mode_at(c: &Class, now: Instant) -> Mode {
        let d = Self::diff(c, now);
        if c.ctokens + d < 0 {
            Mode::CantSend
        } else if c.tokens + d >= 0 {
            Mode::CanSend
        } else {
            Mode::MayBorrow
        }
    }

    /// The level at which leaf `i` can be served now, if any.
    fn eligible_level(&self, i: usize, now: Instant) -> Option<u8> {
        let mut x = i;
        loop {
            let c = &self.classes[x];
            match Self::mode_at(c, now) {
                Mode::CantSend => return None,
                Mode::CanSend => return Some(c.level),
                Mode::MayBorrow => x = c.parent?,
            }
        }
    }

    /// Earliest time ≥ now at which leaf `i` becomes eligible.
    fn eligible_time(&self, i: usize, now: Instant) -> Option<Instant> {
        let zero_at = |c: &Class, toks: i64| -> Instant {
            let d = Self::diff(c, now);
            if toks + d >= 0 {
                now
            } else {
                c.t_c + Duration::from_nanos((-toks) as u64)
            }
        };
        let mut best: Option<Instant> = None;
        let mut ceil_ok = now;
        let mut x = Some(i);
        while let Some(k) = x {
            let c = &self.classes[k];
            ceil_ok = ceil_ok.max(zero_at(c, c.ctokens));
            let t = ceil_ok.max(zero_at(c, c.tokens));
            best = Some(best.map_or(t, |b| b.min(t)));
            x = c.parent;
        }
        best
    }

    /// `htb_accnt_tokens()` / `htb_accnt_ctokens()` / `htb_charge_class()`.
    fn charge(&mut self, leaf: usize, level: u8, len: usize, now: Instant) {
        let mut x = Some(leaf);
        while let Some(k) = x {
            let c = &mut self.classes[k];
            // the mode Linux's wait queue would have given the class by now (htb_do_events())
            let before = Self::mode_at(c, now);
            let diff = Self::diff(c, now);
            if c.level >= level {
                if c.level == level {
                    c.lends += 1;
                }
                let mut toks = (diff + c.tokens).min(c.p.buffer_ns);
                toks -= l2t_ns(len, c.p.rate_bps);
                if toks <= -MBUFFER_NS {
                    toks = 1 - MBUFFER_NS;
                }
                c.tokens = toks;
            } else {
                c.borrows += 1;
                c.tokens += diff; // we moved t_c; update tokens
            }
            let mut toks = (diff + c.ctokens).min(c.p.cbuffer_ns);
            toks -= l2t_ns(len, c.p.ceil_bps);
            if toks <= -MBUFFER_NS {
                toks = 1 - MBUFFER_NS;
            }
            c.ctokens = toks;
            c.t_c = now;
            // htb_change_class_mode(): count transitions into CANT_SEND
            let m = Self::mode_at(c, now);
            if m != before && m == Mode::CantSend {
                c.overlimits += 1;
                self.c.overlimits += 1;
            }
            let c = &mut self.classes[k];
            c.bytes += len as u64;
            c.packets += 1;
            x = c.parent;
        }
    }

    /// Mode of class `id` at `now` (for tests and reports).
    pub fn class_mode(&self, id: ClassId, now: Instant) -> Option<Mode> {
        self.find(id).map(|i| Self::mode_at(&self.classes[i], now))
    }
}

impl Qdisc for Htb {
    fn kind(&self) -> &'static str {
        "htb"
    }
    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        pkt.meta.enqueued = now;
        match self.classify(&pkt) {
            Target::Direct => {
                if self.direct.len() < self.direct_qlen as usize {
                    self.direct_backlog += pkt.len();
                    self.backlog += pkt.len();
                    self.qlen += 1;
                    self.direct.push_back(pkt);
                    Verdict::Queued
                } else {
                    self.c.drops += 1;
                    dropped.push(pkt);
                    Verdict::Dropped
                }
            }
            Target::Class(i) => {
                let Some(q) = self.classes[i].leaf.as_mut() else {
                    self.c.drops += 1;
                    dropped.push(pkt);
                    return Verdict::Dropped;
                };
                let (ql, bl) = (q.qlen(), q.backlog_bytes());
                let before = dropped.len();
                let v = q.enqueue(now, pkt, dropped);
                let (ql2, bl2) = (q.qlen(), q.backlog_bytes());
                self.qlen = self.qlen + ql2 - ql;
                self.backlog = self.backlog + bl2 - bl;
                let d = (dropped.len() - before) as u64;
                self.c.drops += d;
                self.classes[i].drops += d;
                v
            }
        }
    }

    fn dequeue(&mut self, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        if let Some(p) = self.direct.pop_front() {
            self.direct_backlog -= p.len();
            self.backlog -= p.len();
            self.qlen -= 1;
            self.direct_pkts += 1;
            self.c.sent(&p);
            return Some(p);
        }
        if self.qlen == 0 {
            return None;
        }
        let mut cand = std::mem::take(&mut self.scratch);
        cand.clear();
        for &i in &self.leaves {
            let active = self.classes[i].leaf.as_ref().is_some_and(|q| q.qlen() > 0);
            if active {
                if let Some(l) = self.eligible_level(i, now) {
                    cand.push((l, self.classes[i].p.prio, i));
                }
            }
        }
        // leaves are in classid order, so a stable sort keeps classid order per group
        cand.sort_by_key(|&(l, p, _)| (l, p));
        let mut result = None;
        let mut g = 0;
        while g < cand.len() && result.is_none() {
            let (level, prio, _) = cand[g];
            let end = g + cand[g..].iter().take_while(|c| c.0 == level && c.1 == prio).count();
            let group = &cand[g..end];
            let start_id = self.ptr[level as usize][prio as usize];
            let start = group.iter().position(|&(_, _, i)| self.classes[i].p.classid.0 >= start_id).unwrap_or(0);
            for k in 0..group.len() {
                let i = group[(start + k) % group.len()].2;
                let before = dropped.len();
                let Some(q) = self.classes[i].leaf.as_mut() else { continue };
                let (ql, bl) = (q.qlen(), q.backlog_bytes());
                let p = q.dequeue(now, dropped);
                let (ql2, bl2) = (q.qlen(), q.backlog_bytes());
                self.qlen = self.qlen + ql2 - ql;
                self.backlog = self.backlog + bl2 - bl;
                let d = (dropped.len() - before) as u64;
                self.c.drops += d;
                self.classes[i].drops += d;
                if let Some(p) = p {
                    let len = p.len();
                    let c = &mut self.classes[i];
                    let lv = level as usize;
                    c.deficit[lv] -= len as i64;
                    if c.deficit[lv] < 0 {
                        c.deficit[lv] += c.p.quantum as i64;
                        // htb_next_rb_node(): the next class in classid order goes next
                        let nxt = group[(start + k + 1) % group.len()].2;
                        self.ptr[lv][prio as usize] = if group.len() > 1 { self.classes[nxt].p.classid.0 } else { c.p.classid.0 };
                    } else {
                        self.ptr[lv][prio as usize] = c.p.classid.0;
                    }
                    self.charge(i, level, len, now);
                    self.c.sent(&p);
                    result = Some(p);
                    break;
                }
            }
            g = end;
        }
        self.scratch = cand;
        result
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if !self.direct.is_empty() {
            return Some(now);
        }
        let mut best: Option<Instant> = None;
        for &i in &self.leaves {
            let Some(q) = self.classes[i].leaf.as_ref() else { continue };
            if q.qlen() == 0 {
                continue;
            }
            let Some(mut t) = self.eligible_time(i, now) else { continue };
            if let Some(cw) = q.next_wakeup(now) {
                t = t.max(cw);
            }
            best = Some(best.map_or(t, |b| b.min(t)));
        }
        best
    }
    fn qlen(&self) -> usize {
        self.qlen
    }
    fn backlog_bytes(&self) -> usize {
        self.backlog
    }
    fn stats(&self) -> QdiscStats {
        let mut s = self.c.snapshot("htb", self.qlen, self.backlog);
        s.xstats.push(("default", self.defcls as i64));
        s.xstats.push(("direct_packets_stat", self.direct_pkts as i64));
        s.xstats.push(("direct_qlen", self.direct_qlen as i64));
        s
    }
    fn tree_stats(&self, out: &mut Vec<QdiscStats>) {
        out.push(self.stats());
        for c in &self.classes {
            if let Some(q) = &c.leaf {
                q.tree_stats(out);
            }
        }
    }
    fn class_stats(&self, out: &mut Vec<ClassStats>) {
        for c in &self.classes {
            let (ql, bl) = match &c.leaf {
                Some(q) => (q.qlen() as u64, q.backlog_bytes() as u64),
                None => (0, 0),
            };
            out.push(ClassStats {
                kind: "htb",
                classid: c.p.classid,
                parent: c.p.parent.unwrap_or(self.c.handle),
                leaf: c.leaf.as_ref().map(|q| q.stats().handle),
                level: c.level,
                bytes: c.bytes,
                packets: c.packets,
                drops: c.drops,
                overlimits: c.overlimits,
                backlog_bytes: bl,
                qlen: ql,
                lends: c.lends,
                borrows: c.borrows,
                rate_bps: c.p.rate_bps,
                ceil_bps: c.p.ceil_bps,
                tokens: c.tokens,
                ctokens: c.ctokens,
            });
        }
        for c in &self.classes {
            if let Some(q) = &c.leaf {
                q.class_stats(out);
            }
        }
    }
    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
    }
    fn leaf_class(&self, pkt: &Pkt) -> Option<ClassId> {
        match self.classify(pkt) {
            Target::Class(i) => Some(self.classes[i].p.classid),
            Target::Direct => None,
        }
    }
}
