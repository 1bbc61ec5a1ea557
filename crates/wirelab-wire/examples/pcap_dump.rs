//! Prints one line per packet of a pcap/pcapng file, using wirelab's reader and decoders:
//! `cargo run -p wirelab-wire --example pcap_dump -- FILE`.
use std::io::Write;
use wirelab_wire::icmp::{IcmpPacket, IcmpRepr};
use wirelab_wire::{ip_proto, pcap, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr, WireError};

fn describe(ip: &[u8]) -> String {
    let Ok(v) = Ipv4Packet::new_checked(ip) else {
        return format!("IPv4 truncated or malformed ({} bytes)", ip.len());
    };
    let (s, d) = (v.src_addr(), v.dst_addr());
    let ip_ok = match Ipv4Repr::parse(&v) {
        Ok(_) => "ok".to_string(),
        Err(e) => e.to_string(),
    };
    let l4 = match v.protocol() {
        ip_proto::UDP => match UdpPacket::new_checked(v.payload()) {
            Ok(u) => {
                let verdict = match UdpRepr::parse(&u, s, d) {
                    Ok(_) => "ok",
                    Err(WireError::Checksum) if u.checksum_is_partial(s, d) => {
                        "ok (offloaded checksum)"
                    }
                    Err(WireError::Checksum) => "bad checksum",
                    Err(_) => "malformed",
                };
                format!("{u} -> {verdict}")
            }
            Err(e) => format!("UDP {e}"),
        },
        ip_proto::ICMP => match IcmpPacket::new_checked(v.payload()) {
            Ok(c) => match IcmpRepr::parse(&c) {
                Ok(_) => format!("{c} -> ok"),
                Err(e) => format!("{c} -> {e}"),
            },
            Err(e) => format!("ICMP {e}"),
        },
        p => format!("proto {p}"),
    };
    format!("{s} > {d} ip {ip_ok}; {l4}")
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: pcap_dump FILE");
        std::process::exit(2);
    };
    let cap = match pcap::read_capture(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let mut out = std::io::stdout().lock();
    let mut lines = vec![format!(
        "{:?}, {} interface(s)",
        cap.format,
        cap.interfaces.len()
    )];
    for (i, f) in cap.interfaces.iter().enumerate() {
        lines.push(format!(
            "  if{i}: linktype {} name {:?} desc {:?}",
            f.linktype, f.name, f.description
        ));
    }
    for line in lines {
        if writeln!(out, "{line}").is_err() {
            return;
        }
    }
    for p in &cap.packets {
        let t = p.ts_ns;
        let body = match p.ipv4() {
            Some(ip) => describe(ip),
            None => format!("non-IPv4 (linktype {})", p.linktype),
        };
        let line = format!(
            "{}.{:09} if{} len {} {body}",
            t / 1_000_000_000,
            t % 1_000_000_000,
            p.iface,
            p.orig_len
        );
        if writeln!(out, "{line}").is_err() {
            return; // e.g. a closed pipe
        }
    }
}
