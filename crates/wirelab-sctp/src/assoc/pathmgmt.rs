//! Path management (RFC 9260 §8.1–§8.3, RFC 7829): heartbeats, error counting, the
//! potentially-failed state, and the choice of the path new data and retransmissions use
//! (Linux `sctp_sf_sendbeat_8_3()`, `sctp_do_8_2_transport_strike()`,
//! `sctp_select_active_and_retran_path()`).
use super::output::Ctrl;
use super::{Assoc, HB_INFO_LEN};
use crate::config::SctpConfig;
use crate::types::*;
use crate::wire::*;
use wirelab_core::{Instant, Rng, SockEvent};

impl Assoc {
    /// Heartbeat timer of path `i` (Linux `sctp_sf_sendbeat_8_3()`).
    pub(super) fn hb_expired(&mut self, i: usize, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
        // Data sent since arming means the path is not idle: push the timer out instead.
        let p = &self.paths[i];
        if !p.hb_outstanding && p.last_data_send > p.hb_armed_from && p.state == PathState::Active {
            let from = p.last_data_send;
            self.paths[i].arm_hb(from, cfg, rng);
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
        if p.flight == 0 {
            p.lower_cwnd_inactive(cfg.pmtu);
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
        self.paths[i].arm_hb(now, cfg, rng);
    }

    /// HEARTBEAT-ACK (§8.3; Linux `sctp_sf_backbeat_8_3()` → `SCTP_CMD_TRANSPORT_ON`).
    pub(super) fn on_hb_ack(&mut self, now: Instant, cfg: &SctpConfig, info: &[u8]) {
        let Some(Ok(t)) = TlvIter::new(info).next() else { return };
        if t.kind != param::HEARTBEAT_INFO || t.value.len() != HB_INFO_LEN - 4 {
            return;
        }
        let v = t.value;
        let i = super::be16(v, 0) as usize;
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

    /// Linux `sctp_do_8_2_transport_strike()` (6.x): error counters, PF when
    /// `pf_retrans < error_count < pathmaxrxt` (heartbeats then every RTO), INACTIVE when
    /// `error_count > pathmaxrxt`, RTO doubled.
    pub(super) fn strike(&mut self, i: usize, now: Instant, cfg: &SctpConfig, rng: &mut Rng) {
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
            p.arm_hb(now, cfg, rng);
        }
        self.update_active();
    }

    /// Linux `sctp_select_active_and_retran_path()`, simplified: primary if active, else the
    /// first active path, else the potentially-failed path with fewest errors, else primary.
    pub(super) fn update_active(&mut self) {
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
    pub(super) fn alternate(&self, i: usize) -> usize {
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

    /// `SCTP_PRIMARY_ADDR`.
    pub fn set_primary(&mut self, addr: std::net::Ipv4Addr) -> bool {
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
