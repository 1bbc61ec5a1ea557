//! Capture writers. Both reuse one scratch buffer, so writing a packet does not allocate
//! once the buffer has grown to the largest frame, and each record or block reaches the
//! underlying writer as a single `write_all` (wrap files in a `BufWriter` anyway).
use super::{linktype, MAGIC_NANOS, PCAPNG_SHB, SNAPLEN};
use crate::ethernet::{self, MacAddr};
use std::io::{self, Write};
use wirelab_core::Instant;

fn invalid(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Bytes of `frame` a record keeps, and the original length it reports (never below the
/// captured length, which readers would reject).
fn lengths(frame_len: usize, orig_len: u32) -> (usize, u32) {
    let cap = frame_len.min(SNAPLEN as usize);
    (cap, orig_len.max(cap as u32))
}

/// A classic pcap writer with nanosecond timestamps (magic `0xa1b23c4d`, version 2.4,
/// snaplen 262144), little-endian.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    linktype: u32,
    scratch: Vec<u8>,
}

impl<W: Write> PcapWriter<W> {
    /// Starts an Ethernet capture (`LINKTYPE_ETHERNET`), writing the file header.
    pub fn new(out: W) -> io::Result<Self> {
        Self::with_linktype(out, linktype::ETHERNET)
    }

    /// Starts a capture with the given link type (e.g. [`linktype::RAW`]).
    pub fn with_linktype(mut out: W, linktype: u32) -> io::Result<Self> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone = 0, sigfigs = 0
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&linktype.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter {
            out,
            linktype,
            scratch: Vec::with_capacity(2048),
        })
    }

    /// The file's link type.
    pub fn linktype(&self) -> u32 {
        self.linktype
    }

    fn record_header(&mut self, ts: Instant, cap: usize, orig: u32) -> io::Result<()> {
        let ns = ts.as_nanos();
        let secs = u32::try_from(ns / 1_000_000_000)
            .map_err(|_| invalid("pcap timestamp beyond 2^32 seconds"))?;
        self.scratch.clear();
        self.scratch.extend_from_slice(&secs.to_le_bytes());
        self.scratch
            .extend_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        self.scratch.extend_from_slice(&(cap as u32).to_le_bytes());
        self.scratch.extend_from_slice(&orig.to_le_bytes());
        Ok(())
    }

    /// Writes one record: `frame` as captured (cut to the snaplen) and the length it had on
    /// the wire, `orig_len` (raised to the captured length if smaller).
    pub fn write_packet(&mut self, ts: Instant, frame: &[u8], orig_len: u32) -> io::Result<()> {
        let (cap, orig) = lengths(frame.len(), orig_len);
        self.record_header(ts, cap, orig)?;
        self.scratch.extend_from_slice(&frame[..cap]);
        self.out.write_all(&self.scratch)
    }

    /// Writes an IPv4 datagram as an Ethernet frame from `src_mac` to `dst_mac`, prepending
    /// the 14-byte header in the scratch buffer (no per-packet allocation). On a
    /// [`linktype::RAW`]/[`linktype::IPV4`] capture the datagram is written bare and the
    /// MACs are ignored; other link types are an `InvalidInput` error.
    pub fn write_ipv4_as_ethernet(
        &mut self,
        ts: Instant,
        src_mac: MacAddr,
        dst_mac: MacAddr,
        ip: &[u8],
    ) -> io::Result<()> {
        match self.linktype {
            linktype::ETHERNET => {
                let total = ethernet::HEADER_LEN + ip.len();
                let (cap, orig) = lengths(total, total as u32);
                self.record_header(ts, cap, orig)?;
                self.scratch
                    .extend_from_slice(&ethernet::ipv4_header(dst_mac, src_mac));
                self.scratch
                    .extend_from_slice(&ip[..cap - ethernet::HEADER_LEN]);
                self.out.write_all(&self.scratch)
            }
            linktype::RAW | linktype::IPV4 => self.write_packet(ts, ip, ip.len() as u32),
            _ => Err(invalid(
                "write_ipv4_as_ethernet needs an Ethernet or raw-IP capture",
            )),
        }
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// pcapng block types written here.
mod block {
    pub const IDB: u32 = 1;
    pub const EPB: u32 = 6;
}

/// pcapng option codes written here.
mod opt {
    pub const END: u16 = 0;
    pub const SHB_USERAPPL: u16 = 4;
    pub const IF_NAME: u16 = 2;
    pub const IF_DESCRIPTION: u16 = 3;
    pub const IF_TSRESOL: u16 = 9;
}

/// A pcapng writer: one section, one Interface Description Block per
/// [`add_interface`](Self::add_interface), an Enhanced Packet Block per packet, timestamps
/// in nanoseconds (`if_tsresol` = 9), little-endian.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
    ifaces: Vec<u32>,
    scratch: Vec<u8>,
}

impl<W: Write> PcapngWriter<W> {
    /// Starts a capture, writing the Section Header Block (`shb_userappl` = "wirelab").
    pub fn new(out: W) -> io::Result<Self> {
        let mut w = PcapngWriter {
            out,
            ifaces: Vec::new(),
            scratch: Vec::with_capacity(2048),
        };
        w.begin(PCAPNG_SHB);
        w.scratch.extend_from_slice(&0x1a2b_3c4du32.to_le_bytes()); // byte-order magic
        w.scratch.extend_from_slice(&1u16.to_le_bytes()); // major
        w.scratch.extend_from_slice(&0u16.to_le_bytes()); // minor
        w.scratch.extend_from_slice(&(-1i64).to_le_bytes()); // section length unknown
        w.option(opt::SHB_USERAPPL, b"wirelab")?;
        w.option(opt::END, &[])?;
        w.finish()?;
        Ok(w)
    }

    fn begin(&mut self, kind: u32) {
        self.scratch.clear();
        self.scratch.extend_from_slice(&kind.to_le_bytes());
        self.scratch.extend_from_slice(&0u32.to_le_bytes()); // length, patched in finish
    }

    fn pad(&mut self) {
        while self.scratch.len() & 3 != 0 {
            self.scratch.push(0);
        }
    }

    fn option(&mut self, code: u16, value: &[u8]) -> io::Result<()> {
        let len =
            u16::try_from(value.len()).map_err(|_| invalid("pcapng option over 65535 bytes"))?;
        self.scratch.extend_from_slice(&code.to_le_bytes());
        self.scratch.extend_from_slice(&len.to_le_bytes());
        self.scratch.extend_from_slice(value);
        self.pad();
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        self.pad();
        let total = u32::try_from(self.scratch.len() + 4)
            .map_err(|_| invalid("pcapng block over 4 GiB"))?;
        self.scratch[4..8].copy_from_slice(&total.to_le_bytes());
        self.scratch.extend_from_slice(&total.to_le_bytes());
        self.out.write_all(&self.scratch)
    }

    /// Describes a new interface and returns its id for [`write_packet`](Self::write_packet)
    /// (0, 1, 2, … in call order). `name` and `description` become `if_name` and
    /// `if_description` (empty strings are omitted), e.g. `"h1-eth0"` and
    /// `"h1 10.0.0.1 -> r1"`.
    pub fn add_interface(
        &mut self,
        linktype: u32,
        name: &str,
        description: &str,
    ) -> io::Result<u32> {
        let id = u32::try_from(self.ifaces.len()).map_err(|_| invalid("too many interfaces"))?;
        let lt = u16::try_from(linktype).map_err(|_| invalid("pcapng link type over 65535"))?;
        self.begin(block::IDB);
        self.scratch.extend_from_slice(&lt.to_le_bytes());
        self.scratch.extend_from_slice(&0u16.to_le_bytes());
        self.scratch.extend_from_slice(&SNAPLEN.to_le_bytes());
        if !name.is_empty() {
            self.option(opt::IF_NAME, name.as_bytes())?;
        }
        if !description.is_empty() {
            self.option(opt::IF_DESCRIPTION, description.as_bytes())?;
        }
        self.option(opt::IF_TSRESOL, &[9])?;
        self.option(opt::END, &[])?;
        self.finish()?;
        self.ifaces.push(linktype);
        Ok(id)
    }

    /// Number of interfaces described so far.
    pub fn interface_count(&self) -> usize {
        self.ifaces.len()
    }

    fn epb_header(&mut self, iface: u32, ts: Instant, cap: usize, orig: u32) {
        let ns = ts.as_nanos();
        self.begin(block::EPB);
        self.scratch.extend_from_slice(&iface.to_le_bytes());
        self.scratch
            .extend_from_slice(&((ns >> 32) as u32).to_le_bytes());
        self.scratch.extend_from_slice(&(ns as u32).to_le_bytes());
        self.scratch.extend_from_slice(&(cap as u32).to_le_bytes());
        self.scratch.extend_from_slice(&orig.to_le_bytes());
    }

    fn iface_linktype(&self, iface: u32) -> io::Result<u32> {
        self.ifaces
            .get(iface as usize)
            .copied()
            .ok_or_else(|| invalid("pcapng packet for an interface never added"))
    }

    /// Writes one packet seen on interface `iface` (see `PcapWriter::write_packet`).
    pub fn write_packet(
        &mut self,
        iface: u32,
        ts: Instant,
        frame: &[u8],
        orig_len: u32,
    ) -> io::Result<()> {
        self.iface_linktype(iface)?;
        let (cap, orig) = lengths(frame.len(), orig_len);
        self.epb_header(iface, ts, cap, orig);
        self.scratch.extend_from_slice(&frame[..cap]);
        self.finish()
    }

    /// Writes an IPv4 datagram on interface `iface` as an Ethernet frame, or bare on a
    /// raw-IP interface (see `PcapWriter::write_ipv4_as_ethernet`).
    pub fn write_ipv4_as_ethernet(
        &mut self,
        iface: u32,
        ts: Instant,
        src_mac: MacAddr,
        dst_mac: MacAddr,
        ip: &[u8],
    ) -> io::Result<()> {
        match self.iface_linktype(iface)? {
            linktype::ETHERNET => {
                let total = ethernet::HEADER_LEN + ip.len();
                let (cap, orig) = lengths(total, total as u32);
                self.epb_header(iface, ts, cap, orig);
                self.scratch
                    .extend_from_slice(&ethernet::ipv4_header(dst_mac, src_mac));
                self.scratch
                    .extend_from_slice(&ip[..cap - ethernet::HEADER_LEN]);
                self.finish()
            }
            linktype::RAW | linktype::IPV4 => self.write_packet(iface, ts, ip, ip.len() as u32),
            _ => Err(invalid(
                "write_ipv4_as_ethernet needs an Ethernet or raw-IP interface",
            )),
        }
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn classic_header_and_record_layout() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let ip = [0x45u8; 20];
        w.write_ipv4_as_ethernet(
            Instant::from_nanos(3_000_000_123),
            [2, 0, 0, 1, 0, 0],
            [2, 0, 0, 2, 0, 0],
            &ip,
        )
        .unwrap();
        let b = w.into_inner().unwrap();
        assert_eq!(&b[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(u32::from_le_bytes(b[16..20].try_into().unwrap()), 262_144);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 1);
        let r = &b[24..];
        assert_eq!(u32::from_le_bytes(r[0..4].try_into().unwrap()), 3);
        assert_eq!(u32::from_le_bytes(r[4..8].try_into().unwrap()), 123);
        assert_eq!(u32::from_le_bytes(r[8..12].try_into().unwrap()), 34);
        assert_eq!(u32::from_le_bytes(r[12..16].try_into().unwrap()), 34);
        assert_eq!(&r[16..22], &[2, 0, 0, 2, 0, 0]); // dst first
        assert_eq!(&r[22..28], &[2, 0, 0, 1, 0, 0]);
        assert_eq!(&r[28..30], &[0x08, 0x00]);
        assert_eq!(&r[30..], &ip);
    }

    #[test]
    fn classic_snaplen_and_orig_len() {
        let mut w = PcapWriter::with_linktype(Vec::new(), linktype::RAW).unwrap();
        let big = vec![0u8; SNAPLEN as usize + 10];
        w.write_packet(Instant::ZERO, &big, 0).unwrap();
        w.write_packet(Instant::ZERO, &[1, 2, 3], 1500).unwrap();
        let b = w.into_inner().unwrap();
        let r = &b[24..];
        assert_eq!(u32::from_le_bytes(r[8..12].try_into().unwrap()), SNAPLEN);
        assert_eq!(u32::from_le_bytes(r[12..16].try_into().unwrap()), SNAPLEN);
        let r = &r[16 + SNAPLEN as usize..];
        assert_eq!(u32::from_le_bytes(r[8..12].try_into().unwrap()), 3);
        assert_eq!(u32::from_le_bytes(r[12..16].try_into().unwrap()), 1500);
        assert_eq!(r.len(), 19);
    }

    #[test]
    fn classic_rejects_unrepresentable_time_and_linktype() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let e = w
            .write_packet(Instant::from_nanos(u64::MAX), &[0; 4], 4)
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let mut w = PcapWriter::with_linktype(Vec::new(), linktype::LINUX_SLL).unwrap();
        assert!(w
            .write_ipv4_as_ethernet(Instant::ZERO, [0; 6], [0; 6], &[0x45; 20])
            .is_err());
    }

    #[test]
    fn pcapng_blocks_are_aligned_and_framed() {
        let mut w = PcapngWriter::new(Vec::new()).unwrap();
        assert_eq!(
            w.add_interface(linktype::ETHERNET, "h1-eth0", "path A")
                .unwrap(),
            0
        );
        assert_eq!(w.add_interface(linktype::RAW, "h1-eth1", "").unwrap(), 1);
        w.write_ipv4_as_ethernet(0, Instant::from_nanos(1 << 33), [2; 6], [4; 6], &[0x45; 21])
            .unwrap();
        w.write_packet(1, Instant::ZERO, &[0x45; 3], 3).unwrap();
        assert!(w.write_packet(2, Instant::ZERO, &[0x45; 3], 3).is_err());
        let b = w.into_inner().unwrap();
        // walk the blocks: each length is a multiple of 4 and repeated at the end
        let mut pos = 0;
        let mut kinds = Vec::new();
        while pos < b.len() {
            let kind = u32::from_le_bytes(b[pos..pos + 4].try_into().unwrap());
            let len = u32::from_le_bytes(b[pos + 4..pos + 8].try_into().unwrap()) as usize;
            assert_eq!(len % 4, 0);
            assert_eq!(
                u32::from_le_bytes(b[pos + len - 4..pos + len].try_into().unwrap()) as usize,
                len
            );
            kinds.push(kind);
            pos += len;
        }
        assert_eq!(pos, b.len());
        assert_eq!(kinds, vec![PCAPNG_SHB, 1, 1, 6, 6]);
    }
}
