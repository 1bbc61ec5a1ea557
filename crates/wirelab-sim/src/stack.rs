//! A host's transport stack: one TCP and one SCTP endpoint, created on first use, plus the
//! table saying which application owns which socket.
//!
//! The simulator is the sans-IO engines' driver (`wirelab_core::transport`): after every
//! input it drains `poll_transmit` into IPv4 datagrams, hands `poll_event`s to the owning
//! applications, and keeps one `Event::Stack(node)` heap entry at the earliest engine timer.
use wirelab_core::Instant;
use wirelab_sctp::{SctpConfig, SctpEndpoint};
use wirelab_tcp::{TcpConfig, TcpEndpoint};

/// Owner value for "no application".
const NO_OWNER: u32 = u32::MAX;

/// A host's TCP and SCTP endpoints.
pub struct HostStack {
    /// TCP endpoint.
    pub tcp: TcpEndpoint,
    /// SCTP endpoint.
    pub sctp: SctpEndpoint,
    tcp_owner: Vec<u32>,
    sctp_owner: Vec<u32>,
    /// Time of this stack's pending `Event::Stack` entry.
    pub(crate) scheduled: Option<Instant>,
    /// Receiver-side rate control (seed 003), when the node sets `net.ipv4.rate_*`.
    pub rate: Option<wirelab_ratectl::RateConfig>,
    /// Rate probes of the controlled TCP sockets, in creation order.
    pub rate_probes: Vec<(wirelab_tcp::SocketId, wirelab_ratectl::RateProbe)>,
    /// UDP rate policies by local port.
    pub udp_rate: std::collections::BTreeMap<u16, wirelab_ratectl::UdpRatePolicy>,
}

impl HostStack {
    pub(crate) fn new(tcp: TcpEndpoint, sctp: SctpEndpoint) -> Self {
        HostStack { tcp, sctp, tcp_owner: Vec::new(), sctp_owner: Vec::new(), scheduled: None, rate: None, rate_probes: Vec::new(), udp_rate: Default::default() }
    }

    fn set(v: &mut Vec<u32>, id: u32, app: u32) {
        let i = id as usize;
        if v.len() <= i {
            v.resize(i + 1, NO_OWNER);
        }
        v[i] = app;
    }
    fn get(v: &[u32], id: u32) -> Option<u32> {
        v.get(id as usize).copied().filter(|&a| a != NO_OWNER)
    }

    /// Marks TCP socket `s` as owned by application `app` (its events go there). On a
    /// node with rate control every new connection gets a [`TcpRateController`]
    /// (`wirelab_ratectl`) as its receive-window policy, like the thesis's kernel patch
    /// applied to every socket.
    ///
    /// [`TcpRateController`]: wirelab_ratectl::TcpRateController
    pub fn own_tcp(&mut self, s: wirelab_tcp::SocketId, app: u32) {
        Self::set(&mut self.tcp_owner, s.0, app);
        if let Some(cfg) = &self.rate {
            if self.tcp.state(s).is_some_and(|st| st != wirelab_tcp::TcpState::Listen) && !self.rate_probes.iter().any(|(x, _)| *x == s) {
                let ctl = wirelab_ratectl::TcpRateController::new(cfg);
                let probe = ctl.probe();
                if let Some(m) = cfg.mss {
                    let _ = self.tcp.set_option(s, wirelab_tcp::SockOpt::MaxSeg(m));
                }
                if self.tcp.set_rcv_window_policy(s, Some(Box::new(ctl))).is_ok() {
                    self.rate_probes.push((s, probe));
                }
            }
        }
    }
    /// Marks SCTP socket `s` as owned by application `app`.
    pub fn own_sctp(&mut self, s: wirelab_sctp::SocketId, app: u32) {
        Self::set(&mut self.sctp_owner, s.0, app);
    }
    /// Owner of a TCP socket.
    pub fn tcp_owner(&self, s: wirelab_tcp::SocketId) -> Option<u32> {
        Self::get(&self.tcp_owner, s.0)
    }
    /// Owner of an SCTP socket.
    pub fn sctp_owner(&self, s: wirelab_sctp::SocketId) -> Option<u32> {
        Self::get(&self.sctp_owner, s.0)
    }
    /// Earliest timer of either engine.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.tcp.poll_timeout(), self.sctp.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Per-node transport configuration (profile plus sysctl overrides), applied when the
/// node's stack is first created.
#[derive(Clone, Debug, Default)]
pub struct StackConfig {
    /// TCP configuration (`None` = the `linux-6` profile).
    pub tcp: Option<TcpConfig>,
    /// SCTP configuration (`None` = the `linux-6` profile).
    pub sctp: Option<SctpConfig>,
    /// Receiver-side rate control (`net.ipv4.rate_*`, seed 003); `None` = off.
    pub rate: Option<wirelab_ratectl::RateConfig>,
}

impl StackConfig {
    /// A stack configuration from a profile name shared by TCP and SCTP. SCTP has no
    /// `linux-3.14`, `linux-2.2` or `freebsd-4.10` profile; those fall back to the
    /// nearest SCTP profile (`linux-2.6.37` for older eras), as documented in docs/scenario.md.
    pub fn profile(name: &str) -> Result<Self, String> {
        let tcp = TcpConfig::profile(name).map_err(|e| e.to_string())?;
        let sctp_name = match name {
            "linux-6" | "default" => "linux-6",
            "linux-4.6" => "linux-4.6",
            "linux-3.14" | "linux-2.6.37" | "linux-2.2" | "freebsd-4.10" => "linux-2.6.37",
            other => other,
        };
        let sctp = SctpConfig::profile(sctp_name).map_err(|e| e.to_string())?;
        Ok(StackConfig { tcp: Some(tcp), sctp: Some(sctp), rate: None })
    }

    /// Applies one sysctl by its Linux name: `net.ipv4.tcp_*` go to TCP, `net.sctp.*` to
    /// SCTP, `net.core.*` to both (each engine takes the ones it models).
    pub fn set_sysctl(&mut self, key: &str, value: &str) -> Result<(), String> {
        let tcp = self.tcp.get_or_insert_with(|| TcpConfig::profile("linux-6").expect("linux-6 profile"));
        let sctp = self.sctp.get_or_insert_with(|| SctpConfig::profile("linux-6").expect("linux-6 profile"));
        if key.starts_with("net.ipv4.rate_") || key.starts_with("/proc/sys/net/ipv4/rate_") || wirelab_ratectl::SYSCTL_NAMES.contains(&key) {
            self.rate.get_or_insert_with(wirelab_ratectl::RateConfig::default).set_sysctl(key, value)
        } else if key.starts_with("net.sctp.") {
            sctp.set_sysctl(key, value).map_err(|e| e.to_string())
        } else if key.starts_with("net.core.") {
            let a = tcp.set_sysctl(key, value);
            let b = sctp.set_sysctl(key, value);
            match (a, b) {
                (Err(e), Err(_)) => Err(e.to_string()),
                _ => Ok(()),
            }
        } else {
            tcp.set_sysctl(key, value).map_err(|e| e.to_string())
        }
    }
}
