//! Receiver-side input rate control: seed system 4, N. (Steve) Shah, "Exploring TCP Stream
//! Rate Control in LAN Environments", M.Sc. thesis, UC Riverside, 1999/2000.
//!
//! The thesis modified Linux 2.1.121 so a *receiver* limits the rate of incoming streams:
//! TCP by shrinking the advertised window, UDP by dropping and finally killing. Layers:
//!
//! * [`meter`]: "chunkifying" rate meter (§5.1): a ring of K chunks, counts scaled to the
//!   nominal chunk length, rate = average over the ring; idle sockets aged lazily (default)
//!   or by a 2-second timer ([`RateMeter::tick`]).
//! * [`policy`]: window sizing (§5.2.1): the original large-steps-above-8 KB policy and the
//!   revised 1-MSS policy (§6.6).
//! * [`config`]: the `/proc/sys/net/ipv4/rate_*` knobs as `net.ipv4.rate_*` sysctls.
//! * [`tcp`]: [`TcpRateController`], the TCP engine's receive-window hook
//!   ([`RcvWindowPolicy`]).
//! * [`udp`]: [`UdpRatePolicy`], the OKAY → DROP → WARN → KILL machine (§5.2.2).
//! * [`probe`] and [`table`]: shared snapshots the simulator reads while the controller is
//!   boxed inside the engine, and `/proc/net/{tcp,udp}_rate` rows (§5.3).
//!
//! Sans-IO, std only, deterministic: no clock, no timer of its own, no randomness; time is
//! passed in as [`wirelab_core::Instant`]. Nothing here panics on configuration strings.
//! docs/rate-control.md describes the algorithm, knobs, ambiguities and deviations.
//!
//! ```
//! use wirelab_core::Instant;
//! use wirelab_ratectl::{RateConfig, RcvWindowPolicy, TcpRateController};
//!
//! let mut cfg = RateConfig::default();
//! cfg.set_sysctl("net.ipv4.rate_acceptable_tcp", "1mbit").unwrap();
//! let mut ctl = TcpRateController::new(&cfg);
//! let probe = ctl.probe(); // kept by the simulator for the rate table
//! for i in 0..1000u64 {
//!     let now = Instant::from_nanos(i * 1_000_000); // one 1460-byte segment per ms
//!     ctl.on_data(now, 1460);
//!     ctl.limit(now, 65535, 1460);
//! }
//! let s = probe.snapshot();
//! assert!(s.rate_bytes_per_sec > 1_400_000 && s.window < 65535);
//! ```
#![warn(missing_docs)]

pub mod config;
mod hook;
pub mod meter;
pub mod policy;
pub mod probe;
pub mod table;
pub mod tcp;
pub mod udp;

pub use config::{MssOption, RateConfig, RateTarget, SYSCTL_NAMES};
pub use hook::RcvWindowPolicy;
pub use meter::{AgingMode, ChunkSample, MeterConfig, RateMeter, RATE_AGE_PERIOD};
pub use policy::{OriginalSteps, PolicyKind, StepTrigger, WindowPolicy};
pub use probe::{ControlMode, RateProbe, RateSnapshot, UdpState};
pub use table::{render_tcp_rate, render_udp_rate, tcp_states, TcpRateRow, UdpRateRow};
pub use tcp::TcpRateController;
pub use udp::{UdpRatePolicy, UdpVerdict};
#[cfg(test)]
mod model_test;
