//! Delivery-rate sampling (net/ipv4/tcp_rate.c): `tp->delivered`, `delivered_ce`,
//! `lost`, the per-segment snapshot taken at each transmission (`tcp_rate_skb_sent()`),
//! the most recently sent delivered segment (`tcp_rate_skb_delivered()`), the per-ACK
//! sample (`tcp_rate_gen()`) and application-limited marking
//! (`tcp_rate_check_app_limited()`).
use super::scoreboard::{TxSeg, EVER_RETRANS, SACKED_ACKED, SACKED_RETRANS};
use crate::cc::RateSample;
use wirelab_core::Instant;

/// `TCP_SKB_CB(skb)->tx`: the delivery state when a segment was (re)sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TxRate {
    /// `first_tx_mstamp` of the flight the segment was sent in.
    pub first_tx: Instant,
    /// `delivered_mstamp` when sent; `None` once SACKed (Linux zeroes it so that the
    /// cumulative ACK does not count the segment twice).
    pub delivered_mstamp: Option<Instant>,
    /// `tp->delivered` when sent.
    pub delivered: u32,
    /// The sender was application-limited when it was sent.
    pub is_app_limited: bool,
}

/// The rate sample under construction during one ACK (`struct rate_sample` before
/// `tcp_rate_gen()`).
#[derive(Clone, Copy, Debug, Default)]
struct RsAcc {
    prior_delivered: u32,
    prior_mstamp: Option<Instant>,
    interval_us: u64,
    is_app_limited: bool,
    is_retrans: bool,
}

/// The connection's rate-sampling state.
#[derive(Clone, Debug)]
pub(crate) struct RateState {
    /// `tp->delivered`: packets delivered (cumulatively or selectively ACKed) so far.
    pub delivered: u32,
    /// `tp->delivered_ce`: of those, ACKed with ECE.
    pub delivered_ce: u32,
    /// `tp->delivered_mstamp`: when `delivered` last grew.
    pub delivered_mstamp: Instant,
    /// `tp->first_tx_mstamp`: send time of the most recently ACKed packet, or of the
    /// first packet of a flight that started from an empty pipe.
    pub first_tx_mstamp: Instant,
    /// `tp->app_limited`: `delivered` + in flight when the sender last ran out of data
    /// (0 = not application-limited).
    pub app_limited: u32,
    /// The last non-app-limited (or highest app-limited) sample (`rate_delivered`,
    /// `rate_interval_us`, `rate_app_limited`): `tcpi_delivery_rate`'s source.
    pub rate_delivered: u32,
    pub rate_interval_us: u64,
    pub rate_app_limited: bool,
    rs: RsAcc,
}

impl RateState {
    pub fn new(now: Instant) -> Self {
        RateState {
            delivered: 0,
            delivered_ce: 0,
            delivered_mstamp: now,
            first_tx_mstamp: now,
            app_limited: 0,
            rate_delivered: 0,
            rate_interval_us: 0,
            rate_app_limited: false,
            rs: RsAcc::default(),
        }
    }

    /// `tcp_rate_skb_sent()`: the snapshot stored with a segment sent at `xmit`; a flight
    /// starting from an empty pipe (`packets_out` 0) restarts the clocks.
    #[inline]
    pub fn skb_sent(&mut self, xmit: Instant, packets_out: u32) -> TxRate {
        if packets_out == 0 {
            self.first_tx_mstamp = xmit;
            self.delivered_mstamp = xmit;
        }
        TxRate {
            first_tx: self.first_tx_mstamp,
            delivered_mstamp: Some(self.delivered_mstamp),
            delivered: self.delivered,
            is_app_limited: self.app_limited != 0,
        }
    }

    /// Starts the sample of a new ACK (`struct rate_sample rs = { .prior_delivered = 0 }`).
    #[inline]
    pub fn begin_ack(&mut self) {
        self.rs = RsAcc::default();
    }

    /// `tcp_rate_skb_delivered()`: the segment was (S)ACKed; the sample follows the most
    /// recently sent delivered segment (the highest `tx.delivered`). A SACKed segment's
    /// snapshot is used up (`sacked` is its state after this ACK).
    #[inline]
    pub fn skb_delivered(&mut self, s: &mut TxSeg) {
        let tx = s.tx;
        if tx.delivered_mstamp.is_none() {
            return;
        }
        if self.rs.prior_delivered == 0 || (tx.delivered.wrapping_sub(self.rs.prior_delivered) as i32) > 0 {
            self.rs.prior_delivered = tx.delivered;
            self.rs.prior_mstamp = tx.delivered_mstamp;
            self.rs.is_app_limited = tx.is_app_limited;
            // TCPCB_RETRANS: SACKED_RETRANS | EVER_RETRANS
            self.rs.is_retrans = s.sacked & (SACKED_RETRANS | EVER_RETRANS) != 0;
            // record send time of most recently ACKed packet, and the send phase length
            self.first_tx_mstamp = s.xmit;
            self.rs.interval_us = s.xmit.saturating_since(tx.first_tx).as_micros();
        }
        if s.sacked & SACKED_ACKED != 0 {
            s.tx.delivered_mstamp = None;
        }
    }

    /// `tcp_count_delivered()`: `n` packets delivered, `ece` if the ACK echoed ECE.
    #[inline]
    pub fn count_delivered(&mut self, n: u32, ece: bool) {
        self.delivered += n;
        if ece {
            self.delivered_ce += n;
        }
    }

    /// `tcp_rate_gen()`: completes the sample of this ACK. `acked_sacked` packets were
    /// newly delivered and `losses` newly marked lost; `min_rtt_us` is `tcp_min_rtt()`.
    pub fn gen(&mut self, now: Instant, acked_sacked: u32, losses: u32, min_rtt_us: u32) -> RateSample {
        // clear app-limited once the bubble is ACKed and gone
        if self.app_limited != 0 && (self.delivered.wrapping_sub(self.app_limited) as i32) > 0 {
            self.app_limited = 0;
        }
        if acked_sacked > 0 {
            self.delivered_mstamp = now;
        }
        let mut rs = RateSample {
            prior_delivered: self.rs.prior_delivered,
            acked_sacked,
            losses,
            is_app_limited: self.rs.is_app_limited,
            is_retrans: self.rs.is_retrans,
            ..RateSample::default()
        };
        let Some(prior_mstamp) = self.rs.prior_mstamp else { return rs };
        let delivered = self.delivered.wrapping_sub(self.rs.prior_delivered);
        rs.delivered = Some(delivered);
        // sending and ACKing are separate pipeline phases: use the longer one
        let snd_us = self.rs.interval_us;
        let ack_us = now.saturating_since(prior_mstamp).as_micros();
        let interval_us = snd_us.max(ack_us);
        // normally interval_us >= min_rtt; shorter ones over-estimate the rate
        if interval_us < min_rtt_us as u64 {
            return rs;
        }
        rs.interval_us = Some(interval_us);
        // record the last non-app-limited or the highest app-limited bw
        if !rs.is_app_limited || delivered as u64 * self.rate_interval_us >= self.rate_delivered as u64 * interval_us {
            self.rate_delivered = delivered;
            self.rate_interval_us = interval_us;
            self.rate_app_limited = rs.is_app_limited;
        }
        rs
    }

    /// `tcp_rate_check_app_limited()`, called when the application writes: less than one
    /// MSS unsent, cwnd not full and every lost packet retransmitted means the sender is
    /// application-limited from now on (the qdisc/NIC queues of the host are empty in
    /// the simulation when the engine is asked).
    pub fn check_app_limited(&mut self, less_than_mss_unsent: bool, in_flight: u32, cwnd: u32, lost_out: u32, retrans_out: u32) {
        if less_than_mss_unsent && in_flight < cwnd && lost_out <= retrans_out {
            self.app_limited = (self.delivered + in_flight).max(1);
        }
    }

    /// `tcp_compute_delivery_rate()`: `tcpi_delivery_rate` in bytes/s.
    pub fn delivery_rate(&self, mss: u32) -> u64 {
        if self.rate_delivered == 0 || self.rate_interval_us == 0 {
            return 0;
        }
        self.rate_delivered as u64 * mss as u64 * 1_000_000 / self.rate_interval_us
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::wire::SeqNumber;

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }

    fn seg(r: &mut RateState, i: u32, t: Instant, packets_out: u32) -> TxSeg {
        TxSeg {
            seq: SeqNumber(i * 1000),
            end: SeqNumber(i * 1000 + 1000),
            fin: false,
            sacked: 0,
            xmit: t,
            rdb_start: SeqNumber(i * 1000),
            tx: r.skb_sent(t, packets_out),
            piece: 0,
            psh: false,
            sack_run: 0,
        }
    }

    #[test]
    fn ten_packets_over_100ms() {
        let mut r = RateState::new(Instant::ZERO);
        // ten segments sent 1 ms apart from an empty pipe
        let mut segs: Vec<TxSeg> = (0..10u32).map(|i| seg(&mut r, i, ms(i as u64), i)).collect();
        // all ACKed together at 109 ms: interval = max(send 9 ms, ack 109 ms)
        r.begin_ack();
        for s in &mut segs {
            r.skb_delivered(s);
            r.count_delivered(1, false);
        }
        let rs = r.gen(ms(109), 10, 0, 100_000);
        assert_eq!((rs.delivered, rs.interval_us, rs.prior_delivered), (Some(10), Some(109_000), 0));
        assert_eq!(r.delivered, 10);
        assert_eq!(r.delivery_rate(1000), 10 * 1000 * 1_000_000 / 109_000);
        assert!(!rs.is_app_limited);
    }

    #[test]
    fn short_interval_and_app_limited_samples() {
        let mut r = RateState::new(Instant::ZERO);
        let mut s0 = seg(&mut r, 0, ms(0), 0);
        // an interval below min_rtt is invalid (ACK compression)
        r.begin_ack();
        r.skb_delivered(&mut s0);
        r.count_delivered(1, true);
        let rs = r.gen(ms(5), 1, 0, 10_000);
        assert_eq!((rs.delivered, rs.interval_us), (Some(1), None));
        assert_eq!(r.delivered_ce, 1);
        // the application ran dry with one packet in flight: later samples are app-limited
        r.check_app_limited(true, 1, 10, 0, 0);
        assert_eq!(r.app_limited, 2);
        let mut s1 = seg(&mut r, 1, ms(20), 1);
        assert!(s1.tx.is_app_limited);
        r.begin_ack();
        r.skb_delivered(&mut s1);
        r.count_delivered(1, false);
        let rs = r.gen(ms(40), 1, 0, 10_000);
        assert!(rs.is_app_limited);
        assert_eq!((r.delivered, r.app_limited), (2, 2), "bubble not yet ACKed");
        let mut s2 = seg(&mut r, 2, ms(41), 0);
        r.begin_ack();
        r.skb_delivered(&mut s2);
        r.count_delivered(1, false);
        r.gen(ms(60), 1, 0, 10_000);
        // delivered 3 > app_limited 2: the bubble is gone
        assert_eq!(r.app_limited, 0);
        // no sample at all without a delivered snapshot
        r.begin_ack();
        assert_eq!(r.gen(ms(50), 0, 1, 10_000).delivered, None);
    }

    #[test]
    fn sacked_segment_snapshot_is_used_once() {
        let mut r = RateState::new(Instant::ZERO);
        let mut s = seg(&mut r, 0, ms(0), 0);
        s.sacked |= SACKED_ACKED;
        r.begin_ack();
        r.skb_delivered(&mut s);
        assert_eq!(s.tx.delivered_mstamp, None);
        assert!(r.gen(ms(30), 1, 0, 1000).delivered.is_some());
        // the cumulative ACK of the SACKed segment gives no second sample
        r.begin_ack();
        r.skb_delivered(&mut s);
        assert_eq!(r.gen(ms(40), 0, 0, 1000).delivered, None);
    }
}
