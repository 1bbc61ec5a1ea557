//! Live mode needs CAP_NET_ADMIN (namespaces, TUN devices, addresses, routes): root has it.
use std::path::Path;

/// `CAP_NET_ADMIN` (linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;

/// Ok if this process may create namespaces and TUN interfaces; otherwise why not.
pub fn check() -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| format!("cannot read /proc/self/status ({e}): live mode needs Linux"))?;
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    if eff & (1 << CAP_NET_ADMIN) == 0 {
        return Err("live mode needs root or CAP_NET_ADMIN (it creates network namespaces and TUN interfaces): run it with sudo, or grant the capability (setcap cap_net_admin+ep)".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err("/dev/net/tun is missing: load the tun module (modprobe tun) or, in a container, pass the device in (--device /dev/net/tun)".into());
    }
    if which("ip").is_none() {
        return Err("the `ip` command (iproute2) is needed to set up namespaces, addresses and routes".into());
    }
    Ok(())
}

/// The full path of `cmd` on `PATH`.
pub fn which(cmd: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(cmd)).find(|f| f.is_file()))
}
