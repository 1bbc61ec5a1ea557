//! `wirelab bench`: the dumbbell yardstick.
//!
//! N senders → router → bottleneck → router → N receivers; 1 Gbit/s, 1 ms access links,
//! a 20 ms one-way bottleneck whose pfifo holds one bandwidth-delay product (at least 100
//! packets). Each sender runs a greedy CUBIC bulk transfer (`tcp-bulk`, linux-6 profile)
//! to its own sink; starts are spread over the first 100 ms. `--cc` picks another module
//! for every host (`net.ipv4.tcp_congestion_control`); with `dctcp` the bottleneck is an
//! ECN-marking RED at K packets instead (DCTCP's switch: `min` ≈ `max` = K, K = max(20,
//! BDP/7) after the DCTCP paper), unless `--qdisc` names one. `--udp` keeps the old UDP
//! CBR load (1.2 × bottleneck / N per source) for comparison.
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::time::Instant as WallInstant;
use wirelab_core::{Duration, Instant};
use wirelab_scenario::{BuildOptions, Scenario};

/// One benchmark case's figures.
#[derive(Serialize, Debug, Clone)]
pub struct BenchRow {
    /// Sender/receiver pairs.
    pub flows: u32,
    /// Congestion control of the TCP hosts (`udp` for the UDP load).
    pub cc: String,
    /// Bottleneck rate.
    pub rate: String,
    /// Simulated seconds.
    pub sim_seconds: f64,
    /// Wall seconds.
    pub wall_seconds: f64,
    /// Events processed.
    pub events: u64,
    /// Events per wall second.
    pub events_per_s: f64,
    /// Simulated seconds per wall second.
    pub sim_per_wall: f64,
    /// Packets delivered to receivers per wall second (TCP: data segments).
    pub delivered_pkts_per_s: f64,
    /// Wall nanoseconds per delivered packet.
    pub ns_per_delivered: f64,
    /// Aggregate goodput at the receivers (bit/s).
    pub goodput_bps: f64,
    /// Mean TCP socket memory per flow at the end of the run (bytes, both ends).
    pub socket_bytes_per_flow: f64,
    /// Peak resident memory (MiB) of the process so far.
    pub peak_rss_mib: f64,
}

/// The bottleneck qdisc the bench uses when `--qdisc` is not given: a pfifo of one BDP at
/// 42 ms RTT in 1514-byte frames (at least 100 packets); for `dctcp` an ECN-marking RED of
/// the same size that marks above K packets (the DCTCP paper's switch marks on the
/// instantaneous queue above K, K > C·RTT/7, 20 packets at 1 Gbit/s: here K = max(20,
/// ⌈BDP/7⌉); RED's `burst K` gives the fastest average, Wlog 1; `max` = `min` + 1 byte
/// because tc wants min < max).
pub fn default_bottleneck_qdisc(rate: &str, cc: &str) -> String {
    let bps = wirelab_core::units::parse_rate(rate).unwrap_or(10_000_000);
    let bdp = (bps as f64 * 0.042 / 8.0 / 1514.0).ceil() as u64;
    let limit = bdp.max(100);
    if cc == "dctcp" {
        let k = bdp.div_ceil(7).max(20);
        format!("red limit {} min {} max {} avpkt 1514 burst {k} probability 1 ecn", limit * 1514, k * 1514, k * 1514 + 1)
    } else {
        format!("pfifo limit {limit}")
    }
}

/// The TCP dumbbell scenario text for `n` pairs: `cc` on every host, `qdisc` (tc syntax)
/// at the bottleneck's sending end.
pub fn tcp_dumbbell_toml(n: u32, rate: &str, duration_s: f64, cc: &str, qdisc: &str) -> String {
    let mut s = format!("[scenario]\nname = \"bench-tcp-dumbbell-{n}\"\nduration = \"{duration_s}s\"\nseed = 1\n\n[measure]\nsample_interval = \"{duration_s}s\"\n\n");
    s += "[[node]]\nname = \"r1\"\nkind = \"router\"\n\n[[node]]\nname = \"r2\"\nkind = \"router\"\n\n";
    let sysctl = if cc == "cubic" { String::new() } else { format!("sysctl = {{ \"net.ipv4.tcp_congestion_control\" = \"{cc}\" }}\n") };
    for i in 0..n {
        s += &format!("[[node]]\nname = \"s{i}\"\n{sysctl}\n[[node]]\nname = \"d{i}\"\n{sysctl}\n");
    }
    s += &format!("[[link]]\nname = \"bottleneck\"\na = {{ node = \"r1\", qdisc = \"{qdisc}\" }}\nb = {{ node = \"r2\" }}\nnetem = \"rate {rate} delay 20ms\"\n\n");
    for i in 0..n {
        s += &format!("[[link]]\na = {{ node = \"s{i}\" }}\nb = {{ node = \"r1\" }}\nnetem = \"rate 1gbit delay 500us\"\n\n");
        s += &format!("[[link]]\na = {{ node = \"r2\" }}\nb = {{ node = \"d{i}\" }}\nnetem = \"rate 1gbit delay 500us\"\n\n");
    }
    for i in 0..n {
        let start_us = 100_000u64 * i as u64 / n as u64;
        s += &format!("[[app]]\nkind = \"tcp-bulk\"\nnode = \"s{i}\"\ndst = \"d{i}:5001\"\nstart = \"{start_us}us\"\n\n");
        s += &format!("[[app]]\nkind = \"tcp-sink\"\nnode = \"d{i}\"\nport = 5001\n\n");
    }
    s
}

/// The UDP dumbbell scenario text for `n` pairs.
pub fn dumbbell_toml(n: u32, rate: &str, duration_s: f64) -> String {
    let bps = wirelab_core::units::parse_rate(rate).unwrap_or(10_000_000);
    let per = (bps as f64 * 1.2 / n as f64).max(1000.0);
    let mut s = format!("[scenario]\nname = \"bench-dumbbell-{n}\"\nduration = \"{duration_s}s\"\nseed = 1\n\n[measure]\nsample_interval = \"1s\"\n\n");
    s += "[[node]]\nname = \"r1\"\nkind = \"router\"\n\n[[node]]\nname = \"r2\"\nkind = \"router\"\n\n";
    for i in 0..n {
        s += &format!("[[node]]\nname = \"s{i}\"\n\n[[node]]\nname = \"d{i}\"\n\n");
    }
    s += &format!("[[link]]\nname = \"bottleneck\"\na = {{ node = \"r1\", qdisc = \"pfifo limit 100\" }}\nb = {{ node = \"r2\" }}\nnetem = \"rate {rate} delay 20ms\"\n\n");
    for i in 0..n {
        s += &format!("[[link]]\na = {{ node = \"s{i}\" }}\nb = {{ node = \"r1\" }}\nnetem = \"rate 1gbit delay 1ms\"\n\n");
        s += &format!("[[link]]\na = {{ node = \"r2\" }}\nb = {{ node = \"d{i}\" }}\nnetem = \"rate 1gbit delay 1ms\"\n\n");
    }
    for i in 0..n {
        s += &format!("[[app]]\nkind = \"udp-cbr\"\nnode = \"s{i}\"\ndst = \"d{i}:5000\"\nrate = \"{}bit\"\nsize = 1472\nstart = \"{}ns\"\n\n", per.round() as u64, start_ns(i, n, per));
        s += &format!("[[app]]\nkind = \"udp-sink\"\nnode = \"d{i}\"\nport = 5000\n\n");
    }
    s
}

/// Start offsets spread evenly over one datagram interval, so the N sources do not all
/// hit the bottleneck in the same instant.
fn start_ns(i: u32, n: u32, per_bps: f64) -> u64 {
    let interval_ns = 1500.0 * 8.0 / per_bps * 1e9;
    (interval_ns * i as f64 / n as f64) as u64
}

/// Peak RSS of this process in MiB (Linux `VmHWM`), 0 elsewhere.
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<f64>().ok()))
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// What a bench case runs: transport and bottleneck.
#[derive(Clone, Debug)]
pub struct BenchLoad {
    /// UDP CBR sources instead of TCP bulk flows.
    pub udp: bool,
    /// Congestion-control module of every TCP host (`cubic`, `bbr`, `dctcp`, …).
    pub cc: String,
    /// Bottleneck qdisc in tc syntax; `None` = [`default_bottleneck_qdisc`].
    pub qdisc: Option<String>,
}

impl Default for BenchLoad {
    fn default() -> Self {
        BenchLoad { udp: false, cc: "cubic".into(), qdisc: None }
    }
}

/// Runs one case.
pub fn bench_case(n: u32, rate: &str, duration_s: f64, load: &BenchLoad) -> Result<BenchRow, String> {
    let text = if load.udp {
        dumbbell_toml(n, rate, duration_s)
    } else {
        let q = load.qdisc.clone().unwrap_or_else(|| default_bottleneck_qdisc(rate, &load.cc));
        tcp_dumbbell_toml(n, rate, duration_s, &load.cc, &q)
    };
    let sc = Scenario::from_text("<bench>", &text, &[]).map_err(|e| e.to_string())?;
    let built = sc.build(&BuildOptions::default()).map_err(|e| e.to_string())?;
    let mut sim = built.sim;
    let wall = WallInstant::now();
    sim.run(Instant::ZERO + built.duration, Duration::ZERO, &mut |_| {});
    let w = wall.elapsed().as_secs_f64().max(1e-9);
    let mut sock_bytes = 0usize;
    for node in 0..(2 + 2 * n) {
        if let Some(st) = sim.stack(node) {
            sock_bytes += st.tcp().sockets().filter_map(|s| st.tcp().socket_memory(s)).sum::<usize>();
        }
    }
    let r = sim.finish().map_err(|e| e.to_string())?;
    // packets delivered to the receiving hosts d0…dN-1 (data segments for TCP)
    let delivered: u64 = r.nodes.iter().filter(|x| x.node.starts_with('d')).map(|x| x.counters.delivered).sum();
    let goodput: f64 = r.flows.iter().map(|f| f.rx_bytes as f64 * 8.0).sum::<f64>() / r.sim_seconds.max(1e-9);
    Ok(BenchRow {
        flows: n,
        rate: rate.to_string(),
        cc: if load.udp { "udp".into() } else { load.cc.clone() },
        sim_seconds: r.sim_seconds,
        wall_seconds: w,
        events: r.events,
        events_per_s: r.events as f64 / w,
        sim_per_wall: r.sim_seconds / w,
        delivered_pkts_per_s: delivered as f64 / w,
        ns_per_delivered: w * 1e9 / delivered.max(1) as f64,
        goodput_bps: goodput,
        socket_bytes_per_flow: sock_bytes as f64 / n as f64,
        peak_rss_mib: peak_rss_mib(),
    })
}

/// `wirelab bench`: runs every case, prints the table, optionally writes it as JSON; returns
/// the exit code.
pub fn bench(flows: &[u32], rate: &str, duration_s: f64, load: &BenchLoad, json: Option<&Path>) -> i32 {
    if wirelab_core::units::parse_rate(rate).is_err() {
        eprintln!("error: --rate `{rate}` is not a rate like 10mbit");
        return 2;
    }
    if !load.udp {
        if let Err(e) = wirelab_tcp::CongestionAlgo::from_name(&load.cc) {
            eprintln!("error: --cc: {e}");
            return 2;
        }
    }
    let mut rows = Vec::new();
    println!(
        "{:>6} {:>6} {:>8} {:>7} {:>8} {:>11} {:>9} {:>13} {:>8} {:>10} {:>10} {:>8}",
        "flows", "cc", "rate", "sim s", "wall s", "events/s", "sim/wall", "deliv pkts/s", "ns/pkt", "goodput", "sock B/fl", "peak MiB"
    );
    for &n in flows {
        match bench_case(n.max(1), rate, duration_s, load) {
            Ok(r) => {
                println!(
                    "{:>6} {:>6} {:>8} {:>7.1} {:>8.3} {:>11.0} {:>9.2} {:>13.0} {:>8.0} {:>10} {:>10.0} {:>8.1}",
                    r.flows,
                    r.cc,
                    r.rate,
                    r.sim_seconds,
                    r.wall_seconds,
                    r.events_per_s,
                    r.sim_per_wall,
                    r.delivered_pkts_per_s,
                    r.ns_per_delivered,
                    wirelab_core::units::format_rate(r.goodput_bps as u64),
                    r.socket_bytes_per_flow,
                    r.peak_rss_mib
                );
                let _ = std::io::stdout().flush();
                rows.push(r);
            }
            Err(e) => {
                eprintln!("error: {e}");
                return 1;
            }
        }
    }
    if let Some(p) = json {
        if let Err(e) = std::fs::write(p, serde_json::to_string_pretty(&rows).unwrap_or_default()) {
            eprintln!("error: cannot write {}: {e}", p.display());
            return 1;
        }
    }
    0
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn default_bottleneck_is_a_bdp_pfifo_or_dctcp_red_at_k() {
        // 10 Mbit/s × 42 ms = 35 frames: pfifo at the 100-packet floor, K = 20 (the floor)
        assert_eq!(default_bottleneck_qdisc("10mbit", "cubic"), "pfifo limit 100");
        assert_eq!(default_bottleneck_qdisc("10mbit", "dctcp"), "red limit 151400 min 30280 max 30281 avpkt 1514 burst 20 probability 1 ecn");
        // 1 Gbit/s: 3468 frames of BDP, K = ⌈3468/7⌉ = 496
        assert_eq!(default_bottleneck_qdisc("1gbit", "bbr"), "pfifo limit 3468");
        assert!(default_bottleneck_qdisc("1gbit", "dctcp").contains("min 750944 max 750945 avpkt 1514 burst 496"));
    }

    #[test]
    fn cc_bench_cases_run_their_module_and_fill_the_bottleneck() {
        for cc in ["bbr", "dctcp"] {
            let load = BenchLoad { cc: cc.into(), ..Default::default() };
            let text = tcp_dumbbell_toml(2, "10mbit", 4.0, cc, &default_bottleneck_qdisc("10mbit", cc));
            assert_eq!(text.matches(&format!("\"net.ipv4.tcp_congestion_control\" = \"{cc}\"")).count(), 4, "{cc}: every host");
            let r = bench_case(2, "10mbit", 4.0, &load).unwrap();
            assert_eq!(r.cc, cc);
            // 2 flows over 4 s (the first ~0.5 s ramping up): most of the 9.56 Mbit/s payload rate
            assert!(r.goodput_bps > 8.0e6, "{cc}: {}", r.goodput_bps);
        }
        let e = bench_case(2, "10mbit", 1.0, &BenchLoad { qdisc: Some("nonsense 3".into()), ..Default::default() }).unwrap_err();
        assert!(e.contains("`nonsense`") && e.contains("fq_codel"), "{e}");
        // an unknown --cc is refused before any case runs (exit 2, usage error)
        assert_eq!(bench(&[1], "10mbit", 1.0, &BenchLoad { cc: "bbr3".into(), ..Default::default() }, None), 2);
    }
}
