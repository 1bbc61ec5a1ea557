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
pub mod console;
pub mod limits;
pub mod outdir;
pub mod output;
mod progress;

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
/// `out`. `progress(simulated s, total s)` is called about 1000 times per run.
pub fn run_loaded(sc: &Scenario, out: &Path, seed: Option<u64>, progress: &mut dyn FnMut(f64, f64)) -> Result<RunOutcome, (i32, String)> {
    run_loaded_with(sc, out, seed, &Limits::default(), progress)
}

/// Runs an already parsed scenario under `limits`. A limit hit before the run is
/// `Err((3, message))` with nothing run; during the run, the run stops, every output file
/// is written for the part that ran (summary.json says `stopped_by_limit`), and the result
/// is `Err((3, message))`.
pub fn run_loaded_with(sc: &Scenario, out: &Path, seed: Option<u64>, limits: &Limits, progress: &mut dyn FnMut(f64, f64)) -> Result<RunOutcome, (i32, String)> {
    run_loaded_opts(sc, out, seed, limits, false, progress)
}

/// [`run_loaded_with`] that, with `force`, also writes into a non-empty directory no
/// `wirelab run` wrote (see [`outdir`]: a run owns its output directory and clears the
/// files of the run before it).
pub fn run_loaded_opts(sc: &Scenario, out: &Path, seed: Option<u64>, limits: &Limits, force: bool, progress: &mut dyn FnMut(f64, f64)) -> Result<RunOutcome, (i32, String)> {
    outdir::prepare(out, force, &[Path::new(&sc.file)])?;
    let marker = |captures: &[std::path::PathBuf]| {
        outdir::write_marker(out, &outdir::planned_files(out, captures, output::TABLES)).map_err(|e| (1, format!("error: writing {}: {e}", out.join(outdir::MARKER).display())))
    };
    marker(&[])?;
    limits::preflight(sc, out, limits).map_err(|e| (limits::EXIT_LIMIT, format!("error: resource limit: {e}")))?;
    let built = sc.build(&BuildOptions { seed, out_dir: Some(out.to_path_buf()), live: false }).map_err(|e| (2, format!("error: {e}")))?;
    marker(&built.captures)?;
    let mut sim = built.sim;
    sim.set_watch(limits::WATCH_EVERY, limits::watch(limits.clone(), built.captures.clone(), out.to_path_buf()));
    let total = built.duration.as_secs_f64();
    let wall = WallInstant::now();
    let every = Duration::from_nanos((built.duration.as_nanos() / 1000).max(1));
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

/// What `wirelab run` was asked to do (the front ends fill it from their flags).
#[derive(Clone, Debug, Default)]
pub struct RunArgs {
    /// Scenario TOML file.
    pub scenario: std::path::PathBuf,
    /// Output directory; `None` = `results/NAME` (the scenario's name), as `wirelab sweep`.
    pub out: Option<std::path::PathBuf>,
    /// Run seed (overrides `scenario.seed`).
    pub seed: Option<u64>,
    /// `--set KEY=VALUE` overrides.
    pub set: Vec<String>,
    /// Show progress even when stderr is not a terminal (plain lines then).
    pub progress: bool,
    /// Print nothing but errors.
    pub quiet: bool,
    /// Write into a non-empty directory that no `wirelab run` wrote.
    pub force: bool,
    /// Resource limits.
    pub limits: Limits,
}

/// The default output directory of a run: `results/NAME`, NAME being `scenario.name`
/// (file-name characters only), as `wirelab sweep` defaults to `results/NAME`.
pub fn default_out(sc: &Scenario) -> std::path::PathBuf {
    let name: String = sc.doc.scenario.name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    let name = if name.is_empty() || name.starts_with('.') { format!("run{name}") } else { name };
    std::path::Path::new("results").join(name)
}

/// `wirelab run`: runs a scenario with a progress bar on a terminal (with `progress` and
/// no terminal: a plain line every few seconds), then prints the one-line result, a line
/// per flow and per TCP connection, unless `quiet`.
pub fn run_command(a: &RunArgs) -> i32 {
    let size = std::fs::metadata(&a.scenario).map(|m| m.len()).unwrap_or(0);
    if let Err(e) = limits::check_text_size(&a.scenario.display().to_string(), size, &a.limits) {
        eprintln!("error: resource limit: {e}");
        return limits::EXIT_LIMIT;
    }
    let sc = match Scenario::load(&a.scenario, &a.set) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let out = a.out.clone().unwrap_or_else(|| default_out(&sc));
    let mut shown = progress::Shown::new(!a.quiet, a.progress);
    let r = run_loaded_opts(&sc, &out, a.seed, &a.limits, a.force, &mut |t, total| shown.update(t, total));
    shown.finish();
    match r {
        Ok(o) => {
            if !a.quiet {
                print_outcome(&out, &o);
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
    let _ = write!(so, "{}", console::summary_lines(r));
}

/// `wirelab validate`: prints `FILE: ok (…)` or the error; with `show`, the network the
/// scenario builds (nodes, interfaces, addresses, qdiscs, links, routes, apps).
pub fn validate_command(scenario: &Path, set: &[String], show: bool) -> i32 {
    // live: a scenario with `tun` nodes validates too (it is for `wirelab live`); building
    // it creates no interface or namespace, the live driver does that
    let r = Scenario::load(scenario, set).and_then(|s| s.build(&BuildOptions { live: true, ..Default::default() }).map(|b| (s, b)));
    match r {
        Ok((s, b)) => {
            println!("{}: ok ({} nodes, {} links, {} apps)", scenario.display(), s.doc.nodes.len(), s.doc.links.len(), s.doc.apps.len());
            if show {
                print!("{}", b.sim.describe());
            }
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
