//! Issue 2's "must show" checks, run through the same path as `wirelab run`.
use std::path::{Path, PathBuf};
use std::process::Command;
use wirelab_cli::run_scenario;
mod common;

fn tmp(name: &str) -> common::TmpDir {
    common::tmp("test", name)
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// h1 --(netem)--> h2, one CBR source and one sink.
fn two_hosts(netem: &str, src_extra: &str, duration: &str, capture: bool) -> String {
    format!(
        r#"[scenario]
name = "two-hosts"
duration = "{duration}"

[[node]]
name = "h1"

[[node]]
name = "h2"

[[link]]
a = {{ node = "h1", addr = "10.0.0.1/24", qdisc = "pfifo limit 100000" }}
b = {{ node = "h2", addr = "10.0.0.2/24" }}
netem = "{netem}"

[[app]]
name = "src"
kind = "udp-cbr"
node = "h1"
dst = "h2:9000"
{src_extra}

[[app]]
name = "sink"
kind = "udp-sink"
node = "h2"
port = 9000

[measure]
capture = [{cap}]
"#,
        cap = if capture { "\"h2:eth0\"" } else { "" }
    )
}

/// Runs `text`; returns the run's directory guard (outputs in `dir.join("out")`) and summary.
fn run_text(name: &str, text: &str, seed: Option<u64>) -> (common::TmpDir, serde_json::Value) {
    let dir = tmp(name);
    let f = dir.join("scenario.toml");
    std::fs::write(&f, text).unwrap();
    let out = dir.join("out");
    run_scenario(&f, &out, seed, &[], |_, _| {}).map_err(|e| e.1).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    (dir, v)
}

fn flow<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["flows"].as_array().unwrap().iter().find(|f| f["name"] == name).unwrap()
}

#[test]
fn saturated_udp_measures_the_link_rate_within_one_percent() {
    // 12 Mbit/s offered into 10 Mbit/s: the sink sees the link rate (frames incl. the
    // 14-byte Ethernet header, which is what netem's `rate` charges).
    let (_, v) = run_text("rate", &two_hosts("rate 10mbit delay 20ms", "rate = \"12mbit\"\nsize = 1472", "5s", false), None);
    let r = flow(&v, "sink")["wire_rate_bps"].as_f64().unwrap();
    assert!((r - 10e6).abs() / 10e6 < 0.01, "wire rate {r}");
}

#[test]
fn one_way_delay_is_serialisation_plus_propagation_exactly() {
    // 1000 B payload -> 1028 B datagram + 14 B link header = 1042 B = 833.6 us at 10 Mbit/s
    let (_, v) = run_text("delay", &two_hosts("rate 10mbit delay 20ms", "interval = \"10ms\"\nsize = 1000\ncount = 200", "3s", false), None);
    let s = flow(&v, "sink");
    let expect_ms = 20.0 + 1042.0 * 8.0 / 10e6 * 1e3;
    for k in ["delay_min_ms", "delay_mean_ms", "delay_max_ms"] {
        let d = s[k].as_f64().unwrap();
        assert!((d - expect_ms).abs() < 1e-9, "{k} = {d}, expected {expect_ms}");
    }
    assert_eq!(s["rx_packets"].as_u64().unwrap(), 200);
}

#[test]
fn random_loss_ten_percent_over_twenty_thousand_packets() {
    let (_, v) = run_text("loss", &two_hosts("rate 100mbit delay 1ms loss 10%", "interval = \"100us\"\nsize = 100\ncount = 20000", "3s", false), None);
    let s = flow(&v, "sink");
    let rx = s["rx_packets"].as_u64().unwrap() as f64;
    let loss = 1.0 - rx / 20000.0;
    assert!((loss - 0.10).abs() <= 0.01, "loss {loss}");
    // and the seed matters
    let (_, v2) = run_text("loss2", &two_hosts("rate 100mbit delay 1ms loss 10%", "interval = \"100us\"\nsize = 100\ncount = 20000", "3s", false), Some(2));
    assert_ne!(flow(&v2, "sink")["rx_packets"], s["rx_packets"]);
}

fn received_seqs(pcap: &Path) -> Vec<u64> {
    let pkts = wirelab_wire::pcap::read_file(pcap).unwrap();
    pkts.iter()
        .filter_map(|p| {
            let ip = p.ipv4()?;
            // 20 B IP + 8 B UDP, then the 8-byte sequence number
            Some(u64::from_be_bytes(ip.get(28..36)?.try_into().ok()?))
        })
        .collect()
}

#[test]
fn gilbert_elliott_bursts_have_the_configured_mean_length() {
    // gemodel p=1% r=10%: bad state lasts 1/r = 10 packets on average and loses all of them
    // (1-h = 100 %), so loss bursts average 10 packets.
    let n = 60000u64;
    let (dir, _) = run_text("ge", &two_hosts("rate 1gbit delay 1ms loss gemodel 1% 10%", &format!("interval = \"20us\"\nsize = 64\ncount = {n}"), "2s", true), None);
    let seqs = received_seqs(&dir.join("out/pcap/h2-eth0.pcap"));
    let mut bursts = Vec::new();
    let mut prev: i64 = -1;
    for s in seqs {
        let gap = s as i64 - prev - 1;
        if gap > 0 {
            bursts.push(gap as f64);
        }
        prev = s as i64;
    }
    let mean = bursts.iter().sum::<f64>() / bursts.len() as f64;
    assert!(bursts.len() > 300, "only {} bursts", bursts.len());
    assert!((mean - 10.0).abs() / 10.0 < 0.12, "mean burst {mean} over {} bursts", bursts.len());
}

fn strip_wall(mut v: serde_json::Value) -> serde_json::Value {
    v.as_object_mut().unwrap().remove("wall_seconds");
    v
}

#[test]
fn same_seed_is_byte_identical_and_another_seed_differs() {
    let sc = repo_root().join("scenarios/udp-bottleneck.toml");
    let mut outs = Vec::new();
    for (i, seed) in [1u64, 1, 2].iter().enumerate() {
        let out = tmp(&format!("det{i}"));
        run_scenario(&sc, &out, Some(*seed), &[], |_, _| {}).map_err(|e| e.1).unwrap();
        outs.push(out);
    }
    let summary = |o: &Path| strip_wall(serde_json::from_slice(&std::fs::read(o.join("summary.json")).unwrap()).unwrap());
    for f in ["pcap/r1-eth2.pcap", "pcap/h3-eth0.pcap", "flows.csv", "queue_probe.csv", "flow_timeseries.csv"] {
        assert_eq!(std::fs::read(outs[0].join(f)).unwrap(), std::fs::read(outs[1].join(f)).unwrap(), "{f} differs between identical runs");
    }
    assert_eq!(summary(&outs[0]), summary(&outs[1]));
    assert_ne!(std::fs::read(outs[0].join("pcap/h3-eth0.pcap")).unwrap(), std::fs::read(outs[2].join("pcap/h3-eth0.pcap")).unwrap());
    assert_ne!(summary(&outs[0])["fingerprint"], summary(&outs[2])["fingerprint"]);
}

#[test]
fn tshark_finds_no_errors_in_the_bundled_capture() {
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let out = tmp("tshark");
    run_scenario(&repo_root().join("scenarios/udp-bottleneck.toml"), &out, None, &[], |_, _| {}).map_err(|e| e.1).unwrap();
    for f in ["pcap/r1-eth2.pcap", "pcap/h3-eth0.pcap"] {
        let o = Command::new("tshark")
            .args(["-r", out.join(f).to_str().unwrap(), "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE", "-q", "-z", "expert,note"])
            .output()
            .unwrap();
        assert!(o.status.success(), "tshark failed: {}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout);
        for bad in ["Malformed", "Error", "Warning", "Bad checksum", "incorrect"] {
            assert!(!text.contains(bad), "{f}: tshark expert info mentions {bad}:\n{text}");
        }
        // every frame dissected as UDP with a good checksum
        let o = Command::new("tshark")
            .args(["-r", out.join(f).to_str().unwrap(), "-o", "udp.check_checksum:TRUE", "-Y", "udp.checksum.status != 1 || _ws.malformed || _ws.expert.severity >= warning"])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&o.stdout).trim().is_empty(), "{f}: frames flagged: {}", String::from_utf8_lossy(&o.stdout));
    }
}

fn wirelab(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_wirelab")).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stderr).to_string())
}

#[test]
fn malformed_scenarios_exit_2_naming_file_line_and_key() {
    let base = two_hosts("rate 10mbit delay 20ms", "rate = \"1mbit\"", "1s", false);
    // (name, text, a marker on the offending line, key)
    let cases: Vec<(&str, String, &str, &str)> = vec![
        ("bad-unit", base.replace("rate 10mbit delay 20ms", "rate 10 megabit delay 20ms"), "megabit", "link[0].netem"),
        ("bad-time", base.replace("duration = \"1s\"", "duration = \"1 fortnight\""), "fortnight", "scenario.duration"),
        ("unknown-key", base.replace("port = 9000", "port = 9000\ncolour = \"blue\""), "colour", "colour"),
        ("dangling-node", base.replace("node = \"h2\"\nport", "node = \"h9\"\nport"), "h9", "app[1].node"),
        ("toml-syntax", base.replace("[[node]]\nname = \"h2\"", "[[node]\nname = \"h2\""), "[[node]\n", "node"),
    ];
    for (name, text, marker, key) in cases {
        let lineno = text[..text.find(marker).unwrap()].matches('\n').count() + 1;
        let line = format!(":{lineno}:");
        let dir = tmp(name);
        let f = dir.join(format!("{name}.toml"));
        std::fs::write(&f, &text).unwrap();
        let (code, err) = wirelab(&["run", f.to_str().unwrap(), "--out", dir.join("o").to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: exit {code}, stderr {err}");
        assert!(err.contains(&format!("{name}.toml{line}")), "{name}: no file:line in {err}");
        assert!(err.contains(key), "{name}: no key `{key}` in {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        let (code, _) = wirelab(&["validate", f.to_str().unwrap()]);
        assert_eq!(code, 2);
    }
    let (code, err) = wirelab(&["run", "/nonexistent.toml", "--out", "/tmp/x"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn scheduled_link_down_and_up() {
    // 100 datagrams/s for 3 s; the link is down from 1 s to 2 s in the h1->h2 direction.
    let mut text = two_hosts("rate 10mbit delay 5ms", "interval = \"10ms\"\nsize = 100", "3s", false);
    text = text.replace("[[app]]\nname = \"src\"", "[[event]]\nat = \"1s\"\nlink = \"h1-h2\"\naction = \"down\"\ndirection = \"ab\"\n\n[[event]]\nat = \"2s\"\nlink = \"h1-h2\"\naction = \"up\"\ndirection = \"ab\"\n\n[[app]]\nname = \"src\"");
    let (_, v) = run_text("events", &text, None);
    let rx = flow(&v, "sink")["rx_packets"].as_u64().unwrap();
    // sent at 0..2.99 s = 300; those sent in [1 s, 2 s) and the one in flight at 1 s are lost
    assert!((198..=200).contains(&rx), "rx {rx}");
    let link = v["links"].as_array().unwrap().iter().find(|l| l["name"] == "h1-h2:h1->h2").unwrap();
    assert!(link["dropped_down"].as_u64().unwrap() >= 100);
}
