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
/// only if `rest` is empty. `repr(C)`: the inline element first.
#[repr(C)]
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

/// A min-heap of `(deadline, connection)` whose two smallest entries are stored inline,
/// sorted: `peek` (every `poll_timeout`, i.e. after every input) reads no buffer, and
/// neither do the pushes and pops of a host with one connection, whose heap holds its
/// live entry and at most one postponed one (`TcpEndpoint::rekey`): under pacing that is
/// a pop and one or two pushes per segment. Larger heaps spill into a `BinaryHeap`.
/// Invariant: `small[1]` is set only if `small[0]` is, the heap is empty unless both
/// are, and every heap entry is ≥ `small[1]`. Same entries, same pop order as a bare
/// `BinaryHeap` (entries are totally ordered; equal entries are indistinguishable).
/// `repr(C)`: the inline entries first.
#[repr(C)]
pub(crate) struct TimerHeap<T: Ord + Copy> {
    small: [Option<T>; 2],
    heap: BinaryHeap<Reverse<T>>,
}

impl<T: Ord + Copy> Default for TimerHeap<T> {
    fn default() -> Self {
        TimerHeap { small: [None, None], heap: BinaryHeap::new() }
    }
}

impl<T: Ord + Copy> TimerHeap<T> {
    #[inline]
    pub fn peek(&self) -> Option<&T> {
        self.small[0].as_ref()
    }
    #[inline]
    pub fn push(&mut self, x: T) {
        match self.small {
            [None, _] => self.small[0] = Some(x),
            [Some(a), None] => self.small = if x < a { [Some(x), Some(a)] } else { [Some(a), Some(x)] },
            [Some(a), Some(b)] => {
                if x < b {
                    // b moves to the heap, x takes its place in order
                    self.heap.push(Reverse(b));
                    self.small = if x < a { [Some(x), Some(a)] } else { [Some(a), Some(x)] };
                } else {
                    self.heap.push(Reverse(x));
                }
            }
        }
    }
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        let x = self.small[0]?;
        self.small[0] = self.small[1];
        self.small[1] = if self.small[0].is_some() { self.heap.pop().map(|r| r.0) } else { None };
        Some(x)
    }
    /// Removes one entry equal to `x` if it is one of the two inline ones (true), else
    /// leaves everything as it is (false). The rest keep their pop order. (Not inlined:
    /// its caller, `TcpEndpoint::rekey`, runs several times per segment and mostly does
    /// not get here.)
    #[inline(never)]
    pub fn remove_inline(&mut self, x: T) -> bool {
        if self.small[0] == Some(x) {
            self.pop();
            true
        } else if self.small[1] == Some(x) {
            self.small[1] = self.heap.pop().map(|r| r.0);
            true
        } else {
            false
        }
    }
}

/// A vector whose first two elements are stored inline: the endpoint's socket slots, so
/// that a host with a listener and a connection (every host of a many-flow dumbbell)
/// reaches its connection without reading the vector's buffer. Same indices, same
/// iteration order as a `Vec`.
pub(crate) struct InlineVec<T> {
    head: [T; 2],
    len: usize,
    rest: Vec<T>,
}

impl<T: Default> Default for InlineVec<T> {
    fn default() -> Self {
        InlineVec { head: [T::default(), T::default()], len: 0, rest: Vec::new() }
    }
}

impl<T> InlineVec<T> {
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            None
        } else if i < 2 {
            Some(&self.head[i])
        } else {
            self.rest.get(i - 2)
        }
    }
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i >= self.len {
            None
        } else if i < 2 {
            Some(&mut self.head[i])
        } else {
            self.rest.get_mut(i - 2)
        }
    }
    pub fn push(&mut self, x: T) {
        if self.len < 2 {
            self.head[self.len] = x;
        } else {
            self.rest.push(x);
        }
        self.len += 1;
    }
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.head[..self.len.min(2)].iter().chain(self.rest.iter())
    }
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        self.head[..self.len.min(2)].iter_mut().chain(self.rest.iter_mut())
    }
}

impl<T> std::ops::Index<usize> for InlineVec<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        self.get(i).expect("InlineVec index out of range")
    }
}

impl<T> std::ops::IndexMut<usize> for InlineVec<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.get_mut(i).expect("InlineVec index out of range")
    }
}

/// A hash map with a one-entry cache of the last key found or inserted: a host's segments
/// come in runs for the same connection, and at one connection per host every lookup hits
/// without touching the table. Invariant: a cached `(k, v)` is in the map as `k → v`.
/// `repr(C)`: the cache before the table.
#[repr(C)]
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
    fn inline_vec_is_a_vec() {
        let mut v: InlineVec<u32> = InlineVec::default();
        let mut r = Vec::new();
        assert_eq!(v.get(0), None);
        for i in 0..7u32 {
            v.push(i * 10);
            r.push(i * 10);
            assert_eq!(v.len(), r.len());
            for k in 0..9 {
                assert_eq!(v.get(k), r.get(k));
            }
            assert!(v.iter().eq(r.iter()));
        }
        v[1] = 11;
        r[1] = 11;
        *v.get_mut(5).unwrap() += 1;
        r[5] += 1;
        for x in v.iter_mut() {
            *x += 1;
        }
        for x in r.iter_mut() {
            *x += 1;
        }
        assert!(v.iter().eq(r.iter()));
        assert_eq!(v.get_mut(7), None);
    }

    #[test]
    fn timer_heap_matches_binary_heap() {
        let mut h = TimerHeap::default();
        let mut b = BinaryHeap::new();
        let mut x = 12345u64;
        // pushes 3 in 4 (the heap grows and spills), then 1 in 2 (it stays small)
        for i in 0..4000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let pop = if i < 2000 { x >> 62 == 0 } else { x >> 63 == 0 || b.len() > 3 };
            if pop {
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
    fn timer_heap_removes_inline_entries_only() {
        let mut h = TimerHeap::default();
        let mut b = BinaryHeap::new();
        let mut x = 987654321u64;
        for i in 0..6000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = ((x >> 40) % 50, (x >> 20) as u32 % 4);
            match x >> 61 {
                0 | 1 => {
                    assert_eq!(h.pop(), b.pop().map(|Reverse(v)| v));
                }
                2 | 3 if i % 3 == 0 => {
                    // remove the smallest or second smallest entry, or one deeper (refused)
                    let mut all: Vec<_> = b.clone().into_sorted_vec().into_iter().rev().map(|Reverse(v)| v).collect();
                    all.dedup();
                    let k = (x >> 30) as usize % 3;
                    if let Some(&y) = all.get(k) {
                        let inline = b.iter().filter(|Reverse(e)| *e < y).count() < 2;
                        assert_eq!(h.remove_inline(y), inline, "{y:?}");
                        if inline {
                            let mut rest = b.into_vec();
                            let at = rest.iter().position(|Reverse(e)| *e == y).unwrap();
                            rest.swap_remove(at);
                            b = rest.into();
                        }
                    }
                }
                _ => {
                    h.push(v);
                    b.push(Reverse(v));
                }
            }
            assert_eq!(h.peek(), b.peek().map(|Reverse(v)| v));
        }
        let mut rest = Vec::new();
        while let Some(v) = h.pop() {
            rest.push(v);
        }
        assert_eq!(rest, b.into_sorted_vec().into_iter().rev().map(|Reverse(v)| v).collect::<Vec<_>>());
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
