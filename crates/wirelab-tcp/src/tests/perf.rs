//! Throughput properties: CUBIC utilisation, Reno vs. the Mathis model, CUBIC fairness.
use super::pair::Pair;
use crate::{CongestionAlgo, TcpConfig};
use wirelab_core::{Duration, Instant};

fn cfg(algo: CongestionAlgo) -> TcpConfig {
    let mut c = TcpConfig::default();
    c.tcp_congestion_control = algo;
    c
}

/// A loss-free 10 Mbit/s, 40 ms RTT path with a BDP-sized drop-tail FIFO (33 packets):
/// one CUBIC flow keeps the link > 95 % busy after slow start.
#[test]
fn cubic_single_flow_utilisation() {
    let rate = 10_000_000u64;
    let bdp_pkts = (rate as f64 * 0.040 / 8.0 / 1500.0).round() as usize;
    let mut p = Pair::new(cfg(CongestionAlgo::CUBIC), cfg(CongestionAlgo::CUBIC), rate, Duration::from_millis(20), bdp_pkts, 21);
    let (c, s) = p.connect(5001);
    p.sinks.push((false, s, 0, false));
    p.bulk.push((true, c, u64::MAX));
    p.run_until(Instant::from_nanos(10_000_000_000));
    let b0 = p.ab.delivered_bytes;
    let g0 = p.b.info(s).unwrap().bytes_received;
    let mut min_cwnd = u32::MAX;
    let mut max_cwnd = 0;
    for _ in 0..200 {
        p.run_for(Duration::from_millis(100));
        let cw = p.a.info(c).unwrap().cwnd;
        min_cwnd = min_cwnd.min(cw);
        max_cwnd = max_cwnd.max(cw);
    }
    let util = (p.ab.delivered_bytes - b0) as f64 * 8.0 / (20.0 * rate as f64);
    let goodput = (p.b.info(s).unwrap().bytes_received - g0) as f64 * 8.0 / 20.0;
    let ia = p.a.info(c).unwrap();
    eprintln!(
        "cubic 10Mbit/40ms BDP queue: util {util:.4} goodput {:.3} Mbit/s cwnd {min_cwnd}..{max_cwnd} ssthresh {} drops {} retrans {}",
        goodput / 1e6, ia.ssthresh, p.ab.drops_queue, ia.total_retrans
    );
    assert!(util > 0.95, "utilisation {util}");
    // tcp_rate.c sample: the bottleneck rate in payload bytes/s (10 Mbit/s * 1448/1500)
    let dr = ia.delivery_rate as f64;
    assert!((1.0e6..1.35e6).contains(&dr), "delivery_rate {dr}");
    assert!(p.ab.drops_queue > 0, "CUBIC probes until the queue overflows");
}

fn mathis_run(p_loss: f64, seed: u64) -> (f64, f64) {
    let rate = 100_000_000u64;
    let mut pr = Pair::new(cfg(CongestionAlgo::RENO), cfg(CongestionAlgo::RENO), rate, Duration::from_millis(20), 10_000, seed);
    let (c, s) = pr.connect(5001);
    pr.ab.loss = p_loss;
    pr.sinks.push((false, s, 0, false));
    pr.bulk.push((true, c, u64::MAX));
    pr.run_until(Instant::from_nanos(5_000_000_000));
    let g0 = pr.b.info(s).unwrap().bytes_received;
    let t0 = pr.now;
    pr.run_for(Duration::from_secs(55));
    let secs = (pr.now - t0).as_secs_f64();
    let goodput = (pr.b.info(s).unwrap().bytes_received - g0) as f64 * 8.0 / secs;
    let ia = pr.a.info(c).unwrap();
    let rtt = ia.srtt_us as f64 * 1e-6;
    let model = 1448.0 * 8.0 / 0.040 * (1.5f64).sqrt() / p_loss.sqrt();
    eprintln!(
        "reno p={:.1}%: goodput {:.3} Mbit/s, Mathis {:.3} Mbit/s, ratio {:.3}, srtt {:.1} ms, retrans {}",
        p_loss * 100.0, goodput / 1e6, model / 1e6, goodput / model, rtt * 1e3, ia.total_retrans
    );
    (goodput, model)
}

/// Reno under random loss follows MSS/RTT·sqrt(3/2)/sqrt(p).
#[test]
fn reno_random_loss_mathis() {
    let mut rows = Vec::new();
    for (p_loss, seed) in [(0.005, 31), (0.01, 32), (0.02, 33)] {
        let (g, m) = mathis_run(p_loss, seed);
        rows.push((p_loss, g / m));
    }
    for (p, r) in &rows {
        assert!((0.8..=1.2).contains(r), "p={p}: goodput/Mathis = {r:.3}");
    }
}

/// Two CUBIC flows on a 10 Mbit/s, 40 ms, BDP-buffer bottleneck for 60 s: Jain >= 0.95.
#[test]
fn cubic_two_flows_fair() {
    let rate = 10_000_000u64;
    let mut p = Pair::new(cfg(CongestionAlgo::CUBIC), cfg(CongestionAlgo::CUBIC), rate, Duration::from_millis(20), 33, 41);
    let (c1, s1) = p.connect(5001);
    p.sinks.push((false, s1, 0, false));
    p.bulk.push((true, c1, u64::MAX));
    p.run_for(Duration::from_millis(500));
    let (c2, s2) = p.connect(5002);
    p.sinks.push((false, s2, 0, false));
    p.bulk.push((true, c2, u64::MAX));
    p.run_for(Duration::from_secs(60));
    let x1 = p.b.info(s1).unwrap().bytes_received as f64;
    let x2 = p.b.info(s2).unwrap().bytes_received as f64;
    let jain = (x1 + x2).powi(2) / (2.0 * (x1 * x1 + x2 * x2));
    let total = (x1 + x2) * 8.0 / 60.5 / rate as f64;
    eprintln!("two cubic flows: {:.2} / {:.2} MB, Jain {jain:.4}, util(goodput) {total:.3}", x1 / 1e6, x2 / 1e6);
    let _ = (c1, c2);
    assert!(jain >= 0.95, "Jain {jain}");
    assert!(total > 0.85);
}

/// Rough engine throughput (run with `--release --ignored --nocapture bench_`): 20 CUBIC
/// flows over 1 Gbit/s; counts delivered data segments per wall-clock second, including
/// the harness's own costs.
fn bench_flows(n: u16, rate: u64, secs: u64) {
    let mut p = Pair::new(cfg(CongestionAlgo::CUBIC), cfg(CongestionAlgo::CUBIC), rate, Duration::from_millis(10), 4000, 51);
    let mut socks = Vec::new();
    for (c, s) in p.connect_many(6000, n as usize) {
        p.sinks.push((false, s, 0, false));
        p.bulk.push((true, c, u64::MAX));
        socks.push(s);
    }
    p.run_for(Duration::from_secs(2));
    let b0: u64 = socks.iter().map(|&s| p.b.info(s).unwrap().bytes_received).sum();
    let t = std::time::Instant::now();
    p.run_for(Duration::from_secs(secs));
    let wall = t.elapsed().as_secs_f64();
    let b1: u64 = socks.iter().map(|&s| p.b.info(s).unwrap().bytes_received).sum();
    let segs = (b1 - b0) as f64 / 1448.0;
    eprintln!(
        "{n} flows @{} Mbit/s: {segs:.0} segments in {wall:.2} s wall = {:.0} seg/s ({:.0} ns/seg); goodput {:.1} Mbit/s",
        rate / 1_000_000,
        segs / wall,
        wall * 1e9 / segs,
        (b1 - b0) as f64 * 8.0 / secs as f64 / 1e6
    );
}

/// Rough engine throughput (run with `--release -- --ignored --nocapture bench_`): CUBIC
/// bulk flows through the test harness (whose own costs are included).
#[test]
#[ignore]
fn bench_engine_segments_per_second() {
    bench_flows(20, 1_000_000_000, 5);
    bench_flows(200, 1_000_000_000, 5);
    bench_flows(2000, 1_000_000_000, 5);
}

/// Steady-state bulk transfer between two endpoints wired back to back: once buffers
/// have grown, per-connection memory stays put (the crate forbids `unsafe`, so a counting
/// allocator is not available; the hot path is allocation-free by construction and this
/// guards the buffers that could grow).
#[test]
fn steady_state_memory_is_constant() {
    use crate::{SockEvent, TcpEndpoint};
    use std::net::SocketAddrV4;
    use wirelab_core::{Rng, HEADROOM};
    let a_ip = super::pair::A_ADDR;
    let b_ip = super::pair::B_ADDR;
    let mut a = TcpEndpoint::new(TcpConfig::default(), Rng::stream(1, "a"));
    let mut b = TcpEndpoint::new(TcpConfig::default(), Rng::stream(1, "b"));
    let l = b.listen(SocketAddrV4::new(b_ip, 80), 8).unwrap();
    let mut now = Instant::ZERO;
    let c = a.connect(now, a_ip, SocketAddrV4::new(b_ip, 80)).unwrap();
    let chunk = vec![7u8; 65536];
    let mut buf = Vec::with_capacity(2048);
    let mut s = None;
    let mut step = |now: Instant, a: &mut TcpEndpoint, b: &mut TcpEndpoint, s: &mut Option<crate::SocketId>| {
        for _ in 0..64 {
            buf.clear();
            buf.resize(HEADROOM, 0);
            let Some(t) = a.poll_transmit(now, &mut buf) else { break };
            b.handle_packet(now, t.src, t.dst, 0, &buf[HEADROOM..]);
        }
        for _ in 0..64 {
            buf.clear();
            buf.resize(HEADROOM, 0);
            let Some(t) = b.poll_transmit(now, &mut buf) else { break };
            a.handle_packet(now, t.src, t.dst, 0, &buf[HEADROOM..]);
        }
        while a.poll_event().is_some() {}
        while let Some((_, e)) = b.poll_event() {
            if e == SockEvent::Incoming {
                *s = b.accept(l);
            }
        }
        while a.send(now, c, &chunk).unwrap_or(0) > 0 {}
        if let Some(s) = *s {
            while b.recv_discard(now, s, 1 << 20).is_ok_and(|n| n > 0) {}
        }
        if a.poll_timeout().is_some_and(|t| t <= now) {
            a.handle_timeout(now);
        }
        if b.poll_timeout().is_some_and(|t| t <= now) {
            b.handle_timeout(now);
        }
    };
    for _ in 0..20_000 {
        now += Duration::from_micros(100);
        step(now, &mut a, &mut b, &mut s);
    }
    let got0 = b.info(s.unwrap()).unwrap().bytes_received;
    let mem0 = (a.socket_memory(c).unwrap(), b.socket_memory(s.unwrap()).unwrap());
    let mut max_mem = mem0;
    for _ in 0..20_000 {
        now += Duration::from_micros(100);
        step(now, &mut a, &mut b, &mut s);
        let m = (a.socket_memory(c).unwrap(), b.socket_memory(s.unwrap()).unwrap());
        max_mem = (max_mem.0.max(m.0), max_mem.1.max(m.1));
    }
    let segs = (b.info(s.unwrap()).unwrap().bytes_received - got0) / 1448;
    eprintln!("{segs} segments; memory {mem0:?} -> max {max_mem:?}");
    assert!(segs > 50_000, "{segs}");
    assert_eq!(max_mem, mem0, "buffers kept growing in steady state");
}
