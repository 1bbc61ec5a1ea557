//! Issue 5's scenario-level "must show" checks: SCTP driven by the simulator.
mod common;
use common::run;
use std::process::Command;
use wirelab_sim::RunResults;

fn tmp(name: &str) -> common::TmpDir {
    common::tmp("sctp", name)
}

/// Two hosts joined by two 10 Mbit/s, 20 ms paths (`p1` primary, `p2` alternate).
fn two_paths(profile: &str, sysctl: &str, app: &str, dur: &str, extra: &str) -> String {
    format!(
        r#"[scenario]
name = "two-paths"
duration = "{dur}"
profile = "{profile}"

[[node]]
name = "h1"
[node.sysctl]
{sysctl}

[[node]]
name = "h2"
[node.sysctl]
{sysctl}

[[link]]
name = "p1"
a = {{ node = "h1", addr = "10.1.0.1/24" }}
b = {{ node = "h2", addr = "10.1.0.2/24" }}
netem = "rate 10mbit delay 20ms"

[[link]]
name = "p2"
a = {{ node = "h1", addr = "10.2.0.1/24" }}
b = {{ node = "h2", addr = "10.2.0.2/24" }}
netem = "rate 10mbit delay 20ms"

[[app]]
name = "client"
kind = "sctp-bulk"
node = "h1"
dst = "h2:6000"
{app}

[[app]]
name = "server"
kind = "sctp-sink"
node = "h2"
port = 6000

{extra}
"#
    )
}

#[test]
fn tshark_validates_crc32c_and_shows_chunk_150_in_a_multistream_transfer() {
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let out = tmp("pcap");
    // decile marking per packet (v4), 4 streams, 1 % loss for SACK gap blocks and retransmissions
    let text = two_paths(
        "linux-4.6",
        "\"net.sctp.sndbuf_adv\" = \"v4\"",
        "streams = 4\nbytes = \"3000000\"",
        "12s",
        "[[event]]\nat = \"0s\"\nlink = \"p1\"\naction = \"netem\"\nnetem = \"rate 10mbit delay 20ms loss 1%\"\n\n[measure]\ncapture = [\"h2:eth0\"]\n",
    );
    let r = run(&text, Some(out.clone()));
    let server = r.flows.iter().find(|f| f.name == "server").unwrap();
    assert_eq!(server.rx_bytes, 3_000_000, "{server:?}");
    // the time series show the marking from both ends: advertisements sent by the client,
    // the last decile the server received
    let sent = r.sctp_series.iter().filter(|x| x.flow == "client").map(|x| x.sndbuf_adv_sent).max().unwrap_or(0);
    assert!(sent > 100, "chunk 0x96 sent: {sent}");
    let rx: Vec<u8> = r.sctp_series.iter().filter(|x| x.flow == "server").map(|x| x.sndbuf_adv_rx_flags).collect();
    assert!(rx.iter().all(|&f| f <= 10) && rx.iter().any(|&f| f > 0), "{rx:?}");
    let p = out.join("pcap/h2-eth0.pcap");
    let p = p.to_str().unwrap();
    let tshark = |filter: &str| -> String {
        let o = Command::new("tshark").args(["-r", p, "-o", "sctp.checksum:CRC 32c", "-Y", filter, "-T", "fields", "-e", "frame.number"]).output().unwrap();
        assert!(o.status.success(), "tshark: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let all = tshark("sctp").lines().count();
    assert!(all > 1000, "expected a full transfer in the capture, got {all} SCTP packets");
    let bad = tshark("_ws.malformed || _ws.expert.severity >= error || sctp.checksum.status == 0 || ip.checksum.status == 0");
    assert!(bad.trim().is_empty(), "frames with errors: {bad}");
    // every SCTP packet's CRC-32C verified good
    assert_eq!(tshark("sctp.checksum.status == 1").lines().count(), all, "CRC32c not verified on every packet");
    // DATA on four streams, SACKs with gap blocks
    for s in 0..4 {
        assert!(tshark(&format!("sctp.data_sid == {s}")).lines().count() > 10, "stream {s}");
    }
    assert!(tshark("sctp.sack_number_of_gap_blocks > 0").lines().count() > 0, "gap blocks");
    // chunk 150 (0x96) with decile flags 0..=10, bundled with DATA
    let adv = tshark("sctp.chunk_type == 150");
    assert!(adv.lines().count() > 100, "chunk 150 in {} packets", adv.lines().count());
    let o = Command::new("tshark").args(["-r", p, "-Y", "sctp.chunk_type == 150", "-T", "fields", "-e", "sctp.chunk_type", "-e", "sctp.chunk_flags"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    for line in text.lines() {
        let flags_field = line.split('\t').nth(1).unwrap_or("");
        // a packet may hold several chunks; find the flags of the 150 chunk
        let types: Vec<&str> = line.split('\t').next().unwrap_or("").split(',').collect();
        let flags: Vec<&str> = flags_field.split(',').collect();
        let k = types.iter().position(|t| *t == "150").unwrap();
        let f = u8::from_str_radix(flags[k].trim_start_matches("0x"), 16).unwrap();
        assert!(f <= 10, "decile flags {f} out of range");
    }
}

/// Returns (down time, time the association's active path left path 0).
fn failover_time(r: &RunResults, down_at: f64) -> f64 {
    let moved = r.sctp_series.iter().filter(|s| s.flow == "client" && s.time_s > down_at).find(|s| s.active_path != 0).expect("never failed over");
    moved.time_s - down_at
}

#[test]
fn multihomed_transfer_survives_primary_failure_within_rto_arithmetic() {
    // with potentially-failed state (linux-6: pf_retrans = 0) the first T3 timeout moves
    // data to the alternate path: failover ≈ one RTO (rto_min = 1 s dominates at 40 ms RTT)
    let ev = "[[event]]\nat = \"2s\"\nlink = \"p1\"\naction = \"down\"\n\n[measure]\nsample_interval = \"10ms\"\n";
    let r = run(&two_paths("linux-6", "", "bytes = \"6000000\"", "20s", ev), None);
    let server = r.flows.iter().find(|f| f.name == "server").unwrap();
    assert_eq!(server.rx_bytes, 6_000_000, "all bytes delivered");
    let client = r.flows.iter().find(|f| f.name == "client").unwrap();
    assert_eq!(client.state, "done", "{client:?}");
    let rto = r.sctp_series.iter().rfind(|s| s.flow == "client" && s.time_s <= 2.0).unwrap().rto_ms / 1000.0;
    let t = failover_time(&r, 2.0);
    eprintln!("PF failover after {t:.3} s (RTO before the failure {rto:.3} s)");
    assert!(t >= rto * 0.5 && t <= rto + 0.1, "failover {t} s vs one RTO {rto} s");

    // without PF (RFC 9260 §8.2): the primary must fail Path.Max.Retrans + 1 = 6 times in
    // a row, with RTO doubling each time: 1+2+4+8+16+32 = 63 s at RTO.min = 1 s
    let sys = "\"net.sctp.pf_enable\" = 0\n\"net.sctp.rto_min\" = 1000";
    let r = run(&two_paths("linux-6", sys, "bytes = \"6000000\"", "90s", &ev.replace("10ms", "100ms")), None);
    let server = r.flows.iter().find(|f| f.name == "server").unwrap();
    assert_eq!(server.rx_bytes, 6_000_000, "all bytes delivered without PF");
    let t = failover_time(&r, 2.0);
    let expected: f64 = (0..6).map(|k| (1.0f64 * 2f64.powi(k)).min(60.0)).sum();
    eprintln!("failover without PF after {t:.1} s (RTO arithmetic: {expected} s)");
    assert!(t >= expected - 1.0 && t <= expected + 1.5, "failover {t} s vs {expected} s");
}

#[test]
fn sctp_and_reno_tcp_get_comparable_goodput_under_one_percent_loss() {
    let text = |proto: &str| {
        let (client, server, extra) = match proto {
            "sctp" => ("sctp-bulk", "sctp-sink", ""),
            _ => ("tcp-bulk", "tcp-sink", "cc = \"reno\"\n"),
        };
        format!(
            r#"[scenario]
name = "loss"
duration = "60s"

[[node]]
name = "h1"
[[node]]
name = "h2"

[[link]]
a = {{ node = "h1", netem = "rate 10mbit delay 20ms loss 1%", qdisc = "pfifo limit 1000" }}
b = {{ node = "h2" }}
netem = "rate 10mbit delay 20ms"

[[app]]
name = "client"
kind = "{client}"
node = "h1"
dst = "h2:6000"
{extra}
[[app]]
name = "server"
kind = "{server}"
node = "h2"
port = 6000

[measure]
sample_interval = "1s"
"#
        )
    };
    let mut g = Vec::new();
    for proto in ["sctp", "tcp"] {
        let r = run(&text(proto), None);
        let s = r.flows.iter().find(|f| f.name == "server").unwrap();
        g.push(s.rx_bytes as f64 * 8.0 / 60.0);
    }
    eprintln!("1 % loss, 10 Mbit/s, 40 ms RTT: SCTP {:.3} Mbit/s, Reno TCP {:.3} Mbit/s, ratio {:.2}", g[0] / 1e6, g[1] / 1e6, g[0] / g[1]);
    let ratio = g[0] / g[1];
    assert!((0.5..=2.0).contains(&ratio), "SCTP/TCP goodput ratio {ratio}");
}

/// Two routed paths whose subnets share no prefix with each other (10.1/10.11 and
/// 10.2/10.12): each path's source address must come from the route, not from the longest
/// common prefix, and each host must reach the other's alternate subnet through the router
/// that owns it, or the alternate path's SACKs travel over the dead primary.
#[test]
fn routed_multihoming_picks_sources_by_route_and_fails_over() {
    let text = r#"[scenario]
name = "routed-multihoming"
duration = "20s"

[[node]]
name = "h1"
[[node]]
name = "ra"
kind = "router"
[[node]]
name = "rb"
kind = "router"
[[node]]
name = "h2"

[[link]]
name = "a1"
a = { node = "h1", addr = "10.1.0.1/24" }
b = { node = "ra", addr = "10.1.0.254/24" }
netem = "rate 10mbit delay 10ms"
[[link]]
name = "a2"
a = { node = "ra", addr = "10.11.0.254/24" }
b = { node = "h2", addr = "10.11.0.2/24" }
netem = "rate 10mbit delay 10ms"
[[link]]
name = "b1"
a = { node = "h1", addr = "10.2.0.1/24" }
b = { node = "rb", addr = "10.2.0.254/24" }
netem = "rate 10mbit delay 10ms"
[[link]]
name = "b2"
a = { node = "rb", addr = "10.12.0.254/24" }
b = { node = "h2", addr = "10.12.0.2/24" }
netem = "rate 10mbit delay 10ms"

[[app]]
name = "client"
kind = "sctp-bulk"
node = "h1"
dst = "h2:6000"
bytes = "6000000"

[[app]]
name = "server"
kind = "sctp-sink"
node = "h2"
port = 6000

[[event]]
at = "2s"
link = "a2"
action = "down"

[measure]
sample_interval = "50ms"
"#;
    let r = run(text, None);
    let server = r.flows.iter().find(|f| f.name == "server").unwrap();
    assert_eq!(server.rx_bytes, 6_000_000, "{server:?}");
    assert_eq!(r.flows.iter().find(|f| f.name == "client").unwrap().state, "done");
    // each path's local address is the one its route uses
    let paths: Vec<_> = r.sctp_path_series.iter().filter(|p| p.flow == "client" && p.time_s > 1.0 && p.time_s < 1.1).collect();
    assert!(paths.iter().any(|p| p.addr == "10.12.0.2"), "{paths:?}");
    let t = r.sctp_series.iter().filter(|s| s.flow == "client" && s.time_s > 2.0).find(|s| s.active_path != 0).expect("fails over").time_s - 2.0;
    assert!(t <= 1.2, "failover after {t} s");
}
