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
//! [`WireError`]. Fuzz and property tests hold us to it.
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
