//! The packetdrill corpus against wirelab: every script of the behaviour directories of
//! Linux's packetdrill tests (from ../shared/packetdrill or $WIRELAB_PACKETDRILL_DIR)
//! and every script of our own must end as `tests/corpus-expected.tsv` says, which is
//! also what docs/packetdrill.md shows (scripts/packetdrill_table.py regenerates it).
//! A script that starts passing, or stops, fails this test until the file and the doc
//! are updated.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wirelab_packetdrill::{run_file, Options, Status};

/// The behaviour directories issue 15 names.
const DIRS: &[&str] = &[
    "blocking",
    "close",
    "cubic",
    "cwnd_moderation",
    "ecn",
    "fast_recovery",
    "fast_retransmit",
    "limited_transmit",
    "mss",
    "mtu_probe",
    "nagle",
    "sack",
    "shutdown",
    "slow_start",
    "tcp_info",
    "ts_recent",
    "user_timeout",
    "validate",
];

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Pass => "pass",
        Status::Fail => "fail",
        Status::ParseError => "parse_error",
        Status::Unsupported => "unsupported",
    }
}

fn expected() -> BTreeMap<String, String> {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus-expected.tsv");
    let text = std::fs::read_to_string(&f).expect("tests/corpus-expected.tsv");
    let mut m = BTreeMap::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() || l.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = l.split('\t').collect();
        assert!(cols.len() >= 2, "{}:{}: expected `path<TAB>status<TAB>why`", f.display(), i + 1);
        assert!(
            cols[1] == "pass" || cols.get(2).is_some_and(|w| !w.trim().is_empty()),
            "{}:{}: a script that does not pass needs a why",
            f.display(),
            i + 1
        );
        m.insert(cols[0].to_string(), cols[1].to_string());
    }
    m
}

fn check(scripts: &[(String, PathBuf)], exp: &BTreeMap<String, String>) -> Vec<String> {
    let opts = Options::default();
    let mut bad = Vec::new();
    for (key, path) in scripts {
        let o = run_file(path, &opts);
        let got = status_name(o.status);
        match exp.get(key) {
            None => bad.push(format!("{key}: not listed in tests/corpus-expected.tsv (it ended: {got})")),
            Some(want) if want != got => bad.push(format!("{key}: expected {want}, got {got}\n    {}", o.message.replace('\n', "\n    "))),
            Some(_) => {}
        }
    }
    bad
}

/// The project's own scripts: this crate's (seed mechanisms, TSO, options) and the TCP
/// engine's ECN scripts (crates/wirelab-tcp/tests/packetdrill), all kernel-checked.
const OWN_DIRS: &[&str] = &["scripts", "../wirelab-tcp/tests/packetdrill"];

#[test]
fn own_scripts_end_as_documented() {
    let mut scripts: Vec<(String, PathBuf)> = Vec::new();
    for d in OWN_DIRS {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(d);
        scripts.extend(
            std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "pkt"))
                .map(|p| (format!("own/{}", p.file_name().unwrap().to_string_lossy()), p)),
        );
    }
    scripts.sort();
    assert!(scripts.len() >= 17, "only {} own scripts", scripts.len());
    let bad = check(&scripts, &expected());
    assert!(bad.is_empty(), "our scripts ({}):\n{}", OWN_DIRS.join(", "), bad.join("\n"));
}

#[test]
fn upstream_corpus_ends_as_documented() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let Some(root) = wirelab_packetdrill::corpus_dir(&repo) else {
        eprintln!(
            "skipping upstream_corpus_ends_as_documented: the packetdrill corpus is not here \
             (expected ../shared/packetdrill beside the repository, or set WIRELAB_PACKETDRILL_DIR)"
        );
        return;
    };
    let tcp = root.join("gtests/net/tcp");
    let mut scripts = Vec::new();
    for d in DIRS {
        let Ok(rd) = std::fs::read_dir(tcp.join(d)) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "pkt") {
                scripts.push((format!("{d}/{}", p.file_name().unwrap().to_string_lossy()), p));
            }
        }
    }
    scripts.sort();
    assert!(scripts.len() >= 40, "only {} scripts under {}", scripts.len(), tcp.display());
    let bad = check(&scripts, &expected());
    assert!(
        bad.is_empty(),
        "corpus scripts that did not end as tests/corpus-expected.tsv says \
         (update it and run scripts/packetdrill_table.py):\n{}",
        bad.join("\n")
    );
}
