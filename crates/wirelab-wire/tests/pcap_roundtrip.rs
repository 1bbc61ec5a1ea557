//! Writer -> reader round trips for classic pcap and pcapng, and hand-built pcapng variants
//! (big-endian, µs resolution, simple packet blocks, several sections).
mod common;

use common::*;
use std::net::Ipv4Addr;
use wirelab_core::{Instant, Rng};
use wirelab_wire::ethernet::mac_for;
use wirelab_wire::pcap::{self, linktype, Format, PcapWriter, PcapngWriter, Reader};
use wirelab_wire::{Ipv4Packet, Ipv4Repr};

fn datagrams(seed: u64, n: usize) -> Vec<(Instant, Vec<u8>)> {
    let mut rng = Rng::from_seed(seed);
    let mut t = 0u64;
    (0..n)
        .map(|_| {
            t += rng.below(5_000_000_000); // up to 5 s apart, so seconds roll over
            (Instant::from_nanos(t), random_datagram(&mut rng))
        })
        .collect()
}

#[test]
fn classic_ethernet_roundtrip_via_file() {
    let pkts = datagrams(1, 200);
    let path = temp_path("classic.pcap");
    let f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut w = PcapWriter::new(f).unwrap();
    for (i, (t, ip)) in pkts.iter().enumerate() {
        w.write_ipv4_as_ethernet(*t, mac_for(1, i as u32 % 2), mac_for(2, 0), ip)
            .unwrap();
    }
    w.into_inner().unwrap();
    let back = pcap::read_file(&path).unwrap();
    let cap = pcap::read_capture(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        cap.format,
        Format::Pcap {
            nanos: true,
            big_endian: false
        }
    );
    assert_eq!(cap.interfaces.len(), 1);
    assert_eq!(cap.interfaces[0].linktype, linktype::ETHERNET);
    assert_eq!(back.len(), pkts.len());
    for (i, ((t, ip), p)) in pkts.iter().zip(&back).enumerate() {
        assert_eq!(p.ts_ns, t.as_nanos());
        assert_eq!(p.iface, 0);
        assert_eq!(p.orig_len as usize, ip.len() + 14);
        assert_eq!(p.ip_offset, Some(14));
        assert_eq!(p.ipv4(), Some(&ip[..]));
        assert_eq!(&p.data[6..12], &mac_for(1, i as u32 % 2));
        let v = Ipv4Packet::new_checked(p.ipv4().unwrap()).unwrap();
        assert!(Ipv4Repr::parse(&v).is_ok());
    }
}

#[test]
fn classic_raw_roundtrip() {
    let pkts = datagrams(2, 50);
    let mut w = PcapWriter::with_linktype(Vec::new(), linktype::RAW).unwrap();
    for (t, ip) in &pkts {
        // the MACs are ignored on a raw capture
        w.write_ipv4_as_ethernet(*t, [0; 6], [0; 6], ip).unwrap();
    }
    let bytes = w.into_inner().unwrap();
    let cap = pcap::parse_bytes(&bytes).unwrap();
    assert_eq!(cap.packets.len(), 50);
    for ((t, ip), p) in pkts.iter().zip(&cap.packets) {
        assert_eq!(
            (p.ts_ns, p.linktype, p.ip_offset),
            (t.as_nanos(), linktype::RAW, Some(0))
        );
        assert_eq!(p.data, *ip);
    }
}

#[test]
fn pcapng_multihomed_roundtrip() {
    let pkts = datagrams(3, 300);
    let mut w = PcapngWriter::new(Vec::new()).unwrap();
    let a = w
        .add_interface(linktype::ETHERNET, "h1-eth0", "h1 path A 10.0.0.1")
        .unwrap();
    let b = w
        .add_interface(linktype::ETHERNET, "h1-eth1", "h1 path B 10.1.0.1")
        .unwrap();
    let r = w.add_interface(linktype::RAW, "r1-raw", "").unwrap();
    let mut expect = Vec::new();
    for (i, (t, ip)) in pkts.iter().enumerate() {
        // push timestamps past 2^32 ns to exercise the EPB high word
        let t = Instant::from_nanos(t.as_nanos() + (7u64 << 32));
        let iface = [a, b, r][i % 3];
        w.write_ipv4_as_ethernet(iface, t, mac_for(1, iface), mac_for(9, 0), ip)
            .unwrap();
        expect.push((iface, t.as_nanos(), ip.clone()));
    }
    let bytes = w.into_inner().unwrap();
    let cap = pcap::parse_bytes(&bytes).unwrap();
    assert_eq!(cap.format, Format::Pcapng);
    let names: Vec<_> = cap.interfaces.iter().map(|i| i.name.as_deref()).collect();
    assert_eq!(names, [Some("h1-eth0"), Some("h1-eth1"), Some("r1-raw")]);
    assert_eq!(
        cap.interfaces[1].description.as_deref(),
        Some("h1 path B 10.1.0.1")
    );
    assert_eq!(cap.interfaces[2].description, None);
    assert_eq!(cap.interfaces[2].linktype, linktype::RAW);
    assert_eq!(cap.packets.len(), expect.len());
    for ((iface, ns, ip), p) in expect.iter().zip(&cap.packets) {
        assert_eq!(p.iface, *iface);
        assert_eq!(p.ts_ns, *ns);
        assert_eq!(p.ipv4(), Some(&ip[..]));
        assert_eq!(p.ip_offset, Some(if *iface == r { 0 } else { 14 }));
    }
}

/// A big-endian pcapng block.
fn be_block(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    while body.len() & 3 != 0 {
        body.push(0);
    }
    let len = (body.len() + 12) as u32;
    let mut b = kind.to_be_bytes().to_vec();
    b.extend_from_slice(&len.to_be_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&len.to_be_bytes());
    b
}

fn be_shb() -> Vec<u8> {
    let mut body = 0x1a2b_3c4du32.to_be_bytes().to_vec();
    body.extend_from_slice(&1u16.to_be_bytes());
    body.extend_from_slice(&0u16.to_be_bytes());
    body.extend_from_slice(&(-1i64).to_be_bytes());
    be_block(0x0a0d_0d0a, &body)
}

fn be_idb(lt: u16, tsresol: Option<u8>, name: &str) -> Vec<u8> {
    let mut body = lt.to_be_bytes().to_vec();
    body.extend_from_slice(&[0, 0]);
    body.extend_from_slice(&0u32.to_be_bytes());
    body.extend_from_slice(&2u16.to_be_bytes());
    body.extend_from_slice(&(name.len() as u16).to_be_bytes());
    body.extend_from_slice(name.as_bytes());
    while body.len() & 3 != 0 {
        body.push(0);
    }
    if let Some(r) = tsresol {
        body.extend_from_slice(&[0, 9, 0, 1, r, 0, 0, 0]);
    }
    body.extend_from_slice(&[0, 0, 0, 0]);
    be_block(1, &body)
}

fn be_epb(iface: u32, ticks: u64, data: &[u8]) -> Vec<u8> {
    let mut body = iface.to_be_bytes().to_vec();
    body.extend_from_slice(&((ticks >> 32) as u32).to_be_bytes());
    body.extend_from_slice(&(ticks as u32).to_be_bytes());
    body.extend_from_slice(&(data.len() as u32).to_be_bytes());
    body.extend_from_slice(&(data.len() as u32).to_be_bytes());
    body.extend_from_slice(data);
    be_block(6, &body)
}

#[test]
fn pcapng_big_endian_sections_spb_and_resolutions() {
    let ip = udp_datagram(
        Ipv4Addr::new(1, 2, 3, 4),
        Ipv4Addr::new(5, 6, 7, 8),
        1,
        2,
        b"x",
    );
    let mut sll2 = vec![0x08, 0x00];
    sll2.resize(20, 0);
    sll2.extend_from_slice(&ip);
    let mut f = be_shb();
    f.extend(be_idb(linktype::LINUX_SLL2 as u16, None, "any")); // default µs
    f.extend(be_block(5, &[0; 12])); // an interface statistics block: skipped
    f.extend(be_epb(0, 1_500_000, &sll2));
    let mut spb = (ip.len() as u32).to_be_bytes().to_vec();
    spb.extend_from_slice(&sll2[..0]);
    spb.extend_from_slice(&ip);
    // second section: interface ids restart at 0 but the reader's indices continue
    f.extend(be_shb());
    f.extend(be_idb(linktype::RAW as u16, Some(9), "raw0"));
    f.extend(be_idb(linktype::RAW as u16, Some(0x80 | 10), "raw1")); // 2^-10 s
    f.extend(be_epb(1, 2048, &ip));
    f.extend(be_epb(0, 42, &ip));
    f.extend(be_block(3, &spb)); // simple packet block on section interface 0
    let cap = pcap::parse_bytes(&f).unwrap();
    assert_eq!(cap.interfaces.len(), 3);
    let got: Vec<_> = cap
        .packets
        .iter()
        .map(|p| (p.iface, p.ts_ns, p.ip_offset))
        .collect();
    assert_eq!(
        got,
        [
            (0, 1_500_000_000, Some(20)),
            (2, 2_000_000_000, Some(0)),
            (1, 42, Some(0)),
            (1, 0, Some(0))
        ]
    );
    for p in &cap.packets {
        assert_eq!(p.ipv4(), Some(&ip[..]));
    }
    // an EPB naming an interface the section never described
    let mut bad = be_shb();
    bad.extend(be_idb(1, None, "e"));
    bad.extend(be_epb(1, 0, &ip));
    let mut r = Reader::new(&bad).unwrap();
    assert!(matches!(
        r.next(),
        Some(Err(pcap::PcapError::Malformed { .. }))
    ));
    assert!(r.next().is_none());
}
