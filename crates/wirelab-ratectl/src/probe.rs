//! Shared read-only view of a controller's state, for the rate tables.
//!
//! A controller lives as a `Box<dyn RcvWindowPolicy>` inside the TCP engine, where the
//! simulator cannot reach it. Each controller therefore owns a [`RateProbe`] and publishes a
//! small `Copy` [`RateSnapshot`] into it whenever its state changes; the simulator keeps a
//! clone of the probe (cheap: one reference count) and reads [`RateProbe::snapshot`] at
//! any time. `Arc<Mutex<_>>` rather than `Rc<Cell<_>>` so that a simulator holding probes
//! stays `Send` (threaded Python sweeps); the lock is never contended and no thread is ever
//! started here. A poisoned lock is read through, never a panic.
use crate::config::RateTarget;
use crate::meter::{aged_by, AgingMode};
use std::sync::{Arc, Mutex};
use wirelab_core::{Duration, Instant};

/// UDP state machine states (thesis §5.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UdpState {
    /// Deliver; go to DROP when over rate.
    #[default]
    Okay,
    /// Drop every datagram for `rate_udp_drop_time`, then WARN with the rate zeroed.
    Drop,
    /// Deliver for `rate_udp_warn_time`, then KILL if still over rate, else OKAY.
    Warn,
    /// The socket is closed as if an ICMP port unreachable had been received.
    Kill,
}

impl UdpState {
    /// The thesis's upper-case name.
    pub fn name(self) -> &'static str {
        match self {
            UdpState::Okay => "OKAY",
            UdpState::Drop => "DROP",
            UdpState::Warn => "WARN",
            UdpState::Kill => "KILL",
        }
    }
}

/// What a controller is currently doing with its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ControlMode {
    /// No target (or `rate_status` 0): Linux's window passes through.
    #[default]
    Off,
    /// Target set: the window policy runs.
    Controlled,
    /// "Important" stream (§5.4): never throttled.
    Important,
    /// `rate_fixed_window` (§6.3): constant window.
    Fixed,
}

/// A controller's state at its last update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateSnapshot {
    /// Last computed rate, bytes per second.
    pub rate_bytes_per_sec: u64,
    /// Last computed rate, 1/1000 packets per second.
    pub rate_milli_pps: u64,
    /// Completed chunks in the ring.
    pub chunks_filled: u32,
    /// When the rate was last recomputed.
    pub last_update: Option<Instant>,
    /// Last arrival counted (None after aging).
    pub last_arrival: Option<Instant>,
    /// The meter's idle interval.
    pub idle: Duration,
    /// The meter's aging mode.
    pub aging: AgingMode,
    /// Payload bytes counted so far.
    pub bytes: u64,
    /// Packets counted so far.
    pub pkts: u64,
    /// TCP: last window returned to the engine (bytes; 0 before the first).
    pub window: u32,
    /// TCP: the policy's own window `W`.
    pub policy_window: Option<u32>,
    /// TCP: Linux's window at the last computation.
    pub linux_window: u32,
    /// TCP: policy shrink and grow steps taken.
    pub shrinks: u64,
    /// TCP: grow steps taken.
    pub grows: u64,
    /// Target or threshold in force.
    pub target: Option<RateTarget>,
    /// Current control mode.
    pub mode: ControlMode,
    /// UDP: state machine state (None for TCP).
    pub udp_state: Option<UdpState>,
    /// UDP: datagrams delivered.
    pub delivered: u64,
    /// UDP: datagrams dropped (the thesis's SNMP drop counter).
    pub dropped: u64,
}

impl RateSnapshot {
    /// Whole packets per second (the thesis's `/proc/net/*_rate` unit).
    pub fn rate_pps(&self) -> u64 {
        self.rate_milli_pps / 1000
    }

    /// This snapshot as the meter would show it at `now`: if aging is due (the socket has
    /// been idle and no call has reached the controller since), the rate and history read
    /// as zero, as the thesis's `/proc/net/*_rate` would after its aging timer.
    pub fn aged(&self, now: Instant) -> RateSnapshot {
        let mut s = *self;
        if aged_by(s.last_arrival, now, s.idle, s.aging) {
            s.rate_bytes_per_sec = 0;
            s.rate_milli_pps = 0;
            s.chunks_filled = 0;
            s.last_arrival = None;
        }
        s
    }
}

/// Cloneable handle to a controller's published [`RateSnapshot`].
#[derive(Clone, Debug, Default)]
pub struct RateProbe(Arc<Mutex<RateSnapshot>>);

impl RateProbe {
    /// A probe holding a default snapshot.
    pub fn new() -> Self {
        Self::default()
    }

    /// The latest published snapshot.
    pub fn snapshot(&self) -> RateSnapshot {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The latest snapshot, aged to `now` (see [`RateSnapshot::aged`]): use this for rate
    /// tables, since an idle controller is not called and cannot update itself.
    pub fn snapshot_at(&self, now: Instant) -> RateSnapshot {
        self.snapshot().aged(now)
    }

    pub(crate) fn publish(&self, s: &RateSnapshot) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = *s;
    }
}
