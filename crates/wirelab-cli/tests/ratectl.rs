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

/// §5.4: a stream whose outgoing packets the receiver's CBQ puts into the `cbq_class`
/// class is "important" and keeps its full window; the other stream is throttled. Both
/// share the sender, link and target; only the classification differs.
#[test]
fn important_cbq_class_is_never_throttled() {
    let run2 = |cbq_class: &str| {
        let text = format!(
            r#"[scenario]
name = "rc-imp"
duration = "20s"
profile = "linux-2.2"

[[node]]
name = "tx"
[[node]]
name = "rx"
sysctl = {{ "net.ipv4.rate_status" = 1, "net.ipv4.rate_acceptable_tcp" = "1mbit", "net.ipv4.cbq_class" = "{cbq_class}" }}

[[link]]
a = {{ node = "tx" }}
b = {{ node = "rx", tc = [
  "qdisc add root handle 1: cbq bandwidth 10mbit avpkt 1000",
  "class add parent 1: classid 1:1 cbq rate 10mbit allot 1514 avpkt 1000",
  "class add parent 1: classid 1:2 cbq rate 10mbit allot 1514 avpkt 1000",
  "filter add parent 1: protocol ip prio 1 u32 match ip sport 5002 0xffff flowid 1:2",
  "filter add parent 1: protocol ip prio 2 u32 match ip protocol 6 0xff flowid 1:1",
] }}
netem = "rate 10mbit delay 10ms"

[[app]]
name = "a"
kind = "tcp-bulk"
node = "tx"
dst = "rx:5001"
[[app]]
name = "b"
kind = "tcp-bulk"
node = "tx"
dst = "rx:5002"
[[app]]
name = "sa"
kind = "tcp-sink"
node = "rx"
port = 5001
[[app]]
name = "sb"
kind = "tcp-sink"
node = "rx"
port = 5002

[measure]
sample_interval = "500ms"
"#
        );
        common::run(&text, None)
    };
    let mbps = |r: &RunResults, n: &str| r.flows.iter().find(|f| f.name == n).unwrap().rx_bytes as f64 * 8.0 / 20.0 / 1e6;
    let imp = run2("1:2");
    let (a, b) = (mbps(&imp, "sa"), mbps(&imp, "sb"));
    eprintln!("cbq_class 1:2: stream to 5001 {a:.2} Mbit/s, important stream to 5002 {b:.2} Mbit/s");
    assert!(b > 2.0 * a, "the important stream keeps its window: {b} vs {a}");
    let modes: std::collections::BTreeSet<_> = imp.rate_series.iter().map(|r| r.mode.as_str()).collect();
    assert!(modes.contains("Important") && modes.contains("Controlled"), "{modes:?}");
    // the same run with class 1:1 important flips the roles
    let flip = run2("1:1");
    let (a2, b2) = (mbps(&flip, "sa"), mbps(&flip, "sb"));
    eprintln!("cbq_class 1:1: {a2:.2} vs {b2:.2} Mbit/s");
    assert!(a2 > 2.0 * b2, "{a2} vs {b2}");
}

/// The UDP side of §5.4: a UDP sink whose replies the receiver's HTB would put in the
/// `cbq_class` class is important and delivers everything, while the same flood to a port in
/// another class is policed (OKAY → DROP) by `rate_control_udp`.
#[test]
fn important_udp_socket_is_not_policed() {
    let text = r#"[scenario]
name = "udp-imp"
duration = "6s"

[[node]]
name = "tx"
[[node]]
name = "rx"
sysctl = { "net.ipv4.rate_status" = 1, "net.ipv4.rate_control_udp" = "1mbit", "net.ipv4.cbq_class" = "1:2" }

[[link]]
a = { node = "tx" }
b = { node = "rx", tc = [
  "qdisc add root handle 1: htb default 1",
  "class add parent 1: classid 1:1 htb rate 10mbit",
  "class add parent 1: classid 1:2 htb rate 10mbit",
  "filter add parent 1: protocol ip prio 1 u32 match ip sport 7002 0xffff flowid 1:2",
] }
netem = "rate 10mbit delay 5ms"

[[app]]
name = "a"
kind = "udp-cbr"
node = "tx"
dst = "rx:7001"
rate = "4mbit"
[[app]]
name = "b"
kind = "udp-cbr"
node = "tx"
dst = "rx:7002"
rate = "4mbit"
[[app]]
name = "sa"
kind = "udp-sink"
node = "rx"
port = 7001
[[app]]
name = "sb"
kind = "udp-sink"
node = "rx"
port = 7002
"#;
    let r = common::run(text, None);
    let f = |n: &str| r.flows.iter().find(|f| f.name == n).unwrap().clone();
    let (sa, sb, a) = (f("sa"), f("sb"), f("a"));
    eprintln!("sink 7001: {} of {} datagrams, sink 7002 (important): {}", sa.rx_packets, a.tx_packets, sb.rx_packets);
    assert!(sb.rx_packets as f64 >= 0.99 * f("b").tx_packets as f64 - 5.0, "important: all delivered");
    assert!((sa.rx_packets as f64) < 0.8 * a.tx_packets as f64, "policed: {} of {}", sa.rx_packets, a.tx_packets);
}
