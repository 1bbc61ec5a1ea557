//! Helpers shared by the scenario-level test files.
#![allow(dead_code)]
use std::path::PathBuf;
use wirelab_core::{Duration, Instant};
use wirelab_scenario::{BuildOptions, Scenario};
use wirelab_sim::RunResults;

/// A fresh temporary directory `wirelab-GROUP-PID-NAME`.
pub fn tmp(group: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wirelab-{group}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Builds and runs scenario `text` in process (captures go to `out` if given).
pub fn run(text: &str, out: Option<PathBuf>) -> RunResults {
    let sc = Scenario::from_text("<test>", text, &[]).unwrap();
    let b = sc.build(&BuildOptions { seed: None, out_dir: out, live: false }).unwrap();
    let mut sim = b.sim;
    sim.run(Instant::ZERO + b.duration, Duration::ZERO, &mut |_| {});
    sim.finish().unwrap()
}
