//! Loss recovery (the recovery half of `tcp_input.c`, plus `tcp_schedule_loss_probe()`):
//! SACK tagging, `tcp_fastretrans_alert()` and its steps, undo, PRR, CWR, loss marking,
//! early retransmit (RFC 5827) and tail loss probe.
use super::input::{FLAG_DATA_SACKED, FLAG_ECE, FLAG_ORIG_SACK_ACKED, FLAG_SND_UNA_ADVANCED};
use super::scoreboard::{SackTag, LOST};
use super::timer::{round_jiffies, timer_at};
use super::{Conn, XmitTimer};
use crate::api::TcpState;
use crate::cc::{CaEvent, CaState, TCP_INFINITE_SSTHRESH};
use crate::config::TcpConfig;
use crate::wire::{SackBlocks, SeqNumber};
use wirelab_core::{Duration, Instant};

/// Tail-loss-probe state (`tlp_high_seq`, `tlp_retrans`) and the "probe due" flag the
/// loss-probe timer sets for the next transmit opportunity.
#[derive(Clone, Debug, Default)]
pub(crate) struct Tlp {
    /// `tlp_high_seq`: snd_nxt when a TLP was sent (None = no episode).
    pub high_seq: Option<SeqNumber>,
    /// The loss-probe timer fired: send a probe at the next transmit opportunity.
    pub pending: bool,
    /// `tlp_retrans`: the current TLP episode retransmitted (RACK-TLP era).
    pub retrans: bool,
    /// `FLAG_DSACK_TLP` of the ACK being processed: its D-SACK is the probe's duplicate
    /// (one segment ending at `tlp_high_seq`; 6.x).
    pub dsack_tlp: bool,
}

/// Which rule of `tcp_time_to_recover()` fired (for the thin-stream counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RecoverTrigger {
    Classic,
    ThinDupack,
    EarlyRetrans,
}

/// `tcp_check_dsack()`: the first block is a D-SACK when it lies below the ACK or inside
/// the second block.
fn is_dsack(bl: &[(SeqNumber, SeqNumber)], ack: SeqNumber) -> bool {
    let Some(&(l0, r0)) = bl.first() else { return false };
    if l0.before(ack) {
        return true;
    }
    matches!(bl.get(1), Some(&(l1, r1)) if !r0.after(r1) && !l0.before(l1))
}

impl Conn {
    // ---- SACK (tcp_sacktag_write_queue) ----

    /// `tcp_sacktag_write_queue()`: marks whole segments covered by SACK blocks. Returns
    /// what was found and whether the first block was a D-SACK.
    /// Newly SACKed segments count as delivered (with ECE: `delivered_ce` too).
    pub(super) fn sacktag_write_queue(&mut self, cfg: &TcpConfig, now: Instant, ack: SeqNumber, blocks: &SackBlocks, ece: bool) -> (SackTag, bool) {
        let bl = blocks.as_slice();
        let dsack = is_dsack(bl, ack);
        let prior_fack = self.rtx.fack_seq(self.snd_una, self.sack_ok);
        let mut st = SackTag {
            newly: 0,
            first: None,
            last: None,
            reord: self.snd_nxt,
            orig_sack_acked: false,
            data_sacked: false,
        };
        // 6.x: a dubious D-SACK is skipped as if it were none (tcp_dsack_seen() returns 0)
        let dsack = dsack && self.dsack_seen(cfg, bl[0], &mut st.reord, ece);
        let (snd_una, snd_nxt, high_seq) = (self.snd_una, self.snd_nxt, self.high_seq);
        let min_rtt_us = self.rtt.min_rtt_us;
        for (i, &(l, r)) in bl.iter().enumerate() {
            if i == 0 && dsack {
                continue;
            }
            // tcp_is_sackblock_valid()
            if !r.after(l) || !r.after(snd_una) || r.after(snd_nxt) {
                continue;
            }
            let (rate, rack) = (&mut self.rate, &mut self.rack);
            self.rtx.tag_block(l.max(snd_una), r, high_seq, prior_fack, &mut st, |s, prior_sacked| {
                rack.advance(now, prior_sacked, s.end, s.xmit, min_rtt_us);
                rate.skb_delivered(s);
                rate.count_delivered(1, ece);
            });
        }
        if st.reord.before(prior_fack) {
            self.check_sack_reordering(cfg, st.reord, prior_fack);
        }
        (st, dsack)
    }

    /// `tcp_check_dsack()` / `tcp_sacktag_one(dup_sack)`: each D-SACKed retransmission
    /// proves one retransmission spurious (`undo_retrans`); a D-SACK also widens RACK's
    /// reordering window (`tcp_rack_update_reo_wnd()`). 6.x (`dsack_6`, `tcp_dsack_seen()`):
    /// the duplicates count as delivered, a D-SACK of more duplicates than retransmissions
    /// (or wider than the largest window) is ignored (returns false), and a loss probe's
    /// duplicate (`FLAG_DSACK_TLP`) or one before any reordering leaves RACK's window alone.
    fn dsack_seen(&mut self, cfg: &TcpConfig, (l0, r0): (SeqNumber, SeqNumber), reord: &mut SeqNumber, ece: bool) -> bool {
        if cfg.dsack_6 {
            let len = r0.dist(l0);
            let mss = self.mss_cache.max(1);
            if len > self.max_window {
                return false;
            }
            let dup_segs = if len > mss { len.div_ceil(mss) } else { 1 };
            self.tlp.dsack_tlp = len <= mss && self.tlp.high_seq == Some(r0);
            self.stats.dsack_count += dup_segs;
            if self.stats.dsack_count > self.stats.total_retrans {
                return false;
            }
            if self.rack.reord && !self.tlp.dsack_tlp {
                self.rack.on_dsack(cfg.tcp_recovery);
            }
            // "A spurious retransmission is delivered" (state->sack_delivered)
            self.rate.count_delivered(dup_segs, ece);
        } else {
            self.stats.dsack_count += 1;
            self.rack.on_dsack(cfg.tcp_recovery);
        }
        self.dsack_undo(l0, r0, reord);
        true
    }

    /// The `undo_retrans` half of `tcp_check_dsack()` / `tcp_sacktag_one(dup_sack)`.
    fn dsack_undo(&mut self, l0: SeqNumber, r0: SeqNumber, reord: &mut SeqNumber) {
        let Some(um) = self.undo.marker else { return };
        if self.undo.retrans <= 0 || !r0.after(um) {
            return;
        }
        if !r0.after(self.snd_una) {
            let mss = self.mss_cache.max(1);
            self.undo.dsacked(r0.dist(l0).div_ceil(mss));
        } else {
            let n = self.rtx.dsack_retrans_in(l0, r0, reord);
            self.undo.dsacked(n);
        }
    }

    /// `tcp_check_sack_reordering()`: raise the dupthresh to the observed displacement
    /// (in packets), up to `tcp_max_reordering`.
    pub(super) fn check_sack_reordering(&mut self, cfg: &TcpConfig, low_seq: SeqNumber, fack: SeqNumber) {
        let mss = self.mss_cache.max(1);
        let metric = fack.dist(low_seq);
        if metric > self.reordering.saturating_mul(mss) {
            self.reordering = metric.div_ceil(mss).min(cfg.tcp_max_reordering);
        }
        self.stats.reord_seen += 1;
        // tcp_update_reordering(): reordering makes early retransmit unsafe
        self.thin.er_disabled = true;
        self.rack.reord = true;
    }

    // ---- undo ----

    /// `tcp_packet_delayed()`: the ACK echoes a timestamp older than our first
    /// retransmission, so the original got through (Eifel detection, RFC 3522).
    fn packet_delayed(&self) -> bool {
        match self.retrans_stamp {
            None => true,
            Some(t) => {
                self.tstamp_ok && self.saw_tstamp_ecr != 0 && (self.saw_tstamp_ecr.wrapping_sub(self.ts_now(t)) as i32) < 0
            }
        }
    }

    /// `tcp_undo_cwnd_reduction()`.
    fn undo_cwnd_reduction(&mut self, now: Instant, unmark_loss: bool) {
        if unmark_loss {
            self.rtx.unmark_lost();
        }
        if self.undo.prior_ssthresh != 0 {
            self.tp.snd_cwnd = self.cc.undo_cwnd(&self.tp);
            if self.undo.prior_ssthresh > self.tp.snd_ssthresh {
                self.tp.snd_ssthresh = self.undo.prior_ssthresh;
                self.ecn.withdraw_cwr();
            }
        }
        self.snd_cwnd_stamp = now;
        self.undo.marker = None;
        self.undo.count += 1;
    }

    /// `tcp_try_undo_recovery()`: returns true if the state must be held (Reno).
    fn try_undo_recovery(&mut self, now: Instant) -> bool {
        if self.undo.may_undo(self.packet_delayed()) {
            // happy end: nothing retransmitted or the originals got through
            self.undo_cwnd_reduction(now, false);
        }
        if self.snd_una == self.high_seq && !self.sack_ok {
            // Reno holds the state until something above high_seq is ACKed (RFC 6582)
            if self.rtx.retrans_out == 0 {
                self.retrans_stamp = None;
            }
            return true;
        }
        self.set_ca_state(CaState::Open);
        false
    }

    /// `tcp_try_undo_dsack()`: D-SACKs covered all retransmissions.
    fn try_undo_dsack(&mut self, now: Instant) -> bool {
        if self.undo.all_dsacked() {
            self.undo_cwnd_reduction(now, false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_loss()`.
    fn try_undo_loss(&mut self, now: Instant, frto_undo: bool) -> bool {
        if frto_undo || self.undo.may_undo(self.packet_delayed()) {
            self.undo_cwnd_reduction(now, true);
            self.retransmits = 0;
            if frto_undo || self.sack_ok {
                self.set_ca_state(CaState::Open);
            }
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial()`: returns true to stop processing this ACK.
    fn try_undo_partial(&mut self, cfg: &TcpConfig, now: Instant, prior_snd_una: SeqNumber) -> bool {
        if self.undo.marker.is_some() && self.packet_delayed() {
            // Plain luck: the hole was filled by the delayed original. That is reordering.
            let fack = self.rtx.fack_seq(self.snd_una, self.sack_ok).max(self.snd_una);
            self.check_sack_reordering(cfg, prior_snd_una, fack);
            if self.rtx.retrans_out > 0 {
                return true;
            }
            self.retrans_stamp = None;
            self.undo_cwnd_reduction(now, true);
            self.try_to_open();
        }
        false
    }

    // ---- entering recovery ----

    /// `tcp_time_to_recover()` (3.x form): proven loss, the dupthresh rule, the thin-stream
    /// rule (`tcp_thin_dupack`, 2.6.34–4.12) and RFC 5827 early retransmit (3.5–4.13).
    /// Linux's "Trick#4" (all but a few of a tiny window SACKed and nothing to send) is
    /// not modelled: it can only fire with `tcp_reordering` above 3.
    fn time_to_recover(&mut self, cfg: &TcpConfig, now: Instant) -> Option<RecoverTrigger> {
        if self.rtx.lost_out > 0 {
            return Some(RecoverTrigger::Classic);
        }
        // tcp_dupack_heuristics() = sacked_out + 1 (no FACK; with FACK, fackets_out > 1
        // holds exactly when sacked_out >= 1 too, so the thin rule is unaffected)
        let dupack_heuristics = self.rtx.sacked_out + 1;
        // 4.18+: with RACK the dupthresh rule is RACK's (reo_wnd 0 at the dupthresh)
        if !(self.rack_on(cfg) && self.sack_ok) && dupack_heuristics > self.reordering {
            return Some(RecoverTrigger::Classic);
        }
        // If a thin stream is detected, retransmit after the first dupACK; only with SACK
        // (spurious-retransmission corner cases) and with nothing unsent (tcp_send_head).
        if self.thin.mfr_on(cfg) && self.stream_is_thin() && dupack_heuristics > 1 && self.sack_ok && !self.has_unsent() {
            return Some(RecoverTrigger::ThinDupack);
        }
        // Trick#6: early retransmit, RFC 5827, with Mitigation A.3 (delay) for modes 2, 3.
        if self.do_early_retrans(cfg)
            && self.rtx.retrans_out == 0
            && self.rtx.sacked_out > 0
            && self.rtx.packets_out > self.rtx.sacked_out
            && self.rtx.packets_out < 4
            && !self.may_send_now()
        {
            return if self.pause_early_retransmit(cfg, now) { None } else { Some(RecoverTrigger::EarlyRetrans) };
        }
        None
    }

    /// `tp->do_early_retrans` (`tcp_enable_early_retrans()`, 3.10–4.3; 4.4+ also needs RACK
    /// off): modes 1–3, not with the `tcp_thin_dupack` sysctl, only at the default
    /// `tcp_reordering` of 3, and off for good once reordering was seen.
    fn do_early_retrans(&self, cfg: &TcpConfig) -> bool {
        let m = self.thin.early_retrans_mode(cfg);
        (1..=3).contains(&m) && !cfg.tcp_thin_dupack && cfg.tcp_reordering == 3 && cfg.tcp_recovery & 1 == 0 && !self.thin.er_disabled
    }

    /// `tcp_pause_early_retransmit()`: modes 2 and 3 defer the early retransmit by
    /// max(srtt/4, 2 ms) unless the RTO would fire first. True when deferred.
    fn pause_early_retransmit(&mut self, cfg: &TcpConfig, now: Instant) -> bool {
        let m = self.thin.early_retrans_mode(cfg);
        if !(2..=3).contains(&m) || self.rtt.srtt_us == 0 {
            return false;
        }
        let delay = round_jiffies(cfg, Duration::from_micros((self.rtt.srtt_us >> 5) as u64))
            .max(round_jiffies(cfg, Duration::from_millis(2)));
        let Some((t, _)) = self.xmit_timer else { return false };
        if t <= timer_at(cfg, now, delay) {
            return false;
        }
        self.reset_xmit_timer(cfg, now, XmitTimer::EarlyRetrans, delay);
        true
    }

    /// `tcp_resume_early_retransmit()`: the ER delay expired without an ACK.
    pub(super) fn resume_early_retransmit(&mut self, cfg: &TcpConfig, now: Instant) {
        self.rearm_rto(cfg, now);
        if !self.do_early_retrans(cfg) || self.rtx.packets_out == 0 || self.ca_state >= CaState::Recovery {
            return;
        }
        self.thin.er_count += 1;
        self.enter_recovery(cfg, now);
        self.update_scoreboard(true);
    }

    /// `tcp_current_ssthresh()`.
    pub(super) fn current_ssthresh(&self) -> u32 {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.tp.snd_ssthresh
        } else {
            self.tp.snd_ssthresh.max((self.tp.snd_cwnd >> 1) + (self.tp.snd_cwnd >> 2))
        }
    }

    /// `tcp_init_cwnd_reduction()`: ssthresh from the module, PRR counters reset (without
    /// PRR, pre-3.2, cwnd drops to ssthresh at once: an approximation of rate halving).
    fn init_cwnd_reduction(&mut self, cfg: &TcpConfig, now: Instant) {
        self.high_seq = self.snd_nxt;
        self.tlp.high_seq = None;
        self.tp.snd_cwnd_cnt = 0;
        self.tp.prior_cwnd = self.tp.snd_cwnd;
        self.prr.start();
        self.sync_tp(cfg, now);
        self.tp.snd_ssthresh = self.cc.ssthresh(&self.tp);
        if !cfg.prr && !self.cc.has_cong_control() {
            self.tp.snd_cwnd = self.tp.snd_ssthresh.max(1);
        }
        self.ecn.queue_cwr();
    }

    /// `tcp_enter_recovery()`.
    pub(super) fn enter_recovery(&mut self, cfg: &TcpConfig, now: Instant) {
        self.undo.init(cfg.undo, self.snd_una, self.rtx.retrans_out);
        self.undo.prior_ssthresh = self.current_ssthresh();
        self.init_cwnd_reduction(cfg, now);
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_enter_cwr()`: reduce cwnd without retransmitting (PRR paces it); no undo.
    pub(super) fn enter_cwr(&mut self, cfg: &TcpConfig, now: Instant) {
        self.undo.prior_ssthresh = 0;
        if self.ca_state < CaState::Cwr {
            self.undo.marker = None;
            self.init_cwnd_reduction(cfg, now);
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// `tcp_end_cwnd_reduction()` (a module with `cong_control` keeps its cwnd).
    fn end_cwnd_reduction(&mut self) {
        if self.cc.has_cong_control() {
            return;
        }
        if self.tp.snd_ssthresh < TCP_INFINITE_SSTHRESH {
            self.tp.snd_cwnd = self.tp.snd_ssthresh;
        }
    }

    /// `tcp_try_to_open()`: an ECE on this ACK enters CWR (RFC 3168 §6.1.2); CWR is held
    /// until `high_seq` is ACKed, otherwise `tcp_try_keep_open()`.
    fn try_to_open_flag(&mut self, cfg: &TcpConfig, now: Instant, flag: u32) {
        if flag & FLAG_ECE != 0 {
            self.enter_cwr(cfg, now);
        }
        if self.ca_state == CaState::Cwr {
            if self.rtx.retrans_out == 0 {
                self.retrans_stamp = None;
            }
            return;
        }
        self.try_to_open();
    }

    /// `tcp_try_keep_open()` (with `tcp_try_to_open()`'s reset of `retrans_stamp`).
    fn try_to_open(&mut self) {
        if self.rtx.retrans_out == 0 {
            self.retrans_stamp = None;
        }
        let st = if self.rtx.sacked_out + self.rtx.lost_out > 0 || self.rtx.retrans_out > 0 {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.ca_state != st {
            self.set_ca_state(st);
            self.high_seq = self.snd_nxt;
        }
    }

    // ---- Reno dupACK emulation and loss marking ----

    /// `tcp_add_reno_sack()` with `tcp_limit_reno_sacked()`.
    fn add_reno_sack(&mut self, n: u32) {
        if n == 0 {
            return;
        }
        let prior = self.rtx.sacked_out;
        self.rtx.sacked_out += n;
        let holes = self.rtx.lost_out.max(1).min(self.rtx.packets_out);
        if self.rtx.sacked_out + holes > self.rtx.packets_out {
            self.rtx.sacked_out = self.rtx.packets_out.saturating_sub(holes);
        }
        self.rate.delivered += self.rtx.sacked_out.saturating_sub(prior);
    }

    /// `tcp_remove_reno_sacks()` for a cumulative ACK of `acked` packets, with
    /// `sacked_out` as it was before the ACK: one packet filled the hole, the others
    /// were already counted as delivered by their duplicate ACKs (`tcp_add_reno_sack()`),
    /// so `tcp_count_delivered()` gets max(acked - sacked_out, 1) — not one per packet,
    /// which is why the rtx-queue walk leaves the count to this function without SACK.
    pub(super) fn remove_reno_sacks(&mut self, acked: u32, sacked_out: u32, ece: bool) {
        if acked > 0 {
            self.rate.count_delivered(acked.saturating_sub(sacked_out).max(1), ece);
            if acked > sacked_out {
                self.rtx.sacked_out = 0;
            } else {
                self.rtx.sacked_out = sacked_out - (acked - 1);
            }
        }
    }

    /// `tcp_update_scoreboard()` (non-RACK).
    fn update_scoreboard(&mut self, fast_rexmit: bool) {
        if self.sack_ok {
            let upto = self.rtx.sacked_out as i64 - self.reordering as i64;
            if upto >= 0 {
                self.rtx.mark_head_lost(upto as u32, false, true);
            } else if fast_rexmit {
                self.rtx.mark_head_lost(1, true, true);
            }
        }
    }

    /// `tcp_newreno_mark_lost()`: without SACK, the head is lost after `reordering`
    /// dupacks, and again on each partial ACK in recovery.
    fn newreno_mark_lost(&mut self, una_advanced: bool) {
        let Some(head) = self.rtx.q.front() else { return };
        if ((self.ca_state < CaState::Recovery && self.rtx.sacked_out >= self.reordering)
            || (self.ca_state == CaState::Recovery && una_advanced))
            && head.sacked & LOST == 0
        {
            self.rtx.mark_lost(0);
        }
    }

    /// `tcp_identify_packet_loss()`: NewReno without SACK, RACK with it when
    /// `tcp_recovery` has `TCP_RACK_LOSS_DETECTION`.
    fn identify_packet_loss(&mut self, cfg: &TcpConfig, now: Instant, una_advanced: bool) {
        if self.rtx.q.is_empty() {
            return;
        }
        if !self.sack_ok {
            self.newreno_mark_lost(una_advanced);
        } else if self.rack_on(cfg) {
            self.rack_mark_lost(cfg, now);
        }
    }

    // ---- tcp_fastretrans_alert ----

    /// `tcp_fastretrans_alert()`: the loss-recovery state machine, run for "dubious" ACKs
    /// (dupACKs, SACKs, D-SACKs, or any ACK outside the Open state).
    pub(super) fn fastretrans_alert(&mut self, cfg: &TcpConfig, now: Instant, prior_snd_una: SeqNumber, flag: u32, num_dupack: u32) {
        let una_advanced = flag & FLAG_SND_UNA_ADVANCED != 0;
        if self.rtx.packets_out == 0 && self.rtx.sacked_out > 0 {
            self.rtx.sacked_out = 0;
        }
        let do_lost = una_advanced || num_dupack > 0 || self.sack_ok;
        // D. exit conditions once high_seq is ACKed
        if self.recovery_exit(now) {
            return;
        }
        // E. process state
        let (fast_rexmit, thin_rexmit) = match self.ca_state {
            CaState::Recovery => {
                if !self.recovery_step(cfg, now, prior_snd_una, flag, num_dupack) {
                    return;
                }
                (false, false)
            }
            CaState::Loss => return self.process_loss(now, flag, num_dupack),
            _ => match self.open_or_enter_recovery(cfg, now, flag, num_dupack) {
                Some(thin) => (true, thin),
                None => return,
            },
        };
        // 4.18+: with RACK, RACK alone marks losses; the thin-stream and early-retransmit
        // rules still need the head marked lost
        if do_lost && (!self.rack_on(cfg) || !self.sack_ok || thin_rexmit) {
            self.update_scoreboard(fast_rexmit);
        }
    }

    /// Step D of `tcp_fastretrans_alert()`: leave CWR or Recovery once `high_seq` is
    /// ACKed. True when the ACK's processing ends here (Reno holding Recovery).
    fn recovery_exit(&mut self, now: Instant) -> bool {
        if self.ca_state == CaState::Open {
            self.retrans_stamp = None;
            return false;
        }
        if self.snd_una.before(self.high_seq) {
            return false;
        }
        match self.ca_state {
            // CWR is held until something above high_seq is ACKed
            CaState::Cwr if self.snd_una != self.high_seq => {
                self.end_cwnd_reduction();
                self.set_ca_state(CaState::Open);
            }
            CaState::Recovery => {
                if !self.sack_ok {
                    self.rtx.sacked_out = 0;
                }
                self.rack.on_recovery_exit();
                if self.try_undo_recovery(now) {
                    return true;
                }
                self.end_cwnd_reduction();
            }
            _ => {}
        }
        false
    }

    /// Step E in Recovery: Reno dupACK counting, partial and D-SACK undo, loss
    /// identification; a new recovery only if loss is evident after an undo. False when
    /// the ACK's processing ends here.
    fn recovery_step(&mut self, cfg: &TcpConfig, now: Instant, prior_snd_una: SeqNumber, flag: u32, num_dupack: u32) -> bool {
        let una_advanced = flag & FLAG_SND_UNA_ADVANCED != 0;
        if !una_advanced {
            if !self.sack_ok {
                self.add_reno_sack(num_dupack);
            }
        } else if self.try_undo_partial(cfg, now, prior_snd_una) {
            return false;
        }
        if self.try_undo_dsack(now) {
            self.try_to_open_flag(cfg, now, flag);
        }
        self.identify_packet_loss(cfg, now, una_advanced);
        if self.ca_state != CaState::Recovery {
            // undone: start a new recovery only if loss is evident
            if self.time_to_recover(cfg, now).is_none() {
                return false;
            }
            self.enter_recovery(cfg, now);
        }
        true
    }

    /// `tcp_process_loss()`: after an RTO, undo if the timeout was spurious (timestamps,
    /// F-RTO) or return to Open once everything sent before it is ACKed.
    fn process_loss(&mut self, now: Instant, flag: u32, num_dupack: u32) {
        let una_advanced = flag & FLAG_SND_UNA_ADVANCED != 0;
        let recovered = !self.snd_una.before(self.high_seq);
        if una_advanced && self.try_undo_loss(now, false) {
            return;
        }
        if self.frto {
            // F-RTO, RFC 5682 3.1 (SACK-enhanced). Step 3.b: the timeout was spurious if
            // never-retransmitted data is (S)ACKed.
            if flag & FLAG_ORIG_SACK_ACKED != 0 && self.try_undo_loss(now, true) {
                return;
            }
            if self.snd_nxt.after(self.high_seq) {
                // step 3.a: loss was real
                if flag & FLAG_DATA_SACKED != 0 || num_dupack > 0 {
                    self.frto = false;
                }
            } else if una_advanced && !recovered {
                self.high_seq = self.snd_nxt;
                // step 2.b: send new data first (after cwnd grows on this ACK)
                if self.has_unsent() && (self.snd_una + self.snd_wnd).after(self.snd_nxt) {
                    self.rexmit_new = true;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            self.try_undo_recovery(now);
            return;
        }
        if !self.sack_ok && una_advanced {
            self.rtx.sacked_out = 0;
        }
    }

    /// Step E in Open/Disorder/CWR: count Reno dupACKs, try a D-SACK undo, identify
    /// losses, and enter Recovery when `tcp_time_to_recover()` says so. Returns whether
    /// recovery started (and whether by the thin-stream or early-retransmit rule).
    fn open_or_enter_recovery(&mut self, cfg: &TcpConfig, now: Instant, flag: u32, num_dupack: u32) -> Option<bool> {
        let una_advanced = flag & FLAG_SND_UNA_ADVANCED != 0;
        if !self.sack_ok {
            if una_advanced {
                self.rtx.sacked_out = 0;
            }
            self.add_reno_sack(num_dupack);
        }
        if self.ca_state <= CaState::Disorder {
            self.try_undo_dsack(now);
        }
        self.identify_packet_loss(cfg, now, una_advanced);
        let thin_rexmit = match self.time_to_recover(cfg, now) {
            None => {
                self.try_to_open_flag(cfg, now, flag);
                return None;
            }
            Some(RecoverTrigger::ThinDupack) => {
                self.thin.dupack_count += 1;
                true
            }
            Some(RecoverTrigger::EarlyRetrans) => {
                self.thin.er_count += 1;
                true
            }
            Some(RecoverTrigger::Classic) => false,
        };
        self.enter_recovery(cfg, now);
        Some(thin_rexmit)
    }

    /// `tcp_enter_loss()` on RTO.
    pub(super) fn enter_loss(&mut self, cfg: &TcpConfig, now: Instant) {
        let new_recovery = self.ca_state < CaState::Recovery;
        // F-RTO step 1: only outside a recovery, or on a recurring timeout of the same data
        self.frto = cfg.tcp_frto > 0 && (new_recovery || self.retransmits > 0);
        // tcp_timeout_mark_lost()
        if !self.sack_ok {
            self.rtx.sacked_out = 0;
        }
        self.rtx.mark_all_lost();
        if self.ca_state <= CaState::Disorder
            || !self.high_seq.after(self.snd_una)
            || (self.ca_state == CaState::Loss && self.retransmits == 0)
        {
            self.undo.prior_ssthresh = self.current_ssthresh();
            self.tp.prior_cwnd = self.tp.snd_cwnd;
            self.sync_tp(cfg, now);
            self.tp.snd_ssthresh = self.cc.ssthresh(&self.tp);
            self.ca_event(cfg, now, CaEvent::Loss);
            self.undo.init(cfg.undo, self.snd_una, self.rtx.retrans_out);
        }
        self.tp.snd_cwnd = self.in_flight() + 1;
        self.tp.snd_cwnd_cnt = 0;
        if self.ca_state <= CaState::Disorder && self.rtx.sacked_out >= cfg.tcp_reordering {
            self.reordering = self.reordering.min(cfg.tcp_reordering);
        }
        self.sync_tp(cfg, now);
        self.set_ca_state(CaState::Loss);
        self.high_seq = self.snd_nxt;
        self.ecn.queue_cwr();
    }

    // ---- tail loss probe ----

    /// `tcp_schedule_loss_probe()`: arm the probe timeout (PTO) instead of the RTO in Open
    /// state, for SACK connections (3.x/4.x: only those limited by cwnd or by the
    /// application).
    ///
    /// 3.10–4.12 (RACK off): needs an RTT sample in whole jiffies; PTO = max(2·srtt,
    /// 10 ms), with one packet out at least 1.5·srtt + `TCP_DELACK_MAX`; never later than
    /// the pending RTO. RACK-TLP (RACK on, 4.13+/6.x): PTO = 2·srtt + (one packet out ?
    /// `TCP_RTO_MIN` : 2 jiffies), `TCP_TIMEOUT_INIT` without a sample; Open or CWR; capped
    /// by the RTO (a whole RTO after an ACK, `advanced`; else the time left to it).
    pub(super) fn schedule_loss_probe(&mut self, cfg: &TcpConfig, now: Instant, advanced: bool) {
        if !self.xmit_timer_is(XmitTimer::Retrans.bit()) {
            return;
        }
        let rack = self.rack_on(cfg);
        let ca_ok = self.ca_state == CaState::Open || (rack && self.ca_state == CaState::Cwr);
        if self.thin.early_retrans_mode(cfg) < 3
            || self.rtx.packets_out == 0
            || !self.sack_ok
            || !ca_ok
            || !matches!(self.state, TcpState::Established | TcpState::CloseWait | TcpState::FinWait1 | TcpState::LastAck)
        {
            return;
        }
        // 3.x/4.x: only when limited by cwnd or by the application; 6.x (checked on 6.18,
        // own/tlp-rwnd-limited.pkt) has no such test
        if !cfg.tlp_6 && self.tp.snd_cwnd > self.in_flight() && self.has_unsent() {
            return;
        }
        if rack {
            self.schedule_rack_tlp(cfg, now, advanced);
        } else {
            self.schedule_tlp_3x(cfg, now);
        }
    }

    /// The RACK-TLP era's PTO (4.13+).
    fn schedule_rack_tlp(&mut self, cfg: &TcpConfig, now: Instant, advanced: bool) {
        let rto = self.rtt.rto;
        let mut timeout = if self.rtt.srtt_us != 0 {
            let two_srtt = round_jiffies(cfg, Duration::from_micros((self.rtt.srtt_us >> 2) as u64));
            two_srtt + if self.rtx.packets_out == 1 { cfg.rto_min } else { cfg.jiffy() * 2 }
        } else {
            cfg.rto_init
        };
        // `advancing_rto` (after an ACK, tcp_set_xmit_timer()): the RTO is about to restart
        // from now, so the whole icsk_rto; otherwise (new data sent) the time left to the
        // pending RTO, counted from the head's transmission (tcp_rto_delta_us())
        let rto_left = if advanced { rto } else { self.rtx.q.front().map_or(rto, |h| (h.xmit + rto).saturating_since(now)) };
        if rto_left > Duration::ZERO {
            timeout = timeout.min(rto_left);
        }
        self.reset_xmit_timer(cfg, now, XmitTimer::LossProbe, timeout);
    }

    /// The 3.10–4.12 PTO, in whole jiffies as 3.14 computes it from its jiffy-based srtt
    /// (`!rtt` -> no probe).
    fn schedule_tlp_3x(&mut self, cfg: &TcpConfig, now: Instant) {
        let jn = cfg.jiffy().as_nanos().max(1);
        let rtt_j = self.rtt.srtt() * 1000 / jn;
        if rtt_j == 0 {
            return;
        }
        let mut timeout_j = rtt_j * 2;
        if self.rtx.packets_out == 1 {
            timeout_j = timeout_j.max(rtt_j + (rtt_j >> 1) + cfg.delack_max.as_nanos().div_ceil(jn));
        }
        timeout_j = timeout_j.max(10_000_000u64.div_ceil(jn));
        let tlp_at = timer_at(cfg, now, Duration::from_nanos(timeout_j * jn));
        if let Some((rto_at, _)) = self.xmit_timer {
            if tlp_at > rto_at {
                if rto_at > now {
                    self.xmit_timer = Some((rto_at, XmitTimer::LossProbe));
                }
                return;
            }
        }
        self.xmit_timer = Some((tlp_at, XmitTimer::LossProbe));
    }

    /// `tcp_process_tlp_ack()`: a TLP episode ends with the probe's dupACK (the tail got
    /// through: no loss) or with an ACK beyond `tlp_high_seq` (the probe repaired a
    /// loss: reduce cwnd once, via CWR).
    pub(super) fn process_tlp_ack(&mut self, cfg: &TcpConfig, now: Instant, ack: SeqNumber, not_dup: bool, dsack: bool) {
        let Some(h) = self.tlp.high_seq else { return };
        // 6.x: only a D-SACK of the probe itself (FLAG_DSACK_TLP) shows no loss
        let dsack = if cfg.dsack_6 { self.tlp.dsack_tlp } else { dsack };
        if self.rack_on(cfg) {
            // RACK-TLP era: a probe of new data, or a D-SACKed probe, shows no loss
            if ack.before(h) {
                return;
            }
            if !self.tlp.retrans || dsack {
                self.tlp.high_seq = None;
                return;
            }
        }
        if ack == h && !not_dup {
            self.tlp.high_seq = None;
            return;
        }
        if ack.after(h) {
            self.tlp.high_seq = None;
            if !dsack {
                // tcp_init_cwnd_reduction + CWR + tcp_end_cwnd_reduction + try_keep_open
                self.enter_cwr(cfg, now);
                self.end_cwnd_reduction();
                self.set_ca_state(CaState::Open);
                self.try_to_open();
            }
        }
    }
}
