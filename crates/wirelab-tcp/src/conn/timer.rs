//! Timers (`tcp_timer.c`): the retransmit timer with its kinds (RTO, persist, delayed
//! early retransmit, loss probe, RACK reordering), the delayed-ACK timer and the socket
//! timer (TIME_WAIT, orphaned FIN_WAIT2), plus the jiffy arithmetic kernel timers use.
use super::{Conn, Out};
use crate::api::{SockError, TcpState};
use crate::cc::CaState;
use crate::config::TcpConfig;
use wirelab_core::{Duration, Instant, SockEvent};

/// `TCP_RESOURCE_PROBE_INTERVAL` (`HZ / 2`): the retry interval after a transmission
/// failed for local congestion.
const TCP_RESOURCE_PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// The `icsk_retransmit_timer` kinds (`ICSK_TIME_*`): one timer, one pending kind, as in
/// Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum XmitTimer {
    /// `ICSK_TIME_RETRANS`: RTO (also SYN/SYN-ACK retransmission).
    Retrans,
    /// `ICSK_TIME_PROBE0`: zero-window probe.
    Probe0,
    /// `ICSK_TIME_EARLY_RETRANS`: delayed early retransmit (`tcp_early_retrans` 2, 3).
    EarlyRetrans,
    /// `ICSK_TIME_LOSS_PROBE`: tail loss probe (`tcp_early_retrans` 3, 4).
    LossProbe,
    /// `ICSK_TIME_REO_TIMEOUT`: RACK reordering timer.
    ReoTimeout,
}

impl XmitTimer {
    /// This kind as a bit, for [`Conn::xmit_timer_is`] masks.
    #[inline]
    pub(crate) const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The socket timer (`sk_timer`) kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SkTimer {
    /// TIME_WAIT expiry (`TCP_TIMEWAIT_LEN`).
    TimeWait,
    /// Orphaned FIN_WAIT2 expiry (`tcp_fin_timeout`).
    FinWait2,
}

/// `jiffies` at `t`.
#[inline]
pub(crate) fn jiffies(cfg: &TcpConfig, t: Instant) -> u32 {
    // u64 arithmetic whenever the product fits (any time below 213 days at HZ = 1000): a
    // division by a constant, not the 128-bit library call it costs on every ACK otherwise
    match t.as_nanos().checked_mul(cfg.hz as u64) {
        Some(p) => (p / 1_000_000_000) as u32,
        None => ((t.as_nanos() as u128 * cfg.hz as u128) / 1_000_000_000) as u32,
    }
}

/// Rounds a timer duration up to whole jiffies (`usecs_to_jiffies`) and the start down to
/// the current tick, as a kernel timer armed at `jiffies + n` does.
pub(crate) fn timer_at(cfg: &TcpConfig, now: Instant, d: Duration) -> Instant {
    let j = cfg.jiffy().as_nanos().max(1);
    let start = now.as_nanos() / j * j;
    let n = d.as_nanos().div_ceil(j).max(1);
    Instant::from_nanos(start + n * j)
}

/// `d` rounded up to whole jiffies.
pub(crate) fn round_jiffies(cfg: &TcpConfig, d: Duration) -> Duration {
    let j = cfg.jiffy().as_nanos().max(1);
    Duration::from_nanos(d.as_nanos().div_ceil(j) * j)
}

impl Conn {
    /// `inet_csk_reset_xmit_timer()`.
    pub(super) fn reset_xmit_timer(&mut self, cfg: &TcpConfig, now: Instant, kind: XmitTimer, d: Duration) {
        self.xmit_timer = Some((timer_at(cfg, now, d.min(cfg.rto_max)), kind));
    }

    /// Is the pending retransmit-timer kind one of `kinds` (a mask of [`XmitTimer::bit`])?
    #[inline]
    pub(super) fn xmit_timer_is(&self, kinds: u8) -> bool {
        matches!(self.xmit_timer, Some((_, k)) if k.bit() & kinds != 0)
    }

    /// `tcp_rearm_rto()`. When an early-retransmit, loss-probe or RACK reordering timer is
    /// pending, the RTO keeps counting from the head's transmission instead of restarting.
    pub(super) fn rearm_rto(&mut self, cfg: &TcpConfig, now: Instant) {
        use XmitTimer::*;
        let from_head = self.xmit_timer_is(EarlyRetrans.bit() | LossProbe.bit() | ReoTimeout.bit());
        self.rearm_rto_from(cfg, now, from_head);
    }

    /// `tcp_rearm_rto()` with the pending timer kind given: `from_head` when
    /// `icsk_pending` is one of the early kinds, which Linux leaves set while their own
    /// handlers run (`tcp_write_timer_handler()` clears it only for RETRANS and PROBE0).
    pub(super) fn rearm_rto_from(&mut self, cfg: &TcpConfig, now: Instant, from_head: bool) {
        use XmitTimer::*;
        if self.rtx.packets_out == 0 {
            if self.xmit_timer_is(Retrans.bit() | EarlyRetrans.bit() | LossProbe.bit() | ReoTimeout.bit()) {
                self.xmit_timer = None;
            }
        } else {
            // the RTO's own retransmission goes out here, after tcp_retransmit_timer()
            // ran: its timer is clamped to TCP_USER_TIMEOUT as the kernel's is
            let mut rto = if self.ca_state == CaState::Loss { self.clamp_rto_to_user_timeout(now) } else { self.rtt.rto };
            if from_head {
                if let Some(h) = self.rtx.q.front() {
                    let left = (h.xmit + rto).saturating_since(now);
                    if left > Duration::ZERO {
                        rto = left;
                    } else if self.rack_on(cfg) {
                        // 4.13+: usecs_to_jiffies(max_t(int, delta_us, 1)), an RTO instant
                        // already past fires on the next tick; 3.x (`if (delta > 0)`)
                        // keeps the whole icsk_rto
                        rto = Duration::from_nanos(1);
                    }
                }
            }
            self.reset_xmit_timer(cfg, now, Retrans, rto);
        }
    }

    /// `tcp_check_probe_timer()`.
    pub(super) fn check_probe_timer(&mut self, cfg: &TcpConfig, now: Instant) {
        if self.rtx.packets_out == 0 && self.xmit_timer.is_none() {
            let d = self.rtt.probe0_when(cfg);
            self.reset_xmit_timer(cfg, now, XmitTimer::Probe0, d);
        }
    }

    /// Runs every due timer. A spurious call is a no-op.
    pub fn on_timeout(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        self.last_now = now;
        // tcp_pace_kick(): the pacing hrtimer only lets the next transmit through
        if self.pacing.timer.is_some_and(|t| t <= now) {
            self.pacing.timer = None;
        }
        if let Some((t, kind)) = self.xmit_timer {
            if t <= now {
                self.xmit_timer = None;
                match kind {
                    XmitTimer::Retrans => self.retransmit_timer(cfg, now, out),
                    XmitTimer::Probe0 => self.probe_timer(cfg, now, out),
                    XmitTimer::EarlyRetrans => self.resume_early_retransmit(cfg, now),
                    XmitTimer::LossProbe => self.loss_probe_timer(cfg, now),
                    XmitTimer::ReoTimeout => self.rack_reo_timeout(cfg, now),
                }
            }
        }
        if let Some(t) = self.ack.timer {
            if t <= now {
                self.ack.timer = None;
                // tcp_delack_timer_handler()
                self.ack.timer_handler(self.rtt.rto);
            }
        }
        if let Some((t, kind)) = self.sk_timer {
            if t <= now {
                self.sk_timer = None;
                match kind {
                    SkTimer::TimeWait | SkTimer::FinWait2 => {
                        if !self.closed_notified {
                            self.notify(out, SockEvent::Closed);
                            self.closed_notified = true;
                        }
                        self.enter_closed(now);
                    }
                }
            }
        }
    }

    /// `retransmits_timed_out()` for `tcp_retries2` (time-based, as Linux ≥ 3.x), or
    /// for `TCP_USER_TIMEOUT` when set.
    fn write_timeout(&self, cfg: &TcpConfig, now: Instant) -> bool {
        let Some(start) = self.retrans_stamp else { return false };
        // tcp_time_stamp_ms(): whole milliseconds
        let elapsed_ms = (now.as_nanos() / 1_000_000).saturating_sub(start.as_nanos() / 1_000_000);
        if let Some(ut) = self.user_timeout {
            return elapsed_ms >= ut.as_millis();
        }
        let boundary = cfg.tcp_retries2 as u64;
        let rto_base = cfg.rto_min.as_nanos().max(1);
        let thresh = (cfg.rto_max.as_nanos() / rto_base).max(1);
        let linear_backoff_thresh = 63 - thresh.leading_zeros() as u64; // ilog2
        let timeout = if boundary <= linear_backoff_thresh {
            ((2u64 << boundary) - 1) * rto_base
        } else {
            ((2u64 << linear_backoff_thresh) - 1) * rto_base + (boundary - linear_backoff_thresh) * cfg.rto_max.as_nanos()
        };
        elapsed_ms as u128 * 1_000_000 >= timeout as u128
    }

    /// `tcp_retransmit_timer()` for SYN-SENT / SYN-RECV (`tcp_syn_retries`,
    /// `tcp_synack_retries`).
    fn syn_retransmit_timer(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        let limit = if self.state == TcpState::SynSent { cfg.tcp_syn_retries } else { cfg.tcp_synack_retries };
        if self.retransmits >= limit {
            self.err = Some(SockError::TimedOut);
            let ev = if self.state == TcpState::SynSent { SockEvent::ConnectFailed } else { SockEvent::Reset };
            if self.listener.is_some() {
                self.orphan = true;
            }
            self.notify(out, ev);
            self.closed_notified = true;
            self.enter_closed(now);
            return;
        }
        self.retransmits += 1;
        self.stats.rto_count += 1;
        self.syn_retrans = true;
        self.stats.total_retrans += 1;
        self.tx_syn = true;
        self.rtt.backoff += 1;
        self.rtt.double_rto(cfg);
        let rto = self.rtt.rto;
        self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, rto);
    }

    /// `tcp_retransmit_timer()`.
    fn retransmit_timer(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        match self.state {
            TcpState::SynSent | TcpState::SynRecv => return self.syn_retransmit_timer(cfg, now, out),
            TcpState::Closed | TcpState::Listen | TcpState::TimeWait => return,
            _ => {}
        }
        if self.rtx.packets_out == 0 {
            return;
        }
        if self.retransmits > 0 && self.write_timeout(cfg, now) {
            self.err = Some(SockError::TimedOut);
            if !self.closed_notified {
                self.notify(out, SockEvent::Reset);
                self.closed_notified = true;
            }
            self.enter_closed(now);
            return;
        }
        self.enter_loss(cfg, now);
        self.tlp.high_seq = None;
        self.retransmits += 1;
        self.stats.rto_count += 1;
        if self.local_drop {
            // tcp_retransmit_skb() failed for local congestion: retry after
            // TCP_RESOURCE_PROBE_INTERVAL, without backing off (the failed attempt itself
            // is the next poll's: Conn::local_xmit_failed)
            self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, TCP_RESOURCE_PROBE_INTERVAL);
            return;
        }
        // the head goes again from here, past TSQ (tcp_retransmit_skb() in the timer)
        self.tsq.rto_head = true;
        self.rtt.backoff += 1;
        if self.linear_timeout_applies(cfg) {
            self.rtt.backoff = 0;
            self.rtt.rto = self.rtt.base_rto(cfg);
            self.thin.lt_count += 1;
        } else {
            self.rtt.double_rto(cfg);
        }
        let rto = self.clamp_rto_to_user_timeout(now);
        self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, rto);
    }

    /// `tcp_clamp_rto_to_user_timeout()`: the RTO, but no later than the user timeout
    /// (counted from the first retransmission).
    fn clamp_rto_to_user_timeout(&self, now: Instant) -> Duration {
        let rto = self.rtt.rto;
        let (Some(ut), Some(start)) = (self.user_timeout, self.retrans_stamp) else { return rto };
        let elapsed = Duration::from_millis((now.as_nanos() / 1_000_000).saturating_sub(start.as_nanos() / 1_000_000));
        if elapsed >= ut {
            return Duration::from_nanos(1); // passed: fire as soon as possible
        }
        rto.min(ut - elapsed)
    }

    /// `tcp_clamp_probe0_to_user_timeout()`: the probe interval `when`, but no later than
    /// the user timeout (counted from the probe timer's first run; at least 2 jiffies).
    pub(super) fn clamp_probe0_to_user_timeout(&self, cfg: &TcpConfig, now: Instant, when: Duration) -> Duration {
        let (Some(ut), Some(start)) = (self.user_timeout, self.probes_tstamp) else { return when };
        let remaining = ut.saturating_sub(now.saturating_since(start)).max(cfg.jiffy() * 2);
        remaining.min(when)
    }

    /// `tcp_send_loss_probe()` (timer side): re-arm the RTO and let the next transmit
    /// opportunity send the probe. 3.10-4.12 restart a full RTO from now whether or not a
    /// probe goes (`inet_csk_reset_xmit_timer(..., icsk_rto)`); 4.13+ (RACK-TLP here) call
    /// `tcp_rearm_rto()` with `ICSK_TIME_LOSS_PROBE` still pending, so when no probe can go
    /// the RTO stays counted from the head's last transmission (`tcp_rto_delta_us()`, at
    /// least one jiffy); `send_loss_probe()` restarts it from now when a probe goes.
    fn loss_probe_timer(&mut self, cfg: &TcpConfig, now: Instant) {
        if self.rtx.packets_out == 0 {
            return;
        }
        let mut rto = self.rtt.rto;
        if self.rack_on(cfg) {
            if let Some(h) = self.rtx.q.front() {
                rto = (h.xmit + rto).saturating_since(now).max(cfg.jiffy());
            }
        }
        self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, rto);
        self.tlp.pending = true;
    }

    /// `tcp_probe_timer()`: zero-window probe; gives up after `tcp_retries2` unanswered
    /// probes, or once `TCP_USER_TIMEOUT` has passed since probing started even if the
    /// peer answers (`icsk_probes_tstamp`).
    fn probe_timer(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        if self.rtx.packets_out > 0 || !self.has_unsent() {
            self.probes_out = 0;
            self.probes_tstamp = None;
            self.rtt.backoff = 0;
            return;
        }
        let expired = match self.probes_tstamp {
            None => {
                self.probes_tstamp = Some(now);
                false
            }
            Some(start) => self.user_timeout.is_some_and(|ut| now.saturating_since(start) >= ut),
        };
        if expired || self.probes_out >= cfg.tcp_retries2 {
            // tcp_write_err()
            self.err = Some(SockError::TimedOut);
            if !self.closed_notified {
                self.notify(out, SockEvent::Reset);
                self.closed_notified = true;
            }
            self.enter_closed(now);
            return;
        }
        if self.local_drop {
            // tcp_send_probe0(): tcp_write_wakeup() failed for local congestion (> 0):
            // count the probe, no backoff, retry after TCP_RESOURCE_PROBE_INTERVAL
            self.probes_out += 1;
            let d = self.clamp_probe0_to_user_timeout(cfg, now, TCP_RESOURCE_PROBE_INTERVAL);
            self.reset_xmit_timer(cfg, now, XmitTimer::Probe0, d);
            return;
        }
        // tcp_send_probe0() -> tcp_write_wakeup(): data if any window is left (cut to
        // fit), else a zero-window probe
        if (self.snd_una + self.snd_wnd).after(self.snd_nxt) {
            self.tx_wakeup = true;
            self.probes_out = 0;
            self.probes_tstamp = None;
            self.rtt.backoff = 0;
            return;
        }
        self.tx_probe = true;
        self.probes_out += 1;
        self.rtt.backoff += 1;
        let d = self.rtt.probe0_when(cfg);
        let d = self.clamp_probe0_to_user_timeout(cfg, now, d);
        self.reset_xmit_timer(cfg, now, XmitTimer::Probe0, d);
    }
}

#[cfg(test)]
mod jiffies_test {
    use super::jiffies;
    use crate::TcpConfig;
    use wirelab_core::Instant;

    /// The u64 fast path and the 128-bit fallback agree with the exact formula, on both
    /// sides of the point where `t * hz` overflows a u64.
    #[test]
    fn jiffies_is_the_exact_quotient() {
        for hz in [100u32, 250, 1000] {
            let mut cfg = TcpConfig::profile("linux-6").expect("linux-6");
            cfg.hz = hz;
            let edge = u64::MAX / hz as u64;
            for t in [0, 1, 999_999, 1_000_000, 3_999_999, 10_000_000_007, edge - 1, edge, edge + 1, u64::MAX] {
                let exact = ((t as u128 * hz as u128) / 1_000_000_000) as u32;
                assert_eq!(jiffies(&cfg, Instant::from_nanos(t)), exact, "hz {hz} t {t}");
            }
        }
    }
}
