//! A byte ring that grows lazily (power-of-two capacity) and never shrinks while in use.
//!
//! Used for the send queue (bytes from `snd_una`) and the receive queue (unread in-order
//! bytes followed by the out-of-order region). An idle connection holds no storage.

/// A growable ring buffer of bytes.
#[derive(Clone, Debug, Default)]
pub struct Ring {
    buf: Vec<u8>,
    head: usize,
    len: usize,
}

impl Ring {
    /// Bytes stored (including any out-of-order tail written with `write_at`).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    /// True if empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Allocated bytes.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    fn grow_to(&mut self, need: usize) {
        if need <= self.buf.len() {
            return;
        }
        let cap = need.next_power_of_two().max(4096);
        let mut nb = vec![0u8; cap];
        let old = self.buf.len();
        if old > 0 {
            let first = (old - self.head).min(self.len);
            nb[..first].copy_from_slice(&self.buf[self.head..self.head + first]);
            nb[first..self.len].copy_from_slice(&self.buf[..self.len - first]);
        }
        self.buf = nb;
        self.head = 0;
    }

    /// Writes `data` at byte offset `off` from the head, growing the ring (and `len`) if
    /// needed. Gaps are left with stale bytes; callers track which ranges are valid.
    pub fn write_at(&mut self, off: usize, data: &[u8]) {
        let end = off + data.len();
        self.grow_to(end);
        let cap = self.buf.len();
        let mut pos = (self.head + off) & (cap - 1);
        let mut src = data;
        while !src.is_empty() {
            let n = (cap - pos).min(src.len());
            self.buf[pos..pos + n].copy_from_slice(&src[..n]);
            src = &src[n..];
            pos = (pos + n) & (cap - 1);
        }
        self.len = self.len.max(end);
    }

    /// Like [`Ring::write_at`] for `n` bytes whose contents nobody will read: the length
    /// grows, the storage neither grows nor is written (a receive queue whose reader only
    /// discards, see `Conn::discard_payload`). Bytes read back from such a range are stale.
    pub fn write_at_unread(&mut self, off: usize, n: usize) {
        self.len = self.len.max(off + n);
    }

    /// Appends at the end.
    pub fn push(&mut self, data: &[u8]) {
        let l = self.len;
        self.write_at(l, data);
    }

    /// Appends `len` bytes starting at offset `off` to `out`.
    pub fn copy_out(&self, off: usize, len: usize, out: &mut Vec<u8>) {
        debug_assert!(off + len <= self.len);
        if len == 0 {
            return;
        }
        let cap = self.buf.len();
        let pos = (self.head + off) & (cap - 1);
        let first = (cap - pos).min(len);
        out.extend_from_slice(&self.buf[pos..pos + first]);
        out.extend_from_slice(&self.buf[..len - first]);
    }

    /// Copies up to `out.len()` bytes from the head into `out` without consuming them.
    pub fn peek(&self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.len);
        if n == 0 {
            return 0;
        }
        if n > self.buf.len() {
            // `write_at_unread` lengths beyond the storage have no contents
            out[..n].fill(0);
            return n;
        }
        let cap = self.buf.len();
        let first = (cap - self.head).min(n);
        out[..first].copy_from_slice(&self.buf[self.head..self.head + first]);
        out[first..n].copy_from_slice(&self.buf[..n - first]);
        n
    }

    /// Drops `n` bytes from the head.
    pub fn discard(&mut self, n: usize) {
        let n = n.min(self.len);
        if n == 0 {
            return;
        }
        // `write_at_unread` lengths may exceed the (possibly empty) storage
        self.head = (self.head + n) & self.buf.len().saturating_sub(1);
        self.len -= n;
        if self.len == 0 {
            self.head = 0;
        }
    }

    /// Frees the storage if empty (used when a connection goes idle or closes).
    #[allow(dead_code)]
    pub fn release_if_empty(&mut self) {
        if self.len == 0 {
            self.buf = Vec::new();
            self.head = 0;
        }
    }
}

/// Where a run of the send queue's bytes lives.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// In the byte ring; `lit` is the run's first byte counted over all literal bytes ever
    /// pushed.
    Literal { lit: u64 },
    /// A `'static` slice the application passed with `send_static`: never copied into the
    /// ring, read straight from the source when a segment is built.
    Static(&'static [u8]),
}

#[derive(Clone, Copy, Debug)]
struct Run {
    /// First byte's offset in the stream (counted over everything ever pushed).
    start: u64,
    len: usize,
    src: Src,
}

/// The send queue: the bytes from `snd_una` on, as runs that are either copied into a byte
/// ring (`write()` of ordinary data) or referenced (`send_static` of a `'static` slice, such
/// as the bulk applications' fixed pattern). Referencing saves the copy into the ring, the
/// ring's memory (and its page faults as it grows with the send buffer), and the cache
/// misses of reading cold ring bytes when a segment is built: the pattern stays in cache.
/// Segments carry the same bytes either way.
#[derive(Clone, Debug, Default)]
pub struct SendRing {
    bytes: Ring,
    runs: std::collections::VecDeque<Run>,
    /// Stream offset of the first queued byte.
    head: u64,
    len: usize,
    /// Literal-byte offset of `bytes`' head.
    lit_head: u64,
}

impl SendRing {
    /// Bytes queued.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    /// True if empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Allocated bytes (ring and run list).
    pub fn capacity(&self) -> usize {
        self.bytes.capacity() + self.runs.capacity() * core::mem::size_of::<Run>()
    }

    fn tail(&self) -> u64 {
        self.head + self.len as u64
    }

    /// Appends a copy of `data`.
    pub fn push(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let lit = self.lit_head + self.bytes.len() as u64;
        self.bytes.push(data);
        match self.runs.back_mut() {
            Some(r) if matches!(r.src, Src::Literal { .. }) => r.len += data.len(),
            _ => self.runs.push_back(Run { start: self.tail(), len: data.len(), src: Src::Literal { lit } }),
        }
        self.len += data.len();
    }

    /// Appends `data` by reference.
    pub fn push_static(&mut self, data: &'static [u8]) {
        if data.is_empty() {
            return;
        }
        self.runs.push_back(Run { start: self.tail(), len: data.len(), src: Src::Static(data) });
        self.len += data.len();
    }

    /// Appends `len` bytes starting at offset `off` (from the head) to `out`.
    pub fn copy_out(&self, off: usize, len: usize, out: &mut Vec<u8>) {
        debug_assert!(off + len <= self.len);
        let mut pos = self.head + off as u64;
        let end = pos + len as u64;
        // the run holding `pos`: the last one starting at or before it
        let mut i = self.runs.partition_point(|r| r.start <= pos).saturating_sub(1);
        while pos < end {
            let r = self.runs[i];
            let a = (pos - r.start) as usize;
            let n = (r.len - a).min((end - pos) as usize);
            match r.src {
                Src::Literal { lit } => self.bytes.copy_out((lit + a as u64 - self.lit_head) as usize, n, out),
                Src::Static(s) => out.extend_from_slice(&s[a..a + n]),
            }
            pos += n as u64;
            i += 1;
        }
    }

    /// [`Self::copy_out`], except that when the range ends inside a run passed by reference,
    /// that run's part is returned instead of copied (the segment's tail).
    pub fn copy_out_lazy(&self, off: usize, len: usize, out: &mut Vec<u8>) -> &'static [u8] {
        let end = self.head + (off + len) as u64;
        let i = self.runs.partition_point(|r| r.start < end).saturating_sub(1);
        match self.runs.get(i) {
            Some(&Run { start, src: Src::Static(s), .. }) => {
                let from = start.max(self.head + off as u64);
                let t = &s[(from - start) as usize..(end - start) as usize];
                self.copy_out(off, len - t.len(), out);
                t
            }
            _ => {
                self.copy_out(off, len, out);
                &[]
            }
        }
    }

    /// Drops `n` bytes from the head.
    pub fn discard(&mut self, n: usize) {
        let n = n.min(self.len);
        let new_head = self.head + n as u64;
        while let Some(r) = self.runs.front() {
            let r_end = r.start + r.len as u64;
            if let Src::Literal { .. } = r.src {
                let from = self.head.max(r.start);
                let to = new_head.min(r_end);
                if to > from {
                    self.bytes.discard((to - from) as usize);
                    self.lit_head += to - from;
                }
            }
            if r_end <= new_head {
                self.runs.pop_front();
            } else {
                break;
            }
        }
        self.head = new_head;
        self.len -= n;
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn wraps_and_grows() {
        let mut r = Ring::default();
        let data: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        r.push(&data);
        r.discard(2500);
        r.push(&data); // wraps in a 4096 ring
        assert_eq!(r.len(), 3500);
        assert_eq!(r.capacity(), 4096);
        let mut out = Vec::new();
        r.copy_out(0, 500, &mut out);
        assert_eq!(&out[..], &data[2500..]);
        r.push(&data); // grows, linearising
        assert_eq!(r.capacity(), 8192);
        let mut out = Vec::new();
        r.copy_out(500, 3000, &mut out);
        assert_eq!(out, data);
        let mut p = [0u8; 10];
        assert_eq!(r.peek(&mut p), 10);
        assert_eq!(&p, &data[2500..2510]);
    }

    #[test]
    fn write_at_out_of_order() {
        let mut r = Ring::default();
        r.write_at(100, b"world");
        assert_eq!(r.len(), 105);
        r.write_at(95, b"hello");
        let mut out = Vec::new();
        r.copy_out(95, 10, &mut out);
        assert_eq!(&out, b"helloworld");
        r.discard(105);
        r.release_if_empty();
        assert_eq!(r.capacity(), 0);
    }

    /// Unread lengths need no storage and mix with stored bytes: discarding wraps
    /// nothing out of bounds, reading them gives zeros.
    #[test]
    fn write_at_unread_counts_without_storage() {
        let mut r = Ring::default();
        r.write_at_unread(3000, 1448);
        assert_eq!((r.len(), r.capacity()), (4448, 0));
        r.discard(4000);
        assert_eq!(r.len(), 448);
        let mut p = [1u8; 448];
        assert_eq!(r.peek(&mut p), 448);
        assert!(p.iter().all(|&b| b == 0));
        r.discard(448);
        assert!(r.is_empty());
        // after stored bytes, too
        r.push(b"abc");
        r.write_at_unread(3, 10_000);
        assert_eq!((r.len(), r.capacity()), (10_003, 4096));
        r.discard(10_003);
        assert!(r.is_empty());
    }

    /// A queue of copied and referenced runs hands out the same bytes as one flat copy,
    /// for any segment boundaries and discards.
    #[test]
    fn send_ring_mixes_copied_and_static_runs() {
        static P: [u8; 300] = {
            let mut p = [0u8; 300];
            let mut i = 0;
            while i < 300 {
                p[i] = (i % 251) as u8;
                i += 1;
            }
            p
        };
        let lit: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut q = SendRing::default();
        let mut flat: Vec<u8> = Vec::new();
        let mut rng = wirelab_core::Rng::stream(1, "ring-test");
        let mut head = 0usize;
        for round in 0..400 {
            // push a few runs of either kind
            for _ in 0..rng.below(3) {
                let n = rng.below(300) as usize;
                if rng.below(2) == 0 {
                    q.push_static(&P[..n]);
                    flat.extend_from_slice(&P[..n]);
                } else {
                    let n = n.min(lit.len());
                    q.push(&lit[..n]);
                    flat.extend_from_slice(&lit[..n]);
                }
            }
            assert_eq!(q.len(), flat.len() - head, "round {round}");
            // read a random segment
            if !q.is_empty() {
                let off = rng.below(q.len() as u64) as usize;
                let len = rng.below((q.len() - off) as u64 + 1) as usize;
                let mut out = vec![9u8; 3];
                q.copy_out(off, len, &mut out);
                assert_eq!(&out[3..], &flat[head + off..head + off + len], "round {round}");
                // the same range with its static end by reference
                let mut out = vec![9u8; 3];
                let tail = q.copy_out_lazy(off, len, &mut out);
                out.extend_from_slice(tail);
                assert_eq!(&out[3..], &flat[head + off..head + off + len], "round {round} (lazy)");
            }
            // acknowledge some
            let d = rng.below(q.len() as u64 / 2 + 1) as usize;
            q.discard(d);
            head += d;
        }
    }
}
