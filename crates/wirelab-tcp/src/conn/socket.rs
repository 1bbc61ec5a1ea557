//! The system-call side (`net/ipv4/tcp.c`): `write`, `read`, `tcp_cleanup_rbuf`,
//! `shutdown`, `close`, abort (`tcp_send_active_reset`), `setsockopt`, `tcp_get_info`
//! and `tcp_done`.
use super::delack::{ACK_PUSHED, ACK_PUSHED2, ACK_SCHED};
use super::{Conn, Out, RstSpec, SkTimer, TCP_MIN_MSS};
use super::timer::timer_at;
use super::pacing::PacingStatus;
use crate::api::{RcvWindowPolicy, SockError, SockOpt, TcpInfo, TcpState};
use crate::cc::CongestionAlgo;
use crate::config::{RcvSpaceStyle, TcpConfig};
use crate::ring::{Ring, SendRing};
use wirelab_core::Instant;

impl Conn {
    /// `write()` / `sendmsg()` with `MSG_MORE` if `more`: the data is not pushed (no PSH mark, Nagle
    /// corked for this write's push), as `tcp_push()` does.
    pub fn send_more(&mut self, cfg: &TcpConfig, now: Instant, data: &[u8], more: bool) -> Result<usize, SockError> {
        self.send_common(cfg, now, data.len(), more, |ring, n| ring.push(&data[..n]))
    }

    /// `write()` of a `'static` slice: queued by reference, not copied (the same bytes go
    /// out).
    pub fn send_static(&mut self, cfg: &TcpConfig, now: Instant, data: &'static [u8]) -> Result<usize, SockError> {
        self.send_common(cfg, now, data.len(), false, |ring, n| ring.push_static(&data[..n]))
    }

    /// Queues what fits of `want` bytes (`sk_stream_memory_free`); `push` puts the first
    /// `n` of them into the send ring.
    fn send_common(&mut self, cfg: &TcpConfig, now: Instant, want: usize, more: bool, push: impl FnOnce(&mut SendRing, usize)) -> Result<usize, SockError> {
        if let Some(e) = self.err {
            return Err(e);
        }
        match self.state {
            TcpState::SynSent | TcpState::SynRecv | TcpState::Established | TcpState::CloseWait => {}
            _ => return Err(if self.fin_queued { SockError::BrokenPipe } else { SockError::NotConnected }),
        }
        if self.fin_queued {
            return Err(SockError::BrokenPipe);
        }
        // tcp_sendmsg_locked(): is sending application-limited?
        self.rate.check_app_limited(
            self.unsent() < self.mss_cache,
            self.in_flight(),
            self.tp.snd_cwnd,
            self.rtx.lost_out,
            self.rtx.retrans_out,
        );
        if !cfg.tso {
            // sk_stream_memory_free() with truesize counted as twice the payload
            let cap = (self.sndbuf / 2) as usize;
            let n = want.min(cap.saturating_sub(self.snd_ring.len()));
            if n < want {
                self.write_blocked = true;
            }
            if n > 0 {
                self.first_write_of_queue(cfg, now);
                push(&mut self.snd_ring, n);
                self.wq.more = more;
            }
            return Ok(n);
        }
        let want = want.min(u32::MAX as usize >> 1) as u32;
        if want > 0 && self.unsent() == 0 {
            self.first_write_of_queue(cfg, now);
        }
        let n = self.copy_to_skbs(cfg, now, want);
        if n < want {
            self.write_blocked = true;
        }
        if n > 0 {
            push(&mut self.snd_ring, n as usize);
            // tcp_push() at the end (or before waiting for memory, without MSG_MORE):
            // MSG_MORE skips the mark (TCP_CORK does not) and corks this push
            let more = more && n == want;
            self.wq.more = more;
            if !more {
                let end = self.write_seq();
                self.wq.mark_push(end);
            }
        }
        Ok(n as usize)
    }

    /// The first data of an empty write queue: `tcp_add_write_queue_tail()` starts the busy
    /// chronograph, `tcp_skb_entail()` runs the idle check.
    fn first_write_of_queue(&mut self, cfg: &TcpConfig, now: Instant) {
        self.chrono.start(super::timer::jiffies(cfg, now), super::chrono::ChronoType::Busy);
        if cfg.idle_check_at_write {
            self.slow_start_after_idle_check(cfg, now);
        }
    }

    /// The copy loop of `tcp_sendmsg_locked()` on the skbs of the write queue (linux-6):
    /// append to the tail skb up to `size_goal` (`tcp_xmit_size_goal()`) without a memory
    /// check; a new skb only while `sk_stream_memory_free()` (`sk_wmem_queued < sk_sndbuf`);
    /// when an skb is full and more is to come, `forced_push()` pushes what cwnd allows
    /// and otherwise a full send head goes at once (`tcp_push_one()`): those sends split
    /// the head skb (`tso_fragment()`), which is what leaves room in the tail. The engine
    /// sends at the next `poll_transmit`, so here the splits are planned
    /// ([`Conn::plan_push`]) and the packets follow them. Returns the bytes taken.
    fn copy_to_skbs(&mut self, cfg: &TcpConfig, now: Instant, want: u32) -> u32 {
        let goal = super::tso::size_goal(self.mss_cache, self.max_window);
        let base = self.write_seq();
        let sndbuf = self.sndbuf as u64;
        let mut wmem = self.wmem_queued(cfg);
        let mut plan = super::output::PushPlan { nxt: self.snd_nxt, segs: 0, active: self.wq.piece.is_none() };
        let mut n = 0u32;
        while n < want {
            let pos = base + n;
            let mut room = self.wq.tail_room(pos, goal);
            if room == 0 {
                if wmem >= sndbuf {
                    break; // wait_for_space
                }
                self.wq.push_skb(pos);
                wmem += super::SKB_HEAD_TRUESIZE as u64;
                room = goal;
            }
            let take = room.min(want - n);
            self.wq.extend_tail(take);
            wmem += take as u64;
            n += take;
            if n == want {
                break;
            }
            let Some(tail) = self.wq.tail() else { break };
            if tail.end.dist(tail.start) < goal {
                continue;
            }
            let d = if self.wq.forced_push(base + n, self.max_window) {
                self.plan_push(cfg, now, &mut plan, false)
            } else if !tail.start.after(plan.nxt) {
                self.plan_push(cfg, now, &mut plan, true)
            } else {
                0
            };
            wmem = wmem.saturating_add_signed(d);
        }
        n
    }

    fn recv_common(&mut self, cfg: &TcpConfig, now: Instant, buf: Option<&mut [u8]>, max: usize) -> Result<usize, SockError> {
        self.readable_signaled = false;
        let avail = self.rcv_nxt.dist(self.copied_seq) as usize - self.peer_fin_in_window() as usize;
        if avail == 0 {
            if self.peer_fin {
                return Ok(0);
            }
            if let Some(e) = self.err {
                return Err(e);
            }
            return match self.state {
                TcpState::SynSent | TcpState::SynRecv | TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2 => {
                    Err(SockError::WouldBlock)
                }
                _ => Err(SockError::NotConnected),
            };
        }
        let n = avail.min(max);
        match buf {
            // contents not kept (discard_payload): a misbehaving reader gets zeros
            Some(b) if self.rcv_discard => b[..n].fill(0),
            Some(b) => {
                self.rcv_ring.peek(&mut b[..n]);
            }
            None => {}
        }
        self.rcv_ring.discard(n);
        if cfg.rcv_space_style == RcvSpaceStyle::Linux616 {
            // tcp_recvmsg_locked() runs tcp_rcv_space_adjust() after each skb it copies; in
            // one read only the first call can measure (the later ones are 0 µs on): after
            // the first skb, with the rest of the read still queued
            let first = match self.rcv_skbs.front() {
                Some(&(end, _)) if end.after(self.copied_seq) => (end.dist(self.copied_seq) as usize).min(n),
                _ => n,
            };
            self.copied_seq = self.copied_seq + first as u32;
            self.rcv_space_adjust(cfg, now);
            self.copied_seq = self.copied_seq + (n - first) as u32;
        } else {
            self.copied_seq = self.copied_seq + n as u32;
        }
        // tcp_recvmsg() frees an skb once read to its end (sk_eat_skb())
        while let Some(&(end, ts)) = self.rcv_skbs.front() {
            if end.after(self.copied_seq) {
                break;
            }
            self.rmem_ts -= ts;
            self.rcv_skbs.pop_front();
        }
        if self.rcv_ring.is_empty() && self.ofo.is_empty() && self.rcv_ring.capacity() > 4096 {
            // drained after a burst: give the memory back (steady streams stay at 4 kB)
            self.rcv_ring = Ring::default();
            self.ofo.ranges = Vec::new();
        }
        if cfg.rcv_space_style != RcvSpaceStyle::Linux616 {
            self.rcv_space_adjust(cfg, now);
        }
        self.cleanup_rbuf(cfg, n);
        Ok(n)
    }

    /// Consumes the FIN's sequence number once only it is left, so that later reads see
    /// EOF immediately.
    fn consume_fin(&mut self) {
        if self.peer_fin && self.rcv_nxt.dist(self.copied_seq) == 1 {
            self.copied_seq = self.rcv_nxt;
        }
    }

    /// The FIN occupies one sequence number between copied_seq and rcv_nxt once received.
    fn peer_fin_in_window(&self) -> bool {
        self.peer_fin && self.rcv_nxt != self.copied_seq
    }

    /// `tcp_ioctl()`: (`SIOCINQ` — readable bytes, a received FIN not counted
    /// (`tcp_inq()`); `SIOCOUTQ` — written but unacknowledged; `SIOCOUTQNSD` — written but
    /// not sent).
    pub fn queue_lengths(&self) -> (u32, u32, u32) {
        let inq = self.rcv_nxt.dist(self.copied_seq) - self.peer_fin_in_window() as u32;
        let data_end = self.write_seq();
        (inq, data_end.dist(self.snd_una.min(data_end)), self.unsent())
    }

    /// `read()`.
    pub fn recv(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut [u8]) -> Result<usize, SockError> {
        let max = buf.len();
        let r = self.recv_common(cfg, now, Some(buf), max);
        self.consume_fin();
        r
    }

    /// The application will only ever read this socket with [`Conn::recv_discard`] from
    /// now on (a sink that counts bytes): data arriving later is counted and acknowledged
    /// exactly as before but its bytes are not copied into the receive queue. A simulator
    /// shortcut with no Linux counterpart and no visible effect (the protocol sees the
    /// same queue lengths); it saves a copy of every payload byte into a per-connection
    /// buffer that, with thousands of connections, is never in cache. Bytes a later
    /// `recv()` would get from such a range read as zeros.
    pub fn discard_payload(&mut self) {
        self.rcv_discard = true;
    }

    /// Read and drop.
    pub fn recv_discard(&mut self, cfg: &TcpConfig, now: Instant, max: usize) -> Result<usize, SockError> {
        let r = self.recv_common(cfg, now, None, max);
        self.consume_fin();
        r
    }

    /// `tcp_cleanup_rbuf()`: ACK after a read if one is due or the window opened a lot.
    fn cleanup_rbuf(&mut self, cfg: &TcpConfig, copied: usize) {
        let mut time_to_ack = false;
        let pending = self.ack.pending;
        if pending & ACK_SCHED != 0 {
            let drained = self.rcv_nxt.dist(self.copied_seq) == 0;
            if self.rcv_nxt.dist(self.rcv_wup) > self.ack.rcv_mss
                || (copied > 0 && (pending & ACK_PUSHED2 != 0 || (pending & ACK_PUSHED != 0 && !self.ack.pingpong)) && drained)
            {
                time_to_ack = true;
            }
        }
        if copied > 0 && !time_to_ack && !self.peer_fin {
            let now_win = self.receive_window();
            if 2 * now_win <= self.window_clamp {
                let mut new_win = self.raw_select_window(cfg);
                if let Some(p) = self.rcv_policy.as_ref() {
                    // the policy shapes __tcp_select_window() too (seed 003's patch)
                    new_win = p.peek(new_win, self.ack.rcv_mss).min(new_win);
                }
                if new_win != 0 && new_win >= 2 * now_win {
                    time_to_ack = true;
                }
            }
        }
        if time_to_ack {
            self.ack.send_now = true;
        }
    }

    /// `shutdown(SHUT_WR)`: FIN after queued data.
    pub fn shutdown_write(&mut self) -> Result<(), SockError> {
        match self.state {
            TcpState::SynSent | TcpState::SynRecv => {
                self.fin_queued = true;
                Ok(())
            }
            TcpState::Established => {
                self.fin_queued = true;
                self.state = TcpState::FinWait1;
                Ok(())
            }
            TcpState::CloseWait => {
                self.fin_queued = true;
                self.state = TcpState::LastAck;
                Ok(())
            }
            TcpState::FinWait1 | TcpState::FinWait2 | TcpState::Closing | TcpState::LastAck | TcpState::TimeWait => Ok(()),
            _ => Err(SockError::NotConnected),
        }
    }

    /// `close()`: FIN (or RST if unread data is discarded, as `tcp_close` does).
    pub fn close(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        self.orphan = true;
        let unread = self.rcv_nxt.dist(self.copied_seq) > self.peer_fin_in_window() as u32;
        match self.state {
            TcpState::Closed | TcpState::Listen => self.enter_closed(now),
            TcpState::SynSent => self.enter_closed(now),
            _ if unread && (self.synchronized() || self.state == TcpState::SynRecv) => {
                self.abort(cfg, now, out);
            }
            TcpState::SynRecv | TcpState::Established | TcpState::CloseWait => {
                let _ = self.shutdown_write();
            }
            TcpState::FinWait2 => {
                self.sk_timer = Some((timer_at(cfg, now, cfg.tcp_fin_timeout), SkTimer::FinWait2));
            }
            _ => {}
        }
    }

    /// Sends RST and closes (`tcp_send_active_reset`: an RST|ACK at
    /// `tcp_acceptable_seq()` built by `tcp_transmit_skb()`, so with the window and the
    /// timestamp option).
    pub fn abort(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        if matches!(
            self.state,
            TcpState::SynRecv | TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2 | TcpState::CloseWait | TcpState::Closing | TcpState::LastAck
        ) {
            // tcp_acceptable_seq(): snd_nxt, unless the peer's window shrank below it
            let wnd_end = self.snd_una + self.snd_wnd;
            let seq = if self.snd_nxt.after(wnd_end) && self.snd_wnd > 0 { wnd_end } else { self.snd_nxt };
            let window = self.select_window(cfg, now);
            let ts = self.tstamp_ok.then(|| (self.ts_now(now), self.ts_recent));
            out.rst.push_back(RstSpec { src: self.local, dst: self.remote, seq, ack: Some(self.rcv_nxt), tos: self.tos, window, ts });
        }
        self.orphan = true;
        self.enter_closed(now);
    }

    /// `tcp_done()`: drops queues and timers; the endpoint frees the socket when orphaned.
    pub fn enter_closed(&mut self, now: Instant) {
        self.state = TcpState::Closed;
        self.xmit_timer = None;
        self.ack.timer = None;
        self.sk_timer = None;
        self.ack.send_now = false;
        self.tx_syn = false;
        self.tx_probe = false;
        self.snd_ring = SendRing::default();
        self.rtx.clear();
        self.wq.clear();
        // tcp_write_queue_purge(): tcp_chrono_stop(TCP_CHRONO_BUSY) with both queues empty
        let j = ((now.as_nanos() as u128 * self.tp.hz as u128) / 1_000_000_000) as u32; // jiffies()
        self.chrono.stop(j, super::chrono::ChronoType::Busy, true);
        self.ofo.ranges = Vec::new();
    }

    /// `setsockopt()`.
    pub fn set_option(&mut self, cfg: &TcpConfig, opt: &SockOpt) -> Result<(), SockError> {
        // before the SYN/SYN-ACK is built, buffer and clamp options shape the initial
        // window and the window scale (tcp_select_initial_window)
        let syn_pending = matches!(self.state, TcpState::SynSent | TcpState::SynRecv) && self.tx_syn;
        match opt {
            SockOpt::NoDelay(v) => self.nodelay = *v,
            SockOpt::UserTimeout(ms) => {
                self.user_timeout = (*ms > 0).then(|| wirelab_core::Duration::from_millis(*ms as u64));
            }
            SockOpt::Cork(v) => {
                // __tcp_sock_set_cork(): uncorking pushes what is queued, partial segments
                // included (TCP_NAGLE_PUSH)
                if self.wq.cork && !*v {
                    self.wq.push = true;
                }
                self.wq.cork = *v;
            }
            SockOpt::SndBuf(v) => {
                let v = (*v).min(cfg.wmem_max);
                self.sndbuf = (v.saturating_mul(2)).max(4608); // SOCK_MIN_SNDBUF
                self.sndbuf_locked = true;
            }
            SockOpt::RcvBuf(v) => {
                let v = (*v).min(cfg.rmem_max);
                self.rcvbuf = (v.saturating_mul(2)).max(2304); // SOCK_MIN_RCVBUF
                self.rcvbuf_locked = true;
                if syn_pending {
                    self.select_initial_window(cfg);
                }
            }
            SockOpt::WindowClamp(v) => {
                if *v == 0 {
                    return Err(SockError::BadOption);
                }
                // tcp_set_window_clamp() (6.8+): at least SOCK_MIN_RCVBUF / 2; a smaller
                // clamp lowers rcv_ssthresh (__tcp_adjust_rcv_ssthresh), a larger one raises
                // it towards rcv_wnd. It is tp->window_clamp itself: autotuning and a new
                // scaling_ratio replace it later (tcp_rcvbuf_grow, tcp_measure_rcv_mss)
                let v = (*v).max(1152);
                self.user_window_clamp = v;
                let old = self.window_clamp;
                if v != old {
                    self.window_clamp = v;
                    if old == 0 || v < old {
                        self.rcv_ssthresh = self.rcv_ssthresh.min(v);
                    } else {
                        self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(v));
                    }
                }
                if syn_pending {
                    self.select_initial_window(cfg);
                }
            }
            SockOpt::Congestion(name) => {
                let algo = CongestionAlgo::from_name(name).map_err(|_| SockError::BadOption)?;
                // before the SYN is sent the socket is as unconnected as Linux's before
                // connect(): the module starts at the end of the handshake
                let unsent_syn = self.state == TcpState::SynSent && self.tx_syn && !self.syn_retrans;
                let now = self.last_now;
                if unsent_syn {
                    let st = std::mem::replace(&mut self.state, TcpState::Closed);
                    self.set_congestion_control(cfg, now, algo);
                    self.state = st;
                } else {
                    self.set_congestion_control(cfg, now, algo);
                }
            }
            SockOpt::MaxPacingRate(v) => self.set_max_pacing_rate(*v),
            SockOpt::QuickAck(v) => {
                if *v {
                    self.enter_quickack_mode();
                    if self.ack.pending & ACK_SCHED != 0 {
                        self.ack.send_now = true;
                    }
                }
            }
            SockOpt::Tos(v) => self.tos = *v,
            SockOpt::ThinLinearTimeouts(v) => self.thin.lto = *v,
            SockOpt::ThinDupack(v) => self.thin.dupack = *v,
            SockOpt::MaxSeg(v) => self.set_maxseg(cfg, *v as u32)?,
            SockOpt::MidstreamMss(v) => self.midstream_mss = *v,
            SockOpt::EarlyRetrans(v) => {
                if *v > 4 {
                    return Err(SockError::BadOption);
                }
                self.thin.early_retrans_mode = Some(*v);
            }
            SockOpt::Rdb(m) => self.thin.rdb_mode = Some(*m),
        }
        Ok(())
    }

    /// `TCP_MAXSEG`: only while the SYN / SYN-ACK has not been sent yet.
    fn set_maxseg(&mut self, cfg: &TcpConfig, v: u32) -> Result<(), SockError> {
        if v != 0 && v < TCP_MIN_MSS {
            return Err(SockError::BadOption);
        }
        if self.synchronized() {
            // do_tcp_setsockopt(TCP_MAXSEG) stores rx_opt.user_mss in any state; only a
            // later connection set-up reads it (tcp_connect_init, tcp_openreq_init_rwin)
            self.user_mss = v;
            return Ok(());
        }
        if !(matches!(self.state, TcpState::SynSent | TcpState::SynRecv) && self.tx_syn && !self.syn_retrans) {
            return Err(SockError::InvalidState);
        }
        self.user_mss = v;
        self.advmss = if v != 0 { cfg.advmss().min(v) } else { cfg.advmss() };
        if self.state == TcpState::SynRecv {
            // the peer's SYN was already negotiated: redo tcp_sync_mss
            self.sync_mss();
        }
        self.select_initial_window(cfg);
        Ok(())
    }

    /// Installs or removes the receiver-side window policy.
    pub fn set_rcv_window_policy(&mut self, p: Option<Box<dyn RcvWindowPolicy>>) {
        self.rcv_policy = p;
    }

    /// `tcp_get_info()` at `now` (`None`: the time-based fields — busy, rwnd- and
    /// sndbuf-limited time — without the running condition's share).
    pub fn info(&self, now: Option<Instant>) -> TcpInfo {
        let hz = self.tp.hz;
        let j = now.map(|t| ((t.as_nanos() as u128 * hz as u128) / 1_000_000_000) as u32);
        let (busy_time_us, rwnd_limited_us, sndbuf_limited_us) = self.chrono.stats_us(j, hz);
        TcpInfo {
            advmss: self.advmss,
            probes: self.probes_out,
            busy_time_us,
            rwnd_limited_us,
            sndbuf_limited_us,
            state: self.state,
            ca_state: self.ca_state,
            cwnd: self.tp.snd_cwnd,
            ssthresh: self.tp.snd_ssthresh,
            srtt_us: self.rtt.srtt_us >> 3,
            rttvar_us: self.rtt.mdev_us >> 2,
            rto_us: self.rtt.rto.as_micros() as u32,
            backoff: self.rtt.backoff,
            retransmits: self.retransmits,
            snd_mss: self.mss_cache,
            rcv_mss: self.ack.rcv_mss,
            unacked: self.rtx.packets_out,
            sacked: self.rtx.sacked_out,
            lost: self.rtx.lost_out,
            retrans: self.rtx.retrans_out,
            total_retrans: self.stats.total_retrans,
            snd_wnd: self.snd_wnd,
            rcv_wnd: self.rcv_wnd,
            rcv_ssthresh: self.rcv_ssthresh,
            rcv_space: self.rcvq.space,
            rcv_rtt_us: self.rcvq.rtt_us >> 3,
            window_clamp: self.window_clamp,
            sndbuf: self.sndbuf,
            rcvbuf: self.rcvbuf,
            notsent_bytes: self.unsent(),
            bytes_acked: self.stats.bytes_acked,
            bytes_received: self.stats.bytes_received,
            segs_out: self.stats.segs_out,
            segs_in: self.stats.segs_in,
            delivered: self.rate.delivered as u64,
            delivered_ce: self.rate.delivered_ce as u64,
            reordering: self.reordering,
            reord_seen: self.stats.reord_seen,
            dsack_dups: self.stats.dsack_count,
            undo_count: self.undo.count,
            delivery_rate: self.rate.delivery_rate(self.mss_cache),
            delivery_rate_app_limited: self.rate.rate_app_limited,
            pacing_rate: self.tp.pacing_rate,
            max_pacing_rate: self.tp.max_pacing_rate,
            pacing: match self.pacing.status {
                PacingStatus::None => "none",
                PacingStatus::Needed => "internal",
                PacingStatus::Fq => "fq",
            },
            min_rtt_us: self.rtt.min_rtt_us,
            ecn: self.ecn.ok(),
            ecn_seen: self.ecn.has(super::ecn::TCP_ECN_SEEN),
            cc_info: self.cc.get_info(&self.tp),
            rcv_wscale: self.rcv_wscale,
            snd_wscale: self.snd_wscale,
            congestion: self.cc.name(),
            thin: self.stream_is_thin(),
            rto_count: self.stats.rto_count,
            thin_linear_timeouts: self.thin.lt_count,
            thin_dupack_retrans: self.thin.dupack_count,
            early_retrans: self.thin.er_count,
            tlp_probes: self.thin.tlp_count,
            rdb_packets: self.thin.rdb_packets,
            rdb_bytes_bundled: self.thin.rdb_bytes,
            rdb_loss_cwr: self.thin.rdb_loss_cwr,
        }
    }
}
