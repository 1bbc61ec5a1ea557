//! Test helpers: segment building and the tshark cross-check.
#![allow(dead_code)]
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use wirelab_analyze::Analysis;
use wirelab_wire::{checksum, Ipv4Repr};

pub const SYN: u8 = 0x02;
pub const ACK: u8 = 0x10;
pub const PSH: u8 = 0x08;

/// An IPv4 datagram carrying one TCP segment with optional SACK blocks.
#[allow(clippy::too_many_arguments)]
pub fn datagram(
    src: (Ipv4Addr, u16),
    dst: (Ipv4Addr, u16),
    seq: u32,
    ack: u32,
    flags: u8,
    sack: &[(u32, u32)],
    payload_len: usize,
    ident: u16,
) -> Vec<u8> {
    let mut opts = Vec::new();
    if !sack.is_empty() {
        opts.extend_from_slice(&[1, 1, 5, 2 + 8 * sack.len() as u8]);
        for &(l, r) in sack {
            opts.extend_from_slice(&l.to_be_bytes());
            opts.extend_from_slice(&r.to_be_bytes());
        }
    }
    let doff = 20 + opts.len();
    let mut seg = vec![0u8; doff + payload_len];
    seg[0..2].copy_from_slice(&src.1.to_be_bytes());
    seg[2..4].copy_from_slice(&dst.1.to_be_bytes());
    seg[4..8].copy_from_slice(&seq.to_be_bytes());
    seg[8..12].copy_from_slice(&ack.to_be_bytes());
    seg[12] = ((doff / 4) as u8) << 4;
    seg[13] = flags;
    seg[14..16].copy_from_slice(&65535u16.to_be_bytes());
    seg[20..doff].copy_from_slice(&opts);
    for (i, b) in seg[doff..].iter_mut().enumerate() {
        *b = i as u8;
    }
    let c = checksum::transport(src.0, dst.0, 6, &seg);
    seg[16..18].copy_from_slice(&c.to_be_bytes());
    let ip = Ipv4Repr {
        src: src.0,
        dst: dst.0,
        protocol: 6,
        payload_len: seg.len(),
        ttl: 64,
        tos: 0,
        ident,
        dont_frag: true,
    };
    let mut out = vec![0u8; 20 + seg.len()];
    ip.emit(&mut out[..20]);
    out[20..].copy_from_slice(&seg);
    out
}

/// What tshark says about one frame.
#[derive(Debug, Default, Clone)]
pub struct TsharkFrame {
    pub len: u32,
    pub acks_frame: Option<u32>,
    pub ack_rtt_ns: Option<i64>,
    /// retransmission, fast_retransmission or spurious_retransmission.
    pub retx: bool,
    /// out_of_order.
    pub ooo: bool,
}

pub fn tshark_available() -> bool {
    Command::new("tshark").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn secs_to_ns(s: &str) -> i64 {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    let mut f = f.to_string();
    f.truncate(9);
    while f.len() < 9 {
        f.push('0');
    }
    i.parse::<i64>().unwrap() * 1_000_000_000 + f.parse::<i64>().unwrap()
}

/// Runs tshark over `path`, frame number → analysis fields.
pub fn tshark(path: &Path) -> BTreeMap<u32, TsharkFrame> {
    let out = Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-Y", "tcp", "-T", "fields", "-E", "separator=|", "-E", "occurrence=f"])
        .args(["-e", "frame.number", "-e", "tcp.len", "-e", "tcp.analysis.acks_frame", "-e", "tcp.analysis.ack_rtt"])
        .args(["-e", "tcp.analysis.retransmission", "-e", "tcp.analysis.fast_retransmission"])
        .args(["-e", "tcp.analysis.spurious_retransmission", "-e", "tcp.analysis.out_of_order"])
        .output()
        .expect("run tshark");
    assert!(out.status.success(), "tshark: {}", String::from_utf8_lossy(&out.stderr));
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split('|').collect();
        if f.len() < 8 {
            continue;
        }
        m.insert(
            f[0].parse().unwrap(),
            TsharkFrame {
                len: f[1].parse().unwrap_or(0),
                acks_frame: f[2].parse().ok(),
                ack_rtt_ns: (!f[3].is_empty()).then(|| secs_to_ns(f[3])),
                retx: f[4..7].iter().any(|x| !x.is_empty()),
                ooo: !f[7].is_empty(),
            },
        );
    }
    m
}

/// Cross-checks an analysis against tshark's `tcp.analysis` of the same capture:
///
/// * the data frames tshark flags as retransmission / fast / spurious / out-of-order are
///   exactly the ones we count as retransmissions or out-of-order; all of tshark's
///   retransmissions are ours, and our out-of-order ones are tshark's (we call a segment
///   whose bytes we saw sent before a retransmission even when tshark's timing test
///   calls it out-of-order);
/// * for every ACK frame F where tshark reports `acks_frame` D and `ack_rtt` r: when D is
///   the first transmission of a range of ours that was never retransmitted, that range
///   was first acked by F and our latency equals r to the µs; when it was retransmitted,
///   ours (from the first transmission) is at least r.
///
/// Returns (ack_rtt values matched exactly, ack_rtt values of retransmitted ranges or
/// ranges whose first transmission the capture missed).
pub fn compare_with_tshark(a: &Analysis, ts: &BTreeMap<u32, TsharkFrame>) -> (usize, usize) {
    let pick = |f: &dyn Fn(&TsharkFrame) -> bool| -> Vec<u32> {
        ts.iter().filter(|(_, t)| t.len > 0 && f(t)).map(|(&n, _)| n).collect()
    };
    let their_retx = pick(&|t| t.retx);
    let their_ooo = pick(&|t| t.ooo);
    let their_any = pick(&|t| t.retx || t.ooo);
    let mut ours: Vec<u32> = a.retransmissions.iter().map(|r| r.frame).collect();
    ours.sort_unstable();
    let mut ours_any = ours.clone();
    ours_any.extend(a.out_of_order.iter().map(|r| r.frame));
    ours_any.sort_unstable();
    assert_eq!(ours_any, their_any, "retransmitted or out-of-order frames: ours vs tshark");
    assert!(their_retx.iter().all(|f| ours.contains(f)), "tshark's retransmissions are ours");
    assert!(a.out_of_order.iter().all(|r| their_ooo.contains(&r.frame)), "our out-of-order are tshark's");
    let by_first: BTreeMap<u32, &wirelab_analyze::SegmentRow> =
        a.segments.iter().map(|r| (r.first_frame, r)).collect();
    let (mut exact, mut retx) = (0, 0);
    for (&f, t) in ts {
        let (Some(d), Some(rtt)) = (t.acks_frame, t.ack_rtt_ns) else { continue };
        let Some(row) = by_first.get(&d) else { continue };
        if row.original_unseen {
            // no latency (first transmission unknown); the ACK and its delay from the
            // first copy seen still agree
            assert_eq!(row.acked_frame, Some(f), "range first seen in frame {d}");
            let seen = row.acked_ns.unwrap() - row.first_sent_ns;
            assert!((seen - rtt).abs() < 1000, "frame {d}: ours {seen} ns, tshark {rtt} ns");
            retx += 1;
            continue;
        }
        let lat = row.latency_ns.expect("tshark saw an ACK for a range we never saw acked");
        if row.retransmissions == 0 {
            assert_eq!(row.acked_frame, Some(f), "range first sent in frame {d}");
            assert!((lat - rtt).abs() < 1000, "frame {d}: ours {lat} ns, tshark {rtt} ns");
            exact += 1;
        } else {
            assert!(lat >= rtt - 1000, "frame {d}: ours {lat} ns < tshark {rtt} ns");
            retx += 1;
        }
    }
    (exact, retx)
}
