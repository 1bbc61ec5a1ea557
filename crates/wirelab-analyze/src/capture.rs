//! Loading a capture into decoded TCP segments, counting what could not be used.
use crate::decode::{decode_ipv4_tcp, Decoded, TcpSeg};
use crate::AnalyzeError;
use serde::Serialize;
use std::path::Path;
use wirelab_wire::pcap::{PcapError, Reader};

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

/// Decodes a capture held in memory. `name` labels messages. With `strict`, the first
/// undecodable frame or a file cut short is an error; otherwise they are counted and
/// the first few reported in [`Loaded::warnings`].
pub fn load_bytes(name: &str, bytes: &[u8], strict: bool) -> Result<Loaded, AnalyzeError> {
    let reader = Reader::new(bytes).map_err(|e| AnalyzeError::capture(name, e))?;
    let mut out = Loaded::default();
    let warn = |out: &mut Loaded, msg: String| {
        if out.warnings.len() < MAX_WARNINGS {
            out.warnings.push(msg);
        }
    };
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
        let (Some(off), Some(ip)) = (rec.ip_offset, rec.ipv4()) else {
            out.stats.non_ipv4 += 1;
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
    Ok(out)
}

/// Reads and decodes a capture file (classic pcap, µs or ns, either byte order; pcapng).
pub fn load_file(path: &Path, strict: bool) -> Result<Loaded, AnalyzeError> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| AnalyzeError::Io { path: name.clone(), source: e })?;
    load_bytes(&name, &bytes, strict)
}
