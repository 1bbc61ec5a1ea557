//! Ethernet II framing (IEEE 802.3 with an EtherType), used only for captures: wirelab's
//! links carry IPv4 datagrams and count the 14 header bytes via `PktMeta::l2_len`.
//!
//! No FCS is emitted, as Linux captures (`AF_PACKET`) show frames without it.
use crate::WireError;
use core::fmt;

/// Length of an Ethernet II header (no 802.1Q tag).
pub const HEADER_LEN: usize = 14;

/// A MAC address.
pub type MacAddr = [u8; 6];

/// EtherType values (Linux `ETH_P_*` in include/uapi/linux/if_ether.h).
pub mod ethertype {
    /// `ETH_P_IP`.
    pub const IPV4: u16 = 0x0800;
    /// `ETH_P_ARP`.
    pub const ARP: u16 = 0x0806;
    /// `ETH_P_8021Q`: a VLAN tag follows.
    pub const VLAN: u16 = 0x8100;
    /// `ETH_P_8021AD`: a service (QinQ) tag follows.
    pub const QINQ: u16 = 0x88a8;
    /// `ETH_P_IPV6`.
    pub const IPV6: u16 = 0x86dd;
}

/// The broadcast address.
pub const BROADCAST: MacAddr = [0xff; 6];

/// A deterministic, locally administered unicast MAC for interface `iface` of node `node`:
/// `02:NN:NN:NN:II:II`, the node in the middle three bytes and the interface in the last
/// two, so `02:00:00:05:00:01` reads as node 5, interface 1 in Wireshark. The first byte
/// sets the U/L bit and clears the I/G bit (IEEE 802 §8.2). Distinct for every
/// `node < 2^24` and `iface < 2^16`; larger values are folded in by XOR and may collide.
pub fn mac_for(node: u32, iface: u32) -> MacAddr {
    let n = node ^ (node >> 24) ^ (iface >> 16).rotate_left(8);
    let i = iface ^ (iface >> 16);
    [
        0x02,
        (n >> 16) as u8,
        (n >> 8) as u8,
        n as u8,
        (i >> 8) as u8,
        i as u8,
    ]
}

/// Writes an Ethernet II header into `buf[..14]`. Panics if `buf` is shorter than 14 bytes
/// (a caller bug).
pub fn emit_header(buf: &mut [u8], dst: MacAddr, src: MacAddr, ethertype: u16) {
    let b = &mut buf[..HEADER_LEN];
    b[0..6].copy_from_slice(&dst);
    b[6..12].copy_from_slice(&src);
    b[12..14].copy_from_slice(&ethertype.to_be_bytes());
}

/// The 14-byte header of an IPv4 frame, as an array (no buffer needed).
pub fn ipv4_header(dst: MacAddr, src: MacAddr) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    emit_header(&mut h, dst, src, ethertype::IPV4);
    h
}

/// A read-only view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps after checking the 14-byte header is present.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(EthernetFrame { buffer })
    }
    /// Destination MAC.
    pub fn dst(&self) -> MacAddr {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buffer.as_ref()[0..6]);
        m
    }
    /// Source MAC.
    pub fn src(&self) -> MacAddr {
        let mut m = [0; 6];
        m.copy_from_slice(&self.buffer.as_ref()[6..12]);
        m
    }
    /// The outer EtherType.
    pub fn ethertype(&self) -> u16 {
        let b = self.buffer.as_ref();
        u16::from_be_bytes([b[12], b[13]])
    }
    /// Bytes after the 14-byte header (VLAN tags not skipped).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }
    /// The inner EtherType and payload offset after skipping up to two 802.1Q/802.1ad tags,
    /// or `None` if a tag is truncated or more than two are stacked.
    pub fn inner(&self) -> Option<(u16, usize)> {
        let b = self.buffer.as_ref();
        let mut et = self.ethertype();
        let mut off = HEADER_LEN;
        for _ in 0..2 {
            if et != ethertype::VLAN && et != ethertype::QINQ {
                return Some((et, off));
            }
            // 2 bytes TCI, then the next EtherType
            let t = b.get(off + 2..off + 4)?;
            et = u16::from_be_bytes([t[0], t[1]]);
            off += 4;
        }
        (et != ethertype::VLAN && et != ethertype::QINQ).then_some((et, off))
    }
}

/// Formats a MAC as `02:00:00:05:00:01`.
pub struct DisplayMac(pub MacAddr);

impl fmt::Display for DisplayMac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

impl<T: AsRef<[u8]>> fmt::Display for EthernetFrame<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Ethernet {} > {} type={:#06x}",
            DisplayMac(self.src()),
            DisplayMac(self.dst()),
            self.ethertype()
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn mac_for_is_readable_unicast_local() {
        let m = mac_for(5, 1);
        assert_eq!(m, [0x02, 0, 0, 5, 0, 1]);
        assert_eq!(DisplayMac(m).to_string(), "02:00:00:05:00:01");
        assert_eq!(
            mac_for(0x0012_3456, 0xabcd),
            [0x02, 0x12, 0x34, 0x56, 0xab, 0xcd]
        );
        for (n, i) in [(0, 0), (u32::MAX, u32::MAX), (1 << 24, 1 << 16), (77, 3)] {
            let m = mac_for(n, i);
            assert_eq!(m[0] & 0x01, 0, "unicast");
            assert_eq!(m[0] & 0x02, 0x02, "locally administered");
            assert_eq!(m, mac_for(n, i), "deterministic");
        }
    }

    #[test]
    fn mac_for_is_distinct_in_range() {
        let mut seen = std::collections::BTreeSet::new();
        for n in (0..(1u32 << 24)).step_by(65_521) {
            for i in [0u32, 1, 2, 255, 256, 65_535] {
                assert!(seen.insert(mac_for(n, i)), "collision at {n}/{i}");
            }
        }
    }

    #[test]
    fn header_emit_and_view() {
        let mut b = [0u8; 20];
        emit_header(&mut b, BROADCAST, mac_for(1, 0), ethertype::IPV4);
        assert_eq!(&b[..14], &ipv4_header(BROADCAST, mac_for(1, 0)));
        let f = EthernetFrame::new_checked(&b[..]).unwrap();
        assert_eq!(f.dst(), BROADCAST);
        assert_eq!(f.src(), mac_for(1, 0));
        assert_eq!(f.ethertype(), 0x0800);
        assert_eq!(f.payload().len(), 6);
        assert_eq!(f.inner(), Some((0x0800, 14)));
        assert!(f.to_string().contains("type=0x0800"));
        assert_eq!(
            EthernetFrame::new_checked(&b[..13]).unwrap_err(),
            WireError::Truncated
        );
    }

    #[test]
    fn vlan_tags_skipped() {
        let mut b = vec![0u8; 14];
        b[12..14].copy_from_slice(&ethertype::QINQ.to_be_bytes());
        b.extend_from_slice(&[0, 10, 0x81, 0x00, 0, 20, 0x08, 0x00, 0x45]);
        let f = EthernetFrame::new_checked(&b[..]).unwrap();
        assert_eq!(f.inner(), Some((0x0800, 22)));
        // truncated tag
        let f = EthernetFrame::new_checked(&b[..17]).unwrap();
        assert_eq!(f.inner(), None);
        // three stacked tags: refused
        let mut c = b[..18].to_vec();
        c.extend_from_slice(&[0, 20, 0x81, 0x00, 0, 30, 0x08, 0x00]);
        assert_eq!(EthernetFrame::new_checked(&c[..]).unwrap().inner(), None);
    }
}
