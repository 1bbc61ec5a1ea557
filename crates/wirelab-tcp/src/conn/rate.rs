//! Delivery-rate sampling (net/ipv4/tcp_rate.c): `tp->delivered`, the per-segment
//! snapshot taken at send time (`tcp_rate_skb_sent()`), the most recently sent delivered
//! segment (`tcp_rate_skb_delivered()`) and the per-ACK sample (`tcp_rate_gen()`).
use super::scoreboard::TxSeg;
use wirelab_core::{Duration, Instant};

/// The connection's rate-sampling state and the sample being built for the current ACK.
#[derive(Clone, Debug)]
pub(crate) struct RateState {
    /// `tp->delivered`: packets delivered (cumulatively or selectively ACKed) so far.
    pub delivered: u32,
    /// `tp->delivered_mstamp`: when `delivered` last grew.
    pub delivered_mstamp: Instant,
    /// `tp->first_tx_mstamp`: send time of the first packet of the current flight.
    pub first_tx_mstamp: Instant,
    /// Latest sample, bytes/s (`tcpi_delivery_rate`).
    pub delivery_rate: u64,
    // rate_sample under construction (`struct rate_sample`)
    rs_prior_delivered: u32,
    rs_valid: bool,
    rs_prior_mstamp: Instant,
    rs_interval: Duration,
}

impl RateState {
    pub fn new(now: Instant) -> Self {
        RateState {
            delivered: 0,
            delivered_mstamp: now,
            first_tx_mstamp: now,
            delivery_rate: 0,
            rs_prior_delivered: 0,
            rs_valid: false,
            rs_prior_mstamp: now,
            rs_interval: Duration::ZERO,
        }
    }

    /// `tcp_rate_skb_sent()` for new data: a flight starting from an empty pipe restarts
    /// the clocks. Returns the snapshot stored with the segment
    /// (`first_tx_mstamp`, `delivered_mstamp`, `delivered`).
    #[inline]
    pub fn skb_sent(&mut self, now: Instant, packets_out: u32) -> (Instant, Instant, u32) {
        if packets_out == 0 {
            self.first_tx_mstamp = now;
            self.delivered_mstamp = now;
        }
        (self.first_tx_mstamp, self.delivered_mstamp, self.delivered)
    }

    /// A segment was (S)ACKed for the first time: count it and let
    /// `tcp_rate_skb_delivered()` remember the most recently sent delivered segment.
    #[inline]
    pub fn skb_delivered(&mut self, s: &TxSeg, now: Instant) {
        if !self.rs_valid || s.delivered >= self.rs_prior_delivered {
            self.rs_valid = true;
            self.rs_prior_delivered = s.delivered;
            self.rs_prior_mstamp = s.delivered_mstamp;
            self.rs_interval = s.xmit.saturating_since(s.first_tx);
            self.first_tx_mstamp = s.xmit;
        }
        self.delivered += 1;
        self.delivered_mstamp = now;
    }

    /// `tcp_rate_gen()`: the delivery-rate sample in bytes/s over max(send, ACK) interval.
    #[inline]
    pub fn gen(&mut self, now: Instant, mss: u32) {
        if !self.rs_valid {
            return;
        }
        self.rs_valid = false;
        let delivered = self.delivered.wrapping_sub(self.rs_prior_delivered);
        let ack_us = now.saturating_since(self.rs_prior_mstamp);
        let interval = self.rs_interval.max(ack_us);
        if interval > Duration::ZERO && delivered > 0 {
            self.delivery_rate = (delivered as u128 * mss as u128 * 1_000_000_000 / interval.as_nanos() as u128) as u64;
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::wire::SeqNumber;

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }

    #[test]
    fn ten_packets_over_100ms() {
        let mut r = RateState::new(Instant::ZERO);
        let mut segs = vec![];
        // ten segments sent 1 ms apart from an empty pipe
        for i in 0..10u32 {
            let (first_tx, dm, d) = r.skb_sent(ms(i as u64), i);
            segs.push(TxSeg {
                seq: SeqNumber(i * 1000),
                end: SeqNumber(i * 1000 + 1000),
                fin: false,
                sacked: 0,
                xmit: ms(i as u64),
                rdb_start: SeqNumber(i * 1000),
                first_tx,
                delivered_mstamp: dm,
                delivered: d,
                piece: 0,
                psh: false,
            });
        }
        // all ACKed together at 109 ms: interval = max(send 9 ms, ack 109 ms)
        for s in &segs {
            r.skb_delivered(s, ms(109));
        }
        r.gen(ms(109), 1000);
        assert_eq!(r.delivered, 10);
        assert_eq!(r.delivery_rate, 10 * 1000 * 1000 / 109);
    }
}
