//! [`wirelab_core::Engine`] for the SCTP endpoint: the driver-facing half of its API under
//! the one trait every driver runs. Socket numbers become [`SocketRef::Sctp`].
use crate::{encap, SctpEndpoint};
use wirelab_core::{Datagram, Engine, Instant, SockEvent, SocketRef, Transmit, HEADROOM};

impl SctpEndpoint {
    /// Writes the next packet after the `HEADROOM` bytes already in `buf`: SCTP, or SCTP
    /// in UDP when the transport has an encapsulation port (RFC 6951, `crate::encap`).
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let mut t = self.poll_transmit_sctp(now, buf)?;
        let udp = self.config().udp_port;
        if udp != 0 {
            let key = encap::key_out(t.dst, &buf[HEADROOM..]);
            if let Some(dport) = key.and_then(|k| self.encap.port_for(udp, self.config().encap_port, k)) {
                encap::wrap(buf, &mut t, udp, dport);
            }
        }
        Some(t)
    }
}

impl Engine for SctpEndpoint {
    fn handle_packet(&mut self, now: Instant, d: Datagram<'_>) {
        if d.proto == wirelab_wire::ip_proto::UDP {
            // SCTP over UDP (RFC 6951 §5.4): the inner CRC32c is always verified
            let Some((sport, inner)) = encap::decap(self.config(), d.src, d.dst, d.payload) else { return };
            if !crate::wire::SctpPacket::new_checked(inner).is_ok_and(|p| p.verify_checksum()) {
                return; // RFC 9260 §6.8: silently discard
            }
            let (udp, dflt) = (self.config().udp_port, self.config().encap_port);
            if let Some(k) = encap::key_in(d.src, inner) {
                self.encap.learn(udp, dflt, k, sport);
            }
            self.handle_packet_csum(now, d.src, d.dst, d.tos, inner, false);
            return;
        }
        if d.proto == wirelab_wire::ip_proto::ICMP {
            // RFC 6951 §5.5 / RFC 9260 appendix C: protocol unreachable
            if let Some((lport, pport, peer, vtag, init_tag)) = encap::icmp_unreachable(self.config().udp_port, d.payload) {
                self.icmp_proto_unreachable(lport, pport, peer, vtag, init_tag);
            }
            return;
        }
        if d.proto != wirelab_wire::ip_proto::SCTP {
            return;
        }
        let (udp, dflt) = (self.config().udp_port, self.config().encap_port);
        if udp != 0 {
            if let Some(k) = encap::key_in(d.src, d.payload) {
                self.encap.learn(udp, dflt, k, 0);
            }
        }
        self.handle_packet_csum(now, d.src, d.dst, d.tos, d.payload, d.verify);
    }
    fn handle_timeout(&mut self, now: Instant) {
        SctpEndpoint::handle_timeout(self, now);
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        SctpEndpoint::poll_transmit(self, now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        SctpEndpoint::poll_timeout(self)
    }
    fn poll_event(&mut self) -> Option<(SocketRef, SockEvent)> {
        SctpEndpoint::poll_event(self).map(|(s, e)| (SocketRef::Sctp(s.0), e))
    }
}
