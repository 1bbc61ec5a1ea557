//! Issue 3's scenario-level "must show" checks: the TCP engine driven by the simulator.
mod common;
use std::path::PathBuf;
use std::process::Command;
use wirelab_sim::record::TcpSample;
use wirelab_sim::RunResults;

fn tmp(name: &str) -> common::TmpDir {
    common::tmp("tcp", name)
}

/// N senders → r1 → bottleneck → r2 → N receivers; 1 Gbit/s, 0.5 ms access links, so
/// the base RTT is 2·(owd + 1 ms).
struct Dumbbell {
    n: usize,
    rate: &'static str,
    owd_ms: f64,
    qdisc: String,
    /// netem extras on the data direction of the bottleneck only (e.g. `loss 1%`).
    data_netem: String,
    app: String,
    dur_s: f64,
    sample: &'static str,
    capture: bool,
}

impl Dumbbell {
    fn new(n: usize) -> Self {
        Dumbbell { n, rate: "10mbit", owd_ms: 19.0, qdisc: "pfifo limit 34".into(), data_netem: String::new(), app: String::new(), dur_s: 30.0, sample: "100ms", capture: false }
    }
    fn text(&self) -> String {
        let mut s = format!("[scenario]\nname = \"dumbbell\"\nduration = \"{}s\"\n", self.dur_s);
        s += "[[node]]\nname = \"r1\"\nkind = \"router\"\n[[node]]\nname = \"r2\"\nkind = \"router\"\n";
        for i in 0..self.n {
            s += &format!("[[node]]\nname = \"s{i}\"\n[[node]]\nname = \"d{i}\"\n");
        }
        s += &format!(
            "[[link]]\nname = \"bottleneck\"\na = {{ node = \"r1\", qdisc = \"{q}\", netem = \"rate {r} delay {d}ms {x}\" }}\nb = {{ node = \"r2\" }}\nnetem = \"rate {r} delay {d}ms\"\n",
            q = self.qdisc,
            r = self.rate,
            d = self.owd_ms,
            x = self.data_netem
        );
        for i in 0..self.n {
            s += &format!("[[link]]\na = {{ node = \"s{i}\" }}\nb = {{ node = \"r1\" }}\nnetem = \"rate 1gbit delay 500us\"\n");
            s += &format!("[[link]]\na = {{ node = \"r2\" }}\nb = {{ node = \"d{i}\" }}\nnetem = \"rate 1gbit delay 500us\"\n");
        }
        for i in 0..self.n {
            s += &format!("[[app]]\nname = \"f{i}\"\nkind = \"tcp-bulk\"\nnode = \"s{i}\"\ndst = \"d{i}:5001\"\n{}\n", self.app);
            s += &format!("[[app]]\nname = \"k{i}\"\nkind = \"tcp-sink\"\nnode = \"d{i}\"\nport = 5001\n");
        }
        s += &format!("[measure]\nsample_interval = \"{}\"\n", self.sample);
        if self.capture {
            s += "capture = [\"s0:eth0\"]\n";
        }
        s
    }
    fn run(&self, out: Option<PathBuf>) -> RunResults {
        common::run(&self.text(), out)
    }
}

/// Payload bytes received by sink `k{i}` between `t0` and `t1` (from the flow time series).
fn rx_between(r: &RunResults, sink: &str, t0: f64, t1: f64) -> f64 {
    let at = |t: f64| r.flow_series.iter().filter(|s| s.flow == sink && s.time_s <= t + 1e-9).map(|s| s.rx_bytes).next_back().unwrap_or(0);
    (at(t1) - at(t0)) as f64
}

fn series<'a>(r: &'a RunResults, flow: &str) -> Vec<&'a TcpSample> {
    r.tcp_series.iter().filter(|s| s.flow == flow).collect()
}

/// Payload capacity of a 10 Mbit/s Ethernet link for 1448-byte segments with timestamps:
/// each 1448-byte payload travels in a 1514-byte frame (14 + 20 + 32 bytes of headers).
const PAYLOAD_10M: f64 = 10e6 * 1448.0 / 1514.0;

#[test]
fn single_cubic_flow_fills_a_bdp_buffered_path_with_slow_start_hystart_and_cubic_growth() {
    let d = Dumbbell { sample: "10ms", ..Dumbbell::new(1) };
    let r = d.run(None);
    // utilisation after slow start (t = 2 s … 30 s)
    let rate = rx_between(&r, "k0", 2.0, 30.0) * 8.0 / 28.0;
    let util = rate / PAYLOAD_10M;
    eprintln!("CUBIC goodput {:.3} Mbit/s = {:.4} of the payload capacity", rate / 1e6, util);
    assert!(util > 0.95, "utilisation {util}");

    let s = series(&r, "f0");
    // slow start: cwnd at least quadruples within the first 3 RTTs after the handshake
    let cw = |t: f64| s.iter().filter(|x| x.time_s <= t + 1e-9).map(|x| x.cwnd).next_back().unwrap();
    assert_eq!(cw(0.05), 10, "initial window");
    assert!(cw(0.18) >= 4 * 10, "slow start: cwnd {} at 180 ms", cw(0.18));
    // HyStart: ssthresh is first set while the connection is still Open with nothing
    // retransmitted (delay increase, not loss)
    let first = s.iter().find(|x| x.ssthresh < 0x7fff_ffff).expect("slow start ends");
    assert_eq!(first.total_retrans, 0, "slow start ended by loss, not HyStart: {first:?}");
    assert_eq!(first.ca_state, "Open");
    assert!(first.ssthresh >= 34, "HyStart exit below the BDP: {}", first.ssthresh);
    // cubic growth: within each later epoch (between reductions), growth in the first
    // half exceeds growth in the second half (concave approach to W_max)
    let mut epochs = Vec::new();
    let mut start = None;
    for w in s.windows(2) {
        if w[1].cwnd + 2 < w[0].cwnd {
            if let Some(a) = start.take() {
                epochs.push((a, w[0].time_s));
            }
        } else if start.is_none() && w[0].time_s > 1.0 && w[1].cwnd > w[0].cwnd && w[0].ca_state == "Open" {
            start = Some(w[0].time_s);
        }
    }
    let long: Vec<_> = epochs.iter().filter(|(a, b)| b - a > 1.0).collect();
    assert!(long.len() >= 5, "expected several congestion epochs, got {epochs:?}");
    // the first epoch follows slow start's overshoot, its W_max from the slow-start
    // loss: its growth is about linear (g1/g2 = 11/7 without TSO, 11/10 with the
    // linux-6 TSO timing); the steady-state epochs after it are clearly concave (~15/5)
    for &&(a, b) in &long[1..] {
        let mid = (a + b) / 2.0;
        let g1 = cw(mid) as f64 - cw(a) as f64;
        let g2 = cw(b) as f64 - cw(mid) as f64;
        assert!(g1 > 1.3 * g2 && g2 >= 0.0, "epoch {a:.2}-{b:.2}: growth {g1} then {g2} is not concave");
    }
}

#[test]
fn reno_goodput_follows_the_mathis_model() {
    // RTT 40 ms; the bottleneck (100 Mbit/s, 1000 packets) never limits the flow.
    let mss = 1448.0;
    let rtt = 0.040;
    let mut rows = Vec::new();
    for p in [0.005f64, 0.01, 0.02] {
        let d = Dumbbell {
            rate: "100mbit",
            qdisc: "pfifo limit 1000".into(),
            data_netem: format!("loss {}%", p * 100.0),
            app: "cc = \"reno\"".into(),
            dur_s: 120.0,
            sample: "1s",
            ..Dumbbell::new(1)
        };
        let r = d.run(None);
        let got = rx_between(&r, "k0", 5.0, 120.0) * 8.0 / 115.0;
        // the flow is still sending at the end: its totals come from its last tcp_info
        let f0 = r.flows.iter().find(|f| f.name == "f0").unwrap();
        let lost = r.links.iter().find(|l| l.name == "bottleneck:r1->r2").unwrap().lost_random;
        assert!(f0.retrans >= lost * 9 / 10 && f0.tx_packets > 0, "retrans {} vs {lost} random losses", f0.retrans);
        let model = mss * 8.0 / rtt * (1.5f64).sqrt() / p.sqrt();
        rows.push((p, got, model));
    }
    eprintln!("| loss | goodput Mbit/s | Mathis Mbit/s | ratio |");
    for (p, g, m) in &rows {
        eprintln!("| {:.1} % | {:.3} | {:.3} | {:.3} |", p * 100.0, g / 1e6, m / 1e6, g / m);
    }
    for (p, g, m) in rows {
        assert!((g / m - 1.0).abs() < 0.20, "p = {p}: goodput {g} vs Mathis {m}");
    }
}

#[test]
fn two_cubic_flows_share_a_bottleneck_fairly() {
    let d = Dumbbell { qdisc: "pfifo limit 68".into(), dur_s: 60.0, sample: "1s", ..Dumbbell::new(2) };
    let r = d.run(None);
    let x: Vec<f64> = (0..2).map(|i| rx_between(&r, &format!("k{i}"), 0.0, 60.0)).collect();
    let jain = x.iter().sum::<f64>().powi(2) / (2.0 * x.iter().map(|v| v * v).sum::<f64>());
    eprintln!("two CUBIC flows: {:.3} / {:.3} Mbit/s, Jain {jain:.4}", x[0] * 8.0 / 60e6, x[1] * 8.0 / 60e6);
    assert!(jain >= 0.95, "Jain {jain}");
    let total = (x[0] + x[1]) * 8.0 / 60.0;
    assert!(total > 0.9 * PAYLOAD_10M, "the pair leaves the link idle: {total}");
}

fn tshark(args: &[&str]) -> String {
    let o = Command::new("tshark").args(args).output().unwrap();
    assert!(o.status.success(), "tshark {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn tshark_sees_handshake_options_sack_half_close_and_rst_without_errors() {
    if Command::new("tshark").arg("--version").output().is_err() {
        eprintln!("tshark not installed: skipped");
        return;
    }
    let out = tmp("pcap");
    // a 2 MB transfer with 1 % data loss (SACK blocks, retransmissions), which ends with
    // the client's half-close and the server's FIN; plus a connection to a closed port (RST)
    let mut d = Dumbbell { data_netem: "loss 1%".into(), app: "bytes = \"2000000\"".into(), dur_s: 10.0, capture: true, ..Dumbbell::new(1) };
    d.qdisc = "pfifo limit 100".into();
    let mut text = d.text();
    text += "[[app]]\nname = \"refused\"\nkind = \"tcp-bulk\"\nnode = \"s0\"\ndst = \"d0:6000\"\nbytes = \"1000\"\nstart = \"1s\"\n";
    let r = common::run(&text, Some(out.clone()));
    let f0 = r.flows.iter().find(|f| f.name == "f0").unwrap();
    assert_eq!(f0.state, "done", "transfer did not complete: {f0:?}");
    let k0 = r.flows.iter().find(|f| f.name == "k0").unwrap();
    assert_eq!(k0.rx_bytes, 2_000_000);
    let refused = r.flows.iter().find(|f| f.name == "refused").unwrap();
    assert_eq!(refused.state, "failed");

    let pcap = out.join("pcap/s0-eth0.pcap");
    let p = pcap.to_str().unwrap();
    let chk = ["-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"];
    // no malformed packets, no checksum errors, no "ACKed unseen segment"
    let mut a = vec!["-r", p];
    a.extend(chk);
    a.extend(["-Y", "_ws.malformed || tcp.analysis.ack_lost_segment || tcp.checksum.status == 0 || ip.checksum.status == 0 || _ws.expert.severity >= error"]);
    let bad = tshark(&a);
    assert!(bad.trim().is_empty(), "flagged frames:\n{bad}");
    let count = |filter: &str| -> usize {
        let mut a = vec!["-r", p];
        a.extend(chk);
        a.extend(["-Y", filter]);
        tshark(&a).lines().count()
    };
    // handshake with MSS, window scale, SACK-permitted and timestamps in both SYNs
    assert_eq!(count("!tcp.analysis.retransmission && tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.options.mss_val == 1460 && tcp.options.wscale.shift && tcp.options.sack_perm && tcp.options.timestamp.tsval"), 2, "SYNs");
    assert!(count("tcp.flags.syn == 1 && tcp.flags.ack == 1 && tcp.options.mss_val == 1460 && tcp.options.wscale.shift && tcp.options.sack_perm") >= 1, "SYN-ACK");
    // SACK blocks on ACKs, retransmissions
    assert!(count("tcp.options.sack_le") > 5, "SACK blocks");
    assert!(count("tcp.analysis.retransmission || tcp.analysis.fast_retransmission") > 5, "retransmissions");
    // window scaling in use: advertised windows above 64 KiB
    assert!(count("tcp.window_size > 65535") > 0, "scaled windows");
    // half-close: the client's FIN comes first, data from the server side may follow, then the server's FIN
    assert_eq!(count("tcp.flags.fin == 1 && tcp.srcport == 5001"), 1);
    assert!(count("tcp.flags.fin == 1 && tcp.dstport == 5001") >= 1);
    // RST from the closed port
    assert_eq!(count("tcp.flags.reset == 1 && tcp.srcport == 6000"), 1);

    // `wirelab analyze` on the same capture counts the sender's retransmissions (tcp_info
    // total_retrans) and sees every byte ACKed
    let an = out.join("analysis");
    let code = wirelab_cli::main_with_args(["wirelab", "analyze", p, "--out", an.to_str().unwrap()].map(String::from).to_vec());
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(an.join("summary.json")).unwrap()).unwrap();
    let flow = v["flows"].as_array().unwrap().iter().find(|f| f["flow"].as_str().unwrap().ends_with(":5001")).unwrap();
    // total_retrans also counts SYN retransmissions, which carry no data
    let syn_rtx = count("tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.dstport == 5001 && tcp.analysis.retransmission") as u64;
    assert_eq!(flow["retransmitted_segments"].as_u64().unwrap() + syn_rtx, f0.retrans, "analyzer vs tcp_info retransmissions");
    assert_eq!(flow["acked_bytes"].as_u64().unwrap(), 2_000_000);
}

/// Checksum offload: receivers verify only packets a link corrupted, and those are
/// dropped (TCP repairs them), so a transfer over `corrupt 2%` completes with about 2 %
/// of its segments retransmitted. Verifying every packet (`checksum_offload = false`)
/// gives the identical run.
#[test]
fn corrupted_segments_are_dropped_and_offload_changes_nothing() {
    let text = |offload: bool| {
        format!(
            r#"[scenario]
name = "corrupt"
duration = "30s"
checksum_offload = {offload}
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
a = {{ node = "a", netem = "rate 10mbit delay 10ms corrupt 2%" }}
b = {{ node = "b" }}
netem = "rate 10mbit delay 10ms"
[[app]]
name = "put"
kind = "tcp-bulk"
node = "a"
dst = "b:5001"
bytes = 2000000
[[app]]
name = "sink"
kind = "tcp-sink"
node = "b"
port = 5001
"#
        )
    };
    let r = common::run(&text(true), None);
    let put = r.flows.iter().find(|f| f.name == "put").unwrap();
    assert_eq!(put.state, "done", "{put:?}");
    assert_eq!(r.flows.iter().find(|f| f.name == "sink").unwrap().rx_bytes, 2_000_000);
    let corrupted = r.links.iter().map(|l| l.corrupted).sum::<u64>();
    assert!(corrupted > 15, "{corrupted}");
    // every corrupted data segment was discarded and sent again
    assert!(put.retrans * 10 >= corrupted * 7, "retrans {} for {corrupted} corrupted packets", put.retrans);
    let all = common::run(&text(false), None);
    assert_eq!(r.fingerprint, all.fingerprint, "verifying every packet changes nothing");
}

/// `tcp-thin` presets (Table 2.1 of the thin-stream thesis): `preset = "ssh"` writes 48-byte
/// payloads with exponential gaps of mean 323 ms; explicit keys override the preset; an
/// unknown preset is a clear error naming the available ones.
#[test]
fn thin_stream_presets_set_size_and_itt() {
    let text = |extra: &str| {
        format!(
            r#"[scenario]
name = "preset"
duration = "600s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
a = {{ node = "a" }}
b = {{ node = "b" }}
netem = "rate 10mbit delay 10ms"
[[app]]
name = "thin"
kind = "tcp-thin"
node = "a"
dst = "b:22"
{extra}
[[app]]
name = "sink"
kind = "tcp-sink"
node = "b"
port = 22
"#
        )
    };
    let r = common::run(&text("preset = \"ssh\""), None);
    let t = r.flows.iter().find(|f| f.name == "thin").unwrap();
    assert_eq!(t.tx_bytes, t.tx_packets * 48, "{t:?}");
    let expect = 600.0 / 0.323;
    assert!((t.tx_packets as f64 / expect - 1.0).abs() < 0.1, "{} writes, expected ≈ {expect:.0}", t.tx_packets);
    let r = common::run(&text("preset = \"ssh\"\nsize = 100\ninterval = \"1s\"\nitt_dist = \"fixed\""), None);
    let t = r.flows.iter().find(|f| f.name == "thin").unwrap();
    assert_eq!(t.tx_bytes, 100 * t.tx_packets, "{t:?}");
    assert!((599..=600).contains(&t.tx_packets), "one write per second after the handshake: {t:?}");
    let e = wirelab_scenario::Scenario::from_text("<t>", &text("preset = \"quake\""), &[]).and_then(|s| s.build(&wirelab_scenario::BuildOptions::default()).map(|_| ())).unwrap_err();
    assert!(e.to_string().contains("unknown thin-stream preset `quake`") && e.to_string().contains("ssh"), "{e}");
}
