//! The receiver's out-of-order queue and the SACK blocks it advertises
//! (`out_of_order_queue`, `rx_opt.selective_acks`, `duplicate_sack`): range bookkeeping
//! of `tcp_data_queue_ofo()`, `tcp_ofo_queue()`, `tcp_sack_new_ofo_skb()` and
//! `tcp_sack_remove()`. The bytes themselves sit in the receive ring at their offset.
use crate::wire::{SackBlocks, SeqNumber};

/// Out-of-order ranges (sorted, disjoint) and the SACK/D-SACK blocks to send.
#[derive(Debug)]
pub(crate) struct OfoQueue {
    pub ranges: Vec<(SeqNumber, SeqNumber)>,
    /// SACK blocks, most recent first (`selective_acks`).
    pub sacks: SackBlocks,
    /// A D-SACK block for the next ACK (`duplicate_sack[0]`).
    pub dsack: Option<(SeqNumber, SeqNumber)>,
}

impl Default for OfoQueue {
    fn default() -> Self {
        OfoQueue { ranges: Vec::new(), sacks: SackBlocks::EMPTY, dsack: None }
    }
}

impl OfoQueue {
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Bytes held out of order.
    pub fn bytes(&self) -> u32 {
        self.ranges.iter().map(|(l, r)| r.dist(*l)).sum()
    }

    /// `tcp_data_queue_ofo()`: queue `[seq, end)`. Returns false for a duplicate of data
    /// already queued (D-SACKed when `sack_ok`). New data updates the SACK blocks.
    #[inline]
    pub fn insert(&mut self, seq: SeqNumber, end: SeqNumber, sack_ok: bool) -> bool {
        if self.ranges.iter().any(|(l, r)| !seq.before(*l) && !end.after(*r)) {
            if sack_ok {
                self.dsack = Some((seq, end));
            }
            return false;
        }
        // merge into the sorted range list
        let mut nl = seq;
        let mut nr = end;
        let mut i = 0;
        while i < self.ranges.len() {
            let (l, r) = self.ranges[i];
            if !l.after(nr) && !nl.after(r) {
                nl = nl.min(l);
                nr = nr.max(r);
                self.ranges.remove(i);
            } else {
                i += 1;
            }
        }
        let pos = self.ranges.partition_point(|(l, _)| l.before(nl));
        self.ranges.insert(pos, (nl, nr));
        if sack_ok {
            self.sack_new_ofo_skb(seq, end);
        }
        true
    }

    /// `tcp_sack_new_ofo_skb()`: the new block first (merged with those it touches), then
    /// the others, up to four.
    fn sack_new_ofo_skb(&mut self, seq: SeqNumber, end: SeqNumber) {
        let mut v: [(SeqNumber, SeqNumber); 5] = [(SeqNumber(0), SeqNumber(0)); 5];
        let mut n = 0;
        let (mut nl, mut nr) = (seq, end);
        for &(l, r) in self.sacks.as_slice() {
            if !l.after(nr) && !nl.after(r) {
                nl = nl.min(l);
                nr = nr.max(r);
            }
        }
        v[n] = (nl, nr);
        n += 1;
        for &(l, r) in self.sacks.as_slice() {
            if !l.after(nr) && !nl.after(r) {
                continue; // coalesced
            }
            if n < 4 {
                v[n] = (l, r);
                n += 1;
            }
        }
        let mut s = SackBlocks::EMPTY;
        for &(l, r) in &v[..n] {
            s.push(l, r);
        }
        self.sacks = s;
    }

    /// `tcp_sack_remove()`: drop blocks now below `rcv_nxt`.
    #[inline]
    pub fn sack_remove(&mut self, rcv_nxt: SeqNumber) {
        if self.sacks.is_empty() {
            return;
        }
        let mut s = SackBlocks::EMPTY;
        for &(l, r) in self.sacks.as_slice() {
            if rcv_nxt.before(l) {
                s.push(l, r);
            }
        }
        self.sacks = s;
    }

    /// `tcp_ofo_queue()`: take the ranges `rcv_nxt` has reached; returns the new
    /// `rcv_nxt` and the bytes it advanced by.
    #[inline]
    pub fn pull(&mut self, mut rcv_nxt: SeqNumber) -> (SeqNumber, u32) {
        let mut bytes = 0;
        while let Some(&(l, r)) = self.ranges.first() {
            if l.after(rcv_nxt) {
                break;
            }
            if r.after(rcv_nxt) {
                bytes += r.dist(rcv_nxt);
                rcv_nxt = r;
            }
            self.ranges.remove(0);
        }
        (rcv_nxt, bytes)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn sack_blocks_most_recent_first_and_merge() {
        let mut o = OfoQueue::default();
        let s = SeqNumber;
        assert!(o.insert(s(2000), s(3000), true));
        assert!(o.insert(s(4000), s(5000), true));
        assert_eq!(o.sacks.as_slice(), &[(s(4000), s(5000)), (s(2000), s(3000))]);
        assert!(o.insert(s(3000), s(4000), true)); // fills the gap: one block
        assert_eq!(o.sacks.as_slice(), &[(s(2000), s(5000))]);
        assert!(!o.insert(s(2500), s(3500), true), "duplicate");
        assert_eq!(o.dsack, Some((s(2500), s(3500))));
        assert_eq!(o.bytes(), 3000);
        assert_eq!(o.pull(s(1000)), (s(1000), 0));
        assert_eq!(o.pull(s(2000)), (s(5000), 3000));
        o.sack_remove(s(5000));
        assert!(o.is_empty() && o.sacks.is_empty());
    }
}
