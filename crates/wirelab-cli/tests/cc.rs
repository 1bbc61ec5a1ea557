//! Issue 17 in the simulator: who paces (the host's `fq` marks its sockets `SK_PACING_FQ`)
//! and the `ss -ti` fields of BBR and DCTCP in `tcp_timeseries`.
mod common;
use wirelab_sim::record::TcpSample;
use wirelab_sim::RunResults;

/// s → r → d: a 1 Gbit/s access link whose egress at s has qdisc `sq` (tc syntax, empty for
/// the default), then a 10 Mbit/s, 20 ms bottleneck with `bq` at r. One bulk flow with `cc`
/// (host sysctl on both ends) for `dur` seconds, sampled every 10 ms.
fn scenario(cc: &str, sq: &str, bq: &str, dur: f64) -> String {
    let sq = if sq.is_empty() { String::new() } else { format!(", qdisc = \"{sq}\"") };
    let sys = format!("sysctl = {{ \"net.ipv4.tcp_congestion_control\" = \"{cc}\" }}");
    format!(
        "[scenario]\nname = \"cc\"\nduration = \"{dur}s\"\n\
         [[node]]\nname = \"s\"\n{sys}\n[[node]]\nname = \"r\"\nkind = \"router\"\n[[node]]\nname = \"d\"\n{sys}\n\
         [[link]]\nname = \"access\"\na = {{ node = \"s\"{sq} }}\nb = {{ node = \"r\" }}\nnetem = \"rate 1gbit delay 500us\"\n\
         [[link]]\nname = \"bottleneck\"\na = {{ node = \"r\", qdisc = \"{bq}\" }}\nb = {{ node = \"d\" }}\nnetem = \"rate 10mbit delay 20ms\"\n\
         [[app]]\nname = \"f\"\nkind = \"tcp-bulk\"\nnode = \"s\"\ndst = \"d:5001\"\n\
         [[app]]\nname = \"k\"\nkind = \"tcp-sink\"\nnode = \"d\"\nport = 5001\n\
         [measure]\nsample_interval = \"10ms\"\n"
    )
}

fn sender(r: &RunResults) -> Vec<&TcpSample> {
    r.tcp_series.iter().filter(|s| s.flow == "f" && s.state == "ESTAB").collect()
}

/// Mean number of packets queued at s's egress over the samples.
fn mean_host_qlen(r: &RunResults) -> f64 {
    let q: Vec<f64> = r.queue_series.iter().filter(|q| q.dev == "s:eth0").map(|q| q.qlen as f64).collect();
    q.iter().sum::<f64>() / q.len().max(1) as f64
}

fn rx_mbit(r: &RunResults) -> f64 {
    r.flows.iter().find(|f| f.name == "k").map(|f| f.rx_bytes as f64 * 8.0 / r.sim_seconds / 1e6).unwrap()
}

#[test]
fn an_fq_egress_takes_pacing_over_from_tcp_and_fq_nopacing_does_not() {
    // `fq` at the host: sockets are SK_PACING_FQ; TCP stamps departure times and hands
    // packets over at once, so they wait in fq (its queue holds packets)
    let fq = common::run(&scenario("bbr", "fq", "pfifo limit 50", 10.0), None);
    let s = sender(&fq);
    assert!(!s.is_empty());
    assert!(s.iter().all(|x| x.pacing == "fq"), "{:?}", s.iter().map(|x| x.pacing).collect::<Vec<_>>());
    // the default egress, `fq nopacing` (rate_enable off: fq_classify() leaves the socket
    // alone) and an HTB whose leaf is a pfifo: BBR paces internally (SK_PACING_NEEDED), so
    // the host's queue stays nearly empty
    for sq in ["", "fq nopacing"] {
        let r = common::run(&scenario("bbr", sq, "pfifo limit 50", 10.0), None);
        let s = sender(&r);
        assert!(s.iter().all(|x| x.pacing == "internal"), "{sq}: {:?}", s.iter().map(|x| x.pacing).collect::<Vec<_>>());
        assert!(mean_host_qlen(&r) < 0.2, "{sq}: internal pacing keeps the host queue empty, mean {}", mean_host_qlen(&r));
        // both pace: the bottleneck is filled alike (within 5 %)
        assert!((rx_mbit(&r) / rx_mbit(&fq) - 1.0).abs() < 0.05, "{sq}: {} vs fq {} Mbit/s", rx_mbit(&r), rx_mbit(&fq));
    }
    assert!(mean_host_qlen(&fq) > 2.0, "fq holds the stamped packets until their departure time, mean {}", mean_host_qlen(&fq));
    // CUBIC asks for no pacing: status NONE behind pfifo, FQ behind fq (fq marks every
    // socket it sees with pacing on, whatever the module)
    let c = common::run(&scenario("cubic", "", "pfifo limit 50", 3.0), None);
    assert!(sender(&c).iter().all(|x| x.pacing == "none"));
    let c = common::run(&scenario("cubic", "fq", "pfifo limit 50", 3.0), None);
    assert!(sender(&c).iter().all(|x| x.pacing == "fq"));
}

#[test]
fn fq_leaves_under_htb_count_as_fq_and_a_pfifo_leaf_does_not() {
    let tree = |leaf: &str| {
        format!(
            "[scenario]\nname = \"t\"\nduration = \"2s\"\n\
             [[node]]\nname = \"s\"\nsysctl = {{ \"net.ipv4.tcp_congestion_control\" = \"bbr\" }}\n[[node]]\nname = \"d\"\n\
             [[link]]\nname = \"l\"\na = {{ node = \"s\", tc = [\"qdisc add root handle 1: htb default 10\", \"class add parent 1: classid 1:10 htb rate 20mbit\", \"qdisc add parent 1:10 handle 10: {leaf}\"] }}\nb = {{ node = \"d\" }}\nnetem = \"rate 100mbit delay 10ms\"\n\
             [[app]]\nname = \"f\"\nkind = \"tcp-bulk\"\nnode = \"s\"\ndst = \"d:5001\"\n\
             [[app]]\nname = \"k\"\nkind = \"tcp-sink\"\nnode = \"d\"\nport = 5001\n\
             [measure]\nsample_interval = \"100ms\"\n"
        )
    };
    let r = common::run(&tree("fq"), None);
    assert!(sender(&r).iter().all(|x| x.pacing == "fq"));
    let r = common::run(&tree("pfifo limit 100"), None);
    assert!(sender(&r).iter().all(|x| x.pacing == "internal"));
}

#[test]
fn bbr_columns_follow_its_state_machine() {
    let r = common::run(&scenario("bbr", "", "pfifo limit 50", 12.0), None);
    let s = sender(&r);
    let modes: Vec<&str> = s.iter().filter_map(|x| x.bbr_mode).collect();
    assert_eq!(modes.len(), s.len(), "every BBR row has a mode");
    // STARTUP first, then DRAIN (possibly shorter than a sample), PROBE_BW for most of the
    // run, and PROBE_RTT once after min_rtt is 10 s old (a single flow rarely sees a lower
    // RTT after startup's queue)
    assert_eq!(modes[0], "STARTUP");
    let first_bw = modes.iter().position(|m| *m == "PROBE_BW").expect("reaches PROBE_BW");
    assert!(modes[..first_bw].iter().all(|m| *m == "STARTUP" || *m == "DRAIN"));
    assert!(modes.iter().filter(|m| **m == "PROBE_BW").count() * 10 > modes.len() * 8);
    let last = s.last().unwrap();
    // bw ≈ the bottleneck's payload rate of 1514-byte frames, min_rtt ≈ 42 ms
    let bw = last.bbr_bw_bps.unwrap();
    assert!((9.0e6..10.5e6).contains(&bw), "bbr bw {bw}");
    let mrtt = last.bbr_min_rtt_ms.unwrap();
    assert!((41.0..44.0).contains(&mrtt), "bbr min_rtt {mrtt}");
    // tcp_min_rtt() is the all-time minimum (the handshake's small packets included);
    // BBR's is re-measured in PROBE_RTT with full-sized data sent as TSO pairs (GSO puts
    // both segments out at once; the ACK that samples the pair comes after both were
    // serialised at 10 Mbit/s, 2 × 1.2 ms): higher by up to ~2.5 ms
    let tmin = last.min_rtt_ms.unwrap();
    assert!(tmin <= mrtt && mrtt - tmin < 3.0, "tcp min_rtt {tmin}, bbr {mrtt}");
    assert_eq!(last.bbr_cwnd_gain, Some(2.0));
    // PROBE_BW's gain cycle: 5/4, 3/4 and 1 all appear
    let gains: std::collections::BTreeSet<u64> = s.iter().filter(|x| x.bbr_mode == Some("PROBE_BW")).filter_map(|x| x.bbr_pacing_gain).map(|g| (g * 100.0).round() as u64).collect();
    assert!(gains.contains(&125) && gains.contains(&75) && gains.contains(&100), "{gains:?}");
    // pacing_rate = gain × bw less BBR's 1 % margin (bbr_rate_bytes_per_sec), in PROBE_BW
    let x = s.iter().rev().find(|x| x.bbr_mode == Some("PROBE_BW")).unwrap();
    let expect = x.bbr_bw_bps.unwrap() * x.bbr_pacing_gain.unwrap() * 0.99;
    let pr = x.pacing_rate_bps.unwrap();
    assert!((pr / expect - 1.0).abs() < 0.01, "pacing_rate {pr} vs {expect}");
    assert!(s.iter().all(|x| x.congestion == "bbr" && x.dctcp_alpha.is_none() && !x.ecn));
}

#[test]
fn dctcp_columns_show_alpha_ecn_and_marks() {
    // DCTCP at both ends behind an ECN-marking RED at K = 20 packets
    let red = "red limit 100000 min 30280 max 30281 avpkt 1514 burst 20 probability 1 ecn";
    let r = common::run(&scenario("dctcp", "", red, 5.0), None);
    let s = sender(&r);
    assert!(s.iter().all(|x| x.ecn && x.congestion == "dctcp" && x.bbr_mode.is_none()));
    let last = s.last().unwrap();
    assert!(last.delivered_ce > 0 && last.delivered_ce < last.delivered);
    // alpha starts at 1 (dctcp_alpha_on_init 1024) and falls to the marked fraction
    assert_eq!(s[0].dctcp_alpha, Some(1.0));
    let a = last.dctcp_alpha.unwrap();
    assert!(a > 0.0 && a < 0.5, "alpha {a}");
    assert!(s.iter().any(|x| x.dctcp_ab_tot.unwrap() > 0));
    assert!(s.iter().all(|x| x.dctcp_ab_ecn.unwrap() <= x.dctcp_ab_tot.unwrap()));
    // the receiver side: it saw ECT data
    let rcv: Vec<&TcpSample> = r.tcp_series.iter().filter(|x| x.flow == "k" && x.state == "ESTAB").collect();
    assert!(rcv.last().unwrap().ecn_seen);
    // CUBIC without ECN has none of these
    let c = common::run(&scenario("cubic", "", "pfifo limit 50", 2.0), None);
    let c = sender(&c);
    assert!(c.iter().all(|x| !x.ecn && x.dctcp_alpha.is_none() && x.bbr_bw_bps.is_none()));
    // tcp_update_pacing_rate() gives CUBIC a rate too once it has an RTT sample
    assert!(c.last().unwrap().pacing_rate_bps.is_some_and(|r| r > 1e6));
}

#[test]
fn max_pacing_rate_paces_cubic_and_caps_the_rate() {
    // SO_MAX_PACING_RATE 4 Mbit/s on a CUBIC sender: SK_PACING_NEEDED (internal pacing) and
    // the socket cannot send faster than the cap, although the bottleneck has 10 Mbit/s
    let text = scenario("cubic", "", "pfifo limit 50", 6.0).replace("dst = \"d:5001\"\n", "dst = \"d:5001\"\nmax_pacing_rate = \"4mbit\"\n");
    let r = common::run(&text, None);
    let s = sender(&r);
    assert!(s.iter().all(|x| x.pacing == "internal" && x.max_pacing_rate_bps == Some(4e6)));
    assert!(s.iter().filter_map(|x| x.pacing_rate_bps).all(|p| p <= 4e6));
    // tcp_update_skb_after_send() spaces skb->len, the payload: 4 Mbit/s of payload (the
    // first ten segments go unpaced, and up to half a gap is forgiven when sent late)
    let mbit = rx_mbit(&r);
    assert!(mbit < 4.05 && mbit > 3.8, "{mbit}");
    // a key the kind does not take is an error naming the kind's keys
    let bad = scenario("cubic", "", "pfifo limit 50", 1.0).replace("port = 5001\n", "port = 5001\nmax_pacing_rate = \"fast\"\n");
    let e = wirelab_scenario::Scenario::from_text("<t>", &bad, &[]).and_then(|s| s.build(&Default::default()).map(|_| ())).unwrap_err().to_string();
    assert!(e.contains("fast"), "{e}");
}

#[test]
fn unknown_modules_and_qdisc_options_are_file_line_key_errors_listing_what_exists() {
    let base = scenario("bbr", "", "pfifo limit 50", 1.0);
    // (replace this, with that, the error's line holds `needle`, its key, the message has `want`)
    let cases: &[(&str, &str, &str, &str, &[&str])] = &[
        ("\"net.ipv4.tcp_congestion_control\" = \"bbr\" }\n[[node]]\nname = \"r\"", "\"net.ipv4.tcp_congestion_control\" = \"bbr2\" }\n[[node]]\nname = \"r\"", "bbr2", "node[0]", &["bbr2", "reno cubic bbr dctcp vegas"]),
        ("dst = \"d:5001\"\n", "dst = \"d:5001\"\ncc = \"prague\"\n", "prague", "app[0].cc", &["unknown congestion control `prague`", "reno cubic bbr dctcp vegas"]),
        ("qdisc = \"pfifo limit 50\"", "qdisc = \"fq pacing_rate 1mbit\"", "fq pacing_rate", "link[1]", &["unsupported option `pacing_rate`", "flow_limit, quantum", "maxrate"]),
        ("qdisc = \"pfifo limit 50\"", "qdisc = \"dualpi2 l4s_threshold 1ms\"", "dualpi2", "link[1]", &["unsupported option `l4s_threshold`", "step_thresh"]),
        ("qdisc = \"pfifo limit 50\"", "qdisc = \"red limit 100000 avpkt 1000 min 3000 max 9000 ecn_only\"", "ecn_only", "link[1]", &["ecn_only", "ecn, harddrop, nodrop"]),
        ("qdisc = \"pfifo limit 50\"", "qdisc = \"fq_codel ecn_threshold 1ms\"", "fq_codel", "link[1]", &["ecn_threshold", "ce_threshold"]),
        ("qdisc = \"pfifo limit 50\"", "qdisc = \"bbr limit 3\"", "bbr limit 3", "link[1]", &["unknown or unsupported qdisc kind `bbr`", "fq_codel", "dualpi2"]),
    ];
    for (from, to, needle, key, wants) in cases {
        assert!(base.contains(from), "{from}");
        let text = base.replacen(from, to, 1);
        let e = wirelab_scenario::Scenario::from_text("cc.toml", &text, &[]).and_then(|s| s.build(&Default::default()).map(|_| ())).unwrap_err();
        let line = text.lines().position(|l| l.contains(needle)).unwrap() + 1;
        assert_eq!((e.file.as_str(), e.line), ("cc.toml", line), "{needle}: {e}");
        assert!(e.key.starts_with(key), "{needle}: key `{}`, want `{key}…`", e.key);
        for w in *wants {
            assert!(e.message.contains(w), "{needle}: `{}` lacks `{w}`", e.message);
        }
        // and the rendered error starts file:line
        assert!(e.to_string().starts_with(&format!("cc.toml:{line}")), "{e}");
    }
}
