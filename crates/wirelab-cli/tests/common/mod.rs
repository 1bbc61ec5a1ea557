//! Helpers shared by the scenario-level test files.
#![allow(dead_code)]
use std::path::PathBuf;
use wirelab_core::{Duration, Instant};
use wirelab_scenario::{BuildOptions, Scenario};
use wirelab_sim::RunResults;

/// A fresh temporary directory `wirelab-GROUP-PID-NAME`, removed when the guard drops
/// unless the test is panicking (a failed test keeps its outputs to look at). Without
/// this every run of the suite left ~0.5 GB of run directories in /tmp.
pub fn tmp(group: &str, name: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("wirelab-{group}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

/// See [`tmp`]; dereferences to the directory's path.
pub struct TmpDir(pub PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<std::path::Path> for TmpDir {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Builds and runs scenario `text` in process (captures go to `out` if given).
pub fn run(text: &str, out: Option<PathBuf>) -> RunResults {
    let sc = Scenario::from_text("<test>", text, &[]).unwrap();
    let b = sc.build(&BuildOptions { seed: None, out_dir: out, live: false }).unwrap();
    let mut sim = b.sim;
    sim.run(Instant::ZERO + b.duration, Duration::ZERO, &mut |_| {});
    sim.finish().unwrap()
}
