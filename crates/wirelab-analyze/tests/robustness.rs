//! No panics on any bytes, and the analysis invariants on random segment streams.
mod common;

use common::*;
use std::net::Ipv4Addr;
use wirelab_analyze::decode::{decode_ipv4_tcp, Decoded, TcpSeg};
use wirelab_analyze::{analyze_bytes, analyze_loaded, AnalyzeOptions, Loaded, Packet};
use wirelab_core::{Duration, Instant, Rng};
use wirelab_wire::pcap::{linktype, PcapWriter};

#[test]
fn decoder_never_panics_on_random_bytes() {
    let mut rng = Rng::stream(1, "analyze/decode-fuzz");
    let mut buf = Vec::new();
    let mut tcp = 0;
    for i in 0..30_000 {
        let n = rng.below(120) as usize;
        buf.clear();
        buf.extend((0..n).map(|_| rng.next_u32() as u8));
        if n >= 20 && i % 2 == 0 {
            // steer half the inputs past the first checks
            buf[0] = 0x45 + (rng.below(3) as u8);
            buf[6] = 0;
            buf[7] = 0;
            buf[9] = 6;
        }
        let wire = rng.below(2000) as usize;
        if let Decoded::Tcp(s) = decode_ipv4_tcp(&buf, wire) {
            tcp += 1;
            assert!(s.n_sack <= 4);
            assert!(s.ip_len as usize >= 40 || s.ip_len as usize == wire);
        }
    }
    assert!(tcp > 1000, "the steering reaches the TCP decoder: {tcp}");
}

fn valid_capture() -> Vec<u8> {
    let a = (Ipv4Addr::new(10, 0, 0, 1), 1000);
    let b = (Ipv4Addr::new(10, 0, 0, 2), 80);
    let mut w = PcapWriter::with_linktype(Vec::new(), linktype::ETHERNET).unwrap();
    let mut t = Instant::ZERO;
    for i in 0..20u32 {
        t += Duration::from_millis(5);
        let d = datagram(a, b, 1 + 100 * i, 1, ACK, &[], 100, i as u16);
        w.write_ipv4_as_ethernet(t, [2; 6], [4; 6], &d).unwrap();
        let d = datagram(b, a, 1, 1 + 100 * i, ACK, &[(201 + 100 * i, 301 + 100 * i)], 0, i as u16);
        w.write_ipv4_as_ethernet(t, [4; 6], [2; 6], &d).unwrap();
    }
    w.into_inner().unwrap()
}

#[test]
fn mutated_captures_never_panic() {
    let base = valid_capture();
    let mut rng = Rng::stream(2, "analyze/capture-fuzz");
    let opts = AnalyzeOptions::default();
    let (mut ok, mut err) = (0, 0);
    for _ in 0..400 {
        let mut b = base.clone();
        for _ in 0..1 + rng.below(8) {
            let i = rng.below(b.len() as u64) as usize;
            b[i] = rng.next_u32() as u8;
        }
        if rng.chance(0.3) {
            b.truncate(rng.below(b.len() as u64) as usize);
        }
        match analyze_bytes(&b, Some(&b), &opts) {
            Ok(a) => {
                ok += 1;
                let _ = (a.segments_csv(), a.flows_csv(), a.summary_json(), a.summary_text());
            }
            Err(e) => {
                err += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(ok > 100 && err > 0, "ok {ok} err {err}");
}

/// Random segments of a few flows around a sequence wrap: duplicated, reordered, SACKed,
/// with random ACKs. Invariants: rows sorted and disjoint per flow, acked ≤ distinct bytes
/// sent, latencies non-negative (timestamps are monotone), counts consistent.
#[test]
fn random_segment_streams_keep_invariants() {
    let mut rng = Rng::stream(3, "analyze/stream-fuzz");
    for round in 0..150 {
        let mut packets = Vec::new();
        let isn = [0xffff_f000u32, 7, 0x8000_0000];
        // some rounds near the end of u64 time, with a stray timestamp at zero
        let mut t = if round % 10 == 0 { u64::MAX - 500_000_000 } else { 1_000u64 };
        for i in 0..300u32 {
            t = t.saturating_add(rng.below(3_000_000));
            let t = if round % 10 == 0 && i == 150 { 0 } else { t };
            let f = rng.below(3) as usize;
            let fwd = rng.chance(0.6);
            let (src, dst, sport, dport) = if fwd {
                (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 1000 + f as u16, 80)
            } else {
                (Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::new(10, 0, 0, 1), 80, 1000 + f as u16)
            };
            let off = rng.below(20_000) as u32;
            let mut seg = TcpSeg {
                src,
                dst,
                sport,
                dport,
                seq: if fwd { isn[f].wrapping_add(off) } else { rng.next_u32() },
                ack: if fwd { rng.next_u32() } else { isn[f].wrapping_add(rng.below(20_000) as u32) },
                flags: if i < 3 && round % 2 == 0 { 0x02 } else { 0x10 },
                payload_len: if fwd { rng.below(1500) as u32 } else { 0 },
                ip_len: 40,
                sack: [(0, 0); 4],
                n_sack: 0,
                cut: false,
                options_cut: false,
            };
            if !fwd && rng.chance(0.5) {
                let l = isn[f].wrapping_add(rng.below(20_000) as u32);
                seg.sack[0] = (l, l.wrapping_add(rng.below(3000) as u32));
                seg.n_sack = 1;
            }
            packets.push(Packet { frame: i + 1, ts_ns: t, seg });
        }
        let loaded = Loaded { packets, ..Default::default() };
        let interval = if round % 5 == 0 { Duration::from_nanos(1) } else { Duration::from_millis(50) };
        let a = analyze_loaded(&loaded, Some(&loaded), &AnalyzeOptions { interval, ..Default::default() });
        let stray = round % 10 == 0;
        for (fi, f) in a.flows.iter().enumerate() {
            let rows: Vec<_> = a.segments.iter().filter(|r| r.flow == fi).collect();
            let span = rows.last().map_or(0, |r| r.seq + r.len as i64) - rows.first().map_or(0, |r| r.seq);
            for w in rows.windows(2) {
                assert!(w[0].seq + w[0].len as i64 <= w[1].seq, "rows disjoint and sorted");
            }
            assert!(f.acked_bytes <= span as u64, "acked within the sequence span sent");
            assert!(f.retransmitted_segments <= f.data_segments);
            assert!(f.lost_segments.unwrap() <= f.data_segments);
            for r in &rows {
                assert!(stray || r.latency_ns.is_none_or(|l| l >= 0));
                assert!(stray || r.latency_sack_ns.is_none_or(|l| l >= 0));
                if let (Some(s), Some(c), false) = (r.latency_sack_ns, r.latency_ns, stray) {
                    assert!(s <= c);
                }
                assert!(stray || r.last_sent_ns >= r.first_sent_ns);
            }
            let tx: u64 = a.intervals.iter().filter(|r| r.flow == fi).map(|r| r.tx_bytes).sum();
            assert_eq!(tx, f.tx_bytes);
        }
        for c in &a.cdf {
            assert!(c.fraction > 0.0 && c.fraction <= 1.0);
        }
    }
}
