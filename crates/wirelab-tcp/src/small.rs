//! The endpoint's per-segment containers, shaped so that a host with one or two
//! connections (every host of a many-flow dumbbell) touches no heap buffer per segment.
//!
//! Why: at 2 000 flows a flow's lines are out of L2 by the time its next segment comes, and
//! each separate allocation a segment touches costs a cache miss (docs/performance.md,
//! "Where the growth with N still comes from"). The demux table, the timer heap and the
//! `ready`/`events` queues were four such allocations per host. Here the common case lives
//! in the endpoint struct itself; the general case falls back to the same std containers,
//! with identical results (each type is a pure cache in front of them).
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::{BuildHasher, Hash};

/// A FIFO queue whose front element is stored inline: with at most one element queued
/// (a host with one busy connection) no buffer is touched. Invariant: `first` is `None`
/// only if `rest` is empty.
pub(crate) struct InlineQueue<T> {
    first: Option<T>,
    rest: VecDeque<T>,
}

impl<T> Default for InlineQueue<T> {
    fn default() -> Self {
        InlineQueue { first: None, rest: VecDeque::new() }
    }
}

impl<T> InlineQueue<T> {
    #[inline]
    pub fn push_back(&mut self, x: T) {
        if self.first.is_none() {
            self.first = Some(x);
        } else {
            self.rest.push_back(x);
        }
    }
    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        let x = self.first.take()?;
        self.first = self.rest.pop_front();
        Some(x)
    }
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }
}

/// A min-heap of `(deadline, connection)` that keeps a copy of its top inline, so that
/// `peek` (every `poll_timeout`, i.e. after every input) reads no buffer; pushes and pops
/// (about one per timer period, see `TcpEndpoint::rekey`) go to the `BinaryHeap`.
/// Same entries, same order as the bare `BinaryHeap` (entries are totally ordered).
#[derive(Default)]
pub(crate) struct TimerHeap<T: Ord + Copy> {
    top: Option<T>,
    heap: BinaryHeap<Reverse<T>>,
}

impl<T: Ord + Copy> TimerHeap<T> {
    #[inline]
    pub fn peek(&self) -> Option<&T> {
        self.top.as_ref()
    }
    #[inline]
    pub fn push(&mut self, x: T) {
        if self.top.is_none_or(|t| x < t) {
            self.top = Some(x);
        }
        self.heap.push(Reverse(x));
    }
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        let x = self.heap.pop()?.0;
        self.top = self.heap.peek().map(|r| r.0);
        Some(x)
    }
}

/// A hash map with a one-entry cache of the last key found or inserted: a host's segments
/// come in runs for the same connection, and at one connection per host every lookup hits
/// without touching the table. Invariant: a cached `(k, v)` is in the map as `k → v`.
pub(crate) struct CachedMap<K, V, S> {
    last: Option<(K, V)>,
    map: HashMap<K, V, S>,
}

impl<K, V, S: Default> Default for CachedMap<K, V, S> {
    fn default() -> Self {
        CachedMap { last: None, map: HashMap::default() }
    }
}

impl<K: Hash + Eq + Copy, V: Copy + PartialEq, S: BuildHasher> CachedMap<K, V, S> {
    #[inline]
    pub fn get(&mut self, k: &K) -> Option<V> {
        if let Some((lk, lv)) = self.last {
            if lk == *k {
                return Some(lv);
            }
        }
        let v = *self.map.get(k)?;
        self.last = Some((*k, v));
        Some(v)
    }
    pub fn contains_key(&self, k: &K) -> bool {
        self.last.is_some_and(|(lk, _)| lk == *k) || self.map.contains_key(k)
    }
    pub fn insert(&mut self, k: K, v: V) {
        self.map.insert(k, v);
        self.last = Some((k, v));
    }
    /// Removes `k` if it maps to `v`.
    pub fn remove_if(&mut self, k: &K, v: V) {
        if self.get(k) == Some(v) {
            self.map.remove(k);
            self.last = None;
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn inline_queue_is_fifo_across_the_spill() {
        let mut q = InlineQueue::default();
        let mut r = VecDeque::new();
        // mixed pushes and pops, compared with VecDeque
        for i in 0..200u32 {
            if i % 3 == 2 || i % 7 == 0 {
                assert_eq!(q.pop_front(), r.pop_front());
            } else {
                q.push_back(i);
                r.push_back(i);
            }
            assert_eq!(q.is_empty(), r.is_empty());
        }
        while let Some(x) = r.pop_front() {
            assert_eq!(q.pop_front(), Some(x));
        }
        assert_eq!(q.pop_front(), None);
    }

    #[test]
    fn timer_heap_matches_binary_heap() {
        let mut h = TimerHeap::default();
        let mut b = BinaryHeap::new();
        let mut x = 12345u64;
        for _ in 0..2000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if x >> 62 == 0 {
                assert_eq!(h.pop(), b.pop().map(|Reverse(v)| v));
            } else {
                let v = ((x >> 40) % 50, (x >> 20) as u32 % 4);
                h.push(v);
                b.push(Reverse(v));
            }
            assert_eq!(h.peek(), b.peek().map(|Reverse(v)| v));
        }
    }

    #[test]
    fn cached_map_forgets_removed_keys() {
        let mut m: CachedMap<u32, u32, std::hash::RandomState> = CachedMap::default();
        m.insert(1, 10);
        m.insert(2, 20);
        assert_eq!(m.get(&1), Some(10));
        assert_eq!(m.get(&2), Some(20));
        m.remove_if(&2, 21); // another value: kept
        assert_eq!(m.get(&2), Some(20));
        m.remove_if(&2, 20);
        assert_eq!(m.get(&2), None);
        assert!(!m.contains_key(&2));
        assert!(m.contains_key(&1));
        m.insert(2, 22);
        assert_eq!(m.get(&2), Some(22));
        m.insert(2, 23); // replaced while cached
        assert_eq!(m.get(&2), Some(23));
        assert_eq!(m.get(&1), Some(10));
    }
}
