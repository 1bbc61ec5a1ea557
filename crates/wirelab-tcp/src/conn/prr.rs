//! Proportional Rate Reduction (RFC 6937) as `tcp_cwnd_reduction()` computes it
//! (`prr_delivered`, `prr_out`; `prior_cwnd` lives in [`crate::cc::CcSock`]).

#[derive(Clone, Debug, Default)]
pub(crate) struct Prr {
    /// `prr_delivered`: packets delivered since the reduction started.
    pub delivered: u32,
    /// `prr_out`: packets sent since the reduction started.
    pub out: u32,
}

impl Prr {
    /// `tcp_init_cwnd_reduction()`'s part.
    pub fn start(&mut self) {
        self.delivered = 0;
        self.out = 0;
    }

    /// `tcp_cwnd_reduction()`: the new cwnd after `newly_acked_sacked` packets were
    /// delivered, or `None` when nothing changes. Proportional while the pipe exceeds
    /// ssthresh, slow-start-like (at most one extra per ACK that advanced snd_una) below.
    #[inline]
    pub fn cwnd_reduction(&mut self, newly_acked_sacked: u32, una_advanced: bool, in_flight: u32, ssthresh: u32, prior_cwnd: u32) -> Option<u32> {
        if newly_acked_sacked == 0 || prior_cwnd == 0 {
            return None;
        }
        let in_flight = in_flight as i64;
        let ssthresh = ssthresh as i64;
        let delta = ssthresh - in_flight;
        self.delivered += newly_acked_sacked;
        let mut sndcnt: i64 = if delta < 0 {
            let dividend = ssthresh as u64 * self.delivered as u64 + prior_cwnd as u64 - 1;
            (dividend / prior_cwnd as u64) as i64 - self.out as i64
        } else {
            let mut s = (self.delivered as i64 - self.out as i64).max(newly_acked_sacked as i64);
            if una_advanced {
                s += 1;
            }
            s.min(delta)
        };
        // force a fast retransmit upon entering fast recovery
        sndcnt = sndcnt.max(if self.out > 0 { 0 } else { 1 });
        Some((in_flight + sndcnt).max(1) as u32)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn rfc6937_example_halves_over_one_rtt() {
        // cwnd 20 -> ssthresh 10, one loss: each of the 19 dupACKs sends ~1/2 packet
        let mut p = Prr::default();
        p.start();
        let mut in_flight = 19; // 20 out, one lost
        let mut sent = 0;
        for _ in 0..19 {
            in_flight -= 1;
            let cwnd = p.cwnd_reduction(1, false, in_flight, 10, 20).unwrap();
            while in_flight < cwnd {
                in_flight += 1;
                p.out += 1;
                sent += 1;
            }
        }
        // ceil(10 * 19 / 20) = 10 packets sent in the recovery RTT
        assert_eq!(sent, 10);
        assert_eq!(p.cwnd_reduction(0, false, 5, 10, 20), None);
    }
}
