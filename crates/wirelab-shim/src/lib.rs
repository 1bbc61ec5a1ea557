//! wirelab's transparent TCP-to-SCTP shim (seed system 5: Bickhart, "Transparent
//! TCP-to-SCTP Translation Shim Layer", U. Delaware M.S. thesis 2005, EuroBSDCon 2007).
//!
//! A [`ShimStack`] sits between a host's socket API and its two sans-IO engines,
//! [`wirelab_tcp::TcpEndpoint`] and [`wirelab_sctp::SctpEndpoint`]. Applications call a
//! TCP-shaped API (`connect`, `listen`, `accept`, `send`, `recv`, `shutdown_write`,
//! `close`, `abort`) and get TCP events; underneath, each socket runs over TCP or SCTP:
//!
//! * [`rules`]: the `local` (listening) and `remote` (connecting) chains, first match
//!   wins, per-chain default, with a line syntax (`remote enable 10.1.1.0/24`) and a
//!   decision log ([`ShimStack::matches`]).
//! * connect: SCTP first (all local and peer addresses: multihoming), transparently
//!   falling back to TCP on ABORT, ICMP unreachable or a timer ([`Fallback`]).
//! * listen: TCP and SCTP at once; `accept` returns whichever connection arrived first.
//! * byte stream over SCTP stream 0; `shutdown(SHUT_WR)` emulated with an end-of-stream
//!   marker on a reserved control stream when the peer is a shim (discovered with an
//!   RFC 5061 Adaptation Layer Indication in INIT/INIT-ACK, [`adapt`]), plain SCTP
//!   SHUTDOWN with a native SCTP peer.
//!
//! Sans-IO like the engines: no clocks, I/O, threads or randomness of its own; the driver
//! contract of `wirelab_core::transport` applies (after each `handle_*` or command drain
//! `poll_transmit`, then `poll_event`, then read `poll_timeout`). docs/shim.md describes
//! the design and the deviations from the FreeBSD implementation.
//!
//! ```
//! use wirelab_core::{Duration, Instant, Rng, SockEvent, HEADROOM};
//! use wirelab_sctp::{SctpConfig, SctpEndpoint};
//! use wirelab_shim::{RuleTable, ShimConfig, ShimStack, Transport};
//! use wirelab_tcp::{TcpConfig, TcpEndpoint};
//!
//! let host = |name: &str| {
//!     let cfg = ShimConfig { rules: RuleTable::parse("remote enable 10.0.0.0/24\nlocal enable any").unwrap(), ..Default::default() };
//!     ShimStack::new(cfg, TcpEndpoint::new(TcpConfig::default(), Rng::stream(1, &format!("{name}/tcp"))),
//!                    SctpEndpoint::new(SctpConfig::default(), Rng::stream(1, &format!("{name}/sctp"))))
//! };
//! let (mut a, mut b) = (host("a"), host("b"));
//! let l = b.listen("10.0.0.2:21".parse().unwrap(), 16).unwrap();
//! let mut now = Instant::ZERO;
//! let c = a.connect(now, "10.0.0.1".parse().unwrap(), "10.0.0.2:21".parse().unwrap()).unwrap();
//! a.send(now, c, b"USER anonymous\r\n").unwrap(); // held until the transport is known
//! let mut buf = vec![0u8; HEADROOM];
//! for _ in 0..20 {
//!     now = now + Duration::from_millis(1);
//!     while let Some(t) = a.poll_transmit(now, &mut buf) {
//!         b.handle_packet(now, t.src, t.dst, t.proto, t.tos, &buf[HEADROOM..].to_vec());
//!     }
//!     while let Some(t) = b.poll_transmit(now, &mut buf) {
//!         a.handle_packet(now, t.src, t.dst, t.proto, t.tos, &buf[HEADROOM..].to_vec());
//!     }
//! }
//! assert_eq!(a.poll_event(), Some((c, SockEvent::Connected)));
//! assert_eq!(a.info(c).unwrap().transport, Some(Transport::Sctp));
//! let s = b.accept(l).unwrap();
//! let mut got = [0u8; 64];
//! assert_eq!(b.recv(now, s, &mut got), Ok(16));
//! ```
#![warn(missing_docs)]

pub mod adapt;
pub mod rules;
mod engine;
mod stack;

#[cfg(test)]
mod tests;

pub use rules::{Chain, Policy, Rule, RuleError, RuleMatch, RuleTable};
pub use stack::{Fallback, FallbackReason, HalfClose, MatchRecord, NativeEvent, ShimConfig, ShimInfo, ShimSocketId, ShimStack, Transport};
pub use wirelab_core::SockEvent;
pub use wirelab_tcp::SockError;
