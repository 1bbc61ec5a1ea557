//! The `wirelab` command line: a thin layer over `wirelab-scenario` and `wirelab-sim`.
//!
//! Exit codes: 0 success, 1 runtime failure (I/O), 2 bad input (scenario or arguments).
use clap::{Parser, Subcommand};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant as WallInstant;
use wirelab_core::{Duration, Instant};
use wirelab_scenario::{BuildOptions, Scenario};
use wirelab_sim::RunResults;

mod bench;
pub mod output;
mod packetdrill;

/// wirelab: a deterministic, wire-accurate packet-level lab for TCP and SCTP research.
#[derive(Parser, Debug)]
#[command(name = "wirelab", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a scenario and write its results to --out.
    Run {
        /// Scenario TOML file.
        scenario: PathBuf,
        /// Output directory (created).
        #[arg(long, short)]
        out: PathBuf,
        /// Run seed (overrides scenario.seed).
        #[arg(long)]
        seed: Option<u64>,
        /// Override a scenario key: --set scenario.duration=20s --set link.bn.netem="rate 5mbit".
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Show a progress bar even when stderr is not a terminal.
        #[arg(long)]
        progress: bool,
        /// Print nothing but errors.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Check a scenario without running it.
    Validate {
        /// Scenario TOML file.
        scenario: PathBuf,
        /// Overrides, as for `run`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// Analyse a TCP capture (wirelab's or tcpdump's): ACK latency, retransmissions,
    /// loss, goodput per interval, Jain's index (docs/analyze.md).
    Analyze(wirelab_analyze::AnalyzeArgs),
    /// Show which shim rule matched which connection in a finished run (its
    /// shim_matches.csv) and the transport each ended up on (docs/shim.md).
    ShimMatches {
        /// Output directory of `wirelab run`.
        results: PathBuf,
    },
    /// Run packetdrill scripts against wirelab's TCP (docs/packetdrill.md).
    Packetdrill(packetdrill::Args),
    /// Run the dumbbell benchmark and print events/s, simulated/wall ratio, packets/s.
    Bench {
        /// Numbers of sender/receiver pairs.
        #[arg(long, value_delimiter = ',', default_values_t = vec![2u32, 20, 200, 2000])]
        flows: Vec<u32>,
        /// Bottleneck rate.
        #[arg(long, default_value = "10mbit")]
        rate: String,
        /// Simulated seconds per case.
        #[arg(long, default_value_t = 10.0)]
        duration: f64,
        /// Write the table as JSON here too.
        #[arg(long)]
        json: Option<PathBuf>,
        /// UDP CBR sources instead of TCP bulk flows.
        #[arg(long)]
        udp: bool,
    },
}

/// Runs the CLI with `args` (including the program name); returns the exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match cli.cmd {
        Cmd::Run { scenario, out, seed, set, progress, quiet } => run_cmd(&scenario, &out, seed, &set, progress, quiet),
        Cmd::Validate { scenario, set } => match Scenario::load(&scenario, &set).and_then(|s| s.build(&BuildOptions::default()).map(|_| s)) {
            Ok(s) => {
                println!("{}: ok ({} nodes, {} links, {} apps)", scenario.display(), s.doc.nodes.len(), s.doc.links.len(), s.doc.apps.len());
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        },
        Cmd::Analyze(a) => match wirelab_analyze::run(&a) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        },
        Cmd::ShimMatches { results } => match output::shim_matches_table(&results) {
            Ok(t) => {
                print!("{t}");
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        },
        Cmd::Packetdrill(a) => packetdrill::run(&a),
        Cmd::Bench { flows, rate, duration, json, udp } => bench::bench(&flows, &rate, duration, udp, json.as_deref()),
    }
}

/// What `run` produced.
pub struct RunOutcome {
    /// The results.
    pub results: RunResults,
    /// Wall-clock seconds.
    pub wall_seconds: f64,
}

/// Loads, builds and runs a scenario, writing outputs into `out`. Errors are
/// `(exit code, message)`.
pub fn run_scenario(scenario: &Path, out: &Path, seed: Option<u64>, set: &[String], mut progress: impl FnMut(f64, f64)) -> Result<RunOutcome, (i32, String)> {
    let sc = Scenario::load(scenario, set).map_err(|e| (2, format!("error: {e}")))?;
    run_loaded(&sc, out, seed, &mut progress)
}

/// Runs an already parsed scenario.
pub fn run_loaded(sc: &Scenario, out: &Path, seed: Option<u64>, progress: &mut dyn FnMut(f64, f64)) -> Result<RunOutcome, (i32, String)> {
    std::fs::create_dir_all(out).map_err(|e| (1, format!("error: cannot create {}: {e}", out.display())))?;
    let built = sc.build(&BuildOptions { seed, out_dir: Some(out.to_path_buf()) }).map_err(|e| (2, format!("error: {e}")))?;
    let mut sim = built.sim;
    let total = built.duration.as_secs_f64();
    let wall = WallInstant::now();
    let every = Duration::from_nanos((built.duration.as_nanos() / 200).max(1));
    sim.run(Instant::ZERO + built.duration, every, &mut |t| progress(t.as_secs_f64(), total));
    let wall_seconds = wall.elapsed().as_secs_f64();
    let results = sim.finish().map_err(|e| (1, format!("error: writing captures: {e}")))?;
    output::write_all(out, sc, &results, wall_seconds, &built.captures).map_err(|e| (1, format!("error: writing results: {e}")))?;
    Ok(RunOutcome { results, wall_seconds })
}

fn run_cmd(scenario: &Path, out: &Path, seed: Option<u64>, set: &[String], force_progress: bool, quiet: bool) -> i32 {
    use std::io::IsTerminal;
    let show = !quiet && (force_progress || std::io::stderr().is_terminal());
    let bar = if show {
        let b = indicatif::ProgressBar::new(1000);
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {msg} (eta {eta})").unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(b)
    } else {
        None
    };
    let r = run_scenario(scenario, out, seed, set, |t, total| {
        if let Some(b) = &bar {
            b.set_position(((t / total) * 1000.0) as u64);
            b.set_message(format!("{t:.1}/{total:.1} s simulated"));
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    match r {
        Ok(o) => {
            if !quiet {
                let r = &o.results;
                let mut so = std::io::stdout().lock();
                let _ = writeln!(
                    so,
                    "{}: {:.3} s simulated in {:.3} s wall ({:.1}x), {} events ({:.0} events/s), fingerprint {}",
                    out.display(),
                    r.sim_seconds,
                    o.wall_seconds,
                    r.sim_seconds / o.wall_seconds.max(1e-9),
                    r.events,
                    r.events as f64 / o.wall_seconds.max(1e-9),
                    r.fingerprint
                );
                for f in &r.flows {
                    if f.rx_packets > 0 {
                        let _ = writeln!(so, "  {:<16} rx {:>9} pkts  {:>10.3} Mbit/s  loss {:>6.3}%  delay {:.3}/{:.3}/{:.3} ms", f.name, f.rx_packets, f.goodput_bps / 1e6, f.loss_ratio * 100.0, f.delay_min_ms, f.delay_mean_ms, f.delay_max_ms);
                    } else if f.tx_packets > 0 {
                        let _ = writeln!(so, "  {:<16} tx {:>9} pkts", f.name, f.tx_packets);
                    }
                }
            }
            0
        }
        Err((code, msg)) => {
            eprintln!("{msg}");
            code
        }
    }
}
