//! [`wirelab_core::Engine`] for the TCP endpoint: the driver-facing half of its API under
//! the one trait every driver runs. Socket numbers become [`SocketRef::Stream`].
use crate::TcpEndpoint;
use wirelab_core::{Datagram, Engine, Instant, SockEvent, SocketRef, Transmit};

impl Engine for TcpEndpoint {
    fn handle_packet(&mut self, now: Instant, d: Datagram<'_>) {
        self.handle_packet_csum(now, d.src, d.dst, d.tos, d.payload, d.verify);
    }
    fn handle_timeout(&mut self, now: Instant) {
        TcpEndpoint::handle_timeout(self, now);
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        TcpEndpoint::poll_transmit(self, now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        TcpEndpoint::poll_timeout(self)
    }
    fn poll_event(&mut self) -> Option<(SocketRef, SockEvent)> {
        TcpEndpoint::poll_event(self).map(|(s, e)| (SocketRef::Stream(s.0), e))
    }
    fn tx_complete(&mut self, now: Instant, sk: u64, truesize: u32) -> bool {
        TcpEndpoint::tx_complete(self, now, sk, truesize)
    }
}
