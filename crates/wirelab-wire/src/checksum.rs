//! The Internet checksum (RFC 1071) and the TCP/UDP pseudo-header.
use std::net::Ipv4Addr;

/// One's-complement sum of `data` folded into 32 bits (not yet complemented). RFC 1071
/// §2(B) lets us add in any order and fold at the end: 32-bit big-endian words are summed
/// into a 64-bit accumulator without carry handling (no overflow below 2^32 words), a
/// loop the compiler vectorises.
pub fn sum(data: &[u8]) -> u32 {
    let mut acc: u64 = 0;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        acc += u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as u64;
    }
    let rest = chunks.remainder();
    let mut tail = [0u8; 4];
    tail[..rest.len()].copy_from_slice(rest);
    acc += u32::from_be_bytes(tail) as u64;
    // fold 64 -> 32 -> 16 (keeping it in a u32)
    let mut x = (acc >> 32) + (acc & 0xffff_ffff);
    x = (x >> 32) + (x & 0xffff_ffff);
    let mut y = (x >> 16) + (x & 0xffff);
    y = (y >> 16) + (y & 0xffff);
    y as u32
}

/// [`sum`] of `data`, in O(1) when it is a slice of the applications' payload pattern
/// ([`wirelab_core::pattern::PATTERN`], the by-reference tail of bulk segments): the same
/// value either way.
#[inline]
pub fn sum_static(data: &[u8]) -> u32 {
    wirelab_core::pattern::pattern_sum(data).unwrap_or_else(|| sum(data))
}

/// Folds a partial sum and complements it: the value to store in a checksum field.
pub fn finish(mut s: u32) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// Adds partial sums.
pub fn combine(sums: &[u32]) -> u32 {
    let mut s: u64 = sums.iter().map(|&x| x as u64).sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u32
}

/// Partial sum of the IPv4 pseudo-header (RFC 793 §3.1, RFC 768).
pub fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, len: u32) -> u32 {
    let mut b = [0u8; 12];
    b[0..4].copy_from_slice(&src.octets());
    b[4..8].copy_from_slice(&dst.octets());
    b[9] = proto;
    b[10..12].copy_from_slice(&(len as u16).to_be_bytes());
    sum(&b)
}

/// The checksum field value for a TCP/UDP segment `seg` whose own checksum field is zero.
pub fn transport(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, seg: &[u8]) -> u16 {
    finish(combine(&[
        pseudo_header(src, dst, proto, seg.len() as u32),
        sum(seg),
    ]))
}

/// True if `seg` (checksum field included) verifies against the pseudo-header.
pub fn verify_transport(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, seg: &[u8]) -> bool {
    finish(combine(&[
        pseudo_header(src, dst, proto, seg.len() as u32),
        sum(seg),
    ])) == 0
}

#[cfg(test)]
mod test {
    use super::*;
    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3 example: 00 01 f2 03 f4 f5 f6 f7 sums to 0xddf2
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(finish(sum(&d)), !0xddf2);
        // odd length pads with zero
        assert_eq!(sum(&[0xab]), 0xab00);
    }
    #[test]
    fn matches_naive_sum() {
        let data: Vec<u8> = (0..1001u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut naive: u32 = 0;
        for c in data.chunks(2) {
            let w = if c.len() == 2 {
                u16::from_be_bytes([c[0], c[1]])
            } else {
                (c[0] as u16) << 8
            };
            naive += w as u32;
        }
        assert_eq!(finish(sum(&data)), finish(naive));
    }
}
