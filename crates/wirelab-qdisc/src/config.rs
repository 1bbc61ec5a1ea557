//! `tc` syntax: parse `qdisc`/`class`/`filter` commands and build the qdisc tree.
//!
//! Accepted lines (a leading `tc` and any `dev X` are ignored):
//!
//! ```text
//! qdisc add root handle 1: htb default 1
//! class add parent 1: classid 1:10 htb rate 100mbit ceil 100mbit
//! qdisc add parent 1:10 handle 10: sfq perturb 10
//! filter add parent 1:0 protocol ip prio 1 u32 match ip protocol 132 0xff flowid 1:10
//! ```
//!
//! Short forms, for scenario keys: a qdisc line may omit `qdisc add` (`root sfq perturb 10`,
//! `pfifo limit 100`, `htb default 1`: a root qdisc, handle `1:` unless given); a class line
//! may omit `class add` and start with its classid (`1:10 htb rate 100mbit`, parent `1:`
//! unless given); a filter line may omit `filter add` and everything before the kind
//! (`u32 match … flowid 1:10`: parent = the root qdisc, protocol ip, automatic prio).
//!
//! Defaults are Linux's and iproute2's (see docs/qdisc.md). Unsupported kinds or options are
//! errors that name the option and the qdisc; nothing is silently ignored.
use crate::cbq::{tc_cbq_calc_maxidle, tc_cbq_calc_offtime, Cbq, CbqClassDef, CbqClassParams, CbqLinkParams, CbqRate, TC_CBQ_DEF_EWMA, TC_CBQ_MAXPRIO};
use crate::classify::{Classifier, FilterChain, Fw, U32};
use crate::codel::{codel_tc_time, Codel, CodelParams};
use crate::fifo::{Fifo, FifoKind};
use crate::dualpi2::{DualPi2, DualPi2Opts};
use crate::fq::{Fq, FqOpts};
use crate::fq_codel::{FqCodel, FqCodelParams};
use crate::htb::{Htb, HtbClassDef, HtbClassParams, TC_HTB_NUMPRIO};
use crate::netem::NetemQdisc;
use crate::prio::{PfifoFast, Prio, DEFAULT_PRIOMAP, TCQ_PRIO_BANDS};
use crate::red::{tc_red_eval_ewma, Red, RedParams};
use crate::sfq::{Sfq, SfqOpts};
use crate::tbf::{Tbf, TbfParams};
use crate::util::{parse_c_u32, tc_calc_xmittime_ns};
use crate::{ClassId, DevParams, Qdisc};
use core::fmt;
use std::sync::Arc;
use wirelab_core::units::{parse_rate, parse_size, parse_time};
use wirelab_core::{Duration, Rng};
use wirelab_link::NetemSpec;

mod opts;
pub(crate) use opts::*;

/// A configuration error: the command and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcError {
    /// The offending command as given (empty for whole-tree errors).
    pub command: String,
    /// What is wrong, naming the qdisc and option.
    pub message: String,
}

impl fmt::Display for TcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.command.is_empty() {
            write!(f, "tc: {}", self.message)
        } else {
            write!(f, "tc `{}`: {}", self.command, self.message)
        }
    }
}
impl std::error::Error for TcError {}

#[derive(Clone, Debug, PartialEq)]
enum QdiscOpts {
    Fifo { kind: FifoKind, limit: Option<u64> },
    PfifoFast,
    Prio { bands: usize, priomap: [u8; 16] },
    Tbf { rate: u64, burst: u64, limit: Option<u64>, latency: Option<Duration>, peakrate: Option<u64>, mtu: Option<u64> },
    Sfq(SfqOpts),
    Codel { limit: u32, target: Option<Duration>, interval: Option<Duration>, ecn: bool, ce_threshold: Option<Duration> },
    FqCodel { limit: Option<u32>, flows: Option<u32>, quantum: Option<u32>, target: Option<Duration>, interval: Option<Duration>, ecn: Option<bool>, ce_threshold: Option<Duration>, ce_selector: Option<(u8, u8)>, memory_limit: Option<u64>, drop_batch: Option<u32> },
    Red { limit: u64, min: u64, max: u64, avpkt: u64, burst: u32, probability: f64, bandwidth: u64, ecn: bool, harddrop: bool, nodrop: bool },
    Htb { defcls: u16, r2q: u32, direct_qlen: Option<u32> },
    Cbq { bandwidth: u64, avpkt: u32, ewma: u8, allot: u32, mpu: u32, cell: Option<u8> },
    Netem(NetemSpec),
    Fq(FqOpts),
    DualPi2(DualPi2Opts),
}

#[derive(Clone, Debug)]
struct QdiscSpec {
    handle: ClassId,
    parent: ClassId,
    opts: QdiscOpts,
    line: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HtbClassOpts {
    rate: u64,
    ceil: Option<u64>,
    burst: Option<u64>,
    cburst: Option<u64>,
    prio: u32,
    quantum: Option<u32>,
    mtu: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CbqClassOpts {
    rate: Option<u64>,
    bandwidth: Option<u64>,
    maxburst: Option<u32>,
    minburst: Option<u32>,
    minidle: Option<u32>,
    bounded: bool,
    isolated: bool,
    lss_given: bool,
    ewma: Option<u8>,
    cell: Option<u8>,
    prio: Option<u8>,
    allot: Option<u32>,
    avpkt: Option<u32>,
    mpu: u32,
    weight: Option<u64>,
    split: Option<ClassId>,
    defmap: Option<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClassOpts {
    Htb(HtbClassOpts),
    Cbq(CbqClassOpts),
}

#[derive(Clone, Debug)]
struct ClassSpec {
    classid: ClassId,
    parent: ClassId,
    opts: ClassOpts,
    line: String,
}

#[derive(Clone, Debug)]
struct FilterSpec {
    /// `ClassId::ROOT` = attach to the root qdisc, whatever its handle.
    parent: ClassId,
    prio: Option<u32>,
    f: Arc<dyn Classifier>,
    line: String,
}

/// A parsed `tc` configuration for one device, buildable into a qdisc tree any number of
/// times (one per interface).
#[derive(Clone, Debug, Default)]
pub struct TcConfig {
    /// Device parameters the defaults derive from.
    pub dev: DevParams,
    qdiscs: Vec<QdiscSpec>,
    classes: Vec<ClassSpec>,
    filters: Vec<FilterSpec>,
    next_auto: u16,
}

pub(crate) type R<T> = Result<T, String>;

/// Cursor over a command's tokens.
pub(crate) struct Args<'a> {
    pub(crate) t: Vec<&'a str>,
    pub(crate) i: usize,
}
impl<'a> Args<'a> {
    pub(crate) fn peek(&self) -> Option<&'a str> {
        self.t.get(self.i).copied()
    }
    pub(crate) fn next(&mut self) -> Option<&'a str> {
        let v = self.peek();
        self.i += 1;
        v
    }
    pub(crate) fn val(&mut self, who: &str, opt: &str) -> R<&'a str> {
        self.next().ok_or_else(|| format!("{who}: option `{opt}` needs a value"))
    }
}

impl TcConfig {
    /// An empty configuration for an Ethernet device with `txqueuelen` 1000.
    pub fn new() -> Self {
        TcConfig::default()
    }
    /// An empty configuration for a device with these parameters.
    pub fn with_dev(dev: DevParams) -> Self {
        TcConfig { dev, ..Default::default() }
    }
    /// Parses several commands separated by newlines or `;` (`#` starts a comment).
    pub fn parse(text: &str) -> Result<Self, TcError> {
        let mut c = TcConfig::new();
        c.add_script(text)?;
        Ok(c)
    }
    /// Adds several commands separated by newlines or `;`.
    pub fn add_script(&mut self, text: &str) -> Result<(), TcError> {
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("");
            for cmd in line.split(';') {
                if !cmd.trim().is_empty() {
                    self.add(cmd)?;
                }
            }
        }
        Ok(())
    }

    /// Adds one command: `qdisc …`, `class …`, `filter …`, or a short-form root qdisc.
    pub fn add(&mut self, line: &str) -> Result<(), TcError> {
        let toks = tokens(line);
        match toks.first().copied() {
            Some("qdisc") => self.qdisc_cmd(line, &toks[1..]),
            Some("class") => self.class_cmd(line, &toks[1..]),
            Some("filter") => self.filter_cmd(line, &toks[1..]),
            Some(_) if toks.iter().any(|t| *t == "u32" || *t == "fw") => self.filter_cmd(line, &toks),
            Some(t) if ClassId::parse(t).is_some_and(|c| c.minor() != 0 && c != ClassId::ROOT) => self.class_cmd(line, &toks),
            Some(_) => self.qdisc_cmd(line, &toks),
            None => Err(err(line, "empty command")),
        }
    }
    /// Adds a qdisc (`qdisc add …` or the short form `[root|parent X] [handle H] KIND opts`).
    pub fn add_qdisc(&mut self, line: &str) -> Result<(), TcError> {
        let toks = tokens(line);
        let t = if toks.first() == Some(&"qdisc") { &toks[1..] } else { &toks[..] };
        self.qdisc_cmd(line, t)
    }
    /// Adds a class (`class add …` or the short form `CLASSID [parent P] KIND opts`).
    pub fn add_class(&mut self, line: &str) -> Result<(), TcError> {
        let toks = tokens(line);
        let t = if toks.first() == Some(&"class") { &toks[1..] } else { &toks[..] };
        self.class_cmd(line, t)
    }
    /// Adds a filter (`filter add …` or the short form `[parent P] [prio N] u32 …`).
    pub fn add_filter(&mut self, line: &str) -> Result<(), TcError> {
        let toks = tokens(line);
        let t = if toks.first() == Some(&"filter") { &toks[1..] } else { &toks[..] };
        self.filter_cmd(line, t)
    }
    /// Installs a custom classifier on the qdisc or class `parent` (e.g. `1:0` for the root
    /// HTB) at filter priority `prio`.
    pub fn add_classifier(&mut self, parent: ClassId, prio: u32, c: Arc<dyn Classifier>) {
        let line = format!("<custom classifier {c:?}>");
        self.filters.push(FilterSpec { parent, prio: Some(prio), f: c, line });
    }

    fn qdisc_cmd(&mut self, line: &str, t: &[&str]) -> Result<(), TcError> {
        let mut a = Args { t: t.to_vec(), i: 0 };
        let mut replace = false;
        if let Some(v) = a.peek() {
            match v {
                "add" => {
                    a.next();
                }
                "replace" | "change" => {
                    replace = true;
                    a.next();
                }
                "del" | "delete" | "show" | "ls" | "link" => return Err(err(line, &format!("`qdisc {v}` is not supported in a configuration"))),
                _ => {}
            }
        }
        let mut parent = None;
        let mut handle = None;
        let kind = loop {
            let Some(tok) = a.next() else { return Err(err(line, "missing qdisc kind")) };
            match tok {
                "root" => parent = Some(ClassId::ROOT),
                "parent" => parent = Some(classid_opt("qdisc", "parent", a.val("qdisc", "parent").map_err(|e| err(line, &e))?).map_err(|e| err(line, &e))?),
                "handle" => {
                    let v = a.val("qdisc", "handle").map_err(|e| err(line, &e))?;
                    let h = ClassId::parse(v).or_else(|| ClassId::parse(&format!("{v}:"))).filter(|h| h.minor() == 0 && h.major() != 0).ok_or_else(|| err(line, &format!("qdisc: bad handle `{v}` (expected like 1:)")))?;
                    handle = Some(h);
                }
                "dev" => {
                    a.next();
                }
                "estimator" | "stab" | "ingress" | "clsact" => return Err(err(line, &format!("qdisc: `{tok}` is not supported"))),
                k => break k,
            }
        };
        let opts = parse_qdisc_opts(kind, &mut a).map_err(|e| err(line, &e))?;
        let parent = parent.unwrap_or(ClassId::ROOT);
        let handle = match handle {
            Some(h) => h,
            None if parent == ClassId::ROOT => ClassId::new(1, 0),
            None => {
                // qdisc_alloc_handle(): 8001:, 8002:, …
                self.next_auto += 1;
                ClassId::new(0x8000 + self.next_auto, 0)
            }
        };
        if let Some(pos) = self.qdiscs.iter().position(|q| q.parent == parent) {
            if !replace {
                return Err(err(line, &format!("a qdisc is already attached at {parent} (use `qdisc replace`)")));
            }
            self.qdiscs.remove(pos);
        }
        if self.qdiscs.iter().any(|q| q.handle == handle) {
            return Err(err(line, &format!("handle {handle} is already in use")));
        }
        self.qdiscs.push(QdiscSpec { handle, parent, opts, line: line.trim().to_string() });
        Ok(())
    }

    fn class_cmd(&mut self, line: &str, t: &[&str]) -> Result<(), TcError> {
        let e = |m: String| err(line, &m);
        let mut a = Args { t: t.to_vec(), i: 0 };
        let mut replace = false;
        if let Some(v) = a.peek() {
            match v {
                "add" => {
                    a.next();
                }
                "replace" | "change" => {
                    replace = true;
                    a.next();
                }
                _ => {}
            }
        }
        let mut parent = None;
        let mut classid = None;
        let kind = loop {
            let Some(tok) = a.next() else { return Err(e("missing class kind".into())) };
            match tok {
                "parent" => parent = Some(classid_opt("class", "parent", a.val("class", "parent").map_err(&e)?).map_err(&e)?),
                "classid" => classid = Some(classid_opt("class", "classid", a.val("class", "classid").map_err(&e)?).map_err(&e)?),
                "dev" => {
                    a.next();
                }
                "htb" | "cbq" => break tok,
                k if classid.is_none() && k.contains(':') => classid = Some(classid_opt("class", "classid", k).map_err(&e)?),
                k => return Err(e(format!("class kind `{k}` is not supported (classes: htb, cbq; prio and tbf classes are implicit)"))),
            }
        };
        let classid = classid.ok_or_else(|| e("class: `classid` is required".into()))?;
        if classid.minor() == 0 || classid == ClassId::ROOT {
            return Err(e(format!("class: bad classid {classid}")));
        }
        let parent = parent.unwrap_or(ClassId::new(classid.major(), 0));
        if parent.major() != classid.major() {
            return Err(e(format!("class {classid}: parent {parent} belongs to another qdisc")));
        }
        let opts = if kind == "htb" { ClassOpts::Htb(parse_htb_class_opts(&mut a).map_err(&e)?) } else { ClassOpts::Cbq(parse_cbq_class_opts(&mut a).map_err(&e)?) };
        if let Some(pos) = self.classes.iter().position(|c| c.classid == classid) {
            if !replace {
                return Err(e(format!("class {classid} already exists")));
            }
            self.classes.remove(pos);
        }
        self.classes.push(ClassSpec { classid, parent, opts, line: line.trim().to_string() });
        Ok(())
    }

    fn filter_cmd(&mut self, line: &str, t: &[&str]) -> Result<(), TcError> {
        let e = |m: String| err(line, &m);
        let mut a = Args { t: t.to_vec(), i: 0 };
        if matches!(a.peek(), Some("add" | "replace" | "change")) {
            a.next();
        }
        let mut parent = ClassId::ROOT;
        let mut prio = None;
        let mut handle = None;
        let kind = loop {
            let Some(tok) = a.next() else { return Err(e("missing filter kind".into())) };
            match tok {
                "parent" => parent = classid_opt("filter", "parent", a.val("filter", "parent").map_err(&e)?).map_err(&e)?,
                "root" => parent = ClassId::ROOT,
                "protocol" => match a.val("filter", "protocol").map_err(&e)? {
                    "ip" | "all" => {}
                    p => return Err(e(format!("filter: protocol `{p}` not supported (wirelab carries IPv4 only)"))),
                },
                "prio" | "pref" | "priority" => {
                    let v = a.val("filter", tok).map_err(&e)?;
                    prio = Some(u32_opt("filter", tok, v).map_err(&e)?);
                }
                "handle" => handle = Some(a.val("filter", "handle").map_err(&e)?),
                "dev" => {
                    a.next();
                }
                "chain" | "estimator" => return Err(e(format!("filter: `{tok}` is not supported"))),
                k => break k,
            }
        };
        let f: Arc<dyn Classifier> = match kind {
            "u32" => {
                if handle.is_some() {
                    return Err(e("u32: explicit `handle` (hash tables) is not supported".into()));
                }
                Arc::new(parse_u32_filter(&mut a).map_err(&e)?)
            }
            "fw" => {
                let h = handle.ok_or_else(|| e("fw: `handle MARK[/MASK]` is required".into()))?;
                let (hv, mv) = match h.split_once('/') {
                    Some((x, y)) => (x, Some(y)),
                    None => (h, None),
                };
                let handle = parse_c_u32(hv).ok_or_else(|| e(format!("fw: bad handle `{h}`")))?;
                let mask = match mv {
                    Some(m) => parse_c_u32(m).ok_or_else(|| e(format!("fw: bad mask `{m}`")))?,
                    None => u32::MAX,
                };
                let mut classid = None;
                while let Some(o) = a.next() {
                    match o {
                        "flowid" | "classid" => classid = Some(classid_opt("fw", o, a.val("fw", o).map_err(&e)?).map_err(&e)?),
                        _ => return Err(e(unsupported("fw", o))),
                    }
                }
                let classid = classid.ok_or_else(|| e("fw: missing `flowid`".into()))?;
                Arc::new(Fw { handle: handle & mask, mask, classid })
            }
            k => return Err(e(format!("filter kind `{k}` is not supported (u32, fw)"))),
        };
        self.filters.push(FilterSpec { parent, prio, f, line: line.trim().to_string() });
        Ok(())
    }

    /// Builds the qdisc tree. `seed` and `name` (e.g. `"r1/eth0"`) key the random streams of
    /// randomised qdiscs: each gets `Rng::stream(seed, "{name}/qdisc/{handle}/{kind}")`.
    pub fn build(&self, seed: u64, name: &str) -> Result<Box<dyn Qdisc>, TcError> {
        let root = self.qdiscs.iter().position(|q| q.parent == ClassId::ROOT).ok_or_else(|| err("", "no root qdisc configured"))?;
        let mut b = Builder { cfg: self, seed, name, used_q: vec![false; self.qdiscs.len()], used_c: vec![false; self.classes.len()], used_f: vec![false; self.filters.len()] };
        let q = b.build(root)?;
        for (i, u) in b.used_q.iter().enumerate() {
            if !u {
                return Err(err(&self.qdiscs[i].line, &format!("parent {} does not exist or cannot hold a qdisc", self.qdiscs[i].parent)));
            }
        }
        for (i, u) in b.used_c.iter().enumerate() {
            if !u {
                return Err(err(&self.classes[i].line, &format!("no htb qdisc with handle {:x}: to hold class {}", self.classes[i].classid.major(), self.classes[i].classid)));
            }
        }
        for (i, u) in b.used_f.iter().enumerate() {
            if !u {
                return Err(err(&self.filters[i].line, &format!("parent {} is not a classful qdisc or class", self.filters[i].parent)));
            }
        }
        Ok(q)
    }

    /// Builds a tree with a single default qdisc when nothing is configured: `pfifo_fast`,
    /// as Linux attaches to a single-queue Ethernet device.
    pub fn build_or_default(&self, seed: u64, name: &str) -> Result<Box<dyn Qdisc>, TcError> {
        if self.qdiscs.is_empty() {
            let mut q = PfifoFast::new(self.dev.txqueuelen);
            q.set_ids(ClassId::UNSPEC, ClassId::ROOT);
            return Ok(Box::new(q));
        }
        self.build(seed, name)
    }
}

fn tokens(line: &str) -> Vec<&str> {
    let mut t: Vec<&str> = line.split_whitespace().collect();
    if t.first() == Some(&"tc") {
        t.remove(0);
    }
    t
}

fn err(line: &str, m: &str) -> TcError {
    TcError { command: line.trim().to_string(), message: m.to_string() }
}

struct Builder<'a> {
    cfg: &'a TcConfig,
    seed: u64,
    name: &'a str,
    used_q: Vec<bool>,
    used_c: Vec<bool>,
    used_f: Vec<bool>,
}

impl Builder<'_> {
    fn child_of(&mut self, parent: ClassId) -> Result<Option<Box<dyn Qdisc>>, TcError> {
        match self.cfg.qdiscs.iter().position(|q| q.parent == parent) {
            Some(i) => Ok(Some(self.build(i)?)),
            None => Ok(None),
        }
    }
    fn filters_of(&mut self, parent: ClassId, is_root: bool) -> FilterChain {
        let mut chain = FilterChain::default();
        for (i, f) in self.cfg.filters.iter().enumerate() {
            if f.parent == parent || (is_root && f.parent == ClassId::ROOT) {
                self.used_f[i] = true;
                let prio = f.prio.unwrap_or_else(|| chain.auto_prio());
                chain.insert(prio, f.f.clone());
            }
        }
        chain
    }
    fn default_pfifo(&self) -> Box<dyn Qdisc> {
        Box::new(Fifo::pfifo(self.cfg.dev.txqueuelen.max(1)))
    }

    fn build(&mut self, idx: usize) -> Result<Box<dyn Qdisc>, TcError> {
        self.used_q[idx] = true;
        let spec = &self.cfg.qdiscs[idx];
        let dev = self.cfg.dev;
        let h = spec.handle;
        let line = spec.line.as_str();
        let is_root = spec.parent == ClassId::ROOT;
        let rng = |kind: &str| Rng::stream(self.seed, &format!("{}/qdisc/{}/{}", self.name, h, kind));
        let mut q: Box<dyn Qdisc> = match &spec.opts {
            QdiscOpts::Fifo { kind, limit } => {
                let lim = match (kind, limit) {
                    (_, Some(l)) => *l,
                    (FifoKind::Bfifo, None) => dev.txqueuelen.max(1) as u64 * dev.psched_mtu() as u64,
                    (_, None) => dev.txqueuelen.max(1) as u64,
                };
                Box::new(Fifo::new(*kind, lim))
            }
            QdiscOpts::PfifoFast => Box::new(PfifoFast::new(dev.txqueuelen)),
            QdiscOpts::Prio { bands, priomap } => {
                let mut kids = Vec::with_capacity(*bands);
                for b in 1..=*bands {
                    let cid = ClassId::new(h.major(), b as u16);
                    kids.push(match self.child_of(cid)? {
                        Some(k) => k,
                        None => {
                            let mut k = self.default_pfifo();
                            k.set_ids(ClassId::UNSPEC, cid);
                            k
                        }
                    });
                }
                let filters = self.filters_of(h, is_root);
                Box::new(Prio::new(kids, *priomap, filters))
            }
            QdiscOpts::Tbf { rate, burst, limit, latency, peakrate, mtu } => {
                let rate_bytes = rate / 8;
                let buffer_ns = tc_calc_xmittime_ns(rate_bytes, *burst);
                let limit = match (limit, latency) {
                    (Some(l), _) => *l,
                    (None, Some(lat)) => {
                        let mut lim = rate_bytes as f64 * lat.as_secs_f64() + *burst as f64;
                        if let (Some(pr), Some(m)) = (peakrate, mtu) {
                            lim = lim.min((pr / 8) as f64 * lat.as_secs_f64() + *m as f64);
                        }
                        lim as u64
                    }
                    (None, None) => 0,
                };
                let t2l = |ns: i64, rate_bytes: u64| -> usize { ((ns.max(0) as u128 * rate_bytes as u128) / 1_000_000_000u128).min(u32::MAX as u128) as usize };
                let mut max_size = t2l(buffer_ns, rate_bytes);
                let (peak_bps, mtu_ns) = match (peakrate, mtu) {
                    (Some(pr), Some(m)) => {
                        let ns = tc_calc_xmittime_ns(pr / 8, *m);
                        max_size = max_size.min(t2l(ns, pr / 8));
                        (Some((pr / 8) * 8), ns)
                    }
                    _ => (None, 0),
                };
                let cid = ClassId::new(h.major(), 1);
                let child = match self.child_of(cid)? {
                    Some(c) => c,
                    None => {
                        let mut c: Box<dyn Qdisc> = Box::new(Fifo::bfifo(limit));
                        c.set_ids(ClassId::UNSPEC, cid);
                        c
                    }
                };
                let p = TbfParams { rate_bps: rate_bytes * 8, buffer_ns, peak_bps, mtu_ns, max_size };
                Box::new(Tbf::new(p, child))
            }
            QdiscOpts::Netem(spec) => Box::new(NetemQdisc::new(spec.clone(), rng("netem"))),
            QdiscOpts::Fq(o) => Box::new(Fq::new(o.params(&dev), rng("fq"))),
            QdiscOpts::DualPi2(o) => Box::new(DualPi2::new(o.params(&dev), &dev, rng("dualpi2"))),
            QdiscOpts::Sfq(o) => Box::new(Sfq::new(o, &dev, rng("sfq")).map_err(|m| err(line, &format!("sfq: {m}")))?),
            QdiscOpts::Codel { limit, target, interval, ecn, ce_threshold } => {
                let mut p = CodelParams::new(&dev);
                if let Some(t) = target {
                    p.target = codel_tc_time(*t);
                }
                if let Some(i) = interval {
                    p.interval = codel_tc_time(*i);
                }
                if let Some(c) = ce_threshold {
                    p.ce_threshold = codel_tc_time(*c);
                }
                p.ecn = *ecn;
                Box::new(Codel::new(*limit, p))
            }
            QdiscOpts::FqCodel { limit, flows, quantum, target, interval, ecn, ce_threshold, ce_selector, memory_limit, drop_batch } => {
                let mut p = FqCodelParams::new(&dev);
                if let Some(v) = limit {
                    p.limit = *v;
                }
                if let Some(v) = flows {
                    p.flows = *v;
                }
                if let Some(v) = quantum {
                    p.quantum = (*v).max(256); // fq_codel_change(): quantum >= 256
                }
                if let Some(t) = target {
                    p.codel.target = codel_tc_time(*t);
                }
                if let Some(i) = interval {
                    p.codel.interval = codel_tc_time(*i);
                }
                if let Some(c) = ce_threshold {
                    p.codel.ce_threshold = codel_tc_time(*c);
                }
                if let Some((val, mask)) = ce_selector {
                    p.codel.ce_threshold_selector = *val;
                    p.codel.ce_threshold_mask = *mask;
                }
                if let Some(e) = ecn {
                    p.codel.ecn = *e;
                }
                if let Some(m) = memory_limit {
                    p.memory_limit = *m;
                }
                if let Some(b) = drop_batch {
                    p.drop_batch = (*b).max(1);
                }
                Box::new(FqCodel::new(p, rng("fq_codel")))
            }
            QdiscOpts::Red { limit, min, max, avpkt, burst, probability, bandwidth, ecn, harddrop, nodrop } => {
                let wlog = tc_red_eval_ewma(*min, *burst, *avpkt).ok_or_else(|| err(line, &format!("red: burst {burst} is too small; try burst {}", (min / avpkt).saturating_add(1))))?;
                let p = RedParams { limit: *limit, qth_min: *min, qth_max: *max, wlog, max_p: *probability, avpkt: *avpkt, bandwidth_bps: *bandwidth, ecn: *ecn, harddrop: *harddrop, nodrop: *nodrop };
                Box::new(Red::new(p, rng("red")))
            }
            QdiscOpts::Htb { defcls, r2q, direct_qlen } => self.build_htb(h, is_root, line, *defcls, *r2q, *direct_qlen)?,
            QdiscOpts::Cbq { bandwidth, avpkt, ewma, allot, mpu, cell } => {
                let bw_bytes = bandwidth / 8;
                let link = CbqLinkParams { rate: CbqRate::new(bw_bytes, *allot, *cell, *mpu), avpkt: *avpkt, ewma_log: *ewma, psched_mtu: dev.psched_mtu(), dev_mtu: dev.mtu };
                self.build_cbq(h, is_root, line, link, *ewma)?
            }
        };
        q.set_ids(h, spec.parent);
        Ok(q)
    }

    /// An HTB qdisc with its classes (`htb_init`, `htb_change_class` as tc computes the class parameters).
    fn build_htb(&mut self, h: ClassId, is_root: bool, line: &str, defcls: u16, r2q: u32, direct_qlen: Option<u32>) -> Result<Box<dyn Qdisc>, TcError> {
        let dev = self.cfg.dev;
        let mut defs = Vec::new();
        for (ci, c) in self.cfg.classes.iter().enumerate() {
            if c.classid.major() != h.major() {
                continue;
            }
            let ClassOpts::Htb(o) = c.opts else {
                return Err(err(&c.line, &format!("class {} is not an htb class but qdisc {h} is htb", c.classid)));
            };
            self.used_c[ci] = true;
            let rate_bytes = o.rate / 8;
            let ceil = o.ceil.unwrap_or(o.rate);
            let ceil_bytes = ceil / 8;
            let hz = dev.hz.max(1);
            let buffer = o.burst.unwrap_or(rate_bytes / hz + o.mtu as u64);
            let cbuffer = o.cburst.unwrap_or(ceil_bytes / hz + o.mtu as u64);
            let quantum = match o.quantum {
                Some(q) if q > 0 => q,
                _ => (rate_bytes / r2q as u64).clamp(1000, 200_000) as u32,
            };
            let parent = if c.parent.minor() == 0 { None } else { Some(c.parent) };
            let params = HtbClassParams {
                classid: c.classid,
                parent,
                rate_bps: rate_bytes * 8,
                ceil_bps: ceil_bytes * 8,
                buffer_ns: tc_calc_xmittime_ns(rate_bytes, buffer),
                cbuffer_ns: tc_calc_xmittime_ns(ceil_bytes, cbuffer),
                prio: o.prio.min(TC_HTB_NUMPRIO as u32 - 1) as u8,
                quantum,
            };
            let has_children = self.cfg.classes.iter().any(|k| k.parent == c.classid);
            let leaf = if has_children {
                if self.cfg.qdiscs.iter().any(|q| q.parent == c.classid) {
                    return Err(err(&c.line, &format!("htb: class {} has child classes, so no qdisc can be attached to it", c.classid)));
                }
                None
            } else {
                Some(match self.child_of(c.classid)? {
                    Some(q) => q,
                    None => {
                        let mut q = self.default_pfifo();
                        q.set_ids(ClassId::UNSPEC, c.classid);
                        q
                    }
                })
            };
            let filters = self.filters_of(c.classid, false);
            defs.push(HtbClassDef { params, leaf, filters });
        }
        let filters = self.filters_of(h, is_root);
        let dq = direct_qlen.unwrap_or(dev.txqueuelen);
        Ok(Box::new(Htb::new(h, defcls, dq, defs, filters).map_err(|m| err(line, &format!("htb: {m}")))?))
    }

    /// A CBQ qdisc with its classes (tc-cbq(8) parameter computation).
    fn build_cbq(&mut self, h: ClassId, is_root: bool, line: &str, link: CbqLinkParams, ewma: u8) -> Result<Box<dyn Qdisc>, TcError> {
        let mut defs = Vec::new();
        let mut maps = Vec::new();
        for (ci, c) in self.cfg.classes.iter().enumerate() {
            if c.classid.major() != h.major() {
                continue;
            }
            let ClassOpts::Cbq(o) = c.opts else {
                return Err(err(&c.line, &format!("class {} is not a cbq class but qdisc {h} is cbq", c.classid)));
            };
            self.used_c[ci] = true;
            let rate_bytes = o.rate.unwrap_or(0) / 8;
            let avpkt_c = o.avpkt.unwrap_or(0);
            let allot_c = o.allot.unwrap_or(0).max(avpkt_c.saturating_mul(3) / 2);
            let ewma_c = o.ewma.unwrap_or(if o.maxburst.is_some() || o.minburst.is_some() || o.minidle.is_some() { TC_CBQ_DEF_EWMA } else { 0 });
            let ewma_eff = if ewma_c == 0 { ewma } else { ewma_c };
            let bndw = o.bandwidth.unwrap_or(0) / 8;
            let prio = o.prio.filter(|&p| p != 0).unwrap_or(TC_CBQ_MAXPRIO);
            let weight = o.weight.unwrap_or(if prio == TC_CBQ_MAXPRIO { 1 } else { rate_bytes });
            let params = CbqClassParams {
                classid: c.classid,
                parent: if c.parent.minor() == 0 { None } else { Some(c.parent) },
                rate: CbqRate::new(rate_bytes, o.allot.unwrap_or(0), o.cell, o.mpu),
                allot: allot_c,
                weight,
                prio,
                ewma_log: ewma_c,
                avpkt: avpkt_c,
                maxidle: o.maxburst.map(|mb| tc_cbq_calc_maxidle(bndw, rate_bytes, avpkt_c, ewma_eff, mb)),
                minidle: o.minidle.map(|m| (m as i64).saturating_mul(1 << ewma_eff).saturating_mul(64)),
                offtime: o.minburst.map_or(0, |mb| tc_cbq_calc_offtime(bndw, rate_bytes, avpkt_c, ewma_eff, mb)),
                bounded: o.bounded,
                isolated: o.isolated,
                split: None,
            };
            if let (Some(sp), Some(dm)) = (o.split, o.defmap) {
                maps.push((c.classid, if sp.minor() == 0 { ClassId::new(h.major(), 0) } else { sp }, dm));
            }
            let q = match self.child_of(c.classid)? {
                Some(q) => q,
                None => {
                    let mut q = self.default_pfifo();
                    q.set_ids(ClassId::UNSPEC, c.classid);
                    q
                }
            };
            let filters = self.filters_of(c.classid, false);
            defs.push(CbqClassDef { params, q, filters });
        }
        let mut link_q = self.default_pfifo();
        link_q.set_ids(ClassId::UNSPEC, h);
        let filters = self.filters_of(h, is_root);
        let mut q = Cbq::new(h, link, link_q, filters, defs).map_err(|m| err(line, &format!("cbq: {m}")))?;
        q.set_defmaps(&maps).map_err(|m| err(line, &format!("cbq: {m}")))?;
        Ok(Box::new(q))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn errors_name_option_and_qdisc() {
        let e = TcConfig::parse("qdisc add root sfq perturb 10 redflowlimit 100").unwrap_err();
        assert!(e.message.contains("sfq") && e.message.contains("redflowlimit"), "{e}");
        let e = TcConfig::parse("pfifo limit").unwrap_err();
        assert!(e.message.contains("limit"), "{e}");
        let e = TcConfig::parse("tbf rate 1mbit").unwrap_err();
        assert!(e.message.contains("burst"), "{e}");
        let e = TcConfig::parse("tbf rate 1mbit burst 10k").unwrap_err();
        assert!(e.message.contains("latency"), "{e}");
        let e = TcConfig::parse("qdisc add root handle 1: cbq avpkt 1000").unwrap_err();
        assert!(e.message.contains("cbq") && e.message.contains("bandwidth"), "{e}");
        let e = TcConfig::parse("qdisc add root handle 1: cbq bandwidth 10mbit avpkt 1000\nclass add parent 1: classid 1:1 cbq rate 1mbit").unwrap_err();
        assert!(e.message.contains("avpkt"), "{e}");
        let e = TcConfig::parse("qdisc add root handle 1: htb\nclass add parent 1: classid 1:10 htb ceil 1mbit").unwrap_err();
        assert!(e.message.contains("rate"), "{e}");
        let e = TcConfig::parse("red limit 100000 avpkt 1000 adaptive").unwrap_err();
        assert!(e.message.contains("adaptive"), "{e}");
        let e = TcConfig::parse("bogus limit 3").unwrap_err();
        assert!(e.message.contains("`bogus`") && e.message.contains("fq_codel, fq,"), "{e}");
        // unknown options name the valid ones, for every kind
        for (cfg, valid) in [
            ("sfq perturb 10 redflowlimit 100", "limit, perturb"),
            ("fq pacing_rate 1mbit", "flow_limit, quantum, initial_quantum, maxrate"),
            ("fq_codel ecn_threshold 1ms", "ce_threshold, ce_threshold_selector"),
            ("codel ce_threshold_selector 1/3", "ce_threshold, ecn, noecn"),
            ("red limit 1000 avpkt 100 adaptive", "ecn, harddrop, nodrop"),
            ("pfifo depth 3", "limit"),
            ("prio bands 3 multiqueue", "bands, priomap"),
            ("htb default 1\n1:1 htb rate 1mbit floor 2mbit", "rate, ceil"),
        ] {
            let e = TcConfig::parse(cfg).unwrap_err();
            assert!(e.message.contains("unsupported option") && e.message.contains(valid), "{cfg}: {e}");
        }
        assert!(TcConfig::parse("htb default 1\n1:10 htb rate 1mbit\nu32 match u16 1 0xffff at 33 flowid 1:10").is_err());
    }

    #[test]
    fn leaf_class_reports_the_enqueue_classification() {
        // a TCP header from 10.0.0.2 to 10.0.0.9:5001 (dport at IPv4 offset 22)
        let mut d = vec![0u8; 40];
        d[0] = 0x45;
        d[9] = 6;
        d[12..16].copy_from_slice(&[10, 0, 0, 2]);
        d[16..20].copy_from_slice(&[10, 0, 0, 9]);
        d[22..24].copy_from_slice(&5001u16.to_be_bytes());
        let pkt = |port: u16| {
            let mut d = d.clone();
            d[22..24].copy_from_slice(&port.to_be_bytes());
            wirelab_core::Pkt::new(d)
        };
        let filt = "filter add dev x parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:2\n\
                    filter add dev x parent 1: protocol ip prio 2 u32 match ip protocol 6 0xff flowid 1:1";
        let cbq = TcConfig::parse(&format!(
            "qdisc add root handle 1: cbq bandwidth 10mbit avpkt 1000\n\
             class add parent 1: classid 1:1 cbq rate 500kbit allot 1514 avpkt 1000 bounded\n\
             class add parent 1: classid 1:2 cbq rate 10mbit allot 1514 avpkt 1000\n{filt}"
        ))
        .unwrap()
        .build(1, "x")
        .unwrap();
        assert_eq!(cbq.leaf_class(&pkt(5001)), Some(ClassId::new(1, 2)));
        assert_eq!(cbq.leaf_class(&pkt(5002)), Some(ClassId::new(1, 1)));
        let htb = TcConfig::parse(&format!(
            "qdisc add root handle 1: htb\n\
             class add parent 1: classid 1:1 htb rate 500kbit\n\
             class add parent 1: classid 1:2 htb rate 10mbit\n{filt}"
        ))
        .unwrap()
        .build(1, "x")
        .unwrap();
        assert_eq!(htb.leaf_class(&pkt(5001)), Some(ClassId::new(1, 2)));
        assert_eq!(htb.leaf_class(&pkt(5002)), Some(ClassId::new(1, 1)));
        let mut udp = pkt(5001);
        udp.data[9] = 17;
        udp.data[22] = 0;
        assert_eq!(htb.leaf_class(&udp), None, "unclassified, no default: HTB's direct queue");
        let prio = TcConfig::parse(&format!("qdisc add root handle 1: prio\n{filt}")).unwrap().build(1, "x").unwrap();
        assert_eq!(prio.leaf_class(&pkt(5001)), Some(ClassId::new(1, 2)));
        let sfq = TcConfig::parse("root sfq").unwrap().build(1, "x").unwrap();
        assert_eq!(sfq.leaf_class(&pkt(5001)), None, "classless");
    }

    #[test]
    fn orphans_are_errors() {
        let c = TcConfig::parse("root sfq\nclass add parent 1: classid 1:1 htb rate 1mbit").unwrap();
        assert!(c.build(1, "x").is_err());
        let c = TcConfig::parse("root handle 1: htb\nqdisc add parent 1:5 handle 5: sfq").unwrap();
        assert!(c.build(1, "x").is_err());
        let c = TcConfig::parse("root handle 1: pfifo\nfilter add parent 1: u32 match ip protocol 6 0xff flowid 1:1").unwrap();
        assert!(c.build(1, "x").is_err());
    }

    #[test]
    fn defaults() {
        let mut out = Vec::new();
        TcConfig::parse("pfifo").unwrap().build(0, "a").unwrap().tree_stats(&mut out);
        assert_eq!(out[0].xstats, vec![("limit", 1000)]);
        out.clear();
        TcConfig::parse("bfifo").unwrap().build(0, "a").unwrap().tree_stats(&mut out);
        assert_eq!(out[0].xstats, vec![("limit", 1000 * 1514)]);
        out.clear();
        TcConfig::parse("root sfq perturb 10").unwrap().build(0, "a").unwrap().tree_stats(&mut out);
        let x = &out[0].xstats;
        assert!(x.contains(&("limit", 127)) && x.contains(&("flows", 128)) && x.contains(&("divisor", 1024)) && x.contains(&("quantum", 1514)), "{x:?}");
        out.clear();
        TcConfig::parse("sfq limit 20").unwrap().build(0, "a").unwrap().tree_stats(&mut out);
        assert!(out[0].xstats.contains(&("flows", 20)), "limit < flows clamps flows like sfq_change()");
    }

    #[test]
    fn htb_class_defaults() {
        let c = TcConfig::parse(
            "qdisc add root handle 1: htb default 1\n\
             class add parent 1: classid 1:1 htb rate 100mbit\n\
             class add parent 1: classid 1:10 htb rate 100kbit",
        )
        .unwrap();
        let ClassOpts::Htb(s) = c.classes[0].opts else { panic!("htb class expected") };
        assert_eq!(s.mtu, 1600);
        // quantum: 100mbit/8/10 = 1.25 MB -> 200000; 100kbit/8/10 = 1250
        let q = c.build(0, "x").unwrap();
        let mut cs = Vec::new();
        q.class_stats(&mut cs);
        assert_eq!(cs[0].classid, ClassId::new(1, 1));
        // burst = 12.5e6/1e9 + 1600 = 1600 bytes -> 128 us at 100 Mbit/s
        assert_eq!(cs[0].tokens, 128_000);
        assert_eq!(cs[1].classid, ClassId::new(1, 0x10));
        // 1600 B at 12500 B/s = 128 ms
        assert_eq!(cs[1].tokens, 128_000_000);
        let mut c2 = TcConfig::with_dev(DevParams { hz: 1000, ..Default::default() });
        c2.add_script("htb default 1\n1:1 htb rate 100mbit").unwrap();
        let mut cs = Vec::new();
        c2.build(0, "x").unwrap().class_stats(&mut cs);
        // HZ=1000: burst = 12500 + 1600 = 14100 B = 1.128 ms
        assert_eq!(cs[0].tokens, 1_128_000);
    }
}
