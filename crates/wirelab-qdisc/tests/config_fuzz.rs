//! No configuration string may panic the parser, the builder or the built qdisc.
mod common;
use common::*;
use wirelab_core::{Duration, Instant, Rng};
use wirelab_qdisc::TcConfig;

const WORDS: &[&str] = &[
    "qdisc", "class", "filter", "add", "replace", "root", "parent", "handle", "classid", "flowid", "protocol", "ip", "prio", "pref",
    "1:", "1:0", "1:1", "1:10", "2:", "10:", "ffff:ffff", "1:10000", "pfifo", "bfifo", "pfifo_fast", "pfifo_head_drop", "prio", "tbf",
    "sfq", "codel", "fq_codel", "red", "htb", "cbq", "netem", "u32", "fw", "match", "u8", "u16", "u32", "at", "nexthdr+4", "limit",
    "burst", "rate", "ceil", "cburst", "latency", "peakrate", "mtu", "perturb", "quantum", "divisor", "flows", "depth", "headdrop",
    "target", "interval", "ecn", "noecn", "ce_threshold", "memory_limit", "drop_batch", "min", "max", "avpkt", "probability",
    "bandwidth", "harddrop", "default", "r2q", "direct_qlen", "bands", "priomap", "allot", "weight", "maxburst", "minburst",
    "minidle", "bounded", "isolated", "ewma", "cell", "mpu", "split", "defmap", "0", "1", "3", "7", "16", "31", "32", "255",
    "1024", "65536", "4294967295", "99999999999999999999", "-1", "0x96", "0xff", "0xffffffff", "1bit", "8bit", "1kbit",
    "10mbit", "100gbit", "1e30mbit", "0ms", "1us", "5ms", "10s", "1e9s", "1k", "64kb", "1e30", "0.5", "2%", "c0", "ff/ff",
    "10.0.0.1/8", "10.0.0.1/33", "dport", "sport", "src", "dst", "protocol", "tos", "", ";", "#",
];

#[test]
fn random_configurations_never_panic() {
    let mut r = Rng::stream(1, "config-fuzz");
    let mut built = 0;
    let pos = |w: &str| WORDS.iter().position(|x| *x == w).unwrap();
    let (opts, vals) = (&WORDS[pos("limit")..pos("0")], &WORDS[pos("0")..pos("dport")]);
    for _ in 0..20_000 {
        let lines = 1 + r.below(4) as usize;
        let mut text = String::new();
        for l in 0..lines {
            let n = 1 + r.below(12) as usize;
            let pick = |r: &mut Rng, w: &[&'static str]| w[r.below(w.len() as u64) as usize];
            let mut toks: Vec<&str> = if r.chance(0.3) {
                (0..n).map(|_| pick(&mut r, WORDS)).collect()
            } else {
                // plausible shape: a kind, then option/value pairs
                let kinds = ["htb", "sfq", "tbf", "cbq", "red", "prio", "fq_codel", "codel", "pfifo", "bfifo"];
                let mut t = vec![pick(&mut r, &kinds)];
                for _ in 0..n / 2 {
                    t.push(pick(&mut r, opts));
                    t.push(pick(&mut r, vals));
                }
                t
            };
            if l > 0 && r.chance(0.5) {
                let lead: &[&str] = &["class add parent 1: classid 1:1", "class add parent 1: classid 1:10", "qdisc add parent 1:1 handle 10:", "filter add parent 1: u32 match ip protocol 17 0xff flowid"];
                toks.insert(0, pick(&mut r, lead));
            }
            text += &toks.join(" ");
            text.push('\n');
        }
        let Ok(cfg) = TcConfig::parse(&text) else { continue };
        let Ok(mut q) = cfg.build(3, "fuzz") else { continue };
        built += 1;
        let mut d = Vec::new();
        let mut now = Instant::ZERO;
        for i in 0..50u16 {
            let mut f = FlowSpec::new([TCP, UDP, SCTP][(i % 3) as usize], i % 5);
            f.size = 40 + (i as usize * 97) % 1400;
            q.enqueue(now, ip_packet(&f, i, Some((0x96, (i % 11) as u8))), &mut d);
            if i % 3 == 0 {
                q.dequeue(now, &mut d);
            }
            now += Duration::from_micros(300);
            let _ = q.next_wakeup(now);
        }
        let _ = q.stats();
        let mut v = Vec::new();
        q.class_stats(&mut v);
    }
    eprintln!("{built} random configurations built");
    assert!(built > 100, "only {built} configurations built");
}

#[test]
fn edge_values_are_errors_not_panics() {
    for s in [
        "tbf rate 1bit burst 1k limit 1k",
        "htb default 1\n1:1 htb rate 1bit",
        "cbq bandwidth 10mbit avpkt 4294967295",
        "cbq bandwidth 10mbit avpkt 1000\nclass add parent 1: classid 1:1 cbq rate 1mbit avpkt 4294967295 minidle 4294967295 ewma 31",
        "red limit 1e30 min 1e30 max 1e30 avpkt 1",
        "red limit 100000 avpkt 1000 burst 4294967295",
        "sfq quantum 0",
        "sfq divisor 3",
        "fq_codel flows 0",
        "prio bands 1",
        "prio bands 2",
        "codel target 1e9s interval 1e9s",
    ] {
        if let Ok(c) = TcConfig::parse(s) {
            if let Ok(mut q) = c.build(0, "edge") {
                let mut d = Vec::new();
                for i in 0..20 {
                    q.enqueue(Instant::ZERO, ip_packet(&FlowSpec::new(UDP, i), i, None), &mut d);
                }
                while q.dequeue(Instant::ZERO + Duration::from_secs(100), &mut d).is_some() {}
            }
        }
    }
}
