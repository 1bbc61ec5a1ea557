//! ECN (RFC 3168 as Linux does it) between two endpoints: negotiation by
//! `net.ipv4.tcp_ecn`, ECT(0) on new data only, CE → ECE until CWR, one CWR reduction,
//! `tcp_ecn_fallback`.
use super::pair::{parse, Pair, A_ADDR, B_ADDR};
use crate::wire::flags;
use crate::{CaState, TcpConfig};
use std::net::SocketAddrV4;
use wirelab_core::Duration;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn cfg(ecn: u8) -> TcpConfig {
    let mut c = TcpConfig::default();
    c.tcp_ecn = ecn;
    c
}

/// A pair where A has `ecn_a` and B `ecn_b`, 10 Mbit/s, 20 ms one way; A sends `bytes`.
fn transfer(ecn_a: u8, ecn_b: u8, bytes: u64, seed: u64) -> Pair {
    let mut p = Pair::new(cfg(ecn_a), cfg(ecn_b), 10_000_000, ms(20), 100, seed);
    p.capture = Some(Vec::new());
    let (c, s) = p.connect(80);
    p.bulk.push((true, c, bytes));
    p.sinks.push((false, s, 0, false));
    p
}

/// (from A?, flags, has data, ECN field) of every captured segment.
fn segs(p: &Pair) -> Vec<(bool, u8, bool, u8)> {
    let cap = p.capture.as_ref().unwrap();
    cap.iter().zip(&p.capture_tos).map(|(c, &tos)| {
        let r = parse(&c.2);
        (c.1, r.flags, !r.payload.is_empty(), tos & 3)
    }).collect()
}

#[test]
fn negotiation_follows_tcp_ecn() {
    // A asks (1), B accepts (2, Linux's default): SYN with ECE|CWR, SYN-ACK with ECE only
    let mut p = transfer(1, 2, 100_000, 1);
    p.run_for(ms(1000));
    let s = segs(&p);
    let (syn, synack) = (s[0], s[1]);
    assert_eq!(syn.1 & (flags::SYN | flags::ECE | flags::CWR), flags::SYN | flags::ECE | flags::CWR);
    assert_eq!(synack.1 & (flags::ECE | flags::CWR), flags::ECE);
    assert_eq!((syn.3, synack.3), (0, 0), "handshake Not-ECT without a module that needs ECN");
    let c = p.a.sockets().last().unwrap();
    assert!(p.a.info(c).unwrap().ecn);
    // new data is ECT(0), pure ACKs are Not-ECT
    let data: Vec<_> = s.iter().filter(|x| x.0 && x.2).collect();
    assert!(data.len() > 60 && data.iter().all(|x| x.3 == 2), "ECT(0) on data");
    let acks: Vec<_> = s.iter().filter(|x| !x.0 && !x.2).collect();
    assert!(acks.len() > 30 && acks.iter().all(|x| x.3 == 0), "pure ACKs Not-ECT");
    // no congestion: no ECE, no CWR
    assert!(s.iter().skip(2).all(|x| x.1 & (flags::ECE | flags::CWR) == 0));

    // only accepting on both sides (2/2): nobody asks
    let mut p = transfer(2, 2, 20_000, 2);
    p.run_for(ms(500));
    let s = segs(&p);
    assert_eq!(s[0].1 & (flags::ECE | flags::CWR), 0);
    assert!(s.iter().all(|x| x.3 == 0));
    // A asks, B has ECN off (0): SYN-ACK without ECE, A falls back to Not-ECT
    let mut p = transfer(1, 0, 20_000, 3);
    p.run_for(ms(500));
    let s = segs(&p);
    assert_eq!(s[1].1 & flags::ECE, 0);
    assert!(s.iter().filter(|x| x.0 && x.2).all(|x| x.3 == 0));
    let c = p.a.sockets().last().unwrap();
    assert!(!p.a.info(c).unwrap().ecn);
}

#[test]
fn ce_mark_echoed_until_cwr_one_reduction() {
    let mut p = transfer(1, 2, 2_000_000, 4);
    // the 40th data packet (well into slow start) is CE-marked on the way; the queue is
    // deep enough for no loss at all
    p.ab.ce_data_idx = vec![40];
    p.ab.limit_pkts = 2000;
    let c = p.a.sockets().last().unwrap();
    let mut cwr_at = None;
    let mut cwnd_before = 0;
    while p.now < wirelab_core::Instant::ZERO + Duration::from_secs(3) {
        let i = p.a.info(c).unwrap();
        if i.ca_state == CaState::Cwr && cwr_at.is_none() {
            cwr_at = Some((p.now, i.ssthresh));
        }
        if cwr_at.is_none() {
            cwnd_before = i.cwnd;
        }
        if !p.step() {
            break;
        }
    }
    assert_eq!(p.ab.ce_marked, 1);
    let (_, ssthresh) = cwr_at.expect("ECE made the sender enter CWR");
    // CUBIC's reduction (beta 717/1024) of the window at the ECE ACK
    assert!(ssthresh <= cwnd_before * 717 / 1024 + 1 && ssthresh >= 2, "{ssthresh} from {cwnd_before}");
    let i = p.a.info(c).unwrap();
    assert_eq!(i.total_retrans, 0, "ECN reduces without retransmitting");
    assert!(i.delivered_ce > 0);
    // the handshake's ECE/CWR are negotiation, not congestion signals
    let s: Vec<_> = segs(&p).into_iter().map(|x| if x.1 & flags::SYN != 0 { (x.0, x.1 & flags::SYN, x.2, x.3) } else { x }).collect();
    // B echoes ECE from the first ACK after the CE packet until A's CWR arrives
    let first_ece = s.iter().position(|x| !x.0 && x.1 & flags::ECE != 0).expect("ECE echoed");
    let cwr = s.iter().position(|x| x.0 && x.1 & flags::CWR != 0).expect("CWR sent");
    assert!(cwr > first_ece);
    assert_eq!(s.iter().filter(|x| x.0 && x.1 & flags::CWR != 0).count(), 1, "CWR once");
    // CWR rides on new data
    assert!(s[cwr].2 && s[cwr].3 == 2);
    // ECE stops once the CWR segment has been received: the last ECE ACK precedes the
    // first ACK that covers the CWR segment's data (one RTT later at most)
    let last_ece = s.iter().rposition(|x| !x.0 && x.1 & flags::ECE != 0).unwrap();
    let echoes = s[first_ece..=last_ece].iter().filter(|x| !x.0).all(|x| x.1 & flags::ECE != 0);
    assert!(echoes, "every ACK between the first and the last ECE echoes it");
    let cap = p.capture.as_ref().unwrap();
    assert!(cap[last_ece].0 <= cap[cwr].0 + ms(41), "echo ends about one RTT after CWR is sent");
    assert!(p.sinks[0].2 == 2_000_000, "all data delivered");
}

#[test]
fn retransmissions_are_not_ect_and_syn_fallback() {
    // a lost data packet is retransmitted Not-ECT (tcp_ecn_send: only new data is ECT)
    let mut p = transfer(1, 2, 300_000, 5);
    p.ab.drop_data_idx = vec![30];
    p.run_for(Duration::from_secs(3));
    let cap = p.capture.as_ref().unwrap();
    let s = segs(&p);
    let mut seen = std::collections::HashMap::new();
    let mut rexmits = 0;
    for (k, c) in cap.iter().enumerate() {
        let r = parse(&c.2);
        if !c.1 || r.payload.is_empty() {
            continue;
        }
        if seen.insert(r.seq, k).is_some() {
            rexmits += 1;
            assert_eq!(s[k].3, 0, "retransmission must be Not-ECT");
        } else {
            assert_eq!(s[k].3, 2);
        }
    }
    assert!(rexmits >= 1);
    assert_eq!(p.sinks[0].2, 300_000);

    // the SYN is lost: the retransmitted SYN no longer asks for ECN (tcp_ecn_fallback)
    let mut p = Pair::new(cfg(1), cfg(2), 10_000_000, ms(20), 100, 6);
    p.capture = Some(Vec::new());
    p.ab.drop_data_idx = vec![0];
    let l = p.b.listen(SocketAddrV4::new(B_ADDR, 80), 8).unwrap();
    let c = p.a.connect(p.now, A_ADDR, SocketAddrV4::new(B_ADDR, 80)).unwrap();
    p.run_for(Duration::from_secs(2));
    assert!(p.b.accept(l).is_some());
    let s = segs(&p);
    let syns: Vec<_> = s.iter().filter(|x| x.0 && x.1 & flags::SYN != 0).collect();
    assert_eq!(syns.len(), 2);
    assert_ne!(syns[0].1 & flags::ECE, 0);
    assert_eq!(syns[1].1 & (flags::ECE | flags::CWR), 0);
    assert!(!p.a.info(c).unwrap().ecn);
    // with the fallback off the retransmitted SYN still asks
    let mut a = cfg(1);
    a.tcp_ecn_fallback = false;
    let mut p = Pair::new(a, cfg(2), 10_000_000, ms(20), 100, 6);
    p.ab.drop_data_idx = vec![0];
    let (c, _) = p.connect(80);
    assert!(p.a.info(c).unwrap().ecn);
}

/// What a listener with `tcp_ecn` = `ecn` answers to a SYN with `syn_flags` sent with
/// ECN field `tos` (scripts ecn-server-accepts.pkt / ecn-server-declines.pkt).
fn synack_flags(ecn: u8, syn_flags: u8, tos: u8) -> u8 {
    use crate::wire::{SeqNumber, TcpPacket, TcpRepr};
    use crate::TcpEndpoint;
    use wirelab_core::{Instant, Rng, HEADROOM};
    let mut ep = TcpEndpoint::new(cfg(ecn), Rng::stream(7, "b"));
    ep.listen(SocketAddrV4::new(B_ADDR, 80), 8).unwrap();
    let mut r = TcpRepr::new(40000, 80);
    r.seq = SeqNumber(1000);
    r.flags = flags::SYN | syn_flags;
    r.window = 65535;
    r.mss = Some(1000);
    r.sack_permitted = true;
    let mut seg = vec![0u8; r.buffer_len()];
    r.emit(&mut TcpPacket::new_unchecked(&mut seg[..]), A_ADDR, B_ADDR);
    ep.handle_packet(Instant::ZERO, A_ADDR, B_ADDR, tos, &seg);
    let mut buf = vec![0u8; HEADROOM];
    let t = ep.poll_transmit(Instant::ZERO, &mut buf).unwrap();
    assert_eq!(t.tos & 3, 0, "SYN-ACK Not-ECT without a module that needs ECN");
    parse(&buf[HEADROOM..]).flags
}

#[test]
fn listener_accepts_ecn_as_tcp_ecn_create_request() {
    let ecn_req = flags::ECE | flags::CWR;
    assert_eq!(synack_flags(2, ecn_req, 0) & (flags::ECE | flags::CWR), flags::ECE);
    assert_eq!(synack_flags(1, ecn_req, 0) & (flags::ECE | flags::CWR), flags::ECE);
    // tcp_ecn=0: never
    assert_eq!(synack_flags(0, ecn_req, 0) & flags::ECE, 0);
    // an ECT-marked SYN is not accepted (a middlebox would be rewriting the field)
    assert_eq!(synack_flags(2, ecn_req, 2) & flags::ECE, 0);
    // ECE alone is not a request
    assert_eq!(synack_flags(2, flags::ECE, 0) & flags::ECE, 0);
}
