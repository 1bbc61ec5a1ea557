//! Every fuzz target for a fixed, short budget under `cargo test` (docs/reliability.md).
//!
//! Each target runs its corpus (`fuzz/corpus/<target>/` and its built-in seeds) and then
//! `ci_iters` mutated inputs from seed 1. The inputs are the same on every machine; a
//! panic fails the test with the input and the iteration that replays it. A wall-clock
//! cap per target (20 s, far above what the budget needs on CI's machine) only guards
//! against a pathologically slow machine; it is reported when it is hit.
//! `WIRELAB_FUZZ_SCALE=10` multiplies the budget for a longer local run.
use std::time::Duration;
use wirelab_fuzz::{corpus_root, fuzz, load_corpus, show, target};

fn check(name: &str) {
    let t = target(name).expect("target exists");
    let scale: u64 = std::env::var("WIRELAB_FUZZ_SCALE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
    let corpus = load_corpus(t, &corpus_root());
    assert!(!corpus.is_empty(), "{name}: empty corpus");
    let n = corpus.len() as u64 + t.ci_iters * scale;
    let r = fuzz(t, &corpus, 1, 0, n, Some(Duration::from_secs(20 * scale)), true);
    eprintln!("{name}: {} inputs ({} corpus) in {:.2} s", r.iterations, r.corpus, r.seconds);
    if let Some(c) = r.crashes.first() {
        panic!(
            "{name}: iteration {} panicked: {}\ninput: {}\nreplay: cargo run -p wirelab-fuzz -- run {name} --start {} --iters 1",
            c.iteration,
            c.message,
            show(&c.input),
            c.iteration
        );
    }
    if r.iterations < n {
        eprintln!("{name}: wall-clock cap hit after {} of {n} inputs", r.iterations);
    }
}

macro_rules! targets {
    ($($t:ident),*) => { $( #[test] fn $t() { check(stringify!($t)); } )* };
}

targets!(ipv4, udp, icmp, ethernet, tcp_header, sctp_packet, pcap, analyze, tc, netem, units, shim_rules, analyze_class, scenario, scenario_set, tcp_endpoint, sctp_endpoint, shim_stack);

#[test]
fn every_target_is_tested_here() {
    let listed = "ipv4, udp, icmp, ethernet, tcp_header, sctp_packet, pcap, analyze, tc, netem, units, shim_rules, analyze_class, scenario, scenario_set, tcp_endpoint, sctp_endpoint, shim_stack";
    for t in wirelab_fuzz::targets::ALL {
        assert!(listed.split(", ").any(|n| n == t.name), "{} has no CI test", t.name);
    }
}
