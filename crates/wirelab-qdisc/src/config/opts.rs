//! The option lists of `tc` commands: one parser per qdisc kind (`parse_qdisc_opts`), per
//! class kind (HTB, CBQ) and for `u32` filters, and the value parsers they share (sizes,
//! rates, times and their kernel rounding). `config` turns the results into qdiscs.
use super::*;
pub(crate) fn bad(who: &str, opt: &str, v: &str, e: impl fmt::Display) -> String {
    format!("{who}: bad value `{v}` for `{opt}`: {e}")
}
pub(crate) fn u32_opt(who: &str, opt: &str, v: &str) -> R<u32> {
    parse_c_u32(v).ok_or_else(|| bad(who, opt, v, "expected an integer"))
}
pub(super) fn size_opt(who: &str, opt: &str, v: &str) -> R<u64> {
    // get_size_and_cell(): a trailing "/cell" is accepted and ignored (rate tables unused)
    let v0 = v.split('/').next().unwrap_or(v);
    parse_size(v0).map_err(|e| bad(who, opt, v, e))
}
/// A size that tc stores in a 32-bit field (`get_size()` into an `unsigned int`, which
/// refuses what does not fit): larger values are errors, never clamped.
pub(super) fn size_u32_opt(who: &str, opt: &str, v: &str) -> R<u32> {
    let x = size_opt(who, opt, v)?;
    u32::try_from(x).map_err(|_| bad(who, opt, v, "must be at most 4294967295 (tc keeps it in 32 bits)"))
}
pub(super) fn rate_opt(who: &str, opt: &str, v: &str) -> R<u64> {
    let r = parse_rate(v).map_err(|e| bad(who, opt, v, e))?;
    if r < 8 {
        return Err(bad(who, opt, v, "rate must be at least 8bit (tc counts whole bytes per second)"));
    }
    Ok(r)
}
pub(crate) fn time_opt(who: &str, opt: &str, v: &str) -> R<Duration> {
    parse_time(v).map_err(|e| bad(who, opt, v, e))
}
pub(super) fn classid_opt(who: &str, opt: &str, v: &str) -> R<ClassId> {
    ClassId::parse(v).ok_or_else(|| bad(who, opt, v, "expected a class id like 1:10"))
}
/// The options each kind accepts, in tc's spelling (for "unsupported option" errors).
pub(super) fn valid_options(who: &str) -> &'static str {
    match who {
        "pfifo" | "bfifo" | "pfifo_head_drop" => "limit",
        "pfifo_fast" => "none (pfifo_fast takes no options)",
        "prio" => "bands, priomap",
        "tbf" => "rate, burst (buffer, maxburst), limit, latency, peakrate, mtu (minburst)",
        "sfq" => "limit, perturb, quantum, divisor, flows, depth, headdrop",
        "codel" => "limit, target, interval, ce_threshold, ecn, noecn",
        "fq_codel" => "limit, flows, quantum, target, interval, ce_threshold, ce_threshold_selector, memory_limit, drop_batch, ecn, noecn",
        "red" => "limit, min, max, avpkt, burst, probability, bandwidth, ecn, harddrop, nodrop",
        "htb" => "default, r2q, direct_qlen",
        "cbq" => "bandwidth (rate), avpkt, allot, mpu, ewma, cell",
        "dualpi2" => "limit, memlimit, target, tupdate, alpha, beta, max_rtt, typical_rtt, coupling_factor, step_thresh, \
                      min_qlen_step, drop_on_overload, overflow, drop_enqueue, drop_dequeue, classic_protection, l4s_ect, \
                      any_ect, split_gso, no_split_gso",
        "fq" => "limit, flow_limit, quantum, initial_quantum, maxrate, buckets, pacing, nopacing, refill_delay, \
                 low_rate_threshold, orphan_mask, timer_slack, ce_threshold, horizon, horizon_drop, horizon_cap, \
                 offload_horizon, bands 3 priomap, weights, defrate",
        "htb class" => "rate, ceil, burst (buffer, maxburst), cburst (cbuffer, cmaxburst), prio, quantum, mtu",
        "cbq class" => "rate, bandwidth, allot, avpkt, mpu, weight, prio, cell, ewma, maxburst, minburst, minidle, \
                        bounded, borrow, isolated, sharing, split, defmap",
        "u32" => "match, flowid (classid)",
        "fw" => "flowid (classid)",
        _ => "",
    }
}

/// An option `who` does not know, naming the ones it does.
pub(crate) fn unsupported(who: &str, opt: &str) -> String {
    match valid_options(who) {
        "" => format!("{who}: unsupported option `{opt}`"),
        v => format!("{who}: unsupported option `{opt}` (valid: {v})"),
    }
}

/// The qdisc kinds [`TcConfig`] builds.
pub const QDISC_KINDS: &str = "pfifo, bfifo, pfifo_head_drop, pfifo_fast, prio, tbf, sfq, red, codel, fq_codel, fq, dualpi2, netem, htb, cbq";

pub(super) fn parse_qdisc_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    Ok(match kind {
        "pfifo" | "bfifo" | "pfifo_head_drop" => pfifo_opts(kind, a)?,
        "pfifo_fast" => pfifo_fast_opts(kind, a)?,
        "prio" => prio_opts(kind, a)?,
        "tbf" => tbf_opts(kind, a)?,
        "sfq" => sfq_opts(kind, a)?,
        "codel" => codel_opts(kind, a)?,
        "fq_codel" => fq_codel_opts(kind, a)?,
        "red" => red_opts(kind, a)?,
        "htb" => htb_opts(kind, a)?,
        "netem" => netem_opts(a)?,
        "cbq" => cbq_opts(kind, a)?,
        "fq" => QdiscOpts::Fq(FqOpts::parse(a)?),
        "dualpi2" => QdiscOpts::DualPi2(DualPi2Opts::parse(a)?),
        _ => return Err(format!("unknown or unsupported qdisc kind `{kind}` (supported: {QDISC_KINDS})")),
    })
}

/// iproute2's `get_time()`: a time as whole microseconds (truncated), at most `u32::MAX`.
pub(crate) fn time_us_opt(who: &str, opt: &str, v: &str) -> R<u64> {
    let us = time_opt(who, opt, v)?.as_micros();
    if us > u32::MAX as u64 {
        return Err(bad(who, opt, v, "at most 4294967295us (about 71 minutes)"));
    }
    Ok(us)
}

/// A `tc` rate as bytes/s in 32 bits (`get_rate()`).
pub(crate) fn rate32_opt(who: &str, opt: &str, v: &str) -> R<u64> {
    let bytes = parse_rate(v).map_err(|e| bad(who, opt, v, e))? / 8;
    if bytes > u32::MAX as u64 {
        return Err(bad(who, opt, v, "at most 34359738360bit (4294967295 bytes/s; tc passes 32 bits)"));
    }
    Ok(bytes)
}


pub(super) fn ewma_opt(v: &str) -> R<u8> {
    let n = parse_c_u32(v).ok_or_else(|| bad("cbq", "ewma", v, "expected an integer"))?;
    if n > 31 {
        return Err("cbq: ewma_log must be < 32".into());
    }
    Ok(n as u8)
}
pub(super) fn cell_opt(v: &str) -> R<u8> {
    let c = parse_size(v).map_err(|e| bad("cbq", "cell", v, e))?;
    if !c.is_power_of_two() || c > 1 << 31 {
        return Err("cbq: cell must be 2^n".into());
    }
    Ok(c.trailing_zeros() as u8)
}

pub(super) fn parse_cbq_class_opts(a: &mut Args) -> R<CbqClassOpts> {
    let w = "cbq class";
    let mut o_ = CbqClassOpts::default();
    let u32v = |a: &mut Args, o: &str| -> R<u32> { u32_opt(w, o, a.val(w, o)?) };
    let sz = |a: &mut Args, o: &str| -> R<u32> { size_u32_opt(w, o, a.val(w, o)?) };
    while let Some(o) = a.next() {
        match o {
            "rate" => o_.rate = Some(rate_opt(w, o, a.val(w, o)?)?),
            "bandwidth" => o_.bandwidth = Some(rate_opt(w, o, a.val(w, o)?)?),
            "minidle" => {
                o_.minidle = Some(u32v(a, o)?);
                o_.lss_given = true;
            }
            "minburst" => {
                o_.minburst = Some(u32v(a, o)?);
                o_.lss_given = true;
            }
            "maxburst" => {
                o_.maxburst = Some(u32v(a, o)?);
                o_.lss_given = true;
            }
            "bounded" | "borrow" => {
                o_.bounded = o == "bounded";
                o_.lss_given = true;
            }
            "isolated" | "sharing" => {
                o_.isolated = o == "isolated";
                o_.lss_given = true;
            }
            "ewma" => {
                o_.ewma = Some(ewma_opt(a.val(w, o)?)?);
                o_.lss_given = true;
            }
            "cell" => o_.cell = Some(cell_opt(a.val(w, o)?)?),
            "prio" => {
                let p = u32v(a, o)?;
                if p > TC_CBQ_MAXPRIO as u32 {
                    return Err(format!("cbq class: `prio` must be a number in the range 1...{TC_CBQ_MAXPRIO}"));
                }
                o_.prio = Some(p as u8);
            }
            "allot" => o_.allot = Some(sz(a, o)?),
            "avpkt" => {
                o_.avpkt = Some(sz(a, o)?);
                o_.lss_given = true;
            }
            "mpu" => o_.mpu = sz(a, o)?,
            "weight" => o_.weight = Some(size_opt(w, o, a.val(w, o)?)?),
            "split" => o_.split = Some(classid_opt(w, o, a.val(w, o)?)?),
            "defmap" => {
                let v = a.val(w, o)?;
                let (m, c) = v.split_once('/').unwrap_or((v, "ffffffff"));
                let m = u32::from_str_radix(m.trim_start_matches("0x"), 16).map_err(|_| bad(w, o, v, "expected MASK32[/CHANGE] in hex"))?;
                let c = u32::from_str_radix(c.trim_start_matches("0x"), 16).map_err(|_| bad(w, o, v, "expected MASK32[/CHANGE] in hex"))?;
                o_.defmap = Some(m & c);
            }
            _ => return Err(unsupported(w, o)),
        }
    }
    let Some(rate) = o_.rate else {
        return Err("cbq class: `rate` is required".into());
    };
    if (o_.maxburst.is_some() || o_.minburst.is_some()) && (o_.avpkt.unwrap_or(0) == 0 || o_.bandwidth.is_none()) {
        return Err("cbq class: `avpkt`, `bandwidth` and `rate` are required for maxburst/minburst".into());
    }
    if !o_.lss_given {
        return Err("cbq class: link-sharing parameters missing (give at least `avpkt`)".into());
    }
    let avpkt = o_.avpkt.unwrap_or(0);
    let allot = o_.allot.unwrap_or(0).max(avpkt.saturating_mul(3) / 2);
    if allot == 0 {
        return Err("cbq class: `allot` is required to set WRR parameters (or give `avpkt`)".into());
    }
    let _ = rate;
    Ok(o_)
}

pub(super) fn parse_htb_class_opts(a: &mut Args) -> R<HtbClassOpts> {
    let w = "htb class";
    let mut o_ = HtbClassOpts { rate: 0, ceil: None, burst: None, cburst: None, prio: 0, quantum: None, mtu: 1600 };
    while let Some(o) = a.next() {
        match o {
            "rate" => o_.rate = rate_opt(w, o, a.val(w, o)?)?,
            "ceil" => o_.ceil = Some(rate_opt(w, o, a.val(w, o)?)?),
            "burst" | "buffer" | "maxburst" => o_.burst = Some(size_opt(w, o, a.val(w, o)?)?),
            "cburst" | "cbuffer" | "cmaxburst" => o_.cburst = Some(size_opt(w, o, a.val(w, o)?)?),
            "prio" => o_.prio = u32_opt(w, o, a.val(w, o)?)?,
            "quantum" => o_.quantum = Some(u32_opt(w, o, a.val(w, o)?)?),
            "mtu" => o_.mtu = u32_opt(w, o, a.val(w, o)?)?,
            _ => return Err(unsupported(w, o)),
        }
    }
    if o_.rate == 0 {
        return Err("htb class: `rate` is required".into());
    }
    Ok(o_)
}

pub(super) fn parse_u32_filter(a: &mut Args) -> R<U32> {
    let w = "u32";
    let mut f = U32::new(ClassId::UNSPEC);
    let mut have_flowid = false;
    let num = |a: &mut Args, what: &str, max: u32| -> R<u32> {
        let v = a.val(w, what)?;
        let n = parse_c_u32(v).ok_or_else(|| bad(w, what, v, "expected a number"))?;
        if n > max {
            return Err(bad(w, what, v, "value too large"));
        }
        Ok(n)
    };
    while let Some(o) = a.next() {
        match o {
            "match" => {
                let sel = a.val(w, "match")?;
                match sel {
                    "ip" => {
                        let field = a.val(w, "match ip")?;
                        match field {
                            "protocol" => f = f.match_u8(num(a, "ip protocol", 0xff)? as u8, num(a, "ip protocol mask", 0xff)? as u8, 9),
                            "tos" | "dsfield" => f = f.match_u8(num(a, "ip tos", 0xff)? as u8, num(a, "ip tos mask", 0xff)? as u8, 1),
                            "ihl" => f = f.match_u8(num(a, "ip ihl", 0xff)? as u8, num(a, "ip ihl mask", 0xff)? as u8, 0),
                            "icmp_type" => f = f.match_u8(num(a, "ip icmp_type", 0xff)? as u8, num(a, "mask", 0xff)? as u8, 20),
                            "icmp_code" => f = f.match_u8(num(a, "ip icmp_code", 0xff)? as u8, num(a, "mask", 0xff)? as u8, 21),
                            "sport" => f = f.match_u16(num(a, "ip sport", 0xffff)? as u16, num(a, "ip sport mask", 0xffff)? as u16, 20),
                            "dport" => f = f.match_u16(num(a, "ip dport", 0xffff)? as u16, num(a, "ip dport mask", 0xffff)? as u16, 22),
                            "src" | "dst" => {
                                let v = a.val(w, field)?;
                                let (addr, plen) = match v.split_once('/') {
                                    Some((ad, l)) => (ad, l.parse::<u32>().ok().filter(|&l| l <= 32).ok_or_else(|| bad(w, field, v, "bad prefix length"))?),
                                    None => (v, 32),
                                };
                                let ip: std::net::Ipv4Addr = addr.parse().map_err(|_| bad(w, field, v, "expected A.B.C.D[/len]"))?;
                                let mask = if plen == 0 { 0 } else { u32::MAX << (32 - plen) };
                                f = f.match_u32(u32::from(ip), mask, if field == "src" { 12 } else { 16 });
                            }
                            _ => return Err(format!("u32: unsupported match `ip {field}`")),
                        }
                    }
                    "u8" | "u16" | "u32" => {
                        let max = match sel {
                            "u8" => 0xff,
                            "u16" => 0xffff,
                            _ => u32::MAX,
                        };
                        let val = num(a, sel, max)?;
                        let mask = num(a, "mask", max)?;
                        match a.next() {
                            Some("at") => {}
                            Some(x) => return Err(format!("u32: expected `at OFFSET` after `match {sel}`, got `{x}`")),
                            None => return Err(format!("u32: `match {sel}` needs `at OFFSET`")),
                        }
                        let offv = a.val(w, "at")?;
                        if offv.starts_with("nexthdr") {
                            return Err("u32: `at nexthdr+N` offsets are not supported".into());
                        }
                        let off = parse_c_u32(offv).ok_or_else(|| bad(w, "at", offv, "expected a byte offset"))?;
                        match sel {
                            "u8" => f = f.match_u8(val as u8, mask as u8, off),
                            "u16" => {
                                if off % 2 != 0 {
                                    return Err(format!("u32: `match u16 … at {off}`: offset must be even"));
                                }
                                f = f.match_u16(val as u16, mask as u16, off)
                            }
                            _ => {
                                if off % 4 != 0 {
                                    return Err(format!("u32: `match u32 … at {off}`: offset must be a multiple of 4"));
                                }
                                f = f.match_u32(val, mask, off)
                            }
                        }
                    }
                    _ => return Err(format!("u32: unsupported match selector `{sel}`")),
                }
            }
            "flowid" | "classid" => {
                f.classid = classid_opt(w, o, a.val(w, o)?)?;
                have_flowid = true;
            }
            _ => return Err(unsupported(w, o)),
        }
    }
    if !have_flowid {
        return Err("u32: missing `flowid`".into());
    }
    Ok(f)
}

/// `pfifo / bfifo / pfifo_head_drop` options.
fn pfifo_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    let w = kind;
    Ok({
        let fk = match kind {
            "pfifo" => FifoKind::Pfifo,
            "bfifo" => FifoKind::Bfifo,
            _ => FifoKind::PfifoHeadDrop,
        };
        let mut limit = None;
        while let Some(o) = a.next() {
            match o {
                "limit" => limit = Some(size_u32_opt(w, o, a.val(w, o)?)? as u64),
                _ => return Err(unsupported(w, o)),
            }
        }
        QdiscOpts::Fifo { kind: fk, limit }
    })
}

/// `pfifo_fast` options.
fn pfifo_fast_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    let w = kind;
    Ok({
        if let Some(o) = a.next() {
            return Err(unsupported(w, o));
        }
        QdiscOpts::PfifoFast
    })
}

/// `prio` options.
fn prio_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    let w = kind;
    Ok({
        let mut bands = 3usize;
        let mut priomap = DEFAULT_PRIOMAP;
        let mut map_given = false;
        while let Some(o) = a.next() {
            match o {
                "bands" => bands = u32_opt(w, o, a.val(w, o)?)? as usize,
                "priomap" => {
                    let mut k = 0;
                    while let Some(v) = a.peek().and_then(parse_c_u32) {
                        if k >= 16 {
                            return Err("prio: more than 16 `priomap` elements".to_string());
                        }
                        priomap[k] = v.min(255) as u8;
                        k += 1;
                        a.next();
                    }
                    map_given = true;
                }
                _ => return Err(unsupported(w, o)),
            }
        }
        if !(2..=TCQ_PRIO_BANDS).contains(&bands) {
            return Err(format!("prio: `bands` must be 2..=16, got {bands}"));
        }
        if let Some(b) = priomap.iter().find(|&&b| b as usize >= bands) {
            return Err(format!("prio: illegal `priomap` element {b} (bands = {bands}){}", if map_given { "" } else { "; give a priomap for fewer than 3 bands" }));
        }
        QdiscOpts::Prio { bands, priomap }
    })
}

/// `tbf` options.
fn tbf_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    let w = kind;
    Ok({
        let (mut rate, mut burst, mut limit, mut latency, mut peakrate, mut mtu) = (None, None, None, None, None, None);
        while let Some(o) = a.next() {
            match o {
                "rate" => rate = Some(rate_opt(w, o, a.val(w, o)?)?),
                "burst" | "buffer" | "maxburst" => burst = Some(size_opt(w, o, a.val(w, o)?)?),
                "limit" => {
                    if latency.is_some() {
                        return Err("tbf: `limit` and `latency` are mutually exclusive".into());
                    }
                    limit = Some(size_opt(w, o, a.val(w, o)?)?)
                }
                "latency" => {
                    if limit.is_some() {
                        return Err("tbf: `limit` and `latency` are mutually exclusive".into());
                    }
                    latency = Some(time_opt(w, o, a.val(w, o)?)?)
                }
                "peakrate" => peakrate = Some(rate_opt(w, o, a.val(w, o)?)?),
                "mtu" | "minburst" => mtu = Some(size_opt(w, o, a.val(w, o)?)?),
                _ => return Err(unsupported(w, o)),
            }
        }
        let (Some(rate), Some(burst)) = (rate, burst) else {
            return Err("tbf: both `rate` and `burst` are required".into());
        };
        if burst == 0 {
            return Err("tbf: `burst` must be positive".into());
        }
        if limit.is_none() && latency.is_none() {
            return Err("tbf: either `limit` or `latency` is required".into());
        }
        if peakrate.is_some() && mtu.is_none() {
            return Err("tbf: when `peakrate` is specified, `mtu` must also be specified".into());
        }
        QdiscOpts::Tbf { rate, burst, limit, latency, peakrate, mtu }
    })
}

/// `sfq` options.
fn sfq_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    let w = kind;
    Ok({
        let mut o_ = SfqOpts::default();
        while let Some(o) = a.next() {
            match o {
                "limit" => o_.limit = Some(u32_opt(w, o, a.val(w, o)?)?),
                "perturb" => {
                    let v = a.val(w, o)?;
                    o_.perturb_secs = match parse_c_u32(v) {
                        Some(s) => s,
                        None => {
                            let d = time_opt(w, o, v)?;
                            if d.as_nanos() % 1_000_000_000 != 0 {
                                return Err(bad(w, o, v, "perturb is in whole seconds"));
                            }
                            (d.as_nanos() / 1_000_000_000) as u32
                        }
                    }
                }
                "quantum" => o_.quantum = Some(size_u32_opt(w, o, a.val(w, o)?)?),
                "divisor" => o_.divisor = Some(u32_opt(w, o, a.val(w, o)?)?),
                "flows" => o_.flows = Some(u32_opt(w, o, a.val(w, o)?)?),
                "depth" => o_.depth = Some(u32_opt(w, o, a.val(w, o)?)?),
                "headdrop" => o_.headdrop = true,
                _ => return Err(unsupported(w, o)),
            }
        }
        QdiscOpts::Sfq(o_)
    })
}

/// `codel` options.
fn codel_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    let w = kind;
    Ok({
        let (mut limit, mut target, mut interval, mut ecn, mut ce) = (1000, None, None, false, None);
        while let Some(o) = a.next() {
            match o {
                "limit" => limit = u32_opt(w, o, a.val(w, o)?)?,
                "target" => target = Some(time_opt(w, o, a.val(w, o)?)?),
                "interval" => interval = Some(time_opt(w, o, a.val(w, o)?)?),
                "ce_threshold" => ce = Some(time_opt(w, o, a.val(w, o)?)?),
                "ecn" => ecn = true,
                "noecn" => ecn = false,
                _ => return Err(unsupported(w, o)),
            }
        }
        QdiscOpts::Codel { limit, target, interval, ecn, ce_threshold: ce }
    })
}

/// `fq_codel` options.
fn fq_codel_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    let w = kind;
    Ok({
        let (mut limit, mut flows, mut quantum, mut target, mut interval, mut ecn, mut ce, mut mem, mut batch, mut sel) = (None, None, None, None, None, None, None, None, None, None);
        while let Some(o) = a.next() {
            match o {
                "limit" => limit = Some(u32_opt(w, o, a.val(w, o)?)?),
                "flows" => flows = Some(u32_opt(w, o, a.val(w, o)?)?),
                "quantum" => quantum = Some(u32_opt(w, o, a.val(w, o)?)?),
                "target" => target = Some(time_opt(w, o, a.val(w, o)?)?),
                "interval" => interval = Some(time_opt(w, o, a.val(w, o)?)?),
                "ce_threshold" => ce = Some(time_opt(w, o, a.val(w, o)?)?),
                "ce_threshold_selector" => {
                    let v = a.val(w, o)?;
                    let (val, mask) = v.split_once('/').ok_or_else(|| bad(w, o, v, "missing mask: expected VALUE/MASK like 0x01/0x03"))?;
                    let byte = |x: &str| parse_c_u32(x).filter(|&n| n <= 255).map(|n| n as u8);
                    let mask = byte(mask).ok_or_else(|| bad(w, o, v, "illegal mask: expected a byte 0..=255"))?;
                    let val = byte(val).ok_or_else(|| bad(w, o, v, "illegal value: expected a byte 0..=255"))?;
                    sel = Some((val, mask));
                }
                "memory_limit" => mem = Some(size_opt(w, o, a.val(w, o)?)?),
                "drop_batch" => batch = Some(u32_opt(w, o, a.val(w, o)?)?),
                "ecn" => ecn = Some(true),
                "noecn" => ecn = Some(false),
                _ => return Err(unsupported(w, o)),
            }
        }
        if flows == Some(0) || flows.is_some_and(|f| f > 65536) {
            return Err("fq_codel: `flows` must be 1..=65536".into());
        }
        QdiscOpts::FqCodel { limit, flows, quantum, target, interval, ecn, ce_threshold: ce, ce_selector: sel, memory_limit: mem, drop_batch: batch }
    })
}

/// `red` options.
fn red_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    let w = kind;
    Ok({
        let (mut limit, mut min, mut max, mut avpkt, mut burst, mut prob, mut bw, mut ecn, mut harddrop, mut nodrop) = (0, 0, 0, 0, 0u32, 0.02f64, 10_000_000u64, false, false, false);
        while let Some(o) = a.next() {
            match o {
                "limit" => limit = size_opt(w, o, a.val(w, o)?)?,
                "min" => min = size_opt(w, o, a.val(w, o)?)?,
                "max" => max = size_opt(w, o, a.val(w, o)?)?,
                "avpkt" => avpkt = size_opt(w, o, a.val(w, o)?)?,
                "burst" => burst = u32_opt(w, o, a.val(w, o)?)?,
                "bandwidth" => bw = rate_opt(w, o, a.val(w, o)?)?,
                "probability" => {
                    let v = a.val(w, o)?;
                    prob = v.parse::<f64>().ok().filter(|p| (0.0..=1.0).contains(p) && *p > 0.0).ok_or_else(|| bad(w, o, v, "expected a probability in (0, 1]"))?;
                }
                "ecn" => ecn = true,
                "harddrop" => harddrop = true,
                "nodrop" => nodrop = true,
                _ => return Err(unsupported(w, o)),
            }
        }
        if limit == 0 || avpkt == 0 {
            return Err("red: required parameter (`limit`, `avpkt`) is missing".into());
        }
        // Sally Floyd's recommendations, as q_red.c applies them
        if max == 0 {
            max = if min != 0 { min.saturating_mul(3) } else { limit / 4 };
        }
        if min == 0 {
            min = max / 3;
        }
        if burst == 0 {
            burst = (min.saturating_mul(2).saturating_add(max) / avpkt.saturating_mul(3)).min(u32::MAX as u64) as u32;
        }
        if max < min {
            return Err(format!("red: `max` ({max}) is below `min` ({min})"));
        }
        if nodrop && !ecn {
            // red_validate_flags()
            return Err("red: `nodrop` mode is only meaningful with `ecn`".into());
        }
        QdiscOpts::Red { limit, min, max, avpkt, burst, probability: prob, bandwidth: bw, ecn, harddrop, nodrop }
    })
}

/// `htb` options.
fn htb_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    let w = kind;
    Ok({
        let (mut defcls, mut r2q, mut dq) = (0u16, 10u32, None);
        while let Some(o) = a.next() {
            match o {
                "default" => {
                    let v = a.val(w, o)?;
                    // get_u32(&opt.defcls, *argv, 16): hexadecimal
                    defcls = u16::from_str_radix(v.trim_start_matches("0x"), 16).map_err(|_| bad(w, o, v, "expected a hex class minor"))?;
                }
                "r2q" => r2q = u32_opt(w, o, a.val(w, o)?)?,
                "direct_qlen" => dq = Some(u32_opt(w, o, a.val(w, o)?)?),
                _ => return Err(unsupported(w, o)),
            }
        }
        if r2q == 0 {
            return Err("htb: `r2q` must be positive".into());
        }
        QdiscOpts::Htb { defcls, r2q, direct_qlen: dq }
    })
}

/// `netem` options.
fn netem_opts(a: &mut Args) -> R<QdiscOpts> {
    // the rest of the line is netem's own vocabulary (tc-netem(8))
    let rest = a.t[a.i..].join(" ");
    a.i = a.t.len();
    Ok(QdiscOpts::Netem(NetemQdisc::parse_spec(&rest)?))
}

/// `cbq` options.
fn cbq_opts(kind: &str, a: &mut Args) -> R<QdiscOpts> {
    let w = kind;
    Ok({
        let (mut bw, mut avpkt, mut ewma, mut allot, mut mpu, mut cell) = (0u64, 0u32, TC_CBQ_DEF_EWMA, 0u32, 0u32, None);
        while let Some(o) = a.next() {
            match o {
                "bandwidth" | "rate" => bw = rate_opt(w, o, a.val(w, o)?)?,
                "avpkt" => avpkt = size_u32_opt(w, o, a.val(w, o)?)?,
                "allot" => allot = size_u32_opt(w, o, a.val(w, o)?)?,
                "mpu" => mpu = size_u32_opt(w, o, a.val(w, o)?)?,
                "ewma" => ewma = ewma_opt(a.val(w, o)?)?,
                "cell" => cell = Some(cell_opt(a.val(w, o)?)?),
                _ => return Err(unsupported(w, o)),
            }
        }
        if bw == 0 {
            return Err("cbq: `bandwidth` is a required parameter".into());
        }
        if avpkt == 0 {
            return Err("cbq: `avpkt` is required".into());
        }
        QdiscOpts::Cbq { bandwidth: bw, avpkt, ewma, allot: allot.max(avpkt.saturating_mul(3) / 2), mpu, cell }
    })
}
