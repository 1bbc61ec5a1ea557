//! ICMPv4 (RFC 792): echo request/reply, destination unreachable and time exceeded.
//!
//! The checksum covers the whole ICMP message (no pseudo-header). Error messages quote the
//! start of the offending datagram. RFC 792 asks for its IP header plus 64 bits; Linux
//! `__icmp_send()` (net/ipv4/icmp.c) quotes as much as fits in a 576-byte reply. Both are
//! offered by [`Quote`]; the default is the RFC's.
use crate::{checksum, WireError};
use core::fmt;
use std::net::Ipv4Addr;

mod field {
    use core::ops::Range;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Range<usize> = 2..4;
    // echo
    pub const ECHO_IDENT: Range<usize> = 4..6;
    pub const ECHO_SEQNO: Range<usize> = 6..8;
    // destination unreachable, code 4 (RFC 1191)
    pub const MTU: Range<usize> = 6..8;
    pub const DATA: usize = 8;
}

/// Length of the ICMP header (type, code, checksum and the 4-byte rest-of-header).
pub const HEADER_LEN: usize = 8;

/// ICMP message types wirelab understands (Linux `ICMP_*` in include/uapi/linux/icmp.h).
pub mod msg_type {
    /// `ICMP_ECHOREPLY`.
    pub const ECHO_REPLY: u8 = 0;
    /// `ICMP_DEST_UNREACH`.
    pub const DST_UNREACHABLE: u8 = 3;
    /// `ICMP_ECHO`.
    pub const ECHO_REQUEST: u8 = 8;
    /// `ICMP_TIME_EXCEEDED`.
    pub const TIME_EXCEEDED: u8 = 11;
}

/// Destination-unreachable codes (RFC 792, RFC 1122, RFC 1812; Linux names in comments).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum UnreachCode {
    /// `ICMP_NET_UNREACH`.
    NetUnreachable = 0,
    /// `ICMP_HOST_UNREACH`.
    HostUnreachable = 1,
    /// `ICMP_PROT_UNREACH`: no handler for the IP protocol.
    ProtoUnreachable = 2,
    /// `ICMP_PORT_UNREACH`: no socket on the UDP port.
    PortUnreachable = 3,
    /// `ICMP_FRAG_NEEDED`: DF set and the datagram exceeds the next-hop MTU.
    FragRequired = 4,
    /// `ICMP_SR_FAILED`.
    SrcRouteFailed = 5,
    /// `ICMP_NET_UNKNOWN`.
    DstNetUnknown = 6,
    /// `ICMP_HOST_UNKNOWN`.
    DstHostUnknown = 7,
    /// `ICMP_HOST_ISOLATED`.
    SrcHostIsolated = 8,
    /// `ICMP_NET_ANO`.
    NetProhibited = 9,
    /// `ICMP_HOST_ANO`.
    HostProhibited = 10,
    /// `ICMP_NET_UNR_TOS`.
    NetUnreachToS = 11,
    /// `ICMP_HOST_UNR_TOS`.
    HostUnreachToS = 12,
    /// `ICMP_PKT_FILTERED`.
    CommProhibited = 13,
    /// `ICMP_PREC_VIOLATION`.
    HostPrecedViol = 14,
    /// `ICMP_PREC_CUTOFF`.
    PrecedCutoff = 15,
}

impl UnreachCode {
    /// The code for a byte, or `None` above 15 (`NR_ICMP_UNREACH`).
    pub fn from_u8(v: u8) -> Option<Self> {
        use UnreachCode::*;
        Some(match v {
            0 => NetUnreachable,
            1 => HostUnreachable,
            2 => ProtoUnreachable,
            3 => PortUnreachable,
            4 => FragRequired,
            5 => SrcRouteFailed,
            6 => DstNetUnknown,
            7 => DstHostUnknown,
            8 => SrcHostIsolated,
            9 => NetProhibited,
            10 => HostProhibited,
            11 => NetUnreachToS,
            12 => HostUnreachToS,
            13 => CommProhibited,
            14 => HostPrecedViol,
            15 => PrecedCutoff,
            _ => return None,
        })
    }
}

/// Time-exceeded codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum TimeExceededCode {
    /// `ICMP_EXC_TTL`: TTL reached zero in transit.
    TtlExpired = 0,
    /// `ICMP_EXC_FRAGTIME`: fragment reassembly timed out.
    FragExpired = 1,
}

/// How much of an offending datagram an error message quotes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Quote {
    /// RFC 792: the IP header (with options) plus the first 8 payload bytes.
    #[default]
    Rfc792,
    /// Linux `__icmp_send()`: as much as keeps the reply within 576 bytes (548 quoted bytes
    /// with a 20-byte outer header); used when mirroring Linux byte-for-byte matters.
    Linux,
}

impl Quote {
    /// The prefix of `original` (an IPv4 datagram, possibly truncated) to quote.
    pub fn apply(self, original: &[u8]) -> &[u8] {
        let n = match self {
            Quote::Rfc792 => {
                let ihl = original.first().map_or(0, |b| (b & 0x0f) as usize * 4);
                ihl.max(crate::ipv4::HEADER_LEN) + 8
            }
            // 576 - sizeof(iphdr) - sizeof(icmphdr)
            Quote::Linux => 576 - crate::ipv4::HEADER_LEN - HEADER_LEN,
        };
        &original[..n.min(original.len())]
    }
}

/// A read/write view of an ICMPv4 message. The message is the whole IP payload: ICMP has
/// no length field of its own.
#[derive(Debug, Clone)]
pub struct IcmpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> IcmpPacket<T> {
    /// Wraps without checking; accessors may panic below 8 bytes.
    pub const fn new_unchecked(buffer: T) -> Self {
        IcmpPacket { buffer }
    }
    /// Wraps after checking the 8-byte header is present; afterwards no accessor panics.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }
    /// `Truncated` below 8 bytes.
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    }
    /// Consumes the view.
    pub fn into_inner(self) -> T {
        self.buffer
    }
    /// Type byte.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }
    /// Code byte.
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::CHECKSUM];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Echo identifier (bytes 4..6).
    pub fn echo_ident(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::ECHO_IDENT];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Echo sequence number (bytes 6..8).
    pub fn echo_seq_no(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::ECHO_SEQNO];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Next-hop MTU of a fragmentation-needed message (bytes 6..8, RFC 1191).
    pub fn next_hop_mtu(&self) -> u16 {
        let b = &self.buffer.as_ref()[field::MTU];
        u16::from_be_bytes([b[0], b[1]])
    }
    /// Bytes after the 8-byte header: echo data or the quoted datagram.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[field::DATA..]
    }
    /// True if the checksum over the whole message verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::finish(checksum::sum(self.buffer.as_ref())) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpPacket<T> {
    /// Sets the type byte.
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::TYPE] = v;
    }
    /// Sets the code byte.
    pub fn set_msg_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }
    /// Sets the checksum field verbatim.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets bytes 4..8 (rest of header) verbatim.
    pub fn set_rest_of_header(&mut self, v: [u8; 4]) {
        self.buffer.as_mut()[4..8].copy_from_slice(&v);
    }
    /// Mutable bytes after the header.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA..]
    }
    /// Computes and stores the checksum over the whole buffer.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::finish(checksum::sum(self.buffer.as_ref()));
        self.set_checksum(c);
    }
}

impl<T: AsRef<[u8]>> fmt::Display for IcmpPacket<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return write!(f, "ICMP (truncated, {len} bytes)");
        }
        match self.msg_type() {
            msg_type::ECHO_REQUEST | msg_type::ECHO_REPLY => write!(
                f,
                "ICMP echo {} id={} seq={} len={}",
                if self.msg_type() == msg_type::ECHO_REQUEST {
                    "request"
                } else {
                    "reply"
                },
                self.echo_ident(),
                self.echo_seq_no(),
                len - HEADER_LEN
            ),
            t => write!(
                f,
                "ICMP type={t} code={} len={}",
                self.msg_code(),
                len - HEADER_LEN
            ),
        }
    }
}

/// A validated ICMPv4 message. Data and quoted datagrams borrow from the parsed buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcmpRepr<'a> {
    /// Echo request (type 8).
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Echo data.
        data: &'a [u8],
    },
    /// Echo reply (type 0).
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// Echo data.
        data: &'a [u8],
    },
    /// Destination unreachable (type 3).
    DstUnreachable {
        /// Why.
        code: UnreachCode,
        /// Next-hop MTU for [`UnreachCode::FragRequired`] (RFC 1191), else 0.
        next_hop_mtu: u16,
        /// The quoted start of the offending datagram (see [`Quote`]).
        original: &'a [u8],
    },
    /// Time exceeded (type 11).
    TimeExceeded {
        /// Why.
        code: TimeExceededCode,
        /// The quoted start of the offending datagram.
        original: &'a [u8],
    },
}

impl<'a> IcmpRepr<'a> {
    /// Parses a message after verifying its checksum. Unknown types or codes are
    /// `Unsupported`; an error message quoting less than a minimal IPv4 header is
    /// `Truncated` (Linux `icmp_unreach()` drops those too: `pskb_may_pull(skb,
    /// sizeof(struct iphdr))`).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(p: &IcmpPacket<&'a T>) -> Result<Self, WireError> {
        p.check_len()?;
        if !p.verify_checksum() {
            return Err(WireError::Checksum);
        }
        Self::parse_unverified(p)
    }

    /// Parses without verifying the checksum (for analysing captures); all other checks
    /// are those of [`parse`](Self::parse).
    pub fn parse_unverified<T: AsRef<[u8]> + ?Sized>(
        p: &IcmpPacket<&'a T>,
    ) -> Result<Self, WireError> {
        p.check_len()?;
        let data: &'a [u8] = &p.buffer.as_ref()[HEADER_LEN..];
        match (p.msg_type(), p.msg_code()) {
            (msg_type::ECHO_REQUEST, 0) => Ok(IcmpRepr::EchoRequest {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
                data,
            }),
            (msg_type::ECHO_REPLY, 0) => Ok(IcmpRepr::EchoReply {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
                data,
            }),
            (msg_type::DST_UNREACHABLE, c) => {
                let code = UnreachCode::from_u8(c).ok_or(WireError::Unsupported)?;
                if data.len() < crate::ipv4::HEADER_LEN {
                    return Err(WireError::Truncated);
                }
                let next_hop_mtu = if code == UnreachCode::FragRequired {
                    p.next_hop_mtu()
                } else {
                    0
                };
                Ok(IcmpRepr::DstUnreachable {
                    code,
                    next_hop_mtu,
                    original: data,
                })
            }
            (msg_type::TIME_EXCEEDED, c) => {
                let code = match c {
                    0 => TimeExceededCode::TtlExpired,
                    1 => TimeExceededCode::FragExpired,
                    _ => return Err(WireError::Unsupported),
                };
                if data.len() < crate::ipv4::HEADER_LEN {
                    return Err(WireError::Truncated);
                }
                Ok(IcmpRepr::TimeExceeded {
                    code,
                    original: data,
                })
            }
            _ => Err(WireError::Unsupported),
        }
    }

    /// A destination-unreachable message about `original` (the offending IPv4 datagram),
    /// quoting it as `quote` says.
    pub fn dst_unreachable(code: UnreachCode, original: &'a [u8], quote: Quote) -> Self {
        IcmpRepr::DstUnreachable {
            code,
            next_hop_mtu: 0,
            original: quote.apply(original),
        }
    }

    /// Message length: 8-byte header plus data or quote.
    pub fn buffer_len(&self) -> usize {
        HEADER_LEN
            + match self {
                IcmpRepr::EchoRequest { data, .. } | IcmpRepr::EchoReply { data, .. } => data.len(),
                IcmpRepr::DstUnreachable { original, .. }
                | IcmpRepr::TimeExceeded { original, .. } => original.len(),
            }
    }

    /// Writes the whole message, data included, with checksum into `buf[..buffer_len()]`.
    /// Panics if `buf` is shorter than `buffer_len()` (a caller bug).
    pub fn emit(&self, buf: &mut [u8]) {
        let mut p = IcmpPacket::new_unchecked(&mut buf[..self.buffer_len()]);
        let (t, c, rest, body): (u8, u8, [u8; 4], &[u8]) = match *self {
            IcmpRepr::EchoRequest {
                ident,
                seq_no,
                data,
            } => (msg_type::ECHO_REQUEST, 0, echo_rest(ident, seq_no), data),
            IcmpRepr::EchoReply {
                ident,
                seq_no,
                data,
            } => (msg_type::ECHO_REPLY, 0, echo_rest(ident, seq_no), data),
            IcmpRepr::DstUnreachable {
                code,
                next_hop_mtu,
                original,
            } => {
                let m = next_hop_mtu.to_be_bytes();
                (
                    msg_type::DST_UNREACHABLE,
                    code as u8,
                    [0, 0, m[0], m[1]],
                    original,
                )
            }
            IcmpRepr::TimeExceeded { code, original } => {
                (msg_type::TIME_EXCEEDED, code as u8, [0; 4], original)
            }
        };
        p.set_msg_type(t);
        p.set_msg_code(c);
        p.set_rest_of_header(rest);
        p.data_mut().copy_from_slice(body);
        p.fill_checksum();
    }
}

fn echo_rest(ident: u16, seq: u16) -> [u8; 4] {
    let a = ident.to_be_bytes();
    let b = seq.to_be_bytes();
    [a[0], a[1], b[0], b[1]]
}

/// The fields of a quoted datagram an error message refers to, for delivering the error to
/// the socket that sent it (Linux `icmp_unreach()` → `udp_err()`/`tcp_v4_err()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quoted<'a> {
    /// Source address of the offending datagram (our side).
    pub src: Ipv4Addr,
    /// Its destination.
    pub dst: Ipv4Addr,
    /// Its protocol.
    pub protocol: u8,
    /// The quoted transport bytes after its IP header (usually 8: ports, and for TCP the
    /// sequence number; for SCTP the verification tag).
    pub l4: &'a [u8],
}

impl<'a> Quoted<'a> {
    /// Decodes a quote. The inner header's checksum and total length are not checked:
    /// the quote is truncated and routers may have changed fields. `Truncated` if less than
    /// the header is present, `Malformed` if it is not IPv4.
    pub fn parse(original: &'a [u8]) -> Result<Self, WireError> {
        if original.len() < crate::ipv4::HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let ihl = (original[0] & 0x0f) as usize * 4;
        if original[0] >> 4 != 4 || ihl < crate::ipv4::HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if original.len() < ihl {
            return Err(WireError::Truncated);
        }
        let a = |i: usize| {
            Ipv4Addr::new(
                original[i],
                original[i + 1],
                original[i + 2],
                original[i + 3],
            )
        };
        Ok(Quoted {
            src: a(12),
            dst: a(16),
            protocol: original[9],
            l4: &original[ihl..],
        })
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::ipv4::Ipv4Repr;

    // Echo request id=0x1234 seq=1 data "hi": 0800 + 1234 + 0001 + 6869 = 0x829e -> 0x7d61
    static ECHO: [u8; 10] = [0x08, 0x00, 0x7d, 0x61, 0x12, 0x34, 0x00, 0x01, 0x68, 0x69];

    #[test]
    fn test_deconstruct_echo() {
        let p = IcmpPacket::new_checked(&ECHO[..]).unwrap();
        assert_eq!(p.msg_type(), msg_type::ECHO_REQUEST);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.echo_ident(), 0x1234);
        assert_eq!(p.echo_seq_no(), 1);
        assert_eq!(p.data(), b"hi");
        assert!(p.verify_checksum());
        assert_eq!(p.to_string(), "ICMP echo request id=4660 seq=1 len=2");
    }

    #[test]
    fn test_construct_echo() {
        let r = IcmpRepr::EchoRequest {
            ident: 0x1234,
            seq_no: 1,
            data: b"hi",
        };
        let mut b = [0u8; 10];
        assert_eq!(r.buffer_len(), 10);
        r.emit(&mut b);
        assert_eq!(b, ECHO);
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(IcmpRepr::parse(&p).unwrap(), r);
    }

    #[test]
    fn echo_reply_roundtrip() {
        let r = IcmpRepr::EchoReply {
            ident: 7,
            seq_no: 65535,
            data: &[1, 2, 3],
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b);
        assert_eq!(b[0], 0);
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(IcmpRepr::parse(&p).unwrap(), r);
    }

    fn offending() -> Vec<u8> {
        let ip = Ipv4Repr {
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 1, 2),
            protocol: crate::ip_proto::UDP,
            payload_len: 100,
            ttl: 64,
            tos: 0,
            ident: 9,
            dont_frag: true,
        };
        let mut b = vec![0u8; 120];
        ip.emit(&mut b);
        // UDP header 40000 -> 9999
        b[20..28].copy_from_slice(&[0x9c, 0x40, 0x27, 0x0f, 0x00, 0x64, 0x00, 0x00]);
        for (i, x) in b[28..].iter_mut().enumerate() {
            *x = i as u8;
        }
        b
    }

    #[test]
    fn port_unreachable_quotes_header_plus_8() {
        let orig = offending();
        let r = IcmpRepr::dst_unreachable(UnreachCode::PortUnreachable, &orig, Quote::Rfc792);
        assert_eq!(r.buffer_len(), 8 + 28);
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b);
        assert_eq!(&b[..2], &[3, 3]);
        assert_eq!(&b[8..], &orig[..28]);
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        let back = IcmpRepr::parse(&p).unwrap();
        assert_eq!(back, r);
        let IcmpRepr::DstUnreachable { original, .. } = back else {
            unreachable!()
        };
        let q = Quoted::parse(original).unwrap();
        assert_eq!(q.src, Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(q.dst, Ipv4Addr::new(10, 0, 1, 2));
        assert_eq!(q.protocol, crate::ip_proto::UDP);
        assert_eq!(q.l4, &[0x9c, 0x40, 0x27, 0x0f, 0x00, 0x64, 0x00, 0x00]);
    }

    #[test]
    fn proto_unreachable_and_linux_quote() {
        let orig = offending();
        let r = IcmpRepr::dst_unreachable(UnreachCode::ProtoUnreachable, &orig, Quote::Linux);
        // the datagram is short enough to be quoted whole
        assert_eq!(r.buffer_len(), 8 + 120);
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b);
        assert_eq!(b[1], 2);
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(IcmpRepr::parse(&p).unwrap(), r);
        let big = vec![0x45u8; 1500];
        assert_eq!(Quote::Linux.apply(&big).len(), 548);
        assert_eq!(Quote::Rfc792.apply(&big).len(), 28);
        assert_eq!(Quote::Rfc792.apply(&big[..10]).len(), 10);
    }

    #[test]
    fn frag_required_carries_mtu_and_time_exceeded() {
        let orig = offending();
        let r = IcmpRepr::DstUnreachable {
            code: UnreachCode::FragRequired,
            next_hop_mtu: 1400,
            original: &orig[..28],
        };
        let mut b = vec![0u8; r.buffer_len()];
        r.emit(&mut b);
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(p.next_hop_mtu(), 1400);
        assert_eq!(IcmpRepr::parse(&p).unwrap(), r);

        let t = IcmpRepr::TimeExceeded {
            code: TimeExceededCode::TtlExpired,
            original: &orig[..28],
        };
        let mut b = vec![0u8; t.buffer_len()];
        t.emit(&mut b);
        assert_eq!(b[0], 11);
        assert_eq!(
            IcmpRepr::parse(&IcmpPacket::new_checked(&b[..]).unwrap()).unwrap(),
            t
        );
    }

    #[test]
    fn bad_checksum_and_unknown() {
        let mut b = ECHO;
        b[9] ^= 1;
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(IcmpRepr::parse(&p).unwrap_err(), WireError::Checksum);
        let IcmpRepr::EchoRequest { data, .. } = IcmpRepr::parse_unverified(&p).unwrap() else {
            panic!("not an echo request")
        };
        assert_eq!(data, b"hh");
        // timestamp request (13) is valid ICMP but not modelled
        let mut b = [13u8, 0, 0, 0, 0, 0, 0, 0];
        IcmpPacket::new_unchecked(&mut b[..]).fill_checksum();
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(IcmpRepr::parse(&p).unwrap_err(), WireError::Unsupported);
        // unreachable code 16 does not exist
        let mut b = [3u8, 16, 0, 0, 0, 0, 0, 0];
        IcmpPacket::new_unchecked(&mut b[..]).fill_checksum();
        assert_eq!(
            IcmpRepr::parse(&IcmpPacket::new_checked(&b[..]).unwrap()).unwrap_err(),
            WireError::Unsupported
        );
    }

    #[test]
    fn test_truncated() {
        assert_eq!(
            IcmpPacket::new_checked(&ECHO[..7]).unwrap_err(),
            WireError::Truncated
        );
        // unreachable quoting only 10 bytes of a datagram
        let mut b = [0u8; 18];
        b[0] = 3;
        b[1] = 3;
        IcmpPacket::new_unchecked(&mut b[..]).fill_checksum();
        let p = IcmpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(IcmpRepr::parse(&p).unwrap_err(), WireError::Truncated);
        assert_eq!(
            Quoted::parse(&[0x45; 19]).unwrap_err(),
            WireError::Truncated
        );
        assert_eq!(
            Quoted::parse(&[0x46; 20]).unwrap_err(),
            WireError::Truncated
        );
        assert_eq!(
            Quoted::parse(&[0x65; 20]).unwrap_err(),
            WireError::Malformed
        );
        assert_eq!(
            Quoted::parse(&[0x44; 20]).unwrap_err(),
            WireError::Malformed
        );
    }
}
