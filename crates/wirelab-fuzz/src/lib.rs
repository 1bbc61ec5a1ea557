//! Deterministic mutation fuzzing of every wirelab parser and engine, on stable Rust.
//!
//! No nightly, no sanitizer runtime, no coverage instrumentation: each [`Target`] is a
//! function from bytes to nothing that must not panic, fed first its corpus (files under
//! `fuzz/corpus/<target>/`, made from the repository's own scenarios, captures and tc
//! lines by `wirelab-fuzz seed-corpus`, plus valid inputs its module builds with the
//! crates' emitters) and then mutations of corpus entries: AFL-style byte havoc for binary
//! formats, token-level edits with a dictionary of edge values for the text parsers.
//!
//! Iteration `i` of target `T` under seed `s` draws everything from
//! `Rng::stream(s, "T/i")`, so a crash is reproduced from `(T, s, i)` alone
//! (`wirelab-fuzz run T --seed s --start i --iters 1`), and CI and a developer machine fuzz
//! the same inputs. `tests/ci.rs` runs every target for a fixed, short budget under
//! `cargo test`; the `wirelab-fuzz` binary runs long campaigns (docs/reliability.md).
#![warn(missing_docs)]

pub mod mutate;
pub mod targets;

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::time::{Duration, Instant};
use wirelab_core::Rng;

/// How a target's inputs are mutated.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Byte-level havoc.
    Binary,
    /// Token-level edits drawing from a dictionary (and some byte-level ones).
    Text {
        /// Words and values to insert: keywords, units, edge numbers.
        dict: &'static [&'static str],
    },
}

/// One fuzz target.
#[derive(Clone, Copy)]
pub struct Target {
    /// Name (also the corpus directory).
    pub name: &'static str,
    /// What it exercises.
    pub what: &'static str,
    /// Mutation style.
    pub kind: Kind,
    /// Inputs are cut to this many bytes.
    pub max_len: usize,
    /// Valid inputs built in code (added to the corpus files).
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// The code under test: must return normally for every input.
    pub run: fn(&[u8]),
    /// Iterations per `cargo test` run (tests/ci.rs), chosen so that all targets
    /// together stay within the CI budget (docs/reliability.md).
    pub ci_iters: u64,
}

/// A panic found by [`fuzz`].
#[derive(Clone, Debug)]
pub struct Crash {
    /// Iteration that produced the input (replay with `--start`).
    pub iteration: u64,
    /// The input.
    pub input: Vec<u8>,
    /// Panic message and location.
    pub message: String,
}

/// What a campaign did.
#[derive(Clone, Debug)]
pub struct Report {
    /// Target name.
    pub target: &'static str,
    /// Inputs run (corpus entries included).
    pub iterations: u64,
    /// Corpus entries (files and built-in seeds).
    pub corpus: usize,
    /// Wall seconds.
    pub seconds: f64,
    /// Panics, at most one per distinct message.
    pub crashes: Vec<Crash>,
}

/// The repository's `fuzz/corpus` directory.
pub fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

/// The corpus of `t`: the files of `root/<name>/` in name order, then the built-in seeds.
pub fn load_corpus(t: &Target, root: &Path) -> Vec<Vec<u8>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(t.name))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    files.sort();
    let mut out: Vec<Vec<u8>> = files.iter().filter_map(|p| std::fs::read(p).ok()).collect();
    out.extend((t.seeds)());
    for v in &mut out {
        v.truncate(t.max_len);
    }
    out
}

/// Input number `i` of a campaign: corpus entries first, then mutations of a random entry.
pub fn input(t: &Target, corpus: &[Vec<u8>], seed: u64, i: u64) -> Vec<u8> {
    if (i as usize) < corpus.len() {
        return corpus[i as usize].clone();
    }
    let mut rng = Rng::stream(seed, &format!("{}/{i}", t.name));
    let pick = |rng: &mut Rng| -> &[u8] {
        if corpus.is_empty() {
            &[]
        } else {
            &corpus[rng.below(corpus.len() as u64) as usize]
        }
    };
    let base = pick(&mut rng).to_vec();
    let other = pick(&mut rng).to_vec();
    match t.kind {
        Kind::Binary => {
            let mut v = base;
            // mostly few edits (stay near valid, get past the first checks), sometimes many
            let ops = if rng.chance(0.8) { 4 } else { 32 };
            mutate::havoc(&mut rng, &mut v, &other, ops, t.max_len);
            v
        }
        Kind::Text { dict } => {
            let s = String::from_utf8_lossy(&base);
            let ops = if rng.chance(0.8) { 3 } else { 12 };
            let mut v = mutate::text(&mut rng, &s, dict, ops).into_bytes();
            if rng.chance(0.1) {
                mutate::havoc(&mut rng, &mut v, &other, 2, t.max_len);
            }
            v.truncate(t.max_len);
            v
        }
    }
}

thread_local! {
    static QUIET: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that, on threads running [`run_one`], records the message
/// and location instead of printing them; other threads keep the default hook.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let captured = QUIET.with(|q| {
                let mut q = q.borrow_mut();
                match q.as_mut() {
                    Some(slot) => {
                        *slot = info.to_string();
                        true
                    }
                    None => false,
                }
            });
            if !captured {
                prev(info);
            }
        }));
    });
}

/// Runs `t` on `data`; `Err` carries the panic message and location.
pub fn run_one(t: &Target, data: &[u8]) -> Result<(), String> {
    install_hook();
    QUIET.with(|q| *q.borrow_mut() = Some(String::new()));
    let r = panic::catch_unwind(AssertUnwindSafe(|| (t.run)(data)));
    let msg = QUIET.with(|q| q.borrow_mut().take()).unwrap_or_default();
    r.map_err(|_| msg)
}

/// Runs iterations `start..start + iters` of `t` (stopping early at `deadline`, or at the
/// first crash with `stop_on_crash`).
pub fn fuzz(t: &Target, corpus: &[Vec<u8>], seed: u64, start: u64, iters: u64, deadline: Option<Duration>, stop_on_crash: bool) -> Report {
    let t0 = Instant::now();
    let mut crashes: Vec<Crash> = Vec::new();
    let mut done = 0;
    for i in start..start.saturating_add(iters) {
        if done % 256 == 0 && deadline.is_some_and(|d| t0.elapsed() >= d) {
            break;
        }
        let data = input(t, corpus, seed, i);
        done += 1;
        if let Err(message) = run_one(t, &data) {
            // one example per panic site: the message up to its first line
            let site = message.lines().next().unwrap_or("").to_string();
            if !crashes.iter().any(|c| c.message.lines().next().unwrap_or("") == site) {
                crashes.push(Crash { iteration: i, input: data, message });
            }
            if stop_on_crash {
                break;
            }
        }
    }
    Report { target: t.name, iterations: done, corpus: corpus.len(), seconds: t0.elapsed().as_secs_f64(), crashes }
}

/// An input shown for a human: text as an escaped string, binary as hex.
pub fn show(input: &[u8]) -> String {
    match std::str::from_utf8(input) {
        Ok(s) => format!("{s:?}"),
        Err(_) => input.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// Looks a target up by name.
pub fn target(name: &str) -> Option<&'static Target> {
    targets::ALL.iter().find(|t| t.name == name)
}
