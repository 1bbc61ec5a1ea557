//! The packet that moves through links and queues: our `sk_buff`.
use crate::time::Instant;

/// An IPv4 datagram as real bytes, plus metadata the simulator and qdiscs need.
///
/// `data` starts at the IPv4 header: qdisc classifiers (`u32 … at 32`) use offsets from
/// there, as Linux's u32 does on an Ethernet device. The link-layer header is not stored;
/// `meta.l2_len` says how many bytes it would add so that rates and byte limits count what
/// Linux counts (`qdisc_pkt_len()` = `skb->len` including the 14-byte Ethernet header).
#[derive(Clone, Debug)]
pub struct Pkt {
    /// The datagram, from the first byte of the IPv4 header.
    pub data: Vec<u8>,
    /// Simulator metadata, never on the wire.
    pub meta: PktMeta,
}

/// Per-packet metadata that is not part of the bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PktMeta {
    /// Unique per run, in order of creation: ties and traces refer to it.
    pub id: u64,
    /// When the sending stack emitted the packet.
    pub created: Instant,
    /// When the current qdisc accepted it (set by the qdisc; sojourn = dequeue − this).
    pub enqueued: Instant,
    /// Link-layer header bytes counted by rate and byte limits (14 on Ethernet links).
    pub l2_len: u16,
    /// `skb->mark` (fw filters, custom classifiers).
    pub mark: u32,
    /// `skb->priority`; a classid `major:minor` packed as Linux does (`major << 16 | minor`)
    /// lets a sender pick a class directly, as `SO_PRIORITY` does.
    pub priority: u32,
    /// Node-local interface the packet arrived on or leaves by (driver use only).
    pub iface: u32,
    /// A link or netem qdisc flipped a bit (`corrupt`). Receivers verify transport
    /// checksums of such packets only; every other packet left a wirelab stack with
    /// correct checksums, and the simulated NIC vouches for them as a checksum-offloading
    /// NIC does (`skb->ip_summed = CHECKSUM_UNNECESSARY`). The bytes always carry the
    /// real checksums (captures verify in tshark).
    pub corrupted: bool,
}

impl Pkt {
    /// A packet around `data` with default metadata.
    pub fn new(data: Vec<u8>) -> Self {
        Pkt { data, meta: PktMeta::default() }
    }
    /// Length as Linux's `qdisc_pkt_len()` sees it: datagram plus link header.
    #[inline]
    pub fn len(&self) -> usize {
        self.data.len() + self.meta.l2_len as usize
    }
    /// True for a zero-length datagram (never produced by wirelab's stacks).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
    /// IP protocol number (byte 9 of the IPv4 header), or 0 if truncated.
    #[inline]
    pub fn ip_proto(&self) -> u8 {
        self.data.get(9).copied().unwrap_or(0)
    }
    /// Offset of the transport header (IHL × 4), or `None` if the header is truncated.
    #[inline]
    pub fn l4_offset(&self) -> Option<usize> {
        let ihl = (*self.data.first()? & 0x0f) as usize * 4;
        (ihl >= 20 && self.data.len() >= ihl).then_some(ihl)
    }
    /// Source address bytes.
    #[inline]
    pub fn src_addr(&self) -> [u8; 4] {
        let mut a = [0; 4];
        if self.data.len() >= 20 {
            a.copy_from_slice(&self.data[12..16]);
        }
        a
    }
    /// Destination address bytes.
    #[inline]
    pub fn dst_addr(&self) -> [u8; 4] {
        let mut a = [0; 4];
        if self.data.len() >= 20 {
            a.copy_from_slice(&self.data[16..20]);
        }
        a
    }
    /// (source port, destination port) for TCP, UDP and SCTP; `None` otherwise.
    /// All three put the ports in the first four transport bytes.
    #[inline]
    pub fn ports(&self) -> Option<(u16, u16)> {
        match self.ip_proto() {
            6 | 17 | 132 => {
                let o = self.l4_offset()?;
                let p = self.data.get(o..o + 4)?;
                Some((u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]])))
            }
            _ => None,
        }
    }
}
