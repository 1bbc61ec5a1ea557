//! Capture reader: classic pcap and pcapng from a byte slice, zero-copy.
use super::{linktype, PcapError, MAGIC_MICROS, MAGIC_NANOS, PCAPNG_SHB};
use crate::ethernet::{ethertype, EthernetFrame};
use std::path::Path;

/// The container format of a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Classic pcap.
    Pcap {
        /// Nanosecond timestamps (magic `0xa1b23c4d`) rather than microseconds.
        nanos: bool,
        /// Written big-endian.
        big_endian: bool,
    },
    /// pcapng (byte order may change per section).
    Pcapng,
}

/// Timestamp resolution of a pcapng interface (`if_tsresol`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resol {
    Pow10(u8),
    Pow2(u8),
}

/// One capture interface. A classic pcap has exactly one; a pcapng file one per IDB, in
/// file order across all sections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// Link type of its frames.
    pub linktype: u32,
    /// Snapshot length (0 = unlimited in pcapng).
    pub snaplen: u32,
    /// `if_name`, if present.
    pub name: Option<String>,
    /// `if_description`, if present.
    pub description: Option<String>,
    resol: Resol,
    /// `if_tsoffset` in seconds.
    offset_s: i64,
}

impl Interface {
    fn new(linktype: u32, snaplen: u32, resol: Resol) -> Self {
        Interface {
            linktype,
            snaplen,
            name: None,
            description: None,
            resol,
            offset_s: 0,
        }
    }

    fn to_nanos(&self, ticks: u64) -> u64 {
        let t = ticks as u128;
        let ns: u128 = match self.resol {
            Resol::Pow10(v) if v <= 9 => t * 10u128.pow(9 - v as u32),
            Resol::Pow10(v) => match 10u128.checked_pow(v as u32 - 9) {
                Some(d) => t / d,
                None => 0,
            },
            // v <= 127, so the shift is in range; t * 1e9 < 2^94 cannot overflow.
            Resol::Pow2(v) => (t * 1_000_000_000) >> v,
        };
        let ns = ns as i128 + self.offset_s as i128 * 1_000_000_000;
        ns.clamp(0, u64::MAX as i128) as u64
    }
}

/// One packet, borrowed from the capture bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Timestamp in nanoseconds since the Unix epoch (or since the start of a wirelab run).
    /// pcapng Simple Packet Blocks carry none and report 0.
    pub ts_ns: u64,
    /// Index into the reader's [`interfaces`](Reader::interfaces) (0 for classic pcap).
    pub iface: u32,
    /// Link type of `data`.
    pub linktype: u32,
    /// Length on the wire (may exceed `data.len()` when the snaplen cut the frame).
    pub orig_len: u32,
    /// The captured frame, link-layer header included.
    pub data: &'a [u8],
    /// Offset of the IPv4 header in `data`, if the frame carries IPv4 (see [`ipv4_offset`]).
    pub ip_offset: Option<usize>,
    /// Byte offset of the record (classic pcap) or block (pcapng) in the file, for
    /// messages about it.
    pub offset: usize,
}

impl<'a> Record<'a> {
    /// The IPv4 datagram, trimmed to its total length when that fits (dropping Ethernet
    /// padding); `None` for non-IPv4 frames.
    pub fn ipv4(&self) -> Option<&'a [u8]> {
        ipv4_slice(self.data, self.ip_offset)
    }

    /// An owned copy.
    pub fn to_owned(&self) -> CapturedPacket {
        CapturedPacket {
            ts_ns: self.ts_ns,
            iface: self.iface,
            linktype: self.linktype,
            orig_len: self.orig_len,
            data: self.data.to_vec(),
            ip_offset: self.ip_offset,
        }
    }
}

/// One packet, owned (as [`read_file`] returns them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapturedPacket {
    /// Timestamp in nanoseconds (see [`Record::ts_ns`]).
    pub ts_ns: u64,
    /// Interface index (see [`Record::iface`]).
    pub iface: u32,
    /// Link type of `data`.
    pub linktype: u32,
    /// Length on the wire.
    pub orig_len: u32,
    /// The captured frame, link-layer header included.
    pub data: Vec<u8>,
    /// Offset of the IPv4 header in `data`.
    pub ip_offset: Option<usize>,
}

impl CapturedPacket {
    /// The IPv4 datagram (see [`Record::ipv4`]).
    pub fn ipv4(&self) -> Option<&[u8]> {
        ipv4_slice(&self.data, self.ip_offset)
    }
}

fn ipv4_slice(data: &[u8], off: Option<usize>) -> Option<&[u8]> {
    let ip = data.get(off?..)?;
    if ip.len() >= 4 {
        let tl = u16::from_be_bytes([ip[2], ip[3]]) as usize;
        if (20..=ip.len()).contains(&tl) {
            return Some(&ip[..tl]);
        }
    }
    Some(ip)
}

/// Where the IPv4 header starts in a frame of link type `linktype`, or `None` if the frame
/// does not carry IPv4 (ARP, IPv6, unknown link types) or is too short to tell.
///
/// Ethernet frames may carry up to two 802.1Q/802.1ad tags. Linux cooked captures: SLL
/// has the protocol at bytes 14..16 of a 16-byte header, SLL2 at bytes 0..2 of a 20-byte
/// header. BSD loopback (`NULL`) holds `AF_INET` = 2 in either byte order.
pub fn ipv4_offset(linktype: u32, frame: &[u8]) -> Option<usize> {
    let be16 = |o: usize| {
        frame
            .get(o..o + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    let off = match linktype {
        linktype::ETHERNET => {
            let (et, off) = EthernetFrame::new_checked(frame).ok()?.inner()?;
            (et == ethertype::IPV4).then_some(off)?
        }
        linktype::RAW | linktype::IPV4 => 0,
        linktype::LINUX_SLL => (be16(14)? == ethertype::IPV4).then_some(16)?,
        linktype::LINUX_SLL2 => (be16(0)? == ethertype::IPV4).then_some(20)?,
        linktype::NULL | linktype::LOOP => {
            let af = frame.get(0..4)?;
            let af = [af[0], af[1], af[2], af[3]];
            (u32::from_le_bytes(af) == 2 || u32::from_be_bytes(af) == 2).then_some(4)?
        }
        _ => return None,
    };
    (frame.get(off)? >> 4 == 4).then_some(off)
}

/// Reads little- or big-endian integers from the capture.
#[derive(Clone, Copy, Debug)]
struct Endian {
    big: bool,
}

impl Endian {
    fn u16(self, b: &[u8], o: usize) -> u16 {
        let x = [b[o], b[o + 1]];
        if self.big {
            u16::from_be_bytes(x)
        } else {
            u16::from_le_bytes(x)
        }
    }
    fn u32(self, b: &[u8], o: usize) -> u32 {
        let x = [b[o], b[o + 1], b[o + 2], b[o + 3]];
        if self.big {
            u32::from_be_bytes(x)
        } else {
            u32::from_le_bytes(x)
        }
    }
    fn u64(self, b: &[u8], o: usize) -> u64 {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[o..o + 8]);
        if self.big {
            u64::from_be_bytes(x)
        } else {
            u64::from_le_bytes(x)
        }
    }
}

#[derive(Debug)]
enum Kind {
    Pcap { nanos: bool },
    Pcapng { section_base: usize },
}

/// An iterator over the packets of a capture held in memory.
///
/// After the first error it yields that error once and then `None`, so a capture that was
/// cut short still yields every complete packet before the cut.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    endian: Endian,
    kind: Kind,
    format: Format,
    ifaces: Vec<Interface>,
    done: bool,
}

enum Block<'a> {
    Packet(Record<'a>),
    Other,
}

const PCAP_HEADER_LEN: usize = 24;
const PCAP_RECORD_LEN: usize = 16;
const BOM: u32 = 0x1a2b_3c4d;

impl<'a> Reader<'a> {
    /// Reads the file header of a classic pcap or the first section header of a pcapng.
    pub fn new(buf: &'a [u8]) -> Result<Self, PcapError> {
        if buf.len() < 4 {
            return Err(PcapError::Truncated { offset: 0 });
        }
        let magic_be = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
        let magic_le = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
        if magic_be == PCAPNG_SHB {
            let mut r = Reader {
                buf,
                pos: 0,
                endian: Endian { big: false },
                kind: Kind::Pcapng { section_base: 0 },
                format: Format::Pcapng,
                ifaces: Vec::new(),
                done: false,
            };
            // The first block must be the SHB; parse it now so errors surface here.
            r.parse_block()?;
            return Ok(r);
        }
        let (big, nanos) = match (magic_le, magic_be) {
            (MAGIC_MICROS, _) => (false, false),
            (MAGIC_NANOS, _) => (false, true),
            (_, MAGIC_MICROS) => (true, false),
            (_, MAGIC_NANOS) => (true, true),
            _ => return Err(PcapError::UnknownFormat { magic: magic_be }),
        };
        if buf.len() < PCAP_HEADER_LEN {
            return Err(PcapError::Truncated { offset: 0 });
        }
        let e = Endian { big };
        if e.u16(buf, 4) != 2 {
            return Err(PcapError::Unsupported {
                offset: 0,
                what: "pcap major version is not 2",
            });
        }
        let snaplen = e.u32(buf, 16);
        // Low 16 bits: link type; upper bits may carry the FCS length (pcap draft §4).
        let lt = e.u32(buf, 20) & 0xffff;
        let resol = Resol::Pow10(if nanos { 9 } else { 6 });
        Ok(Reader {
            buf,
            pos: PCAP_HEADER_LEN,
            endian: e,
            kind: Kind::Pcap { nanos },
            format: Format::Pcap {
                nanos,
                big_endian: big,
            },
            ifaces: vec![Interface::new(lt, snaplen, resol)],
            done: false,
        })
    }

    /// The container format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Interfaces seen so far (a pcapng IDB may appear anywhere before its first packet).
    pub fn interfaces(&self) -> &[Interface] {
        &self.ifaces
    }

    fn next_pcap(&mut self, nanos: bool) -> Option<Result<Record<'a>, PcapError>> {
        let (b, at, e) = (self.buf, self.pos, self.endian);
        if at == b.len() {
            return None;
        }
        if b.len() - at < PCAP_RECORD_LEN {
            return Some(Err(PcapError::Truncated { offset: at }));
        }
        let secs = e.u32(b, at) as u64;
        let frac = e.u32(b, at + 4) as u64;
        let cap = e.u32(b, at + 8) as usize;
        let orig = e.u32(b, at + 12);
        let start = at + PCAP_RECORD_LEN;
        if cap > b.len() - start {
            return Some(Err(PcapError::Truncated { offset: at }));
        }
        self.pos = start + cap;
        let data = &b[start..start + cap];
        // secs < 2^32 and frac < 2^32, so neither product overflows u64 except the sum in
        // pathological files: saturate.
        let ns = (secs * 1_000_000_000).saturating_add(if nanos { frac } else { frac * 1000 });
        let lt = self.ifaces[0].linktype;
        Some(Ok(Record {
            ts_ns: ns,
            iface: 0,
            linktype: lt,
            orig_len: orig,
            data,
            ip_offset: ipv4_offset(lt, data),
            offset: at,
        }))
    }

    /// Parses pcapng blocks up to and including the next packet block.
    fn next_block(&mut self) -> Option<Result<Record<'a>, PcapError>> {
        loop {
            match self.parse_block() {
                Ok(Some(Block::Packet(r))) => return Some(Ok(r)),
                Ok(Some(Block::Other)) => {}
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
    }

    /// Parses one pcapng block; `Ok(None)` at the end of the buffer.
    fn parse_block(&mut self) -> Result<Option<Block<'a>>, PcapError> {
        let (b, at) = (self.buf, self.pos);
        if at == b.len() {
            return Ok(None);
        }
        if b.len() - at < 12 {
            return Err(PcapError::Truncated { offset: at });
        }
        let raw_kind = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        if raw_kind == PCAPNG_SHB {
            // The byte-order magic decides how to read this block's length.
            let bom = u32::from_le_bytes([b[at + 8], b[at + 9], b[at + 10], b[at + 11]]);
            self.endian = match bom {
                BOM => Endian { big: false },
                x if x.swap_bytes() == BOM => Endian { big: true },
                _ => return Err(malformed(at, "bad byte-order magic in section header")),
            };
        } else if at == 0 {
            return Err(malformed(at, "pcapng does not start with a section header"));
        }
        let e = self.endian;
        let kind = e.u32(b, at);
        let len = e.u32(b, at + 4) as usize;
        if len < 12 || len & 3 != 0 {
            return Err(malformed(
                at,
                "block length not a multiple of 4 or below 12",
            ));
        }
        if len > b.len() - at {
            return Err(PcapError::Truncated { offset: at });
        }
        if e.u32(b, at + len - 4) as usize != len {
            return Err(malformed(at, "block trailer length differs from header"));
        }
        self.pos = at + len;
        let body = &b[at + 8..at + len - 4];
        match kind {
            PCAPNG_SHB => {
                if body.len() < 16 {
                    return Err(malformed(at, "section header too short"));
                }
                if e.u16(body, 4) != 1 {
                    return Err(PcapError::Unsupported {
                        offset: at,
                        what: "pcapng major version is not 1",
                    });
                }
                self.kind = Kind::Pcapng {
                    section_base: self.ifaces.len(),
                };
            }
            1 => {
                if body.len() < 8 {
                    return Err(malformed(at, "interface description too short"));
                }
                let mut i = Interface::new(e.u16(body, 0) as u32, e.u32(body, 4), Resol::Pow10(6));
                if let Err(what) = parse_idb_options(e, &body[8..], &mut i) {
                    return Err(malformed(at, what));
                }
                self.ifaces.push(i);
            }
            6 | 2 => {
                // EPB: if_id u32, ts_hi, ts_lo, caplen, origlen, data
                // PB (obsolete): if_id u16, drops u16, ts_hi, ts_lo, caplen, origlen, data
                if body.len() < 20 {
                    return Err(malformed(at, "packet block too short"));
                }
                let id = if kind == 6 {
                    e.u32(body, 0) as usize
                } else {
                    e.u16(body, 0) as usize
                };
                let ticks = (e.u32(body, 4) as u64) << 32 | e.u32(body, 8) as u64;
                let cap = e.u32(body, 12) as usize;
                let orig = e.u32(body, 16);
                if cap > body.len() - 20 {
                    return Err(malformed(at, "captured length exceeds block"));
                }
                // What follows the padded packet data are options: a captured length that
                // contradicts the block length leaves packet bytes there (or cuts the
                // options), which do not parse as options.
                if parse_options(e, &body[20 + ((cap + 3) & !3)..], true, |_, _| Ok(())).is_err() {
                    return Err(malformed(
                        at,
                        "captured length contradicts the block length (the bytes after the packet data are not options)",
                    ));
                }
                return Ok(Some(Block::Packet(self.packet(
                    at,
                    id,
                    ticks,
                    &body[20..20 + cap],
                    orig,
                    true,
                )?)));
            }
            3 => {
                // SPB: origlen, data (caplen = min(origlen, snaplen, what fits))
                if body.len() < 4 {
                    return Err(malformed(at, "simple packet block too short"));
                }
                let orig = e.u32(body, 0);
                let mut cap = (orig as usize).min(body.len() - 4);
                if let Kind::Pcapng { section_base } = self.kind {
                    if let Some(i) = self.ifaces.get(section_base) {
                        if i.snaplen != 0 {
                            cap = cap.min(i.snaplen as usize);
                        }
                    }
                }
                return Ok(Some(Block::Packet(self.packet(
                    at,
                    0,
                    0,
                    &body[4..4 + cap],
                    orig,
                    false,
                )?)));
            }
            _ => {} // NRB, ISB, DSB, custom blocks: skipped
        }
        Ok(Some(Block::Other))
    }

    fn packet(
        &self,
        at: usize,
        id: usize,
        ticks: u64,
        data: &'a [u8],
        orig: u32,
        has_ts: bool,
    ) -> Result<Record<'a>, PcapError> {
        let Kind::Pcapng { section_base } = self.kind else {
            return Err(malformed(at, "packet block outside a section"));
        };
        let idx = section_base
            .checked_add(id)
            .filter(|&i| i < self.ifaces.len())
            .ok_or(malformed(at, "packet on an interface not described"))?;
        let i = &self.ifaces[idx];
        Ok(Record {
            offset: at,
            ts_ns: if has_ts { i.to_nanos(ticks) } else { 0 },
            iface: u32::try_from(idx).map_err(|_| malformed(at, "too many interfaces"))?,
            linktype: i.linktype,
            orig_len: orig,
            data,
            ip_offset: ipv4_offset(i.linktype, data),
        })
    }
}

fn malformed(offset: usize, what: &'static str) -> PcapError {
    PcapError::Malformed { offset, what }
}

/// Walks a pcapng option list (code, length, padded value; `opt_endofopt` ends it),
/// handing each option to `f`. Errors if an option overruns the block or bytes that
/// cannot be an option header are left over; with `strict_end`, also if anything follows
/// `opt_endofopt` (it is the last thing in a block).
fn parse_options(
    e: Endian,
    mut o: &[u8],
    strict_end: bool,
    mut f: impl FnMut(u16, &[u8]) -> Result<(), &'static str>,
) -> Result<(), &'static str> {
    while o.len() >= 4 {
        let code = e.u16(o, 0);
        let len = e.u16(o, 2) as usize;
        let padded = (len + 3) & !3;
        if padded > o.len() - 4 {
            return Err("option overruns block");
        }
        if code == 0 {
            return if strict_end && o.len() > 4 { Err("bytes after the end of options") } else { Ok(()) };
        }
        f(code, &o[4..4 + len])?;
        o = &o[4 + padded..];
    }
    if o.is_empty() {
        Ok(())
    } else {
        Err("stray bytes after the options")
    }
}

fn parse_idb_options(e: Endian, o: &[u8], i: &mut Interface) -> Result<(), &'static str> {
    parse_options(e, o, false, |code, v| {
        let len = v.len();
        match code {
            2 => i.name = Some(String::from_utf8_lossy(v).into_owned()),
            3 => i.description = Some(String::from_utf8_lossy(v).into_owned()),
            9 if len == 1 => {
                i.resol = if v[0] & 0x80 != 0 {
                    Resol::Pow2(v[0] & 0x7f)
                } else {
                    Resol::Pow10(v[0])
                };
            }
            14 if len == 8 => i.offset_s = e.u64(v, 0) as i64,
            _ => {}
        }
        Ok(())
    })
    .map_err(|w| if w == "option overruns block" { "interface option overruns block" } else { w })
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Record<'a>, PcapError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = match self.kind {
            Kind::Pcap { nanos } => self.next_pcap(nanos),
            Kind::Pcapng { .. } => self.next_block(),
        };
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

/// A whole capture, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    /// Container format.
    pub format: Format,
    /// Interfaces, indexed by [`CapturedPacket::iface`].
    pub interfaces: Vec<Interface>,
    /// Packets in file order.
    pub packets: Vec<CapturedPacket>,
}

/// Parses a whole capture held in memory. Any error (including a final record cut short)
/// fails the whole parse; use [`Reader`] to keep the packets before a cut.
pub fn parse_bytes(bytes: &[u8]) -> Result<Capture, PcapError> {
    let mut r = Reader::new(bytes)?;
    let mut packets = Vec::new();
    for rec in &mut r {
        packets.push(rec?.to_owned());
    }
    Ok(Capture {
        format: r.format,
        interfaces: r.ifaces,
        packets,
    })
}

/// Reads a capture file with its interface table (see [`parse_bytes`]).
pub fn read_capture(path: impl AsRef<Path>) -> Result<Capture, PcapError> {
    let bytes = std::fs::read(path)?;
    parse_bytes(&bytes)
}

/// Reads the packets of a classic pcap or pcapng file, timestamps in ns.
pub fn read_file(path: impl AsRef<Path>) -> Result<Vec<CapturedPacket>, PcapError> {
    Ok(read_capture(path)?.packets)
}

#[cfg(test)]
mod test {
    use super::*;

    fn classic(big: bool, nanos: bool, lt: u32, recs: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let w32 = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let w16 = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut b = Vec::new();
        b.extend_from_slice(&w32(if nanos { MAGIC_NANOS } else { MAGIC_MICROS }));
        b.extend_from_slice(&w16(2));
        b.extend_from_slice(&w16(4));
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&w32(65535));
        b.extend_from_slice(&w32(lt));
        for &(s, f, d) in recs {
            b.extend_from_slice(&w32(s));
            b.extend_from_slice(&w32(f));
            b.extend_from_slice(&w32(d.len() as u32));
            b.extend_from_slice(&w32(d.len() as u32 + 100));
            b.extend_from_slice(d);
        }
        b
    }

    fn ipv4_bytes() -> Vec<u8> {
        let mut ip = vec![0x45, 0, 0, 24];
        ip.resize(24, 0);
        ip
    }

    #[test]
    fn classic_all_magics_and_orders() {
        let ip = ipv4_bytes();
        for big in [false, true] {
            for nanos in [false, true] {
                let b = classic(
                    big,
                    nanos,
                    linktype::RAW,
                    &[(2, 5, &ip), (3, 0, &[0x60, 0])],
                );
                let r = Reader::new(&b).unwrap();
                assert_eq!(
                    r.format(),
                    Format::Pcap {
                        nanos,
                        big_endian: big
                    }
                );
                let v: Vec<_> = r.collect::<Result<_, _>>().unwrap();
                assert_eq!(v.len(), 2);
                assert_eq!(v[0].ts_ns, 2_000_000_000 + if nanos { 5 } else { 5000 });
                assert_eq!(v[0].orig_len, 124);
                assert_eq!(v[0].ipv4(), Some(&ip[..]));
                assert_eq!(v[1].ip_offset, None, "IPv6 on a raw link is not IPv4");
            }
        }
    }

    #[test]
    fn truncated_record_yields_prefix_then_error() {
        let ip = ipv4_bytes();
        let b = classic(false, true, linktype::RAW, &[(1, 0, &ip), (2, 0, &ip)]);
        let cut = &b[..b.len() - 3];
        let mut r = Reader::new(cut).unwrap();
        assert!(r.next().unwrap().is_ok());
        let e = r.next().unwrap().unwrap_err();
        assert!(
            matches!(e, PcapError::Truncated { offset } if offset == 24 + 16 + 24),
            "{e}"
        );
        assert!(r.next().is_none());
        assert!(parse_bytes(cut).is_err());
    }

    #[test]
    fn bad_headers() {
        assert!(matches!(
            Reader::new(b"abc"),
            Err(PcapError::Truncated { .. })
        ));
        assert!(matches!(
            Reader::new(b"GIF89a.........................."),
            Err(PcapError::UnknownFormat { .. })
        ));
        let mut b = classic(false, false, 1, &[]);
        b[4] = 3;
        assert!(matches!(
            Reader::new(&b),
            Err(PcapError::Unsupported { .. })
        ));
        assert!(matches!(
            Reader::new(&b[..20]),
            Err(PcapError::Truncated { offset: 0 })
        ));
    }

    #[test]
    fn link_types() {
        let ip = ipv4_bytes();
        let mut eth = vec![0u8; 12];
        eth.extend_from_slice(&[0x08, 0x00]);
        eth.extend_from_slice(&ip);
        eth.extend_from_slice(&[0; 6]); // padding
        assert_eq!(ipv4_offset(linktype::ETHERNET, &eth), Some(14));
        let b = classic(false, false, 1, &[(0, 0, &eth)]);
        let v = parse_bytes(&b).unwrap();
        assert_eq!(v.packets[0].ipv4(), Some(&ip[..]), "padding trimmed");

        let mut arp = eth.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(ipv4_offset(linktype::ETHERNET, &arp), None);

        let mut sll = vec![0u8; 14];
        sll.extend_from_slice(&[0x08, 0x00]);
        sll.extend_from_slice(&ip);
        assert_eq!(ipv4_offset(linktype::LINUX_SLL, &sll), Some(16));
        let mut sll2 = vec![0x08, 0x00];
        sll2.resize(20, 0);
        sll2.extend_from_slice(&ip);
        assert_eq!(ipv4_offset(linktype::LINUX_SLL2, &sll2), Some(20));
        assert_eq!(ipv4_offset(linktype::IPV4, &ip), Some(0));
        let mut null = vec![2, 0, 0, 0];
        null.extend_from_slice(&ip);
        assert_eq!(ipv4_offset(linktype::NULL, &null), Some(4));
        assert_eq!(ipv4_offset(linktype::LOOP, &[0, 0, 0, 2, 0x45]), Some(4));
        assert_eq!(ipv4_offset(147, &ip), None);
        // too short to tell
        assert_eq!(ipv4_offset(linktype::LINUX_SLL, &sll[..16]), None);
        assert_eq!(ipv4_offset(linktype::RAW, &[]), None);
    }

    /// A little-endian pcapng: SHB, one Ethernet IDB, one EPB holding `data` with the
    /// captured length field `caplen` and original length `orig`.
    fn pcapng_epb(data: &[u8], caplen: u32, orig: u32) -> Vec<u8> {
        let mut b = Vec::new();
        let mut block = |kind: u32, body: &[u8]| {
            let len = 12 + body.len() as u32;
            b.extend_from_slice(&kind.to_le_bytes());
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(body);
            b.extend_from_slice(&len.to_le_bytes());
        };
        let mut shb = BOM.to_le_bytes().to_vec();
        shb.extend_from_slice(&[1, 0, 0, 0]);
        shb.extend_from_slice(&u64::MAX.to_le_bytes());
        block(PCAPNG_SHB, &shb);
        block(1, &[1, 0, 0, 0, 0, 0, 4, 0]);
        let mut epb = vec![0u8; 12];
        epb.extend_from_slice(&caplen.to_le_bytes());
        epb.extend_from_slice(&orig.to_le_bytes());
        epb.extend_from_slice(data);
        while epb.len() % 4 != 0 {
            epb.push(0);
        }
        block(6, &epb);
        b
    }

    #[test]
    fn pcapng_caplen_contradicting_the_block_is_an_error_with_the_offset() {
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&[0x08, 0x00]);
        frame.extend_from_slice(&ipv4_bytes());
        let good = pcapng_epb(&frame, frame.len() as u32, frame.len() as u32);
        let c = parse_bytes(&good).unwrap();
        assert_eq!(c.packets[0].ipv4(), Some(&ipv4_bytes()[..]));
        let epb_at = 28 + 20;
        let r = Reader::new(&good).unwrap().next().unwrap().unwrap();
        assert_eq!(r.offset, epb_at, "records know where they are");
        // caplen 0 (or 8) in a block that holds 38 bytes of frame: before this check
        // the frame read as 0 bytes, i.e. silently as "not IPv4"
        for cap in [0u32, 8] {
            let bad = pcapng_epb(&frame, cap, frame.len() as u32);
            match parse_bytes(&bad) {
                Err(PcapError::Malformed { offset, what }) => {
                    assert_eq!(offset, epb_at);
                    assert!(what.contains("captured length contradicts the block"), "{what}");
                }
                other => panic!("caplen {cap}: {other:?}"),
            }
        }
        // options after the data are fine (epb_flags, then opt_endofopt)
        let mut with_opt = frame.clone();
        with_opt.extend_from_slice(&[0, 0, 2, 0, 4, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        let ok = pcapng_epb(&with_opt, frame.len() as u32, frame.len() as u32);
        assert_eq!(parse_bytes(&ok).unwrap().packets[0].data.len(), frame.len());
    }

    #[test]
    fn tsresol_conversion() {
        let mut i = Interface::new(1, 0, Resol::Pow10(6));
        assert_eq!(i.to_nanos(1_500_000), 1_500_000_000);
        i.resol = Resol::Pow10(9);
        assert_eq!(i.to_nanos(7), 7);
        i.resol = Resol::Pow10(12);
        assert_eq!(i.to_nanos(7_000), 7);
        i.resol = Resol::Pow10(127);
        assert_eq!(i.to_nanos(u64::MAX), 0);
        i.resol = Resol::Pow2(10);
        assert_eq!(i.to_nanos(1024), 1_000_000_000);
        i.resol = Resol::Pow2(0);
        assert_eq!(i.to_nanos(u64::MAX), u64::MAX, "saturates");
        i.resol = Resol::Pow10(0);
        i.offset_s = -5;
        assert_eq!(i.to_nanos(3), 0, "clamps below zero");
        i.offset_s = 1;
        assert_eq!(i.to_nanos(3), 4_000_000_000);
    }
}
