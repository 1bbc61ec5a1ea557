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
#![warn(missing_docs)]

mod assoc;
pub mod config;
mod endpoint;
mod types;
pub mod wire;

pub use config::{Autotune, BacklogDef, ConfigError, SctpConfig, SndbufAdv, TruesizeModel};
pub use endpoint::SctpEndpoint;
pub use types::*;

#[cfg(test)]
mod tests;
