//! Sans-IO SCTP (RFC 9260) for wirelab, with Linux-like socket buffer accounting,
//! multihoming, and the send-buffer advertisement chunk (0x96) of seed system 1.
//!
//! Layers:
//! * [`wire`]: SCTP packet/chunk views and representations (never panic on input).
//! * [`config`]: [`SctpConfig`] with Linux sysctl names and era profiles.
//! * [`SctpEndpoint`]: one per host; demultiplexes packets to associations, answers INIT
//!   statelessly with a verified state cookie, and drives every association's timers from
//!   one heap. Associations live in the private `assoc` module.
//!
//! The driver contract is `wirelab_core::transport`'s: after each `handle_packet`,
//! `handle_timeout` or command, drain `poll_transmit`, then `poll_event`, then read
//! `poll_timeout`. See `docs/sctp.md` for mechanisms, defaults and deviations.
//!
//! ```
//! use std::net::Ipv4Addr;
//! use wirelab_core::{Duration, Instant, Rng, SockEvent, HEADROOM};
//! use wirelab_sctp::{SctpConfig, SctpEndpoint};
//!
//! let (ca, sa) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
//! let mut hosts = [
//!     SctpEndpoint::new(SctpConfig::profile("linux-6").unwrap(), Rng::stream(1, "client")),
//!     SctpEndpoint::new(SctpConfig::default(), Rng::stream(1, "server")),
//! ];
//! let listener = hosts[1].listen(&[sa], 5000, 16).unwrap();
//! let mut now = Instant::ZERO;
//! let c = hosts[0].connect(now, &[ca], &[sa], 5000).unwrap();
//! let (mut server, mut sent, mut got) = (None, false, Vec::new());
//! for _ in 0..100 {
//!     // drain both hosts; deliver every packet after 1 ms (a zero-loss wire)
//!     now = now + Duration::from_millis(1);
//!     for h in 0..2 {
//!         let mut buf = vec![0u8; HEADROOM];
//!         while let Some(t) = hosts[h].poll_transmit(now, &mut buf) {
//!             let pkt = buf[HEADROOM..].to_vec();
//!             hosts[1 - h].handle_packet(now, t.src, t.dst, t.tos, &pkt);
//!             buf.truncate(HEADROOM);
//!         }
//!         while let Some((s, ev)) = hosts[h].poll_event() {
//!             match ev {
//!                 SockEvent::Incoming => server = hosts[1].accept(s),
//!                 SockEvent::Connected if !sent => sent = hosts[0].send(now, c, 0, b"hello", false).unwrap() == 5,
//!                 _ => {}
//!             }
//!         }
//!         hosts[h].handle_timeout(now);
//!     }
//!     if let Some(s) = server {
//!         let mut b = [0u8; 64];
//!         if let Ok(Some(r)) = hosts[1].recv(now, s, &mut b) {
//!             got.extend_from_slice(&b[..r.len]);
//!         }
//!     }
//! }
//! assert_eq!(got, b"hello");
//! let _ = listener;
//! ```
#![warn(missing_docs)]

mod assoc;
pub mod config;
pub mod encap;
mod endpoint;
mod engine;
mod types;
pub mod wire;

pub use config::{Autotune, BacklogDef, Cmt, ConfigError, Cuc, RtxPolicy, RttFallback, SctpConfig, SndbufAdv, TruesizeModel};
pub use endpoint::SctpEndpoint;
pub use types::*;

#[cfg(test)]
// tests tweak one field of a default configuration at a time
#[allow(clippy::field_reassign_with_default, clippy::type_complexity)]
mod tests;
