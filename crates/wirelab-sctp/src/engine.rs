//! [`wirelab_core::Engine`] for the SCTP endpoint: the driver-facing half of its API under
//! the one trait every driver runs. Socket numbers become [`SocketRef::Sctp`].
use crate::{encap, SctpEndpoint};
use wirelab_core::{Datagram, Engine, Instant, SockEvent, SocketRef, Transmit};

impl Engine for SctpEndpoint {
    fn handle_packet(&mut self, now: Instant, d: Datagram<'_>) {
        if d.proto == wirelab_wire::ip_proto::UDP {
            // SCTP over UDP (RFC 6951 §5.4): the inner CRC32c is always verified
            let Some((sport, inner)) = encap::decap(self.config(), d.src, d.dst, d.payload) else { return };
            if !crate::wire::SctpPacket::new_checked(inner).is_ok_and(|p| p.verify_checksum()) {
                return; // RFC 9260 §6.8: silently discard
            }
            let (udp, dflt) = (self.config().udp_port, self.config().encap_port);
            self.encap.learn(udp, dflt, d.src, sport);
            self.handle_packet_csum(now, d.src, d.dst, d.tos, inner, false);
            return;
        }
        if d.proto != wirelab_wire::ip_proto::SCTP {
            return;
        }
        let (udp, dflt) = (self.config().udp_port, self.config().encap_port);
        self.encap.learn(udp, dflt, d.src, 0);
        self.handle_packet_csum(now, d.src, d.dst, d.tos, d.payload, d.verify);
    }
    fn handle_timeout(&mut self, now: Instant) {
        SctpEndpoint::handle_timeout(self, now);
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let mut t = SctpEndpoint::poll_transmit(self, now, buf)?;
        if let Some(dport) = self.encap.port_for(self.config().udp_port, self.config().encap_port, t.dst) {
            encap::wrap(buf, &mut t, self.config().udp_port, dport);
        }
        Some(t)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        SctpEndpoint::poll_timeout(self)
    }
    fn poll_event(&mut self) -> Option<(SocketRef, SockEvent)> {
        SctpEndpoint::poll_event(self).map(|(s, e)| (SocketRef::Sctp(s.0), e))
    }
}
