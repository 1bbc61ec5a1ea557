//! The event queue: entries ordered by `(time, sequence)`.
//!
//! The sequence number is the order of scheduling, so simultaneous events run in the order
//! they were scheduled, identically on every run and machine. Entries are small and `Copy`;
//! packets never travel through the queue (links hold their own in-flight packets).
//!
//! The queue is a timing wheel for the near future in front of a radix heap for the rest.
//! Nearly every entry a simulation schedules is due within microseconds (a link direction
//! has one entry, for the end of its current frame or its next arrival: at 1 Gbit/s a
//! frame lasts 0.5-12 µs): 97 % of the pushes at 20 flows @ 1 Gbit/s fall within the
//! wheel's 131 µs. The wheel stores an entry once, in the slot of its time, and takes it
//! from there; the radix heap took ~2.1 bucket moves per event and a redistribution loop
//! whose exits and bucket choices the branch predictor missed.
//!
//! The radix heap (Ahuja, Mehlhorn, Orlin and Tarjan, 1990) keeps everything else, for any
//! link rate and any number of flows. A discrete-event simulation's times are monotone —
//! nothing is scheduled before the event being handled — which is all a radix heap needs:
//! bucket `i` holds the entries whose time differs from the last time taken out first in
//! bit `i`, so a push is one `leading_zeros` and a `Vec::push`, and a pop takes the next
//! entry of the front (the entries due at exactly that time) or redistributes the first
//! non-empty bucket into lower ones. Each entry moves down a few times at most, instead of
//! the `2 log n` cache-missing comparisons and moves of a binary heap that holds an entry
//! per host stack and link direction (tens of thousands in a large run). Entries of equal
//! time leave the front in scheduling order (a redistribution sorts the few that reach it
//! by sequence).
//!
//! A pop takes whichever of the wheel's and the heap's earliest entries comes first by
//! `(time, sequence)`, so the pop order is exactly that of a `(time, sequence)` binary
//! heap: the change is invisible in the results.
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

/// Min-queue of events: a timing wheel for the near future in front of a radix heap (see
/// the module documentation).
pub struct EventQueue {
    /// Entries due within `SLOTS` slots of the current one.
    wheel: Wheel,
    /// Everything else (farther timers, slow links, and anything scheduled behind the
    /// current slot).
    far: RadixHeap,
    /// `(time, sequence)` of `far`'s earliest entry, `(u64::MAX, u64::MAX)` if empty.
    far_min: (u64, u64),
    len: usize,
    seq: u64,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue { wheel: Wheel::default(), far: RadixHeap::default(), far_min: (u64::MAX, u64::MAX), len: 0, seq: 0 }
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
        if !self.wheel.put(t, seq, ev) {
            self.push_far(t, seq, ev);
        }
    }

    #[inline]
    fn push_far(&mut self, t: u64, seq: u64, ev: u64) {
        // the newest entry has the largest sequence: it is the earliest only by time
        if t < self.far_min.0 {
            self.far_min = (t, seq);
        }
        self.far.put_entry(Entry { t, seq, ev });
    }

    /// Removes the earliest event if it is due at or before `until`: the wheel's earliest
    /// or `far`'s, whichever comes first by `(time, sequence)`.
    #[inline(always)]
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Event)> {
        let until = until.as_nanos();
        let e = match self.wheel.first() {
            Some((slot, pos)) => {
                let w = self.wheel.get(slot, pos);
                if (w.t, w.seq) < self.far_min {
                    if w.t > until {
                        return None;
                    }
                    self.wheel.take(slot, pos);
                    w
                } else {
                    self.pop_far(until)?
                }
            }
            None => self.pop_far(until)?,
        };
        self.wheel.advance(e.t);
        self.len -= 1;
        Some((Instant::from_nanos(e.t), Event::decode(e.ev)))
    }

    #[inline(never)]
    fn pop_far(&mut self, until: u64) -> Option<Entry> {
        if self.far_min.0 > until || self.far.is_empty() {
            return None;
        }
        let e = self.far.pop_entry();
        self.far_min = self.far.min_key().unwrap_or((u64::MAX, u64::MAX));
        Some(e)
    }

    /// Time of the earliest entry.
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        let w = self.wheel.first().map_or(u64::MAX, |(slot, pos)| self.wheel.get(slot, pos).t);
        let t = w.min(self.far_min.0);
        (self.len > 0).then(|| Instant::from_nanos(t))
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

/// log2 of a wheel slot's width in ns (512 ns; events are ~1.4 µs apart at 20 flows @
/// 1 Gbit/s).
const SLOT_SHIFT: u32 = 9;
/// Slots in the wheel: it spans 131 µs, which holds 97 % of the pushes at 20 flows @
/// 1 Gbit/s (a frame's serialisation, 0.5-12 µs, and the ends and arrivals behind it).
const SLOTS: usize = 256;
/// Entries a slot holds; a push to a full slot goes to the far heap (7 % of the pushes
/// at 20 flows @ 1 Gbit/s).
const SLOT_CAP: usize = 2;

/// One slot of the wheel in one cache line, its entries stored in place (a `Vec` per slot
/// put each slot's entries in an allocation of their own: +14 L1 misses per delivered
/// segment). How many it holds is in the wheel's bitmaps, so that a push only writes it.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Slot {
    e: [Entry; SLOT_CAP],
}

/// A timing wheel (Varghese and Lauck, 1987) over the `SLOTS` slots from the current one
/// (`cur`, the slot of the last time taken out): slot `s` lives at index `s % SLOTS`, so
/// the occupied slots in circular order from `cur` are in time order. An entry is stored
/// once and taken from where it is (no redistribution); the earliest is the one of least
/// `(time, sequence)` in the first occupied slot (usually alone there).
struct Wheel {
    /// Slot number (`time >> SLOT_SHIFT`) of the last time taken out.
    cur: u64,
    slots: Box<[Slot; SLOTS]>,
    /// Bit `i % 64` of word `i / 64` set: `slots[i]` holds at least one entry, ...
    occupied: [u64; SLOTS / 64],
    /// ... and two (`SLOT_CAP`).
    full: [u64; SLOTS / 64],
    /// Entries stored (an empty wheel, as with slow links, is passed over at once).
    len: usize,
}

const _: () = assert!(SLOT_CAP == 2, "the bitmaps count up to two entries per slot");

impl Default for Wheel {
    fn default() -> Self {
        let empty = Slot { e: [Entry { t: 0, seq: 0, ev: 0 }; SLOT_CAP] };
        Wheel { cur: 0, slots: Box::new([empty; SLOTS]), occupied: [0; SLOTS / 64], full: [0; SLOTS / 64], len: 0 }
    }
}

impl Wheel {
    /// Stores the entry if its slot lies within the wheel (not behind `cur`, fewer than
    /// `SLOTS` ahead) and has room; false otherwise.
    #[inline(always)]
    fn put(&mut self, t: u64, seq: u64, ev: u64) -> bool {
        let s = t >> SLOT_SHIFT;
        // behind `cur` wraps to a huge distance
        if s.wrapping_sub(self.cur) >= SLOTS as u64 {
            return false;
        }
        let i = s as usize % SLOTS;
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        if self.full[w] & bit != 0 {
            return false;
        }
        let has = self.occupied[w] & bit;
        self.slots[i].e[(has != 0) as usize] = Entry { t, seq, ev };
        self.full[w] |= has;
        self.occupied[w] |= bit;
        self.len += 1;
        true
    }

    /// The first occupied slot in circular order from `cur`, and the place of its
    /// earliest entry.
    #[inline(always)]
    fn first(&self) -> Option<(usize, usize)> {
        if self.len == 0 {
            return None;
        }
        let c = self.cur as usize % SLOTS;
        let (w, b) = (c / 64, c % 64);
        let here = self.occupied[w] >> b;
        let i = if here != 0 {
            c + here.trailing_zeros() as usize
        } else {
            self.first_beyond(w, b)?
        };
        let mut pos = 0;
        if self.full[i / 64] & (1 << (i % 64)) != 0 {
            let [x, y] = &self.slots[i].e;
            pos = ((y.t, y.seq) < (x.t, x.seq)) as usize;
        }
        Some((i, pos))
    }

    /// `first`'s search past word `w` of `occupied`, wrapping around to its bits below `b`.
    #[inline(never)]
    fn first_beyond(&self, w: usize, b: usize) -> Option<usize> {
        const WORDS: usize = SLOTS / 64;
        for k in 1..WORDS {
            let ww = (w + k) % WORDS;
            if self.occupied[ww] != 0 {
                return Some(ww * 64 + self.occupied[ww].trailing_zeros() as usize);
            }
        }
        let low = self.occupied[w] & ((1u64 << b) - 1);
        (low != 0).then(|| w * 64 + low.trailing_zeros() as usize)
    }

    /// Entry `pos` of slot `i`.
    #[inline(always)]
    fn get(&self, i: usize, pos: usize) -> Entry {
        self.slots[i].e[pos]
    }

    /// Removes entry `pos` of slot `i`.
    #[inline(always)]
    fn take(&mut self, i: usize, pos: usize) {
        self.len -= 1;
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        if self.full[w] & bit != 0 {
            // the other entry stays, first
            let slot = &mut self.slots[i];
            slot.e[0] = slot.e[1 - pos];
            self.full[w] &= !bit;
        } else {
            self.occupied[w] &= !bit;
        }
    }

    /// `t` was taken out (the earliest of all): the wheel starts at its slot. Never moves
    /// back (an entry scheduled behind `cur` went to `far`): every stored entry stays
    /// within `SLOTS` slots from `cur`.
    #[inline(always)]
    fn advance(&mut self, t: u64) {
        self.cur = self.cur.max(t >> SLOT_SHIFT);
    }
}

/// A radix heap (see the module documentation) of entries numbered by the caller.
struct RadixHeap {
    /// Every stored time is `>= last`.
    last: u64,
    /// Bucket 0: the entries due at `last`, in sequence order, taken from `head` on.
    front: Vec<Entry>,
    head: usize,
    /// `buckets[i]`: the entries whose time differs from `last` first in bit `i`.
    buckets: [Vec<Entry>; 64],
    /// Bit `i` set: `buckets[i]` is not empty.
    nonempty: u64,
}

impl Default for RadixHeap {
    fn default() -> Self {
        RadixHeap { last: 0, front: Vec::new(), head: 0, buckets: std::array::from_fn(|_| Vec::new()), nonempty: 0 }
    }
}

impl RadixHeap {
    /// Stores `e`, whose sequence number is larger than every stored one's.
    fn put_entry(&mut self, e: Entry) {
        if e.t < self.last {
            // Earlier than the entries last brought to the front: re-base.
            return self.rebase(e);
        }
        // due at `last`: it was scheduled after everything in the front, so it goes last
        self.put(e);
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
    fn rebase(&mut self, e: Entry) {
        let mut all: Vec<Entry> = self.front.drain(self.head..).collect();
        self.front.clear();
        self.head = 0;
        for b in &mut self.buckets {
            all.append(b);
        }
        all.push(e);
        all.sort_unstable_by_key(|e| (e.t, e.seq));
        self.last = all[0].t;
        self.nonempty = 0;
        for e in all {
            self.put(e);
        }
    }

    fn is_empty(&self) -> bool {
        self.head == self.front.len() && self.nonempty == 0
    }

    /// `(time, sequence)` of the earliest entry: the front's next, or the least of the
    /// lowest non-empty bucket (every time there is below those of higher buckets).
    fn min_key(&self) -> Option<(u64, u64)> {
        if self.head < self.front.len() {
            let e = &self.front[self.head];
            return Some((e.t, e.seq));
        }
        let b = &self.buckets[(self.nonempty != 0).then(|| self.nonempty.trailing_zeros() as usize)?];
        b.iter().map(|e| (e.t, e.seq)).min()
    }

    /// Removes the earliest entry; the heap is not empty. Takes the front's next entry;
    /// else the earliest if it is alone in the lowest non-empty bucket (no redistribution,
    /// no trip through the front), or else brings the earliest entries to the front.
    fn pop_entry(&mut self) -> Entry {
        if self.head < self.front.len() {
            self.head += 1;
            return self.front[self.head - 1];
        }
        self.front.clear();
        self.head = 0;
        let i = self.nonempty.trailing_zeros() as usize;
        if self.buckets[i].len() == 1 {
            // alone in its bucket: it is the earliest entry, and the only one of its time
            let e = self.buckets[i][0];
            self.buckets[i].clear();
            self.nonempty &= !(1 << i);
            self.last = e.t;
            return e;
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
        self.head = 1;
        self.front[0]
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

    /// An entry scheduled while its time lay beyond the wheel, and one scheduled later for
    /// the same time once the wheel reached it, leave in scheduling order; so does an entry
    /// scheduled behind the wheel's current slot.
    #[test]
    fn the_wheel_and_the_far_heap_keep_the_schedule_order() {
        let mut q = EventQueue::default();
        let far = Instant::from_nanos(1_000_000);
        q.push(far, Event::App(1)); // beyond the wheel's 262 µs: far heap
        q.push(Instant::from_nanos(900_000), Event::Sample); // far heap too
        assert_eq!(q.pop_until(Instant::MAX), Some((Instant::from_nanos(900_000), Event::Sample)));
        q.push(far, Event::App(2)); // now within the wheel
        q.push(Instant::from_nanos(950_000), Event::App(3));
        assert_eq!(q.peek_time(), Some(Instant::from_nanos(950_000)));
        assert_eq!(q.pop_until(Instant::MAX), Some((Instant::from_nanos(950_000), Event::App(3))));
        // behind the current slot (a driver that ran with an earlier horizon)
        q.push(Instant::from_nanos(10), Event::App(4));
        assert_eq!(q.pop_until(Instant::from_nanos(9)), None);
        let order: Vec<Event> = std::iter::from_fn(|| q.pop_until(Instant::MAX).map(|x| x.1)).collect();
        assert_eq!(order, vec![Event::App(4), Event::App(1), Event::App(2)]);
        assert!(q.is_empty());
        assert_eq!(q.peek_time(), None);
    }

    /// The queue pops exactly the order of a `(time, sequence)` binary heap on a
    /// simulation-like workload: monotone pushes at random offsets from "now" (in the
    /// wheel, at its edge, beyond it), many ties, full wheel slots.
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
                let dt = [0, 0, 1, 600, 3_000, 12_000, 130_000, 140_000, 500_000, 40_000_000][rng.below(10) as usize] + rng.below(2);
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
