//! Packet captures: classic pcap and pcapng writers, and a reader for both.
//!
//! * [`PcapWriter`] writes classic pcap with nanosecond timestamps (magic `0xa1b23c4d`),
//!   one link type for the whole file. Good for single-link golden files.
//! * [`PcapngWriter`] writes pcapng with one Interface Description Block per interface
//!   (name, description, `if_tsresol` = 9), so a multihomed SCTP capture keeps its paths
//!   apart in Wireshark (`frame.interface_name`).
//! * [`Reader`] / [`read_file`] read what tcpdump, dumpcap, Wireshark and these writers
//!   produce: classic pcap (µs and ns magics, either byte order) and pcapng (SHB, IDB,
//!   EPB, SPB and the obsolete PB; `if_tsresol`, `if_tsoffset`), and find the IPv4 datagram
//!   in Ethernet (with up to two VLAN tags), raw IP, Linux cooked (SLL, SLL2) and BSD
//!   loopback frames.
//!
//! Writers emit little-endian files whatever the host, so golden captures are
//! byte-identical across machines (libpcap writes host order; readers accept both).
//! The reader never panics on garbage: every inconsistency is a [`PcapError`].
//! File formats: draft-ietf-opsawg-pcap and draft-ietf-opsawg-pcapng; link types:
//! tcpdump.org/linktypes.html. See also docs/pcap.md.
//!
//! ```
//! use wirelab_core::Instant;
//! use wirelab_wire::ethernet::mac_for;
//! use wirelab_wire::pcap::{self, linktype, PcapngWriter};
//!
//! let ip = [0x45, 0, 0, 20, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 1, 2];
//! let mut w = PcapngWriter::new(Vec::new())?;           // any io::Write
//! let a = w.add_interface(linktype::ETHERNET, "h1-eth0", "h1 path A")?;
//! let b = w.add_interface(linktype::ETHERNET, "h1-eth1", "h1 path B")?;
//! w.write_ipv4_as_ethernet(a, Instant::from_nanos(1_500), mac_for(1, 0), mac_for(2, 0), &ip)?;
//! w.write_ipv4_as_ethernet(b, Instant::from_nanos(2_500), mac_for(1, 1), mac_for(3, 0), &ip)?;
//! let bytes = w.into_inner()?;
//!
//! let cap = pcap::parse_bytes(&bytes)?;                  // or pcap::read_file(path)?
//! assert_eq!(cap.interfaces[1].name.as_deref(), Some("h1-eth1"));
//! let p = &cap.packets[1];
//! assert_eq!((p.ts_ns, p.iface, p.ip_offset), (2_500, 1, Some(14)));
//! assert_eq!(p.ipv4(), Some(&ip[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
mod reader;
mod writer;

pub use reader::{
    ipv4_offset, parse_bytes, read_capture, read_file, Capture, CapturedPacket, Format, Interface,
    Reader, Record,
};
pub use writer::{PcapWriter, PcapngWriter};

use core::fmt;

/// Link types (tcpdump.org/linktypes.html; `LINKTYPE_*` names).
pub mod linktype {
    /// BSD loopback: a 4-byte address family in the capturing host's byte order.
    pub const NULL: u32 = 0;
    /// Ethernet II / IEEE 802.3.
    pub const ETHERNET: u32 = 1;
    /// Raw IP: the frame starts with an IPv4 or IPv6 header.
    pub const RAW: u32 = 101;
    /// OpenBSD loopback: a 4-byte address family in network byte order.
    pub const LOOP: u32 = 108;
    /// Linux cooked capture v1 (`tcpdump -i any` before libpcap 1.10): 16-byte header.
    pub const LINUX_SLL: u32 = 113;
    /// Raw IPv4 only.
    pub const IPV4: u32 = 228;
    /// Linux cooked capture v2 (`tcpdump -i any` since libpcap 1.10): 20-byte header.
    pub const LINUX_SLL2: u32 = 276;
}

/// Default and largest snapshot length (libpcap's `MAXIMUM_SNAPLEN`).
pub const SNAPLEN: u32 = 262_144;

/// Classic pcap magic with microsecond timestamps.
pub const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
/// Classic pcap magic with nanosecond timestamps.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// pcapng Section Header Block type (a palindrome, so readable in either byte order).
pub const PCAPNG_SHB: u32 = 0x0a0d_0d0a;

/// Why a capture could not be read.
#[derive(Debug)]
pub enum PcapError {
    /// Reading the file failed.
    Io(std::io::Error),
    /// The first four bytes are neither a pcap magic nor a pcapng Section Header Block.
    UnknownFormat {
        /// The first four bytes, big-endian.
        magic: u32,
    },
    /// The capture ends in the middle of a header, record or block (a capture that was
    /// cut short, or not a capture at all). Records before `offset` were good.
    Truncated {
        /// Byte offset of the incomplete record or block.
        offset: usize,
    },
    /// A length or field is inconsistent.
    Malformed {
        /// Byte offset of the record or block.
        offset: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// Valid but not supported (e.g. pcapng major version 2).
    Unsupported {
        /// Byte offset of the record or block.
        offset: usize,
        /// What is not supported.
        what: &'static str,
    },
}

impl fmt::Display for PcapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PcapError::Io(e) => write!(f, "capture: {e}"),
            PcapError::UnknownFormat { magic } => {
                write!(
                    f,
                    "capture: not a pcap or pcapng file (first bytes {magic:#010x})"
                )
            }
            PcapError::Truncated { offset } => {
                write!(
                    f,
                    "capture: cut short in the record or block at byte {offset}"
                )
            }
            PcapError::Malformed { offset, what } => {
                write!(
                    f,
                    "capture: malformed record or block at byte {offset}: {what}"
                )
            }
            PcapError::Unsupported { offset, what } => {
                write!(f, "capture: unsupported at byte {offset}: {what}")
            }
        }
    }
}

impl std::error::Error for PcapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PcapError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for PcapError {
    fn from(e: std::io::Error) -> Self {
        PcapError::Io(e)
    }
}
