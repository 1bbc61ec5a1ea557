//! One SCTP association (RFC 9260) and its one-to-one socket.
//!
//! The association owns no I/O: the endpoint feeds it parsed packets and timer ticks and
//! drains its packets. Names follow Linux `net/sctp/` (`outqueue.c`, `sm_statefuns.c`,
//! `transport.c`, `associola.c`, `ulpqueue.c`) and the RFC sections are cited inline.
//!
//! One module per concern, each with the state it owns:
//!
//! | module | concern | state |
//! |---|---|---|
//! | this file | the [`Assoc`] itself, chunk dispatch, timers, snapshot | tags, ports, paths |
//! | `handshake` | INIT … COOKIE-ACK, T1, stale cookies (§5) | `Handshake` |
//! | `path` | one destination: RTT/RTO, cwnd arithmetic, heartbeat timer | `Path` |
//! | `pathmgmt` | heartbeats, strikes, PF, active/alternate path (§8) | (paths) |
//! | `outqueue` | send buffer, TSN assignment, fragmentation (`sctp_sendmsg`) | `OutQueue` |
//! | `sack` | SACK processing, miss indications, cwnd growth (`sctp_outq_sack`) | (out queue) |
//! | `retransmit` | T3-rtx, fast retransmit, marking (`sctp_retransmit`) | (out queue) |
//! | `output` | packet assembly: control, SACK, DATA (`sctp_outq_flush`) | `Ctrl` queue |
//! | `receiver` | TSN map, reassembly, delivery, SACK generation (`tsnmap.c`, `ulpqueue.c`) | `Receiver` |
//! | `shutdown` | SHUTDOWN/ABORT, T2 (§9) | `Shutdown` |
//! | `cmt` | concurrent multipath transfer: scheduling, RTX policies, SFR/DAC, CMT/RP | (paths) |
//! | `autotune` | seed system 2's buffer autotuning | `RcvSpace` |
//! | `sndbuf_adv` | seed system 1's chunk 0x96 | `SndbufAdvState` |
use crate::config::{Autotune, Cmt, SctpConfig, SndbufAdv};
use crate::types::*;
use crate::wire::*;
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use wirelab_core::{Instant, Rng, SockEvent};

mod autotune;
mod cmt;
mod handshake;
mod outqueue;
mod output;
mod path;
mod pathmgmt;
mod receiver;
mod retransmit;
mod sack;
mod shutdown;
mod sndbuf_adv;

use autotune::RcvSpace;
pub(crate) use handshake::CookieData;
use handshake::Handshake;
use outqueue::OutQueue;
use output::Ctrl;
pub(crate) use path::Path;
use receiver::Receiver;
use shutdown::Shutdown;
use sndbuf_adv::SndbufAdvState;

/// Bytes of a HEARTBEAT info value: path index, nonce, send time.
pub(crate) const HB_INFO_LEN: usize = 24;
/// Maximum addresses per side carried in a state cookie.
pub(crate) const MAX_ADDRS: usize = 8;

/// Socket-level settings kept with the association (one-to-one style).
#[derive(Clone, Copy, Debug)]
pub(crate) struct SockSettings {
    pub nodelay: bool,
    pub sndbuf: u64,
    pub rcvbuf: u64,
    pub sndbuf_locked: bool,
    pub rcvbuf_locked: bool,
    pub max_burst: u32,
    /// CMT mode (`net.inet.sctp.cmt_on_off`, `SCTP_CMT_ON_OFF`).
    pub cmt: Cmt,
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
            cmt: cfg.cmt,
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
    /// Path new data goes to (`asoc->peer.active_path`).
    active: usize,
    pub my_tag: u32,
    pub peer_tag: u32,
    pub sock: SockSettings,
    pub events: Vec<SockEvent>,
    /// Heap bookkeeping for the endpoint (lazy deletion).
    pub armed: Option<Instant>,
    pub in_dirty: bool,
    pub listener: Option<u32>,
    /// Association error count (`asoc->overall_error_count`).
    pub error_count: u32,
    /// Aborted or failed (reads return `Reset`).
    reset: bool,
    hs: Handshake,
    shut: Shutdown,
    /// Pending control chunks and the path each goes to.
    ctrl: VecDeque<(u8, Ctrl)>,
    out: OutQueue,
    /// Peer's receive window as tracked by the sender (`asoc->peer.rwnd`).
    pub peer_rwnd: u32,
    /// Fast recovery exit point (§7.2.4 item 4); with CMT each path has its own.
    fast_recovery: Option<Tsn>,
    /// Path the previous CMT output pass started at.
    cmt_last_start: Option<usize>,
    adv: SndbufAdvState,
    rx: Receiver,
    tune: RcvSpace,
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

/// What the chunk loop of [`Assoc::on_packet`] does after one chunk.
enum Next {
    /// Go on with the next chunk.
    Chunk,
    /// Stop processing chunks; the packet's DATA (if any) is still acknowledged.
    Stop,
    /// Drop the rest of the packet, DATA handling included.
    Drop,
}

impl Assoc {
    #[allow(clippy::too_many_arguments)]
    fn base(cfg: &SctpConfig, sock: SockSettings, lport: u16, pport: u16, local_addrs: Vec<Ipv4Addr>, my_tag: u32, my_itsn: u32) -> Assoc {
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
            error_count: 0,
            reset: false,
            hs: Handshake::new(cfg),
            shut: Shutdown::default(),
            ctrl: VecDeque::new(),
            out: OutQueue::new(my_itsn, cfg.out_streams),
            peer_rwnd: 65535,
            fast_recovery: None,
            cmt_last_start: None,
            adv: SndbufAdvState::default(),
            rx: Receiver::new(sock.rcvbuf),
            tune: RcvSpace::default(),
            stats: AssocStats::default(),
        }
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
        m(self.hs.t1);
        m(self.shut.t2);
        m(self.rx.sack_timer);
        m(self.adv.timer);
        for p in &self.paths {
            m(p.t3);
            m(p.hb_at);
        }
        t
    }

    /// Handles every expired timer (no-op when none is due).
    pub fn on_timeout(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        if self.hs.t1.is_some_and(|t| t <= now) {
            self.t1_expired(now, cfg);
        }
        if self.shut.t2.is_some_and(|t| t <= now) {
            self.t2_expired(now, cfg, rng);
        }
        if self.rx.sack_timer.is_some_and(|t| t <= now) {
            self.rx.sack_timer = None;
            self.rx.sack_now = true;
        }
        if self.adv.timer.is_some_and(|t| t <= now) {
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

    // -------------------------------------------------------------------------------
    // input
    // -------------------------------------------------------------------------------

    fn path_of(&self, addr: Ipv4Addr) -> Option<usize> {
        self.paths.iter().position(|p| p.addr == addr)
    }

    /// Verification tag rules of RFC 9260 §8.5 / §8.5.1 for one chunk.
    fn tag_ok(&self, kind: u8, flags: u8, vtag: u32) -> bool {
        match kind {
            kind::INIT => vtag == 0,
            kind::ABORT | kind::SHUTDOWN_COMPLETE => {
                if flags & 1 != 0 {
                    vtag == self.peer_tag
                } else {
                    vtag == self.my_tag
                }
            }
            kind::COOKIE_ECHO => true,
            _ => vtag == self.my_tag,
        }
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
            if !self.tag_ok(c.kind(), c.flags(), vtag) {
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
            match self.on_chunk(now, cfg, rng, &c, repr, from, &mut had_data) {
                Next::Chunk => {}
                Next::Stop => break,
                Next::Drop => return,
            }
            if self.state == AssocState::Closed && self.reset {
                return;
            }
        }
        if had_data {
            self.after_data_packet(now, cfg);
        }
    }

    /// One chunk of an incoming packet, dispatched by type.
    #[allow(clippy::too_many_arguments)]
    fn on_chunk(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng, c: &Chunk<&[u8]>, repr: ChunkRepr<'_>, from: usize, had_data: &mut bool) -> Next {
        match repr {
            ChunkRepr::Data(d) => {
                if matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownSent) {
                    *had_data = true;
                    let dac = self.dac_on(cfg);
                    self.on_data(&d, from, cfg, dac);
                }
            }
            ChunkRepr::Sack(s) => self.on_sack(now, cfg, rng, &s),
            ChunkRepr::InitAck(i) => self.on_init_ack(now, cfg, &i, from),
            ChunkRepr::Init(_) => {
                // INIT on an existing association (restart/collision, §5.2): not
                // supported; discarded (documented deviation).
                return Next::Drop;
            }
            ChunkRepr::CookieEcho { cookie } => self.on_cookie_echo(now, cfg, rng, cookie, from),
            ChunkRepr::CookieAck => self.on_cookie_ack(now, cfg, rng),
            ChunkRepr::Heartbeat { info } => {
                if self.state != AssocState::Closed {
                    self.ctrl.push_back((from as u8, Ctrl::HeartbeatAck(info.to_vec())));
                }
            }
            ChunkRepr::HeartbeatAck { info } => self.on_hb_ack(now, cfg, info),
            ChunkRepr::Abort { .. } => {
                self.on_abort();
                return Next::Drop;
            }
            ChunkRepr::Shutdown { cum_tsn } => self.on_shutdown(now, cfg, rng, cum_tsn),
            ChunkRepr::ShutdownAck => self.on_shutdown_ack(from),
            ChunkRepr::ShutdownComplete { .. } => self.on_shutdown_complete(),
            ChunkRepr::Error { causes } => {
                self.stats.errors_received += 1;
                self.on_error(now, cfg, causes);
            }
            ChunkRepr::ForwardTsn { .. } => {
                // PR-SCTP is not negotiated (we never send Forward-TSN-Supported).
            }
            ChunkRepr::SndbufAdv { flags, .. } if cfg.sndbuf_adv != SndbufAdv::Off => self.adv.received(&mut self.stats, flags),
            _ => return self.on_unknown_chunk(c, from),
        }
        Next::Chunk
    }

    /// A chunk unknown to this host (including 0x96 when the extension is off): RFC 9260
    /// §3.2 upper-two-bit rules.
    fn on_unknown_chunk(&mut self, c: &Chunk<&[u8]>, from: usize) -> Next {
        let kind = c.kind();
        if kind == kind::SNDBUF_ADV {
            SndbufAdvState::skipped(&mut self.stats);
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
            return Next::Stop;
        }
        self.stats.unknown_chunks_skipped += 1;
        Next::Chunk
    }

    // -------------------------------------------------------------------------------
    // socket
    // -------------------------------------------------------------------------------

    /// `sctp_wspace()`: free send space.
    pub fn wspace(&self) -> i64 {
        self.sock.sndbuf as i64 - self.out.sndbuf_used as i64
    }

    /// `SO_RCVBUF` before the window was advertised beyond a (re)sent INIT: rwnd =
    /// rcvbuf/2 again.
    pub fn rcvbuf_changed_before_init(&mut self) {
        self.rx.rwnd = (self.sock.rcvbuf / 2).max(1500) as u32;
    }

    /// Snapshot for the driver.
    pub fn info(&self) -> AssocInfo {
        AssocInfo {
            state: self.state,
            peer_rwnd: self.peer_rwnd,
            rwnd: self.rx.adv_rwnd(self.sock.rcvbuf),
            sndbuf: self.sock.sndbuf,
            rcvbuf: self.sock.rcvbuf,
            sndbuf_used: self.out.sndbuf_used,
            rcvbuf_used: self.rx.mem,
            out_qlen: self.out.out_qlen,
            outstanding_bytes: self.out.outstanding,
            paths: self.paths.iter().enumerate().map(|(i, p)| p.info(i == self.primary)).collect(),
            active_path: self.active,
            error_count: self.error_count,
            stats: self.stats,
        }
    }
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
