//! wirelab's shared vocabulary.
//!
//! Every other crate speaks in these types:
//!
//! * [`Instant`] / [`Duration`]: simulated time as integer nanoseconds. No engine reads a
//!   clock; the driver passes `now` in.
//! * [`Rng`]: a small, stable, seeded PRNG. Streams are keyed by `(run seed, name)` so a
//!   new component never shifts another component's random draws.
//! * [`units`]: `tc`/`netem` spelling of rates, times, sizes and percentages.
//! * [`pattern::PATTERN`]: the payload applications write, with O(1) checksums of its slices.
//! * [`Pkt`]: an IPv4 datagram as real bytes plus simulator metadata (our `sk_buff`).
//! * [`Engine`], [`Transmit`] and [`SockEvent`]: the trait and conventions sans-IO engines use to hand packets and
//!   application events to whichever driver runs them.
#![warn(missing_docs)]

pub mod packed;
pub mod pattern;
pub mod pkt;
pub mod rng;
pub mod time;
pub mod transport;
pub mod units;

pub use pkt::{Pkt, PktMeta};
pub use rng::Rng;
pub use time::{Duration, Instant};
pub use transport::{socket_key, tsq, Datagram, Engine, SockEvent, SocketRef, Transmit, HEADROOM};
