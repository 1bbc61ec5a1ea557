//! SCTP over UDP (RFC 6951), as Linux ≥ 5.11 implements it (`net.sctp.udp_port`,
//! `net.sctp.encap_port`, `sctp_udp_rcv()`, `transport->encap_port`), so the engine can
//! talk to usrsctp, which runs SCTP over UDP port 9899 in user space.
//!
//! * The host listens on one UDP port, `net.sctp.udp_port` (0 = off; 9899 is IANA's
//!   `sctp-tunneling`). It is the source port of every encapsulated packet.
//! * The remote port is per destination address of an association (§5.1; Linux
//!   `transport->encap_port`): learned from the source port of the last valid encapsulated
//!   packet of that transport, and reset to "plain SCTP" by a plain one (§5.4);
//!   `net.sctp.encap_port` is the port used for a transport nothing was heard from yet
//!   (Linux: `sp->encap_port` copied to every new transport). A transport is keyed by peer
//!   address and the two SCTP ports, so two peers behind one address (two usrsctp
//!   processes on one host, each with its own UDP port) keep their own ports.
//! * Checksums (§5.3, §5.4): the SCTP CRC32c is always computed and always verified (a
//!   NIC's CRC offload cannot vouch for a tunnelled packet; Linux computes it in software
//!   when `tp->encap_port` is set, `sctp_packet_pack()`); the UDP checksum is computed
//!   (`udp_tunnel_xmit_skb(..., nocheck = false)`) and, when non-zero, verified.
//! * PMTU (§5.6): the UDP header is charged against the MTU ([`SctpConfig::frag_point`],
//!   Linux `sctp_mtu_payload()` adds `sizeof(struct udphdr)` when `udp_port` is set).
//!
//! * ICMP (§5.5): a port unreachable for the tunneling port is handled as SCTP's protocol
//!   unreachable ([`icmp_unreachable`]): after the verification-tag check it aborts an
//!   association still in COOKIE-WAIT, as Linux does for plain SCTP.
//!
//! Deviation: the port is learned at the endpoint from any checksum-valid packet, before
//! the association lookup checks the verification tag (§5.4 stores it after that check):
//! a packet with a forged tag could redirect a transport's encapsulation port.
use crate::config::SctpConfig;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use wirelab_core::{Transmit, HEADROOM};
use wirelab_wire::ip_proto;
use wirelab_wire::udp::{UdpPacket, UdpRepr};

/// UDP header bytes.
pub const UDP_HDR: usize = 8;

/// An SCTP transport as the encapsulation sees it: (peer address, local SCTP port, peer
/// SCTP port) — one association's path to one peer address.
pub type TransportKey = (Ipv4Addr, u16, u16);

/// Remote UDP encapsulation ports per transport (0 = send plain SCTP).
#[derive(Debug, Default, Clone)]
pub struct EncapPorts {
    ports: HashMap<TransportKey, u16>,
}

/// The transport key of an SCTP packet sent to `dst` (`sctp` starts at the common header).
pub fn key_out(dst: Ipv4Addr, sctp: &[u8]) -> Option<TransportKey> {
    let h = sctp.get(..4)?;
    Some((dst, u16::from_be_bytes([h[0], h[1]]), u16::from_be_bytes([h[2], h[3]])))
}

/// The transport key of an SCTP packet received from `src`.
pub fn key_in(src: Ipv4Addr, sctp: &[u8]) -> Option<TransportKey> {
    let h = sctp.get(..4)?;
    Some((src, u16::from_be_bytes([h[2], h[3]]), u16::from_be_bytes([h[0], h[1]])))
}

impl EncapPorts {
    /// The remote port for transport `k`, or `None` to send plain SCTP. `udp_port` and
    /// `encap_port` are the two sysctls ([`SctpConfig::udp_port`], [`SctpConfig::encap_port`]).
    #[inline]
    pub fn port_for(&self, udp_port: u16, encap_port: u16, k: TransportKey) -> Option<u16> {
        if udp_port == 0 {
            return None;
        }
        let p = self.ports.get(&k).copied().unwrap_or(encap_port);
        (p != 0).then_some(p)
    }

    /// A valid packet of transport `k` arrived encapsulated from UDP port `port`, or plain (0).
    #[inline]
    pub fn learn(&mut self, udp_port: u16, encap_port: u16, k: TransportKey, port: u16) {
        if udp_port == 0 {
            return;
        }
        if port == 0 && !self.ports.contains_key(&k) && encap_port == 0 {
            return; // plain stays plain: no entry needed
        }
        self.ports.insert(k, port);
    }
}

/// The SCTP packet inside a UDP datagram addressed to the tunneling port, with the UDP
/// source port; `None` if it is not for us or its UDP checksum is wrong.
pub fn decap<'a>(cfg: &SctpConfig, src: Ipv4Addr, dst: Ipv4Addr, udp: &'a [u8]) -> Option<(u16, &'a [u8])> {
    let p = UdpPacket::new_checked(udp).ok()?;
    if cfg.udp_port == 0 || p.dst_port() != cfg.udp_port {
        return None;
    }
    // a zero checksum means "none" over IPv4 (RFC 768)
    if p.checksum() != 0 && !p.verify_checksum(src, dst) {
        return None;
    }
    let sport = p.src_port();
    let len = p.len() as usize;
    Some((sport, &udp[UDP_HDR..len]))
}

/// What an ICMP error says about a packet this host sent: `(local SCTP port, peer SCTP
/// port, peer address, verification tag, INIT initiate tag if the quote has one)`, for an
/// ICMP destination unreachable that RFC 6951 §5.5 makes a protocol unreachable: a port
/// unreachable quoting a UDP datagram from our tunneling port (the peer's stack is not
/// listening), or a protocol unreachable quoting plain SCTP. `None` for anything else, and
/// when the quote is too short to check the verification tag (§5.5: discard).
pub fn icmp_unreachable(udp_port: u16, icmp: &[u8]) -> Option<(u16, u16, Ipv4Addr, u32, Option<u32>)> {
    const DEST_UNREACH: u8 = 3;
    const PROTO_UNREACH: u8 = 2;
    const PORT_UNREACH: u8 = 3;
    let (&ty, &code) = (icmp.first()?, icmp.get(1)?);
    if ty != DEST_UNREACH {
        return None;
    }
    let quote = icmp.get(8..)?;
    let ihl = ((*quote.first()? & 0x0f) as usize) * 4;
    let proto = *quote.get(9)?;
    let dst = Ipv4Addr::new(*quote.get(16)?, quote[17], quote[18], quote[19]);
    let inner = quote.get(ihl..)?;
    let sctp = match (code, proto) {
        (PORT_UNREACH, ip_proto::UDP) if udp_port != 0 => {
            let sport = u16::from_be_bytes([*inner.first()?, *inner.get(1)?]);
            if sport != udp_port {
                return None;
            }
            inner.get(UDP_HDR..)?
        }
        (PROTO_UNREACH, ip_proto::SCTP) => inner,
        _ => return None,
    };
    let h = sctp.get(..12)?;
    let (lport, pport) = (u16::from_be_bytes([h[0], h[1]]), u16::from_be_bytes([h[2], h[3]]));
    let vtag = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
    // an INIT (tag 0): its initiate tag follows the chunk header
    let init_tag = sctp.get(12..20).filter(|c| c[0] == 1).map(|c| u32::from_be_bytes([c[4], c[5], c[6], c[7]]));
    Some((lport, pport, dst, vtag, init_tag))
}

/// Wraps the SCTP packet in `buf[HEADROOM..]` in a UDP header from the tunneling port to
/// `dport`, with its checksum, and makes `t` a UDP transmit.
pub fn wrap(buf: &mut Vec<u8>, t: &mut Transmit, sport: u16, dport: u16) {
    let sctp_len = buf.len() - HEADROOM;
    buf.splice(HEADROOM..HEADROOM, [0u8; UDP_HDR]);
    UdpRepr { src_port: sport, dst_port: dport, payload_len: sctp_len }.emit(&mut buf[HEADROOM..], t.src, t.dst);
    t.proto = ip_proto::UDP;
}

#[cfg(test)]
mod test {
    use super::*;

    fn cfg(udp: u16, encap: u16) -> SctpConfig {
        SctpConfig { udp_port: udp, encap_port: encap, ..SctpConfig::default() }
    }

    #[test]
    fn wrap_then_decap_returns_the_packet_and_learns_the_port() {
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let sctp = [1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13];
        let mut buf = vec![0u8; HEADROOM];
        buf.extend_from_slice(&sctp);
        let mut t = Transmit { src: a, dst: b, proto: ip_proto::SCTP, ..Default::default() };
        wrap(&mut buf, &mut t, 9899, 40000);
        assert_eq!(t.proto, ip_proto::UDP);
        assert_eq!(buf.len(), HEADROOM + 8 + sctp.len());
        let rx = cfg(40000, 0);
        let (sport, inner) = decap(&rx, a, b, &buf[HEADROOM..]).expect("valid");
        assert_eq!((sport, inner), (9899, &sctp[..]));
        // a flipped payload bit fails the UDP checksum
        let mut bad = buf[HEADROOM..].to_vec();
        bad[10] ^= 1;
        assert!(decap(&rx, a, b, &bad).is_none());
        // another port is not ours
        assert!(decap(&cfg(9899, 0), a, b, &buf[HEADROOM..]).is_none());
        // zero checksum = none (IPv4)
        bad[6] = 0;
        bad[7] = 0;
        assert!(decap(&rx, a, b, &bad).is_some());
    }

    #[test]
    fn icmp_port_unreachable_for_the_tunnel_quotes_the_init() {
        // ICMP 3/3 quoting IPv4 (10.0.0.1 -> 10.0.0.2, UDP) + UDP 9899 -> 9899 + SCTP INIT
        let mut m = vec![3u8, 3, 0, 0, 0, 0, 0, 0];
        let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        m.append(&mut ip);
        m.extend_from_slice(&[0x26, 0xab, 0x26, 0xab, 0, 40, 0, 0]);
        m.extend_from_slice(&[0xc0, 0x00, 0x13, 0x88, 0, 0, 0, 0, 0, 0, 0, 0]); // ports 49152 -> 5000, vtag 0
        m.extend_from_slice(&[1, 0, 0, 20, 0xde, 0xad, 0xbe, 0xef]); // INIT, initiate tag
        assert_eq!(icmp_unreachable(9899, &m), Some((49152, 5000, Ipv4Addr::new(10, 0, 0, 2), 0, Some(0xdead_beef))));
        // not from our tunneling port, not port unreachable, or too short: ignored
        assert_eq!(icmp_unreachable(9900, &m), None);
        let mut other = m.clone();
        other[1] = 1;
        assert_eq!(icmp_unreachable(9899, &other), None);
        assert_eq!(icmp_unreachable(9899, &m[..8 + 20 + 8 + 8]), None);
    }

    #[test]
    fn remote_port_is_per_address_learned_and_reset_by_plain_packets() {
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        // a packet from a:5000 to our port 80 and one we send back are the same transport
        let rx = key_in(a, &[0x13, 0x88, 0, 80]).unwrap();
        assert_eq!(rx, key_out(a, &[0, 80, 0x13, 0x88]).unwrap());
        let other = key_out(a, &[0, 81, 0x13, 0x88]).unwrap();
        let mut e = EncapPorts::default();
        assert_eq!(e.port_for(9899, 0, rx), None);
        e.learn(9899, 0, rx, 5555);
        assert_eq!(e.port_for(9899, 0, rx), Some(5555));
        // another association to the same address keeps its own port
        assert_eq!(e.port_for(9899, 0, other), None);
        e.learn(9899, 0, other, 9900);
        assert_eq!((e.port_for(9899, 0, rx), e.port_for(9899, 0, other)), (Some(5555), Some(9900)));
        e.learn(9899, 0, rx, 0);
        assert_eq!(e.port_for(9899, 0, rx), None);
        // net.sctp.encap_port is the default for unknown transports
        let kb = key_out(b, &[0, 80, 0, 80]).unwrap();
        assert_eq!(e.port_for(9899, 9899, kb), Some(9899));
        // without a local tunneling port nothing is encapsulated
        assert_eq!(e.port_for(0, 9899, kb), None);
    }
}
