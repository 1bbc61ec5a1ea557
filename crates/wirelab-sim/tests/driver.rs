//! The discrete-event driver through its public API: same-time events run in schedule
//! order, stacks are created on first use, routers forward and hosts do not, routing
//! failures and TTL expiry are counted where Linux counts them, runs are deterministic.
use std::cell::RefCell;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::rc::Rc;
use wirelab_apps::{App, AppConfig, TcpServerConfig, UdpCbrConfig, UdpSinkConfig};
use wirelab_core::{Duration, Instant};
use wirelab_link::NetemSpec;
use wirelab_qdisc::fifo::{Fifo, FifoKind};
use wirelab_sim::record::{CaptureDir, CaptureSink};
use wirelab_sim::sim::NodeCounters;
use wirelab_sim::{IfAddr, NodeId, RunResults, Sim};

type Packets = Rc<RefCell<Vec<(Instant, CaptureDir, Vec<u8>)>>>;

/// A capture whose packets the test can still read after handing it to the simulator.
struct Tap(Packets);
impl CaptureSink for Tap {
    fn record(&mut self, t: Instant, _iface: u32, dir: CaptureDir, ip: &[u8]) {
        self.0.borrow_mut().push((t, dir, ip.to_vec()));
    }
}

fn ip(s: &str) -> IfAddr {
    let (a, p) = s.split_once('/').unwrap();
    IfAddr { addr: a.parse().unwrap(), prefix: p.parse().unwrap() }
}

fn link(sim: &mut Sim, name: &str, a: (NodeId, &str), b: (NodeId, &str)) {
    let q = || Box::new(Fifo::new(FifoKind::Pfifo, 1000)) as Box<dyn wirelab_qdisc::Qdisc>;
    let spec = NetemSpec::parse("rate 100mbit delay 1ms").unwrap();
    sim.add_link(name, (a.0, "eth0", ip(a.1), q(), spec.clone()), (b.0, "eth0", ip(b.1), q(), spec), 14).unwrap();
}

/// h1 — r — h2 on 10.0.1.0/24 and 10.0.2.0/24; `r_forwards` says whether r routes.
fn line(r_forwards: bool) -> (Sim, NodeId, NodeId, NodeId) {
    let mut sim = Sim::new(7);
    let h1 = sim.add_node("h1", false);
    let r = sim.add_node("r", r_forwards);
    let h2 = sim.add_node("h2", false);
    link(&mut sim, "a", (h1, "10.0.1.1/24"), (r, "10.0.1.2/24"));
    // r's second interface must not reuse eth0
    let q = || Box::new(Fifo::new(FifoKind::Pfifo, 1000)) as Box<dyn wirelab_qdisc::Qdisc>;
    let spec = NetemSpec::parse("rate 100mbit delay 1ms").unwrap();
    sim.add_link("b", (r, "eth1", ip("10.0.2.1/24"), q(), spec.clone()), (h2, "eth0", ip("10.0.2.2/24"), q(), spec), 14).unwrap();
    (sim, h1, r, h2)
}

fn cbr(dst: &str, sport: u16, start_ms: u64, count: u64) -> AppConfig {
    AppConfig::UdpCbr(UdpCbrConfig {
        dst: dst.parse::<SocketAddrV4>().unwrap(),
        src_port: sport,
        payload: 100,
        interval: Duration::from_millis(10),
        start: Instant::ZERO + Duration::from_millis(start_ms),
        stop: Instant::ZERO + Duration::from_secs(10),
        count: Some(count),
    })
}

fn add(sim: &mut Sim, name: &str, node: NodeId, cfg: AppConfig) {
    let seed = sim.seed();
    sim.add_app(App::new(name.to_string(), node, cfg, seed)).unwrap();
}

fn run(sim: &mut Sim, ms: u64) -> RunResults {
    sim.run(Instant::ZERO + Duration::from_millis(ms), Duration::ZERO, &mut |_| {});
    sim.finish().unwrap()
}

fn counters(r: &RunResults, node: &str) -> NodeCounters {
    r.nodes.iter().find(|n| n.node == node).unwrap().counters
}

fn rx(r: &RunResults, app: &str) -> u64 {
    r.flows.iter().find(|f| f.name == app).unwrap().rx_packets
}

#[test]
fn a_router_forwards_and_the_sink_gets_every_datagram() {
    let (mut sim, h1, _r, h2) = line(true);
    sim.auto_routes();
    add(&mut sim, "src", h1, cbr("10.0.2.2:9", 1000, 0, 5));
    add(&mut sim, "sink", h2, AppConfig::UdpSink(UdpSinkConfig { port: 9 }));
    let res = run(&mut sim, 200);
    assert_eq!(rx(&res, "sink"), 5);
    assert_eq!(counters(&res, "r").forwarded, 5);
    assert_eq!(counters(&res, "h2").delivered, 5);
    assert_eq!(counters(&res, "h1").no_route, 0);
}

#[test]
fn a_host_does_not_forward() {
    let (mut sim, h1, _r, h2) = line(false);
    sim.auto_routes();
    add(&mut sim, "src", h1, cbr("10.0.2.2:9", 1000, 0, 5));
    add(&mut sim, "sink", h2, AppConfig::UdpSink(UdpSinkConfig { port: 9 }));
    let res = run(&mut sim, 200);
    assert_eq!(rx(&res, "sink"), 0);
    assert_eq!(counters(&res, "r").not_local, 5);
    assert_eq!(counters(&res, "r").forwarded, 0);
}

#[test]
fn without_a_route_the_sender_counts_no_route() {
    let (mut sim, h1, _r, h2) = line(true);
    // no auto_routes: h1 knows only its connected subnet
    add(&mut sim, "src", h1, cbr("10.0.2.2:9", 1000, 0, 4));
    add(&mut sim, "near", h1, cbr("10.0.1.2:9", 1001, 0, 3));
    add(&mut sim, "sink", h2, AppConfig::UdpSink(UdpSinkConfig { port: 9 }));
    let res = run(&mut sim, 200);
    assert_eq!(counters(&res, "h1").no_route, 4);
    // the datagrams to r's own address reach r, which has no UDP socket on port 9
    assert_eq!(counters(&res, "r").delivered, 3);
    assert_eq!(counters(&res, "r").no_socket, 3);
    assert_eq!(rx(&res, "sink"), 0);
}

#[test]
fn ttl_expires_in_a_routing_loop() {
    let mut sim = Sim::new(1);
    let h1 = sim.add_node("h1", false);
    let r1 = sim.add_node("r1", true);
    let r2 = sim.add_node("r2", true);
    link(&mut sim, "a", (h1, "10.0.1.1/24"), (r1, "10.0.1.2/24"));
    let q = || Box::new(Fifo::new(FifoKind::Pfifo, 1000)) as Box<dyn wirelab_qdisc::Qdisc>;
    let spec = NetemSpec::parse("rate 100mbit delay 1ms").unwrap();
    sim.add_link("b", (r1, "eth1", ip("10.0.3.1/24"), q(), spec.clone()), (r2, "eth0", ip("10.0.3.2/24"), q(), spec), 14).unwrap();
    // 10.99/16 points each router at the other: a loop
    sim.add_route(r1, Ipv4Addr::new(10, 99, 0, 0), 16, 1, Some(Ipv4Addr::new(10, 0, 3, 2)));
    sim.add_route(r2, Ipv4Addr::new(10, 99, 0, 0), 16, 0, Some(Ipv4Addr::new(10, 0, 3, 1)));
    sim.auto_routes();
    add(&mut sim, "src", h1, cbr("10.99.0.1:9", 1000, 0, 3));
    let res = run(&mut sim, 1000);
    // sent with TTL 64: forwarded at TTL 64..=2 (63 hops), dropped on arrival with TTL 1
    let (c1, c2) = (counters(&res, "r1"), counters(&res, "r2"));
    assert_eq!(c1.forwarded + c2.forwarded, 3 * 63);
    assert_eq!(c1.ttl_expired + c2.ttl_expired, 3);
}

/// The source ports of the datagrams h1 sent, in wire order.
fn sent_order(first: u16, second: u16) -> Vec<u16> {
    let (mut sim, h1, _r, h2) = line(true);
    sim.auto_routes();
    let tap: Packets = Default::default();
    sim.capture(h1, 0, Box::new(Tap(tap.clone())));
    add(&mut sim, "first", h1, cbr("10.0.2.2:9", first, 5, 3));
    add(&mut sim, "second", h1, cbr("10.0.2.2:9", second, 5, 3));
    add(&mut sim, "sink", h2, AppConfig::UdpSink(UdpSinkConfig { port: 9 }));
    let res = run(&mut sim, 200);
    assert_eq!(rx(&res, "sink"), 6);
    let order = tap.borrow().iter().filter(|p| p.1 == CaptureDir::Out).map(|p| u16::from_be_bytes([p.2[20], p.2[21]])).collect();
    order
}

#[test]
fn simultaneous_events_run_in_the_order_they_were_scheduled() {
    // both sources fire at 5, 15, 25 ms; the one added (and so scheduled) first goes first
    assert_eq!(sent_order(1000, 2000), vec![1000, 2000, 1000, 2000, 1000, 2000]);
    assert_eq!(sent_order(2000, 1000), vec![2000, 1000, 2000, 1000, 2000, 1000]);
}

#[test]
fn stacks_are_created_on_first_use() {
    let (mut sim, h1, r, h2) = line(true);
    sim.auto_routes();
    add(&mut sim, "src", h1, cbr("10.0.2.2:9", 1000, 0, 2));
    add(&mut sim, "srv", h2, AppConfig::TcpServer(TcpServerConfig { port: 80, echo: false, read_rate: None, backlog: 128, opts: Vec::new(), sha256: false }));
    sim.run(Instant::ZERO + Duration::from_millis(50), Duration::ZERO, &mut |_| {});
    // UDP needs no stack; forwarding needs none; a TCP listener creates one at time zero
    assert!(sim.stack(h1).is_none());
    assert!(sim.stack(r).is_none());
    let st = sim.stack(h2).expect("listening creates the stack");
    assert_eq!(st.tcp().sockets().count(), 1);
}

#[test]
fn runs_are_deterministic_and_seeded() {
    let go = |seed: u64| {
        let mut sim = Sim::new(seed);
        let h1 = sim.add_node("h1", false);
        let h2 = sim.add_node("h2", false);
        let q = || Box::new(Fifo::new(FifoKind::Pfifo, 1000)) as Box<dyn wirelab_qdisc::Qdisc>;
        let spec = NetemSpec::parse("rate 10mbit delay 5ms loss 20%").unwrap();
        sim.add_link("l", (h1, "eth0", ip("10.0.0.1/24"), q(), spec.clone()), (h2, "eth0", ip("10.0.0.2/24"), q(), spec), 14).unwrap();
        add(&mut sim, "src", h1, cbr("10.0.0.2:9", 1000, 0, 200));
        add(&mut sim, "sink", h2, AppConfig::UdpSink(UdpSinkConfig { port: 9 }));
        let r = run(&mut sim, 3000);
        (r.fingerprint.clone(), rx(&r, "sink"))
    };
    let a = go(1);
    assert_eq!(a, go(1));
    assert!(a.1 > 100 && a.1 < 200, "20 % loss of 200 datagrams left {}", a.1);
    assert_ne!(a.0, go(2).0);
}

/// A transmission that ends while an earlier packet is still in flight pre-empts that
/// packet's arrival entry; the driver then reuses the queued entry instead of pushing a
/// duplicate for the same instant. Fewer events, and nothing else may change: same
/// fingerprint (every delivery and drop, in order), counters and captured bytes.
#[test]
fn skipped_duplicate_link_entries_change_only_the_event_count() {
    let go = |skip: bool| {
        let (mut sim, h1, r, h2) = line(true);
        sim.set_skip_duplicate_link_entries(skip);
        sim.auto_routes();
        let tap: Packets = Rc::new(RefCell::new(Vec::new()));
        sim.capture(h2, 0, Box::new(Tap(tap.clone())));
        // 100 µs apart over 1 ms links: ten packets in flight per link
        for (name, sport, start) in [("a", 1000, 0), ("b", 1001, 0), ("c", 1002, 3)] {
            let mut c = cbr("10.0.2.2:9", sport, start, 300);
            if let AppConfig::UdpCbr(u) = &mut c {
                u.interval = Duration::from_micros(100);
            }
            add(&mut sim, name, h1, c);
        }
        add(&mut sim, "sink", h2, AppConfig::UdpSink(UdpSinkConfig { port: 9 }));
        let res = run(&mut sim, 200);
        let caps = tap.borrow().clone();
        let cs: Vec<NodeCounters> = [h1, r, h2].iter().map(|&n| counters(&res, sim.node_name(n))).collect();
        (res.events, res.fingerprint.clone(), rx(&res, "sink"), format!("{cs:?}"), caps)
    };
    let (on, off) = (go(true), go(false));
    assert_eq!(on.2, 900, "every datagram arrives");
    assert_eq!((&on.1, on.2, &on.3), (&off.1, off.2, &off.3));
    assert!(on.4 == off.4, "captures differ");
    assert!(on.0 < off.0, "no duplicate skipped: {} vs {} events", on.0, off.0);
}
