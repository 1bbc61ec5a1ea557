//! A real Linux capture (tests/data): two namespaces joined by a veth pair, a 2 Mbit/s
//! tbf on the sender's side dropping packets of a bulk flow while a thin flow
//! (100-byte writes every 20 ms, TCP_NODELAY) runs beside it. Captured with dumpcap at
//! both veth ends *after* the tbf: µs pcap with a 96-byte snaplen at the sender, pcapng
//! at the receiver, Ethernet, TCP timestamps and SACK. The drops happen before both
//! capture points, so their retransmissions show without originals.
mod common;

use common::*;
use std::path::PathBuf;
use wirelab_analyze::{analyze, AnalyzeOptions, ClassRule};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

#[test]
fn linux_veth_capture() {
    let opts = AnalyzeOptions {
        classes: vec![ClassRule::parse("thin=dport:5001").unwrap(), ClassRule::parse("bulk=dport:5002").unwrap()],
        ..Default::default()
    };
    let snd = data("linux-veth-sender.pcap");
    let a = analyze(&snd, Some(&data("linux-veth-receiver.pcapng")), &opts).unwrap();
    let st = &a.sender_stats;
    assert_eq!((st.frames, st.tcp, st.undecodable), (495, 495, 0));
    assert_eq!(st.snaplen_cut, 272, "every full-sized frame is cut at 96 bytes");
    assert_eq!(a.flows.len(), 2);
    let (thin, bulk) = (&a.flows[0], &a.flows[1]);
    assert_eq!((thin.class.as_deref(), bulk.class.as_deref()), (Some("thin"), Some("bulk")));
    // 60 writes of 100 bytes in 45 segments, nothing of it retransmitted
    assert_eq!((thin.data_segments, thin.tx_bytes, thin.retransmitted_segments), (45, 6000, 0));
    // the bulk flow's drops happened before the capture point: retransmissions without
    // originals, no latency for those ranges, no loss between the two captures
    assert_eq!((bulk.retransmitted_segments, bulk.original_unseen, bulk.out_of_order), (42, 42, 0));
    assert_eq!(bulk.ack_latency.n + bulk.original_unseen, a.segments.iter().filter(|r| r.flow == 1).count() as u64);
    assert_eq!((thin.lost_segments, bulk.lost_segments), (Some(0), Some(0)));
    assert_eq!(bulk.acked_bytes, bulk.delivered_bytes.unwrap());
    // the thin flow's latency does not suffer from the bulk flow here: the bottleneck
    // queue is before the capture point
    assert!(thin.ack_latency.p99_ns.unwrap() < 10_000_000);
    assert!(a.jain_flows.unwrap() < 0.6, "bulk takes ~50× the thin flow's goodput");
    if tshark_available() {
        let (exact, retx) = compare_with_tshark(&a, &tshark(&snd));
        eprintln!("tshark: {exact} ack_rtt values equal ours, {retx} on retransmitted ranges");
        assert!(exact > 100 && retx > 0, "{exact} {retx}");
    } else {
        eprintln!("tshark not installed; skipping the tshark comparison");
    }
}
