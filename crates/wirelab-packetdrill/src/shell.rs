//! Back-quoted shell lines. The Linux TCP scripts use a handful of commands to configure
//! the host: `defaults.sh`, `sysctl`, `set_sysctls.py`, `tc qdisc`, `ethtool`,
//! `ip route` and `echo … > /sys/module/tcp_cubic/parameters/…`. Each is mapped to the
//! engine's configuration ([`wirelab_tcp::TcpConfig`]), accepted as having no effect on
//! wirelab *with a stated reason*, or refused as unsupported. Nothing is ignored
//! silently: every accepted no-op produces a note the runner reports.
use std::path::{Path, PathBuf};
use wirelab_tcp::TcpConfig;

/// What one command does to the host.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Set a sysctl (`net.ipv4.…` or `net.core.…`).
    Sysctl(String, String),
    /// Set a CUBIC module parameter (`/sys/module/tcp_cubic/parameters/NAME`).
    CubicParam(String, String),
    /// Restore the sysctls `set_sysctls.py` changed (`/tmp/sysctl_restore_${PPID}.sh`).
    Restore,
    /// Accepted, no effect on wirelab; the text says why.
    Note(String),
    /// The tun device's root qdisc drops every packet (`pfifo limit 0`: `true`) or
    /// again accepts them (`false`): the engine's transmissions fail locally
    /// (`TcpEndpoint::set_local_drop`).
    LocalDrop(bool),
}

/// A command wirelab cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported(pub String);

/// Interprets a back-quoted block (one or more shell lines) from a script in `dir`.
pub fn interpret(block: &str, dir: &Path) -> Result<Vec<Effect>, Unsupported> {
    let mut out = Vec::new();
    interpret_into(block, dir, 0, &mut out)?;
    Ok(out)
}

fn interpret_into(block: &str, dir: &Path, depth: u32, out: &mut Vec<Effect>) -> Result<(), Unsupported> {
    for line in logical_lines(block) {
        for cmd in line.split(';') {
            let cmd = strip_null_redirections(cmd.trim());
            if cmd.is_empty() || cmd.starts_with("#!") {
                continue;
            }
            command(&cmd, dir, depth, out)?;
        }
    }
    Ok(())
}

/// Joins `\`-continued lines and drops `#` comments.
fn logical_lines(block: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for raw in block.lines() {
        let l = match raw.find('#') {
            Some(0) => "",
            Some(i) if raw[..i].ends_with(char::is_whitespace) && !raw.starts_with("#!") => &raw[..i],
            _ => raw,
        };
        let l = l.trim_end();
        if let Some(s) = l.strip_suffix('\\') {
            cur.push_str(s);
            cur.push(' ');
            continue;
        }
        cur.push_str(l);
        lines.push(std::mem::take(&mut cur));
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Removes `> /dev/null`, `2>/dev/null`, `2>&1` (output redirections that change nothing).
fn strip_null_redirections(cmd: &str) -> String {
    let mut s = cmd.to_string();
    for pat in ["2>&1", "2>/dev/null", "2> /dev/null", ">/dev/null", "> /dev/null"] {
        s = s.replace(pat, "");
    }
    s.trim().to_string()
}

/// Splits words, honouring double quotes and expanding `$((…))` arithmetic.
fn words(cmd: &str) -> Result<Vec<String>, Unsupported> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_q = false;
    let mut have = false;
    let cs: Vec<char> = cmd.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c == '$' && cs.get(i + 1) == Some(&'(') && cs.get(i + 2) == Some(&'(') {
            let rest: String = cs[i + 3..].iter().collect();
            let end = rest.find("))").ok_or_else(|| Unsupported(format!("unterminated $(( in `{cmd}`")))?;
            let v = arith(&rest[..end]).ok_or_else(|| Unsupported(format!("cannot evaluate $(({}))", &rest[..end])))?;
            cur.push_str(&v.to_string());
            have = true;
            i += 3 + rest[..end].chars().count() + 2;
            continue;
        }
        if c == '"' {
            in_q = !in_q;
            have = true;
        } else if c.is_whitespace() && !in_q {
            if have {
                out.push(std::mem::take(&mut cur));
                have = false;
            }
        } else {
            cur.push(c);
            have = true;
        }
        i += 1;
    }
    if in_q {
        return Err(Unsupported(format!("unterminated quote in `{cmd}`")));
    }
    if have {
        out.push(cur);
    }
    Ok(out)
}

/// Integer arithmetic with `+ - * /` and parentheses (what defaults.sh needs).
fn arith(e: &str) -> Option<i64> {
    fn expr(t: &[char], i: &mut usize) -> Option<i64> {
        let mut v = term(t, i)?;
        while *i < t.len() && (t[*i] == '+' || t[*i] == '-') {
            let op = t[*i];
            *i += 1;
            let r = term(t, i)?;
            v = if op == '+' { v.checked_add(r)? } else { v.checked_sub(r)? };
        }
        Some(v)
    }
    fn term(t: &[char], i: &mut usize) -> Option<i64> {
        let mut v = atom(t, i)?;
        while *i < t.len() && (t[*i] == '*' || t[*i] == '/') {
            let op = t[*i];
            *i += 1;
            let r = atom(t, i)?;
            v = if op == '*' { v.checked_mul(r)? } else { v.checked_div(r)? };
        }
        Some(v)
    }
    fn atom(t: &[char], i: &mut usize) -> Option<i64> {
        if *i < t.len() && t[*i] == '(' {
            *i += 1;
            let v = expr(t, i)?;
            if *i < t.len() && t[*i] == ')' {
                *i += 1;
                return Some(v);
            }
            return None;
        }
        let s = *i;
        while *i < t.len() && t[*i].is_ascii_digit() {
            *i += 1;
        }
        t[s..*i].iter().collect::<String>().parse().ok()
    }
    let t: Vec<char> = e.chars().filter(|c| !c.is_whitespace()).collect();
    let mut i = 0;
    let v = expr(&t, &mut i)?;
    (i == t.len()).then_some(v)
}

/// `/proc/sys/net/ipv4/tcp_x` → `net.ipv4.tcp_x`.
fn proc_to_sysctl(p: &str) -> Option<String> {
    p.strip_prefix("/proc/sys/").map(|s| s.replace('/', "."))
}

fn command(cmd: &str, dir: &Path, depth: u32, out: &mut Vec<Effect>) -> Result<(), Unsupported> {
    let w = words(cmd)?;
    let Some(prog) = w.first() else { return Ok(()) };
    let unsup = |why: &str| Err(Unsupported(format!("`{cmd}`: {why}")));
    let base = prog.rsplit('/').next().unwrap_or(prog);
    match base {
        "defaults.sh" => {
            let path = resolve(dir, prog).ok_or_else(|| Unsupported(format!("`{cmd}`: {prog} not found next to the script")))?;
            if depth > 4 {
                return unsup("nested too deeply");
            }
            let text = std::fs::read_to_string(&path).map_err(|e| Unsupported(format!("`{cmd}`: {}: {e}", path.display())))?;
            interpret_into(&text, path.parent().unwrap_or(dir), depth + 1, out)
        }
        "sysctl" => {
            let mut any = false;
            for a in &w[1..] {
                if a.starts_with('-') {
                    if !matches!(a.as_str(), "-q" | "-e" | "-w" | "-qw" | "-wq") {
                        return unsup(&format!("sysctl option {a}"));
                    }
                    continue;
                }
                let Some((k, v)) = a.split_once('=') else { return unsup("only `sysctl key=value` is supported") };
                out.push(Effect::Sysctl(k.replace('/', "."), v.to_string()));
                any = true;
            }
            if !any {
                return unsup("no key=value given");
            }
            Ok(())
        }
        "set_sysctls.py" => {
            for a in &w[1..] {
                let Some((p, v)) = a.split_once('=') else { return unsup("expected /proc/sys/...=value") };
                let Some(k) = proc_to_sysctl(p) else { return unsup(&format!("{p} is not under /proc/sys")) };
                out.push(Effect::Sysctl(k, v.to_string()));
            }
            Ok(())
        }
        _ if prog.starts_with("/tmp/sysctl_restore_") => {
            out.push(Effect::Restore);
            Ok(())
        }
        "echo" if w.len() == 4 && w[2] == ">" => {
            let (v, target) = (&w[1], &w[3]);
            if let Some(p) = target.strip_prefix("/sys/module/tcp_cubic/parameters/") {
                out.push(Effect::CubicParam(p.to_string(), v.clone()));
                return Ok(());
            }
            if let Some(k) = proc_to_sysctl(target) {
                out.push(Effect::Sysctl(k, v.clone()));
                return Ok(());
            }
            unsup("only writes to /proc/sys and /sys/module/tcp_cubic/parameters are supported")
        }
        "ip" if w.get(1).map(String::as_str) == Some("tcp_metrics") => {
            out.push(Effect::Note("`ip tcp_metrics flush`: wirelab keeps no per-destination TCP metrics".into()));
            Ok(())
        }
        "ip" => unsup("route and link changes (advmss, mtu, initcwnd) are not modelled"),
        "tc" => tc(cmd, &w[1..], out),
        "ethtool" => {
            let rest: Vec<&str> = w[1..].iter().map(String::as_str).collect();
            let offloads_off = rest.first() == Some(&"-K")
                && rest.len() >= 4
                && rest[2..].chunks(2).all(|c| c.len() == 2 && matches!(c[0], "tso" | "gso") && c[1] == "off");
            if offloads_off {
                out.push(Effect::Note(
                    "`ethtool -K tun0 tso/gso off`: no effect on TCP on Linux 6 (sk_setup_caps() always enables GSO for TCP sockets), nor on wirelab".into(),
                ));
                return Ok(());
            }
            unsup("only `ethtool -K tun0 tso off gso off` is supported")
        }
        _ => unsup("this shell command is not supported"),
    }
}

fn tc(cmd: &str, a: &[String], out: &mut Vec<Effect>) -> Result<(), Unsupported> {
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let unsup = |why: &str| Err(Unsupported(format!("`{cmd}`: {why}")));
    match a.as_slice() {
        ["qdisc", "add", "dev", _, "root", "pfifo"] => {
            out.push(Effect::Note(
                "`tc qdisc … pfifo`: an unlimited FIFO on the tun device; the interpreter hands packets over at once".into(),
            ));
            out.push(Effect::LocalDrop(false));
            Ok(())
        }
        ["qdisc", "replace", "dev", _, "root", "pfifo"] => {
            // qdisc_change() applies only the options it is given: a pfifo root keeps its
            // limit (a `limit 0` one keeps dropping, as on the kernel here)
            out.push(Effect::Note("`tc qdisc replace … pfifo` without options: an existing pfifo keeps its limit".into()));
            Ok(())
        }
        // pfifo_enqueue() drops when the queue holds `limit` packets: with 0, every one
        ["qdisc", "add" | "replace", "dev", _, "root", "pfifo", "limit", "0"] => {
            out.push(Effect::LocalDrop(true));
            Ok(())
        }
        ["qdisc", "add" | "replace", "dev", _, "root", "pfifo", "limit", n] if n.parse::<u32>().is_ok_and(|n| n > 0) => {
            out.push(Effect::Note(format!(
                "`tc qdisc … pfifo limit {n}`: the interpreter hands packets over at once, so the queue never fills"
            )));
            out.push(Effect::LocalDrop(false));
            Ok(())
        }
        ["qdisc", "add" | "replace", "dev", _, "root", "fq", ..] => unsup("the fq qdisc (pacing, TCP small queues) is not modelled"),
        ["qdisc", "delete" | "del", "dev", _, "root"] => {
            out.push(Effect::Note("`tc qdisc delete`: the tun device's default qdisc accepts every packet".into()));
            out.push(Effect::LocalDrop(false));
            Ok(())
        }
        _ => unsup("this tc command is not supported"),
    }
}

/// Resolves `prog` relative to `dir`, following a symlink that was flattened into a file
/// holding its target path (as copies of packetdrill's `tcp/common/defaults.sh` have).
fn resolve(dir: &Path, prog: &str) -> Option<PathBuf> {
    let mut p = dir.join(prog);
    for _ in 0..4 {
        let meta = std::fs::metadata(&p).ok()?;
        if !meta.is_file() {
            return None;
        }
        if meta.len() < 256 {
            let t = std::fs::read_to_string(&p).ok()?;
            let t = t.trim();
            if !t.contains('\n') && !t.starts_with('#') && (t.starts_with("../") || t.starts_with("./")) {
                let next = p.parent()?.join(t);
                if next.is_file() {
                    p = next;
                    continue;
                }
            }
        }
        return Some(p);
    }
    None
}

/// Applies one sysctl. `Ok(None)`: the engine took it; `Ok(Some(note))`: accepted, no
/// effect on wirelab, for the reason given; `Err`: unsupported.
pub fn apply_sysctl(cfg: &mut TcpConfig, key: &str, value: &str) -> Result<Option<String>, String> {
    let engine_err = match cfg.set_sysctl(key, value) {
        Ok(()) => return Ok(None),
        Err(e) => e.msg,
    };
    let short = key.trim_start_matches("net.ipv4.").trim_start_matches("net.core.");
    let v = value.trim();
    let note = |why: &str| Ok(Some(format!("{key}={v}: {why}")));
    match (short, v) {
        ("tcp_fack", "0") => note("FACK was removed in Linux 4.15; wirelab has none"),
        ("tcp_ecn_option", _) => note("the AccECN option is only used with tcp_ecn=3, which wirelab does not offer"),
        ("tcp_notsent_lowat", "4294967295") => note("no TCP_NOTSENT_LOWAT limit (the default)"),
        ("tcp_fastopen" | "tcp_fastopen_key", _) => note("Fast Open is not modelled; scripts using it fail on their TFO lines"),
        ("tcp_syncookies", "1" | "2") => {
            note("the engine's SYN queue is unbounded, which is what syncookies amount to for a well-behaved peer")
        }
        ("tcp_mtu_probing", "0") => note("MTU probing off, as wirelab has it"),
        _ => Err(engine_err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_sh_lines() {
        let dir = Path::new("/nonexistent");
        let fx = interpret("sysctl -q net.ipv4.tcp_rmem=\"4096 540000 $((15*1024*1024))\"\nsysctl -q a.b=1 c=2 > /dev/null 2>&1", dir).unwrap();
        assert_eq!(fx[0], Effect::Sysctl("net.ipv4.tcp_rmem".into(), "4096 540000 15728640".into()));
        assert_eq!(fx.len(), 3);
        let fx = interpret(" ../common/set_sysctls.py \\\n\t/proc/sys/net/ipv4/tcp_mtu_probing=2 \\\n\t/proc/sys/net/ipv4/tcp_base_mss=512\n", dir).unwrap();
        assert_eq!(fx, vec![
            Effect::Sysctl("net.ipv4.tcp_mtu_probing".into(), "2".into()),
            Effect::Sysctl("net.ipv4.tcp_base_mss".into(), "512".into())
        ]);
        let fx = interpret("echo 3 > /sys/module/tcp_cubic/parameters/hystart_detect\n# comment\n", dir).unwrap();
        assert_eq!(fx, vec![Effect::CubicParam("hystart_detect".into(), "3".into())]);
        assert_eq!(interpret("/tmp/sysctl_restore_${PPID}.sh", dir).unwrap(), vec![Effect::Restore]);
        assert!(matches!(interpret("tc qdisc add dev tun0 root pfifo", dir).unwrap()[0], Effect::Note(_)));
        let fx = interpret("tc qdisc delete dev tun0 root 2>/dev/null ; tc qdisc add dev tun0 root pfifo limit 0", dir).unwrap();
        assert_eq!(fx.last(), Some(&Effect::LocalDrop(true)));
        assert!(fx.contains(&Effect::LocalDrop(false)));
        assert_eq!(interpret("tc qdisc replace dev tun0 root pfifo limit 0", dir).unwrap(), vec![Effect::LocalDrop(true)]);
        assert_eq!(interpret("tc qdisc replace dev tun0 root pfifo limit 1000", dir).unwrap().last(), Some(&Effect::LocalDrop(false)));
        assert!(!interpret("tc qdisc replace dev tun0 root pfifo", dir).unwrap().iter().any(|e| matches!(e, Effect::LocalDrop(_))));
    }

    #[test]
    fn unsupported_commands_are_named() {
        let dir = Path::new("/nonexistent");
        for c in [
            "tc qdisc replace dev tun0 root fq",
            "tc qdisc add dev tun0 root netem delay 10ms",
            "ip route change 192.0.2.1 via 192.168.0.2 dev tun0 advmss 600 mtu lock 640",
            "rm -rf /",
            "ethtool -K tun0 gro on",
            "../common/defaults.sh",
            "sysctl -q",
        ] {
            let e = interpret(c, dir).unwrap_err();
            assert!(e.0.starts_with('`'), "{c}: {e:?}");
        }
    }

    #[test]
    fn sysctl_table() {
        let mut c = TcpConfig::default();
        assert_eq!(apply_sysctl(&mut c, "net.ipv4.tcp_sack", "0"), Ok(None));
        assert!(!c.tcp_sack);
        assert!(apply_sysctl(&mut c, "net.ipv4.tcp_fack", "0").unwrap().is_some());
        assert!(apply_sysctl(&mut c, "net.ipv4.tcp_fack", "1").is_err());
        assert!(apply_sysctl(&mut c, "net.ipv4.tcp_bogus", "1").unwrap_err().contains("tcp_bogus"));
    }

    #[test]
    fn shell_arithmetic() {
        assert_eq!(arith("15*1024*1024"), Some(15_728_640));
        assert_eq!(arith("(1+2)*3-4/2"), Some(7));
        assert_eq!(arith("1+"), None);
        assert!(words("sysctl x=$((1+").is_err());
    }
}
