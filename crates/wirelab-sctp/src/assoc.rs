//! One SCTP association (RFC 9260): state machine, send queue, receive reassembly,
//! per-path congestion control, retransmission, heartbeats and failover.
//!
//! The association owns no I/O: the endpoint feeds it parsed packets and timer ticks and
//! drains its packets. Names follow Linux `net/sctp/` (`outqueue.c`, `sm_statefuns.c`,
//! `transport.c`, `associola.c`, `ulpqueue.c`) and the RFC sections are cited inline.
use crate::config::{Autotune, BacklogDef, SctpConfig, SndbufAdv};
use crate::types::*;
use crate::wire::*;
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use wirelab_core::{Duration, Instant, Rng, SockEvent, Transmit};
use wirelab_wire::ip_proto;

/// Bytes of a HEARTBEAT info value: path index, nonce, send time.
pub(crate) const HB_INFO_LEN: usize = 24;
/// Duplicate TSNs remembered for the next SACK (Linux `SCTP_MAX_DUP_TSNS`).
const MAX_DUPS: usize = 16;
/// Gap blocks in one SACK (Linux `SCTP_MAX_GABS`; TSNs beyond the 16th gap go unreported).
const MAX_GAPS: usize = 16;
/// TSNs tracked beyond the cumulative ack (Linux `SCTP_TSN_MAP_SIZE`; later ones dropped).
const MAX_RX_SPAN: usize = 4096;
/// Linux `SCTP_DEFAULT_MINWINDOW`.
const SCTP_DEFAULT_MINWINDOW: u32 = 1500;
/// Linux `SCTP_DEFAULT_RWND_SHIFT`: window-update SACK threshold is rcvbuf >> 4.
const SCTP_DEFAULT_RWND_SHIFT: u32 = 4;
/// Maximum addresses per side carried in a state cookie.
pub(crate) const MAX_ADDRS: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxState {
    Unsent,
    InFlight,
    GapAcked,
    NeedRtx,
}

#[derive(Clone, Copy, Debug)]
struct TxChunk {
    tsn: Tsn,
    off: u64,
    len: u32,
    charge: u32,
    stream: u16,
    ssn: u16,
    flags: u8,
    state: TxState,
    path: u8,
    rtx_path: u8,
    misses: u8,
    rtx: bool,
    fast: bool,
    fast_done: bool,
    probe: bool,
    sent_at: Instant,
}

/// One destination transport address (Linux `struct sctp_transport`).
#[derive(Clone, Debug)]
pub(crate) struct Path {
    pub addr: Ipv4Addr,
    pub local: Ipv4Addr,
    pub state: PathState,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub pba: u32,
    pub flight: u32,
    srtt: Option<u64>,
    rttvar: u64,
    pub rto: Duration,
    pub error_count: u32,
    rtt_pending: bool,
    t3: Option<Instant>,
    hb_at: Option<Instant>,
    hb_outstanding: bool,
    hb_nonce: u64,
    last_data_send: Instant,
    hb_armed_from: Instant,
    burst_cap: u32,
    acked: u32,
    flight_before: u32,
}

impl Path {
    fn new(addr: Ipv4Addr, local: Ipv4Addr, cfg: &SctpConfig, ssthresh: u32) -> Path {
        let mtu = cfg.pmtu;
        Path {
            addr,
            local,
            state: PathState::Active,
            // RFC 9260 §7.2.1: IW = min(4·MTU, max(2·MTU, 4380)).
            cwnd: (4 * mtu).min((2 * mtu).max(4380)),
            ssthresh,
            pba: 0,
            flight: 0,
            srtt: None,
            rttvar: 0,
            rto: cfg.rto_initial,
            error_count: 0,
            rtt_pending: false,
            t3: None,
            hb_at: None,
            hb_outstanding: false,
            hb_nonce: 0,
            last_data_send: Instant::ZERO,
            hb_armed_from: Instant::ZERO,
            burst_cap: u32::MAX,
            acked: 0,
            flight_before: 0,
        }
    }

    /// RFC 9260 §6.3.1 (C2/C3); Linux `sctp_transport_update_rto()`.
    fn rtt_sample(&mut self, r: Duration, cfg: &SctpConfig) {
        let r = r.as_nanos();
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let d = s.abs_diff(r);
                self.rttvar = self.rttvar - (self.rttvar >> cfg.rto_beta_exp) + (d >> cfg.rto_beta_exp);
                self.srtt = Some(s - (s >> cfg.rto_alpha_exp) + (r >> cfg.rto_alpha_exp));
            }
        }
        // Linux: "if (!tp->rttvar) tp->rttvar = 1 jiffy" (clock granularity G).
        if self.rttvar == 0 {
            self.rttvar = 1_000_000;
        }
        let rto = Duration::from_nanos(self.srtt.unwrap_or(0) + 4 * self.rttvar);
        self.rto = rto.max(cfg.rto_min).min(cfg.rto_max);
        self.rtt_pending = false;
    }

    fn info(&self, primary: bool) -> PathInfo {
        PathInfo {
            addr: self.addr,
            local: self.local,
            state: self.state,
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            flight: self.flight,
            rto_ms: self.rto.as_nanos() as f64 / 1e6,
            srtt_ms: self.srtt.unwrap_or(0) as f64 / 1e6,
            error_count: self.error_count,
            partial_bytes_acked: self.pba,
            primary,
        }
    }
}

/// A pending control chunk.
#[derive(Clone, Debug)]
enum Ctrl {
    Init,
    CookieEcho,
    CookieAck,
    Heartbeat([u8; HB_INFO_LEN]),
    HeartbeatAck(Vec<u8>),
    Shutdown,
    ShutdownAck,
    ShutdownComplete,
    Abort(u16),
    Error(Vec<u8>),
    SndbufAdv { flags: u8, value: Option<u32> },
}

#[derive(Debug, Default)]
struct RxSlot {
    /// 0 empty, 1 held, 2 consumed (or discarded).
    st: u8,
    flags: u8,
    stream: u16,
    ssn: u16,
    len: u32,
    read: u32,
    charge: u32,
    buf: Vec<u8>,
}

#[derive(Clone, Copy, Debug)]
struct ReadyMsg {
    stream: u16,
    cur: Tsn,
    last: Option<Tsn>,
}

#[derive(Clone, Debug, Default)]
struct InStream {
    next_ssn: u16,
    /// Complete ordered messages waiting for earlier SSNs: (ssn, first, last).
    waiting: Vec<(u16, Tsn, Tsn)>,
}

/// Everything the endpoint learned from a valid state cookie.
#[derive(Clone, Debug)]
pub(crate) struct CookieData {
    pub created: Instant,
    pub life: Duration,
    pub my_tag: u32,
    pub peer_tag: u32,
    pub my_itsn: u32,
    pub peer_itsn: u32,
    pub peer_rwnd: u32,
    pub os: u16,
    pub is: u16,
    pub lport: u16,
    pub pport: u16,
    pub peer_addrs: Vec<Ipv4Addr>,
}

/// Socket-level settings kept with the association (one-to-one style).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SockSettings {
    pub nodelay: bool,
    pub sndbuf: u64,
    pub rcvbuf: u64,
    pub sndbuf_locked: bool,
    pub rcvbuf_locked: bool,
    pub max_burst: u32,
}

impl SockSettings {
    pub fn new(cfg: &SctpConfig) -> Self {
        // Seed 001: with autotuning the socket starts from sctp_{w,r}mem[1] instead of
        // net.core.{w,r}mem_default (which every real release uses).
        let auto = cfg.autotune != Autotune::Off;
        SockSettings {
            nodelay: false,
            sndbuf: if auto { cfg.sctp_wmem[1] } else { cfg.wmem_default },
            rcvbuf: if auto { cfg.sctp_rmem[1] } else { cfg.rmem_default },
            sndbuf_locked: false,
            rcvbuf_locked: false,
            max_burst: cfg.max_burst,
        }
    }
}

/// One association and its one-to-one socket.
pub(crate) struct Assoc {
    pub state: AssocState,
    pub lport: u16,
    pub pport: u16,
    pub local_addrs: Vec<Ipv4Addr>,
    pub paths: Vec<Path>,
    pub primary: usize,
    active: usize,
    pub my_tag: u32,
    pub peer_tag: u32,
    pub sock: SockSettings,
    pub events: Vec<SockEvent>,
    /// Heap bookkeeping for the endpoint (lazy deletion).
    pub armed: Option<Instant>,
    pub in_dirty: bool,
    pub listener: Option<u32>,

    // handshake
    init_params: Vec<u8>,
    cookie: Vec<u8>,
    t1: Option<Instant>,
    t1_count: u32,
    t1_rto: Duration,
    init_preservative_ms: u32,
    t2: Option<Instant>,
    t2_count: u32,
    /// Path the last SHUTDOWN / SHUTDOWN-ACK went to (`asoc->shutdown_last_sent_to`).
    t2_path: usize,

    // send side (outqueue)
    ctrl: VecDeque<(u8, Ctrl)>,
    q: VecDeque<TxChunk>,
    first_unsent: usize,
    rtx_count: usize,
    next_tsn: Tsn,
    cum_acked: Tsn,
    sbuf: Vec<u8>,
    sbuf_base: u64,
    sbuf_end: u64,
    out_ssn: Vec<u16>,
    pub os: u16,
    pub out_qlen: u64,
    pub outstanding: u64,
    pub sndbuf_used: u64,
    pub peer_rwnd: u32,
    fast_recovery: Option<Tsn>,
    want_writable: bool,
    /// `msg_len` of the message a blocked writer waits to fit (`sctp_wait_for_sndbuf`).
    blocked_len: u64,
    pub error_count: u32,
    adv_timer: Option<Instant>,

    // receive side (tsnmap + ulpq)
    rx: VecDeque<RxSlot>,
    rx_base: Tsn,
    cum_tsn: Tsn,
    dups: [Tsn; MAX_DUPS],
    n_dups: usize,
    /// Inbound stream state, grown on first use (a peer may announce 65535 streams).
    in_streams: Vec<InStream>,
    /// Negotiated inbound streams.
    n_in: u16,
    ready: VecDeque<ReadyMsg>,
    pd_first: Option<Tsn>,
    pool: Vec<Vec<u8>>,
    pub rwnd: u32,
    a_rwnd_sent: u32,
    pub rx_mem: u64,
    sack_now: bool,
    sack_timer: Option<Instant>,
    sack_pkts: u32,
    data_from: usize,
    peer_shutdown: bool,
    reset: bool,
    /// Autotuning receiver state (TCP's rcvq_space): target, window start, bytes copied.
    rcvq_space: u64,
    rcvq_time: Instant,
    rcvq_copied: u64,
    pub stats: AssocStats,
}

fn common_prefix(a: Ipv4Addr, b: Ipv4Addr) -> u32 {
    (u32::from(a) ^ u32::from(b)).leading_zeros()
}

/// Source address for a peer address: the source of the longest route matching the peer
/// among the bound addresses (Linux `sctp_v4_get_dst`: route lookup, then a bound address
/// that matches the route's source); without routes, the local address sharing the
/// longest prefix with the peer.
pub(crate) fn pick_local(cfg: &SctpConfig, locals: &[Ipv4Addr], peer: Ipv4Addr) -> Ipv4Addr {
    let p = u32::from(peer);
    let routed = cfg
        .source_routes
        .iter()
        .filter(|(net, len, src)| {
            let m = if *len == 0 { 0 } else { u32::MAX << (32 - *len as u32) };
            p & m == u32::from(*net) & m && locals.contains(src)
        })
        .max_by_key(|(net, len, _)| (*len, std::cmp::Reverse(u32::from(*net))));
    if let Some(&(_, _, src)) = routed {
        return src;
    }
    let mut best = locals.first().copied().unwrap_or(Ipv4Addr::UNSPECIFIED);
    for &l in locals {
        if common_prefix(l, peer) > common_prefix(best, peer) {
            best = l;
        }
    }
    best
}

impl Assoc {
    #[allow(clippy::too_many_arguments)]
    fn base(cfg: &SctpConfig, sock: SockSettings, lport: u16, pport: u16, local_addrs: Vec<Ipv4Addr>, my_tag: u32, my_itsn: u32) -> Assoc {
        let rwnd = if sock.rcvbuf < SCTP_DEFAULT_MINWINDOW as u64 { SCTP_DEFAULT_MINWINDOW } else { (sock.rcvbuf / 2).min(u32::MAX as u64) as u32 };
        Assoc {
            state: AssocState::Closed,
            lport,
            pport,
            local_addrs,
            paths: Vec::new(),
            primary: 0,
            active: 0,
            my_tag,
            peer_tag: 0,
            sock,
            events: Vec::new(),
            armed: None,
            in_dirty: false,
            listener: None,
            init_params: Vec::new(),
            cookie: Vec::new(),
            t1: None,
            t1_count: 0,
            t1_rto: cfg.rto_initial,
            init_preservative_ms: 0,
            t2: None,
            t2_count: 0,
            t2_path: 0,
            ctrl: VecDeque::new(),
            q: VecDeque::new(),
            first_unsent: 0,
            rtx_count: 0,
            next_tsn: Tsn(my_itsn),
            cum_acked: Tsn(my_itsn).prev(),
            sbuf: Vec::new(),
            sbuf_base: 0,
            sbuf_end: 0,
            out_ssn: Vec::new(),
            os: cfg.out_streams,
            out_qlen: 0,
            outstanding: 0,
            sndbuf_used: 0,
            peer_rwnd: 65535,
            fast_recovery: None,
            want_writable: false,
            blocked_len: 0,
            error_count: 0,
            adv_timer: None,
            rx: VecDeque::new(),
            rx_base: Tsn(0),
            cum_tsn: Tsn(0),
            dups: [Tsn(0); MAX_DUPS],
            n_dups: 0,
            in_streams: Vec::new(),
            n_in: 1,
            ready: VecDeque::new(),
            pd_first: None,
            pool: Vec::new(),
            rwnd,
            a_rwnd_sent: rwnd,
            rx_mem: 0,
            sack_now: false,
            sack_timer: None,
            sack_pkts: 0,
            data_from: 0,
            peer_shutdown: false,
            reset: false,
            rcvq_space: 0,
            rcvq_time: Instant::ZERO,
            rcvq_copied: 0,
            stats: AssocStats::default(),
        }
    }

    /// Active open: INIT queued, T1-init armed (RFC 9260 §5.1 A).
    #[allow(clippy::too_many_arguments)]
    pub fn new_client(now: Instant, cfg: &SctpConfig, sock: SockSettings, lport: u16, pport: u16, local_addrs: Vec<Ipv4Addr>, peer_addrs: &[Ipv4Addr], rng: &mut Rng) -> Assoc {
        let my_tag = nonzero(rng);
        let itsn = rng.next_u32();
        let mut a = Self::base(cfg, sock, lport, pport, local_addrs, my_tag, itsn);
        for &p in peer_addrs {
            let l = pick_local(cfg, &a.local_addrs, p);
            a.paths.push(Path::new(p, l, cfg, u32::MAX));
        }
        a.build_init_params();
        a.state = AssocState::CookieWait;
        a.ctrl.push_back((0, Ctrl::Init));
        a.t1 = Some(now + a.t1_rto);
        a
    }

    /// Passive open from a verified cookie (RFC 9260 §5.1 D): ESTABLISHED, COOKIE-ACK queued.
    pub fn new_server(now: Instant, cfg: &SctpConfig, sock: SockSettings, c: &CookieData, local_addrs: Vec<Ipv4Addr>, rng: &mut Rng) -> Assoc {
        let mut a = Self::base(cfg, sock, c.lport, c.pport, local_addrs, c.my_tag, c.my_itsn);
        a.peer_tag = c.peer_tag;
        for &p in &c.peer_addrs {
            let l = pick_local(cfg, &a.local_addrs, p);
            a.paths.push(Path::new(p, l, cfg, initial_ssthresh(cfg, c.peer_rwnd)));
        }
        a.setup_peer(c.peer_itsn, c.peer_rwnd, c.os, c.is);
        // The COOKIE-ACK is queued when the endpoint feeds the COOKIE-ECHO packet in.
        a.enter_established(now, cfg, rng);
        a
    }

    fn build_init_params(&mut self) {
        let mut p = vec![0u8; 4 * (8 * MAX_ADDRS + 8)];
        let mut at = 0;
        if self.local_addrs.len() > 1 {
            for &l in self.local_addrs.iter().take(MAX_ADDRS) {
                ParamRepr::Ipv4Addr(l).emit(&mut p, &mut at);
            }
        }
        if self.init_preservative_ms > 0 {
            ParamRepr::CookiePreservative(self.init_preservative_ms).emit(&mut p, &mut at);
        }
        ParamRepr::SupportedAddrTypes(&param::IPV4_ADDR.to_be_bytes()).emit(&mut p, &mut at);
        p.truncate(at);
        self.init_params = p;
    }

    fn setup_peer(&mut self, peer_itsn: u32, peer_rwnd: u32, os: u16, is: u16) {
        self.rx_base = Tsn(peer_itsn);
        self.cum_tsn = Tsn(peer_itsn).prev();
        self.peer_rwnd = peer_rwnd;
        self.os = os.max(1);
        self.out_ssn = vec![0; self.os as usize];
        self.n_in = is.max(1);
        self.in_streams = Vec::new();
    }

    fn enter_established(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        self.state = AssocState::Established;
        self.t1 = None;
        for i in 0..self.paths.len() {
            self.arm_hb(i, now, cfg, rng);
        }
        if matches!(cfg.sndbuf_adv, SndbufAdv::V1Bytes | SndbufAdv::V2Percent | SndbufAdv::V3Decile) {
            self.adv_timer = Some(now + cfg.sndbuf_adv_interval);
        }
        self.update_active();
    }

    // -------------------------------------------------------------------------------
    // timers
    // -------------------------------------------------------------------------------

    /// Earliest armed timer.
    pub fn next_timeout(&self) -> Option<Instant> {
        let mut t: Option<Instant> = None;
        let mut m = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |y: Instant| y.min(x)));
            }
        };
        m(self.t1);
        m(self.t2);
        m(self.sack_timer);
        m(self.adv_timer);
        for p in &self.paths {
            m(p.t3);
            m(p.hb_at);
        }
        t
    }

    /// Linux `sctp_transport_reset_hb_timer()`: timeout = RTO (+ hb_interval unless PF),
    /// plus a uniform jitter in [0, RTO).
    fn arm_hb(&mut self, i: usize, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        let p = &mut self.paths[i];
        let mut to = p.rto;
        if p.state != PathState::PotentiallyFailed {
            to += cfg.hb_interval;
        }
        let to = to.max(Duration::from_millis(200));
        let jitter = Duration::from_nanos(rng.below(p.rto.as_nanos().max(1)));
        p.hb_at = Some(now + to + jitter);
        p.hb_armed_from = now;
    }

    /// Handles every expired timer (no-op when none is due).
    pub fn on_timeout(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        if self.t1.is_some_and(|t| t <= now) {
            self.t1_expired(now, cfg);
        }
        if self.t2.is_some_and(|t| t <= now) {
            self.t2_expired(now, cfg, rng);
        }
        if self.sack_timer.is_some_and(|t| t <= now) {
            self.sack_timer = None;
            self.sack_now = true;
        }
        if self.adv_timer.is_some_and(|t| t <= now) {
            self.adv_timer_expired(now, cfg);
        }
        for i in 0..self.paths.len() {
            if self.state == AssocState::Closed {
                return;
            }
            if self.paths[i].t3.is_some_and(|t| t <= now) {
                self.t3_expired(i, now, cfg, rng);
            }
            if self.paths[i].hb_at.is_some_and(|t| t <= now) {
                self.hb_expired(i, now, cfg, rng);
            }
        }
    }

    /// T1-init / T1-cookie (RFC 9260 §5.1 C, §6.3.3 rules for INIT: RTO doubles).
    fn t1_expired(&mut self, now: Instant, cfg: &SctpConfig) {
        self.t1_count += 1;
        if self.t1_count > cfg.max_init_retransmits {
            self.t1 = None;
            self.fail(SockEvent::ConnectFailed, false);
            return;
        }
        self.t1_rto = (self.t1_rto * 2).min(cfg.rto_max);
        let c = if self.state == AssocState::CookieWait { Ctrl::Init } else { Ctrl::CookieEcho };
        if !self.ctrl.iter().any(|(_, x)| std::mem::discriminant(x) == std::mem::discriminant(&c)) {
            self.ctrl.push_back((self.primary as u8, c));
        }
        self.t1 = Some(now + self.t1_rto);
    }

    /// T2-shutdown (RFC 9260 §9.2): resend SHUTDOWN or SHUTDOWN-ACK. As Linux
    /// `sctp_sf_t2_timer_expire()`: strike the path it last went to (error counters, PF,
    /// RTO backoff), then `sctp_cmd_setup_t2()` sends it to an alternate path
    /// (`sctp_assoc_choose_alter_transport`), so a shutdown survives a failed primary.
    fn t2_expired(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        self.t2_count += 1;
        if self.error_count >= cfg.association_max_retrans || self.t2_count > cfg.association_max_retrans {
            self.t2 = None;
            self.fail(SockEvent::Reset, true);
            return;
        }
        let last = self.t2_path.min(self.paths.len().saturating_sub(1));
        self.strike(last, now, cfg, rng);
        let p = self.alternate(last);
        let c = if self.state == AssocState::ShutdownSent { Ctrl::Shutdown } else { Ctrl::ShutdownAck };
        self.ctrl.push_back((p as u8, c));
        self.t2_path = p;
        self.t2 = Some(now + self.paths[p].rto);
    }

    /// T3-rtx (RFC 9260 §6.3.3; Linux `sctp_sf_do_6_3_3_rtx` + `sctp_retransmit(T3_RTX)`).
    fn t3_expired(&mut self, i: usize, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        self.paths[i].t3 = None;
        if self.paths[i].flight == 0 {
            return;
        }
        self.stats.t3_expiries += 1;
        if self.error_count >= cfg.association_max_retrans {
            self.fail(SockEvent::Reset, true);
            return;
        }
        self.strike(i, now, cfg, rng);
        let mtu = cfg.pmtu;
        let p = &mut self.paths[i];
        // E1 (sctp_transport_lower_cwnd SCTP_LOWER_CWND_T3_RTX)
        p.ssthresh = (p.cwnd / 2).max(4 * mtu);
        p.cwnd = mtu;
        p.pba = 0;
        p.rtt_pending = false;
        self.fast_recovery = None;
        let alt = self.alternate(i);
        self.mark_rtx(|c| c.path as usize == i, alt, false);
    }

    fn hb_expired(&mut self, i: usize, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        // Data sent since arming means the path is not idle: push the timer out instead.
        let p = &self.paths[i];
        if !p.hb_outstanding && p.last_data_send > p.hb_armed_from && p.state == PathState::Active {
            let from = p.last_data_send;
            self.arm_hb(i, from, cfg, rng);
            if self.paths[i].hb_at.is_some_and(|t| t > now) {
                return;
            }
        }
        if !matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownReceived) {
            self.paths[i].hb_at = None;
            return;
        }
        if self.paths[i].hb_outstanding {
            // Linux sctp_sf_sendbeat_8_3: overall error check, then strike.
            if self.error_count >= cfg.association_max_retrans {
                self.fail(SockEvent::Reset, true);
                return;
            }
            self.strike(i, now, cfg, rng);
        }
        let nonce = rng.next_u64();
        let p = &mut self.paths[i];
        // SCTP_CMD_TRANSPORT_IDLE → sctp_transport_lower_cwnd(SCTP_LOWER_CWND_INACTIVE):
        // an idle path decays to max(cwnd/2, 4·MTU), ssthresh = cwnd (errata 3.27.2).
        if p.flight == 0 {
            p.cwnd = (p.cwnd / 2).max(4 * cfg.pmtu);
            p.ssthresh = p.cwnd;
        }
        p.hb_nonce = nonce;
        p.hb_outstanding = true;
        let mut info = [0u8; HB_INFO_LEN];
        let mut at = 0;
        let mut v = [0u8; HB_INFO_LEN - 4];
        v[0..2].copy_from_slice(&(i as u16).to_be_bytes());
        v[4..12].copy_from_slice(&nonce.to_be_bytes());
        v[12..20].copy_from_slice(&now.as_nanos().to_be_bytes());
        put_tlv(&mut info, &mut at, param::HEARTBEAT_INFO, &v);
        self.ctrl.push_back((i as u8, Ctrl::Heartbeat(info)));
        self.stats.heartbeats_sent += 1;
        self.arm_hb(i, now, cfg, rng);
    }

    /// Linux `sctp_do_8_2_transport_strike()` (6.x): error counters, PF when
    /// `pf_retrans < error_count < pathmaxrxt` (heartbeats then every RTO), INACTIVE when
    /// `error_count > pathmaxrxt`, RTO doubled.
    fn strike(&mut self, i: usize, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        self.error_count += 1;
        let p = &mut self.paths[i];
        if p.state != PathState::Inactive {
            p.error_count += 1;
        }
        let mut to_pf = false;
        if cfg.pf_enable && p.state == PathState::Active && p.error_count < cfg.path_max_retrans && p.error_count > cfg.pf_retrans {
            p.state = PathState::PotentiallyFailed;
            to_pf = true;
        }
        if p.error_count > cfg.path_max_retrans && p.state != PathState::Inactive {
            p.state = PathState::Inactive;
        }
        p.rto = (p.rto * 2).min(cfg.rto_max);
        if to_pf {
            self.arm_hb(i, now, cfg, rng);
        }
        self.update_active();
    }

    /// Linux `sctp_select_active_and_retran_path()`, simplified: primary if active, else the
    /// first active path, else the potentially-failed path with fewest errors, else primary.
    fn update_active(&mut self) {
        if self.paths.is_empty() {
            return;
        }
        if self.paths[self.primary].state == PathState::Active {
            self.active = self.primary;
            return;
        }
        if let Some(i) = self.paths.iter().position(|p| p.state == PathState::Active) {
            self.active = i;
            return;
        }
        let pf = self.paths.iter().enumerate().filter(|(_, p)| p.state == PathState::PotentiallyFailed).min_by_key(|(i, p)| (p.error_count, *i)).map(|(i, _)| i);
        self.active = pf.unwrap_or(self.primary);
    }

    /// The next usable path after `i` for retransmissions (RFC 9260 §6.4.1).
    fn alternate(&self, i: usize) -> usize {
        let n = self.paths.len();
        for k in 1..n {
            let j = (i + k) % n;
            if self.paths[j].state == PathState::Active {
                return j;
            }
        }
        if self.paths[i].state != PathState::Active {
            return self.active;
        }
        i
    }

    fn mark_rtx(&mut self, pred: impl Fn(&TxChunk) -> bool, to: usize, fast: bool) -> usize {
        let mut n = 0;
        for k in 0..self.first_unsent {
            let c = self.q[k];
            if c.state != TxState::InFlight || !pred(&c) {
                continue;
            }
            let p = &mut self.paths[c.path as usize];
            p.flight -= c.len;
            if c.probe {
                p.rtt_pending = false;
            }
            self.outstanding -= c.len as u64;
            self.peer_rwnd = self.peer_rwnd.saturating_add(c.len);
            let c = &mut self.q[k];
            c.state = TxState::NeedRtx;
            c.rtx_path = to as u8;
            c.probe = false;
            c.fast = fast;
            if fast {
                c.fast_done = true;
            }
            self.rtx_count += 1;
            n += 1;
        }
        n
    }

    /// Association failure: ABORT to the peer (if `send_abort`), event, CLOSED.
    fn fail(&mut self, ev: SockEvent, send_abort: bool) {
        if send_abort {
            self.ctrl.clear();
            self.ctrl.push_back((self.active as u8, Ctrl::Abort(cause::PROTOCOL_VIOLATION)));
        }
        self.close_now();
        self.reset = true;
        self.events.push(ev);
    }

    fn close_now(&mut self) {
        self.state = AssocState::Closed;
        self.t1 = None;
        self.t2 = None;
        self.sack_timer = None;
        self.sack_now = false;
        self.adv_timer = None;
        for p in &mut self.paths {
            p.t3 = None;
            p.hb_at = None;
        }
        self.ctrl.retain(|(_, c)| matches!(c, Ctrl::Abort(_) | Ctrl::ShutdownComplete));
    }

    /// Called at the start of every input (packet, timer, command): Max.Burst per flush
    /// (RFC 9260 §6.1 D; Linux `sctp_transport_burst_limited()`).
    pub fn begin_flush(&mut self, cfg: &SctpConfig) {
        let mb = self.sock.max_burst;
        for p in &mut self.paths {
            p.burst_cap = if mb == 0 { u32::MAX } else { p.flight.saturating_add(mb * cfg.pmtu) };
        }
    }

    // -------------------------------------------------------------------------------
    // input
    // -------------------------------------------------------------------------------

    fn path_of(&self, addr: Ipv4Addr) -> Option<usize> {
        self.paths.iter().position(|p| p.addr == addr)
    }

    /// A packet for this association (already matched by ports and peer address; checksum
    /// verified). Applies the verification-tag rules of RFC 9260 §8.5.
    pub fn on_packet(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng, src: Ipv4Addr, pkt: &SctpPacket<&[u8]>) {
        let vtag = pkt.vtag();
        let from = self.path_of(src).unwrap_or(self.primary);
        let mut had_data = false;
        let mut first = true;
        for c in pkt.chunks() {
            let Ok(c) = c else { break };
            let kind = c.kind();
            // §8.5 / §8.5.1
            let tag_ok = match kind {
                kind::INIT => vtag == 0,
                kind::ABORT | kind::SHUTDOWN_COMPLETE => {
                    if c.flags() & 1 != 0 {
                        vtag == self.peer_tag
                    } else {
                        vtag == self.my_tag
                    }
                }
                kind::COOKIE_ECHO => true,
                kind::INIT_ACK => vtag == self.my_tag,
                _ => vtag == self.my_tag,
            };
            if !tag_ok {
                if first {
                    return;
                }
                break;
            }
            first = false;
            let repr = match ChunkRepr::parse(&c) {
                Ok(r) => r,
                Err(_) => break,
            };
            match repr {
                ChunkRepr::Data(d) => {
                    if matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownSent) {
                        had_data = true;
                        self.on_data(&d, from, cfg);
                    }
                }
                ChunkRepr::Sack(s) => self.on_sack(now, cfg, &s),
                ChunkRepr::InitAck(i) => self.on_init_ack(now, cfg, &i, from),
                ChunkRepr::Init(_) => {
                    // INIT on an existing association (restart/collision, §5.2): not
                    // supported; discarded (documented deviation).
                    return;
                }
                ChunkRepr::CookieEcho { cookie } => {
                    // Duplicate COOKIE-ECHO (§5.2.4 case D: tags match): resend COOKIE-ACK.
                    if cookie.len() >= 8 && be32(cookie, 0) == self.my_tag && be32(cookie, 4) == self.peer_tag && self.state != AssocState::Closed {
                        self.ctrl.push_back((from as u8, Ctrl::CookieAck));
                        if self.state == AssocState::CookieEchoed {
                            self.enter_established(now, cfg, rng);
                            self.events.push(SockEvent::Connected);
                        }
                    }
                }
                ChunkRepr::CookieAck => {
                    if self.state == AssocState::CookieEchoed {
                        self.cookie = Vec::new();
                        self.enter_established(now, cfg, rng);
                        self.events.push(SockEvent::Connected);
                    }
                }
                ChunkRepr::Heartbeat { info } => {
                    if self.state != AssocState::Closed {
                        self.ctrl.push_back((from as u8, Ctrl::HeartbeatAck(info.to_vec())));
                    }
                }
                ChunkRepr::HeartbeatAck { info } => self.on_hb_ack(now, cfg, info),
                ChunkRepr::Abort { .. } => {
                    if self.state != AssocState::Closed {
                        let ev = if matches!(self.state, AssocState::CookieWait | AssocState::CookieEchoed) { SockEvent::ConnectFailed } else { SockEvent::Reset };
                        self.ctrl.clear();
                        self.fail(ev, false);
                    }
                    return;
                }
                ChunkRepr::Shutdown { cum_tsn } => self.on_shutdown(now, cfg, cum_tsn),
                ChunkRepr::ShutdownAck => {
                    if matches!(self.state, AssocState::ShutdownSent | AssocState::ShutdownAckSent) {
                        self.ctrl.clear();
                        self.ctrl.push_back((from as u8, Ctrl::ShutdownComplete));
                        self.close_now();
                        self.events.push(SockEvent::Closed);
                    }
                }
                ChunkRepr::ShutdownComplete { .. } => {
                    if self.state == AssocState::ShutdownAckSent {
                        self.close_now();
                        self.events.push(SockEvent::Closed);
                    }
                }
                ChunkRepr::Error { causes } => {
                    self.stats.errors_received += 1;
                    self.on_error(now, cfg, causes);
                }
                ChunkRepr::ForwardTsn { .. } => {
                    // PR-SCTP is not negotiated (we never send Forward-TSN-Supported).
                }
                ChunkRepr::SndbufAdv { flags, .. } if cfg.sndbuf_adv != SndbufAdv::Off => {
                    self.stats.sndbuf_adv_received += 1;
                    self.stats.last_sndbuf_adv_flags = flags;
                }
                _ => {
                    // Unknown to this host (including 0x96 when the extension is off):
                    // RFC 9260 §3.2 upper-two-bit rules.
                    if kind == kind::SNDBUF_ADV {
                        self.stats.sndbuf_adv_received += 1;
                    }
                    let act = UnknownAction::for_chunk(kind);
                    if act.reports() {
                        let mut cause = vec![0u8; pad4(4 + c.bytes().len())];
                        let mut at = 0;
                        put_tlv(&mut cause, &mut at, cause::UNRECOGNIZED_CHUNK, c.bytes());
                        cause.truncate(at);
                        self.ctrl.push_back((from as u8, Ctrl::Error(cause)));
                    }
                    if !act.continues() {
                        break;
                    }
                    self.stats.unknown_chunks_skipped += 1;
                }
            }
            if self.state == AssocState::Closed && self.reset {
                return;
            }
        }
        if had_data {
            self.after_data_packet(now, cfg);
        }
    }

    fn on_init_ack(&mut self, now: Instant, cfg: &SctpConfig, i: &InitRepr<'_>, from: usize) {
        if self.state != AssocState::CookieWait {
            return; // §5.2.3: discard INIT-ACK in other states
        }
        let mut cookie: Option<&[u8]> = None;
        let mut addrs: Vec<Ipv4Addr> = Vec::new();
        let mut unrec: Vec<u8> = Vec::new();
        for t in i.params() {
            let Ok(t) = t else { break };
            match ParamRepr::parse(&t) {
                Ok(ParamRepr::StateCookie(c)) => cookie = Some(c),
                Ok(ParamRepr::Ipv4Addr(a)) => addrs.push(a),
                Ok(ParamRepr::Unknown { kind: param::ADAPTATION_LAYER_IND, .. }) => {} // RFC 5061: known, no report
                Ok(ParamRepr::Unknown { kind, .. }) => {
                    let act = UnknownAction::for_param(kind);
                    if act.reports() {
                        unrec.extend_from_slice(t.raw);
                        unrec.resize(pad4(unrec.len()), 0);
                    }
                    if !act.continues() {
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(cookie) = cookie else {
            // §5.2.3 missing mandatory parameter: abort.
            self.fail(SockEvent::ConnectFailed, true);
            return;
        };
        self.cookie = cookie.to_vec();
        self.peer_tag = i.init_tag;
        for a in addrs {
            if self.path_of(a).is_none() && self.paths.len() < MAX_ADDRS {
                let l = pick_local(cfg, &self.local_addrs, a);
                self.paths.push(Path::new(a, l, cfg, u32::MAX));
            }
        }
        for p in &mut self.paths {
            p.ssthresh = initial_ssthresh(cfg, i.a_rwnd);
        }
        self.setup_peer(i.initial_tsn.0, i.a_rwnd, cfg.out_streams.min(i.mis), cfg.max_in_streams.min(i.os));
        if !unrec.is_empty() {
            let mut cause = vec![0u8; unrec.len() + 4];
            let mut at = 0;
            put_tlv(&mut cause, &mut at, cause::UNRECOGNIZED_PARAMS, &unrec);
            cause.truncate(at);
            self.ctrl.push_back((from as u8, Ctrl::Error(cause)));
        }
        self.ctrl.retain(|(_, c)| !matches!(c, Ctrl::Init));
        self.ctrl.push_front((from as u8, Ctrl::CookieEcho));
        self.state = AssocState::CookieEchoed;
        self.t1_count = 0;
        self.t1_rto = cfg.rto_initial;
        self.t1 = Some(now + self.t1_rto);
    }

    fn on_error(&mut self, now: Instant, cfg: &SctpConfig, causes: &[u8]) {
        for t in TlvIter::new(causes).flatten() {
            // §5.2.6 stale cookie: back to COOKIE-WAIT, INIT with a cookie preservative.
            if t.kind == cause::STALE_COOKIE && self.state == AssocState::CookieEchoed && t.value.len() >= 4 {
                let stale_us = be32(t.value, 0);
                self.init_preservative_ms = (stale_us / 1000).saturating_mul(2).max(1);
                self.build_init_params();
                self.state = AssocState::CookieWait;
                self.ctrl.retain(|(_, c)| !matches!(c, Ctrl::CookieEcho));
                self.ctrl.push_back((self.primary as u8, Ctrl::Init));
                self.t1_count += 1;
                self.t1 = Some(now + self.t1_rto);
                if self.t1_count > cfg.max_init_retransmits {
                    self.fail(SockEvent::ConnectFailed, false);
                }
            }
        }
    }

    fn on_hb_ack(&mut self, now: Instant, cfg: &SctpConfig, info: &[u8]) {
        let Some(Ok(t)) = TlvIter::new(info).next() else { return };
        if t.kind != param::HEARTBEAT_INFO || t.value.len() != HB_INFO_LEN - 4 {
            return;
        }
        let v = t.value;
        let i = be16(v, 0) as usize;
        let nonce = u64::from_be_bytes(v[4..12].try_into().unwrap_or([0; 8]));
        let sent = u64::from_be_bytes(v[12..20].try_into().unwrap_or([0; 8]));
        let Some(p) = self.paths.get_mut(i) else { return };
        if nonce != p.hb_nonce || !p.hb_outstanding {
            return;
        }
        p.hb_outstanding = false;
        // Linux SCTP_CMD_TRANSPORT_ON: error counters cleared, path up, RTT sample.
        p.error_count = 0;
        p.state = PathState::Active;
        if sent <= now.as_nanos() {
            p.rtt_sample(now.saturating_since(Instant::from_nanos(sent)), cfg);
        }
        self.error_count = 0;
        self.update_active();
    }

    fn on_shutdown(&mut self, now: Instant, cfg: &SctpConfig, cum: Tsn) {
        if !matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownSent | AssocState::ShutdownReceived) {
            return;
        }
        // The SHUTDOWN's cumulative TSN acks like a SACK without gaps (§9.2).
        let s = SackRepr { cum_tsn: cum, a_rwnd: self.peer_rwnd.saturating_add(self.outstanding as u32), gaps: List::Items(&[]), dups: List::Items(&[]) };
        if cum >= self.cum_acked {
            self.on_sack(now, cfg, &s);
        }
        if !self.peer_shutdown {
            self.peer_shutdown = true;
            self.events.push(SockEvent::PeerClosed);
        }
        if self.state == AssocState::ShutdownSent {
            // Simultaneous shutdown (§9.2): answer with SHUTDOWN-ACK.
            self.state = AssocState::ShutdownAckSent;
            self.ctrl.push_back((self.active as u8, Ctrl::ShutdownAck));
            self.t2_path = self.active;
            self.t2 = Some(now + self.paths[self.active].rto);
            return;
        }
        if self.state != AssocState::ShutdownReceived {
            self.state = AssocState::ShutdownReceived;
        }
        self.sack_now = true;
        self.check_shutdown_progress(now);
    }

    /// Sends SHUTDOWN / SHUTDOWN-ACK once all our data is acknowledged (§9.2).
    fn check_shutdown_progress(&mut self, now: Instant) {
        if !self.q.is_empty() {
            return;
        }
        let p = self.active;
        match self.state {
            AssocState::ShutdownPending => {
                self.state = AssocState::ShutdownSent;
                self.ctrl.push_back((p as u8, Ctrl::Shutdown));
                self.t2_path = p;
                self.t2 = Some(now + self.paths[p].rto);
                self.t2_count = 0;
            }
            AssocState::ShutdownReceived => {
                self.state = AssocState::ShutdownAckSent;
                self.ctrl.push_back((p as u8, Ctrl::ShutdownAck));
                self.t2_path = p;
                self.t2 = Some(now + self.paths[p].rto);
                self.t2_count = 0;
            }
            _ => {}
        }
    }

    // ----- SACK processing (RFC 9260 §6.2.1, §7.2; Linux sctp_outq_sack) -----

    fn on_sack(&mut self, now: Instant, cfg: &SctpConfig, s: &SackRepr<'_>) {
        if !matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownSent | AssocState::ShutdownReceived) {
            return;
        }
        let cum = s.cum_tsn;
        if cum < self.cum_acked {
            return; // §6.2.1 D i: out of order SACK
        }
        if cum > self.highest_sent() {
            return; // acks data never sent: ignore (Linux aborts on this violation)
        }
        let mtu = cfg.pmtu;
        for p in &mut self.paths {
            p.acked = 0;
            p.flight_before = p.flight;
        }
        let ng = s.num_gaps();
        let mut gi = 0usize;
        let mut htna: Option<Tsn> = None; // highest TSN newly acknowledged
        let mut restart_t3 = [false; MAX_ADDRS];
        for k in 0..self.first_unsent {
            let c = self.q[k];
            let in_cum = c.tsn <= cum;
            let mut in_gap = false;
            if !in_cum {
                let off = c.tsn.diff(cum);
                while gi < ng && (s.gap(gi).end as i32) < off {
                    gi += 1;
                }
                if gi < ng {
                    let g = s.gap(gi);
                    in_gap = (g.start as i32) <= off && off <= g.end as i32;
                }
            }
            if in_cum || in_gap {
                match c.state {
                    TxState::InFlight => {
                        let p = &mut self.paths[c.path as usize];
                        p.flight -= c.len;
                        p.acked += c.len;
                        self.outstanding -= c.len as u64;
                        if c.probe && !c.rtx {
                            p.rtt_sample(now.saturating_since(c.sent_at), cfg);
                        }
                        htna = Some(c.tsn);
                        if in_cum && (c.path as usize) < MAX_ADDRS {
                            restart_t3[c.path as usize] = true;
                        }
                    }
                    TxState::NeedRtx => {
                        self.rtx_count -= 1;
                        htna = Some(c.tsn);
                    }
                    TxState::GapAcked | TxState::Unsent => {}
                }
                let cc = &mut self.q[k];
                cc.state = TxState::GapAcked;
                cc.probe = false;
            } else if c.state == TxState::GapAcked {
                // Reneged (§6.2.1): back in flight, awaiting ack or T3.
                let p = &mut self.paths[c.path as usize];
                p.flight += c.len;
                self.outstanding += c.len as u64;
                self.q[k].state = TxState::InFlight;
                if p.t3.is_none() {
                    p.t3 = Some(now + p.rto);
                }
            }
        }
        // Miss indications (§7.2.4, HTNA rule) and fast retransmit marking.
        let mut need_fr = false;
        if let Some(h) = htna {
            for k in 0..self.first_unsent {
                let c = &mut self.q[k];
                if c.tsn >= h {
                    break;
                }
                if c.state == TxState::InFlight && !c.fast_done {
                    c.misses = c.misses.saturating_add(1);
                    if c.misses >= 3 {
                        need_fr = true;
                    }
                }
            }
        }
        // Drop cumulatively acked chunks from the queue, freeing send buffer.
        let cum_advanced = cum > self.cum_acked;
        self.cum_acked = cum;
        let mut freed = false;
        while let Some(c) = self.q.front() {
            if c.state == TxState::Unsent || c.tsn > cum {
                break;
            }
            let c = self.q.pop_front().unwrap_or_else(|| unreachable!());
            self.first_unsent -= 1;
            self.sndbuf_used -= c.charge as u64;
            self.stats.bytes_acked += c.len as u64;
            self.sbuf_base_advance(c.off + c.len as u64);
            freed = true;
        }
        // Fast recovery exit (§7.2.4 item 4).
        if self.fast_recovery.is_some_and(|x| cum >= x) {
            self.fast_recovery = None;
        }
        // cwnd growth per path (§7.2.1/§7.2.2; Linux sctp_transport_raise_cwnd).
        let in_fr = self.fast_recovery.is_some();
        for (i, p) in self.paths.iter_mut().enumerate() {
            if p.acked > 0 {
                if p.cwnd <= p.ssthresh {
                    if !in_fr && p.flight_before >= p.cwnd {
                        p.cwnd += p.acked.min(mtu);
                    }
                } else {
                    p.pba += p.acked;
                    if p.flight_before >= p.cwnd && p.pba >= p.cwnd {
                        p.pba -= p.cwnd;
                        p.cwnd += mtu;
                    }
                }
                // §8.2/8.3: an ack clears the path's error count and marks it up.
                p.error_count = 0;
                if p.state != PathState::Active {
                    p.state = PathState::Active;
                }
                self.error_count = 0;
            }
            if p.flight == 0 {
                p.pba = 0;
                p.t3 = None; // §6.3.2 R2
            } else if i < MAX_ADDRS && restart_t3[i] && cum_advanced {
                p.t3 = Some(now + p.rto); // §6.3.2 R3
            }
        }
        self.update_active();
        // §6.2.1: peer rwnd = a_rwnd − bytes still outstanding.
        self.peer_rwnd = s.a_rwnd.saturating_sub(self.outstanding.min(u32::MAX as u64) as u32);
        if need_fr {
            self.fast_retransmit(cfg);
        }
        if freed && self.want_writable {
            self.autotune_sndbuf(cfg);
        }
        if freed && self.want_writable && self.wspace() >= self.blocked_len.max(1) as i64 {
            self.want_writable = false;
            self.events.push(SockEvent::Writable);
        }
        self.check_shutdown_progress(now);
    }

    /// §7.2.4 fast retransmit; Linux `sctp_retransmit(SCTP_RTXR_FAST_RTX)`.
    fn fast_retransmit(&mut self, cfg: &SctpConfig) {
        let mut paths_hit = [false; MAX_ADDRS];
        for k in 0..self.first_unsent {
            let c = self.q[k];
            if c.state == TxState::InFlight && c.misses >= 3 && !c.fast_done && (c.path as usize) < MAX_ADDRS {
                paths_hit[c.path as usize] = true;
            }
        }
        if self.fast_recovery.is_none() {
            let mtu = cfg.pmtu;
            for (i, p) in self.paths.iter_mut().enumerate() {
                if i < MAX_ADDRS && paths_hit[i] {
                    p.ssthresh = (p.cwnd / 2).max(4 * mtu);
                    p.cwnd = p.ssthresh;
                    p.pba = 0;
                }
            }
            // §7.2.4 item 4: exit point = highest TSN outstanding (sent), not queued.
            self.fast_recovery = Some(self.highest_sent());
        }
        let n = self.mark_rtx(|c| c.misses >= 3 && !c.fast_done, usize::MAX, true);
        // fast retransmissions go back to the path they were sent on
        for k in 0..self.first_unsent {
            let c = &mut self.q[k];
            if c.state == TxState::NeedRtx && c.fast && c.rtx_path == u8::MAX {
                c.rtx_path = c.path;
            }
        }
        if n > 0 {
            self.stats.fast_retransmits += 1;
        }
    }

    /// Highest TSN ever sent (TSNs are assigned at enqueue, so this is not `next_tsn − 1`).
    fn highest_sent(&self) -> Tsn {
        if self.first_unsent == 0 {
            self.cum_acked
        } else {
            self.q[self.first_unsent - 1].tsn
        }
    }

    fn sbuf_base_advance(&mut self, upto: u64) {
        // Drop the consumed prefix of the send byte buffer once it is large (amortised).
        let consumed = upto.saturating_sub(self.sbuf_base) as usize;
        if consumed >= 64 * 1024 && consumed * 2 >= self.sbuf.len() {
            self.sbuf.drain(..consumed);
            self.sbuf_base = upto;
        }
    }

    // ----- DATA reception (Linux sctp_eat_data + tsnmap + ulpq) -----

    fn on_data(&mut self, d: &DataRepr<'_>, from: usize, cfg: &SctpConfig) {
        self.data_from = from;
        if cfg.sack_immediately && d.flags & data_flags::I != 0 {
            self.sack_now = true; // RFC 7053 I bit (sctp_sf_eat_data_6_2: SCTP_FORCE)
        }
        let tsn = d.tsn;
        if tsn <= self.cum_tsn {
            self.note_dup(tsn);
            return;
        }
        let idx = tsn.diff(self.rx_base);
        if idx < 0 || idx as usize >= MAX_RX_SPAN {
            return;
        }
        let idx = idx as usize;
        if idx < self.rx.len() && self.rx[idx].st != 0 {
            self.note_dup(tsn);
            return;
        }
        let len = d.payload.len() as u32;
        // Linux sctp_eat_data: no room → discard (and SACK at once).
        let frag = cfg.frag_point() as u32;
        let charge = cfg.chunk_truesize(d.payload.len()) as u32;
        if self.rx_mem + charge as u64 >= self.sock.rcvbuf {
            self.autotune_rcvbuf(cfg, self.rx_mem + charge as u64);
        }
        let rmem_full = self.rx_mem >= self.sock.rcvbuf;
        if self.rwnd == 0 || len > self.rwnd.saturating_add(frag) || (rmem_full && tsn != self.cum_tsn.next()) {
            self.sack_now = true;
            return;
        }
        while self.rx.len() <= idx {
            self.rx.push_back(RxSlot::default());
        }
        if tsn != self.cum_tsn.next() {
            self.sack_now = true; // out of order: SACK immediately (§6.7)
        }
        let slot = &mut self.rx[idx];
        if d.stream >= self.n_in {
            // §6.5 invalid stream: acknowledge the TSN, discard the data, report.
            slot.st = 2;
            let mut cause = [0u8; 8];
            cause[0..2].copy_from_slice(&cause::INVALID_STREAM.to_be_bytes());
            cause[2..4].copy_from_slice(&8u16.to_be_bytes());
            cause[4..6].copy_from_slice(&d.stream.to_be_bytes());
            self.ctrl.push_back((from as u8, Ctrl::Error(cause.to_vec())));
        } else {
            if d.stream as usize >= self.in_streams.len() {
                self.in_streams.resize(d.stream as usize + 1, InStream::default());
            }
            let mut buf = self.pool.pop().unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(d.payload);
            *slot = RxSlot { st: 1, flags: d.flags, stream: d.stream, ssn: d.ssn, len, read: 0, charge, buf };
            self.rwnd = self.rwnd.saturating_sub(len);
            self.rx_mem += charge as u64;
        }
        // advance the cumulative TSN
        let mut i = self.cum_tsn.next().diff(self.rx_base) as usize;
        while i < self.rx.len() && self.rx[i].st != 0 {
            self.cum_tsn = self.cum_tsn.next();
            i += 1;
        }
        if i < self.rx.len() {
            self.sack_now = true; // gaps remain
        }
        if self.rx[idx].st == 1 {
            self.try_complete(idx);
        }
        self.maybe_partial_delivery(cfg);
    }

    fn note_dup(&mut self, tsn: Tsn) {
        self.stats.dup_tsns += 1;
        if self.n_dups < MAX_DUPS {
            self.dups[self.n_dups] = tsn;
            self.n_dups += 1;
        }
        self.sack_now = true; // §6.7: duplicates are reported at once
    }

    /// Checks whether the message containing slot `idx` is complete and deliverable.
    fn try_complete(&mut self, idx: usize) {
        let s = &self.rx[idx];
        let stream = s.stream;
        let mut first = idx;
        while self.rx[first].flags & data_flags::B == 0 {
            if first == 0 {
                return;
            }
            let p = &self.rx[first - 1];
            if p.st != 1 || p.stream != stream || p.flags & data_flags::E != 0 {
                return;
            }
            first -= 1;
        }
        let mut last = idx;
        while self.rx[last].flags & data_flags::E == 0 {
            last += 1;
            if last >= self.rx.len() || self.rx[last].st != 1 || self.rx[last].stream != stream || self.rx[last].flags & data_flags::B != 0 {
                return;
            }
        }
        let ftsn = self.rx_base.add(first as u32);
        if self.pd_first == Some(ftsn) {
            return; // already being delivered partially
        }
        let ltsn = self.rx_base.add(last as u32);
        let f = &self.rx[first];
        if f.flags & data_flags::U != 0 {
            self.ready.push_back(ReadyMsg { stream, cur: ftsn, last: Some(ltsn) });
            return;
        }
        let ssn = f.ssn;
        let st = &mut self.in_streams[stream as usize];
        if ssn != st.next_ssn {
            st.waiting.push((ssn, ftsn, ltsn));
            return;
        }
        st.next_ssn = st.next_ssn.wrapping_add(1);
        self.ready.push_back(ReadyMsg { stream, cur: ftsn, last: Some(ltsn) });
        self.release_waiting(stream);
    }

    fn release_waiting(&mut self, stream: u16) {
        let st = &mut self.in_streams[stream as usize];
        while let Some(pos) = st.waiting.iter().position(|w| w.0 == st.next_ssn) {
            let (_, f, l) = st.waiting.swap_remove(pos);
            st.next_ssn = st.next_ssn.wrapping_add(1);
            self.ready.push_back(ReadyMsg { stream, cur: f, last: Some(l) });
        }
    }

    /// Linux `sctp_ulpq_partial_delivery()`: when the window is nearly closed and nothing is
    /// deliverable, start handing out the first deliverable message's leading fragments.
    fn maybe_partial_delivery(&mut self, cfg: &SctpConfig) {
        if !self.ready.is_empty() || self.pd_first.is_some() || self.rwnd >= cfg.frag_point() as u32 {
            return;
        }
        for i in 0..self.rx.len() {
            let s = &self.rx[i];
            if s.st != 1 || s.flags & data_flags::B == 0 {
                continue;
            }
            let ok = s.flags & data_flags::U != 0 || self.in_streams.get(s.stream as usize).is_some_and(|st| st.next_ssn == s.ssn);
            if ok {
                let stream = s.stream;
                let unordered = s.flags & data_flags::U != 0;
                let ftsn = self.rx_base.add(i as u32);
                if !unordered {
                    let st = &mut self.in_streams[stream as usize];
                    st.next_ssn = st.next_ssn.wrapping_add(1);
                }
                self.pd_first = Some(ftsn);
                self.ready.push_back(ReadyMsg { stream, cur: ftsn, last: None });
                return;
            }
        }
    }

    fn after_data_packet(&mut self, now: Instant, cfg: &SctpConfig) {
        if self.state == AssocState::ShutdownSent {
            // §9.2: answer DATA in SHUTDOWN-SENT with a SHUTDOWN (and SACK), restart T2.
            if !self.ctrl.iter().any(|(_, c)| matches!(c, Ctrl::Shutdown)) {
                self.ctrl.push_back((self.data_from as u8, Ctrl::Shutdown));
            }
            self.t2_path = self.active;
            self.t2 = Some(now + self.paths[self.active].rto);
        }
        self.sack_pkts += 1;
        if self.sack_pkts >= cfg.sack_freq || self.state == AssocState::ShutdownSent {
            self.sack_now = true;
        }
        if !self.sack_now && self.sack_timer.is_none() {
            self.sack_timer = Some(now + cfg.sack_timeout);
        }
    }

    // -------------------------------------------------------------------------------
    // application commands
    // -------------------------------------------------------------------------------

    /// `sctp_wspace()`: free send space.
    pub fn wspace(&self) -> i64 {
        self.sock.sndbuf as i64 - self.sndbuf_used as i64
    }

    /// `sctp_sendmsg()`: all-or-nothing message enqueue; `Ok(0)` = would block.
    pub fn send(&mut self, cfg: &SctpConfig, stream: u16, data: &[u8], unordered: bool) -> Result<usize, SockError> {
        match self.state {
            AssocState::Established | AssocState::ShutdownReceived => {}
            AssocState::Closed if self.reset => return Err(SockError::Reset),
            _ => return Err(SockError::NotConnected),
        }
        if data.is_empty() {
            return Err(SockError::Invalid);
        }
        if stream >= self.os {
            return Err(SockError::InvalidStream);
        }
        let frag = cfg.frag_point();
        let n = data.len().div_ceil(frag);
        let msg_len = data.len() as u64;
        // sctp_sendmsg() before 4.17: "the sndbuf size per association bounds the maximum
        // size of data that can be sent in a single send call" (payload, not truesize)
        if !cfg.send_overcommit && msg_len > self.sock.sndbuf {
            return Err(SockError::MsgSize);
        }
        // The writer blocks only when no space is left (sctp_wspace() <= 0) and then waits
        // in sctp_wait_for_sndbuf() until msg_len <= sctp_wspace(); the message is charged
        // its truesize afterwards, so the buffer may be overcommitted by up to a message.
        // Deviation: ≥ 4.17 would wait forever for a message larger than sk_sndbuf; the
        // wait here is capped at sk_sndbuf.
        let need = if self.want_writable { self.blocked_len.max(1) as i64 } else { 1 };
        if self.wspace() < need {
            if !self.want_writable {
                self.blocked_len = msg_len.min(self.sock.sndbuf);
            }
            self.want_writable = true;
            return Ok(0);
        }
        let ssn = if unordered { 0 } else { self.out_ssn[stream as usize] };
        if !unordered {
            self.out_ssn[stream as usize] = ssn.wrapping_add(1);
        }
        let off0 = self.sbuf_end;
        self.sbuf.extend_from_slice(data);
        self.sbuf_end += data.len() as u64;
        for k in 0..n {
            let len = frag.min(data.len() - k * frag);
            let mut flags = if unordered { data_flags::U } else { 0 };
            if k == 0 {
                flags |= data_flags::B;
            }
            if k == n - 1 {
                flags |= data_flags::E;
            }
            let ch = cfg.chunk_truesize(len) as u32;
            self.q.push_back(TxChunk {
                tsn: self.next_tsn,
                off: off0 + (k * frag) as u64,
                len: len as u32,
                charge: ch,
                stream,
                ssn,
                flags,
                state: TxState::Unsent,
                path: 0,
                rtx_path: 0,
                misses: 0,
                rtx: false,
                fast: false,
                fast_done: false,
                probe: false,
                sent_at: Instant::ZERO,
            });
            self.next_tsn = self.next_tsn.next();
            self.sndbuf_used += ch as u64;
        }
        self.out_qlen += data.len() as u64;
        Ok(data.len())
    }

    /// `recvmsg()` on a one-to-one socket: at most one message (or part of one).
    pub fn recv(&mut self, now: Instant, cfg: &SctpConfig, out: &mut [u8]) -> Result<Option<RecvInfo>, SockError> {
        let Some(mut m) = self.ready.front().copied() else {
            if self.reset {
                return Err(SockError::Reset);
            }
            if self.peer_shutdown || self.state == AssocState::Closed {
                return Ok(Some(RecvInfo { len: 0, stream: 0, end_of_message: true }));
            }
            if matches!(self.state, AssocState::CookieWait | AssocState::CookieEchoed) {
                return Err(SockError::NotConnected);
            }
            return Ok(None);
        };
        let mut n = 0;
        let mut eom = false;
        while n < out.len() {
            let idx = m.cur.diff(self.rx_base);
            if idx < 0 || idx as usize >= self.rx.len() {
                break;
            }
            let slot = &mut self.rx[idx as usize];
            if slot.st != 1 {
                break; // partial delivery: next fragment not here yet
            }
            let take = (slot.len - slot.read) as usize;
            let take = take.min(out.len() - n);
            let r = slot.read as usize;
            out[n..n + take].copy_from_slice(&slot.buf[r..r + take]);
            slot.read += take as u32;
            n += take;
            if slot.read == slot.len {
                slot.st = 2;
                let e = slot.flags & data_flags::E != 0;
                self.rwnd = self.rwnd.saturating_add(slot.len);
                self.rx_mem -= slot.charge as u64;
                let b = std::mem::take(&mut slot.buf);
                if self.pool.len() < 64 {
                    self.pool.push(b);
                }
                m.cur = m.cur.next();
                if e || m.last.is_some_and(|l| m.cur > l) {
                    eom = true;
                    break;
                }
            }
        }
        if n == 0 && !eom {
            return Ok(None);
        }
        self.stats.bytes_delivered += n as u64;
        self.rcv_space_adjust(now, cfg, n as u64);
        if eom {
            self.ready.pop_front();
            if m.last.is_none() {
                self.pd_first = None;
                let st = m.stream;
                if (st as usize) < self.in_streams.len() {
                    self.release_waiting(st);
                }
            }
        } else if let Some(f) = self.ready.front_mut() {
            f.cur = m.cur;
        }
        // pop consumed slots at or below the cumulative TSN
        while let Some(f) = self.rx.front() {
            if f.st == 2 && self.rx_base <= self.cum_tsn {
                self.rx.pop_front();
                self.rx_base = self.rx_base.next();
            } else {
                break;
            }
        }
        self.maybe_partial_delivery(cfg);
        // Linux sctp_assoc_rwnd_increase(): window-update SACK when the window opened by
        // max(rcvbuf >> SCTP_DEFAULT_RWND_SHIFT, pathmtu) since the last advertisement.
        let adv = self.adv_rwnd();
        if adv > self.a_rwnd_sent && (adv - self.a_rwnd_sent) as u64 >= (self.sock.rcvbuf >> SCTP_DEFAULT_RWND_SHIFT).max(cfg.pmtu as u64) && self.state != AssocState::Closed {
            self.sack_now = true;
        }
        Ok(Some(RecvInfo { len: n, stream: m.stream, end_of_message: eom }))
    }

    /// Bytes ready to read right now.
    pub fn readable(&self) -> bool {
        self.ready.front().is_some_and(|m| {
            let i = m.cur.diff(self.rx_base);
            i >= 0 && (i as usize) < self.rx.len() && self.rx[i as usize].st == 1
        })
    }

    fn adv_rwnd(&self) -> u32 {
        if self.rx_mem >= self.sock.rcvbuf {
            0
        } else {
            self.rwnd
        }
    }

    /// `shutdown(SHUT_WR)` / graceful close (§9.2).
    pub fn shutdown(&mut self, now: Instant) {
        match self.state {
            AssocState::Established => {
                self.state = AssocState::ShutdownPending;
                self.check_shutdown_progress(now);
            }
            AssocState::CookieWait | AssocState::CookieEchoed => {
                self.close_now();
                self.events.push(SockEvent::Closed);
            }
            _ => {}
        }
    }

    /// `SO_LINGER 0` close: ABORT with a user-initiated cause (§9.1).
    pub fn abort(&mut self) {
        if self.state == AssocState::Closed {
            return;
        }
        let p = self.active;
        self.ctrl.clear();
        if self.state != AssocState::CookieWait {
            self.ctrl.push_back((p as u8, Ctrl::Abort(cause::USER_ABORT)));
        }
        self.close_now();
        self.events.push(SockEvent::Closed);
    }

    // -------------------------------------------------------------------------------
    // buffer autotuning (seed system 2; never merged upstream)
    // -------------------------------------------------------------------------------

    /// Payload-to-charge ratio applied by the overhead-corrected variant (×1000).
    fn overhead_permille(&self, cfg: &SctpConfig) -> u64 {
        match cfg.autotune {
            Autotune::OverheadCorrected => {
                let f = cfg.frag_point();
                cfg.chunk_truesize(f) * 1000 / f as u64
            }
            _ => 1000,
        }
    }

    /// Sender rule (mirrors `tcp_should_expand_sndbuf()` + `tcp_new_space()`, 2.6.37):
    /// when a SACK frees space while the writer waits, not locked, not cwnd-limited:
    /// `sk_sndbuf = max(sk_sndbuf, min(2·cwnd, sctp_wmem[2]))`, cwnd summed over active
    /// paths (seed-systems §2.5). Global memory pressure is not modelled.
    fn autotune_sndbuf(&mut self, cfg: &SctpConfig) {
        if cfg.autotune == Autotune::Off || self.sock.sndbuf_locked {
            return;
        }
        let cwnd: u64 = self.paths.iter().filter(|p| p.state != PathState::Inactive).map(|p| p.cwnd as u64).sum();
        if self.outstanding >= cwnd {
            return;
        }
        let want = (2 * cwnd * self.overhead_permille(cfg) / 1000).min(cfg.sctp_wmem[2]);
        if want > self.sock.sndbuf {
            self.sock.sndbuf = want;
        }
    }

    /// Receiver rule 1 (as `tcp_clamp_window()`): a chunk would fill `sk_rcvbuf` → grow it
    /// (up to `sctp_rmem[2]`) instead of advertising a zero window.
    fn autotune_rcvbuf(&mut self, cfg: &SctpConfig, need: u64) {
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
    /// copied to the user in that RTT; grow `sk_rcvbuf` to it (clamped). The RTT is the
    /// path's SRTT (from data or heartbeats), else RTO.Initial.
    fn rcv_space_adjust(&mut self, now: Instant, cfg: &SctpConfig, copied: u64) {
        if cfg.autotune == Autotune::Off || self.sock.rcvbuf_locked {
            return;
        }
        self.rcvq_copied += copied;
        let rtt = self.paths.get(self.data_from).and_then(|p| p.srtt).map(Duration::from_nanos).unwrap_or(cfg.rto_initial);
        if now.saturating_since(self.rcvq_time) < rtt {
            return;
        }
        let target = 2 * self.rcvq_copied;
        self.rcvq_copied = 0;
        self.rcvq_time = now;
        if target > self.rcvq_space {
            self.rcvq_space = target;
            let want = (target * self.overhead_permille(cfg) / 1000).min(cfg.sctp_rmem[2]);
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
        self.rwnd = self.rwnd.saturating_add(((new - old) * halves / 2).min(u32::MAX as u64) as u32);
    }

    // -------------------------------------------------------------------------------
    // send-buffer advertisement (seed system 1, §1.3)
    // -------------------------------------------------------------------------------

    /// (lhs, rhs, denominator) of the advertisement for path `i`.
    fn adv_value(&self, cfg: &SctpConfig, i: usize, scale: u64) -> (bool, u64) {
        match cfg.sndbuf_adv_backlog {
            BacklogDef::Btech2016 => {
                let lhs = self.out_qlen + self.outstanding;
                let rhs = (self.peer_rwnd.min(self.paths[i].cwnd)) as u64;
                if lhs <= rhs || self.sndbuf_used == 0 {
                    return (false, lhs.saturating_sub(rhs));
                }
                (true, (scale * (lhs - rhs) / self.sndbuf_used).min(255))
            }
            BacklogDef::Agache => {
                let b = self.out_qlen;
                if b == 0 || self.sock.sndbuf == 0 {
                    return (false, 0);
                }
                (true, (scale * b / self.sock.sndbuf).min(scale))
            }
        }
    }

    fn adv_timer_expired(&mut self, now: Instant, cfg: &SctpConfig) {
        self.adv_timer = None;
        if !matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownReceived) {
            return;
        }
        if self.error_count >= cfg.association_max_retrans {
            self.fail(SockEvent::Reset, true);
            return;
        }
        let i = self.active;
        let c = match cfg.sndbuf_adv {
            SndbufAdv::V1Bytes => {
                let lhs = self.out_qlen + self.outstanding;
                let rhs = self.peer_rwnd.min(self.paths[i].cwnd) as u64;
                let v = match cfg.sndbuf_adv_backlog {
                    BacklogDef::Btech2016 => lhs.saturating_sub(rhs),
                    BacklogDef::Agache => self.out_qlen,
                };
                (v > 0).then_some(Ctrl::SndbufAdv { flags: 0, value: Some(v.min(u32::MAX as u64) as u32) })
            }
            SndbufAdv::V2Percent => {
                let (send, v) = self.adv_value(cfg, i, 100);
                send.then_some(Ctrl::SndbufAdv { flags: v as u8, value: None })
            }
            SndbufAdv::V3Decile => {
                let (send, v) = self.adv_value(cfg, i, 10);
                send.then_some(Ctrl::SndbufAdv { flags: v as u8, value: None })
            }
            _ => None,
        };
        if let Some(c) = c {
            self.ctrl.push_back((i as u8, c));
        }
        self.adv_timer = Some(now + cfg.sndbuf_adv_interval);
    }

    // -------------------------------------------------------------------------------
    // output
    // -------------------------------------------------------------------------------

    fn data_allowed(&self) -> bool {
        matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownReceived)
    }

    fn can_send_new(&self, cfg: &SctpConfig) -> bool {
        self.can_send_new_in(cfg, true)
    }

    /// RFC 9260 §6.1 rules A/B, Max.Burst, and Nagle (which only holds back the first DATA
    /// of a packet, as Linux's `sctp_packet_can_append_data()` checks `sctp_packet_empty`).
    fn can_send_new_in(&self, cfg: &SctpConfig, packet_empty: bool) -> bool {
        if !self.data_allowed() || self.first_unsent >= self.q.len() {
            return false;
        }
        let p = &self.paths[self.active];
        let c = &self.q[self.first_unsent];
        if p.flight >= p.cwnd.min(p.burst_cap) {
            return false;
        }
        if c.len > self.peer_rwnd && self.outstanding > 0 {
            return false;
        }
        // Nagle (Linux sctp_packet_can_append_data): hold a sub-MTU tail while data is
        // outstanding unless SCTP_NODELAY.
        if packet_empty && !self.sock.nodelay && self.outstanding > 0 && self.state == AssocState::Established {
            let room = cfg.pmtu as u64 - 20 - 12 - 16;
            if self.out_qlen < room && (c.len as u64) < room {
                return false;
            }
        }
        true
    }

    fn rtx_ready_path(&self) -> Option<usize> {
        if self.rtx_count == 0 || !self.data_allowed() {
            return None;
        }
        for k in 0..self.first_unsent {
            let c = &self.q[k];
            if c.state == TxState::NeedRtx {
                let pi = (c.rtx_path as usize).min(self.paths.len() - 1);
                let p = &self.paths[pi];
                if c.fast || p.flight < p.cwnd {
                    return Some(pi);
                }
            }
        }
        None
    }

    /// Builds one packet into `buf` (after the headroom already in it).
    pub fn poll_transmit(&mut self, now: Instant, cfg: &SctpConfig, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.paths.is_empty() {
            return None;
        }
        // choose the destination
        let sack_due = self.sack_now && !matches!(self.state, AssocState::CookieWait | AssocState::CookieEchoed | AssocState::Closed);
        let path = if let Some((p, _)) = self.ctrl.front() {
            *p as usize
        } else if sack_due {
            self.data_from
        } else if let Some(p) = self.rtx_ready_path() {
            p
        } else if self.can_send_new(cfg) {
            self.active
        } else {
            return None;
        };
        let path = path.min(self.paths.len() - 1);
        let start = buf.len();
        let cap = cfg.pmtu as usize - 20;
        buf.resize(start + cap, 0);
        let out = &mut buf[start..];
        let mut at = COMMON_HEADER_LEN;
        let mut vtag = self.peer_tag;
        let mut has_data = false;
        let mut only_ctrl_init = false;

        // 1. control chunks for this path, in order
        let mut k = 0;
        while k < self.ctrl.len() {
            if self.ctrl[k].0 as usize != path {
                k += 1;
                continue;
            }
            let ok = match &self.ctrl[k].1 {
                Ctrl::Init => {
                    if at != COMMON_HEADER_LEN {
                        break; // INIT is never bundled (§6.10)
                    }
                    vtag = 0;
                    only_ctrl_init = true;
                    let r = ChunkRepr::Init(InitRepr { init_tag: self.my_tag, a_rwnd: self.rwnd, os: cfg.out_streams, mis: cfg.max_in_streams, initial_tsn: self.next_tsn, params: &self.init_params });
                    r.emit_at(out, &mut at)
                }
                Ctrl::CookieEcho => ChunkRepr::CookieEcho { cookie: &self.cookie }.emit_at(out, &mut at),
                Ctrl::CookieAck => ChunkRepr::CookieAck.emit_at(out, &mut at),
                Ctrl::Heartbeat(info) => ChunkRepr::Heartbeat { info }.emit_at(out, &mut at),
                Ctrl::HeartbeatAck(info) => ChunkRepr::HeartbeatAck { info }.emit_at(out, &mut at),
                Ctrl::Shutdown => ChunkRepr::Shutdown { cum_tsn: self.cum_tsn }.emit_at(out, &mut at),
                Ctrl::ShutdownAck => ChunkRepr::ShutdownAck.emit_at(out, &mut at),
                Ctrl::ShutdownComplete => ChunkRepr::ShutdownComplete { t_bit: false }.emit_at(out, &mut at),
                Ctrl::Abort(code) => {
                    let mut c = [0u8; 4];
                    c[0..2].copy_from_slice(&code.to_be_bytes());
                    c[2..4].copy_from_slice(&4u16.to_be_bytes());
                    ChunkRepr::Abort { t_bit: false, causes: &c }.emit_at(out, &mut at)
                }
                Ctrl::Error(causes) => ChunkRepr::Error { causes }.emit_at(out, &mut at),
                Ctrl::SndbufAdv { flags, value } => {
                    self.stats.sndbuf_adv_sent += 1;
                    ChunkRepr::SndbufAdv { flags: *flags, value: *value }.emit_at(out, &mut at)
                }
            };
            if !ok {
                if at == COMMON_HEADER_LEN {
                    self.ctrl.remove(k); // can never fit a packet: drop it
                    continue;
                }
                break;
            }
            self.ctrl.remove(k);
            if only_ctrl_init {
                break;
            }
        }

        if !only_ctrl_init && self.state != AssocState::Closed {
            // 2. SACK: due, or bundled with DATA going to the address data came from.
            let will_data = path == self.data_from && (self.rtx_ready_path() == Some(path) || (path == self.active && self.can_send_new(cfg)));
            let bundle = self.sack_timer.is_some() && cfg.bundle_sack && will_data;
            if (sack_due || bundle) && !matches!(self.state, AssocState::CookieWait | AssocState::CookieEchoed) && self.emit_sack(out, &mut at) {
                self.stats.sacks_sent += 1;
                self.sack_now = false;
                self.sack_timer = None;
                self.sack_pkts = 0;
                self.n_dups = 0;
                self.a_rwnd_sent = self.adv_rwnd();
            }

            // 3. DATA: retransmissions first, then new data.
            if self.data_allowed() {
                has_data = self.fill_data(now, cfg, path, out, &mut at);
            }
        }

        if at == COMMON_HEADER_LEN {
            buf.truncate(start);
            return None;
        }
        buf.truncate(start + at);
        let mut pk = SctpPacket::new_unchecked(&mut buf[start..]);
        pk.set_header(self.lport, self.pport, vtag);
        pk.fill_checksum();
        if has_data {
            let p = &mut self.paths[path];
            p.last_data_send = now;
        }
        let p = &self.paths[path];
        Some(Transmit { src: p.local, dst: p.addr, proto: ip_proto::SCTP, tos: 0, dont_frag: true, ..Default::default() })
    }

    fn emit_sack(&self, out: &mut [u8], at: &mut usize) -> bool {
        let mut gaps = [GapBlock { start: 0, end: 0 }; MAX_GAPS];
        let mut ng = 0;
        let base = self.cum_tsn.next().diff(self.rx_base);
        if base >= 0 {
            let mut i = base as usize;
            while i < self.rx.len() && ng < MAX_GAPS {
                while i < self.rx.len() && self.rx[i].st == 0 {
                    i += 1;
                }
                if i >= self.rx.len() {
                    break;
                }
                let s = i;
                while i < self.rx.len() && self.rx[i].st != 0 {
                    i += 1;
                }
                let off = |j: usize| (j as i64 - base as i64 + 1) as u64;
                let (a, b) = (off(s), off(i - 1));
                if b > u16::MAX as u64 {
                    break;
                }
                gaps[ng] = GapBlock { start: a as u16, end: b as u16 };
                ng += 1;
            }
        }
        let r = ChunkRepr::Sack(SackRepr { cum_tsn: self.cum_tsn, a_rwnd: self.adv_rwnd(), gaps: List::Items(&gaps[..ng]), dups: List::Items(&self.dups[..self.n_dups]) });
        r.emit_at(out, at)
    }

    fn fill_data(&mut self, now: Instant, cfg: &SctpConfig, path: usize, out: &mut [u8], at: &mut usize) -> bool {
        let per_packet_adv = matches!(cfg.sndbuf_adv, SndbufAdv::V3Decile | SndbufAdv::V4Decile);
        let mut any = false;
        let mut any_fast = false;
        // retransmissions
        if self.rtx_count > 0 {
            for k in 0..self.first_unsent {
                let c = self.q[k];
                if c.state != TxState::NeedRtx || (c.rtx_path as usize).min(self.paths.len() - 1) != path {
                    continue;
                }
                let p = &self.paths[path];
                if !(c.fast || p.flight < p.cwnd) {
                    break;
                }
                if !self.put_data(now, cfg, k, path, out, at, per_packet_adv) {
                    break;
                }
                any = true;
                any_fast |= c.fast;
                self.rtx_count -= 1;
                self.stats.retransmits += 1;
                if c.tsn == self.cum_acked.next() {
                    // Linux: restart T3 when (fast-)retransmitting the earliest TSN.
                    self.paths[path].t3 = Some(now + self.paths[path].rto);
                }
            }
            if any_fast {
                // Linux sctp_outq_flush_rtx: leftovers lose fast-retransmit eligibility.
                for k in 0..self.first_unsent {
                    self.q[k].fast = false;
                }
            }
        }
        // new data
        if path == self.active {
            while self.can_send_new_in(cfg, !any) {
                let k = self.first_unsent;
                if !self.put_data(now, cfg, k, path, out, at, per_packet_adv) {
                    break;
                }
                self.first_unsent += 1;
                let len = self.q[k].len;
                self.out_qlen -= len as u64;
                self.stats.data_chunks_sent += 1;
                any = true;
            }
        }
        any
    }

    /// Appends chunk `k` to the packet; accounting for a (re)transmission.
    #[allow(clippy::too_many_arguments)]
    fn put_data(&mut self, now: Instant, cfg: &SctpConfig, k: usize, path: usize, out: &mut [u8], at: &mut usize, per_packet_adv: bool) -> bool {
        let c = self.q[k];
        let need = pad4(DATA_HEADER_LEN + c.len as usize);
        let add_adv = per_packet_adv && *at == COMMON_HEADER_LEN;
        if *at + need + if add_adv { 4 } else { 0 } > out.len() {
            return false;
        }
        if add_adv {
            // V3/V4: marker before the first DATA of a packet; decile or 0 (§1.3).
            let unsent_after = self.out_qlen - if c.state == TxState::Unsent { c.len as u64 } else { 0 };
            let saved = self.out_qlen;
            self.out_qlen = unsent_after;
            let (send, v) = self.adv_value(cfg, path, 10);
            self.out_qlen = saved;
            let flags = if send { v as u8 } else { 0 };
            ChunkRepr::SndbufAdv { flags, value: None }.emit_at(out, at);
            self.stats.sndbuf_adv_sent += 1;
        }
        let off = (c.off - self.sbuf_base) as usize;
        let payload = &self.sbuf[off..off + c.len as usize];
        // RFC 7053: the sender in SHUTDOWN-PENDING asks for an immediate SACK
        let imm = if cfg.sack_immediately && self.state == AssocState::ShutdownPending { data_flags::I } else { 0 };
        let r = ChunkRepr::Data(DataRepr { flags: c.flags | imm, tsn: c.tsn, stream: c.stream, ssn: c.ssn, ppid: 0, payload });
        r.emit_at(out, at);
        let p = &mut self.paths[path];
        let was_rtx = c.state == TxState::NeedRtx;
        let probe = !was_rtx && !c.rtx && !p.rtt_pending;
        if probe {
            p.rtt_pending = true;
        }
        p.flight += c.len;
        if p.t3.is_none() {
            p.t3 = Some(now + p.rto); // §6.3.2 R1
        }
        self.outstanding += c.len as u64;
        self.peer_rwnd = self.peer_rwnd.saturating_sub(c.len);
        let cc = &mut self.q[k];
        cc.state = TxState::InFlight;
        cc.path = path as u8;
        cc.sent_at = now;
        cc.rtx |= was_rtx;
        cc.probe = probe;
        cc.misses = 0;
        true
    }

    /// Whether the endpoint should keep polling this association.
    pub fn has_output(&self, cfg: &SctpConfig) -> bool {
        !self.ctrl.is_empty() || (self.sack_now && self.state != AssocState::Closed) || self.rtx_ready_path().is_some() || (!self.paths.is_empty() && self.can_send_new(cfg))
    }

    /// Snapshot for the driver.
    pub fn info(&self) -> AssocInfo {
        AssocInfo {
            state: self.state,
            peer_rwnd: self.peer_rwnd,
            rwnd: self.adv_rwnd(),
            sndbuf: self.sock.sndbuf,
            rcvbuf: self.sock.rcvbuf,
            sndbuf_used: self.sndbuf_used,
            rcvbuf_used: self.rx_mem,
            out_qlen: self.out_qlen,
            outstanding_bytes: self.outstanding,
            paths: self.paths.iter().enumerate().map(|(i, p)| p.info(i == self.primary)).collect(),
            active_path: self.active,
            error_count: self.error_count,
            stats: self.stats,
        }
    }

    /// `SCTP_PRIMARY_ADDR`.
    pub fn set_primary(&mut self, addr: Ipv4Addr) -> bool {
        match self.path_of(addr) {
            Some(i) => {
                self.primary = i;
                self.update_active();
                true
            }
            None => false,
        }
    }

}

/// Linux `sctp_assoc_add_peer()`: ssthresh starts at the peer's a_rwnd; seed 001's
/// autotuning uses `sctp_wmem[2] / 2` instead.
fn initial_ssthresh(cfg: &SctpConfig, peer_rwnd: u32) -> u32 {
    let v = if cfg.autotune != Autotune::Off { (cfg.sctp_wmem[2] / 2).min(u32::MAX as u64) as u32 } else { peer_rwnd };
    v.max(4 * cfg.pmtu)
}

fn nonzero(rng: &mut Rng) -> u32 {
    loop {
        let v = rng.next_u32();
        if v != 0 {
            return v;
        }
    }
}

pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
