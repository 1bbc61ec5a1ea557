//! Output (`tcp_output.c`): what to send next (`tcp_write_xmit`,
//! `tcp_xmit_retransmit_queue`, `tcp_send_loss_probe`, SYN/SYN-ACK, probes, pure ACKs),
//! building a segment (`tcp_transmit_skb` → `emit`), window selection
//! (`tcp_select_initial_window`, `__tcp_select_window`, `tcp_select_window`) and cwnd
//! validation (`tcp_cwnd_validate`, RFC 2861).
use super::chrono::ChronoType;
use super::ecn::{INET_ECN_ECT_0, INET_ECN_MASK, TCP_ECN_OK};
use super::scoreboard::{TxSeg, EVER_RETRANS, SACKED_ACKED, SACKED_RETRANS};
use super::timer::jiffies;
use super::{Conn, XmitTimer, TCPOLEN_TSTAMP_ALIGNED, TCP_MAX_WSCALE};
use crate::api::TcpState;
use crate::cc::{CaEvent, CaState};
use crate::config::TcpConfig;
use crate::wire::{self, flags, SeqNumber, TcpRepr};
use wirelab_core::{Duration, Instant, Transmit, HEADROOM};

/// What a segment is, for ECN marking (`tcp_ecn_send()`) and pacing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SegKind {
    /// SYN or SYN-ACK.
    Syn,
    /// New data (ECT(0), CWR when queued).
    NewData,
    /// Retransmitted data (Not-ECT).
    Rexmit,
    /// Pure ACK, window probe (Not-ECT).
    Control,
    /// DCTCP's ACK for an older `rcv_nxt` with the ECE of the previous CE state.
    SpecialAck(SeqNumber, bool),
}

impl Conn {
    // ------------------------------------------------------------------------------------
    // Receive window (what we advertise)
    // ------------------------------------------------------------------------------------

    /// Receive memory in use: the truesize charged (`sk_rmem_alloc`) on scaling-ratio
    /// profiles, else queued in-order bytes plus out-of-order bytes.
    fn rmem_alloc(&self, cfg: &TcpConfig) -> u32 {
        if cfg.scaling_ratio {
            return self.rmem_ts;
        }
        self.rcv_nxt.dist(self.copied_seq) + self.ofo.bytes()
    }
    /// `tcp_win_from_space()`: `space x scaling_ratio >> TCP_RMEM_TO_WIN_SCALE` (6.6+),
    /// else `tcp_adv_win_scale`'s share.
    pub(super) fn win_from_space(&self, cfg: &TcpConfig, space: i64) -> i64 {
        if cfg.scaling_ratio {
            return (space * self.scaling_ratio as i64) >> 8;
        }
        cfg.win_from_space(space)
    }
    /// `tcp_space()`.
    pub(super) fn tcp_space(&self, cfg: &TcpConfig) -> i64 {
        self.win_from_space(cfg, self.rcvbuf as i64 - self.rmem_alloc(cfg) as i64)
    }
    /// `tcp_full_space()`.
    pub(super) fn tcp_full_space(&self, cfg: &TcpConfig) -> i64 {
        self.win_from_space(cfg, self.rcvbuf as i64)
    }
    /// MSS used for receive-window rounding (advmss minus timestamp space).
    fn rcv_adv_mss(&self) -> u32 {
        self.advmss - if self.tstamp_ok { TCPOLEN_TSTAMP_ALIGNED } else { 0 }
    }

    /// `tcp_select_initial_window()`, run when the SYN or SYN-ACK is built.
    pub(super) fn select_initial_window(&mut self, cfg: &TcpConfig) {
        let full = self.tcp_full_space(cfg).max(0) as u32;
        let mss = self.rcv_adv_mss();
        // no clamp unless TCP_WINDOW_CLAMP; a locked (user-set) rcvbuf limits it
        let mut window_clamp = if self.user_window_clamp != 0 { self.user_window_clamp } else { 65535u32 << TCP_MAX_WSCALE };
        if self.rcvbuf_locked && window_clamp > full {
            window_clamp = full;
        }
        let mut space = full.min(window_clamp);
        if space > mss {
            space = space / mss * mss;
        }
        self.rcv_wnd = space.min(65535);
        self.rcv_wscale = 0;
        if self.wscale_ok {
            let mut s = space.max(cfg.tcp_rmem[2]).max(cfg.rmem_max);
            s = s.min(window_clamp);
            let ilog2 = 31 - s.max(1).leading_zeros() as i32;
            self.rcv_wscale = (ilog2 - 15).clamp(0, TCP_MAX_WSCALE as i32) as u8;
        }
        window_clamp = window_clamp.min(65535u32 << self.rcv_wscale);
        self.window_clamp = window_clamp;
        self.rcv_ssthresh = self.rcv_wnd;
    }

    /// `tcp_receive_window()`: what is left of the last advertised window.
    pub(super) fn receive_window(&self) -> u32 {
        (self.rcv_wup + self.rcv_wnd).dist(self.rcv_nxt)
    }

    /// `__tcp_select_window()`: the window we would offer now (receiver SWS avoidance).
    pub(crate) fn raw_select_window(&mut self, cfg: &TcpConfig) -> u32 {
        let mut mss = self.ack.rcv_mss as i64;
        let mut free_space = self.tcp_space(cfg);
        let allowed_space = self.tcp_full_space(cfg);
        let full_space = (self.window_clamp as i64).min(allowed_space);
        if mss > full_space {
            mss = full_space;
            if mss <= 0 {
                return 0;
            }
        }
        let ws = self.rcv_wscale as u32;
        if free_space < (full_space >> 1) {
            self.ack.quick = 0;
            free_space = free_space.max(0) & !((1i64 << ws) - 1);
            // Below 1/16 of the allowed space or below one MSS: offer zero (receiver SWS).
            if free_space < (allowed_space >> 4) || free_space < mss {
                return 0;
            }
        }
        if free_space > self.rcv_ssthresh as i64 {
            free_space = self.rcv_ssthresh as i64;
        }
        let window: i64 = if ws != 0 {
            // round up to the scale unit so the window is not scaled away
            (free_space + (1i64 << ws) - 1) & !((1i64 << ws) - 1)
        } else {
            let mut w = self.rcv_wnd as i64;
            // Keep the current offer if within one MSS of the free space; otherwise round
            // down to a multiple of the MSS.
            if w <= free_space - mss || w > free_space {
                w = free_space / mss * mss;
            } else if mss == full_space && free_space > w + (full_space >> 1) {
                w = free_space;
            }
            w
        };
        window.max(0) as u32
    }

    /// `tcp_select_window()`: computes the window field and records the new right edge.
    /// Never retracts the right edge already offered (unless a
    /// [`crate::RcvWindowPolicy`] that allows it is installed).
    pub(super) fn select_window(&mut self, cfg: &TcpConfig, now: Instant) -> u16 {
        let cur_win = self.receive_window();
        let mut new_win = self.raw_select_window(cfg);
        let mut may_retract = false;
        if let Some(p) = self.rcv_policy.as_mut() {
            may_retract = p.allow_retract();
            let lim = p.limit(now, new_win, self.ack.rcv_mss);
            if lim < new_win {
                // The policy's value is offered as is: no MSS rounding and no receiver-SWS
                // zeroing (the sub-MSS cliff is what seed 003 studies); only rounded up to
                // the scale unit so that the scaled field does not lose it.
                let unit = 1u32 << self.rcv_wscale;
                new_win = lim.div_ceil(unit).saturating_mul(unit).min(new_win);
            }
        }
        if new_win < cur_win && !may_retract {
            // Never shrink the offered window (tcp_shrink_window = 0).
            let unit = 1u32 << self.rcv_wscale;
            new_win = cur_win.div_ceil(unit) * unit;
        }
        self.rcv_wnd = new_win;
        self.rcv_wup = self.rcv_nxt;
        let new_win = new_win.min(65535u32 << self.rcv_wscale);
        (new_win >> self.rcv_wscale) as u16
    }

    // ------------------------------------------------------------------------------------
    // What to send
    // ------------------------------------------------------------------------------------

    /// Produces at most one segment.
    pub fn poll_transmit(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.last_now = now;
        match self.state {
            TcpState::Closed | TcpState::Listen => return None,
            TcpState::SynSent | TcpState::SynRecv if self.tx_syn => {
                return Some(self.send_syn(cfg, now, buf, self.state == TcpState::SynRecv));
            }
            TcpState::SynSent => return None,
            TcpState::SynRecv | TcpState::TimeWait => {
                return self.ack.send_now.then(|| self.send_pure_ack(cfg, now, buf));
            }
            _ => {}
        }
        if self.local_drop {
            self.local_xmit_failed(cfg, now);
            return None;
        }
        if let Some((ack, ece)) = self.special_ack.take() {
            let seq = self.snd_nxt;
            return Some(self.emit(cfg, now, buf, seq, flags::ACK, 0, 0, SegKind::SpecialAck(ack, ece)));
        }
        if self.rexmit_new {
            // tcp_xmit_recovery(REXMIT_NEW): new data first, Nagle off
            if let Some(t) = self.write_xmit(cfg, now, buf, false, false) {
                return Some(t);
            }
            if !self.snd_nxt.after(self.high_seq) {
                self.frto = false;
            }
            self.rexmit_new = false;
        }
        if self.tlp.pending {
            self.tlp.pending = false;
            if let Some(t) = self.send_loss_probe(cfg, now, buf) {
                return Some(t);
            }
        }
        if let Some(t) = self.xmit_retransmit_queue(cfg, now, buf) {
            return Some(t);
        }
        if self.tx_wakeup {
            self.tx_wakeup = false;
            if let Some(t) = self.write_xmit(cfg, now, buf, true, false) {
                return Some(t);
            }
        }
        if let Some(t) = self.write_xmit(cfg, now, buf, false, false) {
            return Some(t);
        }
        if self.tx_probe {
            self.tx_probe = false;
            // tcp_xmit_probe_skb(): an old sequence number elicits an ACK
            let seq = self.snd_una - 1;
            return Some(self.emit(cfg, now, buf, seq, flags::ACK, 0, 0, SegKind::Control));
        }
        if self.ack.send_now {
            return Some(self.send_pure_ack(cfg, now, buf));
        }
        // MSG_MORE corks only the push of its own write (tcp_push()); uncorking pushes once
        self.wq.more = false;
        self.wq.push = false;
        None
    }

    /// The egress qdisc refuses every packet (`TcpEndpoint::set_local_drop`, `tc qdisc …
    /// pfifo limit 0`): each transmission that would happen now fails in
    /// `__tcp_transmit_skb()` (`NET_XMIT_DROP` > 0), which enters CWR (`tcp_enter_cwr()`).
    /// An ACK counts as sent (`tcp_event_ack_sent()` runs before the qdisc); a failed
    /// retransmission leaves the segment lost and not retransmitted (no `retrans_out`) but
    /// counts in `total_retrans`, marks it `TCPCB_EVER_RETRANS` and stamps `retrans_stamp`
    /// (`__tcp_retransmit_skb()`, `tcp_retransmit_skb()`); failed new data with nothing in flight
    /// arms the probe timer (`tcp_write_xmit()` returning true to
    /// `__tcp_push_pending_frames()` → `tcp_check_probe_timer()`). The timers retry
    /// (`tcp_probe_timer()`, `tcp_retransmit_timer()`).
    fn local_xmit_failed(&mut self, cfg: &TcpConfig, now: Instant) {
        let mut failed = false;
        if self.special_ack.take().is_some() || self.ack.send_now {
            self.ack.on_ack_sent();
            failed = true;
        }
        self.tx_probe = false;
        self.tx_wakeup = false;
        if !matches!(self.state, TcpState::Established | TcpState::CloseWait | TcpState::FinWait1 | TcpState::LastAck) {
            return;
        }
        if std::mem::take(&mut self.tlp.pending) {
            failed = true;
        }
        if self.rtx.lost_out > self.rtx.retrans_out && self.in_flight() < self.tp.snd_cwnd {
            // tcp_xmit_retransmit_queue() tries the first lost segment and stops
            if let Some(k) = self.rtx.first_to_retransmit() {
                self.retrans_stamp.get_or_insert(now);
                self.stats.total_retrans += 1;
                self.rtx.q[k].sacked |= super::scoreboard::EVER_RETRANS;
                failed = true;
            }
        }
        if self.may_send_now() {
            failed = true;
            if self.rtx.packets_out == 0 {
                self.check_probe_timer(cfg, now);
            }
        }
        if failed {
            self.enter_cwr(cfg, now);
        }
    }

    /// `tcp_send_ack()`.
    fn send_pure_ack(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>) -> Transmit {
        let seq = self.snd_nxt;
        self.emit(cfg, now, buf, seq, flags::ACK, 0, 0, SegKind::Control)
    }

    /// `tcp_connect()` / `tcp_make_synack()` (and their retransmissions).
    fn send_syn(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>, synack: bool) -> Transmit {
        self.tx_syn = false;
        if !self.syn_retrans {
            self.syn_xmit = now;
        }
        if self.xmit_timer.is_none() {
            let rto = if self.retransmits == 0 { cfg.rto_init } else { self.rtt.rto };
            self.rtt.rto = rto;
            self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, rto);
        }
        self.snd_nxt = self.iss + 1;
        let mut fl = if synack { flags::SYN | flags::ACK } else { flags::SYN };
        fl |= self.syn_ecn_flags(cfg, synack);
        self.emit(cfg, now, buf, self.iss, fl, 0, 0, SegKind::Syn)
    }

    /// ECN in the handshake: `tcp_ecn_send_syn()` (ECE|CWR when `tcp_ecn` = 1 or the
    /// module needs ECN; not on a retransmitted SYN with `tcp_ecn_fallback`,
    /// `tcp_ecn_clear_syn()`), `tcp_ecn_create_request()` + `tcp_ecn_make_synack()` on a
    /// listener's child (ECE when the SYN asked with ECE|CWR, was not ECT, and
    /// `tcp_ecn` ≠ 0 or the module needs ECN), `tcp_ecn_send_synack()` in a simultaneous
    /// open (ECE when still negotiated).
    fn syn_ecn_flags(&mut self, cfg: &TcpConfig, synack: bool) -> u8 {
        let needs_ecn = self.cc.needs_ecn();
        if !synack {
            let use_ecn = cfg.tcp_ecn == 1 || needs_ecn;
            if !self.syn_retrans {
                self.ecn.flags = if use_ecn { TCP_ECN_OK } else { 0 };
            }
            return if use_ecn && !(self.syn_retrans && cfg.tcp_ecn_fallback) { flags::ECE | flags::CWR } else { 0 };
        }
        if self.listener.is_some() && !self.syn_retrans {
            let (th_ecn, ect) = self.syn_ecn;
            let ok = th_ecn && ((!ect && cfg.tcp_ecn != 0) || needs_ecn);
            self.ecn.flags = if ok { TCP_ECN_OK } else { 0 };
        }
        if self.ecn.ok() {
            flags::ECE
        } else {
            0
        }
    }

    /// `tcp_xmit_retransmit_queue()`: resend segments marked lost, as cwnd allows.
    fn xmit_retransmit_queue(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.rtx.lost_out <= self.rtx.retrans_out || self.rtx.q.is_empty() {
            return None;
        }
        if self.in_flight() >= self.tp.snd_cwnd {
            return None;
        }
        let wnd_end = self.snd_una + self.snd_wnd;
        let k = self.rtx.first_to_retransmit()?;
        let s = self.rtx.q[k];
        if !s.seq.before(wnd_end) && s.seq != self.snd_una {
            return None;
        }
        // tcp_pacing_check() at the top of tcp_xmit_retransmit_queue()'s loop
        if self.pacing.check(now) {
            return None;
        }
        // a new skb goes (not the rest of a TSO packet already sent): TSQ with the
        // limit doubled (tcp_small_queue_check(sk, skb, 1))
        let in_piece = cfg.tso && matches!(self.wq.rtx_piece, Some((end, _)) if !end.before(s.end));
        // the RTO's own retransmission of the head is not checked (tcp_retransmit_timer())
        let rto_head = std::mem::take(&mut self.tsq.rto_head) && k == 0;
        let segs = if cfg.tso && !in_piece { self.rtx.lost_run(k).min(self.tp.snd_cwnd - self.in_flight()).max(1) } else { 1 };
        if !in_piece && !rto_head && self.small_queue_check(cfg, s.data_len() * segs, 1) {
            return None;
        }
        if !in_piece {
            self.tsq.skb_head = true;
            self.tsq.gso = (segs.min(u16::MAX as u32) as u16, s.data_len() * segs);
        }
        // tcp_retransmit_skb(): a lost TSO packet goes again as one, as far as the cwnd
        // allows; the rest is split off (tcp_fragment()) as a packet of its own
        let mut rtx_psh = s.data_len() > 0;
        if cfg.tso {
            let (end, segs) = match self.wq.rtx_piece {
                Some((end, segs)) if !end.before(s.end) => (end, segs),
                _ => {
                    let quota = self.tp.snd_cwnd - self.in_flight();
                    let run = self.rtx.lost_run(k);
                    let n = run.min(quota).max(1);
                    if n < run {
                        let id = self.wq.new_id();
                        self.rtx.set_piece(k + n as usize, run - n, id);
                    }
                    let end = self.rtx.q[k + n as usize - 1].end;
                    self.wq.rtx_piece = Some((end, n));
                    let bytes = (k..k + n as usize).map(|i| self.rtx.q[i].data_len()).sum();
                    self.pacing.tso_packet(n, bytes);
                    (end, n)
                }
            };
            let last = s.end == end;
            if last {
                self.wq.rtx_piece = None;
            }
            rtx_psh = last && s.data_len() > 0 && (segs >= 2 || s.psh);
        }
        // tcp_retransmit_skb(): the stamp of the first retransmission
        if self.retrans_stamp.is_none() {
            self.retrans_stamp = Some(now);
        }
        let edt = self.pacing.edt(now);
        self.rtx.mark_retransmitted(k, edt);
        self.rtx.q[k].tx = self.rate.skb_sent(edt, self.rtx.packets_out);
        self.stats.total_retrans += 1;
        // tcp_in_cwnd_reduction(): CWR or Recovery
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.prr.out += 1;
        }
        let off = s.seq.dist(self.snd_buf_seq);
        let len = s.data_len();
        let mut fl = flags::ACK;
        if s.fin {
            fl |= flags::FIN;
        }
        if rtx_psh {
            fl |= flags::PSH;
        }
        // tcp_xmit_retransmit_queue(): retransmitting the head restarts the RTO (its
        // icsk_rto keeps any backoff) unless the RACK reordering timer is pending; without
        // this a fast retransmission in flight is retransmitted again by the old timer
        if k == 0 && !self.xmit_timer_is(XmitTimer::ReoTimeout.bit()) {
            self.rearm_rto(cfg, now);
        }
        Some(self.emit(cfg, now, buf, s.seq, fl, off, len, SegKind::Rexmit))
    }

    /// `tcp_send_loss_probe()` (3.10–4.12): new data if any can go (cwnd ignored, Nagle
    /// off), else, once per episode, the last segment again. 3.x sends that copy with
    /// `__tcp_retransmit_skb()`, i.e. without marking it retransmitted, and records
    /// `tlp_high_seq` to tell later whether the probe repaired a loss; 4.x+ (RACK) makes
    /// it a real retransmission.
    ///
    /// RACK-TLP era (4.13+): a probe that goes restarts the RTO from now (`icsk_pending =
    /// 0` before `tcp_rearm_rto()`); one that does not leaves the RTO counted from the
    /// head's transmission (set by the timer side, `loss_probe_timer`).
    ///
    /// 5.8+ (`tlp_6`): no probe at all, new data included, while one is outstanding
    /// (`if (tp->tlp_high_seq) goto rearm_timer;` first thing), and the retransmitted
    /// probe is not a counted retransmission (`__tcp_retransmit_skb()`, not
    /// `tcp_retransmit_skb()`).
    fn send_loss_probe(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let rack = self.rack_on(cfg);
        if cfg.tlp_6 && self.tlp.high_seq.is_some() {
            return None;
        }
        // 6.x: new data only if its first MSS fits the receive window (tcp_snd_wnd_test());
        // otherwise the last segment is probed (own/tlp-rwnd-limited.pkt)
        let wnd_ok = || {
            let unsent = self.unsent();
            let len = unsent.min(self.mss_cache);
            let with_fin = self.fin_queued && len == unsent;
            !(self.snd_nxt + len + with_fin as u32).after(self.snd_una + self.snd_wnd)
        };
        if self.has_unsent() && !self.fin_sent && (!cfg.tlp_6 || wnd_ok()) {
            let t = self.write_xmit(cfg, now, buf, false, true);
            if t.is_some() {
                self.thin.tlp_count += 1;
                if rack {
                    self.tlp.high_seq = Some(self.snd_nxt);
                    self.tlp.retrans = false;
                    self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, self.rtt.rto);
                }
            }
            return t;
        }
        if self.tlp.high_seq.is_some() {
            return None;
        }
        let s = *self.rtx.q.back()?;
        let len = s.data_len();
        // 3.x: a probe with zero data does not trigger fast recovery; 4.x+ also resends a
        // lone FIN
        if (len == 0 && !(rack && s.fin)) || s.sacked & SACKED_ACKED != 0 {
            return None;
        }
        if rack {
            // 4.x (linux-4.6 profile): counted as a real retransmission (not checked);
            // 5.8+ (checked on 6.18): __tcp_retransmit_skb() counts it in total_retrans
            // only, tcpi_retrans stays 0
            if self.retrans_stamp.is_none() {
                self.retrans_stamp = Some(now);
            }
            if s.sacked & SACKED_RETRANS == 0 && !cfg.tlp_6 {
                self.rtx.retrans_out += 1;
            }
            self.stats.total_retrans += 1;
            self.tlp.retrans = true;
            self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, self.rtt.rto);
        }
        let edt = self.pacing.wstamp.max(now);
        let tx = self.rate.skb_sent(edt, self.rtx.packets_out);
        self.tsq.skb_head = true;
        self.tsq.gso = (1, 0);
        if let Some(m) = self.rtx.q.back_mut() {
            m.xmit = edt;
            m.rdb_start = m.seq;
            m.tx = tx;
            if rack {
                m.sacked |= if cfg.tlp_6 { EVER_RETRANS } else { SACKED_RETRANS | EVER_RETRANS };
            }
        }
        self.tlp.high_seq = Some(self.snd_nxt);
        self.thin.tlp_count += 1;
        // the probe is the last MSS split off the last skb (tcp_fragment()): PSH only if
        // that skb was pushed
        let mut fl = if !cfg.tso || s.psh { flags::ACK | flags::PSH } else { flags::ACK };
        if s.fin {
            fl |= flags::FIN;
        }
        let off = s.seq.dist(self.snd_buf_seq);
        Some(self.emit(cfg, now, buf, s.seq, fl, off, len, SegKind::Rexmit))
    }

    /// `tcp_may_send_now()`: the head of the unsent queue passes the cwnd, receive-window
    /// and Nagle tests.
    pub(super) fn may_send_now(&self) -> bool {
        if !self.has_unsent() || self.fin_sent {
            return false;
        }
        let mss = self.mss_cache;
        let unsent = self.unsent();
        let len = unsent.min(mss);
        let with_fin = self.fin_queued && len == unsent;
        if self.in_flight() >= self.tp.snd_cwnd && !(with_fin && len == 0) {
            return false;
        }
        if (self.snd_nxt + len + with_fin as u32).after(self.snd_una + self.snd_wnd) {
            return false;
        }
        !(len < mss && !with_fin && !self.nodelay && self.rtx.packets_out > 0 && self.minshall_check())
    }

    /// `tcp_minshall_check()`: a sub-MSS segment is still unacknowledged.
    fn minshall_check(&self) -> bool {
        self.snd_sml.after(self.snd_una) && !self.snd_sml.after(self.snd_nxt)
    }

    /// `tcp_write_xmit()` for one segment: cwnd test, receive-window test, Nagle.
    ///
    /// With `wakeup` it acts as `tcp_write_wakeup()` from the persist timer: no cwnd or
    /// Nagle test, and the segment is cut to the (sub-MSS) window that is left, which
    /// the sender-side SWS rule otherwise refuses to fill.
    ///
    /// With `probe` it sends a tail loss probe (`push_one == 2`): cwnd and Nagle are
    /// ignored and no new probe is scheduled.
    fn write_xmit(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>, wakeup: bool, probe: bool) -> Option<Transmit> {
        if !self.has_unsent() || self.fin_sent {
            return None;
        }
        if !matches!(self.state, TcpState::Established | TcpState::CloseWait | TcpState::FinWait1 | TcpState::LastAck) {
            return None;
        }
        self.rwnd_hit = false;
        let t = self.write_xmit_one(cfg, now, buf, wakeup, probe);
        // the end of tcp_write_xmit(): the receive-window chronograph
        let j = jiffies(cfg, now);
        if self.rwnd_hit {
            self.chrono.start(j, ChronoType::RwndLimited);
        } else {
            let empty = self.queues_empty();
            self.chrono.stop(j, ChronoType::RwndLimited, empty);
        }
        t
    }

    /// Nothing unacknowledged and nothing unsent (`tcp_rtx_and_write_queues_empty()`).
    pub(super) fn queues_empty(&self) -> bool {
        self.rtx.packets_out == 0 && !self.has_unsent()
    }

    fn write_xmit_one(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>, wakeup: bool, probe: bool) -> Option<Transmit> {
        // tcp_pacing_check() (tcp_write_wakeup() is not paced)
        if !wakeup && self.pacing.check(now) {
            return None;
        }
        if cfg.tso && !wakeup && (self.unsent() > 0 || self.wq.piece.is_some()) {
            return self.write_xmit_tso(cfg, now, buf, probe);
        }
        let mss = self.mss_cache;
        let unsent = self.unsent();
        let mut len = unsent.min(mss);
        if wakeup {
            let room = (self.snd_una + self.snd_wnd).dist(self.snd_nxt);
            if room == 0 {
                return None;
            }
            len = len.min(room);
        }
        let with_fin = self.fin_queued && len == unsent;
        if !cfg.idle_check_at_write {
            self.slow_start_after_idle_check(cfg, now);
        }
        // tcp_cwnd_test(): the final FIN alone is not held by cwnd
        let fin_only = with_fin && len == 0;
        if self.in_flight() >= self.tp.snd_cwnd && !fin_only && !wakeup && !probe {
            self.cwnd_validate(cfg, now, true);
            return None;
        }
        // tcp_snd_wnd_test()
        let end = self.snd_nxt + len + with_fin as u32;
        if end.after(self.snd_una + self.snd_wnd) {
            self.rwnd_hit = true;
            if self.rtx.packets_out == 0 {
                self.check_probe_timer(cfg, now);
            }
            return None;
        }
        // tcp_nagle_test() with Minshall's check; MSG_MORE / TCP_CORK hold any partial
        // segment (TCP_NAGLE_CORK) until the probe timer or an uncork pushes it
        let corked = (self.wq.more || self.wq.cork) && !self.wq.push;
        let nodelay = self.nodelay || self.wq.push;
        if len < mss && !with_fin && !wakeup && !probe && super::tso::nagle_check(true, corked, nodelay, self.rtx.packets_out, self.minshall_check()) {
            if self.rtx.packets_out == 0 {
                self.check_probe_timer(cfg, now);
            }
            return None;
        }
        // tcp_small_queue_check() (tcp_write_wakeup() does not check)
        if !wakeup && self.small_queue_check(cfg, len, 0) {
            return None;
        }
        self.tsq.skb_head = true;
        self.tsq.gso = (1, len);
        // tcp_write_wakeup() marks its probe TCPHDR_PSH whatever it splits off
        let psh = len > 0 && (len == unsent || wakeup);
        Some(self.send_new_segment(cfg, now, buf, len, with_fin, (psh, psh), probe, 0))
    }

    /// `tcp_write_xmit()` with TSO sizing ([`super::tso`]): the head skb goes in pieces of
    /// at most min(`tcp_cwnd_test()`, `tcp_tso_segs()`) segments (`tcp_mss_split_point()`),
    /// a one-segment skb passes `tcp_nagle_test()`, a larger one may be deferred
    /// (`tcp_tso_should_defer()`); a piece is then sent segment by segment.
    fn write_xmit_tso(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>, probe: bool) -> Option<Transmit> {
        let mss = self.mss_cache;
        if let Some(p) = self.wq.piece {
            let len = p.end.dist(self.snd_nxt).min(mss);
            return Some(self.send_piece_segment(cfg, now, buf, p, len, probe));
        }
        if !cfg.idle_check_at_write {
            self.slow_start_after_idle_check(cfg, now);
        }
        let write_seq = self.write_seq();
        // tcp_cwnd_test(): at most half the cwnd per TSO packet, for at least two in flight
        let (in_flight, cwnd) = (self.in_flight(), self.tp.snd_cwnd);
        let mut quota = if in_flight >= cwnd { 0 } else { (cwnd >> 1).max(1).min(cwnd - in_flight) };
        if quota == 0 {
            if !probe {
                self.cwnd_validate(cfg, now, true);
                return None;
            }
            quota = 1; // push_one == 2: force out a loss probe
        }
        let max_segs = self.tso_segs(cfg);
        // tcp_write_xmit() -> tcp_grow_skb(): a head skb short of min(cwnd_quota, max_segs)
        // segments takes payload from the next skb
        if let Some(h) = self.wq.head() {
            let want = quota.min(max_segs) * mss;
            let len = h.end.dist(self.snd_nxt);
            if want > len {
                self.wq.grow_head(want - len);
            }
        }
        let head = self.wq.head().unwrap_or(super::tso::Skb { start: self.snd_nxt, end: write_seq, psh: true });
        let is_tail = self.wq.head().is_none_or(|h| self.wq.is_tail(&h));
        let skb_len = head.end.dist(self.snd_nxt);
        // tcp_snd_wnd_test(): the first MSS must fit in the window
        let wnd_end = self.snd_una + self.snd_wnd;
        if (self.snd_nxt + skb_len.min(mss)).after(wnd_end) {
            self.rwnd_hit = true;
            if self.rtx.packets_out == 0 {
                self.check_probe_timer(cfg, now);
            }
            return None;
        }
        // tp->nonagle: TCP_NAGLE_CORK (MSG_MORE's push, TCP_CORK) unless uncorking pushes
        let corked = (self.wq.more || self.wq.cork) && !self.wq.push;
        let nodelay = self.nodelay || self.wq.push;
        let fin_in_skb = self.fin_queued && head.end == write_seq;
        let limit = if skb_len <= mss {
            // tcp_nagle_test(): only the last skb is subject to Nagle (TCP_NAGLE_PUSH otherwise)
            let partial = skb_len < mss;
            if !probe && is_tail && !fin_in_skb && super::tso::nagle_check(partial, corked, nodelay, self.rtx.packets_out, self.minshall_check()) {
                if self.rtx.packets_out == 0 {
                    self.check_probe_timer(cfg, now);
                }
                return None;
            }
            mss
        } else {
            if !probe {
                let ctx = super::tso::DeferCtx {
                    in_recovery: self.ca_state >= CaState::Recovery,
                    since_last_xmit: self.wq.last_xmit.map(|t| now.saturating_since(t)),
                    send_win: wnd_end.dist(self.snd_nxt),
                    cong_win: cwnd.saturating_sub(in_flight) * mss,
                    max_segs,
                    mss,
                    skb_len,
                    skb_is_tail: is_tail,
                    snd_wnd: self.snd_wnd,
                    cwnd,
                    win_divisor: cfg.tcp_tso_win_divisor,
                    head_age: self.rtx.q.front().map(|h| now.saturating_since(h.xmit)),
                    srtt_us: self.rtt.srtt_us >> 3,
                    fin: fin_in_skb,
                };
                if super::tso::should_defer(&ctx) {
                    // deferred for want of receive window (tcp_tso_should_defer()'s
                    // is_rwnd_limited)
                    self.rwnd_hit = ctx.cong_win >= ctx.send_win && ctx.send_win <= skb_len;
                    self.cwnd_validate(cfg, now, in_flight + 1 >= cwnd);
                    return None;
                }
            }
            self.mss_split_point(self.snd_nxt, wnd_end, skb_len, mss, quota.min(max_segs), is_tail, corked, nodelay)
        };
        let bytes = skb_len.min(limit).max(1);
        // tcp_small_queue_check() after tso_fragment(): the piece is the skb that goes
        if self.small_queue_check(cfg, bytes, 0) {
            return None;
        }
        self.tsq.skb_head = true;
        let id = self.wq.new_id();
        let p = super::tso::Piece { id, end: self.snd_nxt + bytes, segs: bytes.div_ceil(mss), psh_end: bytes == skb_len && head.psh };
        self.tsq.gso = (p.segs.min(u16::MAX as u32) as u16, bytes);
        self.wq.piece = Some(p);
        self.pacing.tso_packet(p.segs, bytes);
        Some(self.send_piece_segment(cfg, now, buf, p, bytes.min(mss), probe))
    }

    /// The sends of a write in progress (`tcp_push_one()`, `__tcp_push_pending_frames()`
    /// from `tcp_sendmsg_locked()`), as far as they shape the skbs: `tcp_write_xmit()`'s
    /// choices (`tcp_cwnd_test()`, `tcp_grow_skb()`, `tcp_snd_wnd_test()`,
    /// `tcp_tso_should_defer()` unless `push_one`, `tcp_mss_split_point()`) with the
    /// `tso_fragment()` splits applied to the write queue; the segments go at the next
    /// `poll_transmit`, which then finds each planned piece as its head skb. Returns the
    /// change of `sk_wmem_queued` (a head per split, less the skbs `tcp_grow_skb()` ate).
    pub(super) fn plan_push(&mut self, cfg: &TcpConfig, now: Instant, plan: &mut PushPlan, push_one: bool) -> i64 {
        let head = super::SKB_HEAD_TRUESIZE as u64;
        let mut delta = 0i64;
        let mss = self.mss_cache;
        // tcp_pacing_check(): an internally paced socket waits for its next departure time
        if !plan.active || (self.pacing.status == super::pacing::PacingStatus::Needed && self.pacing.wstamp > now) {
            return 0;
        }
        loop {
            let (in_flight, cwnd) = (self.in_flight() + plan.segs, self.tp.snd_cwnd);
            if in_flight >= cwnd {
                break;
            }
            let quota = (cwnd >> 1).max(1).min(cwnd - in_flight).min(self.tso_segs(cfg));
            let Some(i) = self.wq.index_at(plan.nxt) else { break };
            let len = self.wq.skb(i).end.dist(plan.nxt);
            if quota * mss > len && self.wq.grow_at(i, quota * mss - len) {
                delta -= head as i64;
            }
            let is_tail = i + 1 == self.wq.skb_count() as usize;
            let len = self.wq.skb(i).end.dist(plan.nxt);
            let wnd_end = self.snd_una + self.snd_wnd;
            if (plan.nxt + len.min(mss)).after(wnd_end) {
                break;
            }
            let (corked, nodelay) = ((self.wq.more || self.wq.cork) && !self.wq.push, self.nodelay || self.wq.push);
            let limit = if len <= mss {
                mss
            } else {
                if !push_one {
                    let ctx = super::tso::DeferCtx {
                        in_recovery: self.ca_state >= CaState::Recovery,
                        since_last_xmit: if plan.segs > 0 { Some(Duration::ZERO) } else { self.wq.last_xmit.map(|t| now.saturating_since(t)) },
                        send_win: wnd_end.dist(plan.nxt),
                        cong_win: (cwnd - in_flight) * mss,
                        max_segs: self.tso_segs(cfg),
                        mss,
                        skb_len: len,
                        skb_is_tail: is_tail,
                        snd_wnd: self.snd_wnd,
                        cwnd,
                        win_divisor: cfg.tcp_tso_win_divisor,
                        head_age: self.rtx.q.front().map(|h| now.saturating_since(h.xmit)).or((plan.segs > 0).then_some(Duration::ZERO)),
                        srtt_us: self.rtt.srtt_us >> 3,
                        fin: false,
                    };
                    if super::tso::should_defer(&ctx) {
                        break;
                    }
                }
                self.mss_split_point(plan.nxt, wnd_end, len, mss, quota, is_tail, corked, nodelay)
            };
            let bytes = len.min(limit).max(1);
            if bytes < len {
                self.wq.split_at(i, plan.nxt + bytes);
                delta += head as i64;
            }
            plan.nxt = plan.nxt + bytes;
            plan.segs += bytes.div_ceil(mss);
            if push_one {
                break;
            }
        }
        delta
    }

    /// `tcp_mss_split_point()`: how much of the head skb one TSO packet takes.
    #[allow(clippy::too_many_arguments)]
    fn mss_split_point(&self, nxt: SeqNumber, wnd_end: SeqNumber, skb_len: u32, mss: u32, max_segs: u32, is_tail: bool, corked: bool, nodelay: bool) -> u32 {
        let window = wnd_end.dist(nxt);
        let max_len = mss * max_segs.max(1);
        if max_len <= window && !is_tail {
            return max_len;
        }
        let needed = skb_len.min(window);
        if max_len <= needed {
            return max_len;
        }
        let partial = needed % mss;
        // a partial last segment goes along only if Nagle allows (tcp_nagle_check())
        if super::tso::nagle_check(partial != 0, corked, nodelay, self.rtx.packets_out, self.minshall_check()) {
            return (needed - partial).max(mss.min(needed));
        }
        needed
    }

    /// One segment of the TSO packet `p`: PSH on its last segment if the packet has two or
    /// more (what Linux 6.18 sends) or ends a pushed skb; FIN with the skb's last byte.
    fn send_piece_segment(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>, p: super::tso::Piece, len: u32, probe: bool) -> Transmit {
        let last = self.snd_nxt + len == p.end;
        let with_fin = last && self.fin_queued && p.end == self.write_seq();
        let psh = last && len > 0 && (p.segs >= 2 || p.psh_end);
        if last {
            self.wq.piece = None;
            self.wq.sent(p.end);
        }
        self.wq.last_xmit = Some(now);
        self.send_new_segment(cfg, now, buf, len, with_fin, (psh, last && p.psh_end), probe, p.id)
    }

    /// The sending half of `tcp_write_xmit()`: queue the segment on the rtx queue, then
    /// `tcp_event_new_data_sent()` (RTO), `tcp_event_data_sent()` (ping-pong detection),
    /// `tcp_cwnd_validate()` and the loss probe; RDB may put older bytes in front.
    #[allow(clippy::too_many_arguments)]
    fn send_new_segment(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>, len: u32, with_fin: bool, psh: (bool, bool), probe: bool, piece: u32) -> Transmit {
        // psh: (on the wire, stored with the segment for its retransmissions)
        let (psh, stored_psh) = psh;
        if self.in_flight() == 0 {
            self.ca_event(cfg, now, CaEvent::TxStart);
        }
        let edt = self.pacing.edt(now);
        let tx = self.rate.skb_sent(edt, self.rtx.packets_out);
        let seq = self.snd_nxt;
        let end = seq + len + with_fin as u32;
        // RDB: the packet may start earlier than the new segment (never with a FIN)
        let rdb_start = if with_fin { seq } else { self.rdb_bundle_start(cfg, seq, len) };
        let prior_packets = self.rtx.packets_out;
        self.rtx.push(TxSeg { seq, end, fin: with_fin, sacked: 0, xmit: edt, rdb_start, tx, piece, psh: stored_psh, sack_run: 0 });
        self.snd_nxt = end;
        if with_fin {
            self.fin_sent = true;
        }
        if len < self.mss_cache {
            self.snd_sml = end; // tcp_minshall_update
        }
        // tcp_in_cwnd_reduction(): CWR or Recovery
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.prr.out += 1;
        }
        // tcp_event_new_data_sent(): arm the RTO on the first outstanding packet
        use XmitTimer::*;
        if prior_packets == 0 || self.xmit_timer_is(Probe0.bit() | EarlyRetrans.bit() | LossProbe.bit() | ReoTimeout.bit()) {
            self.rearm_rto(cfg, now);
        }
        // tcp_event_data_sent(): interactive detection
        if now.saturating_since(self.ack.lrcvtime) < self.ack.ato {
            self.ack.pingpong = true;
        }
        self.lsndtime = now;
        let limited = self.in_flight() >= self.tp.snd_cwnd;
        self.cwnd_validate(cfg, now, limited);
        if !probe {
            // tcp_write_xmit(): one loss probe per tail loss episode
            self.schedule_loss_probe(cfg, now, false);
        }
        let mut fl = flags::ACK;
        if with_fin {
            fl |= flags::FIN;
        }
        if psh {
            fl |= flags::PSH;
        }
        let bundled = seq.dist(rdb_start);
        if bundled > 0 {
            self.thin.rdb_packets += 1;
            self.thin.rdb_bytes += bundled as u64;
        }
        let off = rdb_start.dist(self.snd_buf_seq);
        // a bundle starts below snd_nxt: tcp_ecn_send() sees a retransmission (Not-ECT)
        let kind = if bundled == 0 && len > 0 { SegKind::NewData } else { SegKind::Rexmit };
        self.emit(cfg, now, buf, rdb_start, fl, off, len + bundled, kind)
    }

    // ------------------------------------------------------------------------------------
    // cwnd validation (RFC 2861, RFC 7661's predecessor as Linux has it)
    // ------------------------------------------------------------------------------------

    /// `tcp_cwnd_validate()`: track whether cwnd is used; RFC 2861 decay when it is not.
    fn cwnd_validate(&mut self, cfg: &TcpConfig, now: Instant, is_cwnd_limited: bool) {
        if !self.snd_una.before(self.cwnd_usage_seq)
            || is_cwnd_limited
            || (!self.is_cwnd_limited && self.rtx.packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = self.rtx.packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
        if self.tcp_is_cwnd_limited() {
            // network is fed fully
            self.snd_cwnd_used = 0;
            self.snd_cwnd_stamp = now;
        } else {
            // network starves
            self.snd_cwnd_used = self.snd_cwnd_used.max(self.rtx.packets_out);
            if cfg.tcp_slow_start_after_idle && now.saturating_since(self.snd_cwnd_stamp) >= self.rtt.rto {
                self.cwnd_application_limited(cfg, now);
            }
            // starved by a full send buffer: all written data sent, the writer blocked
            if !self.has_unsent() && self.write_blocked && matches!(self.state, TcpState::Established | TcpState::CloseWait) {
                self.chrono.start(jiffies(cfg, now), ChronoType::SndbufLimited);
            }
        }
    }

    /// `tcp_cwnd_application_limited()`: RFC 2861 "slow part": after an RTO in which cwnd
    /// was not filled, move cwnd halfway to what was used.
    fn cwnd_application_limited(&mut self, cfg: &TcpConfig, now: Instant) {
        if self.ca_state == CaState::Open && !self.write_blocked {
            let win_used = self.snd_cwnd_used.max(cfg.init_cwnd);
            if win_used < self.tp.snd_cwnd {
                self.tp.snd_ssthresh = self.current_ssthresh();
                self.tp.snd_cwnd = (self.tp.snd_cwnd + win_used) >> 1;
            }
            self.snd_cwnd_used = 0;
        }
        self.snd_cwnd_stamp = now;
    }

    /// `tcp_slow_start_after_idle_check()`: nothing in flight and no data sent for an
    /// RTO: restart the cwnd.
    pub(super) fn slow_start_after_idle_check(&mut self, cfg: &TcpConfig, now: Instant) {
        if self.rtx.packets_out == 0 && cfg.tcp_slow_start_after_idle {
            let idle = now.saturating_since(self.lsndtime);
            if idle > self.rtt.rto {
                self.cwnd_restart(cfg, now, idle);
            }
        }
    }

    /// `tcp_cwnd_restart()`: RFC 2861 — halve cwnd per RTO of idleness, not below IW.
    fn cwnd_restart(&mut self, cfg: &TcpConfig, now: Instant, idle: Duration) {
        self.ca_event(cfg, now, CaEvent::CwndRestart);
        let restart = cfg.init_cwnd.min(self.tp.snd_cwnd);
        self.sync_tp(cfg, now);
        self.tp.snd_ssthresh = self.current_ssthresh();
        let mut cwnd = self.tp.snd_cwnd;
        let rto = self.rtt.rto.as_nanos() as i128;
        let mut delta = idle.as_nanos() as i128 - rto;
        while delta > 0 && cwnd > restart {
            cwnd >>= 1;
            delta -= rto;
        }
        self.tp.snd_cwnd = cwnd.max(restart);
        self.snd_cwnd_stamp = now;
        self.snd_cwnd_used = 0;
    }

    // ------------------------------------------------------------------------------------
    // Building a segment
    // ------------------------------------------------------------------------------------

    /// Builds one segment into `buf` after the headroom (`__tcp_transmit_skb`): options in
    /// `tcp_options_write()` order, the window (`tcp_select_window()`), SACK/D-SACK
    /// blocks, ECN bits (`tcp_ecn_send()`), payload from the send ring, checksum, the
    /// departure time (EDT) and pacing rate for the qdisc; `tcp_event_ack_sent()` for
    /// ACKs and `tcp_update_skb_after_send()` for data.
    #[allow(clippy::too_many_arguments)]
    fn emit(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>, seq: SeqNumber, fl: u8, off: u32, len: u32, kind: SegKind) -> Transmit {
        let (prior_wstamp, edt) = self.pacing.stamp(now, len > 0);
        let mut r = TcpRepr::new(self.local.port(), self.remote.port());
        r.seq = seq;
        r.flags = fl;
        if fl & flags::ACK != 0 {
            r.ack = match kind {
                SegKind::SpecialAck(a, _) => a,
                _ => self.rcv_nxt,
            };
        }
        let needs_ecn = self.cc.needs_ecn();
        let ect = match kind {
            SegKind::Syn => {
                self.syn_options(cfg, now, &mut r);
                needs_ecn && self.ecn.ok()
            }
            SegKind::SpecialAck(_, ece) => {
                if ece {
                    r.flags |= flags::ECE;
                }
                self.established_options(cfg, now, &mut r, len > 0);
                needs_ecn && self.ecn.ok()
            }
            _ => {
                let (ect, cwr, ece) = self.ecn.send(kind == SegKind::NewData, needs_ecn);
                if cwr {
                    r.flags |= flags::CWR;
                }
                if ece {
                    r.flags |= flags::ECE;
                }
                self.established_options(cfg, now, &mut r, len > 0);
                ect
            }
        };
        let hl = r.header_len();
        buf.truncate(HEADROOM);
        buf.resize(HEADROOM + hl, 0);
        r.emit_header(&mut buf[HEADROOM..]);
        let mut tail: &'static [u8] = &[];
        if len > 0 && self.lazy_payload {
            tail = self.snd_ring.copy_out_lazy(off as usize, len as usize, buf);
        } else if len > 0 {
            self.snd_ring.copy_out(off as usize, len as usize, buf);
        }
        let src = *self.local.ip();
        let dst = *self.remote.ip();
        wire::fill_checksum_tail(&mut buf[HEADROOM..], tail, src, dst);
        // __tcp_transmit_skb(): the skb is charged to sk_wmem_alloc until tcp_wfree()
        // (pure ACKs: 2 bytes and __sock_wfree, not counted here; SYNs not counted)
        let tsq = if self.tsq.on && kind != SegKind::Syn && (len > 0 || fl & flags::FIN != 0) {
            let k = if std::mem::take(&mut self.tsq.skb_head) { wirelab_core::tsq::SKB_HEAD } else { wirelab_core::tsq::SEG };
            self.tsq_charge(20 + buf.len() - HEADROOM + tail.len(), k);
            k
        } else {
            wirelab_core::tsq::NONE
        };
        self.stats.segs_out += 1;
        match kind {
            // tcp_event_ack_sent() returns early for DCTCP's older-rcv_nxt ACK
            SegKind::SpecialAck(a, _) if a != self.rcv_nxt => {}
            _ if fl & flags::ACK != 0 => self.ack.on_ack_sent(),
            _ => {}
        }
        if len > 0 {
            self.pacing.after_send(len, prior_wstamp, self.tp.pacing_rate);
        }
        // a TCP socket's own TOS never carries ECN bits (do_ip_setsockopt(IP_TOS))
        let tos = (self.tos & !INET_ECN_MASK) | if ect { INET_ECN_ECT_0 } else { 0 };
        Transmit {
            src,
            dst,
            proto: wirelab_wire::ip_proto::TCP,
            tos,
            dont_frag: true,
            sk: self.tsq.sk,
            txtime: edt,
            pacing_rate: self.tp.pacing_rate,
            tail,
            tsq,
            // a GSO skb: its segments' IP bytes, each with this segment's headers
            gso: match self.tsq.gso {
                (segs, bytes) if segs >= 2 && tsq != wirelab_core::tsq::NONE => (segs, bytes + segs as u32 * (20 + hl as u32)),
                _ => (0, 0),
            },
        }
    }

    /// Window, timestamps and SACK/D-SACK blocks of a non-SYN segment
    /// (`tcp_established_options()`).
    fn established_options(&mut self, cfg: &TcpConfig, now: Instant, r: &mut TcpRepr, has_data: bool) {
        r.window = self.select_window(cfg, now);
        // seed 003 §6.4: a rate-control policy may re-advertise the MSS on pure ACKs (no
        // data: the option's 4 bytes would not fit a full segment)
        if !has_data && r.flags & (flags::SYN | flags::RST) == 0 {
            if let Some(p) = self.rcv_policy.as_ref() {
                let offered = (r.window as u32) << self.rcv_wscale;
                r.mss = p.mss_option(offered, self.advmss);
            }
        }
        if self.tstamp_ok {
            r.timestamp = Some((self.ts_now(now), self.ts_recent));
        }
        if self.sack_ok && r.flags & flags::RST == 0 {
            if let Some((l, rr)) = self.ofo.dsack.take() {
                if cfg.tcp_dsack {
                    r.sack.push(l, rr);
                }
            }
            for &(l, rr) in self.ofo.sacks.as_slice() {
                r.sack.push(l, rr);
            }
        }
    }

    /// SYN / SYN-ACK options (`tcp_syn_options()`, `tcp_synack_options()`): a SYN offers
    /// what the sysctls allow, a SYN-ACK what was negotiated; the window is never scaled.
    fn syn_options(&mut self, cfg: &TcpConfig, now: Instant, r: &mut TcpRepr) {
        r.mss = Some(self.advmss.min(65535) as u16);
        let synack = r.flags & flags::ACK != 0;
        let ws = if synack { self.wscale_ok } else { cfg.tcp_window_scaling };
        if ws {
            r.window_scale = Some(self.rcv_wscale);
        }
        r.sack_permitted = if synack { self.sack_ok } else { cfg.tcp_sack };
        let ts = if synack { self.tstamp_ok } else { cfg.tcp_timestamps };
        if ts {
            r.timestamp = Some((self.ts_now(now), if synack { self.ts_recent } else { 0 }));
        }
        // RFC 7323: the window in a SYN is never scaled
        if let Some(p) = self.rcv_policy.as_mut() {
            let lim = p.limit(now, self.rcv_wnd, self.ack.rcv_mss);
            self.rcv_wnd = self.rcv_wnd.min(lim);
        }
        r.window = self.rcv_wnd.min(65535) as u16;
    }
}

/// Where the sends planned during one write stand ([`Conn::plan_push`]).
pub(super) struct PushPlan {
    /// The first byte not yet planned (`snd_nxt` as the sends would leave it).
    pub nxt: SeqNumber,
    /// Segments planned (in flight once sent).
    pub segs: u32,
    /// Planning applies (no TSO packet half sent).
    pub active: bool,
}
