//! `cbq`: Class-Based Queueing (net/sched/sch_cbq.c, Linux 2.2 – 6.2; iproute2 tc/q_cbq.c).
//!
//! Floyd & Jacobson's link-sharing as Linux implemented it. Each class estimates its idle
//! time between packet ends with an EWMA (`avgidle`, scaled by 2^`ewma_log`); a class whose
//! `avgidle` goes negative is *overlimit* until `undertime`. A backlogged overlimit class may
//! still send by borrowing from an underlimit ancestor along its `borrow` chain (`bounded`
//! classes cannot; `cbq_under_limit()`), within the top-level cutoff. Otherwise the
//! "classic" overlimit action sleeps it (`cbq_ovl_classic()`: `offtime`, `minidle`).
//! Backlogged classes are served by priority band (1 = highest), weighted round robin
//! within a band: each class has `quantum = weight·allot·n/Σweight` bytes per round
//! (`cbq_normalize_quanta()`). As in Linux, a class's idle time is updated when the *next*
//! dequeue happens (`cbq_update()`), assuming the previous packet ended at the previous
//! dequeue time plus its transmit time at `bandwidth` ("Linux has no EOI event").
//!
//! Deviations: time is kept in ns (Linux: 64-ns psched ticks), although all configured
//! times go through tc's tick quantisation; class byte/packet counters are updated at
//! dequeue (Linux: one packet later, in `cbq_update()`); only the `classic` overlimit
//! strategy exists (the only one tc can configure); no policing/`reclassify`.
use crate::classify::FilterChain;
use crate::prio::TC_PRIO_MAX;
use crate::util::{skb_priority, tc_calc_xmittime_ns};
use crate::{ClassId, ClassStats, Counters, Qdisc, QdiscStats, Verdict};
use wirelab_core::{Duration, Instant, Pkt};

/// `TC_CBQ_MAXPRIO`: priorities 1..=8 (8 = "no-transmit", the lowest).
pub const TC_CBQ_MAXPRIO: u8 = 8;
/// `TC_CBQ_MAXLEVEL`.
pub const TC_CBQ_MAXLEVEL: u8 = 8;
/// `TC_CBQ_DEF_EWMA`.
pub const TC_CBQ_DEF_EWMA: u8 = 5;
/// `(unsigned long)idle > 128*1024*1024` psched ticks resets `avgidle` to `maxidle`.
const IDLE_RESET_NS: i64 = 128 * 1024 * 1024 * 64;

/// A rate table as `tc_calc_rtable()` builds it: transmit time of `len` bytes rounded up to
/// the cell size (`cell_align = -1`), at least `mpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CbqRate {
    /// Rate, bytes/s (tc's unit).
    pub rate_bytes: u64,
    /// log2 of the cell size.
    pub cell_log: u8,
    /// Minimum packet unit.
    pub mpu: u32,
}

impl CbqRate {
    /// `tc_calc_rtable()` with `mtu` deciding the cell size (0 means 2047).
    pub fn new(rate_bytes: u64, mtu: u32, cell_log: Option<u8>, mpu: u32) -> Self {
        let mtu = if mtu == 0 { 2047 } else { mtu };
        let cell_log = cell_log.unwrap_or_else(|| {
            let mut c = 0;
            while (mtu >> c) > 255 {
                c += 1;
            }
            c
        });
        CbqRate { rate_bytes, cell_log, mpu }
    }
    /// `L2T()`: `qdisc_l2t()` on the table.
    pub fn l2t(&self, len: usize) -> i64 {
        let cell = 1usize << self.cell_log;
        let slot = len.saturating_sub(1) >> self.cell_log;
        let size = ((slot + 1) * cell).max(self.mpu as usize);
        tc_calc_xmittime_ns(self.rate_bytes, size as u64)
    }
}

/// `tc_cbq_calc_maxidle()`, in ns (scaled by 2^ewma_log as the kernel stores it).
pub fn tc_cbq_calc_maxidle(bndw: u64, rate: u64, avpkt: u32, ewma_log: u8, maxburst: u32) -> i64 {
    let g = 1.0 - 1.0 / (1u64 << ewma_log) as f64;
    let xmt = avpkt as f64 / bndw.max(1) as f64;
    let mut maxidle = xmt * (1.0 - g);
    if bndw != rate && maxburst > 0 {
        let mut vxmt = avpkt as f64 / rate.max(1) as f64 - xmt;
        vxmt *= g.powf(-(maxburst as f64)) - 1.0;
        if vxmt > maxidle {
            maxidle = vxmt;
        }
    }
    time2tick_ns(maxidle * (1u64 << ewma_log) as f64)
}

/// `tc_cbq_calc_offtime()`, in ns.
pub fn tc_cbq_calc_offtime(bndw: u64, rate: u64, avpkt: u32, ewma_log: u8, minburst: u32) -> i64 {
    let g = 1.0 - 1.0 / (1u64 << ewma_log) as f64;
    let mut offtime = avpkt as f64 / rate.max(1) as f64 - avpkt as f64 / bndw.max(1) as f64;
    if minburst == 0 {
        return 0;
    }
    if minburst == 1 {
        offtime *= g.powf(-(minburst as f64)) - g;
    } else {
        offtime *= 1.0 + (g.powf(-((minburst - 1) as f64)) - 1.0) / (1.0 - g) - g.powf(minburst as f64);
    }
    time2tick_ns(offtime)
}

/// seconds → `tc_core_time2tick()` (64-ns ticks, truncated) → ns.
fn time2tick_ns(secs: f64) -> i64 {
    let ticks = (secs * 1e6 * (1000.0 / 64.0)).clamp(0.0, u32::MAX as f64) as i64;
    ticks * 64
}

/// Resolved parameters of one CBQ class (what `cbq_change_class()` receives).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CbqClassParams {
    /// `classid`.
    pub classid: ClassId,
    /// Parent class; `None` = the root (link) class.
    pub parent: Option<ClassId>,
    /// `rate`.
    pub rate: CbqRate,
    /// `allot` bytes.
    pub allot: u32,
    /// `weight` (bytes/s as tc computes it; relative).
    pub weight: u64,
    /// `prio` 1..=8.
    pub prio: u8,
    /// `ewma` (0 = the link's).
    pub ewma_log: u8,
    /// `avpkt` (0 = the link's).
    pub avpkt: u32,
    /// `maxidle` from `maxburst`, ns scaled (None = the link's).
    pub maxidle: Option<i64>,
    /// `minidle`, ns scaled, as a positive number (None = unlimited).
    pub minidle: Option<i64>,
    /// `offtime` from `minburst`, ns.
    pub offtime: i64,
    /// `bounded`: may not borrow.
    pub bounded: bool,
    /// `isolated`: does not share (its traffic is not charged to its parent).
    pub isolated: bool,
    /// `split` node and `defmap` bits.
    pub split: Option<(ClassId, u32)>,
}

/// Resolved root parameters (`tc qdisc … cbq bandwidth B avpkt A`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CbqLinkParams {
    /// `bandwidth`.
    pub rate: CbqRate,
    /// `avpkt`.
    pub avpkt: u32,
    /// `ewma`.
    pub ewma_log: u8,
    /// `psched_mtu()` (the link class's allot) and dev mtu (quantum repair).
    pub psched_mtu: u32,
    /// Device MTU (bad quanta are repaired to `mtu/2 + 1`).
    pub dev_mtu: u32,
}

/// A class handed to [`Cbq::new`].
pub struct CbqClassDef {
    /// Parameters.
    pub params: CbqClassParams,
    /// Its qdisc (default `pfifo limit txqueuelen`).
    pub q: Box<dyn Qdisc>,
    /// Filters attached to the class (split nodes).
    pub filters: FilterChain,
}

struct Cl {
    id: ClassId,
    tparent: Option<usize>,
    borrow: Option<usize>,
    share: Option<usize>,
    level: u8,
    rate: CbqRate,
    priority: u8,
    cpriority: u8,
    ewma_log: u8,
    allot: i64,
    quantum: i64,
    weight: u64,
    maxidle: i64,
    minidle: i64,
    offtime: i64,
    q: Box<dyn Qdisc>,
    next_alive: Option<usize>,
    last: i64,
    undertime: i64,
    avgidle: i64,
    deficit: i64,
    delayed: bool,
    defaults: [Option<usize>; 16],
    filters: FilterChain,
    bytes: u64,
    packets: u64,
    drops: u64,
    overlimits: u64,
    borrows: u64,
    overactions: u64,
}

/// The CBQ qdisc. Class 0 is the root ("link") class `H:0`.
pub struct Cbq {
    cl: Vec<Cl>,
    active: [Option<usize>; TC_CBQ_MAXPRIO as usize + 1],
    activemask: u32,
    tx_class: Option<usize>,
    tx_borrowed: Option<usize>,
    tx_len: usize,
    now: i64,
    toplevel: u8,
    wd_expires: i64,
    watchdog: Option<Instant>,
    qlen: usize,
    backlog: usize,
    c: Counters,
}

impl core::fmt::Debug for Cbq {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Cbq {{ classes: {} }}", self.cl.len())
    }
}

impl Cbq {
    /// Builds the class tree (`cbq_init()` + `cbq_change_class()` for each class).
    pub fn new(handle: ClassId, link: CbqLinkParams, link_q: Box<dyn Qdisc>, link_filters: FilterChain, defs: Vec<CbqClassDef>) -> Result<Self, String> {
        let link_maxidle = tc_cbq_calc_maxidle(link.rate.rate_bytes, link.rate.rate_bytes, link.avpkt, link.ewma_log, 0);
        let mut cl = vec![Cl {
            id: ClassId::new(handle.major(), 0),
            tparent: None,
            borrow: None,
            share: None,
            level: 0,
            rate: link.rate,
            priority: TC_CBQ_MAXPRIO - 1,
            cpriority: TC_CBQ_MAXPRIO - 1,
            ewma_log: link.ewma_log,
            allot: link.psched_mtu as i64,
            quantum: link.psched_mtu as i64,
            weight: link.rate.rate_bytes,
            maxidle: link_maxidle,
            minidle: -0x7FFF_FFFF,
            offtime: 0,
            q: link_q,
            next_alive: None,
            last: 0,
            undertime: 0,
            avgidle: link_maxidle,
            deficit: 0,
            delayed: false,
            defaults: [None; 16],
            filters: link_filters,
            bytes: 0,
            packets: 0,
            drops: 0,
            overlimits: 0,
            borrows: 0,
            overactions: 0,
        }];
        let mut defs = defs;
        defs.sort_by_key(|d| d.params.classid);
        let ids: Vec<ClassId> = defs.iter().map(|d| d.params.classid).collect();
        for d in defs {
            let p = d.params;
            let tparent = match p.parent {
                None => 0,
                Some(pid) if pid.minor() == 0 => 0,
                Some(pid) => 1 + ids.binary_search(&pid).map_err(|_| format!("class {}: parent {} does not exist", p.classid, pid))?,
            };
            let ewma_log = if p.ewma_log == 0 { link.ewma_log } else { p.ewma_log };
            let maxidle = p.maxidle.unwrap_or(link_maxidle);
            let prio = p.prio.clamp(1, TC_CBQ_MAXPRIO) - 1;
            cl.push(Cl {
                id: p.classid,
                tparent: Some(tparent),
                borrow: if p.bounded { None } else { Some(tparent) },
                share: if p.isolated { None } else { Some(tparent) },
                level: 0,
                rate: p.rate,
                priority: prio,
                cpriority: prio,
                ewma_log,
                allot: p.allot as i64,
                quantum: p.allot as i64,
                weight: p.weight,
                maxidle,
                minidle: p.minidle.map_or(-0x7FFF_FFFF, |m| -m),
                offtime: p.offtime,
                q: d.q,
                next_alive: None,
                last: 0,
                undertime: 0,
                avgidle: if p.maxidle.is_some() { maxidle } else { 0 },
                deficit: 0,
                delayed: false,
                defaults: [None; 16],
                filters: d.filters,
                bytes: 0,
                packets: 0,
                drops: 0,
                overlimits: 0,
                borrows: 0,
                overactions: 0,
            });
        }
        // reject cycles and over-deep trees
        let n = cl.len();
        for i in 1..n {
            let mut depth = 0;
            let mut a = cl[i].tparent;
            while let Some(x) = a {
                depth += 1;
                if depth > TC_CBQ_MAXLEVEL as usize {
                    return Err(format!("class {}: tree deeper than TC_CBQ_MAXLEVEL or cyclic", cl[i].id));
                }
                a = cl[x].tparent;
            }
        }
        // cbq_adjust_levels(): node level = max child level + 1
        for _ in 0..=TC_CBQ_MAXLEVEL {
            for i in 0..n {
                let lv = (0..n).filter(|&k| cl[k].tparent == Some(i)).map(|k| cl[k].level + 1).max().unwrap_or(0);
                cl[i].level = lv;
            }
        }
        // cbq_normalize_quanta() for every priority, in its final state
        let mut nclasses = [0i128; TC_CBQ_MAXPRIO as usize + 1];
        let mut quanta = [0i128; TC_CBQ_MAXPRIO as usize + 1];
        for c in &cl {
            nclasses[c.priority as usize] += 1;
            quanta[c.priority as usize] += c.weight as i128;
        }
        for c in cl.iter_mut() {
            let p = c.priority as usize;
            if quanta[p] != 0 {
                c.quantum = (c.weight as i128 * c.allot as i128 * nclasses[p] / quanta[p]).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
            }
            if c.quantum <= 0 || c.quantum > 32 * link.dev_mtu as i64 {
                c.quantum = link.dev_mtu as i64 / 2 + 1; // "CBQ: class has bad quantum, repaired"
            }
        }
        Ok(Cbq {
            cl,
            active: [None; TC_CBQ_MAXPRIO as usize + 1],
            activemask: 0,
            tx_class: None,
            tx_borrowed: None,
            tx_len: 0,
            now: 0,
            toplevel: TC_CBQ_MAXLEVEL,
            wd_expires: 0,
            watchdog: None,
            qlen: 0,
            backlog: 0,
            c: Counters { handle, ..Counters::new() },
        })
    }

    /// Installs `split`/`defmap` defaults (`cbq_sync_defmap()`): `(class, split node,
    /// defmap)` triples. For each split node and each priority bit, the lowest-level class
    /// with that bit becomes the node's default (ties: lowest classid).
    pub fn set_defmaps(&mut self, maps: &[(ClassId, ClassId, u32)]) -> Result<(), String> {
        for &(cid, sid, _) in maps {
            let k = self.find(cid).ok_or_else(|| format!("class {cid} does not exist"))?;
            let mut a = self.cl[k].tparent;
            let mut ok = false;
            while let Some(x) = a {
                ok |= self.cl[x].id == sid || (x == 0 && sid.minor() == 0);
                a = self.cl[x].tparent;
            }
            if !ok {
                return Err(format!("class {cid}: split node {sid} is not an ancestor"));
            }
        }
        let mut splits: Vec<ClassId> = maps.iter().map(|m| m.1).collect();
        splits.sort();
        splits.dedup();
        for sid in splits {
            let s = self.find(sid).ok_or_else(|| format!("split node {sid} does not exist"))?;
            for i in 0..=TC_PRIO_MAX as usize {
                let mut best: Option<usize> = None;
                for &(cid, msid, defmap) in maps {
                    if msid != sid || defmap & (1 << i) == 0 {
                        continue;
                    }
                    let Some(k) = self.find(cid) else { continue };
                    if self.cl[k].level < self.cl[s].level && best.is_none_or(|b| self.cl[k].level < self.cl[b].level) {
                        best = Some(k);
                    }
                }
                self.cl[s].defaults[i] = best;
            }
        }
        Ok(())
    }

    fn find(&self, id: ClassId) -> Option<usize> {
        if id.minor() == 0 && id.major() == self.cl[0].id.major() {
            return Some(0);
        }
        self.cl.iter().position(|c| c.id == id)
    }

    /// `cbq_classify()`.
    fn classify(&self, pkt: &Pkt) -> usize {
        let prio = skb_priority(pkt);
        let handle = self.c.handle;
        if (prio ^ handle.0) >> 16 == 0 {
            if let Some(k) = self.find(ClassId(prio)) {
                return k;
            }
        }
        let mut head = 0usize;
        for _ in 0..=TC_CBQ_MAXLEVEL {
            let Some(res) = self.cl[head].filters.classify(pkt) else { break };
            let cl = if res.major() != 0 {
                self.find(res)
            } else {
                self.cl[head].defaults[(res.0 & TC_PRIO_MAX) as usize].or(self.cl[head].defaults[0])
            };
            let Some(cl) = cl else { break };
            if self.cl[cl].level >= self.cl[head].level {
                break;
            }
            if self.cl[cl].level == 0 {
                return cl;
            }
            head = cl;
        }
        if prio >> 16 == 0 {
            if let Some(c) = self.cl[head].defaults[(prio & TC_PRIO_MAX) as usize].or(self.cl[head].defaults[0]) {
                return c;
            }
        }
        head
    }

    fn activate(&mut self, k: usize) {
        let prio = self.cl[k].cpriority as usize;
        let tail = self.active[prio];
        self.active[prio] = Some(k);
        match tail {
            Some(t) => {
                self.cl[k].next_alive = self.cl[t].next_alive;
                self.cl[t].next_alive = Some(k);
            }
            None => {
                self.cl[k].next_alive = Some(k);
                self.activemask |= 1 << prio;
            }
        }
    }

    /// `cbq_mark_toplevel()`.
    fn mark_toplevel(&mut self, k: usize, now: i64) {
        let toplevel = self.toplevel;
        if toplevel > self.cl[k].level {
            let mut c = Some(k);
            while let Some(x) = c {
                if toplevel <= self.cl[x].level {
                    break;
                }
                if self.cl[x].undertime < now {
                    self.toplevel = self.cl[x].level;
                    return;
                }
                c = self.cl[x].borrow;
            }
        }
    }

    /// `cbq_ovl_classic()`.
    fn ovl_classic(&mut self, k: usize) {
        let now = self.now;
        let mut delay = self.cl[k].undertime - now;
        if !self.cl[k].delayed {
            let c = &mut self.cl[k];
            delay += c.offtime;
            if c.avgidle < 0 {
                delay -= (-c.avgidle) - ((-c.avgidle) >> c.ewma_log);
            }
            if c.avgidle < c.minidle {
                c.avgidle = c.minidle;
            }
            if delay <= 0 {
                delay = 1;
            }
            c.undertime = now + delay;
            c.overactions += 1;
            c.delayed = true;
        }
        if self.wd_expires == 0 || self.wd_expires > delay {
            self.wd_expires = delay;
        }
        // schedule wakeups by the real available rate, not the leaf's
        if self.toplevel == TC_CBQ_MAXLEVEL {
            let mut base = self.wd_expires;
            let mut b = self.cl[k].borrow;
            while let Some(x) = b {
                let mut d = self.cl[x].undertime - now;
                if d < base {
                    if d <= 0 {
                        d = 1;
                    }
                    base = d;
                }
                b = self.cl[x].borrow;
            }
            self.wd_expires = base;
        }
    }

    /// `cbq_under_limit()`: the class to charge (self or a lender), or None.
    fn under_limit(&mut self, k: usize) -> Option<usize> {
        let now = self.now;
        if self.cl[k].tparent.is_none() {
            return Some(k);
        }
        if self.cl[k].undertime == 0 || now >= self.cl[k].undertime {
            self.cl[k].delayed = false;
            return Some(k);
        }
        let mut c = k;
        loop {
            match self.cl[c].borrow {
                None => {
                    self.cl[k].overlimits += 1;
                    self.ovl_classic(k);
                    return None;
                }
                Some(b) => c = b,
            }
            if self.cl[c].level > self.toplevel {
                return None;
            }
            if !(self.cl[c].undertime != 0 && now < self.cl[c].undertime) {
                break;
            }
        }
        self.cl[c].delayed = false;
        Some(c)
    }

    fn child_dequeue(&mut self, k: usize, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        let before = dropped.len();
        let q = &mut self.cl[k].q;
        let (ql, bl) = (q.qlen(), q.backlog_bytes());
        let p = q.dequeue(now, dropped);
        let (ql2, bl2) = (q.qlen(), q.backlog_bytes());
        self.qlen = self.qlen + ql2 - ql;
        self.backlog = self.backlog + bl2 - bl;
        let d = (dropped.len() - before) as u64;
        self.c.drops += d;
        self.cl[k].drops += d;
        p
    }

    /// `cbq_dequeue_prio()`.
    fn dequeue_prio(&mut self, prio: usize, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        let mut cl_tail = self.active[prio]?;
        let mut cl_prev = cl_tail;
        let mut cl = self.cl[cl_prev].next_alive?;
        loop {
            let mut deficit = false;
            loop {
                let mut borrow = Some(cl);
                let mut skip = false;
                if self.cl[cl].q.qlen() > 0 {
                    borrow = self.under_limit(cl);
                    skip = borrow.is_none();
                }
                let mut next_class = false;
                if !skip {
                    if self.cl[cl].deficit <= 0 {
                        deficit = true;
                        self.cl[cl].deficit += self.cl[cl].quantum;
                        next_class = true;
                    } else if let Some(p) = self.child_dequeue(cl, now, dropped) {
                        let len = p.len();
                        self.cl[cl].deficit -= len as i64;
                        self.tx_class = Some(cl);
                        self.tx_borrowed = borrow;
                        if let Some(b) = borrow {
                            if b != cl {
                                self.cl[b].borrows += 1;
                                self.cl[cl].borrows += 1;
                            }
                        }
                        self.tx_len = len;
                        if self.cl[cl].deficit <= 0 {
                            self.active[prio] = Some(cl);
                            if let Some(nx) = self.cl[cl].next_alive {
                                self.cl[nx].deficit += self.cl[nx].quantum;
                            }
                        }
                        return Some(p);
                    } else {
                        skip = true;
                    }
                }
                if skip && !next_class && (self.cl[cl].q.qlen() == 0 || prio != self.cl[cl].cpriority as usize) {
                    // class is empty or penalized: unlink it from the active chain
                    self.cl[cl_prev].next_alive = self.cl[cl].next_alive;
                    self.cl[cl].next_alive = None;
                    if cl == cl_tail {
                        cl_tail = cl_prev;
                        if cl == cl_tail {
                            self.active[prio] = None;
                            self.activemask &= !(1 << prio);
                            if self.cl[cl].q.qlen() > 0 {
                                self.activate(cl);
                            }
                            return None;
                        }
                        self.active[prio] = Some(cl_tail);
                    }
                    if self.cl[cl].q.qlen() > 0 {
                        self.activate(cl);
                    }
                    cl = cl_prev;
                }
                // next_class:
                cl_prev = cl;
                cl = self.cl[cl].next_alive?;
                if cl_prev == cl_tail {
                    break;
                }
            }
            if !deficit {
                break;
            }
        }
        self.active[prio] = Some(cl_prev);
        None
    }

    /// `cbq_update()`: charges the previous packet's idle time up the share chain.
    fn update(&mut self) {
        let Some(this) = self.tx_class.take() else { return };
        let len = self.tx_len;
        let now = self.now + self.cl[0].rate.l2t(len);
        let mut c = Some(this);
        while let Some(k) = c {
            let link_l2t = self.cl[0].rate.l2t(len);
            let cl = &mut self.cl[k];
            let mut avgidle = cl.avgidle;
            let mut idle = now - cl.last;
            if !(0..=IDLE_RESET_NS).contains(&idle) {
                avgidle = cl.maxidle;
            } else {
                idle -= cl.rate.l2t(len);
                // true_avgidle := (1-W)·true_avgidle + W·idle, with avgidle = true_avgidle/W
                avgidle += idle - (avgidle >> cl.ewma_log);
            }
            if avgidle <= 0 {
                if avgidle < cl.minidle {
                    avgidle = cl.minidle;
                }
                cl.avgidle = avgidle;
                let mut idle = (-avgidle) - ((-avgidle) >> cl.ewma_log);
                idle -= link_l2t;
                idle += cl.rate.l2t(len);
                cl.undertime = now + idle;
            } else {
                cl.undertime = 0;
                cl.avgidle = avgidle.min(cl.maxidle);
            }
            if now - cl.last > 0 {
                cl.last = now;
            }
            c = cl.share;
        }
        // cbq_update_toplevel()
        if let Some(b) = self.tx_borrowed {
            if self.toplevel >= self.cl[b].level && self.cl[this].q.qlen() > 1 {
                let mut x = Some(b);
                while let Some(k) = x {
                    if self.cl[k].undertime == 0 {
                        self.toplevel = self.cl[k].level;
                        return;
                    }
                    x = self.cl[k].borrow;
                }
            }
        }
    }
}

impl Qdisc for Cbq {
    fn kind(&self) -> &'static str {
        "cbq"
    }
    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        pkt.meta.enqueued = now;
        let k = self.classify(&pkt);
        let before = dropped.len();
        let q = &mut self.cl[k].q;
        let (ql, bl) = (q.qlen(), q.backlog_bytes());
        let v = q.enqueue(now, pkt, dropped);
        let (ql2, bl2) = (q.qlen(), q.backlog_bytes());
        self.qlen = self.qlen + ql2 - ql;
        self.backlog = self.backlog + bl2 - bl;
        let d = (dropped.len() - before) as u64;
        self.c.drops += d;
        self.cl[k].drops += d;
        let t = now.as_nanos() as i64;
        self.mark_toplevel(k, t);
        if ql2 > 0 && self.cl[k].next_alive.is_none() {
            self.activate(k);
        }
        v
    }
    fn dequeue(&mut self, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        if self.tx_class.is_some() {
            self.update();
        }
        self.now = now.as_nanos() as i64;
        self.watchdog = None;
        loop {
            self.wd_expires = 0;
            let mut mask = self.activemask & 0xff;
            while mask != 0 {
                let prio = mask.trailing_zeros() as usize;
                mask &= !(1 << prio);
                if let Some(p) = self.dequeue_prio(prio, now, dropped) {
                    self.c.sent(&p);
                    let mut x = self.tx_class;
                    while let Some(k) = x {
                        self.cl[k].bytes += p.len() as u64;
                        self.cl[k].packets += 1;
                        x = self.cl[k].tparent;
                    }
                    return Some(p);
                }
            }
            if self.toplevel == TC_CBQ_MAXLEVEL && self.cl[0].undertime == 0 {
                break;
            }
            self.toplevel = TC_CBQ_MAXLEVEL;
            self.cl[0].undertime = 0;
        }
        if self.qlen > 0 {
            self.c.overlimits += 1;
            if self.wd_expires > 0 {
                self.watchdog = Some(now + Duration::from_nanos(self.wd_expires as u64));
            }
        }
        None
    }
    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        if self.qlen == 0 {
            return None;
        }
        let mut best = self.watchdog;
        for c in &self.cl {
            if c.q.qlen() > 0 {
                if let Some(w) = c.q.next_wakeup(now) {
                    if w > now {
                        best = Some(best.map_or(w, |b| b.min(w)));
                    }
                }
            }
        }
        // safety net: one psched tick (Linux would wait for the next enqueue)
        Some(best.unwrap_or(now + Duration::from_nanos(64)))
    }
    fn qlen(&self) -> usize {
        self.qlen
    }
    fn backlog_bytes(&self) -> usize {
        self.backlog
    }
    fn stats(&self) -> QdiscStats {
        let mut s = self.c.snapshot("cbq", self.qlen, self.backlog);
        s.xstats.push(("avgidle", self.cl[0].avgidle));
        s
    }
    fn tree_stats(&self, out: &mut Vec<QdiscStats>) {
        out.push(self.stats());
        for c in &self.cl {
            c.q.tree_stats(out);
        }
    }
    fn class_stats(&self, out: &mut Vec<ClassStats>) {
        for c in &self.cl {
            out.push(ClassStats {
                kind: "cbq",
                classid: c.id,
                parent: c.tparent.map_or(ClassId::ROOT, |p| self.cl[p].id),
                leaf: Some(c.q.stats().handle),
                level: c.level,
                bytes: c.bytes,
                packets: c.packets,
                drops: c.drops,
                overlimits: c.overlimits,
                backlog_bytes: c.q.backlog_bytes() as u64,
                qlen: c.q.qlen() as u64,
                lends: c.overactions,
                borrows: c.borrows,
                rate_bps: c.rate.rate_bytes * 8,
                ceil_bps: 0,
                tokens: c.avgidle,
                ctokens: c.undertime,
            });
        }
        for c in &self.cl {
            c.q.class_stats(out);
        }
    }
    fn set_ids(&mut self, handle: ClassId, parent: ClassId) {
        self.c.handle = handle;
        self.c.parent = parent;
        self.cl[0].id = ClassId::new(handle.major(), 0);
    }
    fn leaf_class(&self, pkt: &Pkt) -> Option<ClassId> {
        Some(self.cl[self.classify(pkt)].id)
    }
}
