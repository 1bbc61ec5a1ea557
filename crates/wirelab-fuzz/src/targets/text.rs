//! Text parsers: `tc` command lines (`wirelab-qdisc`), netem strings (`wirelab-link`), tc
//! units (`wirelab-core`), shim rules, analyze's `--class`, and the scenario loader (TOML
//! text and `--set` overrides → validated scenario → built simulation).
use wirelab_core::{units, Duration, Instant, Pkt, Rng};
use wirelab_link::{LinkDirection as Link, NetemSpec};
use wirelab_qdisc::TcConfig;
use wirelab_scenario::{BuildOptions, Scenario};

/// Edge numbers every text dictionary shares.
pub const NUMBERS: &[&str] = &[
    "0", "1", "-1", "2", "7", "16", "255", "256", "1024", "65535", "65536", "4294967295", "4294967296", "18446744073709551615", "18446744073709551616",
    "99999999999999999999", "1e300", "1e-300", "0.4", "0.5", "1.5", "-0", "nan", "inf", "1e20", "0x10", "0xffffffff", "+5", "1.", ".5", "1e", "",
];

/// Words of `tc(8)` command lines.
pub const TC_DICT: &[&str] = &[
    "qdisc", "class", "filter", "add", "replace", "change", "root", "parent", "handle", "classid", "flowid", "protocol", "ip", "prio", "pref", "1:",
    "1:0", "1:1", "1:10", "2:", "10:", "ffff:ffff", "1:10000", "pfifo", "bfifo", "pfifo_fast", "pfifo_head_drop", "tbf", "sfq", "codel", "fq_codel",
    "red", "htb", "cbq", "netem", "u32", "fw", "match", "u8", "u16", "at", "nexthdr+4", "limit", "burst", "rate", "ceil", "cburst", "latency",
    "peakrate", "mtu", "perturb", "quantum", "divisor", "flows", "depth", "headdrop", "target", "interval", "ecn", "noecn", "ce_threshold",
    "memory_limit", "drop_batch", "min", "max", "avpkt", "probability", "bandwidth", "harddrop", "default", "r2q", "direct_qlen", "bands", "priomap",
    "allot", "weight", "maxburst", "minburst", "minidle", "bounded", "isolated", "ewma", "cell", "mpu", "split", "defmap", "1bit", "8bit", "1kbit",
    "10mbit", "100gbit", "1e30mbit", "1e20gbit", "0ms", "1us", "5ms", "10s", "1e9s", "1e300s", "1k", "64kb", "1e30", "2%", "c0", "ff/ff",
    "10.0.0.1/8", "10.0.0.1/33", "dport", "sport", "src", "dst", "tos", ";", "#", "\n",
];

/// Words of netem strings.
pub const NETEM_DICT: &[&str] = &[
    "delay", "jitter-order", "fifo", "reorder", "distribution", "normal", "pareto", "paretonormal", "uniform", "loss", "random", "state", "gemodel",
    "ecn", "corrupt", "duplicate", "gap", "rate", "limit", "slot", "packets", "bytes", "1ms", "20ms", "0ms", "1e300s", "100us", "1ns", "1%",
    "0.5%", "100%", "101%", "25%", "1mbit", "10mbit", "1gbit", "1tbit", "1e20gbit", "8bit", "0bit", "1", "1000", "4294967296", "-1", "14", "-14",
];

/// Keys and values of scenario files.
pub const SCENARIO_DICT: &[&str] = &[
    "[scenario]", "[[node]]", "[[link]]", "[[route]]", "[[app]]", "[[event]]", "[measure]", "name", "duration", "seed", "profile", "auto_routes",
    "checksum_offload", "kind", "host", "router", "sysctl", "shim", "shim_fallback", "node", "iface", "addr", "qdisc", "tc", "netem", "l2_overhead",
    "dst", "via", "dev", "default", "port", "rate", "interval", "size", "bytes", "cc", "nodelay", "sndbuf", "rcvbuf", "window_clamp", "tos", "mss",
    "exchanges", "read_rate", "streams", "unordered", "single_homed", "jitter", "itt_dist", "replay", "preset", "count", "start", "stop", "at",
    "link", "action", "down", "up", "direction", "sample_interval", "capture", "capture_format", "queue_probe", "pcapng", "udp-cbr", "udp-sink",
    "tcp-bulk", "tcp-file", "tcp-sink", "tcp-echo", "tcp-thin", "tcp-rr", "sctp-bulk", "sctp-sink", "sctp-echo", "linux-6", "linux-2.6.37",
    "freebsd-4.10", "ssh", "wow", "\"net.ipv4.ip_forward\"", "\"net.ipv4.tcp_sack\"", "\"net.ipv4.tcp_rmem\"", "\"net.sctp.sndbuf_policy\"",
    "true", "false", "\"yes\"", "\"1ns\"", "\"1e300s\"", "\"0.4\"", "\"-1\"", "\"18446744073709551616\"", "\"10.0.0.1/24\"", "\"10.0.0.1/33\"",
    "\"/../../../tmp/X\"", "\"h1:5001\"", "\"10.0.0.2:5001\"", "\"rate 1e20gbit\"", "\"pfifo limit 4294967296\"", "=", "{", "}", "[", "]", ",",
    "\"", "\n", "#", ".", "1e300", "-1", "0", "65536", "4294967296", "18446744073709551616",
];

/// Keys and values of `--set` overrides.
pub const SET_DICT: &[&str] = &[
    "scenario.duration", "scenario.seed", "scenario.name", "link[0].netem", "link[1].netem", "link[0].a.iface", "link[3].b.iface", "link[0].a.qdisc",
    "link[0].a.addr", "link.bottleneck.netem", "node.h1.sysctl.net.ipv4.ip_forward", "node[0].sysctl.\"net.ipv4.tcp_sack\"", "app[0].bytes",
    "app[0].start", "app[0].stop", "app[0].rate", "app[1].port", "measure.sample_interval", "measure.capture", "node[0].name", "node[0].kind",
    "route[0].via", "event[0].action", "=", "\n", ".", "[", "]", "\"", "20s", "1ns", "1e300s", "true", "\"yes\"", "2", "-1", "0.4",
    "18446744073709551616", "/../../../tmp/X", "rate 1e20gbit", "pfifo limit 4294967296", "[\"h1\"]", "{ node = \"h1\" }",
];

/// Words of shim rules.
pub const SHIM_DICT: &[&str] = &["local", "remote", "enable", "disable", "default", "any", "port", "10.0.0.0/8", "10.1.1.0/24", "0.0.0.0/0", "1.2.3.4/33", "5001", "0", "65536", "-", "#", "\n"];

/// Words of analyze `--class` rules.
pub const CLASS_DICT: &[&str] = &["thin", "bulk", "=", "dport", "sport", "port", "src", "dst", ":", ",", "-", "5000", "5100", "0", "65536", "10.0.1.0/24", "10.0.0.1/33", "80"];

fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// Lines that look like real traffic for the built qdisc and link: TCP, UDP and SCTP of a
/// few flows and sizes (the SCTP ones start with a 0x96 chunk that u32 filters match).
fn packets(n: u16) -> impl Iterator<Item = Pkt> {
    (0..n).map(|i| {
        let proto = [6u8, 17, 132][(i % 3) as usize];
        let size = 40 + (i as usize * 97) % 1460;
        let mut d = vec![0u8; size];
        d[0] = 0x45;
        d[1] = (i as u8) << 2;
        d[2..4].copy_from_slice(&(size as u16).to_be_bytes());
        d[8] = 64;
        d[9] = proto;
        d[12..16].copy_from_slice(&[10, 0, 0, 1 + (i % 5) as u8]);
        d[16..20].copy_from_slice(&[10, 1, 0, 1]);
        d[20..22].copy_from_slice(&(10000 + i % 7).to_be_bytes());
        d[22..24].copy_from_slice(&5001u16.to_be_bytes());
        if proto == 132 && size > 34 {
            d[32] = 0x96;
            d[33] = (i % 11) as u8;
        }
        let mut p = Pkt::new(d);
        p.meta.id = i as u64;
        p.meta.l2_len = 14;
        p
    })
}

// ---- tc ----------------------------------------------------------------------------------

pub(super) fn tc_seeds() -> Vec<Vec<u8>> {
    [
        "htb default 10\nclass add parent 1: classid 1:10 htb rate 10mbit ceil 20mbit\nqdisc add parent 1:10 handle 10: sfq perturb 10",
        "tbf rate 1mbit burst 10kb latency 50ms peakrate 2mbit mtu 1514",
        "cbq bandwidth 10mbit avpkt 1000\nclass add parent 1: classid 1:1 cbq rate 1mbit allot 1514 prio 5 avpkt 1000 bounded",
        "prio bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\nfilter add parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:1",
        "red limit 400000 min 30000 max 90000 avpkt 1000 burst 55 probability 0.02 bandwidth 10mbit ecn",
        "fq_codel limit 10240 flows 1024 quantum 1514 target 5ms interval 100ms ecn",
        "codel limit 1000 target 5ms interval 100ms",
        "pfifo limit 100",
        "bfifo limit 64kb",
        "sfq limit 127 quantum 1514 perturb 10 divisor 1024 depth 127 flows 128 headdrop",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

pub(super) fn tc(data: &[u8]) {
    let s = text(data);
    let Ok(cfg) = TcConfig::parse(&s) else { return };
    let Ok(mut q) = cfg.build(3, "fuzz") else { return };
    let mut d = Vec::new();
    let mut now = Instant::ZERO;
    for (i, p) in packets(60).enumerate() {
        q.enqueue(now, p, &mut d);
        if i % 3 == 0 {
            q.dequeue(now, &mut d);
        }
        now += Duration::from_micros(300);
        let _ = q.next_wakeup(now);
    }
    // drain. The Qdisc contract: after a dequeue at `now` returned None with packets
    // queued, next_wakeup is a time after `now` (else the driver would never come back).
    for _ in 0..200 {
        if q.dequeue(now, &mut d).is_some() {
            continue;
        }
        if q.qlen() == 0 {
            break;
        }
        match q.next_wakeup(now) {
            Some(w) => {
                assert!(w > now, "{} packets queued, dequeue refused at {now}, wakeup at {w}", q.qlen());
                now = w;
            }
            None => panic!("{} packets queued, dequeue refused at {now} and no wakeup", q.qlen()),
        }
    }
    let _ = (q.stats(), q.qlen(), q.backlog_bytes());
    let mut v = Vec::new();
    q.class_stats(&mut v);
}

// ---- netem -------------------------------------------------------------------------------

pub(super) fn netem_seeds() -> Vec<Vec<u8>> {
    [
        "rate 10mbit delay 20ms loss 1%",
        "delay 100ms 10ms 25% jitter-order reorder distribution normal",
        "delay 10ms 5ms jitter-order fifo distribution pareto",
        "loss state 1% 10% 70% 0.1%",
        "loss gemodel 1% 10% 70% 0.1%",
        "delay 10ms reorder 25% 50% gap 5 duplicate 1% corrupt 0.1%",
        "rate 1mbit 20 100 14 limit 1000 slot 10ms 20ms packets 10 bytes 3000",
        "loss random 5% 25% ecn",
        "",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

pub(super) fn netem(data: &[u8]) {
    let s = text(data);
    let Ok(spec) = NetemSpec::parse(&s) else { return };
    let _ = spec.validate();
    // tc prints what it parsed; printing and parsing again gives the same configuration
    let shown = spec.to_string();
    let again = NetemSpec::parse(&shown).unwrap_or_else(|e| panic!("`{s}` prints as `{shown}`, which does not parse: {e}"));
    assert_eq!(again.to_string(), shown, "printing is stable");
    let mut link = Link::new(spec, Rng::stream(1, "fuzz/netem"));
    let mut now = Instant::ZERO;
    for p in packets(40) {
        if link.is_idle(now) {
            link.transmit(now, p);
        }
        now = link.poll_timeout().map_or(now, |t| t.max(now)).min(now + Duration::from_millis(5));
        while link.poll_arrival(now).is_some() {}
    }
    let _ = link.stats();
}

// ---- units -------------------------------------------------------------------------------

pub(super) fn units_seeds() -> Vec<Vec<u8>> {
    ["10mbit", "1.5s", "64kb", "1%", "125kbps", "250us", "8kbit", "0.5%", "1e-3s"].iter().map(|s| s.as_bytes().to_vec()).collect()
}

pub(super) fn units(data: &[u8]) {
    let s = text(data);
    if let Ok(r) = units::parse_rate(&s) {
        // tc prints the rate; what it prints reads back as the same rate
        assert_eq!(units::parse_rate(&units::format_rate(r)), Ok(r), "`{s}`");
    }
    if let Ok(t) = units::parse_time(&s) {
        assert_eq!(units::parse_time(&format!("{}ns", t.as_nanos())), Ok(t), "`{s}`");
    }
    if let Ok(b) = units::parse_size(&s) {
        assert_eq!(units::parse_size(&b.to_string()), Ok(b), "`{s}`");
    }
    if let Ok(p) = units::parse_percent(&s) {
        assert!((0.0..=1.0).contains(&p));
    }
}

// ---- shim rules and analyze classes --------------------------------------------------------

pub(super) fn shim_rules_seeds() -> Vec<Vec<u8>> {
    vec![b"remote enable 10.1.1.0/24\nlocal enable any port 5001\nremote default disable".to_vec(), b"local disable 10.0.0.0/8 port 21".to_vec()]
}

pub(super) fn shim_rules(data: &[u8]) {
    let s = text(data);
    if let Ok(t) = wirelab_shim::RuleTable::parse(&s) {
        let _ = format!("{t:?}");
    }
}

pub(super) fn analyze_class_seeds() -> Vec<Vec<u8>> {
    vec![b"thin=dport:5000-5100".to_vec(), b"bulk=src:10.0.1.0/24,port:80".to_vec()]
}

pub(super) fn analyze_class(data: &[u8]) {
    let _ = wirelab_analyze::ClassRule::parse(&text(data));
}

// ---- scenarios -----------------------------------------------------------------------------

/// Parses, validates and builds (without output files), then runs the simulation for at
/// most ~8000 events (a resource-guard watch stops it): building runs every semantic check
/// (profiles, sysctls, tc, netem, addresses, routes, apps), running drives the engines,
/// qdiscs, links and apps the scenario configured.
fn load_and_build(text: &str, sets: &[String]) {
    let Ok(sc) = Scenario::from_text("fuzz.toml", text, sets) else { return };
    let Ok(b) = sc.build(&BuildOptions::default()) else { return };
    let mut sim = b.sim;
    sim.set_watch(1024, Box::new(|_, events| (events >= 8192).then(|| "fuzz budget".to_string())));
    sim.run(Instant::ZERO + b.duration, Duration::ZERO, &mut |_| {});
    let r = sim.finish().expect("no captures, nothing to flush");
    if r.stopped_by_limit.is_some() {
        assert_eq!(r.events, 8192, "the watch stops the run at the first check past its budget");
    }
}

pub(super) fn scenario_seeds() -> Vec<Vec<u8>> {
    vec![QUICK.as_bytes().to_vec()]
}

pub(super) fn scenario(data: &[u8]) {
    load_and_build(&text(data), &[]);
}

/// A small scenario with every section, the base of the `--set` target.
pub const QUICK: &str = r#"[scenario]
name = "fuzz"
duration = "2s"
seed = 3

[[node]]
name = "h1"
sysctl = { "net.ipv4.tcp_sack" = 1 }

[[node]]
name = "r1"
kind = "router"

[[node]]
name = "h2"

[[link]]
name = "access"
a = { node = "h1", addr = "10.0.0.1/24" }
b = { node = "r1", addr = "10.0.0.2/24" }
netem = "rate 100mbit delay 1ms"

[[link]]
name = "bottleneck"
a = { node = "r1", iface = "eth1", addr = "10.0.1.1/24", qdisc = "pfifo limit 100" }
b = { node = "h2", addr = "10.0.1.2/24" }
netem = "rate 10mbit delay 10ms"

[[route]]
node = "h2"
dst = "10.0.0.0/24"
via = "10.0.1.1"

[[app]]
name = "bulk"
kind = "tcp-bulk"
node = "h1"
dst = "h2:5001"
bytes = "1mb"
start = "100ms"

[[app]]
name = "sink"
kind = "tcp-sink"
node = "h2"
port = 5001

[[app]]
kind = "sctp-bulk"
node = "h1"
dst = "h2:6001"
stop = "1s"

[[app]]
kind = "sctp-sink"
node = "h2"
port = 6001

[[event]]
at = "500ms"
link = "bottleneck"
action = "netem"
netem = "rate 5mbit delay 10ms"

[measure]
sample_interval = "100ms"
capture = ["r1:eth1"]
queue_probe = ["r1:eth1"]
"#;

pub(super) fn scenario_set_seeds() -> Vec<Vec<u8>> {
    [
        "scenario.duration=20s\nlink.bottleneck.netem=rate 5mbit",
        "node.h1.sysctl.net.ipv4.tcp_sack=0\napp[0].bytes=5mb",
        "link[0].a.iface=eth7\nmeasure.sample_interval=10ms",
        "scenario.seed=9\napp.bulk.start=1s",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

pub(super) fn scenario_set(data: &[u8]) {
    let sets: Vec<String> = text(data).lines().map(str::to_string).collect();
    load_and_build(QUICK, &sets);
}
