//! Issue 19's scenario-level checks: SCTP concurrent multipath transfer (CMT) driven by
//! the simulator over the bundled two-path scenario.
mod common;
use common::run;
use std::path::Path;
use std::process::Command;

fn tmp(name: &str) -> common::TmpDir {
    common::tmp("cmt", name)
}

fn scenario() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/cmt/two-paths.toml")).unwrap()
}

/// The bundled scenario with `node.*.sysctl` tables and extra app keys spliced in.
fn with(sysctl: &str, bulk: &str, sink: &str, extra: &str) -> String {
    scenario()
        .replace("[[node]]\nname = \"c\"\n", &format!("[[node]]\nname = \"c\"\n[node.sysctl]\n{sysctl}\n"))
        .replace("[[node]]\nname = \"s\"\n", &format!("[[node]]\nname = \"s\"\n[node.sysctl]\n{sysctl}\n"))
        .replace("start = \"100ms\"\n", &format!("start = \"100ms\"\n{bulk}\n"))
        .replace("port = 6000\n", &format!("port = 6000\n{sink}\n"))
        .replace("[measure]\n", &format!("{extra}\n[measure]\n"))
}

const CMT_DAC: &str = "\"net.inet.sctp.cmt_on_off\" = 1\n\"net.inet.sctp.cmt_use_dac\" = 1\n\"net.core.rmem_max\" = 8388608\n\"net.core.wmem_max\" = 8388608";

#[test]
fn cmt_capture_is_tshark_clean_with_dac_flags_and_data_on_both_paths() {
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let out = tmp("pcap");
    let text = with(CMT_DAC, "bytes = \"4000000\"\nsndbuf = \"2mb\"", "rcvbuf = \"2mb\"", "").replace("[measure]\n", "[measure]\ncapture = [\"s\"]\n").replace("duration = \"30s\"", "duration = \"8s\"");
    let r = run(&text, Some(out.clone()));
    let sink = r.flows.iter().find(|f| f.name == "sink").unwrap();
    assert_eq!(sink.rx_bytes, 4_000_000, "{sink:?}");
    let mut pcaps: Vec<_> = std::fs::read_dir(out.join("pcap")).unwrap().map(|e| e.unwrap().path()).collect();
    pcaps.sort();
    assert_eq!(pcaps.len(), 2, "{pcaps:?}");
    let mut data_per_iface = Vec::new();
    for p in &pcaps {
        let p = p.to_str().unwrap();
        let tshark = |filter: &str| -> usize {
            let o = Command::new("tshark").args(["-r", p, "-o", "sctp.checksum:CRC 32c", "-Y", filter, "-T", "fields", "-e", "frame.number"]).output().unwrap();
            assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8_lossy(&o.stdout).lines().count()
        };
        let all = tshark("sctp");
        assert_eq!(tshark("_ws.malformed || _ws.expert.severity >= error || sctp.checksum.status == 0 || ip.checksum.status == 0"), 0, "{p}");
        assert_eq!(tshark("sctp.checksum.status == 1"), all, "CRC32c verified on every packet of {p}");
        data_per_iface.push(tshark("sctp.data_tsn"));
        // the SACKs the server sends carry DAC's packet count in the flags (0x40 or 0x80)
        let flagged = tshark("sctp.chunk_type == 3 && (sctp.chunk_flags == 0x80 || sctp.chunk_flags == 0x40)");
        let sacks = tshark("sctp.chunk_type == 3");
        assert!(sacks > 100 && flagged * 10 >= sacks * 9, "{p}: {flagged} of {sacks} SACKs flagged");
        assert!(tshark("sctp.sack_number_of_gap_blocks > 0") > 10, "{p}: gap blocks from the reordering");
    }
    assert!(data_per_iface.iter().all(|&n| n > 500), "DATA on both paths: {data_per_iface:?}");
    // per-path counters in sctp_path_timeseries
    let last: Vec<_> = (0..2).map(|k| r.sctp_path_series.iter().rfind(|p| p.flow == "bulk" && p.path == k).unwrap()).collect();
    assert!(last.iter().all(|p| p.bytes_sent > 500_000 && p.bytes_acked > 500_000), "{last:?}");
    let acked: u64 = last.iter().map(|p| p.bytes_acked).sum();
    assert!(acked <= 4_000_000 + 200_000, "per-path acked bytes add up to the transfer: {acked}");
}

#[test]
fn same_cmt_scenario_and_seed_give_byte_identical_results() {
    if !Path::new(env!("CARGO_BIN_EXE_wirelab")).exists() {
        return;
    }
    let text = with(CMT_DAC, "sndbuf = \"1mb\"", "rcvbuf = \"1mb\"", "[[event]]\nat = \"3s\"\nlink = \"p2b\"\naction = \"netem\"\nnetem = \"rate 5mbit delay 60ms loss 1%\"\n")
        .replace("[measure]\n", "[measure]\ncapture = [\"c\"]\n")
        .replace("duration = \"30s\"", "duration = \"6s\"");
    let dir = tmp("determinism");
    let sc = dir.join("cmt.toml");
    std::fs::write(&sc, text).unwrap();
    let go = |name: &str| {
        let out = dir.join(name);
        let o = Command::new(env!("CARGO_BIN_EXE_wirelab")).args(["run", sc.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let (a, b) = (go("a"), go("b"));
    let mut files = Vec::new();
    for e in walk(&a) {
        let rel = e.strip_prefix(&a).unwrap().to_path_buf();
        if rel == Path::new("summary.json") {
            continue; // holds the wall-clock time
        }
        files.push(rel);
    }
    assert!(files.iter().any(|f| f.extension().is_some_and(|x| x == "pcap")), "{files:?}");
    assert!(files.len() >= 6, "{files:?}");
    for f in &files {
        assert!(std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(), "{} differs between two runs", f.display());
    }
    let fp = |d: &Path| {
        let s = std::fs::read_to_string(d.join("summary.json")).unwrap();
        s.split("\"fingerprint\"").nth(1).unwrap().split('"').nth(1).unwrap().to_string()
    };
    assert_eq!(fp(&a), fp(&b));
}

fn walk(d: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            v.extend(walk(&p));
        } else {
            v.push(p);
        }
    }
    v.sort();
    v
}

#[test]
fn bad_cmt_values_are_clear_errors() {
    use wirelab_scenario::Scenario;
    let e = Scenario::from_text("cmt.toml", &with("", "cmt = 7", "", ""), &[]).and_then(|s| s.build(&Default::default()).map(|_| ())).unwrap_err().to_string();
    assert!(e.contains("cmt.toml") && e.contains("0..=4"), "{e}");
    let e = Scenario::from_text("cmt.toml", &with("\"net.inet.sctp.cmt_on_off\" = 9", "", "", ""), &[]).and_then(|s| s.build(&Default::default()).map(|_| ())).unwrap_err().to_string();
    assert!(e.contains("net.inet.sctp.cmt_on_off") && e.contains("0..=4"), "{e}");
    let e = Scenario::from_text("cmt.toml", &with("\"net.inet.sctp.cmt_rtx_policy\" = \"lossrate\"", "", "", ""), &[]).and_then(|s| s.build(&Default::default()).map(|_| ())).unwrap_err().to_string();
    assert!(e.contains("same, asap, cwnd or ssthresh"), "{e}");
}
