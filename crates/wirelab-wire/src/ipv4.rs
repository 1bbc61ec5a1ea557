//! IPv4 (RFC 791). No options are emitted; received options are skipped via IHL.
use crate::{checksum, WireError};
use std::net::Ipv4Addr;

mod field {
    use core::ops::Range;
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: Range<usize> = 2..4;
    pub const IDENT: Range<usize> = 4..6;
    pub const FLG_OFF: Range<usize> = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Range<usize> = 10..12;
    pub const SRC: Range<usize> = 12..16;
    pub const DST: Range<usize> = 16..20;
}

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = 20;

/// A read/write view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps without checking; accessors may panic on short buffers.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }
    /// Wraps after checking that the header and total length fit in the buffer.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// [`Self::new_checked`] of a datagram whose last `extra` bytes are held elsewhere (a
    /// packet's by-reference tail): the header must be in `buffer`, the total length must
    /// fit `buffer` plus `extra`.
    pub fn new_checked_split(buffer: T, extra: usize) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        let b = p.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let (hl, tl) = (p.header_len() as usize, p.total_len() as usize);
        if p.version() != 4 || hl < HEADER_LEN || tl < hl {
            return Err(WireError::Malformed);
        }
        if b.len() < hl || b.len() + extra < tl {
            return Err(WireError::Truncated);
        }
        Ok(p)
    }
    /// Validates version, IHL and total length against the buffer.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let hl = self.header_len() as usize;
        let tl = self.total_len() as usize;
        if self.version() != 4 || hl < HEADER_LEN || tl < hl {
            return Err(WireError::Malformed);
        }
        if b.len() < tl {
            return Err(WireError::Truncated);
        }
        Ok(())
    }
    /// Consumes the view.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Version field (4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }
    /// Header length in bytes.
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }
    /// TOS byte (DSCP << 2 | ECN).
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[field::TOS]
    }
    /// Total length.
    pub fn total_len(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Identification.
    pub fn ident(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::IDENT];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.buffer.as_ref()[field::FLG_OFF.start] & 0x40 != 0
    }
    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        self.buffer.as_ref()[field::FLG_OFF.start] & 0x20 != 0
    }
    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::FLG_OFF];
        (u16::from_be_bytes([b[0], b[1]]) & 0x1fff) * 8
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }
    /// Protocol number.
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }
    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::CHECKSUM];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::SRC];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::DST];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }
    /// True if the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        let hl = self.header_len() as usize;
        checksum::finish(checksum::sum(&self.buffer.as_ref()[..hl])) == 0
    }
    /// The payload (bytes between the header and total length).
    pub fn payload(&self) -> &[u8] {
        let hl = self.header_len() as usize;
        let tl = self.total_len() as usize;
        &self.buffer.as_ref()[hl..tl]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the TTL.
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[field::TTL] = ttl;
    }
    /// Recomputes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        let hl = self.header_len() as usize;
        let b = self.buffer.as_mut();
        b[field::CHECKSUM].fill(0);
        let c = checksum::finish(checksum::sum(&b[..hl]));
        b[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
    /// Decrements TTL and patches the checksum incrementally (RFC 1624), as a router's
    /// `ip_decrease_ttl()` does.
    pub fn decrement_ttl(&mut self) {
        let b = self.buffer.as_mut();
        b[field::TTL] = b[field::TTL].wrapping_sub(1);
        // RFC 1624 eqn. 3 with m = TTL<<8 | proto; m' = m - 0x0100
        let old = u16::from_be_bytes([b[10], b[11]]) as u32;
        let mut s = old + 0x0100;
        s = (s & 0xffff) + (s >> 16);
        b[field::CHECKSUM].copy_from_slice(&(s as u16).to_be_bytes());
    }
    /// Mutable payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len() as usize;
        let tl = self.total_len() as usize;
        &mut self.buffer.as_mut()[hl..tl]
    }
}

/// A validated IPv4 header (no options).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Protocol number.
    pub protocol: u8,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// TTL.
    pub ttl: u8,
    /// TOS byte.
    pub tos: u8,
    /// Identification.
    pub ident: u16,
    /// Don't-fragment flag.
    pub dont_frag: bool,
}

impl Ipv4Repr {
    /// Parses a checked packet; fragments are `Unsupported`, bad checksums `Checksum`.
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Self, WireError> {
        p.check_len()?;
        if !p.verify_checksum() {
            return Err(WireError::Checksum);
        }
        if p.more_frags() || p.frag_offset() != 0 {
            return Err(WireError::Unsupported);
        }
        Ok(Ipv4Repr {
            src: p.src_addr(),
            dst: p.dst_addr(),
            protocol: p.protocol(),
            payload_len: p.total_len() as usize - p.header_len() as usize,
            ttl: p.ttl(),
            tos: p.tos(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
        })
    }
    /// Header length this repr emits.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }
    /// Writes the header (with checksum) into the first 20 bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        let b = &mut buf[..HEADER_LEN];
        b[field::VER_IHL] = 0x45;
        b[field::TOS] = self.tos;
        let tl = (HEADER_LEN + self.payload_len) as u16;
        b[field::LENGTH].copy_from_slice(&tl.to_be_bytes());
        b[field::IDENT].copy_from_slice(&self.ident.to_be_bytes());
        let fl: u16 = if self.dont_frag { 0x4000 } else { 0 };
        b[field::FLG_OFF].copy_from_slice(&fl.to_be_bytes());
        b[field::TTL] = self.ttl;
        b[field::PROTOCOL] = self.protocol;
        b[field::CHECKSUM].fill(0);
        b[field::SRC].copy_from_slice(&self.src.octets());
        b[field::DST].copy_from_slice(&self.dst.octets());
        let c = checksum::finish(checksum::sum(b));
        b[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn repr() -> Ipv4Repr {
        Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 1, 2),
            protocol: 17,
            payload_len: 8,
            ttl: 64,
            tos: 0,
            ident: 0x1234,
            dont_frag: true,
        }
    }

    #[test]
    fn emit_parse_roundtrip() {
        let r = repr();
        let mut b = vec![0u8; 28];
        r.emit(&mut b);
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(Ipv4Repr::parse(&p).unwrap(), r);
        assert_eq!(p.payload().len(), 8);
    }

    #[test]
    fn ttl_decrement_keeps_checksum_valid() {
        let mut b = vec![0u8; 28];
        repr().emit(&mut b);
        let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
        for _ in 0..63 {
            p.decrement_ttl();
            assert!(p.verify_checksum());
        }
    }

    #[test]
    fn truncated_and_malformed() {
        assert_eq!(
            Ipv4Packet::new_checked(&[0x45u8; 10][..]).unwrap_err(),
            WireError::Truncated
        );
        let mut b = vec![0u8; 28];
        repr().emit(&mut b);
        b[0] = 0x65;
        assert_eq!(
            Ipv4Packet::new_checked(&b[..]).unwrap_err(),
            WireError::Malformed
        );
        let mut b = vec![0u8; 28];
        repr().emit(&mut b);
        assert_eq!(
            Ipv4Packet::new_checked(&b[..27]).unwrap_err(),
            WireError::Truncated
        );
    }
}
