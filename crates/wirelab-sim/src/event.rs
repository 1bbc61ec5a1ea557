//! The event queue: entries ordered by `(time, sequence)`.
//!
//! The sequence number is the order of scheduling, so simultaneous events run in the order
//! they were scheduled, identically on every run and machine. Entries are small and `Copy`;
//! packets never travel through the queue (links hold their own in-flight packets).
//!
//! The queue is a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990) over the event
//! time. A discrete-event simulation's times are monotone — nothing is scheduled before
//! the event being handled — which is all a radix heap needs: bucket `i` holds the entries
//! whose time differs from the last time taken out first in bit `i`, so a push is one
//! `leading_zeros` and a `Vec::push`, and a pop takes the next entry of the front (the
//! entries due at exactly that time) or redistributes the first non-empty bucket into
//! lower ones. Each entry moves down a few times at most, instead of the `2 log n`
//! cache-missing comparisons and moves of a binary heap that holds an entry per host stack
//! and link direction (tens of thousands in a large run). Entries of equal time leave the
//! front in scheduling order (a redistribution sorts the few that reach it by sequence), so
//! the pop order is exactly that of a `(time, sequence)` binary heap: the change is
//! invisible in the results. (Keyed by time alone, with 64-bit arithmetic, it does about
//! half the work per event of the earlier 128-bit `time << 64 | sequence` key.)
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

impl Event {
    /// The event as one machine word: the variant in the high half, the index in the low.
    #[inline]
    fn encode(self) -> u64 {
        let (tag, i) = match self {
            Event::Link(i) => (0u64, i),
            Event::App(i) => (1, i),
            Event::Stack(i) => (2, i),
            Event::Change(i) => (3, i),
            Event::Sample => (4, 0),
        };
        tag << 32 | i as u64
    }

    #[inline]
    fn decode(w: u64) -> Event {
        let i = w as u32;
        match w >> 32 {
            0 => Event::Link(i),
            1 => Event::App(i),
            2 => Event::Stack(i),
            3 => Event::Change(i),
            _ => Event::Sample,
        }
    }
}

/// One queued entry; `seq` breaks ties of equal times in scheduling order.
///
/// Three plain words, the event encoded (`Event::encode`), not the `Event` enum: with the
/// enum (a 4-byte tag and a 4-byte index) the compiler built each entry on the stack with
/// 4- and 8-byte stores and copied it into the bucket with a 16-byte load, which the CPU
/// cannot forward from those smaller stores (a store-forwarding stall of ~15 cycles per
/// push: half of `Sim::schedule_dir`'s `perf` samples).
#[derive(Clone, Copy, Debug)]
#[repr(C)]
struct Entry {
    t: u64,
    seq: u64,
    ev: u64,
}

/// Min-queue of events (a radix heap; see the module documentation).
pub struct EventQueue {
    /// Every stored time is `>= last`.
    last: u64,
    /// Bucket 0: the entries due at `last`, in sequence order, taken from `head` on.
    front: Vec<Entry>,
    head: usize,
    /// `buckets[i]`: the entries whose time differs from `last` first in bit `i`.
    buckets: [Vec<Entry>; 64],
    /// Bit `i` set: `buckets[i]` is not empty.
    nonempty: u64,
    len: usize,
    seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue { last: 0, front: Vec::new(), head: 0, buckets: std::array::from_fn(|_| Vec::new()), nonempty: 0, len: 0, seq: 0 }
    }
}

impl EventQueue {
    /// Schedules `ev` at `t`.
    #[inline]
    pub fn push(&mut self, t: Instant, ev: Event) {
        self.seq += 1;
        self.len += 1;
        // the entry is built only where it is stored (see `Entry`)
        let (t, seq, ev) = (t.as_nanos(), self.seq, ev.encode());
        if t < self.last {
            // Earlier than the entries last brought to the front (possible only between
            // two `Sim::run` calls, whose `until` stopped short of them): re-base.
            return self.rebase(t, seq, ev);
        }
        // due at `last`: it was scheduled after everything in the front, so it goes last
        self.put(Entry { t, seq, ev });
    }

    #[inline]
    fn put(&mut self, e: Entry) {
        let x = e.t ^ self.last;
        if x == 0 {
            self.front.push(e);
        } else {
            let b = 63 - x.leading_zeros() as usize;
            self.buckets[b].push(e);
            self.nonempty |= 1 << b;
        }
    }

    #[cold]
    #[inline(never)]
    fn rebase(&mut self, t: u64, seq: u64, ev: u64) {
        let mut all: Vec<Entry> = self.front.drain(self.head..).collect();
        self.front.clear();
        self.head = 0;
        for b in &mut self.buckets {
            all.append(b);
        }
        all.push(Entry { t, seq, ev });
        all.sort_unstable_by_key(|e| (e.t, e.seq));
        self.last = all[0].t;
        self.nonempty = 0;
        for e in all {
            self.put(e);
        }
    }

    /// Removes the earliest event if it is due at or before `until`.
    ///
    /// Inlined into the driver's loop: 64 % of the pops at 20 flows @ 1 Gbit/s take the
    /// front's next entry and end here; the rest (an empty front) go to `pop_settle`. (As
    /// one out-of-line function the call alone cost ~18 instructions per event.)
    #[inline(always)]
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Event)> {
        let until = until.as_nanos();
        let e = if self.head < self.front.len() {
            let e = self.front[self.head];
            if e.t > until {
                return None;
            }
            self.head += 1;
            e
        } else {
            self.pop_settle(until)?
        };
        self.len -= 1;
        Some((Instant::from_nanos(e.t), Event::decode(e.ev)))
    }

    /// `pop_until` with an empty front: takes the earliest entry if it is alone in the
    /// lowest non-empty bucket (36 % of the pops at 20 flows @ 1 Gbit/s: no redistribution,
    /// no scan for the minimum, no trip through the front), or else brings the earliest
    /// entries to the front and takes the first. Leaves the queue as it was (the front
    /// refilled, or the lone entry in place) if the earliest entry is not due by `until`.
    #[inline(never)]
    fn pop_settle(&mut self, until: u64) -> Option<Entry> {
        self.front.clear();
        self.head = 0;
        if self.nonempty == 0 {
            return None;
        }
        let i = self.nonempty.trailing_zeros() as usize;
        if self.buckets[i].len() == 1 {
            // alone in its bucket: it is the earliest entry, and the only one of its time
            let e = self.buckets[i][0];
            if e.t > until {
                return None;
            }
            // what redistributing the bucket would do, then taking the front's entry
            self.buckets[i].clear();
            self.nonempty &= !(1 << i);
            self.last = e.t;
            return Some(e);
        }
        self.nonempty &= !(1 << i);
        let mut b = std::mem::take(&mut self.buckets[i]);
        self.last = b.iter().map(|e| e.t).min().unwrap_or(self.last);
        // every entry of bucket i lands in a lower bucket or the front: they share the
        // bits above i with the old and the new `last`, and differ from the new one below
        for &e in &b {
            self.put(e);
        }
        // entries of equal time reach the front in bucket order, not scheduling order
        if self.front.len() > 1 {
            self.front.sort_unstable_by_key(|e| e.seq);
        }
        // keep the allocation for the next entries of this bucket
        b.clear();
        self.buckets[i] = b;
        let e = self.front[0];
        if e.t > until {
            return None;
        }
        self.head = 1;
        Some(e)
    }

    /// Time of the earliest entry: the front's (it equals `last`) or else the smallest of
    /// the lowest non-empty bucket (every time there is below those of higher buckets).
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        let t = if self.head < self.front.len() {
            self.front[self.head].t
        } else if self.nonempty != 0 {
            let i = self.nonempty.trailing_zeros() as usize;
            self.buckets[i].iter().map(|e| e.t).min()?
        } else {
            return None;
        };
        Some(Instant::from_nanos(t))
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
                // a horizon that sometimes stops short of the earliest entry (the queue must
                // then be left as it was, whichever path found that entry)
                let until = match rng.below(3) {
                    0 => Instant::MAX,
                    _ => Instant::from_nanos(now + [0, 1, 12_000, 600_000][rng.below(4) as usize]),
                };
                let a = q.pop_until(until);
                let b = match h.peek() {
                    Some(Reverse((t, _, _))) if Instant::from_nanos(*t) <= until => h.pop().map(|Reverse((t, _, i))| (Instant::from_nanos(t), Event::Link(i))),
                    _ => None,
                };
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
