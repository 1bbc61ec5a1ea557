//! `wirelab._wirelab`: the Python extension. Conversions and error mapping only; the
//! public Python API lives in `python/wirelab/`.
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;

mod arrow;
mod columns;

create_exception!(_wirelab, WirelabError, pyo3::exceptions::PyException, "Base class of wirelab errors.");
create_exception!(_wirelab, ScenarioError, PyValueError, "A scenario file is invalid (message names file, line and key).");

/// Runs a scenario file (or TOML text if `text` is given; `path` then names it in errors),
/// writing outputs into `out`. Returns the path of `summary.json`. `progress`, if given, is
/// called as `progress(simulated_seconds, total_seconds)` about 1000 times per run (with the
/// GIL held; the simulation itself runs without it). `out` is owned by the run: the files of
/// an earlier run there are removed first, and a non-empty directory no run wrote is
/// refused (`ScenarioError`) unless `force`. With `tables`, returns `(summary path,
/// RunTables)`: the tables stay in memory for `Result` to take as Arrow.
#[pyfunction]
#[pyo3(signature = (path, out, seed=None, overrides=Vec::new(), text=None, progress=None, force=false, tables=false))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    path: PathBuf,
    out: PathBuf,
    seed: Option<u64>,
    overrides: Vec<String>,
    text: Option<String>,
    progress: Option<Py<PyAny>>,
    force: bool,
    tables: bool,
) -> PyResult<Py<PyAny>> {
    let r = py.detach(move || {
        let sc = match &text {
            Some(t) => wirelab_scenario::Scenario::from_text(&path.display().to_string(), t, &overrides),
            None => wirelab_scenario::Scenario::load(&path, &overrides),
        }
        .map_err(|e| (2, e.to_string()))?;
        let mut cb = |t: f64, total: f64| {
            if let Some(f) = &progress {
                Python::attach(|py| {
                    // a failing callback must not abort the run; report it once per call
                    if let Err(e) = f.call1(py, (t, total)) {
                        e.print(py);
                    }
                });
            }
        };
        wirelab_run::run_loaded_opts(&sc, &out, seed, &wirelab_run::Limits::default(), force, &mut cb).map(|o| (out.join("summary.json"), o.results))
    });
    match r {
        Ok((p, results)) if tables => Ok((p.display().to_string(), arrow::RunTables::new(results)).into_pyobject(py)?.into_any().unbind()),
        Ok((p, _)) => Ok(p.display().to_string().into_pyobject(py)?.into_any().unbind()),
        Err((2, m)) if m.starts_with("error: --out ") => Err(pyo3::exceptions::PyFileExistsError::new_err(m.trim_start_matches("error: ").to_string())),
        Err((2, m)) => Err(ScenarioError::new_err(m.trim_start_matches("error: ").to_string())),
        Err((_, m)) => Err(PyOSError::new_err(m)),
    }
}

/// Runs a scenario live (`wirelab live`): TUN nodes, wall clock. Returns the path of
/// `summary.json`. Needs root or CAP_NET_ADMIN (`PermissionError` otherwise). Ctrl-C
/// (Python's SIGINT handling, checked every 50 ms) ends the run cleanly, writes the
/// outputs, removes namespaces and interfaces, then raises `KeyboardInterrupt`.
#[pyfunction]
#[pyo3(signature = (path, out, seed=None, overrides=Vec::new(), text=None))]
fn live(py: Python<'_>, path: PathBuf, out: PathBuf, seed: Option<u64>, overrides: Vec<String>, text: Option<String>) -> PyResult<String> {
    let interrupted: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
    let r = py.detach(|| {
        let sc = match &text {
            Some(t) => wirelab_scenario::Scenario::from_text(&path.display().to_string(), t, &overrides),
            None => wirelab_scenario::Scenario::load(&path, &overrides),
        }
        .map_err(|e| (2, e.to_string()))?;
        let last = std::cell::Cell::new(std::time::Instant::now());
        let stop = || {
            if last.get().elapsed() < std::time::Duration::from_millis(50) {
                return false;
            }
            last.set(std::time::Instant::now());
            let mut g = interrupted.lock().unwrap_or_else(|e| e.into_inner());
            if g.is_none() {
                *g = Python::attach(|py| py.check_signals().err());
            }
            g.is_some()
        };
        wirelab_live::live_loaded(&sc, &out, seed, &stop).map(|o| {
            for w in &o.live.warnings {
                eprintln!("warning: {w}");
            }
            out.join("summary.json")
        })
    });
    if let Some(e) = interrupted.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    match r {
        Ok(p) => Ok(p.display().to_string()),
        Err((2, m)) if m.contains("CAP_NET_ADMIN") || m.contains("/dev/net/tun") || m.contains("iproute2") => Err(pyo3::exceptions::PyPermissionError::new_err(m.trim_start_matches("error: ").to_string())),
        Err((2, m)) => Err(ScenarioError::new_err(m.trim_start_matches("error: ").to_string())),
        Err((_, m)) => Err(PyOSError::new_err(m)),
    }
}

/// Validates a scenario; raises `ScenarioError` if it is invalid.
#[pyfunction]
#[pyo3(signature = (path, overrides=Vec::new(), text=None))]
fn validate(path: PathBuf, overrides: Vec<String>, text: Option<String>) -> PyResult<()> {
    let sc = match &text {
        Some(t) => wirelab_scenario::Scenario::from_text(&path.display().to_string(), t, &overrides),
        None => wirelab_scenario::Scenario::load(&path, &overrides),
    }
    .map_err(|e| ScenarioError::new_err(e.to_string()))?;
    sc.build(&wirelab_scenario::BuildOptions { live: true, ..Default::default() }).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    Ok(())
}

/// Runs packetdrill scripts against wirelab's TCP (docs/packetdrill.md). Returns one
/// dict per script: path, status (pass/fail/parse_error/unsupported), exit_code, message,
/// notes, printed.
#[pyfunction]
#[pyo3(signature = (paths, profile="linux-6".to_string(), seed=1, tolerance_usecs=None, defines=Vec::new()))]
fn packetdrill(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    profile: String,
    seed: u64,
    tolerance_usecs: Option<i64>,
    defines: Vec<(String, String)>,
) -> PyResult<Vec<Py<pyo3::types::PyDict>>> {
    let mut opts = wirelab_packetdrill::Options { profile, seed, tolerance_usecs, ..Default::default() };
    opts.defines.extend(defines);
    let outs: Vec<(PathBuf, wirelab_packetdrill::Outcome)> =
        py.detach(move || paths.into_iter().map(|p| { let o = wirelab_packetdrill::run_file(&p, &opts); (p, o) }).collect());
    outs.into_iter()
        .map(|(p, o)| {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("path", p.display().to_string())?;
            let status = match o.status {
                wirelab_packetdrill::Status::Pass => "pass",
                wirelab_packetdrill::Status::Fail => "fail",
                wirelab_packetdrill::Status::ParseError => "parse_error",
                wirelab_packetdrill::Status::Unsupported => "unsupported",
            };
            d.set_item("status", status)?;
            d.set_item("exit_code", o.exit_code())?;
            d.set_item("message", o.message)?;
            d.set_item("notes", o.notes)?;
            d.set_item("printed", o.printed)?;
            Ok(d.unbind())
        })
        .collect()
}

// The `wirelab` command: its one definition is clap's in `wirelab-cli`; the pip-installed
// command (`python/wirelab/cli.py`) hands its arguments here, except for the subcommands
// written in Python, which `cli_python_commands` lists.

/// Runs `wirelab ARGS...` (`argv` includes the program name) and returns the exit code.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.detach(move || wirelab_cli::main_with_args(argv))
}

/// `(name, one-line help)` of the subcommands the Python package implements.
#[pyfunction]
fn cli_python_commands() -> Vec<(String, String)> {
    wirelab_cli::python_commands()
}

/// `(name, [--flag, ...])` of every subcommand, as the command line defines them.
#[pyfunction]
fn cli_commands() -> Vec<(String, Vec<String>)> {
    wirelab_cli::commands()
}

/// `wirelab analyze` with its arguments already parsed (for the reproduction scripts).
#[pyfunction]
#[pyo3(signature = (capture, receiver=None, interval="1s".to_string(), classes=Vec::new(), out=None, json=None, strict=false))]
#[allow(clippy::too_many_arguments)]
fn cli_analyze(py: Python<'_>, capture: PathBuf, receiver: Option<PathBuf>, interval: String, classes: Vec<String>, out: Option<PathBuf>, json: Option<PathBuf>, strict: bool) -> i32 {
    let args = wirelab_analyze::AnalyzeArgs { capture, receiver, interval, classes, out, json, strict };
    py.detach(move || match wirelab_analyze::run(&args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    })
}

/// Analyses a sender capture (and optionally a receiver capture on the same clock) as
/// `wirelab analyze` does, without printing or writing files: returns `{"segments": CSV
/// text, "flows": CSV text}` for the report and `Result.latency`.
#[pyfunction]
#[pyo3(signature = (sender, receiver=None))]
fn analyze_tables(py: Python<'_>, sender: PathBuf, receiver: Option<PathBuf>) -> PyResult<std::collections::BTreeMap<String, String>> {
    let opts = wirelab_analyze::AnalyzeOptions { interval: wirelab_core::Duration::from_secs(1), classes: Vec::new(), strict: false };
    let a = py.detach(|| wirelab_analyze::analyze(&sender, receiver.as_deref(), &opts)).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok([("segments".to_string(), a.segments_csv()), ("flows".to_string(), a.flows_csv())].into_iter().collect())
}

#[pymodule]
fn _wirelab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("WirelabError", m.py().get_type::<WirelabError>())?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_tables, m)?)?;
    m.add_function(wrap_pyfunction!(cli_python_commands, m)?)?;
    m.add_function(wrap_pyfunction!(cli_commands, m)?)?;
    m.add_function(wrap_pyfunction!(live, m)?)?;
    m.add_function(wrap_pyfunction!(cli_analyze, m)?)?;
    m.add_function(wrap_pyfunction!(packetdrill, m)?)?;
    m.add_class::<arrow::RunTables>()?;
    m.add_class::<arrow::ArrowTable>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
