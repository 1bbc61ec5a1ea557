//! One TCP connection: the protocol state machine.
//!
//! Organised like the kernel files it mirrors: input processing (`tcp_input.c`: `tcp_ack`,
//! `tcp_sacktag_write_queue`, `tcp_fastretrans_alert`, `tcp_data_queue`,
//! `__tcp_ack_snd_check`), output (`tcp_output.c`: `tcp_write_xmit`,
//! `tcp_xmit_retransmit_queue`, `tcp_select_window`, `tcp_send_delayed_ack`) and timers
//! (`tcp_timer.c`: `tcp_retransmit_timer`, `tcp_probe_timer`, `tcp_delack_timer_handler`).
//!
//! Segments are MSS-sized (no TSO/GSO). cwnd and the scoreboard count packets, as Linux.
use crate::api::{RcvWindowPolicy, SockError, SockOpt, SocketId, TcpInfo, TcpState};
use crate::cc::{CaEvent, CaState, CcSock, CongCtl, TCP_INFINITE_SSTHRESH};
use crate::config::{CongestionAlgo, RcvSpaceStyle, RdbMode, TcpConfig};
use crate::ring::Ring;
use crate::wire::{self, flags, SackBlocks, SeqNumber, TcpRepr};
use std::collections::VecDeque;
use std::net::SocketAddrV4;
use wirelab_core::{Duration, Instant, SockEvent, Transmit, HEADROOM};

/// `TCP_MSS_DEFAULT`: assumed peer MSS without an option.
const TCP_MSS_DEFAULT: u32 = 536;
/// `TCP_MIN_MSS`.
const TCP_MIN_MSS: u32 = 88;
/// `TCP_MAX_WSCALE`.
const TCP_MAX_WSCALE: u8 = 14;
/// Timestamp option length on data segments (NOP NOP TS).
const TCPOLEN_TSTAMP_ALIGNED: u32 = 12;

// Scoreboard bits (`TCPCB_*` in include/net/tcp.h).
const SACKED_ACKED: u8 = 0x01;
const SACKED_RETRANS: u8 = 0x02;
const LOST: u8 = 0x04;
const EVER_RETRANS: u8 = 0x08;

// icsk_ack.pending bits (`ICSK_ACK_*`).
const ACK_SCHED: u8 = 1;
const ACK_TIMER: u8 = 2;
const ACK_PUSHED: u8 = 4;
const ACK_PUSHED2: u8 = 8;
const ACK_NOW: u8 = 16;

/// An RST the endpoint must send (`tcp_v4_send_reset`), kept outside the connection so it
/// survives the connection being freed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RstSpec {
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    pub seq: SeqNumber,
    pub ack: Option<SeqNumber>,
    pub tos: u8,
}

/// Outputs a connection hands to its endpoint during a call.
pub(crate) struct Out<'a> {
    pub ev: &'a mut VecDeque<(SocketId, SockEvent)>,
    pub rst: &'a mut VecDeque<RstSpec>,
}

/// The `icsk_retransmit_timer` kinds (`ICSK_TIME_*`): one timer, one pending kind, as in
/// Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum XmitTimer {
    /// `ICSK_TIME_RETRANS`: RTO (also SYN/SYN-ACK retransmission).
    Retrans,
    /// `ICSK_TIME_PROBE0`: zero-window probe.
    Probe0,
    /// `ICSK_TIME_EARLY_RETRANS`: delayed early retransmit (`tcp_early_retrans` 2, 3).
    EarlyRetrans,
    /// `ICSK_TIME_LOSS_PROBE`: tail loss probe (`tcp_early_retrans` 3, 4).
    LossProbe,
    /// `ICSK_TIME_REO_TIMEOUT`: RACK reordering timer.
    ReoTimeout,
}

/// `TCP_RACK_RECOVERY_THRESH`: recoveries a widened RACK reordering window persists.
const TCP_RACK_RECOVERY_THRESH: u32 = 16;
/// `tcp_recovery` bits (`TCP_RACK_*`).
const TCP_RACK_LOSS_DETECTION: u32 = 0x1;
const TCP_RACK_STATIC_REO_WND: u32 = 0x2;
const TCP_RACK_NO_DUPTHRESH: u32 = 0x4;

/// `TCP_THIN_LINEAR_RETRIES`: linear timeouts for at most this many retransmissions.
pub(crate) const TCP_THIN_LINEAR_RETRIES: u32 = 6;

/// Which rule of `tcp_time_to_recover()` fired (for the thin-stream counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecoverTrigger {
    Classic,
    ThinDupack,
    EarlyRetrans,
}

/// The socket timer (`sk_timer`) kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SkTimer {
    /// TIME_WAIT expiry (`TCP_TIMEWAIT_LEN`).
    TimeWait,
    /// Orphaned FIN_WAIT2 expiry (`tcp_fin_timeout`).
    FinWait2,
}

/// A transmitted, not yet cumulatively ACKed segment (our `skb` in the rtx queue).
#[derive(Clone, Copy, Debug)]
struct TxSeg {
    seq: SeqNumber,
    end: SeqNumber, // includes FIN
    fin: bool,
    sacked: u8,
    xmit: Instant,
    /// Start of the data the last transmission carried (`tx.rdb_start_seq` of the RDB
    /// patch): before `seq` when older bytes were bundled in front (RDB).
    rdb_start: SeqNumber,
    // tcp_rate.c per-skb state
    first_tx: Instant,
    delivered_mstamp: Instant,
    delivered: u32,
}

impl TxSeg {
    #[inline]
    fn data_len(&self) -> u32 {
        self.end.diff(self.seq) as u32 - self.fin as u32
    }
}

/// A TCP connection.
pub(crate) struct Conn {
    pub id: SocketId,
    pub state: TcpState,
    pub local: SocketAddrV4,
    pub remote: SocketAddrV4,
    pub tos: u8,
    /// Parent listener while not yet accepted.
    pub listener: Option<SocketId>,
    /// The application closed (or never owned) this socket.
    pub orphan: bool,
    /// Whether a `Closed`/`Reset` event has been delivered.
    closed_notified: bool,
    /// Sticky error reported to the application.
    pub err: Option<SockError>,
    // timer-heap bookkeeping for the endpoint
    pub heap_key: Option<Instant>,
    pub in_ready: bool,

    // ---- options ----
    nodelay: bool,
    thin_lto: bool,
    thin_dupack: bool,
    /// `TCP_MAXSEG` (`rx_opt.user_mss`), 0 = unset.
    user_mss: u32,
    /// Per-socket `tcp_early_retrans` mode (None: the host sysctl).
    early_retrans_mode: Option<u8>,
    /// Per-socket RDB mode (None: the host sysctl).
    rdb_mode: Option<RdbMode>,
    /// Receiver-side window policy (seed 003 rate control).
    rcv_policy: Option<Box<dyn RcvWindowPolicy>>,
    sack_ok: bool,
    tstamp_ok: bool,
    wscale_ok: bool,
    snd_wscale: u8,
    rcv_wscale: u8,
    ts_offset: u32,
    ts_recent: u32,
    saw_tstamp_ecr: u32,
    advmss: u32,
    mss_cache: u32,
    peer_mss: u32,

    // ---- send side ----
    iss: SeqNumber,
    snd_una: SeqNumber,
    snd_nxt: SeqNumber,
    snd_wnd: u32,
    snd_wl1: SeqNumber,
    max_window: u32,
    snd_sml: SeqNumber,
    snd_ring: Ring,
    snd_buf_seq: SeqNumber,
    sndbuf: u32,
    sndbuf_locked: bool,
    write_blocked: bool,
    fin_queued: bool,
    fin_sent: bool,
    tx_syn: bool,
    syn_xmit: Instant,
    syn_retrans: bool,
    tx_probe: bool,
    tx_wakeup: bool,
    rtx: VecDeque<TxSeg>,
    packets_out: u32,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    total_retrans: u32,
    ca_state: CaState,
    high_seq: SeqNumber,
    prior_ssthresh: u32,
    prior_cwnd: u32,
    /// `undo_marker` (snd_una when the reduction started); None = nothing to undo.
    undo_marker: Option<SeqNumber>,
    /// `undo_retrans`: retransmissions not yet proven spurious by D-SACK (-1 = none sent).
    undo_retrans: i32,
    prr_delivered: u32,
    prr_out: u32,
    reordering: u32,
    /// Start of the highest SACKed segment (`tcp_highest_sack_seq`).
    highest_sack: SeqNumber,
    reord_seen: u32,
    undo_count: u32,
    dsack_count: u32,
    /// F-RTO (RFC 5682) in progress (`tp->frto`).
    frto: bool,
    /// F-RTO step 2b: send new data instead of retransmitting (`REXMIT_NEW`), this ACK.
    rexmit_new: bool,
    /// Early retransmit turned off after reordering was seen (`tcp_disable_early_retrans`).
    er_disabled: bool,
    /// `tlp_high_seq`: snd_nxt when a TLP retransmission was sent (None = no episode).
    tlp_high_seq: Option<SeqNumber>,
    /// The loss-probe timer fired: send a probe at the next transmit opportunity.
    tx_tlp: bool,
    /// `tlp_retrans`: the current TLP episode retransmitted (RACK-TLP era).
    tlp_retrans: bool,
    // RACK (RFC 8985, net/ipv4/tcp_recovery.c): `tp->rack`
    rack_mstamp: Option<Instant>,
    rack_end_seq: SeqNumber,
    rack_rtt_us: u64,
    rack_advanced: bool,
    rack_reord: bool,
    rack_reo_wnd_steps: u32,
    rack_reo_wnd_persist: u32,
    /// Minimum RTT seen (µs; Linux keeps a 5-minute windowed minimum).
    min_rtt_us: u32,
    /// Per-ACK `FLAG_ORIG_SACK_ACKED` / `FLAG_DATA_SACKED`.
    flag_orig_sack_acked: bool,
    flag_data_sacked: bool,
    tp: CcSock,
    cc: CongCtl,
    is_cwnd_limited: bool,
    max_packets_out: u32,
    cwnd_usage_seq: SeqNumber,
    snd_cwnd_used: u32,
    snd_cwnd_stamp: Instant,
    lsndtime: Instant,
    // RTT (tcp_rtt_estimator; µs, srtt<<3, mdev<<2 as Linux)
    srtt_us: u32,
    mdev_us: u32,
    mdev_max_us: u32,
    rttvar_us: u32,
    rtt_seq: SeqNumber,
    rto: Duration,
    backoff: u32,
    retransmits: u32,
    retrans_stamp: Option<Instant>,
    probes_out: u32,
    // delivery rate (tcp_rate.c)
    delivered: u32,
    delivered_mstamp: Instant,
    first_tx_mstamp: Instant,
    delivery_rate: u64,
    rs_prior_delivered: u32,
    rs_valid: bool,
    rs_prior_mstamp: Instant,
    rs_interval: Duration,

    // ---- receive side ----
    irs: SeqNumber,
    rcv_nxt: SeqNumber,
    rcv_wnd: u32,
    rcv_wup: SeqNumber,
    copied_seq: SeqNumber,
    rcv_ssthresh: u32,
    window_clamp: u32,
    rcvbuf: u32,
    rcvbuf_locked: bool,
    user_window_clamp: u32,
    rcv_ring: Ring,
    ooo: Vec<(SeqNumber, SeqNumber)>,
    sacks: SackBlocks,
    dsack: Option<(SeqNumber, SeqNumber)>,
    fin_rcvd: Option<SeqNumber>,
    peer_fin: bool,
    readable_signaled: bool,
    // delayed ACK engine (icsk_ack)
    ack_pending: u8,
    ato: Duration,
    lrcvtime: Instant,
    quick: u32,
    pingpong: bool,
    rcv_mss: u32,
    send_ack_now: bool,
    ato_min: Duration,
    max_quickacks: u32,
    // receive autotuning
    rcv_rtt_us: u32, // <<3
    rcv_rtt_seq: SeqNumber,
    rcv_rtt_time: Option<Instant>,
    rcvq_space: u32,
    rcvq_seq: SeqNumber,
    rcvq_time: Instant,

    // ---- timers ----
    xmit_timer: Option<(Instant, XmitTimer)>,
    delack_timer: Option<Instant>,
    sk_timer: Option<(Instant, SkTimer)>,

    // ---- stats ----
    rto_count: u32,
    thin_lt_count: u32,
    thin_dupack_count: u32,
    er_count: u32,
    tlp_count: u32,
    rdb_packets: u32,
    rdb_bytes: u64,
    rdb_loss_cwr: u32,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u64,
    segs_in: u64,
}

#[inline]
fn jiffies(cfg: &TcpConfig, t: Instant) -> u32 {
    ((t.as_nanos() as u128 * cfg.hz as u128) / 1_000_000_000) as u32
}

/// Rounds a timer duration up to whole jiffies (`usecs_to_jiffies`) and the start down to
/// the current tick, as a kernel timer armed at `jiffies + n` does.
fn timer_at(cfg: &TcpConfig, now: Instant, d: Duration) -> Instant {
    let j = cfg.jiffy().as_nanos().max(1);
    let start = now.as_nanos() / j * j;
    let n = d.as_nanos().div_ceil(j).max(1);
    Instant::from_nanos(start + n * j)
}

fn round_jiffies(cfg: &TcpConfig, d: Duration) -> Duration {
    let j = cfg.jiffy().as_nanos().max(1);
    Duration::from_nanos(d.as_nanos().div_ceil(j) * j)
}

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
        let iss = SeqNumber(iss);
        let tp = CcSock {
            snd_cwnd: cfg.init_cwnd.max(1),
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            snd_cwnd_cnt: 0,
            snd_cwnd_clamp: u32::MAX,
            snd_una: iss,
            snd_nxt: iss,
            cwnd_limited: false,
            jiffies: jiffies(cfg, now),
            now_us: now.as_nanos() / 1000,
            lsndtime: jiffies(cfg, now),
            hz: cfg.hz,
        };
        let cc = CongCtl::new(cfg.tcp_congestion_control, &cfg.cubic, &tp);
        let advmss = cfg.advmss();
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
            nodelay: false,
            thin_lto: false,
            thin_dupack: false,
            user_mss: 0,
            early_retrans_mode: None,
            rdb_mode: None,
            rcv_policy: None,
            sack_ok: false,
            tstamp_ok: false,
            wscale_ok: false,
            snd_wscale: 0,
            rcv_wscale: 0,
            ts_offset,
            ts_recent: 0,
            saw_tstamp_ecr: 0,
            advmss,
            mss_cache: TCP_MSS_DEFAULT,
            peer_mss: TCP_MSS_DEFAULT,
            iss,
            snd_una: iss,
            snd_nxt: iss,
            snd_wnd: 0,
            snd_wl1: SeqNumber(0),
            max_window: 0,
            snd_sml: iss,
            snd_ring: Ring::default(),
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
            rtx: VecDeque::new(),
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            total_retrans: 0,
            ca_state: CaState::Open,
            high_seq: iss,
            prior_ssthresh: 0,
            prior_cwnd: 0,
            undo_marker: None,
            undo_retrans: 0,
            prr_delivered: 0,
            prr_out: 0,
            reordering: cfg.tcp_reordering.max(1),
            highest_sack: iss,
            reord_seen: 0,
            undo_count: 0,
            dsack_count: 0,
            frto: false,
            rexmit_new: false,
            er_disabled: false,
            tlp_high_seq: None,
            tx_tlp: false,
            tlp_retrans: false,
            rack_mstamp: None,
            rack_end_seq: iss,
            rack_rtt_us: 0,
            rack_advanced: false,
            rack_reord: false,
            rack_reo_wnd_steps: 1,
            rack_reo_wnd_persist: 0,
            min_rtt_us: u32::MAX,
            flag_orig_sack_acked: false,
            flag_data_sacked: false,
            tp,
            cc,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: iss,
            snd_cwnd_used: 0,
            snd_cwnd_stamp: now,
            lsndtime: now,
            srtt_us: 0,
            mdev_us: 0,
            mdev_max_us: 0,
            rttvar_us: 0,
            rtt_seq: iss,
            rto: cfg.rto_init,
            backoff: 0,
            retransmits: 0,
            retrans_stamp: None,
            probes_out: 0,
            delivered: 0,
            delivered_mstamp: now,
            first_tx_mstamp: now,
            delivery_rate: 0,
            rs_prior_delivered: 0,
            rs_valid: false,
            rs_prior_mstamp: now,
            rs_interval: Duration::ZERO,
            irs: SeqNumber(0),
            rcv_nxt: SeqNumber(0),
            rcv_wnd: 0,
            rcv_wup: SeqNumber(0),
            copied_seq: SeqNumber(0),
            rcv_ssthresh: 0,
            window_clamp: 0,
            rcvbuf: cfg.tcp_rmem[1],
            rcvbuf_locked: false,
            user_window_clamp: 0,
            rcv_ring: Ring::default(),
            ooo: Vec::new(),
            sacks: SackBlocks::EMPTY,
            dsack: None,
            fin_rcvd: None,
            peer_fin: false,
            readable_signaled: false,
            ack_pending: 0,
            ato: Duration::ZERO,
            lrcvtime: now,
            quick: 0,
            pingpong: false,
            rcv_mss: TCP_MSS_DEFAULT,
            send_ack_now: false,
            ato_min: cfg.ato_min,
            max_quickacks: cfg.max_quickacks,
            rcv_rtt_us: 0,
            rcv_rtt_seq: SeqNumber(0),
            rcv_rtt_time: None,
            rcvq_space: 0,
            rcvq_seq: SeqNumber(0),
            rcvq_time: now,
            xmit_timer: None,
            delack_timer: None,
            sk_timer: None,
            rto_count: 0,
            thin_lt_count: 0,
            thin_dupack_count: 0,
            er_count: 0,
            tlp_count: 0,
            rdb_packets: 0,
            rdb_bytes: 0,
            rdb_loss_cwr: 0,
            bytes_acked: 0,
            bytes_received: 0,
            segs_out: 0,
            segs_in: 0,
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
        c
    }

    fn negotiate(&mut self, cfg: &TcpConfig, syn: &TcpRepr) {
        self.sack_ok = cfg.tcp_sack && syn.sack_permitted;
        self.tstamp_ok = cfg.tcp_timestamps && syn.timestamp.is_some();
        self.wscale_ok = cfg.tcp_window_scaling && syn.window_scale.is_some();
        self.snd_wscale = if self.wscale_ok { syn.window_scale.unwrap_or(0).min(TCP_MAX_WSCALE) } else { 0 };
        if let Some((v, _)) = syn.timestamp {
            self.ts_recent = v;
        }
        self.peer_mss = syn.mss.map(|m| m as u32).unwrap_or(TCP_MSS_DEFAULT).max(TCP_MIN_MSS);
        let ts = if self.tstamp_ok { TCPOLEN_TSTAMP_ALIGNED } else { 0 };
        // tcp_sync_mss: min(pmtu - 40, mss_clamp) minus option space; advmss already
        // includes TCP_MAXSEG (mss_clamp = min(user_mss, peer MSS))
        self.mss_cache = self.peer_mss.min(self.advmss).saturating_sub(ts).max(48);
        // tcp_initialize_rcv_mss
        let hint = self.advmss.min(self.mss_cache).min(self.rcv_wnd.max(2 * TCP_MIN_MSS) / 2);
        self.rcv_mss = hint.clamp(TCP_MIN_MSS, TCP_MSS_DEFAULT);
        if !self.wscale_ok {
            self.rcv_wscale = 0;
        }
    }

    // ------------------------------------------------------------------------------------
    // Window selection (tcp_output.c)
    // ------------------------------------------------------------------------------------

    fn rmem_alloc(&self) -> u32 {
        let ooo: u32 = self.ooo.iter().map(|(l, r)| r.dist(*l)).sum();
        self.rcv_nxt.dist(self.copied_seq) + ooo
    }
    /// `tcp_space()`.
    fn tcp_space(&self, cfg: &TcpConfig) -> i64 {
        cfg.win_from_space(self.rcvbuf as i64 - self.rmem_alloc() as i64)
    }
    /// `tcp_full_space()`.
    fn tcp_full_space(&self, cfg: &TcpConfig) -> i64 {
        cfg.win_from_space(self.rcvbuf as i64)
    }
    /// MSS used for receive-window rounding (advmss minus timestamp space).
    fn rcv_adv_mss(&self) -> u32 {
        self.advmss - if self.tstamp_ok { TCPOLEN_TSTAMP_ALIGNED } else { 0 }
    }

    /// `tcp_select_initial_window()`, run when the SYN or SYN-ACK is built.
    fn select_initial_window(&mut self, cfg: &TcpConfig) {
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
    fn receive_window(&self) -> u32 {
        (self.rcv_wup + self.rcv_wnd).dist(self.rcv_nxt)
    }

    /// `__tcp_select_window()`: the window we would offer now (receiver SWS avoidance).
    pub(crate) fn raw_select_window(&mut self, cfg: &TcpConfig) -> u32 {
        let mut mss = self.rcv_mss as i64;
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
            self.quick = 0;
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
    /// Never retracts the right edge already offered (unless a [`RcvWindowPolicy`] that
    /// allows it is installed).
    fn select_window(&mut self, cfg: &TcpConfig, now: Instant) -> u16 {
        let cur_win = self.receive_window();
        let mut new_win = self.raw_select_window(cfg);
        let mut may_retract = false;
        if let Some(p) = self.rcv_policy.as_mut() {
            may_retract = p.allow_retract();
            let lim = p.limit(now, new_win, self.rcv_mss);
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
    // Helpers
    // ------------------------------------------------------------------------------------

    #[inline]
    fn in_flight(&self) -> u32 {
        // tcp_packets_in_flight()
        (self.packets_out + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
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
    fn ts_now(&self, now: Instant) -> u32 {
        ((now.as_nanos() / 1_000_000) as u32).wrapping_add(self.ts_offset)
    }
    fn sync_tp(&mut self, cfg: &TcpConfig, now: Instant) {
        self.tp.snd_una = self.snd_una;
        self.tp.snd_nxt = self.snd_nxt;
        self.tp.jiffies = jiffies(cfg, now);
        self.tp.now_us = now.as_nanos() / 1000;
        self.tp.lsndtime = jiffies(cfg, self.lsndtime);
        self.tp.cwnd_limited = self.tcp_is_cwnd_limited();
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
    fn set_ca_state(&mut self, s: CaState) {
        if self.ca_state != s {
            let tp = self.tp;
            self.cc.set_state(&tp, s);
            self.ca_state = s;
        }
    }
    /// Sndbuf capacity in payload bytes: we model `truesize` as twice the payload, so a
    /// buffer of `sk_sndbuf` holds `sk_sndbuf / 2` bytes of data.
    fn sndbuf_payload(&self) -> u32 {
        self.sndbuf / 2
    }
    fn notify(&mut self, out: &mut Out, e: SockEvent) {
        if self.orphan {
            return;
        }
        out.ev.push_back((self.id, e));
    }

    /// Earliest armed timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        let mut t = self.xmit_timer.map(|(t, _)| t);
        for c in [self.delack_timer, self.sk_timer.map(|(t, _)| t)].into_iter().flatten() {
            t = Some(t.map_or(c, |x: Instant| x.min(c)));
        }
        t
    }

    // ------------------------------------------------------------------------------------
    // RTT and RTO (tcp_input.c)
    // ------------------------------------------------------------------------------------

    /// `tcp_rtt_estimator()`: Linux's RFC 6298 variant with mdev_max and an rto_min floor
    /// on rttvar.
    pub(crate) fn rtt_estimator(&mut self, cfg: &TcpConfig, mrtt_us: u64) {
        let mut m = mrtt_us.min(i32::MAX as u64) as i64;
        let rto_min_us = cfg.rto_min.as_micros() as i64;
        let mut srtt = self.srtt_us as i64;
        if srtt != 0 {
            m -= srtt >> 3;
            srtt += m;
            let mut mdev = self.mdev_us as i64;
            if m < 0 {
                m = -m;
                m -= mdev >> 2;
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= mdev >> 2;
            }
            mdev += m;
            self.mdev_us = mdev.max(0) as u32;
            if self.mdev_us > self.mdev_max_us {
                self.mdev_max_us = self.mdev_us;
                if self.mdev_max_us > self.rttvar_us {
                    self.rttvar_us = self.mdev_max_us;
                }
            }
            if self.snd_una.after(self.rtt_seq) {
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = self.snd_nxt;
                self.mdev_max_us = rto_min_us as u32;
            }
        } else {
            srtt = m << 3;
            self.mdev_us = (m << 1) as u32;
            self.rttvar_us = (self.mdev_us as i64).max(rto_min_us) as u32;
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = self.snd_nxt;
        }
        self.srtt_us = srtt.max(1) as u32;
    }

    /// `__tcp_set_rto()` + `tcp_bound_rto()`: RTO = srtt + rttvar, in whole jiffies.
    fn base_rto(&self, cfg: &TcpConfig) -> Duration {
        let us = (self.srtt_us >> 3) as u64 + self.rttvar_us as u64;
        round_jiffies(cfg, Duration::from_micros(us)).min(cfg.rto_max)
    }
    fn set_rto(&mut self, cfg: &TcpConfig) {
        self.rto = self.base_rto(cfg);
    }
    /// `tcp_ack_update_rtt()`: feed a sample, reset backoff.
    fn ack_update_rtt(&mut self, cfg: &TcpConfig, seq_rtt_us: Option<u64>) -> bool {
        let Some(rtt) = seq_rtt_us else { return false };
        self.min_rtt_us = self.min_rtt_us.min(rtt.min(u32::MAX as u64 - 1) as u32);
        self.rtt_estimator(cfg, rtt);
        self.set_rto(cfg);
        self.backoff = 0;
        true
    }

    fn reset_xmit_timer(&mut self, cfg: &TcpConfig, now: Instant, kind: XmitTimer, d: Duration) {
        self.xmit_timer = Some((timer_at(cfg, now, d.min(cfg.rto_max)), kind));
    }
    /// `tcp_rearm_rto()`. When an early-retransmit or loss-probe timer is pending, the RTO
    /// keeps counting from the head's transmission instead of restarting.
    fn rearm_rto(&mut self, cfg: &TcpConfig, now: Instant) {
        if self.packets_out == 0 {
            if matches!(
                self.xmit_timer,
                Some((_, XmitTimer::Retrans | XmitTimer::EarlyRetrans | XmitTimer::LossProbe | XmitTimer::ReoTimeout))
            ) {
                self.xmit_timer = None;
            }
        } else {
            let mut rto = self.rto;
            if matches!(self.xmit_timer, Some((_, XmitTimer::EarlyRetrans | XmitTimer::LossProbe | XmitTimer::ReoTimeout))) {
                if let Some(h) = self.rtx.front() {
                    let left = (h.xmit + rto).saturating_since(now);
                    if left > Duration::ZERO {
                        rto = left;
                    }
                }
            }
            self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, rto);
        }
    }
    /// `tcp_probe0_when()`.
    fn probe0_when(&self, cfg: &TcpConfig) -> Duration {
        let base = self.rto.max(cfg.rto_min);
        base.saturating_mul(1u64 << self.backoff.min(20)).min(cfg.rto_max)
    }
    /// `tcp_check_probe_timer()`.
    fn check_probe_timer(&mut self, cfg: &TcpConfig, now: Instant) {
        if self.packets_out == 0 && self.xmit_timer.is_none() {
            let d = self.probe0_when(cfg);
            self.reset_xmit_timer(cfg, now, XmitTimer::Probe0, d);
        }
    }

    // ------------------------------------------------------------------------------------
    // Input
    // ------------------------------------------------------------------------------------

    /// Processes one segment addressed to this connection (`tcp_rcv_state_process` /
    /// `tcp_rcv_established`).
    pub fn process(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, tos: u8, out: &mut Out) {
        self.segs_in += 1;
        if !r.payload.is_empty() {
            if let Some(p) = self.rcv_policy.as_mut() {
                p.on_data(now, r.payload.len());
            }
        }
        let _ = tos;
        match self.state {
            TcpState::Closed | TcpState::Listen => {}
            TcpState::SynSent => self.rcv_synsent(cfg, now, r, out),
            TcpState::TimeWait => self.rcv_timewait(cfg, now, r, out),
            _ => self.rcv_synchronized(cfg, now, r, out),
        }
    }

    /// `tcp_rcv_synsent_state_process()`.
    fn rcv_synsent(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, out: &mut Out) {
        if r.has(flags::ACK) && (!r.ack.after(self.iss) || r.ack.after(self.snd_nxt)) {
            if !r.has(flags::RST) {
                out.rst.push_back(RstSpec { src: self.local, dst: self.remote, seq: r.ack, ack: None, tos: self.tos });
            }
            return;
        }
        if r.has(flags::RST) {
            if r.has(flags::ACK) {
                self.err = Some(SockError::ConnectionRefused);
                self.notify(out, SockEvent::ConnectFailed);
                self.closed_notified = true;
                self.enter_closed();
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
            self.snd_una = r.ack;
            self.snd_wnd = r.window as u32; // never scaled in a SYN
            self.max_window = self.snd_wnd;
            self.snd_wl1 = r.seq;
            // RTT from the SYN (Karn: only if not retransmitted) or its timestamp echo.
            let rtt = if !self.syn_retrans {
                Some(now.saturating_since(self.syn_xmit).as_micros().max(1))
            } else {
                self.ts_rtt_us(now, r)
            };
            self.ack_update_rtt(cfg, rtt);
            self.xmit_timer = None;
            self.retransmits = 0;
            self.state = TcpState::Established;
            self.init_transfer(cfg, now);
            self.notify(out, SockEvent::Connected);
            // Linux ACKs the SYN-ACK at once (no defer_accept / write_pending here).
            self.send_ack_now = true;
            if self.fin_queued {
                self.state = TcpState::FinWait1;
            }
        } else {
            // Simultaneous open: SYN-RECV, SYN-ACK pending.
            self.state = TcpState::SynRecv;
            self.snd_wnd = r.window as u32;
            self.snd_wl1 = r.seq;
            self.select_initial_window(cfg);
            self.tx_syn = true;
        }
    }

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
        self.tp.snd_cwnd = if self.syn_retrans && self.srtt_us == 0 { 1 } else { cfg.init_cwnd.max(1) };
        if self.syn_retrans && self.srtt_us == 0 {
            // TCP_TIMEOUT_FALLBACK after a lost SYN without an RTT sample
            self.rto = Duration::from_secs(3).max(cfg.rto_init);
        }
        self.snd_buf_seq = self.iss + 1;
        self.snd_sml = self.snd_nxt;
        self.cwnd_usage_seq = self.snd_nxt;
        self.lsndtime = now;
        self.snd_cwnd_stamp = now;
        if !self.sndbuf_locked {
            self.sndbuf_expand(cfg);
        }
        self.rcvq_time = now;
        self.rcvq_seq = self.copied_seq;
        let maxwin = self.tcp_full_space(cfg).max(0) as u32;
        if self.window_clamp >= maxwin {
            self.window_clamp = maxwin;
        }
        // Force reservation of one segment (tcp_app_win = 31).
        if self.window_clamp > 2 * self.advmss && self.window_clamp + self.advmss > maxwin {
            self.window_clamp = (2 * self.advmss).max(maxwin.saturating_sub(self.advmss));
        }
        if self.user_window_clamp != 0 {
            self.window_clamp = self.window_clamp.min(self.user_window_clamp);
        }
        self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
        // tcp_initialize_rcv_mss(), now that rcv_wnd is known (negotiate() ran before the
        // initial window was chosen on the passive side)
        let hint = self.advmss.min(self.mss_cache).min(self.rcv_wnd / 2).min(TCP_MSS_DEFAULT);
        self.rcv_mss = hint.max(TCP_MIN_MSS);
        self.rcvq_space = self.rcv_ssthresh.min(self.rcv_wnd).min(cfg.init_cwnd * self.advmss);
        self.max_window = self.max_window.max(self.snd_wnd);
    }

    /// `tcp_sndbuf_expand()`: room for 2·max(IW, cwnd, reordering+1) segments, with
    /// truesize modelled as twice the MSS.
    fn sndbuf_expand(&mut self, cfg: &TcpConfig) {
        let per_mss = 2 * self.mss_cache.max(self.peer_mss.min(cfg.advmss()));
        let nr_segs = cfg.init_cwnd.max(self.tp.snd_cwnd).max(self.reordering + 1);
        let sndmem = 2u64 * nr_segs as u64 * per_mss as u64;
        if (self.sndbuf as u64) < sndmem {
            self.sndbuf = sndmem.min(cfg.tcp_wmem[2] as u64) as u32;
        }
    }

    fn rcv_timewait(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, _out: &mut Out) {
        // tcp_timewait_state_process(), simplified: RST kills (tcp_rfc1337 = 0); a
        // retransmitted FIN restarts the 2MSL timer and is re-ACKed; anything else with
        // sequence space is ACKed.
        if r.has(flags::RST) {
            self.enter_closed();
            return;
        }
        if r.has(flags::FIN) {
            self.sk_timer = Some((timer_at(cfg, now, cfg.timewait_len), SkTimer::TimeWait));
        }
        if r.segment_len() > 0 || r.has(flags::FIN) {
            self.send_ack_now = true;
        }
    }

    /// SYN-RECV, ESTABLISHED and the closing states.
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
        let acceptable = !end_seq.before(self.rcv_wup)
            && !r.seq.after(self.rcv_nxt + self.receive_window());
        if !acceptable {
            if !r.has(flags::RST) {
                self.send_dupack(r);
            }
            return;
        }
        if r.has(flags::RST) {
            // RFC 5961 §3: exact match resets, otherwise a challenge ACK.
            if r.seq == self.rcv_nxt {
                self.on_reset(out);
            } else {
                self.send_ack_now = true;
            }
            return;
        }
        if r.has(flags::SYN) {
            // RFC 5961 §4: SYN in a synchronized state -> challenge ACK.
            self.send_ack_now = true;
            return;
        }
        if !r.has(flags::ACK) {
            return;
        }
        if self.state == TcpState::SynRecv {
            if r.ack != self.snd_nxt {
                out.rst.push_back(RstSpec { src: self.local, dst: self.remote, seq: r.ack, ack: None, tos: self.tos });
                return;
            }
            self.snd_una = r.ack;
            self.snd_wnd = (r.window as u32) << self.snd_wscale;
            self.max_window = self.snd_wnd;
            self.snd_wl1 = r.seq;
            let rtt = if !self.syn_retrans {
                Some(now.saturating_since(self.syn_xmit).as_micros().max(1))
            } else {
                self.ts_rtt_us(now, r)
            };
            self.ack_update_rtt(cfg, rtt);
            self.xmit_timer = None;
            self.retransmits = 0;
            self.state = TcpState::Established;
            self.init_transfer(cfg, now);
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
        self.tcp_ack(cfg, now, r, out);
        if self.state == TcpState::Closed {
            return;
        }
        // data and FIN
        self.data_queue(cfg, now, r, out);
        self.ack_snd_check(cfg, now);
    }

    fn on_reset(&mut self, out: &mut Out) {
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
        self.enter_closed();
    }

    /// Drops queues and timers; the endpoint frees the socket when orphaned.
    pub fn enter_closed(&mut self) {
        self.state = TcpState::Closed;
        self.xmit_timer = None;
        self.delack_timer = None;
        self.sk_timer = None;
        self.send_ack_now = false;
        self.tx_syn = false;
        self.tx_probe = false;
        self.rtx = VecDeque::new();
        self.snd_ring = Ring::default();
        self.packets_out = 0;
        self.sacked_out = 0;
        self.lost_out = 0;
        self.retrans_out = 0;
        self.ooo = Vec::new();
    }

    /// `tcp_send_dupack()`: out-of-window or duplicate data; D-SACK it and enter quick-ACK.
    fn send_dupack(&mut self, r: &TcpRepr) {
        let end = r.seq + r.payload.len() as u32;
        if !r.payload.is_empty() && !end.after(self.rcv_nxt) {
            self.enter_quickack_mode();
            if self.sack_ok {
                self.dsack = Some((r.seq, end));
            }
        }
        self.send_ack_now = true;
    }

    // ---- ACK processing (tcp_ack) ----

    fn tcp_ack(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, out: &mut Out) {
        let ack = r.ack;
        let prior_snd_una = self.snd_una;
        let prior_packets = self.packets_out;
        let prior_fack_sacked = self.sacked_out;
        let _ = prior_fack_sacked;
        if ack.before(prior_snd_una) {
            // old ACK: may still carry D-SACK information; otherwise ignored
            return;
        }
        if ack.after(self.snd_nxt) {
            // ACKs something we did not send (tcp_ack: "ack too new")
            self.send_ack_now = true;
            return;
        }
        // tcp_ack(): any valid ACK cancels a pending early-retransmit or loss-probe timer
        if matches!(self.xmit_timer, Some((_, XmitTimer::EarlyRetrans | XmitTimer::LossProbe))) {
            self.rearm_rto(cfg, now);
        }
        let mut una_advanced = false;
        let mut win_update = false;
        self.rexmit_new = false;
        self.flag_orig_sack_acked = false;
        self.flag_data_sacked = false;
        if ack.after(prior_snd_una) {
            una_advanced = true;
            self.retransmits = 0;
        }
        // tcp_ack_update_window()
        let nwin = (r.window as u32) << self.snd_wscale;
        if ack.after(self.snd_una)
            || r.seq.after(self.snd_wl1)
            || (r.seq == self.snd_wl1 && nwin > self.snd_wnd)
        {
            if self.snd_wnd != nwin {
                win_update = true;
                self.snd_wnd = nwin;
                self.max_window = self.max_window.max(nwin);
            }
            self.snd_wl1 = r.seq;
        }
        self.probes_out = 0;

        let prior_delivered = self.delivered;
        // SACK processing
        let mut newly_sacked = 0u32;
        let mut sack_rtt: Option<(Instant, Instant)> = None;
        let mut dsack_seen = false;
        if self.sack_ok && !r.sack.is_empty() {
            let (n, rtt, ds) = self.sacktag_write_queue(cfg, now, ack, &r.sack);
            newly_sacked = n;
            sack_rtt = rtt;
            dsack_seen = ds;
        }
        // RDB (2015 patch, rdb_ack_event): loss revealed by a bundle means congestion
        let rdb_lost = if ack.after(prior_snd_una) && self.rdb_mode(cfg) == RdbMode::Lcn2015 {
            self.rdb_check_rtx_queue_loss(ack)
        } else {
            0
        };
        // tcp_clean_rtx_queue()
        let mut acked_pkts = 0u32;
        let mut first_ackt: Option<Instant> = None;
        let mut last_ackt: Option<Instant> = None;
        let mut retrans_acked = false;
        let mut fin_acked = false;
        let prior_fack = self.fack_seq();
        let mut reord = self.snd_nxt;
        while let Some(seg) = self.rtx.front().copied() {
            if !seg.end.after(ack) {
                if seg.sacked & SACKED_RETRANS != 0 {
                    self.retrans_out = self.retrans_out.saturating_sub(1);
                }
                if seg.sacked & SACKED_ACKED != 0 {
                    self.sacked_out = self.sacked_out.saturating_sub(1);
                } else {
                    self.rate_skb_delivered(&seg);
                    self.delivered += 1;
                    self.delivered_mstamp = now;
                    if self.sack_ok {
                        self.rack_advance(now, seg.sacked, seg.end, seg.xmit);
                    }
                }
                if seg.sacked & LOST != 0 {
                    self.lost_out = self.lost_out.saturating_sub(1);
                }
                if seg.sacked & EVER_RETRANS != 0 {
                    retrans_acked = true;
                } else if seg.sacked & SACKED_ACKED == 0 {
                    if first_ackt.is_none() {
                        first_ackt = Some(seg.xmit);
                    }
                    last_ackt = Some(seg.xmit);
                    if seg.seq.before(reord) {
                        reord = seg.seq;
                    }
                    if !seg.end.after(self.high_seq) {
                        self.flag_orig_sack_acked = true;
                    }
                }
                if seg.fin {
                    fin_acked = true;
                }
                self.packets_out -= 1;
                acked_pkts += 1;
                self.rtx.pop_front();
            } else {
                if seg.seq.before(ack) {
                    // partial ACK of a segment: tcp_trim_head()
                    self.rtx[0].seq = ack;
                }
                break;
            }
        }
        if !self.sack_ok && acked_pkts > 0 {
            self.remove_reno_sacks(acked_pkts);
        } else if acked_pkts > 0 && reord.before(prior_fack) {
            // a never-retransmitted hole got filled: that's reordering
            self.check_sack_reordering(cfg, reord, prior_fack);
        }
        if self.packets_out == 0 {
            self.sacked_out = 0;
            self.lost_out = 0;
            self.retrans_out = 0;
        }
        // free acknowledged bytes from the send ring
        let data_end = ack.min(self.write_seq());
        let freed = data_end.dist(self.snd_buf_seq);
        if freed > 0 {
            self.snd_ring.discard(freed as usize);
            self.snd_buf_seq = self.snd_buf_seq + freed;
            self.bytes_acked += freed as u64;
            // an idle socket keeps no large buffers (bulk senders never drain the ring)
            if self.snd_ring.is_empty() && self.snd_ring.capacity() > 4096 {
                self.snd_ring = Ring::default();
            }
        }
        if self.packets_out == 0 && self.rtx.capacity() > 64 {
            self.rtx = VecDeque::new();
        }
        self.snd_una = ack;
        if self.snd_nxt.before(self.snd_una) {
            self.snd_nxt = self.snd_una;
        }
        let _ = fin_acked;

        // RTT (tcp_ack_update_rtt)
        let mut seq_rtt = None;
        let mut ca_rtt = None;
        if let (Some(f), Some(l)) = (first_ackt, last_ackt) {
            if !retrans_acked {
                seq_rtt = Some(now.saturating_since(f).as_micros().max(1));
                ca_rtt = Some(now.saturating_since(l).as_micros().max(1));
            }
        }
        if let Some((f, l)) = sack_rtt {
            if seq_rtt.is_none() {
                seq_rtt = Some(now.saturating_since(f).as_micros().max(1));
            }
            ca_rtt = Some(now.saturating_since(l).as_micros().max(1));
        }
        if seq_rtt.is_none() && acked_pkts > 0 {
            if let Some(t) = self.ts_rtt_us(now, r) {
                seq_rtt = Some(t);
                ca_rtt = Some(t);
            }
        }
        self.ack_update_rtt(cfg, seq_rtt);
        if acked_pkts > 0 || newly_sacked > 0 {
            self.sync_tp(cfg, now);
            let mut tp = self.tp;
            self.cc.pkts_acked(&mut tp, ca_rtt);
            self.tp = tp;
        }
        if acked_pkts > 0 || newly_sacked > 0 {
            self.rate_gen(now);
        }

        // timers: tcp_set_xmit_timer() on FLAG_ACKED
        if acked_pkts > 0 {
            self.rearm_rto(cfg, now);
            if self.packets_out == 0
                && matches!(
                    self.xmit_timer,
                    Some((_, XmitTimer::Retrans | XmitTimer::EarlyRetrans | XmitTimer::LossProbe | XmitTimer::ReoTimeout))
                )
            {
                self.xmit_timer = None;
            }
        }
        if prior_packets == 0 || self.packets_out == 0 {
            // tcp_ack_probe(): the head fits the window -> stop probing
            if self.has_unsent() {
                let len = self.unsent().min(self.mss_cache).max(1);
                if !(self.snd_nxt + len).after(self.snd_una + self.snd_wnd) {
                    if matches!(self.xmit_timer, Some((_, XmitTimer::Probe0))) {
                        self.xmit_timer = None;
                    }
                    self.backoff = 0;
                } else if matches!(self.xmit_timer, Some((_, XmitTimer::Probe0))) {
                    let d = self.probe0_when(cfg);
                    self.reset_xmit_timer(cfg, now, XmitTimer::Probe0, d);
                }
            }
        }

        // Reno "SACK" emulation counts duplicate ACKs.
        let is_dupack = !una_advanced && !win_update && r.payload.is_empty() && !r.has(flags::FIN)
            && prior_packets > 0 && acked_pkts == 0;
        let num_dupack = if is_dupack { 1 } else { 0 };
        let dubious = is_dupack || newly_sacked > 0 || dsack_seen || self.ca_state != CaState::Open;
        let delivered_now = self.delivered - prior_delivered;
        if self.packets_out > 0 || prior_packets > 0 {
            if dubious {
                self.fastretrans_alert(cfg, now, prior_snd_una, una_advanced, num_dupack);
            }
            let acked_sacked = if self.sack_ok { delivered_now } else { delivered_now.max(num_dupack) };
            self.cong_control(cfg, now, acked_sacked, una_advanced, acked_pkts > 0);
        }
        if rdb_lost > 0 && self.state != TcpState::Closed {
            self.rdb_loss_cwr += 1;
            self.enter_cwr(cfg, now);
        }
        if self.tlp_high_seq.is_some() {
            let not_dup = !r.payload.is_empty() || win_update || acked_pkts > 0;
            self.process_tlp_ack(cfg, now, ack, una_advanced || not_dup || newly_sacked > 0, dsack_seen);
        }
        if matches!(self.xmit_timer, Some((_, XmitTimer::Retrans))) {
            self.schedule_loss_probe(cfg, now, true);
        }

        // state transitions on our FIN being ACKed
        if self.fin_sent && !self.snd_una.before(self.snd_nxt) && self.snd_una == self.write_seq() + 1 {
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
                    self.enter_closed();
                    return;
                }
                _ => {}
            }
        }
        // tcp_check_space(): wake a blocked writer, expanding sndbuf if allowed
        if self.write_blocked && freed > 0 {
            if !self.sndbuf_locked && self.in_flight() < self.tp.snd_cwnd {
                self.sndbuf_expand(cfg);
            }
            let queued = self.snd_ring.len() as u32;
            let cap = self.sndbuf_payload();
            // sk_stream_is_writeable(): free space >= queued / 2
            if cap > queued && cap - queued >= queued / 2 {
                self.write_blocked = false;
                self.notify(out, SockEvent::Writable);
            }
        }
    }

    /// `tcp_sacktag_write_queue()`: marks whole segments covered by SACK blocks. Returns
    /// (newly SACKed packets, (first, last) xmit time of never-retransmitted ones, D-SACK).
    fn sacktag_write_queue(
        &mut self,
        cfg: &TcpConfig,
        now: Instant,
        ack: SeqNumber,
        blocks: &SackBlocks,
    ) -> (u32, Option<(Instant, Instant)>, bool) {
        let bl = blocks.as_slice();
        // tcp_check_dsack(): first block below the ACK, or inside the second block
        let mut dsack = false;
        if let Some(&(l0, r0)) = bl.first() {
            if l0.before(ack) {
                dsack = true;
            } else if let Some(&(l1, r1)) = bl.get(1) {
                if !r0.after(r1) && !l0.before(l1) {
                    dsack = true;
                }
            }
        }
        let mut newly = 0u32;
        let mut first: Option<Instant> = None;
        let mut last: Option<Instant> = None;
        let prior_fack = self.fack_seq();
        let mut reord = self.snd_nxt;
        if dsack {
            // tcp_check_dsack() / tcp_sacktag_one(dup_sack): each D-SACKed retransmission
            // proves one retransmission spurious (undo_retrans)
            let (l0, r0) = bl[0];
            self.dsack_count += 1;
            // tcp_rack_update_reo_wnd(): a D-SACK widens RACK's reordering window
            if cfg.tcp_recovery & TCP_RACK_STATIC_REO_WND == 0 {
                self.rack_reo_wnd_steps = (self.rack_reo_wnd_steps + 1).min(0xff);
                self.rack_reo_wnd_persist = TCP_RACK_RECOVERY_THRESH;
            }
            let mss = self.mss_cache.max(1);
            let dup_segs = r0.dist(l0).div_ceil(mss) as i32;
            if let Some(um) = self.undo_marker {
                if self.undo_retrans > 0 && r0.after(um) {
                    if !r0.after(self.snd_una) {
                        self.undo_retrans = (self.undo_retrans - dup_segs).max(0);
                    } else {
                        let idx = self.rtx.partition_point(|s| !s.end.after(l0));
                        for k in idx..self.rtx.len() {
                            let sg = self.rtx[k];
                            if sg.end.after(r0) {
                                break;
                            }
                            if sg.sacked & EVER_RETRANS != 0 {
                                self.undo_retrans = (self.undo_retrans - 1).max(0);
                                if sg.sacked & SACKED_ACKED != 0 && sg.seq.before(reord) {
                                    reord = sg.seq;
                                }
                            }
                        }
                    }
                }
            }
        }
        for (i, &(l, r)) in bl.iter().enumerate() {
            if i == 0 && dsack {
                continue;
            }
            // tcp_is_sackblock_valid()
            if !r.after(l) || !r.after(self.snd_una) || r.after(self.snd_nxt) {
                continue;
            }
            let start = l.max(self.snd_una);
            // segments are ordered by seq: binary search for the first ending after start
            let idx = self.rtx.partition_point(|s| !s.end.after(start));
            for k in idx..self.rtx.len() {
                let s = self.rtx[k];
                if s.seq.before(start) {
                    continue; // partially covered: ignored (no tcp_fragment)
                }
                if s.end.after(r) {
                    break;
                }
                if s.sacked & SACKED_ACKED != 0 {
                    continue;
                }
                let mut f = s.sacked;
                if f & SACKED_RETRANS != 0 {
                    self.retrans_out = self.retrans_out.saturating_sub(1);
                    f &= !SACKED_RETRANS;
                }
                if f & LOST != 0 {
                    self.lost_out = self.lost_out.saturating_sub(1);
                    f &= !LOST;
                }
                if f & EVER_RETRANS == 0 {
                    if first.is_none() {
                        first = Some(s.xmit);
                    }
                    last = Some(s.xmit);
                    if s.seq.before(prior_fack) && s.seq.before(reord) {
                        reord = s.seq;
                    }
                    if !s.end.after(self.high_seq) {
                        self.flag_orig_sack_acked = true;
                    }
                }
                if self.sacked_out == 0 || s.seq.after(self.highest_sack) {
                    self.highest_sack = s.seq;
                }
                f |= SACKED_ACKED;
                self.flag_data_sacked = true;
                self.rtx[k].sacked = f;
                self.sacked_out += 1;
                newly += 1;
                self.rate_skb_delivered(&s);
                self.delivered += 1;
                self.delivered_mstamp = now;
                self.rack_advance(now, s.sacked, s.end, s.xmit);
            }
        }
        if reord.before(prior_fack) {
            self.check_sack_reordering(cfg, reord, prior_fack);
        }
        (newly, first.zip(last), dsack)
    }

    /// `tcp_highest_sack_seq()`.
    fn fack_seq(&self) -> SeqNumber {
        if self.sacked_out == 0 || !self.sack_ok {
            self.snd_una
        } else {
            self.highest_sack
        }
    }

    /// `tcp_check_sack_reordering()`: raise the dupthresh to the observed displacement
    /// (in packets), up to `tcp_max_reordering`.
    fn check_sack_reordering(&mut self, cfg: &TcpConfig, low_seq: SeqNumber, fack: SeqNumber) {
        let mss = self.mss_cache.max(1);
        let metric = fack.dist(low_seq);
        if metric > self.reordering.saturating_mul(mss) {
            self.reordering = metric.div_ceil(mss).min(cfg.tcp_max_reordering);
        }
        self.reord_seen += 1;
        // tcp_update_reordering(): reordering makes early retransmit unsafe
        self.er_disabled = true;
        self.rack_reord = true;
    }

    /// `tcp_rate_skb_delivered()`: remember the most recently sent delivered segment.
    fn rate_skb_delivered(&mut self, s: &TxSeg) {
        if !self.rs_valid || s.delivered >= self.rs_prior_delivered {
            self.rs_valid = true;
            self.rs_prior_delivered = s.delivered;
            self.rs_prior_mstamp = s.delivered_mstamp;
            self.rs_interval = s.xmit.saturating_since(s.first_tx);
            self.first_tx_mstamp = s.xmit;
        }
    }

    /// `tcp_rate_gen()`: delivery-rate sample in bytes/s, max(send, ACK) interval.
    fn rate_gen(&mut self, now: Instant) {
        if !self.rs_valid {
            return;
        }
        self.rs_valid = false;
        let delivered = self.delivered.wrapping_sub(self.rs_prior_delivered);
        let ack_us = now.saturating_since(self.rs_prior_mstamp);
        let interval = self.rs_interval.max(ack_us);
        if interval > Duration::ZERO && delivered > 0 {
            self.delivery_rate =
                (delivered as u128 * self.mss_cache as u128 * 1_000_000_000 / interval.as_nanos() as u128) as u64;
        }
    }

    // ---- loss recovery (tcp_fastretrans_alert and friends) ----

    /// `tcp_init_undo()`; nothing to undo on profiles without undo (`TcpConfig::undo`).
    fn init_undo(&mut self, cfg: &TcpConfig) {
        if !cfg.undo {
            self.undo_marker = None;
            return;
        }
        self.undo_marker = Some(self.snd_una);
        self.undo_retrans = if self.retrans_out > 0 { self.retrans_out as i32 } else { -1 };
    }

    /// `tcp_packet_delayed()`: the ACK echoes a timestamp older than our first
    /// retransmission, so the original got through (Eifel detection, RFC 3522).
    fn packet_delayed(&self) -> bool {
        match self.retrans_stamp {
            None => true,
            Some(t) => {
                self.tstamp_ok
                    && self.saw_tstamp_ecr != 0
                    && (self.saw_tstamp_ecr.wrapping_sub(self.ts_now(t)) as i32) < 0
            }
        }
    }

    /// `tcp_may_undo()`.
    fn may_undo(&self) -> bool {
        self.undo_marker.is_some() && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// `tcp_undo_cwnd_reduction()`.
    fn undo_cwnd_reduction(&mut self, now: Instant, unmark_loss: bool) {
        if unmark_loss {
            for s in self.rtx.iter_mut() {
                s.sacked &= !LOST;
            }
            self.lost_out = 0;
        }
        if self.prior_ssthresh != 0 {
            let tp = self.tp;
            self.tp.snd_cwnd = self.cc.undo_cwnd(&tp, self.prior_cwnd);
            if self.prior_ssthresh > self.tp.snd_ssthresh {
                self.tp.snd_ssthresh = self.prior_ssthresh;
            }
        }
        self.snd_cwnd_stamp = now;
        self.undo_marker = None;
        self.undo_count += 1;
    }

    /// `tcp_try_undo_recovery()`: returns true if the state must be held (Reno).
    fn try_undo_recovery(&mut self, now: Instant) -> bool {
        if self.may_undo() {
            // happy end: nothing retransmitted or the originals got through
            self.undo_cwnd_reduction(now, false);
        }
        if self.snd_una == self.high_seq && !self.sack_ok {
            // Reno holds the state until something above high_seq is ACKed (RFC 6582)
            if self.retrans_out == 0 {
                self.retrans_stamp = None;
            }
            return true;
        }
        self.set_ca_state(CaState::Open);
        false
    }

    /// `tcp_try_undo_dsack()`: D-SACKs covered all retransmissions.
    fn try_undo_dsack(&mut self, now: Instant) -> bool {
        if self.undo_marker.is_some() && self.undo_retrans == 0 {
            self.undo_cwnd_reduction(now, false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_loss()` (no F-RTO).
    fn try_undo_loss(&mut self, now: Instant, frto_undo: bool) -> bool {
        if frto_undo || self.may_undo() {
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
        if self.undo_marker.is_some() && self.packet_delayed() {
            // Plain luck: the hole was filled by the delayed original. That is reordering.
            let fack = self.fack_seq().max(self.snd_una);
            self.check_sack_reordering(cfg, prior_snd_una, fack);
            if self.retrans_out > 0 {
                return true;
            }
            self.retrans_stamp = None;
            self.undo_cwnd_reduction(now, true);
            self.try_to_open();
        }
        false
    }

    /// `tcp_time_to_recover()` (3.x form): proven loss, the dupthresh rule, the thin-stream
    /// rule (`tcp_thin_dupack`, 2.6.34–4.12) and RFC 5827 early retransmit (3.5–4.13).
    /// Linux's "Trick#4" (all but a few of a tiny window SACKed and nothing to send) is
    /// not modelled: it can only fire with `tcp_reordering` above 3.
    fn time_to_recover(&mut self, cfg: &TcpConfig, now: Instant) -> Option<RecoverTrigger> {
        if self.lost_out > 0 {
            return Some(RecoverTrigger::Classic);
        }
        // tcp_dupack_heuristics() = sacked_out + 1 (no FACK; with FACK, fackets_out > 1
        // holds exactly when sacked_out >= 1 too, so the thin rule is unaffected)
        let dupack_heuristics = self.sacked_out + 1;
        // 4.18+: with RACK the dupthresh rule is RACK's (reo_wnd 0 at the dupthresh)
        if !(self.rack_on(cfg) && self.sack_ok) && dupack_heuristics > self.reordering {
            return Some(RecoverTrigger::Classic);
        }
        // If a thin stream is detected, retransmit after the first dupACK; only with SACK
        // (spurious-retransmission corner cases) and with nothing unsent (tcp_send_head).
        if (self.thin_dupack || cfg.tcp_thin_dupack)
            && self.stream_is_thin()
            && dupack_heuristics > 1
            && self.sack_ok
            && !self.has_unsent()
        {
            return Some(RecoverTrigger::ThinDupack);
        }
        // Trick#6: early retransmit, RFC 5827, with Mitigation A.3 (delay) for modes 2, 3.
        if self.do_early_retrans(cfg)
            && self.retrans_out == 0
            && self.sacked_out > 0
            && self.packets_out > self.sacked_out
            && self.packets_out < 4
            && !self.may_send_now()
        {
            return if self.pause_early_retransmit(cfg, now) { None } else { Some(RecoverTrigger::EarlyRetrans) };
        }
        None
    }

    /// The `tcp_early_retrans` mode in force (socket override or sysctl).
    fn early_retrans_mode(&self, cfg: &TcpConfig) -> u32 {
        self.early_retrans_mode.map_or(cfg.tcp_early_retrans, |m| m as u32)
    }

    /// `tp->do_early_retrans` (`tcp_enable_early_retrans()`, 3.10–4.3; 4.4+ also needs RACK
    /// off): modes 1–3, not with the `tcp_thin_dupack` sysctl, only at the default
    /// `tcp_reordering` of 3, and off for good once reordering was seen.
    fn do_early_retrans(&self, cfg: &TcpConfig) -> bool {
        let m = self.early_retrans_mode(cfg);
        (1..=3).contains(&m)
            && !cfg.tcp_thin_dupack
            && cfg.tcp_reordering == 3
            && cfg.tcp_recovery & 1 == 0
            && !self.er_disabled
    }

    /// `tcp_pause_early_retransmit()`: modes 2 and 3 defer the early retransmit by
    /// max(srtt/4, 2 ms) unless the RTO would fire first. True when deferred.
    fn pause_early_retransmit(&mut self, cfg: &TcpConfig, now: Instant) -> bool {
        let m = self.early_retrans_mode(cfg);
        if !(2..=3).contains(&m) || self.srtt_us == 0 {
            return false;
        }
        let delay = round_jiffies(cfg, Duration::from_micros((self.srtt_us >> 5) as u64)).max(round_jiffies(cfg, Duration::from_millis(2)));
        let Some((t, _)) = self.xmit_timer else { return false };
        if t <= timer_at(cfg, now, delay) {
            return false;
        }
        self.reset_xmit_timer(cfg, now, XmitTimer::EarlyRetrans, delay);
        true
    }

    /// `tcp_resume_early_retransmit()`: the ER delay expired without an ACK.
    fn resume_early_retransmit(&mut self, cfg: &TcpConfig, now: Instant) {
        self.rearm_rto(cfg, now);
        if !self.do_early_retrans(cfg) || self.packets_out == 0 || self.ca_state >= CaState::Recovery {
            return;
        }
        self.er_count += 1;
        self.enter_recovery(cfg, now);
        self.update_scoreboard(true);
    }

    /// `tcp_may_send_now()`: the head of the unsent queue passes the cwnd, receive-window
    /// and Nagle tests.
    fn may_send_now(&self) -> bool {
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
        if len < mss && !with_fin && !self.nodelay && self.packets_out > 0 {
            let minshall = self.snd_sml.after(self.snd_una) && !self.snd_sml.after(self.snd_nxt);
            if minshall {
                return false;
            }
        }
        true
    }

    /// `tcp_schedule_loss_probe()`: arm the probe timeout (PTO) instead of the RTO in Open
    /// state, for SACK connections limited by cwnd or by the application.
    ///
    /// 3.10–4.12 (RACK off): needs an RTT sample in whole jiffies; PTO = max(2·srtt,
    /// 10 ms), with one packet out at least 1.5·srtt + `TCP_DELACK_MAX`; never later than
    /// the pending RTO. RACK-TLP (RACK on, 4.13+/6.x): PTO = 2·srtt + (one packet out ?
    /// `TCP_RTO_MIN` : 2 jiffies), `TCP_TIMEOUT_INIT` without a sample; Open or CWR; capped
    /// by the RTO (counted from the head's transmission after an ACK, `advanced`).
    fn schedule_loss_probe(&mut self, cfg: &TcpConfig, now: Instant, advanced: bool) {
        if !matches!(self.xmit_timer, Some((_, XmitTimer::Retrans))) {
            return;
        }
        let rack = self.rack_on(cfg);
        let ca_ok = self.ca_state == CaState::Open || (rack && self.ca_state == CaState::Cwr);
        if self.early_retrans_mode(cfg) < 3
            || self.packets_out == 0
            || !self.sack_ok
            || !ca_ok
            || !matches!(self.state, TcpState::Established | TcpState::CloseWait | TcpState::FinWait1 | TcpState::LastAck)
        {
            return;
        }
        if self.tp.snd_cwnd > self.in_flight() && self.has_unsent() {
            return;
        }
        let jn = cfg.jiffy().as_nanos().max(1);
        if rack {
            let mut timeout = if self.srtt_us != 0 {
                let two_srtt = round_jiffies(cfg, Duration::from_micros((self.srtt_us >> 2) as u64));
                two_srtt + if self.packets_out == 1 { cfg.rto_min } else { cfg.jiffy() * 2 }
            } else {
                cfg.rto_init
            };
            let rto_left = if advanced {
                self.rtx.front().map_or(self.rto, |h| (h.xmit + self.rto).saturating_since(now))
            } else {
                self.rto
            };
            if rto_left > Duration::ZERO {
                timeout = timeout.min(rto_left);
            }
            self.reset_xmit_timer(cfg, now, XmitTimer::LossProbe, timeout);
            return;
        }
        // in whole jiffies, as 3.14 computes it from its jiffy-based srtt (`!rtt` -> none)
        let rtt_j = (self.srtt_us >> 3) as u64 * 1000 / jn;
        if rtt_j == 0 {
            return;
        }
        let mut timeout_j = rtt_j * 2;
        if self.packets_out == 1 {
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
    fn process_tlp_ack(&mut self, cfg: &TcpConfig, now: Instant, ack: SeqNumber, not_dup: bool, dsack: bool) {
        let Some(h) = self.tlp_high_seq else { return };
        if self.rack_on(cfg) {
            // RACK-TLP era: a probe of new data, or a D-SACKed probe, shows no loss
            if ack.before(h) {
                return;
            }
            if !self.tlp_retrans || dsack {
                self.tlp_high_seq = None;
                return;
            }
        }
        if ack == h && !not_dup {
            self.tlp_high_seq = None;
            return;
        }
        if ack.after(h) {
            self.tlp_high_seq = None;
            if !dsack {
                // tcp_init_cwnd_reduction + CWR + tcp_end_cwnd_reduction + try_keep_open
                self.enter_cwr(cfg, now);
                self.end_cwnd_reduction();
                self.set_ca_state(CaState::Open);
                self.try_to_open();
            }
        }
    }

    /// `tcp_enter_cwr()`: reduce cwnd without retransmitting (PRR paces it); no undo.
    fn enter_cwr(&mut self, cfg: &TcpConfig, now: Instant) {
        self.prior_ssthresh = 0;
        if self.ca_state < CaState::Cwr {
            self.undo_marker = None;
            self.high_seq = self.snd_nxt;
            self.tlp_high_seq = None;
            self.tp.snd_cwnd_cnt = 0;
            self.prior_cwnd = self.tp.snd_cwnd;
            self.prr_delivered = 0;
            self.prr_out = 0;
            self.sync_tp(cfg, now);
            let tp = self.tp;
            self.tp.snd_ssthresh = self.cc.ssthresh(&tp);
            if !cfg.prr {
                self.tp.snd_cwnd = self.tp.snd_ssthresh.max(1);
            }
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// The RDB mode in force (socket override or sysctl).
    fn rdb_mode(&self, cfg: &TcpConfig) -> RdbMode {
        self.rdb_mode.unwrap_or(cfg.tcp_rdb)
    }

    /// `rdb_check_rtx_queue_loss()` (2015 RDB patch): if the segment this ACK exactly
    /// covers was sent with older data bundled in front and older segments are still in
    /// the queue, those are presumed lost (one ACK per packet is expected).
    fn rdb_check_rtx_queue_loss(&self, ack: SeqNumber) -> u32 {
        let mut lost = 0;
        for (k, s) in self.rtx.iter().enumerate() {
            if s.end.after(ack) {
                break;
            }
            if s.end == ack {
                if s.rdb_start == s.seq || k == 0 {
                    break;
                }
                for p in self.rtx.iter().take(k).rev() {
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

    /// `tcp_current_ssthresh()`.
    fn current_ssthresh(&self) -> u32 {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            self.tp.snd_ssthresh
        } else {
            self.tp.snd_ssthresh.max((self.tp.snd_cwnd >> 1) + (self.tp.snd_cwnd >> 2))
        }
    }

    /// `tcp_enter_recovery()` + `tcp_init_cwnd_reduction()`.
    fn enter_recovery(&mut self, cfg: &TcpConfig, now: Instant) {
        self.init_undo(cfg);
        self.prior_ssthresh = self.current_ssthresh();
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.tp.snd_cwnd_cnt = 0;
        self.prior_cwnd = self.tp.snd_cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.sync_tp(cfg, now);
        let tp = self.tp;
        self.tp.snd_ssthresh = self.cc.ssthresh(&tp);
        if !cfg.prr {
            // pre-3.2 approximation: drop to ssthresh at once
            self.tp.snd_cwnd = self.tp.snd_ssthresh.max(1);
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_end_cwnd_reduction()`.
    fn end_cwnd_reduction(&mut self) {
        if self.tp.snd_ssthresh < TCP_INFINITE_SSTHRESH {
            self.tp.snd_cwnd = self.tp.snd_ssthresh;
        }
    }

    /// `tcp_try_keep_open()` / `tcp_try_to_open()`.
    fn try_to_open(&mut self) {
        if self.retrans_out == 0 {
            self.retrans_stamp = None;
        }
        let st = if self.sacked_out + self.lost_out > 0 || self.retrans_out > 0 {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.ca_state != st {
            self.set_ca_state(st);
            self.high_seq = self.snd_nxt;
        }
    }

    /// `tcp_add_reno_sack()` with `tcp_limit_reno_sacked()`.
    fn add_reno_sack(&mut self, n: u32) {
        if n == 0 {
            return;
        }
        let prior = self.sacked_out;
        self.sacked_out += n;
        let holes = self.lost_out.max(1).min(self.packets_out);
        if self.sacked_out + holes > self.packets_out {
            self.sacked_out = self.packets_out.saturating_sub(holes);
        }
        let d = self.sacked_out.saturating_sub(prior);
        self.delivered += d;
    }
    /// `tcp_remove_reno_sacks()` for a cumulative ACK of `acked` packets.
    fn remove_reno_sacks(&mut self, acked: u32) {
        if acked > 0 {
            if acked > self.sacked_out {
                self.sacked_out = 0;
            } else {
                self.sacked_out -= acked - 1;
            }
        }
    }

    /// `tcp_mark_skb_lost()`: a retransmission that is lost again stops counting as
    /// retransmitted, so it can be sent once more.
    fn mark_lost(&mut self, k: usize) {
        let s = &mut self.rtx[k];
        if s.sacked & SACKED_ACKED != 0 {
            return;
        }
        if s.sacked & LOST != 0 {
            if s.sacked & SACKED_RETRANS != 0 {
                s.sacked &= !SACKED_RETRANS;
                self.retrans_out = self.retrans_out.saturating_sub(1);
            }
        } else {
            s.sacked |= LOST;
            self.lost_out += 1;
        }
    }

    /// `tcp_mark_head_lost()`: mark holes before the `packets`-th SACKed segment lost.
    fn mark_head_lost(&mut self, packets: u32, mark_head: bool) {
        let mut cnt = 0u32;
        for k in 0..self.rtx.len() {
            let s = self.rtx[k];
            if !self.sack_ok || s.sacked & SACKED_ACKED != 0 {
                cnt += 1;
            }
            if cnt > packets {
                break;
            }
            if s.sacked & (SACKED_ACKED | LOST) == 0 {
                self.mark_lost(k);
            }
            if mark_head {
                break;
            }
        }
    }

    /// `tcp_update_scoreboard()` (non-RACK).
    fn update_scoreboard(&mut self, fast_rexmit: bool) {
        if self.sack_ok {
            let upto = self.sacked_out as i64 - self.reordering as i64;
            if upto >= 0 {
                self.mark_head_lost(upto as u32, false);
            } else if fast_rexmit {
                self.mark_head_lost(1, true);
            }
        }
    }

    /// `tcp_newreno_mark_lost()`: without SACK, the head is lost after `reordering`
    /// dupacks, and again on each partial ACK in recovery.
    fn newreno_mark_lost(&mut self, una_advanced: bool) {
        if self.rtx.is_empty() {
            return;
        }
        if ((self.ca_state < CaState::Recovery && self.sacked_out >= self.reordering)
            || (self.ca_state == CaState::Recovery && una_advanced))
            && self.rtx[0].sacked & LOST == 0
        {
            self.mark_lost(0);
        }
    }

    /// `tcp_identify_packet_loss()`: NewReno without SACK, RACK with it when
    /// `tcp_recovery` has `TCP_RACK_LOSS_DETECTION`.
    fn identify_packet_loss(&mut self, cfg: &TcpConfig, now: Instant, una_advanced: bool) {
        if self.rtx.is_empty() {
            return;
        }
        if !self.sack_ok {
            self.newreno_mark_lost(una_advanced);
        } else if self.rack_on(cfg) {
            self.rack_mark_lost(cfg, now);
        }
    }

    /// `tcp_is_rack()`.
    fn rack_on(&self, cfg: &TcpConfig) -> bool {
        cfg.tcp_recovery & TCP_RACK_LOSS_DETECTION != 0
    }

    /// `tcp_rack_advance()`: remember the most recently sent segment that got delivered.
    /// A retransmitted segment ACKed faster than the minimum RTT was the original's
    /// delivery and does not count.
    fn rack_advance(&mut self, now: Instant, sacked: u8, end: SeqNumber, xmit: Instant) {
        let rtt_us = now.saturating_since(xmit).as_micros();
        if sacked & (SACKED_RETRANS | EVER_RETRANS) != 0 && rtt_us < self.min_rtt_us as u64 {
            return;
        }
        self.rack_advanced = true;
        self.rack_rtt_us = rtt_us;
        let after = match self.rack_mstamp {
            None => true,
            Some(m) => xmit > m || (xmit == m && end.after(self.rack_end_seq)),
        };
        if after {
            self.rack_mstamp = Some(xmit);
            self.rack_end_seq = end;
        }
    }

    /// `tcp_rack_reo_wnd()`: min_rtt/4 per step, capped at srtt; zero while no reordering
    /// was seen and either recovery is on or the dupthresh is reached.
    fn rack_reo_wnd(&self, cfg: &TcpConfig) -> u64 {
        if !self.rack_reord {
            if self.ca_state >= CaState::Recovery {
                return 0;
            }
            if self.sacked_out >= self.reordering && cfg.tcp_recovery & TCP_RACK_NO_DUPTHRESH == 0 {
                return 0;
            }
        }
        let min_rtt = if self.min_rtt_us == u32::MAX { 0 } else { self.min_rtt_us as u64 };
        ((min_rtt >> 2) * self.rack_reo_wnd_steps as u64).min((self.srtt_us >> 3) as u64)
    }

    /// `tcp_rack_detect_loss()`: a segment sent before the most recently delivered one is
    /// lost once `rack.rtt + reo_wnd` has passed since it was sent. Returns the longest
    /// wait (µs) of those not yet due (0 = none). The rtx queue is in sequence order; the
    /// first never-retransmitted segment sent after RACK's reference ends the walk (all
    /// later segments were sent later still), as Linux's time-sorted list does.
    fn rack_detect_loss(&mut self, cfg: &TcpConfig, now: Instant) -> u64 {
        let Some(mstamp) = self.rack_mstamp else { return 0 };
        let reo_wnd = self.rack_reo_wnd(cfg);
        let mut timeout = 0u64;
        for k in 0..self.rtx.len() {
            let s = self.rtx[k];
            if s.sacked & SACKED_ACKED != 0 {
                continue;
            }
            if s.sacked & LOST != 0 && s.sacked & SACKED_RETRANS == 0 {
                continue; // already waiting for its retransmission
            }
            let before = s.xmit < mstamp || (s.xmit == mstamp && self.rack_end_seq.after(s.end));
            if !before {
                if s.sacked & EVER_RETRANS == 0 {
                    break;
                }
                continue;
            }
            let waited = now.saturating_since(s.xmit).as_micros();
            let due = self.rack_rtt_us + reo_wnd;
            if waited >= due {
                self.mark_lost(k);
            } else {
                timeout = timeout.max(due - waited);
            }
        }
        timeout
    }

    /// `tcp_rack_mark_lost()`: run the detection after an ACK that delivered something;
    /// arm the reordering timer for segments not yet due.
    fn rack_mark_lost(&mut self, cfg: &TcpConfig, now: Instant) {
        if !self.rack_advanced {
            return;
        }
        self.rack_advanced = false;
        let t = self.rack_detect_loss(cfg, now);
        if t > 0 {
            // + TCP_TIMEOUT_MIN (2 jiffies)
            let d = Duration::from_micros(t) + cfg.jiffy() * 2;
            self.reset_xmit_timer(cfg, now, XmitTimer::ReoTimeout, d);
        }
    }

    /// `tcp_rack_reo_timeout()`.
    fn rack_reo_timeout(&mut self, cfg: &TcpConfig, now: Instant) {
        let prior_lost = self.lost_out;
        let prior_retrans = self.retrans_out;
        self.rack_detect_loss(cfg, now);
        let newly_lost = self.lost_out != prior_lost || self.retrans_out != prior_retrans;
        if newly_lost && self.ca_state != CaState::Recovery && self.ca_state != CaState::Loss {
            self.enter_recovery(cfg, now);
            if cfg.prr {
                self.cwnd_reduction(1, false);
            }
        }
        if !matches!(self.xmit_timer, Some((_, XmitTimer::Retrans))) {
            self.rearm_rto(cfg, now);
        }
    }

    /// `tcp_fastretrans_alert()`.
    fn fastretrans_alert(
        &mut self,
        cfg: &TcpConfig,
        now: Instant,
        prior_snd_una: SeqNumber,
        una_advanced: bool,
        num_dupack: u32,
    ) {
        let reno = !self.sack_ok;
        if self.packets_out == 0 && self.sacked_out > 0 {
            self.sacked_out = 0;
        }
        let mut fast_rexmit = false;
        // recovery started by the thin-stream or early-retransmit rule, which need the
        // head marked lost even when RACK does the loss marking otherwise
        let mut thin_rexmit = false;
        let do_lost = una_advanced || num_dupack > 0 || self.sack_ok;
        // D. exit conditions once high_seq is ACKed
        if self.ca_state == CaState::Open {
            self.retrans_stamp = None;
        } else if !self.snd_una.before(self.high_seq) {
            match self.ca_state {
                // CWR is held until something above high_seq is ACKed
                CaState::Cwr if self.snd_una != self.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_ca_state(CaState::Open);
                }
                CaState::Recovery => {
                    if reno {
                        self.sacked_out = 0;
                    }
                    // tcp_rack_update_reo_wnd(): a widened window decays over recoveries
                    if self.rack_reo_wnd_persist > 0 {
                        self.rack_reo_wnd_persist -= 1;
                        if self.rack_reo_wnd_persist == 0 {
                            self.rack_reo_wnd_steps = 1;
                        }
                    }
                    if self.try_undo_recovery(now) {
                        return;
                    }
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }
        // E. process state
        match self.ca_state {
            CaState::Recovery => {
                if !una_advanced {
                    if reno {
                        self.add_reno_sack(num_dupack);
                    }
                } else if self.try_undo_partial(cfg, now, prior_snd_una) {
                    return;
                }
                if self.try_undo_dsack(now) {
                    self.try_to_open();
                }
                self.identify_packet_loss(cfg, now, una_advanced);
                if self.ca_state != CaState::Recovery {
                    // undone: start a new recovery only if loss is evident
                    if self.time_to_recover(cfg, now).is_none() {
                        return;
                    }
                    self.enter_recovery(cfg, now);
                }
            }
            CaState::Loss => {
                // tcp_process_loss()
                let recovered = !self.snd_una.before(self.high_seq);
                if una_advanced && self.try_undo_loss(now, false) {
                    return;
                }
                if self.frto {
                    // F-RTO, RFC 5682 3.1 (SACK-enhanced). Step 3.b: the timeout was
                    // spurious if never-retransmitted data is (S)ACKed.
                    if self.flag_orig_sack_acked && self.try_undo_loss(now, true) {
                        return;
                    }
                    if self.snd_nxt.after(self.high_seq) {
                        // step 3.a: loss was real
                        if self.flag_data_sacked || num_dupack > 0 {
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
                if reno && una_advanced {
                    self.sacked_out = 0;
                }
                return;
            }
            _ => {
                if reno {
                    if una_advanced {
                        self.sacked_out = 0;
                    }
                    self.add_reno_sack(num_dupack);
                }
                if self.ca_state <= CaState::Disorder {
                    self.try_undo_dsack(now);
                }
                self.identify_packet_loss(cfg, now, una_advanced);
                match self.time_to_recover(cfg, now) {
                    None => {
                        self.try_to_open();
                        return;
                    }
                    Some(RecoverTrigger::ThinDupack) => {
                        self.thin_dupack_count += 1;
                        thin_rexmit = true;
                    }
                    Some(RecoverTrigger::EarlyRetrans) => {
                        self.er_count += 1;
                        thin_rexmit = true;
                    }
                    Some(RecoverTrigger::Classic) => {}
                }
                self.enter_recovery(cfg, now);
                fast_rexmit = true;
            }
        }
        // 4.18+: with RACK, RACK alone marks losses
        if do_lost && (!self.rack_on(cfg) || !self.sack_ok || thin_rexmit) {
            self.update_scoreboard(fast_rexmit);
        }
    }

    /// `tcp_cong_control()`: PRR during reduction, otherwise `cong_avoid`.
    fn cong_control(&mut self, cfg: &TcpConfig, now: Instant, acked_sacked: u32, una_advanced: bool, data_acked: bool) {
        if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
            if cfg.prr {
                self.cwnd_reduction(acked_sacked, una_advanced);
            }
        } else if data_acked || (acked_sacked > 0 && self.ca_state < CaState::Cwr) {
            // tcp_may_raise_cwnd(): FLAG_DATA_ACKED
            if !data_acked {
                return;
            }
            self.sync_tp(cfg, now);
            let mut tp = self.tp;
            self.cc.cong_avoid(&mut tp, acked_sacked.max(1));
            self.tp = tp;
        }
    }

    /// `tcp_cwnd_reduction()`: Proportional Rate Reduction (RFC 6937).
    fn cwnd_reduction(&mut self, newly_acked_sacked: u32, una_advanced: bool) {
        if newly_acked_sacked == 0 || self.prior_cwnd == 0 {
            return;
        }
        let in_flight = self.in_flight() as i64;
        let ssthresh = self.tp.snd_ssthresh as i64;
        let delta = ssthresh - in_flight;
        self.prr_delivered += newly_acked_sacked;
        let mut sndcnt: i64 = if delta < 0 {
            let dividend = ssthresh as u64 * self.prr_delivered as u64 + self.prior_cwnd as u64 - 1;
            (dividend / self.prior_cwnd as u64) as i64 - self.prr_out as i64
        } else {
            let mut s = (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if una_advanced {
                s += 1;
            }
            s.min(delta)
        };
        // force a fast retransmit upon entering fast recovery
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.tp.snd_cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    /// `tcp_enter_loss()` on RTO.
    fn enter_loss(&mut self, cfg: &TcpConfig, now: Instant) {
        let new_recovery = self.ca_state < CaState::Recovery;
        // F-RTO step 1: only outside a recovery, or on a recurring timeout of the same data
        self.frto = cfg.tcp_frto > 0 && (new_recovery || self.retransmits > 0);
        // tcp_timeout_mark_lost()
        if !self.sack_ok {
            self.sacked_out = 0;
        }
        for k in 0..self.rtx.len() {
            // tcp_clear_retrans_partial() / tcp_mark_skb_lost(): outstanding
            // retransmissions (a TLP's included) count as lost again
            if self.rtx[k].sacked & (SACKED_RETRANS | SACKED_ACKED) == SACKED_RETRANS {
                self.rtx[k].sacked &= !SACKED_RETRANS;
                self.retrans_out = self.retrans_out.saturating_sub(1);
            }
            self.mark_lost(k);
        }
        if self.ca_state <= CaState::Disorder
            || !self.high_seq.after(self.snd_una)
            || (self.ca_state == CaState::Loss && self.retransmits == 0)
        {
            self.prior_ssthresh = self.current_ssthresh();
            self.prior_cwnd = self.tp.snd_cwnd;
            self.sync_tp(cfg, now);
            let tp = self.tp;
            self.tp.snd_ssthresh = self.cc.ssthresh(&tp);
            self.cc.cwnd_event(&tp, CaEvent::Loss);
            self.init_undo(cfg);
        }
        self.tp.snd_cwnd = self.in_flight() + 1;
        self.tp.snd_cwnd_cnt = 0;
        if self.ca_state <= CaState::Disorder && self.sacked_out >= cfg.tcp_reordering {
            self.reordering = self.reordering.min(cfg.tcp_reordering);
        }
        self.sync_tp(cfg, now);
        self.set_ca_state(CaState::Loss);
        self.high_seq = self.snd_nxt;
    }

    // ---- receive path (tcp_data_queue) ----

    fn data_queue(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, out: &mut Out) {
        let accepts = matches!(self.state, TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2);
        let fin = r.has(flags::FIN);
        if r.payload.is_empty() && !fin {
            return;
        }
        if !accepts {
            // data after the peer's FIN: just ACK
            self.send_ack_now = true;
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
                self.dsack = Some((seq, self.rcv_nxt));
            }
            let dup = dup.min(data.len());
            data = &data[dup..];
            seq = self.rcv_nxt;
        }
        // out of window at the right
        let wnd_end = self.rcv_nxt + self.receive_window();
        if !data.is_empty() && !seq.before(wnd_end) {
            self.enter_quickack_mode();
            self.send_ack_now = true;
            return;
        }
        let mut fin_in = fin;
        if (seq + data.len() as u32).after(wnd_end) {
            let keep = wnd_end.dist(seq) as usize;
            data = &data[..keep.min(data.len())];
            fin_in = false;
        }
        if seq == self.rcv_nxt {
            if !data.is_empty() {
                let off = self.rcv_nxt.dist(self.copied_seq) as usize;
                self.rcv_ring.write_at(off, data);
                self.rcv_nxt = self.rcv_nxt + data.len() as u32;
                self.bytes_received += data.len() as u64;
                self.event_data_recv(cfg, now, r, data.len() as u32);
            }
            if !self.ooo.is_empty() {
                self.ofo_queue();
                if self.ooo.is_empty() {
                    // RFC 5681 4.2: ACK immediately when a gap is filled
                    self.ack_pending |= ACK_NOW;
                }
            }
            self.sack_remove();
            if fin_in {
                self.fin_rcvd = Some(seq + data.len() as u32);
            }
            if let Some(fs) = self.fin_rcvd {
                if fs == self.rcv_nxt {
                    self.tcp_fin(cfg, now, out);
                }
            }
            if !data.is_empty() && !self.readable_signaled {
                self.readable_signaled = true;
                self.notify(out, SockEvent::Readable);
            }
        } else {
            // out of order: tcp_data_queue_ofo()
            self.enter_ooo(seq, data);
            if fin_in {
                self.fin_rcvd = Some(seq + data.len() as u32);
            }
            self.ack_pending |= ACK_SCHED;
            // Immediate ACK (with SACK) for out-of-order data. Linux >= 4.18 may compress
            // these SACKs (tcp_comp_sack_nr); we send every one, as earlier kernels did.
            self.ack_pending |= ACK_NOW;
        }
    }

    fn enter_ooo(&mut self, seq: SeqNumber, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let end = seq + data.len() as u32;
        // duplicate of data already queued -> D-SACK (tcp_data_queue_ofo)
        if let Some(&(l, r)) = self.ooo.iter().find(|(l, r)| !seq.before(*l) && !end.after(*r)) {
            let _ = (l, r);
            if self.sack_ok {
                self.dsack = Some((seq, end));
            }
            return;
        }
        let off = seq.dist(self.copied_seq) as usize;
        self.rcv_ring.write_at(off, data);
        // merge into the sorted range list
        let mut nl = seq;
        let mut nr = end;
        let mut i = 0;
        while i < self.ooo.len() {
            let (l, r) = self.ooo[i];
            if !l.after(nr) && !nl.after(r) {
                nl = nl.min(l);
                nr = nr.max(r);
                self.ooo.remove(i);
            } else {
                i += 1;
            }
        }
        let pos = self.ooo.partition_point(|(l, _)| l.before(nl));
        self.ooo.insert(pos, (nl, nr));
        if self.sack_ok {
            self.sack_new_ofo_skb(seq, end);
        }
    }

    /// `tcp_sack_new_ofo_skb()`: most recent block first, up to four.
    fn sack_new_ofo_skb(&mut self, seq: SeqNumber, end: SeqNumber) {
        let mut v: [(SeqNumber, SeqNumber); 5] = [(SeqNumber(0), SeqNumber(0)); 5];
        let mut n = 0;
        let (mut nl, mut nr) = (seq, end);
        for &(l, r) in self.sacks.as_slice() {
            if !l.after(nr) && !nl.after(r) {
                nl = nl.min(l);
                nr = nr.max(r);
            }
        }
        v[n] = (nl, nr);
        n += 1;
        for &(l, r) in self.sacks.as_slice() {
            if !l.after(nr) && !nl.after(r) {
                continue; // coalesced
            }
            if n < 4 {
                v[n] = (l, r);
                n += 1;
            }
        }
        let mut s = SackBlocks::EMPTY;
        for &(l, r) in &v[..n] {
            s.push(l, r);
        }
        self.sacks = s;
    }

    /// `tcp_sack_remove()`: drop blocks now below rcv_nxt.
    fn sack_remove(&mut self) {
        if self.sacks.is_empty() {
            return;
        }
        let mut s = SackBlocks::EMPTY;
        for &(l, r) in self.sacks.as_slice() {
            if self.rcv_nxt.before(l) {
                s.push(l, r);
            }
        }
        self.sacks = s;
    }

    /// `tcp_ofo_queue()`: pull now-contiguous out-of-order data into the in-order queue.
    fn ofo_queue(&mut self) {
        while let Some(&(l, r)) = self.ooo.first() {
            if l.after(self.rcv_nxt) {
                break;
            }
            if r.after(self.rcv_nxt) {
                self.bytes_received += r.dist(self.rcv_nxt) as u64;
                self.rcv_nxt = r;
            }
            self.ooo.remove(0);
        }
    }

    /// `tcp_fin()`.
    fn tcp_fin(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        if self.peer_fin {
            return;
        }
        self.peer_fin = true;
        self.fin_rcvd = None;
        self.rcv_nxt = self.rcv_nxt + 1;
        self.ack_pending |= ACK_SCHED;
        match self.state {
            TcpState::SynRecv | TcpState::Established => {
                self.state = TcpState::CloseWait;
                self.pingpong = true;
            }
            TcpState::FinWait1 => {
                // simultaneous close
                self.send_ack_now = true;
                self.state = TcpState::Closing;
            }
            TcpState::FinWait2 => {
                self.send_ack_now = true;
                self.enter_time_wait(cfg, now, out);
            }
            _ => {}
        }
        self.ooo.clear();
        self.sacks = SackBlocks::EMPTY;
        self.notify(out, SockEvent::PeerClosed);
    }

    fn enter_time_wait(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        self.state = TcpState::TimeWait;
        self.xmit_timer = None;
        self.delack_timer = None;
        self.sk_timer = Some((timer_at(cfg, now, cfg.timewait_len), SkTimer::TimeWait));
        if !self.closed_notified {
            self.notify(out, SockEvent::Closed);
            self.closed_notified = true;
        }
        // a TIME_WAIT socket keeps no buffers (tcp_timewait_sock)
        self.rtx = VecDeque::new();
        self.snd_ring = Ring::default();
        self.ooo = Vec::new();
    }

    // ---- delayed ACK engine ----

    /// `tcp_incr_quickack()`.
    fn incr_quickack(&mut self, max: u32) {
        let mut q = self.receive_window() / (2 * self.rcv_mss.max(1));
        if q == 0 {
            q = 2;
        }
        q = q.min(max);
        if q > self.quick {
            self.quick = q;
        }
    }
    /// `tcp_enter_quickack_mode()`.
    pub(crate) fn enter_quickack_mode(&mut self) {
        self.incr_quickack(self.max_quickacks);
        self.pingpong = false;
        self.ato = self.ato_min;
    }
    fn in_quickack_mode(&self) -> bool {
        self.quick > 0 && !self.pingpong
    }

    /// `tcp_event_data_recv()`: the ATO estimator, rcv_mss and window growth.
    fn event_data_recv(&mut self, cfg: &TcpConfig, now: Instant, r: &TcpRepr, len: u32) {
        self.ack_pending |= ACK_SCHED;
        // tcp_measure_rcv_mss()
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(self.advmss);
        } else {
            if self.ack_pending & ACK_PUSHED != 0 {
                self.ack_pending |= ACK_PUSHED2;
            }
            self.ack_pending |= ACK_PUSHED;
        }
        self.rcv_rtt_measure(now, r, len);
        if self.ato == Duration::ZERO {
            // first data packet: initialise the delayed-ACK engine
            self.incr_quickack(cfg.max_quickacks);
            self.ato = cfg.ato_min;
        } else {
            // inter-arrival time in whole jiffies, as tcp_jiffies32 - lrcvtime
            let m = cfg.jiffy() * (jiffies(cfg, now).wrapping_sub(jiffies(cfg, self.lrcvtime)) as u64);
            if m <= cfg.ato_min / 2 {
                self.ato = self.ato / 2 + cfg.ato_min / 2;
            } else if m < self.ato {
                self.ato = (self.ato / 2 + m).min(self.rto);
            } else if m > self.rto {
                // too long a gap: the sender apparently restarted; ACK quickly
                self.incr_quickack(cfg.max_quickacks);
            }
        }
        self.lrcvtime = now;
        if len >= 128 {
            self.grow_window(cfg, len);
        }
    }

    /// `tcp_grow_window()`.
    fn grow_window(&mut self, cfg: &TcpConfig, len: u32) {
        if self.rcv_ssthresh < self.window_clamp && (self.rcv_ssthresh as i64) < self.tcp_space(cfg) {
            // truesize modelled as 2x payload: win_from_space(truesize) <= len holds
            let incr = (2 * self.advmss).max(2 * len);
            let room = self.window_clamp - self.rcv_ssthresh;
            self.rcv_ssthresh += room.min(incr);
            self.quick |= 1;
        }
    }

    /// `tcp_rcv_rtt_measure_ts()` / `tcp_rcv_rtt_measure()`.
    fn rcv_rtt_measure(&mut self, now: Instant, r: &TcpRepr, len: u32) {
        if self.tstamp_ok {
            if let Some((_, ecr)) = r.timestamp {
                if ecr != 0 && len >= self.rcv_mss {
                    let d = self.ts_now(now).wrapping_sub(ecr) as i32;
                    if d >= 0 {
                        self.rcv_rtt_update((d as u64 * 1000).max(1), false);
                    }
                }
                return;
            }
        }
        match self.rcv_rtt_time {
            Some(t) if !self.rcv_nxt.before(self.rcv_rtt_seq) => {
                self.rcv_rtt_update(now.saturating_since(t).as_micros().max(1), true);
                self.rcv_rtt_seq = self.rcv_nxt + self.rcv_wnd;
                self.rcv_rtt_time = Some(now);
            }
            None => {
                self.rcv_rtt_seq = self.rcv_nxt + self.rcv_wnd;
                self.rcv_rtt_time = Some(now);
            }
            _ => {}
        }
    }
    /// `tcp_rcv_rtt_update()`.
    fn rcv_rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        let m = sample_us.min(u32::MAX as u64 >> 4) as i64;
        let mut new = self.rcv_rtt_us as i64;
        if new != 0 {
            if !win_dep {
                let mm = m - (new >> 3);
                new += mm;
            } else if (m << 3) < new {
                new = m << 3;
            }
        } else {
            new = m << 3;
        }
        self.rcv_rtt_us = new.max(1) as u32;
    }

    /// `__tcp_ack_snd_check()`.
    fn ack_snd_check(&mut self, cfg: &TcpConfig, now: Instant) {
        if self.ack_pending & ACK_SCHED == 0 && self.ack_pending & ACK_NOW == 0 {
            return;
        }
        let more_than_one_mss = self.rcv_nxt.dist(self.rcv_wup) > self.rcv_mss;
        if (more_than_one_mss && self.raw_select_window(cfg) >= self.rcv_wnd)
            || self.in_quickack_mode()
            || self.ack_pending & ACK_NOW != 0
        {
            self.send_ack_now = true;
            return;
        }
        self.send_delayed_ack(cfg, now);
    }

    /// `tcp_send_delayed_ack()`.
    fn send_delayed_ack(&mut self, cfg: &TcpConfig, now: Instant) {
        let mut ato = self.ato.max(cfg.delack_min.min(cfg.ato_min));
        if ato > cfg.delack_min {
            let mut max_ato = Duration::from_millis(500); // HZ/2
            if self.pingpong || self.ack_pending & ACK_PUSHED != 0 {
                max_ato = cfg.delack_max;
            }
            if self.srtt_us != 0 {
                let rtt = round_jiffies(cfg, Duration::from_micros((self.srtt_us >> 3) as u64)).max(cfg.delack_min);
                if rtt < max_ato {
                    max_ato = rtt;
                }
            }
            ato = ato.min(max_ato);
        }
        ato = ato.min(cfg.delack_max);
        let timeout = timer_at(cfg, now, ato);
        let mut timeout = timeout;
        if self.ack_pending & ACK_TIMER != 0 {
            if let Some(old) = self.delack_timer {
                // about to expire: send now
                if old <= timer_at(cfg, now, ato / 4) {
                    self.send_ack_now = true;
                    return;
                }
                if timeout >= old {
                    timeout = old;
                }
            }
        }
        self.ack_pending |= ACK_SCHED | ACK_TIMER;
        self.delack_timer = Some(timeout);
    }

    // ------------------------------------------------------------------------------------
    // Application calls
    // ------------------------------------------------------------------------------------

    /// `write()`: copies what fits in the send buffer.
    pub fn send(&mut self, data: &[u8]) -> Result<usize, SockError> {
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
        let cap = self.sndbuf_payload() as usize;
        let queued = self.snd_ring.len();
        let n = data.len().min(cap.saturating_sub(queued));
        if n < data.len() {
            self.write_blocked = true;
        }
        if n > 0 {
            self.snd_ring.push(&data[..n]);
        }
        Ok(n)
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
        if let Some(b) = buf {
            self.rcv_ring.peek(&mut b[..n]);
        }
        self.rcv_ring.discard(n);
        self.copied_seq = self.copied_seq + n as u32;
        if self.rcv_ring.is_empty() && self.ooo.is_empty() && self.rcv_ring.capacity() > 4096 {
            // drained after a burst: give the memory back (steady streams stay at 4 kB)
            self.rcv_ring = Ring::default();
            self.ooo = Vec::new();
        }
        self.rcv_space_adjust(cfg, now);
        self.cleanup_rbuf(cfg, n);
        Ok(n)
    }

    /// The FIN occupies one sequence number between copied_seq and rcv_nxt once received.
    fn peer_fin_in_window(&self) -> bool {
        self.peer_fin && self.rcv_nxt != self.copied_seq
    }

    /// `read()`.
    pub fn recv(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut [u8]) -> Result<usize, SockError> {
        let max = buf.len();
        let r = self.recv_common(cfg, now, Some(buf), max);
        if self.peer_fin && self.rcv_nxt.dist(self.copied_seq) == 1 {
            // consume the FIN's sequence number so later reads see EOF immediately
            self.copied_seq = self.rcv_nxt;
        }
        r
    }

    /// Read and drop.
    pub fn recv_discard(&mut self, cfg: &TcpConfig, now: Instant, max: usize) -> Result<usize, SockError> {
        let r = self.recv_common(cfg, now, None, max);
        if self.peer_fin && self.rcv_nxt.dist(self.copied_seq) == 1 {
            self.copied_seq = self.rcv_nxt;
        }
        r
    }

    /// `tcp_rcv_space_adjust()`: receive-buffer autotuning, once per receiver RTT.
    fn rcv_space_adjust(&mut self, cfg: &TcpConfig, now: Instant) {
        let rtt_us = (self.rcv_rtt_us >> 3) as u64;
        let elapsed = now.saturating_since(self.rcvq_time).as_micros();
        if self.rcv_rtt_us == 0 || elapsed < rtt_us {
            return;
        }
        let copied = self.copied_seq.dist(self.rcvq_seq);
        let tune = cfg.tcp_moderate_rcvbuf && !self.rcvbuf_locked;
        // (new rcvbuf, new window_clamp) per era; our receive memory counts payload, so
        // "rcvbuf for a window w" is tcp_space_from_win(w) throughout
        let mut grow_to: Option<(u64, u64)> = None;
        match cfg.rcv_space_style {
            RcvSpaceStyle::Legacy => {
                // <= 3.14: space = max(space, 2 * copied); window_clamp = space
                let space = self.rcvq_space.max(copied.saturating_mul(2));
                if space != self.rcvq_space {
                    self.rcvq_space = space;
                    if tune {
                        let buf = cfg.space_from_win(space as i64).max(0) as u64;
                        grow_to = Some((buf, space as u64));
                    }
                }
            }
            RcvSpaceStyle::Steps => {
                // 3.15 - 4.18: 2 * copied + 16 MSS, x1.5 / x2 when the rate grew 25 / 50 %
                if copied > self.rcvq_space {
                    if tune {
                        let sp = self.rcvq_space as u64;
                        let c = copied as u64;
                        let mut rcvwin = c * 2 + 16 * self.advmss as u64;
                        if c >= sp + (sp >> 2) {
                            if c >= sp + (sp >> 1) {
                                rcvwin <<= 1;
                            } else {
                                rcvwin += rcvwin >> 1;
                            }
                        }
                        let buf = cfg.space_from_win(rcvwin.min(u32::MAX as u64) as i64).max(0) as u64;
                        grow_to = Some((buf, rcvwin));
                    }
                    self.rcvq_space = copied;
                }
            }
            RcvSpaceStyle::Modern => {
                // 4.19+: 2 * copied + 16 MSS plus twice the relative growth
                if copied > self.rcvq_space {
                    if tune {
                        let mut rcvwin = (copied as u64) * 2 + 16 * self.advmss as u64;
                        let grow = rcvwin * (copied - self.rcvq_space) as u64 / self.rcvq_space.max(1) as u64;
                        rcvwin += grow * 2;
                        let buf = cfg.space_from_win(rcvwin.min(i64::MAX as u64 / 4) as i64).max(0) as u64;
                        grow_to = Some((buf, u64::MAX));
                    }
                    self.rcvq_space = copied;
                }
            }
        }
        if let Some((buf, clamp)) = grow_to {
            let rcvbuf = buf.min(cfg.tcp_rmem[2] as u64) as u32;
            if rcvbuf > self.rcvbuf {
                self.rcvbuf = rcvbuf;
                // make the window clamp follow along
                let mut clamp = if clamp == u64::MAX {
                    cfg.win_from_space(rcvbuf as i64).max(0) as u32
                } else {
                    clamp.min(u32::MAX as u64) as u32
                };
                if self.user_window_clamp != 0 {
                    clamp = clamp.min(self.user_window_clamp);
                }
                self.window_clamp = clamp.min(65535u32 << self.rcv_wscale);
            }
        }
        self.rcvq_seq = self.copied_seq;
        self.rcvq_time = now;
    }

    /// `tcp_cleanup_rbuf()`: ACK after a read if one is due or the window opened a lot.
    fn cleanup_rbuf(&mut self, cfg: &TcpConfig, copied: usize) {
        let mut time_to_ack = false;
        if self.ack_pending & ACK_SCHED != 0 {
            let drained = self.rcv_nxt.dist(self.copied_seq) == 0;
            if self.rcv_nxt.dist(self.rcv_wup) > self.rcv_mss
                || (copied > 0
                    && (self.ack_pending & ACK_PUSHED2 != 0
                        || (self.ack_pending & ACK_PUSHED != 0 && !self.pingpong))
                    && drained)
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
                    new_win = p.peek(new_win, self.rcv_mss).min(new_win);
                }
                if new_win != 0 && new_win >= 2 * now_win {
                    time_to_ack = true;
                }
            }
        }
        if time_to_ack {
            self.send_ack_now = true;
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
            TcpState::Closed | TcpState::Listen => self.enter_closed(),
            TcpState::SynSent => self.enter_closed(),
            _ if unread && (self.synchronized() || self.state == TcpState::SynRecv) => {
                self.abort(out);
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

    /// Sends RST and closes (`tcp_send_active_reset`).
    pub fn abort(&mut self, out: &mut Out) {
        if matches!(
            self.state,
            TcpState::SynRecv | TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2 | TcpState::CloseWait | TcpState::Closing | TcpState::LastAck
        ) {
            out.rst.push_back(RstSpec {
                src: self.local,
                dst: self.remote,
                seq: self.snd_nxt,
                ack: Some(self.rcv_nxt),
                tos: self.tos,
            });
        }
        self.orphan = true;
        self.enter_closed();
    }

    /// `setsockopt()`.
    pub fn set_option(&mut self, cfg: &TcpConfig, opt: &SockOpt) -> Result<(), SockError> {
        match opt {
            SockOpt::NoDelay(v) => {
                self.nodelay = *v;
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
                if matches!(self.state, TcpState::SynSent | TcpState::SynRecv) && self.tx_syn {
                    // before the SYN/SYN-ACK is built: it shapes the initial window and
                    // the window scale (tcp_select_initial_window)
                    self.select_initial_window(cfg);
                }
            }
            SockOpt::WindowClamp(v) => {
                if *v == 0 {
                    return Err(SockError::BadOption);
                }
                // TCP_WINDOW_CLAMP: at least SOCK_MIN_RCVBUF / 2
                let v = (*v).max(1152);
                self.user_window_clamp = v;
                if self.window_clamp == 0 || self.window_clamp > v {
                    self.window_clamp = v;
                }
                self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
                if matches!(self.state, TcpState::SynSent | TcpState::SynRecv) && self.tx_syn {
                    self.select_initial_window(cfg);
                }
            }
            SockOpt::Congestion(name) => {
                let algo = CongestionAlgo::from_name(name).map_err(|_| SockError::BadOption)?;
                if algo != self.cc.algo() {
                    self.cc = CongCtl::new(algo, &cfg.cubic, &self.tp);
                }
            }
            SockOpt::QuickAck(v) => {
                if *v {
                    self.enter_quickack_mode();
                    if self.ack_pending & ACK_SCHED != 0 {
                        self.send_ack_now = true;
                    }
                }
            }
            SockOpt::Tos(v) => self.tos = *v,
            SockOpt::ThinLinearTimeouts(v) => self.thin_lto = *v,
            SockOpt::ThinDupack(v) => self.thin_dupack = *v,
            SockOpt::MaxSeg(v) => {
                let v = *v as u32;
                if v != 0 && v < TCP_MIN_MSS {
                    return Err(SockError::BadOption);
                }
                // only while the SYN / SYN-ACK has not been sent yet
                if !(matches!(self.state, TcpState::SynSent | TcpState::SynRecv) && self.tx_syn && !self.syn_retrans) {
                    return Err(SockError::InvalidState);
                }
                self.user_mss = v;
                self.advmss = if v != 0 { cfg.advmss().min(v) } else { cfg.advmss() };
                if self.state == TcpState::SynRecv {
                    // the peer's SYN was already negotiated: redo tcp_sync_mss
                    let ts = if self.tstamp_ok { TCPOLEN_TSTAMP_ALIGNED } else { 0 };
                    self.mss_cache = self.peer_mss.min(self.advmss).saturating_sub(ts).max(48);
                    let hint = self.advmss.min(self.mss_cache).min(self.rcv_wnd.max(2 * TCP_MIN_MSS) / 2);
                    self.rcv_mss = hint.clamp(TCP_MIN_MSS, TCP_MSS_DEFAULT);
                }
                self.select_initial_window(cfg);
            }
            SockOpt::EarlyRetrans(v) => {
                if *v > 4 {
                    return Err(SockError::BadOption);
                }
                self.early_retrans_mode = Some(*v);
            }
            SockOpt::Rdb(m) => self.rdb_mode = Some(*m),
        }
        Ok(())
    }

    /// Installs or removes the receiver-side window policy.
    pub fn set_rcv_window_policy(&mut self, p: Option<Box<dyn RcvWindowPolicy>>) {
        self.rcv_policy = p;
    }

    /// `tcp_get_info()`.
    pub fn info(&self) -> TcpInfo {
        TcpInfo {
            state: self.state,
            ca_state: self.ca_state,
            cwnd: self.tp.snd_cwnd,
            ssthresh: self.tp.snd_ssthresh,
            srtt_us: self.srtt_us >> 3,
            rttvar_us: self.mdev_us >> 2,
            rto_us: self.current_rto().as_micros() as u32,
            backoff: self.backoff,
            snd_mss: self.mss_cache,
            rcv_mss: self.rcv_mss,
            unacked: self.packets_out,
            sacked: self.sacked_out,
            lost: self.lost_out,
            retrans: self.retrans_out,
            total_retrans: self.total_retrans,
            snd_wnd: self.snd_wnd,
            rcv_wnd: self.rcv_wnd,
            rcv_ssthresh: self.rcv_ssthresh,
            window_clamp: self.window_clamp,
            sndbuf: self.sndbuf,
            rcvbuf: self.rcvbuf,
            notsent_bytes: self.unsent(),
            bytes_acked: self.bytes_acked,
            bytes_received: self.bytes_received,
            segs_out: self.segs_out,
            segs_in: self.segs_in,
            delivered: self.delivered as u64,
            reordering: self.reordering,
            reord_seen: self.reord_seen,
            dsack_dups: self.dsack_count,
            undo_count: self.undo_count,
            delivery_rate: self.delivery_rate,
            rcv_wscale: self.rcv_wscale,
            snd_wscale: self.snd_wscale,
            congestion: self.cc.algo().name(),
            thin: self.stream_is_thin(),
            rto_count: self.rto_count,
            thin_linear_timeouts: self.thin_lt_count,
            thin_dupack_retrans: self.thin_dupack_count,
            early_retrans: self.er_count,
            tlp_probes: self.tlp_count,
            rdb_packets: self.rdb_packets,
            rdb_bytes_bundled: self.rdb_bytes,
            rdb_loss_cwr: self.rdb_loss_cwr,
        }
    }

    fn current_rto(&self) -> Duration {
        self.rto
    }

    /// `tcp_stream_is_thin()` (include/net/tcp.h): fewer than four packets out and not in
    /// initial slow start (ssthresh still infinite). `packets_out` counts SACKed and lost
    /// segments too, unlike `tcp_packets_in_flight()`.
    pub(crate) fn stream_is_thin(&self) -> bool {
        self.packets_out < 4 && !self.tp.in_initial_slowstart()
    }

    // ------------------------------------------------------------------------------------
    // Timers (tcp_timer.c)
    // ------------------------------------------------------------------------------------

    /// Runs every due timer. A spurious call is a no-op.
    pub fn on_timeout(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        if let Some((t, kind)) = self.xmit_timer {
            if t <= now {
                self.xmit_timer = None;
                match kind {
                    XmitTimer::Retrans => self.retransmit_timer(cfg, now, out),
                    XmitTimer::Probe0 => self.probe_timer(cfg, now),
                    XmitTimer::EarlyRetrans => self.resume_early_retransmit(cfg, now),
                    XmitTimer::LossProbe => self.loss_probe_timer(cfg, now),
                    XmitTimer::ReoTimeout => self.rack_reo_timeout(cfg, now),
                }
            }
        }
        if let Some(t) = self.delack_timer {
            if t <= now {
                self.delack_timer = None;
                self.delack_timer_handler();
            }
        }
        if let Some((t, kind)) = self.sk_timer {
            if t <= now {
                self.sk_timer = None;
                match kind {
                    SkTimer::TimeWait | SkTimer::FinWait2 => {
                        if !self.closed_notified {
                            self.notify(out, SockEvent::Closed);
                            self.closed_notified = true;
                        }
                        self.enter_closed();
                    }
                }
            }
        }
    }

    /// `tcp_delack_timer_handler()`.
    fn delack_timer_handler(&mut self) {
        if self.ack_pending & ACK_TIMER == 0 {
            return;
        }
        if self.ack_pending & ACK_SCHED != 0 {
            if !self.pingpong {
                // delayed ACK missed: inflate ATO
                self.ato = (self.ato * 2).min(self.rto);
            } else {
                // delayed ACK missed in interactive mode: leave ping-pong mode
                self.pingpong = false;
                self.ato = self.ato_min;
            }
            self.send_ack_now = true;
        }
        self.ack_pending &= !ACK_TIMER;
    }

    /// `retransmits_timed_out()` for `tcp_retries2` (time-based, as Linux ≥ 3.x).
    fn write_timeout(&self, cfg: &TcpConfig, now: Instant) -> bool {
        let Some(start) = self.retrans_stamp else { return false };
        let boundary = cfg.tcp_retries2 as u64;
        let rto_base = cfg.rto_min.as_nanos().max(1);
        let thresh = (cfg.rto_max.as_nanos() / rto_base).max(1);
        let linear_backoff_thresh = 63 - thresh.leading_zeros() as u64; // ilog2
        let timeout = if boundary <= linear_backoff_thresh {
            ((2u64 << boundary) - 1) * rto_base
        } else {
            ((2u64 << linear_backoff_thresh) - 1) * rto_base + (boundary - linear_backoff_thresh) * cfg.rto_max.as_nanos()
        };
        now.saturating_since(start).as_nanos() >= timeout
    }

    /// `tcp_retransmit_timer()`.
    fn retransmit_timer(&mut self, cfg: &TcpConfig, now: Instant, out: &mut Out) {
        match self.state {
            TcpState::SynSent | TcpState::SynRecv => {
                let limit = if self.state == TcpState::SynSent { cfg.tcp_syn_retries } else { cfg.tcp_synack_retries };
                if self.retransmits >= limit {
                    self.err = Some(SockError::TimedOut);
                    let ev = if self.state == TcpState::SynSent { SockEvent::ConnectFailed } else { SockEvent::Reset };
                    if self.listener.is_some() {
                        self.orphan = true;
                    }
                    self.notify(out, ev);
                    self.closed_notified = true;
                    self.enter_closed();
                    return;
                }
                self.retransmits += 1;
                self.rto_count += 1;
                self.syn_retrans = true;
                self.total_retrans += 1;
                self.tx_syn = true;
                self.backoff += 1;
                self.rto = (self.rto * 2).min(cfg.rto_max);
                let rto = self.rto;
                self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, rto);
                return;
            }
            TcpState::Closed | TcpState::Listen | TcpState::TimeWait => return,
            _ => {}
        }
        if self.packets_out == 0 {
            return;
        }
        if self.retransmits > 0 && self.write_timeout(cfg, now) {
            self.err = Some(SockError::TimedOut);
            if !self.closed_notified {
                self.notify(out, SockEvent::Reset);
                self.closed_notified = true;
            }
            self.enter_closed();
            return;
        }
        self.enter_loss(cfg, now);
        self.tlp_high_seq = None;
        self.retransmits += 1;
        self.backoff += 1;
        self.rto_count += 1;
        // Linear timeouts (tcp_thin_linear_timeouts, 2.6.34+): a thin stream keeps the
        // un-backed-off RTO (recomputed, srtt + rttvar) for its first
        // TCP_THIN_LINEAR_RETRIES retransmissions, then backs off exponentially. Checked
        // after tcp_enter_loss(), so ssthresh is finite and only packets_out < 4 matters.
        if self.state == TcpState::Established
            && (self.thin_lto || cfg.tcp_thin_linear_timeouts)
            && self.stream_is_thin()
            && self.retransmits <= TCP_THIN_LINEAR_RETRIES
            && self.srtt_us != 0
        {
            self.backoff = 0;
            self.rto = self.base_rto(cfg);
            self.thin_lt_count += 1;
        } else {
            self.rto = (self.rto * 2).min(cfg.rto_max);
        }
        let rto = self.rto;
        self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, rto);
    }

    /// `tcp_send_loss_probe()` (timer side): re-arm the RTO and let the next transmit
    /// opportunity send the probe.
    fn loss_probe_timer(&mut self, cfg: &TcpConfig, now: Instant) {
        if self.packets_out == 0 {
            return;
        }
        let rto = self.rto;
        self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, rto);
        self.tx_tlp = true;
    }

    /// `tcp_probe_timer()`: zero-window probe.
    fn probe_timer(&mut self, cfg: &TcpConfig, now: Instant) {
        if self.packets_out > 0 || !self.has_unsent() {
            self.probes_out = 0;
            self.backoff = 0;
            return;
        }
        // tcp_send_probe0() -> tcp_write_wakeup(): data if any window is left (cut to
        // fit), else a zero-window probe
        if (self.snd_una + self.snd_wnd).after(self.snd_nxt) {
            self.tx_wakeup = true;
            self.probes_out = 0;
            self.backoff = 0;
            return;
        }
        self.tx_probe = true;
        self.probes_out += 1;
        self.backoff += 1;
        let d = self.probe0_when(cfg);
        self.reset_xmit_timer(cfg, now, XmitTimer::Probe0, d);
    }

    // ------------------------------------------------------------------------------------
    // Output (tcp_output.c)
    // ------------------------------------------------------------------------------------

    /// Produces at most one segment.
    pub fn poll_transmit(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        match self.state {
            TcpState::Closed | TcpState::Listen => return None,
            TcpState::SynSent => {
                if self.tx_syn {
                    return Some(self.send_syn(cfg, now, buf, false));
                }
                return None;
            }
            TcpState::SynRecv => {
                if self.tx_syn {
                    return Some(self.send_syn(cfg, now, buf, true));
                }
                if self.send_ack_now {
                    return Some(self.send_pure_ack(cfg, now, buf));
                }
                return None;
            }
            TcpState::TimeWait => {
                if self.send_ack_now {
                    return Some(self.send_pure_ack(cfg, now, buf));
                }
                return None;
            }
            _ => {}
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
        if self.tx_tlp {
            self.tx_tlp = false;
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
            return Some(self.emit(cfg, now, buf, seq, flags::ACK, 0, 0, false));
        }
        if self.send_ack_now {
            return Some(self.send_pure_ack(cfg, now, buf));
        }
        None
    }

    fn send_pure_ack(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>) -> Transmit {
        let seq = self.snd_nxt;
        self.emit(cfg, now, buf, seq, flags::ACK, 0, 0, false)
    }

    fn send_syn(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>, synack: bool) -> Transmit {
        self.tx_syn = false;
        if !self.syn_retrans {
            self.syn_xmit = now;
        }
        if self.xmit_timer.is_none() {
            let rto = if self.retransmits == 0 { cfg.rto_init } else { self.rto };
            self.rto = rto;
            self.reset_xmit_timer(cfg, now, XmitTimer::Retrans, rto);
        }
        self.snd_nxt = self.iss + 1;
        let fl = if synack { flags::SYN | flags::ACK } else { flags::SYN };
        self.emit(cfg, now, buf, self.iss, fl, 0, 0, true)
    }

    /// `tcp_xmit_retransmit_queue()`: resend segments marked lost, as cwnd allows.
    fn xmit_retransmit_queue(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.lost_out <= self.retrans_out || self.rtx.is_empty() {
            return None;
        }
        if self.in_flight() >= self.tp.snd_cwnd {
            return None;
        }
        let wnd_end = self.snd_una + self.snd_wnd;
        let k = self.rtx.iter().position(|s| s.sacked & (LOST | SACKED_RETRANS | SACKED_ACKED) == LOST)?;
        let s = self.rtx[k];
        if !s.seq.before(wnd_end) && s.seq != self.snd_una {
            return None;
        }
        // tcp_retransmit_skb()
        // the stamp of the first retransmission (tcp_retransmit_skb)
        if self.retrans_stamp.is_none() {
            self.retrans_stamp = Some(now);
        }
        {
            let m = &mut self.rtx[k];
            m.sacked |= SACKED_RETRANS | EVER_RETRANS;
            m.xmit = now;
            m.rdb_start = m.seq;
        }
        self.retrans_out += 1;
        self.total_retrans += 1;
        if self.ca_state == CaState::Recovery {
            self.prr_out += 1;
        }
        let off = s.seq.dist(self.snd_buf_seq);
        let len = s.data_len();
        let mut fl = flags::ACK;
        if s.fin {
            fl |= flags::FIN;
        }
        if len > 0 {
            fl |= flags::PSH;
        }
        // tcp_xmit_retransmit_queue(): retransmitting the head restarts the RTO (its
        // icsk_rto keeps any backoff) unless the RACK reordering timer is pending; without
        // this a fast retransmission in flight is retransmitted again by the old timer
        if k == 0 && !matches!(self.xmit_timer, Some((_, XmitTimer::ReoTimeout))) {
            self.rearm_rto(cfg, now);
        }
        Some(self.emit(cfg, now, buf, s.seq, fl, off, len, false))
    }

    /// `tcp_cwnd_validate()`: track whether cwnd is used; RFC 2861 decay when it is not.
    fn cwnd_validate(&mut self, cfg: &TcpConfig, now: Instant, is_cwnd_limited: bool) {
        if !self.snd_una.before(self.cwnd_usage_seq)
            || is_cwnd_limited
            || (!self.is_cwnd_limited && self.packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = self.packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
        if self.tcp_is_cwnd_limited() {
            // network is fed fully
            self.snd_cwnd_used = 0;
            self.snd_cwnd_stamp = now;
        } else {
            // network starves
            self.snd_cwnd_used = self.snd_cwnd_used.max(self.packets_out);
            if cfg.tcp_slow_start_after_idle && now.saturating_since(self.snd_cwnd_stamp) >= self.rto {
                self.cwnd_application_limited(cfg, now);
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

    /// `tcp_send_loss_probe()` (3.10–4.12): new data if any can go (cwnd ignored, Nagle
    /// off), else, once per episode, the last segment again. 3.x sends that copy with
    /// `__tcp_retransmit_skb()`, i.e. without marking it retransmitted, and records
    /// `tlp_high_seq` to tell later whether the probe repaired a loss.
    fn send_loss_probe(&mut self, cfg: &TcpConfig, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let rack = self.rack_on(cfg);
        if self.has_unsent() && !self.fin_sent {
            let t = self.write_xmit(cfg, now, buf, false, true);
            if t.is_some() {
                self.tlp_count += 1;
                if rack {
                    self.tlp_high_seq = Some(self.snd_nxt);
                    self.tlp_retrans = false;
                }
            }
            return t;
        }
        if self.tlp_high_seq.is_some() {
            return None;
        }
        let s = *self.rtx.back()?;
        let len = s.data_len();
        // 3.x: a probe with zero data does not trigger fast recovery; 4.x+ also resends a
        // lone FIN
        if (len == 0 && !(rack && s.fin)) || s.sacked & SACKED_ACKED != 0 {
            return None;
        }
        if rack {
            // 4.x+: tcp_retransmit_skb(), a real retransmission
            if self.retrans_stamp.is_none() {
                self.retrans_stamp = Some(now);
            }
            if s.sacked & SACKED_RETRANS == 0 {
                self.retrans_out += 1;
            }
            self.total_retrans += 1;
            self.tlp_retrans = true;
        }
        if let Some(m) = self.rtx.back_mut() {
            m.xmit = now;
            m.rdb_start = m.seq;
            if rack {
                m.sacked |= SACKED_RETRANS | EVER_RETRANS;
            }
        }
        self.tlp_high_seq = Some(self.snd_nxt);
        self.tlp_count += 1;
        let mut fl = flags::ACK | flags::PSH;
        if s.fin {
            fl |= flags::FIN;
        }
        let off = s.seq.dist(self.snd_buf_seq);
        Some(self.emit(cfg, now, buf, s.seq, fl, off, len, false))
    }

    /// `tcp_stream_is_thin_dpifl()` (2015 RDB patch): packets in flight below
    /// srtt / `tcp_thin_dpifl_itt_lower_bound`.
    fn stream_is_thin_dpifl(&self, cfg: &TcpConfig) -> bool {
        let lim = (self.srtt_us >> 3) as u64 / cfg.tcp_thin_dpifl_itt_lower_bound_us.max(1) as u64;
        (self.in_flight() as u64) < lim
    }

    /// Redundant data bundling: where the packet carrying new segment `[seq, seq+len)`
    /// may start (`seq` = no bundling). 2015 patch (`rdb_can_bundle_test()`): DPIFL thin
    /// test, previous segments walked backwards while the payload stays within
    /// min(MSS, `tcp_rdb_max_bytes`) and at most `tcp_rdb_max_packets` are added. Original
    /// 2008 RDB: `packets_out < 4` (the 2.6.23 patch's thin test, without the later
    /// initial-slow-start clause) and as many previous segments as fit in one MSS.
    fn rdb_bundle_start(&self, cfg: &TcpConfig, seq: SeqNumber, len: u32) -> SeqNumber {
        let mode = self.rdb_mode(cfg);
        if mode == RdbMode::Off || len == 0 || self.rtx.is_empty() {
            return seq;
        }
        let thin = match mode {
            RdbMode::Lcn2015 => self.stream_is_thin_dpifl(cfg),
            _ => self.packets_out < 4,
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
        for (count, s) in (1u32..).zip(self.rtx.iter().rev()) {
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
        // tcp_slow_start_after_idle_check()
        if self.packets_out == 0 && cfg.tcp_slow_start_after_idle {
            let idle = now.saturating_since(self.lsndtime);
            if idle > self.rto {
                self.cwnd_restart(cfg, now, idle);
            }
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
            if self.packets_out == 0 {
                self.check_probe_timer(cfg, now);
            }
            return None;
        }
        // tcp_nagle_test() with Minshall's check (tcp_minshall_check)
        if len < mss && !with_fin && !self.nodelay && self.packets_out > 0 && !wakeup && !probe {
            let minshall = self.snd_sml.after(self.snd_una) && !self.snd_sml.after(self.snd_nxt);
            if minshall {
                return None;
            }
        }
        if self.in_flight() == 0 {
            self.sync_tp(cfg, now);
            let tp = self.tp;
            self.cc.cwnd_event(&tp, CaEvent::TxStart);
        }
        if self.packets_out == 0 {
            self.first_tx_mstamp = now;
            self.delivered_mstamp = now;
        }
        let seq = self.snd_nxt;
        // RDB: the packet may start earlier than the new segment (never with a FIN)
        let rdb_start = if with_fin { seq } else { self.rdb_bundle_start(cfg, seq, len) };
        let seg = TxSeg {
            seq,
            end,
            fin: with_fin,
            sacked: 0,
            xmit: now,
            rdb_start,
            first_tx: self.first_tx_mstamp,
            delivered_mstamp: self.delivered_mstamp,
            delivered: self.delivered,
        };
        self.rtx.push_back(seg);
        let prior_packets = self.packets_out;
        self.packets_out += 1;
        self.snd_nxt = end;
        if with_fin {
            self.fin_sent = true;
        }
        if len < mss {
            self.snd_sml = end; // tcp_minshall_update
        }
        if self.ca_state == CaState::Recovery {
            self.prr_out += 1;
        }
        // tcp_event_new_data_sent(): arm the RTO on the first outstanding packet
        if prior_packets == 0
            || matches!(
                self.xmit_timer,
                Some((_, XmitTimer::Probe0 | XmitTimer::EarlyRetrans | XmitTimer::LossProbe | XmitTimer::ReoTimeout))
            )
        {
            self.rearm_rto(cfg, now);
        }
        // tcp_event_data_sent(): interactive detection
        if now.saturating_since(self.lrcvtime) < self.ato {
            self.pingpong = true;
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
        if len > 0 && len == unsent {
            fl |= flags::PSH;
        }
        let bundled = seq.dist(rdb_start);
        if bundled > 0 {
            self.rdb_packets += 1;
            self.rdb_bytes += bundled as u64;
        }
        let off = rdb_start.dist(self.snd_buf_seq);
        Some(self.emit(cfg, now, buf, rdb_start, fl, off, len + bundled, false))
    }

    /// `tcp_cwnd_restart()`: RFC 2861 — halve cwnd per RTO of idleness, not below IW.
    fn cwnd_restart(&mut self, cfg: &TcpConfig, now: Instant, idle: Duration) {
        let restart = cfg.init_cwnd.min(self.tp.snd_cwnd);
        self.sync_tp(cfg, now);
        self.tp.snd_ssthresh = self.current_ssthresh();
        let mut cwnd = self.tp.snd_cwnd;
        let mut delta = idle.as_nanos() as i128 - self.rto.as_nanos() as i128;
        while delta > 0 && cwnd > restart {
            cwnd >>= 1;
            delta -= self.rto.as_nanos() as i128;
        }
        self.tp.snd_cwnd = cwnd.max(restart);
        self.snd_cwnd_stamp = now;
        self.snd_cwnd_used = 0;
    }

    /// Builds one segment into `buf` after the headroom (`tcp_transmit_skb`).
    #[allow(clippy::too_many_arguments)]
    fn emit(
        &mut self,
        cfg: &TcpConfig,
        now: Instant,
        buf: &mut Vec<u8>,
        seq: SeqNumber,
        fl: u8,
        off: u32,
        len: u32,
        syn: bool,
    ) -> Transmit {
        let mut r = TcpRepr::new(self.local.port(), self.remote.port());
        r.seq = seq;
        r.flags = fl;
        if fl & flags::ACK != 0 {
            r.ack = self.rcv_nxt;
        }
        if syn {
            r.mss = Some(self.advmss.min(65535) as u16);
            let synack = fl & flags::ACK != 0;
            let ws = if synack { self.wscale_ok } else { cfg.tcp_window_scaling };
            if ws {
                r.window_scale = Some(self.rcv_wscale);
            }
            let sack = if synack { self.sack_ok } else { cfg.tcp_sack };
            r.sack_permitted = sack;
            let ts = if synack { self.tstamp_ok } else { cfg.tcp_timestamps };
            if ts {
                r.timestamp = Some((self.ts_now(now), if synack { self.ts_recent } else { 0 }));
            }
            // RFC 7323: the window in a SYN is never scaled
            if let Some(p) = self.rcv_policy.as_mut() {
                let lim = p.limit(now, self.rcv_wnd, self.rcv_mss);
                self.rcv_wnd = self.rcv_wnd.min(lim);
            }
            r.window = self.rcv_wnd.min(65535) as u16;
        } else {
            r.window = self.select_window(cfg, now);
            if self.tstamp_ok {
                r.timestamp = Some((self.ts_now(now), self.ts_recent));
            }
            if self.sack_ok && fl & flags::RST == 0 {
                if let Some((l, rr)) = self.dsack.take() {
                    if cfg.tcp_dsack {
                        r.sack.push(l, rr);
                    }
                }
                for &(l, rr) in self.sacks.as_slice() {
                    r.sack.push(l, rr);
                }
            }
        }
        let hl = r.header_len();
        buf.truncate(HEADROOM);
        buf.resize(HEADROOM + hl, 0);
        r.emit_header(&mut buf[HEADROOM..]);
        if len > 0 {
            self.snd_ring.copy_out(off as usize, len as usize, buf);
        }
        let src = *self.local.ip();
        let dst = *self.remote.ip();
        wire::fill_checksum(&mut buf[HEADROOM..], src, dst);
        self.segs_out += 1;
        if fl & flags::ACK != 0 {
            // tcp_event_ack_sent()
            if self.quick > 0 && self.ack_pending & ACK_SCHED != 0 {
                self.quick -= 1;
                if self.quick == 0 {
                    self.ato = self.ato_min;
                }
            }
            self.ack_pending = 0;
            self.delack_timer = None;
            self.send_ack_now = false;
        }
        Transmit { src, dst, proto: wirelab_wire::ip_proto::TCP, tos: self.tos, dont_frag: true, ..Default::default() }
    }

    /// Approximate heap + struct bytes held by this connection.
    pub fn memory_bytes(&self) -> usize {
        core::mem::size_of::<Conn>()
            + self.snd_ring.capacity()
            + self.rcv_ring.capacity()
            + self.rtx.capacity() * core::mem::size_of::<TxSeg>()
            + self.ooo.capacity() * core::mem::size_of::<(SeqNumber, SeqNumber)>()
            + if matches!(self.cc, CongCtl::Cubic(_)) { core::mem::size_of::<crate::cc::Cubic>() } else { 0 }
    }

    /// True if the connection may have something to transmit right now.
    pub fn wants_transmit(&self) -> bool {
        self.send_ack_now
            || self.tx_syn
            || self.tx_probe
            || self.tx_wakeup
            || self.tx_tlp
            || (self.synchronized() && (self.has_unsent() || self.lost_out > self.retrans_out))
    }
}

#[cfg(test)]
pub(crate) mod test_access {
    //! Crate-internal access for unit tests in other modules.
    use super::*;
    impl Conn {
        pub fn t_srtt_us(&self) -> u32 {
            self.srtt_us
        }
        pub fn t_rttvar_us(&self) -> u32 {
            self.rttvar_us
        }
        pub fn t_rto(&self) -> Duration {
            self.rto
        }
        pub fn t_seqs(&self) -> (SeqNumber, SeqNumber, SeqNumber) {
            (self.rcv_nxt, self.snd_una, self.snd_nxt)
        }
        pub fn t_set_rto(&mut self, cfg: &TcpConfig) {
            self.set_rto(cfg)
        }
        /// Leaves initial slow start (as after an earlier loss): sets cwnd and ssthresh.
        pub fn t_set_cwnd(&mut self, cwnd: u32, ssthresh: u32) {
            self.tp.snd_cwnd = cwnd;
            self.tp.snd_ssthresh = ssthresh;
        }
    }
    impl Conn {
        /// `__tcp_select_window()` with `used` bytes queued in a buffer of `rcvbuf`.
        pub fn t_window_with(&mut self, cfg: &TcpConfig, rcvbuf: u32, used: u32) -> u32 {
            let (rb, cs, rs, wc) = (self.rcvbuf, self.copied_seq, self.rcv_ssthresh, self.window_clamp);
            self.rcvbuf = rcvbuf;
            self.copied_seq = self.rcv_nxt - used;
            self.window_clamp = u32::MAX >> 1;
            self.rcv_ssthresh = u32::MAX >> 1;
            let w = self.raw_select_window(cfg);
            self.rcvbuf = rb;
            self.copied_seq = cs;
            self.rcv_ssthresh = rs;
            self.window_clamp = wc;
            w
        }
    }
}
