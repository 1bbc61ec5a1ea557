//! Wire formats as zero-copy views and validated representations.
//!
//! Modelled on smoltcp's `wire` module. Each protocol has two layers:
//!
//! * a *Packet* view (`Ipv4Packet<T: AsRef<[u8]>>`) with one accessor per field. It judges
//!   nothing, so even malformed input can be inspected and logged. `new_checked` validates
//!   the length fields once; after it succeeds no accessor panics. `new_unchecked` is only
//!   for emitting into a buffer sized by the Repr's `buffer_len()`.
//! * a *Repr* (`Ipv4Repr`) that holds only valid states, with `parse(&Packet)`,
//!   `buffer_len()` and `emit(&mut Packet)`.
//!
//! **Contract:** no function in this crate panics on any input bytes; decoders return
//! [`WireError`] (captures: [`pcap::PcapError`]). Property tests
//! (`tests/decoders_no_panic.rs`) hold us to it. `emit` functions panic only on a buffer
//! shorter than `buffer_len()`, which is a caller bug, not input.
//!
//! Modules: [`ipv4`], [`udp`], [`icmp`] (echo, unreachable, time exceeded), [`ethernet`]
//! (capture framing and deterministic MACs), [`pcap`] (pcap/pcapng writers and reader),
//! [`checksum`] (RFC 1071), [`crc32c`] (SCTP).
//!
//! Emit a UDP datagram, then parse it back:
//!
//! ```
//! use std::net::Ipv4Addr;
//! use wirelab_wire::{ip_proto, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr};
//!
//! let (src, dst) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 1, 2));
//! let udp = UdpRepr { src_port: 4000, dst_port: 5000, payload_len: 5 };
//! let ip = Ipv4Repr { src, dst, protocol: ip_proto::UDP, payload_len: udp.buffer_len(),
//!                     ttl: 64, tos: 0, ident: 1, dont_frag: true };
//! let mut buf = vec![0u8; ip.buffer_len() + udp.buffer_len()];
//! ip.emit(&mut buf);
//! buf[28..].copy_from_slice(b"hello"); // payload first: the checksum covers it
//! udp.emit(&mut buf[20..], src, dst);
//!
//! let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
//! let ip2 = Ipv4Repr::parse(&p).unwrap();
//! let u = UdpPacket::new_checked(p.payload()).unwrap();
//! assert_eq!(UdpRepr::parse(&u, ip2.src, ip2.dst), Ok(udp));
//! assert_eq!(u.payload(), b"hello");
//! ```
#![warn(missing_docs)]

pub mod checksum;
pub mod crc32c;
pub mod ethernet;
pub mod icmp;
pub mod ipv4;
pub mod pcap;
pub mod udp;

pub use icmp::{IcmpPacket, IcmpRepr};
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use udp::{UdpPacket, UdpRepr};

/// Why bytes could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes than the header or a length field requires.
    Truncated,
    /// A field holds a value the protocol does not allow.
    Malformed,
    /// A checksum did not verify.
    Checksum,
    /// A valid but unsupported feature (e.g. IPv4 fragments).
    Unsupported,
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "truncated",
            WireError::Malformed => "malformed",
            WireError::Checksum => "bad checksum",
            WireError::Unsupported => "unsupported",
        })
    }
}
impl std::error::Error for WireError {}

/// IP protocol numbers.
pub mod ip_proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// SCTP.
    pub const SCTP: u8 = 132;
}
