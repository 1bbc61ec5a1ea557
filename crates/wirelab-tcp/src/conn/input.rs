//! Input processing (`tcp_input.c`): segments per state (`tcp_rcv_state_process`,
//! `tcp_rcv_synsent_state_process`, `tcp_timewait_state_process`), `tcp_ack` in the
//! named steps Linux has, the data and out-of-order queues (`tcp_data_queue`), FIN,
//! the quick-ACK / delayed-ACK decisions (`tcp_event_data_recv`, `__tcp_ack_snd_check`)
//! and receive-buffer tuning (`tcp_rcv_space_adjust`, `tcp_grow_window`).
use super::delack::{ACK_NOW, ACK_SCHED};
use super::ecn::EcnRx;
use super::scoreboard::{CleanResult, SackTag};
use super::thin::rdb_check_rtx_queue_loss;
use super::timer::timer_at;
use super::{Conn, Out, RstSpec, SkTimer, XmitTimer, TCP_MIN_MSS, TCP_MSS_DEFAULT};
use crate::api::{SockError, TcpState};
use crate::cc::{AckSample, CaEvent, CaState, CA_ACK_ECE, CA_ACK_SLOWPATH, CA_ACK_WIN_UPDATE};
use super::rcvspace::rcvbuf_grow_win;
use crate::config::{RcvSpaceStyle, RdbMode, TcpConfig};
use crate::ring::SendRing;
use crate::wire::{flags, SackBlocks, SeqNumber, TcpRepr};
use std::collections::VecDeque;
use wirelab_core::{Instant, SockEvent};

// `tcp_ack()` flags (tcp_input.c), for the bits this engine computes.
/// The ACK updated the send window.
pub(super) const FLAG_WIN_UPDATE: u32 = 0x02;
/// The ACK acknowledged new data (cumulatively).
pub(super) const FLAG_DATA_ACKED: u32 = 0x04;
/// ... some of which had been retransmitted (no RTT sample from it).
pub(super) const FLAG_RETRANS_DATA_ACKED: u32 = 0x08;
/// New SACK.
pub(super) const FLAG_DATA_SACKED: u32 = 0x20;
/// ECE in this ACK (on an ECN connection).
pub(super) const FLAG_ECE: u32 = 0x40;
/// Never-retransmitted data below `high_seq` was (S)ACKed.
pub(super) const FLAG_ORIG_SACK_ACKED: u32 = 0x200;
/// `snd_una` advanced.
pub(super) const FLAG_SND_UNA_ADVANCED: u32 = 0x400;
/// The ACK carried a D-SACK.
pub(super) const FLAG_DSACKING_ACK: u32 = 0x800;

impl Conn {
    /// Processes one segment addressed to this connection (`tcp_rcv_state_process` /
    /// `tcp_rcv_established`).
    pub fn process(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, tos: u8, out: &mut Out) {
        self.stats.segs_in += 1;
        self.last_now = now;
        if !r.payload.is_empty() {
            if let Some(p) = self.rcv_policy.as_mut() {
                p.on_data(now, r.payload.len());
            }
        }
        self.rx_tos = tos;
        match self.state {
            TcpState::Closed | TcpState::Listen => {}
            TcpState::SynSent => self.rcv_synsent(cfg, now, r, out),
            TcpState::TimeWait => self.rcv_timewait(cfg, now, r),
            _ => self.rcv_synchronized(cfg, now, r, out),
        }
    }

    /// `tcp_rcv_synsent_state_process()`.
    fn rcv_synsent(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, out: &mut Out) {
        if r.has(flags::ACK) && (!r.ack.after(self.iss) || r.ack.after(self.snd_nxt)) {
            if !r.has(flags::RST) {
                out.rst.push_back(RstSpec { src: self.local, dst: self.remote, seq: r.ack, ack: None, tos: self.tos, window: 0, ts: None });
            }
            return;
        }
        if r.has(flags::RST) {
            if r.has(flags::ACK) {
                self.err = Some(SockError::ConnectionRefused);
                self.notify(out, SockEvent::ConnectFailed);
                self.closed_notified = true;
                self.enter_closed(now);
            }
            return;
        }
        if !r.has(flags::SYN) {
            return;
        }
        self.irs = r.seq;
        self.rcv_nxt = r.seq + 1;
        self.rcv_wup = self.rcv_nxt;
        self.copied_seq = self.rcv_nxt;
        let prev_wscale_ok = self.wscale_ok;
        self.negotiate(cfg, r);
        if !prev_wscale_ok {
            self.wscale_ok = false;
        }
        if !self.wscale_ok {
            self.rcv_wscale = 0;
        }
        if r.has(flags::ACK) {
            self.ecn.rcv_synack(r.has(flags::ECE), r.has(flags::CWR));
            self.snd_una = r.ack;
            self.snd_wnd = r.window as u32; // never scaled in a SYN
            self.max_window = self.snd_wnd;
            self.snd_wl1 = r.seq;
            self.handshake_done(cfg, now, r);
            self.notify(out, SockEvent::Connected);
            // Linux ACKs the SYN-ACK at once (no defer_accept / write_pending here).
            self.ack.send_now = true;
            if self.fin_queued {
                self.state = TcpState::FinWait1;
            }
        } else {
            // Simultaneous open: SYN-RECV, SYN-ACK pending.
            self.ecn.rcv_syn(r.has(flags::ECE), r.has(flags::CWR));
            self.state = TcpState::SynRecv;
            self.snd_wnd = r.window as u32;
            self.snd_wl1 = r.seq;
            self.select_initial_window(cfg);
            self.tx_syn = true;
        }
    }

    /// The handshake completed (SYN-ACK in SYN-SENT, ACK in SYN-RECV): an RTT sample from
    /// the SYN (Karn: only if not retransmitted) or its timestamp echo, then ESTABLISHED.
    fn handshake_done(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr) {
        let rtt = if !self.syn_retrans { Some(now.saturating_since(self.syn_xmit).as_micros().max(1)) } else { self.ts_rtt_us(now, r) };
        self.rtt.ack_update_rtt(cfg, rtt, self.snd_una, self.snd_nxt);
        self.xmit_timer = None;
        self.retransmits = 0;
        // The SYN (or SYN-ACK) counts as one delivered packet, before the congestion
        // module is initialised: passive, tcp_rcv_state_process() (TCP_SYN_RECV:
        // `tp->delivered++`); active, tcp_ack() -> tcp_clean_rtx_queue() of the SYN skb.
        // Proven on 6.18: handshake-delivered-{active,passive}.pkt.
        self.rate.count_delivered(1, false);
        self.state = TcpState::Established;
        self.init_transfer(cfg, now);
    }

    /// RTT from the timestamp echo of `r` (`tcp_rtt_tsopt_us()`), if any.
    fn ts_rtt_us(&self, now: Instant, r: &TcpRepr) -> Option<u64> {
        if !self.tstamp_ok {
            return None;
        }
        let (_, ecr) = r.timestamp?;
        if ecr == 0 {
            return None;
        }
        let d = self.ts_now(now).wrapping_sub(ecr) as i32;
        (d >= 0).then(|| (d as u64 * 1000).max(1))
    }

    /// `tcp_init_transfer()` + `tcp_init_buffer_space()`.
    fn init_transfer(&mut self, cfg: &TcpConfig, now: Instant) {
        let no_sample = self.syn_retrans && self.rtt.srtt_us == 0;
        self.tp.snd_cwnd = if no_sample { 1 } else { cfg.init_cwnd.max(1) };
        if no_sample {
            // TCP_TIMEOUT_FALLBACK after a lost SYN without an RTT sample
            self.rtt.rto = wirelab_core::Duration::from_secs(3).max(cfg.rto_init);
        }
        if !self.cc_initialized {
            self.init_congestion_control(cfg, now);
        }
        self.snd_buf_seq = self.iss + 1;
        self.snd_sml = self.snd_nxt;
        self.cwnd_usage_seq = self.snd_nxt;
        self.lsndtime = now;
        self.snd_cwnd_stamp = now;
        if !self.sndbuf_locked {
            self.sndbuf_expand(cfg);
        }
        self.rcvq.time = now;
        self.rcvq.seq = self.copied_seq;
        let maxwin = self.tcp_full_space(cfg).max(0) as u32;
        if self.window_clamp >= maxwin {
            self.window_clamp = maxwin;
        }
        // Force reservation of one segment (tcp_app_win = 31).
        if self.window_clamp > 2 * self.advmss && self.window_clamp + self.advmss > maxwin {
            self.window_clamp = (2 * self.advmss).max(maxwin.saturating_sub(self.advmss));
        }
        self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
        // tcp_initialize_rcv_mss(), now that rcv_wnd is known (negotiate() ran before the
        // initial window was chosen on the passive side)
        let hint = self.advmss.min(self.mss_cache).min(self.rcv_wnd / 2).min(TCP_MSS_DEFAULT);
        self.ack.rcv_mss = hint.max(TCP_MIN_MSS);
        self.rcvq.space = self.rcv_ssthresh.min(self.rcv_wnd).min(cfg.init_cwnd * self.advmss);
        self.max_window = self.max_window.max(self.snd_wnd);
        // the first pacing rate (tcp_rcv_state_process() on the passive side, the SYN-ACK's
        // tcp_ack() on the active one); a module with cong_control (BBR) set its own in init
        if !self.cc.has_cong_control() {
            self.update_pacing_rate(cfg);
        }
    }

    /// `tcp_sndbuf_expand()`: room for 2·max(IW, cwnd, reordering+1) segments. linux-6:
    /// each as a non-TSO skb would cost, `roundup_pow_of_two(mss + MAX_TCP_HEADER +
    /// skb_shared_info) + sk_buff` (46080 bytes for IW 10 at MSS 1000, as the kernel here
    /// reports); the MSS-at-a-time profiles model truesize as twice the MSS.
    fn sndbuf_expand(&mut self, cfg: &TcpConfig) {
        let mss = self.mss_cache.max(self.peer_mss.min(cfg.advmss()));
        let per_mss = if cfg.tso { (mss + 320 + 320).next_power_of_two() + 256 } else { 2 * mss };
        let nr_segs = cfg.init_cwnd.max(self.tp.snd_cwnd).max(self.reordering + 1);
        let sndmem = 2u64 * nr_segs as u64 * per_mss as u64;
        if (self.sndbuf as u64) < sndmem {
            self.sndbuf = sndmem.min(cfg.tcp_wmem[2] as u64) as u32;
        }
    }

    /// `tcp_timewait_state_process()`, simplified: RST kills (tcp_rfc1337 = 0); a
    /// retransmitted FIN restarts the 2MSL timer and is re-ACKed; anything else with
    /// sequence space is ACKed.
    fn rcv_timewait(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr) {
        if r.has(flags::RST) {
            self.enter_closed(now);
            return;
        }
        if r.has(flags::FIN) {
            self.sk_timer = Some((timer_at(cfg, now, cfg.timewait_len), SkTimer::TimeWait));
        }
        if r.segment_len() > 0 || r.has(flags::FIN) {
            self.ack.send_now = true;
        }
    }

    /// SYN-RECV, ESTABLISHED and the closing states: the checks of `tcp_validate_incoming()`
    /// (PAWS, sequence, RST, SYN), then ACK, data and FIN.
    fn rcv_synchronized(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, out: &mut Out) {
        let seg_len = r.payload.len() as u32 + r.has(flags::FIN) as u32;
        // SYN-RECV: a retransmitted SYN gets the SYN-ACK again.
        if self.state == TcpState::SynRecv && r.has(flags::SYN) && !r.has(flags::ACK) {
            if r.seq == self.irs {
                self.tx_syn = true;
            }
            return;
        }
        // PAWS (tcp_paws_discard), RFC 7323 §5
        if self.tstamp_ok && !r.has(flags::RST) {
            if let Some((tsval, _)) = r.timestamp {
                if (tsval.wrapping_sub(self.ts_recent) as i32) < 0 && seg_len > 0 {
                    self.send_dupack(r);
                    return;
                }
            }
        }
        // tcp_sequence(): acceptable if it overlaps the receive window
        let end_seq = r.seq + seg_len;
        let acceptable = !end_seq.before(self.rcv_wup) && !r.seq.after(self.rcv_nxt + self.receive_window());
        if !acceptable {
            if !r.has(flags::RST) {
                self.send_dupack(r);
            }
            return;
        }
        if r.has(flags::RST) {
            // RFC 5961 §3: exact match resets, otherwise a challenge ACK.
            if r.seq == self.rcv_nxt {
                self.on_reset(now, out);
            } else {
                self.ack.send_now = true;
            }
            return;
        }
        if r.has(flags::SYN) {
            // RFC 5961 §4: SYN in a synchronized state -> challenge ACK.
            self.ack.send_now = true;
            return;
        }
        if !r.has(flags::ACK) {
            return;
        }
        if self.state == TcpState::SynRecv {
            if r.ack != self.snd_nxt {
                out.rst.push_back(RstSpec { src: self.local, dst: self.remote, seq: r.ack, ack: None, tos: self.tos, window: 0, ts: None });
                return;
            }
            self.snd_una = r.ack;
            self.snd_wnd = (r.window as u32) << self.snd_wscale;
            self.max_window = self.snd_wnd;
            self.snd_wl1 = r.seq;
            self.handshake_done(cfg, now, r);
            if self.fin_queued {
                self.state = TcpState::FinWait1;
            }
            // the endpoint moves us to the listener's accept queue
        }
        // tcp_replace_ts_recent()
        self.saw_tstamp_ecr = 0;
        if self.tstamp_ok {
            if let Some((tsval, ecr)) = r.timestamp {
                if !r.seq.after(self.rcv_wup) {
                    self.ts_recent = tsval;
                }
                self.saw_tstamp_ecr = ecr;
            }
        }
        // an MSS option after the handshake: tcp_parse_options() ignores it (TCPOPT_MSS is
        // read only if th->syn), unless the wirelab MidstreamMss extension is on
        if let Some(m) = r.mss.filter(|_| self.state != TcpState::SynRecv) {
            self.midstream_mss_option(m);
        }
        self.tcp_ack(cfg, now, r, out);
        if self.state == TcpState::Closed {
            return;
        }
        // data and FIN
        self.data_queue(cfg, now, r, out);
        self.ack_snd_check(cfg, now);
    }

    /// `tcp_reset()`: the peer reset the connection.
    fn on_reset(&mut self, now: Instant, out: &mut Out) {
        let was_closing = matches!(self.state, TcpState::LastAck | TcpState::Closing | TcpState::TimeWait);
        if self.state == TcpState::SynRecv && self.listener.is_some() {
            self.orphan = true;
        }
        self.err = Some(match self.state {
            TcpState::SynRecv | TcpState::SynSent => SockError::ConnectionRefused,
            TcpState::CloseWait => SockError::BrokenPipe,
            _ => SockError::ConnectionReset,
        });
        if !was_closing && !self.closed_notified {
            self.notify(out, SockEvent::Reset);
            self.closed_notified = true;
        }
        self.enter_closed(now);
    }

    /// `tcp_send_dupack()`: out-of-window or duplicate data; D-SACK it and enter quick-ACK.
    fn send_dupack(&mut self, r: &TcpRepr) {
        let end = r.seq + r.payload.len() as u32;
        if !r.payload.is_empty() && !end.after(self.rcv_nxt) {
            self.enter_quickack_mode();
            if self.sack_ok {
                self.ofo.dsack = Some((r.seq, end));
            }
        }
        self.ack.send_now = true;
    }

    /// `tcp_enter_quickack_mode(sk, TCP_MAX_QUICKACKS)`.
    pub(super) fn enter_quickack_mode(&mut self) {
        let w = self.receive_window();
        self.ack.enter_quickack_mode(w, self.ack.max_quickacks);
    }

    /// `tcp_data_ecn_check()`: CE → tell a module that needs ECN, start echoing ECE with
    /// `tcp_enter_quickack_mode(sk, 2)`; Not-ECT after ECT → quick-ACK (a retransmission).
    fn data_ecn_check(&mut self, cfg: &TcpConfig, now: Instant) {
        let quick = match self.ecn.data_check(self.rx_tos) {
            EcnRx::None => false,
            EcnRx::Quickack => true,
            EcnRx::Ce => {
                if self.cc.needs_ecn() {
                    self.ca_event(cfg, now, CaEvent::EcnIsCe);
                }
                self.ecn.ce_echo()
            }
            EcnRx::Ect => {
                if self.cc.needs_ecn() {
                    self.ca_event(cfg, now, CaEvent::EcnNoCe);
                }
                false
            }
        };
        if quick {
            let w = self.receive_window();
            self.ack.enter_quickack_mode(w, 2);
        }
    }

    // ------------------------------------------------------------------------------------
    // ACK processing: tcp_ack() and its steps
    // ------------------------------------------------------------------------------------

    /// `tcp_ack()`.
    fn tcp_ack(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, out: &mut Out) {
        let ack = r.ack;
        let prior_snd_una = self.snd_una;
        let prior_packets = self.rtx.packets_out;
        if ack.before(prior_snd_una) {
            // old ACK: may still carry D-SACK information; otherwise ignored
            return;
        }
        if ack.after(self.snd_nxt) {
            // ACKs something we did not send (tcp_ack: "ack too new")
            self.ack.send_now = true;
            return;
        }
        // 3.x-4.12: any valid ACK cancels a pending early-retransmit or loss-probe timer.
        // RACK-TLP (4.13+): only an ACK that acknowledges data resets the timers
        // (FLAG_SET_XMIT_TIMER -> tcp_set_xmit_timer(), below)
        let rack = self.rack_on(cfg);
        if !rack && self.xmit_timer_is(XmitTimer::EarlyRetrans.bit() | XmitTimer::LossProbe.bit()) {
            self.rearm_rto(cfg, now);
        }
        self.rexmit_new = false;
        let mut flag = 0u32;
        if ack.after(prior_snd_una) {
            flag |= FLAG_SND_UNA_ADVANCED;
            self.retransmits = 0;
        }
        flag |= self.ack_update_window(cfg, now, r);
        if self.ecn.rcv_ecn_echo(r.has(flags::ECE), r.has(flags::SYN)) {
            flag |= FLAG_ECE;
        }
        // tcp_ecn_accept_cwr(), on pure ACKs too ("a deviation from RFC3168" Linux makes)
        if self.ecn.accept_cwr(r.has(flags::CWR), !r.payload.is_empty()) {
            self.ack.pending |= ACK_NOW;
        }
        self.probes_out = 0;
        let prior_delivered = self.rate.delivered;
        let prior_lost = self.rtx.lost;
        let prior_in_flight = self.in_flight();
        // tcp_ack(): the highest SACKed sequence before this ACK's SACK blocks are tagged
        let prior_fack = self.rtx.fack_seq(self.snd_una, self.sack_ok);
        let prior_sacked = self.rtx.sacked_out;
        self.rate.begin_ack();
        let mut sack: Option<SackTag> = None;
        self.tlp.dsack_tlp = false; // FLAG_DSACK_TLP is per ACK
        if self.sack_ok && !r.sack.is_empty() {
            let (st, dsack) = self.sacktag_write_queue(cfg, now, ack, &r.sack, flag & FLAG_ECE != 0);
            flag |= if st.orig_sack_acked { FLAG_ORIG_SACK_ACKED } else { 0 }
                | if st.data_sacked { FLAG_DATA_SACKED } else { 0 }
                | if dsack { FLAG_DSACKING_ACK } else { 0 };
            sack = Some(st);
        }
        // RDB (2015 patch, rdb_ack_event): loss revealed by a bundle means congestion
        let rdb_lost = if flag & FLAG_SND_UNA_ADVANCED != 0 && self.thin.rdb_mode(cfg) == RdbMode::Lcn2015 {
            rdb_check_rtx_queue_loss(&self.rtx, ack)
        } else {
            0
        };
        let (cl, freed) = self.clean_rtx_queue(cfg, now, ack, prior_fack, &mut flag);
        let ca_rtt = self.ack_rtt_sample(cfg, now, r, &cl, sack.as_ref(), prior_in_flight);
        self.in_ack_event(cfg, now, flag);
        self.ack_set_xmit_timer(cfg, now, prior_packets, cl.acked_pkts);
        let newly_sacked = sack.map_or(0, |s| s.newly);
        // Reno "SACK" emulation counts duplicate ACKs.
        let is_dupack = flag & (FLAG_SND_UNA_ADVANCED | FLAG_WIN_UPDATE) == 0
            && r.payload.is_empty()
            && !r.has(flags::FIN)
            && prior_packets > 0
            && cl.acked_pkts == 0;
        let num_dupack = is_dupack as u32;
        // tcp_ack_is_dubious(): FLAG_CA_ALERT = DATA_SACKED | ECE | DSACKING_ACK
        let dubious = is_dupack
            || newly_sacked > 0
            || flag & (FLAG_DSACKING_ACK | FLAG_ECE) != 0
            || self.ca_state != CaState::Open;
        let delivered_now = self.rate.delivered - prior_delivered;
        if self.rtx.packets_out > 0 || prior_packets > 0 {
            if dubious {
                self.fastretrans_alert(cfg, now, prior_snd_una, flag, num_dupack);
            }
            // tcp_rate_gen(): acked_sacked and the losses this ACK revealed
            let acked_sacked = if self.sack_ok { delivered_now } else { delivered_now.max(num_dupack) };
            let lost = self.rtx.lost.wrapping_sub(prior_lost);
            let mut rs = self.rate.gen(now, acked_sacked, lost, self.rtt.min_rtt_us);
            rs.rtt_us = ca_rtt;
            rs.prior_in_flight = prior_in_flight;
            // FLAG_ACK_MAYBE_DELAYED: one lone runt ACKed, nothing else going on
            rs.is_ack_delayed = cl.acked_pkts == 1
                && cl.last_data_len < self.mss_cache
                && prior_in_flight == 1
                && prior_sacked == 0
                && flag & (FLAG_DATA_SACKED | FLAG_ECE | FLAG_DSACKING_ACK) == 0;
            // tcp_may_raise_cwnd(): with high reordering, FLAG_FORWARD_PROGRESS (a new SACK
            // too) may raise cwnd; else FLAG_DATA_ACKED
            let may_raise = if cfg.raise_cwnd_on_reordering && self.reordering > cfg.tcp_reordering {
                cl.acked_pkts > 0 || flag & FLAG_DATA_SACKED != 0
            } else {
                cl.acked_pkts > 0
            };
            self.cong_control(cfg, now, &rs, flag & FLAG_SND_UNA_ADVANCED != 0, may_raise);
        }
        if rdb_lost > 0 && self.state != TcpState::Closed {
            self.thin.rdb_loss_cwr += 1;
            self.enter_cwr(cfg, now);
        }
        if self.tlp.high_seq.is_some() {
            let not_dup = !r.payload.is_empty() || flag & (FLAG_WIN_UPDATE | FLAG_SND_UNA_ADVANCED) != 0 || cl.acked_pkts > 0;
            self.process_tlp_ack(cfg, now, ack, not_dup || newly_sacked > 0, flag & FLAG_DSACKING_ACK != 0);
        }
        if self.xmit_timer_is(XmitTimer::Retrans.bit()) && (!rack || cl.acked_pkts > 0) {
            self.schedule_loss_probe(cfg, now, true);
        }
        if self.fin_acked(cfg, now, out) {
            return;
        }
        self.check_space(cfg, now, freed, out);
    }

    /// `tcp_in_ack_event()`: the ACK's `CA_ACK_*` flags for the module (every ACK takes
    /// the slow path here: there is no header prediction).
    fn in_ack_event(&mut self, cfg: &TcpConfig, now: Instant, flag: u32) {
        let mut ev = CA_ACK_SLOWPATH;
        if flag & FLAG_WIN_UPDATE != 0 {
            ev |= CA_ACK_WIN_UPDATE;
        }
        if flag & FLAG_ECE != 0 {
            ev |= CA_ACK_ECE;
        }
        self.sync_tp(cfg, now);
        self.cc.in_ack_event(&self.tp, ev);
    }

    /// `tcp_ack_update_window()`: returns `FLAG_WIN_UPDATE` when the window changed.
    fn ack_update_window(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr) -> u32 {
        let nwin = (r.window as u32) << self.snd_wscale;
        let mut flag = 0;
        if r.ack.after(self.snd_una) || r.seq.after(self.snd_wl1) || (r.seq == self.snd_wl1 && nwin > self.snd_wnd) {
            if self.snd_wnd != nwin {
                flag = FLAG_WIN_UPDATE;
                self.snd_wnd = nwin;
                if cfg.idle_check_at_write && self.unsent() > 0 {
                    self.slow_start_after_idle_check(cfg, now);
                }
                self.max_window = self.max_window.max(nwin);
            }
            self.snd_wl1 = r.seq;
        }
        flag
    }

    /// `tcp_clean_rtx_queue()`: drop what `ack` covers, count deliveries (rate, RACK),
    /// detect reordering, free the send buffer, advance `snd_una`. Returns what the queue
    /// walk found and the payload bytes freed.
    fn clean_rtx_queue(&mut self, cfg: &TcpConfig, now: Instant, ack: SeqNumber, prior_fack: SeqNumber, flag: &mut u32) -> (CleanResult, u32) {
        let prior_sacked = self.rtx.sacked_out;
        let (rate, rack, sack_ok, min_rtt_us) = (&mut self.rate, &mut self.rack, self.sack_ok, self.rtt.min_rtt_us);
        let ece = *flag & FLAG_ECE != 0;
        let cl = self.rtx.clean_acked(ack, self.high_seq, self.snd_nxt, |seg| {
            let mut s = *seg;
            rate.skb_delivered(&mut s);
            // without SACK tcp_remove_reno_sacks() counts the deliveries (below)
            if sack_ok {
                rate.count_delivered(1, ece);
                rack.advance(now, seg.sacked, seg.end, seg.xmit, min_rtt_us);
            }
        });
        if cl.acked_pkts > 0 {
            *flag |= FLAG_DATA_ACKED;
        }
        if cl.retrans_acked {
            *flag |= FLAG_RETRANS_DATA_ACKED;
        }
        if cl.orig_sack_acked {
            *flag |= FLAG_ORIG_SACK_ACKED;
        }
        if !self.sack_ok && cl.acked_pkts > 0 {
            self.remove_reno_sacks(cl.acked_pkts, prior_sacked, ece);
        } else if cl.acked_pkts > 0 && cl.reord.before(prior_fack) {
            // a never-retransmitted hole got filled: that's reordering
            self.check_sack_reordering(cfg, cl.reord, prior_fack);
        }
        // free acknowledged bytes from the send ring
        let data_end = ack.min(self.write_seq());
        let freed = data_end.dist(self.snd_buf_seq);
        if freed > 0 {
            self.snd_ring.discard(freed as usize);
            self.snd_buf_seq = self.snd_buf_seq + freed;
            self.stats.bytes_acked += freed as u64;
            // an idle socket keeps no large buffers (bulk senders never drain the ring)
            if self.snd_ring.is_empty() && self.snd_ring.capacity() > 4096 {
                self.snd_ring = SendRing::default();
            }
        }
        if self.rtx.packets_out == 0 && self.rtx.q.capacity() > 64 {
            self.rtx.q = VecDeque::new();
        }
        if self.rtx.q.is_empty() {
            // the whole rtx queue is acknowledged: tcp_chrono_stop(TCP_CHRONO_BUSY)
            let empty = !self.has_unsent();
            self.chrono.stop(super::timer::jiffies(cfg, now), super::chrono::ChronoType::Busy, empty);
        }
        self.snd_una = ack;
        if self.snd_nxt.before(self.snd_una) {
            self.snd_nxt = self.snd_una;
        }
        (cl, freed)
    }

    /// `tcp_ack_update_rtt()` with the samples of this ACK (Karn: the oldest newly ACKed
    /// never-retransmitted segment, else SACKed ones, else the timestamp echo), then the
    /// module's `pkts_acked`. Returns the congestion-control RTT sample (`ca_rtt_us`).
    fn ack_rtt_sample(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, cl: &CleanResult, sack: Option<&SackTag>, prior_in_flight: u32) -> Option<u64> {
        let since = |t: Instant| now.saturating_since(t).as_micros().max(1);
        let mut seq_rtt = None;
        let mut ca_rtt = None;
        if let (Some(f), Some(l)) = (cl.first_ackt, cl.last_ackt) {
            if !cl.retrans_acked {
                seq_rtt = Some(since(f));
                ca_rtt = Some(since(l));
            }
        }
        if let Some((f, l)) = sack.and_then(|s| s.first.zip(s.last)) {
            if seq_rtt.is_none() {
                seq_rtt = Some(since(f));
            }
            ca_rtt = Some(since(l));
        }
        if seq_rtt.is_none() && cl.acked_pkts > 0 {
            if let Some(t) = self.ts_rtt_us(now, r) {
                seq_rtt = Some(t);
                ca_rtt = Some(t);
            }
        }
        self.rtt.ack_update_rtt(cfg, seq_rtt, self.snd_una, self.snd_nxt);
        if cl.acked_pkts > 0 || sack.is_some_and(|s| s.newly > 0) {
            self.sync_tp(cfg, now);
            let sample = AckSample { pkts_acked: cl.acked_pkts, rtt_us: ca_rtt, in_flight: prior_in_flight };
            self.cc.pkts_acked(&mut self.tp, &sample);
        }
        ca_rtt
    }

    /// `tcp_set_xmit_timer()` when data was ACKed, and `tcp_ack_probe()` when the pipe
    /// was or became empty.
    fn ack_set_xmit_timer(&mut self, cfg: &TcpConfig, now: Instant, prior_packets: u32, acked_pkts: u32) {
        use XmitTimer::*;
        if acked_pkts > 0 {
            self.rearm_rto(cfg, now);
            if self.rtx.packets_out == 0 && self.xmit_timer_is(Retrans.bit() | EarlyRetrans.bit() | LossProbe.bit() | ReoTimeout.bit()) {
                self.xmit_timer = None;
            }
        }
        if (prior_packets == 0 || self.rtx.packets_out == 0) && self.has_unsent() {
            // tcp_ack_probe(): the head fits the window -> stop probing
            let len = self.unsent().min(self.mss_cache).max(1);
            if !(self.snd_nxt + len).after(self.snd_una + self.snd_wnd) {
                if self.xmit_timer_is(Probe0.bit()) {
                    self.xmit_timer = None;
                }
                self.rtt.backoff = 0;
                self.probes_tstamp = None;
            } else if self.xmit_timer_is(Probe0.bit()) {
                let d = self.rtt.probe0_when(cfg);
                let d = self.clamp_probe0_to_user_timeout(cfg, now, d);
                self.reset_xmit_timer(cfg, now, Probe0, d);
            }
        }
    }

    /// State transitions when our FIN is ACKed (the FIN_WAIT1 / CLOSING / LAST_ACK parts
    /// of `tcp_rcv_state_process()`). True when the connection closed.
    fn fin_acked(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) -> bool {
        if !(self.fin_sent && !self.snd_una.before(self.snd_nxt) && self.snd_una == self.write_seq() + 1) {
            return false;
        }
        match self.state {
            TcpState::FinWait1 => {
                self.state = TcpState::FinWait2;
                if self.orphan {
                    self.sk_timer = Some((timer_at(cfg, now, cfg.tcp_fin_timeout), SkTimer::FinWait2));
                }
            }
            TcpState::Closing => self.enter_time_wait(cfg, now, out),
            TcpState::LastAck => {
                if !self.closed_notified {
                    self.notify(out, SockEvent::Closed);
                    self.closed_notified = true;
                }
                self.enter_closed(now);
                return true;
            }
            _ => {}
        }
        false
    }

    /// `tcp_check_space()`: wake a blocked writer, expanding sndbuf if allowed.
    fn check_space(&mut self, cfg: &TcpConfig, now: Instant, freed: u32, out: &mut Out) {
        if !self.write_blocked || freed == 0 {
            return;
        }
        if !self.sndbuf_locked && self.in_flight() < self.tp.snd_cwnd {
            self.sndbuf_expand(cfg);
        }
        // sk_stream_write_space(): sk_stream_is_writeable()
        if self.sk_stream_is_writeable(cfg) {
            self.write_blocked = false;
            self.notify(out, SockEvent::Writable);
            let empty = self.queues_empty();
            self.chrono.stop(super::timer::jiffies(cfg, now), super::chrono::ChronoType::SndbufLimited, empty);
        }
    }

    // ------------------------------------------------------------------------------------
    // Receive path
    // ------------------------------------------------------------------------------------

    /// `tcp_data_queue()`.
    fn data_queue(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, out: &mut Out) {
        let accepts = matches!(self.state, TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2);
        let fin = r.has(flags::FIN);
        if r.payload.is_empty() && !fin {
            return;
        }
        if !accepts {
            // data after the peer's FIN: just ACK
            self.ack.send_now = true;
            return;
        }
        let mut seq = r.seq;
        let mut data = r.payload;
        let end = seq + data.len() as u32;
        // entirely old: duplicate -> D-SACK + quick ACK
        let new_fin = fin && end == self.rcv_nxt;
        if !data.is_empty() && !end.after(self.rcv_nxt) && !new_fin {
            self.send_dupack(r);
            return;
        }
        // partial overlap at the left: trim (D-SACK the duplicate part)
        if seq.before(self.rcv_nxt) {
            let dup = self.rcv_nxt.dist(seq) as usize;
            if self.sack_ok {
                self.ofo.dsack = Some((seq, self.rcv_nxt));
            }
            data = &data[dup.min(data.len())..];
            seq = self.rcv_nxt;
        }
        // out of window at the right
        let wnd_end = self.rcv_nxt + self.receive_window();
        if !data.is_empty() && !seq.before(wnd_end) {
            self.enter_quickack_mode();
            self.ack.send_now = true;
            return;
        }
        let mut fin_in = fin;
        if (seq + data.len() as u32).after(wnd_end) {
            let keep = wnd_end.dist(seq) as usize;
            data = &data[..keep.min(data.len())];
            fin_in = false;
        }
        if seq == self.rcv_nxt {
            self.queue_in_order(cfg, now, r, data, fin_in, out);
        } else {
            // out of order: tcp_data_queue_ofo()
            self.data_ecn_check(cfg, now);
            if !data.is_empty() {
                let end = seq + data.len() as u32;
                if self.ofo.insert(seq, end, self.sack_ok) {
                    let off = seq.dist(self.copied_seq) as usize;
                    self.rcv_store(off, data);
                    if cfg.scaling_ratio {
                        let ts = Self::rx_skb_truesize(cfg, r);
                        self.ofo_ts += ts;
                        self.rmem_ts += ts;
                    }
                }
                if cfg.rcv_space_style == RcvSpaceStyle::Linux616 {
                    // 6.16+ tcp_data_queue_ofo(): tcp_rcvbuf_grow() with an unchanged space
                    let space = self.rcvq.space;
                    let rcvwin = rcvbuf_grow_win(space, space, self.ooo_span());
                    self.rcvbuf_grow(cfg, rcvwin);
                }
            }
            if fin_in {
                self.fin_rcvd = Some(seq + data.len() as u32);
            }
            // Immediate ACK (with SACK) for out-of-order data. Linux >= 4.18 may compress
            // these SACKs (tcp_comp_sack_nr); we send every one, as earlier kernels did.
            self.ack.pending |= ACK_SCHED | ACK_NOW;
        }
    }

    /// Puts received bytes at `off` from `copied_seq` in the receive queue, or only counts
    /// them if the reader discards everything (`discard_payload`).
    #[inline]
    fn rcv_store(&mut self, off: usize, data: &[u8]) {
        if self.rcv_discard {
            self.rcv_ring.write_at_unread(off, data.len());
        } else {
            self.rcv_ring.write_at(off, data);
        }
    }

    /// The in-sequence branch of `tcp_data_queue()`: queue, pull the out-of-order data
    /// that became contiguous (`tcp_ofo_queue()`), FIN, wake the reader.
    fn queue_in_order(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, data: &[u8], fin_in: bool, out: &mut Out) {
        let seq = self.rcv_nxt;
        if !data.is_empty() {
            let off = self.rcv_nxt.dist(self.copied_seq) as usize;
            self.rcv_store(off, data);
            self.rcv_nxt = self.rcv_nxt + data.len() as u32;
            self.stats.bytes_received += data.len() as u64;
            let ts = if cfg.scaling_ratio { Self::rx_skb_truesize(cfg, r) } else { 0 };
            if cfg.scaling_ratio {
                self.rcv_skbs.push_back((self.rcv_nxt, ts));
                self.rmem_ts += ts;
            }
            self.event_data_recv(cfg, now, r, data.len() as u32, ts);
        }
        if !self.ofo.is_empty() {
            let (nxt, bytes) = self.ofo.pull(self.rcv_nxt);
            self.rcv_nxt = nxt;
            self.stats.bytes_received += bytes as u64;
            if cfg.scaling_ratio && bytes > 0 {
                // tcp_ofo_queue() moves the skbs, charge and all, to the receive queue; the
                // share of a partial pull is the pulled bytes' (ranges keep no skbs)
                let left = self.ofo.bytes() as u64;
                let moved = (self.ofo_ts as u64 * bytes as u64 / (bytes as u64 + left)) as u32;
                self.ofo_ts -= moved;
                self.rcv_skbs.push_back((self.rcv_nxt, moved));
            }
            if self.ofo.is_empty() {
                // RFC 5681 4.2: ACK immediately when a gap is filled
                self.ack.pending |= ACK_NOW;
            }
        }
        self.ofo.sack_remove(self.rcv_nxt);
        if fin_in {
            self.fin_rcvd = Some(seq + data.len() as u32);
        }
        if self.fin_rcvd == Some(self.rcv_nxt) {
            self.tcp_fin(cfg, now, out);
        }
        if !data.is_empty() && !self.readable_signaled {
            self.readable_signaled = true;
            self.notify(out, SockEvent::Readable);
        }
        // sk_data_ready() (sock_def_readable()) wakes every sleeper on the socket's wait
        // queue, a writer blocked in sk_stream_wait_memory() too (its wait does not filter
        // by event), and that writer goes on as soon as sk_stream_memory_free(): with data
        // arriving it does not wait for sk_stream_write_space()'s third of the buffer.
        // SOCK_NOSPACE (write_blocked) stays set, as the kernel leaves it.
        if !data.is_empty() && self.write_blocked && self.sk_stream_memory_free(cfg) {
            self.notify(out, SockEvent::Writable);
        }
    }

    /// `sk_stream_memory_free()`: `sk_wmem_queued < sk_sndbuf` (in payload bytes against
    /// half the buffer on the profiles that count truesize as twice the payload).
    fn sk_stream_memory_free(&self, cfg: &TcpConfig) -> bool {
        if !cfg.tso {
            return self.snd_ring.len() < (self.sndbuf / 2) as usize;
        }
        self.wmem_queued(cfg) < self.sndbuf as u64
    }

    /// `tcp_fin()`.
    fn tcp_fin(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        if self.peer_fin {
            return;
        }
        self.peer_fin = true;
        self.fin_rcvd = None;
        self.rcv_nxt = self.rcv_nxt + 1;
        self.ack.pending |= ACK_SCHED;
        match self.state {
            TcpState::SynRecv | TcpState::Established => {
                self.state = TcpState::CloseWait;
                self.ack.pingpong = true;
            }
            TcpState::FinWait1 => {
                // simultaneous close
                self.ack.send_now = true;
                self.state = TcpState::Closing;
            }
            TcpState::FinWait2 => {
                self.ack.send_now = true;
                self.enter_time_wait(cfg, now, out);
            }
            _ => {}
        }
        self.ofo.ranges.clear();
        self.ofo.sacks = SackBlocks::EMPTY;
        self.notify(out, SockEvent::PeerClosed);
    }

    /// `tcp_time_wait()`.
    pub(super) fn enter_time_wait(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        self.state = TcpState::TimeWait;
        self.xmit_timer = None;
        self.ack.timer = None;
        self.sk_timer = Some((timer_at(cfg, now, cfg.timewait_len), SkTimer::TimeWait));
        if !self.closed_notified {
            self.notify(out, SockEvent::Closed);
            self.closed_notified = true;
        }
        // a TIME_WAIT socket keeps no buffers (tcp_timewait_sock)
        self.rtx.q = VecDeque::new();
        self.snd_ring = SendRing::default();
        self.ofo.ranges = Vec::new();
    }

    /// `tcp_event_data_recv()`: rcv_mss, the receiver RTT, the ATO estimator and window
    /// growth.
    fn event_data_recv(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, len: u32, truesize: u32) {
        self.ack.pending |= ACK_SCHED;
        if cfg.scaling_ratio && len >= self.ack.rcv_mss && len != self.ack.rcv_mss {
            self.measure_scaling_ratio(cfg, len, truesize);
        }
        self.ack.measure_rcv_mss(len, self.advmss);
        let ts = if self.tstamp_ok { r.timestamp.map(|(_, ecr)| (ecr, self.ts_now(now))) } else { None };
        // the queue before this segment (tcp_rcv_rtt_measure_ts() runs before it is queued)
        let queue_empty = self.rcv_nxt.dist(self.copied_seq) <= len;
        let style = cfg.rcv_space_style;
        self.rcvq.measure(style, now, ts, len, self.ack.rcv_mss, self.rcv_nxt, self.rcv_wnd, queue_empty);
        let w = self.receive_window();
        self.ack.update_ato(cfg, now, self.rtt.rto, w);
        self.data_ecn_check(cfg, now);
        if len >= 128 {
            self.grow_window(cfg, len, truesize);
        }
    }

    /// The truesize of the skb `r` arrived in ([`TcpConfig::rx_truesize`]).
    fn rx_skb_truesize(cfg: &TcpConfig, r: &TcpRepr) -> u32 {
        cfg.rx_truesize(20 + r.header_len() as u32 + r.payload.len() as u32)
    }

    /// `tcp_measure_rcv_mss()` (6.6+): a segment of a new size at or above rcv_mss sets
    /// `scaling_ratio = len << 8 / truesize`; a changed ratio moves the window clamp
    /// (`tcp_set_window_clamp(tcp_win_from_space(sk_rcvbuf))`, 6.14+) and caps
    /// `rcvq_space.space` by it.
    fn measure_scaling_ratio(&mut self, cfg: &TcpConfig, len: u32, truesize: u32) {
        let old = self.scaling_ratio;
        self.scaling_ratio = (((len as u64) << 8) / truesize.max(1) as u64).clamp(1, 255) as u8;
        if self.scaling_ratio == old {
            return;
        }
        let val = self.tcp_full_space(cfg).max(0) as u32;
        // tcp_set_window_clamp(): at least SOCK_MIN_RCVBUF / 2
        let new = val.max(2304);
        if new != self.window_clamp {
            let shrink = new < self.window_clamp;
            self.window_clamp = new;
            if shrink {
                // __tcp_adjust_rcv_ssthresh() (no reserved memory)
                self.rcv_ssthresh = self.rcv_ssthresh.min(new);
            } else {
                self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(new));
            }
        }
        self.rcvq.space = self.rcvq.space.min(self.window_clamp);
    }

    /// `tcp_grow_window()`.
    fn grow_window(&mut self, cfg: &TcpConfig, len: u32, truesize: u32) {
        if cfg.scaling_ratio {
            // 6.x: room up to min(window_clamp, tcp_space()); 2 x advmss when an skb of this
            // overhead fits the buffer (`tcp_win_from_space(truesize) <= len`), else
            // __tcp_grow_window()'s halving search
            let room = (self.window_clamp as i64).min(self.tcp_space(cfg)) - self.rcv_ssthresh as i64;
            if room <= 0 {
                return;
            }
            let incr = if self.win_from_space(cfg, truesize as i64) <= len as i64 {
                2 * self.advmss
            } else {
                let mut ts = self.win_from_space(cfg, truesize as i64) >> 1;
                let mut window = self.win_from_space(cfg, cfg.tcp_rmem[2] as i64) >> 1;
                let mut incr = 0;
                while self.rcv_ssthresh as i64 <= window {
                    if ts <= len as i64 {
                        incr = 2 * self.ack.rcv_mss;
                        break;
                    }
                    ts >>= 1;
                    window >>= 1;
                }
                incr
            };
            if incr > 0 {
                let incr = incr.max(2 * len);
                self.rcv_ssthresh += (room as u32).min(incr);
                self.ack.quick |= 1;
            }
            return;
        }
        if self.rcv_ssthresh < self.window_clamp && (self.rcv_ssthresh as i64) < self.tcp_space(cfg) {
            // truesize modelled as 2x payload: win_from_space(truesize) <= len holds
            let incr = (2 * self.advmss).max(2 * len);
            let room = self.window_clamp - self.rcv_ssthresh;
            self.rcv_ssthresh += room.min(incr);
            self.ack.quick |= 1;
        }
    }

    /// `__tcp_ack_snd_check()`: ACK now (every second full segment if the window would
    /// not shrink, quick-ACK mode, or `ICSK_ACK_NOW`), else schedule a delayed ACK.
    fn ack_snd_check(&mut self, cfg: &TcpConfig, now: Instant) {
        if self.ack.pending & (ACK_SCHED | ACK_NOW) == 0 {
            return;
        }
        let more_than_one_mss = self.rcv_nxt.dist(self.rcv_wup) > self.ack.rcv_mss;
        if (more_than_one_mss && self.raw_select_window(cfg) >= self.rcv_wnd)
            || self.ack.in_quickack_mode()
            || self.ack.pending & ACK_NOW != 0
        {
            self.ack.send_now = true;
            return;
        }
        self.ack.schedule(cfg, now, self.rtt.srtt_us);
    }

    /// `tcp_rcv_space_adjust()`: receive-buffer autotuning, once per receiver RTT.
    pub(super) fn rcv_space_adjust(&mut self, cfg: &TcpConfig, now: Instant) {
        let tune = cfg.tcp_moderate_rcvbuf && !self.rcvbuf_locked;
        let ratio = if cfg.scaling_ratio { Some(self.scaling_ratio) } else { None };
        let ooo = if cfg.rcv_space_style == RcvSpaceStyle::Linux616 { self.ooo_span() } else { 0 };
        let adj = self.rcvq.adjust(cfg, now, self.copied_seq, self.rcv_nxt, ooo, tune, self.advmss, ratio);
        let Some((buf, clamp)) = adj else { return };
        self.set_rcvbuf(cfg, buf, clamp);
    }

    /// `TCP_SKB_CB(ooo_last_skb)->end_seq - rcv_nxt`, 0 with an empty out-of-order queue.
    fn ooo_span(&self) -> u32 {
        self.ofo.ranges.iter().map(|&(_, e)| e.dist(self.rcv_nxt)).max().unwrap_or(0)
    }

    /// `tcp_rcvbuf_grow()` (6.16+) for a window `rcvwin`: off without `tcp_moderate_rcvbuf`
    /// or with a locked buffer.
    fn rcvbuf_grow(&mut self, cfg: &TcpConfig, rcvwin: u64) {
        if !cfg.tcp_moderate_rcvbuf || self.rcvbuf_locked {
            return;
        }
        let buf = (rcvwin.min(u32::MAX as u64) << 8) / self.scaling_ratio.max(1) as u64;
        self.set_rcvbuf(cfg, buf, u64::MAX);
    }

    /// Grows sk_rcvbuf to `buf` (capped by `tcp_rmem[2]`) when larger, and the window
    /// clamp with it (`u64::MAX`: `tcp_win_from_space(rcvbuf)`).
    fn set_rcvbuf(&mut self, cfg: &TcpConfig, buf: u64, clamp: u64) {
        let rcvbuf = buf.min(cfg.tcp_rmem[2] as u64) as u32;
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            // "make the window clamp follow along": it replaces a TCP_WINDOW_CLAMP too (every
            // era; 6.18 tcp_rcvbuf_grow(): window_clamp = tcp_win_from_space(rcvbuf))
            let clamp =
                if clamp == u64::MAX { self.win_from_space(cfg, rcvbuf as i64).max(0) as u32 } else { clamp.min(u32::MAX as u64) as u32 };
            // (no cap at 65535 << rcv_wscale: tcp_select_window() caps the offer)
            self.window_clamp = clamp;
        }
    }
}
