//! TCP segments in script and live form: building inbound segments byte by byte (options
//! in the script's order, zero payload, checksum), parsing outbound ones, the outbound
//! checks of packetdrill's `run_packet.c` in its order and wording, and its short
//! packet dump (`packet_to_string()` with `DUMP_SHORT`).
use crate::ast::{PacketSpec, TcpOpt, TosCheck};
use std::fmt::Write as _;
use std::net::Ipv4Addr;

/// Flag bits as on the wire (low byte) plus AE (the former NS bit) as bit 8.
pub mod fl {
    /// FIN
    pub const FIN: u16 = 0x01;
    /// SYN
    pub const SYN: u16 = 0x02;
    /// RST
    pub const RST: u16 = 0x04;
    /// PSH
    pub const PSH: u16 = 0x08;
    /// ACK
    pub const ACK: u16 = 0x10;
    /// URG
    pub const URG: u16 = 0x20;
    /// ECE
    pub const ECE: u16 = 0x40;
    /// CWR
    pub const CWR: u16 = 0x80;
    /// AE (AccECN)
    pub const AE: u16 = 0x100;
}

/// One option: kind and the bytes after kind/length (empty for NOP and EOL).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOpt {
    /// Option kind.
    pub kind: u8,
    /// Option data.
    pub data: Vec<u8>,
}

impl RawOpt {
    fn len(&self) -> usize {
        if self.kind <= 1 {
            1
        } else {
            2 + self.data.len()
        }
    }
}

/// A TCP segment reduced to what packetdrill compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seg {
    /// Flags, see [`fl`].
    pub flags: u16,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number field.
    pub ack: u32,
    /// Raw window field.
    pub win: u16,
    /// Urgent pointer.
    pub urg: u16,
    /// Options in wire order.
    pub opts: Vec<RawOpt>,
    /// Payload length.
    pub len: usize,
    /// True if any payload byte is not zero (scripts' payloads are zeros).
    pub payload_nonzero: bool,
    /// IP TOS byte.
    pub tos: u8,
    /// IP TTL.
    pub ttl: u8,
    /// The three reserved header bits.
    pub reserved: u8,
}

/// Encodes script options in order.
pub fn encode_opts(opts: &[TcpOpt]) -> Vec<RawOpt> {
    opts.iter()
        .map(|o| match o {
            TcpOpt::Nop => RawOpt { kind: 1, data: vec![] },
            TcpOpt::Eol => RawOpt { kind: 0, data: vec![] },
            TcpOpt::Mss(m) => RawOpt { kind: 2, data: m.to_be_bytes().to_vec() },
            TcpOpt::WScale(w) => RawOpt { kind: 3, data: vec![*w] },
            TcpOpt::SackOk => RawOpt { kind: 4, data: vec![] },
            TcpOpt::Sack(b) => RawOpt { kind: 5, data: b.iter().flat_map(|(l, r)| [l.to_be_bytes(), r.to_be_bytes()]).flatten().collect() },
            TcpOpt::Timestamp(v, e) => RawOpt { kind: 8, data: [v.to_be_bytes(), e.to_be_bytes()].concat() },
        })
        .collect()
}

/// Parses the option bytes of a live segment (`tcp_options_iterator.c` rules).
pub fn parse_opts(b: &[u8]) -> Result<Vec<RawOpt>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let kind = b[i];
        if kind <= 1 {
            out.push(RawOpt { kind, data: vec![] });
            i += 1;
            continue;
        }
        let Some(&len) = b.get(i + 1) else { return Err("TCP option length byte extends too far".into()) };
        let len = len as usize;
        if len < 2 {
            return Err("TCP option with length byte is too short".into());
        }
        if i + len > b.len() {
            return Err("TCP option data extends too far".into());
        }
        out.push(RawOpt { kind, data: b[i + 2..i + len].to_vec() });
        i += len;
    }
    Ok(out)
}

fn be32(d: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]])
}

/// packetdrill's rendering of one option.
pub fn fmt_opt(o: &RawOpt) -> String {
    let d = &o.data;
    match (o.kind, d.len()) {
        (0, _) => "eol".into(),
        (1, _) => "nop".into(),
        (2, 2) => format!("mss {}", u16::from_be_bytes([d[0], d[1]])),
        (3, 1) => format!("wscale {}", d[0]),
        (4, 0) => "sackOK".into(),
        (5, n) if n % 8 == 0 => {
            let b: Vec<String> = d.chunks(8).map(|c| format!("{}:{}", be32(c, 0), be32(c, 4))).collect();
            format!("sack {}", b.join(" "))
        }
        (8, 8) => format!("TS val {} ecr {}", be32(d, 0), be32(d, 4)),
        (k, _) => format!("opt{k}({} bytes)", d.len() + 2),
    }
}

/// The options list as `<mss 1460,nop,…>`, empty when there are none.
pub fn fmt_opts(opts: &[RawOpt]) -> String {
    if opts.is_empty() {
        return String::new();
    }
    let v: Vec<String> = opts.iter().map(fmt_opt).collect();
    format!("<{}>", v.join(","))
}

/// Flag letters in tcpdump order (`tcp_packet_to_string()`).
pub fn fmt_flags(f: u16) -> String {
    let mut s = String::new();
    for (bit, c) in [
        (fl::FIN, 'F'),
        (fl::SYN, 'S'),
        (fl::RST, 'R'),
        (fl::PSH, 'P'),
        (fl::ACK, '.'),
        (fl::URG, 'U'),
        (fl::ECE, 'E'),
        (fl::CWR, 'W'),
        (fl::AE, 'A'),
    ] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    s
}

impl Seg {
    /// The segment a script line describes (options empty for `<...>`).
    pub fn from_script(p: &PacketSpec) -> Seg {
        let mut flags = 0;
        for (c, bit) in [('F', fl::FIN), ('S', fl::SYN), ('R', fl::RST), ('P', fl::PSH), ('.', fl::ACK), ('U', fl::URG)] {
            if p.has(c) {
                flags |= bit;
            }
        }
        // tcp_flag_ace_count(): a digit after the flags is the AccECN ACE field
        if let Some(ace) = p.flags.chars().find_map(|c| c.to_digit(10)) {
            flags |= if ace & 1 != 0 { fl::ECE } else { 0 } | if ace & 2 != 0 { fl::CWR } else { 0 } | if ace & 4 != 0 { fl::AE } else { 0 };
        } else {
            for (c, bit) in [('E', fl::ECE), ('W', fl::CWR), ('A', fl::AE)] {
                if p.has(c) {
                    flags |= bit;
                }
            }
        }
        let tos = match p.tos {
            TosCheck::Ecn(e) => e,
            TosCheck::Tos(t) => t,
            TosCheck::None | TosCheck::Ect01 => 0,
        };
        Seg {
            flags,
            seq: p.seq,
            ack: p.ack,
            win: p.win.unwrap_or(0),
            urg: p.urg,
            opts: p.options.as_deref().map(encode_opts).unwrap_or_default(),
            len: p.len as usize,
            payload_nonzero: false,
            tos,
            ttl: p.ttl.unwrap_or(0),
            reserved: 0,
        }
    }

    /// Parses a live TCP segment (header and payload).
    pub fn from_wire(b: &[u8], tos: u8, ttl: u8) -> Result<Seg, String> {
        if b.len() < 20 {
            return Err(format!("truncated TCP header ({} bytes)", b.len()));
        }
        let hl = ((b[12] >> 4) as usize) * 4;
        if hl < 20 || hl > b.len() {
            return Err(format!("bad TCP data offset {hl}"));
        }
        let flags = b[13] as u16 | (((b[12] & 1) as u16) << 8);
        Ok(Seg {
            flags,
            seq: be32(b, 4),
            ack: be32(b, 8),
            win: u16::from_be_bytes([b[14], b[15]]),
            urg: u16::from_be_bytes([b[18], b[19]]),
            opts: parse_opts(&b[20..hl])?,
            len: b.len() - hl,
            payload_nonzero: b[hl..].iter().any(|&x| x != 0),
            tos,
            ttl,
            reserved: (b[12] >> 1) & 7,
        })
    }

    /// Header length in bytes (options padded as encoded).
    pub fn header_len(&self) -> usize {
        20 + self.opts.iter().map(RawOpt::len).sum::<usize>()
    }

    /// Serialises the segment between `src:sport` and `dst:dport` with a zero payload and
    /// a valid checksum.
    pub fn to_wire(&self, src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16) -> Vec<u8> {
        let hl = self.header_len();
        let mut b = vec![0u8; hl + self.len];
        b[0..2].copy_from_slice(&sport.to_be_bytes());
        b[2..4].copy_from_slice(&dport.to_be_bytes());
        b[4..8].copy_from_slice(&self.seq.to_be_bytes());
        b[8..12].copy_from_slice(&self.ack.to_be_bytes());
        b[12] = (((hl / 4) as u8) << 4) | ((self.flags >> 8) as u8 & 1);
        b[13] = self.flags as u8;
        b[14..16].copy_from_slice(&self.win.to_be_bytes());
        b[18..20].copy_from_slice(&self.urg.to_be_bytes());
        let mut i = 20;
        for o in &self.opts {
            b[i] = o.kind;
            if o.kind > 1 {
                b[i + 1] = (o.data.len() + 2) as u8;
                b[i + 2..i + 2 + o.data.len()].copy_from_slice(&o.data);
            }
            i += o.len();
        }
        wirelab_tcp::wire::fill_checksum(&mut b, src, dst);
        b
    }

    /// The TS option's (val, ecr), if present.
    pub fn timestamp(&self) -> Option<(u32, u32)> {
        self.opts.iter().find(|o| o.kind == 8 && o.data.len() == 8).map(|o| (be32(&o.data, 0), be32(&o.data, 4)))
    }

    /// Replaces the TS option's val and/or ecr.
    pub fn set_timestamp(&mut self, val: Option<u32>, ecr: Option<u32>) {
        if let Some(o) = self.opts.iter_mut().find(|o| o.kind == 8 && o.data.len() == 8) {
            if let Some(v) = val {
                o.data[0..4].copy_from_slice(&v.to_be_bytes());
            }
            if let Some(e) = ecr {
                o.data[4..8].copy_from_slice(&e.to_be_bytes());
            }
        }
    }

    /// Adds `off` to every SACK block edge (`offset_sack_blocks()`).
    pub fn offset_sacks(&mut self, off: u32) {
        for o in self.opts.iter_mut().filter(|o| o.kind == 5) {
            for c in o.data.chunks_mut(4) {
                if c.len() == 4 {
                    let v = u32::from_be_bytes([c[0], c[1], c[2], c[3]]).wrapping_add(off);
                    c.copy_from_slice(&v.to_be_bytes());
                }
            }
        }
    }

    /// packetdrill's short dump: `P. 1:1001(1000) ack 1 win 257 <nop,nop,TS val 1 ecr 2>`.
    pub fn dump(&self, show_win: bool) -> String {
        let mut s = fmt_flags(self.flags);
        let _ = write!(s, " {}:{}({}) ", self.seq, self.seq.wrapping_add(self.len as u32), self.len);
        if self.flags & fl::ACK != 0 {
            let _ = write!(s, "ack {} ", self.ack);
        }
        if show_win {
            let _ = write!(s, "win {} ", self.win);
        }
        s.push_str(&fmt_opts(&self.opts));
        s
    }
}

fn check_field(name: &str, expected: u32, actual: u32) -> Result<(), String> {
    if expected != actual {
        return Err(format!("live packet field {name}: expected: {expected} ({expected:#x}) vs actual: {actual} ({actual:#x})"));
    }
    Ok(())
}

fn bit(f: u16, b: u16) -> u32 {
    (f & b != 0) as u32
}

/// `verify_outbound_live_headers()` + `verify_outbound_live_tcp_options()` +
/// `verify_outbound_live_payload()` for a script packet and the (aggregated) actual one,
/// both in script space. `ts_tolerance` is `Some((tick_us, tolerance_us))` when TS val
/// checks are on (`--tcp_ts_tick_usecs`).
pub fn verify(spec: &PacketSpec, s: &Seg, a: &Seg, ts_tolerance: Option<(u32, i64)>) -> Result<(), String> {
    let nocheck_opts = spec.options.is_none();
    let allowance = if nocheck_opts { a.header_len() - 20 } else { 0 };
    check_field("ipv4_total_length", (20 + s.header_len() + s.len + allowance) as u32, (20 + a.header_len() + a.len) as u32)?;
    match spec.tos {
        TosCheck::None => {}
        TosCheck::Ect01 => {
            let e = a.tos & 3;
            if e != 1 && e != 2 {
                return Err(format!("live packet field ip_ecn: expected: 0x1 or 0x2 vs actual: {e:#x}"));
            }
        }
        TosCheck::Ecn(e) => check_field("ip_ecn", e as u32, (a.tos & 3) as u32)?,
        TosCheck::Tos(t) => check_field("tos", t as u32, a.tos as u32)?,
    }
    if let Some(t) = spec.ttl {
        check_field("ttl", t as u32, a.ttl as u32)?;
    }
    tcp_headers(s, a, allowance, true, spec.win.is_none())?;
    if !nocheck_opts {
        verify_options(s, a, ts_tolerance)?;
    }
    if a.payload_nonzero {
        return Err("incorrect outbound data payload".into());
    }
    Ok(())
}

/// `verify_tcp()`; `strict` is false when checking one TSO/GSO fragment against the
/// previous one (FIN, PSH, CWR and the sequence number are then not compared as such).
pub fn tcp_headers(s: &Seg, a: &Seg, allowance: usize, strict: bool, win_nocheck: bool) -> Result<(), String> {
    check_field("tcp_data_offset", ((s.header_len() + allowance) / 4) as u32, (a.header_len() / 4) as u32)?;
    if strict {
        check_field("tcp_fin", bit(s.flags, fl::FIN), bit(a.flags, fl::FIN))?;
    }
    check_field("tcp_syn", bit(s.flags, fl::SYN), bit(a.flags, fl::SYN))?;
    check_field("tcp_rst", bit(s.flags, fl::RST), bit(a.flags, fl::RST))?;
    if strict {
        check_field("tcp_psh", bit(s.flags, fl::PSH), bit(a.flags, fl::PSH))?;
    }
    check_field("tcp_ack", bit(s.flags, fl::ACK), bit(a.flags, fl::ACK))?;
    check_field("tcp_urg", bit(s.flags, fl::URG), bit(a.flags, fl::URG))?;
    check_field("tcp_ece", bit(s.flags, fl::ECE), bit(a.flags, fl::ECE))?;
    if strict {
        check_field("tcp_cwr", bit(s.flags, fl::CWR), bit(a.flags, fl::CWR))?;
    }
    check_field("tcp_ae", bit(s.flags, fl::AE), bit(a.flags, fl::AE))?;
    check_field("tcp_reserved_bits", s.reserved as u32, a.reserved as u32)?;
    if strict {
        check_field("tcp_seq", s.seq, a.seq)?;
    } else {
        check_field("tcp_seq", s.seq.wrapping_add(s.len as u32), a.seq)?;
    }
    check_field("tcp_ack_seq", s.ack, a.ack)?;
    if !win_nocheck {
        check_field("tcp_window", s.win as u32, a.win as u32)?;
    }
    check_field("tcp_urg_ptr", s.urg as u32, a.urg as u32)
}

fn verify_options(s: &Seg, a: &Seg, ts_tolerance: Option<(u32, i64)>) -> Result<(), String> {
    let n = s.opts.len().max(a.opts.len());
    for i in 0..n {
        let (Some(so), Some(ao)) = (s.opts.get(i), a.opts.get(i)) else { return Err("bad outbound TCP options".into()) };
        if so.kind != ao.kind {
            return Err("bad outbound TCP options".into());
        }
        match ao.kind {
            0 | 1 => {}
            8 => {
                if let (Some((tick, tol)), Some((sv, _)), Some((av, _))) = (ts_tolerance, s.timestamp(), a.timestamp()) {
                    let dev = (av.wrapping_sub(sv) as i32).unsigned_abs() as i64 * tick as i64;
                    if tick > 0 && dev > tol {
                        return Err(format!("bad outbound TCP timestamp value, tolerance {tol}"));
                    }
                }
            }
            k => {
                let err = if so.data.len() != ao.data.len() {
                    Some("bad length")
                } else if so.data != ao.data {
                    Some("bad value")
                } else {
                    None
                };
                if let Some(e) = err {
                    return Err(format!("{e} in outbound TCP option (kind={k}): expected: {} actual: {}", fmt_opt(so), fmt_opt(ao)));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Direction;

    fn spec(flags: &str, opts: Option<Vec<TcpOpt>>) -> PacketSpec {
        PacketSpec {
            dir: Direction::Outbound,
            tos: TosCheck::None,
            ttl: None,
            flags: flags.into(),
            seq: 1,
            len: 1000,
            ack: 1,
            win: None,
            urg: 0,
            options: opts,
            ports: None,
        }
    }

    #[test]
    fn wire_roundtrip_keeps_option_order() {
        let p = PacketSpec {
            dir: Direction::Inbound,
            seq: 0,
            len: 0,
            flags: "S".into(),
            win: Some(32792),
            options: Some(vec![TcpOpt::Mss(1000), TcpOpt::SackOk, TcpOpt::Nop, TcpOpt::Nop, TcpOpt::Nop, TcpOpt::WScale(7)]),
            ..spec("S", None)
        };
        let s = Seg::from_script(&p);
        let src = Ipv4Addr::new(192, 0, 2, 1);
        let dst = Ipv4Addr::new(192, 168, 0, 1);
        let b = s.to_wire(src, dst, 40000, 8080);
        assert_eq!(b.len(), 32);
        let back = Seg::from_wire(&b, 0, 64).unwrap();
        assert_eq!(back.opts, s.opts);
        assert_eq!(back.dump(true), "S 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>");
        let pk = wirelab_tcp::wire::TcpPacket::new_checked(&b[..]).unwrap();
        assert!(pk.verify_checksum(src, dst));
    }

    #[test]
    fn verification_order_and_messages() {
        let sp = spec("P.", Some(vec![]));
        let s = Seg::from_script(&sp);
        let mut a = s.clone();
        assert_eq!(verify(&sp, &s, &a, None), Ok(()));
        a.flags = fl::ACK;
        assert_eq!(
            verify(&sp, &s, &a, None).unwrap_err(),
            "live packet field tcp_psh: expected: 1 (0x1) vs actual: 0 (0x0)"
        );
        a.flags = s.flags;
        a.opts = encode_opts(&[TcpOpt::Nop, TcpOpt::Nop, TcpOpt::Timestamp(1, 2)]);
        let e = verify(&sp, &s, &a, None).unwrap_err();
        assert!(e.starts_with("live packet field ipv4_total_length"), "{e}");
        // `<...>` accepts whatever options come
        let sp2 = spec("P.", None);
        assert_eq!(verify(&sp2, &Seg::from_script(&sp2), &a, None), Ok(()));
        // a wrong option value names both
        let sp3 = spec("P.", Some(vec![TcpOpt::Nop, TcpOpt::Nop, TcpOpt::Sack(vec![(1, 2)])]));
        let mut a3 = Seg::from_script(&sp3);
        a3.opts = encode_opts(&[TcpOpt::Nop, TcpOpt::Nop, TcpOpt::Sack(vec![(1, 3)])]);
        assert_eq!(
            verify(&sp3, &Seg::from_script(&sp3), &a3, None).unwrap_err(),
            "bad value in outbound TCP option (kind=5): expected: sack 1:2 actual: sack 1:3"
        );
        a3.payload_nonzero = true;
        a3.opts = Seg::from_script(&sp3).opts;
        assert_eq!(verify(&sp3, &Seg::from_script(&sp3), &a3, None).unwrap_err(), "incorrect outbound data payload");
    }

    #[test]
    fn live_option_parsing_rejects_bad_lengths() {
        assert!(parse_opts(&[2, 1]).is_err());
        assert!(parse_opts(&[2]).is_err());
        assert!(parse_opts(&[8, 10, 0]).is_err());
        assert_eq!(parse_opts(&[1, 0]).unwrap().len(), 2);
        assert!(Seg::from_wire(&[0u8; 10], 0, 0).is_err());
    }
}
