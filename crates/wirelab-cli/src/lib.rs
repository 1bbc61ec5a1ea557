//! The `wirelab` command line: the one definition of its subcommands and flags (clap).
//!
//! Both front ends parse with it: the Rust binary (`cargo run -p wirelab-cli`) and the
//! pip-installed `wirelab` command, whose `python/wirelab/cli.py` hands its arguments to
//! [`main_with_args`] through the extension (`_wirelab.cli_main`). The commands themselves
//! are `wirelab-run`'s functions, so both print the same output.
//!
//! Subcommands written in Python (`report`, `sweep`) are declared here too, as
//! [`Cmd::Report`] and [`Cmd::Sweep`] with their one-line help, so `wirelab` and `wirelab
//! help` list every command; the Python front end runs them (its `PY_COMMANDS` table and
//! these variants are checked against each other by `python/tests/test_cli.py`), and the
//! Rust binary says where to find them.
//!
//! **Adding a subcommand** (docs/architecture.md, "The command line"): a Rust one is one
//! [`Cmd`] variant (its doc comment is the help) and one arm in [`main_with_args`]; nothing
//! in Python. A Python one is a variant with `args: Vec<String>` like [`Cmd::Sweep`], an
//! arm in [`python_only`], and its `main(argv)` in `PY_COMMANDS` of `python/wirelab/cli.py`.
//!
//! Exit codes: 0 success, 1 runtime failure (I/O), 2 bad input (scenario or arguments, or a
//! foreign non-empty `--out`), 3 a resource limit was hit (`--max-memory`, `--max-capture`,
//! `--max-events`, `--min-disk-free`): the results up to that point are written.
use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;

pub use wirelab_run::{bench, limits, output, run_loaded, run_loaded_with, run_scenario, Limits, RunOutcome};

mod packetdrill;
const EXAMPLES: &str = "\
Examples:
  wirelab run scenarios/quickstart.toml        results in results/quickstart/ (summary, tables, pcaps)
  wirelab report results/quickstart            results/quickstart/report.html
  wirelab run S.toml --set scenario.duration=60s --set link.bottleneck.netem=\"rate 5mbit delay 40ms\"
  wirelab validate S.toml --show               nodes, interfaces, addresses, routes, apps
  wirelab sweep S.toml --jobs 2                a grid of parameters x seeds, resumable
  wirelab help run                             every flag of one command

Docs: README.md; docs/scenario.md (the scenario schema), docs/sweeps.md, docs/report.md,
docs/analyze.md. Exit codes: 0 ok, 1 I/O failure, 2 bad input, 3 resource limit hit.";

/// wirelab: a deterministic, wire-accurate packet-level lab for TCP and SCTP research.
///
/// Scenarios are TOML files that speak Linux (tc/netem lines, sysctl names); every packet
/// is real bytes, captures open in Wireshark, and the same scenario and seed give the
/// same results.
#[derive(Parser, Debug)]
#[command(name = "wirelab", version, about, long_about, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

/// The subcommands, in the order `wirelab help` lists them.
#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a scenario: summary.json, CSV tables, pcaps in --out (default results/NAME).
    ///
    /// The run owns its output directory: re-running into it first removes the files the
    /// earlier run wrote (a directory that no run wrote and that is not empty is refused
    /// unless --force). Prints one line for the run, one per application (receivers with
    /// goodput, loss and delay; TCP senders with goodput and retransmissions) and one per
    /// TCP connection (connections.csv: both ends, goodput, retransmissions, RTT, FCT).
    #[command(after_help = "Example: wirelab run scenarios/quickstart.toml --seed 2 --set scenario.duration=30s")]
    Run {
        /// Scenario TOML file.
        scenario: PathBuf,
        /// Output directory (default: results/NAME, NAME = the scenario's name).
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// Run seed (overrides scenario.seed).
        #[arg(long)]
        seed: Option<u64>,
        /// Override a scenario key: --set scenario.duration=20s --set link.bn.netem="rate 5mbit".
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Show progress even when stderr is not a terminal (then a plain line every few seconds).
        #[arg(long)]
        progress: bool,
        /// Print nothing but errors.
        #[arg(long, short)]
        quiet: bool,
        /// Write into --out even if it is not empty and no wirelab run wrote it (removes nothing).
        #[arg(long)]
        force: bool,
        /// Stop (exit 3, partial results written) when the process's resident memory
        /// reaches this (tc size units, e.g. 8GB; `none`). Default: half of the memory
        /// available at the start.
        #[arg(long, value_name = "SIZE")]
        max_memory: Option<String>,
        /// Stop when the capture files reach this size in total (default 4GB; `none`).
        #[arg(long, value_name = "SIZE")]
        max_capture: Option<String>,
        /// Stop after this many simulator events (default: no limit).
        #[arg(long, value_name = "N")]
        max_events: Option<u64>,
        /// Stop when free space on --out's filesystem falls below this while capturing
        /// (default 1GB).
        #[arg(long, value_name = "SIZE")]
        min_disk_free: Option<String>,
    },
    /// Run a scenario against the wall clock, with `kind = "tun"` nodes as TUN interfaces
    /// in network namespaces so that kernel sockets and real programs join the topology
    /// (docs/live.md). Needs root or CAP_NET_ADMIN.
    Live {
        /// Scenario TOML file.
        scenario: PathBuf,
        /// Output directory (created).
        #[arg(long, short)]
        out: PathBuf,
        /// Run seed (overrides scenario.seed).
        #[arg(long)]
        seed: Option<u64>,
        /// Override a scenario key, as for `run`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Print nothing but errors and warnings.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Check a scenario without running it; --show prints the network it builds.
    ///
    /// Errors name file, line, column and key (or the --set override that is wrong) and
    /// exit 2. --show lists every node with its interfaces (names as captures and
    /// queue probes take them), addresses, egress qdiscs and routes, and every app.
    Validate {
        /// Scenario TOML file.
        scenario: PathBuf,
        /// Overrides, as for `run`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Print nodes, interfaces, addresses, routes and apps.
        #[arg(long)]
        show: bool,
    },
    /// Build an HTML report (plots embedded, viewable offline) of a run, sweep or analysis.
    ///
    /// `wirelab report DIR [--out FILE]` writes DIR/report.html. Part of the Python
    /// package: `wirelab help report` there shows its flags (docs/report.md).
    #[command(disable_help_flag = true)]
    Report {
        /// Arguments of the Python command.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run a sweep (parameter grid x seeds) in parallel, resumably.
    ///
    /// `wirelab sweep FILE [--out DIR] [--jobs N] ...`. Part of the Python package:
    /// `wirelab help sweep` there shows its flags (docs/sweeps.md).
    #[command(disable_help_flag = true)]
    Sweep {
        /// Arguments of the Python command.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
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
        /// Simulated seconds at the start of each case that are run but not measured, so the
        /// figures are the steady state's (the start-up's N handshakes and slow starts excluded)
        #[arg(long, default_value_t = 0.0)]
        warmup: f64,
        /// Write the table as JSON here too.
        #[arg(long)]
        json: Option<PathBuf>,
        /// UDP CBR sources instead of TCP bulk flows.
        #[arg(long)]
        udp: bool,
        /// Runs per case; the one with the median CPU time is reported.
        #[arg(long, default_value_t = 1)]
        repeat: u32,
        /// Web-like workload instead of the dumbbell: `--flows` short flows with
        /// heavy-tailed sizes plus 4 long flows on a 5-router parking lot.
        #[arg(long)]
        mix: bool,
        /// Congestion control of every TCP host (reno, cubic, bbr, dctcp, vegas).
        #[arg(long, default_value = "cubic")]
        cc: String,
        /// Bottleneck qdisc in tc syntax (default: a one-BDP pfifo; for dctcp an
        /// ECN-marking RED at K = max(20, BDP/7) packets).
        #[arg(long)]
        qdisc: Option<String>,
    },
}

/// The subcommands the Python package implements (`report`, `sweep`), for the Python front
/// end's consistency test: `(name, one-line help)`.
pub fn python_commands() -> Vec<(String, String)> {
    let cmd = Cli::command();
    cmd.get_subcommands()
        .filter(|s| python_only(s.get_name()))
        .map(|s| (s.get_name().to_string(), s.get_about().map(|a| a.to_string()).unwrap_or_default()))
        .collect()
}

/// Every subcommand and its flags (long names), for tests and for shell completion
/// scripts: `(name, [--flag, ...])`.
pub fn commands() -> Vec<(String, Vec<String>)> {
    let cmd = Cli::command();
    cmd.get_subcommands()
        .map(|s| (s.get_name().to_string(), s.get_arguments().filter_map(|a| a.get_long().map(|l| format!("--{l}"))).collect()))
        .collect()
}

fn python_only(name: &str) -> bool {
    matches!(name, "report" | "sweep")
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
    let Some(cmd) = cli.cmd else {
        // `wirelab` alone: the overview of every command
        let _ = Cli::command().print_long_help();
        return 0;
    };
    match cmd {
        Cmd::Run { scenario, out, seed, set, progress, quiet, force, max_memory, max_capture, max_events, min_disk_free } => {
            match wirelab_run::Limits::default().with_flags(max_memory.as_deref(), max_capture.as_deref(), max_events, min_disk_free.as_deref()) {
                Ok(limits) => wirelab_run::run_command(&wirelab_run::RunArgs { scenario, out, seed, set, progress, quiet, force, limits }),
                Err(e) => {
                    eprintln!("error: {e}");
                    2
                }
            }
        }
        Cmd::Validate { scenario, set, show } => wirelab_run::validate_command(&scenario, &set, show),
        Cmd::Report { .. } => python_elsewhere("report"),
        Cmd::Sweep { .. } => python_elsewhere("sweep"),
        Cmd::Live { scenario, out, seed, set, quiet } => wirelab_live::live_command(&scenario, &out, seed, &set, quiet),
        Cmd::Analyze(a) => match wirelab_analyze::run(&a) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        },
        Cmd::ShimMatches { results } => wirelab_run::shim_matches_command(&results),
        Cmd::Packetdrill(a) => packetdrill::run(&a),
        Cmd::Bench { flows, rate, duration, warmup, json, udp, repeat, mix, cc, qdisc } => {
            let load = wirelab_run::bench::BenchLoad { udp, cc, qdisc };
            wirelab_run::bench::bench(&wirelab_run::bench::BenchOptions { flows, rate, duration_s: duration, warmup_s: warmup, load, repeat, mix, json })
        }
    }
}

/// The Rust binary reached a Python subcommand.
fn python_elsewhere(name: &str) -> i32 {
    eprintln!(
        "error: `wirelab {name}` is part of the Python package; install it (README: a venv, then `pip install .`) \
         and run the pip-installed `wirelab {name}`, or `python -m wirelab {name}`"
    );
    2
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_subcommand_has_help_and_is_listed() {
        let help = Cli::command().render_long_help().to_string();
        for (name, _) in commands() {
            assert!(help.contains(&name), "`wirelab` does not list {name}:\n{help}");
        }
        for s in Cli::command().get_subcommands() {
            assert!(s.get_about().is_some_and(|a| !a.to_string().is_empty()), "{} has no help", s.get_name());
        }
        assert_eq!(python_commands().iter().map(|c| c.0.as_str()).collect::<Vec<_>>(), ["report", "sweep"]);
    }

    #[test]
    fn run_takes_no_required_out() {
        let c = Cli::try_parse_from(["wirelab", "run", "s.toml"]).unwrap();
        assert!(matches!(c.cmd, Some(Cmd::Run { out: None, .. })));
        let c = Cli::try_parse_from(["wirelab", "sweep", "f.toml", "--jobs", "2", "--set", "a=b"]).unwrap();
        match c.cmd {
            Some(Cmd::Sweep { args }) => assert_eq!(args, ["f.toml", "--jobs", "2", "--set", "a=b"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(main_with_args(vec!["wirelab".into(), "report".into(), "x".into()]), 2);
    }
}
