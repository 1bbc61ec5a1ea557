//! Network namespaces and TUN interfaces for `kind = "tun"` nodes, set up with the `ip`
//! command (iproute2) and the `tun` crate (the TUNSETIFF ioctl), and torn down on every
//! exit path: [`TunSet`]'s `Drop` closes the devices (a non-persistent TUN interface
//! disappears with its last file descriptor) and deletes the namespaces it created.
//!
//! Names: a namespace the driver creates is `wl-PID-NODE`; a run killed with SIGKILL leaves
//! it behind, and the next live run deletes such namespaces whose PID is gone
//! ([`remove_stale`]). Inside its namespace the TUN interface carries the scenario's
//! interface name (`eth0` unless the link says otherwise) and address, and a route to every
//! other subnet of the scenario.
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::Arc;

/// One TUN node's kernel side.
pub struct TunIface {
    /// Scenario node index.
    pub node: u32,
    /// Node name.
    pub node_name: String,
    /// Namespace.
    pub netns: String,
    /// Interface name inside the namespace.
    pub ifname: String,
    /// Address / prefix.
    pub addr: (Ipv4Addr, u8),
    /// The device (shared with its reader thread).
    pub dev: Arc<tun::Device>,
    /// True if this run created the namespace (and deletes it at exit).
    pub created_ns: bool,
}

/// All TUN interfaces of a run; dropping it removes what the run created.
#[derive(Default)]
pub struct TunSet {
    /// The interfaces, in node order.
    pub ifaces: Vec<TunIface>,
    /// Namespaces created by this run (deleted on drop, even if setup failed midway).
    created: Vec<String>,
}

/// What a TUN node needs.
pub struct TunSpec<'a> {
    /// Node index.
    pub node: u32,
    /// Node name.
    pub name: &'a str,
    /// `netns = "…"` or `None` for `wl-PID-NODE`.
    pub netns: Option<&'a str>,
    /// Interface name in the namespace.
    pub ifname: String,
    /// Address and prefix.
    pub addr: (Ipv4Addr, u8),
    /// Subnets to route through the interface.
    pub routes: Vec<(Ipv4Addr, u8)>,
    /// Kernel sysctls for the namespace (`net.ipv4.tcp_congestion_control = "bbr"`).
    pub sysctls: Vec<(String, String)>,
}

/// Runs `ip ARGS`, returning its stderr as the error.
pub fn ip(args: &[&str]) -> Result<(), String> {
    run("ip", args)
}

fn run(cmd: &str, args: &[&str]) -> Result<(), String> {
    let o = Command::new(cmd).args(args).output().map_err(|e| format!("cannot run `{cmd}`: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!("`{cmd} {}` failed: {}", args.join(" "), String::from_utf8_lossy(&o.stderr).trim()))
    }
}

/// Names of the existing namespaces (`ip netns list`).
pub fn netns_list() -> Vec<String> {
    let Ok(o) = Command::new("ip").args(["netns", "list"]).output() else { return Vec::new() };
    String::from_utf8_lossy(&o.stdout).lines().filter_map(|l| l.split_whitespace().next()).map(String::from).collect()
}

/// Deletes `wl-PID-*` namespaces whose process no longer exists (left by a killed run).
pub fn remove_stale() -> Vec<String> {
    let mut gone = Vec::new();
    for ns in netns_list() {
        let Some(pid) = ns.strip_prefix("wl-").and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() && ip(&["netns", "del", &ns]).is_ok() {
            gone.push(ns);
        }
    }
    gone
}

impl TunSet {
    /// Creates and configures one TUN node's namespace and interface.
    pub fn add(&mut self, spec: &TunSpec) -> Result<(), String> {
        let pid = std::process::id();
        let netns = spec.netns.map(String::from).unwrap_or_else(|| format!("wl-{pid}-{}", spec.name));
        let created_ns = !netns_list().contains(&netns);
        if created_ns {
            ip(&["netns", "add", &netns])?;
            self.created.push(netns.clone());
        }
        // create in our namespace under a unique name, move it, then rename it there
        let tmp = format!("wl{pid}t{}", self.ifaces.len());
        let mut cfg = tun::Configuration::default();
        cfg.tun_name(&tmp).layer(tun::Layer::L3);
        // addresses and state are set with `ip` inside the namespace, not by the crate here
        cfg.platform_config(|p| {
            p.ensure_root_privileges(false);
        });
        let dev = tun::create(&cfg).map_err(|e| format!("node `{}`: cannot create TUN interface {tmp}: {e}", spec.name))?;
        let ifname = spec.ifname.as_str();
        ip(&["link", "set", &tmp, "netns", &netns])?;
        ip(&["-n", &netns, "link", "set", &tmp, "name", ifname]).map_err(|e| format!("node `{}`: {e} (is there already an interface `{ifname}` in namespace {netns}?)", spec.name))?;
        // no IPv6 chatter (router solicitations, MLD) into the topology
        let _ = run("ip", &["netns", "exec", &netns, "sysctl", "-qw", &format!("net.ipv6.conf.{ifname}.disable_ipv6=1")]);
        let cidr = format!("{}/{}", spec.addr.0, spec.addr.1);
        ip(&["-n", &netns, "addr", "add", &cidr, "dev", ifname])?;
        ip(&["-n", &netns, "link", "set", ifname, "up"])?;
        ip(&["-n", &netns, "link", "set", "lo", "up"])?;
        for (net, len) in &spec.routes {
            ip(&["-n", &netns, "route", "replace", &format!("{net}/{len}"), "dev", ifname])?;
        }
        for (k, v) in &spec.sysctls {
            run("ip", &["netns", "exec", &netns, "sysctl", "-qw", &format!("{k}={v}")]).map_err(|e| format!("node `{}`: sysctl {k}: {e}", spec.name))?;
        }
        self.ifaces.push(TunIface { node: spec.node, node_name: spec.name.to_string(), netns, ifname: ifname.to_string(), addr: spec.addr, dev: Arc::new(dev), created_ns });
        Ok(())
    }
}

impl Drop for TunSet {
    fn drop(&mut self) {
        // closing the last fd removes each (non-persistent) TUN interface
        self.ifaces.clear();
        for ns in self.created.drain(..) {
            if let Err(e) = ip(&["netns", "del", &ns]) {
                eprintln!("warning: {e}");
            }
        }
    }
}
