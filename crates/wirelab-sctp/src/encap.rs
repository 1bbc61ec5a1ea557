//! SCTP over UDP (RFC 6951), as Linux ≥ 5.11 implements it (`net.sctp.udp_port`,
//! `net.sctp.encap_port`, `sctp_udp_rcv()`, `transport->encap_port`), so the engine can
//! talk to usrsctp, which runs SCTP over UDP port 9899 in user space.
//!
//! * The host listens on one UDP port, `net.sctp.udp_port` (0 = off; 9899 is IANA's
//!   `sctp-tunneling`). It is the source port of every encapsulated packet.
//! * The remote port is per destination address (§5.1): learned from the source port of
//!   the last valid encapsulated packet from that address, and reset to "plain SCTP" by a
//!   plain one (§5.4); `net.sctp.encap_port` is the port used for an address nothing was
//!   heard from yet (Linux: `sp->encap_port` copied to every new transport).
//! * Checksums (§5.3, §5.4): the SCTP CRC32c is always computed and always verified (a
//!   NIC's CRC offload cannot vouch for a tunnelled packet; Linux computes it in software
//!   when `tp->encap_port` is set, `sctp_packet_pack()`); the UDP checksum is computed
//!   (`udp_tunnel_xmit_skb(..., nocheck = false)`) and, when non-zero, verified.
//! * PMTU (§5.6): the UDP header is charged against the MTU ([`SctpConfig::frag_point`],
//!   Linux `sctp_mtu_payload()` adds `sizeof(struct udphdr)` when `udp_port` is set).
//!
//! Deviation: the remote port is learned per peer address at the endpoint, before the
//! verification-tag check of the association lookup (§5.4 stores it after that check);
//! with one association per peer address, as in every wirelab scenario, this is the same.
use crate::config::SctpConfig;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use wirelab_core::{Transmit, HEADROOM};
use wirelab_wire::ip_proto;
use wirelab_wire::udp::{UdpPacket, UdpRepr};

/// UDP header bytes.
pub const UDP_HDR: usize = 8;

/// Remote UDP encapsulation ports by peer address (0 = send plain SCTP).
#[derive(Debug, Default, Clone)]
pub struct EncapPorts {
    ports: HashMap<Ipv4Addr, u16>,
}

impl EncapPorts {
    /// The remote port for `dst`, or `None` to send plain SCTP. `udp_port` and
    /// `encap_port` are the two sysctls ([`SctpConfig::udp_port`], [`SctpConfig::encap_port`]).
    #[inline]
    pub fn port_for(&self, udp_port: u16, encap_port: u16, dst: Ipv4Addr) -> Option<u16> {
        if udp_port == 0 {
            return None;
        }
        let p = self.ports.get(&dst).copied().unwrap_or(encap_port);
        (p != 0).then_some(p)
    }

    /// A valid packet from `src` arrived encapsulated from UDP port `port`, or plain (0).
    #[inline]
    pub fn learn(&mut self, udp_port: u16, encap_port: u16, src: Ipv4Addr, port: u16) {
        if udp_port == 0 {
            return;
        }
        if port == 0 && !self.ports.contains_key(&src) && encap_port == 0 {
            return; // plain stays plain: no entry needed
        }
        self.ports.insert(src, port);
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
    fn remote_port_is_per_address_learned_and_reset_by_plain_packets() {
        let (a, b) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let mut e = EncapPorts::default();
        assert_eq!(e.port_for(9899, 0, a), None);
        e.learn(9899, 0, a, 5555);
        assert_eq!(e.port_for(9899, 0, a), Some(5555));
        assert_eq!(e.port_for(9899, 0, b), None);
        e.learn(9899, 0, a, 0);
        assert_eq!(e.port_for(9899, 0, a), None);
        // net.sctp.encap_port is the default for unknown addresses
        assert_eq!(e.port_for(9899, 9899, b), Some(9899));
        // without a local tunneling port nothing is encapsulated
        assert_eq!(e.port_for(0, 9899, b), None);
    }
}
