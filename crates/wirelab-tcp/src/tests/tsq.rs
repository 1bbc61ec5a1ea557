//! TCP Small Queues at the engine (`conn/tsq.rs`): datagrams the driver has not yet
//! reported as transmitted hold new data back; a completion wakes the socket.
use super::pair::{A_ADDR, B_ADDR};
use crate::{SocketId, TcpConfig, TcpEndpoint};
use std::net::SocketAddrV4;
use wirelab_core::{tsq, Duration, Instant, Rng, HEADROOM};

/// A connected pair with `cfg` on A (completions reported by hand when `tracked`) and
/// 1 MB queued on A. Returns (A, B, A's socket, now).
fn setup(cfg: TcpConfig, tracked: bool) -> (TcpEndpoint, TcpEndpoint, SocketId, Instant) {
    let mut a = TcpEndpoint::new(cfg, Rng::stream(1, "a"));
    let mut b = TcpEndpoint::new(TcpConfig::default(), Rng::stream(1, "b"));
    a.set_tx_completions(tracked);
    b.listen(SocketAddrV4::new(B_ADDR, 80), 8).unwrap();
    let mut now = Instant::ZERO;
    let s = a.connect(now, A_ADDR, SocketAddrV4::new(B_ADDR, 80)).unwrap();
    let mut buf = vec![0u8; HEADROOM];
    // handshake with a 10 ms RTT, every datagram completed at once
    for _ in 0..3 {
        now += Duration::from_millis(5);
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            a.tx_complete(now, t.sk, tsq::truesize(buf.len() + t.tail.len(), t.tsq));
            b.handle_packet(now, t.src, t.dst, t.tos, &buf[HEADROOM..]);
        }
        now += Duration::from_millis(5);
        while let Some(t) = b.poll_transmit(now, &mut buf) {
            a.handle_packet(now, t.src, t.dst, t.tos, &buf[HEADROOM..]);
        }
    }
    let data = vec![7u8; 1 << 20];
    assert!(a.send(now, s, &data).unwrap() > 100_000);
    (a, b, s, now)
}

/// Polls A until it stops; returns the (sk, truesize) of what it sent.
fn drain(a: &mut TcpEndpoint, now: Instant) -> Vec<(u64, u32)> {
    let mut buf = vec![0u8; HEADROOM];
    let mut out = Vec::new();
    while let Some(t) = a.poll_transmit(now, &mut buf) {
        out.push((t.sk, tsq::truesize(buf.len() + t.tail.len(), t.tsq)));
    }
    out
}

fn cfg(profile: &str, lob: u32) -> TcpConfig {
    let mut c = TcpConfig::profile(profile).unwrap();
    c.tso = false; // one segment per skb: the counts below are skbs
    c.init_cwnd = 40;
    c.tcp_limit_output_bytes = lob;
    c
}

#[test]
fn uncompleted_datagrams_hold_new_data_back_until_a_completion() {
    // 6.18: limit min(max(2 x 2 780, rate >> 10), 1 000) = 1 000 B; the first two skbs
    // go anyway (retransmit queue empty, then a single skb), the third waits.
    let (mut a, _b, s, now) = setup(cfg("linux-6", 1000), true);
    let sent = drain(&mut a, now);
    assert_eq!(sent.len(), 2, "6.18 sends while the rtx queue holds at most one skb");
    let one = sent[0].1;
    assert_eq!(one, 20 + 32 + 1448 + tsq::SKB_OVERHEAD, "truesize of a full segment with timestamps");
    assert_eq!(a.tsq_state(s).unwrap(), (2 * one, 1));
    assert_eq!(sent[0].0, wirelab_core::socket_key(6, A_ADDR, B_ADDR, (sent_port(&a, s) as u32) << 16 | 80));
    // nothing more until a completion; each completion wakes the throttled socket, which
    // sends when its bytes in the host are back under the limit
    assert!(drain(&mut a, now).is_empty());
    assert!(a.tx_complete(now, sent[0].0, one), "the throttled socket is woken");
    assert!(!a.tx_complete(now, 999, 0), "unknown sockets are ignored");
    assert!(drain(&mut a, now).is_empty(), "2 780 B still queued > 1 000 B, and two skbs unacknowledged");
    assert!(a.tx_complete(now, sent[1].0, one));
    assert!(!a.tx_complete(now, sent[1].0, 0), "woken once per throttle");
    assert_eq!(a.tsq_state(s).unwrap(), (0, 2));
    let more = drain(&mut a, now);
    assert_eq!(more.len(), 1, "one more skb, then throttled again");
    assert_eq!(a.tsq_state(s).unwrap(), (one, 3));
}

fn sent_port(a: &TcpEndpoint, s: SocketId) -> u16 {
    a.addrs(s).unwrap().0.port()
}

#[test]
fn era_models_differ_as_linux_did() {
    // 4.x: no exemption for a short retransmit queue: one skb, then wmem > limit
    let (mut a, ..) = setup(cfg("linux-4.6", 1000), true);
    assert_eq!(drain(&mut a, Instant::ZERO + Duration::from_millis(30)).len(), 1);
    // 4.x with room for two skbs and a half (limit 7 000 B): three go
    let (mut a, ..) = setup(cfg("linux-4.6", 7000), true);
    assert_eq!(drain(&mut a, Instant::ZERO + Duration::from_millis(30)).len(), 3);
    // 3.x: the sysctl is a floor (max with the pacing rate >> 10): 128 KiB, so the
    // initial window (40 segments) goes out whole
    let mut c = cfg("linux-3.14", 131_072);
    c.init_cwnd = 40;
    let (mut a, ..) = setup(c, true);
    assert_eq!(drain(&mut a, Instant::ZERO + Duration::from_millis(30)).len(), 40);
    // no TSQ before 3.6: the window
    let (mut a, ..) = setup(cfg("linux-2.6.37", 0), true);
    assert_eq!(drain(&mut a, Instant::ZERO + Duration::from_millis(30)).len(), 40);
}

#[test]
fn without_completion_reports_nothing_is_charged() {
    // a driver that does not report completions (the default, e.g. packetdrill over a
    // TUN device, which orphans skbs at once) sees no TSQ: the whole initial window goes
    let (mut a, _b, s, now) = setup(cfg("linux-6", 1000), false);
    let sent = drain(&mut a, now);
    assert_eq!(sent.len(), 40);
    assert!(sent.iter().all(|&(_, ts)| ts == 0));
    assert_eq!(a.tsq_state(s).unwrap(), (0, 0));
}
