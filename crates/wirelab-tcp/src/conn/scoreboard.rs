//! The retransmit queue and SACK scoreboard: sent, not yet cumulatively ACKed segments
//! with their `TCPCB_*` bits, and the counters Linux keeps beside them (`packets_out`,
//! `sacked_out`, `lost_out`, `retrans_out`, the highest SACKed sequence).
//!
//! The queue part of `tcp_clean_rtx_queue()` and `tcp_sacktag_one()`, `tcp_mark_skb_lost()`
//! and `tcp_mark_head_lost()` live here; what the connection does with the results
//! (RTT, rate, RACK, undo) is the caller's, through the `on_delivered` callbacks.
use super::rate::TxRate;
use crate::wire::SeqNumber;
use std::collections::VecDeque;
use wirelab_core::Instant;

// Scoreboard bits (`TCPCB_*` in include/net/tcp.h).
pub(crate) const SACKED_ACKED: u8 = 0x01;
pub(crate) const SACKED_RETRANS: u8 = 0x02;
pub(crate) const LOST: u8 = 0x04;
pub(crate) const EVER_RETRANS: u8 = 0x08;

/// A transmitted, not yet cumulatively ACKed segment (our `skb` in the rtx queue).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TxSeg {
    pub seq: SeqNumber,
    /// End sequence, FIN included.
    pub end: SeqNumber,
    pub fin: bool,
    /// `TCP_SKB_CB(skb)->sacked` bits.
    pub sacked: u8,
    /// Last (re)transmission time (`skb->skb_mstamp_ns`).
    pub xmit: Instant,
    /// Start of the data the last transmission carried (`tx.rdb_start_seq` of the RDB
    /// patch): before `seq` when older bytes were bundled in front (RDB).
    pub rdb_start: SeqNumber,
    /// tcp_rate.c per-skb state (`TCP_SKB_CB(skb)->tx`).
    pub tx: TxRate,
    /// The TSO packet (piece of an skb) this segment was last sent in (`tso::Piece::id`).
    pub piece: u32,
    /// The segment ends an skb that carries PSH (`TCP_SKB_CB(skb)->tcp_flags`).
    pub psh: bool,
    /// A SACKed segment's hint for queue walks that pass over SACKed segments (Linux's
    /// `tsorted_sent_queue` no longer holds them): at least this many segments from
    /// here on are SACKed (0: not known). SACKED_ACKED is never cleared and segments
    /// leave the queue only at its head, so a hint stays true. [`sacked_run`] keeps it.
    pub sack_run: u32,
}

/// The number of consecutive SACKed segments from `k` (`q[k]` is SACKed), jumping over
/// the runs earlier walks measured; remembers the total at `q[k]`, so the next walk
/// passes the whole run in one step. Only what the walk would have skipped is skipped.
#[inline]
pub(crate) fn sacked_run(q: &mut VecDeque<TxSeg>, k: usize) -> usize {
    let len = sacked_run_len(q, k);
    q[k].sack_run = len.min(u32::MAX as usize) as u32;
    len
}

/// [`sacked_run`] without remembering it.
#[inline]
pub(crate) fn sacked_run_len(q: &VecDeque<TxSeg>, k: usize) -> usize {
    let mut j = k;
    while let Some(s) = q.get(j) {
        if s.sacked & SACKED_ACKED == 0 {
            break;
        }
        j += (s.sack_run as usize).max(1);
    }
    j - k
}

impl TxSeg {
    #[inline]
    pub fn data_len(&self) -> u32 {
        self.end.diff(self.seq) as u32 - self.fin as u32
    }
}

/// `a` and `b` (adjacent) belong to one skb.
fn same_skb(a: &TxSeg, b: &TxSeg) -> bool {
    a.piece == b.piece && a.piece != 0
}

/// `tcp_mark_skb_lost()` on one segment with the queue's counters (for walks that hold
/// the queue mutably): `lost_out`, `retrans_out`, and `lost` (`tp->lost`: every loss
/// marking so far, a retransmission lost again counting again).
#[inline]
pub(crate) fn mark_seg_lost(s: &mut TxSeg, lost_out: &mut u32, retrans_out: &mut u32, lost: &mut u32) {
    if s.sacked & SACKED_ACKED != 0 {
        return;
    }
    if s.sacked & LOST != 0 {
        if s.sacked & SACKED_RETRANS != 0 {
            // a retransmission lost again (tcp_notify_skb_loss_event)
            s.sacked &= !SACKED_RETRANS;
            *retrans_out = retrans_out.saturating_sub(1);
            *lost += 1;
        }
    } else {
        s.sacked |= LOST;
        *lost_out += 1;
        *lost += 1;
    }
}

/// What the queue part of `tcp_clean_rtx_queue()` found.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CleanResult {
    /// Segments removed from the queue.
    pub acked_pkts: u32,
    /// Transmission times of the first and last never-retransmitted, not SACKed ones
    /// (`first_ackt`, `last_ackt`).
    pub first_ackt: Option<Instant>,
    pub last_ackt: Option<Instant>,
    /// A once-retransmitted segment was ACKed (`FLAG_RETRANS_DATA_ACKED`: no RTT sample).
    pub retrans_acked: bool,
    /// Lowest sequence of a never-retransmitted segment ACKed (reordering detection).
    pub reord: SeqNumber,
    /// `FLAG_ORIG_SACK_ACKED`: never-retransmitted data below `high_seq` was ACKed.
    pub orig_sack_acked: bool,
    /// Payload bytes of the last segment removed.
    pub last_data_len: u32,
}

/// What `tcp_sacktag_write_queue()` found in the SACK blocks (`struct tcp_sacktag_state`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SackTag {
    /// Segments newly SACKed.
    pub newly: u32,
    /// Transmission times of the first and last never-retransmitted ones.
    pub first: Option<Instant>,
    pub last: Option<Instant>,
    /// Lowest sequence below the prior forward-most SACK (`reord`).
    pub reord: SeqNumber,
    /// `FLAG_ORIG_SACK_ACKED`.
    pub orig_sack_acked: bool,
    /// `FLAG_DATA_SACKED`.
    pub data_sacked: bool,
}

/// The rtx queue with its counters. Segments are in sequence order.
#[derive(Debug, Default)]
pub(crate) struct RtxQueue {
    pub q: VecDeque<TxSeg>,
    /// `packets_out`: segments sent and not cumulatively ACKed.
    pub packets_out: u32,
    /// `sacked_out` (or Reno's dupACK count without SACK).
    pub sacked_out: u32,
    /// `lost_out`.
    pub lost_out: u32,
    /// `retrans_out`.
    pub retrans_out: u32,
    /// End of the highest SACKed segment: `tcp_highest_sack_seq()` is the start of the
    /// skb *after* it (`tcp_advance_highest_sack()` sets `skb_rb_next()`), or `snd_nxt`.
    pub highest_sack: SeqNumber,
    /// `tp->lost`: loss markings so far (see [`mark_seg_lost`]).
    pub lost: u32,
    /// skbs in the queue: runs of segments sent as one TSO packet (`TxSeg::piece`; piece 0,
    /// MSS-at-a-time sending, is one skb per segment). Each costs a head's truesize in
    /// `sk_wmem_queued` (`Conn::wmem_queued`).
    pub heads: u32,
}

impl RtxQueue {
    pub fn new(iss: SeqNumber) -> Self {
        RtxQueue { highest_sack: iss, ..Default::default() }
    }

    /// `tcp_packets_in_flight()`.
    #[inline]
    pub fn in_flight(&self) -> u32 {
        (self.packets_out + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }

    /// Drops everything (a closed connection).
    pub fn clear(&mut self) {
        self.q = VecDeque::new();
        self.heads = 0;
        self.packets_out = 0;
        self.sacked_out = 0;
        self.lost_out = 0;
        self.retrans_out = 0;
    }

    /// `tcp_highest_sack_seq()`: the end of the forward-most SACKed segment, else `snd_una`.
    pub fn fack_seq(&self, snd_una: SeqNumber, sack_ok: bool) -> SeqNumber {
        if self.sacked_out == 0 || !sack_ok {
            snd_una
        } else {
            self.highest_sack
        }
    }

    /// Appends a newly sent segment.
    pub fn push(&mut self, seg: TxSeg) {
        if self.q.back().is_none_or(|b| !same_skb(b, &seg)) {
            self.heads += 1;
        }
        self.q.push_back(seg);
        self.packets_out += 1;
    }

    /// `tcp_mark_skb_lost()`: a retransmission that is lost again stops counting as
    /// retransmitted, so it can be sent once more.
    pub fn mark_lost(&mut self, k: usize) {
        mark_seg_lost(&mut self.q[k], &mut self.lost_out, &mut self.retrans_out, &mut self.lost);
    }

    /// `tcp_mark_head_lost()`: mark holes before the `packets`-th SACKed segment lost
    /// (without SACK every segment counts); with `mark_head` only the head.
    pub fn mark_head_lost(&mut self, packets: u32, mark_head: bool, sack_ok: bool) {
        let mut cnt = 0u32;
        for k in 0..self.q.len() {
            let s = self.q[k];
            if !sack_ok || s.sacked & SACKED_ACKED != 0 {
                cnt += 1;
            }
            if cnt > packets {
                break;
            }
            if s.sacked & (SACKED_ACKED | LOST) == 0 {
                self.mark_lost(k);
            }
            if mark_head {
                break;
            }
        }
    }

    /// `tcp_timeout_mark_lost()` on RTO: outstanding retransmissions (a TLP's included)
    /// count as lost again (`tcp_clear_retrans_partial()`), and everything not SACKed is
    /// marked lost.
    pub fn mark_all_lost(&mut self) {
        for k in 0..self.q.len() {
            if self.q[k].sacked & (SACKED_RETRANS | SACKED_ACKED) == SACKED_RETRANS {
                self.q[k].sacked &= !SACKED_RETRANS;
                self.retrans_out = self.retrans_out.saturating_sub(1);
            }
            self.mark_lost(k);
        }
    }

    /// Clears every LOST mark (`tcp_undo_cwnd_reduction(unmark_loss)`).
    pub fn unmark_lost(&mut self) {
        for s in self.q.iter_mut() {
            s.sacked &= !LOST;
        }
        self.lost_out = 0;
    }

    /// The first segment marked lost and not yet retransmitted nor SACKed.
    pub fn first_to_retransmit(&self) -> Option<usize> {
        let mut k = 0;
        while let Some(s) = self.q.get(k) {
            if s.sacked & SACKED_ACKED != 0 {
                k += sacked_run_len(&self.q, k);
                continue;
            }
            if s.sacked & (LOST | SACKED_RETRANS) == LOST {
                return Some(k);
            }
            k += 1;
        }
        None
    }

    /// Consecutive segments from `k` that are lost, not yet retransmitted, not SACKed and
    /// sent in the same TSO packet as `k` (one skb of Linux's rtx queue).
    pub fn lost_run(&self, k: usize) -> u32 {
        let Some(first) = self.q.get(k) else { return 0 };
        let mut n = 0;
        let mut next = first.seq;
        for s in self.q.iter().skip(k) {
            if s.piece != first.piece || s.seq != next || s.sacked & (LOST | SACKED_RETRANS | SACKED_ACKED) != LOST {
                break;
            }
            n += 1;
            next = s.end;
        }
        n
    }

    /// Gives `n` segments from `k` the TSO packet id `piece` (`tcp_fragment()` of an skb).
    pub fn set_piece(&mut self, k: usize, n: u32, piece: u32) {
        let (lo, hi) = (k.max(1), (k + n as usize + 1).min(self.q.len()));
        let bounds = |q: &VecDeque<TxSeg>| (lo..hi).filter(|&i| !same_skb(&q[i - 1], &q[i])).count() as u32;
        let before = bounds(&self.q);
        for s in self.q.iter_mut().skip(k).take(n as usize) {
            s.piece = piece;
        }
        self.heads = (self.heads + bounds(&self.q)).saturating_sub(before);
    }

    /// Marks segment `k` retransmitted now (`tcp_retransmit_skb()`'s bookkeeping).
    pub fn mark_retransmitted(&mut self, k: usize, now: Instant) {
        let m = &mut self.q[k];
        m.sacked |= SACKED_RETRANS | EVER_RETRANS;
        m.xmit = now;
        m.rdb_start = m.seq;
        self.retrans_out += 1;
    }

    /// The queue part of `tcp_clean_rtx_queue()`: removes segments the cumulative `ack`
    /// covers (trimming a partially ACKed head, `tcp_trim_head()`), updating the counters.
    /// `on_delivered` sees each removed segment that was not already SACKed, in order.
    #[inline]
    pub fn clean_acked(&mut self, ack: SeqNumber, high_seq: SeqNumber, reord_start: SeqNumber, mut on_delivered: impl FnMut(&TxSeg)) -> CleanResult {
        let mut r = CleanResult {
            acked_pkts: 0,
            first_ackt: None,
            last_ackt: None,
            retrans_acked: false,
            reord: reord_start,
            orig_sack_acked: false,
            last_data_len: 0,
        };
        while let Some(seg) = self.q.front().copied() {
            if seg.end.after(ack) {
                if seg.seq.before(ack) {
                    // partial ACK of a segment: tcp_trim_head()
                    self.q[0].seq = ack;
                }
                break;
            }
            if seg.sacked & SACKED_RETRANS != 0 {
                self.retrans_out = self.retrans_out.saturating_sub(1);
            }
            if seg.sacked & SACKED_ACKED != 0 {
                self.sacked_out = self.sacked_out.saturating_sub(1);
            } else {
                on_delivered(&seg);
            }
            if seg.sacked & LOST != 0 {
                self.lost_out = self.lost_out.saturating_sub(1);
            }
            if seg.sacked & EVER_RETRANS != 0 {
                r.retrans_acked = true;
            } else if seg.sacked & SACKED_ACKED == 0 {
                if r.first_ackt.is_none() {
                    r.first_ackt = Some(seg.xmit);
                }
                r.last_ackt = Some(seg.xmit);
                if seg.seq.before(r.reord) {
                    r.reord = seg.seq;
                }
                if !seg.end.after(high_seq) {
                    r.orig_sack_acked = true;
                }
            }
            self.packets_out -= 1;
            r.acked_pkts += 1;
            r.last_data_len = seg.data_len();
            self.q.pop_front();
            if self.q.front().is_none_or(|n| !same_skb(&seg, n)) {
                self.heads = self.heads.saturating_sub(1); // tcp_wmem_free_skb()
            }
        }
        if self.packets_out == 0 {
            self.sacked_out = 0;
            self.lost_out = 0;
            self.retrans_out = 0;
        }
        r
    }

    /// `tcp_sacktag_walk()` / `tcp_sacktag_one()` for one valid SACK block `[start, end)`:
    /// whole segments inside it become SACKED_ACKED (partially covered ones are ignored:
    /// no `tcp_fragment`). `on_sacked` gets each newly SACKed segment (already tagged) and
    /// its bits before tagging.
    #[inline]
    pub fn tag_block(
        &mut self,
        start: SeqNumber,
        end: SeqNumber,
        high_seq: SeqNumber,
        prior_fack: SeqNumber,
        st: &mut SackTag,
        mut on_sacked: impl FnMut(&mut TxSeg, u8),
    ) {
        // segments are ordered by seq: binary search for the first ending after start
        let idx = self.q.partition_point(|s| !s.end.after(start));
        for k in idx..self.q.len() {
            let s = self.q[k];
            if s.seq.before(start) {
                continue;
            }
            if s.end.after(end) {
                break;
            }
            if s.sacked & SACKED_ACKED != 0 {
                continue;
            }
            let mut f = s.sacked;
            if f & SACKED_RETRANS != 0 {
                self.retrans_out = self.retrans_out.saturating_sub(1);
                f &= !SACKED_RETRANS;
            }
            if f & LOST != 0 {
                self.lost_out = self.lost_out.saturating_sub(1);
                f &= !LOST;
            }
            if f & EVER_RETRANS == 0 {
                if st.first.is_none() {
                    st.first = Some(s.xmit);
                }
                st.last = Some(s.xmit);
                if s.seq.before(prior_fack) && s.seq.before(st.reord) {
                    st.reord = s.seq;
                }
                if !s.end.after(high_seq) {
                    st.orig_sack_acked = true;
                }
            }
            // tcp_sacktag_walk(): tcp_advance_highest_sack() past this segment
            if self.sacked_out == 0 || s.end.after(self.highest_sack) {
                self.highest_sack = s.end;
            }
            f |= SACKED_ACKED;
            st.data_sacked = true;
            self.q[k].sacked = f;
            self.sacked_out += 1;
            st.newly += 1;
            on_sacked(&mut self.q[k], s.sacked);
        }
    }

    /// For a D-SACK block `[l, r)` above `snd_una`: how many once-retransmitted segments
    /// it covers (each proves one retransmission spurious, `undo_retrans`); lowers
    /// `reord` to any of them that is SACKed.
    pub fn dsack_retrans_in(&self, l: SeqNumber, r: SeqNumber, reord: &mut SeqNumber) -> u32 {
        let mut n = 0;
        let idx = self.q.partition_point(|s| !s.end.after(l));
        for sg in self.q.iter().skip(idx) {
            if sg.end.after(r) {
                break;
            }
            if sg.sacked & EVER_RETRANS != 0 {
                n += 1;
                if sg.sacked & SACKED_ACKED != 0 && sg.seq.before(*reord) {
                    *reord = sg.seq;
                }
            }
        }
        n
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn q(n: u32) -> RtxQueue {
        let mut rq = RtxQueue::new(SeqNumber(0));
        for i in 0..n {
            let t = Instant::from_nanos(i as u64 * 1000);
            rq.push(TxSeg {
                seq: SeqNumber(i * 100),
                end: SeqNumber(i * 100 + 100),
                fin: false,
                sacked: 0,
                xmit: t,
                rdb_start: SeqNumber(i * 100),
                tx: TxRate { first_tx: t, delivered_mstamp: Some(t), delivered: 0, is_app_limited: false },
                piece: 0,
                psh: false,
                sack_run: 0,
            });
        }
        rq
    }

    fn tag() -> SackTag {
        SackTag { newly: 0, first: None, last: None, reord: SeqNumber(1000), orig_sack_acked: false, data_sacked: false }
    }

    #[test]
    fn lost_runs_stay_within_one_tso_packet() {
        let mut rq = q(6);
        // segments 0..3 went in TSO packet 1, 3..6 in packet 2
        rq.set_piece(0, 3, 1);
        rq.set_piece(3, 3, 2);
        for s in rq.q.iter_mut() {
            s.sacked = LOST;
        }
        rq.q[1].sacked |= SACKED_ACKED;
        assert_eq!(rq.lost_run(0), 1); // stops at the SACKed segment
        assert_eq!(rq.lost_run(2), 1); // stops at the packet's end
        assert_eq!(rq.lost_run(3), 3);
        rq.mark_retransmitted(4, Instant::from_nanos(1));
        assert_eq!(rq.lost_run(3), 1); // stops at the retransmitted one
        // tcp_fragment(): the tail of a packet becomes a packet of its own
        rq.set_piece(5, 1, 3);
        assert_eq!(rq.lost_run(5), 1);
        assert_eq!(rq.lost_run(9), 0);
    }

    #[test]
    fn sack_then_mark_head_lost_then_clean() {
        let mut rq = q(6);
        let mut st = tag();
        let mut seen = vec![];
        // SACK segments 2..5 (sequence 200..500); 150..250 style partial blocks are ignored
        rq.tag_block(SeqNumber(200), SeqNumber(500), SeqNumber(600), SeqNumber(0), &mut st, |s, old| {
            assert!(s.sacked & SACKED_ACKED != 0 && old & SACKED_ACKED == 0);
            seen.push(s.seq.0)
        });
        assert_eq!((st.newly, rq.sacked_out, rq.highest_sack), (3, 3, SeqNumber(500)));
        assert_eq!(seen, vec![200, 300, 400]);
        assert_eq!(rq.in_flight(), 3);
        // tcp_update_scoreboard(): sacked_out 3 - reordering 3 = 0 -> the holes below the
        // first SACKed segment (0 and 1) are lost
        rq.mark_head_lost(0, false, true);
        assert_eq!((rq.lost_out, rq.lost), (2, 2));
        assert_eq!(rq.in_flight(), 1);
        let k = rq.first_to_retransmit().unwrap();
        assert_eq!(k, 0);
        rq.mark_retransmitted(k, Instant::from_nanos(99));
        assert_eq!(rq.in_flight(), 2);
        // cumulative ACK of 0..250: two segments leave, the third is trimmed
        let r = rq.clean_acked(SeqNumber(250), SeqNumber(600), SeqNumber(1000), |_| {});
        assert_eq!(r.acked_pkts, 2);
        assert!(r.retrans_acked, "segment 0 was retransmitted");
        assert_eq!(r.first_ackt, Some(Instant::from_nanos(1000)));
        assert_eq!((rq.packets_out, rq.lost_out, rq.retrans_out, rq.sacked_out), (4, 0, 0, 3));
        assert_eq!(rq.q[0].seq, SeqNumber(250));
    }

    #[test]
    fn lost_retransmission_counts_once_more() {
        let mut rq = q(2);
        rq.mark_lost(0);
        rq.mark_retransmitted(0, Instant::ZERO);
        assert_eq!((rq.lost_out, rq.retrans_out), (1, 1));
        rq.mark_lost(0); // the retransmission is lost too
        assert_eq!((rq.lost_out, rq.retrans_out, rq.lost), (1, 0, 2));
        assert_eq!(rq.first_to_retransmit(), Some(0));
        rq.mark_all_lost();
        assert_eq!(rq.lost_out, 2);
        rq.unmark_lost();
        assert_eq!(rq.lost_out, 0);
    }
}
