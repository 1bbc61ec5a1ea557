//! Scenario validation (issue 22, items 2–5): each input below was accepted before and
//! either escaped the output directory, was silently changed, or made a wrong experiment.
use wirelab_core::{Duration, Instant};
use wirelab_scenario::{BuildOptions, Scenario, ScenarioError};

const BASE: &str = r#"[scenario]
name = "v"
duration = "2s"

[[node]]
name = "h1"

[[node]]
name = "r"
kind = "router"

[[node]]
name = "h2"

[[link]]
name = "left"
a = { node = "h1", addr = "10.0.1.1/24" }
b = { node = "r", addr = "10.0.1.2/24" }
netem = "rate 10mbit delay 5ms"

[[link]]
name = "right"
a = { node = "r", addr = "10.0.2.1/24" }
b = { node = "h2", addr = "10.0.2.2/24" }
netem = "rate 10mbit delay 5ms"

[[app]]
name = "cbr"
kind = "udp-cbr"
node = "h1"
dst = "10.0.2.2:5000"
rate = "1mbit"

[[app]]
name = "sink"
kind = "udp-sink"
node = "h2"
port = 5000

[[app]]
name = "bulk"
kind = "tcp-bulk"
node = "h1"
dst = "h2:5001"
bytes = "100kb"

[[app]]
name = "tsink"
kind = "tcp-sink"
node = "h2"
port = 5001

[[event]]
at = "1s"
link = "right"
action = "netem"
netem = "rate 5mbit delay 5ms"

[measure]
capture = ["r"]
"#;

fn load(sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::from_text("v.toml", BASE, &sets).and_then(|s| s.build(&BuildOptions::default()).map(|_| s))
}

fn err(sets: &[&str]) -> ScenarioError {
    match load(sets) {
        Ok(_) => panic!("{sets:?} was accepted"),
        Err(e) => e,
    }
}

fn with(extra: &str) -> Result<Scenario, ScenarioError> {
    Scenario::from_text("v.toml", &format!("{BASE}\n{extra}"), &[]).and_then(|s| s.build(&BuildOptions::default()).map(|_| s))
}

#[test]
fn base_is_valid() {
    load(&[]).unwrap();
}

// ---- item 2: interface names --------------------------------------------------------------

#[test]
fn interface_names_cannot_escape_the_output_directory() {
    let e = err(&["link[1].b.iface=/../../../tmp/X"]);
    // the value comes from --set, so the error names the override, not a line (issue 21)
    assert_eq!((e.line, e.key.as_str()), (0, "link[1].b.iface"), "{e}");
    assert!(e.message.starts_with("--set `link[1].b.iface=/../../../tmp/X`: "), "{e}");
    assert!(e.message.contains("`/../../../tmp/X` is not a valid interface name: 1 to 15 bytes, without '/', ':' or whitespace"), "{e}");
    for bad in ["..", ".", "a:b", "eth 0", "", "a\\tb", "sixteen-chars-xx"] {
        let e = err(&[&format!("link[0].a.iface=\"{bad}\"")]);
        assert!(e.message.contains("is not a valid interface name"), "{bad}: {e}");
    }
    load(&["link[0].a.iface=fifteen-chars-x", "link[0].b.iface=eth0.100"]).unwrap();
}

#[test]
fn node_names_with_whitespace_or_dots_only_are_rejected() {
    for bad in ["\"a\\tb\"", "\"..\"", "\"a\\nb\""] {
        let e = with(&format!("[[node]]\nname = {bad}\n")).unwrap_err();
        assert!(e.message.contains("node names must be"), "{bad}: {e}");
    }
}

// ---- item 3: sysctl values as Linux reads them ----------------------------------------------

/// UDP datagrams h1 → h2 through `r` made a host (`kind` unset) with `ip_forward` = `v`.
fn forwarded(v: &str) -> Result<u64, ScenarioError> {
    let text = BASE.replace("name = \"r\"\nkind = \"router\"", &format!("name = \"r\"\nsysctl = {{ \"net.ipv4.ip_forward\" = {v} }}"));
    let sc = Scenario::from_text("v.toml", &text, &[])?;
    let b = sc.build(&BuildOptions::default())?;
    let mut sim = b.sim;
    sim.run(Instant::ZERO + b.duration, Duration::ZERO, &mut |_| {});
    let r = sim.finish().unwrap();
    Ok(r.flows.iter().find(|f| f.name == "sink").map_or(0, |f| f.rx_packets))
}

#[test]
fn ip_forward_is_read_as_linux_does() {
    // before: `true` and `2` silently turned forwarding off
    assert!(forwarded("1").unwrap() > 100);
    assert!(forwarded("true").unwrap() > 100, "TOML true is 1");
    assert!(forwarded("2").unwrap() > 100, "proc_dointvec: any non-zero value is on");
    assert!(forwarded("\"1\"").unwrap() > 100);
    assert_eq!(forwarded("0").unwrap(), 0);
    assert_eq!(forwarded("false").unwrap(), 0);
    for bad in ["\"yes\"", "\"on\"", "1.5", "4294967296"] {
        let e = forwarded(bad).unwrap_err();
        assert!(e.message.contains("sysctl `net.ipv4.ip_forward`: expected an integer in -2147483648..=2147483647 (0 = off, any other value = on"), "{bad}: {e}");
        assert_eq!(e.key, "node[1].sysctl.net.ipv4.ip_forward", "{e}");
    }
}

// ---- item 4: out-of-range numbers -----------------------------------------------------------

#[test]
fn out_of_range_numbers_are_rejected_with_the_range() {
    let e = err(&["scenario.duration=1e300s"]);
    assert!(e.message.contains("from 0ns to 18446744073.709551615s"), "{e}");
    let e = err(&["scenario.duration=18446744073s"]);
    assert!(e.message.contains("duration must be at most 4611686018s"), "{e}");
    let e = err(&["link.left.netem=rate 1e20gbit"]);
    assert!(e.message.contains("netem: bad value `1e20gbit` for `rate`") && e.message.contains("18446744073709551615bit"), "{e}");
    let e = err(&["app.bulk.bytes=\"18446744073709551616\""]);
    assert!(e.message.contains("from 0 to 18446744073709551615"), "{e}");
    let e = err(&["app.bulk.bytes=\"0.4\""]);
    assert!(e.message.contains("`0.4` is not a whole number of bytes"), "{e}");
    let e = err(&["link.right.a.qdisc=pfifo limit 4294967296"]);
    assert!(e.message.contains("must be at most 4294967295"), "{e}");
    let e = err(&["app.bulk.bytes=-1"]);
    assert!(e.message.contains("expected a size like \"25mb\" or \"500kb\", or a byte count 0..=18446744073709551615, got -1"), "{e}");
    assert!(!e.message.contains("untagged enum"), "{e}");
    assert_eq!(e.key, "app[2].bytes");
}

// ---- item 5: validation gaps ------------------------------------------------------------------

#[test]
fn duplicate_app_names() {
    let e = err(&["app.tsink.name=bulk"]);
    assert_eq!(e.key, "app[3].name");
    assert!(e.message.contains("duplicate app name `bulk`"), "{e}");
}

#[test]
fn preset_on_a_non_thin_app() {
    let e = err(&["app.bulk.preset=ssh"]);
    assert!(e.message.contains("key `preset` is only used by app kind `tcp-thin`, not `tcp-bulk`"), "{e}");
    with("[[app]]\nkind = \"tcp-thin\"\nnode = \"h1\"\ndst = \"h2:5001\"\npreset = \"ssh\"\n").unwrap();
}

#[test]
fn start_after_stop() {
    let e = err(&["app.cbr.start=1.5s", "app.cbr.stop=1s"]);
    assert_eq!(e.key, "app[0].stop");
    assert!(e.message.contains("stop (1s) must be after start (1500ms)"), "{e}");
    assert!(load(&["app.cbr.start=1s", "app.cbr.stop=1s"]).is_err(), "equal times send nothing");
    load(&["app.cbr.start=1s", "app.cbr.stop=1.5s"]).unwrap();
}

#[test]
fn one_address_on_two_nodes() {
    let e = err(&["link.right.b.addr=10.0.2.1/24"]);
    assert!(e.message.contains("both ends of a link have the same address") || e.message.contains("already on node"), "{e}");
    let e = err(&["link.right.b.addr=10.0.1.1/24", "link.right.a.addr=10.0.1.3/24"]);
    assert!(e.message.contains("address 10.0.1.1 (`h2` eth0) is already on node `h1` (eth0); one address cannot be on two nodes"), "{e}");
    // an explicit address that collides with an automatic one
    let e = with("[[node]]\nname = \"h3\"\n[[node]]\nname = \"h4\"\n[[link]]\na = { node = \"h3\" }\nb = { node = \"h4\" }\n[[link]]\na = { node = \"h1\", addr = \"10.128.2.2/24\" }\nb = { node = \"h3\", addr = \"10.128.2.9/24\" }\n").unwrap_err();
    assert!(e.message.contains("address 10.128.2.2 (`h1` eth1) is already on node `h4` (eth0, automatic address)"), "{e}");
}

#[test]
fn off_subnet_next_hop() {
    let e = with("[[route]]\nnode = \"h2\"\ndst = \"10.9.0.0/16\"\nvia = \"10.0.1.2\"\ndev = \"eth0\"\n").unwrap_err();
    assert!(e.message.contains("next hop 10.0.1.2 is not on the subnet of `eth0` (10.0.2.2/24)"), "{e}");
    let e = with("[[route]]\nnode = \"h2\"\ndst = \"10.9.0.0/16\"\nvia = \"10.0.5.1\"\n").unwrap_err();
    assert!(e.message.contains("next hop 10.0.5.1 is not on any subnet of node `h2` (10.0.2.0/24)"), "{e}");
    let e = with("[[route]]\nnode = \"h2\"\ndst = \"10.9.0.0/16\"\nvia = \"10.0.2.2\"\n").unwrap_err();
    assert!(e.message.contains("is an address of node `h2` itself"), "{e}");
    with("[[route]]\nnode = \"h2\"\ndst = \"10.9.0.0/16\"\nvia = \"10.0.2.1\"\ndev = \"eth0\"\n").unwrap();
}

#[test]
fn netem_key_on_a_down_event() {
    let e = with("[[event]]\nat = \"1.5s\"\nlink = \"left\"\naction = \"down\"\nnetem = \"loss 100%\"\n").unwrap_err();
    assert_eq!(e.key, "event[1].netem");
    assert!(e.message.contains("`netem` is only used by action `netem`; an `down` event would ignore it"), "{e}");
}

#[test]
fn two_listeners_on_one_port() {
    let e = with("[[app]]\nname = \"second\"\nkind = \"tcp-echo\"\nnode = \"h2\"\nport = 5001\n").unwrap_err();
    assert_eq!(e.key, "app[4].port");
    assert!(e.message.contains("TCP port 5001 on node `h2` is already taken by app `tsink` (bind() would fail with EADDRINUSE)"), "{e}");
    let e = with("[[app]]\nkind = \"udp-sink\"\nnode = \"h2\"\nport = 5000\n").unwrap_err();
    assert!(e.message.contains("UDP port 5000"), "{e}");
    // other protocols, or other nodes, may share the number
    with("[[app]]\nkind = \"sctp-sink\"\nnode = \"h2\"\nport = 5001\n[[app]]\nkind = \"tcp-sink\"\nnode = \"h1\"\nport = 5001\n").unwrap();
    // a shim listens on TCP and SCTP at once
    let text = BASE.replace("name = \"h2\"\n", "name = \"h2\"\nshim = [\"local enable any\"]\n");
    let e = Scenario::from_text("v.toml", &format!("{text}\n[[app]]\nkind = \"sctp-sink\"\nnode = \"h2\"\nport = 5001\n"), &[]).unwrap_err();
    assert!(e.message.contains("SCTP port 5001 on node `h2` is already taken by app `tsink`"), "{e}");
}

/// Issue 21, item 5: an error caused by a `--set` names the override, not a line of the
/// file (where the overridden value does not appear, or a blank line would).
#[test]
fn override_errors_name_the_override() {
    let f = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/udp-bottleneck.toml");
    let err = |set: &str| wirelab_scenario::Scenario::load(&f, &[set.to_string()]).and_then(|s| s.build(&wirelab_scenario::BuildOptions::default()).map(|_| ())).unwrap_err();
    // a bad value, caught by the builder
    let e = err("link.bottleneck.netem=rate 10xbit");
    assert_eq!((e.line, e.key.as_str()), (0, "link[2].netem"), "{e}");
    assert!(e.to_string().contains("--set `link.bottleneck.netem=rate 10xbit`: netem:"), "{e}");
    // a misspelt key, caught by the schema
    let e = err("scenario.durration=5s");
    assert_eq!(e.line, 0, "{e}");
    assert!(e.to_string().contains("--set `scenario.durration=5s`: unknown field `durration`"), "{e}");
    // a wrong entry name lists the names there are
    let e = err("link.bottlenek.netem=rate 1mbit");
    assert!(e.message.contains("no `link` entry is named `bottlenek` (named ones: bottleneck)"), "{e}");
    // an error elsewhere in the file still points at its line
    let bad = std::fs::read_to_string(&f).unwrap().replace("rate = \"4mbit\"", "rate = \"4xbit\"");
    let e = wirelab_scenario::Scenario::from_text("q.toml", &bad, &["scenario.duration=5s".into()]).and_then(|s| s.build(&wirelab_scenario::BuildOptions::default()).map(|_| ())).unwrap_err();
    assert!(e.line > 0 && !e.message.contains("--set"), "{e}");
}

/// `setsockopt` events (seed 003 §6.4): a TCP app by name, at least one option, no link
/// keys; link events keep needing a link and take no socket options.
#[test]
fn setsockopt_events() {
    with("[[event]]\nat = \"1s\"\napp = \"bulk\"\naction = \"setsockopt\"\nmss = 500\nmidstream_mss = true\n").unwrap();
    let cases: [(&str, &str, &str); 7] = [
        ("[[event]]\nat = \"1s\"\naction = \"setsockopt\"\nmss = 500\n", "event[1].action", "needs `app`"),
        ("[[event]]\nat = \"1s\"\napp = \"nope\"\naction = \"setsockopt\"\nmss = 500\n", "event[1].app", "no app named `nope` (apps: cbr, sink, bulk, tsink)"),
        ("[[event]]\nat = \"1s\"\napp = \"cbr\"\naction = \"setsockopt\"\nmss = 500\n", "event[1].app", "is a `udp-cbr`"),
        ("[[event]]\nat = \"1s\"\napp = \"bulk\"\naction = \"setsockopt\"\n", "event[1].action", "needs an option: mss, nodelay, window_clamp or midstream_mss"),
        ("[[event]]\nat = \"1s\"\napp = \"bulk\"\naction = \"setsockopt\"\nmss = 40\n", "event[1].mss", "at least 88"),
        ("[[event]]\nat = \"1s\"\napp = \"bulk\"\nlink = \"left\"\naction = \"setsockopt\"\nmss = 500\n", "event[1].link", "not used by action `setsockopt`"),
        ("[[event]]\nat = \"1s\"\nlink = \"left\"\naction = \"down\"\nmss = 500\n", "event[1].action", "only used by action `setsockopt`"),
    ];
    for (extra, key, msg) in cases {
        let e = with(extra).unwrap_err();
        assert_eq!(e.key, key, "{extra}: {e}");
        assert!(e.message.contains(msg), "{extra}: {e}");
    }
    let e = with("[[event]]\nat = \"1s\"\naction = \"down\"\n").unwrap_err();
    assert!(e.message.contains("needs a `link`"), "{e}");
}

/// An unknown key or a bad value inside `event = [ {…}, … ]` (inline tables, as the
/// generated rate-control scenarios write them) is named by element and field, not by the
/// text before the line's first `=` (it was reported as key `{ at`).
#[test]
fn inline_event_tables_name_the_field() {
    let head = "event = [\n    { at = \"1s\", link = \"left\", action = \"down\" },\n";
    for (elem, key, msg) in [
        ("    { at = \"1.5s\", link = \"left\", action = \"up\", bogus = 1 },\n", "event[1].bogus", "unknown field `bogus`"),
        ("    { at = \"1.5s\", app = \"bulk\", action = \"setsockopt\", mss = 40 },\n", "event[1].mss", "at least 88"),
    ] {
        let base = BASE.replace("[[event]]\nat = \"1s\"\nlink = \"right\"\naction = \"netem\"\nnetem = \"rate 5mbit delay 5ms\"\n", "");
        assert!(!base.contains("[[event]]"));
        let src = format!("{head}{elem}]\n{base}");
        let e = Scenario::from_text("ev.toml", &src, &[]).and_then(|s| s.build(&BuildOptions::default()).map(|_| s)).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), (key, 3), "{e}");
        assert!(e.message.contains(msg), "{e}");
    }
}
