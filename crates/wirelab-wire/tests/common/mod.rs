//! Packet builders shared by the integration tests.
#![allow(dead_code)]
use std::net::Ipv4Addr;
use wirelab_core::Rng;
use wirelab_wire::icmp::{IcmpRepr, Quote, UnreachCode};
use wirelab_wire::{ip_proto, Ipv4Repr, UdpRepr};

/// An IPv4 header for `protocol` with `payload_len` bytes after it.
pub fn ip(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, payload_len: usize, ident: u16) -> Ipv4Repr {
    Ipv4Repr {
        src,
        dst,
        protocol,
        payload_len,
        ttl: 64,
        tos: 0,
        ident,
        dont_frag: true,
    }
}

/// A complete IPv4/UDP datagram with a valid UDP checksum.
pub fn udp_datagram(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let u = UdpRepr {
        src_port: sport,
        dst_port: dport,
        payload_len: payload.len(),
    };
    let i = ip(src, dst, ip_proto::UDP, u.buffer_len(), sport ^ dport);
    let mut b = vec![0u8; i.buffer_len() + u.buffer_len()];
    i.emit(&mut b);
    b[28..].copy_from_slice(payload);
    u.emit(&mut b[20..], src, dst);
    b
}

/// A complete IPv4/ICMP datagram.
pub fn icmp_datagram(src: Ipv4Addr, dst: Ipv4Addr, r: &IcmpRepr<'_>) -> Vec<u8> {
    let i = ip(src, dst, ip_proto::ICMP, r.buffer_len(), 7);
    let mut b = vec![0u8; i.buffer_len() + r.buffer_len()];
    i.emit(&mut b);
    r.emit(&mut b[20..]);
    b
}

/// A random mix of valid UDP, ICMP echo and ICMP unreachable datagrams.
pub fn random_datagram(rng: &mut Rng) -> Vec<u8> {
    let a = Ipv4Addr::from(0x0a00_0000 | (rng.next_u32() & 0xffff));
    let b = Ipv4Addr::from(0x0a01_0000 | (rng.next_u32() & 0xffff));
    let n = rng.below(300) as usize;
    let payload: Vec<u8> = (0..n).map(|_| rng.next_u32() as u8).collect();
    match rng.below(4) {
        0 | 1 => udp_datagram(
            a,
            b,
            1024 + rng.below(60000) as u16,
            1 + rng.below(65535) as u16,
            &payload,
        ),
        2 => {
            let r = IcmpRepr::EchoRequest {
                ident: rng.next_u32() as u16,
                seq_no: rng.next_u32() as u16,
                data: &payload,
            };
            icmp_datagram(a, b, &r)
        }
        _ => {
            let orig = udp_datagram(b, a, 5000, 9, &payload);
            let code = if rng.chance(0.5) {
                UnreachCode::PortUnreachable
            } else {
                UnreachCode::ProtoUnreachable
            };
            let quote = if rng.chance(0.5) {
                Quote::Rfc792
            } else {
                Quote::Linux
            };
            icmp_datagram(a, b, &IcmpRepr::dst_unreachable(code, &orig, quote))
        }
    }
}

/// A unique temporary path for this process and `name`.
pub fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("wirelab-wire-{}-{name}", std::process::id()))
}
