//! wirelab's TCP: a sans-IO, Linux-faithful TCP engine.
//!
//! * [`wire`]: the TCP header as a zero-copy [`wire::TcpPacket`] view and a validated
//!   [`wire::TcpRepr`] (options MSS, window scale, SACK-permitted, SACK, timestamps).
//! * [`config`]: [`TcpConfig`], era profiles (`linux-6`, `linux-4.6`, `linux-3.14`,
//!   `linux-2.6.37`, `linux-2.2`, `freebsd-4.10`) and `sysctl` names.
//! * [`cc`]: congestion control as a trait shaped like `struct tcp_congestion_ops`, and a
//!   registry of modules (Reno, CUBIC with HyStart, BBRv1, DCTCP, Vegas), one file each;
//!   `cong_control` modules are fed `tcp_rate.c`-style delivery-rate samples.
//! * `conn`: one connection's state machine, split like the kernel files it mirrors
//!   (`input`: `tcp_input.c`, `output`: `tcp_output.c`, `recovery`, `rack`:
//!   `tcp_recovery.c`, `timer`: `tcp_timer.c`, `socket`: `tcp.c`, `thin`), with its state
//!   in parts that have their own methods (RTT estimator, rtx queue + SACK scoreboard,
//!   RACK, delayed ACK, receive-space tuning, undo, PRR, delivery rate, out-of-order
//!   queue, thin-stream state, congestion state, ECN, pacing). ECN follows RFC 3168 as
//!   Linux does it (`tcp_ecn` 0/1/2); pacing computes `sk_pacing_rate` as
//!   `tcp_update_pacing_rate` and paces internally (EDT) unless the egress qdisc is fq, and
//!   each `Transmit` carries its txtime and pacing rate. It includes the thin-stream mechanisms (linear timeouts,
//!   modified fast retransmit), early retransmit and tail loss probe as in 3.x, RACK-TLP,
//!   and redundant data bundling (2008 and 2015 variants).
//! * [`api`]: socket ids, errors, options, `tcp_info`, and the [`RcvWindowPolicy`] hook
//!   for receiver-side rate control.
//! * [`TcpEndpoint`]: one host's stack: 4-tuple demux, listeners, ephemeral ports, RSTs,
//!   and a timer heap with lazy deletion.
//!
//! No clocks, I/O, threads or global state: the driver passes `now` into every call and
//! drains `poll_transmit`, `poll_event` and `poll_timeout` afterwards (see
//! `wirelab_core::transport`). Randomness (ISNs, timestamp offsets, ports) comes from the
//! [`wirelab_core::Rng`] handed to [`TcpEndpoint::new`].
//!
//! docs/tcp.md lists the mechanisms, profiles, sysctls and the deviations from Linux.
//!
//! ```
//! use wirelab_core::{Duration, Instant, Rng, HEADROOM};
//! use wirelab_tcp::{SockEvent, TcpConfig, TcpEndpoint};
//! let a_ip: std::net::Ipv4Addr = "10.0.0.1".parse().unwrap();
//! let mut a = TcpEndpoint::new(TcpConfig::profile("linux-6").unwrap(), Rng::stream(1, "a/tcp"));
//! let mut b = TcpEndpoint::new(TcpConfig::default(), Rng::stream(1, "b/tcp"));
//! let l = b.listen("10.0.0.2:80".parse().unwrap(), 128).unwrap();
//! let mut now = Instant::ZERO;
//! let c = a.connect(now, a_ip, "10.0.0.2:80".parse().unwrap()).unwrap();
//! a.send(now, c, b"hello").unwrap(); // queued until the handshake completes
//! let mut buf = vec![0u8; HEADROOM];
//! for _ in 0..6 {
//!     // a zero-delay "wire": drain each side into the other, 1 ms per hop
//!     now = now + Duration::from_millis(1);
//!     while let Some(t) = a.poll_transmit(now, &mut buf) {
//!         b.handle_packet(now, t.src, t.dst, t.tos, &buf[HEADROOM..]);
//!     }
//!     while let Some(t) = b.poll_transmit(now, &mut buf) {
//!         a.handle_packet(now, t.src, t.dst, t.tos, &buf[HEADROOM..]);
//!     }
//! }
//! assert_eq!(a.poll_event(), Some((c, SockEvent::Connected)));
//! let s = b.accept(l).unwrap();
//! let mut got = [0u8; 16];
//! assert_eq!(b.recv(now, s, &mut got), Ok(5));
//! assert_eq!(&got[..5], b"hello");
//! assert_eq!(a.info(c).unwrap().bytes_acked, 5);
//! ```
#![warn(missing_docs)]

pub mod api;
pub mod cc;
pub mod config;
mod conn;
mod endpoint;
mod engine;
mod ring;
mod small;
pub mod wire;

#[cfg(test)]
// tests tweak one field of a default configuration at a time
#[allow(clippy::field_reassign_with_default, clippy::type_complexity)]
mod tests;

pub use api::{RcvWindowPolicy, SockError, SockOpt, SocketId, TcpInfo, TcpState};
pub use cc::CaState;
pub use config::{ConfigError, CongestionAlgo, CubicParams, DctcpParams, RcvSpaceStyle, RdbMode, TcpConfig, TsqModel, VegasParams};
pub use endpoint::TcpEndpoint;
pub use wirelab_core::SockEvent;
