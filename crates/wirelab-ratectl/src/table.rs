//! Rows of the thesis's `/proc/net/tcp_rate` and `/proc/net/udp_rate` tables (§5.3):
//! "all of the currently opened TCP sockets, their source address/port, their
//! destination address/port, their TCP state, and finally the last known rate of
//! transfer". The simulator knows addresses and states, the controller's
//! [`RateProbe`](crate::RateProbe) knows the rest; a row joins the two.
//!
//! Text form follows `/proc/net/tcp` (`sl`, `local_address`, `rem_address` in hex
//! `AABBCCDD:PPPP` as the kernel prints them on little-endian hosts, `st` in hex); the rate
//! column is packets per second as in the thesis. Columns after `rate` are ours.
use crate::probe::{ControlMode, RateSnapshot, UdpState};
use std::fmt::Write as _;
use std::net::SocketAddrV4;

/// Linux `TCP_*` state numbers as `/proc/net/tcp` prints them (include/net/tcp_states.h).
pub mod tcp_states {
    /// `TCP_ESTABLISHED`
    pub const ESTABLISHED: u8 = 1;
    /// `TCP_SYN_SENT`
    pub const SYN_SENT: u8 = 2;
    /// `TCP_SYN_RECV`
    pub const SYN_RECV: u8 = 3;
    /// `TCP_FIN_WAIT1`
    pub const FIN_WAIT1: u8 = 4;
    /// `TCP_FIN_WAIT2`
    pub const FIN_WAIT2: u8 = 5;
    /// `TCP_TIME_WAIT`
    pub const TIME_WAIT: u8 = 6;
    /// `TCP_CLOSE` (also unconnected UDP sockets)
    pub const CLOSE: u8 = 7;
    /// `TCP_CLOSE_WAIT`
    pub const CLOSE_WAIT: u8 = 8;
    /// `TCP_LAST_ACK`
    pub const LAST_ACK: u8 = 9;
    /// `TCP_LISTEN`
    pub const LISTEN: u8 = 10;
    /// `TCP_CLOSING`
    pub const CLOSING: u8 = 11;

    /// The Linux number of a `wirelab_tcp` state.
    pub fn from_tcp(s: wirelab_tcp::TcpState) -> u8 {
        use wirelab_tcp::TcpState::*;
        match s {
            Established => ESTABLISHED,
            SynSent => SYN_SENT,
            SynRecv => SYN_RECV,
            FinWait1 => FIN_WAIT1,
            FinWait2 => FIN_WAIT2,
            TimeWait => TIME_WAIT,
            Closed => CLOSE,
            CloseWait => CLOSE_WAIT,
            LastAck => LAST_ACK,
            Listen => LISTEN,
            Closing => CLOSING,
        }
    }
}

/// One `/proc/net/tcp_rate` row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpRateRow {
    /// Local (receiving) address and port.
    pub local: SocketAddrV4,
    /// Remote (sending) address and port.
    pub remote: SocketAddrV4,
    /// TCP state, Linux numbering ([`tcp_states`]).
    pub st: u8,
    /// Last known rate, packets per second (thesis column).
    pub rate_pps: u64,
    /// Last known rate, bytes per second (ours).
    pub rate_bytes_per_sec: u64,
    /// Window last offered by the controller, bytes (ours).
    pub window: u32,
    /// Control mode (ours).
    pub mode: ControlMode,
}

impl TcpRateRow {
    /// Joins the simulator's socket facts with a controller snapshot.
    pub fn new(local: SocketAddrV4, remote: SocketAddrV4, st: u8, s: &RateSnapshot) -> Self {
        TcpRateRow { local, remote, st, rate_pps: s.rate_pps(), rate_bytes_per_sec: s.rate_bytes_per_sec, window: s.window, mode: s.mode }
    }
}

/// One `/proc/net/udp_rate` row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpRateRow {
    /// Local address and port.
    pub local: SocketAddrV4,
    /// Remote address and port (0.0.0.0:0 if unconnected).
    pub remote: SocketAddrV4,
    /// Socket state, Linux numbering (7 = unconnected, 1 = connected).
    pub st: u8,
    /// Last known rate, packets per second (thesis column).
    pub rate_pps: u64,
    /// Last known rate, bytes per second (ours).
    pub rate_bytes_per_sec: u64,
    /// OKAY/DROP/WARN/KILL (ours).
    pub udp_state: UdpState,
    /// Datagrams dropped by the policy (ours).
    pub dropped: u64,
}

impl UdpRateRow {
    /// Joins the simulator's socket facts with a policy snapshot.
    pub fn new(local: SocketAddrV4, remote: SocketAddrV4, st: u8, s: &RateSnapshot) -> Self {
        UdpRateRow {
            local,
            remote,
            st,
            rate_pps: s.rate_pps(),
            rate_bytes_per_sec: s.rate_bytes_per_sec,
            udp_state: s.udp_state.unwrap_or_default(),
            dropped: s.dropped,
        }
    }
}

/// `/proc/net/tcp`'s address format: the address as a host-order (little-endian) u32 in
/// hex, colon, port in hex.
fn hex_addr(a: &SocketAddrV4) -> String {
    format!("{:08X}:{:04X}", u32::from_le_bytes(a.ip().octets()), a.port())
}

fn mode_name(m: ControlMode) -> &'static str {
    match m {
        ControlMode::Off => "off",
        ControlMode::Controlled => "ctl",
        ControlMode::Important => "imp",
        ControlMode::Fixed => "fixed",
    }
}

/// Renders rows as `/proc/net/tcp_rate` text (header line, one line per row).
pub fn render_tcp_rate(rows: &[TcpRateRow]) -> String {
    let mut s = String::from("  sl  local_address rem_address   st rate       Bps        window   mode\n");
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:4}: {} {} {:02X} {:<10} {:<10} {:<8} {}",
            i,
            hex_addr(&r.local),
            hex_addr(&r.remote),
            r.st,
            r.rate_pps,
            r.rate_bytes_per_sec,
            r.window,
            mode_name(r.mode)
        );
    }
    s
}

/// Renders rows as `/proc/net/udp_rate` text.
pub fn render_udp_rate(rows: &[UdpRateRow]) -> String {
    let mut s = String::from("  sl  local_address rem_address   st rate       Bps        state drops\n");
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:4}: {} {} {:02X} {:<10} {:<10} {:<5} {}",
            i,
            hex_addr(&r.local),
            hex_addr(&r.remote),
            r.st,
            r.rate_pps,
            r.rate_bytes_per_sec,
            r.udp_state.name(),
            r.dropped
        );
    }
    s
}

#[cfg(test)]
mod test {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn tcp_rate_text_like_proc_net_tcp() {
        let snap = RateSnapshot { rate_milli_pps: 342_500, rate_bytes_per_sec: 495_940, window: 2920, mode: ControlMode::Controlled, ..Default::default() };
        let row = TcpRateRow::new(
            SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 1), 5037),
            SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 40000),
            tcp_states::ESTABLISHED,
            &snap,
        );
        assert_eq!(row.rate_pps, 342);
        let t = render_tcp_rate(&[row]);
        let line = t.lines().nth(1).unwrap();
        assert!(line.starts_with("   0: 0100007F:13AD 0200000A:9C40 01 342 "), "{line}");
        assert!(line.ends_with("2920     ctl"), "{line}");
    }

    #[test]
    fn udp_rate_text() {
        let snap = RateSnapshot { rate_milli_pps: 1_010_000, udp_state: Some(UdpState::Drop), dropped: 7, ..Default::default() };
        let row = UdpRateRow::new(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 9), SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0), tcp_states::CLOSE, &snap);
        let t = render_udp_rate(&[row]);
        let line = t.lines().nth(1).unwrap();
        assert!(line.starts_with("   0: 0100000A:0009 00000000:0000 07 1010 "), "{line}");
        assert!(line.ends_with("DROP  7"), "{line}");
    }
}
