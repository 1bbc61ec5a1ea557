//! The TCP-to-SCTP shim (seed 5) driven by the simulator: unchanged TCP applications on
//! shim hosts (`shim = [rules]` on the node) carry their byte stream over SCTP.
mod common;
use wirelab_sim::RunResults;

/// scp-like transfer of 500 KB over 1.5 Mbit/s, 35 ms, 1 % loss (the paper's path).
/// Runs the scp/sshd scenario; returns the results, (TCP, SCTP) packet counts on s:eth0 and
/// the run directory (kept while the guard lives).
fn run(client_shim: &str, server_shim: &str, name: &str) -> (RunResults, (usize, usize), common::TmpDir) {
    let text = format!(
        r#"[scenario]
name = "shim"
duration = "30s"

[[node]]
name = "c"
{client_shim}
[[node]]
name = "r"
kind = "router"
[[node]]
name = "s"
{server_shim}

[[link]]
a = {{ node = "c" }}
b = {{ node = "r" }}
netem = "rate 100mbit delay 1ms"

[[link]]
a = {{ node = "r", qdisc = "pfifo limit 50" }}
b = {{ node = "s" }}
netem = "rate 1.5mbit delay 35ms loss 1%"

[[app]]
name = "scp"
kind = "tcp-file"
node = "c"
dst = "s:22"
bytes = "500000"

[[app]]
name = "sshd"
kind = "tcp-sink"
node = "s"
port = 22

[measure]
capture = ["s:eth0"]
"#
    );
    let out = common::tmp("shim", name);
    let r = common::run(&text, Some(out.clone()));
    let pkts = wirelab_wire::pcap::read_file(out.join("pcap/s-eth0.pcap")).unwrap();
    let proto = |p: u8| pkts.iter().filter(|x| x.ipv4().is_some_and(|ip| ip.get(9) == Some(&p))).count();
    (r, (proto(6), proto(132)), out)
}

fn check_done(r: &RunResults) -> f64 {
    let c = r.flows.iter().find(|f| f.name == "scp").unwrap();
    assert_eq!(c.state, "done", "{c:?}");
    assert_eq!(r.flows.iter().find(|f| f.name == "sshd").unwrap().rx_bytes, 500_000 + 4 * 512);
    c.transfer_time_s
}

const SHIM: &str = "shim = [\"remote enable any\", \"local enable any\"]";

#[test]
fn shim_on_both_ends_carries_an_unchanged_tcp_app_over_sctp() {
    let (r, (tcp, sctp), out) = run(SHIM, SHIM, "both");
    let t = check_done(&r);
    eprintln!("TCP–SCTP–TCP: {t:.3} s, {tcp} TCP and {sctp} SCTP packets on the wire");
    assert_eq!(tcp, 0, "no TCP on the wire");
    assert_eq!(r.flows.iter().find(|f| f.name == "scp").unwrap().proto, "sctp", "flows.csv names the transport");
    assert!(sctp > 300);
    // the TCP apps' SCTP associations are in sctp_timeseries, with the data they carried
    let rows: Vec<_> = r.sctp_series.iter().filter(|x| x.flow == "scp").collect();
    assert!(!rows.is_empty(), "shim-carried sockets are sampled");
    assert!(rows.iter().any(|x| x.bytes_acked > 100_000 && x.cwnd > 0), "{:?}", rows.last());
    assert!(r.tcp_series.iter().all(|x| x.flow != "scp"), "no TCP socket under the shim");
    // both ends' flows.csv rows name SCTP and count its DATA chunks and retransmissions
    let (c, s) = (r.flows.iter().find(|f| f.name == "scp").unwrap(), r.flows.iter().find(|f| f.name == "sshd").unwrap());
    assert_eq!(s.proto, "sctp");
    assert!(c.tx_packets > 300 && c.retrans > 0 && c.retrans < 50, "{c:?}");
    // wire-accurate: tshark verifies every SCTP packet's CRC32c (the shim's INIT/INIT-ACK
    // carry the RFC 5061 Adaptation Layer Indication) and flags nothing as malformed
    let pcap = out.join("pcap/s-eth0.pcap");
    if std::process::Command::new("tshark").arg("--version").output().is_ok() {
        let fields = |filter: &str, field: &str| -> Vec<String> {
            let o = std::process::Command::new("tshark")
                .args(["-r", pcap.to_str().unwrap(), "-o", "sctp.checksum:CRC-32C", "-Y", filter, "-T", "fields", "-e", field])
                .output()
                .unwrap();
            String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect()
        };
        let status = fields("sctp", "sctp.checksum.status");
        assert!(status.len() > 300 && status.iter().all(|x| x == "1"), "CRC32c status per packet: {:?}", &status[..status.len().min(5)]);
        assert!(fields("_ws.malformed || _ws.expert.severity >= warning", "frame.number").is_empty());
        assert_eq!(fields("sctp.parameter_type == 0xc006", "frame.number").len(), 2, "INIT and INIT-ACK advertise the shim");
    } else {
        eprintln!("tshark not installed: wire check skipped");
    }
    let acc: Vec<_> = r.shim_matches.iter().filter(|m| m.node == "s" && m.transport == "sctp").collect();
    assert_eq!(acc.len(), 1, "the accepted association is logged with its peer: {:?}", r.shim_matches);
    assert!(acc[0].addr.starts_with("10.128.0.1:"), "{:?}", acc[0]);
}

#[test]
fn shim_client_falls_back_to_tcp_when_the_server_has_no_shim() {
    // the server host's SCTP stack answers the INIT with ABORT (no SCTP listener on port 22)
    let (r, (tcp, sctp), _out) = run(SHIM, "", "fallback");
    let t = check_done(&r);
    eprintln!("fallback: {t:.3} s, {tcp} TCP and {sctp} SCTP packets");
    assert!(tcp > 300, "the transfer ran over TCP");
    assert!((1..=4).contains(&sctp), "INIT and ABORT only: {sctp}");
    assert_eq!(r.flows.iter().find(|f| f.name == "scp").unwrap().proto, "tcp");
    // the match log: the client's remote rule enabled SCTP, the ABORT made it fall back
    let m: Vec<_> = r.shim_matches.iter().filter(|m| m.node == "c").collect();
    assert_eq!(m.len(), 1, "{:?}", r.shim_matches);
    assert_eq!((m[0].chain, m[0].rule.as_str(), m[0].policy, m[0].transport, m[0].fallback.as_str()), ("remote", "#0 remote enable any", "enable", "tcp", "abort"));
    assert_eq!(m[0].app, "scp");
}

#[test]
fn remote_rules_decide_per_destination() {
    let off = "shim = [\"remote disable 10.128.1.0/24\", \"remote enable any\", \"local enable any\"]";
    let (r, (tcp, sctp), _out) = run(off, SHIM, "rules");
    check_done(&r);
    assert!(tcp > 300 && sctp == 0, "first match (disable) wins: {tcp} TCP, {sctp} SCTP");
    let c = r.flows.iter().find(|f| f.name == "scp").unwrap();
    assert!(c.tx_packets > 300 && c.retrans > 0, "a TCP connection on a shim node keeps its counters: {c:?}");
    let rows: Vec<_> = r.shim_matches.iter().map(|m| (m.node.as_str(), m.chain, m.rule.as_str(), m.policy, m.transport)).collect();
    assert_eq!(
        rows,
        [
            ("c", "remote", "#0 remote disable 10.128.1.0/24", "disable", "tcp"),
            ("s", "local", "#0 local enable any", "enable", "tcp+sctp"),
            ("s", "local", "#0 local enable any", "enable", "tcp"),
        ],
        "the client's first rule decided its connect; the server listens on both and accepted over TCP"
    );
}

/// `wirelab run` writes shim_matches.csv and `wirelab shim-matches DIR` prints it.
#[test]
fn shim_matches_command_shows_which_rule_matched() {
    let dir = common::tmp("shim", "matches-cmd");
    let scen = dir.join("s.toml");
    let text = r#"[scenario]
name = "shim-matches"
duration = "10s"
[[node]]
name = "c"
shim = ["remote disable 10.9.0.0/16", "remote enable any port 20-22"]
[[node]]
name = "s"
shim = ["local enable any"]
[[link]]
a = { node = "c" }
b = { node = "s" }
netem = "rate 10mbit delay 5ms"
[[app]]
name = "scp"
kind = "tcp-file"
node = "c"
dst = "s:22"
bytes = 50000
[[app]]
name = "sshd"
kind = "tcp-sink"
node = "s"
port = 22
"#;
    std::fs::write(&scen, text).unwrap();
    let out = dir.join("out");
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let code = wirelab_cli::main_with_args(args(&["wirelab", "run", scen.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));
    assert_eq!(code, 0);
    let t = wirelab_cli::output::shim_matches_table(&out).unwrap();
    eprintln!("{t}");
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with("time_s") && lines[0].contains("rule") && lines[0].contains("transport"), "{t}");
    assert!(lines.iter().any(|l| l.contains("scp") && l.contains("#1 remote enable port 20-22") && l.contains("sctp")), "{t}");
    assert!(lines.iter().any(|l| l.contains("sshd") && l.contains("local") && l.contains("tcp+sctp")), "{t}");
    assert_eq!(wirelab_cli::main_with_args(args(&["wirelab", "shim-matches", out.to_str().unwrap()])), 0);
    // a run without a shim, and a directory that is no output, are clear errors
    let e = wirelab_cli::output::shim_matches_table(&dir).unwrap_err();
    assert!(e.contains("not a wirelab output directory"), "{e}");
}

/// Two 10 Mbit/s paths between client and server; the primary fails at 2 s.
fn failover(shim: &str) -> RunResults {
    let text = format!(
        r#"[scenario]
name = "shim-failover"
duration = "30s"

[[node]]
name = "c"
{shim}
[[node]]
name = "s"
{shim}

[[link]]
name = "p1"
a = {{ node = "c", addr = "10.1.0.1/24" }}
b = {{ node = "s", addr = "10.1.0.2/24" }}
netem = "rate 10mbit delay 20ms"

[[link]]
name = "p2"
a = {{ node = "c", addr = "10.2.0.1/24" }}
b = {{ node = "s", addr = "10.2.0.2/24" }}
netem = "rate 10mbit delay 20ms"

[[app]]
name = "scp"
kind = "tcp-file"
node = "c"
dst = "s:22"
bytes = "5000000"

[[app]]
name = "sshd"
kind = "tcp-sink"
node = "s"
port = 22

[[event]]
at = "2s"
link = "p1"
action = "down"

[measure]
capture = ["s:eth1"]
"#
    );
    let out = common::tmp("shim", if shim.is_empty() { "failover-tcp" } else { "failover-shim" });
    let r = common::run(&text, Some(out.clone()));
    LAST_FAILOVER_DIR.with(|d| *d.borrow_mut() = Some(out));
    r
}

thread_local! {
    static LAST_FAILOVER_DIR: std::cell::RefCell<Option<common::TmpDir>> = const { std::cell::RefCell::new(None) };
}

#[test]
fn multihomed_shim_survives_a_path_failure_that_stalls_tcp() {
    let tcp = failover("");
    let c = tcp.flows.iter().find(|f| f.name == "scp").unwrap();
    assert_ne!(c.state, "done", "plain TCP is bound to the failed path: {c:?}");
    let shim = failover(SHIM);
    let t = check_done_bytes(&shim, 5_000_000);
    // the server's wildcard listener bound all its addresses (sctp_bind_addr_copy): on the
    // alternate path it sends from that path's address
    let dir = LAST_FAILOVER_DIR.with(|d| d.borrow().as_ref().map(|t| t.0.clone())).unwrap();
    let pkts = wirelab_wire::pcap::read_file(dir.join("pcap/s-eth1.pcap")).unwrap();
    let srcs: std::collections::BTreeSet<[u8; 4]> = pkts
        .iter()
        .filter_map(|x| x.ipv4())
        .filter(|ip| ip.get(9) == Some(&132) && ip[12..16] != [10, 2, 0, 1])
        .map(|ip| [ip[12], ip[13], ip[14], ip[15]])
        .collect();
    assert_eq!(srcs.into_iter().collect::<Vec<_>>(), vec![[10, 2, 0, 2]], "server SCTP packets on eth1 come from 10.2.0.2");
    eprintln!("multihomed shim: 5 MB in {t:.2} s across the failure; TCP stuck at {} bytes", tcp.flows.iter().find(|f| f.name == "sshd").unwrap().rx_bytes);
}

fn check_done_bytes(r: &RunResults, bytes: u64) -> f64 {
    let c = r.flows.iter().find(|f| f.name == "scp").unwrap();
    assert_eq!(c.state, "done", "{c:?}");
    assert_eq!(r.flows.iter().find(|f| f.name == "sshd").unwrap().rx_bytes, bytes + 4 * 512);
    c.transfer_time_s
}

/// The TCP–SCTP configuration: a shim client (unchanged TCP app) and a native SCTP server
/// (`sctp-sink` on a host without a shim). The byte stream arrives as SCTP DATA on stream 0
/// and the client's close is an SCTP SHUTDOWN the native server reads as EOF.
#[test]
fn shim_client_talks_to_a_native_sctp_server() {
    let text = r#"[scenario]
name = "tcp-sctp"
duration = "20s"
[[node]]
name = "c"
shim = ["remote enable any"]
[[node]]
name = "s"
[[link]]
a = { node = "c" }
b = { node = "s" }
netem = "rate 10mbit delay 10ms loss 1%"
[[app]]
name = "put"
kind = "tcp-bulk"
node = "c"
dst = "s:9000"
bytes = 1000000
[[app]]
name = "native"
kind = "sctp-sink"
node = "s"
port = 9000
"#;
    let r = common::run(text, None);
    let c = r.flows.iter().find(|f| f.name == "put").unwrap();
    let s = r.flows.iter().find(|f| f.name == "native").unwrap();
    assert_eq!((c.proto, c.state.as_str()), ("sctp", "done"), "{c:?}");
    assert_eq!(s.rx_bytes, 1_000_000, "{s:?}");
    assert!(c.retrans > 0, "1 % loss is repaired by SCTP: {c:?}");
    let m: Vec<_> = r.shim_matches.iter().map(|m| (m.node.as_str(), m.transport)).collect();
    assert_eq!(m, [("c", "sctp")]);
    // the scp-like client's request/response rounds are answered by the native server too
    let r = common::run(&text.replace("kind = \"tcp-bulk\"", "kind = \"tcp-file\""), None);
    let c = r.flows.iter().find(|f| f.name == "put").unwrap();
    let s = r.flows.iter().find(|f| f.name == "native").unwrap();
    assert_eq!((c.kind, c.proto, c.state.as_str()), ("tcp-file", "sctp", "done"), "{c:?}");
    assert_eq!(s.rx_bytes, 1_000_000 + 4 * 512, "{s:?}");
    assert_eq!(s.tx_bytes, 4 * 512, "four replies");
    assert!(c.transfer_time_s > 0.8 && c.transfer_time_s < 3.0, "{c:?}");
}

/// A `tcp-rr` session (64 B every 200 ms, echoed) on the lossless scp path, with the
/// client's and server's shim rules given: (first request's start, median latency, the
/// client's transport, transactions completed, requests written).
fn interactive(client_shim: &str, server_shim: &str) -> (f64, f64, String, usize, u64) {
    let text = format!(
        r#"[scenario]
name = "shim-rr"
duration = "10s"
profile = "linux-6"

[[node]]
name = "c"
shim = {client_shim}
[[node]]
name = "r"
kind = "router"
[[node]]
name = "s"
shim = {server_shim}

[[link]]
a = {{ node = "c" }}
b = {{ node = "r" }}
netem = "rate 100mbit delay 1ms"
[[link]]
a = {{ node = "r", qdisc = "pfifo limit 50" }}
b = {{ node = "s" }}
netem = "rate 1.5mbit delay 35ms"

[[app]]
name = "ssh"
kind = "tcp-rr"
node = "c"
dst = "s:22"
size = 64
interval = "200ms"
stop = "9s"
nodelay = true
[[app]]
name = "sshd"
kind = "tcp-echo"
node = "s"
port = 22
"#
    );
    let r = common::run(&text, None);
    let c = r.flows.iter().find(|f| f.name == "ssh").unwrap();
    let mut lat: Vec<f64> = r.rr_latency.iter().filter(|x| x.flow == "ssh").map(|x| x.latency_ms).collect();
    assert_eq!(lat.len() as u64, c.rx_packets, "one rr_latency row per completed transaction");
    lat.sort_by(f64::total_cmp);
    (r.rr_latency[0].start_s, lat[lat.len() / 2], c.proto.to_string(), lat.len(), c.tx_bytes / 64)
}

/// Interactive traffic through the shim (seed 5, issue 18) and the set-up cost the SSH
/// handshake pays: over SCTP each keystroke's echo takes what it takes over TCP (one round
/// trip, ≈ 73 ms), but the first request waits one round trip longer (the four-way
/// INIT / INIT-ACK / COOKIE-ECHO / COOKIE-ACK handshake before `connect()` completes,
/// against TCP's SYN / SYN-ACK); a server without the shim answers the INIT with ABORT and
/// the fallback costs that same extra round trip.
#[test]
fn interactive_latency_and_setup_through_the_shim() {
    let on = (r#"["remote enable any"]"#, r#"["local enable any"]"#);
    let (t_tcp, m_tcp, p_tcp, n_tcp, w_tcp) = interactive(r#"["remote default disable"]"#, r#"["local default disable"]"#);
    let (t_sh, m_sh, p_sh, n_sh, w_sh) = interactive(on.0, on.1);
    let (t_ab, m_ab, p_ab, _, _) = interactive(on.0, "[]");
    assert_eq!((p_tcp.as_str(), p_sh.as_str(), p_ab.as_str()), ("tcp", "sctp", "tcp"));
    // every request answered (nothing outstanding at the 200-ms tick on a lossless path)
    assert!(n_tcp as u64 == w_tcp && n_sh as u64 == w_sh && n_sh >= 43, "{n_tcp}/{w_tcp} {n_sh}/{w_sh}");
    // one round trip per keystroke: 2 × 36 ms plus serialisation, the same on both
    assert!((72.0..76.0).contains(&m_tcp) && (m_sh - m_tcp).abs() < 1.0 && (m_ab - m_tcp).abs() < 1.0, "{m_tcp} {m_sh} {m_ab}");
    let rtt = m_tcp / 1e3;
    assert!((t_tcp / rtt - 1.0).abs() < 0.05, "TCP: the first request after one round trip: {t_tcp}");
    assert!((t_sh / rtt - 2.0).abs() < 0.05, "shim: after two: {t_sh}");
    assert!((t_ab / rtt - 2.0).abs() < 0.05, "INIT → ABORT, then SYN → SYN-ACK: {t_ab}");
}
