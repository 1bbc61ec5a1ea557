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

/// The UDP state machine of §5.2.2 as the run's tables show it: a 1000 datagram/s flood
/// against a 100 datagram/s limit (100-ms chunks, drop time 1 s, warn time 2 s) goes OKAY →
/// DROP at the first completed chunk, WARN 1 s later, and KILL when the warn time is up
/// with the rate still over; a sender that slows down to 50/s after the first second
/// comes back to OKAY instead. `tcp_rate_timeseries.csv` rows `udp *:PORT` carry the
/// state, and the killed sink says so in `flows.csv`.
#[test]
fn udp_policy_goes_okay_drop_warn_kill_and_back_to_okay() {
    let text = r#"[scenario]
name = "udp-policy"
duration = "6s"

[[node]]
name = "tx"
[[node]]
name = "rx"
sysctl = { "net.ipv4.rate_status" = 1, "net.ipv4.rate_control_udp" = 100, "net.ipv4.rate_udp_drop_time" = 1, "net.ipv4.rate_udp_warn_time" = 2 }

[[link]]
a = { node = "tx" }
b = { node = "rx" }
netem = "rate 10mbit delay 1ms"

[[app]]
name = "flood"
kind = "udp-cbr"
node = "tx"
dst = "rx:7001"
interval = "1ms"
size = 100
[[app]]
name = "burst"
kind = "udp-cbr"
node = "tx"
dst = "rx:7002"
interval = "1ms"
size = 100
stop = "1s"
[[app]]
name = "calm"
kind = "udp-cbr"
node = "tx"
dst = "rx:7002"
interval = "20ms"
size = 100
start = "1s"
[[app]]
name = "s1"
kind = "udp-sink"
node = "rx"
port = 7001
[[app]]
name = "s2"
kind = "udp-sink"
node = "rx"
port = 7002
"#;
    let r = common::run(text, None);
    let state = |port: u16, t: f64| {
        r.rate_series
            .iter()
            .rfind(|x| x.conn == format!("udp *:{port}") && x.time_s <= t + 1e-9)
            .map(|x| x.mode.clone())
            .unwrap_or_default()
    };
    // the first chunk (100 ms) completes with the first datagram after it: DROP from ≈ 0.1 s
    for (t, want) in [(0.1, "OKAY"), (0.5, "DROP"), (1.0, "DROP"), (1.5, "WARN"), (3.0, "WARN"), (3.5, "KILL"), (6.0, "KILL")] {
        assert_eq!(state(7001, t), want, "flood at {t} s");
    }
    for (t, want) in [(0.5, "DROP"), (1.5, "WARN"), (3.5, "OKAY"), (6.0, "OKAY")] {
        assert_eq!(state(7002, t), want, "burst then calm at {t} s");
    }
    let f = |n: &str| r.flows.iter().find(|f| f.name == n).unwrap().clone();
    let s1 = f("s1");
    assert_eq!(s1.state, "killed");
    assert!(s1.error.contains("(KILL) at 3.10"), "{}", s1.error);
    // delivered: ≈ 100 datagrams before DROP and ≈ 2000 in WARN, nothing after the kill
    assert!((2000..2300).contains(&s1.rx_packets), "{}", s1.rx_packets);
    let s2 = f("s2");
    assert_eq!(s2.state, "");
    // the calm sender's 250 datagrams from 1 s on: all after 1.1 s delivered
    assert!(s2.rx_packets >= 100 + 240, "{}", s2.rx_packets);
}

/// §6.4 (changing the MSS mid-stream) through scenario events: the receiver offers a
/// fixed 1280-byte window (below the 1448-byte MSS) and, with `rate_mss_option = window`,
/// re-advertises an MSS of 1280 on its ACKs. At 4 s the sender's app sets `TCP_MAXSEG`
/// 500: accepted, no effect (Linux); at 8 s it switches the wirelab `midstream_mss`
/// extension on and follows the ACKs' option from then on.
#[test]
fn midstream_mss_events() {
    let text = r#"[scenario]
name = "mss-midstream"
duration = "12s"
profile = "linux-2.2"

[[node]]
name = "ford"
[[node]]
name = "oid"
sysctl = { "net.ipv4.rate_status" = 1, "net.ipv4.rate_fixed_window" = 1280, "net.ipv4.rate_mss_option" = "window" }

[[link]]
a = { node = "ford" }
b = { node = "oid" }
netem = "rate 10mbit delay 150us"

[[app]]
name = "ttcp"
kind = "tcp-bulk"
node = "ford"
dst = "oid:5001"
size = 8192
[[app]]
name = "sink"
kind = "tcp-sink"
node = "oid"
port = 5001

[[event]]
at = "4s"
app = "ttcp"
action = "setsockopt"
mss = 500

[[event]]
at = "8s"
app = "ttcp"
action = "setsockopt"
midstream_mss = true

[measure]
sample_interval = "1s"
"#;
    let r = common::run(text, None);
    let rx = |t0: f64, t1: f64| {
        let at = |t: f64| r.flow_series.iter().filter(|x| x.flow == "sink" && x.time_s <= t + 1e-9).map(|x| x.rx_bytes).max().unwrap_or(0);
        (at(t1) - at(t0)) as f64 * 8.0 / (t1 - t0)
    };
    let (before, after_maxseg, honoured) = (rx(1.0, 4.0), rx(5.0, 8.0), rx(9.0, 12.0));
    eprintln!("{before:.0} {after_maxseg:.0} {honoured:.0} bit/s");
    // sub-MSS window: one 1280-byte segment per window probe (~210 ms) → ≈ 49 kbit/s
    assert!((40e3..60e3).contains(&before), "{before}");
    assert_eq!(before, after_maxseg, "TCP_MAXSEG on an established connection changes nothing");
    // honoured: 1268-byte segments, stop-and-wait on a 0.3-ms round trip → megabits
    assert!(honoured > 5e6, "{honoured}");
    let ttcp = r.flows.iter().find(|f| f.name == "ttcp").unwrap();
    assert_eq!(ttcp.error, "", "both setsockopt calls succeed");
}
