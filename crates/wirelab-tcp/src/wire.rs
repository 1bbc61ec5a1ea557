//! TCP wire format (RFC 9293 §3.1, options from RFC 7323 and RFC 2018).
//!
//! Two layers, as in smoltcp's `wire::tcp`:
//!
//! * [`TcpPacket`] is a zero-copy view over any `T: AsRef<[u8]>` with one accessor per field.
//!   [`TcpPacket::new_checked`] validates the data offset once; after that no accessor
//!   panics. It judges nothing else, so nonsense can still be logged.
//! * [`TcpRepr`] holds a validated header with its options and borrows the payload.
//!   `parse` verifies the checksum; `emit` writes options in the order Linux's
//!   `tcp_options_write()` uses and computes the checksum with
//!   [`wirelab_wire::checksum::transport`].
//!
//! **Contract:** nothing here panics on any input bytes. Self-contained so that it can move
//! to `wirelab-wire` later.
use core::fmt;
use core::ops::{Add, Sub};
use std::net::Ipv4Addr;
use wirelab_wire::{checksum, ip_proto, WireError};

/// A TCP sequence number with RFC 9293 §3.4 wrap-around comparison.
///
/// Only `PartialOrd` is implemented: modular order is not transitive across more than
/// 2^31, which is exactly Linux's `before()`/`after()`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeqNumber(pub u32);

impl SeqNumber {
    /// Signed distance `self - other` in modular arithmetic.
    #[inline]
    pub fn diff(self, other: SeqNumber) -> i32 {
        self.0.wrapping_sub(other.0) as i32
    }
    /// Linux `before(self, other)`.
    #[inline]
    pub fn before(self, other: SeqNumber) -> bool {
        self.diff(other) < 0
    }
    /// Linux `after(self, other)`.
    #[inline]
    pub fn after(self, other: SeqNumber) -> bool {
        other.diff(self) < 0
    }
    /// The later of the two.
    #[inline]
    pub fn max(self, other: SeqNumber) -> SeqNumber {
        if self.after(other) {
            self
        } else {
            other
        }
    }
    /// The earlier of the two.
    #[inline]
    pub fn min(self, other: SeqNumber) -> SeqNumber {
        if self.before(other) {
            self
        } else {
            other
        }
    }
    /// `self - other` as a byte count, zero if `other` is after `self`.
    #[inline]
    pub fn dist(self, other: SeqNumber) -> u32 {
        self.diff(other).max(0) as u32
    }
}

impl Add<u32> for SeqNumber {
    type Output = SeqNumber;
    #[inline]
    fn add(self, n: u32) -> SeqNumber {
        SeqNumber(self.0.wrapping_add(n))
    }
}
impl Sub<u32> for SeqNumber {
    type Output = SeqNumber;
    #[inline]
    fn sub(self, n: u32) -> SeqNumber {
        SeqNumber(self.0.wrapping_sub(n))
    }
}
impl PartialOrd for SeqNumber {
    fn partial_cmp(&self, other: &SeqNumber) -> Option<core::cmp::Ordering> {
        Some(self.diff(*other).cmp(&0))
    }
}
impl fmt::Debug for SeqNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl fmt::Display for SeqNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

mod field {
    use core::ops::Range;
    pub const SRC_PORT: Range<usize> = 0..2;
    pub const DST_PORT: Range<usize> = 2..4;
    pub const SEQ: Range<usize> = 4..8;
    pub const ACK: Range<usize> = 8..12;
    pub const FLAGS: Range<usize> = 12..14;
    pub const WINDOW: Range<usize> = 14..16;
    pub const CHECKSUM: Range<usize> = 16..18;
    pub const URGENT: Range<usize> = 18..20;

    pub const OPT_EOL: u8 = 0;
    pub const OPT_NOP: u8 = 1;
    pub const OPT_MSS: u8 = 2;
    pub const OPT_WS: u8 = 3;
    pub const OPT_SACKPERM: u8 = 4;
    pub const OPT_SACK: u8 = 5;
    pub const OPT_TS: u8 = 8;
}

/// Length of a TCP header without options.
pub const HEADER_LEN: usize = 20;
/// Largest TCP header (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;

/// TCP header flag bits (low byte of the flags word, RFC 9293 + RFC 3168).
pub mod flags {
    /// No more data from sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset the connection.
    pub const RST: u8 = 0x04;
    /// Push function.
    pub const PSH: u8 = 0x08;
    /// Acknowledgment field significant.
    pub const ACK: u8 = 0x10;
    /// Urgent pointer field significant.
    pub const URG: u8 = 0x20;
    /// ECN-Echo.
    pub const ECE: u8 = 0x40;
    /// Congestion Window Reduced.
    pub const CWR: u8 = 0x80;
}

/// A read/write view of a TCP segment.
#[derive(Debug, Clone)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps without checking. Only for emitting into a buffer sized by
    /// [`TcpRepr::buffer_len`]; with reused buffers a check would read stale bytes.
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }
    /// Wraps after checking that the header (with options) fits.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// Validates the data offset against the buffer length.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let hl = self.header_len() as usize;
        if hl < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if b.len() < hl {
            return Err(WireError::Truncated);
        }
        Ok(())
    }
    /// Consumes the view.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    fn be16(&self, r: core::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[r];
        u16::from_be_bytes([b[0], b[1]])
    }
    fn be32(&self, r: core::ops::Range<usize>) -> u32 {
        let b = &self.buffer.as_ref()[r];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.be16(field::SRC_PORT)
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.be16(field::DST_PORT)
    }
    /// Sequence number.
    pub fn seq_number(&self) -> SeqNumber {
        SeqNumber(self.be32(field::SEQ))
    }
    /// Acknowledgment number (meaningful only with ACK set).
    pub fn ack_number(&self) -> SeqNumber {
        SeqNumber(self.be32(field::ACK))
    }
    /// Header length in bytes (data offset × 4).
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::FLAGS.start] >> 4) * 4
    }
    /// The eight flag bits (CWR … FIN).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS.start + 1]
    }
    /// Raw (unscaled) window field.
    pub fn window_len(&self) -> u16 {
        self.be16(field::WINDOW)
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.be16(field::CHECKSUM)
    }
    /// Urgent pointer.
    pub fn urgent_at(&self) -> u16 {
        self.be16(field::URGENT)
    }
    /// Option bytes (between the fixed header and the payload).
    pub fn options(&self) -> &[u8] {
        let hl = self.header_len() as usize;
        &self.buffer.as_ref()[HEADER_LEN..hl]
    }
    /// Payload bytes.
    pub fn payload(&self) -> &[u8] {
        let hl = self.header_len() as usize;
        &self.buffer.as_ref()[hl..]
    }
    /// Sequence space the segment occupies (payload + SYN + FIN).
    pub fn segment_len(&self) -> usize {
        let f = self.flags();
        self.payload().len() + (f & flags::SYN != 0) as usize + (f & flags::FIN != 0) as usize
    }
    /// True if the checksum verifies against the IPv4 pseudo-header.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        checksum::verify_transport(src, dst, ip_proto::TCP, self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    /// Recomputes and stores the checksum over the whole buffer.
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        fill_checksum(self.buffer.as_mut(), src, dst);
    }
    /// Mutable payload bytes.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len() as usize;
        &mut self.buffer.as_mut()[hl..]
    }
}

/// Fills the checksum of the TCP segment `seg` (header + payload) in place.
pub fn fill_checksum(seg: &mut [u8], src: Ipv4Addr, dst: Ipv4Addr) {
    seg[field::CHECKSUM].fill(0);
    let c = checksum::transport(src, dst, ip_proto::TCP, seg);
    seg[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
}

/// [`fill_checksum`] of the segment `seg` followed by the payload bytes `tail`.
pub fn fill_checksum_tail(seg: &mut [u8], tail: &[u8], src: Ipv4Addr, dst: Ipv4Addr) {
    if tail.is_empty() {
        return fill_checksum(seg, src, dst);
    }
    seg[field::CHECKSUM].fill(0);
    // a slice of the apps' pattern is summed from a table (same value)
    let mut t = checksum::sum_static(tail);
    if seg.len() % 2 == 1 {
        // the tail's bytes sit at odd offsets: each 16-bit word's bytes swap (RFC 1071 §2(B))
        t = (t >> 8 | t << 8) & 0xffff;
    }
    let len = (seg.len() + tail.len()) as u32;
    let c = checksum::finish(checksum::combine(&[checksum::pseudo_header(src, dst, ip_proto::TCP, len), checksum::sum(seg), t]));
    seg[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
}

/// Up to four SACK blocks (RFC 2018), left edge inclusive, right edge exclusive.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub struct SackBlocks {
    n: u8,
    b: [(SeqNumber, SeqNumber); 4],
}

impl SackBlocks {
    /// No blocks.
    pub const EMPTY: SackBlocks = SackBlocks { n: 0, b: [(SeqNumber(0), SeqNumber(0)); 4] };
    /// Appends a block; ignored once four are present.
    pub fn push(&mut self, left: SeqNumber, right: SeqNumber) {
        if (self.n as usize) < 4 {
            self.b[self.n as usize] = (left, right);
            self.n += 1;
        }
    }
    /// The blocks, in option order (the first may be a D-SACK, RFC 2883).
    pub fn as_slice(&self) -> &[(SeqNumber, SeqNumber)] {
        &self.b[..self.n as usize]
    }
    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.n as usize
    }
    /// True if there are no blocks.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Keeps only the first `n` blocks.
    pub fn truncate(&mut self, n: usize) {
        self.n = self.n.min(n as u8);
    }
}

/// A validated TCP segment.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TcpRepr<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq: SeqNumber,
    /// Acknowledgment number (written even without ACK; zero then).
    pub ack: SeqNumber,
    /// Flag bits, see [`flags`].
    pub flags: u8,
    /// Raw window field (unscaled).
    pub window: u16,
    /// Urgent pointer.
    pub urgent: u16,
    /// MSS option.
    pub mss: Option<u16>,
    /// Window-scale option (shift count; RFC 7323 caps it at 14, values above are kept
    /// here and clamped by the receiver, as Linux does).
    pub window_scale: Option<u8>,
    /// SACK-permitted option.
    pub sack_permitted: bool,
    /// SACK blocks.
    pub sack: SackBlocks,
    /// Timestamps option (TSval, TSecr).
    pub timestamp: Option<(u32, u32)>,
    /// Payload.
    pub payload: &'a [u8],
}

impl<'a> TcpRepr<'a> {
    /// An empty segment between two ports.
    pub const fn new(src_port: u16, dst_port: u16) -> Self {
        TcpRepr {
            src_port,
            dst_port,
            seq: SeqNumber(0),
            ack: SeqNumber(0),
            flags: 0,
            window: 0,
            urgent: 0,
            mss: None,
            window_scale: None,
            sack_permitted: false,
            sack: SackBlocks::EMPTY,
            timestamp: None,
            payload: &[],
        }
    }

    /// True if `flag` (see [`flags`]) is set.
    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Parses a checked packet, verifying the checksum against the pseudo-header.
    ///
    /// Option errors (length below 2 or running past the header) are `Malformed`; a known
    /// option with a wrong length is ignored, as Linux's `tcp_parse_options()` does.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        p: &TcpPacket<&'a T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) -> Result<TcpRepr<'a>, WireError> {
        p.check_len()?;
        if !p.verify_checksum(src, dst) {
            return Err(WireError::Checksum);
        }
        Self::parse_unverified(p)
    }

    /// Parses without checking the checksum (for traces of packets already verified).
    pub fn parse_unverified<T: AsRef<[u8]> + ?Sized>(
        p: &TcpPacket<&'a T>,
    ) -> Result<TcpRepr<'a>, WireError> {
        let whole: &'a [u8] = p.buffer.as_ref();
        p.check_len()?;
        if p.src_port() == 0 || p.dst_port() == 0 {
            return Err(WireError::Malformed);
        }
        let mut r = TcpRepr::new(p.src_port(), p.dst_port());
        r.seq = p.seq_number();
        r.ack = p.ack_number();
        r.flags = p.flags();
        r.window = p.window_len();
        r.urgent = p.urgent_at();
        let hl = p.header_len() as usize;
        r.payload = &whole[hl..];
        let mut o = &whole[HEADER_LEN..hl];
        while let Some(&kind) = o.first() {
            match kind {
                field::OPT_EOL => break,
                field::OPT_NOP => {
                    o = &o[1..];
                    continue;
                }
                _ => {}
            }
            let len = *o.get(1).ok_or(WireError::Malformed)? as usize;
            if len < 2 || len > o.len() {
                return Err(WireError::Malformed);
            }
            let body = &o[2..len];
            match (kind, len) {
                (field::OPT_MSS, 4) => r.mss = Some(u16::from_be_bytes([body[0], body[1]])),
                (field::OPT_WS, 3) => r.window_scale = Some(body[0]),
                (field::OPT_SACKPERM, 2) => r.sack_permitted = true,
                (field::OPT_SACK, l) if l >= 10 && (l - 2) % 8 == 0 => {
                    for c in body.chunks_exact(8) {
                        let le = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
                        let re = u32::from_be_bytes([c[4], c[5], c[6], c[7]]);
                        r.sack.push(SeqNumber(le), SeqNumber(re));
                    }
                }
                (field::OPT_TS, 10) => {
                    let v = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
                    let e = u32::from_be_bytes([body[4], body[5], body[6], body[7]]);
                    r.timestamp = Some((v, e));
                }
                _ => {} // unknown or wrong-length known option: skipped (tcp_parse_options)
            }
            o = &o[len..];
        }
        Ok(r)
    }

    /// Number of SACK blocks that fit beside the other options (4, or 3 with timestamps).
    pub fn max_sack_blocks(&self) -> usize {
        let other = self.options_len_without_sack();
        ((40 - other).saturating_sub(4) / 8).min(4)
    }

    fn options_len_without_sack(&self) -> usize {
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        if self.timestamp.is_some() {
            n += 12; // [SACKPERM|NOP NOP] + TS
        }
        if self.window_scale.is_some() {
            n += 4;
        }
        if self.sack_permitted && self.timestamp.is_none() {
            n += 4;
        }
        n
    }

    fn sack_emitted(&self) -> usize {
        self.sack.len().min(self.max_sack_blocks())
    }

    /// Header length including options (a multiple of 4, at most 60).
    pub fn header_len(&self) -> usize {
        let s = self.sack_emitted();
        HEADER_LEN + self.options_len_without_sack() + if s > 0 { 4 + 8 * s } else { 0 }
    }

    /// Total segment length: header, options and payload.
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload.len()
    }

    /// Sequence space used (payload + SYN + FIN).
    pub fn segment_len(&self) -> usize {
        self.payload.len() + self.has(flags::SYN) as usize + self.has(flags::FIN) as usize
    }

    /// Writes header and options (not the payload, not the checksum) into the first
    /// [`header_len`](Self::header_len) bytes of `buf`. Options follow the order of Linux
    /// `tcp_options_write()`. SACK blocks beyond what fits are dropped.
    pub fn emit_header(&self, buf: &mut [u8]) {
        let hl = self.header_len();
        let b = &mut buf[..hl];
        b[field::SRC_PORT].copy_from_slice(&self.src_port.to_be_bytes());
        b[field::DST_PORT].copy_from_slice(&self.dst_port.to_be_bytes());
        b[field::SEQ].copy_from_slice(&self.seq.0.to_be_bytes());
        b[field::ACK].copy_from_slice(&self.ack.0.to_be_bytes());
        b[field::FLAGS.start] = ((hl / 4) as u8) << 4;
        b[field::FLAGS.start + 1] = self.flags;
        b[field::WINDOW].copy_from_slice(&self.window.to_be_bytes());
        b[field::CHECKSUM].fill(0);
        b[field::URGENT].copy_from_slice(&self.urgent.to_be_bytes());
        let mut i = HEADER_LEN;
        let mut put = |bytes: &[u8]| {
            b[i..i + bytes.len()].copy_from_slice(bytes);
            i += bytes.len();
        };
        if let Some(mss) = self.mss {
            let m = mss.to_be_bytes();
            put(&[field::OPT_MSS, 4, m[0], m[1]]);
        }
        if let Some((v, e)) = self.timestamp {
            if self.sack_permitted {
                put(&[field::OPT_SACKPERM, 2]);
            } else {
                put(&[field::OPT_NOP, field::OPT_NOP]);
            }
            put(&[field::OPT_TS, 10]);
            put(&v.to_be_bytes());
            put(&e.to_be_bytes());
        }
        if self.sack_permitted && self.timestamp.is_none() {
            put(&[field::OPT_NOP, field::OPT_NOP, field::OPT_SACKPERM, 2]);
        }
        if let Some(ws) = self.window_scale {
            put(&[field::OPT_NOP, field::OPT_WS, 3, ws]);
        }
        let s = self.sack_emitted();
        if s > 0 {
            put(&[field::OPT_NOP, field::OPT_NOP, field::OPT_SACK, (2 + 8 * s) as u8]);
            for &(l, r) in &self.sack.as_slice()[..s] {
                put(&l.0.to_be_bytes());
                put(&r.0.to_be_bytes());
            }
        }
    }

    /// Writes the whole segment (header, options, payload) and fills the checksum.
    /// `p` must hold at least [`buffer_len`](Self::buffer_len) bytes; only that prefix is
    /// written and checksummed.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        p: &mut TcpPacket<T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) {
        let n = self.buffer_len();
        let hl = self.header_len();
        let buf = &mut p.buffer.as_mut()[..n];
        self.emit_header(buf);
        buf[hl..].copy_from_slice(self.payload);
        fill_checksum(buf, src, dst);
    }
}

fn fmt_flags(f: &mut fmt::Formatter<'_>, fl: u8) -> fmt::Result {
    // tcpdump's notation: S F R P . (ACK) U E W
    for (bit, c) in [
        (flags::SYN, 'S'),
        (flags::FIN, 'F'),
        (flags::RST, 'R'),
        (flags::PSH, 'P'),
        (flags::ACK, '.'),
        (flags::URG, 'U'),
        (flags::ECE, 'E'),
        (flags::CWR, 'W'),
    ] {
        if fl & bit != 0 {
            write!(f, "{c}")?;
        }
    }
    Ok(())
}

impl<T: AsRef<[u8]>> fmt::Display for TcpPacket<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.check_len().is_err() {
            return write!(f, "TCP [truncated, {} bytes]", self.buffer.as_ref().len());
        }
        write!(f, "TCP {} > {}: Flags [", self.src_port(), self.dst_port())?;
        fmt_flags(f, self.flags())?;
        write!(f, "], seq {}", self.seq_number())?;
        if self.flags() & flags::ACK != 0 {
            write!(f, ", ack {}", self.ack_number())?;
        }
        write!(f, ", win {}", self.window_len())?;
        let p = TcpPacket::new_unchecked(self.buffer.as_ref());
        match TcpRepr::parse_unverified(&p) {
            Ok(r) => {
                let mut opts: Vec<String> = Vec::new();
                if let Some(m) = r.mss {
                    opts.push(format!("mss {m}"));
                }
                if r.sack_permitted {
                    opts.push("sackOK".into());
                }
                if let Some((v, e)) = r.timestamp {
                    opts.push(format!("TS val {v} ecr {e}"));
                }
                if let Some(w) = r.window_scale {
                    opts.push(format!("wscale {w}"));
                }
                if !r.sack.is_empty() {
                    let b: Vec<String> =
                        r.sack.as_slice().iter().map(|(l, r)| format!("{{{l}:{r}}}")).collect();
                    opts.push(format!("sack {} {}", r.sack.len(), b.join("")));
                }
                if !opts.is_empty() {
                    write!(f, ", options [{}]", opts.join(","))?;
                }
            }
            Err(e) => write!(f, ", options [{e}]")?,
        }
        write!(f, ", length {}", self.payload().len())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The checksum of a segment plus a by-reference tail is that of the whole segment,
    /// for even and odd split points.
    #[test]
    fn checksum_with_tail_equals_whole() {
        static TAIL: [u8; 1449] = {
            let mut p = [0u8; 1449];
            let mut i = 0;
            while i < p.len() {
                p[i] = (i % 251) as u8;
                i += 1;
            }
            p
        };
        for (head, tail) in [(32usize, 1448usize), (33, 1447), (52, 1), (21, 0), (40, 1449)] {
            let mut whole: Vec<u8> = (0..head as u32).map(|i| (i * 37 + 5) as u8).collect();
            whole.extend_from_slice(&TAIL[..tail]);
            let mut split = whole[..head].to_vec();
            fill_checksum(&mut whole, SRC, Ipv4Addr::new(10, 0, 0, 2));
            fill_checksum_tail(&mut split, &TAIL[..tail], SRC, Ipv4Addr::new(10, 0, 0, 2));
            assert_eq!(&split[field::CHECKSUM], &whole[field::CHECKSUM], "head {head} tail {tail}");
        }
    }

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 2);

    fn syn_repr() -> TcpRepr<'static> {
        let mut r = TcpRepr::new(40000, 80);
        r.seq = SeqNumber(0x0102_0304);
        r.flags = flags::SYN;
        r.window = 64240;
        r.mss = Some(1460);
        r.sack_permitted = true;
        r.timestamp = Some((1000, 0));
        r.window_scale = Some(7);
        r
    }

    #[test]
    fn seq_wraparound_order() {
        let a = SeqNumber(u32::MAX - 10);
        let b = a + 20;
        assert_eq!(b.0, 9);
        assert!(a.before(b) && b.after(a));
        assert_eq!(a.partial_cmp(&b), Some(core::cmp::Ordering::Less));
        assert_eq!(b.diff(a), 20);
        assert_eq!(a.diff(b), -20);
        assert_eq!(b.dist(a), 20);
        assert_eq!(a.dist(b), 0);
        assert_eq!(a.max(b), b);
        assert_eq!(a.min(b), a);
        assert_eq!(b - 20, a);
    }

    #[test]
    fn test_emit_syn_linux_layout() {
        let r = syn_repr();
        assert_eq!(r.header_len(), 40);
        let mut buf = vec![0u8; r.buffer_len()];
        let mut p = TcpPacket::new_unchecked(&mut buf[..]);
        r.emit(&mut p, SRC, DST);
        // Linux SYN: MSS, SACK_PERM+TS, NOP WS
        assert_eq!(&buf[20..24], &[2, 4, 0x05, 0xb4]);
        assert_eq!(&buf[24..28], &[4, 2, 8, 10]);
        assert_eq!(&buf[36..40], &[1, 3, 3, 7]);
        assert_eq!(buf[12], 0xa0);
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum(SRC, DST));
        let s = format!("{p}");
        assert!(s.contains("Flags [S]") && s.contains("mss 1460") && s.contains("wscale 7"), "{s}");
    }

    #[test]
    fn syn_without_timestamps_puts_sack_perm_before_wscale() {
        // tcp_options_write(): MSS, [TS], NOP NOP SACK_PERM (only without TS), NOP WS —
        // e.g. a SYN-ACK to a SYN that carried no timestamp (packetdrill's
        // `<mss 1460,nop,nop,sackOK,nop,wscale 8>`)
        let mut r = syn_repr();
        r.timestamp = None;
        let mut buf = vec![0u8; r.buffer_len()];
        r.emit(&mut TcpPacket::new_unchecked(&mut buf[..]), SRC, DST);
        assert_eq!(&buf[20..32], &[2, 4, 0x05, 0xb4, 1, 1, 4, 2, 1, 3, 3, 7]);
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(TcpRepr::parse(&p, SRC, DST).unwrap(), r);
    }

    #[test]
    fn test_parse_roundtrip_with_sack_and_payload() {
        let mut r = TcpRepr::new(80, 40000);
        r.seq = SeqNumber(7);
        r.ack = SeqNumber(u32::MAX - 3);
        r.flags = flags::ACK | flags::PSH;
        r.window = 501;
        r.timestamp = Some((5, 6));
        r.sack.push(SeqNumber(100), SeqNumber(200));
        r.sack.push(SeqNumber(300), SeqNumber(400));
        r.sack.push(SeqNumber(500), SeqNumber(600));
        r.payload = b"hello";
        let mut buf = vec![0u8; r.buffer_len()];
        r.emit(&mut TcpPacket::new_unchecked(&mut buf[..]), SRC, DST);
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        let back = TcpRepr::parse(&p, SRC, DST).unwrap();
        assert_eq!(back, r);
        assert_eq!(p.segment_len(), 5);
        // wrong pseudo-header -> checksum error
        assert_eq!(TcpRepr::parse(&p, DST, DST), Err(WireError::Checksum));
    }

    #[test]
    fn sack_block_limits() {
        let mut r = TcpRepr::new(1, 2);
        for i in 0..4 {
            r.sack.push(SeqNumber(i * 10), SeqNumber(i * 10 + 5));
        }
        assert_eq!(r.max_sack_blocks(), 4);
        assert_eq!(r.header_len(), 20 + 4 + 32);
        r.timestamp = Some((1, 2));
        assert_eq!(r.max_sack_blocks(), 3);
        assert_eq!(r.header_len(), 20 + 12 + 4 + 24);
        let mut buf = vec![0u8; r.buffer_len()];
        r.emit(&mut TcpPacket::new_unchecked(&mut buf[..]), SRC, DST);
        let p = TcpPacket::new_checked(&buf[..]).unwrap();
        let back = TcpRepr::parse(&p, SRC, DST).unwrap();
        assert_eq!(back.sack.len(), 3);
        assert_eq!(back.sack.as_slice()[2], (SeqNumber(20), SeqNumber(25)));
    }

    #[test]
    fn test_truncated() {
        assert_eq!(TcpPacket::new_checked(&[0u8; 19][..]).unwrap_err(), WireError::Truncated);
        let r = syn_repr();
        let mut buf = vec![0u8; r.buffer_len()];
        r.emit(&mut TcpPacket::new_unchecked(&mut buf[..]), SRC, DST);
        assert_eq!(TcpPacket::new_checked(&buf[..30]).unwrap_err(), WireError::Truncated);
    }

    #[test]
    fn test_impossible_len() {
        let mut buf = [0u8; 20];
        buf[0] = 1;
        buf[3] = 2;
        buf[12] = 0x40; // data offset 4 words = 16 < 20
        assert_eq!(TcpPacket::new_checked(&buf[..]).unwrap_err(), WireError::Malformed);
    }

    fn with_options(opts: &[u8]) -> Vec<u8> {
        let hl = 20 + opts.len();
        let mut buf = vec![0u8; hl];
        buf[0..2].copy_from_slice(&1u16.to_be_bytes());
        buf[2..4].copy_from_slice(&2u16.to_be_bytes());
        buf[12] = ((hl / 4) as u8) << 4;
        buf[20..].copy_from_slice(opts);
        fill_checksum(&mut buf, SRC, DST);
        buf
    }

    #[test]
    fn bad_option_lengths() {
        // length byte 0, 1 and running past the header are malformed
        for opts in [[2u8, 0, 0, 0], [8, 1, 0, 0], [2, 9, 0, 0], [1, 1, 1, 3]] {
            let b = with_options(&opts);
            let p = TcpPacket::new_checked(&b[..]).unwrap();
            assert_eq!(TcpRepr::parse(&p, SRC, DST), Err(WireError::Malformed), "{opts:?}");
        }
        // a known option with the wrong size is skipped (tcp_parse_options)
        let b = with_options(&[2, 3, 5, 0, 1, 1, 1, 0]);
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        let r = TcpRepr::parse(&p, SRC, DST).unwrap();
        assert_eq!(r.mss, None);
        // SACK with a length not 2+8n is skipped
        let b = with_options(&[5, 6, 0, 0, 0, 0, 0, 0]);
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        assert!(TcpRepr::parse(&p, SRC, DST).unwrap().sack.is_empty());
        // EOL stops parsing, even if garbage follows
        let b = with_options(&[0, 99, 99, 99]);
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        assert!(TcpRepr::parse(&p, SRC, DST).is_ok());
    }

    #[test]
    fn never_panics_on_any_bytes() {
        let mut rng = wirelab_core::Rng::from_seed(7);
        let base = {
            let r = syn_repr();
            let mut buf = vec![0u8; r.buffer_len()];
            r.emit(&mut TcpPacket::new_unchecked(&mut buf[..]), SRC, DST);
            buf
        };
        for _ in 0..20_000 {
            let mut b = base.clone();
            let n = rng.below(b.len() as u64 + 1) as usize;
            b.truncate(n);
            for _ in 0..rng.below(6) {
                if !b.is_empty() {
                    let i = rng.below(b.len() as u64) as usize;
                    b[i] = rng.next_u32() as u8;
                }
            }
            if let Ok(p) = TcpPacket::new_checked(&b[..]) {
                let _ = TcpRepr::parse_unverified(&p);
                let _ = format!("{p}");
            }
            let _ = format!("{}", TcpPacket::new_unchecked(&b[..]));
        }
    }
}
