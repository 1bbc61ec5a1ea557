//! Static IPv4 routes with longest-prefix match.
//!
//! One hash map per prefix length present, probed from the longest length down: a lookup
//! costs at most the number of *distinct* prefix lengths (a handful), however many routes
//! or interfaces a router has. Lookups never iterate a map, so hash order cannot leak
//! into results.
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::net::Ipv4Addr;

/// A multiplicative hash for the `u32` network keys: every forwarded or sent packet does
/// one to three lookups, and SipHash (the `HashMap` default, built against hash flooding,
/// which static routes do not need) was 2 % of a TCP run.
#[derive(Default, Clone, Copy, Debug)]
pub struct NetHasher(u64);
impl Hasher for NetHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.0 = (self.0 ^ v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // the high bits of the product are the well-mixed ones; hashbrown uses the top 7
        // bits as tags and the low bits as the bucket index
        self.0 ^ (self.0 >> 29)
    }
}
type NetMap = HashMap<u32, NextHop, BuildHasherDefault<NetHasher>>;

/// Where a matching packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextHop {
    /// Node-local interface index.
    pub iface: u32,
    /// Gateway, if not directly connected (informational: links are point-to-point).
    pub via: Option<Ipv4Addr>,
}

/// A routing table.
#[derive(Default, Clone, Debug)]
pub struct RouteTable {
    // (prefix length, network -> next hop), sorted by length descending
    by_len: Vec<(u8, NetMap)>,
    /// The last `(destination, hop)` [`lookup_cached`](Self::lookup_cached) found: a host
    /// sends to one or a few destinations, and with thousands of hosts the maps' lines
    /// (the `by_len` buffer, control bytes, bucket) are cold at every packet. Cleared by
    /// every [`add`](Self::add).
    hit: Option<(u32, NextHop)>,
}

fn mask(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}

impl RouteTable {
    /// Adds (or replaces) a route; returns true if it replaced an existing one.
    pub fn add(&mut self, net: Ipv4Addr, len: u8, hop: NextHop) -> bool {
        self.hit = None;
        let key = u32::from(net) & mask(len);
        let pos = match self.by_len.iter().position(|(l, _)| *l == len) {
            Some(p) => p,
            None => {
                self.by_len.push((len, NetMap::default()));
                self.by_len.sort_by_key(|e| std::cmp::Reverse(e.0));
                self.by_len.iter().position(|(l, _)| *l == len).unwrap()
            }
        };
        self.by_len[pos].1.insert(key, hop).is_some()
    }
    /// True if a route for exactly this prefix exists.
    pub fn has(&self, net: Ipv4Addr, len: u8) -> bool {
        let key = u32::from(net) & mask(len);
        self.by_len.iter().any(|(l, m)| *l == len && m.contains_key(&key))
    }
    /// Longest-prefix match.
    #[inline]
    pub fn lookup(&self, dst: Ipv4Addr) -> Option<NextHop> {
        let d = u32::from(dst);
        for (len, m) in &self.by_len {
            if let Some(h) = m.get(&(d & mask(*len))) {
                return Some(*h);
            }
        }
        None
    }
    /// [`lookup`](Self::lookup) through a one-entry cache of the last destination found
    /// (the same answer: routes only change through `add`, which clears it).
    #[inline]
    pub fn lookup_cached(&mut self, dst: Ipv4Addr) -> Option<NextHop> {
        let d = u32::from(dst);
        if let Some((k, h)) = self.hit {
            if k == d {
                return Some(h);
            }
        }
        let h = self.lookup(dst)?;
        self.hit = Some((d, h));
        Some(h)
    }
    /// All routes as `(network, prefix length, next hop)`, sorted (deterministic).
    pub fn entries(&self) -> Vec<(Ipv4Addr, u8, NextHop)> {
        let mut v: Vec<(Ipv4Addr, u8, NextHop)> = self.by_len.iter().flat_map(|(l, m)| m.iter().map(move |(k, h)| (Ipv4Addr::from(*k), *l, *h))).collect();
        v.sort_by_key(|(n, l, _)| (std::cmp::Reverse(*l), u32::from(*n)));
        v
    }
    /// Number of routes.
    pub fn len(&self) -> usize {
        self.by_len.iter().map(|(_, m)| m.len()).sum()
    }
    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod test {
    use super::*;
    #[test]
    fn longest_prefix_wins() {
        let mut t = RouteTable::default();
        t.add(Ipv4Addr::new(0, 0, 0, 0), 0, NextHop { iface: 0, via: None });
        t.add(Ipv4Addr::new(10, 0, 0, 0), 8, NextHop { iface: 1, via: None });
        t.add(Ipv4Addr::new(10, 1, 2, 0), 24, NextHop { iface: 2, via: None });
        assert_eq!(t.lookup(Ipv4Addr::new(10, 1, 2, 9)).unwrap().iface, 2);
        assert_eq!(t.lookup(Ipv4Addr::new(10, 1, 3, 9)).unwrap().iface, 1);
        assert_eq!(t.lookup(Ipv4Addr::new(192, 168, 0, 1)).unwrap().iface, 0);
        let mut e = RouteTable::default();
        e.add(Ipv4Addr::new(10, 0, 0, 0), 8, NextHop { iface: 1, via: None });
        assert!(e.lookup(Ipv4Addr::new(11, 0, 0, 1)).is_none());
    }
    #[test]
    fn cached_lookup_follows_new_routes() {
        let mut t = RouteTable::default();
        t.add(Ipv4Addr::new(0, 0, 0, 0), 0, NextHop { iface: 0, via: None });
        let d = Ipv4Addr::new(10, 1, 2, 9);
        assert_eq!(t.lookup_cached(d).unwrap().iface, 0);
        assert_eq!(t.lookup_cached(d).unwrap().iface, 0);
        // a more specific route added after the destination was cached wins at once
        t.add(Ipv4Addr::new(10, 1, 2, 0), 24, NextHop { iface: 2, via: None });
        assert_eq!(t.lookup_cached(d).unwrap().iface, 2);
        assert_eq!(t.lookup_cached(Ipv4Addr::new(10, 1, 3, 9)).unwrap().iface, 0);
        assert_eq!(t.lookup_cached(d).unwrap().iface, 2);
        assert!(RouteTable::default().lookup_cached(d).is_none());
    }
}
