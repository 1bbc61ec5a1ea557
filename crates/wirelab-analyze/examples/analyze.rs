//! Standalone `analyze` until `wirelab analyze` is mounted in wirelab-cli:
//! `cargo run -p wirelab-analyze --example analyze -- CAPTURE [--receiver CAPTURE] [--out DIR]`.
use clap::Parser;

#[derive(Parser)]
#[command(name = "analyze")]
struct Cli {
    #[command(flatten)]
    args: wirelab_analyze::AnalyzeArgs,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = wirelab_analyze::run(&cli.args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
