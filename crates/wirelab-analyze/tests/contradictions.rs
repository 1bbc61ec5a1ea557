//! Captures that contradict themselves (issue 22, item 7): a link type the frames do not
//! match, a captured length above the original length, a pcapng captured length that
//! disagrees with its block. Before, each was read silently: every frame counted as
//! "not IPv4" and the analysis came out empty.
mod common;

use common::*;
use std::net::Ipv4Addr;
use wirelab_analyze::{analyze_bytes, load_bytes, AnalyzeOptions};
use wirelab_core::{Duration, Instant};
use wirelab_wire::pcap::{linktype, PcapWriter};

fn segments() -> Vec<Vec<u8>> {
    let a = (Ipv4Addr::new(10, 0, 0, 1), 1000);
    let b = (Ipv4Addr::new(10, 0, 0, 2), 80);
    (0..6u32).flat_map(|i| [datagram(a, b, 1 + 100 * i, 1, ACK, &[], 100, i as u16), datagram(b, a, 1, 101 + 100 * i, ACK, &[], 0, i as u16)]).collect()
}

/// A classic pcap whose header says `lt`, holding the frames as given, with each
/// record's original length patched to its captured length + `orig_extra` (the writer
/// itself never writes an original length below the captured one).
fn classic(lt: u32, frames: &[Vec<u8>], orig_extra: i64) -> Vec<u8> {
    let mut w = PcapWriter::with_linktype(Vec::new(), lt).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(Instant::ZERO + Duration::from_millis(i as u64), f, f.len() as u32).unwrap();
    }
    let mut b = w.into_inner().unwrap();
    let mut at = 24;
    for f in frames {
        let orig = (f.len() as i64 + orig_extra) as u32;
        b[at + 12..at + 16].copy_from_slice(&orig.to_le_bytes());
        at += 16 + f.len();
    }
    b
}

fn ethernet(ip: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(ip);
    f
}

#[test]
fn raw_ip_frames_under_an_ethernet_header_are_rejected_with_the_offset() {
    let frames = segments();
    // control: the same frames with the right link type analyse
    let good = classic(linktype::RAW, &frames, 0);
    let a = analyze_bytes(&good, None, &AnalyzeOptions::default()).unwrap();
    assert_eq!(a.flows.len(), 1);
    let bad = classic(linktype::ETHERNET, &frames, 0);
    let e = analyze_bytes(&bad, None, &AnalyzeOptions::default()).unwrap_err().to_string();
    // the first record starts after the 24-byte file header
    assert!(e.starts_with("sender: byte 24: the capture says link type 1 (Ethernet)"), "{e}");
    assert!(e.contains("as link type 101 (raw IP)") && e.contains("12 of the frames"), "{e}");
}

#[test]
fn ethernet_frames_under_a_raw_header_are_rejected() {
    let frames: Vec<Vec<u8>> = segments().iter().map(|s| ethernet(s)).collect();
    let bad = classic(linktype::RAW, &frames, 0);
    let e = load_bytes("cap.pcap", &bad, false).unwrap_err().to_string();
    assert!(e.starts_with("cap.pcap: byte 24: the capture says link type 101 (raw IP)") && e.contains("as link type 1 (Ethernet)"), "{e}");
}

#[test]
fn one_contradicting_frame_among_good_ones_is_a_warning_or_a_strict_error() {
    let mut frames: Vec<Vec<u8>> = segments().iter().map(|s| ethernet(s)).collect();
    frames[3] = segments()[3].clone(); // one raw frame in an Ethernet capture
    let b = classic(linktype::ETHERNET, &frames, 0);
    let l = load_bytes("cap", &b, false).unwrap();
    assert_eq!(l.stats.linktype_mismatch, 1);
    assert_eq!(l.stats.tcp, 11);
    // the 4th record: header 24 + three records of 16 + 14 + 120 / 16 + 14 + 20 bytes
    let at = 24 + 2 * (16 + 14 + 140) + (16 + 14 + 40);
    let w = l.warnings.iter().find(|w| w.contains("link type")).expect("a warning");
    assert!(w.contains(&format!("packet 4 (byte {at})")) && w.contains("as link type 101"), "{w}");
    let e = load_bytes("cap", &b, true).unwrap_err().to_string();
    assert!(e.starts_with(&format!("cap: byte {at}: packet 4: not IPv4 as link type 1")), "{e}");
}

#[test]
fn captured_length_above_the_original_length_is_reported() {
    let b = classic(linktype::RAW, &segments(), -10);
    let l = load_bytes("cap", &b, false).unwrap();
    assert_eq!(l.stats.caplen_exceeds_origlen, 12);
    assert!(l.warnings[0].contains("packet 1 (byte 24): captured length 140 exceeds its original length 130"), "{:?}", l.warnings);
    let e = load_bytes("cap", &b, true).unwrap_err().to_string();
    assert_eq!(e, "cap: byte 24: packet 1: captured length 140 exceeds its original length 130");
}

#[test]
fn a_link_type_analyze_cannot_read_is_an_error_not_an_empty_analysis() {
    let b = classic(147, &segments(), 0);
    let e = load_bytes("cap", &b, false).unwrap_err().to_string();
    assert!(e.starts_with("cap: byte 24: link type 147 is not one analyze reads") && e.contains("none of the 12 frames"), "{e}");
}

#[test]
fn pcapng_captured_length_contradicting_its_block_is_rejected() {
    let mut w = wirelab_wire::pcap::PcapngWriter::new(Vec::new()).unwrap();
    let i = w.add_interface(linktype::RAW, "eth0", "").unwrap();
    for (k, s) in segments().iter().enumerate() {
        w.write_packet(i, Instant::ZERO + Duration::from_millis(k as u64), s, s.len() as u32).unwrap();
    }
    let mut b = w.into_inner().unwrap();
    assert!(load_bytes("ok", &b, false).is_ok());
    // the first EPB follows the SHB and the IDB; its caplen field is at +20
    let shb = u32::from_le_bytes(b[4..8].try_into().unwrap()) as usize;
    let idb = u32::from_le_bytes(b[shb + 4..shb + 8].try_into().unwrap()) as usize;
    let epb = shb + idb;
    b[epb + 20..epb + 24].copy_from_slice(&20u32.to_le_bytes());
    let e = load_bytes("ng", &b, false).unwrap_err().to_string();
    assert_eq!(e, format!("ng: malformed record or block at byte {epb}: captured length contradicts the block length (the bytes after the packet data are not options)"));
}
