//! Cross-checks our emitters and writers against Wireshark's dissectors: captures of UDP
//! and ICMP written by wirelab must show no malformed packets and no checksum errors with
//! every checksum check enabled, and a deliberately corrupted capture must be flagged (so
//! the check itself is known to work). Skipped, with a note, when `tshark` is absent.
mod common;

use common::*;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use wirelab_core::Instant;
use wirelab_wire::ethernet::mac_for;
use wirelab_wire::icmp::{IcmpRepr, Quote, TimeExceededCode, UnreachCode};
use wirelab_wire::pcap::{linktype, PcapWriter, PcapngWriter};

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);

fn tshark_available() -> bool {
    Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Datagrams covering every emitter: UDP of several sizes, echo request/reply, protocol
/// and port unreachable with both quote styles, fragmentation needed, TTL exceeded.
fn datagrams() -> Vec<Vec<u8>> {
    let big: Vec<u8> = (0..1472u32).map(|i| (i * 31) as u8).collect();
    let offending = udp_datagram(A, B, 40000, 9999, &big[..200]);
    let mut v = vec![
        udp_datagram(A, B, 40000, 9999, b""),
        udp_datagram(A, B, 40000, 9999, b"hello, wireshark"),
        udp_datagram(B, A, 9999, 40000, &big),
        udp_datagram(A, B, 40001, 9999, &big[..33]),
    ];
    let echo = IcmpRepr::EchoRequest {
        ident: 0x4242,
        seq_no: 1,
        data: &big[..56],
    };
    v.push(icmp_datagram(A, B, &echo));
    let reply = IcmpRepr::EchoReply {
        ident: 0x4242,
        seq_no: 1,
        data: &big[..56],
    };
    v.push(icmp_datagram(B, A, &reply));
    for (code, quote) in [
        (UnreachCode::PortUnreachable, Quote::Rfc792),
        (UnreachCode::ProtoUnreachable, Quote::Linux),
        (UnreachCode::PortUnreachable, Quote::Linux),
    ] {
        v.push(icmp_datagram(
            B,
            A,
            &IcmpRepr::dst_unreachable(code, &offending, quote),
        ));
    }
    let frag = IcmpRepr::DstUnreachable {
        code: UnreachCode::FragRequired,
        next_hop_mtu: 1400,
        original: Quote::Rfc792.apply(&offending),
    };
    v.push(icmp_datagram(B, A, &frag));
    let ttl = IcmpRepr::TimeExceeded {
        code: TimeExceededCode::TtlExpired,
        original: Quote::Rfc792.apply(&offending),
    };
    v.push(icmp_datagram(B, A, &ttl));
    v
}

fn write_classic(path: &Path, lt: u32, pkts: &[Vec<u8>]) {
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = PcapWriter::with_linktype(f, lt).unwrap();
    for (i, d) in pkts.iter().enumerate() {
        let t = Instant::from_nanos(1_000_000_007 * i as u64);
        w.write_ipv4_as_ethernet(t, mac_for(1, 0), mac_for(2, 0), d)
            .unwrap();
    }
    w.into_inner().unwrap();
}

fn write_ng(path: &Path, pkts: &[Vec<u8>]) {
    let f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut w = PcapngWriter::new(f).unwrap();
    w.add_interface(linktype::ETHERNET, "h1-eth0", "path A")
        .unwrap();
    w.add_interface(linktype::RAW, "h1-eth1", "path B").unwrap();
    for (i, d) in pkts.iter().enumerate() {
        let t = Instant::from_nanos(123_456_789 * i as u64);
        let iface = i as u32 % 2;
        w.write_ipv4_as_ethernet(iface, t, mac_for(1, iface), mac_for(2, 0), d)
            .unwrap();
    }
    w.into_inner().unwrap();
}

fn tshark(args: &[&str]) -> String {
    let out = Command::new("tshark")
        .args(args)
        .output()
        .expect("run tshark");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "tshark {args:?} failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// ICMP checksums are always checked; IP and UDP only when asked.
const CHECKS: [&str; 4] = [
    "-o",
    "ip.check_checksum:TRUE",
    "-o",
    "udp.check_checksum:TRUE",
];

/// Frames tshark flags: malformed, or any expert item of warning severity or above.
fn flagged(path: &Path) -> String {
    let p = path.to_str().unwrap();
    let mut args = vec!["-n", "-r", p];
    args.extend(CHECKS);
    // the bare _ws.malformed/_ws.expert fields exist only on flagged frames
    args.extend(["-Y", "_ws.malformed || _ws.expert.severity >= 0x00600000"]);
    tshark(&args)
}

#[test]
fn tshark_accepts_our_captures() {
    if !tshark_available() {
        eprintln!("note: tshark not installed; skipping the Wireshark cross-check");
        return;
    }
    let pkts = datagrams();
    let classic = temp_path("tshark-eth.pcap");
    let raw = temp_path("tshark-raw.pcap");
    let ng = temp_path("tshark.pcapng");
    write_classic(&classic, linktype::ETHERNET, &pkts);
    write_classic(&raw, linktype::RAW, &pkts);
    write_ng(&ng, &pkts);

    for path in [&classic, &raw, &ng] {
        let bad = flagged(path);
        assert!(
            bad.trim().is_empty(),
            "{} has flagged frames:\n{bad}",
            path.display()
        );
        // every frame was decoded down to UDP or ICMP, checksums verified as good
        let p = path.to_str().unwrap();
        let mut args = vec!["-n", "-r", p];
        args.extend(CHECKS);
        args.extend([
            "-T",
            "fields",
            "-e",
            "ip.proto",
            "-e",
            "ip.checksum.status",
            "-e",
            "udp.checksum.status",
            "-e",
            "icmp.checksum_bad",
            "-e",
            "icmp.type",
            "-e",
            "icmp.code",
        ]);
        let rows = tshark(&args);
        let rows: Vec<&str> = rows.lines().collect();
        assert_eq!(rows.len(), pkts.len(), "{}: {rows:?}", path.display());
        let udp = rows.iter().filter(|r| r.starts_with("17\t")).count();
        // ICMP errors also show the quoted header: ip.proto "1,17"
        let icmp = rows
            .iter()
            .filter(|r| r.starts_with("1\t") || r.starts_with("1,"))
            .count();
        assert_eq!((udp, icmp), (4, pkts.len() - 4), "{rows:?}");
        for r in &rows {
            let f: Vec<&str> = r.split('\t').collect();
            // checksum status: PROTO_CHECKSUM_E_BAD = 0, _GOOD = 1, _UNVERIFIED = 2 (a
            // quoted, truncated UDP header cannot be verified)
            assert!(
                f[1].split(',').all(|s| s == "1"),
                "IP checksum not good: {r}"
            );
            if f[0] == "17" {
                assert_eq!(f[2], "1", "UDP checksum not good: {r}");
            }
        }
        let types: Vec<&str> = rows.iter().filter_map(|r| r.split('\t').nth(4)).collect();
        assert!(
            types.iter().any(|t| t.starts_with('3')),
            "no unreachable: {types:?}"
        );
        assert!(
            types.iter().any(|t| t.starts_with("11")),
            "no time exceeded: {types:?}"
        );
    }

    // pcapng keeps interfaces apart
    let p = ng.to_str().unwrap();
    let names = tshark(&["-n", "-r", p, "-T", "fields", "-e", "frame.interface_name"]);
    let names: Vec<&str> = names.lines().collect();
    assert_eq!(names[..2], ["h1-eth0", "h1-eth1"]);

    // and the check can fail: corrupt one UDP payload byte
    let mut bad = pkts.clone();
    let last = bad[1].len() - 1;
    bad[1][last] ^= 0x01;
    let corrupt = temp_path("tshark-bad.pcap");
    write_classic(&corrupt, linktype::ETHERNET, &bad);
    let flagged_bad = flagged(&corrupt);
    if std::env::var_os("WIRELAB_KEEP_PCAPS").is_none() {
        for f in [classic, raw, ng, corrupt] {
            let _ = std::fs::remove_file(f);
        }
    }
    assert_eq!(
        flagged_bad.lines().count(),
        1,
        "corruption not flagged:\n{flagged_bad}"
    );
}

/// Captures re-written by Wireshark's `editcap` (µs and ns classic pcap, pcapng with
/// Wireshark's own blocks and options) read back to the same packets with our reader.
#[test]
fn editcap_rewrites_read_back() {
    let ok = Command::new("editcap")
        .arg("-h")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: editcap not installed; skipping the third-party writer check");
        return;
    }
    let pkts = datagrams();
    let eth = temp_path("editcap-src.pcap");
    let ng = temp_path("editcap-src.pcapng");
    write_classic(&eth, linktype::ETHERNET, &pkts);
    write_ng(&ng, &pkts);
    let ours_eth = wirelab_wire::pcap::read_file(&eth).unwrap();
    let ours_ng = wirelab_wire::pcap::read_capture(&ng).unwrap();
    let mut tmp = vec![eth.clone(), ng.clone()];
    for (src, fmt, us) in [
        (&eth, "pcap", true),
        (&eth, "nsecpcap", false),
        (&eth, "pcapng", false),
        (&ng, "pcapng", false),
    ] {
        let out = temp_path(&format!("editcap-{fmt}-{}", tmp.len()));
        let st = Command::new("editcap")
            .args(["-F", fmt])
            .arg(src)
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "editcap -F {fmt}: {}",
            String::from_utf8_lossy(&st.stderr)
        );
        tmp.push(out.clone());
        let cap = wirelab_wire::pcap::read_capture(&out).unwrap();
        let want = if src == &ng {
            &ours_ng.packets
        } else {
            &ours_eth
        };
        assert_eq!(cap.packets.len(), want.len(), "{fmt}");
        for (a, b) in cap.packets.iter().zip(want) {
            let ts = if us { b.ts_ns / 1000 * 1000 } else { b.ts_ns };
            assert_eq!(
                (a.ts_ns, a.iface, a.linktype),
                (ts, b.iface, b.linktype),
                "{fmt}"
            );
            assert_eq!(a.ipv4(), b.ipv4(), "{fmt}");
        }
        if src == &ng {
            let names: Vec<_> = cap.interfaces.iter().map(|i| i.name.clone()).collect();
            let want: Vec<_> = ours_ng.interfaces.iter().map(|i| i.name.clone()).collect();
            assert_eq!(names, want);
        }
    }
    for f in tmp {
        let _ = std::fs::remove_file(f);
    }
}
