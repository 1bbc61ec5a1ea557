//! Congestion-control modules on a simulated bottleneck: BBR's state machine and pacing,
//! DCTCP's alpha-proportional reductions holding the queue near K, Vegas' small queue.
use super::pair::{parse, Pair};
use crate::cc::bbr::{BBR_CWND_GAIN, BBR_DRAIN_GAIN, BBR_HIGH_GAIN, BBR_UNIT};
use crate::cc::CcInfo;
use crate::{CaState, CongestionAlgo, SocketId, TcpConfig};
use wirelab_core::{Duration, Instant};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn cfg(cc: &str) -> TcpConfig {
    let mut c = TcpConfig::default();
    c.tcp_congestion_control = CongestionAlgo::from_name(cc).unwrap();
    c
}

/// A bulk flow A → B over `rate` bit/s, `one_way` delay, `queue` packets.
fn bulk(cc_a: &str, cc_b: &str, rate: u64, one_way: Duration, queue: usize, seed: u64) -> (Pair, SocketId) {
    let mut p = Pair::new(cfg(cc_a), cfg(cc_b), rate, one_way, queue, seed);
    let (c, s) = p.connect(80);
    p.bulk.push((true, c, u64::MAX));
    p.sinks.push((false, s, 0, false));
    (p, c)
}

#[test]
fn bbr_startup_drain_probe_bw_probe_rtt_on_a_bottleneck() {
    // 10 Mbit/s, 40 ms RTT (BDP ≈ 35 packets), a 100-packet buffer
    let (mut p, c) = bulk("bbr", "cubic", 10_000_000, ms(20), 100, 11);
    p.capture = Some(Vec::new());
    let mut gains = vec![];
    let mut probe_rtt_at = None;
    let mut min_cwnd_in_probe_rtt = u32::MAX;
    let mut q_probe_bw = 0;
    let mut reset_q = true;
    while p.now < Instant::ZERO + Duration::from_secs(14) {
        p.run_for(ms(5));
        let i = p.a.info(c).unwrap();
        let CcInfo::Bbr { pacing_gain, cwnd_gain, .. } = i.cc_info else { panic!("{:?}", i.cc_info) };
        if gains.last() != Some(&(pacing_gain, cwnd_gain)) {
            gains.push((pacing_gain, cwnd_gain));
        }
        if (pacing_gain, cwnd_gain) == (BBR_UNIT, BBR_UNIT) {
            probe_rtt_at.get_or_insert(p.now);
            min_cwnd_in_probe_rtt = min_cwnd_in_probe_rtt.min(i.cwnd);
        }
        if p.now > Instant::ZERO + Duration::from_secs(3) {
            if std::mem::take(&mut reset_q) {
                p.ab.max_queue = 0; // the steady state's queue from here on
            } else if cwnd_gain == BBR_CWND_GAIN {
                q_probe_bw = q_probe_bw.max(p.ab.max_queue);
            }
            p.ab.max_queue = 0;
        }
    }
    // STARTUP (2.89/2.89) -> DRAIN (0.35/2.89) -> PROBE_BW (1.25, 0.75, 1 / 2)
    assert_eq!(gains[0], (BBR_HIGH_GAIN, BBR_HIGH_GAIN), "{gains:?}");
    assert_eq!(gains[1], (BBR_DRAIN_GAIN, BBR_HIGH_GAIN), "{gains:?}");
    assert_eq!(gains[2].1, BBR_CWND_GAIN, "{gains:?}");
    let probe_bw: std::collections::BTreeSet<u32> = gains.iter().filter(|g| g.1 == BBR_CWND_GAIN).map(|g| g.0).collect();
    assert_eq!(probe_bw.into_iter().collect::<Vec<_>>(), vec![192, 256, 320]);
    // PROBE_RTT about 10 s after the last min_rtt sample, cwnd 4
    let t = probe_rtt_at.expect("PROBE_RTT").as_nanos() as f64 / 1e9;
    assert!((9.5..=11.5).contains(&t), "PROBE_RTT at {t} s");
    assert_eq!(min_cwnd_in_probe_rtt, 4);
    let i = p.a.info(c).unwrap();
    let CcInfo::Bbr { bw, min_rtt, .. } = i.cc_info else { panic!() };
    // bandwidth estimate: the bottleneck's payload rate, 10 Mbit/s · 1448/1500 / 8
    let want = 10e6 / 8.0 * 1448.0 / 1500.0;
    assert!((bw as f64 - want).abs() / want < 0.05, "bw {bw} vs {want}");
    // 40 ms plus the serialisation (1.2 ms) of a TSO packet's two segments: the delayed
    // ACK that gives the sample is for the second one
    assert!((40_000..43_000).contains(&min_rtt), "min_rtt {min_rtt}");
    assert_eq!(i.pacing, "internal");
    assert!(i.retrans == 0 && i.total_retrans < 50, "{} retransmissions", i.total_retrans);
    // a small standing queue in PROBE_BW (gain cycling puts ~0.25 BDP on top)
    assert!(q_probe_bw <= 30, "queue {q_probe_bw}");
    // goodput close to the link over the whole run (PROBE_RTT costs ~2 %)
    let got = p.sinks[0].2 as f64 * 8.0 / 14.0;
    assert!(got > 0.9 * want * 8.0, "{got} bit/s");
    // paced per TSO packet (tcp_update_skb_after_send() charges skb->len): in PROBE_BW
    // the data leave in GSO bursts of bbr_tso_segs_goal() = 2 segments at one instant,
    // never more, the bursts about two MSS times apart
    let cap = p.capture.as_ref().unwrap();
    let times: Vec<Instant> = cap
        .iter()
        .filter(|x| x.1 && !parse(&x.2).payload.is_empty() && x.0 > Instant::ZERO + Duration::from_secs(4) && x.0 < Instant::ZERO + Duration::from_secs(6))
        .map(|x| x.0)
        .collect();
    let mut bursts = vec![1u32];
    for w in times.windows(2) {
        if w[0] == w[1] {
            *bursts.last_mut().unwrap() += 1;
        } else {
            bursts.push(1);
        }
    }
    let pairs = bursts.iter().filter(|&&b| b == 2).count();
    assert!(bursts.iter().all(|&b| b <= 2), "{bursts:?}");
    assert!(pairs * 10 > bursts.len() * 9, "{pairs} pairs in {} bursts", bursts.len());
    let span = (*times.last().unwrap() - times[0]).as_nanos() as f64 / 1e9;
    let burst_gap = span / bursts.len() as f64;
    assert!((0.0018..0.0030).contains(&burst_gap), "{burst_gap} s between bursts");
}

#[test]
fn dctcp_reduces_by_alpha_half_and_holds_the_queue_near_k() {
    // 10 Mbit/s, 10 ms RTT (BDP ≈ 8.6 packets), mark above K = 20 packets
    let (mut p, c) = bulk("dctcp", "dctcp", 10_000_000, ms(5), 500, 12);
    p.ab.ce_threshold = Some(20);
    let mut reductions = 0;
    let mut prev = p.a.info(c).unwrap();
    assert!(prev.ecn, "DCTCP negotiates ECN whatever tcp_ecn says (TCP_CONG_NEEDS_ECN)");
    let mut alphas = vec![];
    let mut steady = false;
    while p.now < Instant::ZERO + Duration::from_secs(10) {
        if !p.step() {
            break;
        }
        if !steady && p.now > Instant::ZERO + Duration::from_secs(1) {
            steady = true;
            p.ab.max_queue = 0; // slow start's overshoot is over
        }
        let i = p.a.info(c).unwrap();
        let CcInfo::Dctcp { enabled, alpha, .. } = i.cc_info else { panic!() };
        assert_eq!(enabled, 1);
        if i.ssthresh != prev.ssthresh {
            // tcp_enter_cwr -> dctcp_ssthresh: cwnd · (1 − alpha/2), alpha as updated by
            // this ACK's in_ack_event; cwnd is the one before the ACK, or, when the ACK
            // also ended the previous CWR (tcp_end_cwnd_reduction), the old ssthresh
            assert_eq!(i.ca_state, CaState::Cwr);
            let f = |c: u32| (c - ((c as u64 * alpha as u64) >> 11) as u32).max(2);
            assert!(i.ssthresh == f(prev.cwnd) || i.ssthresh == f(prev.ssthresh), "{} from cwnd {} / ssthresh {} alpha {alpha}", i.ssthresh, prev.cwnd, prev.ssthresh);
            reductions += 1;
            alphas.push(alpha);
        }
        prev = i;
    }
    assert!(reductions > 20, "{reductions} reductions");
    let i = p.a.info(c).unwrap();
    assert_eq!(i.total_retrans, 0, "no loss: marks only");
    // alpha settles well below 1 (it started at 1024): a fraction of each window is marked
    let late = alphas[alphas.len() / 2..].iter().copied().max().unwrap();
    assert!(late < 600, "alpha {late}");
    // the queue stays near K, the link stays busy
    assert!(p.ab.max_queue <= 20 + 6, "max queue {}", p.ab.max_queue);
    let goodput = p.sinks[0].2 as f64 * 8.0 / 10.0;
    assert!(goodput > 0.9 * 10e6 * 1448.0 / 1500.0, "{goodput}");
    // the receiver echoed CE per packet: ECE-marked deliveries ≈ marked packets
    assert!(i.delivered_ce > 0 && i.delivered_ce as f64 <= p.ab.ce_marked as f64 * 1.2 + 10.0, "{} vs {}", i.delivered_ce, p.ab.ce_marked);
}

#[test]
fn dctcp_without_ecn_peer_is_reno() {
    // the peer has ECN off: DCTCP's SYN asks, the SYN-ACK declines, dctcp-reno remains
    let mut b = TcpConfig::default();
    b.tcp_ecn = 0;
    let mut p = Pair::new(cfg("dctcp"), b, 10_000_000, ms(5), 100, 13);
    let (c, _) = p.connect(80);
    let i = p.a.info(c).unwrap();
    assert!(!i.ecn);
    assert_eq!(i.congestion, "dctcp-reno");
    assert_eq!(i.cc_info, CcInfo::Dctcp { enabled: 0, ce_state: 0, alpha: 0, ab_ecn: 0, ab_tot: 0 });
}

#[test]
fn vegas_keeps_a_few_packets_queued() {
    // 10 Mbit/s, 40 ms RTT, a deep buffer: Reno/CUBIC would fill it, Vegas keeps 2..4
    let (mut p, c) = bulk("vegas", "cubic", 10_000_000, ms(20), 1000, 14);
    p.run_for(Duration::from_secs(3));
    p.ab.max_queue = 0;
    p.run_for(Duration::from_secs(7));
    let i = p.a.info(c).unwrap();
    let CcInfo::Vegas { enabled, rtt, .. } = i.cc_info else { panic!() };
    assert_eq!(enabled, 1);
    assert!((40_000..41_500).contains(&rtt), "baseRTT {rtt}");
    assert!(p.ab.max_queue <= 8, "queue {}", p.ab.max_queue);
    assert_eq!(i.total_retrans, 0);
    let goodput = p.sinks[0].2 as f64 * 8.0 / 10.0;
    assert!(goodput > 0.85 * 10e6 * 1448.0 / 1500.0, "{goodput}");
}
