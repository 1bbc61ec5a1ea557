//! Links with netem's impairments, as sans-IO components.
//!
//! * [`NetemSpec`]: the `tc-netem(8)` vocabulary (`rate`, `delay` + jitter + correlation +
//!   `distribution`, `loss random|state|gemodel`, `duplicate`, `corrupt`, `reorder`/`gap`,
//!   `limit`) plus wirelab's `jitter-order fifo|reorder`, parsed with iproute2's rules
//!   (`tc/q_netem.c`) and printed in canonical tc form.
//! * [`LinkDirection`]: one direction of a point-to-point link. The simulator pulls a
//!   packet from the interface's egress qdisc whenever the transmitter is idle, hands it
//!   to [`LinkDirection::transmit`], and collects arrivals with
//!   [`LinkDirection::poll_arrival`]. Serialisation comes first, then netem's impairments
//!   and delay (`net/sched/sch_netem.c`: `netem_enqueue`, `loss_4state`,
//!   `loss_gilb_ell`, `get_crandom`, `tabledist`).
//!
//! No clocks, no I/O, no global state: randomness comes from the [`wirelab_core::Rng`]
//! passed to [`LinkDirection::new`]. Deviations from Linux are listed in docs/netem.md.
//!
//! ```
//! use wirelab_core::{Instant, Pkt, Rng};
//! use wirelab_link::{LinkDirection, NetemSpec};
//!
//! let spec = NetemSpec::parse("rate 10mbit delay 20ms loss 1%").unwrap();
//! let mut link = LinkDirection::new(spec, Rng::stream(42, "link/r1-r2/fwd"));
//! let now = Instant::ZERO;
//! if link.is_idle(now) {
//!     let r = link.transmit(now, Pkt::new(vec![0x45; 1500]));
//!     assert_eq!(r.tx_end, link.busy_until());
//! }
//! while let Some(t) = link.poll_timeout() {
//!     while let Some(pkt) = link.poll_arrival(t) {
//!         assert_eq!(pkt.data.len(), 1500); // deliver to the far end at `t`
//!     }
//!     link.handle_timeout(t);
//! }
//! ```
#![warn(missing_docs)]

mod gen;
mod link;
mod spec;

pub use link::{Fate, LinkDirection, LinkStats, LossCause, TxResult};
pub use spec::{Distribution, JitterOrder, LinkError, LossModel, NetemSpec, Prob, RateSpec};
