//! Property-style tests: every decoder survives random bytes and random truncations and
//! mutations of valid packets and captures, and whatever it accepts is self-consistent.
//! Emitted checksums always verify, and a flipped payload bit always fails them.
mod common;

use common::*;
use std::net::Ipv4Addr;
use wirelab_core::{Instant, Rng};
use wirelab_wire::ethernet::{mac_for, EthernetFrame};
use wirelab_wire::icmp::{IcmpPacket, IcmpRepr, Quoted};
use wirelab_wire::pcap::{self, linktype, PcapWriter, PcapngWriter, Reader};
use wirelab_wire::{ip_proto, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr, WireError};

const ITER: usize = 4000;

fn random_bytes(rng: &mut Rng, max: u64) -> Vec<u8> {
    let n = rng.below(max + 1) as usize;
    (0..n).map(|_| rng.next_u32() as u8).collect()
}

/// Truncates, flips bits, overwrites bytes or appends garbage.
fn mutate(rng: &mut Rng, v: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        match rng.below(4) {
            0 if !v.is_empty() => v.truncate(rng.below(v.len() as u64) as usize),
            1 if !v.is_empty() => {
                let i = rng.below(v.len() as u64) as usize;
                v[i] ^= 1 << rng.below(8);
            }
            2 if !v.is_empty() => {
                let i = rng.below(v.len() as u64) as usize;
                v[i] = rng.next_u32() as u8;
            }
            _ => v.extend((0..rng.below(8)).map(|_| rng.next_u32() as u8)),
        }
    }
}

/// Runs every packet decoder over `b`, checking what they accept; returns how many reprs
/// parsed, so the tests can show the deep paths ran.
fn decode_all(b: &[u8]) -> usize {
    let mut ok = 0;
    if let Ok(p) = Ipv4Packet::new_checked(b) {
        let _ = (
            p.payload(),
            p.verify_checksum(),
            p.src_addr(),
            p.frag_offset(),
        );
        if let Ok(r) = Ipv4Repr::parse(&p) {
            ok += 1;
            assert_eq!(r.payload_len, p.payload().len());
            // a parsed header without options (and reserved flag clear) re-emits identically
            if p.header_len() == 20 && b[6] & 0x80 == 0 {
                let mut e = [0u8; 20];
                r.emit(&mut e);
                assert_eq!(&e[..], &b[..20]);
            }
            ok += decode_l4(r.protocol, r.src, r.dst, p.payload());
        }
    }
    let src = Ipv4Addr::new(10, 0, 0, 1);
    let dst = Ipv4Addr::new(10, 0, 0, 2);
    ok += decode_l4(ip_proto::UDP, src, dst, b);
    ok += decode_l4(ip_proto::ICMP, src, dst, b);
    let _ = Quoted::parse(b);
    if let Ok(f) = EthernetFrame::new_checked(b) {
        let _ = (f.inner(), f.to_string(), f.payload());
    }
    for lt in [0, 1, 101, 108, 113, 228, 276, 9999] {
        if let Some(off) = pcap::ipv4_offset(lt, b) {
            assert!(off < b.len());
            assert_eq!(b[off] >> 4, 4);
        }
    }
    ok
}

fn decode_l4(proto: u8, src: Ipv4Addr, dst: Ipv4Addr, b: &[u8]) -> usize {
    let mut ok = 0;
    match proto {
        ip_proto::UDP => {
            let _ = UdpPacket::new_unchecked(b).to_string();
            if let Ok(p) = UdpPacket::new_checked(b) {
                let _ = (p.payload(), p.verify_checksum(src, dst));
                if let Ok(r) = UdpRepr::parse(&p, src, dst) {
                    ok += 1;
                    assert_eq!(r.buffer_len(), p.len() as usize);
                    assert!(r.buffer_len() <= b.len());
                    // length is conserved and re-emitting verifies
                    let mut e = b[..r.buffer_len()].to_vec();
                    r.emit(&mut e, src, dst);
                    let q = UdpPacket::new_checked(&e[..]).unwrap();
                    assert_eq!(UdpRepr::parse(&q, src, dst), Ok(r));
                }
            }
        }
        ip_proto::ICMP => {
            let _ = IcmpPacket::new_unchecked(b).to_string();
            if let Ok(p) = IcmpPacket::new_checked(b) {
                let _ = (p.data(), p.verify_checksum(), p.next_hop_mtu());
                if let Ok(r) = IcmpRepr::parse(&p) {
                    ok += 1;
                    assert_eq!(r.buffer_len(), b.len());
                    let mut e = vec![0u8; r.buffer_len()];
                    r.emit(&mut e);
                    assert_eq!(
                        IcmpRepr::parse(&IcmpPacket::new_checked(&e[..]).unwrap()),
                        Ok(r)
                    );
                    if let IcmpRepr::DstUnreachable { original, .. } = r {
                        let _ = Quoted::parse(original);
                    }
                }
            }
        }
        _ => {}
    }
    ok
}

/// Runs the capture reader over `b`, checking the records it yields; returns their count.
fn read_all(b: &[u8]) -> usize {
    let Ok(r) = Reader::new(b) else { return 0 };
    let mut n = 0;
    for rec in r {
        let Ok(rec) = rec else { break };
        n += 1;
        assert!(rec.data.len() <= b.len());
        if let Some(ip) = rec.ipv4() {
            decode_all(ip);
        }
    }
    if let Ok(c) = pcap::parse_bytes(b) {
        assert_eq!(c.packets.len(), n);
        for p in &c.packets {
            assert!((p.iface as usize) < c.interfaces.len());
        }
    }
    n
}

#[test]
fn random_bytes_never_panic_packet_decoders() {
    let mut rng = Rng::from_seed(0xdec0de);
    let mut parsed = 0;
    for _ in 0..ITER {
        let mut b = random_bytes(&mut rng, 120);
        // make IPv4-looking headers common so the deeper paths run too
        if b.len() >= 20 && rng.chance(0.5) {
            b[0] = 0x45;
            let tl = (rng.below(b.len() as u64 + 8)) as u16;
            b[2..4].copy_from_slice(&tl.to_be_bytes());
            b[6] = 0x40;
            b[7] = 0;
            Ipv4Packet::new_unchecked(&mut b[..]).fill_checksum();
        }
        parsed += decode_all(&b);
    }
    assert!(parsed > ITER / 10, "only {parsed} headers parsed");
}

/// A capture-shaped byte string: a plausible file header, then records or blocks whose
/// lengths are usually, but not always, consistent, filled with random bytes.
fn random_capture(rng: &mut Rng) -> Vec<u8> {
    let lts = [0u32, 1, 101, 108, 113, 228, 276, 147];
    let mut b = Vec::new();
    let n = rng.below(6);
    if rng.chance(0.5) {
        let magic = [0xa1b2_c3d4u32, 0xa1b2_3c4d][rng.below(2) as usize];
        let big = rng.chance(0.5);
        let w = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        b.extend(w(magic));
        b.extend(w(if rng.chance(0.95) {
            0x0004_0002u32.rotate_left(if big { 16 } else { 0 })
        } else {
            rng.next_u32()
        }));
        b.extend([0; 8]);
        b.extend(w(rng.next_u32()));
        b.extend(w(lts[rng.below(lts.len() as u64) as usize]));
        for _ in 0..n {
            let len = if rng.chance(0.9) {
                rng.below(80) as u32
            } else {
                rng.next_u32()
            };
            b.extend(w(rng.next_u32()));
            b.extend(w(rng.next_u32()));
            b.extend(w(len));
            b.extend(w(rng.next_u32()));
            let mut data = random_bytes(rng, 80);
            if !data.is_empty() && rng.chance(0.5) {
                data[0] = 0x45;
            }
            data.resize(
                if rng.chance(0.9) {
                    (len as usize).min(80)
                } else {
                    data.len()
                },
                0,
            );
            b.extend(data);
        }
    } else {
        let block = |b: &mut Vec<u8>, kind: u32, body: &[u8], rng: &mut Rng| {
            let mut body = body.to_vec();
            body.resize((body.len() + 3) & !3, 0);
            let len = (body.len() + 12) as u32;
            let len = if rng.chance(0.95) {
                len
            } else {
                rng.next_u32()
            };
            b.extend(kind.to_le_bytes());
            b.extend(len.to_le_bytes());
            b.extend(body);
            b.extend(len.to_le_bytes());
        };
        let mut shb = 0x1a2b_3c4du32.to_le_bytes().to_vec();
        shb.extend([1, 0, 0, 0]);
        shb.extend([0xff; 8]);
        block(&mut b, 0x0a0d_0d0a, &shb, rng);
        for _ in 0..n {
            let kind =
                [1u32, 1, 2, 3, 5, 6, 6, 6, 0x0a0d_0d0a, rng.next_u32()][rng.below(10) as usize];
            let mut body = random_bytes(rng, 60);
            if kind == 1 && body.len() >= 8 {
                body[0..4]
                    .copy_from_slice(&lts[rng.below(lts.len() as u64) as usize].to_le_bytes());
                if rng.chance(0.5) {
                    body.truncate(8);
                    body.extend([9, 0, 1, 0, rng.next_u32() as u8, 0, 0, 0, 0, 0, 0, 0]);
                }
            }
            if (kind == 6 || kind == 2) && body.len() >= 20 {
                body[0..4].copy_from_slice(&(rng.below(3) as u32).to_le_bytes());
                let cap = rng.below(body.len() as u64 - 19) as u32;
                body[12..16].copy_from_slice(&cap.to_le_bytes());
            }
            block(&mut b, kind, &body, rng);
        }
    }
    b
}

#[test]
fn random_bytes_never_panic_capture_reader() {
    let mut rng = Rng::from_seed(0xcafe);
    let prefixes: [&[u8]; 5] = [
        &[0xd4, 0xc3, 0xb2, 0xa1],
        &[0xa1, 0xb2, 0x3c, 0x4d],
        &[0x0a, 0x0d, 0x0d, 0x0a],
        &[0x0a, 0x0d, 0x0d, 0x0a, 40, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a],
        &[],
    ];
    let mut records = 0;
    for i in 0..ITER {
        // half pure garbage behind a magic, half capture-shaped
        let b = if i % 2 == 0 {
            let mut b = prefixes[i / 2 % prefixes.len()].to_vec();
            b.extend(random_bytes(&mut rng, 200));
            b
        } else {
            random_capture(&mut rng)
        };
        records += read_all(&b);
    }
    assert!(records > ITER / 4, "only {records} records read");
}

#[test]
fn mutated_valid_packets_never_panic() {
    let mut rng = Rng::from_seed(77);
    for _ in 0..ITER {
        let mut d = random_datagram(&mut rng);
        // the unmutated datagram decodes fully
        let p = Ipv4Packet::new_checked(&d[..]).unwrap();
        let r = Ipv4Repr::parse(&p).unwrap();
        match r.protocol {
            ip_proto::UDP => {
                UdpRepr::parse(&UdpPacket::new_checked(p.payload()).unwrap(), r.src, r.dst)
                    .unwrap();
            }
            _ => {
                IcmpRepr::parse(&IcmpPacket::new_checked(p.payload()).unwrap()).unwrap();
            }
        }
        mutate(&mut rng, &mut d);
        decode_all(&d);
        if d.len() > 20 {
            let _ = decode_all(&d[20..]);
        }
    }
}

#[test]
fn mutated_valid_captures_never_panic() {
    let mut rng = Rng::from_seed(1234);
    let mut classic = PcapWriter::new(Vec::new()).unwrap();
    let mut ng = PcapngWriter::new(Vec::new()).unwrap();
    ng.add_interface(linktype::ETHERNET, "a", "path a").unwrap();
    ng.add_interface(linktype::RAW, "b", "path b").unwrap();
    for i in 0..20u32 {
        let d = random_datagram(&mut rng);
        let t = Instant::from_nanos(i as u64 * 1_000_003);
        classic
            .write_ipv4_as_ethernet(t, mac_for(1, 0), mac_for(2, 0), &d)
            .unwrap();
        ng.write_ipv4_as_ethernet(i % 2, t, mac_for(1, i % 2), mac_for(2, 0), &d)
            .unwrap();
    }
    let files = [classic.into_inner().unwrap(), ng.into_inner().unwrap()];
    for f in &files {
        assert_eq!(pcap::parse_bytes(f).unwrap().packets.len(), 20);
    }
    let mut records = 0;
    for i in 0..ITER / 2 {
        let mut f = files[i % 2].clone();
        mutate(&mut rng, &mut f);
        records += read_all(&f);
    }
    assert!(records > ITER, "only {records} records read");
}

#[test]
fn checksums_verify_after_emit_and_catch_flips() {
    let mut rng = Rng::from_seed(99);
    for _ in 0..ITER {
        let src = Ipv4Addr::from(rng.next_u32());
        let dst = Ipv4Addr::from(rng.next_u32());
        let payload = random_bytes(&mut rng, 64);
        // UDP
        let u = UdpRepr {
            src_port: rng.next_u32() as u16,
            dst_port: rng.next_u32() as u16,
            payload_len: payload.len(),
        };
        let mut b = vec![0u8; u.buffer_len()];
        b[8..].copy_from_slice(&payload);
        u.emit(&mut b, src, dst);
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_ne!(p.checksum(), 0, "emit never sends 'no checksum'");
        assert!(p.verify_checksum(src, dst));
        assert_eq!(UdpRepr::parse(&p, src, dst), Ok(u));
        if !payload.is_empty() {
            let i = 8 + rng.below(payload.len() as u64) as usize;
            b[i] ^= 1 << rng.below(8);
            let p = UdpPacket::new_checked(&b[..]).unwrap();
            assert_eq!(UdpRepr::parse(&p, src, dst), Err(WireError::Checksum));
        }
        // ICMP
        let r = IcmpRepr::EchoReply {
            ident: rng.next_u32() as u16,
            seq_no: 3,
            data: &payload,
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b);
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(IcmpRepr::parse(&p), Ok(r));
        let i = rng.below(b.len() as u64) as usize;
        b[i] ^= 1 << rng.below(8);
        assert!(!IcmpPacket::new_checked(&b[..]).unwrap().verify_checksum());
        // IPv4 header
        let ip = ip(
            src,
            dst,
            ip_proto::UDP,
            payload.len(),
            rng.next_u32() as u16,
        );
        let mut h = [0u8; 20];
        ip.emit(&mut h);
        assert!(Ipv4Packet::new_unchecked(&h[..]).verify_checksum());
    }
}
