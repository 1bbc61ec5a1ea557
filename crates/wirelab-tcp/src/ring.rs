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
        self.head = (self.head + n) & (self.buf.len() - 1);
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
}
