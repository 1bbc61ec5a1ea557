//! `wirelab-fuzz`: long fuzz campaigns, replays, and the corpus.
//!
//! ```text
//! wirelab-fuzz list
//! wirelab-fuzz run [TARGET...] [--iters N] [--seconds S] [--seed S] [--start I] [--crashes DIR]
//! wirelab-fuzz replay TARGET FILE
//! wirelab-fuzz seed-corpus
//! ```
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::time::Duration;
use wirelab_fuzz::{corpus_root, fuzz, load_corpus, run_one, show, target, targets::ALL, Report};

#[derive(Parser)]
#[command(name = "wirelab-fuzz", about = "Deterministic mutation fuzzing of wirelab's parsers and engines")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List the targets.
    List,
    /// Fuzz targets (all by default); exit 1 if anything panicked.
    Run {
        /// Targets to run.
        targets: Vec<String>,
        /// Iterations per target (corpus entries included).
        #[arg(long, default_value_t = 100_000)]
        iters: u64,
        /// Stop each target after this many wall seconds.
        #[arg(long)]
        seconds: Option<f64>,
        /// Campaign seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// First iteration (to replay iteration I: --start I --iters 1).
        #[arg(long, default_value_t = 0)]
        start: u64,
        /// Write each crashing input to DIR/TARGET/ITERATION.
        #[arg(long)]
        crashes: Option<PathBuf>,
    },
    /// Run one input file through a target and report.
    Replay {
        /// Target.
        target: String,
        /// Input file.
        file: PathBuf,
    },
    /// (Re)write fuzz/corpus from the repository's scenarios, captures and tc lines.
    SeedCorpus,
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.cmd {
        Cmd::List => {
            for t in ALL {
                println!("{:<14} {}", t.name, t.what);
            }
            0
        }
        Cmd::Run { targets, iters, seconds, seed, start, crashes } => run(&targets, iters, seconds, seed, start, crashes.as_deref()),
        Cmd::Replay { target: name, file } => {
            let Some(t) = target(&name) else {
                eprintln!("no target `{name}` (see `wirelab-fuzz list`)");
                std::process::exit(2);
            };
            let data = std::fs::read(&file).unwrap_or_else(|e| {
                eprintln!("{}: {e}", file.display());
                std::process::exit(2);
            });
            match run_one(t, &data) {
                Ok(()) => {
                    println!("ok");
                    0
                }
                Err(m) => {
                    println!("panic: {m}");
                    1
                }
            }
        }
        Cmd::SeedCorpus => match seed_corpus(&corpus_root()) {
            Ok(n) => {
                println!("wrote {n} corpus files under {}", corpus_root().display());
                0
            }
            Err(e) => {
                eprintln!("error: {e}");
                1
            }
        },
    };
    std::process::exit(code);
}

fn run(names: &[String], iters: u64, seconds: Option<f64>, seed: u64, start: u64, crash_dir: Option<&Path>) -> i32 {
    let chosen: Vec<_> = if names.is_empty() {
        ALL.iter().collect()
    } else {
        let mut v = Vec::new();
        for n in names {
            match target(n) {
                Some(t) => v.push(t),
                None => {
                    eprintln!("no target `{n}` (see `wirelab-fuzz list`)");
                    return 2;
                }
            }
        }
        v
    };
    println!("| target | corpus | iterations | seconds | iter/s | panics |\n| --- | --- | --- | --- | --- | --- |");
    let mut failed = false;
    for t in chosen {
        let corpus = load_corpus(t, &corpus_root());
        let r: Report = fuzz(t, &corpus, seed, start, iters, seconds.map(Duration::from_secs_f64), false);
        println!("| {} | {} | {} | {:.1} | {:.0} | {} |", r.target, r.corpus, r.iterations, r.seconds, r.iterations as f64 / r.seconds.max(1e-9), r.crashes.len());
        for c in &r.crashes {
            failed = true;
            eprintln!("{}: iteration {}: {}\n  input: {}", t.name, c.iteration, c.message, show(&c.input));
            if let Some(d) = crash_dir {
                let dir = d.join(t.name);
                let _ = std::fs::create_dir_all(&dir);
                let _ = std::fs::write(dir.join(c.iteration.to_string()), &c.input);
            }
        }
    }
    i32::from(failed)
}

/// Cuts a capture after its first `n` packet records (keeping headers and interface
/// blocks), so the corpus stays small.
fn cut_capture(b: &[u8], n: usize) -> Vec<u8> {
    let le32 = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]) as usize;
    let mut at;
    let mut pkts = 0;
    if b.len() >= 4 && b[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
        at = 0;
        while at + 8 <= b.len() && pkts < n {
            let kind = le32(at);
            let len = le32(at + 4);
            if len < 12 || at + len > b.len() {
                break;
            }
            if matches!(kind, 2 | 3 | 6) {
                pkts += 1;
            }
            at += len;
        }
    } else {
        at = 24;
        while at + 16 <= b.len() && pkts < n {
            at += 16 + le32(at + 8);
            pkts += 1;
        }
    }
    b[..at.min(b.len())].to_vec()
}

/// Writes `fuzz/corpus/<target>/<name>` from what the repository already has: every
/// bundled scenario, the tc and netem strings inside them, and the real Linux captures of
/// `wirelab-analyze`'s tests (cut to their first packets).
fn seed_corpus(root: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(root)?;
    let repo = root.join("../..");
    let mut n = 0;
    let mut write = |target: &str, name: &str, data: &[u8]| -> std::io::Result<()> {
        let d = root.join(target);
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(name), data)?;
        n += 1;
        Ok(())
    };
    let mut scenarios = Vec::new();
    let mut stack = vec![repo.join("scenarios")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "toml") {
                scenarios.push(p);
            }
        }
    }
    scenarios.sort();
    let mut tc = std::collections::BTreeSet::new();
    let mut netem = std::collections::BTreeSet::new();
    for p in &scenarios {
        let text = std::fs::read_to_string(p)?;
        let rel = p.strip_prefix(repo.join("scenarios")).unwrap_or(p).display().to_string().replace('/', "-");
        write("scenario", &rel, text.as_bytes())?;
        // quoted values of `qdisc`, `tc` and `netem` keys
        let doc: toml::Table = match toml::from_str(&text) {
            Ok(d) => d,
            Err(_) => continue,
        };
        let mut collect = |v: &toml::Value| {
            let mut todo = vec![v.clone()];
            while let Some(v) = todo.pop() {
                match v {
                    toml::Value::Table(t) => {
                        for (k, v) in t {
                            match (k.as_str(), &v) {
                                ("qdisc", toml::Value::String(s)) => {
                                    tc.insert(s.clone());
                                }
                                ("tc", toml::Value::Array(a)) => {
                                    let lines: Vec<&str> = a.iter().filter_map(|x| x.as_str()).collect();
                                    tc.insert(lines.join("\n"));
                                }
                                ("netem", toml::Value::String(s)) => {
                                    netem.insert(s.clone());
                                }
                                _ => todo.push(v),
                            }
                        }
                    }
                    toml::Value::Array(a) => todo.extend(a),
                    _ => {}
                }
            }
        };
        collect(&toml::Value::Table(doc));
    }
    for (i, s) in tc.iter().enumerate() {
        write("tc", &format!("scenario-{i:03}"), s.as_bytes())?;
    }
    for (i, s) in netem.iter().enumerate() {
        write("netem", &format!("scenario-{i:03}"), s.as_bytes())?;
    }
    let data = repo.join("crates/wirelab-analyze/tests/data");
    for f in ["linux-veth-sender.pcap", "linux-veth-receiver.pcapng"] {
        let b = std::fs::read(data.join(f))?;
        let cut = cut_capture(&b, 40);
        write("pcap", f, &cut)?;
        write("analyze", f, &cut)?;
    }
    Ok(n)
}
