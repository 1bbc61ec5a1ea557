//! The packet that moves through links and queues: our `sk_buff`.
use crate::time::Instant;

/// An IPv4 datagram as real bytes, plus metadata the simulator and qdiscs need.
///
/// `data` starts at the IPv4 header: qdisc classifiers (`u32 … at 32`) use offsets from
/// there, as Linux's u32 does on an Ethernet device. The link-layer header is not stored;
/// `meta.l2_len` says how many bytes it would add so that rates and byte limits count what
/// Linux counts (`qdisc_pkt_len()` = `skb->len` including the 14-byte Ethernet header).
#[derive(Clone, Debug)]
pub struct Pkt {
    /// The datagram, from the first byte of the IPv4 header.
    pub data: Vec<u8>,
    /// The datagram's last bytes, when they are a `'static` slice the sending application
    /// wrote (`send_static`: the bulk applications' fixed pattern) and the sending stack
    /// passed on by reference instead of copying them into `data`. On the wire, and for
    /// lengths, checksums, captures and receivers, they follow `data`; carrying them by
    /// reference keeps the bytes of packets in flight (megabytes at 1 Gbit/s) out of the
    /// cache. Empty for every other packet. Anything that reads or changes payload bytes
    /// at an offset calls [`Pkt::materialize`] first, or reads through [`Pkt::get`].
    pub tail: &'static [u8],
    /// Simulator metadata, never on the wire.
    pub meta: PktMeta,
}

/// [`Pkt::pattern_tail`] of a tail.
#[inline(always)]
pub(crate) fn pattern_place(tail: &'static [u8]) -> Option<(u16, u16)> {
    let p = &crate::pattern::PATTERN;
    let len = tail.len();
    // an empty tail's pointer lies anywhere: it is (0, 0); any other lies in the
    // pattern if its offset (wrapping: huge when it lies below) and end fit
    let off = if len == 0 { 0 } else { (tail.as_ptr() as usize).wrapping_sub(p.as_ptr() as usize) };
    if (off | len) <= u16::MAX as usize && off + len <= p.len() {
        Some((off as u16, len as u16))
    } else {
        None
    }
}

/// Per-packet metadata that is not part of the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PktMeta {
    /// Unique per run, in order of creation: ties and traces refer to it.
    pub id: u64,
    /// When the current qdisc accepted it (set by the qdisc; sojourn = dequeue − this).
    pub enqueued: Instant,
    /// Link-layer header bytes counted by rate and byte limits (14 on Ethernet links).
    pub l2_len: u16,
    /// `skb->mark` (fw filters, custom classifiers).
    pub mark: u32,
    /// `skb->priority`; a classid `major:minor` packed as Linux does (`major << 16 | minor`)
    /// lets a sender pick a class directly, as `SO_PRIORITY` does.
    pub priority: u32,
    /// Node-local interface the packet arrived on or leaves by (driver use only).
    pub iface: u32,
    /// A link or netem qdisc flipped a bit (`corrupt`). Receivers verify transport
    /// checksums of such packets only; every other packet left a wirelab stack with
    /// correct checksums, and the simulated NIC vouches for them as a checksum-offloading
    /// NIC does (`skb->ip_summed = CHECKSUM_UNNECESSARY`). The bytes always carry the
    /// real checksums (captures verify in tshark).
    pub corrupted: bool,
    /// How the sending socket charged the packet for TCP Small Queues
    /// ([`crate::transport::tsq`]); 0 once it no longer counts (it left the host, or was
    /// forwarded). Fits the struct's padding byte.
    pub tsq: u8,
    /// The sending socket (`skb->sk`) as an opaque non-zero key, 0 for none: packets a
    /// router forwards, and packets whose sender gave no socket. `fq` keys its flows by it
    /// (`fq_classify()`); a packet without one is an orphan, hashed by its 5-tuple.
    pub sk: u64,
    /// Earliest departure time (`skb->tstamp`, EDT), [`Instant::ZERO`] for none. `fq` holds
    /// the packet until then (`fq_skb_cb(skb)->time_to_send`).
    pub txtime: Instant,
    /// The sending socket's `sk_pacing_rate` in bytes/s, `u64::MAX` for none (`~0UL`).
    /// `fq` spaces the socket's packets at this rate when they carry no `txtime`.
    pub pacing_rate: u64,
}

impl Default for PktMeta {
    fn default() -> Self {
        PktMeta {
            id: 0,
            enqueued: Instant::ZERO,
            l2_len: 0,
            mark: 0,
            priority: 0,
            iface: 0,
            corrupted: false,
            tsq: 0,
            sk: 0,
            txtime: Instant::ZERO,
            pacing_rate: PktMeta::NO_PACING,
        }
    }
}

impl PktMeta {
    /// `pacing_rate` meaning "not paced" (Linux's `~0UL`).
    pub const NO_PACING: u64 = u64::MAX;
}

/// ECN codepoints of the IPv4 TOS byte (`INET_ECN_*`, include/net/inet_ecn.h).
pub mod ecn {
    /// `INET_ECN_NOT_ECT`.
    pub const NOT_ECT: u8 = 0;
    /// `INET_ECN_ECT_1` (L4S).
    pub const ECT_1: u8 = 1;
    /// `INET_ECN_ECT_0`.
    pub const ECT_0: u8 = 2;
    /// `INET_ECN_CE`.
    pub const CE: u8 = 3;
    /// `INET_ECN_MASK`.
    pub const MASK: u8 = 3;
}

impl Pkt {
    /// A packet around `data` with default metadata.
    pub fn new(data: Vec<u8>) -> Self {
        Pkt { data, tail: &[], meta: PktMeta::default() }
    }
    /// Length as Linux's `qdisc_pkt_len()` sees it: datagram plus link header.
    #[inline]
    pub fn len(&self) -> usize {
        self.data.len() + self.tail.len() + self.meta.l2_len as usize
    }
    /// Length of the IPv4 datagram (`data` and `tail`).
    #[inline]
    pub fn ip_len(&self) -> usize {
        self.data.len() + self.tail.len()
    }
    /// Copies the tail into `data`, so that `data` is the whole datagram.
    pub fn materialize(&mut self) {
        if !self.tail.is_empty() {
            self.data.extend_from_slice(self.tail);
            self.tail = &[];
        }
    }
    /// The tail as `(offset, length)` in [`crate::pattern::PATTERN`], `(0, 0)` for no tail;
    /// `None` if it lies elsewhere or does not fit 16 bits (a compact packet descriptor,
    /// such as a link's in-flight entry, then carries the bytes instead).
    #[inline]
    pub fn pattern_tail(&self) -> Option<(u16, u16)> {
        pattern_place(self.tail)
    }
    /// Bytes `range` of the datagram, reading through the tail; `None` past its end.
    /// Copies into `out` only when the range crosses into the tail.
    pub fn get<'a>(&'a self, range: core::ops::Range<usize>, out: &'a mut [u8; 8]) -> Option<&'a [u8]> {
        let (a, b) = (range.start, range.end);
        if b <= self.data.len() {
            return self.data.get(a..b);
        }
        if b > self.ip_len() || b < a || b - a > out.len() {
            return None;
        }
        for (i, o) in out[..b - a].iter_mut().enumerate() {
            let k = a + i;
            *o = if k < self.data.len() { self.data[k] } else { self.tail[k - self.data.len()] };
        }
        Some(&out[..b - a])
    }
    /// Appends the whole datagram to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.data);
        out.extend_from_slice(self.tail);
    }
    /// True for a zero-length datagram (never produced by wirelab's stacks).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.tail.is_empty()
    }
    /// IP protocol number (byte 9 of the IPv4 header), or 0 if truncated.
    #[inline]
    pub fn ip_proto(&self) -> u8 {
        self.data.get(9).copied().unwrap_or(0)
    }
    /// Offset of the transport header (IHL × 4), or `None` if the header is truncated.
    #[inline]
    pub fn l4_offset(&self) -> Option<usize> {
        let ihl = (*self.data.first()? & 0x0f) as usize * 4;
        (ihl >= 20 && self.data.len() >= ihl).then_some(ihl)
    }
    /// Source address bytes.
    #[inline]
    pub fn src_addr(&self) -> [u8; 4] {
        let mut a = [0; 4];
        if self.data.len() >= 20 {
            a.copy_from_slice(&self.data[12..16]);
        }
        a
    }
    /// Destination address bytes.
    #[inline]
    pub fn dst_addr(&self) -> [u8; 4] {
        let mut a = [0; 4];
        if self.data.len() >= 20 {
            a.copy_from_slice(&self.data[16..20]);
        }
        a
    }
    /// The ECN field of an IPv4 header (TOS & 3, [`ecn`]), `None` if the datagram is not
    /// a whole IPv4 header.
    #[inline]
    pub fn ecn(&self) -> Option<u8> {
        (self.data.len() >= 20 && self.data[0] >> 4 == 4).then(|| self.data[1] & ecn::MASK)
    }
    /// `INET_ECN_set_ce()` → `IP_ECN_set_ce()` (include/net/inet_ecn.h): an ECT(0) or ECT(1)
    /// packet becomes CE, and the header checksum is updated incrementally as Linux does
    /// (`csum16_add(check, htons(0xFFFB) + htons(ecn + 1))`). True if the packet is (now)
    /// CE, false for Not-ECT packets and anything that is not an IPv4 header, which an AQM
    /// must then drop instead.
    pub fn inet_ecn_set_ce(&mut self) -> bool {
        if self.data.len() < 20 || self.data[0] >> 4 != 4 {
            return false; // skb->protocol != ETH_P_IP or the header is not in the buffer
        }
        let tos = self.data[1];
        // after +1: Not-ECT 01, ECT(1) 10, ECT(0) 11, CE 00
        let e = (tos.wrapping_add(1) & ecn::MASK) as u16;
        if e & 2 == 0 {
            return e == 0;
        }
        // the TOS byte is the low byte of the header's first 16-bit word: raising it to CE
        // adds 3 - tos&3 = 4 - e to the sum, i.e. the checksum gains ~(4 - e) = 0xFFFB + e
        let add = 0xFFFB + e;
        let check = u16::from_be_bytes([self.data[10], self.data[11]]);
        let mut res = check.wrapping_add(add);
        res = res.wrapping_add((res < add) as u16); // csum16_add(): end-around carry
        self.data[10..12].copy_from_slice(&res.to_be_bytes());
        self.data[1] = tos | ecn::CE;
        true
    }
    /// (source port, destination port) for TCP, UDP and SCTP; `None` otherwise.
    /// All three put the ports in the first four transport bytes.
    #[inline]
    pub fn ports(&self) -> Option<(u16, u16)> {
        match self.ip_proto() {
            6 | 17 | 132 => {
                let o = self.l4_offset()?;
                let p = self.data.get(o..o + 4)?;
                Some((u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]])))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn tail_counts_and_reads_as_part_of_the_datagram() {
        static T: [u8; 6] = [10, 11, 12, 13, 14, 15];
        let mut p = Pkt::new(vec![1, 2, 3, 4]);
        p.tail = &T;
        p.meta.l2_len = 14;
        assert_eq!((p.len(), p.ip_len()), (24, 10));
        let mut s = [0u8; 8];
        assert_eq!(p.get(0..2, &mut s), Some(&[1u8, 2][..]));
        assert_eq!(p.get(2..6, &mut s), Some(&[3u8, 4, 10, 11][..]));
        assert_eq!(p.get(8..10, &mut s), Some(&[14u8, 15][..]));
        assert_eq!(p.get(8..11, &mut s), None);
        let mut w = Vec::new();
        p.write_to(&mut w);
        assert_eq!(p.pattern_tail(), None, "not in the pattern");
        p.materialize();
        assert_eq!((p.data.clone(), p.tail.len(), p.len()), (w, 0, 24));
        assert_eq!(p.pattern_tail(), Some((0, 0)));
        p.tail = &T[3..3];
        assert_eq!(p.pattern_tail(), Some((0, 0)), "an empty tail is (0, 0) wherever it points");
        p.tail = &crate::pattern::PATTERN[300..1748];
        assert_eq!(p.pattern_tail(), Some((300, 1448)));
        p.tail = &crate::pattern::PATTERN[65535..];
        assert_eq!(p.pattern_tail(), Some((65535, 1)));
        p.tail = &crate::pattern::PATTERN[..];
        assert_eq!(p.pattern_tail(), None, "65 536 bytes do not fit 16 bits");
    }

    fn header(tos: u8, seed: u32) -> Vec<u8> {
        let mut h = vec![0x45u8, tos, 0, 60, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        h[4..8].copy_from_slice(&seed.to_be_bytes());
        h[12..16].copy_from_slice(&seed.wrapping_mul(2654435761).to_be_bytes());
        let c = !ones_sum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    }
    fn ones_sum(h: &[u8]) -> u16 {
        let mut s: u32 = h.chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]]) as u32).sum();
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    }

    #[test]
    fn set_ce_marks_ect_and_keeps_the_checksum_valid() {
        for seed in 0..5000u32 {
            for (tos, marks) in [(0x00, false), (0x01, true), (0x02, true), (0x03, true), (0xb8, false), (0xb9, true), (0xba, true)] {
                let mut p = Pkt::new(header(tos, seed));
                let before = p.data.clone();
                assert_eq!(p.inet_ecn_set_ce(), marks, "tos {tos:#x}");
                if !marks {
                    assert_eq!(p.data, before, "not-ECT is left alone");
                    continue;
                }
                assert_eq!(p.ecn(), Some(ecn::CE));
                assert_eq!(p.data[1] & !3, tos & !3, "DSCP kept");
                assert_eq!(ones_sum(&p.data), 0xffff, "checksum verifies (tos {tos:#x}, seed {seed})");
            }
        }
        // not an IPv4 header: never marked
        let mut short = Pkt::new(vec![0x45, 2, 0]);
        assert!(!short.inet_ecn_set_ce());
        let mut v6 = Pkt::new(header(2, 1));
        v6.data[0] = 0x65;
        assert!(!v6.inet_ecn_set_ce());
        assert_eq!(short.ecn(), None);
        assert_eq!(PktMeta::default().pacing_rate, PktMeta::NO_PACING);
    }
}

#[cfg(test)]
mod tsq_size {
    /// The TSQ byte (`PktMeta::tsq`) lives in what was padding; the whole packet is 96
    /// bytes (queues hold it packed, [`crate::packed`]).
    #[test]
    fn pkt_meta_stays_56_bytes() {
        assert_eq!(core::mem::size_of::<super::PktMeta>(), 56);
        assert_eq!(core::mem::size_of::<super::Pkt>(), 96);
    }
}
