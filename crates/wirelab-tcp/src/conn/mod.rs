//! One TCP connection: the protocol state machine, split like the kernel files it mirrors.
//!
//! | module | mirrors | content |
//! |---|---|---|
//! | [`input`] | `tcp_input.c` | segment processing per state, `tcp_ack` in named steps, data and out-of-order queue, FIN, quick-ACK / delayed-ACK decisions, receive-space tuning |
//! | [`output`] | `tcp_output.c` | `tcp_write_xmit`, `tcp_transmit_skb` (`emit`), window selection, SYN/SYN-ACK, pure ACKs, cwnd validation, retransmit queue, loss probe |
//! | [`recovery`] | `tcp_input.c` (recovery part) | SACK tagging, `tcp_fastretrans_alert`, undo, PRR, CWR, loss marking, early retransmit, TLP |
//! | [`rack`] | `tcp_recovery.c` | RACK-TLP loss detection |
//! | [`timer`] | `tcp_timer.c` | RTO, persist, delayed ACK, early-retransmit, loss-probe and socket timers |
//! | [`socket`] | `tcp.c` | the system-call side: send, recv, setsockopt, close, shutdown, `tcp_info` |
//! | [`thin`] | thin-stream patches | thin tests, linear timeouts, RDB |
//!
//! State that has rules of its own is a part with methods, unit-tested on its own:
//! [`rtt::RttEstimator`], [`scoreboard::RtxQueue`] (rtx queue + SACK scoreboard),
//! [`rack::Rack`], [`delack::DelAck`] (`icsk_ack`), [`rcvspace::RcvSpace`],
//! [`undo::Undo`], [`prr::Prr`], [`rate::RateState`] (`tcp_rate.c`),
//! [`ofo::OfoQueue`], [`thin::ThinState`], [`ecn::Ecn`] (`ecn_flags`),
//! [`pacing::Pacing`] (EDT and internal pacing). Parts never call the connection; the
//! connection's files call parts, and the call direction between them is
//! socket/timer/input → recovery/rack → output → parts (output only calls back into
//! recovery to schedule a loss probe, as `tcp_write_xmit()` does).
//!
//! Segments are MSS-sized, grouped as Linux's TSO packets when the profile has `tso`
//! ([`tso`]: skbs, PSH marks, `tcp_tso_autosize`, deferral) and sent one by one as GSO
//! would. cwnd and the scoreboard count packets, as Linux.
use crate::api::{RcvWindowPolicy, SockError, SocketId, TcpState};
use crate::cc::{CaState, CcSock, CongestionOps};
use crate::config::TcpConfig;
use crate::ring::{Ring, SendRing};
use crate::wire::{SeqNumber, TcpRepr};
use std::collections::VecDeque;

/// `TCP_DEFAULT_SCALING_RATIO`: a 50 % `len / truesize` until the first data arrive.
const TCP_DEFAULT_SCALING_RATIO: u8 = 128;
use std::net::SocketAddrV4;
use wirelab_core::{Instant, SockEvent};

mod chrono;
mod cong;
mod delack;
mod ecn;
mod input;
mod ofo;
mod output;
mod pacing;
mod prr;
mod rack;
mod rate;
mod rcvspace;
mod recovery;
mod rtt;
mod scoreboard;
mod socket;
mod thin;
mod timer;
mod tso;
mod tsq;
mod undo;

pub(crate) use timer::{SkTimer, XmitTimer};

use delack::{DelAck, ACK_TIMER};
use ecn::Ecn;
use ofo::OfoQueue;
use pacing::Pacing;
use prr::Prr;
use rack::Rack;
use rate::RateState;
use rcvspace::RcvSpace;
use recovery::Tlp;
use rtt::RttEstimator;
use scoreboard::{RtxQueue, TxSeg};
use thin::ThinState;
use timer::jiffies;
use undo::Undo;

/// `TCP_MSS_DEFAULT`: assumed peer MSS without an option.
const TCP_MSS_DEFAULT: u32 = 536;
/// `TCP_MIN_MSS`.
const TCP_MIN_MSS: u32 = 88;
/// `TCP_MAX_WSCALE`.
const TCP_MAX_WSCALE: u8 = 14;
/// Timestamp option length on data segments (NOP NOP TS).
const TCPOLEN_TSTAMP_ALIGNED: u32 = 12;

/// An RST the endpoint must send (`tcp_v4_send_reset`), kept outside the connection so it
/// survives the connection being freed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RstSpec {
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    pub seq: SeqNumber,
    pub ack: Option<SeqNumber>,
    pub tos: u8,
    /// A connection's own RST (`tcp_send_active_reset()` goes through
    /// `tcp_transmit_skb()`): its window and timestamp option (val, ecr). Stateless RSTs
    /// (`tcp_v4_send_reset()`) have neither.
    pub window: u16,
    pub ts: Option<(u32, u32)>,
}

/// Outputs a connection hands to its endpoint during a call.
pub(crate) struct Out<'a> {
    pub ev: &'a mut crate::small::InlineQueue<(SocketId, SockEvent)>,
    pub rst: &'a mut VecDeque<RstSpec>,
}

/// Per-connection counters shown in `tcp_info`.
#[derive(Clone, Debug, Default)]
#[repr(C)]
struct Stats {
    segs_out: u64,
    segs_in: u64,
    bytes_acked: u64,
    bytes_received: u64,
    /// RTO expiries, SYN timeouts included.
    rto_count: u32,
    total_retrans: u32,
    reord_seen: u32,
    dsack_count: u32,
}

/// A TCP connection.
///
/// `repr(C)`, fields in the order of the paths that read them: at many flows a paced
/// segment finds its connection cold (docs/performance.md, issue 17, "Session 9"), and
/// each 64-byte line a path touches is a refill. First what every visit reads, then the
/// sequence space, the send/ACK path's parts, the receive path's, and last what only the
/// handshake, loss recovery, options or `tcp_info` read. Keep new fields in their group.
#[repr(C)]
pub(crate) struct Conn {
    // ---- every visit: the endpoint's `touch`/`rekey`/`clean_heap` (`next_deadline`), `wants_transmit` and the top of `poll_transmit` ----
    pub heap_key: Option<Instant>,
    xmit_timer: Option<(Instant, XmitTimer)>,
    sk_timer: Option<(Instant, SkTimer)>,
    pub state: TcpState,
    pub in_ready: bool,
    /// The application closed (or never owned) this socket.
    pub orphan: bool,
    tx_syn: bool,
    tx_probe: bool,
    tx_wakeup: bool,
    /// F-RTO step 2b: send new data instead of retransmitting (`REXMIT_NEW`), this ACK.
    rexmit_new: bool,
    /// The egress qdisc drops every packet: transmissions fail locally
    /// (`TcpEndpoint::set_local_drop`).
    pub(crate) local_drop: bool,
    /// Pass `send_static` payload at the end of a segment by reference
    /// ([`wirelab_core::Transmit::tail`]) instead of copying it into the buffer.
    pub lazy_payload: bool,
    fin_queued: bool,
    fin_sent: bool,
    sack_ok: bool,
    tstamp_ok: bool,
    nodelay: bool,
    /// The module reads the full snapshot (`CongestionOps::needs_snapshot`).
    cc_snapshot: bool,
    /// The last `tcp_write_xmit()` stopped at the peer's window (`is_rwnd_limited`).
    rwnd_hit: bool,
    ack: DelAck,
    /// An ACK a module asked for (`__tcp_send_ack(sk, rcv_nxt)` with an older `rcv_nxt`
    /// and the ECE it had then), sent before anything else.
    special_ack: Option<(SeqNumber, bool)>,
    pacing: Pacing,
    // ---- sequence space, windows, timestamps, MSS: read by every segment in and out, on both sides ----
    snd_una: SeqNumber,
    snd_nxt: SeqNumber,
    snd_wnd: u32,
    snd_wl1: SeqNumber,
    snd_buf_seq: SeqNumber,
    snd_sml: SeqNumber,
    high_seq: SeqNumber,
    mss_cache: u32,
    // (on the line of the send sequence space: every transmit and ACK reads them)
    tlp: Tlp,
    /// `tcp_chrono_*`: busy / rwnd-limited / sndbuf-limited time.
    chrono: chrono::Chrono,
    rcv_nxt: SeqNumber,
    rcv_wup: SeqNumber,
    rcv_wnd: u32,
    rcv_ssthresh: u32,
    window_clamp: u32,
    rcvbuf: u32,
    copied_seq: SeqNumber,
    /// `tp->scaling_ratio` (256 = the whole buffer; `cfg.scaling_ratio` profiles).
    scaling_ratio: u8,
    /// Receive memory charged in truesize (`sk_rmem_alloc`; `cfg.scaling_ratio` profiles):
    /// the in-order skbs not yet read (`rcv_skbs`) and the out-of-order ones (`ofo_ts`).
    rmem_ts: u32,
    ofo_ts: u32,
    advmss: u32,
    ts_offset: u32,
    ts_recent: u32,
    saw_tstamp_ecr: u32,
    pub id: SocketId,
    /// The dupthresh (`tp->reordering`).
    reordering: u32,
    sndbuf: u32,
    /// `icsk_retransmits`.
    retransmits: u32,
    /// `icsk_probes_out`.
    probes_out: u32,
    max_packets_out: u32,
    cwnd_usage_seq: SeqNumber,
    snd_cwnd_used: u32,
    max_window: u32,
    ca_state: CaState,
    /// `tp->ecn_flags`.
    ecn: Ecn,
    /// The ECN field of the segment being processed (`TCP_SKB_CB(skb)->ip_dsfield`).
    rx_tos: u8,
    pub tos: u8,
    snd_wscale: u8,
    rcv_wscale: u8,
    is_cwnd_limited: bool,
    write_blocked: bool,
    /// The reader only discards (`discard_payload`): arriving bytes are counted, not stored.
    rcv_discard: bool,
    peer_fin: bool,
    readable_signaled: bool,
    /// F-RTO (RFC 5682) in progress (`tp->frto`).
    frto: bool,
    /// Sticky error reported to the application (read by every `send` and `recv`).
    pub err: Option<SockError>,
    /// (Read by every ACK, `tcp_check_space()`.)
    sndbuf_locked: bool,
    pub local: SocketAddrV4,
    pub remote: SocketAddrV4,
    lsndtime: Instant,
    snd_cwnd_stamp: Instant,
    /// The last time the driver passed in (for calls that carry none, `setsockopt`).
    last_now: Instant,
    // ---- the send and ACK paths' parts ----
    /// The write queue as skbs, the TSO packet in flight out, sizing state.
    wq: tso::WriteQueue,
    snd_ring: SendRing,
    rtx: RtxQueue,
    /// TCP Small Queues (`sk_wmem_alloc`, `TSQ_THROTTLED`).
    pub(crate) tsq: tsq::Tsq,
    tp: CcSock,
    cc: Box<dyn CongestionOps>,
    rate: RateState,
    rack: Rack,
    rtt: RttEstimator,
    stats: Stats,
    /// Thin-stream state (its `rdb_mode` is read by every ACK that advances `snd_una`).
    thin: ThinState,
    // ---- the receive path's parts ----
    rcv_ring: Ring,
    /// The in-order skbs not yet fully read: (end sequence, truesize), freed as
    /// `tcp_recvmsg()` eats them (`cfg.scaling_ratio` profiles).
    rcv_skbs: VecDeque<(SeqNumber, u32)>,
    rcvq: RcvSpace,
    ofo: OfoQueue,
    /// Receiver-side window policy (seed 003 rate control).
    rcv_policy: Option<Box<dyn RcvWindowPolicy>>,
    fin_rcvd: Option<SeqNumber>,
    // ---- cold: loss recovery, thin streams, the handshake, options and rarely used state ----
    undo: Undo,
    prr: Prr,
    /// `retrans_stamp`: first retransmission of the current episode.
    retrans_stamp: Option<Instant>,
    syn_xmit: Instant,
    /// `icsk_probes_tstamp`: when zero-window probing started (the probe timer's first run).
    probes_tstamp: Option<Instant>,
    /// `icsk_user_timeout` (`TCP_USER_TIMEOUT`).
    user_timeout: Option<wirelab_core::Duration>,
    /// Parent listener while not yet accepted.
    pub listener: Option<SocketId>,
    iss: SeqNumber,
    irs: SeqNumber,
    peer_mss: u32,
    /// The MSS of the peer's SYN (a ceiling for [`SockOpt::MidstreamMss`]).
    syn_peer_mss: u32,
    /// `TCP_MAXSEG` (`rx_opt.user_mss`), 0 = unset.
    user_mss: u32,
    user_window_clamp: u32,
    /// Whether a `Closed`/`Reset` event has been delivered.
    closed_notified: bool,
    /// [`SockOpt::MidstreamMss`]: honour MSS options after the handshake (wirelab extension).
    midstream_mss: bool,
    wscale_ok: bool,
    rcvbuf_locked: bool,
    syn_retrans: bool,
    /// `icsk_ca_initialized`: the module's `init` ran.
    cc_initialized: bool,
    /// The SYN's (ECE and CWR, ECT) for `tcp_ecn_create_request()` (passive side).
    syn_ecn: (bool, bool),
}

/// `SKB_TRUESIZE()` of the head `tcp_stream_alloc_skb()` allocates for each skb of the write
/// queue (a `MAX_TCP_HEADER` head, `struct sk_buff`, `skb_shared_info`), charged to
/// `sk_wmem_queued` with the payload: 832 bytes on the x86-64 Linux 6.18 kernel here
/// (`SO_MEMINFO` shows `wmem_queued` 932 after one 100-byte write).
pub(super) const SKB_HEAD_TRUESIZE: u32 = 832;

impl Conn {
    fn base(
        cfg: &TcpConfig,
        id: SocketId,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        now: Instant,
        iss: u32,
        ts_offset: u32,
    ) -> Conn {
        // the module's random draws come from values the endpoint's RNG already produced
        let cc_seed = (iss as u64) << 32 | ts_offset as u64;
        let iss = SeqNumber(iss);
        let mut tp = CcSock::new(cfg.init_cwnd.max(1), cfg.hz);
        tp.snd_una = iss;
        tp.snd_nxt = iss;
        tp.jiffies = jiffies(cfg, now);
        tp.now_us = now.as_nanos() / 1000;
        tp.lsndtime = jiffies(cfg, now);
        let cc = cfg.tcp_congestion_control.instantiate(cfg, cc_seed);
        Conn {
            id,
            state: TcpState::Closed,
            local,
            remote,
            tos: 0,
            listener: None,
            orphan: false,
            closed_notified: false,
            err: None,
            heap_key: None,
            in_ready: false,
            lazy_payload: false,
            nodelay: false,
            user_mss: 0,
            midstream_mss: false,
            rcv_policy: None,
            sack_ok: false,
            tstamp_ok: false,
            wscale_ok: false,
            snd_wscale: 0,
            rcv_wscale: 0,
            ts_offset,
            ts_recent: 0,
            saw_tstamp_ecr: 0,
            advmss: cfg.advmss(),
            mss_cache: TCP_MSS_DEFAULT,
            peer_mss: TCP_MSS_DEFAULT,
            syn_peer_mss: TCP_MSS_DEFAULT,
            iss,
            snd_una: iss,
            snd_nxt: iss,
            snd_wnd: 0,
            snd_wl1: SeqNumber(0),
            max_window: 0,
            snd_sml: iss,
            snd_ring: SendRing::default(),
            snd_buf_seq: iss + 1,
            sndbuf: cfg.tcp_wmem[1],
            sndbuf_locked: false,
            write_blocked: false,
            fin_queued: false,
            fin_sent: false,
            tx_syn: false,
            syn_xmit: now,
            syn_retrans: false,
            tx_probe: false,
            tx_wakeup: false,
            local_drop: false,
            rtx: RtxQueue::new(iss),
            ca_state: CaState::Open,
            high_seq: iss,
            reordering: cfg.tcp_reordering.max(1),
            undo: Undo::default(),
            prr: Prr::default(),
            frto: false,
            rexmit_new: false,
            tlp: Tlp::default(),
            rack: Rack::new(iss),
            thin: ThinState::default(),
            tp,
            cc_snapshot: cc.needs_snapshot(),
            cc,
            cc_initialized: false,
            ecn: Ecn::default(),
            rx_tos: 0,
            syn_ecn: (false, false),
            last_now: now,
            special_ack: None,
            pacing: Pacing::new(now),
            tsq: tsq::Tsq { sk: wirelab_core::socket_key(6, *local.ip(), *remote.ip(), (local.port() as u32) << 16 | remote.port() as u32), ..Default::default() },
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: iss,
            snd_cwnd_used: 0,
            snd_cwnd_stamp: now,
            lsndtime: now,
            rtt: RttEstimator::new(cfg.rto_init, iss),
            retransmits: 0,
            retrans_stamp: None,
            probes_out: 0,
            probes_tstamp: None,
            user_timeout: None,
            rate: RateState::new(now),
            chrono: chrono::Chrono::new(),
            rwnd_hit: false,
            wq: tso::WriteQueue::new(iss),
            irs: SeqNumber(0),
            rcv_nxt: SeqNumber(0),
            rcv_wnd: 0,
            rcv_wup: SeqNumber(0),
            copied_seq: SeqNumber(0),
            scaling_ratio: TCP_DEFAULT_SCALING_RATIO,
            rmem_ts: 0,
            ofo_ts: 0,
            rcv_skbs: VecDeque::new(),
            rcv_ssthresh: 0,
            window_clamp: 0,
            rcvbuf: cfg.tcp_rmem[1],
            rcvbuf_locked: false,
            user_window_clamp: 0,
            rcv_ring: Ring::default(),
            rcv_discard: false,
            ofo: OfoQueue::default(),
            fin_rcvd: None,
            peer_fin: false,
            readable_signaled: false,
            ack: DelAck::new(cfg, now, TCP_MSS_DEFAULT),
            rcvq: RcvSpace::new(now),
            xmit_timer: None,
            sk_timer: None,
            stats: Stats::default(),
        }
    }

    /// An active open (`tcp_connect`): SYN pending.
    #[allow(clippy::too_many_arguments)]
    pub fn new_active(
        cfg: &TcpConfig,
        id: SocketId,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        now: Instant,
        iss: u32,
        ts_offset: u32,
    ) -> Conn {
        let mut c = Conn::base(cfg, id, local, remote, now, iss, ts_offset);
        c.state = TcpState::SynSent;
        c.wscale_ok = cfg.tcp_window_scaling;
        c.select_initial_window(cfg);
        c.tx_syn = true;
        c
    }

    /// A passive child created from a SYN (`tcp_create_openreq_child`): SYN-ACK pending.
    #[allow(clippy::too_many_arguments)]
    pub fn new_passive(
        cfg: &TcpConfig,
        id: SocketId,
        local: SocketAddrV4,
        remote: SocketAddrV4,
        now: Instant,
        iss: u32,
        ts_offset: u32,
        syn: &TcpRepr,
        listener: SocketId,
        tos: u8,
        syn_tos: u8,
    ) -> Conn {
        let mut c = Conn::base(cfg, id, local, remote, now, iss, ts_offset);
        c.state = TcpState::SynRecv;
        c.listener = Some(listener);
        c.tos = tos;
        c.irs = syn.seq;
        c.rcv_nxt = syn.seq + 1;
        c.rcv_wup = c.rcv_nxt;
        c.copied_seq = c.rcv_nxt;
        c.negotiate(cfg, syn);
        c.snd_wnd = syn.window as u32;
        c.snd_wl1 = syn.seq;
        c.select_initial_window(cfg);
        c.tx_syn = true;
        c.syn_ecn = (
            syn.has(crate::wire::flags::ECE) && syn.has(crate::wire::flags::CWR),
            syn_tos & ecn::INET_ECN_MASK != ecn::INET_ECN_NOT_ECT,
        );
        c
    }

    /// Options of the peer's SYN (`tcp_parse_options`, `tcp_sync_mss`,
    /// `tcp_initialize_rcv_mss`).
    fn negotiate(&mut self, cfg: &TcpConfig, syn: &TcpRepr) {
        self.sack_ok = cfg.tcp_sack && syn.sack_permitted;
        self.tstamp_ok = cfg.tcp_timestamps && syn.timestamp.is_some();
        self.wscale_ok = cfg.tcp_window_scaling && syn.window_scale.is_some();
        self.snd_wscale = if self.wscale_ok { syn.window_scale.unwrap_or(0).min(TCP_MAX_WSCALE) } else { 0 };
        if let Some((v, _)) = syn.timestamp {
            self.ts_recent = v;
        }
        self.peer_mss = syn.mss.map(|m| m as u32).unwrap_or(TCP_MSS_DEFAULT).max(TCP_MIN_MSS);
        self.syn_peer_mss = self.peer_mss;
        self.sync_mss();
        if !self.wscale_ok {
            self.rcv_wscale = 0;
        }
    }

    /// `tcp_sync_mss()`: min(pmtu − 40, mss_clamp) minus option space (advmss already
    /// includes `TCP_MAXSEG`), then `tcp_initialize_rcv_mss()`.
    fn sync_mss(&mut self) {
        self.mss_cache = self.mtu_to_mss();
        let hint = self.advmss.min(self.mss_cache).min(self.rcv_wnd.max(2 * TCP_MIN_MSS) / 2);
        self.ack.rcv_mss = hint.clamp(TCP_MIN_MSS, TCP_MSS_DEFAULT);
    }

    /// The send MSS from the peer's MSS and our own, less the timestamp option
    /// (`tcp_mtu_to_mss()` as `tcp_sync_mss()` uses it).
    fn mtu_to_mss(&self) -> u32 {
        let ts = if self.tstamp_ok { TCPOLEN_TSTAMP_ALIGNED } else { 0 };
        self.peer_mss.min(self.advmss).saturating_sub(ts).max(48)
    }

    /// An MSS option on a non-SYN segment, honoured only with [`SockOpt::MidstreamMss`]
    /// (Linux ignores it): the send MSS follows it, between `TCP_MIN_MSS` and the SYN's
    /// value; the receive side is left alone. The one way Linux changes a live
    /// connection's send MSS is a path-MTU change, `tcp_sync_mss()` (called by
    /// `tcp_v4_mtu_reduced()` on ICMP "fragmentation needed", and by MTU probing), which
    /// recomputes `mss_cache` the same way; segments are cut from the byte stream at send
    /// time here, so nothing queued needs re-cutting (Linux's `tcp_fragment()` on send).
    /// No ICMP is modelled, so unlike `tcp_v4_mtu_reduced()` nothing is retransmitted.
    fn midstream_mss_option(&mut self, m: u16) {
        if !self.midstream_mss {
            return;
        }
        self.peer_mss = (m as u32).clamp(TCP_MIN_MSS, self.syn_peer_mss.max(TCP_MIN_MSS));
        self.mss_cache = self.mtu_to_mss();
    }

    // ------------------------------------------------------------------------------------
    // Helpers shared by the files
    // ------------------------------------------------------------------------------------

    /// `tcp_packets_in_flight()`.
    #[inline]
    fn in_flight(&self) -> u32 {
        self.rtx.in_flight()
    }
    #[inline]
    fn write_seq(&self) -> SeqNumber {
        self.snd_buf_seq + self.snd_ring.len() as u32
    }
    /// Bytes written but not yet sent.
    fn unsent(&self) -> u32 {
        self.write_seq().dist(self.snd_nxt)
    }
    fn has_unsent(&self) -> bool {
        self.unsent() > 0 || (self.fin_queued && !self.fin_sent)
    }
    fn synchronized(&self) -> bool {
        !matches!(self.state, TcpState::Closed | TcpState::Listen | TcpState::SynSent | TcpState::SynRecv)
    }
    /// Our timestamp clock (ms, with the per-connection offset).
    fn ts_now(&self, now: Instant) -> u32 {
        ((now.as_nanos() / 1_000_000) as u32).wrapping_add(self.ts_offset)
    }
    /// Refreshes the congestion module's view of the socket.
    fn sync_tp(&mut self, cfg: &TcpConfig, now: Instant) {
        let cwnd_limited = self.tcp_is_cwnd_limited();
        let tp = &mut self.tp;
        tp.snd_una = self.snd_una;
        tp.snd_nxt = self.snd_nxt;
        tp.jiffies = jiffies(cfg, now);
        tp.now_us = now.as_nanos() / 1000;
        tp.lsndtime = jiffies(cfg, self.lsndtime);
        tp.cwnd_limited = cwnd_limited;
        if self.cc_snapshot {
            self.sync_tp_snapshot(now);
        }
    }

    /// The rest of the view, for modules that read it.
    fn sync_tp_snapshot(&mut self, now: Instant) {
        let tp = &mut self.tp;
        tp.rcv_nxt = self.rcv_nxt;
        tp.clock_ns = now.as_nanos();
        tp.wstamp_ns = self.pacing.wstamp.as_nanos();
        tp.mss_cache = self.mss_cache;
        tp.srtt_us = self.rtt.srtt_us;
        tp.min_rtt_us = self.rtt.min_rtt_us;
        tp.delivered = self.rate.delivered;
        tp.delivered_ce = self.rate.delivered_ce;
        tp.lost = self.rtx.lost;
        tp.delivered_mstamp_us = self.rate.delivered_mstamp.as_nanos() / 1000;
        tp.packets_out = self.rtx.packets_out;
        tp.in_flight = self.rtx.in_flight();
        tp.ca_state = self.ca_state;
        tp.app_limited = self.rate.app_limited;
        tp.ecn_ok = self.ecn.ok();
        tp.demand_cwr = self.ecn.has(ecn::TCP_ECN_DEMAND_CWR);
        tp.ack_timer_pending = self.ack.pending & ACK_TIMER != 0;
    }

    /// Applies what a module changed or asked for in its view (`app_limited`,
    /// `ecn_flags`, pacing request, ACK requests) after a call.
    fn apply_tp(&mut self) {
        if !self.cc_snapshot {
            return; // such modules change only cwnd and ssthresh
        }
        self.rate.app_limited = self.tp.app_limited;
        self.ecn.set(ecn::TCP_ECN_DEMAND_CWR, self.tp.demand_cwr);
        if let Some(a) = self.tp.tx_ack.take() {
            self.special_ack = Some(a);
        }
        if std::mem::take(&mut self.tp.ack_now) {
            self.ack.pending |= delack::ACK_NOW;
        }
        if std::mem::take(&mut self.tp.request_pacing) {
            self.request_pacing();
        }
    }

    /// `sk_pacing_status` NONE → NEEDED (`cmpxchg` in `bbr_init()` and
    /// `SO_MAX_PACING_RATE`): pace internally unless `fq` already does.
    fn request_pacing(&mut self) {
        self.pacing.request();
    }

    /// Whether an `fq` qdisc paces this socket's packets (`SK_PACING_FQ`).
    pub fn set_fq_pacing(&mut self, on: bool) {
        self.pacing.set_fq(on);
    }
    /// `tcp_is_cwnd_limited()`.
    fn tcp_is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        if self.tp.in_slow_start() {
            return self.tp.snd_cwnd < 2 * self.max_packets_out;
        }
        false
    }
    /// `tcp_set_ca_state()`.
    fn set_ca_state(&mut self, s: CaState) {
        if self.ca_state != s {
            self.cc.set_state(&mut self.tp, s);
            self.ca_state = s;
        }
    }
    /// `sk_wmem_queued`. linux-6 (`cfg.tso`, where the write queue is modelled as skbs):
    /// the payload of the write and rtx queues plus [`SKB_HEAD_TRUESIZE`] per skb
    /// (`tcp_skb_entail()`, `skb_copy_to_page_nocache()`, `tso_fragment()`; freed by
    /// `tcp_wmem_free_skb()`, trimmed by `tcp_trim_head()`). The MSS-at-a-time profiles
    /// count truesize as twice the payload.
    fn wmem_queued(&self, cfg: &TcpConfig) -> u64 {
        let bytes = self.snd_ring.len() as u64;
        if cfg.tso {
            bytes + SKB_HEAD_TRUESIZE as u64 * (self.wq.skb_count() + self.rtx.heads) as u64
        } else {
            2 * bytes
        }
    }

    /// `__sk_stream_is_writeable()`: memory free (`sk_wmem_queued < sk_sndbuf`) and at
    /// least a third of the buffer free (`sk_stream_wspace() >= sk_stream_min_wspace()`).
    fn sk_stream_is_writeable(&self, cfg: &TcpConfig) -> bool {
        if !cfg.tso {
            // in payload bytes, a buffer of sk_sndbuf holding sk_sndbuf / 2
            let (cap, queued) = (self.sndbuf / 2, self.snd_ring.len() as u32);
            return cap > queued && cap - queued >= queued / 2;
        }
        let (wmem, sndbuf) = (self.wmem_queued(cfg), self.sndbuf as u64);
        wmem < sndbuf && sndbuf - wmem >= wmem / 2
    }
    fn notify(&mut self, out: &mut Out, e: SockEvent) {
        if self.orphan {
            return;
        }
        out.ev.push_back((self.id, e));
    }

    /// Earliest armed timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        // branch-free min over the four timers (called on every endpoint re-key)
        let ns = |o: Option<Instant>| o.map_or(u64::MAX, |t| t.as_nanos());
        let t = ns(self.xmit_timer.map(|(t, _)| t))
            .min(ns(self.ack.timer))
            .min(ns(self.sk_timer.map(|(t, _)| t)))
            .min(ns(self.pacing.timer));
        (t != u64::MAX).then(|| Instant::from_nanos(t))
    }

    /// Approximate heap + struct bytes held by this connection.
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Conn>()
            + self.snd_ring.capacity()
            + self.rcv_ring.capacity()
            + self.rtx.q.capacity() * core::mem::size_of::<TxSeg>()
            + self.ofo.ranges.capacity() * core::mem::size_of::<(SeqNumber, SeqNumber)>()
            + self.cc.mem_size()
    }

    /// True if the connection may have something to transmit right now.
    pub fn wants_transmit(&self) -> bool {
        self.ack.send_now
            || self.special_ack.is_some()
            || self.tx_syn
            || self.tx_probe
            || self.tx_wakeup
            || self.tlp.pending
            || (self.synchronized() && (self.has_unsent() || self.rtx.lost_out > self.rtx.retrans_out))
    }
}

#[cfg(test)]
pub(crate) mod test_access {
    //! Crate-internal access for unit tests in other modules.
    use super::*;
    use wirelab_core::Duration;
    impl Conn {
        pub fn t_rtt(&mut self) -> &mut RttEstimator {
            &mut self.rtt
        }
        pub fn t_rto(&self) -> Duration {
            self.rtt.rto
        }
        pub fn t_seqs(&self) -> (SeqNumber, SeqNumber, SeqNumber) {
            (self.rcv_nxt, self.snd_una, self.snd_nxt)
        }
        /// Leaves initial slow start (as after an earlier loss): sets cwnd and ssthresh.
        pub fn t_set_cwnd(&mut self, cwnd: u32, ssthresh: u32) {
            self.tp.snd_cwnd = cwnd;
            self.tp.snd_ssthresh = ssthresh;
        }
        /// `__tcp_select_window()` with `used` bytes queued in a buffer of `rcvbuf`.
        pub fn t_window_with(&mut self, cfg: &TcpConfig, rcvbuf: u32, used: u32) -> u32 {
            let (rb, cs, rs, wc, ts) = (self.rcvbuf, self.copied_seq, self.rcv_ssthresh, self.window_clamp, self.rmem_ts);
            self.rcvbuf = rcvbuf;
            self.copied_seq = self.rcv_nxt - used;
            self.rmem_ts = used; // scaling_ratio profiles: `used` bytes of receive memory
            self.window_clamp = u32::MAX >> 1;
            self.rcv_ssthresh = u32::MAX >> 1;
            let w = self.raw_select_window(cfg);
            self.rcvbuf = rb;
            self.copied_seq = cs;
            self.rcv_ssthresh = rs;
            self.window_clamp = wc;
            self.rmem_ts = ts;
            w
        }
    }
}

#[cfg(test)]
mod layout {
    use super::*;
    use core::mem::offset_of;

    /// What the endpoint reads after every call (`next_deadline`, `touch`) shares the first
    /// line, with the delayed-ACK and pacing timers right after it; the hot groups come
    /// before the cold ones (docs/performance.md, issue 17, "Session 9").
    #[test]
    fn hot_fields_first() {
        for o in [offset_of!(Conn, heap_key), offset_of!(Conn, xmit_timer), offset_of!(Conn, sk_timer), offset_of!(Conn, state), offset_of!(Conn, in_ready)] {
            assert!(o < 64, "{o}");
        }
        assert_eq!(offset_of!(DelAck, timer), 0);
        assert_eq!(offset_of!(Pacing, timer), 0);
        assert!(offset_of!(Conn, pacing) + offset_of!(Pacing, timer) < 3 * 64);
        // pacing, then the send sequence space with the loss-probe flag and chronograph:
        // a paced transmit reads two lines there (Session 10)
        assert_eq!(offset_of!(Conn, pacing) % 64, 0);
        assert_eq!(core::mem::size_of::<Pacing>(), 64);
        assert!(offset_of!(Conn, chrono) + core::mem::size_of::<chrono::Chrono>() <= offset_of!(Conn, pacing) + 128);
        assert!(offset_of!(Conn, snd_una) >= offset_of!(Conn, pacing) + 64);
        assert!(offset_of!(Conn, mss_cache) < offset_of!(Conn, wq));
        assert!(offset_of!(Conn, stats) < offset_of!(Conn, rcv_ring));
        assert!(offset_of!(Conn, ofo) < offset_of!(Conn, undo));
        assert!(offset_of!(Conn, thin) < offset_of!(Conn, iss));
        assert!(offset_of!(crate::cc::CcSock, request_pacing) < 64);
    }
}
