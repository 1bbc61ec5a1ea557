//! Our own scripts (crates/wirelab-packetdrill/scripts) on the real kernel: the same
//! files that must pass on wirelab must pass on Linux, or they prove nothing.
//!
//! Needs root, /dev/net/tun, `ip` (netns), a C toolchain with bison and flex
//! (scripts/install-test-deps.sh installs them), and the packetdrill sources
//! (../shared/packetdrill or $WIRELAB_PACKETDRILL_DIR). Without them it says why and
//! skips. packetdrill is built once into Cargo's test scratch directory.
use std::path::{Path, PathBuf};
use std::process::Command;

fn have(cmd: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {cmd}")).output().is_ok_and(|o| o.status.success())
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")))
        .unwrap_or(false)
}

/// Why the test cannot run here, if it cannot.
fn skip_reason(src: &Option<PathBuf>) -> Option<String> {
    if !is_root() {
        return Some("not running as root (packetdrill needs netns and a tun device)".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    for c in ["ip", "make", "cc", "bison", "flex", "timeout"] {
        if !have(c) {
            return Some(format!("`{c}` is not installed (scripts/install-test-deps.sh installs bison and flex)"));
        }
    }
    if src.is_none() {
        return Some("packetdrill sources not found (../shared/packetdrill or $WIRELAB_PACKETDRILL_DIR)".into());
    }
    None
}

/// Builds packetdrill from the shared sources once; returns the binary.
fn build(src: &Path) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("packetdrill-build");
    let bin = dir.join("packetdrill/packetdrill");
    if bin.exists() {
        return bin;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let st = Command::new("cp").arg("-r").arg(src.join("gtests/net/packetdrill")).arg(&dir).status().unwrap();
    assert!(st.success(), "copying the packetdrill sources failed");
    let st = Command::new("chmod").args(["-R", "u+w"]).arg(&dir).status().unwrap();
    assert!(st.success());
    let st = Command::new("sh")
        .arg("-c")
        .arg("./configure >/dev/null && make -j2 packetdrill >build.log 2>&1 || { cat build.log; exit 1; }")
        .current_dir(dir.join("packetdrill"))
        .status()
        .unwrap();
    assert!(st.success(), "building packetdrill failed (see output above)");
    bin
}

/// Our scripts select cubic inside a network namespace, which Linux allows only for
/// algorithms in net.ipv4.tcp_allowed_congestion_control.
fn allow_cubic() {
    let p = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
    let cur = std::fs::read_to_string(p).unwrap_or_default();
    if !cur.split_whitespace().any(|a| a == "cubic") {
        eprintln!("kernel test: adding cubic to {p} (was `{}`)", cur.trim());
        std::fs::write(p, format!("{} cubic\n", cur.trim())).expect("cannot allow cubic");
    }
}

fn run_on_kernel(bin: &Path, script: &Path, tag: usize) -> (bool, String) {
    let ns = format!("wlpd{}-{tag}", std::process::id());
    let add = Command::new("ip").args(["netns", "add", &ns]).status().unwrap();
    assert!(add.success(), "ip netns add {ns}");
    let _ = Command::new("ip").args(["-netns", &ns, "link", "set", "lo", "up"]).status();
    let out = Command::new("timeout")
        .args(["-k", "5", "30", "ip", "netns", "exec", &ns])
        .arg(bin)
        .args([
            "--ip_version=ipv4",
            "--local_ip=192.168.0.1",
            "--gateway_ip=192.168.0.1",
            "--netmask_ip=255.255.0.0",
            "--remote_ip=192.0.2.1",
        ])
        .arg(script.file_name().unwrap())
        .current_dir(script.parent().unwrap())
        .output()
        .unwrap();
    let _ = Command::new("ip").args(["netns", "del", &ns]).status();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[test]
fn own_scripts_pass_on_the_kernel() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let src = wirelab_packetdrill::corpus_dir(&repo);
    if let Some(why) = skip_reason(&src) {
        eprintln!("skipping own_scripts_pass_on_the_kernel: {why}");
        return;
    }
    let bin = build(src.as_deref().unwrap());
    allow_cubic();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pkt"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 6, "our scripts: {scripts:?}");
    // each in its own namespace, all at once: the slowest takes about 5 s
    let results: Vec<(PathBuf, bool, String)> = std::thread::scope(|s| {
        let hs: Vec<_> = scripts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let bin = &bin;
                s.spawn(move || {
                    let (ok, out) = run_on_kernel(bin, p, i);
                    (p.clone(), ok, out)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // timing on a loaded machine can be off by tens of ms: a script that failed gets two
    // more tries, alone
    let mut failed = Vec::new();
    for (p, ok, out) in results {
        if ok {
            continue;
        }
        eprintln!("kernel test: {} failed once, retrying alone:\n{out}", p.display());
        let retry = (0..2).map(|k| run_on_kernel(&bin, &p, 100 + k)).find(|(ok, _)| *ok);
        if retry.is_none() {
            failed.push(format!("{}:\n{out}", p.display()));
        }
    }
    assert!(failed.is_empty(), "scripts that fail on the kernel:\n{}", failed.join("\n"));
}
