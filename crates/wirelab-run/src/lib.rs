//! The run-and-write pipeline: load a scenario, build it, run it, write its outputs
//! (`summary.json`, CSV tables, pcaps), and the other commands of `wirelab` as plain
//! functions. The `wirelab` CLI (clap) and the Python binding (PyO3) are thin front ends
//! over this crate; neither holds pipeline logic, and this crate parses no arguments.
//!
//! Exit codes of the `*_command` functions: 0 success, 1 runtime failure (I/O), 2 bad
//! input (scenario or arguments), 3 a resource limit was hit (`--max-memory`,
//! `--max-capture`, `--max-events`, `--min-disk-free`; see [`limits`]): the results up to
//! that point are written.
#![warn(missing_docs)]

use std::io::Write;
use std::path::Path;
use std::time::Instant as WallInstant;
use wirelab_core::{Duration, Instant};
use wirelab_scenario::{BuildOptions, Scenario};
use wirelab_sim::RunResults;

pub mod bench;
pub mod limits;
pub mod output;

pub use limits::Limits;

/// What `run` produced.
pub struct RunOutcome {
    /// The results.
    pub results: RunResults,
    /// Wall-clock seconds.
    pub wall_seconds: f64,
}

/// Loads, builds and runs a scenario with the default [`Limits`], writing outputs into
/// `out`. Errors are `(exit code, message)`.
pub fn run_scenario(scenario: &Path, out: &Path, seed: Option<u64>, set: &[String], progress: impl FnMut(f64, f64)) -> Result<RunOutcome, (i32, String)> {
    run_scenario_with(scenario, out, seed, set, &Limits::default(), progress)
}

/// [`run_scenario`] under `limits`. A scenario file too large to parse within the memory
/// limit is refused before it is read.
pub fn run_scenario_with(scenario: &Path, out: &Path, seed: Option<u64>, set: &[String], limits: &Limits, mut progress: impl FnMut(f64, f64)) -> Result<RunOutcome, (i32, String)> {
    let size = std::fs::metadata(scenario).map(|m| m.len()).unwrap_or(0);
    limits::check_text_size(&scenario.display().to_string(), size, limits).map_err(|e| (limits::EXIT_LIMIT, format!("error: resource limit: {e}")))?;
    let sc = Scenario::load(scenario, set).map_err(|e| (2, format!("error: {e}")))?;
    run_loaded_with(&sc, out, seed, limits, &mut progress)
}

/// Runs an already parsed scenario with the default [`Limits`], writing outputs into
/// `out`. `progress(simulated s, total s)` is called about 200 times per run.
pub fn run_loaded(sc: &Scenario, out: &Path, seed: Option<u64>, progress: &mut dyn FnMut(f64, f64)) -> Result<RunOutcome, (i32, String)> {
    run_loaded_with(sc, out, seed, &Limits::default(), progress)
}

/// Runs an already parsed scenario under `limits`. A limit hit before the run is
/// `Err((3, message))` with nothing run; during the run, the run stops, every output file
/// is written for the part that ran (summary.json says `stopped_by_limit`), and the result
/// is `Err((3, message))`.
pub fn run_loaded_with(sc: &Scenario, out: &Path, seed: Option<u64>, limits: &Limits, progress: &mut dyn FnMut(f64, f64)) -> Result<RunOutcome, (i32, String)> {
    std::fs::create_dir_all(out).map_err(|e| (1, format!("error: cannot create {}: {e}", out.display())))?;
    limits::preflight(sc, out, limits).map_err(|e| (limits::EXIT_LIMIT, format!("error: resource limit: {e}")))?;
    let built = sc.build(&BuildOptions { seed, out_dir: Some(out.to_path_buf()), live: false }).map_err(|e| (2, format!("error: {e}")))?;
    let mut sim = built.sim;
    sim.set_watch(limits::WATCH_EVERY, limits::watch(limits.clone(), built.captures.clone(), out.to_path_buf()));
    let total = built.duration.as_secs_f64();
    let wall = WallInstant::now();
    let every = Duration::from_nanos((built.duration.as_nanos() / 200).max(1));
    sim.run(Instant::ZERO + built.duration, every, &mut |t| progress(t.as_secs_f64(), total));
    let wall_seconds = wall.elapsed().as_secs_f64();
    let results = sim.finish().map_err(|e| (1, format!("error: writing captures: {e}")))?;
    output::write_all(out, sc, &results, wall_seconds, &built.captures).map_err(|e| (1, format!("error: writing results: {e}")))?;
    if let Some(why) = &results.stopped_by_limit {
        return Err((
            limits::EXIT_LIMIT,
            format!("error: resource limit: {why}; the run stopped there and the results of its first {:.6} of {total} s are written to {}", results.sim_seconds, out.display()),
        ));
    }
    Ok(RunOutcome { results, wall_seconds })
}

/// Parsing and building a scenario without running it (`wirelab validate`).
pub fn validate(scenario: &Path, set: &[String]) -> Result<Scenario, wirelab_scenario::ScenarioError> {
    // a scenario with `tun` nodes validates too (it is for `wirelab live`)
    Scenario::load(scenario, set).and_then(|s| s.build(&BuildOptions { live: true, ..Default::default() }).map(|_| s))
}

/// `wirelab run`: runs a scenario with a progress bar on a terminal (or with
/// `force_progress`), then prints the one-line result and per-flow lines unless `quiet`.
pub fn run_command(scenario: &Path, out: &Path, seed: Option<u64>, set: &[String], force_progress: bool, quiet: bool, limits: &Limits) -> i32 {
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
    let r = run_scenario_with(scenario, out, seed, set, limits, |t, total| {
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
                print_outcome(out, &o);
            }
            0
        }
        Err((code, msg)) => {
            eprintln!("{msg}");
            code
        }
    }
}

fn print_outcome(out: &Path, o: &RunOutcome) {
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

/// `wirelab validate`: prints `FILE: ok (…)` or the error.
pub fn validate_command(scenario: &Path, set: &[String]) -> i32 {
    match validate(scenario, set) {
        Ok(s) => {
            println!("{}: ok ({} nodes, {} links, {} apps)", scenario.display(), s.doc.nodes.len(), s.doc.links.len(), s.doc.apps.len());
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

/// `wirelab shim-matches`: prints a finished run's rule-match table.
pub fn shim_matches_command(results: &Path) -> i32 {
    match output::shim_matches_table(results) {
        Ok(t) => {
            print!("{t}");
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}
