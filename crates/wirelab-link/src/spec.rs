//! `NetemSpec`: the netem vocabulary of `tc-netem(8)`, parsed and printed.
//!
//! Parsing mirrors iproute2's `netem_parse_opt` (tc/q_netem.c): the same keywords, the same
//! optional positional arguments (a following word that starts with a digit is the next
//! optional value), the same defaults for `loss state` and `loss gemodel`, and the same
//! consistency checks (`gap` needs `reorder`, `reorder` needs a delay, `distribution`
//! needs jitter). Deviations: values need their unit (`20ms`, `1%`), as everywhere in
//! wirelab ([`wirelab_core::units`]); keyword prefixes (`del` for `delay`) are not
//! accepted; and the wirelab keyword `jitter-order fifo|reorder` is required whenever the
//! jitter is non-zero.
use core::fmt;
use wirelab_core::units::{self, format_rate, UnitError};
use wirelab_core::Duration;

/// A netem string that does not parse. `Display` names the offending word and what was
/// expected instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkError {
    /// A word that is not a netem keyword here.
    UnknownWord {
        /// The word as given.
        word: String,
        /// What could have been there.
        expected: String,
    },
    /// A keyword's value that does not parse.
    BadValue {
        /// The keyword the value belongs to (`delay`, `loss`, …).
        keyword: &'static str,
        /// The value as given.
        word: String,
        /// What was expected, e.g. "a time like 20ms, …".
        expected: String,
    },
    /// A keyword at the end of the string without its value.
    MissingValue {
        /// The keyword.
        keyword: &'static str,
        /// What was expected after it.
        expected: String,
    },
    /// The words parse but do not make a valid netem configuration together.
    Invalid {
        /// The keyword the problem is reported against.
        word: String,
        /// Why, and how to fix it.
        reason: String,
    },
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::UnknownWord { word, expected } => {
                write!(f, "unknown word `{word}`: expected {expected}")
            }
            LinkError::BadValue { keyword, word, expected } => {
                write!(f, "bad value `{word}` for `{keyword}`: expected {expected}")
            }
            LinkError::MissingValue { keyword, expected } => {
                write!(f, "`{keyword}` needs a value: expected {expected}")
            }
            LinkError::Invalid { word, reason } => write!(f, "`{word}`: {reason}"),
        }
    }
}
impl std::error::Error for LinkError {}

/// A probability with netem's optional correlation (both fractions in `[0, 1]`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Prob {
    /// Probability, 0.01 for `1%`.
    pub p: f64,
    /// Correlation with the previous draw (`get_crandom`'s rho), 0 for none.
    pub corr: f64,
}

/// Delay distribution (`distribution NAME`). netem loads these as tables built by
/// iproute2's `netem/{normal,pareto,paretonormal}.c`; wirelab evaluates the same inverse
/// CDFs analytically (see docs/netem.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Distribution {
    /// netem's built-in default: uniform in `[delay - jitter, delay + jitter)`.
    #[default]
    Uniform,
    /// Normal with standard deviation `jitter`.
    Normal,
    /// NISTnet's Pareto (shape 3), scaled as iproute2's `pareto.c`.
    Pareto,
    /// ¼ normal + ¾ Pareto, combined as iproute2's `paretonormal.c`.
    ParetoNormal,
}

impl Distribution {
    fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Normal => "normal",
            Distribution::Pareto => "pareto",
            Distribution::ParetoNormal => "paretonormal",
        }
    }
}

/// wirelab's `jitter-order` keyword: may jitter reorder packets?
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JitterOrder {
    /// Jitter never reorders: a packet never arrives before the one sent before it (as
    /// netem behaves when `rate` is set).
    Fifo,
    /// netem's classic tfifo: each packet leaves at its own jittered time, so packets
    /// overtake each other when the jitter exceeds their spacing.
    Reorder,
}

/// netem's loss generator (`loss_model` in sch_netem.c).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum LossModel {
    /// No loss.
    #[default]
    None,
    /// `loss [random] P% [CORR%]`: `CLG_RANDOM` with `get_crandom`.
    Random(Prob),
    /// `loss state p13 [p31 [p32 [p23 [p14]]]]`: the 4-state Markov model
    /// (`CLG_4_STATES`, `loss_4state`). Fractions.
    State {
        /// Gap (good, state 1) to burst-loss (state 3).
        p13: f64,
        /// Burst loss (3) back to the gap (1). Default `1 - p13`.
        p31: f64,
        /// Burst loss (3) to a delivered packet inside the burst (2). Default 0.
        p32: f64,
        /// Delivered-in-burst (2) to burst loss (3). Default 1.
        p23: f64,
        /// Gap (1) to an isolated loss (4). Default 0.
        p14: f64,
    },
    /// `loss gemodel p [r [1-h [1-k]]]`: Gilbert–Elliott (`CLG_GILB_ELL`, `loss_gilb_ell`).
    GilbertElliott {
        /// Good to bad.
        p: f64,
        /// Bad to good. Default `1 - p`.
        r: f64,
        /// Loss probability in the bad state. Default 1.
        one_minus_h: f64,
        /// Loss probability in the good state. Default 0.
        one_minus_k: f64,
    },
}

/// netem's `rate` option: serialisation at the link rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSpec {
    /// Bits per second (non-zero).
    pub bps: u64,
    /// Added to each packet's length before computing its time (may be negative).
    pub packet_overhead: i32,
    /// ATM-style cell size; 0 = none (`packet_len_2_sched_time`).
    pub cell_size: u32,
    /// Overhead per cell.
    pub cell_overhead: i32,
}

impl RateSpec {
    /// A plain rate with no overheads.
    pub fn new(bps: u64) -> Self {
        RateSpec { bps, packet_overhead: 0, cell_size: 0, cell_overhead: 0 }
    }

    /// Bytes the link charges for a packet of `len` bytes, as netem's
    /// `packet_len_2_sched_time` counts them.
    pub fn charged_bytes(&self, len: usize) -> u64 {
        let mut l = (len as i64 + self.packet_overhead as i64).max(0);
        if self.cell_size > 0 {
            let cs = self.cell_size as i64;
            let cells = (l + cs - 1) / cs;
            l = (cells * (cs + self.cell_overhead as i64)).max(0);
        }
        l as u64
    }
}

/// One direction's netem configuration, as `tc qdisc … netem …` would set it.
#[derive(Clone, Debug, PartialEq)]
pub struct NetemSpec {
    /// `limit N` (packets; default 1000). Recorded only: wirelab does not cap the packets
    /// in flight on a link (see docs/netem.md).
    pub limit: u32,
    /// `rate RATE [packetoverhead N] [cellsize N] [celloverhead N]`.
    pub rate: Option<RateSpec>,
    /// `delay TIME` (propagation).
    pub delay: Duration,
    /// `delay TIME JITTER`.
    pub jitter: Duration,
    /// `delay TIME JITTER CORR%`: correlation of successive jitter draws (fraction).
    pub delay_corr: f64,
    /// `distribution NAME`.
    pub distribution: Distribution,
    /// `jitter-order fifo|reorder` (wirelab; required when `jitter` is non-zero).
    pub jitter_order: Option<JitterOrder>,
    /// `loss …`.
    pub loss: LossModel,
    /// `duplicate P% [CORR%]`.
    pub duplicate: Prob,
    /// `corrupt P% [CORR%]`.
    pub corrupt: Prob,
    /// `reorder P% [CORR%]`.
    pub reorder: Prob,
    /// `gap N` (iproute2 sets 1 when `reorder` is given without it).
    pub gap: u32,
    /// `ecn`: a packet the loss model hits is CE-marked instead of dropped when it is
    /// ECN-capable (ECT(0)/ECT(1)); Not-ECT packets are still lost (`netem_enqueue`).
    pub ecn: bool,
}

impl Default for NetemSpec {
    fn default() -> Self {
        NetemSpec {
            limit: 1000,
            rate: None,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            delay_corr: 0.0,
            distribution: Distribution::Uniform,
            jitter_order: None,
            loss: LossModel::None,
            duplicate: Prob::default(),
            corrupt: Prob::default(),
            reorder: Prob::default(),
            gap: 0,
            ecn: false,
        }
    }
}

const KEYWORDS: &str = "one of rate, delay, distribution, jitter-order, loss, ecn, duplicate, \
corrupt, reorder, gap, limit";
const JITTER_ORDER_HELP: &str = "a non-zero jitter needs `jitter-order fifo` (jitter never \
reorders: a packet never arrives before the previous one, like netem with `rate` set) or \
`jitter-order reorder` (netem's classic tfifo: packets overtake each other when the jitter \
exceeds their spacing)";

/// iproute2's `NEXT_IS_NUMBER()`: is this the optional numeric argument of the keyword?
fn is_number(w: Option<&&str>) -> bool {
    w.is_some_and(|w| w.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
}
fn is_signed_number(w: Option<&&str>) -> bool {
    w.is_some_and(|w| w.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+'))
}

struct Words<'a> {
    w: Vec<&'a str>,
    i: usize,
}

impl<'a> Words<'a> {
    fn peek(&self) -> Option<&&'a str> {
        self.w.get(self.i)
    }
    fn next(&mut self) -> Option<&'a str> {
        let w = self.w.get(self.i).copied();
        self.i += 1;
        w
    }
    fn value(&mut self, keyword: &'static str, expected: &str) -> Result<&'a str, LinkError> {
        self.next().ok_or_else(|| LinkError::MissingValue { keyword, expected: expected.into() })
    }
}

fn unit_err(keyword: &'static str, e: UnitError) -> LinkError {
    LinkError::BadValue { keyword, word: e.given, expected: e.expected.to_string() }
}
const PCT: &str = "a percentage like 1% or 0.5%";
fn pct(keyword: &'static str, w: &str) -> Result<f64, LinkError> {
    units::parse_percent(w).map_err(|e| unit_err(keyword, e))
}
fn int<T: core::str::FromStr>(keyword: &'static str, w: &str, expected: &str) -> Result<T, LinkError> {
    w.parse::<T>().map_err(|_| LinkError::BadValue { keyword, word: w.to_string(), expected: expected.into() })
}

/// `P% [CORR%]`.
fn prob(keyword: &'static str, ws: &mut Words<'_>) -> Result<Prob, LinkError> {
    let p = pct(keyword, ws.value(keyword, PCT)?)?;
    let corr = if is_number(ws.peek()) { pct(keyword, ws.next().unwrap_or_default())? } else { 0.0 };
    Ok(Prob { p, corr })
}

impl NetemSpec {
    /// Parses the words after `netem` in `tc qdisc add … netem …`, e.g.
    /// `"rate 10mbit delay 20ms 5ms jitter-order fifo loss 1%"`.
    pub fn parse(s: &str) -> Result<NetemSpec, LinkError> {
        let mut ws = Words { w: s.split_whitespace().collect(), i: 0 };
        let mut spec = NetemSpec::default();
        let mut dist_given = false;
        let mut reorder_given = false;
        let mut loss_given = false;
        while let Some(word) = ws.next() {
            match word {
                "limit" => {
                    let v = ws.value("limit", "a packet count like 1000")?;
                    spec.limit = int("limit", v, "a packet count like 1000")?;
                }
                "delay" | "latency" => {
                    let v = ws.value("delay", "a time like 20ms")?;
                    spec.delay = units::parse_time(v).map_err(|e| unit_err("delay", e))?;
                    if is_number(ws.peek()) {
                        let j = ws.next().unwrap_or_default();
                        spec.jitter = units::parse_time(j).map_err(|e| unit_err("delay", e))?;
                        if is_number(ws.peek()) {
                            spec.delay_corr = pct("delay", ws.next().unwrap_or_default())?;
                        }
                    }
                }
                "distribution" => {
                    const E: &str = "one of uniform, normal, pareto, paretonormal";
                    let v = ws.value("distribution", E)?;
                    spec.distribution = match v {
                        "uniform" => Distribution::Uniform,
                        "normal" => Distribution::Normal,
                        "pareto" => Distribution::Pareto,
                        "paretonormal" => Distribution::ParetoNormal,
                        _ => {
                            return Err(LinkError::BadValue {
                                keyword: "distribution",
                                word: v.into(),
                                expected: E.into(),
                            })
                        }
                    };
                    dist_given = true;
                }
                "jitter-order" => {
                    const E: &str = "`fifo` (jitter never reorders) or `reorder` (netem's tfifo)";
                    let v = ws.value("jitter-order", E)?;
                    spec.jitter_order = Some(match v {
                        "fifo" => JitterOrder::Fifo,
                        "reorder" => JitterOrder::Reorder,
                        _ => {
                            return Err(LinkError::BadValue {
                                keyword: "jitter-order",
                                word: v.into(),
                                expected: E.into(),
                            })
                        }
                    });
                }
                "loss" | "drop" => {
                    if loss_given {
                        return Err(LinkError::Invalid {
                            word: word.into(),
                            reason: "loss given twice; give one loss model".into(),
                        });
                    }
                    loss_given = true;
                    spec.loss = parse_loss(&mut ws)?;
                }
                "duplicate" => spec.duplicate = prob("duplicate", &mut ws)?,
                "corrupt" => spec.corrupt = prob("corrupt", &mut ws)?,
                "reorder" => {
                    spec.reorder = prob("reorder", &mut ws)?;
                    reorder_given = true;
                }
                "gap" => {
                    let v = ws.value("gap", "a packet count like 5")?;
                    spec.gap = int("gap", v, "a packet count like 5")?;
                }
                "rate" => {
                    let v = ws.value("rate", "a rate like 10mbit")?;
                    let bps = units::parse_rate(v).map_err(|e| unit_err("rate", e))?;
                    let mut r = RateSpec::new(bps);
                    // tc's positional form: rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]
                    if is_signed_number(ws.peek()) {
                        r.packet_overhead = int("rate", ws.next().unwrap_or_default(), "a packet overhead in bytes like 24")?;
                        if is_number(ws.peek()) {
                            r.cell_size = int("rate", ws.next().unwrap_or_default(), "a cell size in bytes like 48")?;
                            if is_signed_number(ws.peek()) {
                                r.cell_overhead = int("rate", ws.next().unwrap_or_default(), "a cell overhead in bytes like 5")?;
                            }
                        }
                    }
                    // keyword form, as tc prints it
                    loop {
                        match ws.peek().copied() {
                            Some("packetoverhead") => {
                                ws.next();
                                let v = ws.value("packetoverhead", "bytes like 24")?;
                                r.packet_overhead = int("packetoverhead", v, "bytes like 24 or -4")?;
                            }
                            Some("cellsize") => {
                                ws.next();
                                let v = ws.value("cellsize", "bytes like 48")?;
                                r.cell_size = int("cellsize", v, "bytes like 48")?;
                            }
                            Some("celloverhead") => {
                                ws.next();
                                let v = ws.value("celloverhead", "bytes like 5")?;
                                r.cell_overhead = int("celloverhead", v, "bytes like 5")?;
                            }
                            _ => break,
                        }
                    }
                    spec.rate = if bps == 0 { None } else { Some(r) };
                }
                "seed" => {
                    return Err(LinkError::Invalid {
                        word: word.into(),
                        reason: "wirelab seeds every netem from the run seed and the link's name; remove `seed`".into(),
                    })
                }
                "ecn" => spec.ecn = true,
                "slot" | "packetoverhead" | "cellsize" | "celloverhead" => {
                    return Err(LinkError::UnknownWord {
                        word: word.into(),
                        expected: format!("{KEYWORDS} (`slot` is not supported; overheads follow `rate RATE`)"),
                    })
                }
                _ => return Err(LinkError::UnknownWord { word: word.into(), expected: KEYWORDS.into() }),
            }
        }
        // Checks from netem_parse_opt / netem_change.
        if reorder_given && spec.reorder.p > 0.0 {
            if spec.delay == Duration::ZERO {
                return Err(LinkError::Invalid {
                    word: "reorder".into(),
                    reason: "reordering not possible without specifying some delay (add `delay TIME`)".into(),
                });
            }
            if spec.gap == 0 {
                spec.gap = 1;
            }
        } else if spec.gap > 0 {
            return Err(LinkError::Invalid {
                word: "gap".into(),
                reason: "gap specified without reorder probability (add `reorder P%`)".into(),
            });
        }
        // netem_parse_opt(): `if (opt.loss <= 0 && loss_type == NETEM_LOSS_UNSPEC)`
        if spec.ecn && matches!(spec.loss, LossModel::None | LossModel::Random(Prob { p: 0.0, .. })) {
            return Err(LinkError::Invalid {
                word: "ecn".into(),
                reason: "ecn requested without loss model (add `loss P%`, `loss state …` or `loss gemodel …`: ecn marks the packets it would lose)".into(),
            });
        }
        if dist_given && (spec.delay == Duration::ZERO || spec.jitter == Duration::ZERO) {
            return Err(LinkError::Invalid {
                word: "distribution".into(),
                reason: "distribution specified but no latency and jitter values (use `delay TIME JITTER`)".into(),
            });
        }
        spec.validate()?;
        Ok(spec)
    }

    /// Checks a (possibly hand-built) spec: the jitter-order rule and the loss-model
    /// probability sums. [`NetemSpec::parse`] calls it; call it after building a spec in code.
    pub fn validate(&self) -> Result<(), LinkError> {
        if self.jitter > Duration::ZERO && self.jitter_order.is_none() {
            return Err(LinkError::Invalid { word: "delay".into(), reason: JITTER_ORDER_HELP.into() });
        }
        if let LossModel::State { p13, p31, p32, p14, .. } = self.loss {
            if p13 + p14 > 1.0 + 1e-12 {
                return Err(LinkError::Invalid {
                    word: "loss state".into(),
                    reason: format!("p13 + p14 = {} exceeds 100% (both leave state 1)", fmt_pct(p13 + p14)),
                });
            }
            if p31 + p32 > 1.0 + 1e-12 {
                return Err(LinkError::Invalid {
                    word: "loss state".into(),
                    reason: format!("p31 + p32 = {} exceeds 100% (both leave state 3)", fmt_pct(p31 + p32)),
                });
            }
        }
        Ok(())
    }

    /// True when any impairment can put packets out of transmit order.
    pub fn may_reorder(&self) -> bool {
        (self.jitter > Duration::ZERO && self.jitter_order != Some(JitterOrder::Fifo))
            || (self.reorder.p > 0.0 && self.gap > 0)
    }
}

fn parse_loss(ws: &mut Words<'_>) -> Result<LossModel, LinkError> {
    const E: &str = "`random P%`, `state P13%`, `gemodel P%` or a percentage like 1%";
    let first = ws.value("loss", E)?;
    match first {
        "random" => Ok(LossModel::Random(prob("loss", ws)?)),
        "state" => {
            let p13 = pct("loss", ws.value("loss", "p13, a percentage like 1%")?)?;
            let mut v = [p13, 1.0 - p13, 0.0, 1.0, 0.0]; // iproute2's defaults
            for slot in v.iter_mut().skip(1) {
                if !is_number(ws.peek()) {
                    break;
                }
                *slot = pct("loss", ws.next().unwrap_or_default())?;
            }
            Ok(LossModel::State { p13: v[0], p31: v[1], p32: v[2], p23: v[3], p14: v[4] })
        }
        "gemodel" => {
            let p = pct("loss", ws.value("loss", "p, a percentage like 1%")?)?;
            let mut v = [p, 1.0 - p, 1.0, 0.0]; // iproute2's defaults
            for slot in v.iter_mut().skip(1) {
                if !is_number(ws.peek()) {
                    break;
                }
                *slot = pct("loss", ws.next().unwrap_or_default())?;
            }
            Ok(LossModel::GilbertElliott { p: v[0], r: v[1], one_minus_h: v[2], one_minus_k: v[3] })
        }
        w if w.starts_with(|c: char| c.is_ascii_digit() || c == '.') => {
            // the deprecated short form `loss P% [CORR%]`
            let p = pct("loss", w)?;
            let corr = if is_number(ws.peek()) { pct("loss", ws.next().unwrap_or_default())? } else { 0.0 };
            Ok(LossModel::Random(Prob { p, corr }))
        }
        w => Err(LinkError::BadValue { keyword: "loss", word: w.into(), expected: E.into() }),
    }
}

/// A fraction as tc prints a percentage (`%g%%`), without float noise.
fn fmt_pct(frac: f64) -> String {
    let v = (frac * 100.0 * 1e9).round() / 1e9;
    format!("{v}%")
}

fn fmt_prob(f: &mut fmt::Formatter<'_>, kw: &str, p: Prob) -> fmt::Result {
    write!(f, " {kw} {}", fmt_pct(p.p))?;
    if p.corr > 0.0 {
        write!(f, " {}", fmt_pct(p.corr))?;
    }
    Ok(())
}

impl fmt::Display for NetemSpec {
    /// Canonical tc form, parseable by [`NetemSpec::parse`]; order as `tc qdisc show`
    /// (`netem_print_opt`), with `distribution` and `jitter-order` after the delay.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "limit {}", self.limit)?;
        if self.delay > Duration::ZERO || self.jitter > Duration::ZERO {
            write!(f, " delay {}", self.delay)?;
            if self.jitter > Duration::ZERO {
                write!(f, " {}", self.jitter)?;
                if self.delay_corr > 0.0 {
                    write!(f, " {}", fmt_pct(self.delay_corr))?;
                }
            }
            if self.distribution != Distribution::Uniform {
                write!(f, " distribution {}", self.distribution.name())?;
            }
        }
        match self.jitter_order {
            Some(JitterOrder::Fifo) => write!(f, " jitter-order fifo")?,
            Some(JitterOrder::Reorder) => write!(f, " jitter-order reorder")?,
            None => {}
        }
        match self.loss {
            LossModel::None => {}
            LossModel::Random(p) => fmt_prob(f, "loss random", p)?,
            LossModel::State { p13, p31, p32, p23, p14 } => write!(
                f,
                " loss state {} {} {} {} {}",
                fmt_pct(p13),
                fmt_pct(p31),
                fmt_pct(p32),
                fmt_pct(p23),
                fmt_pct(p14)
            )?,
            LossModel::GilbertElliott { p, r, one_minus_h, one_minus_k } => write!(
                f,
                " loss gemodel {} {} {} {}",
                fmt_pct(p),
                fmt_pct(r),
                fmt_pct(one_minus_h),
                fmt_pct(one_minus_k)
            )?,
        }
        if self.duplicate.p > 0.0 {
            fmt_prob(f, "duplicate", self.duplicate)?;
        }
        if self.reorder.p > 0.0 {
            fmt_prob(f, "reorder", self.reorder)?;
        }
        if self.corrupt.p > 0.0 {
            fmt_prob(f, "corrupt", self.corrupt)?;
        }
        if let Some(r) = self.rate {
            write!(f, " rate {}", format_rate(r.bps))?;
            if r.packet_overhead != 0 {
                write!(f, " packetoverhead {}", r.packet_overhead)?;
            }
            if r.cell_size != 0 {
                write!(f, " cellsize {}", r.cell_size)?;
            }
            if r.cell_overhead != 0 {
                write!(f, " celloverhead {}", r.cell_overhead)?;
            }
        }
        if self.ecn {
            write!(f, " ecn")?;
        }
        if self.gap > 0 {
            write!(f, " gap {}", self.gap)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn parse_full_line() {
        let s = NetemSpec::parse(
            "rate 10mbit packetoverhead 24 delay 20ms 5ms 25% distribution normal jitter-order fifo \
             loss random 1% 10% duplicate 0.5% corrupt 0.1% reorder 25% 50% gap 5 limit 500",
        )
        .unwrap();
        assert_eq!(s.rate, Some(RateSpec { bps: 10_000_000, packet_overhead: 24, cell_size: 0, cell_overhead: 0 }));
        assert_eq!(s.delay, Duration::from_millis(20));
        assert_eq!(s.jitter, Duration::from_millis(5));
        assert_eq!(s.delay_corr, 0.25);
        assert_eq!(s.distribution, Distribution::Normal);
        assert_eq!(s.jitter_order, Some(JitterOrder::Fifo));
        assert_eq!(s.loss, LossModel::Random(Prob { p: 0.01, corr: 0.10 }));
        assert_eq!(s.duplicate, Prob { p: 0.005, corr: 0.0 });
        assert_eq!(s.corrupt.p, 0.001);
        assert_eq!(s.reorder, Prob { p: 0.25, corr: 0.5 });
        assert_eq!(s.gap, 5);
        assert_eq!(s.limit, 500);
    }

    #[test]
    fn tc_defaults_for_loss_models() {
        let s = NetemSpec::parse("loss state 2%").unwrap();
        assert_eq!(s.loss, LossModel::State { p13: 0.02, p31: 0.98, p32: 0.0, p23: 1.0, p14: 0.0 });
        let s = NetemSpec::parse("loss state 2% 25% 1%").unwrap();
        assert_eq!(s.loss, LossModel::State { p13: 0.02, p31: 0.25, p32: 0.01, p23: 1.0, p14: 0.0 });
        let s = NetemSpec::parse("loss gemodel 1%").unwrap();
        assert_eq!(s.loss, LossModel::GilbertElliott { p: 0.01, r: 0.99, one_minus_h: 1.0, one_minus_k: 0.0 });
        let s = NetemSpec::parse("loss gemodel 1% 20% 70% 0.1%").unwrap();
        assert_eq!(s.loss, LossModel::GilbertElliott { p: 0.01, r: 0.2, one_minus_h: 0.7, one_minus_k: 0.001 });
        // deprecated short form and the `drop` alias
        assert_eq!(NetemSpec::parse("drop 3%").unwrap().loss, LossModel::Random(Prob { p: 0.03, corr: 0.0 }));
        // reorder without gap: tc sets gap 1
        assert_eq!(NetemSpec::parse("delay 10ms reorder 5%").unwrap().gap, 1);
        // positional rate overheads as tc accepts them
        let r = NetemSpec::parse("rate 1mbit -4 48 5").unwrap().rate.unwrap();
        assert_eq!((r.packet_overhead, r.cell_size, r.cell_overhead), (-4, 48, 5));
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "rate 10mbit delay 20ms",
            "delay 20ms 5ms 25% distribution paretonormal jitter-order reorder loss 1% 10%",
            "delay 100ms 10ms jitter-order fifo loss state 1% 20% 3% 90% 0.5% duplicate 1% corrupt 0.1% 5%",
            "delay 1ms reorder 25% 50% gap 5 loss gemodel 1% 20% 70% 0.1% rate 1544kbit packetoverhead 14 cellsize 48 celloverhead 5",
            "limit 20",
            "delay 5ms loss 1% ecn",
            "loss gemodel 1% 20% ecn rate 10mbit",
        ] {
            let a = NetemSpec::parse(s).unwrap();
            let printed = a.to_string();
            let b = NetemSpec::parse(&printed).unwrap_or_else(|e| panic!("{printed}: {e}"));
            assert_eq!(a, b, "{s} -> {printed}");
        }
        assert_eq!(
            NetemSpec::parse("delay 20ms 5ms jitter-order fifo loss 1%").unwrap().to_string(),
            "limit 1000 delay 20ms 5ms jitter-order fifo loss random 1%"
        );
    }

    fn err(s: &str) -> String {
        NetemSpec::parse(s).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_word() {
        let e = err("delay 20ms lose 1%");
        assert!(e.contains("`lose`") && e.contains("loss"), "{e}");
        let e = err("delay 20");
        assert!(e.contains("`20`") && e.contains("20ms"), "{e}");
        let e = err("loss 1");
        assert!(e.contains("`1`") && e.contains("percentage"), "{e}");
        let e = err("loss sometimes 1%");
        assert!(e.contains("`sometimes`") && e.contains("gemodel"), "{e}");
        let e = err("rate fast");
        assert!(e.contains("`fast`") && e.contains("10mbit"), "{e}");
        let e = err("delay 20ms 5ms distribution gaussian jitter-order fifo");
        assert!(e.contains("`gaussian`") && e.contains("paretonormal"), "{e}");
        let e = err("delay 20ms 5ms jitter-order sometimes");
        assert!(e.contains("`sometimes`") && e.contains("fifo"), "{e}");
        let e = err("limit many");
        assert!(e.contains("`many`") && e.contains("packet count"), "{e}");
        let e = err("delay");
        assert!(e.contains("`delay` needs a value"), "{e}");
        let e = err("loss 1% loss 2%");
        assert!(e.contains("twice"), "{e}");
        let e = err("reorder 10%");
        assert!(e.contains("`reorder`") && e.contains("delay"), "{e}");
        let e = err("delay 10ms gap 5");
        assert!(e.contains("`gap`"), "{e}");
        let e = err("delay 10ms distribution normal");
        assert!(e.contains("`distribution`"), "{e}");
        let e = err("loss state 60% 10% 0% 100% 60%");
        assert!(e.contains("p13 + p14"), "{e}");
        let e = err("seed 5");
        assert!(e.contains("`seed`"), "{e}");
        let e = err("delay 10ms ecn");
        assert!(e.contains("`ecn`") && e.contains("without loss model"), "{e}");
        let e = err("loss 0% ecn");
        assert!(e.contains("without loss model"), "{e}");
        assert!(NetemSpec::parse("ecn loss state 1%").unwrap().ecn, "order does not matter");
    }

    #[test]
    fn jitter_needs_an_order() {
        let e = err("delay 20ms 5ms");
        assert!(e.contains("jitter-order fifo") && e.contains("jitter-order reorder"), "{e}");
        assert!(NetemSpec::parse("delay 20ms 5ms jitter-order reorder").is_ok());
        // no jitter, no requirement
        assert!(NetemSpec::parse("delay 20ms").is_ok());
        let mut s = NetemSpec { jitter: Duration::from_millis(1), ..Default::default() };
        assert!(s.validate().is_err());
        s.jitter_order = Some(JitterOrder::Fifo);
        assert!(s.validate().is_ok());
    }

    #[test]
    fn charged_bytes_follow_packet_len_2_sched_time() {
        let r = RateSpec { bps: 1, packet_overhead: 10, cell_size: 48, cell_overhead: 5 };
        // 100 + 10 = 110 -> 3 cells of 53
        assert_eq!(r.charged_bytes(100), 159);
        assert_eq!(RateSpec::new(1).charged_bytes(1500), 1500);
        let neg = RateSpec { packet_overhead: -2000, ..RateSpec::new(1) };
        assert_eq!(neg.charged_bytes(1500), 0);
    }
}
