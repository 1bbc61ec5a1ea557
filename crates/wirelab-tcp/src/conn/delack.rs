//! The delayed-ACK engine (`icsk_ack` in include/net/inet_connection_sock.h): pending
//! bits, the ATO estimator of `tcp_event_data_recv()`, quick-ACK mode, ping-pong
//! (interactive) detection, `tcp_send_delayed_ack()`, `tcp_delack_timer_handler()` and
//! `tcp_event_ack_sent()`.
use super::timer::{jiffies, round_jiffies, timer_at};
use crate::config::TcpConfig;
use wirelab_core::{Duration, Instant};

// icsk_ack.pending bits (`ICSK_ACK_*`).
pub(crate) const ACK_SCHED: u8 = 1;
pub(crate) const ACK_TIMER: u8 = 2;
pub(crate) const ACK_PUSHED: u8 = 4;
pub(crate) const ACK_PUSHED2: u8 = 8;
pub(crate) const ACK_NOW: u8 = 16;

/// `icsk_ack` plus the decision "an ACK must go out at the next transmit opportunity".
/// `repr(C)` with `timer` first: it sits next to the connection's other timers, which the
/// endpoint reads after every call (`Conn::next_deadline`).
#[derive(Clone, Debug)]
#[repr(C)]
pub(crate) struct DelAck {
    /// The delayed-ACK timer (`icsk_delack_timer`), if armed.
    pub timer: Option<Instant>,
    /// Last data arrival (`lrcvtime`).
    pub lrcvtime: Instant,
    /// Delayed-ACK timeout estimate.
    pub ato: Duration,
    /// `TCP_ATO_MIN` of the profile.
    pub ato_min: Duration,
    /// Quick ACKs left (`quick`).
    pub quick: u32,
    /// Estimate of the peer's MSS (`rcv_mss`).
    pub rcv_mss: u32,
    /// `TCP_MAX_QUICKACKS` of the profile.
    pub max_quickacks: u32,
    /// `ICSK_ACK_*` bits.
    pub pending: u8,
    /// Interactive mode (`pingpong`).
    pub pingpong: bool,
    /// An ACK is due now (`tcp_send_ack()` at the next transmit opportunity).
    pub send_now: bool,
}

impl DelAck {
    pub fn new(cfg: &TcpConfig, now: Instant, rcv_mss: u32) -> Self {
        DelAck {
            pending: 0,
            ato: Duration::ZERO,
            lrcvtime: now,
            quick: 0,
            pingpong: false,
            rcv_mss,
            ato_min: cfg.ato_min,
            max_quickacks: cfg.max_quickacks,
            timer: None,
            send_now: false,
        }
    }

    /// `tcp_incr_quickack()`: enough quick ACKs to cover half the receive window.
    pub fn incr_quickack(&mut self, rcv_window: u32, max: u32) {
        let mut q = rcv_window / (2 * self.rcv_mss.max(1));
        if q == 0 {
            q = 2;
        }
        q = q.min(max);
        if q > self.quick {
            self.quick = q;
        }
    }

    /// `tcp_enter_quickack_mode()` with up to `max` quick ACKs.
    pub fn enter_quickack_mode(&mut self, rcv_window: u32, max: u32) {
        self.incr_quickack(rcv_window, max);
        self.pingpong = false;
        self.ato = self.ato_min;
    }

    /// `tcp_in_quickack_mode()`.
    pub fn in_quickack_mode(&self) -> bool {
        self.quick > 0 && !self.pingpong
    }

    /// `tcp_measure_rcv_mss()`: a full segment updates the estimate; short ones mark the
    /// ACK as "pushed" (twice: PUSHED2).
    #[inline]
    pub fn measure_rcv_mss(&mut self, len: u32, advmss: u32) {
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(advmss);
        } else {
            if self.pending & ACK_PUSHED != 0 {
                self.pending |= ACK_PUSHED2;
            }
            self.pending |= ACK_PUSHED;
        }
    }

    /// The ATO estimator of `tcp_event_data_recv()` (from the inter-arrival time in whole
    /// jiffies, as `tcp_jiffies32 - lrcvtime`).
    #[inline]
    pub fn update_ato(&mut self, cfg: &TcpConfig, now: Instant, rto: Duration, rcv_window: u32) {
        if self.ato == Duration::ZERO {
            // first data packet: initialise the delayed-ACK engine
            self.incr_quickack(rcv_window, cfg.max_quickacks);
            self.ato = cfg.ato_min;
        } else {
            let m = cfg.jiffy() * (jiffies(cfg, now).wrapping_sub(jiffies(cfg, self.lrcvtime)) as u64);
            if m <= cfg.ato_min / 2 {
                self.ato = self.ato / 2 + cfg.ato_min / 2;
            } else if m < self.ato {
                self.ato = (self.ato / 2 + m).min(rto);
            } else if m > rto {
                // too long a gap: the sender apparently restarted; ACK quickly
                self.incr_quickack(rcv_window, cfg.max_quickacks);
            }
        }
        self.lrcvtime = now;
    }

    /// `tcp_send_delayed_ack()`: arm (or keep) the delayed-ACK timer; sets `send_now`
    /// instead when the armed timer is about to expire anyway.
    #[inline]
    pub fn schedule(&mut self, cfg: &TcpConfig, now: Instant, srtt_us: u32) {
        let mut ato = self.ato.max(cfg.delack_min.min(cfg.ato_min));
        if ato > cfg.delack_min {
            let mut max_ato = Duration::from_millis(500); // HZ/2
            if self.pingpong || self.pending & ACK_PUSHED != 0 {
                max_ato = cfg.delack_max;
            }
            if srtt_us != 0 {
                let rtt = round_jiffies(cfg, Duration::from_micros((srtt_us >> 3) as u64)).max(cfg.delack_min);
                if rtt < max_ato {
                    max_ato = rtt;
                }
            }
            ato = ato.min(max_ato);
        }
        ato = ato.min(cfg.delack_max);
        let mut timeout = timer_at(cfg, now, ato);
        if self.pending & ACK_TIMER != 0 {
            if let Some(old) = self.timer {
                // about to expire: send now
                if old <= timer_at(cfg, now, ato / 4) {
                    self.send_now = true;
                    return;
                }
                if timeout >= old {
                    timeout = old;
                }
            }
        }
        self.pending |= ACK_SCHED | ACK_TIMER;
        self.timer = Some(timeout);
    }

    /// `tcp_delack_timer_handler()`: a missed delayed ACK inflates the ATO, or ends
    /// ping-pong mode.
    pub fn timer_handler(&mut self, rto: Duration) {
        if self.pending & ACK_TIMER == 0 {
            return;
        }
        if self.pending & ACK_SCHED != 0 {
            if !self.pingpong {
                // delayed ACK missed: inflate ATO
                self.ato = (self.ato * 2).min(rto);
            } else {
                // delayed ACK missed in interactive mode: leave ping-pong mode
                self.pingpong = false;
                self.ato = self.ato_min;
            }
            self.send_now = true;
        }
        self.pending &= !ACK_TIMER;
    }

    /// `tcp_event_ack_sent()`: one quick ACK used up; nothing pending any more.
    #[inline]
    pub fn on_ack_sent(&mut self) {
        if self.quick > 0 && self.pending & ACK_SCHED != 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = self.ato_min;
            }
        }
        self.pending = 0;
        self.timer = None;
        self.send_now = false;
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn quickacks_then_delayed_40ms() {
        let cfg = TcpConfig::default();
        let mut d = DelAck::new(&cfg, Instant::ZERO, 1448);
        let t = Instant::ZERO + ms(5);
        d.measure_rcv_mss(1448, 1460);
        // first data: quick ACKs for half a 64 kB window = 22, capped at 16
        d.update_ato(&cfg, t, ms(1000), 65535);
        assert_eq!((d.quick, d.ato), (16, ms(40)));
        assert!(d.in_quickack_mode());
        d.pending |= ACK_SCHED;
        d.on_ack_sent();
        assert_eq!((d.quick, d.pending), (15, 0));
        d.quick = 0;
        d.schedule(&cfg, t, 0);
        assert_eq!(d.timer, Some(Instant::ZERO + ms(45)));
        assert!(!d.send_now);
        // the timer fires with the ACK still owed: ATO doubles, ACK now
        d.timer_handler(ms(1000));
        assert!(d.send_now);
        assert_eq!(d.ato, ms(80));
    }

    #[test]
    fn pingpong_exit_on_missed_delack() {
        let cfg = TcpConfig::default();
        let mut d = DelAck::new(&cfg, Instant::ZERO, 536);
        d.pingpong = true;
        d.ato = ms(100);
        d.pending = ACK_SCHED | ACK_TIMER;
        d.timer_handler(ms(300));
        assert!(!d.pingpong && d.send_now);
        assert_eq!(d.ato, cfg.ato_min);
    }
}
