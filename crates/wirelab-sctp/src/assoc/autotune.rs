//! Buffer autotuning (seed system 2, "Implementing SCTP Auto Buffer Tuning for Linux",
//! Linux 2.6.37; never merged upstream, off by default): the sender grows `sk_sndbuf` to
//! 2·cwnd, the receiver grows `sk_rcvbuf` when full and once per RTT to 2 × bytes read
//! (the patch's `sctp_raise_sndbuf()`, `sctp_raise_rcvbuf()`, `sctp_rcvbuf_adjust()`,
//! after TCP's `tcp_new_space()`, `tcp_clamp_window()`, `tcp_rcv_space_adjust()`).
use super::Assoc;
use crate::config::{Autotune, RttFallback, SctpConfig};
use crate::types::*;
use wirelab_core::{Duration, Instant};

/// Receiver measurement state (the patch's `asoc->rcvq_space`, TCP's `rcvq_space`).
#[derive(Debug, Default)]
pub(super) struct RcvSpace {
    /// Largest target so far.
    space: u64,
    /// Start of the current measurement.
    time: Instant,
    /// Bytes copied to the user since `time`.
    copied: u64,
    /// A measurement is under way (the patch's `rcvq_space.start_time != 0`).
    started: bool,
}

/// Linux `sctp_assoc_add_peer()`: ssthresh starts at the peer's a_rwnd; seed 001's
/// autotuning uses `sctp_wmem[2] / 2` instead.
pub(super) fn initial_ssthresh(cfg: &SctpConfig, peer_rwnd: u32) -> u32 {
    let v = if cfg.autotune != Autotune::Off { (cfg.sctp_wmem[2] / 2).min(u32::MAX as u64) as u32 } else { peer_rwnd };
    v.max(4 * cfg.pmtu)
}

/// Payload-to-charge ratio applied by the overhead-corrected variant (×1000).
fn overhead_permille(cfg: &SctpConfig) -> u64 {
    match cfg.autotune {
        Autotune::OverheadCorrected => {
            let f = cfg.frag_point();
            cfg.chunk_truesize(f) * 1000 / f as u64
        }
        _ => 1000,
    }
}

impl Assoc {
    /// Sender rule (mirrors `tcp_should_expand_sndbuf()` + `tcp_new_space()`, 2.6.37):
    /// when a SACK frees space while the writer waits, not locked, not cwnd-limited:
    /// `sk_sndbuf = max(sk_sndbuf, min(2·cwnd, sctp_wmem[2]))`, cwnd summed over active
    /// paths (seed-systems §2.5). Global memory pressure is not modelled.
    pub(super) fn autotune_sndbuf(&mut self, cfg: &SctpConfig) {
        if cfg.autotune == Autotune::Off || self.sock.sndbuf_locked {
            return;
        }
        let cwnd: u64 = self.paths.iter().filter(|p| p.state != PathState::Inactive).map(|p| p.cwnd as u64).sum();
        if self.out.outstanding >= cwnd {
            return;
        }
        let want = (2 * cwnd * overhead_permille(cfg) / 1000).min(cfg.sctp_wmem[2]);
        if want > self.sock.sndbuf {
            self.sock.sndbuf = want;
        }
    }

    /// Receiver rule 1 (as `tcp_clamp_window()`): a chunk would fill `sk_rcvbuf` → grow it
    /// (up to `sctp_rmem[2]`) instead of advertising a zero window.
    pub(super) fn autotune_rcvbuf(&mut self, cfg: &SctpConfig, need: u64) {
        if cfg.autotune == Autotune::Off || self.sock.rcvbuf_locked || self.sock.rcvbuf >= cfg.sctp_rmem[2] {
            return;
        }
        let new = need.max(self.sock.rcvbuf).min(cfg.sctp_rmem[2]);
        // the patch's buffer-full path grows sk_rcvbuf without opening rwnd; the
        // overhead-corrected variant keeps the inferred half-of-growth rule
        let share = if cfg.autotune == Autotune::Faithful { 0 } else { 1 };
        self.grow_rcvbuf(new, share);
    }

    /// Receiver rule 2 (as `tcp_rcv_space_adjust()`): once per RTT, target = 2 × bytes
    /// copied to the user in that RTT; grow `sk_rcvbuf` to it (clamped). Which RTT, and
    /// what happens before there is one, is `SctpConfig::rtt_fallback()`:
    /// * `None` (the patch's `sctp_rcvbuf_adjust()`): the first read only starts the
    ///   measurement (`if (!start_time) goto new_measure`); then the last RTT sample of
    ///   the path data came from (`asoc->peer.last_data_from->rtt`);
    ///   `if (time < rtt || !rtt) return 0`, so without a sample the bytes keep adding up
    ///   and the buffer does not grow.
    /// * `RtoInitial`: the path's SRTT, else RTO.Initial, measured from time zero.
    pub(super) fn rcv_space_adjust(&mut self, now: Instant, cfg: &SctpConfig, copied: u64) {
        if cfg.autotune == Autotune::Off || self.sock.rcvbuf_locked {
            return;
        }
        let path = self.paths.get(self.rx.data_from);
        let rtt = match cfg.rtt_fallback() {
            RttFallback::None => {
                if !self.tune.started {
                    self.tune.started = true;
                    self.tune.time = now;
                    return;
                }
                self.tune.copied += copied;
                match path.and_then(|p| p.rtt_last) {
                    Some(r) if r > 0 => Duration::from_nanos(r),
                    _ => return,
                }
            }
            RttFallback::RtoInitial => {
                self.tune.copied += copied;
                path.and_then(|p| p.srtt).map(Duration::from_nanos).unwrap_or(cfg.rto_initial)
            }
        };
        if now.saturating_since(self.tune.time) < rtt {
            return;
        }
        let target = 2 * self.tune.copied;
        self.tune.copied = 0;
        self.tune.time = now;
        if target > self.tune.space {
            self.tune.space = target;
            let want = (target * overhead_permille(cfg) / 1000).min(cfg.sctp_rmem[2]);
            if want > self.sock.rcvbuf {
                // the patch: sctp_assoc_rwnd_increase(asoc, copied + rcvbuf_increment), i.e.
                // rwnd opens by the whole increment (the copied part is the normal read path)
                let share = if cfg.autotune == Autotune::Faithful { 2 } else { 1 };
                self.grow_rcvbuf(want, share);
            }
        }
    }

    /// Grows `sk_rcvbuf` to `new` and opens rwnd by `halves`/2 of the growth (0: not at
    /// all, 1: half [inferred, §2.3], 2: all of it, as the patch's per-RTT rule).
    fn grow_rcvbuf(&mut self, new: u64, halves: u64) {
        let old = self.sock.rcvbuf;
        if new <= old {
            return;
        }
        self.sock.rcvbuf = new;
        self.rx.rwnd = self.rx.rwnd.saturating_add(((new - old) * halves / 2).min(u32::MAX as u64) as u32);
    }
}
