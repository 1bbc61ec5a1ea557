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
    let mut opts = wirelab_packetdrill::Options { profile: a.profile.clone(), seed: a.seed, tolerance_usecs: a.tolerance_usecs, ..Default::default() };
    if let Err(e) = wirelab_packetdrill::command::add_defines(&mut opts, &a.defines) {
        eprintln!("error: {e}");
        return 2;
    }
    wirelab_packetdrill::command::command(&a.scripts, &opts, a.verbose, a.json.as_deref())
}
