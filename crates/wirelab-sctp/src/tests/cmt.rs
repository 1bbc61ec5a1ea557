//! Concurrent multipath transfer: each mechanism's trigger conditions, over the in-test
//! network with two paths of different delay (subnet 1 and subnet 2).
use super::*;

/// A multihomed pair with CMT set by `sysctls` on both hosts; path 1 (subnet 1, primary)
/// and path 2 (subnet 2) get the given one-way delays and rates.
fn cmt_pair(sysctls: &[(&str, &str)], lat: [u64; 2], rate: [u64; 2]) -> (Net, SocketId) {
    let mut c = SctpConfig::default();
    for (k, v) in sysctls {
        c.set_sysctl(k, v).unwrap();
    }
    // large socket buffers: these tests are about the windows, not receive-buffer blocking
    c.rmem_default = 4 << 20;
    c.wmem_default = 4 << 20;
    let mut n = Net::new(c.clone(), c);
    n.sub_latency[1] = Some(Duration::from_millis(lat[0]));
    n.sub_latency[2] = Some(Duration::from_millis(lat[1]));
    n.sub_rate[1] = Some(rate[0]);
    n.sub_rate[2] = Some(rate[1]);
    n.qlimit = Duration::from_millis(400); // lossless unless a test drops
    n.listen(&[a("10.0.1.2"), a("10.0.2.2")]);
    let s = n.connect(&[a("10.0.1.1"), a("10.0.2.1")], &[a("10.0.1.2"), a("10.0.2.2")]);
    assert!(n.run_until(Instant::from_nanos(5_000_000_000), |n| n.has_event(0, SockEvent::Connected).is_some() && n.sink.sock.is_some()));
    (n, s)
}

const CMT: (&str, &str) = ("net.inet.sctp.cmt_on_off", "1");

fn receiver(n: &Net) -> AssocInfo {
    n.h[1].info(n.sink.sock.unwrap()).unwrap()
}

#[test]
fn cmt_sends_on_both_paths_and_beats_the_better_path_alone() {
    let goodput = |sys: &[(&str, &str)]| {
        let (mut n, s) = cmt_pair(sys, [10, 30], [10_000_000, 5_000_000]);
        n.capture = false;
        n.start_bulk(s, u64::MAX / 2, 65_536, 1);
        let t0 = n.now;
        n.run_for(Duration::from_secs(10));
        assert_eq!(n.sink.bad, None);
        (n.sink.total as f64 * 8.0 / (n.now - t0).as_secs_f64() / 1e6, n.info(s))
    };
    let (single, si) = goodput(&[]);
    let (cmt, ci) = goodput(&[CMT]);
    eprintln!("single path {single:.2} Mb/s, CMT {cmt:.2} Mb/s; per path sent {:?}", ci.paths.iter().map(|p| p.bytes_sent).collect::<Vec<_>>());
    let rtx_bytes = si.paths[1].retransmits * 1452;
    assert!(si.paths[1].bytes_sent <= rtx_bytes, "without CMT the alternate path carries only timeout retransmissions: {:?}", si.paths[1]);
    assert!(ci.paths.iter().all(|p| p.bytes_sent > 1_000_000), "{:?}", ci.paths);
    assert!(cmt > 1.3 * single, "CMT {cmt} vs single path {single}");
    assert!(cmt < 15.0, "more than the sum of the paths: {cmt}");
}

#[test]
fn sfr_prevents_spurious_fast_retransmits_over_paths_of_different_delay() {
    // no loss at all: every fast retransmission is spurious, caused by the reordering of
    // two paths with 10 ms and 60 ms of one-way delay
    let run = |sfr: &str| {
        let (mut n, s) = cmt_pair(&[CMT, ("net.inet.sctp.cmt_sfr", sfr)], [10, 60], [0, 0]);
        n.capture = false;
        n.start_bulk(s, 4_000_000, 65_536, 1);
        n.run_for(Duration::from_secs(10));
        assert_eq!(n.sink.total, 4_000_000);
        assert_eq!(n.sink.bad, None);
        assert_eq!(n.qdrops, 0, "the test wants a lossless network");
        (n.info(s).stats, receiver(&n).stats)
    };
    let (with, with_rx) = run("1");
    let (without, without_rx) = run("0");
    eprintln!("SFR on: {} fast rtx, {} withheld, {} dups; off: {} fast rtx, {} dups", with.fast_retransmits, with.sfr_withheld_misses, with_rx.dup_tsns, without.fast_retransmits, without_rx.dup_tsns);
    assert_eq!(with.fast_retransmits, 0);
    assert_eq!(with_rx.dup_tsns, 0);
    assert!(with.sfr_withheld_misses > 0, "SFR never had to withhold a miss: {with:?}");
    assert!(without.fast_retransmits > 0 && without_rx.dup_tsns > 0, "{without:?} {without_rx:?}");
    assert_eq!(without.sfr_withheld_misses, 0);
}

#[test]
fn cuc_grows_a_path_whose_data_is_acked_while_another_holds_the_cumulative_ack() {
    // path 1: 5 ms, path 2: 150 ms one way, no rate limit. The first DATA packet on path 2
    // is lost, so the cumulative ack stays below it for at least path 2's RTT (300 ms);
    // meanwhile path 1's data is acked by gap blocks only.
    let run = |cuc: &str| {
        let (mut n, s) = cmt_pair(&[CMT, ("net.inet.sctp.cmt_cuc", cuc)], [5, 150], [0, 0]);
        n.drop_first_on = Some(2);
        n.start_bulk(s, u64::MAX / 2, 65_536, 1);
        n.run_for(Duration::from_millis(250));
        let i = n.info(s);
        (i.paths[0].cwnd, i.stats.cuc_cwnd_updates, i.stats.bytes_acked)
    };
    let (cwnd_on, updates_on, cum_on) = run("on");
    let (cwnd_off, updates_off, cum_off) = run("off");
    let (cwnd_any, _, _) = run("any");
    eprintln!("path 1 cwnd after 250 ms: CUC {cwnd_on} ({updates_on} pseudo-cumack updates), cum-ack only {cwnd_off}, RFC 9260 {cwnd_any}; cum acked {cum_on} / {cum_off} B");
    assert_eq!(cum_on, cum_off, "the cumulative ack must be held by path 2's hole in both runs");
    assert!(cum_on < 10_000, "{cum_on}");
    assert!(updates_on > 0 && updates_off == 0);
    assert!(cwnd_off < 2 * 4380, "without CUC a path hardly grows while the cum ack is held: {cwnd_off}");
    assert!(cwnd_on > 4 * cwnd_off, "CUC: {cwnd_on} vs {cwnd_off}");
    assert!(cwnd_any >= cwnd_on);
}

/// (DATA packets from host 0, SACKs from host 1, SACK chunk flags seen) of a capture.
fn sack_stats(n: &Net) -> (usize, usize, Vec<u8>) {
    let (mut data, mut sacks, mut flags) = (0, 0, Vec::new());
    for (_, h, _, _, b) in &n.cap {
        for c in SctpPacket::new_checked(&b[..]).unwrap().chunks() {
            let c = c.unwrap();
            match (h, c.kind()) {
                (0, kind::DATA) => data += 1,
                (1, kind::SACK) => {
                    sacks += 1;
                    flags.push(c.flags());
                }
                _ => {}
            }
        }
    }
    // count DATA packets, not chunks
    let data_pkts = n.cap.iter().filter(|c| c.1 == 0 && SctpPacket::new_checked(&c.4[..]).unwrap().chunks().any(|x| x.unwrap().kind() == kind::DATA)).count();
    let _ = data;
    (data_pkts, sacks, flags)
}

#[test]
fn dac_receiver_acks_every_other_packet_despite_reordering_and_reports_the_count() {
    let run = |dac: &str| {
        let (mut n, s) = cmt_pair(&[CMT, ("net.inet.sctp.cmt_use_dac", dac)], [10, 60], [10_000_000, 10_000_000]);
        n.start_bulk(s, 3_000_000, 65_536, 1);
        n.run_for(Duration::from_secs(10));
        assert_eq!(n.sink.total, 3_000_000);
        assert_all_packets_valid(&n);
        sack_stats(&n)
    };
    let (data, sacks, flags) = run("1");
    let (data0, sacks0, flags0) = run("0");
    eprintln!("DAC: {sacks} SACKs for {data} DATA packets; without: {sacks0} for {data0}");
    // without DAC the reordering makes almost every packet trigger an immediate SACK
    assert!(sacks0 as f64 > 0.75 * data0 as f64, "{sacks0} {data0}");
    assert!(flags0.iter().all(|&f| f == 0), "no DAC bits without DAC");
    // with DAC: about one SACK per two packets, and the flags carry the count (1 or 2)
    assert!((sacks as f64) < 0.6 * data as f64, "{sacks} {data}");
    assert!(flags.iter().all(|&f| f & 0x3f == 0 && f >> 6 <= 3), "{flags:?}");
    let twos = flags.iter().filter(|&&f| f == 0x80).count();
    assert!(twos * 10 > flags.len() * 8, "mostly two packets per SACK: {twos} of {}", flags.len());
}

#[test]
fn dac_sender_adds_a_miss_for_a_single_path_sack_with_the_flag() {
    // one DATA packet lost; with DAC on both ends the SACKs that report the hole carry the
    // "two packets" flag and ack one path each, so misses count double
    let run = |dac: &str| {
        let (mut n, s) = cmt_pair(&[CMT, ("net.inet.sctp.cmt_use_dac", dac)], [10, 60], [10_000_000, 10_000_000]);
        n.drop_nth = vec![40];
        n.start_bulk(s, 2_000_000, 65_536, 1);
        n.run_for(Duration::from_secs(10));
        assert_eq!(n.sink.total, 2_000_000);
        assert_eq!(n.sink.bad, None);
        n.info(s).stats
    };
    let with = run("1");
    let without = run("0");
    eprintln!("DAC: {with:?}\nno DAC: {without:?}");
    assert!(with.dac_extra_misses > 0);
    assert_eq!(without.dac_extra_misses, 0);
    assert!(with.fast_retransmits >= 1, "the loss is repaired by fast retransmit");
    assert_eq!(with.t3_expiries, 0);
}

/// Destination address of each retransmission of the first DATA packet dropped.
fn rtx_destinations(n: &Net) -> (Ipv4Addr, Vec<Ipv4Addr>) {
    let data: Vec<(Ipv4Addr, Tsn)> = n
        .cap
        .iter()
        .filter(|c| c.1 == 0)
        .flat_map(|c| SctpPacket::new_checked(&c.4[..]).unwrap().chunks().filter_map(|x| x.ok()).filter(|x| x.kind() == kind::DATA).map(|x| (c.3, Tsn(be32(x.value(), 0)))).collect::<Vec<_>>())
        .collect();
    // the dropped packet is the 40th DATA packet; its first chunk's TSN
    let pkts: Vec<&(Instant, usize, Ipv4Addr, Ipv4Addr, Vec<u8>)> = n.cap.iter().filter(|c| c.1 == 0 && SctpPacket::new_checked(&c.4[..]).unwrap().chunks().any(|x| x.unwrap().kind() == kind::DATA)).collect();
    let lost = pkts[39];
    let tsn = SctpPacket::new_checked(&lost.4[..]).unwrap().chunks().filter_map(|x| x.ok()).find(|x| x.kind() == kind::DATA).map(|x| Tsn(be32(x.value(), 0))).unwrap();
    let sends: Vec<Ipv4Addr> = data.iter().filter(|(_, t)| *t == tsn).map(|(d, _)| *d).collect();
    (sends[0], sends[1..].to_vec())
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[test]
fn rtx_policies_route_a_fast_retransmission() {
    let run = |policy: &str| {
        let (mut n, s) = cmt_pair(&[CMT, ("net.inet.sctp.cmt_rtx_policy", policy)], [10, 40], [10_000_000, 2_000_000]);
        n.drop_nth = vec![40];
        n.start_bulk(s, 1_500_000, 65_536, 1);
        n.run_for(Duration::from_secs(20));
        assert_eq!(n.sink.total, 1_500_000, "{policy}");
        assert_eq!(n.sink.bad, None);
        rtx_destinations(&n)
    };
    // RTX-SAME: back where it was lost
    let (orig, rtx) = run("same");
    assert!(!rtx.is_empty());
    assert!(rtx.iter().all(|&d| d == orig), "same: {orig} → {rtx:?}");
    // RTX-CWND: to the 10 Mbit/s path, whose cwnd has grown faster
    let (orig, rtx) = run("cwnd");
    eprintln!("cwnd: lost on {orig}, retransmitted to {rtx:?}");
    assert_eq!(rtx[0], a("10.0.1.2"));
    // the others complete the transfer (their choice itself: cmt::tests)
    for p in ["asap", "ssthresh"] {
        let (_, rtx) = run(p);
        assert!(!rtx.is_empty(), "{p}");
    }
}

#[test]
fn failover_of_one_path_during_a_cmt_transfer() {
    let (mut n, s) = cmt_pair(&[CMT], [10, 30], [10_000_000, 5_000_000]);
    n.capture = false;
    n.start_bulk(s, 12_000_000, 65_536, 1);
    n.run_for(Duration::from_secs(3));
    let before = n.info(s).paths.iter().map(|p| p.bytes_sent).collect::<Vec<_>>();
    assert!(before.iter().all(|&b| b > 0));
    n.down.push(1); // path 1 fails (both directions)
    n.run_for(Duration::from_secs(8));
    let i = n.info(s);
    assert_ne!(i.paths[0].state, PathState::Active, "{:?}", i.paths[0]);
    let moved = i.paths[1].bytes_sent - before[1];
    assert!(moved > 3_000_000, "path 2 carried on: {moved}");
    n.down.clear();
    assert!(n.run_until(n.now + Duration::from_secs(120), |n| n.sink.total == 12_000_000));
    assert_eq!(n.sink.bad, None);
    assert_eq!(n.info(s).state, AssocState::Established);
}

#[test]
fn cmt_runs_are_deterministic() {
    let run = || {
        let (mut n, s) = cmt_pair(&[CMT, ("net.inet.sctp.cmt_use_dac", "1"), ("net.inet.sctp.cmt_rtx_policy", "asap")], [10, 40], [10_000_000, 3_000_000]);
        n.loss = 0.01;
        n.start_bulk(s, 1_000_000, 65_536, 1);
        n.run_for(Duration::from_secs(10));
        n.cap.iter().map(|c| (c.0, c.1, c.4.clone())).collect::<Vec<_>>()
    };
    let (x, y) = (run(), run());
    assert!(x.len() > 1000);
    assert!(x == y, "two runs of the same CMT setup differ");
}

#[test]
fn cmt_piggybacks_a_delayed_sack_on_any_output_like_freebsd() {
    // request/response over two paths: the client's next request goes to the other path
    // (round robin), so Linux-style bundling (same path only) would leave the server's
    // Nagle waiting for the client's 200 ms delayed SACK; FreeBSD sends the SACK with it
    let (mut n, s) = cmt_pair(&[CMT], [35, 35], [1_500_000, 1_500_000]);
    n.sink.echo = true;
    let t0 = n.now;
    for _ in 0..4 {
        n.h[0].send(n.now, s, 0, &[1u8; 512], false).unwrap();
        // until the response is there to read
        assert!(n.run_until(n.now + Duration::from_secs(2), |n| n.info(s).rcvbuf_used > 0));
        let mut b = [0u8; 600];
        assert_eq!(n.h[0].recv(n.now, s, &mut b).unwrap().unwrap().len, 512);
    }
    let per_exchange = (n.now - t0).as_secs_f64() / 4.0;
    // one RTT (≈ 71 ms) per exchange, not RTT + the delayed-ack timeout
    assert!(per_exchange < 0.1, "{per_exchange} s per request/response");
    let paths: std::collections::BTreeSet<Ipv4Addr> = n.cap.iter().filter(|c| c.1 == 0).map(|c| c.3).collect();
    assert_eq!(paths.len(), 2, "requests went over both paths");
}
