//! IPv4 + TCP header decoding for analysis, tolerant of snaplen-cut frames.
//!
//! We decode here rather than through `wirelab_wire::Ipv4Packet` / `wirelab_tcp::wire`
//! because those views (rightly, for a stack) reject a datagram shorter than its total
//! length, while tcpdump captures are routinely cut by the snaplen (`-s 96`): the headers
//! are all an analyzer needs, and the payload length comes from the IPv4 total length.
//! Checksums are not verified: captures taken on the sending host show checksum-offload
//! garbage (Wireshark also skips verification by default).
//!
//! Contract: [`decode_ipv4_tcp`] never panics on any input bytes (see the random-bytes
//! test in `tests/robustness.rs`).
use std::net::Ipv4Addr;

/// TCP flag bits used here.
pub mod flags {
    /// FIN.
    pub const FIN: u8 = 0x01;
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// RST.
    pub const RST: u8 = 0x04;
    /// ACK.
    pub const ACK: u8 = 0x10;
}

const IP_HEADER_LEN: usize = 20;
const TCP_HEADER_LEN: usize = 20;
const OPT_EOL: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_SACK: u8 = 5;

/// The fields of one TCP segment the analyzer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpSeg {
    /// IPv4 source address.
    pub src: Ipv4Addr,
    /// IPv4 destination address.
    pub dst: Ipv4Addr,
    /// TCP source port.
    pub sport: u16,
    /// TCP destination port.
    pub dport: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number (meaningful with [`flags::ACK`]).
    pub ack: u32,
    /// The eight flag bits.
    pub flags: u8,
    /// Payload bytes on the wire (from the IPv4 total length, not from what was captured).
    pub payload_len: u32,
    /// IPv4 datagram length on the wire.
    pub ip_len: u32,
    /// SACK blocks (RFC 2018) in option order, `n_sack` of them valid.
    pub sack: [(u32, u32); 4],
    /// Number of valid entries in `sack`.
    pub n_sack: u8,
    /// The capture kept fewer bytes than the datagram had (snaplen cut).
    pub cut: bool,
    /// The option bytes themselves were cut, so SACK blocks may be missing.
    pub options_cut: bool,
}

impl TcpSeg {
    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..(self.n_sack as usize).min(4)]
    }
    /// True if `flag` is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// What a datagram turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// A TCP segment whose headers were captured.
    Tcp(TcpSeg),
    /// A valid IPv4 datagram of another protocol.
    NotTcp,
    /// Not decodable as IPv4/TCP; the reason reads well after "packet N: ".
    Bad(&'static str),
}

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}
fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

/// Decodes the captured bytes `ip` (starting at the IPv4 header; possibly cut short, or
/// followed by link padding). `wire_len` is how long the datagram was on the wire as the
/// capture record says (`orig_len` minus the link header); it stands in for an IPv4 total
/// length of 0, which captures of TSO super-packets show.
pub fn decode_ipv4_tcp(ip: &[u8], wire_len: usize) -> Decoded {
    if ip.len() < IP_HEADER_LEN {
        return Decoded::Bad("truncated IPv4 header");
    }
    if ip[0] >> 4 != 4 {
        return Decoded::Bad("not IPv4");
    }
    let ihl = (ip[0] & 0x0f) as usize * 4;
    if ihl < IP_HEADER_LEN {
        return Decoded::Bad("IPv4 header length below 20");
    }
    if ip.len() < ihl {
        return Decoded::Bad("truncated IPv4 header (options)");
    }
    if ip[9] != 6 {
        return Decoded::NotTcp;
    }
    let frag = be16(ip, 6);
    if frag & 0x3fff != 0 {
        // MF set or a nonzero offset: we do not reassemble.
        return Decoded::Bad("IPv4 fragment (not reassembled)");
    }
    let mut tl = be16(ip, 2) as usize;
    if tl == 0 {
        tl = wire_len; // TSO/GSO capture on the sending host
    }
    if tl < ihl {
        return Decoded::Bad("IPv4 total length below header length");
    }
    let captured = ip.len().min(tl);
    let tcp = &ip[ihl..captured];
    if tcp.len() < TCP_HEADER_LEN {
        return Decoded::Bad("truncated TCP header");
    }
    let doff = (tcp[12] >> 4) as usize * 4;
    if doff < TCP_HEADER_LEN {
        return Decoded::Bad("TCP data offset below 20");
    }
    if tl - ihl < doff {
        return Decoded::Bad("TCP header longer than the IPv4 payload");
    }
    let options_cut = tcp.len() < doff;
    let opts = &tcp[TCP_HEADER_LEN..tcp.len().min(doff)];
    let mut seg = TcpSeg {
        src: Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
        dst: Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
        sport: be16(tcp, 0),
        dport: be16(tcp, 2),
        seq: be32(tcp, 4),
        ack: be32(tcp, 8),
        flags: tcp[13],
        payload_len: (tl - ihl - doff) as u32,
        ip_len: tl as u32,
        sack: [(0, 0); 4],
        n_sack: 0,
        cut: captured < tl,
        options_cut,
    };
    parse_sack(opts, &mut seg);
    Decoded::Tcp(seg)
}

/// Walks the option list (RFC 9293 §3.2) and keeps up to four SACK blocks. Stops quietly
/// at EOL, at a length byte below 2, or at an option running past the end.
fn parse_sack(mut o: &[u8], seg: &mut TcpSeg) {
    while let Some(&kind) = o.first() {
        match kind {
            OPT_EOL => return,
            OPT_NOP => o = &o[1..],
            _ => {
                let Some(&len) = o.get(1) else { return };
                let len = len as usize;
                if len < 2 || len > o.len() {
                    return;
                }
                if kind == OPT_SACK {
                    let body = &o[2..len];
                    for b in body.chunks_exact(8).take(4) {
                        if (seg.n_sack as usize) < 4 {
                            seg.sack[seg.n_sack as usize] = (be32(b, 0), be32(b, 4));
                            seg.n_sack += 1;
                        }
                    }
                }
                o = &o[len..];
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn packet(opts: &[u8], payload: usize) -> Vec<u8> {
        let doff = 20 + opts.len();
        let tl = 20 + doff + payload;
        let mut b = vec![0u8; tl];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(tl as u16).to_be_bytes());
        b[6] = 0x40; // DF
        b[8] = 64;
        b[9] = 6;
        b[12..16].copy_from_slice(&[10, 0, 0, 1]);
        b[16..20].copy_from_slice(&[10, 0, 0, 2]);
        let t = &mut b[20..];
        t[0..2].copy_from_slice(&1234u16.to_be_bytes());
        t[2..4].copy_from_slice(&80u16.to_be_bytes());
        t[4..8].copy_from_slice(&1000u32.to_be_bytes());
        t[8..12].copy_from_slice(&2000u32.to_be_bytes());
        t[12] = ((doff / 4) as u8) << 4;
        t[13] = flags::ACK;
        t[20..20 + opts.len()].copy_from_slice(opts);
        b
    }

    #[test]
    fn decodes_fields_and_sack() {
        let mut opts = vec![1, 1, 5, 18];
        opts.extend_from_slice(&100u32.to_be_bytes());
        opts.extend_from_slice(&200u32.to_be_bytes());
        opts.extend_from_slice(&300u32.to_be_bytes());
        opts.extend_from_slice(&400u32.to_be_bytes());
        let b = packet(&opts, 10);
        let Decoded::Tcp(s) = decode_ipv4_tcp(&b, b.len()) else { panic!() };
        assert_eq!((s.sport, s.dport, s.seq, s.ack), (1234, 80, 1000, 2000));
        assert_eq!(s.payload_len, 10);
        assert_eq!(s.sack_blocks(), &[(100, 200), (300, 400)]);
        assert!(!s.cut && !s.options_cut);
    }

    #[test]
    fn snaplen_cut_keeps_payload_length() {
        let b = packet(&[], 1000);
        let Decoded::Tcp(s) = decode_ipv4_tcp(&b[..54], b.len()) else { panic!() };
        assert_eq!(s.payload_len, 1000);
        assert!(s.cut);
        assert_eq!(decode_ipv4_tcp(&b[..39], b.len()), Decoded::Bad("truncated TCP header"));
        let mut opts = vec![1, 1, 5, 10];
        opts.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2]);
        let b = packet(&opts, 100);
        let Decoded::Tcp(s) = decode_ipv4_tcp(&b[..48], b.len()) else { panic!() };
        assert!(s.options_cut && s.cut);
        assert_eq!((s.n_sack, s.payload_len), (0, 100), "a cut SACK block is dropped, not misread");
        assert_eq!(decode_ipv4_tcp(&b[..10], b.len()), Decoded::Bad("truncated IPv4 header"));
    }

    #[test]
    fn ip_options_and_tso_zero_length() {
        // IHL 6 (one word of options: NOPs) shifts the TCP header.
        let mut b = packet(&[], 5);
        b.splice(20..20, [1u8, 1, 1, 0]);
        b[0] = 0x46;
        let tl = b.len() as u16;
        b[2..4].copy_from_slice(&tl.to_be_bytes());
        let Decoded::Tcp(s) = decode_ipv4_tcp(&b, b.len()) else { panic!() };
        assert_eq!((s.sport, s.payload_len), (1234, 5));
        b[2..4].copy_from_slice(&0u16.to_be_bytes());
        let Decoded::Tcp(s) = decode_ipv4_tcp(&b, b.len() + 100) else { panic!() };
        assert_eq!(s.payload_len, 105, "total length 0 falls back to the wire length");
    }

    #[test]
    fn other_protocols_and_fragments() {
        let mut b = packet(&[], 0);
        b[9] = 17;
        assert_eq!(decode_ipv4_tcp(&b, b.len()), Decoded::NotTcp);
        b[9] = 6;
        b[6] = 0x20; // MF
        assert!(matches!(decode_ipv4_tcp(&b, b.len()), Decoded::Bad(_)));
    }

    #[test]
    fn bad_option_lengths_stop_quietly() {
        let b = packet(&[5, 1, 0, 0], 0);
        let Decoded::Tcp(s) = decode_ipv4_tcp(&b, b.len()) else { panic!() };
        assert_eq!(s.n_sack, 0);
        let b = packet(&[5, 200, 0, 0], 0);
        let Decoded::Tcp(s) = decode_ipv4_tcp(&b, b.len()) else { panic!() };
        assert_eq!(s.n_sack, 0);
    }
}
