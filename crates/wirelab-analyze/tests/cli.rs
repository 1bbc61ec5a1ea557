//! The clap front end as `wirelab analyze` will mount it.
mod common;

use clap::Parser;
use common::*;
use std::net::Ipv4Addr;
use wirelab_analyze::{run, AnalyzeArgs};
use wirelab_core::{Duration, Instant};
use wirelab_wire::pcap::PcapWriter;

#[derive(Parser, Debug)]
#[command(name = "wirelab")]
enum Cli {
    Analyze(AnalyzeArgs),
}

fn parse(args: &[&str]) -> Result<AnalyzeArgs, clap::Error> {
    let mut v = vec!["wirelab", "analyze"];
    v.extend_from_slice(args);
    Cli::try_parse_from(v).map(|Cli::Analyze(a)| a)
}

#[test]
fn parses_flags_and_defaults() {
    let a = parse(&["cap.pcap", "--receiver", "r.pcapng", "--class", "thin=dport:5000-5100", "--class", "bulk=80", "--out", "o"]).unwrap();
    assert_eq!(a.capture.to_str(), Some("cap.pcap"));
    assert_eq!(a.receiver.as_deref().and_then(|p| p.to_str()), Some("r.pcapng"));
    assert_eq!(a.interval, "1s");
    assert_eq!(a.classes, ["thin=dport:5000-5100", "bulk=80"]);
    let o = a.options().unwrap();
    assert_eq!(o.interval, Duration::from_secs(1));
    assert_eq!(o.classes[1].name, "bulk");
    assert!(parse(&[]).is_err(), "CAPTURE is required");

    let e = parse(&["c", "--interval", "fast"]).unwrap().options().unwrap_err().to_string();
    assert!(e.starts_with("--interval fast:"), "{e}");
    let e = parse(&["c", "--interval", "0ms"]).unwrap().options().unwrap_err().to_string();
    assert_eq!(e, "--interval must be positive");
    let e = parse(&["c", "--class", "thin"]).unwrap().options().unwrap_err().to_string();
    assert!(e.contains("expected NAME=RULE"), "{e}");
}

#[test]
fn run_writes_tables_and_reports_missing_files() {
    let dir = std::env::temp_dir().join(format!("wirelab-analyze-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = ((Ipv4Addr::new(10, 0, 0, 1), 1000), (Ipv4Addr::new(10, 0, 0, 2), 5000));
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    for i in 0..10u32 {
        let t = Instant::from_nanos(u64::from(i) * 100_000_000);
        w.write_ipv4_as_ethernet(t, [2; 6], [4; 6], &datagram(a, b, 1 + 10 * i, 1, ACK, &[], 10, 0)).unwrap();
        let t = t + Duration::from_millis(30);
        w.write_ipv4_as_ethernet(t, [4; 6], [2; 6], &datagram(b, a, 1, 11 + 10 * i, ACK, &[], 0, 0)).unwrap();
    }
    let cap = dir.join("c.pcap");
    std::fs::write(&cap, w.into_inner().unwrap()).unwrap();
    let out = dir.join("out");
    let json = dir.join("s.json");
    let args = parse(&[cap.to_str().unwrap(), "--out", out.to_str().unwrap(), "--json", json.to_str().unwrap(), "--class", "thin=dport:5000"]).unwrap();
    run(&args).unwrap();
    let flows = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    let row: Vec<&str> = flows.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(&row[..4], ["10.0.0.1:1000>10.0.0.2:5000", "thin", "10", "0"]);
    assert_eq!(row[16], "30.000000", "ack latency p50 in ms");
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["flows"][0]["ack_latency"]["n"], 10);
    assert_eq!(std::fs::read_to_string(&json).unwrap(), std::fs::read_to_string(out.join("summary.json")).unwrap());

    let missing = dir.join("nope.pcap");
    let e = run(&parse(&[missing.to_str().unwrap()]).unwrap()).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}: ", missing.display())), "{e}");
    std::fs::write(&missing, b"GIF89a not a capture").unwrap();
    let e = run(&parse(&[missing.to_str().unwrap()]).unwrap()).unwrap_err().to_string();
    assert!(e.contains("nope.pcap: not a pcap or pcapng file"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 22: `--interval 1e300s` used to be clamped to 584 years.
#[test]
fn out_of_range_interval_is_rejected_with_the_range() {
    let e = parse(&["cap.pcap", "--interval", "1e300s"]).unwrap().options().unwrap_err().to_string();
    assert_eq!(e, "--interval 1e300s: `1e300s` is not a time in whole nanoseconds from 0ns to 18446744073.709551615s (about 584 years)");
    let e = parse(&["cap.pcap", "--interval", "0.5ns"]).unwrap().options().unwrap_err().to_string();
    assert!(e.contains("whole nanoseconds"), "{e}");
    assert!(parse(&["cap.pcap", "--interval", "1e3s"]).unwrap().options().is_ok());
}
