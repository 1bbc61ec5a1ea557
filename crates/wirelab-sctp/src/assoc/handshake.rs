//! Association setup (RFC 9260 §5): INIT, INIT-ACK, COOKIE-ECHO, COOKIE-ACK, the T1-init
//! and T1-cookie timers, and the stale-cookie retry (Linux `sm_statefuns.c`
//! `sctp_sf_do_5_1*`, `sctp_sf_cookie_wait_*`, `sctp_sf_do_5_2_6_stale`).
use super::autotune::initial_ssthresh;
use super::cmt::Pool;
use super::output::Ctrl;
use super::{be32, nonzero, pick_local, Assoc, Path, SockSettings, MAX_ADDRS};
use crate::config::SctpConfig;
use crate::types::*;
use crate::wire::*;
use std::net::Ipv4Addr;
use wirelab_core::{Duration, Instant, Rng, SockEvent};

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

/// The client side's handshake state.
#[derive(Debug)]
pub(super) struct Handshake {
    /// Optional parameters of our INIT (addresses, cookie preservative, address types).
    init_params: Vec<u8>,
    /// The peer's state cookie, echoed until COOKIE-ACK.
    cookie: Vec<u8>,
    pub(super) t1: Option<Instant>,
    t1_count: u32,
    t1_rto: Duration,
    /// Cookie Preservative to ask for after a stale cookie (ms; 0 = none).
    init_preservative_ms: u32,
}

impl Handshake {
    pub(super) fn new(cfg: &SctpConfig) -> Handshake {
        Handshake { init_params: Vec::new(), cookie: Vec::new(), t1: None, t1_count: 0, t1_rto: cfg.rto_initial, init_preservative_ms: 0 }
    }

    fn build_init_params(&mut self, local_addrs: &[Ipv4Addr]) {
        let mut p = vec![0u8; 4 * (8 * MAX_ADDRS + 8)];
        let mut at = 0;
        if local_addrs.len() > 1 {
            for &l in local_addrs.iter().take(MAX_ADDRS) {
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

    pub(super) fn init_params(&self) -> &[u8] {
        &self.init_params
    }

    pub(super) fn cookie(&self) -> &[u8] {
        &self.cookie
    }
}

impl Assoc {
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
        a.hs.build_init_params(&a.local_addrs);
        a.state = AssocState::CookieWait;
        a.ctrl.push_back((0, Ctrl::Init));
        a.hs.t1 = Some(now + a.hs.t1_rto);
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

    fn setup_peer(&mut self, peer_itsn: u32, peer_rwnd: u32, os: u16, is: u16) {
        self.rx.setup(peer_itsn, is);
        self.peer_rwnd = peer_rwnd;
        self.out.set_streams(os);
    }

    fn enter_established(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        self.state = AssocState::Established;
        self.hs.t1 = None;
        for p in &mut self.paths {
            p.arm_hb(now, cfg, rng);
        }
        self.adv.on_established(now, cfg);
        let n = self.paths.len();
        for p in &mut self.paths {
            p.cwnd = Pool::initial_cwnd(self.sock.cmt, p.cwnd, n, cfg.pmtu);
        }
        self.update_active();
    }

    /// INIT-ACK in COOKIE-WAIT (§5.2.3, §5.1 C): record the peer, echo its cookie.
    pub(super) fn on_init_ack(&mut self, now: Instant, cfg: &SctpConfig, i: &InitRepr<'_>, from: usize) {
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
        self.hs.cookie = cookie.to_vec();
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
        self.hs.t1_count = 0;
        self.hs.t1_rto = cfg.rto_initial;
        self.hs.t1 = Some(now + self.hs.t1_rto);
    }

    /// Duplicate COOKIE-ECHO (§5.2.4 case D: tags match): resend COOKIE-ACK.
    pub(super) fn on_cookie_echo(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng, cookie: &[u8], from: usize) {
        if cookie.len() >= 8 && be32(cookie, 0) == self.my_tag && be32(cookie, 4) == self.peer_tag && self.state != AssocState::Closed {
            self.ctrl.push_back((from as u8, Ctrl::CookieAck));
            if self.state == AssocState::CookieEchoed {
                self.enter_established(now, cfg, rng);
                self.events.push(SockEvent::Connected);
            }
        }
    }

    /// COOKIE-ACK in COOKIE-ECHOED (§5.1 E).
    pub(super) fn on_cookie_ack(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        if self.state == AssocState::CookieEchoed {
            self.hs.cookie = Vec::new();
            self.enter_established(now, cfg, rng);
            self.events.push(SockEvent::Connected);
        }
    }

    /// ERROR chunk: only Stale Cookie changes the handshake.
    pub(super) fn on_error(&mut self, now: Instant, cfg: &SctpConfig, causes: &[u8]) {
        for t in TlvIter::new(causes).flatten() {
            // §5.2.6 stale cookie: back to COOKIE-WAIT, INIT with a cookie preservative.
            if t.kind == cause::STALE_COOKIE && self.state == AssocState::CookieEchoed && t.value.len() >= 4 {
                let stale_us = be32(t.value, 0);
                self.hs.init_preservative_ms = (stale_us / 1000).saturating_mul(2).max(1);
                self.hs.build_init_params(&self.local_addrs);
                self.state = AssocState::CookieWait;
                self.ctrl.retain(|(_, c)| !matches!(c, Ctrl::CookieEcho));
                self.ctrl.push_back((self.primary as u8, Ctrl::Init));
                self.hs.t1_count += 1;
                self.hs.t1 = Some(now + self.hs.t1_rto);
                if self.hs.t1_count > cfg.max_init_retransmits {
                    self.fail(SockEvent::ConnectFailed, false);
                }
            }
        }
    }

    /// T1-init / T1-cookie (RFC 9260 §5.1 C, §6.3.3 rules for INIT: RTO doubles).
    pub(super) fn t1_expired(&mut self, now: Instant, cfg: &SctpConfig) {
        self.hs.t1_count += 1;
        if self.hs.t1_count > cfg.max_init_retransmits {
            self.hs.t1 = None;
            self.fail(SockEvent::ConnectFailed, false);
            return;
        }
        self.hs.t1_rto = (self.hs.t1_rto * 2).min(cfg.rto_max);
        let c = if self.state == AssocState::CookieWait { Ctrl::Init } else { Ctrl::CookieEcho };
        if !self.ctrl.iter().any(|(_, x)| std::mem::discriminant(x) == std::mem::discriminant(&c)) {
            self.ctrl.push_back((self.primary as u8, c));
        }
        self.hs.t1 = Some(now + self.hs.t1_rto);
    }
}
