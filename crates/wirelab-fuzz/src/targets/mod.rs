//! The fuzz targets, one per parser or engine (docs/reliability.md lists them with their
//! iteration counts).
mod capture;
mod engines;
mod text;
mod wire;

pub use capture::tcp_capture;
pub use text::QUICK;
pub use wire::ipv4_datagram;

use crate::{Kind, Target};

const fn bin(name: &'static str, what: &'static str, max_len: usize, seeds: fn() -> Vec<Vec<u8>>, run: fn(&[u8]), ci_iters: u64) -> Target {
    Target { name, what, kind: Kind::Binary, max_len, seeds, run, ci_iters }
}

const fn txt(name: &'static str, what: &'static str, dict: &'static [&'static str], seeds: fn() -> Vec<Vec<u8>>, run: fn(&[u8]), ci_iters: u64) -> Target {
    Target { name, what, kind: Kind::Text { dict }, max_len: 16 * 1024, seeds, run, ci_iters }
}

/// Every target.
pub static ALL: &[Target] = &[
    bin("ipv4", "IPv4 header (and the transport decoder behind it)", 2048, wire::ipv4_seeds, wire::ipv4, 600_000),
    bin("udp", "UDP header and checksum", 2048, wire::udp_seeds, wire::udp, 600_000),
    bin("icmp", "ICMP echo, unreachable, time exceeded, quoted datagrams", 2048, wire::icmp_seeds, wire::icmp, 800_000),
    bin("ethernet", "Ethernet and VLAN framing; IPv4 offset per link type", 2048, wire::ethernet_seeds, wire::ethernet, 600_000),
    bin("tcp_header", "TCP header and options (MSS, WS, SACK-permitted, SACK, timestamps)", 2048, wire::tcp_seeds, wire::tcp, 800_000),
    bin("sctp_packet", "SCTP common header, chunks, parameters, error causes", 2048, wire::sctp_seeds, wire::sctp, 400_000),
    bin("pcap", "pcap and pcapng reader", 64 * 1024, capture::pcap_seeds, capture::pcap, 200_000),
    bin("analyze", "wirelab analyze: capture loading, TCP decoding, metrics, tables", 64 * 1024, capture::pcap_seeds, capture::analyze, 12_000),
    txt("tc", "tc command lines: parse, build, enqueue/dequeue", text::TC_DICT, text::tc_seeds, text::tc, 50_000),
    txt("netem", "netem strings: parse, print/re-parse, a link carrying packets", text::NETEM_DICT, text::netem_seeds, text::netem, 150_000),
    txt("units", "tc units: rates, times, sizes, percentages", text::NUMBERS, text::units_seeds, text::units, 500_000),
    txt("shim_rules", "shim rule lines", text::SHIM_DICT, text::shim_rules_seeds, text::shim_rules, 200_000),
    txt("analyze_class", "analyze --class rules", text::CLASS_DICT, text::analyze_class_seeds, text::analyze_class, 400_000),
    txt("scenario", "scenario TOML: parse, validate, build, run 8192 events", text::SCENARIO_DICT, text::scenario_seeds, text::scenario, 1_200),
    txt("scenario_set", "--set overrides on a scenario: parse, validate, build, run 8192 events", text::SET_DICT, text::scenario_set_seeds, text::scenario_set, 2_500),
    bin("tcp_endpoint", "TCP endpoint fed raw and mutated-valid segments after a handshake", 4096, engines::program_seeds, engines::tcp_endpoint, 25_000),
    bin("sctp_endpoint", "SCTP endpoint fed raw and mutated-valid packets after a handshake", 4096, engines::program_seeds, engines::sctp_endpoint, 15_000),
    bin("shim_stack", "shim stack (TCP + SCTP) fed raw and mutated-valid packets", 4096, engines::program_seeds, engines::shim_stack, 10_000),
];
