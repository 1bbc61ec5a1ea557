//! RFC 3168 ECN as Linux does it (`tp->ecn_flags` and the `tcp_ecn_*()` helpers of
//! tcp_input.c / tcp_output.c): negotiation, ECT(0) on new data only, CE → ECE echo
//! until CWR, CWR on the next new data after a reduction.
//!
//! Linux 6.18 (as run here) accepts `net.ipv4.tcp_ecn` 0–2 only: AccECN cannot be
//! negotiated, so it is not modelled (docs/tcp.md).

/// `TCP_ECN_OK`: ECN negotiated (tentatively set when our SYN asks for it).
pub(crate) const TCP_ECN_OK: u8 = 1;
/// `TCP_ECN_QUEUE_CWR`: put CWR on the next new data segment.
pub(crate) const TCP_ECN_QUEUE_CWR: u8 = 2;
/// `TCP_ECN_DEMAND_CWR`: echo ECE until the peer's CWR arrives.
pub(crate) const TCP_ECN_DEMAND_CWR: u8 = 4;
/// `TCP_ECN_SEEN`: an ECT or CE packet was received.
pub(crate) const TCP_ECN_SEEN: u8 = 8;

/// The IP header's ECN field values (`INET_ECN_*`).
pub(crate) const INET_ECN_NOT_ECT: u8 = 0;
pub(crate) const INET_ECN_ECT_0: u8 = 2;
pub(crate) const INET_ECN_CE: u8 = 3;
pub(crate) const INET_ECN_MASK: u8 = 3;

/// What the receive-side check of one data segment asks the connection to do
/// (`tcp_data_ecn_check()`, formerly `__tcp_ecn_check_ce()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EcnRx {
    /// Nothing (ECN off, or an ECT segment seen before).
    None,
    /// A Not-ECT segment after ECT ones: probably a retransmission; quick-ACK.
    Quickack,
    /// CE arrived: tell a module that needs ECN (`CA_EVENT_ECN_IS_CE`), then start
    /// echoing ECE with a quick-ACK unless already echoing.
    Ce,
    /// ECT arrived: tell a module that needs ECN (`CA_EVENT_ECN_NO_CE`).
    Ect,
}

/// `tp->ecn_flags`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Ecn {
    pub flags: u8,
}

impl Ecn {
    #[inline]
    pub fn ok(self) -> bool {
        self.flags & TCP_ECN_OK != 0
    }
    #[inline]
    pub fn has(self, f: u8) -> bool {
        self.flags & f != 0
    }
    #[inline]
    pub fn set(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    /// `tcp_ecn_rcv_synack()`: the SYN-ACK must carry ECE without CWR, else no ECN.
    pub fn rcv_synack(&mut self, ece: bool, cwr: bool) {
        if self.ok() && (!ece || cwr) {
            self.flags = 0;
        }
    }

    /// `tcp_ecn_rcv_syn()` (simultaneous open): the peer's SYN must carry ECE and CWR.
    pub fn rcv_syn(&mut self, ece: bool, cwr: bool) {
        if self.ok() && (!ece || !cwr) {
            self.flags = 0;
        }
    }

    /// `tcp_ecn_rcv_ecn_echo()`: an ACK with ECE (not a SYN) on an ECN connection.
    pub fn rcv_ecn_echo(self, ece: bool, syn: bool) -> bool {
        ece && !syn && self.ok()
    }

    /// `tcp_ecn_queue_cwr()`: a cwnd reduction started; signal it with CWR.
    pub fn queue_cwr(&mut self) {
        if self.ok() {
            self.flags |= TCP_ECN_QUEUE_CWR;
        }
    }

    /// `tcp_ecn_withdraw_cwr()`: the reduction was undone.
    pub fn withdraw_cwr(&mut self) {
        self.flags &= !TCP_ECN_QUEUE_CWR;
    }

    /// `tcp_ecn_accept_cwr()`: the peer reduced; stop echoing ECE. True when the
    /// segment carries data (then it is ACKed at once: `ICSK_ACK_NOW`).
    pub fn accept_cwr(&mut self, cwr: bool, has_data: bool) -> bool {
        if self.ok() && cwr {
            self.flags &= !TCP_ECN_DEMAND_CWR;
            return has_data;
        }
        false
    }

    /// `tcp_data_ecn_check()`: the ECN field of an arriving data segment. Marks
    /// `TCP_ECN_SEEN`; the CE branch's ECE echo is completed by [`Ecn::ce_echo`] after
    /// the module has seen the event.
    pub fn data_check(&mut self, tos: u8) -> EcnRx {
        if !self.ok() {
            return EcnRx::None;
        }
        match tos & INET_ECN_MASK {
            INET_ECN_NOT_ECT => {
                // funny extension: Not-ECT after ECT is probably a retransmission
                if self.has(TCP_ECN_SEEN) {
                    EcnRx::Quickack
                } else {
                    EcnRx::None
                }
            }
            INET_ECN_CE => {
                self.flags |= TCP_ECN_SEEN;
                EcnRx::Ce
            }
            _ => {
                self.flags |= TCP_ECN_SEEN;
                EcnRx::Ect
            }
        }
    }

    /// The CE branch after the module's event: start echoing ECE (with a quick-ACK,
    /// "sender can have a very low cwnd") unless already echoing. True = quick-ACK.
    pub fn ce_echo(&mut self) -> bool {
        if self.has(TCP_ECN_DEMAND_CWR) {
            return false;
        }
        self.flags |= TCP_ECN_DEMAND_CWR;
        true
    }

    /// `tcp_ecn_send()`: ECT(0) on new data (and on everything when the module needs
    /// ECN), CWR on the next new data after a reduction, ECE while echoing. Returns
    /// (ECT, CWR, ECE) for a segment that carries new data or not.
    pub fn send(&mut self, new_data: bool, needs_ecn: bool) -> (bool, bool, bool) {
        if !self.ok() {
            return (false, false, false);
        }
        let mut cwr = false;
        let ect = if new_data {
            if self.has(TCP_ECN_QUEUE_CWR) {
                self.flags &= !TCP_ECN_QUEUE_CWR;
                cwr = true;
            }
            true
        } else {
            // ACK or retransmitted segment: Not-ECT (INET_ECN_dontxmit) unless the module
            // needs ECN (it set ECT on the socket for good)
            needs_ecn
        };
        (ect, cwr, self.has(TCP_ECN_DEMAND_CWR))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn negotiation() {
        let mut e = Ecn { flags: TCP_ECN_OK };
        e.rcv_synack(true, true); // ECE+CWR in a SYN-ACK: not ECN
        assert!(!e.ok());
        let mut e = Ecn { flags: TCP_ECN_OK };
        e.rcv_synack(true, false);
        assert!(e.ok());
        let mut e = Ecn { flags: TCP_ECN_OK };
        e.rcv_syn(true, false);
        assert!(!e.ok());
    }

    #[test]
    fn ce_echo_until_cwr_and_cwr_on_new_data() {
        let mut r = Ecn { flags: TCP_ECN_OK };
        assert_eq!(r.data_check(INET_ECN_NOT_ECT), EcnRx::None);
        assert_eq!(r.data_check(INET_ECN_ECT_0), EcnRx::Ect);
        assert_eq!(r.data_check(INET_ECN_NOT_ECT), EcnRx::Quickack);
        assert_eq!(r.data_check(INET_ECN_CE), EcnRx::Ce);
        assert!(r.ce_echo());
        assert_eq!(r.send(false, false), (false, false, true), "pure ACK: Not-ECT, ECE");
        assert_eq!(r.data_check(INET_ECN_CE), EcnRx::Ce);
        assert!(!r.ce_echo(), "already echoing: no second quick-ACK");
        assert!(!r.accept_cwr(false, true));
        assert!(r.accept_cwr(true, true));
        assert!(!r.send(false, false).2, "echo stops after CWR");

        let mut s = Ecn { flags: TCP_ECN_OK };
        assert!(s.rcv_ecn_echo(true, false) && !s.rcv_ecn_echo(true, true));
        s.queue_cwr();
        assert_eq!(s.send(false, false), (false, false, false), "retransmission: no ECT, CWR waits");
        assert_eq!(s.send(true, false), (true, true, false));
        assert_eq!(s.send(true, false), (true, false, false), "CWR once");
        assert_eq!(s.send(false, true), (true, false, false), "a module needing ECN keeps ECT");
        let mut off = Ecn::default();
        off.queue_cwr();
        assert_eq!(off.send(true, false), (false, false, false));
        assert_eq!(off.data_check(INET_ECN_CE), EcnRx::None);
    }
}
