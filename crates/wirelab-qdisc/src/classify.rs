//! Classifiers: `u32` (net/sched/cls_u32.c), `fw` (cls_fw.c) and the plug-in point.
//!
//! A classful qdisc ([`crate::htb::Htb`], [`crate::prio::Prio`]) asks its [`FilterChain`]
//! first, in order of filter `prio` (`pref`), and takes the first class id returned. A
//! custom rule is any type implementing [`Classifier`], installed with
//! [`crate::TcConfig::add_classifier`]:
//!
//! ```
//! use std::sync::Arc;
//! use wirelab_core::Pkt;
//! use wirelab_qdisc::{ClassId, Classifier, TcConfig};
//!
//! /// Sends every packet with a DSCP of EF (46) to class 1:10.
//! #[derive(Debug)]
//! struct Ef;
//! impl Classifier for Ef {
//!     fn classify(&self, pkt: &Pkt) -> Option<ClassId> {
//!         (pkt.data.get(1).map(|t| t >> 2) == Some(46)).then_some(ClassId::new(1, 0x10))
//!     }
//! }
//! let mut tc = TcConfig::new();
//! tc.add("qdisc add root handle 1: htb default 1").unwrap();
//! tc.add("class add parent 1: classid 1:1 htb rate 10mbit").unwrap();
//! tc.add("class add parent 1: classid 1:10 htb rate 1mbit").unwrap();
//! tc.add_classifier(ClassId::new(1, 0), 5, Arc::new(Ef));
//! let q = tc.build(1, "r1/eth0").unwrap();
//! assert_eq!(q.kind(), "htb");
//! ```
use crate::ClassId;
use core::fmt;
use std::sync::Arc;
use wirelab_core::Pkt;

/// A packet classifier (`struct tcf_proto_ops::classify`). Returns the class id
/// (`flowid`) for a match, `None` to let the next filter try.
pub trait Classifier: Send + Sync + fmt::Debug {
    /// Class for `pkt`, or `None` if this filter does not match.
    fn classify(&self, pkt: &Pkt) -> Option<ClassId>;
}

#[derive(Clone, Debug)]
struct Entry {
    prio: u32,
    seq: u32,
    f: Arc<dyn Classifier>,
}

/// The filters attached to one qdisc or class, sorted by `(prio, insertion order)`.
#[derive(Clone, Debug, Default)]
pub struct FilterChain {
    entries: Vec<Entry>,
    seq: u32,
}

impl FilterChain {
    /// Adds a filter at `prio` (lower runs first; equal prios run in insertion order, as
    /// the knodes of one u32 `tcf_proto`).
    pub fn insert(&mut self, prio: u32, f: Arc<dyn Classifier>) {
        self.seq += 1;
        self.entries.push(Entry { prio, seq: self.seq, f });
        self.entries.sort_by_key(|e| (e.prio, e.seq));
    }
    /// `tcf_auto_prio()`: the prio Linux gives a filter added without one — 0xC000 for the
    /// first, then one less than the current lowest, so later filters run first.
    pub fn auto_prio(&self) -> u32 {
        self.entries.first().map(|e| e.prio.saturating_sub(1)).unwrap_or(0xC000)
    }
    /// True if no filter is attached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    /// `tcf_classify()`: the first match in prio order.
    #[inline]
    pub fn classify(&self, pkt: &Pkt) -> Option<ClassId> {
        self.entries.iter().find_map(|e| e.f.classify(pkt))
    }
}

/// One `tc_u32_key`: `(word_at(off) ^ val) & mask == 0`, big-endian 32-bit word at a
/// 4-aligned offset from the IPv4 header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct U32Key {
    /// Expected value (host order, already shifted into place).
    pub val: u32,
    /// Mask.
    pub mask: u32,
    /// Offset of the word, a multiple of 4.
    pub off: u32,
}

/// A `u32` filter knode: all keys must match (AND); then the packet goes to `classid`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct U32 {
    /// Keys, all of which must match.
    pub keys: Vec<U32Key>,
    /// `flowid` / `classid`.
    pub classid: ClassId,
}

impl U32 {
    /// A filter sending matches to `classid`.
    pub fn new(classid: ClassId) -> Self {
        U32 { keys: Vec::new(), classid }
    }
    /// `match u8 V M at OFF` (any offset).
    pub fn match_u8(mut self, val: u8, mask: u8, off: u32) -> Self {
        let shift = 8 * (3 - (off & 3));
        self.keys.push(U32Key { val: ((val & mask) as u32) << shift, mask: (mask as u32) << shift, off: off & !3 });
        self
    }
    /// `match u16 V M at OFF` (`OFF` even, as tc's `pack_key16()` requires).
    pub fn match_u16(mut self, val: u16, mask: u16, off: u32) -> Self {
        let shift = if off & 2 == 0 { 16 } else { 0 };
        self.keys.push(U32Key { val: ((val & mask) as u32) << shift, mask: (mask as u32) << shift, off: off & !3 });
        self
    }
    /// `match u32 V M at OFF` (`OFF` a multiple of 4).
    pub fn match_u32(mut self, val: u32, mask: u32, off: u32) -> Self {
        self.keys.push(U32Key { val: val & mask, mask, off: off & !3 });
        self
    }
}

impl Classifier for U32 {
    /// `u32_classify()` for one knode without hash tables or `nexthdr` offsets: a key
    /// beyond the end of the packet makes the knode fail, as `skb_header_pointer()` does.
    fn classify(&self, pkt: &Pkt) -> Option<ClassId> {
        for k in &self.keys {
            let o = k.off as usize;
            let mut scratch = [0u8; 8];
            let w = pkt.get(o..o + 4, &mut scratch)?;
            let word = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
            if (word ^ k.val) & k.mask != 0 {
                return None;
            }
        }
        Some(self.classid)
    }
}

/// An `fw` filter: `(skb->mark & mask) == handle` selects `classid` (cls_fw.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fw {
    /// `handle` (the mark to match).
    pub handle: u32,
    /// `handle H/MASK` (default 0xffffffff).
    pub mask: u32,
    /// `flowid` / `classid`.
    pub classid: ClassId,
}

impl Classifier for Fw {
    fn classify(&self, pkt: &Pkt) -> Option<ClassId> {
        ((pkt.meta.mark & self.mask) == self.handle).then_some(self.classid)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn u32_u8_keys_and_truncation() {
        let f = U32::new(ClassId::new(1, 0x10)).match_u8(132, 0xff, 9).match_u8(0x96, 0xff, 32).match_u8(1, 0xff, 33);
        let mut d = vec![0u8; 40];
        d[9] = 132;
        d[32] = 0x96;
        d[33] = 1;
        assert_eq!(f.classify(&Pkt::new(d.clone())), Some(ClassId::new(1, 0x10)));
        d[33] = 2;
        assert_eq!(f.classify(&Pkt::new(d.clone())), None);
        assert_eq!(f.classify(&Pkt::new(vec![0u8; 33])), None);
        let g = U32::new(ClassId::new(1, 2)).match_u16(80, 0xffff, 22);
        let mut d = vec![0u8; 24];
        d[22..24].copy_from_slice(&80u16.to_be_bytes());
        assert!(g.classify(&Pkt::new(d)).is_some());
    }

    #[test]
    fn chain_order_and_auto_prio() {
        let mut c = FilterChain::default();
        assert_eq!(c.auto_prio(), 0xC000);
        c.insert(10, Arc::new(U32::new(ClassId::new(1, 2))));
        c.insert(1, Arc::new(U32::new(ClassId::new(1, 1))));
        assert_eq!(c.classify(&Pkt::new(vec![0; 20])), Some(ClassId::new(1, 1)));
        assert_eq!(c.auto_prio(), 0);
    }
}
