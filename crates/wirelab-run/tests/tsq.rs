//! TCP Small Queues end to end (docs/tcp.md "TCP Small Queues"): one bulk flow behind a
//! 10 Mbit/s tbf on the sender's own interface (`scenarios/tsq/tbf-veth.toml`, the
//! topology `scripts/tsq-kernel.sh` runs on the kernel). With TSQ the tbf holds about the
//! TSQ limit (two skbs of up to 64 KiB at this tiny RTT, `tcp_tso_autosize()`), without it
//! the whole window until the tbf drops; `tcp_limit_output_bytes` caps it.
use std::path::Path;

/// Runs the scenario with `edit` applied to its text; returns (max backlog in bytes of
/// h1's tbf after the first second, tbf drops, goodput in bit/s).
fn run(tag: &str, edit: impl Fn(String) -> String) -> (u64, u64, f64) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/tsq");
    let out = std::env::temp_dir().join(format!("wirelab-tsq-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let toml = edit(std::fs::read_to_string(root.join("tbf-veth.toml")).unwrap());
    let file = out.join("tbf-veth.toml");
    std::fs::write(&file, toml).unwrap();
    let sets = ["scenario.duration=10s".to_string()];
    let r = wirelab_run::run_scenario(&file, &out.join("run"), None, &sets, |_, _| {}).unwrap_or_else(|e| panic!("{tag}: {}", e.1));
    let csv = std::fs::read_to_string(out.join("run/queue_timeseries.csv")).unwrap();
    let mut max = 0u64;
    let mut drops = 0u64;
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f[1] == "h1:eth0" && f[0].parse::<f64>().unwrap() >= 1.0 {
            max = max.max(f[3].parse().unwrap());
            drops = f[4].parse().unwrap();
        }
    }
    let goodput = r.results.flows.iter().find(|f| f.name == "rx").map(|f| f.goodput_bps).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    (max, drops, goodput)
}

fn with_sysctl(s: String, kv: &str) -> String {
    s.replacen("name = \"h1\"\n", &format!("name = \"h1\"\nsysctl = {{ {kv} }}\n"), 1)
}

#[test]
fn tsq_keeps_the_senders_own_tbf_near_the_limit() {
    // Linux 6.18 (default profile): limit = min(max(2 truesize, pacing_rate >> 10), 4 MiB);
    // at this RTT a TSO skb is up to 64 KiB (45 segments, 68 KiB on the wire), so two of
    // them plus the one that passed the check last.
    let (tsq, tsq_drops, tsq_goodput) = run("linux6", |s| s);
    assert!(tsq <= 3 * 45 * 1514, "tbf backlog {tsq} B with TSQ");
    assert_eq!(tsq_drops, 0);
    assert!(tsq_goodput > 9.0e6, "goodput {tsq_goodput}");
    // No TSQ (a 2.6.37 stack): the window piles up in the tbf until it drops.
    let (old, old_drops, _) = run("none", |s| s.replacen("seed = 1\n", "seed = 1\nprofile = \"linux-2.6.37\"\n", 1));
    assert!(old > 2 * tsq && old_drops > 0, "no TSQ: backlog {old} B, {old_drops} drops; TSQ: {tsq} B");
    // tcp_limit_output_bytes caps the limit: 20 000 B plus one skb
    let (small, small_drops, small_goodput) = run("lob", |s| with_sysctl(s, "\"net.ipv4.tcp_limit_output_bytes\" = \"20000\""));
    assert!(small <= 20_000 + 45 * 1514 && small < tsq, "backlog {small} B at tcp_limit_output_bytes 20000 (default: {tsq})");
    assert_eq!(small_drops, 0);
    assert!(small_goodput > 9.0e6, "goodput {small_goodput}");
}

#[test]
fn tbf_segments_gso_skbs_above_its_max_size_and_each_segment_is_charged() {
    // tbf_enqueue(): a GSO skb longer than max_size (here burst 32kbit: 4 000 B) goes
    // through tbf_segment(), and tcp_gso_segment() charges the socket each segment's own
    // truesize (832 + 1 448 B) instead of the skb's (1 280 + 45 x 1 448): the TSQ limit,
    // 2 x the skb's truesize, is reached with 59 segments queued instead of 88. Kernel
    // (scripts/tsq-kernel.py): median 112-119 kB, peak 150-155 kB.
    let (seg, seg_drops, _) = run("segment", |s| s);
    let limit = 2 * (1280 + 45 * 1448);
    assert!(seg <= (limit / (832 + 1448) + 45 + 1) * 1514, "tbf backlog {seg} B: segments not re-charged?");
    assert_eq!(seg_drops, 0);
    // A burst above the skb (max_size > 68 kB): no segmentation, one charge per skb, so
    // about 1.3 x the segments fit under the same limit.
    let (whole, _, _) = run("whole", |s| s.replace("burst 32kbit", "burst 1mbit"));
    assert!(whole > seg * 5 / 4, "unsegmented backlog {whole} B vs segmented {seg} B");
}

#[test]
fn tcp_limit_output_bytes_is_checked() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/tsq");
    let out = std::env::temp_dir().join(format!("wirelab-tsq-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let cases = [
        ("\"net.ipv4.tcp_limit_output_bytes\" = \"-1\"", "tcp_limit_output_bytes"),
        ("\"net.ipv4.tcp_limit_output_bytes\" = \"3000000000\"", "0..=2147483647"),
    ];
    for (kv, want) in cases {
        let file = out.join("bad.toml");
        std::fs::write(&file, with_sysctl(std::fs::read_to_string(root.join("tbf-veth.toml")).unwrap(), kv)).unwrap();
        let err = match wirelab_run::run_scenario(&file, &out.join("run"), None, &[], |_, _| {}) {
            Ok(_) => panic!("{kv} accepted"),
            Err(e) => e.1,
        };
        assert!(err.contains(want) && err.contains("bad.toml"), "{kv}: {err}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
