//! TSO/GSO sizing and the write queue's skbs (`tcp.c`, `tcp_output.c`).
//!
//! The engine still emits MSS-sized segments, but it groups them as Linux groups data:
//!
//! * `tcp_sendmsg_locked()` copies a write into `skb`s of at most `size_goal` bytes
//!   (`tcp_xmit_size_goal()`), appending to the unsent tail skb while it has room, and
//!   `tcp_push()` / `forced_push()` mark the tail skb with PSH (`tcp_mark_push()`);
//!   `MSG_MORE` and `TCP_CORK` skip the mark and cork Nagle.
//! * `tcp_write_xmit()` sends the head skb in pieces of at most
//!   `min(tcp_cwnd_test(), tcp_tso_segs())` segments (`tcp_mss_split_point()`,
//!   `tso_fragment()`), where `tcp_tso_segs()` is `tcp_tso_autosize()` of the pacing rate
//!   (`sk_pacing_rate`, the one `tcp_update_pacing_rate()` in `cong.rs` or a module such
//!   as BBR sets) with `tcp_min_tso_segs`, and may defer a small piece
//!   (`tcp_tso_should_defer()`, `tcp_tso_win_divisor`).
//!
//! One such piece is a TSO packet; the engine sends it as its segments, as GSO would
//! (PSH only on the last one). Linux 6.18 sends a piece of two or more segments with PSH
//! (seen on the kernel here: every multi-segment TSO packet of a bulk write carries PSH,
//! while a one-segment piece carries it only if it ends a pushed skb); the piece split
//! off in front by `tso_fragment()`/`tcp_fragment()` keeps no stored PSH.
use crate::wire::SeqNumber;
use std::collections::VecDeque;
use wirelab_core::{Duration, Instant};

/// `sk_gso_max_size` of a tun (and most) devices: `GSO_LEGACY_MAX_SIZE`.
pub(super) const GSO_MAX_SIZE: u32 = 65536;
/// `MAX_TCP_HEADER` on x86-64 (128 + `MAX_HEADER`), subtracted in `tcp_xmit_size_goal()`.
const MAX_TCP_HEADER: u32 = 320;
/// `sk_pacing_shift` default (`tcp_init_sock()`): TSO packets of about 1 ms of data.
const PACING_SHIFT: u32 = 10;
/// `tcp_tso_rtt_log` default: for min_rtt below 2^9 µs, add up to a full GSO packet.
const TSO_RTT_LOG: u32 = 9;
/// `tcp_max_tso_deferred_mss()` without a win_divisor.
const MAX_TSO_DEFERRED_MSS: u32 = 3;

/// One skb of unsent data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Skb {
    pub start: SeqNumber,
    pub end: SeqNumber,
    /// `TCPHDR_PSH` in `TCP_SKB_CB(skb)->tcp_flags`.
    pub psh: bool,
}

/// The piece of the head skb being sent (the part `tso_fragment()` split off).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    pub id: u32,
    pub end: SeqNumber,
    pub segs: u32,
    /// The piece ends its skb, which carries PSH.
    pub psh_end: bool,
}

/// The write queue as skbs, the piece in transmission, and the TSO sizing state.
#[derive(Debug)]
pub(crate) struct WriteQueue {
    skbs: VecDeque<Skb>,
    /// `tp->pushed_seq`.
    pushed_seq: SeqNumber,
    /// The piece being sent, segment by segment.
    pub piece: Option<Piece>,
    next_id: u32,
    /// `tp->tcp_wstamp_ns`: the last transmission.
    pub last_xmit: Option<Instant>,
    /// `TCP_CORK` (`TCP_NAGLE_CORK` in `tp->nonagle`).
    pub cork: bool,
    /// The last write had `MSG_MORE`: its push corks Nagle (until the transmit round ends).
    pub more: bool,
    /// Uncorking pushes once (`TCP_NAGLE_PUSH`): Nagle lets a partial segment go.
    pub push: bool,
    /// A retransmission of several segments in progress: (end of its last, segments).
    pub rtx_piece: Option<(SeqNumber, u32)>,
}

impl WriteQueue {
    pub fn new(iss: SeqNumber) -> Self {
        WriteQueue {
            skbs: VecDeque::new(),
            pushed_seq: iss,
            piece: None,
            next_id: 1,
            last_xmit: None,
            cork: false,
            more: false,
            push: false,
            rtx_piece: None,
        }
    }

    /// A fresh piece id.
    pub fn new_id(&mut self) -> u32 {
        self.next_id = self.next_id.wrapping_add(1).max(1);
        self.next_id
    }

    /// `tcp_sendmsg_locked()` + `tcp_push()` without the sends in between (the engine's
    /// write path is `Conn::send_common`, which also runs them): `n` bytes written at
    /// `write_seq`. skbs grow to `size_goal`; a full skb is pushed (PSH) if `forced_push()`;
    /// the tail is pushed at the end unless `more` (`MSG_MORE`) or `TCP_CORK`.
    #[cfg(test)]
    pub fn append(&mut self, write_seq: SeqNumber, n: u32, size_goal: u32, max_window: u32, more: bool) {
        let mut pos = write_seq;
        let end = write_seq + n;
        let goal = size_goal.max(1);
        while pos.before(end) {
            let room = match self.skbs.back() {
                Some(t) if t.end == pos && t.end.diff(t.start) < goal as i32 => goal - t.end.diff(t.start) as u32,
                _ => {
                    self.skbs.push_back(Skb { start: pos, end: pos, psh: false });
                    goal
                }
            };
            let take = room.min(end.dist(pos));
            let t = self.skbs.back_mut().expect("just ensured");
            t.end = t.end + take;
            pos = pos + take;
            let full = t.end.diff(t.start) as u32 >= goal;
            // forced_push(): more than half the largest window written since the last push
            if full && pos.after(self.pushed_seq + (max_window >> 1)) {
                t.psh = true;
                self.pushed_seq = pos;
            }
        }
        // tcp_push(): MSG_MORE skips the mark (TCP_CORK does not) and corks this push
        self.more = more;
        if n > 0 && !more {
            if let Some(t) = self.skbs.back_mut() {
                t.psh = true; // tcp_mark_push()
            }
            self.pushed_seq = end;
        }
    }

    /// Room left in the tail skb for data written at `pos` (0: a new skb is needed).
    pub fn tail_room(&self, pos: SeqNumber, size_goal: u32) -> u32 {
        match self.skbs.back() {
            Some(t) if t.end == pos && t.end.dist(t.start) < size_goal => size_goal - t.end.dist(t.start),
            _ => 0,
        }
    }

    /// `tcp_stream_alloc_skb()` + `tcp_skb_entail()`: a new, empty tail skb at `pos`.
    pub fn push_skb(&mut self, pos: SeqNumber) {
        self.skbs.push_back(Skb { start: pos, end: pos, psh: false });
    }

    /// `n` more bytes copied into the tail skb.
    pub fn extend_tail(&mut self, n: u32) {
        if let Some(t) = self.skbs.back_mut() {
            t.end = t.end + n;
        }
    }

    /// The tail skb.
    pub fn tail(&self) -> Option<Skb> {
        self.skbs.back().copied()
    }

    /// `forced_push()` + `tcp_mark_push()` on the tail skb ending at `pos`: more than half
    /// the largest window written since the last push.
    pub fn forced_push(&mut self, pos: SeqNumber, max_window: u32) -> bool {
        if !pos.after(self.pushed_seq + (max_window >> 1)) {
            return false;
        }
        self.mark_push(pos);
        true
    }

    /// `tcp_mark_push()` of the tail skb, ending at `pos`.
    pub fn mark_push(&mut self, pos: SeqNumber) {
        if let Some(t) = self.skbs.back_mut() {
            t.psh = true;
        }
        self.pushed_seq = pos;
    }

    /// Number of unsent skbs (each a head's truesize in `sk_wmem_queued`).
    pub fn skb_count(&self) -> u32 {
        self.skbs.len() as u32
    }

    /// Index of the skb that starts at `seq`.
    pub fn index_at(&self, seq: SeqNumber) -> Option<usize> {
        let i = self.skbs.partition_point(|s| !s.end.after(seq));
        (i < self.skbs.len() && self.skbs[i].start == seq).then_some(i)
    }

    /// The skb at `i`.
    pub fn skb(&self, i: usize) -> Skb {
        self.skbs[i]
    }

    /// `tso_fragment()`: splits skb `i` at `seq`; the front keeps no PSH mark.
    pub fn split_at(&mut self, i: usize, seq: SeqNumber) {
        let s = self.skbs[i];
        if !seq.after(s.start) || !s.end.after(seq) {
            return;
        }
        self.skbs[i] = Skb { start: s.start, end: seq, psh: false };
        self.skbs.insert(i + 1, Skb { start: seq, end: s.end, psh: s.psh });
    }

    /// `tcp_send_head()`: the first unsent skb.
    pub fn head(&self) -> Option<Skb> {
        self.skbs.front().copied()
    }

    /// `tcp_grow_skb()` (Linux ≥ 6.10): the head skb, `missing` bytes short of the TSO
    /// packet `tcp_write_xmit()` may send, takes up to that much from the next skb
    /// (`skb_shift()`); an emptied next skb is eaten, its flags (PSH) OR-ed into the head.
    /// So a TSO packet may cross the boundary where a write ended an skb.
    pub fn grow_head(&mut self, missing: u32) {
        self.grow_at(0, missing);
    }

    /// [`grow_head`](Self::grow_head) for skb `i`; true if it ate the next skb.
    pub fn grow_at(&mut self, i: usize, missing: u32) -> bool {
        if self.skbs.len() < i + 2 || missing == 0 {
            return false;
        }
        let next = self.skbs[i + 1];
        let take = missing.min(next.end.dist(next.start));
        if take == 0 {
            return false;
        }
        if take == next.end.dist(next.start) {
            self.skbs.remove(i + 1);
            let h = &mut self.skbs[i];
            h.end = next.end;
            h.psh |= next.psh;
            true
        } else {
            self.skbs[i].end = next.start + take;
            self.skbs[i + 1].start = next.start + take;
            false
        }
    }

    /// True if `s` is the last skb (`tcp_skb_is_last()`).
    pub fn is_tail(&self, s: &Skb) -> bool {
        self.skbs.back().is_some_and(|t| t.start == s.start)
    }

    /// Data up to `upto` left the write queue.
    pub fn sent(&mut self, upto: SeqNumber) {
        while let Some(h) = self.skbs.front_mut() {
            if !h.end.after(upto) {
                self.skbs.pop_front();
            } else {
                if upto.after(h.start) {
                    h.start = upto;
                }
                break;
            }
        }
    }

    /// Forgets everything queued (abort, close).
    pub fn clear(&mut self) {
        self.skbs.clear();
        self.piece = None;
        self.rtx_piece = None;
    }
}

/// `tcp_xmit_size_goal()`: the largest skb a write builds: a GSO packet
/// (`sk_gso_max_size`, `GSO_MAX_SIZE - MAX_TCP_HEADER - 1`), but never more than half the
/// largest window seen (`tcp_bound_to_half_wnd()`), in whole segments. ("tcp_tso_autosize()
/// will eventually split this later": at transmit, `tso_fragment()`.)
pub(crate) fn size_goal(mss: u32, max_window: u32) -> u32 {
    let mut goal = GSO_MAX_SIZE - 1 - MAX_TCP_HEADER;
    let cutoff = if max_window > 536 { max_window >> 1 } else { max_window };
    if cutoff > 0 && goal > cutoff {
        goal = cutoff.max(68);
    }
    (goal / mss.max(1)).max(1) * mss.max(1)
}

/// `tcp_tso_autosize()` + `tcp_tso_segs()`: segments per TSO packet, about 1 ms of the
/// pacing rate (plus a share of a full packet on sub-ms paths), at least `min_tso_segs`.
pub(crate) fn tso_segs(pacing_rate: u64, mss: u32, min_rtt_us: u32, min_tso_segs: u32) -> u32 {
    let mut bytes = pacing_rate >> PACING_SHIFT;
    let r = min_rtt_us >> TSO_RTT_LOG;
    if r < 32 {
        bytes += (GSO_MAX_SIZE >> r) as u64;
    }
    let bytes = bytes.min(GSO_MAX_SIZE as u64) as u32;
    (bytes / mss.max(1)).max(min_tso_segs).max(1)
}

/// `tcp_nagle_check()`: hold a partial segment?
pub(crate) fn nagle_check(partial: bool, corked: bool, nodelay: bool, packets_out: u32, minshall: bool) -> bool {
    partial && (corked || (!nodelay && packets_out > 0 && minshall))
}

/// Inputs of `tcp_tso_should_defer()`.
pub(crate) struct DeferCtx {
    pub in_recovery: bool,
    pub since_last_xmit: Option<Duration>,
    pub send_win: u32,
    pub cong_win: u32,
    pub max_segs: u32,
    pub mss: u32,
    pub skb_len: u32,
    pub skb_is_tail: bool,
    pub snd_wnd: u32,
    pub cwnd: u32,
    pub win_divisor: u32,
    /// Time since the oldest unacknowledged segment was sent (None: nothing out).
    pub head_age: Option<Duration>,
    pub srtt_us: u32,
    pub fin: bool,
}

/// `tcp_tso_should_defer()`: wait for more ACKs rather than send a small TSO packet.
pub(crate) fn should_defer(c: &DeferCtx) -> bool {
    if c.in_recovery {
        return false;
    }
    // defer only if the last transmission was recent (1 ms)
    if c.since_last_xmit.is_none_or(|d| d > Duration::from_millis(1)) {
        return false;
    }
    let limit = c.send_win.min(c.cong_win);
    if limit >= c.max_segs * c.mss {
        return false;
    }
    if !c.skb_is_tail && limit >= c.skb_len {
        return false;
    }
    if let Some(chunk) = c.snd_wnd.min(c.cwnd.saturating_mul(c.mss)).checked_div(c.win_divisor) {
        if limit >= chunk {
            return false;
        }
    } else if limit > MAX_TSO_DEFERRED_MSS * c.mss {
        return false;
    }
    let Some(age) = c.head_age else { return false };
    // Linux 6.18 ("tcp: fix tcp_tso_should_defer() vs large RTT"): the head's ACK is
    // expected at head->tstamp + srtt; if that is more than min(1 ms, srtt/2) away, do not
    // defer (before 6.18: do not defer while the head is younger than srtt/2, which held
    // lone segments back for most of an RTT on long paths). Kernel-checked:
    // own/tso-defer-young-head.pkt.
    let srtt_ns = c.srtt_us as u64 * 1000;
    let ack_in_ns = srtt_ns as i64 - age.as_nanos() as i64;
    if ack_in_ns > (srtt_ns >> 1).min(1_000_000) as i64 {
        return false;
    }
    !c.fin
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_become_pushed_skbs() {
        let mut w = WriteQueue::new(SeqNumber(0));
        assert_eq!(size_goal(1000, 32896), 16000);
        assert_eq!(size_goal(1000, 50000), 25000);
        assert_eq!(size_goal(1460, 0), 64240);
        // two 3000-byte writes, size_goal 16000: one skb, pushed at each write's end
        w.append(SeqNumber(1), 3000, 16000, 40960, false);
        w.append(SeqNumber(3001), 3000, 16000, 40960, false);
        assert_eq!(w.head(), Some(Skb { start: SeqNumber(1), end: SeqNumber(6001), psh: true }));
        // MSG_MORE: no mark
        let mut m = WriteQueue::new(SeqNumber(0));
        m.append(SeqNumber(1), 40, 16000, 40960, true);
        assert!(!m.head().unwrap().psh);
        assert!(m.more);
        // a 40000-byte write with size_goal 16000: three skbs; forced push once more than
        // half the window (20480) was written since the last push
        let mut b = WriteQueue::new(SeqNumber(0));
        b.append(SeqNumber(1), 40000, 16000, 40960, false);
        let v: Vec<Skb> = b.skbs.iter().copied().collect();
        assert_eq!(v.len(), 3);
        assert_eq!((v[0].end, v[0].psh), (SeqNumber(16001), false));
        assert_eq!((v[1].end, v[1].psh), (SeqNumber(32001), true));
        assert_eq!((v[2].end, v[2].psh), (SeqNumber(40001), true));
        b.sent(SeqNumber(20001));
        assert_eq!(b.head().unwrap().start, SeqNumber(20001));
    }

    #[test]
    fn grow_head_pulls_from_the_next_skb() {
        let mut w = WriteQueue::new(SeqNumber(0));
        w.append(SeqNumber(1), 3000, 2000, 40960, false); // [1,2001) [2001,3001) psh
        w.grow_head(500);
        assert_eq!(w.head(), Some(Skb { start: SeqNumber(1), end: SeqNumber(2501), psh: false }));
        assert_eq!(w.skbs[1].start, SeqNumber(2501));
        w.grow_head(5000); // eats the rest, and its PSH
        assert_eq!(w.head(), Some(Skb { start: SeqNumber(1), end: SeqNumber(3001), psh: true }));
        assert_eq!(w.skbs.len(), 1);
        w.grow_head(1000); // the last skb: nothing to take
        assert_eq!(w.skbs.len(), 1);
    }

    #[test]
    fn autosize_is_a_millisecond_of_pacing() {
        // 10 × 1000 B per 100 ms at 200 % (tcp_update_pacing_rate, conn/cong.rs): 200 kB/s
        // → 195 B per ms → min_tso_segs (2)
        let r = 200_000;
        assert_eq!(tso_segs(r, 1000, 100_000, 2), 2);
        assert_eq!(tso_segs(r, 1000, 100_000, 10), 10);
        // 1 ms paths get a share of a full GSO packet (65536 >> 1 at 1000 µs)
        assert_eq!(tso_segs(r, 1000, 1000, 2), 32);
        assert_eq!(tso_segs(u64::MAX, 1000, u32::MAX, 2), 65);
    }

    #[test]
    fn deferral() {
        let base = DeferCtx {
            in_recovery: false,
            since_last_xmit: Some(Duration::ZERO),
            send_win: 40000,
            cong_win: 1000,
            max_segs: 2,
            mss: 1000,
            skb_len: 5000,
            skb_is_tail: true,
            snd_wnd: 40000,
            cwnd: 10,
            win_divisor: 3,
            head_age: Some(Duration::from_micros(99_500)),
            srtt_us: 100_000,
            fin: false,
        };
        assert!(should_defer(&base));
        // 6.18: the head's ACK is due in 40 ms (more than 1 ms): send; overdue: defer
        assert!(!should_defer(&DeferCtx { head_age: Some(Duration::from_millis(60)), ..base }));
        assert!(should_defer(&DeferCtx { head_age: Some(Duration::from_millis(150)), ..base }));
        // short RTT: the threshold is srtt/2 (1.5 ms path: ACK due within 0.75 ms)
        let short = DeferCtx { srtt_us: 1_500, ..base };
        assert!(should_defer(&DeferCtx { head_age: Some(Duration::from_micros(800)), ..short }));
        assert!(!should_defer(&DeferCtx { head_age: Some(Duration::from_micros(700)), ..short }));
        assert!(!should_defer(&DeferCtx { win_divisor: 100, ..base }));
        assert!(!should_defer(&DeferCtx { head_age: Some(Duration::from_millis(10)), ..base }));
        assert!(!should_defer(&DeferCtx { since_last_xmit: Some(Duration::from_millis(5)), ..base }));
        assert!(!should_defer(&DeferCtx { cong_win: 2000, ..base }));
    }
}
