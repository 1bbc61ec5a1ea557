//! Undo state (`undo_marker`, `undo_retrans`, `prior_ssthresh` in `struct tcp_sock`):
//! what `tcp_init_undo()` records when a cwnd reduction starts, so that
//! `tcp_try_undo_*()` can restore the window once the reduction proves spurious
//! (Eifel timestamps, RFC 3522; D-SACK, RFC 3708; F-RTO, RFC 5682).
use crate::wire::SeqNumber;

#[derive(Clone, Debug, Default)]
pub(crate) struct Undo {
    /// `undo_marker`: snd_una when the reduction started; None = nothing to undo.
    pub marker: Option<SeqNumber>,
    /// `undo_retrans`: retransmissions not yet proven spurious by D-SACK (-1 = none sent).
    pub retrans: i32,
    /// `prior_ssthresh`: ssthresh to restore (0 = do not restore).
    pub prior_ssthresh: u32,
    /// Reductions undone (the TCP*Undo MIB counters together).
    pub count: u32,
}

impl Undo {
    /// `tcp_init_undo()`; nothing to undo on profiles without undo (`TcpConfig::undo`).
    pub fn init(&mut self, enabled: bool, snd_una: SeqNumber, retrans_out: u32) {
        if !enabled {
            self.marker = None;
            return;
        }
        self.marker = Some(snd_una);
        self.retrans = if retrans_out > 0 { retrans_out as i32 } else { -1 };
    }

    /// `tcp_may_undo()`: something to undo, and either no retransmission was needed
    /// (all D-SACKed) or the original got through (`packet_delayed`, Eifel).
    pub fn may_undo(&self, packet_delayed: bool) -> bool {
        self.marker.is_some() && (self.retrans == 0 || packet_delayed)
    }

    /// The test of `tcp_try_undo_dsack()`: D-SACKs covered all retransmissions.
    pub fn all_dsacked(&self) -> bool {
        self.marker.is_some() && self.retrans == 0
    }

    /// A D-SACK proved `segs` retransmissions spurious (`tcp_dsack_seen()` /
    /// `tcp_sacktag_one(dup_sack)`).
    pub fn dsacked(&mut self, segs: u32) {
        self.retrans = (self.retrans - segs as i32).max(0);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn dsack_of_every_retransmission_allows_undo() {
        let mut u = Undo::default();
        u.init(true, SeqNumber(1000), 2);
        assert!(!u.may_undo(false));
        assert!(u.may_undo(true), "Eifel: the original was delayed");
        u.dsacked(1);
        assert!(!u.all_dsacked());
        u.dsacked(5);
        assert_eq!(u.retrans, 0);
        assert!(u.all_dsacked() && u.may_undo(false));
        u.init(false, SeqNumber(2000), 0);
        assert!(!u.may_undo(true), "profiles without undo");
    }
}
