//! [`wirelab_core::Engine`] for the SCTP endpoint: the driver-facing half of its API under
//! the one trait every driver runs. Socket numbers become [`SocketRef::Sctp`].
use crate::SctpEndpoint;
use wirelab_core::{Datagram, Engine, Instant, SockEvent, SocketRef, Transmit};

impl Engine for SctpEndpoint {
    fn handle_packet(&mut self, now: Instant, d: Datagram<'_>) {
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
