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
    /// Simulated seconds run before the measurement started (`--warmup`): the event,
    /// packet, time and rate figures below are for the rest of the run; goodput, socket
    /// memory and peak RSS are the whole run's.
    pub warmup_seconds: f64,
    /// Wall seconds of the event loop (`Sim::run`), the median of the repetitions.
    pub wall_seconds: f64,
    /// CPU seconds this thread spent in the event loop (Linux `schedstat`; equals the wall
    /// time on an idle core, and unlike it does not count time other processes ran).
    pub cpu_seconds: f64,
    /// Wall seconds to build the scenario (parse, validate, construct the simulation).
    pub build_seconds: f64,
    /// Wall seconds to collect the results and drop the simulation.
    pub teardown_seconds: f64,
    /// Events processed.
    pub events: u64,
    /// Packets delivered to receivers (TCP: data segments and the handshake/FIN segments).
    pub delivered: u64,
    /// Events per delivered packet.
    pub events_per_delivered: f64,
    /// Events per wall second.
    pub events_per_s: f64,
    /// Simulated seconds per wall second.
    pub sim_per_wall: f64,
    /// Packets delivered to receivers per wall second (TCP: data segments).
    pub delivered_pkts_per_s: f64,
    /// Wall nanoseconds per delivered packet.
    pub ns_per_delivered: f64,
    /// CPU nanoseconds per delivered packet (the figure to compare on a loaded machine).
    pub cpu_ns_per_delivered: f64,
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

/// Routers of the `--mix` parking lot, and hosts per router.
const MIX_ROUTERS: usize = 5;
const MIX_HOSTS: usize = 4;
/// Greedy long flows of the `--mix` workload, end to end over the whole chain.
const MIX_LONG: usize = 4;
/// Short-flow sizes: bounded Pareto, shape 1.2, 3 kB to 3 MB (mean about 13 kB; most flows
/// are a few segments, a few carry most bytes, as in web and data-centre traces).
const MIX_PARETO: (f64, f64, f64) = (1.2, 3_000.0, 3_000_000.0);

/// One short flow's size, a bounded-Pareto draw by inverse transform from `u` in [0, 1).
fn pareto_size(u: f64) -> u64 {
    let (a, l, h) = MIX_PARETO;
    let la = l.powf(a);
    let ha = h.powf(a);
    let x = (-(u * ha - u * la - ha) / (ha * la)).powf(-1.0 / a);
    x.round().clamp(l, h) as u64
}

/// The `--mix` scenario: a parking lot of 5 routers in a line (1 Gbit/s, 1 ms, pfifo of one
/// bandwidth-delay product), 4 hosts on each (1 Gbit/s, 50 µs); `n` short flows whose
/// sizes are heavy-tailed ([`MIX_PARETO`]) between hosts on different routers, arriving
/// at random over the first 80 % of the run, plus 4 greedy long flows across the whole
/// chain. Every host runs a `tcp-sink` on port 5001; each short flow is a `tcp-bulk` with
/// `bytes`. Deterministic: the draws come from a seeded stream.
pub fn mix_toml(n: u32, duration_s: f64) -> String {
    use std::fmt::Write as _;
    let mut rng = wirelab_core::Rng::stream(1, "bench/mix");
    let mut s = format!("[scenario]\nname = \"bench-mix-{n}\"\nduration = \"{duration_s}s\"\nseed = 1\n\n[measure]\nsample_interval = \"{duration_s}s\"\n\n");
    let host = |r: usize, j: usize| format!("h{r}x{j}");
    for r in 0..MIX_ROUTERS {
        let _ = write!(s, "[[node]]\nname = \"r{r}\"\nkind = \"router\"\n\n");
        for j in 0..MIX_HOSTS {
            let _ = write!(s, "[[node]]\nname = \"{}\"\n\n", host(r, j));
        }
    }
    // 1 Gbit/s × 2 ms RTT per hop ≈ 170 frames; the pfifo holds the 4-hop path's BDP
    for r in 0..MIX_ROUTERS - 1 {
        let _ = write!(s, "[[link]]\nname = \"core{r}\"\na = {{ node = \"r{r}\", qdisc = \"pfifo limit 700\" }}\nb = {{ node = \"r{}\", qdisc = \"pfifo limit 700\" }}\nnetem = \"rate 1gbit delay 1ms\"\n\n", r + 1);
    }
    for r in 0..MIX_ROUTERS {
        for j in 0..MIX_HOSTS {
            let _ = write!(s, "[[link]]\na = {{ node = \"{}\" }}\nb = {{ node = \"r{r}\" }}\nnetem = \"rate 1gbit delay 50us\"\n\n", host(r, j));
            let _ = write!(s, "[[app]]\nkind = \"tcp-sink\"\nnode = \"{}\"\nport = 5001\n\n", host(r, j));
        }
    }
    for k in 0..MIX_LONG {
        let _ = write!(s, "[[app]]\nkind = \"tcp-bulk\"\nnode = \"{}\"\ndst = \"{}:5001\"\nstart = \"{}us\"\n\n", host(0, k % MIX_HOSTS), host(MIX_ROUTERS - 1, k % MIX_HOSTS), 1000 * k);
    }
    let span_ns = duration_s * 0.8 * 1e9;
    for _ in 0..n {
        let start = (rng.next_f64() * span_ns) as u64;
        let src_r = rng.below(MIX_ROUTERS as u64) as usize;
        let dst_r = (src_r + 1 + rng.below(MIX_ROUTERS as u64 - 1) as usize) % MIX_ROUTERS;
        let (a, b) = (rng.below(MIX_HOSTS as u64) as usize, rng.below(MIX_HOSTS as u64) as usize);
        let bytes = pareto_size(rng.next_f64());
        let _ = write!(s, "[[app]]\nkind = \"tcp-bulk\"\nnode = \"{}\"\ndst = \"{}:5001\"\nbytes = {bytes}\nstart = \"{start}ns\"\n\n", host(src_r, a), host(dst_r, b));
    }
    s
}

/// One `--mix` case's figures.
#[derive(Serialize, Debug, Clone)]
pub struct MixRow {
    /// Short flows.
    pub short_flows: u32,
    /// Short flows that completed (all bytes acknowledged, peer's FIN seen).
    pub completed: u64,
    /// Simulated seconds.
    pub sim_seconds: f64,
    /// Wall seconds of the event loop.
    pub wall_seconds: f64,
    /// CPU seconds of the event loop.
    pub cpu_seconds: f64,
    /// Wall seconds to build the scenario.
    pub build_seconds: f64,
    /// Wall seconds to collect the results and drop the simulation.
    pub teardown_seconds: f64,
    /// Events processed.
    pub events: u64,
    /// Data segments delivered (bytes received by the sinks / 1448-byte MSS).
    pub data_segments: u64,
    /// Events per delivered data segment.
    pub events_per_segment: f64,
    /// CPU nanoseconds per delivered data segment.
    pub cpu_ns_per_segment: f64,
    /// Bytes received by the sinks.
    pub rx_bytes: u64,
    /// Peak resident memory (MiB) of the process so far.
    pub peak_rss_mib: f64,
    /// Peak RSS per flow (bytes).
    pub peak_rss_per_flow: f64,
}

/// Runs one `--mix` case with `n` short flows.
pub fn mix_case(n: u32, duration_s: f64) -> Result<MixRow, String> {
    let t0 = WallInstant::now();
    let text = mix_toml(n, duration_s);
    let sc = Scenario::from_text("<bench-mix>", &text, &[]).map_err(|e| e.to_string())?;
    drop(text);
    let built = sc.build(&BuildOptions::default()).map_err(|e| e.to_string())?;
    drop(sc);
    let mut sim = built.sim;
    let build_seconds = t0.elapsed().as_secs_f64();
    let cpu0 = thread_cpu_seconds();
    let wall = WallInstant::now();
    sim.run(Instant::ZERO + built.duration, Duration::ZERO, &mut |_| {});
    let w = wall.elapsed().as_secs_f64().max(1e-9);
    let cpu = match (cpu0, thread_cpu_seconds()) {
        (Some(a), Some(b)) => (b - a).max(1e-9),
        _ => w,
    };
    let t1 = WallInstant::now();
    let r = sim.finish().map_err(|e| e.to_string())?;
    drop(sim);
    let teardown_seconds = t1.elapsed().as_secs_f64();
    let rx_bytes: u64 = r.flows.iter().filter(|f| f.kind == "tcp-sink").map(|f| f.rx_bytes).sum();
    let completed = r.flows.iter().filter(|f| f.kind == "tcp-bulk" && f.state == "done").count() as u64;
    let segs = rx_bytes.div_ceil(1448);
    let peak = peak_rss_mib();
    Ok(MixRow {
        short_flows: n,
        completed,
        sim_seconds: r.sim_seconds,
        wall_seconds: w,
        cpu_seconds: cpu,
        build_seconds,
        teardown_seconds,
        events: r.events,
        data_segments: segs,
        events_per_segment: r.events as f64 / segs.max(1) as f64,
        cpu_ns_per_segment: cpu * 1e9 / segs.max(1) as f64,
        rx_bytes,
        peak_rss_mib: peak,
        peak_rss_per_flow: peak * 1048576.0 / (n as f64 + MIX_LONG as f64),
    })
}

/// Peak RSS of this process in MiB (Linux `VmHWM`), 0 elsewhere.
pub fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<f64>().ok()))
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// CPU time this thread has run, in seconds (`/proc/thread-self/schedstat`, nanosecond
/// resolution); `None` where that file does not exist. The kernel folds the running
/// thread's time into that figure at ticks and context switches only, so the thread yields
/// first (`sched_yield` passes through the scheduler, which updates it).
pub fn thread_cpu_seconds() -> Option<f64> {
    std::thread::yield_now();
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 * 1e-9)
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

/// Runs one case `repeat` times; returns the run with the median CPU time (all
/// repetitions simulate the same events).
pub fn bench_case_repeated(n: u32, rate: &str, duration_s: f64, warmup_s: f64, load: &BenchLoad, repeat: u32) -> Result<BenchRow, String> {
    let mut rows = (0..repeat.max(1)).map(|_| bench_case_after(n, rate, duration_s, warmup_s, load)).collect::<Result<Vec<_>, _>>()?;
    rows.sort_by(|a, b| a.cpu_seconds.total_cmp(&b.cpu_seconds));
    Ok(rows.swap_remove(rows.len() / 2))
}

/// Runs one case.
pub fn bench_case(n: u32, rate: &str, duration_s: f64, load: &BenchLoad) -> Result<BenchRow, String> {
    bench_case_after(n, rate, duration_s, 0.0, load)
}

/// Runs one case and measures only its last `duration_s - warmup_s` simulated seconds:
/// events, delivered packets and CPU time are counted from `warmup_s` on, so the figures
/// are the steady state's, without the start-up (N handshakes, slow starts, send rings
/// growing). `warmup_s = 0` measures the whole run.
pub fn bench_case_after(n: u32, rate: &str, duration_s: f64, warmup_s: f64, load: &BenchLoad) -> Result<BenchRow, String> {
    let t0 = WallInstant::now();
    let text = if load.udp {
        dumbbell_toml(n, rate, duration_s)
    } else {
        let q = load.qdisc.clone().unwrap_or_else(|| default_bottleneck_qdisc(rate, &load.cc));
        tcp_dumbbell_toml(n, rate, duration_s, &load.cc, &q)
    };
    let sc = Scenario::from_text("<bench>", &text, &[]).map_err(|e| e.to_string())?;
    let built = sc.build(&BuildOptions::default()).map_err(|e| e.to_string())?;
    let mut sim = built.sim;
    let build_seconds = t0.elapsed().as_secs_f64();
    let receivers: Vec<u32> = (0..(2 + 2 * n)).filter(|&i| sim.node_name(i).starts_with('d')).collect();
    let (mut events0, mut delivered0) = (0, 0);
    if warmup_s > 0.0 {
        sim.run(Instant::ZERO + Duration::from_secs_f64(warmup_s), Duration::ZERO, &mut |_| {});
        events0 = sim.run_counters().events;
        delivered0 = receivers.iter().map(|&i| sim.node_counters(i).delivered).sum();
    }
    let cpu0 = thread_cpu_seconds();
    let wall = WallInstant::now();
    sim.run(Instant::ZERO + built.duration, Duration::ZERO, &mut |_| {});
    let w = wall.elapsed().as_secs_f64().max(1e-9);
    let cpu = match (cpu0, thread_cpu_seconds()) {
        (Some(a), Some(b)) => (b - a).max(1e-9),
        _ => w,
    };
    let t1 = WallInstant::now();
    let mut sock_bytes = 0usize;
    for node in 0..(2 + 2 * n) {
        if let Some(st) = sim.stack(node) {
            sock_bytes += st.tcp().sockets().filter_map(|s| st.tcp().socket_memory(s)).sum::<usize>();
        }
    }
    let r = sim.finish().map_err(|e| e.to_string())?;
    // packets delivered to the receiving hosts d0…dN-1 (data segments for TCP)
    let delivered: u64 = r.nodes.iter().filter(|x| x.node.starts_with('d')).map(|x| x.counters.delivered).sum::<u64>() - delivered0;
    let events = r.events - events0;
    let measured_s = (r.sim_seconds - warmup_s).max(1e-9);
    let goodput: f64 = r.flows.iter().map(|f| f.rx_bytes as f64 * 8.0).sum::<f64>() / r.sim_seconds.max(1e-9);
    drop(sim);
    let teardown_seconds = t1.elapsed().as_secs_f64();
    Ok(BenchRow {
        flows: n,
        rate: rate.to_string(),
        cc: if load.udp { "udp".into() } else { load.cc.clone() },
        sim_seconds: r.sim_seconds,
        warmup_seconds: warmup_s,
        wall_seconds: w,
        cpu_seconds: cpu,
        build_seconds,
        teardown_seconds,
        events,
        delivered,
        events_per_delivered: events as f64 / delivered.max(1) as f64,
        events_per_s: events as f64 / w,
        sim_per_wall: measured_s / w,
        delivered_pkts_per_s: delivered as f64 / w,
        ns_per_delivered: w * 1e9 / delivered.max(1) as f64,
        cpu_ns_per_delivered: cpu * 1e9 / delivered.max(1) as f64,
        goodput_bps: goodput,
        socket_bytes_per_flow: sock_bytes as f64 / n as f64,
        peak_rss_mib: peak_rss_mib(),
    })
}

/// What `wirelab bench` runs.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Sender/receiver pairs per case.
    pub flows: Vec<u32>,
    /// Bottleneck rate.
    pub rate: String,
    /// Simulated seconds per case.
    pub duration_s: f64,
    /// Simulated seconds not measured at the start of each case (0: measure all).
    pub warmup_s: f64,
    /// Transport, congestion control and bottleneck of the dumbbell.
    pub load: BenchLoad,
    /// Runs per case; the row with the median CPU time is reported.
    pub repeat: u32,
    /// Run the `--mix` workload (`flows` = short flows) instead of the dumbbell.
    pub mix: bool,
    /// Also write the rows as JSON here.
    pub json: Option<std::path::PathBuf>,
}

fn print_header() {
    println!(
        "{:>6} {:>6} {:>8} {:>6} {:>8} {:>8} {:>10} {:>6} {:>8} {:>11} {:>8} {:>8} {:>11} {:>9} {:>8} {:>7} {:>7}",
        "flows", "cc", "rate", "sim s", "wall s", "cpu s", "events", "ev/pkt", "deliv", "pkts/cpu-s", "cpu ns/p", "wall ns/p", "goodput", "sock B/fl", "peak MiB", "build s", "drop s"
    );
}

fn print_row(r: &BenchRow) {
    println!(
        "{:>6} {:>6} {:>8} {:>6.1} {:>8.3} {:>8.3} {:>10} {:>6.2} {:>8} {:>11.0} {:>8.0} {:>8.0} {:>11} {:>9.0} {:>8.1} {:>7.3} {:>7.3}",
        r.flows,
        r.cc,
        r.rate,
        r.sim_seconds,
        r.wall_seconds,
        r.cpu_seconds,
        r.events,
        r.events_per_delivered,
        r.delivered,
        r.delivered as f64 / r.cpu_seconds,
        r.cpu_ns_per_delivered,
        r.ns_per_delivered,
        wirelab_core::units::format_rate(r.goodput_bps as u64),
        r.socket_bytes_per_flow,
        r.peak_rss_mib,
        r.build_seconds,
        r.teardown_seconds
    );
    let _ = std::io::stdout().flush();
}

/// `wirelab bench`: runs every case, prints the table, optionally writes it as JSON; returns
/// the exit code.
pub fn bench(o: &BenchOptions) -> i32 {
    if wirelab_core::units::parse_rate(&o.rate).is_err() {
        eprintln!("error: --rate `{}` is not a rate like 10mbit", o.rate);
        return 2;
    }
    if !(o.duration_s > 0.0 && o.duration_s.is_finite()) {
        eprintln!("error: --duration {} must be a positive number of seconds", o.duration_s);
        return 2;
    }
    if !(o.warmup_s >= 0.0 && o.warmup_s < o.duration_s) {
        eprintln!("error: --warmup {} must be at least 0 and less than --duration {}", o.warmup_s, o.duration_s);
        return 2;
    }
    if o.mix {
        if o.warmup_s > 0.0 {
            eprintln!("error: --warmup applies to the dumbbell, not to --mix (its short flows all start and end within the run)");
            return 2;
        }
        return bench_mix(o);
    }
    if !o.load.udp {
        if let Err(e) = wirelab_tcp::CongestionAlgo::from_name(&o.load.cc) {
            eprintln!("error: --cc: {e}");
            return 2;
        }
    }
    let mut rows = Vec::new();
    if o.warmup_s > 0.0 {
        println!("measured from {} s to {} s of each run (--warmup): events, packets and times below are that window's", o.warmup_s, o.duration_s);
    }
    print_header();
    for &n in &o.flows {
        match bench_case_repeated(n.max(1), &o.rate, o.duration_s, o.warmup_s, &o.load, o.repeat) {
            Ok(r) => {
                print_row(&r);
                rows.push(r);
            }
            Err(e) => {
                eprintln!("error: {e}");
                return 1;
            }
        }
    }
    write_json(o.json.as_deref(), &rows)
}

fn bench_mix(o: &BenchOptions) -> i32 {
    println!(
        "{:>7} {:>7} {:>6} {:>8} {:>8} {:>11} {:>9} {:>6} {:>9} {:>9} {:>8} {:>10} {:>7} {:>7}",
        "short", "done", "sim s", "wall s", "cpu s", "events", "data segs", "ev/seg", "cpu ns/sg", "segs/cpu-s", "peak MiB", "RSS B/flow", "build s", "drop s"
    );
    let mut rows = Vec::new();
    for &n in &o.flows {
        match mix_case(n, o.duration_s) {
            Ok(r) => {
                println!(
                    "{:>7} {:>7} {:>6.1} {:>8.3} {:>8.3} {:>11} {:>9} {:>6.2} {:>9.0} {:>9.0} {:>8.1} {:>10.0} {:>7.3} {:>7.3}",
                    r.short_flows,
                    r.completed,
                    r.sim_seconds,
                    r.wall_seconds,
                    r.cpu_seconds,
                    r.events,
                    r.data_segments,
                    r.events_per_segment,
                    r.cpu_ns_per_segment,
                    r.data_segments as f64 / r.cpu_seconds,
                    r.peak_rss_mib,
                    r.peak_rss_per_flow,
                    r.build_seconds,
                    r.teardown_seconds
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
    write_json(o.json.as_deref(), &rows)
}

fn write_json<T: Serialize>(p: Option<&Path>, rows: &T) -> i32 {
    if let Some(p) = p {
        if let Err(e) = std::fs::write(p, serde_json::to_string_pretty(rows).unwrap_or_default()) {
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
    fn warmup_measures_only_the_rest_of_the_run() {
        let load = BenchLoad::default();
        let all = bench_case(2, "10mbit", 4.0, &load).unwrap();
        let warm = bench_case_after(2, "10mbit", 4.0, 2.0, &load).unwrap();
        // the same run either way (deterministic), so the goodput over the whole run agrees
        assert_eq!(all.goodput_bps, warm.goodput_bps);
        assert_eq!(warm.warmup_seconds, 2.0);
        // the last 2 s of two greedy flows on a full 10 Mbit/s link: 1514-byte frames at
        // 825.6 per second, not the 4-s run's total
        let rate = warm.delivered as f64 / 2.0;
        assert!((rate - 825.6).abs() < 0.02 * 825.6, "{} packets in the last 2 s", warm.delivered);
        assert!(warm.delivered < all.delivered && warm.events < all.events, "{warm:?} vs {all:?}");
        // the steady state needs fewer events per packet than a run with its handshakes
        assert!(warm.events_per_delivered <= all.events_per_delivered, "{warm:?} vs {all:?}");
        let o = |warmup_s: f64, mix: bool| BenchOptions {
            flows: vec![1],
            rate: "10mbit".into(),
            duration_s: 1.0,
            warmup_s,
            load: BenchLoad::default(),
            repeat: 1,
            mix,
            json: None,
        };
        assert_eq!(bench(&o(1.0, false)), 2, "a warm-up as long as the run is refused");
        assert_eq!(bench(&o(-0.5, false)), 2);
        assert_eq!(bench(&o(0.5, true)), 2, "--mix has no warm-up");
    }

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
        let o = BenchOptions {
            flows: vec![1],
            rate: "10mbit".into(),
            duration_s: 1.0,
            warmup_s: 0.0,
            load: BenchLoad { cc: "bbr3".into(), ..Default::default() },
            repeat: 1,
            mix: false,
            json: None,
        };
        assert_eq!(bench(&o), 2);
    }
}
