//! The discrete-event simulator: wirelab's first driver for its sans-IO engines.
//!
//! * [`event`]: the `(time, sequence)`-ordered event heap that makes runs deterministic.
//! * [`routing`]: longest-prefix-match static routes.
//! * [`sim`]: nodes, interfaces, links (netem, from `wirelab-link`), egress qdiscs (from
//!   `wirelab-qdisc`), forwarding and local delivery.
//! * [`stack`]: a host's TCP and SCTP endpoints (sans-IO engines) and socket ownership.
//! * applications live in `wirelab-apps`; the driver runs them through [`wirelab_apps::HostSockets`],
//!   which [`stack::HostStack`] implements.
//! * [`record`]: captures, the queue probe, time series and the run fingerprint.
//! * [`results`]: the tables a run produces.
#![warn(missing_docs)]

pub mod capture;
pub mod connections;
mod describe;
pub mod event;
pub mod record;
pub mod results;
pub mod routing;
mod sample;
pub mod sim;
pub mod stack;

/// The applications, re-exported for the builder and tests.
pub use wirelab_apps as apps;

pub use record::{CaptureDir, CaptureSink, MemoryCapture};
pub use results::RunResults;
pub use sim::{BuildError, Change, IfAddr, InjectError, NodeId, Sim};
