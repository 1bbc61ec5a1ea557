//! RACK-TLP loss detection (RFC 8985, net/ipv4/tcp_recovery.c of 4.18+/6.x): `tp->rack`
//! and `tcp_rack_advance()`, `tcp_rack_reo_wnd()`, `tcp_rack_detect_loss()`,
//! `tcp_rack_mark_lost()`, `tcp_rack_reo_timeout()`, `tcp_rack_update_reo_wnd()`.
use super::scoreboard::{mark_seg_lost, sacked_run, RtxQueue, EVER_RETRANS, LOST, SACKED_ACKED, SACKED_RETRANS};
use super::{Conn, XmitTimer};
use crate::cc::CaState;
use crate::config::TcpConfig;
use crate::wire::SeqNumber;
use wirelab_core::{Duration, Instant};

/// `TCP_RACK_RECOVERY_THRESH`: recoveries a widened RACK reordering window persists.
const TCP_RACK_RECOVERY_THRESH: u32 = 16;
/// `tcp_recovery` bits (`TCP_RACK_*`).
pub(crate) const TCP_RACK_LOSS_DETECTION: u32 = 0x1;
const TCP_RACK_STATIC_REO_WND: u32 = 0x2;
const TCP_RACK_NO_DUPTHRESH: u32 = 0x4;

/// `struct tcp_rack`: the most recently sent delivered segment and the reordering window.
#[derive(Clone, Debug)]
pub(crate) struct Rack {
    /// Transmission time of the most recently sent delivered segment (`mstamp`).
    pub mstamp: Option<Instant>,
    /// Its end sequence (`end_seq`).
    pub end_seq: SeqNumber,
    /// Its RTT (`rtt_us`).
    pub rtt_us: u64,
    /// Something was delivered since the last detection (`advanced`).
    pub advanced: bool,
    /// Reordering was seen (`tp->reord_seen` > 0 as RACK reads it).
    pub reord: bool,
    /// `reo_wnd_steps`: multiples of min_rtt/4.
    pub reo_wnd_steps: u32,
    /// `reo_wnd_persist`: recoveries left before the steps decay.
    pub reo_wnd_persist: u32,
}

impl Rack {
    pub fn new(iss: SeqNumber) -> Self {
        Rack {
            mstamp: None,
            end_seq: iss,
            rtt_us: 0,
            advanced: false,
            reord: false,
            reo_wnd_steps: 1,
            reo_wnd_persist: 0,
        }
    }

    /// `tcp_rack_advance()`: remember the most recently sent segment that got delivered.
    /// A retransmitted segment ACKed faster than the minimum RTT was the original's
    /// delivery and does not count.
    #[inline]
    pub fn advance(&mut self, now: Instant, sacked: u8, end: SeqNumber, xmit: Instant, min_rtt_us: u32) {
        let rtt_us = now.saturating_since(xmit).as_micros();
        if sacked & (SACKED_RETRANS | EVER_RETRANS) != 0 && rtt_us < min_rtt_us as u64 {
            return;
        }
        self.advanced = true;
        self.rtt_us = rtt_us;
        let after = match self.mstamp {
            None => true,
            Some(m) => xmit > m || (xmit == m && end.after(self.end_seq)),
        };
        if after {
            self.mstamp = Some(xmit);
            self.end_seq = end;
        }
    }

    /// `tcp_rack_reo_wnd()`: min_rtt/4 per step, capped at srtt; zero while no reordering
    /// was seen and either recovery is on or the dupthresh is reached.
    #[allow(clippy::too_many_arguments)]
    pub fn reo_wnd(&self, tcp_recovery: u32, ca_state: CaState, sacked_out: u32, reordering: u32, min_rtt_us: u64, srtt_us: u64) -> u64 {
        if !self.reord {
            if ca_state >= CaState::Recovery {
                return 0;
            }
            if sacked_out >= reordering && tcp_recovery & TCP_RACK_NO_DUPTHRESH == 0 {
                return 0;
            }
        }
        ((min_rtt_us >> 2) * self.reo_wnd_steps as u64).min(srtt_us)
    }

    /// `tcp_rack_update_reo_wnd()` on a D-SACK: widen the window by one step and keep it
    /// for `TCP_RACK_RECOVERY_THRESH` recoveries (unless `tcp_recovery & 2`, static).
    pub fn on_dsack(&mut self, tcp_recovery: u32) {
        if tcp_recovery & TCP_RACK_STATIC_REO_WND == 0 {
            self.reo_wnd_steps = (self.reo_wnd_steps + 1).min(0xff);
            self.reo_wnd_persist = TCP_RACK_RECOVERY_THRESH;
        }
    }

    /// `tcp_rack_update_reo_wnd()` at a recovery's end: a widened window decays.
    pub fn on_recovery_exit(&mut self) {
        if self.reo_wnd_persist > 0 {
            self.reo_wnd_persist -= 1;
            if self.reo_wnd_persist == 0 {
                self.reo_wnd_steps = 1;
            }
        }
    }

    /// `tcp_rack_detect_loss()`: a segment sent before the most recently delivered one is
    /// lost once `rack.rtt + reo_wnd` has passed since it was sent. Returns the longest
    /// wait (µs) of those not yet due (0 = none). The rtx queue is in sequence order; the
    /// first never-retransmitted segment sent after RACK's reference ends the walk (all
    /// later segments were sent later still), as Linux's time-sorted list does.
    #[inline]
    pub fn detect_loss(&self, rtx: &mut RtxQueue, now: Instant, reo_wnd: u64) -> u64 {
        let Some(mstamp) = self.mstamp else { return 0 };
        let mut timeout = 0u64;
        let due = self.rtt_us + reo_wnd;
        let RtxQueue { q, lost_out, retrans_out, lost, .. } = rtx;
        let mut k = 0;
        while k < q.len() {
            if q[k].sacked & SACKED_ACKED != 0 {
                // not in Linux's time-sorted list: pass the whole SACKed run
                k += sacked_run(q, k);
                continue;
            }
            let s = &mut q[k];
            k += 1;
            if s.sacked & LOST != 0 && s.sacked & SACKED_RETRANS == 0 {
                continue; // already waiting for its retransmission
            }
            let before = s.xmit < mstamp || (s.xmit == mstamp && self.end_seq.after(s.end));
            if !before {
                if s.sacked & EVER_RETRANS == 0 {
                    break;
                }
                continue;
            }
            let waited = now.saturating_since(s.xmit).as_micros();
            if waited >= due {
                mark_seg_lost(s, lost_out, retrans_out, lost);
            } else {
                timeout = timeout.max(due - waited);
            }
        }
        timeout
    }
}

impl Conn {
    /// `tcp_is_rack()`.
    pub(super) fn rack_on(&self, cfg: &TcpConfig) -> bool {
        cfg.tcp_recovery & TCP_RACK_LOSS_DETECTION != 0
    }

    /// `tcp_rack_detect_loss()` with this connection's reordering window.
    fn rack_detect_loss(&mut self, cfg: &TcpConfig, now: Instant) -> u64 {
        let reo_wnd = self.rack.reo_wnd(
            cfg.tcp_recovery,
            self.ca_state,
            self.rtx.sacked_out,
            self.reordering,
            self.rtt.min_rtt(),
            self.rtt.srtt(),
        );
        self.rack.detect_loss(&mut self.rtx, now, reo_wnd)
    }

    /// `tcp_rack_mark_lost()`: run the detection after an ACK that delivered something;
    /// arm the reordering timer for segments not yet due.
    pub(super) fn rack_mark_lost(&mut self, cfg: &TcpConfig, now: Instant) {
        if !self.rack.advanced {
            return;
        }
        self.rack.advanced = false;
        let t = self.rack_detect_loss(cfg, now);
        if t > 0 {
            // + TCP_TIMEOUT_MIN (2 jiffies)
            let d = Duration::from_micros(t) + cfg.jiffy() * 2;
            self.reset_xmit_timer(cfg, now, XmitTimer::ReoTimeout, d);
        }
    }

    /// `tcp_rack_reo_timeout()`.
    pub(super) fn rack_reo_timeout(&mut self, cfg: &TcpConfig, now: Instant) {
        let prior_lost = self.rtx.lost_out;
        let prior_retrans = self.rtx.retrans_out;
        self.rack_detect_loss(cfg, now);
        let newly_lost = self.rtx.lost_out != prior_lost || self.rtx.retrans_out != prior_retrans;
        if newly_lost && self.ca_state != CaState::Recovery && self.ca_state != CaState::Loss {
            self.enter_recovery(cfg, now);
            if cfg.prr {
                self.cwnd_reduction(1, false);
            }
        }
        // icsk_pending is still ICSK_TIME_REO_TIMEOUT here (tcp_write_timer_handler()), so
        // tcp_rearm_rto() counts from the head's transmission; a retransmission of the head
        // restarts it from now when it goes (xmit_retransmit_queue)
        if !self.xmit_timer_is(XmitTimer::Retrans.bit()) {
            self.rearm_rto_from(cfg, now, true);
        }
    }
}

#[cfg(test)]
mod test {
    use super::super::scoreboard::TxSeg;
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }

    #[test]
    fn loss_after_rtt_plus_reo_wnd() {
        let mut rq = RtxQueue::new(SeqNumber(0));
        for i in 0..4u32 {
            let t = ms(i as u64);
            rq.push(TxSeg {
                seq: SeqNumber(i * 100),
                end: SeqNumber(i * 100 + 100),
                fin: false,
                sacked: 0,
                xmit: t,
                rdb_start: SeqNumber(i * 100),
                tx: Default::default(),
                piece: 0,
                psh: false,
                sack_run: 0,
            });
        }
        let mut r = Rack::new(SeqNumber(0));
        // segment 3 (sent at 3 ms) is SACKed at 53 ms: rack.rtt = 50 ms
        rq.q[3].sacked |= SACKED_ACKED;
        rq.sacked_out = 1;
        r.advance(ms(53), 0, SeqNumber(400), ms(3), 50_000);
        assert_eq!((r.rtt_us, r.mstamp), (50_000, Some(ms(3))));
        // no reordering seen, below the dupthresh: reo_wnd = min_rtt/4 = 12.5 ms
        let w = r.reo_wnd(1, CaState::Open, 1, 3, 50_000, 50_000);
        assert_eq!(w, 12_500);
        // at 53 ms nothing is due (62.5 ms each); the last, sent at 2 ms, waits 11.5 ms more
        assert_eq!(r.detect_loss(&mut rq, ms(53), w), 11_500);
        assert_eq!(rq.lost_out, 0);
        // at 63 ms segment 0 (sent at 0) is lost, 1 and 2 still wait
        assert_eq!(r.detect_loss(&mut rq, ms(63), w), 1_500);
        assert_eq!(rq.lost_out, 1);
        // at the dupthresh, or in recovery, the window is zero until reordering is seen
        assert_eq!(r.reo_wnd(1, CaState::Open, 3, 3, 50_000, 50_000), 0);
        assert_eq!(r.reo_wnd(1, CaState::Recovery, 1, 3, 50_000, 50_000), 0);
        r.reord = true;
        r.on_dsack(1);
        assert_eq!(r.reo_wnd(1, CaState::Recovery, 1, 3, 50_000, 20_000), 20_000, "capped at srtt");
        for _ in 0..16 {
            r.on_recovery_exit();
        }
        assert_eq!(r.reo_wnd_steps, 1);
    }

    /// The walk that jumps over SACKed runs (remembered between walks) marks exactly what
    /// a plain walk over every segment marks, while SACKs, losses, retransmissions and
    /// cumulative ACKs change the queue between walks.
    #[test]
    fn sacked_run_hints_change_nothing() {
        fn plain(r: &Rack, rq: &mut RtxQueue, now: Instant, reo_wnd: u64) -> u64 {
            let Some(mstamp) = r.mstamp else { return 0 };
            let (mut timeout, due) = (0u64, r.rtt_us + reo_wnd);
            let RtxQueue { q, lost_out, retrans_out, lost, .. } = rq;
            for s in q.iter_mut() {
                if s.sacked & SACKED_ACKED != 0 || (s.sacked & LOST != 0 && s.sacked & SACKED_RETRANS == 0) {
                    continue;
                }
                if !(s.xmit < mstamp || (s.xmit == mstamp && r.end_seq.after(s.end))) {
                    if s.sacked & EVER_RETRANS == 0 {
                        break;
                    }
                    continue;
                }
                let waited = now.saturating_since(s.xmit).as_micros();
                if waited >= due {
                    mark_seg_lost(s, lost_out, retrans_out, lost);
                } else {
                    timeout = timeout.max(due - waited);
                }
            }
            timeout
        }
        let mut rng = wirelab_core::Rng::stream(5, "rack-sacked-run");
        let (mut a, mut b) = (RtxQueue::new(SeqNumber(0)), RtxQueue::new(SeqNumber(0)));
        let mut next = 0u32;
        for step in 0..3_000u64 {
            let now = ms(step);
            for _ in 0..rng.below(4) {
                let seg = TxSeg {
                    seq: SeqNumber(next),
                    end: SeqNumber(next + 100),
                    fin: false,
                    sacked: 0,
                    xmit: now,
                    rdb_start: SeqNumber(next),
                    tx: Default::default(),
                    piece: 0,
                    psh: false,
                    sack_run: 0,
                };
                a.push(seg);
                b.push(seg);
                next += 100;
            }
            // the same random SACKs, retransmissions and cumulative ACKs on both queues
            for _ in 0..rng.below(6) {
                if a.q.is_empty() {
                    break;
                }
                let k = rng.below(a.q.len() as u64) as usize;
                match rng.below(3) {
                    0 => {
                        for q in [&mut a, &mut b] {
                            q.q[k].sacked |= SACKED_ACKED;
                        }
                    }
                    1 if a.q[k].sacked & (LOST | SACKED_ACKED) == LOST => {
                        for q in [&mut a, &mut b] {
                            q.q[k].sacked |= SACKED_RETRANS | EVER_RETRANS;
                            q.q[k].xmit = now;
                        }
                    }
                    _ => {}
                }
            }
            if rng.below(8) == 0 {
                for _ in 0..rng.below(5).min(a.q.len() as u64) {
                    a.q.pop_front();
                    b.q.pop_front();
                }
            }
            let mut r = Rack::new(SeqNumber(0));
            if let Some(s) = a.q.iter().filter(|s| s.sacked & SACKED_ACKED != 0).max_by_key(|s| s.xmit) {
                r.advance(now, 0, s.end, s.xmit, 0);
            }
            let w = rng.below(20_000);
            assert_eq!(r.detect_loss(&mut a, now, w), plain(&r, &mut b, now, w), "step {step}");
            assert_eq!((a.lost_out, a.retrans_out, a.lost), (b.lost_out, b.retrans_out, b.lost));
            assert!(a.q.iter().zip(&b.q).all(|(x, y)| x.sacked == y.sacked));
            assert_eq!(a.first_to_retransmit(), b.q.iter().position(|s| s.sacked & (LOST | SACKED_RETRANS | SACKED_ACKED) == LOST));
        }
    }
}
