//! Resource guards (issue 22, item 1): runs that would fill the disk or the memory stop
//! with exit code 3, a message naming the limit, and the results up to there written.
//! Each case runs the `wirelab` binary, so its resident memory is its own.
mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (exit code, stderr) of `wirelab ARGS`.
fn wirelab(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_wirelab")).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn a_long_captured_run_stops_at_the_capture_limit_with_partial_results() {
    let out = common::tmp("limits", "capture");
    let q = repo().join("scenarios/udp-bottleneck.toml");
    let (code, err) = wirelab(&["run", q.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--set", "scenario.duration=1000000s", "--max-capture", "5MB", "--max-memory", "none"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("error: resource limit: capture files reached") && err.contains("(--max-capture 5.00 MiB) at "), "{err}");
    assert!(err.contains("the results of its first") && err.contains("of 1000000 s are written to"), "{err}");
    let s = summary(&out);
    let t = s["sim_seconds"].as_f64().unwrap();
    assert!(t > 0.5 && t < 100.0, "stopped early: {t}");
    assert!(s["stopped_by_limit"].as_str().unwrap().starts_with("capture files reached"));
    // every output file is there and the captures are complete, readable files
    for f in ["flows.csv", "queues.csv", "links.csv", "flow_timeseries.csv", "queue_timeseries.csv"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let mut total = 0;
    for p in std::fs::read_dir(out.join("pcap")).unwrap() {
        let p = p.unwrap().path();
        total += std::fs::metadata(&p).unwrap().len();
        let pk = wirelab_wire::pcap::read_file(&p).unwrap();
        assert!(!pk.is_empty());
    }
    assert!((5 << 20..100 << 20).contains(&total), "{total}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn one_nanosecond_sampling_is_refused_before_the_run() {
    // before: "memory allocation of 7 bytes failed", exit 134
    let out = common::tmp("limits", "sample");
    let q = repo().join("scenarios/udp-bottleneck.toml");
    let (code, err) = wirelab(&["run", q.to_str().unwrap(), "--out", out.to_str().unwrap(), "--set", "measure.sample_interval=1ns", "--max-memory", "4GB"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("measure.sample_interval = 1ns over 10s makes 10000000001 samples of ~16 time-series rows: about 18.63 TiB in memory, above --max-memory 4.00 GiB"), "{err}");
    assert!(!out.join("summary.json").exists(), "nothing ran");
}

#[test]
fn a_duplicating_routing_loop_stops_at_the_memory_limit() {
    // r1 and r2 route 10.9/16 to each other, the link between them duplicates every
    // packet, and the queues never drop: copies multiply until memory runs out
    let scen = r#"[scenario]
name = "loop"
duration = "10s"
[[node]]
name = "h1"
[[node]]
name = "r1"
kind = "router"
[[node]]
name = "r2"
kind = "router"
[[link]]
a = { node = "h1", addr = "10.0.1.1/24" }
b = { node = "r1", addr = "10.0.1.2/24" }
netem = "rate 100mbit delay 1ms"
[[link]]
name = "loop"
a = { node = "r1", addr = "10.0.2.1/24", qdisc = "pfifo limit 4294967295" }
b = { node = "r2", addr = "10.0.2.2/24", qdisc = "pfifo limit 4294967295" }
netem = "rate 10gbit delay 1ms duplicate 100%"
[[route]]
node = "r1"
dst = "10.9.0.0/16"
via = "10.0.2.2"
[[route]]
node = "r2"
dst = "10.9.0.0/16"
via = "10.0.2.1"
[[app]]
kind = "udp-cbr"
node = "h1"
dst = "10.9.0.1:5000"
rate = "1mbit"
"#;
    let dir = common::tmp("limits", "loop");
    let f = dir.join("loop.toml");
    std::fs::write(&f, scen).unwrap();
    let out = dir.join("out");
    let (code, err) = wirelab(&["run", f.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--max-memory", "200MB"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("resident memory") && err.contains("reached --max-memory 200.00 MiB"), "{err}");
    let s = summary(&out);
    assert!(s["sim_seconds"].as_f64().unwrap() < 10.0);
    assert!(s["links"].as_array().unwrap().iter().any(|l| l["duplicated"].as_u64().unwrap() > 1000));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn event_limit_and_disk_reserve() {
    let out = common::tmp("limits", "events");
    let q = repo().join("scenarios/udp-bottleneck.toml");
    let (code, err) = wirelab(&["run", q.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--max-events", "50000"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("--max-events 50000 reached at"), "{err}");
    // checked every 65536 events (the whole run has 75932)
    assert_eq!(summary(&out)["events"].as_u64(), Some(65536));
    let (code, err) = wirelab(&["run", q.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--min-disk-free", "1000000000gb"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("free on the filesystem of") && err.contains("captures need at least --min-disk-free"), "{err}");
    let (code, err) = wirelab(&["run", q.to_str().unwrap(), "--out", out.to_str().unwrap(), "--max-memory", "lots"]);
    assert_eq!(code, 2, "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_scenario_too_big_to_parse_is_refused_before_reading_it() {
    let dir = common::tmp("limits", "big");
    let f = dir.join("big.toml");
    // 1 MB of comments is enough to exceed a 10 MB limit at ~70 bytes of memory per byte
    let text = format!("{}{}", "# padding\n".repeat(100_000), std::fs::read_to_string(repo().join("scenarios/udp-bottleneck.toml")).unwrap());
    std::fs::write(&f, &text).unwrap();
    let (code, err) = wirelab(&["run", f.to_str().unwrap(), "--out", dir.join("o").to_str().unwrap(), "--max-memory", "10MB"]);
    assert_eq!(code, 3, "{err}");
    let kib = format!("big.toml is {:.2} KiB", text.len() as f64 / 1024.0);
    assert!(err.contains(&kib) && err.contains("parsing it needs about") && err.contains("above --max-memory 10.00 MiB"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
