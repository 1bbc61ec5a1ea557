//! [`wirelab_core::Engine`] for the shim stack. Shim sockets (TCP semantics) become
//! [`SocketRef::Stream`], native SCTP sockets [`SocketRef::Sctp`]; events of native TCP
//! sockets are not reported (every stream socket on a shim host is a shim socket).
use crate::{NativeEvent, ShimStack};
use wirelab_core::{Datagram, Engine, Instant, SockEvent, SocketRef, Transmit};

impl Engine for ShimStack {
    fn handle_packet(&mut self, now: Instant, d: Datagram<'_>) {
        self.handle_packet_csum(now, d.src, d.dst, d.proto, d.tos, d.payload, d.verify);
    }
    fn handle_timeout(&mut self, now: Instant) {
        ShimStack::handle_timeout(self, now);
    }
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        ShimStack::poll_transmit(self, now, buf)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        ShimStack::poll_timeout(self)
    }
    fn tx_complete(&mut self, now: Instant, sk: u64, truesize: u32) -> bool {
        // the shim's own segments are its TCP endpoint's (SCTP charges nothing)
        self.tcp_mut().tx_complete(now, sk, truesize)
    }
    fn poll_event(&mut self) -> Option<(SocketRef, SockEvent)> {
        loop {
            // shim sockets first; draining native events may queue more of them
            if let Some((s, e)) = ShimStack::poll_event(self) {
                return Some((SocketRef::Stream(s.0), e));
            }
            match self.poll_native_event()? {
                NativeEvent::Sctp(s, e) => return Some((SocketRef::Sctp(s.0), e)),
                NativeEvent::Tcp(..) => {}
            }
        }
    }
}
