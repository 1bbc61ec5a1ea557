//! The send side's queue (Linux `struct sctp_outq`): the user's bytes, their DATA chunks
//! with TSNs assigned at enqueue, and the send-buffer accounting of `sctp_sendmsg()`.
use super::Assoc;
use crate::config::SctpConfig;
use crate::types::*;
use crate::wire::*;
use wirelab_core::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TxState {
    Unsent,
    InFlight,
    GapAcked,
    NeedRtx,
}

/// One DATA chunk of the send queue.
#[derive(Clone, Copy, Debug)]
pub(super) struct TxChunk {
    pub tsn: Tsn,
    /// Offset of the payload in the send byte buffer.
    pub off: u64,
    pub len: u32,
    /// Send-buffer charge (truesize).
    pub charge: u32,
    /// What it adds to `asoc->sndbuf_used` (`SctpConfig::chunk_asoc_charge`).
    pub asoc_charge: u32,
    pub stream: u16,
    pub ssn: u16,
    pub flags: u8,
    pub state: TxState,
    /// Path of the last transmission.
    pub path: u8,
    /// Path a pending retransmission goes to (`u8::MAX` while being chosen).
    pub rtx_path: u8,
    /// Miss indications (§7.2.4).
    pub misses: u8,
    /// Retransmitted at least once (Karn: no RTT sample).
    pub rtx: bool,
    /// Marked for fast retransmission (may ignore cwnd once).
    pub fast: bool,
    /// Already fast-retransmitted (at most once, §7.2.4).
    pub fast_done: bool,
    /// Carries the path's RTT measurement.
    pub probe: bool,
    /// CMT: gap-acked, then revoked by a SACK that no longer covered it (FreeBSD
    /// `chunk_was_revoked`; its path's cwnd was inflated by its size meanwhile).
    pub revoked: bool,
    pub sent_at: Instant,
}

/// The outbound queue: chunks `q[..first_unsent]` have been sent, the rest not yet.
#[derive(Debug)]
pub(super) struct OutQueue {
    pub q: std::collections::VecDeque<TxChunk>,
    pub first_unsent: usize,
    /// Chunks in state `NeedRtx`.
    pub rtx_count: usize,
    next_tsn: Tsn,
    /// Highest TSN cumulatively acked by the peer.
    pub cum_acked: Tsn,
    sbuf: Vec<u8>,
    sbuf_base: u64,
    sbuf_end: u64,
    out_ssn: Vec<u16>,
    /// Negotiated outbound streams.
    pub os: u16,
    /// Unsent user bytes (`out_qlen`).
    pub out_qlen: u64,
    /// Sent-but-unacked user bytes (`outstanding_bytes`).
    pub outstanding: u64,
    /// Send-buffer charge in truesize (`sk_wmem_queued`; also `asoc->sndbuf_used` in 5.x).
    pub sndbuf_used: u64,
    /// `asoc->sndbuf_used` as the profile's kernel counts it (chunk 0x96's denominator).
    pub asoc_sndbuf_used: u64,
    /// A writer got `Ok(0)` and waits for `Writable`.
    pub want_writable: bool,
    /// `msg_len` of the message a blocked writer waits to fit (`sctp_wait_for_sndbuf`).
    pub blocked_len: u64,
}

impl OutQueue {
    pub(super) fn new(my_itsn: u32, os: u16) -> OutQueue {
        OutQueue {
            q: std::collections::VecDeque::new(),
            first_unsent: 0,
            rtx_count: 0,
            next_tsn: Tsn(my_itsn),
            cum_acked: Tsn(my_itsn).prev(),
            sbuf: Vec::new(),
            sbuf_base: 0,
            sbuf_end: 0,
            out_ssn: Vec::new(),
            os,
            out_qlen: 0,
            outstanding: 0,
            sndbuf_used: 0,
            asoc_sndbuf_used: 0,
            want_writable: false,
            blocked_len: 0,
        }
    }

    pub(super) fn set_streams(&mut self, os: u16) {
        self.os = os.max(1);
        self.out_ssn = vec![0; self.os as usize];
    }

    /// The next TSN to assign (the INIT's Initial TSN before any data).
    pub(super) fn next_tsn(&self) -> Tsn {
        self.next_tsn
    }

    /// Payload bytes of a queued chunk.
    pub(super) fn payload(&self, c: &TxChunk) -> &[u8] {
        let off = (c.off - self.sbuf_base) as usize;
        &self.sbuf[off..off + c.len as usize]
    }

    /// Highest TSN ever sent (TSNs are assigned at enqueue, so this is not `next_tsn − 1`).
    pub(super) fn highest_sent(&self) -> Tsn {
        if self.first_unsent == 0 {
            self.cum_acked
        } else {
            self.q[self.first_unsent - 1].tsn
        }
    }

    /// Queues one message as DATA chunks of at most `frag_point` bytes (U/B/E flags, SSN).
    pub(super) fn enqueue(&mut self, cfg: &SctpConfig, stream: u16, data: &[u8], unordered: bool) {
        let frag = cfg.frag_point();
        let n = data.len().div_ceil(frag);
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
            let ach = cfg.chunk_asoc_charge(len) as u32;
            self.q.push_back(TxChunk {
                tsn: self.next_tsn,
                off: off0 + (k * frag) as u64,
                len: len as u32,
                charge: ch,
                asoc_charge: ach,
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
                revoked: false,
                sent_at: Instant::ZERO,
            });
            self.next_tsn = self.next_tsn.next();
            self.sndbuf_used += ch as u64;
            self.asoc_sndbuf_used += ach as u64;
        }
        self.out_qlen += data.len() as u64;
    }

    /// Drops chunks cumulatively acked up to `cum`, freeing their send-buffer charge.
    /// Returns whether anything was freed and the user bytes acknowledged.
    pub(super) fn pop_acked(&mut self, cum: Tsn) -> (bool, u64) {
        let mut freed = false;
        let mut bytes = 0;
        while let Some(c) = self.q.front() {
            if c.state == TxState::Unsent || c.tsn > cum {
                break;
            }
            let c = self.q.pop_front().unwrap_or_else(|| unreachable!());
            self.first_unsent -= 1;
            self.sndbuf_used -= c.charge as u64;
            self.asoc_sndbuf_used -= c.asoc_charge as u64;
            bytes += c.len as u64;
            self.sbuf_base_advance(c.off + c.len as u64);
            freed = true;
        }
        (freed, bytes)
    }

    fn sbuf_base_advance(&mut self, upto: u64) {
        // Drop the consumed prefix of the send byte buffer once it is large (amortised).
        let consumed = upto.saturating_sub(self.sbuf_base) as usize;
        if consumed >= 64 * 1024 && consumed * 2 >= self.sbuf.len() {
            self.sbuf.drain(..consumed);
            self.sbuf_base = upto;
        }
    }
}

impl Assoc {
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
        if stream >= self.out.os {
            return Err(SockError::InvalidStream);
        }
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
        let need = if self.out.want_writable { self.out.blocked_len.max(1) as i64 } else { 1 };
        if self.wspace() < need {
            if !self.out.want_writable {
                self.out.blocked_len = msg_len.min(self.sock.sndbuf);
            }
            self.out.want_writable = true;
            return Ok(0);
        }
        self.out.enqueue(cfg, stream, data, unordered);
        Ok(data.len())
    }
}
