//! Linux queueing disciplines and classifiers, configured in `tc` syntax.
//!
//! Mirrors `net/sched/` of Linux (5.x/6.x semantics unless a module says otherwise):
//!
//! * classless: [`fifo`] (`pfifo`, `bfifo`, `pfifo_head_drop`), [`prio::PfifoFast`],
//!   [`tbf`], [`sfq`], [`red`], [`codel`], [`fq_codel`], [`fq`] (per-flow pacing),
//!   [`dualpi2`] (L4S);
//! * delay/impairment: [`netem`] (`netem` as a qdisc: a tfifo by `time_to_send`, stackable);
//! * classful: [`prio::Prio`], [`htb`], [`cbq`] (each class holds a child qdisc), `tbf` (one class);
//! * classifiers: [`classify`] (`u32`, `fw`, `skb->priority`, and the [`Classifier`] plug-in
//!   point for custom rules);
//! * configuration: [`config::TcConfig`] reads `tc qdisc|class|filter add …` lines and builds
//!   the tree with Linux/iproute2 defaults.
//!
//! **Sans-IO contract.** Nothing here reads a clock or does I/O; the driver passes `now`.
//! The driver (the simulator's interface) calls [`Qdisc::enqueue`] for every packet handed to
//! the device and [`Qdisc::dequeue`] whenever the link can take a packet. If `dequeue` returns
//! `None` while [`Qdisc::qlen`] is non-zero the qdisc is throttled (tbf, htb) and
//! [`Qdisc::next_wakeup`] says when to try again (always later than `now` in that case), like
//! `qdisc_watchdog_schedule_ns()`. Packets a qdisc drops, at enqueue or (CoDel) at dequeue,
//! are pushed onto the caller's `dropped` vector, like Linux's `to_free` list, so the caller
//! can record them. No function panics on any packet bytes or configuration string.
#![warn(missing_docs)]

pub mod cbq;
pub mod classify;
pub mod codel;
pub mod config;
pub mod dualpi2;
pub mod fifo;
pub mod fq;
pub mod fq_codel;
pub mod htb;
pub mod netem;
pub mod prio;
pub mod red;
pub mod sfq;
pub mod show;
pub mod tbf;
pub(crate) mod util;

use core::fmt;
pub use classify::{Classifier, FilterChain, Fw, U32};
pub use config::{TcConfig, TcError};
pub use show::tc_show;
use wirelab_core::{Instant, Pkt};

/// `DEFAULT_TX_QUEUE_LEN` (include/linux/netdevice.h): Ethernet devices' `txqueuelen`.
pub const DEFAULT_TX_QUEUE_LEN: u32 = 1000;

/// Device parameters that Linux and iproute2 defaults are derived from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevParams {
    /// `txqueuelen` (default 1000): pfifo/bfifo/HTB-leaf/prio-band limits.
    pub txqueuelen: u32,
    /// Device MTU (1500).
    pub mtu: u32,
    /// `dev->hard_header_len` (14 on Ethernet).
    pub hard_header_len: u32,
    /// The `HZ` iproute2's `get_hz()` reports. On every kernel with high-resolution timers
    /// `/proc/net/psched` makes it 1 000 000 000, so HTB's default burst is
    /// `rate/8/HZ + 1600` ≈ 1600 bytes. Era profiles (HZ = 100, 250, 1000) may override it.
    pub hz: u64,
}

impl Default for DevParams {
    fn default() -> Self {
        DevParams { txqueuelen: DEFAULT_TX_QUEUE_LEN, mtu: 1500, hard_header_len: 14, hz: 1_000_000_000 }
    }
}

impl DevParams {
    /// `psched_mtu()`: MTU plus link header (1514 on Ethernet); SFQ/fq_codel quantum, CoDel mtu.
    pub fn psched_mtu(&self) -> u32 {
        self.mtu + self.hard_header_len
    }
}

/// A qdisc handle or class id, `major:minor` packed as `major << 16 | minor` (Linux `TC_H_MAKE`).
/// Both halves are hexadecimal in `tc` syntax: `1:10` is minor 0x10.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ClassId(pub u32);

impl ClassId {
    /// `TC_H_ROOT`.
    pub const ROOT: ClassId = ClassId(0xFFFF_FFFF);
    /// `TC_H_UNSPEC`.
    pub const UNSPEC: ClassId = ClassId(0);
    /// `major:minor`.
    pub const fn new(major: u16, minor: u16) -> Self {
        ClassId(((major as u32) << 16) | minor as u32)
    }
    /// The major (qdisc handle) part.
    pub const fn major(self) -> u16 {
        (self.0 >> 16) as u16
    }
    /// The minor (class) part.
    pub const fn minor(self) -> u16 {
        self.0 as u16
    }
    /// Parses `tc` spelling: `1:10`, `1:` (minor 0), `root`, `none`; hex halves as
    /// `get_tc_classid()` reads them.
    pub fn parse(s: &str) -> Option<ClassId> {
        match s {
            "root" => return Some(ClassId::ROOT),
            "none" => return Some(ClassId::UNSPEC),
            _ => {}
        }
        let (maj, min) = s.split_once(':')?;
        let p = |x: &str| -> Option<u16> {
            if x.is_empty() {
                Some(0)
            } else {
                let x = x.strip_prefix("0x").unwrap_or(x);
                u16::from_str_radix(x, 16).ok()
            }
        };
        let (maj, min) = (p(maj)?, p(min)?);
        Some(ClassId::new(maj, min))
    }
}

impl fmt::Display for ClassId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ClassId::ROOT => f.write_str("root"),
            ClassId::UNSPEC => f.write_str("none"),
            c => write!(f, "{:x}:{:x}", c.major(), c.minor()),
        }
    }
}
impl fmt::Debug for ClassId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// What `enqueue` did with the offered packet.
///
/// Linux returns `NET_XMIT_SUCCESS`, `NET_XMIT_CN` or `NET_XMIT_DROP`; its `CN` is used
/// inconsistently across qdiscs (SFQ returns it when the *same flow* lost a packet, which may
/// be the offered one). We report plainly what happened; the victims are in `dropped`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The packet is queued and nothing was dropped.
    Queued,
    /// The packet is queued but other packets were dropped to make room (`NET_XMIT_CN`).
    Congested,
    /// The packet itself was dropped (it is in `dropped`, possibly with others).
    Dropped,
}

/// The counters `tc -s qdisc show` prints for one qdisc.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QdiscStats {
    /// Kind as `tc` names it (`htb`, `sfq`, …).
    pub kind: &'static str,
    /// This qdisc's handle (`1:` is `ClassId::new(1, 0)`; default children have `0:`).
    pub handle: ClassId,
    /// Parent: `ClassId::ROOT` or the class it is attached to.
    pub parent: ClassId,
    /// `Sent N bytes`: bytes dequeued (`qdisc_pkt_len`, link header included).
    pub bytes: u64,
    /// `… M pkt`: packets dequeued.
    pub packets: u64,
    /// `dropped`: packets dropped here or by any descendant (Linux propagates child drops
    /// to ancestors via `qdisc_tree_reduce_backlog()`).
    pub drops: u64,
    /// `overlimits`: shaper throttle events / RED marks-or-drops as Linux counts them.
    pub overlimits: u64,
    /// `requeues` (always 0: a simulated device never refuses a dequeued packet).
    pub requeues: u64,
    /// `backlog` bytes.
    pub backlog_bytes: u64,
    /// `backlog … p`: packets queued.
    pub qlen: u64,
    /// Qdisc-specific extended counters (`tc -s` xstats), e.g. CoDel's `count`, RED's
    /// `early`, SFQ's perturbation count.
    pub xstats: Vec<(&'static str, i64)>,
}

/// The counters `tc -s class show` prints for one class.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassStats {
    /// Kind of the owning qdisc (`htb`, `prio`, `tbf`).
    pub kind: &'static str,
    /// The class id.
    pub classid: ClassId,
    /// Parent class, or the qdisc handle for top-level classes.
    pub parent: ClassId,
    /// Handle of the leaf qdisc, if this is a leaf.
    pub leaf: Option<ClassId>,
    /// HTB level (0 for leaves).
    pub level: u8,
    /// Bytes sent through this class.
    pub bytes: u64,
    /// Packets sent through this class.
    pub packets: u64,
    /// Packets dropped in this class's subtree.
    pub drops: u64,
    /// Times the class went over its ceil (HTB `cl->overlimits`).
    pub overlimits: u64,
    /// Backlog bytes in this class's leaf qdisc.
    pub backlog_bytes: u64,
    /// Packets in this class's leaf qdisc.
    pub qlen: u64,
    /// HTB: `lended` (packets sent at this class's own level/rate).
    pub lends: u64,
    /// HTB: `borrowed` (packets this class sent on an ancestor's rate).
    pub borrows: u64,
    /// HTB: `rate`, bits/s (0 for other kinds).
    pub rate_bps: u64,
    /// HTB: `ceil`, bits/s.
    pub ceil_bps: u64,
    /// HTB: tokens in ns at the last checkpoint.
    pub tokens: i64,
    /// HTB: ctokens in ns at the last checkpoint.
    pub ctokens: i64,
}

/// A queueing discipline: `struct Qdisc_ops` as a sans-IO state machine.
pub trait Qdisc: Send {
    /// `tc` name of the kind.
    fn kind(&self) -> &'static str;
    /// Offers `pkt`. Sets `pkt.meta.enqueued = now`. Every packet dropped (the offered one if
    /// refused, victims of a push-out) is appended to `dropped`.
    fn enqueue(&mut self, now: Instant, pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict;
    /// Next packet to transmit, if any may go at `now`. AQMs (CoDel) drop at dequeue and
    /// append their victims to `dropped`.
    fn dequeue(&mut self, now: Instant, dropped: &mut Vec<Pkt>) -> Option<Pkt>;
    /// Length (`qdisc_pkt_len`) of the packet a work-conserving `dequeue` would return next,
    /// when cheaply known; `None` if empty or unknown.
    fn peek_len(&self) -> Option<usize> {
        None
    }
    /// When the driver should call `dequeue` again although the qdisc is not empty: `None`
    /// for an empty or never-throttled qdisc. After a `dequeue` at `now` returned `None` with
    /// `qlen() > 0` this is `Some(t)` with `t > now`.
    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        let _ = now;
        None
    }
    /// `false` if [`next_wakeup`](Self::next_wakeup) always returns `None` (a
    /// work-conserving qdisc without timers, such as the FIFOs): the driver then never asks,
    /// nor reads the qdisc while its transmitter idles. `true` (the default) is always correct.
    fn may_wake(&self) -> bool {
        true
    }
    /// Packets queued (`sch->q.qlen`), including in child qdiscs.
    fn qlen(&self) -> usize;
    /// True if a `dequeue` now would return nothing and change nothing (an empty FIFO):
    /// the driver may then skip the call. `false` (the default) is always correct; an AQM
    /// or shaper whose empty dequeue updates state (CoDel leaves its dropping state) or that
    /// holds packets keeps it.
    fn idle_dequeue_is_noop(&self) -> bool {
        false
    }
    /// `TCQ_F_CAN_BYPASS` (`__dev_xmit_skb()`): called with a packet for an idle
    /// transmitter. A qdisc that is empty and would accept `pkt` and hand it straight back
    /// from `dequeue` may instead account for it as exactly that (enqueue time, sent
    /// counters; `pkt` stays the caller's) and return `true`; the driver then transmits
    /// it. `false` (the default) takes the ordinary `enqueue` + `dequeue`.
    fn bypass(&mut self, now: Instant, pkt: &mut Pkt) -> bool {
        let _ = (now, pkt);
        false
    }
    /// GSO skbs larger than this many bytes (`qdisc_pkt_len()`) are segmented on enqueue
    /// and each segment charged to its socket as an skb of its own (`tbf_segment()`:
    /// `tbf` with a `max_size` below the skb). Only the root qdisc is asked (docs/tcp.md).
    /// `None` by default.
    fn gso_segments_above(&self) -> Option<usize> {
        None
    }
    /// The qdisc releases a packet's socket memory when it takes the packet
    /// (`skb_orphan_partial()` in `netem_enqueue()` when a delay, jitter or rate is set:
    /// "orphaning usually takes place at TX completion time, so _before_ the link transit
    /// delay"), so packets it holds do not count against TCP Small Queues. Only the root
    /// qdisc is asked (docs/tcp.md). `false` by default: every other qdisc keeps the
    /// socket's charge until the packet leaves the host.
    fn orphans_on_enqueue(&self) -> bool {
        false
    }
    /// Bytes queued (`sch->qstats.backlog`).
    fn backlog_bytes(&self) -> usize;
    /// This qdisc's `tc -s qdisc` counters.
    fn stats(&self) -> QdiscStats;
    /// This qdisc and all its descendants, parents first (`tc -s qdisc show`).
    fn tree_stats(&self, out: &mut Vec<QdiscStats>) {
        out.push(self.stats());
    }
    /// Per-class counters (`tc -s class show`); classless qdiscs add nothing.
    fn class_stats(&self, out: &mut Vec<ClassStats>) {
        let _ = out;
    }
    /// Sets the handle and parent reported in stats (used by [`TcConfig::build`]).
    fn set_ids(&mut self, handle: ClassId, parent: ClassId);
    /// The leaf class this qdisc would put `pkt` in, without enqueuing it (the classify
    /// step of `enqueue`: `cbq_classify()`, `htb_classify()`, `prio_classify()`); `None`
    /// for classless qdiscs and for HTB's direct queue. Used to bind a socket to its
    /// class, as seed 003's `sch_cbq.c` lookup by socket does.
    fn leaf_class(&self, pkt: &Pkt) -> Option<ClassId> {
        let _ = pkt;
        None
    }
}

/// Counters every qdisc keeps (`struct gnet_stats_basic` + `gnet_stats_queue` minus qlen).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub handle: ClassId,
    pub parent: ClassId,
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
    pub overlimits: u64,
}

impl Counters {
    pub fn new() -> Self {
        Counters { parent: ClassId::ROOT, ..Default::default() }
    }
    #[inline]
    pub fn sent(&mut self, p: &Pkt) {
        self.bytes += p.len() as u64;
        self.packets += 1;
    }
    pub fn snapshot(&self, kind: &'static str, qlen: usize, backlog: usize) -> QdiscStats {
        QdiscStats {
            kind,
            handle: self.handle,
            parent: self.parent,
            bytes: self.bytes,
            packets: self.packets,
            drops: self.drops,
            overlimits: self.overlimits,
            requeues: 0,
            backlog_bytes: backlog as u64,
            qlen: qlen as u64,
            xstats: Vec::new(),
        }
    }
}
