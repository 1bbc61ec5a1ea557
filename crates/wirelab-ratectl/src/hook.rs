//! The TCP engine's receive-window hook. Local copy of `wirelab_tcp::RcvWindowPolicy`
//! until it is committed there; identical signature.

/// Receiver-side advertised-window policy (see `wirelab_tcp::RcvWindowPolicy`).
pub trait RcvWindowPolicy: std::fmt::Debug {
    /// Called for each arriving segment with `payload` data bytes.
    fn on_data(&mut self, now: wirelab_core::Instant, payload: usize);
    /// Called from window selection with the window Linux would offer (bytes, unscaled) and
    /// the receive MSS; returns the window to offer.
    fn limit(&mut self, now: wirelab_core::Instant, linux_window: u32, mss: u32) -> u32;
    /// May the policy retract the right edge? Default false.
    fn allow_retract(&self) -> bool {
        false
    }
}
