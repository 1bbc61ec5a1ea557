//! wirelab's TCP: a sans-IO, Linux-faithful TCP engine.
//!
//! * [`wire`]: the TCP header as a zero-copy [`wire::TcpPacket`] view and a validated
//!   [`wire::TcpRepr`] (options MSS, window scale, SACK-permitted, SACK, timestamps).
//! * [`config`]: [`TcpConfig`], era profiles (`linux-6`, `linux-4.6`, `linux-3.14`,
//!   `linux-2.6.37`, `linux-2.2`, `freebsd-4.10`) and `sysctl` names.
//! * [`cc`]: congestion control shaped like `struct tcp_congestion_ops` (Reno, CUBIC with
//!   HyStart).
//! * `conn`: one connection's state machine (`tcp_input.c`, `tcp_output.c`, `tcp_timer.c`).
//! * [`TcpEndpoint`]: one host's stack: 4-tuple demux, listeners, ephemeral ports, RSTs,
//!   and a timer heap with lazy deletion.
//!
//! No clocks, I/O, threads or global state: the driver passes `now` into every call and
//! drains `poll_transmit`, `poll_event` and `poll_timeout` afterwards (see
//! `wirelab_core::transport`). Randomness (ISNs, timestamp offsets, ports) comes from the
//! [`wirelab_core::Rng`] handed to [`TcpEndpoint::new`].
//!
//! docs/tcp.md lists the mechanisms, profiles, sysctls and the deviations from Linux.
#![warn(missing_docs)]

pub mod api;
pub mod cc;
pub mod config;
mod conn;
mod endpoint;
mod ring;
pub mod wire;

#[cfg(test)]
mod tests;

pub use api::{SockError, SockOpt, SocketId, TcpInfo, TcpState};
pub use cc::CaState;
pub use config::{ConfigError, CongestionAlgo, CubicParams, TcpConfig};
pub use endpoint::TcpEndpoint;
pub use wirelab_core::SockEvent;
