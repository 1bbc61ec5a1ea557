//! Receiver-side TCP rate controller (thesis §5.2.1): meter + window policy + config,
//! installed in the TCP engine as its receive-window policy.
//!
//! The engine calls [`RcvWindowPolicy::on_data`] for each arriving data segment and
//! [`RcvWindowPolicy::limit`] from `tcp_select_window()` after Linux's
//! `__tcp_select_window()` has chosen its offer (the function the thesis modified). The
//! controller answers `min(W, linux_window)`; `W` moves one policy step per new rate value
//! (see [`StepTrigger`]).
//!
//! Right edge: unless `rate_allow_retract` is set, the controller itself never answers a
//! window that would pull the right edge left of the one it last answered, counting the
//! payload reported since (Linux `tcp_select_window()` keeps the old edge; the engine does
//! the same with the exact `rcv_nxt`, so this is a belt-and-braces bound that also keeps
//! the published window honest). Shrinking thus takes effect as the peer's data consumes
//! the window (seed-systems.md §4.6).
use crate::config::{MssOption, RateConfig, RateTarget};
use crate::hook::RcvWindowPolicy;
use crate::meter::RateMeter;
use crate::policy::{StepTrigger, WindowPolicy};
use crate::probe::{ControlMode, RateProbe, RateSnapshot};
use wirelab_core::Instant;

/// Per-connection rate controller; implements [`RcvWindowPolicy`].
#[derive(Debug)]
pub struct TcpRateController {
    cfg: RateConfig,
    meter: RateMeter,
    policy: WindowPolicy,
    target: Option<RateTarget>,
    important: bool,
    seen_generation: u64,
    last_offer: Option<u32>,
    received_since_offer: u64,
    snap: RateSnapshot,
    probe: RateProbe,
}

impl TcpRateController {
    /// A controller with the global knobs `cfg`; target = `rate_acceptable_tcp`.
    pub fn new(cfg: &RateConfig) -> Self {
        let mut c = TcpRateController {
            meter: RateMeter::new(cfg.meter_config()),
            policy: WindowPolicy::new(cfg.policy),
            target: cfg.acceptable_tcp,
            important: false,
            seen_generation: 0,
            last_offer: None,
            received_since_offer: 0,
            snap: RateSnapshot::default(),
            probe: RateProbe::new(),
            cfg: cfg.clone(),
        };
        c.publish();
        c
    }

    /// Per-connection target (overrides `rate_acceptable_tcp`; None = uncontrolled).
    pub fn with_target(mut self, target: Option<RateTarget>) -> Self {
        self.target = target;
        self.publish();
        self
    }

    /// Marks the stream "important" (§5.4): never throttled.
    pub fn with_important(mut self, important: bool) -> Self {
        self.important = important;
        self.publish();
        self
    }

    /// Binds the stream to CBQ/HTB class `class`: important iff it is `cbq_class`.
    pub fn with_class(self, class: Option<u32>) -> Self {
        let imp = self.cfg.is_important_class(class);
        self.with_important(imp)
    }

    /// Replaces the window policy (e.g. with custom [`crate::OriginalSteps`]).
    pub fn with_policy(mut self, policy: WindowPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// A handle the simulator keeps to read this controller's state while the controller
    /// itself is boxed inside the TCP engine.
    pub fn probe(&self) -> RateProbe {
        self.probe.clone()
    }

    /// The meter (for inspection).
    pub fn meter(&self) -> &RateMeter {
        &self.meter
    }

    /// The window policy (for inspection).
    pub fn policy(&self) -> &WindowPolicy {
        &self.policy
    }

    /// Fires the aging scan at `now` (the thesis's 2-second timer). Optional: both aging
    /// modes also catch up on their own at the next call carrying `now`.
    pub fn tick(&mut self, now: Instant) {
        if self.meter.tick(now) {
            self.publish();
        }
    }

    /// Current control mode.
    pub fn mode(&self) -> ControlMode {
        if !self.cfg.status || (self.target.is_none() && self.cfg.fixed_window.is_none()) {
            ControlMode::Off
        } else if self.important {
            ControlMode::Important
        } else if self.cfg.fixed_window.is_some() {
            ControlMode::Fixed
        } else {
            ControlMode::Controlled
        }
    }

    fn publish(&mut self) {
        let (bytes, pkts) = self.meter.totals();
        let (shrinks, grows) = self.policy.step_counts();
        self.snap.rate_bytes_per_sec = self.meter.rate_bytes_per_sec();
        self.snap.rate_milli_pps = self.meter.rate_milli_pps();
        self.snap.chunks_filled = self.meter.filled() as u32;
        self.snap.last_update = self.meter.last_update();
        self.snap.bytes = bytes;
        self.snap.pkts = pkts;
        self.snap.last_arrival = self.meter.last_arrival();
        self.snap.idle = self.meter.config().idle;
        self.snap.aging = self.meter.config().aging;
        self.snap.policy_window = self.policy.window();
        self.snap.shrinks = shrinks;
        self.snap.grows = grows;
        self.snap.target = self.target;
        self.snap.mode = self.mode();
        self.probe.publish(&self.snap);
    }

    fn policy_window(&mut self, linux_window: u32, mss: u32) -> u32 {
        self.policy.observe(linux_window, mss);
        let step_now = match self.cfg.step_trigger {
            StepTrigger::RateUpdate => {
                let g = self.meter.generation();
                let fresh = g != self.seen_generation;
                self.seen_generation = g;
                fresh
            }
            StepTrigger::EveryWindow => self.meter.generation() > 0,
        };
        if let (true, Some(t)) = (step_now, self.target) {
            let ord = t.compare(self.meter.rate_bytes_per_sec(), self.meter.rate_milli_pps(), self.cfg.tolerance_pct);
            self.policy.step(ord, mss);
        }
        self.policy.window().unwrap_or(linux_window).min(linux_window)
    }
}

impl RcvWindowPolicy for TcpRateController {
    fn on_data(&mut self, now: Instant, payload: usize) {
        if payload == 0 {
            return;
        }
        self.meter.on_arrival(now, payload as u64);
        self.received_since_offer = self.received_since_offer.saturating_add(payload as u64);
        self.publish();
    }

    fn limit(&mut self, now: Instant, linux_window: u32, mss: u32) -> u32 {
        self.meter.catch_up(now);
        let mut w = match self.mode() {
            ControlMode::Off | ControlMode::Important => linux_window,
            ControlMode::Fixed => self.cfg.fixed_window.unwrap_or(linux_window).min(linux_window),
            ControlMode::Controlled => self.policy_window(linux_window, mss),
        };
        if !self.cfg.allow_retract {
            if let Some(prev) = self.last_offer {
                // tcp_select_window(): keep the right edge already offered.
                let keep = (prev as u64).saturating_sub(self.received_since_offer) as u32;
                w = w.max(keep);
            }
        }
        self.last_offer = Some(w);
        self.received_since_offer = 0;
        self.snap.window = w;
        self.snap.linux_window = linux_window;
        self.publish();
        w
    }

    fn peek(&self, linux_window: u32, _mss: u32) -> u32 {
        match self.mode() {
            ControlMode::Off | ControlMode::Important => linux_window,
            ControlMode::Fixed => self.cfg.fixed_window.unwrap_or(linux_window).min(linux_window),
            ControlMode::Controlled => self.policy.window().unwrap_or(linux_window).min(linux_window),
        }
    }

    fn mss_option(&self, offered: u32, mss: u32) -> Option<u16> {
        let m = mss.min(u16::MAX as u32);
        match self.cfg.mss_option {
            MssOption::Off => None,
            MssOption::Every => Some(m as u16),
            // TCP_MIN_MSS = 88: a smaller option would not be a valid MSS
            MssOption::Window if (88..m).contains(&offered) => Some(offered as u16),
            MssOption::Window => Some(m as u16),
        }
    }

    fn allow_retract(&self) -> bool {
        self.cfg.allow_retract
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }

    fn cfg(target: &str) -> RateConfig {
        let mut c = RateConfig::default();
        c.set_sysctl("net.ipv4.rate_acceptable_tcp", target).unwrap();
        c
    }

    /// Feeds 1 MSS per ms (1.46 MB/s) for `dur_ms` starting at `t0`, asking for a window
    /// after each segment as the engine would (one ACK per segment).
    fn feed(c: &mut TcpRateController, t0: u64, dur_ms: u64, linux: u32) -> u32 {
        let mut w = 0;
        for i in 0..dur_ms {
            c.on_data(ms(t0 + i), 1460);
            w = c.limit(ms(t0 + i), linux, 1460);
        }
        w
    }

    #[test]
    fn mss_option_modes_of_section_6_4() {
        let mut c = RateConfig::default();
        assert_eq!(TcpRateController::new(&c).mss_option(1280, 1460), None, "off: Linux sends none");
        c.set_sysctl("net.ipv4.rate_mss_option", "every").unwrap();
        let t = TcpRateController::new(&c);
        assert_eq!((t.mss_option(1280, 1460), t.mss_option(30000, 1460)), (Some(1460), Some(1460)));
        c.set_sysctl("net.ipv4.rate_mss_option", "window").unwrap();
        let t = TcpRateController::new(&c);
        // shrinks with a sub-MSS window, never below TCP_MIN_MSS (88) nor above the MSS
        assert_eq!(t.mss_option(1280, 1460), Some(1280));
        assert_eq!(t.mss_option(256, 1460), Some(256));
        assert_eq!(t.mss_option(0, 1460), Some(1460), "a zero window is no MSS");
        assert_eq!(t.mss_option(87, 1460), Some(1460));
        assert_eq!(t.mss_option(64000, 1460), Some(1460));
    }

    #[test]
    fn uncontrolled_passes_linux_window() {
        let mut c = TcpRateController::new(&RateConfig::default());
        assert_eq!(feed(&mut c, 0, 500, 65535), 65535);
        assert_eq!(c.probe().snapshot().mode, ControlMode::Off);
        assert!(c.probe().snapshot().rate_bytes_per_sec > 1_400_000, "meter runs even when off");
    }

    #[test]
    fn over_target_shrinks_one_mss_per_chunk() {
        let mut c = TcpRateController::new(&cfg("1mbit"));
        let probe = c.probe();
        feed(&mut c, 0, 1001, 65535);
        let s = probe.snapshot();
        // 10 chunks completed -> 10 steps of 1 MSS down from 64240 (44 MSS).
        assert_eq!(s.shrinks, 10, "{s:?}");
        assert_eq!(s.policy_window, Some(65535 / 1460 * 1460 - 10 * 1460));
        assert_eq!(s.mode, ControlMode::Controlled);
        assert_eq!(s.window, s.policy_window.unwrap());
    }

    #[test]
    fn every_window_trigger_steps_per_call() {
        let mut c = cfg("1mbit");
        c.step_trigger = StepTrigger::EveryWindow;
        let mut c = TcpRateController::new(&c);
        feed(&mut c, 0, 130, 65535);
        // First rate value at 100 ms, then a step at every call from there (100..=129 ms)
        // -> 30 steps; the 1-MSS floor is not reached (44 MSS).
        assert_eq!(c.policy().step_counts().0, 30);
    }

    #[test]
    fn important_stream_is_never_throttled() {
        let mut k = cfg("1mbit");
        k.set_sysctl("net.ipv4.cbq_class", "1:2").unwrap();
        let mut c = TcpRateController::new(&k).with_class(Some(0x0001_0002));
        assert_eq!(feed(&mut c, 0, 1000, 65535), 65535);
        assert_eq!(c.probe().snapshot().mode, ControlMode::Important);
        let mut d = TcpRateController::new(&k).with_class(Some(0x0001_0001));
        assert!(feed(&mut d, 0, 1000, 65535) < 65535);
    }

    #[test]
    fn fixed_window_mode() {
        let mut k = RateConfig::default();
        k.set_sysctl("net.ipv4.rate_fixed_window", "1280").unwrap();
        k.allow_retract = true;
        let mut c = TcpRateController::new(&k);
        assert_eq!(c.limit(ms(0), 65535, 1460), 1280);
        assert_eq!(feed(&mut c, 0, 300, 65535), 1280);
        assert_eq!(c.limit(ms(400), 1000, 1460), 1000, "never above Linux's window");
    }

    #[test]
    fn status_off_disables_control() {
        let mut k = cfg("1mbit");
        k.set_sysctl("net.ipv4.rate_status", "0").unwrap();
        let mut c = TcpRateController::new(&k);
        assert_eq!(feed(&mut c, 0, 1000, 65535), 65535);
    }

    #[test]
    fn no_right_edge_retraction_unless_flag() {
        for retract in [false, true] {
            let mut k = cfg("100kbit");
            k.allow_retract = retract;
            let mut c = TcpRateController::new(&k);
            assert_eq!(c.allow_retract(), retract);
            c.on_data(ms(0), 1460);
            // Offer 30 MSS first.
            assert_eq!(c.limit(ms(0), 43_800, 1460), 43_800);
            // 500 bytes arrive and complete a chunk at 19.6 kB/s > 12.5 kB/s: the policy
            // steps down by 1 MSS, more than the 500 bytes the right edge has moved.
            c.on_data(ms(100), 500);
            let w = c.limit(ms(100), 43_800, 1460);
            assert_eq!(c.policy().window(), Some(43_800 - 1460));
            if retract {
                assert_eq!(w, 43_800 - 1460);
            } else {
                assert_eq!(w, 43_800 - 500, "right edge kept");
            }
        }
    }

    #[test]
    fn idle_socket_recovers_window_after_aging() {
        let mut c = TcpRateController::new(&cfg("1mbit"));
        feed(&mut c, 0, 1000, 65535);
        let shrunk = c.policy().window().unwrap();
        // Two seconds of silence: lazy aging zeroes the rate at the next window
        // computation, which counts as a new (zero) rate value -> one growth step.
        let w = c.limit(ms(3000), 65535, 1460);
        assert_eq!(c.probe().snapshot().rate_bytes_per_sec, 0);
        assert_eq!(w, shrunk + 1460);
    }

    #[test]
    fn probe_table_view_ages_idle_controller() {
        for timer in [false, true] {
            let mut k = cfg("1mbit");
            if timer {
                k.set_sysctl("net.ipv4.rate_aging", "timer").unwrap();
            }
            let mut c = TcpRateController::new(&k);
            let probe = c.probe();
            feed(&mut c, 0, 1001, 65535); // last arrival at 1000 ms
            assert!(probe.snapshot_at(ms(2999)).rate_bytes_per_sec > 1_000_000);
            // Lazy: aged 2 s after the last arrival; timer: at the next 2 s tick after that.
            let due = if timer { 4000 } else { 3000 };
            assert!(probe.snapshot_at(ms(due - 1)).rate_bytes_per_sec > 0, "timer={timer}");
            assert_eq!(probe.snapshot_at(ms(due)).rate_bytes_per_sec, 0, "timer={timer}");
            // The raw snapshot is what the controller last published.
            assert!(probe.snapshot().rate_bytes_per_sec > 0);
        }
    }

    #[test]
    fn controller_and_probe_are_send() {
        fn is_send<T: Send>() {}
        is_send::<TcpRateController>();
        is_send::<RateProbe>();
        is_send::<crate::UdpRatePolicy>();
    }
}
