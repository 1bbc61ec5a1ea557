//! Loading a capture into decoded TCP segments, counting what could not be used.
use crate::decode::{decode_ipv4_tcp, Decoded, TcpSeg};
use crate::AnalyzeError;
use serde::Serialize;
use std::path::Path;
use wirelab_wire::pcap::{ipv4_offset, linktype, PcapError, Reader};

/// How many per-packet warnings are kept verbatim (the rest are only counted).
pub const MAX_WARNINGS: usize = 20;

/// One TCP segment from a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Frame number, 1-based as in Wireshark.
    pub frame: u32,
    /// Capture timestamp in ns (as the file says: epoch or simulation time).
    pub ts_ns: u64,
    /// The decoded headers.
    pub seg: TcpSeg,
}

/// What was in a capture, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CaptureStats {
    /// Frames read.
    pub frames: u64,
    /// TCP segments decoded.
    pub tcp: u64,
    /// Frames not carrying IPv4 (ARP, IPv6, unknown link types).
    pub non_ipv4: u64,
    /// IPv4 datagrams of other protocols.
    pub non_tcp: u64,
    /// TCP segments whose payload the snaplen cut (headers intact: still analysed).
    pub snaplen_cut: u64,
    /// TCP segments whose options were cut (SACK blocks may be missing).
    pub options_cut: u64,
    /// Frames skipped because their IPv4/TCP headers were cut or malformed.
    pub undecodable: u64,
    /// The file ended inside a record (the packets before it were used).
    pub file_cut_short: bool,
    /// Frames that are not IPv4 under the file's link type but are under another: the
    /// link type in the file (or interface) header contradicts the frames.
    pub linktype_mismatch: u64,
    /// Frames whose captured length exceeds their original length (on the wire).
    pub caplen_exceeds_origlen: u64,
}

/// A capture decoded to TCP segments.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    /// TCP segments in file order.
    pub packets: Vec<Packet>,
    /// Counts.
    pub stats: CaptureStats,
    /// The first [`MAX_WARNINGS`] problems, as "NAME: packet N: reason".
    pub warnings: Vec<String>,
}

/// Link types `wirelab analyze` finds IPv4 in.
const KNOWN: &[u32] = &[linktype::ETHERNET, linktype::RAW, linktype::IPV4, linktype::LINUX_SLL, linktype::LINUX_SLL2, linktype::NULL, linktype::LOOP];

fn linktype_name(lt: u32) -> &'static str {
    match lt {
        linktype::ETHERNET => "Ethernet",
        linktype::RAW => "raw IP",
        linktype::IPV4 => "raw IPv4",
        linktype::LINUX_SLL => "Linux cooked v1",
        linktype::LINUX_SLL2 => "Linux cooked v2",
        linktype::NULL => "BSD loopback",
        linktype::LOOP => "OpenBSD loopback",
        _ => "unknown to wirelab analyze",
    }
}

/// A link type other than `lt` under which `frame` holds an IPv4 header whose checksum
/// verifies (so not by chance): evidence that the file names the wrong link type.
fn contradicting_linktype(frame: &[u8], lt: u32) -> Option<u32> {
    let tries = [linktype::ETHERNET, linktype::RAW, linktype::LINUX_SLL, linktype::LINUX_SLL2, linktype::NULL];
    tries.into_iter().filter(|&x| x != lt && !(lt == linktype::IPV4 && x == linktype::RAW)).find(|&x| {
        ipv4_offset(x, frame).is_some_and(|o| {
            let ip = &frame[o..];
            let ihl = (ip[0] & 0x0f) as usize * 4;
            ihl >= 20 && ip.len() >= ihl && wirelab_wire::checksum::finish(wirelab_wire::checksum::sum(&ip[..ihl])) == 0
        })
    })
}

/// Decodes a capture held in memory. `name` labels messages. With `strict`, the first
/// undecodable frame, a file cut short, or a frame that contradicts the file's link type
/// or its own original length is an error; otherwise they are counted and the first few
/// reported in [`Loaded::warnings`]. A capture in which no frame is IPv4 under its link
/// type is an error when the frames contradict that link type (they are IPv4 under
/// another one) or the link type is one analyze does not read: analysing it would
/// silently report nothing.
pub fn load_bytes(name: &str, bytes: &[u8], strict: bool) -> Result<Loaded, AnalyzeError> {
    let reader = Reader::new(bytes).map_err(|e| AnalyzeError::capture(name, e))?;
    let mut out = Loaded::default();
    let warn = |out: &mut Loaded, msg: String| {
        if out.warnings.len() < MAX_WARNINGS {
            out.warnings.push(msg);
        }
    };
    let contradiction = |offset: usize, message: String| AnalyzeError::Contradiction { path: name.to_string(), offset, message };
    // (byte offset, file link type, link type that works) of the first mismatch
    let mut first_mismatch: Option<(usize, u32, u32)> = None;
    let mut unknown: Vec<(u32, usize)> = Vec::new();
    for (i, rec) in reader.enumerate() {
        let frame = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let rec = match rec {
            Ok(r) => r,
            Err(PcapError::Truncated { offset }) if !strict => {
                // A capture killed mid-write: keep what came before.
                out.stats.file_cut_short = true;
                warn(&mut out, format!("{name}: file cut short at byte {offset}; {} frames used", i));
                break;
            }
            Err(e) => return Err(AnalyzeError::capture(name, e)),
        };
        out.stats.frames += 1;
        if rec.data.len() > rec.orig_len as usize {
            let msg = format!("captured length {} exceeds its original length {}", rec.data.len(), rec.orig_len);
            if strict {
                return Err(contradiction(rec.offset, format!("packet {frame}: {msg}")));
            }
            out.stats.caplen_exceeds_origlen += 1;
            warn(&mut out, format!("{name}: packet {frame} (byte {}): {msg}", rec.offset));
        }
        let (Some(off), Some(ip)) = (rec.ip_offset, rec.ipv4()) else {
            out.stats.non_ipv4 += 1;
            if !KNOWN.contains(&rec.linktype) {
                if !unknown.iter().any(|u| u.0 == rec.linktype) {
                    unknown.push((rec.linktype, rec.offset));
                    warn(&mut out, format!("{name}: packet {frame} (byte {}): link type {} is not one analyze reads (1 Ethernet, 101/228 raw IP, 113/276 Linux cooked, 0/108 loopback)", rec.offset, rec.linktype));
                }
            } else if let Some(alt) = contradicting_linktype(rec.data, rec.linktype) {
                let msg = format!(
                    "not IPv4 as link type {} ({}), but an IPv4 datagram as link type {alt} ({}): the capture's link type contradicts its frames",
                    rec.linktype,
                    linktype_name(rec.linktype),
                    linktype_name(alt)
                );
                if strict {
                    return Err(contradiction(rec.offset, format!("packet {frame}: {msg}")));
                }
                out.stats.linktype_mismatch += 1;
                if first_mismatch.is_none() {
                    first_mismatch = Some((rec.offset, rec.linktype, alt));
                    warn(&mut out, format!("{name}: packet {frame} (byte {}): {msg}", rec.offset));
                }
            }
            continue;
        };
        let wire_len = (rec.orig_len as usize).saturating_sub(off);
        match decode_ipv4_tcp(ip, wire_len) {
            Decoded::Tcp(seg) => {
                out.stats.tcp += 1;
                out.stats.snaplen_cut += seg.cut as u64;
                out.stats.options_cut += seg.options_cut as u64;
                out.packets.push(Packet { frame, ts_ns: rec.ts_ns, seg });
            }
            Decoded::NotTcp => out.stats.non_tcp += 1,
            Decoded::Bad(why) => {
                if strict {
                    return Err(AnalyzeError::Packet { file: name.to_string(), frame, reason: why });
                }
                out.stats.undecodable += 1;
                warn(&mut out, format!("{name}: packet {frame}: {why}"));
            }
        }
    }
    let ipv4 = out.stats.tcp + out.stats.non_tcp + out.stats.undecodable;
    if out.stats.frames > 0 && ipv4 == 0 {
        if let Some((at, lt, alt)) = first_mismatch {
            return Err(contradiction(
                at,
                format!(
                    "the capture says link type {lt} ({}), under which none of its {} frames is IPv4, but the frame here is an IPv4 datagram as link type {alt} ({}); {} of the frames are: fix the link type (e.g. editcap -T) rather than analyse an empty capture",
                    linktype_name(lt),
                    out.stats.frames,
                    linktype_name(alt),
                    out.stats.linktype_mismatch
                ),
            ));
        }
        if let Some(&(lt, at)) = unknown.first() {
            return Err(contradiction(at, format!("link type {lt} is not one analyze reads (1 Ethernet, 101/228 raw IP, 113/276 Linux cooked, 0/108 loopback): none of the {} frames could be decoded", out.stats.frames)));
        }
    }
    Ok(out)
}

/// Reads and decodes a capture file (classic pcap, µs or ns, either byte order; pcapng).
pub fn load_file(path: &Path, strict: bool) -> Result<Loaded, AnalyzeError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| AnalyzeError::Io { path: name.clone(), source: e })?;
    load_bytes(&name, &bytes, strict)
}
