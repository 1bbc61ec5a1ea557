//! Pacing (tcp_output.c): `sk_pacing_status`, the earliest departure time of the next
//! packet (`tp->tcp_wstamp_ns`, EDT) advanced by `tcp_update_skb_after_send()`, and
//! TCP's internal pacing (`tcp_needs_internal_pacing()`, `tcp_pacing_check()` with its
//! high-resolution timer) used when no `fq` qdisc paces the socket.
use wirelab_core::{Duration, Instant};

/// `enum sk_pacing`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PacingStatus {
    /// `SK_PACING_NONE`: nobody asked for pacing; EDT stays at "now".
    None,
    /// `SK_PACING_NEEDED`: a module (BBR) or `SO_MAX_PACING_RATE` asked for it and no
    /// `fq` does it: TCP paces internally.
    Needed,
    /// `SK_PACING_FQ`: the egress `fq` qdisc paces by the EDT stamped on each packet.
    Fq,
}

/// Pacing state of a connection.
#[derive(Clone, Debug)]
pub(crate) struct Pacing {
    pub status: PacingStatus,
    /// Pacing was asked for (a module or `SO_MAX_PACING_RATE`).
    pub requested: bool,
    /// `tp->tcp_wstamp_ns`: earliest departure time of the next packet.
    pub wstamp: Instant,
    /// The pacing hrtimer (`tp->pacing_timer`), if armed.
    pub timer: Option<Instant>,
    /// `tp->data_segs_out`: data segments sent (the first 10 are not paced).
    pub data_segs_out: u32,
}

impl Pacing {
    pub fn new(now: Instant) -> Self {
        Pacing { status: PacingStatus::None, requested: false, wstamp: now, timer: None, data_segs_out: 0 }
    }

    /// Pacing asked for: NONE → NEEDED (`cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE,
    /// SK_PACING_NEEDED)`), unless `fq` already paces.
    pub fn request(&mut self) {
        self.requested = true;
        if self.status == PacingStatus::None {
            self.status = PacingStatus::Needed;
        }
    }

    /// The egress qdisc is (or is no longer) `fq`: `fq_classify()` sets `SK_PACING_FQ`
    /// on the sockets whose packets it sees, which turns internal pacing off.
    pub fn set_fq(&mut self, on: bool) {
        self.status = match (on, self.requested) {
            (true, _) => PacingStatus::Fq,
            (false, true) => PacingStatus::Needed,
            (false, false) => PacingStatus::None,
        };
        if on {
            self.timer = None;
        }
    }

    /// The EDT of a packet built now (`__tcp_transmit_skb()`): `tcp_wstamp_ns` moves up
    /// to the clock. Returns (prior `tcp_wstamp_ns`, the packet's departure time).
    #[inline]
    pub fn stamp(&mut self, now: Instant) -> (Instant, Instant) {
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        (prior, self.wstamp)
    }

    /// `tcp_update_skb_after_send()` for a data segment of `len` bytes: with pacing on
    /// (any status but NONE) and a finite, non-zero rate, the next departure moves
    /// `len / rate` later, less up to half of that as credit for time already lost
    /// ("OS jitter"); as in the original `fq`, nothing is paced before the tenth data
    /// segment (`tp->data_segs_out >= 10`, counted before this call).
    #[inline]
    pub fn after_send(&mut self, len: u32, prior_wstamp: Instant, rate: u64) {
        self.data_segs_out = self.data_segs_out.wrapping_add(1);
        if self.status == PacingStatus::None || rate == u64::MAX || rate == 0 || self.data_segs_out < 10 {
            return;
        }
        let mut len_ns = (len as u128 * 1_000_000_000 / rate as u128) as u64;
        let credit = self.wstamp.saturating_since(prior_wstamp).as_nanos();
        len_ns -= (len_ns / 2).min(credit);
        self.wstamp += Duration::from_nanos(len_ns);
    }

    /// `tcp_pacing_check()`: with internal pacing, a packet may not leave before
    /// `tcp_wstamp_ns`; arms the pacing timer and returns true while it must wait.
    #[inline]
    pub fn check(&mut self, now: Instant) -> bool {
        if self.status != PacingStatus::Needed || self.wstamp <= now {
            return false;
        }
        if self.timer.is_none() {
            self.timer = Some(self.wstamp);
        }
        true
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn us(x: u64) -> Instant {
        Instant::from_nanos(x * 1000)
    }

    #[test]
    fn edt_spacing_after_ten_segments() {
        let mut p = Pacing::new(Instant::ZERO);
        p.status = PacingStatus::Needed;
        let rate = 1_500_000; // 1500 bytes per ms
        // the first nine go unpaced
        for _ in 0..9 {
            let (prior, edt) = p.stamp(us(0));
            assert_eq!(edt, us(0));
            p.after_send(1500, prior, rate);
        }
        assert!(!p.check(us(0)));
        // the tenth moves EDT 1 ms on; the next must wait for it
        let (prior, _) = p.stamp(us(0));
        p.after_send(1500, prior, rate);
        assert_eq!(p.wstamp, us(1000));
        assert!(p.check(us(400)));
        assert_eq!(p.timer, Some(us(1000)));
        // sent 300 µs late: half of the next interval is forgiven at most
        p.timer = None;
        let (prior, edt) = p.stamp(us(1300));
        assert_eq!((prior, edt), (us(1000), us(1300)));
        p.after_send(1500, prior, rate);
        assert_eq!(p.wstamp, us(1300 + 1000 - 300));
        // NONE: EDT follows the clock
        let mut q = Pacing::new(Instant::ZERO);
        q.data_segs_out = 100;
        let (prior, _) = q.stamp(us(5));
        q.after_send(1500, prior, rate);
        assert_eq!(q.wstamp, us(5));
        assert!(!q.check(us(0)));
    }
}
