//! A hand-crafted capture with one loss and its retransmission: every number is computed
//! by hand below, and tshark's `tcp.analysis` must agree where the definitions overlap.
mod common;

use common::*;
use std::net::Ipv4Addr;
use wirelab_analyze::{analyze, analyze_bytes, AnalyzeOptions, ClassRule};
use wirelab_core::{Duration, Instant};
use wirelab_wire::ethernet::mac_for;
use wirelab_wire::pcap::{linktype, PcapWriter, PcapngWriter};

const A: (Ipv4Addr, u16) = (Ipv4Addr::new(10, 0, 0, 1), 40000);
const B: (Ipv4Addr, u16) = (Ipv4Addr::new(10, 0, 1, 2), 5000);
const ISN_A: u32 = 0xffff_ff00; // wraps after 256 bytes: unwrapping is exercised
const ISN_B: u32 = 5000;

/// (time ms, from A?, seq, ack, flags, sack, payload)
type Pkt = (u64, bool, u32, u32, u8, Vec<(u32, u32)>, usize);

/// Frame by frame (relative sequence numbers, data from A to B):
///  1   0 ms SYN                 2  10 ms SYN-ACK          3  20 ms ACK
///  4 100 ms data 1..101         5 110 ms data 101..201 (lost)
///  6 120 ms data 201..301       7 130 ms ACK 101 (acks frame 4: 30 ms)
///  8 140 ms ACK 101 SACK 201-301 (dup ACK; SACKs frame 6: 20 ms)
///  9 150 ms retransmission of 101..201
/// 10 170 ms ACK 301: acks 101..201 (60 ms from frame 5) and 201..301 (50 ms)
/// 11 200 ms data 301..351      12 230 ms ACK 351 (30 ms)
fn script() -> Vec<Pkt> {
    let a = |r: u32| ISN_A.wrapping_add(r);
    let b = |r: u32| ISN_B.wrapping_add(r);
    vec![
        (0, true, a(0), 0, SYN, vec![], 0),
        (10, false, b(0), a(1), SYN | ACK, vec![], 0),
        (20, true, a(1), b(1), ACK, vec![], 0),
        (100, true, a(1), b(1), ACK | PSH, vec![], 100),
        (110, true, a(101), b(1), ACK | PSH, vec![], 100),
        (120, true, a(201), b(1), ACK | PSH, vec![], 100),
        (130, false, b(1), a(101), ACK, vec![], 0),
        (140, false, b(1), a(101), ACK, vec![(a(201), a(301))], 0),
        (150, true, a(101), b(1), ACK | PSH, vec![], 100),
        (170, false, b(1), a(301), ACK, vec![], 0),
        (200, true, a(301), b(1), ACK | PSH, vec![], 50),
        (230, false, b(1), a(351), ACK, vec![], 0),
    ]
}

const MS: i64 = 1_000_000;

fn frames(script: &[Pkt]) -> Vec<(Instant, Vec<u8>)> {
    script
        .iter()
        .enumerate()
        .map(|(i, (t, from_a, seq, ack, fl, sack, len))| {
            let (s, d) = if *from_a { (A, B) } else { (B, A) };
            // 1 s in: tshark ignores a SYN at time 0 when it times the handshake
            (Instant::from_nanos((1000 + t) * 1_000_000), datagram(s, d, *seq, *ack, *fl, sack, *len, i as u16))
        })
        .collect()
}

fn ethernet_pcap(script: &[Pkt]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    for (t, ip) in frames(script) {
        w.write_ipv4_as_ethernet(t, mac_for(1, 0), mac_for(2, 0), &ip).unwrap();
    }
    w.into_inner().unwrap()
}

fn check_hand_computed(a: &wirelab_analyze::Analysis) {
    assert_eq!(a.flows.len(), 1, "only A→B carries data");
    let f = &a.flows[0];
    assert_eq!(f.flow.to_string(), "10.0.0.1:40000>10.0.1.2:5000");
    assert_eq!((f.data_segments, f.retransmitted_segments), (5, 1));
    assert_eq!(f.est_loss, 0.2);
    assert_eq!((f.tx_bytes, f.retx_bytes, f.acked_bytes), (450, 100, 350));
    let rows: Vec<_> = a
        .segments
        .iter()
        .map(|r| (r.seq, r.len, r.first_frame, r.retransmissions, r.acked_frame, r.latency_ns, r.latency_sack_ns))
        .collect();
    assert_eq!(
        rows,
        vec![
            (1, 100, 4, 0, Some(7), Some(30 * MS), Some(30 * MS)),
            (101, 100, 5, 1, Some(10), Some(60 * MS), Some(60 * MS)),
            (201, 100, 6, 0, Some(10), Some(50 * MS), Some(20 * MS)),
            (301, 50, 11, 0, Some(12), Some(30 * MS), Some(30 * MS)),
        ]
    );
    assert_eq!(a.segments[1].last_frame, 9);
    // nearest rank over [30, 30, 50, 60]
    let l = &f.ack_latency;
    assert_eq!((l.n, l.p50_ns, l.p90_ns, l.p99_ns, l.max_ns), (4, Some(30 * MS), Some(60 * MS), Some(60 * MS), Some(60 * MS)));
    assert_eq!(f.ack_latency_sack.p50_ns, Some(30 * MS));
    let cdf: Vec<_> = a.cdf.iter().filter(|c| c.metric == "ack_latency").map(|c| (c.value_ns / MS, c.fraction)).collect();
    assert_eq!(cdf, vec![(30, 0.5), (50, 0.75), (60, 1.0)]);
    assert_eq!(a.retransmissions.iter().map(|r| (r.frame, r.seq)).collect::<Vec<_>>(), vec![(9, 101)]);
    // 100 ms intervals: data in [100,200) and [200,300)
    let iv: Vec<_> = a.intervals.iter().map(|r| (r.start_ns / MS, r.tx_bytes, r.retx_bytes, r.acked_bytes)).collect();
    assert_eq!(iv, vec![(100, 400, 100, 300), (200, 50, 0, 50)]);
    assert_eq!(f.duration_ns, 130 * MS, "100 ms to the last ACK at 230 ms");
}

fn opts_100ms() -> AnalyzeOptions {
    AnalyzeOptions { interval: Duration::from_millis(100), ..Default::default() }
}

#[test]
fn hand_computed_ethernet_pcap() {
    let a = analyze_bytes(&ethernet_pcap(&script()), None, &opts_100ms()).unwrap();
    assert_eq!(a.sender_stats.frames, 12);
    check_hand_computed(&a);
}

/// The same packets as pcapng, SLL2 and raw IPv4 give the same numbers.
#[test]
fn same_numbers_across_link_types() {
    let s = script();
    let fr = frames(&s);
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    let i = w.add_interface(linktype::RAW, "raw", "raw ip").unwrap();
    for (t, ip) in &fr {
        w.write_packet(i, *t, ip, ip.len() as u32).unwrap();
    }
    let a = analyze_bytes(&w.into_inner().unwrap(), None, &opts_100ms()).unwrap();
    check_hand_computed(&a);

    let mut w = PcapWriter::with_linktype(Vec::new(), linktype::LINUX_SLL2).unwrap();
    for (t, ip) in &fr {
        let mut f = vec![0x08, 0x00];
        f.resize(20, 0);
        f.extend_from_slice(ip);
        w.write_packet(*t, &f, f.len() as u32).unwrap();
    }
    let a = analyze_bytes(&w.into_inner().unwrap(), None, &opts_100ms()).unwrap();
    check_hand_computed(&a);
}

/// tcpdump-style: µs timestamps, a VLAN tag, IPv4 options, a 74-byte snaplen (payloads
/// cut, headers kept) and a final record cut short.
#[test]
fn tcpdump_style_capture() {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&74u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for (t, ip) in frames(&script()) {
        // IPv4 with a 4-byte option (NOP NOP NOP EOL): IHL 6
        let mut ip2 = ip[..20].to_vec();
        ip2.extend_from_slice(&[1, 1, 1, 0]);
        ip2.extend_from_slice(&ip[20..]);
        ip2[0] = 0x46;
        let tl = ip2.len() as u16;
        ip2[2..4].copy_from_slice(&tl.to_be_bytes());
        let mut f = mac_for(2, 0).to_vec();
        f.extend_from_slice(&mac_for(1, 0));
        f.extend_from_slice(&[0x81, 0x00, 0x00, 0x05, 0x08, 0x00]);
        f.extend_from_slice(&ip2);
        let cap = f.len().min(74);
        let us = t.as_nanos() / 1000;
        b.extend_from_slice(&((us / 1_000_000) as u32).to_le_bytes());
        b.extend_from_slice(&((us % 1_000_000) as u32).to_le_bytes());
        b.extend_from_slice(&(cap as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&f[..cap]);
    }
    b.extend_from_slice(&[1, 2, 3, 4, 5]); // a record header cut short
    let a = analyze_bytes(&b, None, &opts_100ms()).unwrap();
    check_hand_computed(&a);
    assert!(a.sender_stats.file_cut_short);
    assert_eq!(a.sender_stats.snaplen_cut, 5, "the five data frames lost payload bytes");
    assert_eq!(a.sender_stats.options_cut, 0, "74 bytes keep frame 8's SACK option exactly");
    assert!(a.warnings[0].contains("cut short"), "{:?}", a.warnings);
    // snaplen 60 keeps the IPv4 header but not the whole TCP header: counted, skipped
    b[16..20].copy_from_slice(&60u32.to_le_bytes());
    let strict = AnalyzeOptions { strict: true, ..opts_100ms() };
    assert!(analyze_bytes(&b, None, &strict).unwrap_err().to_string().contains("cut short"));
}

#[test]
fn truncated_tcp_header_counted_or_strict_error() {
    let fr = frames(&script());
    let mut w = PcapWriter::with_linktype(Vec::new(), linktype::RAW).unwrap();
    for (i, (t, ip)) in fr.iter().enumerate() {
        // frame 2 keeps its IPv4 header and 10 bytes of TCP header
        let keep = if i == 1 { 30 } else { ip.len() };
        w.write_packet(*t, &ip[..keep], ip.len() as u32).unwrap();
    }
    let bytes = w.into_inner().unwrap();
    let a = analyze_bytes(&bytes, None, &AnalyzeOptions::default()).unwrap();
    assert_eq!(a.sender_stats.undecodable, 1);
    assert_eq!(a.warnings, vec!["sender: packet 2: truncated TCP header".to_string()]);
    let e = analyze_bytes(&bytes, None, &AnalyzeOptions { strict: true, ..Default::default() }).unwrap_err();
    assert_eq!(e.to_string(), "sender: packet 2: truncated TCP header");
}

/// The files, the CSV/JSON writers and tshark on the same capture.
#[test]
fn crafted_agrees_with_tshark_and_writes_tables() {
    let dir = std::env::temp_dir().join(format!("wirelab-analyze-crafted-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("crafted.pcap");
    std::fs::write(&path, ethernet_pcap(&script())).unwrap();
    let opts = AnalyzeOptions { classes: vec![ClassRule::parse("thin=dport:5000-5100").unwrap()], ..opts_100ms() };
    let a = analyze(&path, None, &opts).unwrap();
    check_hand_computed(&a);
    assert_eq!(a.flows[0].class.as_deref(), Some("thin"));
    assert_eq!(a.classes[0].flows, 1);

    let out = dir.join("out");
    let files = a.write_dir(&out).unwrap();
    let names: Vec<_> = files.iter().map(|p| p.file_name().unwrap().to_str().unwrap().to_string()).collect();
    assert_eq!(
        names,
        ["segments.csv", "flows.csv", "retransmissions.csv", "latency_cdf.csv", "intervals.csv", "fairness.csv", "classes.csv", "summary.json"]
    );
    for f in files.iter().filter(|p| p.extension().is_some_and(|e| e == "csv")) {
        let body = std::fs::read_to_string(f).unwrap();
        let cols = body.lines().next().unwrap().split(',').count();
        assert!(body.lines().count() > 1, "{f:?} has rows");
        assert!(body.lines().all(|l| l.split(',').count() == cols), "{f:?}: ragged rows");
    }
    let seg = std::fs::read_to_string(out.join("segments.csv")).unwrap();
    assert_eq!(
        seg.lines().nth(2).unwrap(),
        "10.0.0.1:40000>10.0.1.2:5000,101,100,0.110000000,5,0.150000000,9,1,0,0.170000000,10,60.000000,0.170000000,60.000000"
    );
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["flows"][0]["ack_latency"]["p90_ns"], 60_000_000);
    assert_eq!(json["flows"][0]["flow"], "10.0.0.1:40000>10.0.1.2:5000");

    if tshark_available() {
        let ts = tshark(&path);
        let (exact, retx) = compare_with_tshark(&a, &ts);
        // tshark: frame 7 acks 4 (30 ms), frame 10 acks 6 (50 ms), frame 12 acks 11 (30 ms)
        assert_eq!((exact, retx), (3, 0));
        assert_eq!(ts[&10].acks_frame, Some(6));
        assert_eq!(ts[&10].ack_rtt_ns, Some(50 * MS));
    } else {
        eprintln!("tshark not installed; skipping the tshark comparison");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A class no flow falls into has zero goodput, written `0`, never `-0` (`Sum for f64`
/// starts at -0.0).
#[test]
fn empty_class_prints_zero_not_negative_zero() {
    let opts = AnalyzeOptions {
        classes: vec![ClassRule::parse("thin=dport:5000-5100").unwrap(), ClassRule::parse("greedy=dport:6000-6999").unwrap()],
        ..opts_100ms()
    };
    let a = analyze_bytes(&ethernet_pcap(&script()), None, &opts).unwrap();
    assert_eq!((a.classes[0].flows, a.classes[1].flows), (1, 0));
    assert!(a.classes[1].goodput_sum_bps.is_sign_positive());
    let csv = a.classes_csv();
    assert_eq!(csv.lines().nth(2).unwrap(), "greedy,0,0,0,,0.000000,,");
    assert!(!csv.contains("-0"), "{csv}");
    let json: serde_json::Value = serde_json::from_str(&a.summary_json()).unwrap();
    assert_eq!(json["classes"][1]["goodput_sum_bps"].to_string(), "0.0");
}

fn write_tmp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("wirelab-analyze-{}-{name}", std::process::id()));
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A capture taken downstream of the loss misses the original of frame 5: its
/// retransmission is still a retransmission (30 ms after the highest segment, above the
/// 20 ms handshake RTT), but its latency is unknown. A capture where frames 5 and 6 swap
/// places sees frame 5 out of order (5 ms after the highest, below 20 ms).
#[test]
fn downstream_loss_and_reordering() {
    let s = script();
    let mut missed = s.clone();
    missed.remove(4);
    let a = analyze_bytes(&ethernet_pcap(&missed), None, &opts_100ms()).unwrap();
    let f = &a.flows[0];
    assert_eq!((f.data_segments, f.retransmitted_segments, f.original_unseen, f.out_of_order), (4, 1, 1, 0));
    let r = &a.segments[1];
    assert_eq!((r.seq, r.first_frame, r.retransmissions, r.original_unseen), (101, 8, 1, true));
    assert_eq!((r.acked_frame, r.latency_ns), (Some(9), None));
    assert_eq!(f.ack_latency.n, 3);
    if tshark_available() {
        let p = write_tmp("missed.pcap", &ethernet_pcap(&missed));
        let ts = tshark(&p);
        assert!(ts[&8].retx && !ts[&8].ooo, "{:?}", ts[&8]);
        compare_with_tshark(&a, &ts);
        let _ = std::fs::remove_file(p);
    }

    let mut swapped = s.clone();
    swapped.swap(4, 5);
    swapped[4].0 = 110;
    swapped[5].0 = 115;
    let a = analyze_bytes(&ethernet_pcap(&swapped), None, &opts_100ms()).unwrap();
    let f = &a.flows[0];
    assert_eq!((f.data_segments, f.retransmitted_segments, f.original_unseen, f.out_of_order), (5, 1, 0, 1));
    assert_eq!(a.out_of_order.iter().map(|r| (r.frame, r.seq)).collect::<Vec<_>>(), vec![(6, 101)]);
    let r = &a.segments[1];
    assert_eq!((r.seq, r.first_frame, r.retransmissions, r.latency_ns), (101, 6, 1, Some(55 * MS)));
    if tshark_available() {
        let p = write_tmp("swapped.pcap", &ethernet_pcap(&swapped));
        let ts = tshark(&p);
        assert!(ts[&6].ooo && !ts[&6].retx, "{:?}", ts[&6]);
        compare_with_tshark(&a, &ts);
        let _ = std::fs::remove_file(p);
    }
}

/// Tail loss: 301..351 (frame 11) is retransmitted whole (frame 12) and ACKed exactly
/// (frame 13). tshark's unacked list holds both copies, newest first; the ACK matches
/// both and the last match wins, so `acks_frame` names the *first* transmission and
/// `ack_rtt` is measured from it, as ours is. (With a repacketized retransmission only
/// the copy ending at the ACK matches.)
#[test]
fn tail_retransmission_acked_exactly() {
    let mut s = script();
    s.truncate(11);
    let a32 = |r: u32| ISN_A.wrapping_add(r);
    let b32 = |r: u32| ISN_B.wrapping_add(r);
    s.push((400, true, a32(301), b32(1), ACK | PSH, vec![], 50));
    s.push((430, false, b32(1), a32(351), ACK, vec![], 0));
    let a = analyze_bytes(&ethernet_pcap(&s), None, &opts_100ms()).unwrap();
    let r = &a.segments[3];
    assert_eq!((r.first_frame, r.last_frame, r.retransmissions, r.acked_frame), (11, 12, 1, Some(13)));
    assert_eq!(r.latency_ns, Some(230 * MS));
    if tshark_available() {
        let p = write_tmp("tail.pcap", &ethernet_pcap(&s));
        let ts = tshark(&p);
        eprintln!("tshark frame 13: {:?}", ts[&13]);
        assert_eq!((ts[&13].acks_frame, ts[&13].ack_rtt_ns), (Some(11), Some(230 * MS)));
        let _ = std::fs::remove_file(p);
    }
}

/// After the script: a keep-alive (1 byte at snd_una - 1), a FIN and its ACK, and an ACK
/// for data never sent. Only the last is an anomaly; nothing changes the ranges.
#[test]
fn keepalive_fin_and_acked_unseen() {
    let mut s = script();
    let a32 = |r: u32| ISN_A.wrapping_add(r);
    let b32 = |r: u32| ISN_B.wrapping_add(r);
    s.push((300, true, a32(350), b32(1), ACK, vec![], 1)); // keep-alive
    s.push((310, false, b32(1), a32(351), ACK, vec![], 0));
    s.push((400, true, a32(351), b32(1), ACK | 0x01, vec![], 0)); // FIN
    s.push((430, false, b32(1), a32(352), ACK, vec![], 0)); // ACK of the FIN
    let a = analyze_bytes(&ethernet_pcap(&s), None, &opts_100ms()).unwrap();
    check_flow_after_script(&a, 0);
    if tshark_available() {
        let p = write_tmp("keepalive.pcap", &ethernet_pcap(&s));
        compare_with_tshark(&a, &tshark(&p)); // the keep-alive is no retransmission there either
        let _ = std::fs::remove_file(p);
    }
    s.push((500, false, b32(1), a32(9999), ACK, vec![], 0)); // ACKs unseen data
    let a = analyze_bytes(&ethernet_pcap(&s), None, &opts_100ms()).unwrap();
    check_flow_after_script(&a, 1);
}

fn check_flow_after_script(a: &wirelab_analyze::Analysis, acked_unseen: u64) {
    let f = &a.flows[0];
    assert_eq!((f.data_segments, f.retransmitted_segments, f.keepalives), (5, 1, 1));
    assert_eq!((f.acked_bytes, f.acked_unseen, f.unacked_segments), (350, acked_unseen, 0));
    assert_eq!(a.segments.len(), 4);
}
