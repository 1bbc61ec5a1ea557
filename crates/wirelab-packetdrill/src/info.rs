//! `tcp_info` as `%{ }%` blocks see it: the `tcpi_*` names packetdrill's `code.c` emits,
//! filled from the engine's [`TcpInfo`]. A field the engine does not provide is simply
//! absent, and a block that reads it is reported as unsupported (never given a made-up 0).
use wirelab_tcp::{TcpInfo, TcpState};

/// Linux's `TCP_ESTABLISHED`… numbering (`include/net/tcp_states.h`).
pub fn linux_state(s: TcpState) -> i128 {
    match s {
        TcpState::Established => 1,
        TcpState::SynSent => 2,
        TcpState::SynRecv => 3,
        TcpState::FinWait1 => 4,
        TcpState::FinWait2 => 5,
        TcpState::TimeWait => 6,
        TcpState::Closed => 7,
        TcpState::CloseWait => 8,
        TcpState::LastAck => 9,
        TcpState::Listen => 10,
        TcpState::Closing => 11,
    }
}

/// The `tcpi_*` variables of one snapshot (`tcp_get_info()` field semantics).
pub fn tcpi_vars(i: &TcpInfo) -> Vec<(&'static str, i128)> {
    vec![
        ("tcpi_state", linux_state(i.state)),
        ("tcpi_ca_state", i.ca_state as i128),
        ("tcpi_backoff", i.backoff as i128),
        ("tcpi_retransmits", i.retransmits as i128),
        ("tcpi_snd_wscale", i.snd_wscale as i128),
        ("tcpi_rcv_wscale", i.rcv_wscale as i128),
        ("tcpi_rto", i.rto_us as i128),
        ("tcpi_snd_mss", i.snd_mss as i128),
        ("tcpi_rcv_mss", i.rcv_mss as i128),
        ("tcpi_advmss", i.advmss as i128),
        ("tcpi_min_rtt", i.min_rtt_us as i128),
        ("tcpi_probes", i.probes as i128),
        ("tcpi_busy_time", i.busy_time_us as i128),
        ("tcpi_rwnd_limited", i.rwnd_limited_us as i128),
        ("tcpi_sndbuf_limited", i.sndbuf_limited_us as i128),
        ("tcpi_unacked", i.unacked as i128),
        ("tcpi_sacked", i.sacked as i128),
        ("tcpi_lost", i.lost as i128),
        ("tcpi_retrans", i.retrans as i128),
        ("tcpi_rcv_ssthresh", i.rcv_ssthresh as i128),
        ("tcpi_rcv_space", i.rcv_space as i128),
        ("tcpi_rcv_rtt", i.rcv_rtt_us as i128),
        ("tcpi_rtt", i.srtt_us as i128),
        ("tcpi_rttvar", i.rttvar_us as i128),
        ("tcpi_snd_ssthresh", i.ssthresh as i128),
        ("tcpi_snd_cwnd", i.cwnd as i128),
        ("tcpi_reordering", i.reordering as i128),
        ("tcpi_total_retrans", i.total_retrans as i128),
        ("tcpi_bytes_acked", i.bytes_acked as i128),
        ("tcpi_bytes_received", i.bytes_received as i128),
        ("tcpi_segs_out", i.segs_out as i128),
        ("tcpi_segs_in", i.segs_in as i128),
        ("tcpi_notsent_bytes", i.notsent_bytes as i128),
        ("tcpi_delivery_rate", i.delivery_rate as i128),
        ("tcpi_delivered", i.delivered as i128),
        ("tcpi_dsack_dups", i.dsack_dups as i128),
        ("tcpi_reord_seen", i.reord_seen as i128),
        ("tcpi_snd_wnd", i.snd_wnd as i128),
        ("tcpi_rcv_wnd", i.rcv_wnd as i128),
    ]
}
