//! TCP Small Queues (`tcp_output.c`): a socket keeps at most about two skbs or 1 ms of
//! data at its pacing rate in its own host's qdiscs and device (`sk_wmem_alloc`), the
//! rest stays in its write queue until a transmit completes.
//!
//! * Charging (`__tcp_transmit_skb()`: `skb->destructor = tcp_wfree`,
//!   `refcount_add(skb->truesize, &sk->sk_wmem_alloc)`): every datagram with payload or
//!   FIN adds its truesize ([`wirelab_core::tsq`]); the [`Transmit`](wirelab_core::Transmit)
//!   says how, so the driver can give it back.
//! * Completion (`tcp_wfree()`): the driver reports the truesize when the datagram left
//!   the host (its link finished serialising it, a `netem` qdisc with a delay took it,
//!   `skb_orphan_partial()`) or was dropped in it. If the socket was throttled
//!   (`TSQ_THROTTLED`), it is queued for its write path (`tcp_tsq_handler()` →
//!   `tcp_tsq_write()`: lost segments, then new data).
//! * The check (`tcp_small_queue_check()`, in `tcp_write_xmit()` per skb after the
//!   Nagle/TSO-deferral tests and in `tcp_xmit_retransmit_queue()` with `factor` 1).
use super::Conn;
use crate::config::{TcpConfig, TsqModel};

/// `sk->sk_pacing_shift` (`tcp_init_sock()`; only some Wi-Fi drivers change it).
const SK_PACING_SHIFT: u32 = 10;
/// `SKB_TRUESIZE(skb_end_offset)` of a TCP data skb before its payload (see
/// [`wirelab_core::tsq::SKB_OVERHEAD`]).
const SKB_FIXED_TRUESIZE: u32 = wirelab_core::tsq::SKB_OVERHEAD + 52;

/// A connection's TSQ state.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tsq {
    /// The socket's key (`skb->sk`), [`wirelab_core::socket_key`] of its 4-tuple: the
    /// driver hands it back with each completion, and `fq` keys its flows by it.
    pub sk: u64,
    /// The driver reports completions (`TcpEndpoint::set_tx_completions`): charge and check.
    pub on: bool,
    /// `sk_wmem_alloc` less the socket's own reference: truesize of this socket's
    /// datagrams still in its host.
    pub wmem_alloc: u32,
    /// `TSQ_THROTTLED`: a check held data back; the next completion wakes the socket.
    pub throttled: bool,
    /// The next datagram starts an skb (it carries the skb's fixed truesize).
    pub skb_head: bool,
    /// The skb going out: (segments, payload bytes), for [`wirelab_core::Transmit::gso`]
    /// (a qdisc may segment it, `tbf_segment()`).
    pub gso: (u16, u32),
    /// An RTO just marked the head lost: `tcp_retransmit_timer()` retransmits it with
    /// `tcp_retransmit_skb()` directly, without `tcp_small_queue_check()`.
    pub rto_head: bool,
    /// Times a check held data back (`LINUX_MIB_TCPSMALLQUEUEFAILURE` existed only
    /// briefly; wirelab's counter for tests and `tcp_info`-style reports).
    pub throttles: u64,
}

impl Conn {
    /// `tcp_small_queue_check()`: true if an skb of `skb_bytes` payload must wait
    /// (`TSQ_THROTTLED` is set). `factor` is 1 for retransmissions (limit doubled).
    pub(super) fn small_queue_check(&mut self, cfg: &TcpConfig, skb_bytes: u32, factor: u32) -> bool {
        if !self.tsq.on {
            return false;
        }
        let pacing = self.tp.pacing_rate >> SK_PACING_SHIFT;
        let lob = cfg.tcp_limit_output_bytes as u64;
        let limit = match cfg.tsq {
            TsqModel::Off => return false,
            // 3.x: only new data, and the sysctl is a floor, not a cap
            TsqModel::Linux3 if factor > 0 => return false,
            TsqModel::Linux3 => lob.max(pacing),
            TsqModel::Linux4 | TsqModel::Linux6 => {
                let truesize = (SKB_FIXED_TRUESIZE + skb_bytes) as u64;
                (2 * truesize).max(pacing).min(lob) << factor
            }
        };
        // sk_wmem_alloc starts at 1 (the socket's own reference)
        if self.tsq.wmem_alloc as u64 + 1 > limit {
            // 6.7+: "Always send skb if rtx queue is empty or has one skb": no TX
            // completion is needed to call us back
            if cfg.tsq == TsqModel::Linux6 && self.rtx_queue_empty_or_single_skb() {
                return false;
            }
            self.tsq.throttled = true;
            self.tsq.throttles += 1;
            return true;
        }
        false
    }

    /// `tcp_rtx_queue_empty_or_single_skb()`: the retransmit queue holds at most one skb
    /// (one segment, or segments all last sent in one TSO packet).
    fn rtx_queue_empty_or_single_skb(&self) -> bool {
        match (self.rtx.q.front(), self.rtx.q.back()) {
            (Some(a), Some(b)) => self.rtx.q.len() == 1 || (a.piece != 0 && a.piece == b.piece),
            _ => true,
        }
    }

    /// Charges a datagram of `kind` and `ip_len` bytes to `sk_wmem_alloc`.
    #[inline]
    pub(super) fn tsq_charge(&mut self, ip_len: usize, kind: u8) {
        self.tsq.wmem_alloc = self.tsq.wmem_alloc.saturating_add(wirelab_core::tsq::truesize(ip_len, kind));
    }

    /// `tcp_wfree()`: `truesize` bytes left the host. True if the socket was throttled
    /// and must run its write path now (`TSQF_THROTTLED` → `TSQF_QUEUED`, the TSQ work
    /// calls `tcp_tsq_handler()`).
    pub fn tx_complete(&mut self, truesize: u32) -> bool {
        self.tsq.wmem_alloc = self.tsq.wmem_alloc.saturating_sub(truesize);
        std::mem::take(&mut self.tsq.throttled)
    }

    /// A qdisc segmented a GSO skb of this socket on enqueue (`tbf_segment()` →
    /// `tcp_gso_segment()`): the charge becomes the segments' truesizes, `delta` bytes
    /// more (or less) than the datagram was charged with.
    pub fn tx_recharge(&mut self, delta: i32) {
        self.tsq.wmem_alloc = self.tsq.wmem_alloc.saturating_add_signed(delta);
    }

    /// Bytes (truesize) this socket has in its host's queues (`sk_wmem_alloc`).
    pub fn wmem_alloc(&self) -> u32 {
        self.tsq.wmem_alloc
    }
}
