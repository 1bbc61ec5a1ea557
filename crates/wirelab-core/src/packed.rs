//! Packets packed for queues: a [`Pkt`] is 96 bytes, two cache lines where it sits in a
//! ring; the queues a packet crosses (link directions, FIFO qdiscs) hold thousands of them
//! and are written and read cold when thousands of flows share the machine's caches. A
//! [`PackedPkt`] holds the bytes and the metadata that travels with the packet in 48 bytes,
//! so that a queue entry with its own fields is one 64-byte line.
//!
//! The per-hop fields ([`HopMeta`]: the sending socket's `sk`, `txtime`, `pacing_rate`,
//! `tsq`, and the current queue's `enqueued`, `iface`) are what a queue on the sending host
//! may need back; a queue keeps them only when they differ from a forwarded packet's
//! (see [`PktQueue`]), and a link drops them.
use crate::pattern::PATTERN;
use crate::time::Instant;
use crate::{Pkt, PktMeta};
use std::collections::VecDeque;

/// A packet's bytes and end-to-end metadata (`id`, `mark`, `priority`, `l2_len`,
/// `corrupted`) in 48 bytes. A by-reference tail is kept as its place in [`PATTERN`]; a
/// tail that lies elsewhere (no wirelab stack makes one) is copied into `data` on packing.
#[derive(Debug)]
#[repr(C)]
pub struct PackedPkt {
    data: Vec<u8>,
    id: u64,
    mark: u32,
    priority: u32,
    tail_off: u16,
    tail_len: u16,
    l2_len: u16,
    corrupted: bool,
    /// The per-hop fields differ from [`HopMeta::FORWARDED`]'s (a [`PktQueue`] then keeps
    /// them aside).
    own_hop: bool,
}

/// The per-hop metadata of a [`Pkt`]: everything [`PackedPkt`] leaves out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HopMeta {
    /// [`PktMeta::enqueued`].
    pub enqueued: Instant,
    /// [`PktMeta::iface`].
    pub iface: u32,
    /// [`PktMeta::tsq`].
    pub tsq: u8,
    /// [`PktMeta::sk`].
    pub sk: u64,
    /// [`PktMeta::txtime`].
    pub txtime: Instant,
    /// [`PktMeta::pacing_rate`].
    pub pacing_rate: u64,
}

impl HopMeta {
    /// What a packet carries after a link: no socket, no departure time, no pacing rate,
    /// no TSQ charge, not in any queue (the defaults of [`PktMeta`]).
    pub const FORWARDED: HopMeta = HopMeta { enqueued: Instant::ZERO, iface: 0, tsq: 0, sk: 0, txtime: Instant::ZERO, pacing_rate: PktMeta::NO_PACING };
}

/// The socket part of a packet's metadata equals a forwarded packet's (one test, not four).
#[inline(always)]
fn no_socket(tsq: u8, sk: u64, txtime: Instant, pacing_rate: u64) -> bool {
    (tsq as u64 | sk | txtime.as_nanos() | !pacing_rate) == 0
}

impl PackedPkt {
    /// Packs `pkt`; returns its per-hop fields alongside.
    #[inline]
    pub fn pack(pkt: Pkt) -> (PackedPkt, HopMeta) {
        let m = &pkt.meta;
        let hop = HopMeta { enqueued: m.enqueued, iface: m.iface, tsq: m.tsq, sk: m.sk, txtime: m.txtime, pacing_rate: m.pacing_rate };
        let own_hop = !no_socket(m.tsq, m.sk, m.txtime, m.pacing_rate);
        (PackedPkt::pack_with(pkt, own_hop), hop)
    }

    /// Packs `pkt` without its per-hop fields, for a queue that hands it out as a forwarded
    /// packet ([`HopMeta::FORWARDED`], e.g. a link): no per-hop field is read.
    #[inline]
    pub fn pack_forwarded(pkt: Pkt) -> PackedPkt {
        PackedPkt::pack_with(pkt, false)
    }

    /// The fields moved one by one: no `PktMeta` copied whole, the tail's place found with
    /// one test for the simulator's tails (see [`Pkt::pattern_tail`]). The packet is taken
    /// apart first and never referred to as a whole: a reference to it (the cold path's
    /// `materialize`) made the compiler copy it to the stack in pieces of odd sizes and read
    /// the tail back across two of them, a store-forwarding stall at every transmission.
    #[inline(always)]
    fn pack_with(pkt: Pkt, own_hop: bool) -> PackedPkt {
        let Pkt { data, tail, meta } = pkt;
        let (data, tail_off, tail_len) = match crate::pkt::pattern_place(tail) {
            Some((o, l)) => (data, o, l),
            None => (materialized(data, tail), 0, 0),
        };
        PackedPkt {
            data,
            id: meta.id,
            mark: meta.mark,
            priority: meta.priority,
            tail_off,
            tail_len,
            l2_len: meta.l2_len,
            corrupted: meta.corrupted,
            own_hop,
        }
    }

    /// The packet again, with per-hop fields `hop`.
    #[inline]
    pub fn unpack(self, hop: HopMeta) -> Pkt {
        let o = self.tail_off as usize;
        Pkt {
            data: self.data,
            tail: &PATTERN[o..o + self.tail_len as usize],
            meta: PktMeta {
                id: self.id,
                enqueued: hop.enqueued,
                l2_len: self.l2_len,
                mark: self.mark,
                priority: self.priority,
                iface: hop.iface,
                corrupted: self.corrupted,
                tsq: hop.tsq,
                sk: hop.sk,
                txtime: hop.txtime,
                pacing_rate: hop.pacing_rate,
            },
        }
    }

    /// [`Pkt::len`] of the packed packet.
    #[inline]
    pub fn len(&self) -> usize {
        self.data.len() + self.tail_len as usize + self.l2_len as usize
    }

    /// [`Pkt::is_empty`] of the packed packet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.tail_len == 0
    }

    /// The datagram's bytes before its by-reference tail (at least the IPv4 header for
    /// every packet a wirelab stack makes).
    #[inline]
    pub fn head(&self) -> &[u8] {
        &self.data
    }
}

/// A tail outside the pattern (no wirelab stack makes one) is copied into the bytes
/// ([`Pkt::materialize`]).
#[cold]
#[inline(never)]
fn materialized(mut data: Vec<u8>, tail: &'static [u8]) -> Vec<u8> {
    data.extend_from_slice(tail);
    data
}

/// One queue entry: a packed packet and the fields every queued packet has.
#[repr(C, align(64))]
struct Entry {
    p: PackedPkt,
    enqueued: Instant,
    iface: u32,
}

/// The socket part of [`HopMeta`], for the packets of a [`PktQueue`] that have one.
#[derive(Clone, Copy, Debug)]
struct Sock {
    tsq: u8,
    sk: u64,
    txtime: Instant,
    pacing_rate: u64,
}

/// A FIFO of packets in one 64-byte line each (a `VecDeque<Pkt>` entry is 96 bytes, two
/// lines). The packets a local socket sent keep their socket fields in a second FIFO, in
/// the same order; a router's queues never touch it. An emptied queue restarts at its
/// first (warm) slot. Packets come out exactly as they went in.
#[derive(Default)]
pub struct PktQueue {
    q: VecDeque<Entry>,
    socks: VecDeque<Sock>,
}

impl core::fmt::Debug for PktQueue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "PktQueue {{ len: {} }}", self.q.len())
    }
}

impl PktQueue {
    /// An empty queue.
    pub fn new() -> Self {
        PktQueue::default()
    }

    /// Packets queued.
    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }

    /// No packet queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Appends `pkt`.
    #[inline]
    pub fn push_back(&mut self, pkt: Pkt) {
        let m = &pkt.meta;
        let (enqueued, iface) = (m.enqueued, m.iface);
        let own_hop = !no_socket(m.tsq, m.sk, m.txtime, m.pacing_rate);
        if own_hop {
            self.socks.push_back(Sock { tsq: m.tsq, sk: m.sk, txtime: m.txtime, pacing_rate: m.pacing_rate });
        }
        if self.q.is_empty() {
            // restart the ring at slot 0 (`clear` resets its head): a mostly idle queue
            // then reuses one warm slot instead of walking its whole capacity
            self.q.clear();
        }
        self.q.push_back(Entry { p: PackedPkt::pack_with(pkt, own_hop), enqueued, iface });
    }

    /// Takes the oldest packet.
    #[inline]
    pub fn pop_front(&mut self) -> Option<Pkt> {
        let e = self.q.pop_front()?;
        let mut hop = HopMeta { enqueued: e.enqueued, iface: e.iface, ..HopMeta::FORWARDED };
        if e.p.own_hop {
            let s = self.socks.pop_front().expect("a socket record per packet that has one");
            (hop.tsq, hop.sk, hop.txtime, hop.pacing_rate) = (s.tsq, s.sk, s.txtime, s.pacing_rate);
        }
        Some(e.p.unpack(hop))
    }

    /// [`Pkt::len`] of the oldest packet.
    #[inline]
    pub fn front_len(&self) -> Option<usize> {
        self.q.front().map(|e| e.p.len())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn pkt(i: u64) -> Pkt {
        let mut p = Pkt::new(vec![i as u8; 20 + i as usize % 7]);
        p.tail = match i % 3 {
            0 => &PATTERN[(i as usize * 13) % 251..(i as usize * 13) % 251 + 1448],
            1 => &[],
            _ => &[1, 2, 3],
        };
        p.meta = PktMeta {
            id: i,
            enqueued: Instant::from_nanos(i * 10),
            l2_len: 14,
            mark: i as u32 ^ 0xffff_0000,
            priority: 0x10_0000 + i as u32,
            iface: 1000 + i as u32,
            corrupted: i % 5 == 0,
            // every fourth packet is a local socket's, the rest forwarded
            tsq: if i % 4 == 0 { 2 } else { 0 },
            sk: if i % 4 == 0 { 77 + i } else { 0 },
            txtime: if i % 8 == 0 { Instant::from_nanos(i) } else { Instant::ZERO },
            pacing_rate: if i % 4 == 0 { 1000 * i } else { PktMeta::NO_PACING },
        };
        p
    }

    fn whole(p: &Pkt) -> Vec<u8> {
        let mut w = Vec::new();
        p.write_to(&mut w);
        w
    }

    #[test]
    fn sizes() {
        assert_eq!(core::mem::size_of::<PackedPkt>(), 48);
        assert_eq!(core::mem::size_of::<Entry>(), 64, "one cache line per queued packet");
    }

    #[test]
    fn a_queue_gives_back_exactly_what_it_took_in_order() {
        let mut q = PktQueue::new();
        let (mut next_in, mut next_out) = (0u64, 0u64);
        // interleave pushes and pops so the queue empties and refills
        for round in 0..40u64 {
            for _ in 0..round % 9 {
                let p = pkt(next_in);
                assert_eq!(q.len(), (next_in - next_out) as usize);
                q.push_back(p);
                next_in += 1;
            }
            for _ in 0..round % 5 {
                let Some(front) = q.front_len() else { break };
                let got = q.pop_front().unwrap();
                let want = pkt(next_out);
                assert_eq!(front, want.len());
                assert_eq!(got.meta, want.meta, "packet {next_out}");
                assert_eq!(whole(&got), whole(&want));
                // a pattern tail stays by reference; any other is copied into the bytes
                assert_eq!(got.tail.len(), if next_out % 3 == 2 { 0 } else { want.tail.len() });
                next_out += 1;
            }
        }
        while let Some(got) = q.pop_front() {
            assert_eq!(got.meta, pkt(next_out).meta);
            next_out += 1;
        }
        assert_eq!((next_out, q.is_empty(), q.socks.len()), (next_in, true, 0));
    }
}
