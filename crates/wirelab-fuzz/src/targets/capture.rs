//! Captures: the pcap/pcapng reader (`wirelab-wire::pcap`) and `wirelab analyze` on top
//! of it (capture loading, TCP decoding, every metric and output table).
use std::net::Ipv4Addr;
use wirelab_analyze::{analyze_bytes, AnalyzeOptions};
use wirelab_core::{Duration, Instant};
use wirelab_wire::pcap::{linktype, parse_bytes, PcapWriter, PcapngWriter, Reader};

/// A TCP exchange in both directions with SACK blocks, as wirelab writes it: classic pcap
/// (Ethernet) when `ng` is false, pcapng with two interfaces otherwise.
pub fn tcp_capture(ng: bool) -> Vec<u8> {
    use wirelab_tcp::wire::{flags, SeqNumber, TcpPacket, TcpRepr};
    let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
    let seg = |src: Ipv4Addr, dst: Ipv4Addr, sp: u16, dp: u16, seq: u32, ack: u32, sack: Option<(u32, u32)>, len: usize| {
        let payload = vec![0x5a; len];
        let mut r = TcpRepr::new(sp, dp);
        r.seq = SeqNumber(seq);
        r.ack = SeqNumber(ack);
        r.flags = flags::ACK;
        r.window = 1000;
        r.timestamp = Some((seq, ack));
        if let Some((l, h)) = sack {
            r.sack.push(SeqNumber(l), SeqNumber(h));
        }
        r.payload = &payload;
        let mut t = vec![0u8; r.buffer_len()];
        r.emit(&mut TcpPacket::new_unchecked(&mut t[..]), src, dst);
        let ip = wirelab_wire::Ipv4Repr { src, dst, protocol: 6, payload_len: t.len(), ttl: 64, tos: 0, ident: seq as u16, dont_frag: true };
        let mut d = vec![0u8; 20 + t.len()];
        ip.emit(&mut d);
        d[20..].copy_from_slice(&t);
        d
    };
    let mut frames = Vec::new();
    for i in 0..8u32 {
        frames.push((i * 2, seg(a, b, 1000, 80, 1 + 100 * i, 1, None, 100)));
        frames.push((i * 2 + 1, seg(b, a, 80, 1000, 1, 1 + 100 * i, if i % 3 == 2 { Some((201 + 100 * i, 301 + 100 * i)) } else { None }, 0)));
    }
    let t = |k: u32| Instant::ZERO + Duration::from_millis(5 * k as u64 + 1);
    let (ma, mb) = (wirelab_wire::ethernet::mac_for(1, 0), wirelab_wire::ethernet::mac_for(2, 0));
    if ng {
        let mut w = PcapngWriter::new(Vec::new()).expect("vec");
        let i0 = w.add_interface(linktype::ETHERNET, "h1-eth0", "path A").expect("vec");
        let i1 = w.add_interface(linktype::RAW, "h1-eth1", "path B").expect("vec");
        for (k, d) in &frames {
            if k % 2 == 0 {
                w.write_ipv4_as_ethernet(i0, t(*k), ma, mb, d).expect("vec");
            } else {
                w.write_packet(i1, t(*k), d, d.len() as u32).expect("vec");
            }
        }
        w.into_inner().expect("vec")
    } else {
        let mut w = PcapWriter::with_linktype(Vec::new(), linktype::ETHERNET).expect("vec");
        for (k, d) in &frames {
            w.write_ipv4_as_ethernet(t(*k), ma, mb, d).expect("vec");
        }
        w.into_inner().expect("vec")
    }
}

pub(super) fn pcap_seeds() -> Vec<Vec<u8>> {
    vec![tcp_capture(false), tcp_capture(true)]
}

pub(super) fn pcap(data: &[u8]) {
    // the iterator yields every record before the first error, then the error, then stops
    if let Ok(r) = Reader::new(data) {
        let n_if = r.interfaces().len();
        let _ = (r.format(), n_if);
        let mut errors = 0;
        for rec in r {
            match rec {
                Ok(rec) => {
                    assert_eq!(errors, 0, "no record after an error");
                    if let Some(off) = rec.ip_offset {
                        assert!(off < rec.data.len());
                    }
                    if let Some(ip) = rec.ipv4() {
                        assert!(ip.len() <= rec.data.len());
                    }
                }
                Err(e) => {
                    errors += 1;
                    assert!(!e.to_string().is_empty());
                }
            }
        }
        assert!(errors <= 1);
    }
    if let Ok(c) = parse_bytes(data) {
        for p in &c.packets {
            assert!((p.iface as usize) < c.interfaces.len(), "a packet's interface is described");
        }
    }
}

pub(super) fn analyze(data: &[u8]) {
    for strict in [false, true] {
        let opts = AnalyzeOptions { strict, interval: Duration::from_millis(if strict { 1 } else { 7 }), ..Default::default() };
        match analyze_bytes(data, Some(data), &opts) {
            Ok(a) => {
                let _ = (a.segments_csv(), a.flows_csv(), a.summary_json(), a.summary_text());
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}
