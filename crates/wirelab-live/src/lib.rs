//! Live mode (`wirelab live`): a scenario run against the wall clock. Its simulated hosts,
//! links, netem impairments and qdiscs are the simulator's own (the same `Sim`, engines,
//! applications and recorders); nodes of `kind = "tun"` are TUN interfaces in network
//! namespaces, through which the machine's kernel sockets and unmodified programs send
//! into the topology and reach simulated hosts or each other. See docs/live.md.
//!
//! * [`privilege`]: CAP_NET_ADMIN and /dev/net/tun, or a clear error (exit 2);
//! * [`netns`]: namespaces and TUN interfaces, removed on every exit path;
//! * [`procs`]: the `run`/`spawn` commands of TUN nodes;
//! * [`driver`]: the wall-clock loop and its lag measurement ([`lag`]).
//!
//! Exit codes: 0 success, 1 runtime failure (I/O, a TUN interface, a `run` command that
//! failed), 2 bad input or missing privilege, 130 interrupted (outputs are still written).
#![warn(missing_docs)]

pub mod driver;
pub mod lag;
pub mod netns;
pub mod privilege;
pub mod procs;

use serde::Serialize;
use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use wirelab_core::Instant;
use wirelab_scenario::{BuildOptions, Scenario};
use wirelab_sim::RunResults;

/// What a live run produced.
pub struct LiveOutcome {
    /// The results, as `wirelab run` writes them.
    pub results: RunResults,
    /// The `live` section of `summary.json`.
    pub live: LiveSummary,
}

/// The `live` section of `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct LiveSummary {
    /// Why the run ended (`duration`, `commands`, `signal`, `error`).
    pub ended_by: driver::Ended,
    /// Wall-clock seconds of the event loop.
    pub wall_seconds: f64,
    /// Unix time of the loop's time zero (to align kernel-side logs such as `ss` samples).
    pub t0_unix_s: f64,
    /// How late events ran (wall clock when run − scheduled time).
    pub event_lag: lag::LagSummary,
    /// How long a datagram read from a TUN interface waited before entering the topology.
    pub input_lag: lag::LagSummary,
    /// Waits that overslept their deadline by more than 1 ms.
    pub oversleeps: u64,
    /// Per TUN node.
    pub tun: Vec<TunSummary>,
    /// The nodes' `run` and `spawn` commands.
    pub commands: Vec<procs::ProcInfo>,
    /// Warnings also printed at the end (the machine could not keep up, …).
    pub warnings: Vec<String>,
}

/// One TUN node in `summary.json`.
#[derive(Clone, Debug, Serialize)]
pub struct TunSummary {
    /// Node.
    pub node: String,
    /// Namespace.
    pub netns: String,
    /// Interface name in the namespace.
    pub dev: String,
    /// Address.
    pub addr: String,
    /// Counters.
    #[serde(flatten)]
    pub counters: driver::TunCounters,
}

/// Event lag above which the run is reported as not keeping up (p99).
const LAG_WARN_NS: u64 = 1_000_000;

/// Sets `flag` on SIGINT and SIGTERM (signal-hook); a second signal kills the process at
/// once, as it would without a handler.
pub fn install_signal_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&flag));
        let _ = signal_hook::flag::register(sig, Arc::clone(&flag));
    }
    flag
}

/// Loads and runs a scenario live, writing outputs into `out`. `stop()` is polled at
/// least every 50 ms; when it returns true the run ends (cleanly) as on SIGINT.
pub fn live_scenario(scenario: &Path, out: &Path, seed: Option<u64>, set: &[String], stop: &dyn Fn() -> bool) -> Result<LiveOutcome, (i32, String)> {
    let sc = Scenario::load(scenario, set).map_err(|e| (2, format!("error: {e}")))?;
    live_loaded(&sc, out, seed, stop)
}

/// The TUN nodes of a built scenario, with what their kernel side needs.
fn tun_specs<'a>(sc: &'a Scenario, sim: &wirelab_sim::Sim) -> Result<Vec<netns::TunSpec<'a>>, (i32, String)> {
    let mut subnets = BTreeSet::new();
    for n in 0..sc.doc.nodes.len() as u32 {
        for i in 0..sim.iface_names(n).len() as u32 {
            let a = sim.iface_addr(n, i);
            subnets.insert((u32::from(a.network()), a.prefix));
        }
    }
    let mut specs = Vec::new();
    for (i, n) in sc.doc.nodes.iter().enumerate() {
        if !Scenario::is_tun(n) {
            continue;
        }
        let id = i as u32;
        let ifs = sim.iface_names(id);
        if ifs.len() != 1 {
            return Err((2, format!("error: {}: tun node `{}` needs exactly one link (it has {})", sc.file, n.name.get_ref(), ifs.len())));
        }
        let a = sim.iface_addr(id, 0);
        let own = (u32::from(a.network()), a.prefix);
        let routes = subnets.iter().filter(|s| **s != own).map(|&(net, len)| (Ipv4Addr::from(net), len)).collect();
        let mut sysctls = Vec::new();
        for (k, v) in &n.sysctl {
            let t = wirelab_scenario::sysctl::sysctl_text(v.get_ref()).ok_or_else(|| (2, format!("error: {}: node `{}`: sysctl `{k}`: expected a string, an integer or a list of integers", sc.file, n.name.get_ref())))?;
            sysctls.push((k.clone(), t));
        }
        specs.push(netns::TunSpec { node: id, name: n.name.get_ref(), netns: n.netns.as_ref().map(|s| s.get_ref().as_str()), ifname: ifs[0].clone(), addr: (a.addr, a.prefix), routes, sysctls });
    }
    Ok(specs)
}

/// Runs an already parsed scenario live.
pub fn live_loaded(sc: &Scenario, out: &Path, seed: Option<u64>, stop: &dyn Fn() -> bool) -> Result<LiveOutcome, (i32, String)> {
    privilege::check().map_err(|e| (2, format!("error: {e}")))?;
    std::fs::create_dir_all(out).map_err(|e| (1, format!("error: cannot create {}: {e}", out.display())))?;
    let built = sc.build(&BuildOptions { seed, out_dir: Some(out.to_path_buf()), live: true }).map_err(|e| (2, format!("error: {e}")))?;
    let mut sim = built.sim;
    let specs = tun_specs(sc, &sim)?;
    for ns in netns::remove_stale() {
        eprintln!("note: removed namespace {ns} left by a killed live run");
    }
    // from here on every exit path drops `tuns` (and the commands), which cleans up
    let mut tuns = netns::TunSet::default();
    for s in &specs {
        tuns.add(s).map_err(|e| (1, format!("error: {e}")))?;
    }
    let nodes: Vec<u32> = tuns.ifaces.iter().map(|t| t.node).collect();
    let mut readers = driver::Readers::start(&tuns);
    let mut procs = Vec::new();
    for kind in ["spawn", "run"] {
        for (t, n) in tuns.ifaces.iter().zip(sc.doc.nodes.iter().filter(|n| Scenario::is_tun(n))) {
            let cmds = if kind == "spawn" { &n.spawn } else { &n.run };
            for (i, c) in cmds.iter().enumerate() {
                procs.push(procs::Proc::start(out, &t.node_name, &t.netns, kind, i, c.get_ref()).map_err(|e| (1, format!("error: {e}")))?);
            }
        }
    }
    for (t, n) in tuns.ifaces.iter().zip(sc.doc.nodes.iter().filter(|n| Scenario::is_tun(n))) {
        let want: Vec<(bool, u16)> = n.ready.iter().filter_map(|r| Scenario::ready_socket(r.get_ref())).collect();
        procs::wait_ready(&t.netns, &want, std::time::Duration::from_secs(30)).map_err(|e| (1, format!("error: node `{}`: {e}", t.node_name)))?;
    }
    let has_run = procs.iter().any(|p| p.info.kind == "run");
    let clock = driver::Clock::start();
    let t0_unix_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let wall = std::time::Instant::now();
    let end = Instant::ZERO + built.duration;
    // the run ends when every `run` command has exited, after a short grace for the
    // last segments (FIN/ACK) in flight
    let mut all_done_at: Option<std::time::Instant> = None;
    let mut done = || {
        if !has_run {
            return false;
        }
        let mut all = true;
        for p in procs.iter_mut().filter(|p| p.info.kind == "run") {
            all &= p.poll();
        }
        if all {
            let t = *all_done_at.get_or_insert_with(std::time::Instant::now);
            return t.elapsed() >= std::time::Duration::from_millis(500);
        }
        false
    };
    let st = driver::run_loop(&mut sim, &driver::Io { tuns: &tuns, readers: &readers, nodes: &nodes }, clock, end, stop, &mut done);
    let wall_seconds = wall.elapsed().as_secs_f64();
    for p in procs.iter_mut() {
        p.stop(std::time::Duration::from_millis(500));
    }
    readers.stop();
    let tun_summary: Vec<TunSummary> = tuns
        .ifaces
        .iter()
        .zip(st.tun.iter())
        .map(|(t, c)| TunSummary { node: t.node_name.clone(), netns: t.netns.clone(), dev: t.ifname.clone(), addr: format!("{}/{}", t.addr.0, t.addr.1), counters: c.clone() })
        .collect();
    drop(tuns);
    sim.end(st.end);
    let results = sim.finish().map_err(|e| (1, format!("error: writing captures: {e}")))?;
    let mut warnings = Vec::new();
    let lag = st.event_lag.summary();
    if lag.count >= 100 && lag.p99_ns > LAG_WARN_NS {
        warnings.push(format!(
            "the machine did not keep up: events ran {:.3} ms late at the 99th percentile ({:.3} ms max, {} events over 1 ms); timing-sensitive results (RTT, rates) are skewed by that much",
            lag.p99_ns as f64 / 1e6,
            lag.max_ns as f64 / 1e6,
            lag.over_1ms
        ));
    }
    for p in &procs {
        if p.info.kind == "run" && !p.info.stopped && p.info.exit_code != Some(0) {
            warnings.push(format!("node `{}`: `{}` exited with {:?} (log: {})", p.info.node, p.info.cmd, p.info.exit_code, p.info.log));
        }
        if p.info.kind == "run" && p.info.stopped {
            warnings.push(format!("node `{}`: `{}` was still running at the end and was stopped (log: {})", p.info.node, p.info.cmd, p.info.log));
        }
    }
    if let Some(e) = &st.error {
        warnings.push(e.clone());
    }
    let live = LiveSummary {
        ended_by: st.ended,
        wall_seconds,
        t0_unix_s,
        event_lag: lag,
        input_lag: st.input_lag.summary(),
        oversleeps: st.oversleeps,
        tun: tun_summary,
        commands: procs.iter().map(|p| p.info.clone()).collect(),
        warnings,
    };
    wirelab_run::output::write_all(out, sc, &results, wall_seconds, &built.captures).map_err(|e| (1, format!("error: writing results: {e}")))?;
    add_live_section(out, &live).map_err(|e| (1, format!("error: writing summary.json: {e}")))?;
    Ok(LiveOutcome { results, live })
}

/// Adds the `live` section to the `summary.json` that `wirelab-run` wrote.
fn add_live_section(out: &Path, live: &LiveSummary) -> std::io::Result<()> {
    let p = out.join("summary.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&p)?)?;
    if let Some(m) = v.as_object_mut() {
        m.insert("mode".into(), "live".into());
        m.insert("live".into(), serde_json::to_value(live)?);
    }
    let mut s = serde_json::to_string_pretty(&v)?;
    s.push('\n');
    std::fs::write(p, s)
}

/// `wirelab live`: runs the scenario, prints a summary line (lag, TUN traffic, commands)
/// and the warnings; SIGINT/SIGTERM end it cleanly (exit 130).
pub fn live_command(scenario: &Path, out: &Path, seed: Option<u64>, set: &[String], quiet: bool) -> i32 {
    let flag = install_signal_flag();
    let stop = || flag.load(Ordering::Relaxed);
    if !quiet {
        eprintln!("wirelab live: {} (Ctrl-C ends the run and cleans up)", scenario.display());
    }
    match live_scenario(scenario, out, seed, set, &stop) {
        Ok(o) => report(out, &o, quiet),
        Err((code, msg)) => {
            eprintln!("{msg}");
            code
        }
    }
}

/// Prints the outcome; the exit code it implies.
pub fn report(out: &Path, o: &LiveOutcome, quiet: bool) -> i32 {
    let l = &o.live;
    if !quiet {
        println!(
            "{}: live {:.3} s ({:?}), {} events, lag median {:.3} ms p99 {:.3} ms max {:.3} ms",
            out.display(),
            l.wall_seconds,
            l.ended_by,
            o.results.events,
            l.event_lag.median_ns as f64 / 1e6,
            l.event_lag.p99_ns as f64 / 1e6,
            l.event_lag.max_ns as f64 / 1e6
        );
        for t in &l.tun {
            println!("  {:<12} {} {} in {}: from kernel {} pkts / {} B, to kernel {} pkts / {} B", t.node, t.dev, t.addr, t.netns, t.counters.rx_packets, t.counters.rx_bytes, t.counters.tx_packets, t.counters.tx_bytes);
        }
        for f in &o.results.flows {
            println!("  {:<16} {:<9} tx {:>11} B  rx {:>11} B  {:>9.3} Mbit/s  {}", f.name, f.kind, f.tx_bytes, f.rx_bytes, f.goodput_bps / 1e6, f.state);
        }
        for c in &l.commands {
            println!("  {:<12} {:<5} exit {:<4} {:>7.3} s  {}", c.node, c.kind, c.exit_code.map_or("-".to_string(), |c| c.to_string()), c.seconds, c.cmd);
        }
    }
    for w in &l.warnings {
        eprintln!("warning: {w}");
    }
    if l.ended_by == driver::Ended::Signal {
        return 130;
    }
    if l.ended_by == driver::Ended::Error || l.commands.iter().any(|c| c.kind == "run" && !c.stopped && c.exit_code != Some(0)) {
        return 1;
    }
    0
}
