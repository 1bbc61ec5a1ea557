//! The payload pattern applications write, and what makes its checksums cheap.
//!
//! Bulk, file-transfer, echo and request/response applications send slices of one fixed
//! pattern (`send_static`), so captures carry recognisable payload and stacks can pass the
//! bytes by reference ([`crate::Pkt::tail`]). Every segment built from it needs the
//! Internet checksum (RFC 1071) of a slice of it; [`pattern_sum`] gives that sum in O(1)
//! from a table of the pattern's period, instead of reading ~1.5 kB per segment.

/// Bytes applications write: byte `i` is `i % 251`.
pub static PATTERN: [u8; 65536] = {
    let mut p = [0u8; 65536];
    let mut i = 0;
    while i < p.len() {
        p[i] = (i % PERIOD) as u8;
        i += 1;
    }
    p
};

/// The pattern repeats every 251 bytes, and its 16-bit words every 2 × 251.
const PERIOD: usize = 251;
const WORDS: usize = 2 * PERIOD;

/// `PREFIX[i]`: the one's-complement sum, modulo 0xFFFF, of the pattern's bytes `0..i`
/// taken as big-endian 16-bit words from byte 0 (even bytes weigh 256, odd bytes 1).
static PREFIX: [u32; WORDS + 1] = {
    let mut t = [0u32; WORDS + 1];
    let mut i = 0;
    while i < WORDS {
        let w = if i % 2 == 0 { 256 } else { 1 };
        t[i + 1] = (t[i] + (i % PERIOD) as u32 * w) % 0xFFFF;
        i += 1;
    }
    t
};

/// The prefix sum up to any offset `i` of the endless pattern, modulo 0xFFFF.
#[inline]
fn prefix(i: usize) -> u32 {
    ((i / WORDS) as u64 * PREFIX[WORDS] as u64 % 0xFFFF) as u32 + PREFIX[i % WORDS]
}

/// If `data` lies inside [`PATTERN`], the one's-complement sum of its bytes as big-endian
/// 16-bit words from `data[0]`, folded to 16 bits exactly as `wirelab_wire::checksum::sum`
/// folds it (zero only for all-zero bytes, a multiple of 0xFFFF otherwise as 0xFFFF);
/// `None` for any other slice. O(1): a difference of two prefix sums (a sum that starts at
/// an odd offset has its bytes' weights swapped, which is a multiplication by 256, since
/// 256 × 256 ≡ 1 modulo 0xFFFF).
#[inline]
pub fn pattern_sum(data: &[u8]) -> Option<u32> {
    let base = PATTERN.as_ptr() as usize;
    let a = (data.as_ptr() as usize).checked_sub(base)?;
    if a + data.len() > PATTERN.len() {
        return None;
    }
    let b = a + data.len();
    let mut s = (prefix(b) + 2 * 0xFFFF - prefix(a)) % 0xFFFF;
    if a % 2 == 1 {
        s = s * 256 % 0xFFFF;
    }
    if s == 0 && data.iter().any(|&x| x != 0) {
        s = 0xFFFF;
    }
    Some(s)
}

/// The same bytes as `data` at the lowest place in [`PATTERN`] that holds them, if `data`
/// lies inside it; `data` itself otherwise. The pattern repeats every 251 bytes, so a slice
/// at offset `a` equals the slice of the same length at `a % 251`. Readers of by-reference
/// tails (the fingerprint hash, captures, a receiving stack) then read from the pattern's
/// first ~1.8 kB, which stay in L1, instead of from anywhere in its 64 kB (more than L1
/// holds: each segment's tail was ~23 cold lines, read twice).
#[inline]
pub fn canonical(data: &'static [u8]) -> &'static [u8] {
    let base = PATTERN.as_ptr() as usize;
    match (data.as_ptr() as usize).checked_sub(base) {
        Some(a) if a + data.len() <= PATTERN.len() => {
            let c = a % PERIOD;
            &PATTERN[c..c + data.len()]
        }
        _ => data,
    }
}

/// Joins a short head (a segment's headers) and a tail that lies in [`PATTERN`] into one
/// contiguous slice without copying the tail: the head is written just in front of the
/// same bytes in a private copy of the pattern, and put back on the next call. A receiving
/// stack that wants the whole segment in one piece then costs a header-sized copy instead
/// of a payload-sized one.
#[derive(Default)]
pub struct Joiner {
    /// `ROOM` bytes, then the pattern (allocated on first use).
    buf: Vec<u8>,
    /// Bytes of the pattern part that the last head overwrote.
    dirty: core::ops::Range<usize>,
}

impl Joiner {
    /// Longest head that fits in front of any tail.
    pub const ROOM: usize = 512;

    /// `head ++ tail`, or `None` if `tail` is not a slice of [`PATTERN`] or `head` is
    /// longer than [`Self::ROOM`].
    pub fn join<'a>(&'a mut self, head: &[u8], tail: &[u8]) -> Option<&'a [u8]> {
        let a = (tail.as_ptr() as usize).checked_sub(PATTERN.as_ptr() as usize)?;
        if a + tail.len() > PATTERN.len() || head.len() > Self::ROOM {
            return None;
        }
        if self.buf.is_empty() {
            self.buf = vec![0; Self::ROOM];
            self.buf.extend_from_slice(&PATTERN);
        }
        let r = core::mem::take(&mut self.dirty);
        if !r.is_empty() {
            self.buf[r.clone()].copy_from_slice(&PATTERN[r.start - Self::ROOM..r.end - Self::ROOM]);
        }
        let at = Self::ROOM + a;
        let from = at - head.len();
        self.buf[from..at].copy_from_slice(head);
        self.dirty = from.max(Self::ROOM)..at.max(Self::ROOM);
        Some(&self.buf[from..at + tail.len()])
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The straightforward sum (`wirelab_wire::checksum::sum`'s definition).
    fn slow(data: &[u8]) -> u32 {
        let mut acc: u64 = 0;
        for (i, &b) in data.iter().enumerate() {
            acc += if i % 2 == 0 { (b as u64) << 8 } else { b as u64 };
        }
        while acc >> 16 != 0 {
            acc = (acc >> 16) + (acc & 0xffff);
        }
        acc as u32
    }

    #[test]
    fn pattern_sums_equal_the_plain_sum() {
        let mut rng = crate::Rng::stream(3, "pattern-test");
        let mut cases: Vec<(usize, usize)> = vec![(0, 0), (0, 1), (251, 1), (250, 2), (0, 65536), (1, 65535), (65535, 1), (65536, 0)];
        for _ in 0..5000 {
            let a = rng.below(65537) as usize;
            let n = rng.below((65536 - a) as u64 + 1) as usize;
            cases.push((a, n.min(if rng.below(2) == 0 { 1500 } else { 65536 })));
        }
        for (a, n) in cases {
            let d = &PATTERN[a..a + n];
            assert_eq!(pattern_sum(d), Some(slow(d)), "offset {a} len {n}");
        }
        // not the pattern: no answer
        assert_eq!(pattern_sum(&[1, 2, 3]), None);
        let copy = PATTERN[..4].to_vec();
        assert_eq!(pattern_sum(&copy), None);
    }

    #[test]
    fn canonical_slices_hold_the_same_bytes_low_in_the_pattern() {
        let mut rng = crate::Rng::stream(4, "canonical-test");
        for _ in 0..5000 {
            let a = rng.below(65537) as usize;
            let n = rng.below((65536 - a) as u64 + 1) as usize;
            let d: &'static [u8] = &PATTERN[a..a + n];
            let c = canonical(d);
            assert_eq!(c, d, "offset {a} len {n}");
            let off = c.as_ptr() as usize - PATTERN.as_ptr() as usize;
            assert!(off < PERIOD, "offset {a} -> {off}");
            assert_eq!(pattern_sum(c), pattern_sum(d));
        }
        // not the pattern: unchanged
        static OTHER: [u8; 3] = [1, 2, 3];
        assert_eq!(canonical(&OTHER).as_ptr(), OTHER.as_ptr());
    }

    #[test]
    fn joined_slices_are_head_then_tail_every_time() {
        let mut j = Joiner::default();
        let mut rng = crate::Rng::stream(5, "joiner-test");
        for i in 0..3000 {
            let a = rng.below(65537) as usize;
            let n = rng.below((65536 - a) as u64 + 1) as usize;
            let tail: &'static [u8] = &PATTERN[a..a + n];
            let head: Vec<u8> = (0..rng.below(Joiner::ROOM as u64 + 1)).map(|k| (k as u8) ^ (i as u8)).collect();
            let want: Vec<u8> = head.iter().chain(tail).copied().collect();
            assert_eq!(j.join(&head, tail).map(|s| s.to_vec()), Some(want), "offset {a} len {n}");
        }
        // the pattern part is intact after the last head
        let _ = j.join(&[], &PATTERN[..0]);
        assert_eq!(&j.buf[Joiner::ROOM..], &PATTERN[..]);
        assert_eq!(j.join(&[0; Joiner::ROOM + 1], &PATTERN[..4]), None);
        assert_eq!(j.join(&[1], &[2, 3]), None);
    }
}
