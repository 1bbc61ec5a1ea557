//! `wirelab packetdrill SCRIPT.pkt …`: runs packetdrill scripts against wirelab's TCP
//! engine (docs/packetdrill.md). Exit code: 0 all passed, 1 a script failed, 2 a script
//! could not be parsed or uses something unsupported.
use std::path::PathBuf;

/// Arguments of `wirelab packetdrill`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scripts to run (.pkt files).
    #[arg(required = true)]
    pub scripts: Vec<PathBuf>,
    /// TCP profile of the stack under test.
    #[arg(long, default_value = "linux-6")]
    pub profile: String,
    /// Seed for ISNs, timestamp offsets and ports.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Override every script's --tolerance_usecs.
    #[arg(long)]
    pub tolerance_usecs: Option<i64>,
    /// -D NAME=VALUE symbol definitions (as packetdrill's -D).
    #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
    pub defines: Vec<String>,
    /// Print what was accepted as having no effect (notes), print() output and every
    /// packet injected and sent (as packetdrill -v).
    #[arg(long, short)]
    pub verbose: bool,
    /// Write one JSON object per script (path, status, exit code, message) here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Runs the scripts; returns the exit code.
pub fn run(a: &Args) -> i32 {
    let mut opts = wirelab_packetdrill::Options { profile: a.profile.clone(), seed: a.seed, tolerance_usecs: a.tolerance_usecs, trace: a.verbose, ..Default::default() };
    for d in &a.defines {
        let Some((k, v)) = d.split_once('=') else {
            eprintln!("error: -D {d}: expected NAME=VALUE");
            return 2;
        };
        opts.defines.insert(k.to_string(), v.to_string());
    }
    let mut worst = 0;
    let mut rows = Vec::new();
    for p in &a.scripts {
        let o = wirelab_packetdrill::run_file(p, &opts);
        let code = o.exit_code();
        let tag = match code {
            0 => "PASS",
            1 => "FAIL",
            _ => "UNSUPPORTED",
        };
        println!("{tag} {}", p.display());
        if !o.message.is_empty() {
            eprintln!("{}", o.message);
        }
        if a.verbose {
            for l in &o.trace {
                println!("  {l}");
            }
            for n in &o.notes {
                eprintln!("  note: {n}");
            }
            for l in &o.printed {
                println!("  {l}");
            }
        }
        // 2 (cannot run) outranks 1 (failed)
        worst = worst.max(code);
        rows.push(serde_json::json!({
            "path": p.display().to_string(),
            "status": tag,
            "rc": code,
            "message": o.message,
            "notes": o.notes,
        }));
    }
    if let Some(j) = &a.json {
        let text = serde_json::to_string_pretty(&rows).unwrap_or_default();
        if let Err(e) = std::fs::write(j, text + "\n") {
            eprintln!("error: cannot write {}: {e}", j.display());
            return worst.max(1);
        }
    }
    worst
}
