//! End to end with the real TCP engine: a bulk sender and a receiver whose accepted socket
//! carries a [`TcpRateController`], joined by a rate-limited delay line in each direction.
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::{Ipv4Addr, SocketAddrV4};
use wirelab_core::{Duration, Instant, Rng, SockEvent, HEADROOM};
use wirelab_ratectl::{
    render_tcp_rate, tcp_states, ControlMode, RateConfig, RateProbe, TcpRateController, TcpRateRow,
};
use wirelab_tcp::{TcpConfig, TcpEndpoint};

struct Link {
    delay: Duration,
    rate_bps: u64,
    free_at: Instant,
}

impl Link {
    /// Serialises behind earlier packets, then propagates.
    fn arrival(&mut self, now: Instant, len: usize) -> Instant {
        let start = self.free_at.max(now);
        self.free_at = start + Duration::transmit_time(len as u64, self.rate_bps);
        self.free_at + self.delay
    }
}

struct Outcome {
    /// Bytes read by the receiving application per second.
    per_sec: Vec<u64>,
    probe: Option<RateProbe>,
    row: Option<TcpRateRow>,
}

/// Runs `secs` of a bulk transfer A→B over 10 Mbit/s, 20 ms each way. `make` builds the
/// controller for B's accepted socket (None: no controller).
fn run(secs: u64, make: impl Fn() -> Option<TcpRateController>) -> Outcome {
    let a_ip = Ipv4Addr::new(10, 0, 0, 1);
    let b_addr = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 5037); // ttcp's port
    let mut a = TcpEndpoint::new(TcpConfig::profile("linux-2.2").unwrap(), Rng::stream(7, "a/tcp"));
    let mut b = TcpEndpoint::new(TcpConfig::profile("linux-2.2").unwrap(), Rng::stream(7, "b/tcp"));
    let l = b.listen(b_addr, 16).unwrap();
    let mut now = Instant::ZERO;
    let c = a.connect(now, a_ip, b_addr).unwrap();
    let mut links = [
        Link { delay: Duration::from_millis(20), rate_bps: 10_000_000, free_at: Instant::ZERO },
        Link { delay: Duration::from_millis(20), rate_bps: 10_000_000, free_at: Instant::ZERO },
    ];
    // (arrival, sequence, to_b, src, dst, tos, segment)
    type Ev = Reverse<(Instant, u64, bool, Ipv4Addr, Ipv4Addr, u8, Vec<u8>)>;
    let mut wire: BinaryHeap<Ev> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut buf = vec![0u8; HEADROOM];
    let payload = vec![0x55u8; 65536];
    let end = Instant::from_nanos(secs * 1_000_000_000);
    let mut per_sec = vec![0u64; secs as usize];
    let mut server = None;
    let mut probe = None;
    while now < end {
        // Application: keep A's send buffer full, read everything at B.
        while let Ok(n) = a.send(now, c, &payload) {
            if n == 0 {
                break;
            }
        }
        while let Some((_, ev)) = b.poll_event() {
            if ev == SockEvent::Incoming {
                if let Some(s) = b.accept(l) {
                    if let Some(ctl) = make() {
                        probe = Some(ctl.probe());
                        b.set_rcv_window_policy(s, Some(Box::new(ctl))).unwrap();
                    }
                    server = Some(s);
                }
            }
        }
        if let Some(s) = server {
            while let Ok(n) = b.recv_discard(now, s, 1 << 20) {
                if n == 0 {
                    break;
                }
                per_sec[(now.as_nanos() / 1_000_000_000) as usize] += n as u64;
            }
        }
        while a.poll_event().is_some() {}
        for (ep, to_b) in [(&mut a, true), (&mut b, false)] {
            while let Some(t) = ep.poll_transmit(now, &mut buf) {
                let seg = buf[HEADROOM..].to_vec();
                let at = links[to_b as usize].arrival(now, seg.len() + 20);
                wire.push(Reverse((at, seq, to_b, t.src, t.dst, t.tos, seg)));
                seq += 1;
            }
        }
        // Advance to the next event.
        let next = [wire.peek().map(|e| e.0 .0), a.poll_timeout(), b.poll_timeout()].into_iter().flatten().min();
        let Some(next) = next else { break };
        now = next.max(now);
        while wire.peek().is_some_and(|e| e.0 .0 <= now) {
            let Reverse((_, _, to_b, src, dst, tos, seg)) = wire.pop().unwrap();
            if to_b {
                b.handle_packet(now, src, dst, tos, &seg);
            } else {
                a.handle_packet(now, src, dst, tos, &seg);
            }
        }
        a.handle_timeout(now);
        b.handle_timeout(now);
    }
    let row = match (server, &probe) {
        (Some(s), Some(p)) => {
            let (local, remote) = b.addrs(s).unwrap();
            Some(TcpRateRow::new(local, remote, tcp_states::from_tcp(b.state(s).unwrap()), &p.snapshot()))
        }
        _ => None,
    };
    Outcome { per_sec, probe, row }
}

fn mean_bps(v: &[u64]) -> f64 {
    v.iter().sum::<u64>() as f64 * 8.0 / v.len() as f64
}

#[test]
fn receiver_limits_real_tcp_flow_to_target() {
    let free = run(20, || None);
    let free_bps = mean_bps(&free.per_sec[5..]);
    // linux-2.2 has no window scaling: ~32 KB per 40 ms RTT, well above the target.
    assert!(free_bps > 5e6, "uncontrolled flow: {free_bps}");

    let mut cfg = RateConfig::default();
    cfg.set_sysctl("net.ipv4.rate_acceptable_tcp", "2mbit").unwrap();
    cfg.set_sysctl("net.ipv4.rate_chunks", "10").unwrap();
    let ctl = run(20, || Some(TcpRateController::new(&cfg)));
    let got = mean_bps(&ctl.per_sec[8..]);
    assert!((got / 2e6 - 1.0).abs() < 0.15, "controlled flow: {got} bit/s, per second {:?}", ctl.per_sec);
    // The probe is readable while the controller sits inside the engine.
    let s = ctl.probe.unwrap().snapshot();
    assert_eq!(s.mode, ControlMode::Controlled);
    assert!(s.shrinks > 0);
    // the meter's ring (10 × 100 ms) measures what arrived in about the last second: its
    // reading lies within the last two per-second totals (the flow oscillates around the
    // target with a ~2-s period, so a single second is not a stable reference)
    let n = ctl.per_sec.len();
    let (lo, hi) = (ctl.per_sec[n - 2].min(ctl.per_sec[n - 1]) as f64, ctl.per_sec[n - 2].max(ctl.per_sec[n - 1]) as f64);
    let m = s.rate_bytes_per_sec as f64;
    assert!(m >= 0.9 * lo && m <= 1.1 * hi, "meter {:?}, per second {:?}", s, ctl.per_sec);
    let row = ctl.row.unwrap();
    assert_eq!(row.st, tcp_states::ESTABLISHED);
    assert_eq!(row.local.port(), 5037);
    let table = render_tcp_rate(&[row]);
    assert!(table.lines().nth(1).unwrap().contains(":13AD "), "{table}");
}

#[test]
fn important_stream_runs_at_full_speed() {
    let mut cfg = RateConfig::default();
    cfg.set_sysctl("net.ipv4.rate_acceptable_tcp", "2mbit").unwrap();
    cfg.set_sysctl("net.ipv4.cbq_class", "1:2").unwrap();
    let out = run(12, || Some(TcpRateController::new(&cfg).with_class(Some(0x0001_0002))));
    let got = mean_bps(&out.per_sec[4..]);
    let free = mean_bps(&run(12, || None).per_sec[4..]);
    assert!(got > 0.95 * free && got > 5e6, "important stream was throttled: {got} vs {free}");
    assert_eq!(out.probe.unwrap().snapshot().mode, ControlMode::Important);
}
