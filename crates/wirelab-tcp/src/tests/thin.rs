//! Thin-stream mechanisms (LT, MFR, ER, TLP, RDB) and the hooks other crates use
//! (receive-window policy, `TCP_MAXSEG`).
use super::pair::{parse, Pair, A_ADDR, B_ADDR};
use crate::wire::flags;
use crate::{RcvWindowPolicy, SockError, SockOpt, SocketId};
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
    // too late once the SYN is out
    assert_eq!(p.a.set_option(c, SockOpt::MaxSeg(500)), Err(SockError::InvalidState));
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
