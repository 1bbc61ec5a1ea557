//! Thin streams: `tcp_stream_is_thin()`, linear timeouts (`tcp_thin_linear_timeouts`,
//! 2.6.34+), the per-socket options of the thin-stream mechanisms, and redundant data
//! bundling (RDB: the 2015 patch series' `net/ipv4/tcp_rdb.c` and the original 2008
//! mechanism). The modified fast retransmit rule (`tcp_thin_dupack`) is one clause of
//! `tcp_time_to_recover()` (recovery.rs); its switch is here.
use super::scoreboard::RtxQueue;
use super::Conn;
use crate::api::TcpState;
use crate::config::{RdbMode, TcpConfig};
use crate::wire::SeqNumber;

/// `TCP_THIN_LINEAR_RETRIES`: linear timeouts for at most this many retransmissions.
const TCP_THIN_LINEAR_RETRIES: u32 = 6;

/// Per-socket switches and counters of the thin-stream mechanisms.
#[derive(Clone, Debug, Default)]
pub(crate) struct ThinState {
    /// `TCP_THIN_LINEAR_TIMEOUTS`.
    pub lto: bool,
    /// `TCP_THIN_DUPACK`.
    pub dupack: bool,
    /// Per-socket `tcp_early_retrans` mode (None: the host sysctl).
    pub early_retrans_mode: Option<u8>,
    /// Per-socket RDB mode (None: the host sysctl).
    pub rdb_mode: Option<RdbMode>,
    /// Early retransmit turned off after reordering was seen (`tcp_disable_early_retrans`).
    pub er_disabled: bool,
    // counters (tcp_info)
    pub lt_count: u32,
    pub dupack_count: u32,
    pub er_count: u32,
    pub tlp_count: u32,
    pub rdb_packets: u32,
    pub rdb_bytes: u64,
    pub rdb_loss_cwr: u32,
}

impl ThinState {
    /// The `tcp_early_retrans` mode in force (socket override or sysctl).
    pub fn early_retrans_mode(&self, cfg: &TcpConfig) -> u32 {
        self.early_retrans_mode.map_or(cfg.tcp_early_retrans, |m| m as u32)
    }
    /// The RDB mode in force (socket override or sysctl).
    pub fn rdb_mode(&self, cfg: &TcpConfig) -> RdbMode {
        self.rdb_mode.unwrap_or(cfg.tcp_rdb)
    }
    /// Modified fast retransmit switched on (socket option or sysctl).
    pub fn mfr_on(&self, cfg: &TcpConfig) -> bool {
        self.dupack || cfg.tcp_thin_dupack
    }
}

/// `rdb_check_rtx_queue_loss()` (2015 RDB patch): if the segment this ACK exactly
/// covers was sent with older data bundled in front and older segments are still in the
/// queue, those are presumed lost (one ACK per packet is expected). Returns how many.
pub(crate) fn rdb_check_rtx_queue_loss(rtx: &RtxQueue, ack: SeqNumber) -> u32 {
    let mut lost = 0;
    for (k, s) in rtx.q.iter().enumerate() {
        if s.end.after(ack) {
            break;
        }
        if s.end == ack {
            if s.rdb_start == s.seq || k == 0 {
                break;
            }
            for p in rtx.q.iter().take(k).rev() {
                if p.seq.before(s.rdb_start) {
                    break;
                }
                lost += 1;
            }
            break;
        }
    }
    lost
}

impl Conn {
    /// `tcp_stream_is_thin()` (include/net/tcp.h): fewer than four packets out and not in
    /// initial slow start (ssthresh still infinite). `packets_out` counts SACKed and lost
    /// segments too, unlike `tcp_packets_in_flight()`.
    pub(crate) fn stream_is_thin(&self) -> bool {
        self.rtx.packets_out < 4 && !self.tp.in_initial_slowstart()
    }

    /// Linear timeouts (`tcp_thin_linear_timeouts`, 2.6.34+), checked in
    /// `tcp_retransmit_timer()` after `tcp_enter_loss()` (so ssthresh is finite and only
    /// `packets_out < 4` matters): a thin ESTABLISHED stream keeps the un-backed-off RTO
    /// for its first `TCP_THIN_LINEAR_RETRIES` retransmissions. Without an RTT sample the
    /// current RTO is kept (docs/tcp.md deviation).
    pub(super) fn linear_timeout_applies(&self, cfg: &TcpConfig) -> bool {
        self.state == TcpState::Established
            && (self.thin.lto || cfg.tcp_thin_linear_timeouts)
            && self.stream_is_thin()
            && self.retransmits <= TCP_THIN_LINEAR_RETRIES
            && self.rtt.srtt_us != 0
    }

    /// `tcp_stream_is_thin_dpifl()` (2015 RDB patch): packets in flight below
    /// srtt / `tcp_thin_dpifl_itt_lower_bound`.
    fn stream_is_thin_dpifl(&self, cfg: &TcpConfig) -> bool {
        let lim = self.rtt.srtt() / cfg.tcp_thin_dpifl_itt_lower_bound_us.max(1) as u64;
        (self.in_flight() as u64) < lim
    }

    /// Redundant data bundling: where the packet carrying new segment `[seq, seq+len)`
    /// may start (`seq` = no bundling). 2015 patch (`rdb_can_bundle_test()`): DPIFL thin
    /// test, previous segments walked backwards while the payload stays within
    /// min(MSS, `tcp_rdb_max_bytes`) and at most `tcp_rdb_max_packets` are added. Original
    /// 2008 RDB: `packets_out < 4` (the 2.6.23 patch's thin test, without the later
    /// initial-slow-start clause) and as many previous segments as fit in one MSS.
    pub(super) fn rdb_bundle_start(&self, cfg: &TcpConfig, seq: SeqNumber, len: u32) -> SeqNumber {
        let mode = self.thin.rdb_mode(cfg);
        if mode == RdbMode::Off || len == 0 || self.rtx.q.is_empty() {
            return seq;
        }
        let thin = match mode {
            RdbMode::Lcn2015 => self.stream_is_thin_dpifl(cfg),
            _ => self.rtx.packets_out < 4,
        };
        if !thin {
            return seq;
        }
        let mut max_payload = self.mss_cache;
        if cfg.tcp_rdb_max_bytes > 0 {
            max_payload = max_payload.min(cfg.tcp_rdb_max_bytes);
        }
        let max_pkts = if mode == RdbMode::Lcn2015 { cfg.tcp_rdb_max_packets } else { 0 };
        let mut total = len;
        let mut start = seq;
        // `count` starts at 1 for the new segment itself, as rdb_can_bundle_test() does
        for (count, s) in (1u32..).zip(self.rtx.q.iter().rev()) {
            let sl = s.data_len();
            if s.fin || total + sl > max_payload {
                break;
            }
            if max_pkts > 0 && count > max_pkts {
                break;
            }
            total += sl;
            start = s.seq;
        }
        start
    }
}

#[cfg(test)]
mod test {
    use super::super::scoreboard::TxSeg;
    use super::*;
    use wirelab_core::Instant;

    #[test]
    fn rdb_loss_is_the_bundled_segments_still_queued() {
        let mut rq = RtxQueue::new(SeqNumber(0));
        for i in 0..3u32 {
            let seq = SeqNumber(i * 100);
            // the third packet carried segments 1 and 2 (bundled from 100)
            let rdb_start = if i == 2 { SeqNumber(100) } else { seq };
            rq.push(TxSeg {
                seq,
                end: seq + 100,
                fin: false,
                sacked: 0,
                xmit: Instant::ZERO,
                rdb_start,
                tx: Default::default(),
                piece: 0,
                psh: false,
                sack_run: 0,
            });
        }
        // an ACK ending exactly at the bundle's end: segment 1 is presumed lost, not 0
        assert_eq!(rdb_check_rtx_queue_loss(&rq, SeqNumber(300)), 1);
        // an ACK of the first segment alone says nothing
        assert_eq!(rdb_check_rtx_queue_loss(&rq, SeqNumber(100)), 0);
    }
}
