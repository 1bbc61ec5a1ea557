//! The event queue: entries ordered by `(time, sequence)`.
//!
//! The sequence number is the order of scheduling, so simultaneous events run in the order
//! they were scheduled, identically on every run and machine. Entries are small and `Copy`;
//! packets never travel through the queue (links hold their own in-flight packets).
//!
//! The queue is a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990) over the 128-bit key
//! `time << 64 | sequence`. A discrete-event simulation's keys are monotone — nothing is
//! scheduled before the event being handled — which is all a radix heap needs: bucket `i`
//! holds the keys whose highest bit differing from the last key taken out is bit `i - 1`,
//! so a push is one `leading_zeros` and a `Vec::push`, and a pop takes the only entry of
//! bucket 0 or redistributes the first non-empty bucket into lower ones. Each entry moves
//! down a few times at most, instead of the `2 log n` cache-missing comparisons and moves
//! of a binary heap that holds an entry per host stack and link direction (tens of
//! thousands in a large run). Keys are unique, so the pop order is exactly that of a
//! `(time, sequence)` binary heap: the change is invisible in the results.
use wirelab_core::Instant;

/// What happens when an entry comes due.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// A link direction has an arrival due or its transmitter became free; or its queue's
    /// shaper (tbf/htb) may release a packet.
    Link(u32),
    /// An application timer.
    App(u32),
    /// A host stack (TCP/SCTP endpoint) timer.
    Stack(u32),
    /// A scheduled topology change (index into the change list).
    Change(u32),
    /// Time-series sampling.
    Sample,
}

/// Buckets: one for "equal to the last key", one per bit of a 128-bit key.
const BUCKETS: usize = 129;

/// Min-queue of events (a radix heap; see the module documentation).
pub struct EventQueue {
    /// Every stored key is `>= last`.
    last: u128,
    buckets: Vec<Vec<(u128, Event)>>,
    /// Bit `i - 1` set: bucket `i` (1..=128) is not empty.
    nonempty: u128,
    len: usize,
    seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue { last: 0, buckets: (0..BUCKETS).map(|_| Vec::new()).collect(), nonempty: 0, len: 0, seq: 0 }
    }
}

#[inline]
fn key(t: Instant, seq: u64) -> u128 {
    (t.as_nanos() as u128) << 64 | seq as u128
}

impl EventQueue {
    #[inline]
    fn bucket(&self, k: u128) -> usize {
        (128 - (k ^ self.last).leading_zeros()) as usize
    }

    /// Schedules `ev` at `t`.
    #[inline]
    pub fn push(&mut self, t: Instant, ev: Event) {
        self.seq += 1;
        let k = key(t, self.seq);
        if k < self.last {
            // Earlier than the entry last brought to the front (possible only between two
            // `Sim::run` calls, whose `until` stopped short of that entry): re-base.
            self.rebase(k);
        }
        self.put(k, ev);
        self.len += 1;
    }

    #[inline]
    fn put(&mut self, k: u128, ev: Event) {
        let b = self.bucket(k);
        self.buckets[b].push((k, ev));
        if b > 0 {
            self.nonempty |= 1 << (b - 1);
        }
    }

    #[cold]
    fn rebase(&mut self, k: u128) {
        let all: Vec<(u128, Event)> = self.buckets.iter_mut().flat_map(|b| b.drain(..)).collect();
        self.last = k;
        self.nonempty = 0;
        for (k, e) in all {
            self.put(k, e);
        }
    }

    /// Makes bucket 0 hold the minimum entry (if any).
    #[inline]
    fn settle(&mut self) -> bool {
        if !self.buckets[0].is_empty() {
            return true;
        }
        if self.nonempty == 0 {
            return false;
        }
        let i = self.nonempty.trailing_zeros() as usize + 1;
        self.nonempty &= !(1 << (i - 1));
        let mut b = std::mem::take(&mut self.buckets[i]);
        self.last = b.iter().map(|e| e.0).min().unwrap_or(self.last);
        // every entry of bucket i lands in a lower bucket: they share the bits above i - 1
        // with the old and the new `last`, and differ from the new one below it
        for (k, e) in b.drain(..) {
            self.put(k, e);
        }
        // keep the allocation for the next entries of this bucket
        self.buckets[i] = b;
        true
    }

    /// Removes the earliest event if it is due at or before `until`.
    #[inline]
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Event)> {
        if !self.settle() {
            return None;
        }
        let (k, e) = *self.buckets[0].last()?;
        let t = Instant::from_nanos((k >> 64) as u64);
        if t > until {
            return None;
        }
        self.buckets[0].pop();
        self.len -= 1;
        Some((t, e))
    }

    /// Time of the earliest entry: bucket 0's (it equals `last`) or else the smallest of
    /// the lowest non-empty bucket (every key there is below those of higher buckets).
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        let k = match self.buckets[0].last() {
            Some(&(k, _)) => k,
            None if self.nonempty != 0 => {
                let i = self.nonempty.trailing_zeros() as usize + 1;
                self.buckets[i].iter().map(|e| e.0).min()?
            }
            None => return None,
        };
        Some(Instant::from_nanos((k >> 64) as u64))
    }

    /// Entries in the queue (including stale ones).
    pub fn len(&self) -> usize {
        self.len
    }
    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod test {
    use super::*;
    #[test]
    fn ties_break_by_schedule_order() {
        let mut q = EventQueue::default();
        let t = Instant::from_nanos(5);
        q.push(t, Event::App(2));
        q.push(Instant::from_nanos(1), Event::Sample);
        q.push(t, Event::App(1));
        let order: Vec<Event> = std::iter::from_fn(|| q.pop_until(Instant::MAX).map(|x| x.1)).collect();
        assert_eq!(order, vec![Event::Sample, Event::App(2), Event::App(1)]);
        q.push(Instant::from_nanos(10), Event::Sample);
        assert!(q.pop_until(Instant::from_nanos(9)).is_none());
        // an entry earlier than the one held back at the front still comes first
        q.push(Instant::from_nanos(9), Event::App(7));
        assert_eq!(q.pop_until(Instant::MAX), Some((Instant::from_nanos(9), Event::App(7))));
        assert_eq!(q.pop_until(Instant::MAX), Some((Instant::from_nanos(10), Event::Sample)));
        assert!(q.is_empty());
    }

    /// The radix heap pops exactly the order of a `(time, sequence)` binary heap on a
    /// simulation-like workload: monotone pushes at random offsets from "now", many ties.
    #[test]
    fn same_order_as_a_binary_heap() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut q = EventQueue::default();
        let mut h = BinaryHeap::new();
        let mut seq = 0u64;
        let mut rng = wirelab_core::Rng::stream(7, "event-test");
        let mut now = 0u64;
        for i in 0..20_000u32 {
            let pushes = rng.below(3);
            for _ in 0..pushes {
                // ties are common: offsets drawn from a few values
                let dt = [0, 0, 1, 12_000, 500_000, 40_000_000][rng.below(6) as usize] + rng.below(2);
                seq += 1;
                q.push(Instant::from_nanos(now + dt), Event::Link(i));
                h.push(Reverse((now + dt, seq, i)));
            }
            // peek_time sees the front without settling the buckets
            assert_eq!(q.peek_time(), h.peek().map(|Reverse((t, _, _))| Instant::from_nanos(*t)));
            if rng.below(4) != 0 {
                let a = q.pop_until(Instant::MAX);
                let b = h.pop().map(|Reverse((t, _, i))| (Instant::from_nanos(t), Event::Link(i)));
                assert_eq!(a, b);
                if let Some((t, _)) = a {
                    now = t.as_nanos();
                }
            }
            assert_eq!(q.len(), h.len());
        }
        while let Some(b) = h.pop() {
            assert_eq!(q.pop_until(Instant::MAX), Some((Instant::from_nanos(b.0 .0), Event::Link(b.0 .2))));
        }
        assert!(q.pop_until(Instant::MAX).is_none());
        assert_eq!(q.peek_time(), None);
    }
}
