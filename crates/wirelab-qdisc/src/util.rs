//! Small helpers shared by the qdiscs: flow hashing, ECN marking, rate arithmetic.
use wirelab_core::Pkt;

/// `__jhash_final()` + `jhash_3words()` (include/linux/jhash.h, Bob Jenkins' lookup3).
#[inline]
pub fn jhash_3words(a: u32, b: u32, c: u32, initval: u32) -> u32 {
    const JHASH_INITVAL: u32 = 0xdead_beef;
    let iv = initval.wrapping_add(JHASH_INITVAL).wrapping_add(3 << 2);
    let (mut a, mut b, mut c) = (a.wrapping_add(iv), b.wrapping_add(iv), c.wrapping_add(iv));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(14));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(11));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(25));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(16));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(4));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(14));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(24));
    c
}

/// The flow hash SFQ and fq_codel use: addresses, protocol and (for TCP/UDP/SCTP, first
/// fragments only) ports, as the flow dissector extracts them, mixed with `key`.
/// Linux ≥ 4.x feeds the same fields to siphash; the 3.x SFQ used exactly this jhash.
#[inline]
pub fn flow_hash(pkt: &Pkt, key: u32) -> u32 {
    let d = &pkt.data;
    if d.len() < 20 {
        return jhash_3words(d.len() as u32, 0, 0, key);
    }
    let src = u32::from_be_bytes([d[12], d[13], d[14], d[15]]);
    let dst = u32::from_be_bytes([d[16], d[17], d[18], d[19]]);
    let proto = d[9] as u32;
    let frag_off = u16::from_be_bytes([d[6], d[7]]) & 0x1fff;
    let ports = if frag_off == 0 {
        pkt.ports().map(|(s, t)| ((s as u32) << 16) | t as u32).unwrap_or(0)
    } else {
        0
    };
    jhash_3words(dst, src ^ proto, ports, key)
}

/// `reciprocal_scale()`: maps a 32-bit hash onto `[0, n)`.
#[inline]
pub fn reciprocal_scale(val: u32, n: u32) -> u32 {
    ((val as u64 * n as u64) >> 32) as u32
}

/// `INET_ECN_set_ce()` for IPv4: marks CE if the packet is ECN-capable (ECT(0) or ECT(1)),
/// updating the header checksum incrementally as Linux does ([`Pkt::inet_ecn_set_ce`]).
/// Returns false for Not-ECT packets (the AQM must drop instead).
#[inline]
pub fn ecn_set_ce(pkt: &mut Pkt) -> bool {
    pkt.inet_ecn_set_ce()
}

/// `ip_tos2prio[]` / `rt_tos2priority()` (net/ipv4/route.c): `skb->priority` from the TOS.
pub fn rt_tos2priority(tos: u8) -> u32 {
    // TC_PRIO_BESTEFFORT 0, BULK 2, INTERACTIVE_BULK 4, INTERACTIVE 6
    const IP_TOS2PRIO: [u8; 16] = [0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4];
    IP_TOS2PRIO[((tos & 0x1e) >> 1) as usize] as u32
}

/// The `skb->priority` a qdisc sees: the sender's `SO_PRIORITY` (`meta.priority`) if set,
/// else the TOS-derived value the IP layer assigns.
pub fn skb_priority(pkt: &Pkt) -> u32 {
    if pkt.meta.priority != 0 {
        pkt.meta.priority
    } else {
        rt_tos2priority(pkt.data.get(1).copied().unwrap_or(0))
    }
}

/// `psched_l2t_ns()`: time to send `len` bytes at `rate_bps`, in ns (truncated, as Linux's
/// mult/shift approximation does; exact here).
#[inline]
pub fn l2t_ns(len: usize, rate_bps: u64) -> i64 {
    if rate_bps == 0 {
        return 0;
    }
    ((len as u128 * 8_000_000_000u128) / rate_bps as u128).min(i64::MAX as u128) as i64
}

/// iproute2's `tc_calc_xmittime(rate, size)` followed by the kernel's `PSCHED_TICKS2NS()`:
/// microseconds → 64-ns psched ticks (truncated) → ns.
pub fn tc_calc_xmittime_ns(rate_bytes_ps: u64, size: u64) -> i64 {
    if rate_bytes_ps == 0 {
        return 0;
    }
    let us = 1e6 * size as f64 / rate_bytes_ps as f64;
    let ticks = (us * (1000.0 / 64.0)).min(u32::MAX as f64) as u64; // tick_in_usec = 15.625
    (ticks * 64) as i64
}

/// C `strtoul(s, 0)` as tc's `get_u32(…, 0)`: `0x` hex, leading `0` octal, else decimal.
pub fn parse_c_u32(s: &str) -> Option<u32> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u32::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

#[cfg(test)]
mod test {
    use super::*;
    #[test]
    fn ecn_mark_keeps_the_checksum_valid() {
        // verified with wirelab-wire's checksum code, the same bytes a receiver checks
        let mut r = wirelab_core::Rng::stream(1, "ecn-mark");
        for _ in 0..20_000 {
            let mut h: Vec<u8> = (0..20).map(|_| r.next_u32() as u8).collect();
            h[0] = 0x45;
            h[2..4].copy_from_slice(&20u16.to_be_bytes());
            let ecn = (r.next_u32() & 3) as u8;
            h[1] = (h[1] & !3) | ecn;
            h[10] = 0;
            h[11] = 0;
            let c = wirelab_wire::checksum::finish(wirelab_wire::checksum::sum(&h));
            h[10..12].copy_from_slice(&c.to_be_bytes());
            let mut p = Pkt::new(h.clone());
            assert_eq!(ecn_set_ce(&mut p), ecn != 0);
            if ecn == 0 {
                assert_eq!(p.data, h);
                continue;
            }
            assert_eq!(p.data[1], h[1] | 3);
            assert_eq!(wirelab_wire::checksum::finish(wirelab_wire::checksum::sum(&p.data)), 0, "{h:?}");
            assert!(wirelab_wire::ipv4::Ipv4Packet::new_checked(&p.data[..]).unwrap().verify_checksum());
        }
    }
    #[test]
    fn c_numbers_and_tos() {
        assert_eq!(parse_c_u32("132"), Some(132));
        assert_eq!(parse_c_u32("0x96"), Some(0x96));
        assert_eq!(parse_c_u32("010"), Some(8));
        assert_eq!(parse_c_u32("0"), Some(0));
        assert_eq!(parse_c_u32("x"), None);
        assert_eq!(rt_tos2priority(0x10), 6); // IPTOS_LOWDELAY -> interactive
        assert_eq!(rt_tos2priority(0x08), 2); // IPTOS_THROUGHPUT -> bulk
    }
}

#[cfg(test)]
mod hash_test {
    use super::*;
    #[test]
    fn flow_hash_spreads() {
        let mut buckets = std::collections::BTreeSet::new();
        for i in 0..1000u32 {
            let mut d = vec![0u8; 28];
            d[0] = 0x45;
            d[9] = 17;
            d[12..16].copy_from_slice(&[10, 0, (i >> 8) as u8, (i as u8).wrapping_add(1)]);
            d[16..20].copy_from_slice(&[10, 1, 0, 1]);
            d[20..22].copy_from_slice(&(10000 + i as u16).to_be_bytes());
            d[22..24].copy_from_slice(&5001u16.to_be_bytes());
            buckets.insert(flow_hash(&Pkt::new(d), 0x1234_5678) & 1023);
        }
        // 1000 balls in 1024 bins: ~632 distinct expected
        assert!(buckets.len() > 580, "{}", buckets.len());
    }
}
