//! Golden captures: a few canonical scenarios whose pcap must stay byte-identical. They
//! pin the whole chain (engines, driver, qdiscs, links, pcap writer) on real bytes, so any
//! change to what goes on the wire shows up here even if every counter stays the same.
//!
//! * `tcp-transfer`: handshake, a 20 KB transfer and the FIN exchange on a clean path.
//! * `sctp-loss`: an SCTP association moving 30 KB over a path with 10 % random loss
//!   (retransmissions included), through SHUTDOWN.
//! * `udp-htb`: UDP CBR at 2 Mbit/s through a 1 Mbit/s HTB class with a 10-packet pfifo.
//!
//! When a change to the wire is intended, regenerate and review the new captures:
//!
//! ```text
//! WIRELAB_BLESS=1 cargo test -p wirelab-run --test golden
//! tshark -r crates/wirelab-run/tests/golden/tcp-transfer.pcap   # look at what changed
//! ```
//!
//! and commit the `.pcap` files with a message that says why the bytes changed.
use std::path::{Path, PathBuf};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Runs `name.toml` and compares its one capture with `name.pcap`.
fn check(name: &str, capture: &str) {
    let dir = golden_dir();
    let out = std::env::temp_dir().join(format!("wirelab-golden-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    wirelab_run::run_scenario(&dir.join(format!("{name}.toml")), &out, None, &[], |_, _| {}).unwrap_or_else(|e| panic!("{name}: {}", e.1));
    let got = std::fs::read(out.join("pcap").join(capture)).unwrap();
    let _ = std::fs::remove_dir_all(&out);
    let want_path = dir.join(format!("{name}.pcap"));
    if std::env::var_os("WIRELAB_BLESS").is_some() {
        std::fs::write(&want_path, &got).unwrap();
        return;
    }
    let want = std::fs::read(&want_path).unwrap_or_else(|e| panic!("{}: {e} (WIRELAB_BLESS=1 creates it)", want_path.display()));
    if got != want {
        let at = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(got.len().min(want.len()));
        panic!(
            "{name}: capture differs from {} at byte {at} ({} bytes now, {} golden); if the change is intended, regenerate with WIRELAB_BLESS=1 (see this file's header)",
            want_path.display(),
            got.len(),
            want.len()
        );
    }
}

#[test]
fn tcp_transfer() {
    check("tcp-transfer", "a-eth0.pcap");
}

#[test]
fn sctp_association_with_loss() {
    check("sctp-loss", "a-eth0.pcap");
}

#[test]
fn udp_cbr_through_htb() {
    check("udp-htb", "b-eth0.pcap");
}
