//! Receiver-side rate control (seed 003) wired into the simulator: node sysctls
//! `net.ipv4.rate_*` install a controller on every TCP connection of the node.
mod common;
use wirelab_sim::RunResults;

fn run(rx_sysctl: &str) -> RunResults {
    let text = format!(
        r#"[scenario]
name = "rc"
duration = "30s"
profile = "linux-2.2"

[[node]]
name = "tx"
[[node]]
name = "rx"
sysctl = {{ {rx_sysctl} }}

[[link]]
a = {{ node = "tx" }}
b = {{ node = "rx" }}
netem = "rate 10mbit delay 10ms"

[[app]]
name = "ttcp"
kind = "tcp-bulk"
node = "tx"
dst = "rx:5001"
size = 8192

[[app]]
name = "sink"
kind = "tcp-sink"
node = "rx"
port = 5001

[measure]
sample_interval = "500ms"
"#
    );
    common::run(&text, None)
}

#[test]
fn receiver_rate_control_throttles_an_incoming_stream_by_its_window() {
    let free = run("");
    let ctl = run("\"net.ipv4.rate_status\" = 1, \"net.ipv4.rate_acceptable_tcp\" = \"2mbit\"");
    let rate = |r: &RunResults| r.flows.iter().find(|f| f.name == "sink").unwrap().rx_bytes as f64 * 8.0 / 30.0;
    let (f, c) = (rate(&free), rate(&ctl));
    eprintln!("uncontrolled {:.2} Mbit/s, controlled to 2 Mbit/s: {:.2} Mbit/s", f / 1e6, c / 1e6);
    assert!(f > 6e6, "uncontrolled {f}");
    assert!(c > 1e6 && c < 4e6, "controlled {c}");
    assert!(free.rate_series.is_empty());
    // the table shows the controller at work: windows below what Linux offers, down to 1 MSS
    let rows: Vec<_> = ctl.rate_series.iter().filter(|r| r.time_s > 5.0).collect();
    assert!(!rows.is_empty() && rows.iter().all(|r| r.mode == "Controlled"));
    assert!(rows.iter().any(|r| r.window <= 1448 && r.linux_window > 4 * 1448), "{:?}", rows.first());
    assert!(rows.iter().all(|r| r.window >= 1448), "revised policy never goes below 1 MSS");
}
