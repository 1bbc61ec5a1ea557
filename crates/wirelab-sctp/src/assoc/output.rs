//! Packet assembly (Linux `sctp_outq_flush()`, `sctp_packet_append_chunk()`): one packet
//! per call, to one destination: pending control chunks for it, a SACK when due (or
//! bundled, §6.1 rule B), then retransmissions and new DATA within cwnd, peer rwnd,
//! Max.Burst and Nagle.
use super::outqueue::TxState;
use super::{Assoc, HB_INFO_LEN};
use crate::config::{SctpConfig, SndbufAdv};
use crate::types::*;
use crate::wire::*;
use wirelab_core::{Instant, Transmit};
use wirelab_wire::ip_proto;

/// A pending control chunk.
#[derive(Clone, Debug)]
pub(super) enum Ctrl {
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

impl Assoc {
    /// Called at the start of every input (packet, timer, command): Max.Burst per flush
    /// (RFC 9260 §6.1 D; Linux `sctp_transport_burst_limited()`).
    pub fn begin_flush(&mut self, cfg: &SctpConfig) {
        let mb = self.sock.max_burst;
        for p in &mut self.paths {
            p.burst_cap = if mb == 0 { u32::MAX } else { p.flight.saturating_add(mb * cfg.pmtu) };
        }
        self.cmt_begin_pass();
    }

    fn data_allowed(&self) -> bool {
        matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownReceived)
    }

    /// The path new data goes to next, if any may go now: the active path, or with CMT
    /// the first path of this pass's round robin with room in its cwnd (FreeBSD
    /// `sctp_med_chunk_output()` serves each destination up to its cwnd in turn).
    fn new_data_path(&self, cfg: &SctpConfig) -> Option<usize> {
        if !self.sock.cmt.on() {
            return self.can_send_new_on(cfg, self.active, true).then_some(self.active);
        }
        self.cmt_order().find(|&i| self.data_path_ok(i) && self.can_send_new_on(cfg, i, true))
    }

    /// RFC 9260 §6.1 rules A/B on `path`, Max.Burst, and Nagle (which only holds back the
    /// first DATA of a packet, as Linux's `sctp_packet_can_append_data()` checks
    /// `sctp_packet_empty`).
    fn can_send_new_on(&self, cfg: &SctpConfig, path: usize, packet_empty: bool) -> bool {
        if !self.data_allowed() || self.out.first_unsent >= self.out.q.len() {
            return false;
        }
        let p = &self.paths[path];
        let c = &self.out.q[self.out.first_unsent];
        if p.flight >= p.cwnd.min(p.burst_cap) {
            return false;
        }
        if c.len > self.peer_rwnd && self.out.outstanding > 0 {
            return false;
        }
        // Nagle (Linux sctp_packet_can_append_data): hold a sub-MTU tail while data is
        // outstanding unless SCTP_NODELAY.
        if packet_empty && !self.sock.nodelay && self.out.outstanding > 0 && self.state == AssocState::Established {
            let room = cfg.pmtu as u64 - 20 - 12 - 16;
            if self.out.out_qlen < room && (c.len as u64) < room {
                return false;
            }
        }
        true
    }

    /// The path of the first retransmission that may go now, if any.
    fn rtx_ready_path(&self) -> Option<usize> {
        if self.out.rtx_count == 0 || !self.data_allowed() {
            return None;
        }
        for k in 0..self.out.first_unsent {
            let c = &self.out.q[k];
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

    /// Whether the endpoint should keep polling this association.
    pub fn has_output(&self, cfg: &SctpConfig) -> bool {
        !self.ctrl.is_empty() || (self.rx.sack_now && self.state != AssocState::Closed) || self.rtx_ready_path().is_some() || (!self.paths.is_empty() && self.new_data_path(cfg).is_some())
    }

    /// Builds one packet into `buf` (after the headroom already in it).
    pub fn poll_transmit(&mut self, now: Instant, cfg: &SctpConfig, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.paths.is_empty() {
            return None;
        }
        // choose the destination. With CMT a delayed SACK goes out as soon as anything is
        // sent, to the path data came from, as FreeBSD's sctp_chunk_output() "piggy-backs"
        // it; Linux bundles it only into DATA to that same path, which CMT's round robin
        // rarely is (the peer's Nagle then waits out the delayed-ack timer).
        let piggyback = self.sock.cmt.on() && cfg.bundle_sack && self.rx.sack_timer.is_some() && (self.rtx_ready_path().is_some() || self.new_data_path(cfg).is_some());
        let sack_due = (self.rx.sack_now || piggyback) && !matches!(self.state, AssocState::CookieWait | AssocState::CookieEchoed | AssocState::Closed);
        let path = if let Some((p, _)) = self.ctrl.front() {
            *p as usize
        } else if sack_due {
            self.rx.data_from
        } else if let Some(p) = self.rtx_ready_path() {
            p
        } else {
            self.new_data_path(cfg)?
        };
        let path = path.min(self.paths.len() - 1);
        let start = buf.len();
        let cap = cfg.pmtu as usize - 20;
        buf.resize(start + cap, 0);
        let out = &mut buf[start..];
        let mut at = COMMON_HEADER_LEN;
        let mut has_data = false;

        // 1. control chunks for this path, in order
        let (vtag, only_init) = self.put_ctrl(cfg, path, out, &mut at);

        if !only_init && self.state != AssocState::Closed {
            // 2. SACK: due, or bundled with DATA going to the address data came from.
            let will_data = path == self.rx.data_from && (self.rtx_ready_path() == Some(path) || (self.data_path_ok(path) && self.can_send_new_on(cfg, path, true)));
            let bundle = self.rx.sack_timer.is_some() && cfg.bundle_sack && will_data;
            if (sack_due || bundle) && !matches!(self.state, AssocState::CookieWait | AssocState::CookieEchoed) && self.rx.emit_sack(self.sock.rcvbuf, self.sock.cmt.on(), self.dac_on(cfg), out, &mut at) {
                self.stats.sacks_sent += 1;
                self.rx.sack_sent(self.sock.rcvbuf);
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

    /// Appends the queued control chunks for `path`, in order; an INIT goes alone
    /// (§6.10). Returns the packet's verification tag and whether it is an INIT packet.
    fn put_ctrl(&mut self, cfg: &SctpConfig, path: usize, out: &mut [u8], at: &mut usize) -> (u32, bool) {
        let mut vtag = self.peer_tag;
        let mut only_init = false;
        let mut k = 0;
        while k < self.ctrl.len() {
            if self.ctrl[k].0 as usize != path {
                k += 1;
                continue;
            }
            let ok = match &self.ctrl[k].1 {
                Ctrl::Init => {
                    if *at != COMMON_HEADER_LEN {
                        break; // INIT is never bundled (§6.10)
                    }
                    vtag = 0;
                    only_init = true;
                    let r = ChunkRepr::Init(InitRepr { init_tag: self.my_tag, a_rwnd: self.rx.rwnd, os: cfg.out_streams, mis: cfg.max_in_streams, initial_tsn: self.out.next_tsn(), params: self.hs.init_params() });
                    r.emit_at(out, at)
                }
                Ctrl::CookieEcho => ChunkRepr::CookieEcho { cookie: self.hs.cookie() }.emit_at(out, at),
                Ctrl::CookieAck => ChunkRepr::CookieAck.emit_at(out, at),
                Ctrl::Heartbeat(info) => ChunkRepr::Heartbeat { info }.emit_at(out, at),
                Ctrl::HeartbeatAck(info) => ChunkRepr::HeartbeatAck { info }.emit_at(out, at),
                Ctrl::Shutdown => ChunkRepr::Shutdown { cum_tsn: self.rx.cum_tsn }.emit_at(out, at),
                Ctrl::ShutdownAck => ChunkRepr::ShutdownAck.emit_at(out, at),
                Ctrl::ShutdownComplete => ChunkRepr::ShutdownComplete { t_bit: false }.emit_at(out, at),
                Ctrl::Abort(code) => {
                    let mut c = [0u8; 4];
                    c[0..2].copy_from_slice(&code.to_be_bytes());
                    c[2..4].copy_from_slice(&4u16.to_be_bytes());
                    ChunkRepr::Abort { t_bit: false, causes: &c }.emit_at(out, at)
                }
                Ctrl::Error(causes) => ChunkRepr::Error { causes }.emit_at(out, at),
                Ctrl::SndbufAdv { flags, value } => super::sndbuf_adv::SndbufAdvState::emit(&mut self.stats, *flags, *value, out, at),
            };
            if !ok {
                if *at == COMMON_HEADER_LEN {
                    self.ctrl.remove(k); // can never fit a packet: drop it
                    continue;
                }
                break;
            }
            self.ctrl.remove(k);
            if only_init {
                break;
            }
        }
        (vtag, only_init)
    }

    fn fill_data(&mut self, now: Instant, cfg: &SctpConfig, path: usize, out: &mut [u8], at: &mut usize) -> bool {
        let per_packet_adv = matches!(cfg.sndbuf_adv, SndbufAdv::V3Decile | SndbufAdv::V4Decile);
        let mut any = false;
        let mut any_fast = false;
        // retransmissions
        if self.out.rtx_count > 0 {
            for k in 0..self.out.first_unsent {
                let c = self.out.q[k];
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
                self.out.rtx_count -= 1;
                self.stats.retransmits += 1;
                if c.tsn == self.out.cum_acked.next() {
                    // Linux: restart T3 when (fast-)retransmitting the earliest TSN.
                    self.paths[path].t3 = Some(now + self.paths[path].rto);
                }
            }
            if any_fast {
                // Linux sctp_outq_flush_rtx: leftovers lose fast-retransmit eligibility.
                for k in 0..self.out.first_unsent {
                    self.out.q[k].fast = false;
                }
            }
        }
        // new data
        if self.data_path_ok(path) {
            while self.can_send_new_on(cfg, path, !any) {
                let k = self.out.first_unsent;
                if !self.put_data(now, cfg, k, path, out, at, per_packet_adv) {
                    break;
                }
                self.out.first_unsent += 1;
                let len = self.out.q[k].len;
                self.out.out_qlen -= len as u64;
                self.stats.data_chunks_sent += 1;
                any = true;
            }
        }
        any
    }

    /// Appends chunk `k` to the packet; accounting for a (re)transmission.
    #[allow(clippy::too_many_arguments)]
    fn put_data(&mut self, now: Instant, cfg: &SctpConfig, k: usize, path: usize, out: &mut [u8], at: &mut usize, per_packet_adv: bool) -> bool {
        let c = self.out.q[k];
        let need = pad4(DATA_HEADER_LEN + c.len as usize);
        let add_adv = per_packet_adv && *at == COMMON_HEADER_LEN;
        if *at + need + if add_adv { 4 } else { 0 } > out.len() {
            return false;
        }
        if add_adv {
            // V3/V4: marker before the first DATA of a packet; decile or 0 (§1.3).
            let unsent = if c.state == TxState::Unsent { c.len as u64 } else { 0 };
            self.put_adv_marker(cfg, path, unsent, out, at);
        }
        let payload = self.out.payload(&c);
        // RFC 7053: the sender in SHUTDOWN-PENDING asks for an immediate SACK
        let imm = if cfg.sack_immediately && self.state == AssocState::ShutdownPending { data_flags::I } else { 0 };
        let r = ChunkRepr::Data(DataRepr { flags: c.flags | imm, tsn: c.tsn, stream: c.stream, ssn: c.ssn, ppid: 0, payload });
        r.emit_at(out, at);
        let p = &mut self.paths[path];
        let was_rtx = c.state == TxState::NeedRtx;
        p.bytes_sent += c.len as u64;
        p.retransmits += was_rtx as u64;
        let probe = !was_rtx && !c.rtx && !p.rtt_pending;
        if probe {
            p.rtt_pending = true;
        }
        p.flight += c.len;
        if p.t3.is_none() {
            p.t3 = Some(now + p.rto); // §6.3.2 R1
        }
        self.out.outstanding += c.len as u64;
        self.peer_rwnd = self.peer_rwnd.saturating_sub(c.len);
        let cc = &mut self.out.q[k];
        cc.state = TxState::InFlight;
        cc.path = path as u8;
        cc.sent_at = now;
        cc.rtx |= was_rtx;
        cc.probe = probe;
        cc.misses = 0;
        true
    }
}
