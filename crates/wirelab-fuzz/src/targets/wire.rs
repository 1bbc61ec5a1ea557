//! Wire parsers: IPv4, UDP, ICMP, Ethernet (`wirelab-wire`), the TCP header and options
//! (`wirelab-tcp::wire`), the SCTP common header, chunks, parameters and error causes
//! (`wirelab-sctp::wire`).
//!
//! Input layout: byte 0 is a mode byte (bit 0: recompute the checksums before parsing, so
//! mutations get past the checksum and reach the field decoders), the rest is the header
//! and its payload. Besides "no panic", each target checks what the parser promises:
//! accepted input re-emits to the same bytes and re-parses to the same representation.
use std::net::Ipv4Addr;
use wirelab_sctp::wire::{Chunk, ChunkRepr, DataRepr, GapBlock, InitRepr, List, ParamRepr, SackRepr, SctpPacket, TlvIter, Tsn};
use wirelab_tcp::wire::{TcpPacket, TcpRepr};
use wirelab_wire::ethernet::{self, EthernetFrame};
use wirelab_wire::icmp::{IcmpPacket, IcmpRepr, Quote, Quoted, UnreachCode};
use wirelab_wire::{checksum, ip_proto, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr};

const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);

fn split(data: &[u8]) -> (bool, Vec<u8>) {
    match data.split_first() {
        Some((m, rest)) => (m & 1 != 0, rest.to_vec()),
        None => (false, Vec::new()),
    }
}

fn with_mode(fix: bool, b: &[u8]) -> Vec<u8> {
    let mut v = vec![fix as u8];
    v.extend_from_slice(b);
    v
}

// ---- IPv4 --------------------------------------------------------------------------------

/// A valid IPv4 datagram around `l4`.
pub fn ipv4_datagram(proto: u8, l4: &[u8]) -> Vec<u8> {
    let r = Ipv4Repr { src: SRC, dst: DST, protocol: proto, payload_len: l4.len(), ttl: 64, tos: 0, ident: 7, dont_frag: true };
    let mut b = vec![0u8; r.buffer_len() + l4.len()];
    r.emit(&mut b);
    b[20..].copy_from_slice(l4);
    b
}

pub(super) fn ipv4_seeds() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for (p, l4) in [(ip_proto::UDP, udp_bytes(b"hello")), (ip_proto::TCP, tcp_bytes(b"data")), (ip_proto::SCTP, sctp_bytes()), (ip_proto::ICMP, icmp_bytes())] {
        v.push(with_mode(false, &ipv4_datagram(p, &l4)));
        v.push(with_mode(true, &ipv4_datagram(p, &l4)));
    }
    // with options (IHL 6: a NOP and an end-of-list)
    let mut o = ipv4_datagram(ip_proto::UDP, &udp_bytes(b"x"));
    o[0] = 0x46;
    o.splice(20..20, [1, 0, 0, 0]);
    v.push(with_mode(true, &o));
    v
}

pub(super) fn ipv4(data: &[u8]) {
    let (fix, mut b) = split(data);
    if fix && b.len() >= 20 {
        let p = Ipv4Packet::new_unchecked(&mut b[..]);
        if (p.header_len() as usize) <= 60 && p.header_len() >= 20 && p.header_len() as usize <= p.into_inner().len() {
            let mut p = Ipv4Packet::new_unchecked(&mut b[..]);
            p.fill_checksum();
        }
    }
    let Ok(p) = Ipv4Packet::new_checked(&b[..]) else { return };
    let _ = (p.payload(), p.verify_checksum(), p.src_addr(), p.dst_addr(), p.frag_offset(), p.more_frags(), p.ttl(), p.tos());
    if let Ok(r) = Ipv4Repr::parse(&p) {
        assert_eq!(r.payload_len, p.payload().len());
        assert!(r.buffer_len() + r.payload_len <= b.len());
        // an option-less header (reserved flag clear) re-emits to the same bytes
        if p.header_len() == 20 && b[6] & 0x80 == 0 {
            let mut e = [0u8; 20];
            r.emit(&mut e);
            assert_eq!(&e[..], &b[..20]);
        }
        // the transport decoders behind it
        l4(r.protocol, r.src, r.dst, p.payload());
    }
}

/// Runs the transport decoder for `proto` on `b` (as a receiving stack would).
fn l4(proto: u8, src: Ipv4Addr, dst: Ipv4Addr, b: &[u8]) {
    match proto {
        ip_proto::UDP => udp_check(src, dst, b),
        ip_proto::ICMP => icmp_check(b),
        ip_proto::TCP => tcp_check(src, dst, b),
        ip_proto::SCTP => sctp_check(b),
        _ => {}
    }
}

// ---- UDP ---------------------------------------------------------------------------------

fn udp_bytes(payload: &[u8]) -> Vec<u8> {
    let r = UdpRepr { src_port: 4000, dst_port: 5001, payload_len: payload.len() };
    let mut b = vec![0u8; r.buffer_len()];
    b[8..].copy_from_slice(payload);
    r.emit(&mut b, SRC, DST);
    b
}

pub(super) fn udp_seeds() -> Vec<Vec<u8>> {
    vec![with_mode(false, &udp_bytes(b"0123456789abcdef")), with_mode(true, &udp_bytes(&[0; 1472])), with_mode(false, &udp_bytes(b""))]
}

pub(super) fn udp(data: &[u8]) {
    let (fix, mut b) = split(data);
    // (the setter trusts the length field: only for lengths that fit, as a stack would)
    if fix && b.len() >= 8 && (8..=b.len()).contains(&(u16::from_be_bytes([b[4], b[5]]) as usize)) {
        UdpPacket::new_unchecked(&mut b[..]).fill_checksum(SRC, DST);
    }
    udp_check(SRC, DST, &b);
}

fn udp_check(src: Ipv4Addr, dst: Ipv4Addr, b: &[u8]) {
    let _ = UdpPacket::new_unchecked(b).to_string();
    let Ok(p) = UdpPacket::new_checked(b) else { return };
    let _ = (p.payload(), p.verify_checksum(src, dst), p.checksum_is_partial(src, dst));
    if let Ok(r) = UdpRepr::parse(&p, src, dst) {
        assert_eq!(r.buffer_len(), p.len() as usize);
        assert!(r.buffer_len() <= b.len());
        let mut e = b[..r.buffer_len()].to_vec();
        r.emit(&mut e, src, dst);
        let q = UdpPacket::new_checked(&e[..]).expect("emitted UDP parses");
        assert_eq!(UdpRepr::parse(&q, src, dst), Ok(r));
    }
}

// ---- ICMP --------------------------------------------------------------------------------

fn icmp_bytes() -> Vec<u8> {
    let orig = ipv4_datagram(ip_proto::UDP, &udp_bytes(b"quoted payload"));
    let r = IcmpRepr::dst_unreachable(UnreachCode::PortUnreachable, &orig, Quote::Linux);
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut b);
    b
}

pub(super) fn icmp_seeds() -> Vec<Vec<u8>> {
    let echo = IcmpRepr::EchoRequest { ident: 1, seq_no: 2, data: b"ping" };
    let mut e = vec![0u8; echo.buffer_len()];
    echo.emit(&mut e);
    let orig = ipv4_datagram(ip_proto::TCP, &tcp_bytes(b""));
    let frag = IcmpRepr::DstUnreachable { code: UnreachCode::FragRequired, next_hop_mtu: 1400, original: &orig[..28] };
    let mut f = vec![0u8; frag.buffer_len()];
    frag.emit(&mut f);
    vec![with_mode(false, &icmp_bytes()), with_mode(true, &e), with_mode(false, &f)]
}

pub(super) fn icmp(data: &[u8]) {
    let (fix, mut b) = split(data);
    if fix && b.len() >= 8 {
        b[2] = 0;
        b[3] = 0;
        let c = checksum::finish(checksum::sum(&b));
        IcmpPacket::new_unchecked(&mut b[..]).set_checksum(c);
    }
    icmp_check(&b);
}

fn icmp_check(b: &[u8]) {
    let _ = IcmpPacket::new_unchecked(b).to_string();
    let _ = Quoted::parse(b);
    let Ok(p) = IcmpPacket::new_checked(b) else { return };
    let _ = (p.data(), p.verify_checksum(), p.next_hop_mtu(), p.echo_ident());
    if let Ok(r) = IcmpRepr::parse(&p) {
        assert_eq!(r.buffer_len(), b.len());
        let mut e = vec![0u8; r.buffer_len()];
        r.emit(&mut e);
        assert_eq!(IcmpRepr::parse(&IcmpPacket::new_checked(&e[..]).expect("emitted ICMP parses")), Ok(r));
        if let IcmpRepr::DstUnreachable { original, .. } | IcmpRepr::TimeExceeded { original, .. } = r {
            if let Ok(q) = Quoted::parse(original) {
                assert!(q.l4.len() <= original.len());
            }
        }
    }
}

// ---- Ethernet ----------------------------------------------------------------------------

pub(super) fn ethernet_seeds() -> Vec<Vec<u8>> {
    let ip = ipv4_datagram(ip_proto::UDP, &udp_bytes(b"x"));
    let mut plain = ethernet::ipv4_header(ethernet::mac_for(1, 0), ethernet::mac_for(2, 0)).to_vec();
    plain.extend_from_slice(&ip);
    // 802.1Q then 802.1ad tags
    let mut tagged = plain[..12].to_vec();
    tagged.extend_from_slice(&[0x88, 0xa8, 0, 5, 0x81, 0x00, 0, 7, 0x08, 0x00]);
    tagged.extend_from_slice(&ip);
    vec![with_mode(false, &plain), with_mode(false, &tagged)]
}

pub(super) fn ethernet(data: &[u8]) {
    let (_, b) = split(data);
    if let Ok(f) = EthernetFrame::new_checked(&b[..]) {
        let _ = (f.to_string(), f.payload(), f.dst(), f.src(), f.ethertype());
        if let Some((_, off)) = f.inner() {
            assert!(off <= b.len(), "inner offset inside the frame");
        }
    }
    for lt in [0, 1, 101, 108, 113, 228, 276, 9999] {
        if let Some(off) = wirelab_wire::pcap::ipv4_offset(lt, &b) {
            assert!(off < b.len());
            assert_eq!(b[off] >> 4, 4);
        }
    }
}

// ---- TCP header and options --------------------------------------------------------------

fn tcp_bytes(payload: &[u8]) -> Vec<u8> {
    let mut r = TcpRepr::new(40000, 5001);
    r.seq = wirelab_tcp::wire::SeqNumber(1000);
    r.ack = wirelab_tcp::wire::SeqNumber(77);
    r.flags = wirelab_tcp::wire::flags::ACK | wirelab_tcp::wire::flags::PSH;
    r.window = 512;
    r.timestamp = Some((5, 6));
    r.sack.push(wirelab_tcp::wire::SeqNumber(2000), wirelab_tcp::wire::SeqNumber(3000));
    r.payload = payload;
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut TcpPacket::new_unchecked(&mut b[..]), SRC, DST);
    b
}

pub(super) fn tcp_seeds() -> Vec<Vec<u8>> {
    use wirelab_tcp::wire::{flags, SeqNumber};
    let mut syn = TcpRepr::new(40000, 80);
    syn.flags = flags::SYN;
    syn.seq = SeqNumber(0xffff_fff0);
    syn.mss = Some(1460);
    syn.window_scale = Some(7);
    syn.sack_permitted = true;
    syn.timestamp = Some((1, 0));
    syn.window = 64240;
    let mut s = vec![0u8; syn.buffer_len()];
    syn.emit(&mut TcpPacket::new_unchecked(&mut s[..]), SRC, DST);
    let mut four = TcpRepr::new(1, 2);
    four.flags = flags::ACK;
    for k in 0..4 {
        four.sack.push(SeqNumber(k * 100), SeqNumber(k * 100 + 50));
    }
    let mut f = vec![0u8; four.buffer_len()];
    four.emit(&mut TcpPacket::new_unchecked(&mut f[..]), SRC, DST);
    vec![with_mode(true, &tcp_bytes(b"payload")), with_mode(true, &s), with_mode(false, &f)]
}

pub(super) fn tcp(data: &[u8]) {
    let (fix, mut b) = split(data);
    if fix && b.len() >= 20 {
        wirelab_tcp::wire::fill_checksum(&mut b, SRC, DST);
    }
    tcp_check(SRC, DST, &b);
}

fn tcp_check(src: Ipv4Addr, dst: Ipv4Addr, b: &[u8]) {
    let Ok(p) = TcpPacket::new_checked(b) else { return };
    let _ = (p.options(), p.payload(), p.segment_len(), p.verify_checksum(src, dst), p.flags(), p.urgent_at());
    let Ok(r) = TcpRepr::parse_unverified(&p) else { return };
    assert!(r.sack.len() <= 4);
    assert!(r.header_len() <= 60 && r.header_len() % 4 == 0);
    assert!(r.max_sack_blocks() <= 4);
    // what we parsed emits as a valid segment that parses back to the same fields (the
    // option layout may differ: we emit Linux's order)
    let mut e = vec![0u8; r.buffer_len()];
    r.emit(&mut TcpPacket::new_unchecked(&mut e[..]), src, dst);
    let q = TcpPacket::new_checked(&e[..]).expect("emitted TCP parses");
    let r2 = TcpRepr::parse(&q, src, dst).expect("emitted TCP verifies");
    assert_eq!((r2.seq, r2.ack, r2.flags, r2.window, r2.mss, r2.window_scale, r2.timestamp, r2.payload), (r.seq, r.ack, r.flags, r.window, r.mss, r.window_scale, r.timestamp, r.payload));
    let n = r.sack.len().min(r.max_sack_blocks());
    assert_eq!(r2.sack.as_slice(), &r.sack.as_slice()[..n]);
}

// ---- SCTP --------------------------------------------------------------------------------

fn sctp_bytes() -> Vec<u8> {
    let mut pkt = vec![0u8; 12];
    SctpPacket::new_unchecked(&mut pkt[..]).set_header(5000, 5001, 0x1122_3344);
    let mut pb = [0u8; 64];
    let mut at = 0;
    ParamRepr::Ipv4Addr(Ipv4Addr::new(1, 2, 3, 4)).emit(&mut pb, &mut at);
    ParamRepr::StateCookie(b"cookie!").emit(&mut pb, &mut at);
    ParamRepr::SupportedAddrTypes(&[0, 5]).emit(&mut pb, &mut at);
    ParamRepr::ForwardTsnSupported.emit(&mut pb, &mut at);
    let gaps = [GapBlock { start: 2, end: 4 }, GapBlock { start: 6, end: 6 }];
    let causes = [0u8, 13, 0, 8, b'b', b'a', b'd', 0];
    for r in [
        ChunkRepr::SndbufAdv { flags: 3, value: None },
        ChunkRepr::InitAck(InitRepr { init_tag: 9, a_rwnd: 65536, os: 10, mis: 10, initial_tsn: Tsn(1), params: &pb[..at] }),
        ChunkRepr::Sack(SackRepr { flags: 0x80, cum_tsn: Tsn(4), a_rwnd: 9, gaps: List::Items(&gaps), dups: List::Items(&[Tsn(2)]) }),
        ChunkRepr::Data(DataRepr { flags: 3, tsn: Tsn(1), stream: 0, ssn: 0, ppid: 0, payload: b"abcdefg" }),
        ChunkRepr::Error { causes: &causes },
        ChunkRepr::ForwardTsn { new_cum_tsn: Tsn(8), streams: &[0, 1, 0, 2] },
        ChunkRepr::SndbufAdv { flags: 0, value: Some(123_456) },
    ] {
        let mut c = vec![0u8; r.buffer_len()];
        r.emit(&mut Chunk::new_unchecked(&mut c[..]));
        pkt.extend_from_slice(&c);
    }
    SctpPacket::new_unchecked(&mut pkt[..]).fill_checksum();
    pkt
}

pub(super) fn sctp_seeds() -> Vec<Vec<u8>> {
    let mut init = vec![0u8; 12];
    SctpPacket::new_unchecked(&mut init[..]).set_header(1, 2, 0);
    let mut pb = [0u8; 32];
    let mut at = 0;
    ParamRepr::CookiePreservative(100).emit(&mut pb, &mut at);
    ParamRepr::Unknown { kind: 0xC006, value: &[0, 0, 0, 1] }.emit(&mut pb, &mut at);
    let r = ChunkRepr::Init(InitRepr { init_tag: 1, a_rwnd: 1, os: 1, mis: 1, initial_tsn: Tsn(0), params: &pb[..at] });
    let mut c = vec![0u8; r.buffer_len()];
    r.emit(&mut Chunk::new_unchecked(&mut c[..]));
    init.extend_from_slice(&c);
    let abort = [0u8; 12].iter().copied().chain([6, 1, 0, 8, 0, 6, 0, 4]).collect::<Vec<u8>>();
    vec![with_mode(true, &sctp_bytes()), with_mode(true, &init), with_mode(false, &abort)]
}

pub(super) fn sctp(data: &[u8]) {
    let (fix, mut b) = split(data);
    if fix && b.len() >= 12 {
        SctpPacket::new_unchecked(&mut b[..]).fill_checksum();
    }
    sctp_check(&b);
}

fn sctp_check(bytes: &[u8]) {
    let Ok(p) = SctpPacket::new_checked(bytes) else { return };
    let _ = (p.verify_checksum(), p.to_string(), p.vtag());
    for c in p.chunks() {
        let Ok(c) = c else { break };
        let _ = (c.kind(), c.flags(), c.value(), c.padded_len());
        let Ok(r) = ChunkRepr::parse(&c) else { continue };
        let _ = r.to_string();
        // re-emitting reproduces the chunk's type and, when the lengths agree, its bytes
        let mut out = vec![0u8; r.buffer_len()];
        r.emit(&mut Chunk::new_unchecked(&mut out[..]));
        assert_eq!(out[0], c.bytes()[0]);
        if r.chunk_len() == c.bytes().len() {
            assert_eq!(&out[2..r.chunk_len()], &c.bytes()[2..]);
        } else {
            assert!(r.chunk_len() < c.bytes().len(), "{r:?}");
        }
        assert_eq!(ChunkRepr::parse(&Chunk::new_checked(&out[..]).expect("emitted chunk parses")).expect("emitted chunk decodes"), r);
        match r {
            ChunkRepr::Init(i) | ChunkRepr::InitAck(i) => {
                for t in i.params().flatten() {
                    if let Ok(pr) = ParamRepr::parse(&t) {
                        let mut o = vec![0u8; t.raw.len() + 8];
                        let mut at = 0;
                        assert!(pr.emit(&mut o, &mut at), "a parsed parameter fits its own length");
                    }
                }
            }
            ChunkRepr::Sack(s) => {
                assert_eq!(s.gap_blocks().count(), s.num_gaps());
                assert_eq!(s.dup_tsns().count(), s.num_dups());
            }
            ChunkRepr::Abort { causes, .. } | ChunkRepr::Error { causes } => {
                let _ = TlvIter::new(causes).count();
            }
            ChunkRepr::Heartbeat { info } | ChunkRepr::HeartbeatAck { info } => {
                let _ = TlvIter::new(info).count();
            }
            _ => {}
        }
    }
}
