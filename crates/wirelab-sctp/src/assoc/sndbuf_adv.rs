//! The send-buffer advertisement, chunk type 150 / 0x96 (seed system 1, §1.3; the btech
//! patches `sctp_sndbuf_adv.patch` V1/V2, `latest.patch` V3, `new_design.patch` V4):
//! the sender tells the network how full its send buffer is, by timer (V1–V3) or as a
//! marker in front of the first DATA of every packet (V3/V4). Everything about 0x96 lives
//! here: the value, the timer, the per-packet marker, emission, and reception. The 1448-B
//! fragment point V3/V4 need is `SctpConfig::frag_point`.
use super::output::Ctrl;
use super::Assoc;
use crate::config::{BacklogDef, SctpConfig, SndbufAdv};
use crate::types::*;
use crate::wire::*;
use wirelab_core::{Instant, SockEvent};

/// The advertisement timer (V1–V3; `net.sctp.sndbuf_adv_interval`).
#[derive(Debug, Default)]
pub(super) struct SndbufAdvState {
    pub timer: Option<Instant>,
}

/// The sender's backlog inputs at one instant (`outqueue` and the packet's path).
struct Backlog {
    out_qlen: u64,
    outstanding: u64,
    peer_rwnd: u32,
    cwnd: u32,
    sndbuf_used: u64,
    sndbuf: u64,
}

impl Backlog {
    /// (send?, value) scaled to `scale` (100: percent, 10: decile).
    /// Btech2016: `lhs = out_qlen + outstanding`, `rhs = min(peer.rwnd, cwnd)`, value =
    /// ⌊scale·(lhs − rhs)/sndbuf_used⌋ when lhs > rhs. Agache: unsent bytes / `sk_sndbuf`.
    fn value(&self, def: BacklogDef, scale: u64) -> (bool, u64) {
        match def {
            BacklogDef::Btech2016 => {
                let lhs = self.out_qlen + self.outstanding;
                let rhs = (self.peer_rwnd.min(self.cwnd)) as u64;
                if lhs <= rhs || self.sndbuf_used == 0 {
                    return (false, lhs.saturating_sub(rhs));
                }
                (true, (scale * (lhs - rhs) / self.sndbuf_used).min(255))
            }
            BacklogDef::Agache => {
                let b = self.out_qlen;
                if b == 0 || self.sndbuf == 0 {
                    return (false, 0);
                }
                (true, (scale * b / self.sndbuf).min(scale))
            }
        }
    }

    /// V1's 32-bit byte count (`lhs − rhs`, or the unsent bytes for Agache).
    fn bytes(&self, def: BacklogDef) -> u64 {
        let lhs = self.out_qlen + self.outstanding;
        let rhs = self.peer_rwnd.min(self.cwnd) as u64;
        match def {
            BacklogDef::Btech2016 => lhs.saturating_sub(rhs),
            BacklogDef::Agache => self.out_qlen,
        }
    }
}

impl SndbufAdvState {
    /// ESTABLISHED: the V1–V3 timer starts.
    pub(super) fn on_established(&mut self, now: Instant, cfg: &SctpConfig) {
        if matches!(cfg.sndbuf_adv, SndbufAdv::V1Bytes | SndbufAdv::V2Percent | SndbufAdv::V3Decile) {
            self.timer = Some(now + cfg.sndbuf_adv_interval);
        }
    }

    /// A 0x96 chunk from a peer, with the extension on: counted, flags remembered.
    pub(super) fn received(&mut self, stats: &mut AssocStats, flags: u8) {
        stats.sndbuf_adv_received += 1;
        stats.last_sndbuf_adv_flags = flags;
    }

    /// A 0x96 chunk skipped by its type bits (extension off): counted only.
    pub(super) fn skipped(stats: &mut AssocStats) {
        stats.sndbuf_adv_received += 1;
    }

    /// Writes one 0x96 chunk (counted as sent, as the patches count it before emitting).
    pub(super) fn emit(stats: &mut AssocStats, flags: u8, value: Option<u32>, out: &mut [u8], at: &mut usize) -> bool {
        stats.sndbuf_adv_sent += 1;
        ChunkRepr::SndbufAdv { flags, value }.emit_at(out, at)
    }
}

impl Assoc {
    fn backlog(&self, path: usize) -> Backlog {
        Backlog {
            out_qlen: self.out.out_qlen,
            outstanding: self.out.outstanding,
            peer_rwnd: self.peer_rwnd,
            cwnd: self.paths[path].cwnd,
            // the patches divide by asoc->sndbuf_used, which 4.6 counts in payload + struct
            // sizes, not truesize (SctpConfig::sndbuf_used_payload)
            sndbuf_used: self.out.asoc_sndbuf_used,
            sndbuf: self.sock.sndbuf,
        }
    }

    /// V1–V3 timer: queue an advertisement to the active path (nothing when the backlog is
    /// empty), re-arm. Obeys the heartbeat handler's association-error guard.
    pub(super) fn adv_timer_expired(&mut self, now: Instant, cfg: &SctpConfig) {
        self.adv.timer = None;
        if !matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownReceived) {
            return;
        }
        if self.error_count >= cfg.association_max_retrans {
            self.fail(SockEvent::Reset, true);
            return;
        }
        let i = self.active;
        let b = self.backlog(i);
        let def = cfg.sndbuf_adv_backlog;
        let c = match cfg.sndbuf_adv {
            SndbufAdv::V1Bytes => {
                let v = b.bytes(def);
                (v > 0).then_some(Ctrl::SndbufAdv { flags: 0, value: Some(v.min(u32::MAX as u64) as u32) })
            }
            SndbufAdv::V2Percent => {
                let (send, v) = b.value(def, 100);
                send.then_some(Ctrl::SndbufAdv { flags: v as u8, value: None })
            }
            SndbufAdv::V3Decile => {
                let (send, v) = b.value(def, 10);
                send.then_some(Ctrl::SndbufAdv { flags: v as u8, value: None })
            }
            _ => None,
        };
        if let Some(c) = c {
            self.ctrl.push_back((i as u8, c));
        }
        self.adv.timer = Some(now + cfg.sndbuf_adv_interval);
    }

    /// V3/V4 per-packet marker: the decile (or 0) in front of the first DATA of a packet
    /// to `path`, computed as if `chunk_len` more bytes had left the unsent queue when
    /// that DATA is new (§1.3).
    pub(super) fn put_adv_marker(&mut self, cfg: &SctpConfig, path: usize, unsent_len: u64, out: &mut [u8], at: &mut usize) {
        let mut b = self.backlog(path);
        b.out_qlen -= unsent_len;
        let (send, v) = b.value(cfg.sndbuf_adv_backlog, 10);
        let flags = if send { v as u8 } else { 0 };
        SndbufAdvState::emit(&mut self.stats, flags, None, out, at);
    }
}
