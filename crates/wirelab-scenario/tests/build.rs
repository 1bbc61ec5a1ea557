//! The scenario builder, section by section: what each section becomes in the simulation
//! (profiles and sysctls, links and addresses, routes, one conversion per app kind), and
//! where each kind of mistake is reported (line and key of the offending value).
use wirelab_apps::{AppKind, Itt};
use wirelab_core::{Duration, Instant};
use wirelab_scenario::{BuildOptions, Scenario, ScenarioError};
use wirelab_sim::Sim;

/// Two hosts and a router; `extra` is appended (apps, routes, events, ...).
fn topo(extra: &str) -> String {
    format!(
        r#"[scenario]
name = "t"
duration = "2s"

[[node]]
name = "a"

[[node]]
name = "r"
kind = "router"

[[node]]
name = "b"

[[link]]
a = {{ node = "a", addr = "10.0.1.1/24" }}
b = {{ node = "r", addr = "10.0.1.2/24" }}
netem = "rate 10mbit delay 5ms"

[[link]]
name = "bn"
a = {{ node = "r", addr = "10.0.2.1/24", qdisc = "pfifo limit 50" }}
b = {{ node = "b", addr = "10.0.2.2/24" }}
netem = "rate 10mbit delay 5ms"
{extra}"#
    )
}

fn build(text: &str) -> Result<Sim, ScenarioError> {
    Scenario::parse("t.toml", text)?.build(&BuildOptions::default()).map(|b| b.sim)
}

fn app(sim: &Sim, i: usize) -> &AppKind {
    &sim.apps()[i].kind
}

/// The 1-based line of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect("needle in text") + 1
}

/// Builds `text`, expects an error on the line containing `needle`, returns the message.
fn error_on(text: &str, needle: &str) -> String {
    let e = match build(text) {
        Ok(_) => panic!("expected an error at `{needle}`"),
        Err(e) => e,
    };
    assert_eq!(e.line, line_of(text, needle), "error `{}` (key {}) not on the line of `{needle}`", e.message, e.key);
    assert_eq!(e.file, "t.toml");
    e.message
}

#[test]
fn nodes_links_and_routes() {
    let sim = build(&topo("")).unwrap();
    let r = sim.node_id("r").unwrap();
    assert_eq!(sim.iface_names(r), vec!["eth0", "eth1"]);
    assert_eq!(sim.iface_addr(r, 1).addr.to_string(), "10.0.2.1");
    assert_eq!(sim.link_dirs("bn").len(), 2);
    // addresses default to 10.128+.LINK.1/2 when not given
    let t = topo("[[link]]\na = { node = \"a\" }\nb = { node = \"b\" }\n");
    let sim = build(&t).unwrap();
    let a = sim.node_id("a").unwrap();
    assert_eq!(sim.iface_addr(a, 1).addr.to_string(), "10.128.2.1");
}

#[test]
fn each_app_kind_becomes_its_config() {
    let t = topo(
        r#"
[[app]]
kind = "udp-cbr"
node = "a"
dst = "b:9"
rate = "1mbit"
size = 972

[[app]]
kind = "udp-sink"
node = "b"
port = 9

[[app]]
kind = "tcp-file"
node = "a"
dst = "b:80"
bytes = "1MB"

[[app]]
kind = "tcp-sink"
node = "b"
port = 80
read_rate = "8mbit"

[[app]]
kind = "tcp-thin"
node = "a"
dst = "10.0.2.2:81"
interval = "50ms"
jitter = "10ms"

[[app]]
kind = "sctp-bulk"
node = "a"
dst = "b:5001"
bytes = "100KB"
streams = 4
start = "1s"
"#,
    );
    let sim = build(&t).unwrap();
    let AppKind::UdpCbr(c) = app(&sim, 0) else { panic!() };
    // 1000 IP bytes per datagram at 1 Mbit/s
    assert_eq!(c.cfg.interval, Duration::from_millis(8));
    assert_eq!(c.cfg.dst.to_string(), "10.0.2.2:9");
    assert_eq!(c.cfg.src_port, 40000);
    let AppKind::UdpSink(s) = app(&sim, 1) else { panic!() };
    assert_eq!(s.cfg.port, 9);
    let AppKind::TcpBulk(f) = app(&sim, 2) else { panic!() };
    // tc spelling: 1MB is 2^20 bytes; a file transfer has no stop time and 4 exchange rounds
    assert_eq!((f.cfg.bytes, f.cfg.exchanges, f.cfg.stop), (Some(1_048_576), 4, None));
    let AppKind::TcpServer(e) = app(&sim, 3) else { panic!() };
    assert!(!e.cfg.echo);
    assert_eq!(e.cfg.read_rate, Some(1_000_000));
    let AppKind::TcpThin(th) = app(&sim, 4) else { panic!() };
    assert_eq!(th.cfg.itt, Itt::Uniform(Duration::from_millis(50), Duration::from_millis(10)));
    assert_eq!(th.cfg.opts.first(), Some(&wirelab_tcp::SockOpt::NoDelay(true)));
    let AppKind::SctpBulk(sb) = app(&sim, 5) else { panic!() };
    // NODE:PORT offers all of the node's addresses
    assert_eq!(sb.cfg.dst.len(), 1);
    assert_eq!(sb.cfg.streams, 4);
    assert_eq!(sb.cfg.start, Instant::ZERO + Duration::from_secs(1));
    assert_eq!(sim.apps()[4].name, "tcp-thin#4");
}

#[test]
fn profiles_and_sysctls_reach_the_engines() {
    let t = topo("").replace(
        "[[node]]\nname = \"a\"\n",
        "[[node]]\nname = \"a\"\nprofile = \"linux-2.6.37\"\nsysctl = { \"net.ipv4.tcp_sack\" = 0, \"net.ipv4.tcp_rmem\" = [4096, 87380, 1000000] }\n",
    );
    // the stack is created lazily (here by the listener at time zero) from the node's config
    let t = format!("{t}\n[[app]]\nkind = \"tcp-sink\"\nnode = \"a\"\nport = 80\n");
    let mut sim = build(&t).unwrap();
    let a = sim.node_id("a").unwrap();
    assert!(sim.stack(a).is_none());
    sim.run(Instant::ZERO + Duration::from_millis(1), Duration::ZERO, &mut |_| {});
    let cfg = sim.stack(a).unwrap().tcp().config().clone();
    assert!(!cfg.tcp_sack);
    assert_eq!(cfg.tcp_rmem, [4096, 87380, 1000000]);
    let b = sim.node_id("b").unwrap();
    assert!(sim.stack(b).is_none());
}

#[test]
fn errors_point_at_the_offending_value() {
    let base = topo("");
    let m = error_on(&base.replace("name = \"r\"\n", "name = \"r\"\nprofile = \"linux-1.0\"\n"), "linux-1.0");
    assert!(m.contains("unknown profile") && m.contains("linux-6"), "{m}");
    let m = error_on(&base.replace("name = \"b\"\n", "name = \"b\"\nsysctl = { \"net.ipv4.tcp_sack\" = 1.5 }\n"), "tcp_sack");
    assert!(m.contains("sysctl `net.ipv4.tcp_sack`"), "{m}");
    let m = error_on(&base.replace("name = \"b\"\n", "name = \"b\"\nsysctl = { \"net.ipv4.tcp_bogus\" = 1 }\n"), "tcp_bogus");
    assert!(m.contains("tcp_bogus"), "{m}");
    let m = error_on(&base.replace("name = \"b\"\n", "name = \"b\"\nshim_fallback = \"1s\"\n"), "shim_fallback");
    assert!(m.contains("needs `shim`"), "{m}");
    let m = error_on(&base.replace("addr = \"10.0.2.2/24\"", "addr = \"10.0.9.2/24\""), "10.0.9.2/24");
    assert!(m.contains("different subnets"), "{m}");
    let m = error_on(&base.replacen("delay 5ms", "delay fast", 1), "delay fast");
    assert!(m.contains("netem"), "{m}");
}

#[test]
fn app_errors_point_at_the_key() {
    let cases: &[(&str, &str, &str)] = &[
        ("kind = \"tcp-file\"\nnode = \"a\"\ndst = \"b:80\"\n", "tcp-file", "needs `bytes`"),
        ("kind = \"udp-cbr\"\nnode = \"a\"\ndst = \"b:9\"\nrate = \"1mbit\"\ninterval = \"1ms\"\n", "rate =", "not both"),
        ("kind = \"udp-cbr\"\nnode = \"a\"\ndst = \"b:9\"\n", "udp-cbr", "needs `rate` or `interval`"),
        ("kind = \"udp-cbr\"\nnode = \"a\"\ndst = \"b:9\"\nrate = \"1mbit\"\nsize = 8\n", "size = 8", "16..=65507"),
        ("kind = \"udp-sink\"\nnode = \"b\"\n", "udp-sink", "needs `port`"),
        ("kind = \"tcp-rr\"\nnode = \"a\"\n", "tcp-rr", "needs `dst`"),
        ("kind = \"tcp-thin\"\nnode = \"a\"\ndst = \"b:81\"\nreplay = [\"10ms:120\", \"soon:5\"]\n", "soon:5", "GAP:BYTES"),
        ("kind = \"tcp-thin\"\nnode = \"a\"\ndst = \"b:81\"\npreset = \"quake\"\n", "quake", "unknown thin-stream preset"),
        ("kind = \"tcp-thin\"\nnode = \"a\"\ndst = \"b:81\"\ninterval = \"10ms\"\njitter = \"20ms\"\n", "jitter =", "must not exceed"),
        ("kind = \"tcp-bulk\"\nnode = \"a\"\ndst = \"b:80\"\ncc = \"westwood\"\n", "westwood", "unknown congestion control `westwood` (available: reno cubic bbr dctcp vegas)"),
        ("kind = \"tcp-bulk\"\nnode = \"a\"\ndst = \"b:80\"\nmss = 40\n", "mss = 40", "TCP_MIN_MSS"),
        ("kind = \"tcp-bulk\"\nnode = \"a\"\ndst = \"b:80\"\nsize = 0\n", "size = 0", "positive"),
    ];
    for (body, needle, want) in cases {
        let t = topo(&format!("\n[[app]]\n{body}"));
        let m = error_on(&t, needle);
        assert!(m.contains(want), "`{needle}`: got `{m}`, want `{want}`");
    }
    // two sinks on one port: reported at the second app's port (scenario validation)
    let t = topo("\n[[app]]\nkind = \"udp-sink\"\nnode = \"b\"\nport = 9\n\n[[app]]\nkind = \"udp-sink\"\nnode = \"b\"\nport = 9 # again\n");
    assert!(error_on(&t, "# again").contains("already taken"));
}

#[test]
fn routes_events_and_measurement() {
    let t = topo(
        r#"
[[route]]
node = "a"
dst = "10.0.9.0/24"
via = "10.0.1.2"

[[event]]
at = "1s"
link = "bn"
action = "down"

[measure]
capture = ["r:eth1"]
queue_probe = ["r"]
"#,
    );
    build(&t).unwrap();
    let m = error_on(&t.replace("via = \"10.0.1.2\"", "via = \"10.0.7.2\""), "10.0.7.2");
    assert!(m.contains("not on any subnet"), "{m}");
    let m = error_on(&t.replace("capture = [\"r:eth1\"]", "capture = [\"r:eth7\"]"), "r:eth7");
    assert!(m.contains("has no interface `eth7`") && m.contains("eth0, eth1"), "{m}");
}

/// Issue 21, item 10: `[[app]] sysctl` sets the socket option Linux has for the name, on
/// that app's socket only; a host-wide name is an error that says where it goes.
#[test]
fn per_app_sysctls_become_socket_options() {
    let apps = r#"
[[app]]
kind = "tcp-bulk"
node = "a"
dst = "b:80"
sysctl = { "net.ipv4.tcp_congestion_control" = "bbr", "net.ipv4.tcp_rdb" = 1 }

[[app]]
kind = "tcp-bulk"
node = "a"
dst = "b:80"

[[app]]
kind = "tcp-sink"
node = "b"
port = 80
"#;
    let mut sim = build(&topo(apps)).unwrap();
    sim.run(Instant::ZERO + Duration::from_millis(300), Duration::ZERO, &mut |_| {});
    let a = sim.node_id("a").unwrap();
    let info = |i: usize| match app(&sim, i) {
        AppKind::TcpBulk(b) => sim.stack(a).unwrap().tcp().info(b.state.sock.unwrap()).unwrap(),
        other => panic!("{other:?}"),
    };
    // the node's default (cubic) for the other app: the option is per socket
    assert_eq!((info(0).congestion, info(1).congestion), ("bbr", "cubic"));
    match app(&sim, 0) {
        AppKind::TcpBulk(b) => assert!(b.cfg.opts.contains(&wirelab_tcp::SockOpt::Rdb(wirelab_tcp::RdbMode::Lcn2015)), "{:?}", b.cfg.opts),
        other => panic!("{other:?}"),
    }
    let cfg = sim.stack(a).unwrap().tcp().config().clone();
    assert_eq!(cfg.tcp_congestion_control, wirelab_tcp::CongestionAlgo::from_name("cubic").unwrap(), "the host default is untouched");

    let host_wide = topo(&apps.replacen("\"net.ipv4.tcp_rdb\" = 1", "\"net.ipv4.tcp_sack\" = 0", 1));
    let m = error_on(&host_wide, "tcp_sack");
    assert!(m.contains("Linux has no per-socket setting for it: it is host-wide, so set it in the node's `sysctl` table"), "{m}");
    let bad = topo(&apps.replacen("\"bbr\"", "\"bbq\"", 1));
    assert!(error_on(&bad, "bbq").contains("bbq"));
    let udp = topo("[[app]]\nkind = \"udp-sink\"\nnode = \"b\"\nport = 9\nsysctl = { \"net.ipv4.tcp_rdb\" = 1 }\n");
    assert!(error_on(&udp, "tcp_rdb").contains("a `udp-sink` app has no TCP socket"));
}
