//! The receive side: TSN map, duplicate detection, reassembly, ordered/unordered and
//! partial delivery, the receive window, and when to SACK (Linux `sctp_eat_data()`,
//! `tsnmap.c`, `ulpqueue.c`, `sctp_assoc_rwnd_increase()`, RFC 9260 §6.2, §6.7).
use super::output::Ctrl;
use super::Assoc;
use crate::config::SctpConfig;
use crate::types::*;
use crate::wire::*;
use std::collections::VecDeque;
use wirelab_core::Instant;

/// Duplicate TSNs remembered for the next SACK (Linux `SCTP_MAX_DUP_TSNS`).
const MAX_DUPS: usize = 16;
/// Gap blocks in one SACK (Linux `SCTP_MAX_GABS`; TSNs beyond the 16th gap go unreported).
const MAX_GAPS: usize = 16;
/// Gap blocks in one SACK of a CMT receiver: as many as fit the packet, as FreeBSD's
/// `sctp_send_sack()` does (368 at PMTU 1500), up to this bound. With CMT's reordering
/// sixteen are too few: TSNs beyond them look reneged to the sender, which puts them back
/// in flight (docs/cmt.md).
const MAX_GAPS_CMT: usize = 512;
/// TSNs tracked beyond the cumulative ack (Linux `SCTP_TSN_MAP_SIZE`; later ones dropped).
const MAX_RX_SPAN: usize = 4096;
/// Linux `SCTP_DEFAULT_MINWINDOW`.
const SCTP_DEFAULT_MINWINDOW: u32 = 1500;
/// Linux `SCTP_DEFAULT_RWND_SHIFT`: window-update SACK threshold is rcvbuf >> 4.
const SCTP_DEFAULT_RWND_SHIFT: u32 = 4;

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

/// Receive state: the TSN map as a window of slots from `base`, stream reassembly queues,
/// the advertised window and the delayed-SACK state.
#[derive(Debug)]
pub(super) struct Receiver {
    slots: VecDeque<RxSlot>,
    /// TSN of `slots[0]`.
    base: Tsn,
    /// Cumulative TSN received.
    pub cum_tsn: Tsn,
    dups: [Tsn; MAX_DUPS],
    n_dups: usize,
    /// Inbound stream state, grown on first use (a peer may announce 65535 streams).
    in_streams: Vec<InStream>,
    /// Negotiated inbound streams.
    n_in: u16,
    ready: VecDeque<ReadyMsg>,
    pd_first: Option<Tsn>,
    pool: Vec<Vec<u8>>,
    /// `asoc->rwnd`.
    pub rwnd: u32,
    /// rwnd in the last SACK sent.
    a_rwnd_sent: u32,
    /// Receive-memory charge (`rmem_alloc`).
    pub mem: u64,
    /// A SACK must go out with the next packet.
    pub sack_now: bool,
    /// Delayed-SACK timer.
    pub sack_timer: Option<Instant>,
    /// DATA packets since the last SACK.
    sack_pkts: u32,
    /// Path the last DATA came from (`asoc->peer.last_data_from`).
    pub data_from: usize,
}

impl Receiver {
    pub(super) fn new(rcvbuf: u64) -> Receiver {
        let rwnd = if rcvbuf < SCTP_DEFAULT_MINWINDOW as u64 { SCTP_DEFAULT_MINWINDOW } else { (rcvbuf / 2).min(u32::MAX as u64) as u32 };
        Receiver {
            slots: VecDeque::new(),
            base: Tsn(0),
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
            mem: 0,
            sack_now: false,
            sack_timer: None,
            sack_pkts: 0,
            data_from: 0,
        }
    }

    pub(super) fn setup(&mut self, peer_itsn: u32, is: u16) {
        self.base = Tsn(peer_itsn);
        self.cum_tsn = Tsn(peer_itsn).prev();
        self.n_in = is.max(1);
        self.in_streams = Vec::new();
    }

    /// The window to advertise: zero while receive memory is at `sk_rcvbuf`.
    pub(super) fn adv_rwnd(&self, rcvbuf: u64) -> u32 {
        if self.mem >= rcvbuf {
            0
        } else {
            self.rwnd
        }
    }

    /// A message (or part of one) is ready to read.
    pub(super) fn readable(&self) -> bool {
        self.ready.front().is_some_and(|m| {
            let i = m.cur.diff(self.base);
            i >= 0 && (i as usize) < self.slots.len() && self.slots[i as usize].st == 1
        })
    }

    fn note_dup(&mut self, tsn: Tsn, stats: &mut AssocStats) {
        stats.dup_tsns += 1;
        if self.n_dups < MAX_DUPS {
            self.dups[self.n_dups] = tsn;
            self.n_dups += 1;
        }
        self.sack_now = true; // §6.7: duplicates are reported at once
    }

    /// Linux `sctp_ulpq_renege()`: with nothing on the socket's receive queue, drop held
    /// out-of-order data, highest TSN first (`sctp_ulpq_renege_order()` /
    /// `_frags()` + `sctp_tsnmap_renege()`), until `needed` bytes are free; true if so.
    /// The dropped TSNs leave the map, so the next SACK no longer reports them and the
    /// sender retransmits them (§6.2.1 D iii).
    fn renege(&mut self, needed: u32, stats: &mut AssocStats) -> bool {
        if !self.ready.is_empty() {
            return false;
        }
        let first_missing = self.cum_tsn.next().diff(self.base).max(0) as usize;
        let mut freed = 0u32;
        let mut i = self.slots.len();
        while freed < needed && i > first_missing + 1 {
            i -= 1;
            let s = &mut self.slots[i];
            if s.st != 1 {
                continue;
            }
            s.st = 0;
            freed += s.len;
            self.rwnd = self.rwnd.saturating_add(s.len);
            self.mem -= s.charge as u64;
            let (stream, b) = (s.stream, std::mem::take(&mut s.buf));
            if self.pool.len() < 64 {
                self.pool.push(b);
            }
            // a complete ordered message waiting for its SSN loses a fragment: forget it
            // (it completes again when the TSN is retransmitted)
            let tsn = self.base.add(i as u32);
            if let Some(st) = self.in_streams.get_mut(stream as usize) {
                st.waiting.retain(|&(_, f, l)| !(f <= tsn && tsn <= l));
            }
            stats.reneged_tsns += 1;
        }
        while self.slots.len() > first_missing + 1 && self.slots.back().is_some_and(|s| s.st == 0) {
            self.slots.pop_back();
        }
        freed >= needed
    }

    /// Advances the cumulative TSN over received slots; true if gaps remain.
    fn advance_cum(&mut self) -> bool {
        let mut i = self.cum_tsn.next().diff(self.base) as usize;
        while i < self.slots.len() && self.slots[i].st != 0 {
            self.cum_tsn = self.cum_tsn.next();
            i += 1;
        }
        i < self.slots.len()
    }

    /// Checks whether the message containing slot `idx` is complete and deliverable.
    fn try_complete(&mut self, idx: usize) {
        let s = &self.slots[idx];
        let stream = s.stream;
        let mut first = idx;
        while self.slots[first].flags & data_flags::B == 0 {
            if first == 0 {
                return;
            }
            let p = &self.slots[first - 1];
            if p.st != 1 || p.stream != stream || p.flags & data_flags::E != 0 {
                return;
            }
            first -= 1;
        }
        let mut last = idx;
        while self.slots[last].flags & data_flags::E == 0 {
            last += 1;
            if last >= self.slots.len() || self.slots[last].st != 1 || self.slots[last].stream != stream || self.slots[last].flags & data_flags::B != 0 {
                return;
            }
        }
        let ftsn = self.base.add(first as u32);
        if self.pd_first == Some(ftsn) {
            return; // already being delivered partially
        }
        let ltsn = self.base.add(last as u32);
        let f = &self.slots[first];
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
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            if s.st != 1 || s.flags & data_flags::B == 0 {
                continue;
            }
            let ok = s.flags & data_flags::U != 0 || self.in_streams.get(s.stream as usize).is_some_and(|st| st.next_ssn == s.ssn);
            if ok {
                let stream = s.stream;
                let unordered = s.flags & data_flags::U != 0;
                let ftsn = self.base.add(i as u32);
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

    /// Copies the front ready message (or its next part) into `out`:
    /// (bytes, end of message reached, the message's state after the copy).
    fn copy_out(&mut self, mut m: ReadyMsg, out: &mut [u8]) -> (usize, bool, ReadyMsg) {
        let mut n = 0;
        let mut eom = false;
        while n < out.len() {
            let idx = m.cur.diff(self.base);
            if idx < 0 || idx as usize >= self.slots.len() {
                break;
            }
            let slot = &mut self.slots[idx as usize];
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
                self.mem -= slot.charge as u64;
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
        (n, eom, m)
    }

    /// After a read: the message leaves the ready queue (or remembers its position), and
    /// consumed slots at or below the cumulative TSN leave the map.
    fn finish_read(&mut self, eom: bool, m: ReadyMsg) {
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
        while let Some(f) = self.slots.front() {
            if f.st == 2 && self.base <= self.cum_tsn {
                self.slots.pop_front();
                self.base = self.base.next();
            } else {
                break;
            }
        }
    }

    /// Writes a SACK (cumulative TSN, up to 16 gap blocks, duplicates) at `at`. With CMT's
    /// DAC the flags carry the DATA packets received since the last SACK (FreeBSD
    /// `sctp_send_sack()`: `flags |= cmt_dac_pkts_rcvd << 6`, here capped at 3).
    pub(super) fn emit_sack(&self, rcvbuf: u64, cmt: bool, dac: bool, out: &mut [u8], at: &mut usize) -> bool {
        let flags = if dac { (self.sack_pkts.min(3) as u8) << 6 } else { 0 };
        let mut gaps = [GapBlock { start: 0, end: 0 }; MAX_GAPS_CMT];
        let room = out.len().saturating_sub(*at + 16 + 4 * self.n_dups) / 4;
        let max_gaps = if cmt { room.min(MAX_GAPS_CMT) } else { MAX_GAPS };
        let mut ng = 0;
        let base = self.cum_tsn.next().diff(self.base);
        if base >= 0 {
            let mut i = base as usize;
            while i < self.slots.len() && ng < max_gaps {
                while i < self.slots.len() && self.slots[i].st == 0 {
                    i += 1;
                }
                if i >= self.slots.len() {
                    break;
                }
                let s = i;
                while i < self.slots.len() && self.slots[i].st != 0 {
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
        let r = ChunkRepr::Sack(SackRepr { flags, cum_tsn: self.cum_tsn, a_rwnd: self.adv_rwnd(rcvbuf), gaps: List::Items(&gaps[..ng]), dups: List::Items(&self.dups[..self.n_dups]) });
        r.emit_at(out, at)
    }

    /// A SACK went out: the delayed-ack state restarts.
    pub(super) fn sack_sent(&mut self, rcvbuf: u64) {
        self.sack_now = false;
        self.sack_timer = None;
        self.sack_pkts = 0;
        self.n_dups = 0;
        self.a_rwnd_sent = self.adv_rwnd(rcvbuf);
    }
}

impl Assoc {
    /// One DATA chunk (Linux `sctp_eat_data()` + tsnmap + ulpq). With CMT's DAC
    /// (`dac`), reordering does not force an immediate SACK: the delayed-ack rules still
    /// ack every `sack_freq` packets (FreeBSD `sctp_sack_check()`, "with CMT, delay acks
    /// even in the face of reordering").
    pub(super) fn on_data(&mut self, d: &DataRepr<'_>, from: usize, cfg: &SctpConfig, dac: bool) {
        self.rx.data_from = from;
        if cfg.sack_immediately && d.flags & data_flags::I != 0 {
            self.rx.sack_now = true; // RFC 7053 I bit (sctp_sf_eat_data_6_2: SCTP_FORCE)
        }
        let tsn = d.tsn;
        if tsn <= self.rx.cum_tsn {
            self.rx.note_dup(tsn, &mut self.stats);
            return;
        }
        let idx = tsn.diff(self.rx.base);
        if idx < 0 || idx as usize >= MAX_RX_SPAN {
            return;
        }
        let idx = idx as usize;
        if idx < self.rx.slots.len() && self.rx.slots[idx].st != 0 {
            self.rx.note_dup(tsn, &mut self.stats);
            return;
        }
        let len = d.payload.len() as u32;
        // Linux sctp_eat_data: no room → discard (and SACK at once).
        let frag = cfg.frag_point() as u32;
        let charge = cfg.chunk_truesize(d.payload.len()) as u32;
        if self.rx.mem + charge as u64 >= self.sock.rcvbuf {
            self.autotune_rcvbuf(cfg, self.rx.mem + charge as u64);
        }
        let cmt = self.sock.cmt.on();
        let rx = &mut self.rx;
        let rmem_full = rx.mem >= self.sock.rcvbuf;
        let no_room = rx.rwnd == 0 || len > rx.rwnd.saturating_add(frag);
        // A CMT receiver takes a TSN that fills a hole below the highest one received even
        // with no window left (FreeBSD sctp_process_a_data_chunk(): at my_rwnd <= 0 only
        // TSNs above highest_tsn_inside_map are dropped); CMT's reordering can fill the
        // whole window with data above a hole.
        let fills_hole = cmt && idx < rx.slots.len();
        if (no_room && !fills_hole) || (rmem_full && tsn != rx.cum_tsn.next() && !fills_hole) {
            // Linux sctp_eat_data(): the next TSN with a gap behind it may renege
            // out-of-order data to make room (SCTP_CMD_RENEGE → sctp_ulpq_renege()).
            let renege = no_room && !cmt && tsn == rx.cum_tsn.next() && idx + 1 < rx.slots.len() && rx.renege(len, &mut self.stats);
            if !renege {
                rx.sack_now = true;
                return;
            }
        }
        while rx.slots.len() <= idx {
            rx.slots.push_back(RxSlot::default());
        }
        if tsn != rx.cum_tsn.next() && !dac {
            rx.sack_now = true; // out of order: SACK immediately (§6.7)
        }
        let slot = &mut rx.slots[idx];
        if d.stream >= rx.n_in {
            // §6.5 invalid stream: acknowledge the TSN, discard the data, report.
            slot.st = 2;
            let mut cause = [0u8; 8];
            cause[0..2].copy_from_slice(&cause::INVALID_STREAM.to_be_bytes());
            cause[2..4].copy_from_slice(&8u16.to_be_bytes());
            cause[4..6].copy_from_slice(&d.stream.to_be_bytes());
            self.ctrl.push_back((from as u8, Ctrl::Error(cause.to_vec())));
        } else {
            if d.stream as usize >= rx.in_streams.len() {
                rx.in_streams.resize(d.stream as usize + 1, InStream::default());
            }
            let mut buf = rx.pool.pop().unwrap_or_default();
            buf.clear();
            buf.extend_from_slice(d.payload);
            *slot = RxSlot { st: 1, flags: d.flags, stream: d.stream, ssn: d.ssn, len, read: 0, charge, buf };
            rx.rwnd = rx.rwnd.saturating_sub(len);
            rx.mem += charge as u64;
        }
        if rx.advance_cum() && !dac {
            rx.sack_now = true; // gaps remain
        }
        if rx.slots[idx].st == 1 {
            rx.try_complete(idx);
        }
        rx.maybe_partial_delivery(cfg);
    }

    /// After the DATA of one packet: delayed SACK every `sack_freq` packets or after
    /// `sack_timeout` (§6.2); in SHUTDOWN-SENT, a SHUTDOWN too (§9.2).
    pub(super) fn after_data_packet(&mut self, now: Instant, cfg: &SctpConfig) {
        if self.state == AssocState::ShutdownSent {
            // §9.2: answer DATA in SHUTDOWN-SENT with a SHUTDOWN (and SACK), restart T2.
            if !self.ctrl.iter().any(|(_, c)| matches!(c, Ctrl::Shutdown)) {
                self.ctrl.push_back((self.rx.data_from as u8, Ctrl::Shutdown));
            }
            self.shut.t2_path = self.active;
            self.shut.t2 = Some(now + self.paths[self.active].rto);
        }
        self.rx.sack_pkts += 1;
        if self.rx.sack_pkts >= cfg.sack_freq || self.state == AssocState::ShutdownSent {
            self.rx.sack_now = true;
        }
        if !self.rx.sack_now && self.rx.sack_timer.is_none() {
            self.rx.sack_timer = Some(now + cfg.sack_timeout);
        }
    }

    /// `recvmsg()` on a one-to-one socket: at most one message (or part of one).
    pub fn recv(&mut self, now: Instant, cfg: &SctpConfig, out: &mut [u8]) -> Result<Option<RecvInfo>, SockError> {
        let Some(m) = self.rx.ready.front().copied() else {
            if self.reset {
                return Err(SockError::Reset);
            }
            if self.shut.peer_shutdown || self.state == AssocState::Closed {
                return Ok(Some(RecvInfo { len: 0, stream: 0, end_of_message: true }));
            }
            if matches!(self.state, AssocState::CookieWait | AssocState::CookieEchoed) {
                return Err(SockError::NotConnected);
            }
            return Ok(None);
        };
        let (n, eom, m) = self.rx.copy_out(m, out);
        if n == 0 && !eom {
            return Ok(None);
        }
        self.stats.bytes_delivered += n as u64;
        self.rcv_space_adjust(now, cfg, n as u64);
        self.rx.finish_read(eom, m);
        self.rx.maybe_partial_delivery(cfg);
        // Linux sctp_assoc_rwnd_increase(): window-update SACK when the window opened by
        // max(rcvbuf >> SCTP_DEFAULT_RWND_SHIFT, pathmtu) since the last advertisement.
        let adv = self.rx.adv_rwnd(self.sock.rcvbuf);
        if adv > self.rx.a_rwnd_sent && (adv - self.rx.a_rwnd_sent) as u64 >= (self.sock.rcvbuf >> SCTP_DEFAULT_RWND_SHIFT).max(cfg.pmtu as u64) && self.state != AssocState::Closed {
            self.rx.sack_now = true;
        }
        Ok(Some(RecvInfo { len: n, stream: m.stream, end_of_message: eom }))
    }

    /// Bytes ready to read right now.
    pub fn readable(&self) -> bool {
        self.rx.readable()
    }
}
