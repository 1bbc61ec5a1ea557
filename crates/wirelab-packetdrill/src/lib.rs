//! Runs packetdrill scripts against wirelab's sans-IO TCP engine.
//!
//! packetdrill (github.com/google/packetdrill) drives a real kernel's TCP through a tun
//! device: the script injects packets, makes system calls and states which packets the
//! kernel must send, and when. Here the script drives a [`wirelab_tcp::TcpEndpoint`]
//! instead, on a virtual clock, so Linux's own TCP tests become an oracle for the engine:
//! a script that passes on the kernel and fails here is a wirelab bug or a documented
//! deviation (docs/packetdrill.md).
//!
//! * [`parser`]: the language (packetdrill's `lexer.l`/`parser.y`) → [`ast::Script`].
//! * `run` / `syscall` / `sockopt`: the interpreter (`run.c`, `run_packet.c`,
//!   `run_system_call.c` semantics: relative times, tolerance, TSO aggregation, sequence
//!   and timestamp mapping, blocking calls).
//! * `shell`: back-quoted commands mapped to the engine's sysctls; anything else is
//!   reported as unsupported, never ignored silently.
//! * [`code`]: the `%{ … }%` assertions on `tcp_info`, with a small Python-subset evaluator.
//!
//! ```
//! let script = b"0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n\
//! +0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0\n\
//! +0 bind(3, ..., ...) = 0\n\
//! +0 listen(3, 1) = 0\n\
//! +0 < S 0:0(0) win 32792 <mss 1000,nop,wscale 7>\n\
//! +0 > S. 0:0(0) ack 1 <...>\n\
//! +.1 < . 1:1(0) ack 1 win 257\n\
//! +0 accept(3, ..., ...) = 4\n\
//! +0 write(4, ..., 1000) = 1000\n\
//! +0 > P. 1:1001(1000) ack 1\n";
//! let dir = std::path::Path::new(".");
//! let o = wirelab_packetdrill::run_source("x.pkt", script, dir, &Default::default());
//! assert_eq!(o.exit_code(), 0, "{}", o.message);
//! // the same script expecting the data 5 ms later fails with packetdrill's wording
//! let late = String::from_utf8_lossy(script).replace("+0 > P.", "+.005 > P.");
//! let o = wirelab_packetdrill::run_source("x.pkt", late.as_bytes(), dir, &Default::default());
//! assert_eq!(o.exit_code(), 1);
//! assert!(o.message.starts_with("x.pkt:10: error handling packet: timing error"), "{}", o.message);
//! ```
#![warn(missing_docs)]

pub mod ast;
pub mod code;
pub mod command;
mod info;
pub mod lexer;
pub mod packet;
pub mod parser;
mod run;
mod shell;
mod sockopt;
mod symbols;
mod syscall;

use std::collections::HashMap;
use std::path::Path;

/// How to run scripts.
#[derive(Clone, Debug)]
pub struct Options {
    /// TCP profile (`linux-6` …, see `wirelab_tcp::config::PROFILES`).
    pub profile: String,
    /// Seed of the engine's random numbers (ISNs, timestamp offsets, ports).
    pub seed: u64,
    /// `-D NAME=VALUE` symbols.
    pub defines: HashMap<String, String>,
    /// Overrides the script's `--tolerance_usecs`.
    pub tolerance_usecs: Option<i64>,
    /// Record every packet injected and sent, as `packetdrill -v` prints them.
    pub trace: bool,
}

impl Default for Options {
    fn default() -> Self {
        let mut defines = HashMap::new();
        // what the usual IPv4 invocation passes (run-on-kernel.py)
        for (k, v) in [
            ("TFO_COOKIE", "3021b9d889017eeb"),
            ("CODE", "host_unreachable"),
            ("CMSG_LEVEL_IP", "SOL_IP"),
            ("CMSG_TYPE_RECVERR", "IP_RECVERR"),
        ] {
            defines.insert(k.to_string(), v.to_string());
        }
        Options { profile: "linux-6".into(), seed: 1, defines, tolerance_usecs: None, trace: false }
    }
}

/// How a script ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Every event behaved as the script says.
    Pass,
    /// The stack did something else (a packet, a time, a result, an assertion).
    Fail,
    /// The script could not be parsed.
    ParseError,
    /// The script uses something wirelab does not support (named in the message).
    Unsupported,
}

/// The result of one script.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Pass, fail, or why it could not run.
    pub status: Status,
    /// packetdrill-style text: `script.pkt:LINE: error handling packet: …`; empty on a pass.
    pub message: String,
    /// What was accepted as having no effect on wirelab, and why.
    pub notes: Vec<String>,
    /// Lines printed by `print()` in `%{ }%` blocks.
    pub printed: Vec<String>,
    /// With [`Options::trace`]: `inbound injected packet: …` / `outbound sniffed packet: …`
    /// lines (live sequence numbers, script-relative times), as `packetdrill -v` prints.
    pub trace: Vec<String>,
}

impl Outcome {
    /// 0 pass, 1 failed, 2 could not be parsed or is unsupported.
    pub fn exit_code(&self) -> i32 {
        match self.status {
            Status::Pass => 0,
            Status::Fail => 1,
            Status::ParseError | Status::Unsupported => 2,
        }
    }
}

/// Why a run stopped early.
#[derive(Clone, Debug)]
pub(crate) enum Stop {
    Fail(String),
    Unsupported(String),
    Parse(String),
}

/// Where the upstream packetdrill tree (with `gtests/net/tcp`) is: `$WIRELAB_PACKETDRILL_DIR`,
/// else `shared/packetdrill` next to `start` or next to one of its ancestors (the
/// repository is checked out beside `../shared`, or in a worktree below it).
pub fn corpus_dir(start: &Path) -> Option<std::path::PathBuf> {
    if let Some(d) = std::env::var_os("WIRELAB_PACKETDRILL_DIR") {
        return Some(d.into());
    }
    let start = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    start
        .ancestors()
        .take(4)
        .map(|a| a.join("shared/packetdrill"))
        .find(|d| d.join("gtests/net/tcp").is_dir())
}

/// Runs the script at `path`.
pub fn run_file(path: &Path, opts: &Options) -> Outcome {
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    match std::fs::read(path) {
        Ok(src) => run_source(&name, &src, path.parent().unwrap_or(Path::new(".")), opts),
        Err(e) => Outcome {
            status: Status::ParseError,
            message: format!("{}: cannot read: {e}", path.display()),
            notes: Vec::new(),
            printed: Vec::new(),
            trace: Vec::new(),
        },
    }
}

/// Runs script text `src` named `name`; `dir` is where its relative commands
/// (`../common/defaults.sh`) are resolved.
pub fn run_source(name: &str, src: &[u8], dir: &Path, opts: &Options) -> Outcome {
    let mut out = Outcome { status: Status::Pass, message: String::new(), notes: Vec::new(), printed: Vec::new(), trace: Vec::new() };
    let script = match parser::parse(src, &opts.defines) {
        Ok(s) => s,
        Err(e) => {
            out.status = if e.unsupported { Status::Unsupported } else { Status::ParseError };
            let kind = if e.unsupported { "unsupported" } else { "error" };
            out.message = format!("{name}:{}: {kind}: {}", e.line, e.msg);
            return out;
        }
    };
    let cfg = match wirelab_tcp::TcpConfig::profile(&opts.profile) {
        Ok(c) => c,
        Err(e) => {
            out.status = Status::Unsupported;
            out.message = format!("{name}: {e}");
            return out;
        }
    };
    let mut r = run::Runner::new(name.to_string(), dir.to_path_buf(), opts, cfg);
    let res = r.run(&script);
    out.notes = std::mem::take(&mut r.notes);
    out.printed = std::mem::take(&mut r.printed);
    out.trace = std::mem::take(&mut r.trace);
    match res {
        Ok(()) => {}
        Err(Stop::Fail(m)) => {
            out.status = Status::Fail;
            out.message = m;
        }
        Err(Stop::Unsupported(m)) => {
            out.status = Status::Unsupported;
            out.message = m;
        }
        Err(Stop::Parse(m)) => {
            out.status = Status::ParseError;
            out.message = m;
        }
    }
    out
}
