//! `wirelab analyze`: thin-stream analysis of TCP packet captures (issue #6).
//!
//! Reads wirelab's own captures and real tcpdump/dumpcap ones (classic pcap in µs or ns,
//! pcapng; Ethernet with VLAN tags, raw IPv4, Linux SLL/SLL2; IPv4 and TCP options;
//! frames cut by the snaplen) and computes, per data direction:
//!
//! * ACK latency of every byte range from its **first** transmission to the first
//!   cumulative ACK covering it, and a SACK-aware variant; percentiles and CDFs;
//! * retransmissions and estimated loss; with a receiver capture, true loss and the
//!   application-layer delay (first send to in-order deliverability at the receiver);
//! * throughput and goodput per interval, Jain's fairness across flows and classes.
//!
//! Layers: [`decode`] (panic-free IPv4/TCP header decoding), [`capture`] (files to
//! segments, with counts of what was skipped), [`analysis`] (the metrics), [`report`]
//! (CSV, JSON, text) and [`AnalyzeArgs`]/[`run`] (the clap front end that `wirelab-cli`
//! mounts as `wirelab analyze`). docs/analyze.md defines each metric and how it differs
//! from tshark's `tcp.analysis` fields.
//!
//! ```no_run
//! use wirelab_analyze::{analyze, AnalyzeOptions};
//! let a = analyze("sender.pcap".as_ref(), Some("receiver.pcap".as_ref()), &AnalyzeOptions::default())?;
//! for f in &a.flows {
//!     println!("{} p99 {:?} ns, true loss {:?}", f.flow, f.ack_latency.p99_ns, f.true_loss);
//! }
//! a.write_dir("out".as_ref())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod analysis;
pub mod capture;
pub mod class;
pub mod decode;
pub mod report;
pub mod stats;

pub use analysis::{
    analyze_loaded, AnalyzeOptions, Analysis, CdfRow, ClassSummary, FairnessRow, FlowKey, FlowSummary,
    IntervalRow, RetxRow, SegmentRow,
};
pub use capture::{load_bytes, load_file, CaptureStats, Loaded, Packet};
pub use class::ClassRule;
pub use stats::Pctl;

use std::fmt;
use std::path::{Path, PathBuf};

/// Why an analysis failed.
#[derive(Debug)]
pub enum AnalyzeError {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The capture container is unreadable.
    Capture {
        /// The file.
        path: String,
        /// The error.
        source: wirelab_wire::pcap::PcapError,
    },
    /// A frame could not be decoded (with `--strict`).
    Packet {
        /// The file.
        file: String,
        /// Frame number (1-based).
        frame: u32,
        /// What was wrong.
        reason: &'static str,
    },
    /// The capture contradicts itself (link type vs. frames, captured vs. original
    /// length).
    Contradiction {
        /// The file.
        path: String,
        /// Byte offset of the record or block.
        offset: usize,
        /// What contradicts what.
        message: String,
    },
    /// A command-line value is invalid.
    Arg(String),
}

impl AnalyzeError {
    fn capture(path: &str, source: wirelab_wire::pcap::PcapError) -> Self {
        AnalyzeError::Capture { path: path.to_string(), source }
    }
}

impl fmt::Display for AnalyzeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnalyzeError::Io { path, source } => write!(f, "{path}: {source}"),
            AnalyzeError::Capture { path, source } => {
                // PcapError's text starts with "capture: "; name the file instead.
                let msg = source.to_string();
                write!(f, "{path}: {}", msg.strip_prefix("capture: ").unwrap_or(&msg))
            }
            AnalyzeError::Packet { file, frame, reason } => write!(f, "{file}: packet {frame}: {reason}"),
            AnalyzeError::Contradiction { path, offset, message } => write!(f, "{path}: byte {offset}: {message}"),
            AnalyzeError::Arg(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for AnalyzeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AnalyzeError::Io { source, .. } => Some(source),
            AnalyzeError::Capture { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Reads and analyses a sender-side capture and, optionally, a receiver-side one.
pub fn analyze(sender: &Path, receiver: Option<&Path>, opts: &AnalyzeOptions) -> Result<Analysis, AnalyzeError> {
    let s = load_file(sender, opts.strict)?;
    let r = receiver.map(|p| load_file(p, opts.strict)).transpose()?;
    Ok(analyze_loaded(&s, r.as_ref(), opts))
}

/// Analyses captures held in memory (e.g. written by the simulator to a `Vec<u8>`).
pub fn analyze_bytes(sender: &[u8], receiver: Option<&[u8]>, opts: &AnalyzeOptions) -> Result<Analysis, AnalyzeError> {
    let s = load_bytes("sender", sender, opts.strict)?;
    let r = receiver.map(|b| load_bytes("receiver", b, opts.strict)).transpose()?;
    Ok(analyze_loaded(&s, r.as_ref(), opts))
}

/// `wirelab analyze CAPTURE [--receiver CAPTURE]`: ACK latency, retransmissions, loss,
/// application delay, throughput/goodput and fairness of the TCP flows in a capture.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct AnalyzeArgs {
    /// Capture taken at (or near) the data senders: pcap or pcapng.
    #[cfg_attr(feature = "cli", arg(value_name = "CAPTURE"))]
    pub capture: PathBuf,
    /// Capture taken at the receivers, on the same clock: adds true loss and
    /// application-layer delay.
    #[cfg_attr(feature = "cli", arg(long, value_name = "CAPTURE"))]
    pub receiver: Option<PathBuf>,
    /// Interval for throughput, goodput and per-interval fairness (tc time units).
    #[cfg_attr(feature = "cli", arg(long, default_value = "1s", value_name = "TIME"))]
    pub interval: String,
    /// A flow class, e.g. `thin=dport:5000-5100` or `bulk=src:10.0.1.0/24,port:80`
    /// (repeatable; first match wins).
    #[cfg_attr(feature = "cli", arg(long = "class", value_name = "NAME=RULE"))]
    pub classes: Vec<String>,
    /// Directory for the CSV tables and summary.json.
    #[cfg_attr(feature = "cli", arg(long, value_name = "DIR"))]
    pub out: Option<PathBuf>,
    /// Also write the JSON summary here (`-` for stdout).
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub json: Option<PathBuf>,
    /// Fail on the first undecodable frame, a capture cut short, or a frame that
    /// contradicts the link type or its original length, instead of counting.
    #[cfg_attr(feature = "cli", arg(long))]
    pub strict: bool,
}

impl AnalyzeArgs {
    /// The analysis options these arguments describe.
    pub fn options(&self) -> Result<AnalyzeOptions, AnalyzeError> {
        let interval = wirelab_core::units::parse_time(&self.interval)
            .map_err(|e| AnalyzeError::Arg(format!("--interval {}: {e}", self.interval)))?;
        if interval.as_nanos() == 0 {
            return Err(AnalyzeError::Arg("--interval must be positive".into()));
        }
        let classes = self
            .classes
            .iter()
            .map(|c| ClassRule::parse(c).map_err(|e| AnalyzeError::Arg(format!("--class {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AnalyzeOptions { interval, classes, strict: self.strict })
    }
}

/// Runs `wirelab analyze`: prints the summary to stdout, writes the tables to `--out` and
/// the JSON summary to `--json`.
pub fn run(args: &AnalyzeArgs) -> Result<(), AnalyzeError> {
    let opts = args.options()?;
    let a = analyze(&args.capture, args.receiver.as_deref(), &opts)?;
    if let Some(dir) = &args.out {
        a.write_dir(dir).map_err(|e| AnalyzeError::Io { path: dir.display().to_string(), source: e })?;
    }
    match args.json.as_deref() {
        Some(p) if p == Path::new("-") => return stdout(&a.summary_json()),
        Some(p) => std::fs::write(p, a.summary_json())
            .map_err(|e| AnalyzeError::Io { path: p.display().to_string(), source: e })?,
        None => {}
    }
    let mut text = a.summary_text();
    if let Some(dir) = &args.out {
        text.push_str(&format!("tables written to {}\n", dir.display()));
    }
    stdout(&text)
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn stdout(s: &str) -> Result<(), AnalyzeError> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(s.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(AnalyzeError::Io { path: "stdout".into(), source: e })
        }
        _ => Ok(()),
    }
}
