//! The event queue: a binary heap ordered by `(time, sequence)`.
//!
//! The sequence number is the order of scheduling, so simultaneous events run in the order
//! they were scheduled, identically on every run and machine. Entries are small and `Copy`;
//! packets never travel through the heap (links hold their own in-flight packets).
use std::cmp::Reverse;
use std::collections::BinaryHeap;
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

/// Min-heap of events.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(Instant, u64, Event)>>,
    seq: u64,
}

impl EventQueue {
    /// Schedules `ev` at `t`.
    #[inline]
    pub fn push(&mut self, t: Instant, ev: Event) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }
    /// Removes the earliest event if it is due at or before `until`.
    #[inline]
    pub fn pop_until(&mut self, until: Instant) -> Option<(Instant, Event)> {
        match self.heap.peek() {
            Some(Reverse((t, _, _))) if *t <= until => {
                let Reverse((t, _, e)) = self.heap.pop().unwrap();
                Some((t, e))
            }
            _ => None,
        }
    }
    /// Time of the earliest entry.
    #[inline]
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }
    /// Entries in the heap (including stale ones).
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
    }
}
