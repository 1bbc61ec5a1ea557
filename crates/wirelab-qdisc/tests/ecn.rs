//! ECN marking in the AQMs (RED, CoDel, fq_codel): a mark happens exactly where a drop
//! would (same decisions, same schedule), Not-ECT packets are still dropped, the marked
//! header's checksum stays valid (wirelab-wire's checksum code and, when installed, tshark),
//! and the counters are the ones `tc -s qdisc` prints.
mod common;
use common::*;
use std::process::Command;
use wirelab_core::{Duration, Instant, Pkt};
use wirelab_qdisc::{Qdisc, QdiscStats, TcConfig};

const NOT_ECT: u8 = 0;
const ECT1: u8 = 1;
const ECT0: u8 = 2;

fn build(script: &str, seed: u64) -> Box<dyn Qdisc> {
    TcConfig::parse(script).unwrap().build(seed, "ecn").unwrap()
}

fn pkt(flow: u16, tos: u8, id: u64) -> Pkt {
    let mut f = FlowSpec::new(UDP, flow);
    f.tos = tos;
    let mut p = ip_packet(&f, id as u16, None);
    p.meta.id = id;
    p
}

fn xstat(s: &QdiscStats, k: &str) -> i64 {
    s.xstats.iter().find(|x| x.0 == k).unwrap_or_else(|| panic!("no xstat {k} in {s:?}")).1
}

fn is_ce(p: &Pkt) -> bool {
    p.data[1] & 3 == 3
}

fn header_ok(p: &Pkt) -> bool {
    wirelab_wire::ipv4::Ipv4Packet::new_checked(&p.data[..]).is_ok_and(|h| h.verify_checksum())
}

/// Offers `n` packets of ECN field `tos` to RED, dequeuing after each arrival until the
/// backlog is at most `hold` bytes, so every arrival sees the same backlog whether RED
/// marked or dropped the previous ones. Returns (marked ids, dropped ids, stats).
fn red_run(cfg: &str, tos: u8, n: u64, hold: usize) -> (Vec<u64>, Vec<u64>, QdiscStats) {
    let mut q = build(cfg, 7);
    let (mut marked, mut dropped) = (Vec::new(), Vec::new());
    let mut d = Vec::new();
    for i in 0..n {
        let now = Instant::ZERO + Duration::from_micros(100 * i);
        q.enqueue(now, pkt(1, tos, i), &mut d);
        dropped.extend(d.drain(..).map(|p| p.meta.id));
        while q.backlog_bytes() > hold {
            let p = q.dequeue(now, &mut d).unwrap();
            assert!(header_ok(&p), "bad header after marking: {:?}", &p.data[..20]);
            if is_ce(&p) {
                marked.push(p.meta.id);
            }
        }
    }
    while let Some(p) = q.dequeue(Instant::ZERO + Duration::from_secs(100), &mut d) {
        if is_ce(&p) {
            marked.push(p.meta.id);
        }
    }
    marked.sort_unstable();
    (marked, dropped, q.stats())
}

#[test]
fn red_ecn_marks_ect_exactly_where_it_drops_not_ect() {
    let cfg = "red limit 400000 min 30000 max 90000 avpkt 1000 burst 40 probability 0.1 ecn";
    // backlog held at 33 x 1514 B = 49 962 B: between min and max, probabilistic marks only
    let (m0, d0, s0) = red_run(cfg, ECT0, 60_000, 50_000);
    let (m1, d1, _) = red_run(cfg, ECT1, 60_000, 50_000);
    let (mn, dn, sn) = red_run(cfg, NOT_ECT, 60_000, 50_000);
    assert!(mn.is_empty() && d0.is_empty() && d1.is_empty(), "ECT never dropped, Not-ECT never marked");
    assert!(dn.len() > 500, "RED picked only {} packets", dn.len());
    // the same seed and the same backlog at every arrival: the same decisions
    assert_eq!(m0, dn, "ECT(0) marks == Not-ECT drops");
    assert_eq!(m1, dn, "ECT(1) marks == Not-ECT drops");
    // tc -s: marked / early, every pick an overlimit
    assert_eq!(xstat(&s0, "marked"), m0.len() as i64);
    assert_eq!((xstat(&s0, "early"), s0.drops, s0.overlimits), (0, 0, m0.len() as u64));
    assert_eq!((xstat(&sn, "early"), xstat(&sn, "marked")), (dn.len() as i64, 0));
    assert_eq!((sn.drops, sn.overlimits), (dn.len() as u64, dn.len() as u64));
    assert_eq!(xstat(&s0, "prob_mark"), m0.len() as i64);
    // without `ecn` the ECT packets are dropped like the others
    let (mx, dx, _) = red_run(cfg.trim_end_matches(" ecn"), ECT0, 60_000, 50_000);
    assert!(mx.is_empty());
    assert_eq!(dx, dn);
}

#[test]
fn red_above_max_forced_marks_harddrop_and_nodrop() {
    // backlog held above max: every packet is a forced mark (ecn) or a forced drop
    let cfg = "red limit 400000 min 3000 max 9000 avpkt 1000 burst 5 probability 0.5";
    let (m, d, s) = red_run(&format!("{cfg} ecn"), ECT0, 3_000, 30_000);
    assert!(d.is_empty());
    let forced = xstat(&s, "forced_mark");
    assert!(forced > 2_500, "{s:?}");
    assert_eq!(xstat(&s, "marked"), m.len() as i64);
    let (_, dn, sn) = red_run(&format!("{cfg} ecn"), NOT_ECT, 3_000, 30_000);
    // (not exactly the same packets: while the queue fills, drops change the backlog)
    assert!((xstat(&sn, "forced_drop") - forced).abs() <= 5, "{} vs {forced}", xstat(&sn, "forced_drop"));
    assert_eq!(xstat(&sn, "early") as usize, dn.len());
    // harddrop: above max even ECN-capable packets are dropped
    let (mh, dh, sh) = red_run(&format!("{cfg} ecn harddrop"), ECT0, 3_000, 30_000);
    assert!((xstat(&sh, "forced_drop") - forced).abs() <= 5);
    assert_eq!(mh.len() as i64, xstat(&sh, "prob_mark"), "only probabilistic picks mark");
    assert!(dh.len() as i64 >= forced);
    // nodrop: a Not-ECT packet RED picked is queued, neither marked nor dropped
    let (mnd, dnd, snd) = red_run(&format!("{cfg} ecn nodrop"), NOT_ECT, 3_000, 30_000);
    assert!(mnd.is_empty() && dnd.is_empty(), "nodrop dropped {}", dnd.len());
    assert_eq!((xstat(&snd, "early"), xstat(&snd, "marked")), (0, 0));
    assert!(snd.overlimits > 2_500);
    let e = TcConfig::parse(&format!("{cfg} nodrop")).unwrap_err();
    assert!(e.message.contains("nodrop") && e.message.contains("ecn"), "{e}");
}

/// Serves CoDel at 10 Mbit/s from a 20 Mbit/s source of 1500-byte packets of ECN field
/// `tos`; returns the times at which CoDel acted at dequeue (a drop or a CE mark), asserting
/// that it never dropped more than one packet per dequeue.
fn codel_actions(cfg: &str, tos: u8, secs: u64) -> (Vec<Instant>, QdiscStats) {
    let mut q = build(cfg, 1);
    let gap = Duration::transmit_time(1514, 20_000_000);
    let end = Instant::ZERO + Duration::from_secs(secs);
    let (mut next_arr, mut busy) = (Instant::ZERO, Instant::ZERO);
    let mut acts = Vec::new();
    let mut d = Vec::new();
    let mut id = 0;
    while next_arr < end {
        if next_arr <= busy {
            q.enqueue(next_arr, pkt(1, tos, id), &mut d);
            d.clear(); // tail drops at enqueue are not CoDel's
            id += 1;
            next_arr += gap;
            continue;
        }
        let now = busy;
        if let Some(p) = q.dequeue(now, &mut d) {
            assert!(d.len() <= 1, "{cfg}: {} drops at one dequeue", d.len());
            if !d.is_empty() || is_ce(&p) {
                acts.push(now);
            }
            assert!(header_ok(&p));
            d.clear();
            busy = now + Duration::transmit_time(p.len() as u64, 10_000_000);
        } else {
            busy = next_arr;
        }
    }
    (acts, q.stats())
}

#[test]
fn codel_ecn_marks_on_the_drop_schedule() {
    // 12 s: count stays below (100 ms / 1.2 ms)^2 = 6944, the point where CoDel would have
    // to act more than once per dequeue
    let (drops, sd) = codel_actions("codel limit 1000", NOT_ECT, 12);
    let (marks, sm) = codel_actions("codel limit 100000 ecn", ECT0, 12);
    assert!(drops.len() > 300, "{}", drops.len());
    // one action per dequeue while interval/sqrt(count) exceeds the packet time, so the
    // control law's times are the same whether CoDel drops or marks
    assert_eq!(marks, drops);
    assert_eq!((xstat(&sm, "ecn_mark"), sm.drops), (marks.len() as i64, 0));
    assert_eq!((xstat(&sd, "ecn_mark"), sd.drops - xstat(&sd, "drop_overlimit") as u64), (0, drops.len() as u64));
    assert_eq!(xstat(&sd, "count"), xstat(&sm, "count"), "the same control-law state");
    // ecn on, Not-ECT traffic: dropped on the same schedule
    let (drops2, s2) = codel_actions("codel limit 1000 ecn", NOT_ECT, 12);
    assert_eq!(drops2, drops);
    assert_eq!(xstat(&s2, "ecn_mark"), 0);
    // control law: mark k+1 follows mark k by interval / sqrt(count = k + 1), at the next
    // dequeue (1.2 ms granularity)
    for (k, w) in marks.windows(2).enumerate().skip(5).take(200) {
        let want = 100e-3 / ((k + 1) as f64).sqrt();
        let got = (w[1] - w[0]).as_secs_f64();
        assert!((got - want).abs() < 0.02 * want + 1.3e-3, "mark {k}: {got} s after the previous, want {want}");
    }
}

/// Sends ECT(0) packets of `flows` UDP flows at `rate` each through `q` at 10 Mbit/s;
/// returns (sojourn, CE, the flow's ECN field as sent) per dequeued packet.
fn sojourns(q: &mut dyn Qdisc, flows: &[(u16, u8)], rate: u64, secs: u64) -> Vec<(Duration, bool, u8)> {
    let mut srcs: Vec<Source> = flows
        .iter()
        .map(|&(i, tos)| {
            let mut f = FlowSpec::new(UDP, i);
            f.tos = tos;
            Source::at_rate(f, rate, Instant::ZERO, Instant::ZERO + Duration::from_secs(secs))
        })
        .collect();
    let mut out = Vec::new();
    let end = Instant::ZERO + Duration::from_secs(secs);
    let mut busy = Instant::ZERO;
    let mut d = Vec::new();
    let mut tag = 0u16;
    loop {
        let next = srcs.iter().map(|s| s.next).min().unwrap();
        if next >= end {
            break;
        }
        if next <= busy || q.qlen() == 0 {
            for s in srcs.iter_mut().filter(|s| s.next == next) {
                tag = tag.wrapping_add(1);
                q.enqueue(next, ip_packet(&s.flow, tag, None), &mut d);
                s.next += s.gap;
            }
            continue;
        }
        let now = busy.max(Instant::ZERO);
        let p = q.dequeue(now, &mut d).unwrap();
        assert!(header_ok(&p));
        let sent = flows.iter().find(|f| p.ports().is_some_and(|(sp, _)| sp == 10000 + f.0)).unwrap().1;
        out.push((now.saturating_since(p.meta.enqueued), is_ce(&p), sent));
        busy = now + Duration::transmit_time(p.len() as u64, 10_000_000);
        d.clear();
    }
    out
}

#[test]
fn fq_codel_ce_threshold_marks_above_the_sojourn_threshold() {
    // target 1 s: CoDel itself never acts; ce_threshold 2 ms marks every ECT packet that
    // waited longer (CoDel time: 1024 ns units, ldelay > threshold)
    let mut q = build("fq_codel target 1s interval 2s ce_threshold 2ms", 3);
    let out = sojourns(q.as_mut(), &[(1, ECT0), (2, ECT0), (3, NOT_ECT)], 4_000_000, 5);
    let thr = (2_000u64 * 1000) >> 10;
    let mut above = 0;
    for &(soj, ce, tos) in &out {
        let enq_and_deq_units_apart = soj.as_nanos() >> 10; // within one unit of ldelay
        if tos & 3 == NOT_ECT {
            assert!(!ce);
            continue;
        }
        if enq_and_deq_units_apart > thr + 1 {
            assert!(ce, "sojourn {soj:?} above 2 ms not marked");
            above += 1;
        } else if enq_and_deq_units_apart < thr {
            assert!(!ce, "sojourn {soj:?} below 2 ms marked");
        }
    }
    assert!(above > 1000, "{above}");
    let s = q.stats();
    assert_eq!(xstat(&s, "ce_mark") as usize, out.iter().filter(|x| x.1).count());
    assert_eq!((xstat(&s, "ecn_mark"), s.drops), (0, 0));
}

#[test]
fn fq_codel_ce_threshold_selector_marks_only_matching_ds_fields() {
    // mark only ECT(1) (L4S) above 1 ms: selector 0x01, mask 0x03
    let mut q = build("fq_codel target 1s interval 2s ce_threshold 1ms ce_threshold_selector 0x01/0x03", 3);
    let out = sojourns(q.as_mut(), &[(1, ECT1), (2, ECT0)], 6_000_000, 3);
    let l4s: Vec<_> = out.iter().filter(|x| x.2 & 3 == ECT1).collect();
    let classic: Vec<_> = out.iter().filter(|x| x.2 & 3 == ECT0).collect();
    assert!(l4s.iter().filter(|x| x.0 > Duration::from_millis(2)).all(|x| x.1));
    assert!(l4s.iter().filter(|x| x.1).count() > 100);
    assert!(classic.iter().all(|x| !x.1), "ECT(0) must not match selector 1/3");
    assert!(TcConfig::parse("fq_codel ce_threshold_selector 1").unwrap_err().message.contains("mask"));
    assert!(TcConfig::parse("fq_codel ce_threshold_selector 1/300").is_err());
}

#[test]
fn codel_ce_threshold_and_ecn_together() {
    // ecn + ce_threshold: CoDel's own marks count as ecn_mark, threshold marks as ce_mark
    let (_, s) = codel_actions("codel limit 100000 ecn ce_threshold 50ms", ECT0, 10);
    assert!(xstat(&s, "ecn_mark") > 50 && xstat(&s, "ce_mark") > 1000, "{s:?}");
    assert_eq!(s.drops, 0);
}

/// Marked packets in a raw-IP pcap pass tshark's IP checksum validation.
#[test]
fn marked_headers_pass_tshark() {
    if !Command::new("tshark").arg("--version").output().is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED: tshark not installed (the byte-level checksum tests above still ran)");
        return;
    }
    let mut q = build("red limit 400000 min 3000 max 9000 avpkt 1000 burst 5 probability 0.5 ecn", 2);
    let mut d = Vec::new();
    let path = std::env::temp_dir().join(format!("wirelab-ecn-{}.pcap", std::process::id()));
    let mut w = wirelab_wire::pcap::PcapWriter::with_linktype(std::fs::File::create(&path).unwrap(), wirelab_wire::pcap::linktype::RAW).unwrap();
    let mut marked = 0;
    for i in 0..400u64 {
        let now = Instant::ZERO + Duration::from_millis(i);
        // DSCP AF41 with ECT(0) / ECT(1) alternating, so both checksum deltas occur
        q.enqueue(now, pkt(1, 0x88 | [ECT0, ECT1][i as usize % 2], i), &mut d);
        while q.backlog_bytes() > 20_000 {
            let p = q.dequeue(now, &mut d).unwrap();
            marked += is_ce(&p) as u32;
            w.write_packet(now, &p.data, p.data.len() as u32).unwrap();
        }
    }
    drop(w);
    assert!(marked > 100, "{marked}");
    let out = Command::new("tshark")
        .args(["-n", "-r", path.to_str().unwrap(), "-o", "ip.check_checksum:TRUE", "-T", "fields", "-e", "ip.dsfield.ecn", "-e", "ip.checksum.status", "-e", "ip.dsfield.dscp"])
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
    assert!(rows.len() > 300);
    assert!(rows.iter().all(|r| r[1] == "1" && r[2] == "34"), "tshark: checksum not good or DSCP changed:\n{text}");
    assert_eq!(rows.iter().filter(|r| r[0] == "3").count() as u32, marked, "tshark sees CE on the marked packets");
}
