//! UDP (RFC 768) over IPv4.
//!
//! Receive-side checks mirror Linux `__udp4_lib_rcv()` (net/ipv4/udp.c): the length field
//! must be at least 8 and no larger than the bytes present (`ulen > skb->len` drops the
//! datagram as short); bytes past the length field are trimmed (`pskb_trim_rcsum`), and a
//! zero checksum field means "no checksum" (`udp4_csum_init()`).
use crate::{checksum, ip_proto, WireError};
use core::fmt;
use std::net::Ipv4Addr;

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const LENGTH: Range<usize> = 4..6;
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// A read/write view of a UDP datagram (header and payload).
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps without checking. Accessors may panic on a buffer shorter than the header, and
    /// `payload()` on one shorter than the length field: use only to emit into a buffer sized
    /// by [`UdpRepr::buffer_len`]. With reused buffers the length field may be stale bytes.
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }
    /// Wraps after [`check_len`](Self::check_len); afterwards no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// `Truncated` if the buffer is shorter than the header or the length field;
    /// `Malformed` if the length field is below 8.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let len = self.len() as usize;
        if len < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if b.len() < len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }
    /// Consumes the view.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::SRC_PORT];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::DST_PORT];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Length field (header plus payload).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Checksum field (0 = not computed).
    pub fn checksum(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::CHECKSUM];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Payload: the bytes between the header and the length field.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..self.len() as usize]
    }
    /// True if the checksum field is 0 (none sent) or verifies against the pseudo-header.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let seg = &self.buffer.as_ref()[..self.len() as usize];
        checksum::verify_transport(src, dst, ip_proto::UDP, seg)
    }

    /// True if the checksum field holds only the folded pseudo-header sum, as captures taken
    /// on a sending host with checksum offload show (`CHECKSUM_PARTIAL`: Linux
    /// `udp4_hwcsum()` seeds the field with `~csum_tcpudp_magic(...)` and the NIC finishes
    /// it after the capture point). Lets an analyzer tell offload from corruption.
    pub fn checksum_is_partial(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        let folded = checksum::pseudo_header(src, dst, ip_proto::UDP, self.len() as u32);
        let folded = checksum::combine(&[folded]) as u16;
        self.checksum() == folded
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets the length field.
    pub fn set_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets the checksum field verbatim.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }
    /// Mutable payload (up to the length field).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let len = self.len() as usize;
        &mut self.buffer.as_mut()[HEADER_LEN..len]
    }
    /// Computes and stores the checksum over header and payload (up to the length field).
    /// A computed 0 is sent as 0xffff (RFC 768; Linux `udp4_hwcsum`/`CSUM_MANGLED_0`).
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let len = self.len() as usize;
        let c = checksum::transport(src, dst, ip_proto::UDP, &self.buffer.as_ref()[..len]);
        self.set_checksum(if c == 0 { 0xffff } else { c });
    }
}

impl<T: AsRef<[u8]>> fmt::Display for UdpPacket<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return write!(f, "UDP (truncated, {} bytes)", self.buffer.as_ref().len());
        }
        write!(
            f,
            "UDP src={} dst={} len={} cksum={:#06x}",
            self.src_port(),
            self.dst_port(),
            self.len(),
            self.checksum()
        )
    }
}

/// A validated UDP header. The payload is not held: it stays in the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload length in bytes (excluding the 8-byte header).
    pub payload_len: usize,
}

impl UdpRepr {
    /// Largest payload whose length fits the 16-bit length field.
    pub const MAX_PAYLOAD: usize = u16::MAX as usize - HEADER_LEN;

    /// Parses a datagram received from `src` to `dst`: `Checksum` if a non-zero checksum
    /// fails to verify. Port 0 is accepted here, as Linux's parser does; demux decides.
    pub fn parse<T: AsRef<[u8]>>(
        p: &UdpPacket<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) -> Result<Self, WireError> {
        p.check_len()?;
        if !p.verify_checksum(src, dst) {
            return Err(WireError::Checksum);
        }
        Ok(UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: p.len() as usize - HEADER_LEN,
        })
    }

    /// Parses without verifying the checksum, for captures taken on a host with checksum
    /// offload (see [`UdpPacket::checksum_is_partial`]). Lengths are still checked.
    pub fn parse_unverified<T: AsRef<[u8]>>(p: &UdpPacket<T>) -> Result<Self, WireError> {
        p.check_len()?;
        Ok(UdpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: p.len() as usize - HEADER_LEN,
        })
    }

    /// Header plus payload length.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Writes the header into `buf[..8]` and the checksum over `buf[..buffer_len()]`, whose
    /// payload bytes (`buf[8..buffer_len()]`) the caller has already put in place.
    ///
    /// Panics if `buf` is shorter than `buffer_len()` or the payload exceeds
    /// [`MAX_PAYLOAD`](Self::MAX_PAYLOAD): both are caller bugs, not wire input.
    pub fn emit(&self, buf: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr) {
        assert!(
            self.payload_len <= Self::MAX_PAYLOAD,
            "UDP payload too long"
        );
        let mut p = UdpPacket::new_unchecked(&mut buf[..self.buffer_len()]);
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len(self.buffer_len() as u16);
        p.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 2);

    // src 49152, dst 53, len 12, payload "abcd"; checksum worked by hand:
    // pseudo c0a8+0101+c0a8+0102+0011+000c, header c000+0035+000c, payload 6162+6364:
    // sum 0x30877 folds to 0x087a, complement 0xf785.
    static PACKET: [u8; 12] = [
        0xc0, 0x00, 0x00, 0x35, 0x00, 0x0c, 0xf7, 0x85, 0x61, 0x62, 0x63, 0x64,
    ];

    fn repr() -> UdpRepr {
        UdpRepr {
            src_port: 49152,
            dst_port: 53,
            payload_len: 4,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = UdpPacket::new_checked(&PACKET[..]).unwrap();
        assert_eq!(p.src_port(), 49152);
        assert_eq!(p.dst_port(), 53);
        assert_eq!(p.len(), 12);
        assert_eq!(p.checksum(), 0xf785);
        assert_eq!(p.payload(), b"abcd");
        assert!(p.verify_checksum(SRC, DST));
        assert!(!p.verify_checksum(SRC, Ipv4Addr::new(192, 168, 1, 3)));
    }

    #[test]
    fn test_construct() {
        let mut b = [0u8; 12];
        b[8..].copy_from_slice(b"abcd");
        repr().emit(&mut b, SRC, DST);
        assert_eq!(b, PACKET);
    }

    #[test]
    fn test_parse() {
        let p = UdpPacket::new_checked(&PACKET[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p, SRC, DST).unwrap(), repr());
        assert_eq!(
            UdpRepr::parse(&p, DST, Ipv4Addr::new(1, 1, 1, 1)).unwrap_err(),
            WireError::Checksum
        );
    }

    #[test]
    fn zero_checksum_means_none() {
        let mut b = PACKET;
        b[6] = 0;
        b[7] = 0;
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(
            UdpRepr::parse(&p, SRC, Ipv4Addr::new(9, 9, 9, 9)).unwrap(),
            repr()
        );
    }

    #[test]
    fn computed_zero_is_sent_as_ffff() {
        // Choose a payload word that forces the one's-complement sum to 0xffff.
        let r = UdpRepr {
            src_port: 1,
            dst_port: 2,
            payload_len: 2,
        };
        let mut b = [0u8; 10];
        r.emit(&mut b, SRC, DST);
        // b's checksum c satisfies sum(all other words) + c = 0xffff. Put c into the
        // payload instead, leaving the checksum to be computed over a sum of 0xffff.
        let c = u16::from_be_bytes([b[6], b[7]]);
        let mut z = [0u8; 10];
        z[8..10].copy_from_slice(&c.to_be_bytes());
        r.emit(&mut z, SRC, DST);
        assert_eq!(u16::from_be_bytes([z[6], z[7]]), 0xffff);
        let p = UdpPacket::new_checked(&z[..]).unwrap();
        assert!(p.verify_checksum(SRC, DST));
        assert_eq!(UdpRepr::parse(&p, SRC, DST).unwrap(), r);
    }

    #[test]
    fn test_truncated() {
        assert_eq!(
            UdpPacket::new_checked(&PACKET[..7]).unwrap_err(),
            WireError::Truncated
        );
        // header present, length field says 12, only 11 bytes
        assert_eq!(
            UdpPacket::new_checked(&PACKET[..11]).unwrap_err(),
            WireError::Truncated
        );
    }

    #[test]
    fn test_impossible_len() {
        let mut b = PACKET;
        b[4] = 0;
        b[5] = 7;
        assert_eq!(
            UdpPacket::new_checked(&b[..]).unwrap_err(),
            WireError::Malformed
        );
        b[5] = 0;
        assert_eq!(
            UdpPacket::new_checked(&b[..]).unwrap_err(),
            WireError::Malformed
        );
    }

    #[test]
    fn trailing_bytes_are_trimmed() {
        // Ethernet padding after the datagram: length field governs (pskb_trim_rcsum).
        let mut b = [0u8; 20];
        b[..12].copy_from_slice(&PACKET);
        b[12..].fill(0xee);
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.payload(), b"abcd");
        assert_eq!(UdpRepr::parse(&p, SRC, DST).unwrap(), repr());
    }

    #[test]
    fn emit_ignores_bytes_past_buffer_len() {
        let mut a = [0u8; 12];
        a[8..].copy_from_slice(b"abcd");
        let mut b = [0x55u8; 40];
        b[8..12].copy_from_slice(b"abcd");
        repr().emit(&mut a, SRC, DST);
        repr().emit(&mut b, SRC, DST);
        assert_eq!(a[..], b[..12]);
    }

    #[test]
    fn offloaded_checksum_is_recognised() {
        // As captured on Linux loopback: 127.0.0.1 -> 127.0.0.1, 8 bytes, field = pseudo sum.
        let lo = Ipv4Addr::LOCALHOST;
        let b = [0xbc, 0x66, 0x00, 0x09, 0x00, 0x08, 0xfe, 0x1b];
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        assert!(p.checksum_is_partial(lo, lo));
        assert_eq!(UdpRepr::parse(&p, lo, lo).unwrap_err(), WireError::Checksum);
        let r = UdpRepr::parse_unverified(&p).unwrap();
        assert_eq!((r.src_port, r.dst_port, r.payload_len), (48230, 9, 0));
        let q = UdpPacket::new_checked(&PACKET[..]).unwrap();
        assert!(!q.checksum_is_partial(SRC, DST));
        assert_eq!(UdpRepr::parse_unverified(&q).unwrap(), repr());
        assert!(UdpRepr::parse_unverified(&UdpPacket::new_unchecked(&b[..5])).is_err());
    }

    #[test]
    fn display() {
        let p = UdpPacket::new_unchecked(&PACKET[..]);
        assert_eq!(p.to_string(), "UDP src=49152 dst=53 len=12 cksum=0xf785");
        assert!(UdpPacket::new_unchecked(&PACKET[..3])
            .to_string()
            .contains("truncated"));
    }
}
