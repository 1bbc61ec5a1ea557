//! The `wirelab` command line: clap argument parsing over `wirelab-run`, which holds the
//! pipeline and the commands (the Python binding calls the same functions).
//!
//! Exit codes: 0 success, 1 runtime failure (I/O), 2 bad input (scenario or arguments),
//! 3 a resource limit was hit (`--max-memory`, `--max-capture`, `--max-events`,
//! `--min-disk-free`): the results up to that point are written.
//! A new subcommand is one `Cmd` variant and one arm in [`main_with_args`].
use clap::{Parser, Subcommand};
use std::path::PathBuf;

pub use wirelab_run::{bench, limits, output, run_loaded, run_loaded_with, run_scenario, Limits, RunOutcome};

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
        Cmd::Run { scenario, out, seed, set, progress, quiet, max_memory, max_capture, max_events, min_disk_free } => {
            match wirelab_run::Limits::default().with_flags(max_memory.as_deref(), max_capture.as_deref(), max_events, min_disk_free.as_deref()) {
                Ok(l) => wirelab_run::run_command(&scenario, &out, seed, &set, progress, quiet, &l),
                Err(e) => {
                    eprintln!("error: {e}");
                    2
                }
            }
        }
        Cmd::Live { scenario, out, seed, set, quiet } => wirelab_live::live_command(&scenario, &out, seed, &set, quiet),
        Cmd::Validate { scenario, set } => wirelab_run::validate_command(&scenario, &set),
        Cmd::Analyze(a) => match wirelab_analyze::run(&a) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("error: {e}");
                2
            }
        },
        Cmd::ShimMatches { results } => wirelab_run::shim_matches_command(&results),
        Cmd::Packetdrill(a) => packetdrill::run(&a),
        Cmd::Bench { flows, rate, duration, json, udp, repeat, mix, cc, qdisc } => {
            let load = wirelab_run::bench::BenchLoad { udp, cc, qdisc };
            wirelab_run::bench::bench(&wirelab_run::bench::BenchOptions { flows, rate, duration_s: duration, load, repeat, mix, json })
        }
    }
}
