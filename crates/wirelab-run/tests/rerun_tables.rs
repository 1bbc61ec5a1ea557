//! A run owns its output directory (issue 21 item 3): every table file an earlier run
//! wrote is removed by the next run there, including `rr_latency.csv`, which was missing
//! from `output::TABLES` (so a shim run's latencies stayed beside a later UDP run's files,
//! and `Result(dir).rr_latency` read them).
use std::path::Path;

#[test]
fn a_rerun_removes_every_table_of_the_run_before() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let out = std::env::temp_dir().join(format!("wirelab-rerun-tables-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let sets = ["scenario.duration=10s".to_string(), "measure.capture=[]".to_string()];
    let first = wirelab_run::run_scenario(&root.join("shim/interactive.toml"), &out, None, &sets, |_, _| {}).unwrap();
    assert!(!first.results.rr_latency.is_empty() && out.join("rr_latency.csv").exists());
    for f in std::fs::read_dir(&out).unwrap() {
        let name = f.unwrap().file_name().to_string_lossy().to_string();
        if let Some(t) = name.strip_suffix(".csv") {
            assert!(wirelab_run::output::TABLES.contains(&t), "{name} is not in output::TABLES");
        }
    }
    wirelab_run::run_scenario(&root.join("udp-bottleneck.toml"), &out, None, &sets, |_, _| {}).unwrap();
    for stale in ["rr_latency.csv", "shim_matches.csv", "connections.csv", "tcp_timeseries.csv"] {
        assert!(!out.join(stale).exists(), "{stale} of the run before is still there");
    }
    std::fs::remove_dir_all(&out).unwrap();
}
