//! Thin-stream mechanisms (LT, MFR, ER, TLP, RDB) and the hooks other crates use
//! (receive-window policy, `TCP_MAXSEG`).
use super::pair::{parse, Pair, A_ADDR, B_ADDR};
use crate::wire::flags;
use crate::{RcvWindowPolicy, SockError, SockOpt, SocketId, TcpConfig};
use std::cell::RefCell;
use std::net::SocketAddrV4;
use std::rc::Rc;
use wirelab_core::{Duration, Instant};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

// ---------------------------------------------------------------------------------------
// Hooks: receive-window policy and TCP_MAXSEG
// ---------------------------------------------------------------------------------------

#[derive(Debug, Default)]
struct PolicyLog {
    data_bytes: u64,
    data_calls: u32,
    limit_calls: u32,
    last_linux: u32,
}

/// Offers at most `cap` bytes; logs what it was told.
#[derive(Debug)]
struct CapPolicy {
    cap: u32,
    retract: bool,
    log: Rc<RefCell<PolicyLog>>,
}

impl RcvWindowPolicy for CapPolicy {
    fn on_data(&mut self, _now: Instant, payload: usize) {
        let mut l = self.log.borrow_mut();
        l.data_bytes += payload as u64;
        l.data_calls += 1;
    }
    fn limit(&mut self, _now: Instant, linux_window: u32, _mss: u32) -> u32 {
        let mut l = self.log.borrow_mut();
        l.limit_calls += 1;
        l.last_linux = linux_window;
        self.cap
    }
    fn peek(&self, linux_window: u32, _mss: u32) -> u32 {
        self.cap.min(linux_window)
    }
    fn allow_retract(&self) -> bool {
        self.retract
    }
}

/// Window (bytes) of each segment B sends, in order, with its send time.
fn b_windows(cap: &[super::pair::Captured], wscale: u8) -> Vec<(Instant, u32)> {
    cap.iter().filter(|x| !x.1).map(|x| (x.0, (parse(&x.2).window as u32) << wscale)).collect()
}

#[test]
fn rcv_policy_offers_sub_mss_window_and_sees_all_data() {
    let mut p = Pair::default_pair(31);
    let (c, s) = p.connect(80);
    let log = Rc::new(RefCell::new(PolicyLog::default()));
    p.b.set_rcv_window_policy(s, Some(Box::new(CapPolicy { cap: 500, retract: false, log: log.clone() }))).unwrap();
    p.sinks.push((false, s, 0, false));
    p.capture = Some(Vec::new());
    p.bulk.push((true, c, 200_000));
    p.run_for(Duration::from_secs(20));
    let cap = p.capture.take().unwrap();
    let ws = p.b.info(s).unwrap().rcv_wscale;
    let wins = b_windows(&cap, ws);
    // never-retract: the first offers keep the old right edge, then the edge creeps to 512
    // (500 rounded up to the 128-byte scale unit), never zeroed by receiver SWS avoidance
    let tail: Vec<u32> = wins.iter().skip(wins.len() / 2).map(|w| w.1).collect();
    assert!(tail.iter().all(|&w| w <= 512), "{tail:?}");
    assert!(tail.iter().any(|&w| w > 0 && w < 1448), "sub-MSS offers expected: {tail:?}");
    let ia = p.a.info(c).unwrap();
    assert!(ia.snd_wnd <= 512, "{}", ia.snd_wnd);
    let ib = p.b.info(s).unwrap();
    assert!(ib.rcv_wnd <= 512);
    // data still flows (slowly) and the policy saw every byte that arrived
    let l = log.borrow();
    assert!(ib.bytes_received > 10_000, "{}", ib.bytes_received);
    assert!(l.data_bytes >= ib.bytes_received, "{} vs {}", l.data_bytes, ib.bytes_received);
    assert!(l.limit_calls > 10 && l.last_linux > 512);
    // A data segments after the start are cut to the small window
    let late: Vec<usize> = cap.iter().filter(|x| x.1 && x.0 > p.now - Duration::from_secs(5)).map(|x| parse(&x.2).payload.len()).filter(|&n| n > 0).collect();
    assert!(!late.is_empty() && late.iter().all(|&n| n <= 512), "{late:?}");
}

/// Offers `cap` bytes and puts an MSS option of `opt` on every pure ACK (seed 003 §6.4).
#[derive(Debug)]
struct MssOptPolicy {
    cap: u32,
    opt: u16,
}

impl RcvWindowPolicy for MssOptPolicy {
    fn on_data(&mut self, _now: Instant, _payload: usize) {}
    fn limit(&mut self, _now: Instant, _linux_window: u32, _mss: u32) -> u32 {
        self.cap
    }
    fn peek(&self, linux_window: u32, _mss: u32) -> u32 {
        self.cap.min(linux_window)
    }
    fn mss_option(&self, _offered: u32, _mss: u32) -> Option<u16> {
        Some(self.opt)
    }
}

/// A receiver re-advertising a smaller MSS on its ACKs, with a window of that size, for
/// 4 s of bulk data: the sender's MSS at the end, the data segment sizes and the options
/// B's pure ACKs carried.
fn midstream_mss(honour: bool) -> (u32, Vec<usize>, Vec<Option<u16>>) {
    let mut p = Pair::default_pair(35);
    let (c, s) = p.connect(80);
    p.b.set_rcv_window_policy(s, Some(Box::new(MssOptPolicy { cap: 1280, opt: 1280 }))).unwrap();
    if honour {
        p.a.set_option(c, SockOpt::MidstreamMss(true)).unwrap();
    }
    p.sinks.push((false, s, 0, false));
    p.capture = Some(Vec::new());
    p.bulk.push((true, c, 1_000_000));
    p.run_for(Duration::from_secs(4));
    let cap = p.capture.take().unwrap();
    let t0 = cap[0].0;
    let late = |x: &super::pair::Captured| x.0 > t0 + Duration::from_secs(1);
    let sizes = cap.iter().filter(|x| x.1 && late(x)).map(|x| parse(&x.2).payload.len()).filter(|&n| n > 0).collect();
    let opts = cap.iter().filter(|x| !x.1 && late(x)).map(|x| parse(&x.2)).filter(|r| r.payload.is_empty()).map(|r| r.mss).collect();
    (p.a.info(c).unwrap().snd_mss, sizes, opts)
}

/// Seed 003 §6.4: an MSS option after the handshake is ignored by a Linux sender
/// (`tcp_parse_options()` reads TCPOPT_MSS only on a SYN; the kernel agrees:
/// scenarios/rate-control/packetdrill/mss-option-midstream-ignored.pkt), so a window below
/// the MSS still stops it until its window probe, ≈ 200 ms per segment; only a sender with
/// the wirelab MidstreamMss extension follows the option and fills the window at once.
#[test]
fn midstream_mss_option_is_ignored_unless_honoured() {
    let (mss, sizes, opts) = midstream_mss(false);
    assert!(!opts.is_empty() && opts.iter().all(|&o| o == Some(1280)), "every pure ACK carries the option: {opts:?}");
    assert_eq!(mss, 1448, "the handshake's MSS (1460 - 12 bytes of timestamps) stays");
    // 3 s of window probes: one 1280-byte segment per ≈ 200 ms probe + RTT, split off the
    // head skb (tcp_write_wakeup -> tcp_fragment); on the linux-6 profile the skbs hold two
    // MSS (2896 bytes), so every second probe's ACK lets the 336-byte rest go at once, as
    // the kernel does (crates/wirelab-packetdrill/scripts/window-probe-split.pkt)
    let probes = sizes.iter().filter(|&&n| n == 1280).count();
    assert!(sizes.iter().all(|&n| n == 1280 || n == 2 * 1448 - 2 * 1280) && (10..=15).contains(&probes), "{sizes:?}");
    let (mss, sizes_h, _) = midstream_mss(true);
    assert_eq!(mss, 1268, "1280 - 12 bytes of timestamps");
    // a window's worth (1280 bytes) per 40-ms round trip: stop-and-wait, no probe timer.
    // On the linux-6 profile (TSO) that is tcp_mss_split_point()'s cut of a 2-MSS skb:
    // 1268 + 12 with nothing in flight (Nagle lets the partial go), then the skb's rest
    let bytes: usize = sizes_h.iter().sum();
    assert!(sizes_h.iter().all(|&n| n <= 1268) && bytes >= 70 * 1268, "{bytes} bytes in {sizes_h:?}");
}

#[test]
fn rcv_policy_retraction_is_opt_in() {
    for retract in [false, true] {
        let mut p = Pair::default_pair(32);
        let (c, s) = p.connect(80);
        p.sinks.push((false, s, 0, false));
        let log = Rc::new(RefCell::new(PolicyLog::default()));
        p.b.set_rcv_window_policy(s, Some(Box::new(CapPolicy { cap: 1000, retract, log }))).unwrap();
        p.capture = Some(Vec::new());
        p.a.send(p.now, c, &[1u8; 100]).unwrap();
        p.run_for(ms(300));
        let cap = p.capture.take().unwrap();
        let ws = p.b.info(s).unwrap().rcv_wscale;
        let first = b_windows(&cap, ws)[0].1;
        if retract {
            assert_eq!(first, 1024, "retraction allowed: the offer drops at once");
        } else {
            assert!(first > 20_000, "never retract: the old right edge is kept ({first})");
        }
    }
}

#[test]
fn rcv_policy_on_listener_is_refused() {
    let mut p = Pair::default_pair(33);
    let l = p.b.listen(SocketAddrV4::new(B_ADDR, 81), 8).unwrap();
    let log = Rc::new(RefCell::new(PolicyLog::default()));
    let r = p.b.set_rcv_window_policy(l, Some(Box::new(CapPolicy { cap: 1, retract: false, log })));
    assert_eq!(r, Err(SockError::InvalidState));
    assert_eq!(p.b.set_rcv_window_policy(SocketId(999), None), Err(SockError::InvalidSocket));
}

#[test]
fn maxseg_clamps_advertised_and_used_mss() {
    let mut p = Pair::default_pair(34);
    let l = p.b.listen(SocketAddrV4::new(B_ADDR, 80), 8).unwrap();
    assert_eq!(p.b.set_option(l, SockOpt::MaxSeg(10)), Err(SockError::BadOption));
    p.b.set_option(l, SockOpt::MaxSeg(1000)).unwrap();
    let c = p.a.connect(p.now, A_ADDR, SocketAddrV4::new(B_ADDR, 80)).unwrap();
    p.a.set_option(c, SockOpt::MaxSeg(600)).unwrap();
    p.capture = Some(Vec::new());
    let mut s = None;
    for _ in 0..20 {
        p.step();
        if let Some(x) = p.b.accept(l) {
            s = Some(x);
            break;
        }
    }
    let s = s.unwrap();
    let cap = p.capture.take().unwrap();
    assert_eq!(parse(&cap[0].2).mss, Some(600));
    assert!(parse(&cap[1].2).has(flags::SYN));
    assert_eq!(parse(&cap[1].2).mss, Some(1000));
    // used MSS = min(own clamp, peer MSS) - 12 bytes of timestamps
    assert_eq!(p.a.info(c).unwrap().snd_mss, 588);
    assert_eq!(p.b.info(s).unwrap().snd_mss, 588);
    // on an established connection: accepted and kept, but the MSS does not change (Linux
    // do_tcp_setsockopt(); kernel-checked by
    // scenarios/rate-control/packetdrill/tcp-maxseg-established.pkt)
    assert_eq!(p.a.set_option(c, SockOpt::MaxSeg(500)), Ok(()));
    assert_eq!(p.a.info(c).unwrap().snd_mss, 588);
    // data segments respect it
    p.capture = Some(Vec::new());
    p.a.set_option(c, SockOpt::NoDelay(true)).unwrap();
    p.a.send(p.now, c, &[3u8; 5000]).unwrap();
    p.run_for(ms(500));
    let cap = p.capture.take().unwrap();
    let sizes: Vec<usize> = cap.iter().filter(|x| x.1).map(|x| parse(&x.2).payload.len()).filter(|&n| n > 0).collect();
    assert_eq!(sizes.iter().sum::<usize>(), 5000);
    assert!(sizes.iter().all(|&n| n <= 588) && sizes[0] == 588, "{sizes:?}");
}

// ---------------------------------------------------------------------------------------
// Thin streams
// ---------------------------------------------------------------------------------------

/// linux-3.14 on both ends, 10 Mbit/s, 100 ms RTT; returns the pair and the two sockets
/// (B drains into a sink, A has TCP_NODELAY as thin-stream applications do).
fn thin_pair(cfg: TcpConfig, seed: u64) -> (Pair, SocketId, SocketId) {
    let mut p = Pair::new(cfg.clone(), cfg, 10_000_000, ms(50), 100, seed);
    let (c, s) = p.connect(80);
    p.sinks.push((false, s, 0, false));
    p.a.set_option(c, SockOpt::NoDelay(true)).unwrap();
    // a few exchanges for a settled RTT estimate
    for _ in 0..3 {
        p.a.send(p.now, c, &[0u8; 100]).unwrap();
        p.run_for(ms(300));
    }
    (p, c, s)
}

fn cfg314(kv: &[(&str, &str)]) -> TcpConfig {
    let mut c = TcpConfig::profile("linux-3.14").unwrap();
    for (k, v) in kv {
        c.set_sysctl(k, v).unwrap();
    }
    c
}

/// Leave initial slow start, as a thin stream does after its first loss.
fn leave_initial_ss(p: &mut Pair, c: SocketId) {
    p.a.conn_for_test(c).unwrap().t_set_cwnd(10, 10);
}

/// (send time, seq, payload length) of A's data segments.
fn a_data(cap: &[super::pair::Captured]) -> Vec<(Instant, u32, usize)> {
    cap.iter()
        .filter(|x| x.1)
        .map(|x| (x.0, parse(&x.2)))
        .filter(|(_, r)| !r.payload.is_empty())
        .map(|(t, r)| (t, r.seq.0, r.payload.len()))
        .collect()
}

#[test]
fn thin_detection_is_packets_out_below_four_outside_initial_slow_start() {
    let (mut p, c, _s) = thin_pair(cfg314(&[]), 40);
    p.a.send(p.now, c, &[1u8; 100]).unwrap();
    p.settle();
    let i = p.a.info(c).unwrap();
    assert_eq!(i.unacked, 1);
    assert!(!i.thin, "still in initial slow start (ssthresh infinite)");
    leave_initial_ss(&mut p, c);
    assert!(p.a.info(c).unwrap().thin);
    for n in 2..=5u32 {
        p.a.send(p.now, c, &[1u8; 100]).unwrap();
        p.settle();
        let i = p.a.info(c).unwrap();
        assert_eq!(i.unacked, n);
        assert_eq!(i.thin, n < 4, "packets_out {n}");
    }
    // SACKed/lost packets still count (packets_out, not packets in flight)
    p.run_for(ms(300));
    assert!(p.a.info(c).unwrap().thin);
}

/// Gaps (s) between A's transmissions of its only data segment while everything is lost.
fn rto_gaps(cfg: TcpConfig, sockopt: bool, segs: usize) -> (Vec<f64>, crate::TcpInfo) {
    let (mut p, c, _s) = thin_pair(cfg, 41);
    if sockopt {
        p.a.set_option(c, SockOpt::ThinLinearTimeouts(true)).unwrap();
    }
    leave_initial_ss(&mut p, c);
    p.capture = Some(Vec::new());
    p.ab.loss = 1.0;
    for _ in 0..segs {
        p.a.send(p.now, c, &[2u8; 100]).unwrap();
        p.settle();
    }
    p.run_for(Duration::from_secs(40));
    let cap = p.capture.take().unwrap();
    let head = a_data(&cap)[0].1;
    let times: Vec<f64> = a_data(&cap).iter().filter(|d| d.1 == head).map(|d| d.0.as_secs_f64()).collect();
    (times.windows(2).map(|w| w[1] - w[0]).collect(), p.a.info(c).unwrap())
}

#[test]
fn linear_timeouts_for_six_retries_then_exponential() {
    // ER/TLP off so that only RTOs retransmit
    for (cfg, sockopt) in [
        (cfg314(&[("net.ipv4.tcp_early_retrans", "0")]), true),
        (cfg314(&[("net.ipv4.tcp_early_retrans", "0"), ("net.ipv4.tcp_thin_linear_timeouts", "1")]), false),
    ] {
        let (g, info) = rto_gaps(cfg, sockopt, 1);
        assert!(g.len() >= 10, "{g:?}");
        let base = g[0];
        assert!((0.28..0.33).contains(&base), "RTO ~ srtt + 200 ms: {g:?}");
        // first RTO plus six linear re-arms: seven equal gaps
        for x in &g[..7] {
            assert!((x - base).abs() < 0.005, "linear: {g:?}");
        }
        // from the 7th retransmission on: exponential backoff
        assert!((g[7] / base - 2.0).abs() < 0.05, "{g:?}");
        assert!((g[8] / g[7] - 2.0).abs() < 0.05, "{g:?}");
        assert_eq!(info.thin_linear_timeouts, 6);
        assert!(info.rto_count >= 9);
    }
}

#[test]
fn linear_timeouts_off_or_thick_stream_back_off_at_once() {
    let off = cfg314(&[("net.ipv4.tcp_early_retrans", "0")]);
    let (g, info) = rto_gaps(off.clone(), false, 1);
    assert!((g[1] / g[0] - 2.0).abs() < 0.05, "no LT: {g:?}");
    assert_eq!(info.thin_linear_timeouts, 0);
    // LT enabled but four packets out: not thin, exponential backoff
    let (g, info) = rto_gaps(off, true, 4);
    assert!((g[1] / g[0] - 2.0).abs() < 0.05, "thick: {g:?}");
    assert_eq!(info.thin_linear_timeouts, 0);
}

/// Sends `n` 100-byte segments with cwnd `cwnd`, drops the first; returns the delay from
/// the first dupACK's arrival at A to the retransmission, and A's info.
fn first_loss_repair(cfg: TcpConfig, thin_dupack_opt: bool, n: usize, cwnd: u32) -> (Option<Duration>, crate::TcpInfo) {
    let (mut p, c, _s) = thin_pair(cfg, 42);
    if thin_dupack_opt {
        p.a.set_option(c, SockOpt::ThinDupack(true)).unwrap();
    }
    p.a.conn_for_test(c).unwrap().t_set_cwnd(cwnd, cwnd);
    p.capture = Some(Vec::new());
    p.ab.drop_next_data = 1;
    for _ in 0..n {
        p.a.send(p.now, c, &[3u8; 100]).unwrap();
        p.settle();
    }
    p.run_for(Duration::from_secs(3));
    let cap = p.capture.take().unwrap();
    let d = a_data(&cap);
    let head = d[0].1;
    let rtx = d.iter().skip(1).find(|x| x.1 == head).map(|x| x.0);
    // first pure ACK from B carrying a SACK block, sent at t: arrives at t + 50 ms
    let dupack = cap.iter().find(|x| !x.1 && !parse(&x.2).sack.is_empty()).map(|x| x.0 + ms(50));
    let delay = match (rtx, dupack) {
        (Some(r), Some(a)) => Some(r.saturating_since(a)),
        _ => None,
    };
    (delay, p.a.info(c).unwrap())
}

#[test]
fn mfr_retransmits_on_first_dupack_when_thin_with_sack_and_nothing_unsent() {
    let base = [("net.ipv4.tcp_early_retrans", "0")];
    // 3 packets out, first lost: one dupACK (SACKing the second) is enough
    for (cfg, opt) in [(cfg314(&base), true), (cfg314(&[base[0], ("net.ipv4.tcp_thin_dupack", "1")]), false)] {
        let (d, info) = first_loss_repair(cfg, opt, 3, 10);
        assert!(d.unwrap() < ms(2), "{d:?}");
        assert_eq!(info.thin_dupack_retrans, 1);
        assert_eq!(info.rto_count, 0);
    }
    // without MFR two dupACKs are below the dupthresh: the RTO repairs it
    let (d, info) = first_loss_repair(cfg314(&base), false, 3, 10);
    assert!(d.unwrap() > ms(100), "{d:?}");
    assert_eq!(info.thin_dupack_retrans, 0);
    assert_eq!(info.rto_count, 1);
}

#[test]
fn mfr_needs_sack_empty_queue_and_thin() {
    let base = ("net.ipv4.tcp_early_retrans", "0");
    // no SACK: no MFR
    let (d, info) = first_loss_repair(cfg314(&[base, ("net.ipv4.tcp_sack", "0")]), true, 3, 10);
    assert_eq!(info.thin_dupack_retrans, 0);
    assert!(info.rto_count >= 1, "{d:?}");
    // unsent data at the first dupACK (cwnd 2 holds the third segment back): MFR waits for
    // the next dupACK, one round trip later
    let (d, info) = first_loss_repair(cfg314(&[base]), true, 3, 2);
    let d = d.unwrap();
    assert!(d > ms(90) && d < ms(130), "{d:?}");
    assert_eq!(info.thin_dupack_retrans, 1);
    // initial slow start (not thin): no MFR
    let (mut p, c, _s) = thin_pair(cfg314(&[base]), 43);
    p.a.set_option(c, SockOpt::ThinDupack(true)).unwrap();
    p.ab.drop_next_data = 1;
    for _ in 0..3 {
        p.a.send(p.now, c, &[3u8; 100]).unwrap();
        p.settle();
    }
    p.run_for(Duration::from_secs(2));
    let i = p.a.info(c).unwrap();
    assert_eq!(i.thin_dupack_retrans, 0);
    assert_eq!(i.rto_count, 1);
}

#[test]
fn early_retransmit_with_two_or_three_outstanding() {
    for n in [2usize, 3] {
        // mode 1: at once on the first dupACK (no thin-stream condition needed)
        let (d, info) = first_loss_repair(cfg314(&[("net.ipv4.tcp_early_retrans", "1")]), false, n, 10);
        assert!(d.unwrap() < ms(2), "n={n} {d:?}");
        assert_eq!((info.early_retrans, info.rto_count), (1, 0));
        // mode 2: deferred by max(srtt/4, 2 ms) = ~25 ms at 100 ms RTT
        let (d, info) = first_loss_repair(cfg314(&[("net.ipv4.tcp_early_retrans", "2")]), false, n, 10);
        let d = d.unwrap();
        assert!(d >= ms(24) && d <= ms(34), "n={n} {d:?}");
        assert_eq!((info.early_retrans, info.rto_count), (1, 0));
    }
    // four outstanding: ER does not apply (packets_out < 4), the dupthresh of 3 does
    let (_, info) = first_loss_repair(cfg314(&[("net.ipv4.tcp_early_retrans", "1")]), false, 4, 10);
    assert_eq!(info.early_retrans, 0);
    // off: mode 0, mode 4 (TLP only), RACK on (4.4+), tcp_thin_dupack sysctl
    for kv in [
        [("net.ipv4.tcp_early_retrans", "0"), ("net.ipv4.tcp_recovery", "0")],
        [("net.ipv4.tcp_early_retrans", "4"), ("net.ipv4.tcp_recovery", "0")],
        [("net.ipv4.tcp_early_retrans", "1"), ("net.ipv4.tcp_recovery", "1")],
        [("net.ipv4.tcp_early_retrans", "1"), ("net.ipv4.tcp_thin_dupack", "1")],
    ] {
        let (_, info) = first_loss_repair(cfg314(&kv), false, 2, 10);
        assert_eq!(info.early_retrans, 0, "{kv:?}");
    }
    // per-socket mode overrides the sysctl
    let (mut p, c, _s) = thin_pair(cfg314(&[("net.ipv4.tcp_early_retrans", "0")]), 44);
    p.a.set_option(c, SockOpt::EarlyRetrans(1)).unwrap();
    assert_eq!(p.a.set_option(c, SockOpt::EarlyRetrans(5)), Err(SockError::BadOption));
    p.a.conn_for_test(c).unwrap().t_set_cwnd(10, 10);
    p.ab.drop_next_data = 1;
    p.a.send(p.now, c, &[3u8; 100]).unwrap();
        p.settle();
    p.a.send(p.now, c, &[3u8; 100]).unwrap();
        p.settle();
    p.run_for(Duration::from_secs(1));
    assert_eq!(p.a.info(c).unwrap().early_retrans, 1);
}

/// Drops A's next `drop` data segments after sending `n` with cwnd `cwnd`; returns A's
/// data segments from then on and A's info.
fn tail_loss(cfg: TcpConfig, n: usize, drop: u32, cwnd: u32) -> (Vec<(Instant, u32, usize)>, Instant, crate::TcpInfo) {
    let (mut p, c, _s) = thin_pair(cfg, 45);
    p.a.conn_for_test(c).unwrap().t_set_cwnd(cwnd, cwnd);
    p.capture = Some(Vec::new());
    p.ab.drop_next_data = drop;
    let t0 = p.now;
    for _ in 0..n {
        p.a.send(p.now, c, &[4u8; 100]).unwrap();
        p.settle();
    }
    p.run_for(Duration::from_secs(3));
    let cap = p.capture.take().unwrap();
    (a_data(&cap), t0, p.a.info(c).unwrap())
}

#[test]
fn tlp_probes_last_segment_after_two_srtt() {
    // two segments, both lost: PTO = 2 srtt (~200 ms) < RTO (~300 ms)
    let (d, t0, info) = tail_loss(cfg314(&[]), 2, 2, 10);
    assert_eq!(d.len(), 4, "{d:?}");
    let probe = d[2];
    let pto = probe.0.saturating_since(t0);
    assert!(pto >= ms(196) && pto <= ms(212), "2 srtt in whole jiffies: {pto:?}");
    assert_eq!(probe.1, d[1].1, "the probe repeats the last segment");
    assert_eq!(info.tlp_probes, 1);
    // its SACK lets (delayed) early retransmit repair the head well before the RTO
    assert_eq!(d[3].1, d[0].1);
    assert!(d[3].0.saturating_since(t0) < ms(340), "{d:?}");
    assert_eq!(info.rto_count, 0);
    // TLP off (mode 2): the head goes first, at the RTO
    let (d, t0, info) = tail_loss(cfg314(&[("net.ipv4.tcp_early_retrans", "2")]), 2, 2, 10);
    assert_eq!(d[2].1, d[0].1);
    assert!(d[2].0.saturating_since(t0) >= ms(280), "{d:?}");
    assert_eq!((info.tlp_probes, info.rto_count), (0, 1));
}

#[test]
fn tlp_probes_with_new_data_when_cwnd_limited() {
    // cwnd 2 holds the third segment back; both sent ones are lost: the probe carries new
    // data, beyond cwnd
    let (d, t0, info) = tail_loss(cfg314(&[]), 3, 2, 2);
    let probe = d[2];
    assert!(probe.1 > d[1].1, "new data: {d:?}");
    let pto = probe.0.saturating_since(t0);
    assert!(pto >= ms(196) && pto <= ms(212), "2 srtt in whole jiffies: {pto:?}");
    assert_eq!(info.tlp_probes, 1);
}

#[test]
fn tlp_single_packet_waits_for_delayed_ack_and_rto_caps_it() {
    // one packet out: PTO = max(2 srtt, 1.5 srtt + 200 ms) = 350 ms > RTO ~300 ms, so the
    // probe fires at the RTO instant instead of the RTO
    let (d, t0, info) = tail_loss(cfg314(&[]), 1, 1, 10);
    let at = d[1].0.saturating_since(t0);
    assert!(at >= ms(280) && at <= ms(320), "{at:?}");
    assert_eq!((info.tlp_probes, info.rto_count), (1, 0));
}

/// Thin stream with 100-byte writes every `itt`, for `dur`; returns A's data segments.
fn rdb_run(cfg: TcpConfig, itt: Duration, dur: Duration, drop_idx: Vec<u64>) -> (Vec<(Instant, u32, usize)>, crate::TcpInfo, crate::TcpInfo) {
    let (mut p, c, s) = thin_pair(cfg, 46);
    leave_initial_ss(&mut p, c);
    p.capture = Some(Vec::new());
    p.ab.drop_data_idx = drop_idx.iter().map(|i| i + p.ab.sent_pkts).collect();
    let end = p.now + dur;
    let mut sent = 0u64;
    while p.now < end {
        p.a.send(p.now, c, &[5u8; 100]).unwrap();
        sent += 100;
        p.run_for(itt);
    }
    p.run_for(Duration::from_secs(2));
    let cap = p.capture.take().unwrap();
    let ib = p.b.info(s).unwrap();
    assert_eq!(p.a.info(c).unwrap().bytes_acked % 100, 0);
    assert!(ib.bytes_received >= sent, "all data delivered");
    (a_data(&cap), p.a.info(c).unwrap(), ib)
}

#[test]
fn rdb_original_bundles_unacked_data_up_to_mss_when_thin() {
    let cfg = cfg314(&[("net.ipv4.tcp_rdb", "2"), ("net.ipv4.tcp_early_retrans", "0")]);
    // 100-byte writes every 40 ms at 100 ms RTT: 2-3 packets out, thin
    let (d, info, _) = rdb_run(cfg.clone(), ms(40), Duration::from_secs(2), vec![]);
    assert!(info.rdb_packets > 10, "{info:?}");
    assert!(d.iter().any(|x| x.2 >= 300), "bundles of 3 segments: {d:?}");
    assert!(d.iter().all(|x| x.2 <= 1448));
    assert_eq!(info.rdb_bytes_bundled, d.iter().map(|x| x.2 as u64 - 100).sum::<u64>());
    // a lost segment is repaired by the next bundle: no retransmission, no cwnd reduction
    let (_, info, _) = rdb_run(cfg.clone(), ms(40), Duration::from_secs(2), vec![10]);
    assert_eq!((info.total_retrans, info.rto_count, info.rdb_loss_cwr), (0, 0, 0));
    assert_eq!(info.ssthresh, 10, "original RDB does not react to loss");
    // tcp_rdb_max_bytes caps the packet
    let mut c2 = cfg.clone();
    c2.set_sysctl("net.ipv4.tcp_rdb_max_bytes", "250").unwrap();
    let (d, info, _) = rdb_run(c2, ms(40), Duration::from_secs(2), vec![]);
    assert!(info.rdb_packets > 10 && d.iter().all(|x| x.2 <= 250), "{d:?}");
    // not thin (writes every 5 ms: ~20 packets out): no bundling
    let (_, info, _) = rdb_run(cfg, ms(5), Duration::from_secs(1), vec![]);
    assert!(info.rdb_packets < 5, "{}", info.rdb_packets);
    // off by default
    let (d, info, _) = rdb_run(cfg314(&[]), ms(40), Duration::from_secs(1), vec![]);
    assert_eq!(info.rdb_packets, 0);
    assert!(d.iter().all(|x| x.2 == 100));
}

#[test]
fn rdb_2015_bundles_one_previous_segment_and_loss_means_cwr() {
    let cfg = cfg314(&[("net.ipv4.tcp_rdb", "1"), ("net.ipv4.tcp_early_retrans", "0")]);
    let (d, info, _) = rdb_run(cfg.clone(), ms(40), Duration::from_secs(2), vec![]);
    assert!(info.rdb_packets > 10);
    assert!(d.iter().all(|x| x.2 <= 200), "tcp_rdb_max_packets = 1: {d:?}");
    assert_eq!(info.rdb_loss_cwr, 0);
    // loss hidden by a bundle: enter CWR, ssthresh falls
    let (_, info, _) = rdb_run(cfg.clone(), ms(40), Duration::from_secs(2), vec![10]);
    assert_eq!((info.total_retrans, info.rto_count), (0, 0));
    assert_eq!(info.rdb_loss_cwr, 1);
    assert!(info.ssthresh < 10, "{}", info.ssthresh);
    // max_packets 0 = no packet limit (bytes only)
    let mut c2 = cfg;
    c2.set_sysctl("net.ipv4.tcp_rdb_max_packets", "0").unwrap();
    let (d, _, _) = rdb_run(c2, ms(40), Duration::from_secs(2), vec![]);
    assert!(d.iter().any(|x| x.2 >= 300), "{d:?}");
}

#[test]
fn rdb_socket_option_overrides_sysctl() {
    let (mut p, c, _s) = thin_pair(cfg314(&[]), 47);
    p.a.set_option(c, SockOpt::Rdb(crate::RdbMode::Orig2008)).unwrap();
    p.capture = Some(Vec::new());
    for _ in 0..20 {
        p.a.send(p.now, c, &[6u8; 100]).unwrap();
        p.run_for(ms(30));
    }
    let cap = p.capture.take().unwrap();
    assert!(a_data(&cap).iter().any(|x| x.2 > 100));
    assert!(p.a.info(c).unwrap().rdb_packets > 0);
}

#[test]
fn thin_sysctls_parse_and_reject_bad_values() {
    let mut c = TcpConfig::profile("linux-3.14").unwrap();
    assert_eq!(c.tcp_early_retrans, 3);
    assert_eq!(c.tcp_rdb, crate::RdbMode::Off);
    assert!(!c.tcp_thin_linear_timeouts && !c.tcp_thin_dupack);
    c.set_sysctl("net.ipv4.tcp_rdb", "2").unwrap();
    assert_eq!(c.tcp_rdb, crate::RdbMode::Orig2008);
    assert!(c.set_sysctl("net.ipv4.tcp_rdb", "3").is_err());
    assert!(c.set_sysctl("net.ipv4.tcp_early_retrans", "5").is_err());
    assert!(c.set_sysctl("net.ipv4.tcp_thin_dpifl_itt_lower_bound", "5000").is_err());
    c.set_sysctl("net.ipv4.tcp_thin_dpifl_itt_lower_bound", "20000").unwrap();
    assert_eq!(c.tcp_thin_dpifl_itt_lower_bound_us, 20000);
}

// ---------------------------------------------------------------------------------------
// RACK-TLP (tcp_recovery = 1: linux-4.6, linux-6)
// ---------------------------------------------------------------------------------------

fn cfg6(kv: &[(&str, &str)]) -> TcpConfig {
    let mut c = TcpConfig::profile("linux-6").unwrap();
    for (k, v) in kv {
        c.set_sysctl(k, v).unwrap();
    }
    c
}

#[test]
fn rack_marks_loss_after_a_quarter_min_rtt_below_the_dupthresh() {
    // 2 packets out, first lost: one SACK; RACK waits reo_wnd = min_rtt/4 (~25 ms) + 2
    // jiffies, then marks the head lost
    let (d, info) = first_loss_repair(cfg6(&[]), false, 2, 10);
    let d = d.unwrap();
    assert!(d >= ms(25) && d <= ms(32), "{d:?}");
    assert_eq!((info.rto_count, info.early_retrans), (0, 0));
    // RACK off (and no ER): the dupthresh is never reached, the RTO repairs it
    let (d, info) = first_loss_repair(cfg6(&[("net.ipv4.tcp_recovery", "0"), ("net.ipv4.tcp_early_retrans", "0")]), false, 2, 10);
    assert!(d.unwrap() > ms(100));
    assert_eq!(info.rto_count, 1);
}

#[test]
fn rack_reo_wnd_is_zero_at_the_dupthresh() {
    // 5 packets out, first lost: the third SACK reaches the dupthresh, reo_wnd drops to 0
    // and the head is retransmitted on that ACK
    let (mut p, c, _s) = thin_pair(cfg6(&[]), 48);
    p.a.conn_for_test(c).unwrap().t_set_cwnd(10, 10);
    p.capture = Some(Vec::new());
    p.ab.drop_next_data = 1;
    for _ in 0..5 {
        p.a.send(p.now, c, &[3u8; 100]).unwrap();
        p.settle();
    }
    p.run_for(Duration::from_secs(1));
    let cap = p.capture.take().unwrap();
    let d = a_data(&cap);
    let rtx = d.iter().skip(1).find(|x| x.1 == d[0].1).unwrap().0;
    let third_sack = cap.iter().filter(|x| !x.1 && !parse(&x.2).sack.is_empty()).nth(2).unwrap().0 + ms(50);
    assert!(rtx.saturating_since(third_sack) < ms(1), "{:?}", rtx.saturating_since(third_sack));
    assert_eq!(p.a.info(c).unwrap().rto_count, 0);
}

#[test]
fn rack_tlp_probe_after_two_srtt_plus_two_jiffies_then_rack_repairs() {
    let (d, t0, info) = tail_loss(cfg6(&[]), 2, 2, 10);
    let probe = d[2];
    assert_eq!(probe.1, d[1].1, "the probe repeats the last segment");
    let pto = probe.0.saturating_since(t0);
    // 2 srtt (~200 ms) + TCP_TIMEOUT_MIN (2 ms at HZ 1000)
    assert!(pto >= ms(201) && pto <= ms(205), "{pto:?}");
    assert_eq!(info.tlp_probes, 1);
    // the probe's SACK lets RACK mark the head lost a quarter RTT later, before any RTO
    assert_eq!(d[3].1, d[0].1);
    assert!(d[3].0.saturating_since(probe.0) < ms(140), "{d:?}");
    assert_eq!(info.rto_count, 0);
    assert_eq!(info.total_retrans, 2, "the RACK-TLP probe is a retransmission");
    // one packet out: 2 srtt + TCP_RTO_MIN is later than the RTO, which caps it
    let (d, t0, info) = tail_loss(cfg6(&[]), 1, 1, 10);
    let at = d[1].0.saturating_since(t0);
    assert!(at >= ms(290) && at <= ms(310), "{at:?}");
    assert_eq!((info.tlp_probes, info.rto_count), (1, 0));
}

/// Regression (found by the thin-stream study): a fast retransmission of the head sent
/// shortly before the head's original RTO would expire restarts the RTO
/// (`tcp_xmit_retransmit_queue()` → `tcp_rearm_rto()`), so the old timer does not
/// retransmit the in-flight repair again. Thin writes every 60 ms on a 100-ms RTT: the
/// third dupACK arrives 280 ms after the lost head, just under its ≈ 300-ms RTO.
#[test]
fn fast_retransmit_near_rto_expiry_restarts_the_timer() {
    let (mut p, c, _s) = thin_pair(cfg314(&[("net.ipv4.tcp_early_retrans", "0")]), 47);
    leave_initial_ss(&mut p, c);
    let rto = Duration::from_micros(p.a.info(c).unwrap().rto_us as u64);
    assert!(rto > ms(250) && rto < ms(350), "settled RTO {rto:?}");
    p.capture = Some(Vec::new());
    p.ab.drop_next_data = 1;
    let t0 = p.now;
    for _ in 0..4 {
        p.a.send(p.now, c, &[7u8; 100]).unwrap();
        p.run_for(ms(60));
    }
    p.run_for(Duration::from_secs(2));
    let info = p.a.info(c).unwrap();
    let cap = p.capture.take().unwrap();
    let head = a_data(&cap)[0].1;
    let rtx: Vec<Instant> = a_data(&cap).iter().skip(1).filter(|x| x.1 == head).map(|x| x.0).collect();
    assert_eq!(rtx.len(), 1, "the head is retransmitted once (by fast retransmit), not again by the old RTO: {:?}", rtx.iter().map(|t| t.saturating_since(t0)).collect::<Vec<_>>());
    let at = rtx[0].saturating_since(t0);
    assert!(at > ms(250) && at < rto, "fast retransmit at {at:?}, before the RTO {rto:?}");
    assert_eq!(info.rto_count, 0);
    assert_eq!(info.total_retrans, 1);
}

/// With a window policy installed, the read path's "window opened a lot" test
/// (`tcp_cleanup_rbuf()`) compares the policy's window, not Linux's: an application read
/// right after a delayed-ACK-triggered ACK must not send the same ACK again (found by the
/// rate-control study: identical ACKs 53 µs apart, then one ACK per segment).
#[test]
fn rcv_policy_read_does_not_force_duplicate_acks() {
    let mut p = Pair::default_pair(37);
    let (c, s) = p.connect(80);
    let log = Rc::new(RefCell::new(PolicyLog::default()));
    p.b.set_rcv_window_policy(s, Some(Box::new(CapPolicy { cap: 16 * 1448, retract: false, log }))).unwrap();
    p.sinks.push((false, s, 0, false));
    p.capture = Some(Vec::new());
    p.bulk.push((true, c, 400_000));
    p.run_for(Duration::from_secs(5));
    assert_eq!(p.b.info(s).unwrap().bytes_received, 400_000);
    let cap = p.capture.take().unwrap();
    let mut dups = 0;
    let mut acks = 0;
    let mut last: Option<(u32, u16)> = None;
    let mut data_since = false;
    for x in &cap {
        let r = parse(&x.2);
        if x.1 {
            data_since |= !r.payload.is_empty();
            continue;
        }
        acks += 1;
        let key = (r.ack.0, r.window);
        if last == Some(key) && !data_since {
            dups += 1;
        }
        last = Some(key);
        data_since = false;
    }
    let segs = cap.iter().filter(|x| x.1 && !parse(&x.2).payload.is_empty()).count();
    assert_eq!(dups, 0, "identical ACKs with no data in between");
    assert!(acks * 10 < segs * 7, "delayed ACKs: about one per two segments ({acks} ACKs for {segs} segments)");
}
