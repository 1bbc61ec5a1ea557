//! SCTP wire format (RFC 9260 §3): common header, chunks, parameters, error causes.
//!
//! Two layers as in `wirelab_wire`: [`SctpPacket`] and [`Chunk`] are zero-copy views that
//! validate lengths once in `new_checked` and never panic afterwards; [`ChunkRepr`] holds a
//! parsed chunk (borrowing variable parts from the input) with `parse`, `buffer_len` and
//! `emit`. Variable-length lists (INIT parameters, SACK gap blocks, error causes) stay as
//! raw bytes in the Repr and are walked with allocation-free iterators, so decoding a packet
//! never allocates.
//!
//! **Contract:** nothing in this module panics on any input bytes (see the randomized test
//! at the end). Emitting requires a buffer of at least `buffer_len()` bytes.
use core::cmp::Ordering;
use core::fmt;
use std::net::Ipv4Addr;
use wirelab_wire::WireError;

/// SCTP common header length.
pub const COMMON_HEADER_LEN: usize = 12;
/// Chunk header length (type, flags, length).
pub const CHUNK_HEADER_LEN: usize = 4;
/// DATA chunk header length (chunk header + TSN, stream, SSN, PPID).
pub const DATA_HEADER_LEN: usize = 16;

/// Chunk type numbers (RFC 9260 §3.2, RFC 3758, and the btech-2016 `SCTP_CID_SNDBUF_ADV`).
pub mod kind {
    /// Payload data.
    pub const DATA: u8 = 0;
    /// Initiation.
    pub const INIT: u8 = 1;
    /// Initiation acknowledgement.
    pub const INIT_ACK: u8 = 2;
    /// Selective acknowledgement.
    pub const SACK: u8 = 3;
    /// Heartbeat request.
    pub const HEARTBEAT: u8 = 4;
    /// Heartbeat acknowledgement.
    pub const HEARTBEAT_ACK: u8 = 5;
    /// Abort.
    pub const ABORT: u8 = 6;
    /// Shutdown.
    pub const SHUTDOWN: u8 = 7;
    /// Shutdown acknowledgement.
    pub const SHUTDOWN_ACK: u8 = 8;
    /// Operation error.
    pub const ERROR: u8 = 9;
    /// State cookie.
    pub const COOKIE_ECHO: u8 = 10;
    /// Cookie acknowledgement.
    pub const COOKIE_ACK: u8 = 11;
    /// Shutdown complete.
    pub const SHUTDOWN_COMPLETE: u8 = 14;
    /// Send-buffer advertisement (seed system 1, `SCTP_CID_SNDBUF_ADV`); top bits `10` =
    /// skip silently if unknown.
    pub const SNDBUF_ADV: u8 = 0x96;
    /// Forward cumulative TSN (RFC 3758).
    pub const FORWARD_TSN: u8 = 192;
}

/// Parameter types (RFC 9260 §3.3.2.1, RFC 3758).
pub mod param {
    /// Heartbeat info (inside HEARTBEAT / HEARTBEAT-ACK).
    pub const HEARTBEAT_INFO: u16 = 1;
    /// IPv4 address.
    pub const IPV4_ADDR: u16 = 5;
    /// IPv6 address.
    pub const IPV6_ADDR: u16 = 6;
    /// State cookie.
    pub const STATE_COOKIE: u16 = 7;
    /// Unrecognized parameter (INIT-ACK).
    pub const UNRECOGNIZED: u16 = 8;
    /// Cookie preservative.
    pub const COOKIE_PRESERVATIVE: u16 = 9;
    /// Adaptation Layer Indication (RFC 5061 §4.2.7): known to Linux
    /// (`sctp_verify_param()`), so accepted without an Unrecognized Parameter report.
    pub const ADAPTATION_LAYER_IND: u16 = 0xC006;
    /// Host name address (deprecated).
    pub const HOST_NAME: u16 = 11;
    /// Supported address types.
    pub const SUPPORTED_ADDR_TYPES: u16 = 12;
    /// ECN capable (reserved).
    pub const ECN_CAPABLE: u16 = 0x8000;
    /// Forward-TSN supported (RFC 3758).
    pub const FORWARD_TSN_SUPPORTED: u16 = 0xC000;
}

/// Error cause codes (RFC 9260 §3.3.10).
pub mod cause {
    /// Invalid stream identifier.
    pub const INVALID_STREAM: u16 = 1;
    /// Missing mandatory parameter.
    pub const MISSING_PARAM: u16 = 2;
    /// Stale cookie error (value: staleness in µs).
    pub const STALE_COOKIE: u16 = 3;
    /// Out of resource.
    pub const OUT_OF_RESOURCE: u16 = 4;
    /// Unresolvable address.
    pub const UNRESOLVABLE_ADDR: u16 = 5;
    /// Unrecognized chunk type (value: the chunk).
    pub const UNRECOGNIZED_CHUNK: u16 = 6;
    /// Invalid mandatory parameter.
    pub const INVALID_PARAM: u16 = 7;
    /// Unrecognized parameters (value: the parameters).
    pub const UNRECOGNIZED_PARAMS: u16 = 8;
    /// No user data.
    pub const NO_USER_DATA: u16 = 9;
    /// Cookie received while shutting down.
    pub const COOKIE_WHILE_SHUTDOWN: u16 = 10;
    /// Restart of an association with new addresses.
    pub const RESTART_NEW_ADDRS: u16 = 11;
    /// User-initiated abort.
    pub const USER_ABORT: u16 = 12;
    /// Protocol violation.
    pub const PROTOCOL_VIOLATION: u16 = 13;
}

/// Rounds up to a multiple of 4 (chunk and parameter padding).
#[inline]
pub const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
#[inline]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
#[inline]
fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}
#[inline]
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

// ---------------------------------------------------------------------------------------
// TSN
// ---------------------------------------------------------------------------------------

/// A Transmission Sequence Number with serial-number arithmetic (RFC 1982, RFC 9260 §1.6):
/// `a < b` iff `b - a` taken mod 2³² lies in `(0, 2³¹)`. As in smoltcp's `SeqNumber`, the
/// ordering is only meaningful for numbers less than 2³¹ apart.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct Tsn(pub u32);

impl Tsn {
    /// Signed distance `self - other`.
    #[inline]
    pub fn diff(self, other: Tsn) -> i32 {
        self.0.wrapping_sub(other.0) as i32
    }
    /// `self + n` (wrapping).
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn add(self, n: u32) -> Tsn {
        Tsn(self.0.wrapping_add(n))
    }
    /// The next TSN.
    #[inline]
    pub fn next(self) -> Tsn {
        self.add(1)
    }
    /// The previous TSN.
    #[inline]
    pub fn prev(self) -> Tsn {
        Tsn(self.0.wrapping_sub(1))
    }
}

impl PartialOrd for Tsn {
    fn partial_cmp(&self, other: &Tsn) -> Option<Ordering> {
        Some(self.diff(*other).cmp(&0))
    }
}

impl fmt::Debug for Tsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
impl fmt::Display for Tsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

// ---------------------------------------------------------------------------------------
// Packet (common header)
// ---------------------------------------------------------------------------------------

/// A view over a whole SCTP packet (common header + chunks).
#[derive(Debug, Clone)]
pub struct SctpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SctpPacket<T> {
    /// Wraps without checking; only for emitting into a buffer of known size.
    pub const fn new_unchecked(buffer: T) -> Self {
        SctpPacket { buffer }
    }
    /// Wraps after checking that the common header fits.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < COMMON_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(SctpPacket { buffer })
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
    /// Verification tag.
    pub fn vtag(&self) -> u32 {
        be32(self.buffer.as_ref(), 4)
    }
    /// Checksum field as stored (little-endian CRC32c).
    pub fn checksum(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_le_bytes([b[8], b[9], b[10], b[11]])
    }
    /// True if the CRC32c verifies.
    pub fn verify_checksum(&self) -> bool {
        wirelab_wire::crc32c::sctp_verify(self.buffer.as_ref())
    }
    /// Bytes after the common header.
    pub fn chunk_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[COMMON_HEADER_LEN..]
    }
    /// Iterator over the chunks; yields an error (and stops) on a malformed chunk.
    pub fn chunks(&self) -> ChunkIter<'_> {
        ChunkIter { rest: self.chunk_bytes() }
    }
    /// Whole packet bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SctpPacket<T> {
    /// Writes the common header (checksum left zero; call [`Self::fill_checksum`] last).
    pub fn set_header(&mut self, src_port: u16, dst_port: u16, vtag: u32) {
        let b = self.buffer.as_mut();
        put16(b, 0, src_port);
        put16(b, 2, dst_port);
        put32(b, 4, vtag);
        b[8..12].fill(0);
    }
    /// Computes and stores the CRC32c over the whole buffer.
    pub fn fill_checksum(&mut self) {
        wirelab_wire::crc32c::sctp_fill(self.buffer.as_mut());
    }
}

impl<T: AsRef<[u8]>> fmt::Display for SctpPacket<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SCTP {} > {} vtag {:#010x}", self.src_port(), self.dst_port(), self.vtag())?;
        for c in self.chunks() {
            match c {
                Ok(c) => write!(f, " [{}]", c)?,
                Err(e) => return write!(f, " [{}]", e),
            }
        }
        Ok(())
    }
}

/// Iterator over the chunks of a packet.
#[derive(Clone, Debug)]
pub struct ChunkIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for ChunkIter<'a> {
    type Item = Result<Chunk<&'a [u8]>, WireError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        match Chunk::new_checked(self.rest) {
            Ok(c) => {
                let adv = c.padded_len().min(self.rest.len());
                let (this, rest) = self.rest.split_at(adv);
                self.rest = rest;
                Some(Ok(Chunk { buffer: this }))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Chunk view
// ---------------------------------------------------------------------------------------

/// A view over one chunk (header + value + padding).
#[derive(Debug, Clone)]
pub struct Chunk<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Chunk<T> {
    /// Wraps without checking; only for emitting into a buffer sized by `buffer_len()`.
    pub const fn new_unchecked(buffer: T) -> Self {
        Chunk { buffer }
    }
    /// Wraps after checking that the header fits and `4 ≤ length ≤ buffer length`. The
    /// trailing padding of the last chunk may be missing (accepted, as Linux does).
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < CHUNK_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let len = be16(b, 2) as usize;
        if len < CHUNK_HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if len > b.len() {
            return Err(WireError::Truncated);
        }
        Ok(Chunk { buffer })
    }
    /// Chunk type.
    pub fn kind(&self) -> u8 {
        self.buffer.as_ref()[0]
    }
    /// Chunk flags.
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[1]
    }
    /// Length field (header + value, without padding).
    pub fn len_field(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
    /// Length including padding.
    pub fn padded_len(&self) -> usize {
        pad4(self.len_field() as usize)
    }
    /// The value (bytes after the 4-byte header, up to the length field).
    pub fn value(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = (self.len_field() as usize).min(b.len());
        &b[CHUNK_HEADER_LEN..end]
    }
    /// The chunk's bytes without padding (header + value).
    pub fn bytes(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        &b[..(self.len_field() as usize).min(b.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Chunk<T> {
    /// Writes the chunk header.
    pub fn set_header(&mut self, kind: u8, flags: u8, len: u16) {
        let b = self.buffer.as_mut();
        b[0] = kind;
        b[1] = flags;
        put16(b, 2, len);
    }
    /// Mutable value area (after the header, up to the end of the buffer).
    pub fn value_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[CHUNK_HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Chunk<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = Chunk { buffer: self.buffer.as_ref() };
        match ChunkRepr::parse(&c) {
            Ok(r) => write!(f, "{}", r),
            Err(e) => write!(f, "type {} flags {:#04x} len {} ({})", self.kind(), self.flags(), self.len_field(), e),
        }
    }
}

// ---------------------------------------------------------------------------------------
// TLV lists (parameters and error causes share the format)
// ---------------------------------------------------------------------------------------

/// One type-length-value item (an INIT parameter or an error cause).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tlv<'a> {
    /// Parameter type or cause code.
    pub kind: u16,
    /// Value (without the 4-byte TLV header and without padding).
    pub value: &'a [u8],
    /// The whole TLV without padding (for echoing unrecognized parameters).
    pub raw: &'a [u8],
}

/// Iterator over a padded TLV list; yields an error and stops on a malformed item.
#[derive(Clone, Debug)]
pub struct TlvIter<'a> {
    rest: &'a [u8],
}

impl<'a> TlvIter<'a> {
    /// Iterates over `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        TlvIter { rest: bytes }
    }
}

impl<'a> Iterator for TlvIter<'a> {
    type Item = Result<Tlv<'a>, WireError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let r = self.rest;
        if r.len() < 4 {
            self.rest = &[];
            return Some(Err(WireError::Truncated));
        }
        let len = be16(r, 2) as usize;
        if len < 4 || len > r.len() {
            self.rest = &[];
            return Some(Err(if len < 4 { WireError::Malformed } else { WireError::Truncated }));
        }
        let item = Tlv { kind: be16(r, 0), value: &r[4..len], raw: &r[..len] };
        self.rest = &r[pad4(len).min(r.len())..];
        Some(Ok(item))
    }
}

/// Length of a TLV list without the padding of its last item (the whole slice if it does
/// not parse, so malformed lists round-trip unchanged).
pub fn tlv_unpadded_len(b: &[u8]) -> usize {
    let mut at = 0;
    let mut end = 0;
    while at + 4 <= b.len() {
        let len = be16(b, at + 2) as usize;
        if len < 4 || at + len > b.len() {
            return b.len();
        }
        end = at + len;
        at += pad4(len);
    }
    if at < b.len() {
        return b.len();
    }
    end
}

/// Validates a whole TLV list.
fn check_tlvs(b: &[u8]) -> Result<(), WireError> {
    for t in TlvIter::new(b) {
        t?;
    }
    Ok(())
}

/// Appends one TLV (padded) to `out` at `*at`; returns false if it does not fit.
pub fn put_tlv(out: &mut [u8], at: &mut usize, kind: u16, value: &[u8]) -> bool {
    let len = 4 + value.len();
    let end = *at + pad4(len);
    if len > u16::MAX as usize || end > out.len() {
        return false;
    }
    put16(out, *at, kind);
    put16(out, *at + 2, len as u16);
    out[*at + 4..*at + len].copy_from_slice(value);
    out[*at + len..end].fill(0);
    *at = end;
    true
}

/// A decoded INIT/INIT-ACK parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamRepr<'a> {
    /// IPv4 address.
    Ipv4Addr(Ipv4Addr),
    /// IPv6 address (16 bytes).
    Ipv6Addr(&'a [u8]),
    /// State cookie (opaque).
    StateCookie(&'a [u8]),
    /// Unrecognized parameters echoed by the peer.
    Unrecognized(&'a [u8]),
    /// Cookie preservative: suggested life-span increment in ms.
    CookiePreservative(u32),
    /// Host name (deprecated; never used by wirelab).
    HostName(&'a [u8]),
    /// Supported address types (list of u16 parameter types, raw).
    SupportedAddrTypes(&'a [u8]),
    /// ECN capable.
    EcnCapable,
    /// Forward-TSN supported.
    ForwardTsnSupported,
    /// Any other type.
    Unknown {
        /// Parameter type.
        kind: u16,
        /// Its value.
        value: &'a [u8],
    },
}

impl<'a> ParamRepr<'a> {
    /// Decodes one TLV as a parameter.
    pub fn parse(t: &Tlv<'a>) -> Result<Self, WireError> {
        let v = t.value;
        Ok(match t.kind {
            param::IPV4_ADDR => {
                if v.len() != 4 {
                    return Err(WireError::Malformed);
                }
                ParamRepr::Ipv4Addr(Ipv4Addr::new(v[0], v[1], v[2], v[3]))
            }
            param::IPV6_ADDR => {
                if v.len() != 16 {
                    return Err(WireError::Malformed);
                }
                ParamRepr::Ipv6Addr(v)
            }
            param::STATE_COOKIE => ParamRepr::StateCookie(v),
            param::UNRECOGNIZED => ParamRepr::Unrecognized(v),
            param::COOKIE_PRESERVATIVE => {
                if v.len() != 4 {
                    return Err(WireError::Malformed);
                }
                ParamRepr::CookiePreservative(be32(v, 0))
            }
            param::HOST_NAME => ParamRepr::HostName(v),
            param::SUPPORTED_ADDR_TYPES => {
                if !v.len().is_multiple_of(2) {
                    return Err(WireError::Malformed);
                }
                ParamRepr::SupportedAddrTypes(v)
            }
            param::ECN_CAPABLE => ParamRepr::EcnCapable,
            param::FORWARD_TSN_SUPPORTED => ParamRepr::ForwardTsnSupported,
            kind => ParamRepr::Unknown { kind, value: v },
        })
    }
    /// Appends the parameter (padded) to `out` at `*at`; false if it does not fit.
    pub fn emit(&self, out: &mut [u8], at: &mut usize) -> bool {
        match *self {
            ParamRepr::Ipv4Addr(a) => put_tlv(out, at, param::IPV4_ADDR, &a.octets()),
            ParamRepr::Ipv6Addr(v) => put_tlv(out, at, param::IPV6_ADDR, v),
            ParamRepr::StateCookie(v) => put_tlv(out, at, param::STATE_COOKIE, v),
            ParamRepr::Unrecognized(v) => put_tlv(out, at, param::UNRECOGNIZED, v),
            ParamRepr::CookiePreservative(ms) => put_tlv(out, at, param::COOKIE_PRESERVATIVE, &ms.to_be_bytes()),
            ParamRepr::HostName(v) => put_tlv(out, at, param::HOST_NAME, v),
            ParamRepr::SupportedAddrTypes(v) => put_tlv(out, at, param::SUPPORTED_ADDR_TYPES, v),
            ParamRepr::EcnCapable => put_tlv(out, at, param::ECN_CAPABLE, &[]),
            ParamRepr::ForwardTsnSupported => put_tlv(out, at, param::FORWARD_TSN_SUPPORTED, &[]),
            ParamRepr::Unknown { kind, value } => put_tlv(out, at, kind, value),
        }
    }
}

/// What to do with an unrecognized chunk or parameter, from the upper two type bits
/// (RFC 9260 §3.2 and §3.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownAction {
    /// `00`: stop processing, discard (the packet / the rest of the parameters).
    Discard,
    /// `01`: as `Discard`, and report it.
    DiscardReport,
    /// `10`: skip it and continue.
    Skip,
    /// `11`: skip it, continue, and report it.
    SkipReport,
}

impl UnknownAction {
    /// For a chunk type.
    pub fn for_chunk(kind: u8) -> Self {
        Self::from_bits(kind >> 6)
    }
    /// For a parameter type.
    pub fn for_param(kind: u16) -> Self {
        Self::from_bits((kind >> 14) as u8)
    }
    fn from_bits(b: u8) -> Self {
        match b & 3 {
            0 => UnknownAction::Discard,
            1 => UnknownAction::DiscardReport,
            2 => UnknownAction::Skip,
            _ => UnknownAction::SkipReport,
        }
    }
    /// True if processing continues after the item.
    pub fn continues(self) -> bool {
        matches!(self, UnknownAction::Skip | UnknownAction::SkipReport)
    }
    /// True if the item is reported to the peer.
    pub fn reports(self) -> bool {
        matches!(self, UnknownAction::DiscardReport | UnknownAction::SkipReport)
    }
}

// ---------------------------------------------------------------------------------------
// Chunk representations
// ---------------------------------------------------------------------------------------

/// DATA chunk flags (RFC 9260 §3.3.1).
pub mod data_flags {
    /// Last fragment.
    pub const E: u8 = 0x01;
    /// First fragment.
    pub const B: u8 = 0x02;
    /// Unordered.
    pub const U: u8 = 0x04;
    /// Immediate ack requested (RFC 7053).
    pub const I: u8 = 0x08;
}

/// A DATA chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataRepr<'a> {
    /// Flags (`data_flags::{U, B, E, I}`).
    pub flags: u8,
    /// TSN.
    pub tsn: Tsn,
    /// Stream identifier.
    pub stream: u16,
    /// Stream sequence number.
    pub ssn: u16,
    /// Payload protocol identifier.
    pub ppid: u32,
    /// User data (non-empty on a valid chunk).
    pub payload: &'a [u8],
}

/// INIT or INIT-ACK fixed part plus raw parameters. Equality ignores the padding of the
/// last parameter (on the wire it belongs to the chunk).
#[derive(Clone, Copy, Debug)]
pub struct InitRepr<'a> {
    /// Initiate tag (non-zero).
    pub init_tag: u32,
    /// Advertised receiver window credit.
    pub a_rwnd: u32,
    /// Number of outbound streams.
    pub os: u16,
    /// Maximum inbound streams.
    pub mis: u16,
    /// Initial TSN.
    pub initial_tsn: Tsn,
    /// Encoded, padded parameter list (walk with [`InitRepr::params`]).
    pub params: &'a [u8],
}

fn tlvs_eq(a: &[u8], b: &[u8]) -> bool {
    a[..tlv_unpadded_len(a)] == b[..tlv_unpadded_len(b)]
}

impl PartialEq for InitRepr<'_> {
    fn eq(&self, o: &Self) -> bool {
        (self.init_tag, self.a_rwnd, self.os, self.mis, self.initial_tsn) == (o.init_tag, o.a_rwnd, o.os, o.mis, o.initial_tsn) && tlvs_eq(self.params, o.params)
    }
}
impl Eq for InitRepr<'_> {}

impl<'a> InitRepr<'a> {
    /// Iterator over the parameters as TLVs.
    pub fn params(&self) -> TlvIter<'a> {
        TlvIter::new(self.params)
    }
    fn parse(v: &'a [u8]) -> Result<Self, WireError> {
        if v.len() < 16 {
            return Err(WireError::Truncated);
        }
        let r = InitRepr {
            init_tag: be32(v, 0),
            a_rwnd: be32(v, 4),
            os: be16(v, 8),
            mis: be16(v, 10),
            initial_tsn: Tsn(be32(v, 12)),
            params: &v[16..],
        };
        if r.init_tag == 0 || r.os == 0 || r.mis == 0 {
            return Err(WireError::Malformed);
        }
        check_tlvs(r.params)?;
        Ok(r)
    }
    fn emit(&self, v: &mut [u8]) {
        put32(v, 0, self.init_tag);
        put32(v, 4, self.a_rwnd);
        put16(v, 8, self.os);
        put16(v, 10, self.mis);
        put32(v, 12, self.initial_tsn.0);
        let n = v.len() - 16;
        v[16..].copy_from_slice(&self.params[..n]);
    }
}

/// A list that is either raw wire bytes (after parsing) or typed values (to emit).
#[derive(Clone, Copy, Debug)]
pub enum List<'a, T> {
    /// Encoded on the wire.
    Raw(&'a [u8]),
    /// Typed values.
    Items(&'a [T]),
}

/// A SACK gap-ack block: offsets from the cumulative TSN ack, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GapBlock {
    /// Start offset (≥ 1).
    pub start: u16,
    /// End offset (≥ start).
    pub end: u16,
}

/// A SACK chunk.
#[derive(Clone, Copy, Debug)]
pub struct SackRepr<'a> {
    /// Chunk flags. RFC 9260 reserves them (0); CMT's delayed-ack algorithm (DAC) puts the
    /// number of DATA packets received since the last SACK in bits 6–7 (FreeBSD
    /// `SCTP_SACK_CMT_DAC` = 0x80: two or more).
    pub flags: u8,
    /// Cumulative TSN ack.
    pub cum_tsn: Tsn,
    /// Advertised receiver window credit.
    pub a_rwnd: u32,
    /// Gap-ack blocks.
    pub gaps: List<'a, GapBlock>,
    /// Duplicate TSNs.
    pub dups: List<'a, Tsn>,
}

impl<'a> SackRepr<'a> {
    /// Number of gap blocks.
    pub fn num_gaps(&self) -> usize {
        match self.gaps {
            List::Raw(b) => b.len() / 4,
            List::Items(s) => s.len(),
        }
    }
    /// Number of duplicate TSNs.
    pub fn num_dups(&self) -> usize {
        match self.dups {
            List::Raw(b) => b.len() / 4,
            List::Items(s) => s.len(),
        }
    }
    /// Gap block `i` (`i < num_gaps()`).
    pub fn gap(&self, i: usize) -> GapBlock {
        match self.gaps {
            List::Raw(b) => GapBlock { start: be16(b, i * 4), end: be16(b, i * 4 + 2) },
            List::Items(s) => s[i],
        }
    }
    /// Duplicate TSN `i` (`i < num_dups()`).
    pub fn dup(&self, i: usize) -> Tsn {
        match self.dups {
            List::Raw(b) => Tsn(be32(b, i * 4)),
            List::Items(s) => s[i],
        }
    }
    /// Gap blocks in order.
    pub fn gap_blocks(&self) -> impl Iterator<Item = GapBlock> + '_ {
        (0..self.num_gaps()).map(move |i| self.gap(i))
    }
    /// Duplicate TSNs in order.
    pub fn dup_tsns(&self) -> impl Iterator<Item = Tsn> + '_ {
        (0..self.num_dups()).map(move |i| self.dup(i))
    }
}

impl PartialEq for SackRepr<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.flags == o.flags
            && self.cum_tsn == o.cum_tsn
            && self.a_rwnd == o.a_rwnd
            && self.gap_blocks().eq(o.gap_blocks())
            && self.dup_tsns().eq(o.dup_tsns())
    }
}
impl Eq for SackRepr<'_> {}

/// A parsed (or to-be-emitted) chunk. Equality means "same bytes on the wire" (trailing
/// TLV padding is ignored).
#[derive(Clone, Copy, Debug)]
pub enum ChunkRepr<'a> {
    /// DATA.
    Data(DataRepr<'a>),
    /// INIT.
    Init(InitRepr<'a>),
    /// INIT-ACK (parameters must contain a state cookie).
    InitAck(InitRepr<'a>),
    /// SACK.
    Sack(SackRepr<'a>),
    /// HEARTBEAT; `info` is the raw parameter list (a Heartbeat Info TLV).
    Heartbeat {
        /// Raw parameters.
        info: &'a [u8],
    },
    /// HEARTBEAT-ACK echoing the HEARTBEAT's parameters.
    HeartbeatAck {
        /// Raw parameters.
        info: &'a [u8],
    },
    /// ABORT with optional error causes.
    Abort {
        /// T bit: the verification tag is reflected.
        t_bit: bool,
        /// Raw error causes.
        causes: &'a [u8],
    },
    /// SHUTDOWN.
    Shutdown {
        /// Cumulative TSN ack.
        cum_tsn: Tsn,
    },
    /// SHUTDOWN-ACK.
    ShutdownAck,
    /// SHUTDOWN-COMPLETE.
    ShutdownComplete {
        /// T bit.
        t_bit: bool,
    },
    /// ERROR with one or more causes.
    Error {
        /// Raw error causes.
        causes: &'a [u8],
    },
    /// COOKIE-ECHO.
    CookieEcho {
        /// The cookie from the INIT-ACK.
        cookie: &'a [u8],
    },
    /// COOKIE-ACK.
    CookieAck,
    /// FORWARD-TSN (RFC 3758).
    ForwardTsn {
        /// New cumulative TSN.
        new_cum_tsn: Tsn,
        /// Raw (stream, ssn) pairs.
        streams: &'a [u8],
    },
    /// Send-buffer advertisement (seed system 1, type 0x96): `flags` carries the percent or
    /// decile (V2–V4), `value` the 32-bit backlog (V1, length 8).
    SndbufAdv {
        /// Flags byte.
        flags: u8,
        /// 32-bit value when the chunk length is 8.
        value: Option<u32>,
    },
    /// Any chunk this module does not decode; round-trips its bytes.
    Unknown {
        /// Chunk type.
        kind: u8,
        /// Flags.
        flags: u8,
        /// Value bytes (without header and padding).
        body: &'a [u8],
    },
}

impl PartialEq for ChunkRepr<'_> {
    fn eq(&self, o: &Self) -> bool {
        use ChunkRepr::*;
        match (self, o) {
            (Data(a), Data(b)) => a == b,
            (Init(a), Init(b)) | (InitAck(a), InitAck(b)) => a == b,
            (Sack(a), Sack(b)) => a == b,
            (Heartbeat { info: a }, Heartbeat { info: b }) | (HeartbeatAck { info: a }, HeartbeatAck { info: b }) => tlvs_eq(a, b),
            (Abort { t_bit: x, causes: a }, Abort { t_bit: y, causes: b }) => x == y && tlvs_eq(a, b),
            (Error { causes: a }, Error { causes: b }) => tlvs_eq(a, b),
            (Shutdown { cum_tsn: a }, Shutdown { cum_tsn: b }) => a == b,
            (ShutdownAck, ShutdownAck) | (CookieAck, CookieAck) => true,
            (ShutdownComplete { t_bit: a }, ShutdownComplete { t_bit: b }) => a == b,
            (CookieEcho { cookie: a }, CookieEcho { cookie: b }) => a == b,
            (ForwardTsn { new_cum_tsn: a, streams: x }, ForwardTsn { new_cum_tsn: b, streams: y }) => a == b && x == y,
            (SndbufAdv { flags: a, value: x }, SndbufAdv { flags: b, value: y }) => a == b && x == y,
            (Unknown { kind: k1, flags: f1, body: b1 }, Unknown { kind: k2, flags: f2, body: b2 }) => k1 == k2 && f1 == f2 && b1 == b2,
            _ => false,
        }
    }
}
impl Eq for ChunkRepr<'_> {}

fn causes_checked(v: &[u8]) -> Result<&[u8], WireError> {
    check_tlvs(v)?;
    Ok(v)
}

impl<'a> ChunkRepr<'a> {
    /// Decodes a chunk. Unknown types become [`ChunkRepr::Unknown`]; known types with an
    /// impossible length are errors.
    pub fn parse(c: &Chunk<&'a [u8]>) -> Result<Self, WireError> {
        let flags = c.flags();
        let b: &'a [u8] = c.buffer;
        let end = (c.len_field() as usize).min(b.len());
        let v: &'a [u8] = &b[CHUNK_HEADER_LEN..end];
        Ok(match c.kind() {
            kind::DATA => {
                if v.len() < DATA_HEADER_LEN - CHUNK_HEADER_LEN {
                    return Err(WireError::Truncated);
                }
                let payload = &v[12..];
                if payload.is_empty() {
                    return Err(WireError::Malformed);
                }
                ChunkRepr::Data(DataRepr {
                    flags,
                    tsn: Tsn(be32(v, 0)),
                    stream: be16(v, 4),
                    ssn: be16(v, 6),
                    ppid: be32(v, 8),
                    payload,
                })
            }
            kind::INIT => ChunkRepr::Init(InitRepr::parse(v)?),
            kind::INIT_ACK => ChunkRepr::InitAck(InitRepr::parse(v)?),
            kind::SACK => {
                if v.len() < 12 {
                    return Err(WireError::Truncated);
                }
                let ng = be16(v, 8) as usize;
                let nd = be16(v, 10) as usize;
                let need = 12 + 4 * ng + 4 * nd;
                if v.len() < need {
                    return Err(WireError::Truncated);
                }
                if v.len() != need {
                    return Err(WireError::Malformed);
                }
                ChunkRepr::Sack(SackRepr {
                    flags,
                    cum_tsn: Tsn(be32(v, 0)),
                    a_rwnd: be32(v, 4),
                    gaps: List::Raw(&v[12..12 + 4 * ng]),
                    dups: List::Raw(&v[12 + 4 * ng..need]),
                })
            }
            kind::HEARTBEAT => ChunkRepr::Heartbeat { info: causes_checked(v)? },
            kind::HEARTBEAT_ACK => ChunkRepr::HeartbeatAck { info: causes_checked(v)? },
            kind::ABORT => ChunkRepr::Abort { t_bit: flags & 1 != 0, causes: causes_checked(v)? },
            kind::SHUTDOWN => {
                if v.len() != 4 {
                    return Err(WireError::Malformed);
                }
                ChunkRepr::Shutdown { cum_tsn: Tsn(be32(v, 0)) }
            }
            kind::SHUTDOWN_ACK => ChunkRepr::ShutdownAck,
            kind::SHUTDOWN_COMPLETE => ChunkRepr::ShutdownComplete { t_bit: flags & 1 != 0 },
            kind::ERROR => ChunkRepr::Error { causes: causes_checked(v)? },
            kind::COOKIE_ECHO => ChunkRepr::CookieEcho { cookie: v },
            kind::COOKIE_ACK => ChunkRepr::CookieAck,
            kind::FORWARD_TSN => {
                if v.len() < 4 || !(v.len() - 4).is_multiple_of(4) {
                    return Err(WireError::Malformed);
                }
                ChunkRepr::ForwardTsn { new_cum_tsn: Tsn(be32(v, 0)), streams: &v[4..] }
            }
            kind::SNDBUF_ADV => match v.len() {
                0 => ChunkRepr::SndbufAdv { flags, value: None },
                4 => ChunkRepr::SndbufAdv { flags, value: Some(be32(v, 0)) },
                _ => return Err(WireError::Malformed),
            },
            kind => ChunkRepr::Unknown { kind, flags, body: v },
        })
    }

    /// The chunk type.
    pub fn kind(&self) -> u8 {
        match self {
            ChunkRepr::Data(_) => kind::DATA,
            ChunkRepr::Init(_) => kind::INIT,
            ChunkRepr::InitAck(_) => kind::INIT_ACK,
            ChunkRepr::Sack(_) => kind::SACK,
            ChunkRepr::Heartbeat { .. } => kind::HEARTBEAT,
            ChunkRepr::HeartbeatAck { .. } => kind::HEARTBEAT_ACK,
            ChunkRepr::Abort { .. } => kind::ABORT,
            ChunkRepr::Shutdown { .. } => kind::SHUTDOWN,
            ChunkRepr::ShutdownAck => kind::SHUTDOWN_ACK,
            ChunkRepr::ShutdownComplete { .. } => kind::SHUTDOWN_COMPLETE,
            ChunkRepr::Error { .. } => kind::ERROR,
            ChunkRepr::CookieEcho { .. } => kind::COOKIE_ECHO,
            ChunkRepr::CookieAck => kind::COOKIE_ACK,
            ChunkRepr::ForwardTsn { .. } => kind::FORWARD_TSN,
            ChunkRepr::SndbufAdv { .. } => kind::SNDBUF_ADV,
            ChunkRepr::Unknown { kind, .. } => *kind,
        }
    }

    fn flags(&self) -> u8 {
        match self {
            ChunkRepr::Data(d) => d.flags,
            ChunkRepr::Abort { t_bit, .. } | ChunkRepr::ShutdownComplete { t_bit } => *t_bit as u8,
            ChunkRepr::SndbufAdv { flags, .. } | ChunkRepr::Unknown { flags, .. } => *flags,
            ChunkRepr::Sack(s) => s.flags,
            _ => 0,
        }
    }

    /// Value length (the length field minus 4). A trailing TLV list counts without the
    /// last item's padding: RFC 9260 §3.2 makes it the chunk's padding.
    fn value_len(&self) -> usize {
        match self {
            ChunkRepr::Data(d) => 12 + d.payload.len(),
            ChunkRepr::Init(i) | ChunkRepr::InitAck(i) => 16 + tlv_unpadded_len(i.params),
            ChunkRepr::Sack(s) => 12 + 4 * s.num_gaps() + 4 * s.num_dups(),
            ChunkRepr::Heartbeat { info } | ChunkRepr::HeartbeatAck { info } => tlv_unpadded_len(info),
            ChunkRepr::Abort { causes, .. } | ChunkRepr::Error { causes } => tlv_unpadded_len(causes),
            ChunkRepr::Shutdown { .. } => 4,
            ChunkRepr::ShutdownAck | ChunkRepr::ShutdownComplete { .. } | ChunkRepr::CookieAck => 0,
            ChunkRepr::CookieEcho { cookie } => cookie.len(),
            ChunkRepr::ForwardTsn { streams, .. } => 4 + streams.len(),
            ChunkRepr::SndbufAdv { value, .. } => if value.is_some() { 4 } else { 0 },
            ChunkRepr::Unknown { body, .. } => body.len(),
        }
    }

    /// The length field value (header + value, no padding).
    pub fn chunk_len(&self) -> usize {
        CHUNK_HEADER_LEN + self.value_len()
    }

    /// Bytes this chunk occupies on the wire, padded to 4.
    pub fn buffer_len(&self) -> usize {
        pad4(self.chunk_len())
    }

    /// Writes the chunk, padding included, into the front of `c` (which must hold
    /// `buffer_len()` bytes).
    pub fn emit<B: AsRef<[u8]> + AsMut<[u8]>>(&self, c: &mut Chunk<B>) {
        let len = self.chunk_len();
        c.set_header(self.kind(), self.flags(), len as u16);
        let pad_end = self.buffer_len();
        let b = c.buffer.as_mut();
        b[len..pad_end].fill(0);
        let v = &mut b[CHUNK_HEADER_LEN..len];
        match self {
            ChunkRepr::Data(d) => {
                put32(v, 0, d.tsn.0);
                put16(v, 4, d.stream);
                put16(v, 6, d.ssn);
                put32(v, 8, d.ppid);
                v[12..].copy_from_slice(d.payload);
            }
            ChunkRepr::Init(i) | ChunkRepr::InitAck(i) => i.emit(v),
            ChunkRepr::Sack(s) => {
                put32(v, 0, s.cum_tsn.0);
                put32(v, 4, s.a_rwnd);
                put16(v, 8, s.num_gaps() as u16);
                put16(v, 10, s.num_dups() as u16);
                let mut at = 12;
                for g in s.gap_blocks() {
                    put16(v, at, g.start);
                    put16(v, at + 2, g.end);
                    at += 4;
                }
                for d in s.dup_tsns() {
                    put32(v, at, d.0);
                    at += 4;
                }
            }
            ChunkRepr::Heartbeat { info } | ChunkRepr::HeartbeatAck { info } => v.copy_from_slice(&info[..v.len()]),
            ChunkRepr::Abort { causes, .. } | ChunkRepr::Error { causes } => v.copy_from_slice(&causes[..v.len()]),
            ChunkRepr::Shutdown { cum_tsn } => put32(v, 0, cum_tsn.0),
            ChunkRepr::ShutdownAck | ChunkRepr::ShutdownComplete { .. } | ChunkRepr::CookieAck => {}
            ChunkRepr::CookieEcho { cookie } => v.copy_from_slice(cookie),
            ChunkRepr::ForwardTsn { new_cum_tsn, streams } => {
                put32(v, 0, new_cum_tsn.0);
                v[4..].copy_from_slice(streams);
            }
            ChunkRepr::SndbufAdv { value, .. } => {
                if let Some(x) = value {
                    put32(v, 0, *x);
                }
            }
            ChunkRepr::Unknown { body, .. } => v.copy_from_slice(body),
        }
    }

    /// Emits into `out[at..]` and returns the new end; false if it does not fit.
    pub fn emit_at(&self, out: &mut [u8], at: &mut usize) -> bool {
        let n = self.buffer_len();
        if *at + n > out.len() || self.chunk_len() > u16::MAX as usize {
            return false;
        }
        self.emit(&mut Chunk::new_unchecked(&mut out[*at..*at + n]));
        *at += n;
        true
    }
}

impl fmt::Display for ChunkRepr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChunkRepr::Data(d) => write!(f, "DATA tsn {} sid {} ssn {} flags {:#x} len {}", d.tsn, d.stream, d.ssn, d.flags, d.payload.len()),
            ChunkRepr::Init(i) => write!(f, "INIT tag {:#x} rwnd {} os {} mis {} itsn {}", i.init_tag, i.a_rwnd, i.os, i.mis, i.initial_tsn),
            ChunkRepr::InitAck(i) => write!(f, "INIT-ACK tag {:#x} rwnd {} os {} mis {} itsn {}", i.init_tag, i.a_rwnd, i.os, i.mis, i.initial_tsn),
            ChunkRepr::Sack(s) => write!(f, "SACK cum {} rwnd {} gaps {} dups {}", s.cum_tsn, s.a_rwnd, s.num_gaps(), s.num_dups()),
            ChunkRepr::Heartbeat { .. } => write!(f, "HEARTBEAT"),
            ChunkRepr::HeartbeatAck { .. } => write!(f, "HEARTBEAT-ACK"),
            ChunkRepr::Abort { t_bit, .. } => write!(f, "ABORT t={}", *t_bit as u8),
            ChunkRepr::Shutdown { cum_tsn } => write!(f, "SHUTDOWN cum {}", cum_tsn),
            ChunkRepr::ShutdownAck => write!(f, "SHUTDOWN-ACK"),
            ChunkRepr::ShutdownComplete { .. } => write!(f, "SHUTDOWN-COMPLETE"),
            ChunkRepr::Error { .. } => write!(f, "ERROR"),
            ChunkRepr::CookieEcho { cookie } => write!(f, "COOKIE-ECHO len {}", cookie.len()),
            ChunkRepr::CookieAck => write!(f, "COOKIE-ACK"),
            ChunkRepr::ForwardTsn { new_cum_tsn, .. } => write!(f, "FORWARD-TSN {}", new_cum_tsn),
            ChunkRepr::SndbufAdv { flags, value } => write!(f, "SNDBUF-ADV flags {} value {:?}", flags, value),
            ChunkRepr::Unknown { kind, flags, body } => write!(f, "type {} flags {:#x} len {}", kind, flags, body.len()),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use wirelab_core::Rng;

    fn roundtrip(r: &ChunkRepr<'_>) -> Vec<u8> {
        let mut buf = vec![0xAAu8; r.buffer_len()];
        r.emit(&mut Chunk::new_unchecked(&mut buf[..]));
        let c = Chunk::new_checked(&buf[..]).unwrap();
        let p = ChunkRepr::parse(&c).unwrap();
        assert_eq!(&p, r);
        assert_eq!(buf.len() % 4, 0);
        buf
    }

    #[test]
    fn tsn_serial_arithmetic() {
        let a = Tsn(u32::MAX - 1);
        let b = a.add(3); // wraps to 1
        assert_eq!(b, Tsn(1));
        assert!(a < b);
        assert!(b > a);
        assert_eq!(b.diff(a), 3);
        assert_eq!(a.diff(b), -3);
        assert!(Tsn(5) <= Tsn(5));
        assert!(Tsn(0x8000_0000) > Tsn(1));
    }

    #[test]
    fn data_bytes_and_padding() {
        let d = ChunkRepr::Data(DataRepr { flags: data_flags::B | data_flags::E, tsn: Tsn(0x01020304), stream: 7, ssn: 9, ppid: 0x11, payload: b"hello" });
        let b = roundtrip(&d);
        assert_eq!(b.len(), 24);
        assert_eq!(&b[..16], &[0, 3, 0, 21, 1, 2, 3, 4, 0, 7, 0, 9, 0, 0, 0, 0x11]);
        assert_eq!(&b[16..21], b"hello");
        assert_eq!(&b[21..], &[0, 0, 0]);
    }

    #[test]
    fn data_empty_payload_rejected() {
        let b = [0u8, 3, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0];
        let c = Chunk::new_checked(&b[..]).unwrap();
        assert_eq!(ChunkRepr::parse(&c), Err(WireError::Malformed));
    }

    #[test]
    fn init_with_params() {
        let mut pb = [0u8; 64];
        let mut at = 0;
        assert!(ParamRepr::Ipv4Addr(Ipv4Addr::new(10, 0, 0, 1)).emit(&mut pb, &mut at));
        assert!(ParamRepr::SupportedAddrTypes(&[0, 5]).emit(&mut pb, &mut at));
        assert!(ParamRepr::CookiePreservative(1000).emit(&mut pb, &mut at));
        assert!(ParamRepr::StateCookie(b"abcde").emit(&mut pb, &mut at));
        assert!(ParamRepr::Unknown { kind: 0x8123, value: b"x" }.emit(&mut pb, &mut at));
        let i = InitRepr { init_tag: 0xdeadbeef, a_rwnd: 106496, os: 10, mis: 65535, initial_tsn: Tsn(42), params: &pb[..at] };
        roundtrip(&ChunkRepr::Init(i));
        let b = roundtrip(&ChunkRepr::InitAck(i));
        let c = Chunk::new_checked(&b[..]).unwrap();
        let ChunkRepr::InitAck(p) = ChunkRepr::parse(&c).unwrap() else { panic!() };
        let ps: Vec<ParamRepr> = p.params().map(|t| ParamRepr::parse(&t.unwrap()).unwrap()).collect();
        assert_eq!(
            ps,
            vec![
                ParamRepr::Ipv4Addr(Ipv4Addr::new(10, 0, 0, 1)),
                ParamRepr::SupportedAddrTypes(&[0, 5]),
                ParamRepr::CookiePreservative(1000),
                ParamRepr::StateCookie(b"abcde"),
                ParamRepr::Unknown { kind: 0x8123, value: b"x" },
            ]
        );
        assert_eq!(UnknownAction::for_param(0x8123), UnknownAction::Skip);
    }

    #[test]
    fn init_zero_tag_is_malformed() {
        let i = InitRepr { init_tag: 0, a_rwnd: 1, os: 1, mis: 1, initial_tsn: Tsn(1), params: &[] };
        let mut buf = vec![0u8; ChunkRepr::Init(i).buffer_len()];
        ChunkRepr::Init(i).emit(&mut Chunk::new_unchecked(&mut buf[..]));
        assert_eq!(ChunkRepr::parse(&Chunk::new_checked(&buf[..]).unwrap()), Err(WireError::Malformed));
    }

    #[test]
    fn sack_gaps_and_dups() {
        let gaps = [GapBlock { start: 2, end: 3 }, GapBlock { start: 6, end: 6 }];
        let dups = [Tsn(7), Tsn(9)];
        let s = ChunkRepr::Sack(SackRepr { flags: 0x80, cum_tsn: Tsn(100), a_rwnd: 5000, gaps: List::Items(&gaps), dups: List::Items(&dups) });
        let b = roundtrip(&s);
        assert_eq!(b.len(), 16 + 8 + 8);
        assert_eq!(b[1], 0x80, "the DAC flag travels in the chunk flags");
        assert_eq!(&b[12..16], &[0, 2, 0, 2]);
        // count fields larger than the chunk → truncated
        let mut bad = b.clone();
        bad[13] = 9;
        assert_eq!(ChunkRepr::parse(&Chunk::new_checked(&bad[..]).unwrap()), Err(WireError::Truncated));
    }

    #[test]
    fn control_chunks_roundtrip() {
        let mut hb = [0u8; 16];
        let mut at = 0;
        put_tlv(&mut hb, &mut at, param::HEARTBEAT_INFO, &[1, 2, 3, 4, 5, 6, 7, 8]);
        let mut cause = [0u8; 8];
        let mut ca = 0;
        put_tlv(&mut cause, &mut ca, cause::USER_ABORT, &[]);
        for r in [
            ChunkRepr::Heartbeat { info: &hb[..at] },
            ChunkRepr::HeartbeatAck { info: &hb[..at] },
            ChunkRepr::Abort { t_bit: true, causes: &cause[..ca] },
            ChunkRepr::Abort { t_bit: false, causes: &[] },
            ChunkRepr::Shutdown { cum_tsn: Tsn(77) },
            ChunkRepr::ShutdownAck,
            ChunkRepr::ShutdownComplete { t_bit: true },
            ChunkRepr::Error { causes: &cause[..ca] },
            ChunkRepr::CookieEcho { cookie: b"cookie!" },
            ChunkRepr::CookieAck,
            ChunkRepr::ForwardTsn { new_cum_tsn: Tsn(9), streams: &[0, 1, 0, 2] },
        ] {
            roundtrip(&r);
        }
    }

    #[test]
    fn sndbuf_adv_variants() {
        let v1 = ChunkRepr::SndbufAdv { flags: 0, value: Some(123_456) };
        let b = roundtrip(&v1);
        assert_eq!(b, vec![0x96, 0, 0, 8, 0, 1, 0xe2, 0x40]);
        let v4 = ChunkRepr::SndbufAdv { flags: 7, value: None };
        assert_eq!(roundtrip(&v4), vec![0x96, 7, 0, 4]);
        assert_eq!(UnknownAction::for_chunk(kind::SNDBUF_ADV), UnknownAction::Skip);
    }

    #[test]
    fn unknown_roundtrips_bytes() {
        let raw = [0xC5u8, 0x3C, 0, 7, 1, 2, 3, 0];
        let c = Chunk::new_checked(&raw[..]).unwrap();
        let r = ChunkRepr::parse(&c).unwrap();
        assert_eq!(r, ChunkRepr::Unknown { kind: 0xC5, flags: 0x3C, body: &[1, 2, 3] });
        let mut out = [0xffu8; 8];
        r.emit(&mut Chunk::new_unchecked(&mut out[..]));
        assert_eq!(out, raw);
        assert_eq!(UnknownAction::for_chunk(0xC5), UnknownAction::SkipReport);
        assert_eq!(UnknownAction::for_chunk(0x05 | 0x40), UnknownAction::DiscardReport);
        assert_eq!(UnknownAction::for_chunk(0x3f), UnknownAction::Discard);
    }

    #[test]
    fn chunk_length_checks() {
        assert_eq!(Chunk::new_checked(&[0u8, 0, 0][..]).unwrap_err(), WireError::Truncated);
        assert_eq!(Chunk::new_checked(&[0u8, 0, 0, 3][..]).unwrap_err(), WireError::Malformed);
        assert_eq!(Chunk::new_checked(&[0u8, 0, 0, 9, 0, 0, 0, 0][..]).unwrap_err(), WireError::Truncated);
        // last chunk without padding is accepted
        assert!(Chunk::new_checked(&[0xC0u8, 0, 0, 5, 1][..]).is_ok());
    }

    #[test]
    fn packet_header_and_checksum() {
        let mut buf = [0u8; 12 + 4];
        SctpPacket::new_unchecked(&mut buf[..]).set_header(5000, 80, 0x11223344);
        ChunkRepr::CookieAck.emit(&mut Chunk::new_unchecked(&mut buf[12..]));
        let mut p = SctpPacket::new_unchecked(&mut buf[..]);
        p.fill_checksum();
        let p = SctpPacket::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!((p.src_port(), p.dst_port(), p.vtag()), (5000, 80, 0x11223344));
        let chunks: Vec<_> = p.chunks().map(|c| c.unwrap().kind()).collect();
        assert_eq!(chunks, vec![kind::COOKIE_ACK]);
        assert!(format!("{}", p).contains("COOKIE-ACK"));
    }

    /// Decodes everything we can out of `bytes`, touching every accessor; must not panic.
    fn decode_all(bytes: &[u8]) -> usize {
        let mut n = 0;
        let Ok(p) = SctpPacket::new_checked(bytes) else { return 0 };
        let _ = p.verify_checksum();
        let _ = format!("{}", p);
        for c in p.chunks() {
            let Ok(c) = c else { break };
            let _ = (c.kind(), c.flags(), c.value(), c.padded_len());
            if let Ok(r) = ChunkRepr::parse(&c) {
                n += 1;
                // re-emit must reproduce the chunk (flags only where the type defines them)
                let mut out = vec![0u8; r.buffer_len()];
                r.emit(&mut Chunk::new_unchecked(&mut out[..]));
                assert_eq!(out[0], c.bytes()[0]);
                if r.chunk_len() == c.bytes().len() {
                    assert_eq!(&out[2..r.chunk_len()], &c.bytes()[2..]);
                } else {
                    // chunks without a value ignore trailing bytes (lenient, as Linux);
                    // TLV lists drop padding bytes counted inside the length field
                    assert!(r.chunk_len() < c.bytes().len(), "{r:?}");
                    assert!(
                        matches!(r, ChunkRepr::ShutdownAck | ChunkRepr::CookieAck | ChunkRepr::ShutdownComplete { .. } | ChunkRepr::Init(_) | ChunkRepr::InitAck(_) | ChunkRepr::Heartbeat { .. } | ChunkRepr::HeartbeatAck { .. } | ChunkRepr::Abort { .. } | ChunkRepr::Error { .. }),
                        "{r:?}"
                    );
                }
                assert_eq!(ChunkRepr::parse(&Chunk::new_checked(&out[..]).unwrap()).unwrap(), r);
                match r {
                    ChunkRepr::Init(i) | ChunkRepr::InitAck(i) => {
                        for t in i.params().flatten() {
                            let _ = ParamRepr::parse(&t);
                        }
                    }
                    ChunkRepr::Sack(s) => {
                        let _ = s.gap_blocks().count() + s.dup_tsns().count();
                    }
                    ChunkRepr::Abort { causes, .. } | ChunkRepr::Error { causes } => {
                        let _ = TlvIter::new(causes).count();
                    }
                    _ => {}
                }
            }
        }
        n
    }

    #[test]
    fn decoder_never_panics_on_random_or_mutated_input() {
        let mut rng = Rng::from_seed(0x5c7d);
        // a valid multi-chunk seed packet to mutate
        let mut seed = vec![0u8; 12];
        SctpPacket::new_unchecked(&mut seed[..]).set_header(1, 2, 3);
        let mut pb = [0u8; 32];
        let mut at = 0;
        ParamRepr::Ipv4Addr(Ipv4Addr::new(1, 2, 3, 4)).emit(&mut pb, &mut at);
        ParamRepr::StateCookie(b"ck").emit(&mut pb, &mut at);
        let gaps = [GapBlock { start: 2, end: 4 }];
        for r in [
            ChunkRepr::SndbufAdv { flags: 3, value: None },
            ChunkRepr::InitAck(InitRepr { init_tag: 9, a_rwnd: 1, os: 1, mis: 1, initial_tsn: Tsn(1), params: &pb[..at] }),
            ChunkRepr::Sack(SackRepr { flags: 0, cum_tsn: Tsn(4), a_rwnd: 9, gaps: List::Items(&gaps), dups: List::Items(&[Tsn(2)]) }),
            ChunkRepr::Data(DataRepr { flags: 3, tsn: Tsn(1), stream: 0, ssn: 0, ppid: 0, payload: b"abcdefg" }),
        ] {
            let mut c = vec![0u8; r.buffer_len()];
            r.emit(&mut Chunk::new_unchecked(&mut c[..]));
            seed.extend_from_slice(&c);
        }
        assert_eq!(decode_all(&seed), 4);
        let mut parsed = 0;
        for i in 0..20_000 {
            let buf: Vec<u8> = if i % 2 == 0 {
                let n = rng.below(200) as usize;
                (0..n).map(|_| rng.next_u32() as u8).collect()
            } else {
                let mut b = seed.clone();
                for _ in 0..1 + rng.below(4) {
                    if b.is_empty() {
                        break;
                    }
                    let k = rng.below(b.len() as u64) as usize;
                    match rng.below(3) {
                        0 => b[k] = rng.next_u32() as u8,
                        1 => b[k] ^= 1 << rng.below(8),
                        _ => b.truncate(k),
                    }
                }
                b
            };
            parsed += decode_all(&buf);
        }
        assert!(parsed > 1000, "mutations should still decode often: {parsed}");
    }
}
