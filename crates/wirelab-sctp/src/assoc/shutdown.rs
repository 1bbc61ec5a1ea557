//! Graceful shutdown and abort (RFC 9260 §9): SHUTDOWN, SHUTDOWN-ACK, SHUTDOWN-COMPLETE,
//! the T2-shutdown timer, ABORT, and association failure (Linux `sctp_sf_do_9_2_*`,
//! `sctp_sf_t2_timer_expire()`, `sctp_sf_do_9_1_abort()`).
use super::output::Ctrl;
use super::Assoc;
use crate::config::SctpConfig;
use crate::types::*;
use crate::wire::*;
use wirelab_core::{Instant, Rng, SockEvent};

/// Shutdown state.
#[derive(Debug, Default)]
pub(super) struct Shutdown {
    /// T2-shutdown expiry.
    pub t2: Option<Instant>,
    t2_count: u32,
    /// Path the last SHUTDOWN / SHUTDOWN-ACK went to (`asoc->shutdown_last_sent_to`).
    pub t2_path: usize,
    /// The peer sent SHUTDOWN (reads then end with EOF).
    pub peer_shutdown: bool,
}

impl Assoc {
    /// SHUTDOWN received (§9.2).
    pub(super) fn on_shutdown(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng, cum: Tsn) {
        if !matches!(self.state, AssocState::Established | AssocState::ShutdownPending | AssocState::ShutdownSent | AssocState::ShutdownReceived) {
            return;
        }
        // The SHUTDOWN's cumulative TSN acks like a SACK without gaps (§9.2).
        let s = SackRepr { flags: 0, cum_tsn: cum, a_rwnd: self.peer_rwnd.saturating_add(self.out.outstanding as u32), gaps: List::Items(&[]), dups: List::Items(&[]) };
        if cum >= self.out.cum_acked {
            self.on_sack(now, cfg, rng, &s);
        }
        if !self.shut.peer_shutdown {
            self.shut.peer_shutdown = true;
            self.events.push(SockEvent::PeerClosed);
        }
        if self.state == AssocState::ShutdownSent {
            // Simultaneous shutdown (§9.2): answer with SHUTDOWN-ACK.
            self.state = AssocState::ShutdownAckSent;
            self.ctrl.push_back((self.active as u8, Ctrl::ShutdownAck));
            self.shut.t2_path = self.active;
            self.shut.t2 = Some(now + self.paths[self.active].rto);
            return;
        }
        if self.state != AssocState::ShutdownReceived {
            self.state = AssocState::ShutdownReceived;
        }
        self.rx.sack_now = true;
        self.check_shutdown_progress(now);
    }

    /// SHUTDOWN-ACK received: SHUTDOWN-COMPLETE, closed.
    pub(super) fn on_shutdown_ack(&mut self, from: usize) {
        if matches!(self.state, AssocState::ShutdownSent | AssocState::ShutdownAckSent) {
            self.ctrl.clear();
            self.ctrl.push_back((from as u8, Ctrl::ShutdownComplete));
            self.close_now();
            self.events.push(SockEvent::Closed);
        }
    }

    /// SHUTDOWN-COMPLETE received.
    pub(super) fn on_shutdown_complete(&mut self) {
        if self.state == AssocState::ShutdownAckSent {
            self.close_now();
            self.events.push(SockEvent::Closed);
        }
    }

    /// ABORT received (§9.1).
    pub(crate) fn on_abort(&mut self) {
        if self.state != AssocState::Closed {
            let ev = if matches!(self.state, AssocState::CookieWait | AssocState::CookieEchoed) { SockEvent::ConnectFailed } else { SockEvent::Reset };
            self.ctrl.clear();
            self.fail(ev, false);
        }
    }

    /// Sends SHUTDOWN / SHUTDOWN-ACK once all our data is acknowledged (§9.2).
    pub(super) fn check_shutdown_progress(&mut self, now: Instant) {
        if !self.out.q.is_empty() {
            return;
        }
        let p = self.active;
        let c = match self.state {
            AssocState::ShutdownPending => {
                self.state = AssocState::ShutdownSent;
                Ctrl::Shutdown
            }
            AssocState::ShutdownReceived => {
                self.state = AssocState::ShutdownAckSent;
                Ctrl::ShutdownAck
            }
            _ => return,
        };
        self.ctrl.push_back((p as u8, c));
        self.shut.t2_path = p;
        self.shut.t2 = Some(now + self.paths[p].rto);
        self.shut.t2_count = 0;
    }

    /// T2-shutdown (RFC 9260 §9.2): resend SHUTDOWN or SHUTDOWN-ACK. As Linux
    /// `sctp_sf_t2_timer_expire()`: strike the path it last went to (error counters, PF,
    /// RTO backoff), then `sctp_cmd_setup_t2()` sends it to an alternate path
    /// (`sctp_assoc_choose_alter_transport`), so a shutdown survives a failed primary.
    pub(super) fn t2_expired(&mut self, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        self.shut.t2_count += 1;
        if self.error_count >= cfg.association_max_retrans || self.shut.t2_count > cfg.association_max_retrans {
            self.shut.t2 = None;
            self.fail(SockEvent::Reset, true);
            return;
        }
        let last = self.shut.t2_path.min(self.paths.len().saturating_sub(1));
        self.strike(last, now, cfg, rng);
        let p = self.alternate(last);
        let c = if self.state == AssocState::ShutdownSent { Ctrl::Shutdown } else { Ctrl::ShutdownAck };
        self.ctrl.push_back((p as u8, c));
        self.shut.t2_path = p;
        self.shut.t2 = Some(now + self.paths[p].rto);
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

    /// Association failure: ABORT to the peer (if `send_abort`), event, CLOSED.
    pub(super) fn fail(&mut self, ev: SockEvent, send_abort: bool) {
        if send_abort {
            self.ctrl.clear();
            self.ctrl.push_back((self.active as u8, Ctrl::Abort(cause::PROTOCOL_VIOLATION)));
        }
        self.close_now();
        self.reset = true;
        self.events.push(ev);
    }

    /// CLOSED: every timer stopped, only ABORT / SHUTDOWN-COMPLETE left to send.
    pub(super) fn close_now(&mut self) {
        self.state = AssocState::Closed;
        self.hs.t1 = None;
        self.shut.t2 = None;
        self.rx.sack_timer = None;
        self.rx.sack_now = false;
        self.adv.timer = None;
        for p in &mut self.paths {
            p.t3 = None;
            p.hb_at = None;
        }
        self.ctrl.retain(|(_, c)| matches!(c, Ctrl::Abort(_) | Ctrl::ShutdownComplete));
    }
}
