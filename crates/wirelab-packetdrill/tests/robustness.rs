//! Bad scripts get a clear error with a line number and exit code 2, never a panic:
//! syntax errors, unknown system calls, truncated files, garbage bytes, and random
//! mutations of real scripts (ours, and the upstream corpus when it is present).
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use wirelab_core::Rng;
use wirelab_packetdrill::{run_source, Options, Outcome, Status};

fn run_bytes(src: &[u8]) -> Outcome {
    run_source("t.pkt", src, Path::new("/nonexistent"), &Options::default())
}
fn run(src: &str) -> Outcome {
    run_bytes(src.as_bytes())
}

/// The line number in `t.pkt:N: …`.
fn line_of(o: &Outcome) -> Option<u32> {
    let rest = o.message.strip_prefix("t.pkt:")?;
    rest.split(':').next()?.parse().ok()
}

const HEAD: &str = "0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n\
+0 setsockopt(3, SOL_SOCKET, SO_REUSEADDR, [1], 4) = 0\n\
+0 bind(3, ..., ...) = 0\n\
+0 listen(3, 1) = 0\n";

#[test]
fn syntax_errors_name_their_line() {
    for (body, line, frag) in [
        ("+0 < S 0:0(0) win 100 <mss 1000,,>\n", 5, "syntax error"),
        ("+0 < S 0:0(0) <mss 1000>\n", 5, "window must be specified"),
        ("+0 > S 0:1(0)\n", 5, "inconsistent TCP sequence numbers"),
        ("\n\n+0 write(4, ..., 10 = 10\n", 7, "syntax error"),
        ("+0 %{ assert 1\n", 5, "unterminated %{"),
        ("+0 `sysctl -q x=1\n", 5, "unterminated back-quoted"),
        ("/* comment\n", 5, "unterminated /* comment"),
        ("-1 close(3) = 0\n", 5, "negative time"),
        ("+.1~+.05 > S 0:0(0)\n", 5, "time range is backwards"),
    ] {
        let o = run(&format!("{HEAD}{body}"));
        assert_eq!(o.status, Status::ParseError, "{body}: {}", o.message);
        assert_eq!(o.exit_code(), 2);
        assert_eq!(line_of(&o), Some(line), "{body}: {}", o.message);
        assert!(o.message.contains(frag), "{body}: {}", o.message);
    }
}

#[test]
fn unknown_or_unsupported_things_are_named() {
    for (body, line, frag) in [
        ("+0 frobnicate(3) = 0\n", 5, "system call frobnicate()"),
        ("+0 setsockopt(3, SOL_SOCKET, SO_MADE_UP, [1], 4) = 0\n", 5, "unknown symbol `SO_MADE_UP`"),
        ("+0 `tc qdisc replace dev tun0 root fq`\n", 5, "fq qdisc"),
        ("+0 `rm -rf /tmp/x`\n", 5, "not supported"),
        ("+0 `sysctl -q net.ipv4.tcp_no_such_knob=1`\n", 5, "tcp_no_such_knob"),
        ("+0 < udp (10)\n", 5, "UDP"),
        ("+0 close(3) = 0 EWHATEVER\n", 5, "errno symbol `EWHATEVER`"),
    ] {
        let o = run(&format!("{HEAD}{body}"));
        assert_eq!(o.status, Status::Unsupported, "{body}: {}", o.message);
        assert_eq!(o.exit_code(), 2);
        assert_eq!(line_of(&o), Some(line), "{body}: {}", o.message);
        assert!(o.message.contains(frag), "{body}: {}", o.message);
    }
    let o = run("--ip_version=ipv6\n0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n");
    assert_eq!(o.status, Status::Unsupported);
    assert!(o.message.contains("IPv4 only"), "{}", o.message);
}

#[test]
fn runtime_failures_read_like_packetdrill() {
    // a wrong return value, a wrong errno, a packet that never comes, a bad fd
    for (body, line, frag) in [
        ("+0 write(3, ..., 10) = 10\n", 5, "runtime error in write call: Expected result 10 but got -1 with errno 107 (Transport endpoint is not connected)"),
        ("+0...1 accept(3, ..., ...) = 4\n", 5, "exiting while a blocking system call is in progress"),
        ("+0 accept(3, ..., ...) = 4\n", 5, "runtime error in accept call: the call blocks and nothing the script does later can release it"),
        ("+0 close(7) = 0\n", 5, "runtime error in close call: bad script fd 7"),
        ("+0 > S. 0:0(0) ack 1 <...>\n", 5, "Timed out waiting for packet"),
    ] {
        let o = run(&format!("{HEAD}{body}"));
        assert_eq!(o.status, Status::Fail, "{body}: {}", o.message);
        assert_eq!(o.exit_code(), 1);
        assert_eq!(line_of(&o), Some(line), "{body}: {}", o.message);
        assert!(o.message.contains(frag), "{body}: {}", o.message);
    }
}

fn no_panic(src: &[u8], what: &str) -> Outcome {
    match catch_unwind(AssertUnwindSafe(|| run_bytes(src))) {
        Ok(o) => {
            if o.status != Status::Pass {
                assert!(line_of(&o).is_some() || o.message.starts_with("t.pkt"), "{what}: no location in {:?}", o.message);
            }
            o
        }
        Err(_) => panic!("{what}: the runner panicked on:\n{}", String::from_utf8_lossy(src)),
    }
}

fn own_scripts() -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .expect("crates/wirelab-packetdrill/scripts")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pkt"))
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn truncated_scripts_never_panic() {
    let (_, src) = own_scripts().into_iter().next().expect("at least one script of our own");
    let mut parse_errors = 0;
    for n in 0..=src.len() {
        let o = no_panic(&src[..n], &format!("truncated at byte {n}"));
        parse_errors += (o.status == Status::ParseError) as u32;
    }
    // cutting inside the init command, a packet or a code block is a parse error
    assert!(parse_errors > (src.len() / 4) as u32, "{parse_errors} parse errors over {} cuts", src.len());
}

#[test]
fn garbage_bytes_never_panic() {
    let mut rng = Rng::from_seed(0x9ac4);
    for i in 0..300 {
        let n = rng.below(400) as usize;
        let b: Vec<u8> = (0..n).map(|_| rng.next_u32() as u8).collect();
        let o = no_panic(&b, &format!("garbage #{i}"));
        assert_ne!(o.status, Status::Pass, "garbage #{i} passed");
    }
}

/// The upstream corpus, if present (`../shared/packetdrill` beside the repository, or
/// `$WIRELAB_PACKETDRILL_DIR`).
fn corpus_dir() -> Option<PathBuf> {
    wirelab_packetdrill::corpus_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

fn mutate(rng: &mut Rng, src: &[u8]) -> Vec<u8> {
    const TOKENS: &[&str] = &["...", "<", ">", "%{", "}%", "`", "+", "-1", "99999999999999999", "\0", "\u{fffd}", "~", "*", "win", "ack", "(", ")", "\n"];
    let mut lines: Vec<Vec<u8>> = src.split(|&c| c == b'\n').map(|l| l.to_vec()).collect();
    for _ in 0..=rng.below(3) {
        if lines.is_empty() {
            break;
        }
        let i = rng.below(lines.len() as u64) as usize;
        match rng.below(6) {
            0 => {
                lines.remove(i);
            }
            1 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            2 => {
                let j = rng.below(lines.len() as u64) as usize;
                lines.swap(i, j);
            }
            3 if !lines[i].is_empty() => {
                let k = rng.below(lines[i].len() as u64) as usize;
                lines[i][k] = rng.next_u32() as u8;
            }
            4 => {
                let t = TOKENS[rng.below(TOKENS.len() as u64) as usize];
                let k = rng.below(lines[i].len() as u64 + 1) as usize;
                lines[i].splice(k..k, t.bytes());
            }
            _ => lines.truncate(i + 1),
        }
    }
    lines.join(&b'\n')
}

#[test]
fn mutated_scripts_never_panic() {
    let mut scripts = own_scripts();
    match corpus_dir() {
        Some(d) => {
            for sub in ["blocking", "close", "fast_recovery", "fast_retransmit", "nagle", "sack", "shutdown", "slow_start", "tcp_info", "ts_recent"] {
                let Ok(rd) = std::fs::read_dir(d.join("gtests/net/tcp").join(sub)) else { continue };
                for e in rd.flatten() {
                    if e.path().extension().is_some_and(|x| x == "pkt") {
                        let b = std::fs::read(e.path()).unwrap();
                        scripts.push((e.path(), b));
                    }
                }
            }
        }
        None => eprintln!("mutated_scripts_never_panic: upstream corpus not found (../shared/packetdrill or $WIRELAB_PACKETDRILL_DIR); mutating our own scripts only"),
    }
    let mut rng = Rng::from_seed(0x5eed);
    eprintln!("mutating {} scripts, 25 times each", scripts.len());
    for (p, src) in &scripts {
        for k in 0..25 {
            let m = mutate(&mut rng, src);
            no_panic(&m, &format!("{} mutation {k}", p.display()));
        }
    }
}
