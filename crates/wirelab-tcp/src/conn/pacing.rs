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

/// Pacing state of a connection. `repr(C)` with `timer` first, next to the connection's
/// other timers (`Conn::next_deadline`), and one 64-byte line in all: every transmit
/// reads it (issue 17, docs/performance.md "Session 10"), so the optional parts are
/// spelled with zero counts (`gso_left`, `tso_segs`) instead of `Option`s.
#[derive(Clone, Debug)]
#[repr(C)]
pub(crate) struct Pacing {
    /// The pacing hrtimer (`tp->pacing_timer`), if armed.
    pub timer: Option<Instant>,
    /// `tp->tcp_wstamp_ns`: earliest departure time of the next packet.
    pub wstamp: Instant,
    /// The clock of the last `stamp()` (`stamped_gso`: it stamped a later segment of the
    /// TSO packet being sent).
    stamped_at: Instant,
    /// The TSO packet being sent: its segments leave together, at the EDT of the first
    /// (GSO segments one skb on the device) — the clock when it started, its EDT, and
    /// its segments still to go (0: none being sent).
    gso_at: Instant,
    gso_edt: Instant,
    /// The TSO packet whose first segment goes next: payload bytes and segments (0: none).
    tso_bytes: u32,
    /// `tp->data_segs_out`: data segments sent (the first 10 are not paced).
    pub data_segs_out: u32,
    gso_left: u16,
    tso_segs: u16,
    stamped_gso: bool,
    pub status: PacingStatus,
    /// Pacing was asked for (a module or `SO_MAX_PACING_RATE`).
    pub requested: bool,
}

impl Pacing {
    pub fn new(now: Instant) -> Self {
        Pacing {
            status: PacingStatus::None,
            requested: false,
            wstamp: now,
            timer: None,
            data_segs_out: 0,
            tso_bytes: 0,
            tso_segs: 0,
            gso_at: now,
            gso_edt: now,
            gso_left: 0,
            stamped_at: now,
            stamped_gso: false,
        }
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

    /// The next data segment begins a TSO packet of `segs` segments and `bytes` of
    /// payload: Linux transmits it as one skb (`tcp_write_xmit()` / `tcp_retransmit_skb()`
    /// → `__tcp_transmit_skb()`), paced once (`tcp_pacing_check()`, one EDT) and charged
    /// once for its whole length (`tcp_update_skb_after_send()`: `skb->len`); GSO then
    /// puts its segments on the wire back to back.
    #[inline]
    pub fn tso_packet(&mut self, segs: u32, bytes: u32) {
        // (a TSO packet holds at most GSO_MAX_SIZE / TCP_MIN_MSS = 744 segments)
        self.tso_segs = if segs > 1 { segs.min(u16::MAX as u32) as u16 } else { 0 };
        self.tso_bytes = bytes;
        self.gso_left = 0;
    }

    /// The rest of a TSO packet whose first segment left at this instant: (its EDT).
    #[inline]
    fn in_gso(&mut self, now: Instant) -> Option<Instant> {
        if self.gso_left == 0 {
            return None;
        }
        if self.gso_at == now {
            return Some(self.gso_edt);
        }
        self.gso_left = 0;
        None
    }

    /// The departure time a data segment sent now gets (`tcp_wstamp_ns` or the clock,
    /// or its TSO packet's), without stamping it.
    #[inline]
    pub fn edt(&mut self, now: Instant) -> Instant {
        self.in_gso(now).unwrap_or(self.wstamp.max(now))
    }

    /// The EDT of a packet built now (`__tcp_transmit_skb()`): `tcp_wstamp_ns` moves up
    /// to the clock. Returns (prior `tcp_wstamp_ns`, the packet's departure time); a
    /// later data segment of a TSO packet gets the packet's EDT.
    #[inline]
    pub fn stamp(&mut self, now: Instant, data: bool) -> (Instant, Instant) {
        if let Some(edt) = data.then(|| self.in_gso(now)).flatten() {
            (self.stamped_at, self.stamped_gso) = (now, true);
            return (self.wstamp, edt);
        }
        (self.stamped_at, self.stamped_gso) = (now, false);
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        (prior, self.wstamp)
    }

    /// `tcp_update_skb_after_send()` for a data segment of `len` bytes: with pacing on
    /// (any status but NONE) and a finite, non-zero rate, the next departure moves
    /// `len / rate` later, less up to half of that as credit for time already lost
    /// ("OS jitter"); as in the original `fq`, nothing is paced before the tenth data
    /// segment (`tp->data_segs_out >= 10`, counted before this call). The first segment
    /// of a TSO packet ([`Self::tso_packet`]) charges the packet's length and segments,
    /// its later segments nothing.
    #[inline]
    pub fn after_send(&mut self, len: u32, prior_wstamp: Instant, rate: u64) {
        if self.stamped_gso {
            // a later segment of the TSO packet: sent and charged with the first
            self.stamped_gso = false;
            self.gso_left = self.gso_left.saturating_sub(1);
            return;
        }
        let (segs, len) = match self.tso_segs {
            0 => (1, len),
            n => (n as u32, self.tso_bytes),
        };
        self.tso_segs = 0;
        self.gso_left = (segs - 1) as u16;
        (self.gso_at, self.gso_edt) = (self.stamped_at, self.wstamp);
        self.data_segs_out = self.data_segs_out.wrapping_add(segs);
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
        // the rest of a TSO packet went with its first segment
        if self.status != PacingStatus::Needed || self.wstamp <= now || self.in_gso(now).is_some() {
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
            let (prior, edt) = p.stamp(us(0), true);
            assert_eq!(edt, us(0));
            p.after_send(1500, prior, rate);
        }
        assert!(!p.check(us(0)));
        // the tenth moves EDT 1 ms on; the next must wait for it
        let (prior, _) = p.stamp(us(0), true);
        p.after_send(1500, prior, rate);
        assert_eq!(p.wstamp, us(1000));
        assert!(p.check(us(400)));
        assert_eq!(p.timer, Some(us(1000)));
        // sent 300 µs late: half of the next interval is forgiven at most
        p.timer = None;
        let (prior, edt) = p.stamp(us(1300), true);
        assert_eq!((prior, edt), (us(1000), us(1300)));
        p.after_send(1500, prior, rate);
        assert_eq!(p.wstamp, us(1300 + 1000 - 300));
        // NONE: EDT follows the clock
        let mut q = Pacing::new(Instant::ZERO);
        q.data_segs_out = 100;
        let (prior, _) = q.stamp(us(5), true);
        q.after_send(1500, prior, rate);
        assert_eq!(q.wstamp, us(5));
        assert!(!q.check(us(0)));
    }

    #[test]
    fn one_line() {
        assert_eq!(core::mem::size_of::<Pacing>(), 64);
    }

    #[test]
    fn a_tso_packet_is_paced_as_one_skb() {
        let mut p = Pacing::new(Instant::ZERO);
        p.status = PacingStatus::Needed;
        p.data_segs_out = 100;
        let rate = 1_500_000; // 1500 bytes per ms
        // two segments of one TSO packet: one EDT, the next packet 2 ms later
        p.tso_packet(2, 3000);
        let (prior, edt) = p.stamp(us(0), true);
        p.after_send(1500, prior, rate);
        assert_eq!((edt, p.wstamp), (us(0), us(2000)));
        assert!(!p.check(us(0)), "the second segment went with the first");
        assert_eq!(p.edt(us(0)), us(0));
        let (prior, edt) = p.stamp(us(0), true);
        p.after_send(1500, prior, rate);
        assert_eq!((edt, p.wstamp), (us(0), us(2000)));
        assert_eq!(p.data_segs_out, 102);
        // the packet is complete: the next one waits for tcp_wstamp_ns
        assert!(p.check(us(0)));
        assert_eq!(p.edt(us(0)), us(2000));
        // a pure ACK in between does not take the packet's EDT
        p.timer = None;
        p.tso_packet(3, 4500);
        let (prior, _) = p.stamp(us(2000), true);
        p.after_send(1500, prior, rate);
        assert_eq!(p.stamp(us(2000), false).1, us(5000));
        assert_eq!(p.stamp(us(2000), true).1, us(2000));
        // a packet cut short (its rest not sent at that instant) is over later
        assert!(p.check(us(2500)));
        assert_eq!(p.edt(us(2500)), us(5000));
    }
}
