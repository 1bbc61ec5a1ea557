//! `red`: Random Early Detection (net/sched/sch_red.c, include/net/red.h).
//!
//! The average queue is an EWMA of the backlog in bytes with weight `W = 2^-Wlog`, updated
//! at every enqueue; after an idle period it decays as `(1-W)^m` with `m = idle / (avpkt
//! transmit time at bandwidth)`. Between `min` and `max` a packet is marked/dropped with
//! Linux's count-spread rule (`red_action()`, `red_mark_probability()`): after each mark a
//! fresh `qR` is drawn uniformly from `[0, (max-min)/max_P)`, and the packet is marked when
//! `(avg - min) * count ≥ qR`. Above `max` every packet is marked (ecn) or dropped.
//!
//! ECN (`red_enqueue()`, flags `TC_RED_ECN`, `TC_RED_HARDDROP`, `TC_RED_NODROP`): with
//! `ecn` a packet RED picks is CE-marked (`INET_ECN_set_ce()`) if it is ECT(0)/ECT(1) and
//! queued; a Not-ECT packet is dropped at the same decision (`nodrop` queues it instead).
//! Above `max`, `harddrop` drops even ECN-capable packets. Every pick counts in
//! `overlimits`; `tc -s` shows `marked` (prob + forced marks), `early` (prob + forced
//! drops), `pdrop` (the byte limit) and `other`.
//! Deviation: the average is kept in `f64` instead of Linux's `Wlog` fixed point, and idle
//! decay is computed exactly instead of through tc's 256-entry `Stab` table. `adaptive` is
//! not supported.
use crate::{ClassId, Counters, Qdisc, QdiscStats, Verdict};
use std::collections::VecDeque;
use wirelab_core::{Instant, Pkt, Rng};

/// Resolved RED parameters (as `tc` computes them from its options).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RedParams {
    /// `limit`: byte limit of the queue (tail drop beyond).
    pub limit: u64,
    /// `min` threshold, bytes.
    pub qth_min: u64,
    /// `max` threshold, bytes.
    pub qth_max: u64,
    /// EWMA weight exponent: `W = 2^-wlog` (`tc_red_eval_ewma()` from `burst`).
    pub wlog: u8,
    /// `probability` (max_P), default 0.02.
    pub max_p: f64,
    /// `avpkt`, bytes.
    pub avpkt: u64,
    /// `bandwidth`, bits/s (default 10 Mbit), for idle-time decay.
    pub bandwidth_bps: u64,
    /// `ecn`: mark ECT packets instead of dropping.
    pub ecn: bool,
    /// `harddrop`: drop above `max` even with `ecn`.
    pub harddrop: bool,
    /// `nodrop` (with `ecn`): queue a Not-ECT packet RED picked instead of dropping it.
    pub nodrop: bool,
}

/// `tc_red_eval_ewma()`: the smallest `Wlog` whose EWMA lets `burst` packets through
/// starting from an empty queue; `None` if `burst` is too small (tc prints "Try burst …").
pub fn tc_red_eval_ewma(qmin: u64, burst: u32, avpkt: u64) -> Option<u8> {
    let a = burst as f64 + 1.0 - qmin as f64 / avpkt.max(1) as f64;
    if a < 1.0 {
        return None;
    }
    let mut w = 0.5f64;
    for wlog in 1..32u8 {
        if a <= (1.0 - (1.0 - w).powi(burst as i32)) / w {
            return Some(wlog);
        }
        w /= 2.0;
    }
    None
}

/// The RED qdisc.
#[derive(Debug)]
pub struct Red {
    p: RedParams,
    rng: Rng,
    q: VecDeque<Pkt>,
    backlog: usize,
    qavg: f64,
    qcount: i64,
    qr: f64,
    qidlestart: Option<Instant>,
    prob_drop: u64,
    prob_mark: u64,
    forced_drop: u64,
    forced_mark: u64,
    pdrop: u64,
    c: Counters,
}

enum Action {
    Pass,
    ProbMark,
    HardMark,
}

impl Red {
    /// A RED qdisc; `rng` draws `qR` (Linux: `get_random_u32()`).
    pub fn new(p: RedParams, rng: Rng) -> Self {
        Red {
            p,
            rng,
            q: VecDeque::new(),
            backlog: 0,
            qavg: 0.0,
            qcount: -1,
            qr: 0.0,
            qidlestart: None,
            prob_drop: 0,
            prob_mark: 0,
            forced_drop: 0,
            forced_mark: 0,
            pdrop: 0,
            c: Counters::new(),
        }
    }
    /// The current average queue estimate, bytes.
    pub fn qavg(&self) -> f64 {
        self.qavg
    }
    fn w(&self) -> f64 {
        1.0 / (1u64 << self.p.wlog) as f64
    }
    fn red_random(&mut self) -> f64 {
        self.rng.next_f64() * (self.p.qth_max - self.p.qth_min) as f64 / self.p.max_p.max(1e-12)
    }
    /// `red_action()`.
    fn action(&mut self) -> Action {
        let avg = self.qavg;
        if avg < self.p.qth_min as f64 {
            self.qcount = -1;
            Action::Pass
        } else if avg >= self.p.qth_max as f64 {
            self.qcount = -1;
            Action::HardMark
        } else {
            self.qcount += 1;
            if self.qcount != 0 {
                if (avg - self.p.qth_min as f64) * self.qcount as f64 >= self.qr {
                    self.qcount = 0;
                    self.qr = self.red_random();
                    return Action::ProbMark;
                }
            } else {
                self.qr = self.red_random();
            }
            Action::Pass
        }
    }
}

impl Qdisc for Red {
    fn kind(&self) -> &'static str {
        "red"
    }
    fn enqueue(&mut self, now: Instant, mut pkt: Pkt, dropped: &mut Vec<Pkt>) -> Verdict {
        pkt.meta.enqueued = now;
        let w = self.w();
        match self.qidlestart.take() {
            // red_calc_qavg_from_idle_time()
            Some(start) => {
                let xmit_ns = (self.p.avpkt as f64 * 8e9 / self.p.bandwidth_bps.max(1) as f64).max(1.0);
                let m = now.saturating_since(start).as_nanos() as f64 / xmit_ns;
                self.qavg *= (1.0 - w).powf(m);
            }
            // red_calc_qavg_no_idle_time()
            None => self.qavg += w * (self.backlog as f64 - self.qavg),
        }
        let congestion_drop = match self.action() {
            Action::Pass => false,
            Action::ProbMark => {
                self.c.overlimits += 1;
                if !self.p.ecn {
                    self.prob_drop += 1;
                    true
                } else if pkt.inet_ecn_set_ce() {
                    self.prob_mark += 1;
                    false
                } else if !self.p.nodrop {
                    self.prob_drop += 1;
                    true
                } else {
                    false // "Non-ECT packet in ECN nodrop mode: queue it."
                }
            }
            Action::HardMark => {
                self.c.overlimits += 1;
                if self.p.harddrop || !self.p.ecn {
                    self.forced_drop += 1;
                    true
                } else if pkt.inet_ecn_set_ce() {
                    self.forced_mark += 1;
                    false
                } else if !self.p.nodrop {
                    self.forced_drop += 1;
                    true
                } else {
                    false
                }
            }
        };
        if congestion_drop || (self.backlog + pkt.len()) as u64 > self.p.limit {
            if !congestion_drop {
                self.pdrop += 1; // the child bfifo refused it
            }
            self.c.drops += 1;
            dropped.push(pkt);
            return Verdict::Dropped;
        }
        self.backlog += pkt.len();
        self.q.push_back(pkt);
        Verdict::Queued
    }
    fn dequeue(&mut self, now: Instant, _dropped: &mut Vec<Pkt>) -> Option<Pkt> {
        match self.q.pop_front() {
            Some(p) => {
                self.backlog -= p.len();
                self.c.sent(&p);
                Some(p)
            }
            None => {
                if self.qidlestart.is_none() {
                    self.qidlestart = Some(now); // red_start_of_idle_period()
                }
                None
            }
        }
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
        let mut s = self.c.snapshot("red", self.q.len(), self.backlog);
        // red_dump_stats(): tc prints "marked M early E pdrop P other O"
        s.xstats.extend([
            ("marked", (self.prob_mark + self.forced_mark) as i64),
            ("early", (self.prob_drop + self.forced_drop) as i64),
            ("pdrop", self.pdrop as i64),
            ("other", 0),
            ("prob_mark", self.prob_mark as i64),
            ("forced_mark", self.forced_mark as i64),
            ("prob_drop", self.prob_drop as i64),
            ("forced_drop", self.forced_drop as i64),
            ("wlog", self.p.wlog as i64),
            ("qavg", self.qavg as i64),
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
    fn ewma_eval_matches_tc() {
        // tc-red(8) example: min 30000 max 90000 avpkt 1000 burst 55 -> Wlog such that
        // 55 packets pass an empty queue
        let w = tc_red_eval_ewma(30000, 55, 1000).unwrap();
        assert!((1..32).contains(&w));
        let wf = 1.0 / (1u64 << w) as f64;
        assert!(26.0 <= (1.0 - (1.0 - wf).powi(55)) / wf);
        assert!(tc_red_eval_ewma(30000, 10, 1000).is_none());
    }
}
