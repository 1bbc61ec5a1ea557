//! The simulation: nodes, interfaces, links and applications driven by one event queue.
//!
//! Per link direction the path of a packet is: the sending interface's root qdisc → the
//! link transmitter (serialisation at `rate`) → netem impairments and propagation → the
//! receiving interface. The transmitter pulls from the qdisc whenever it is idle, like a
//! NIC draining `dev_queue_xmit`'s queue. Only `Link`, `App`, `Stack`, `Change` and
//! `Sample` entries live in the event heap; packets in flight stay inside their link.
use wirelab_apps::{write_probe_header, App, AppCtx, AppInput, AppKind};
use crate::stack::{HostStack, StackConfig};
use crate::event::{Event, EventQueue};
use crate::record::{CaptureDir, CaptureSink, ProbeEvent, ProbeRecord, Recorder};
use crate::routing::{NextHop, RouteTable};
use std::collections::HashMap;
use std::net::Ipv4Addr;
use wirelab_core::{Duration, Instant, Pkt, Rng, Transmit, HEADROOM};
use wirelab_link::{LinkDirection, NetemSpec};
use wirelab_qdisc::Qdisc;
use wirelab_wire::ipv4::{Ipv4Packet, Ipv4Repr};
use wirelab_wire::udp::{UdpPacket, UdpRepr};

/// Index of a node.
pub type NodeId = u32;

/// An interface address with prefix length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IfAddr {
    /// Address.
    pub addr: Ipv4Addr,
    /// Prefix length.
    pub prefix: u8,
}

impl IfAddr {
    fn mask(&self) -> u32 {
        if self.prefix == 0 {
            0
        } else {
            u32::MAX << (32 - self.prefix)
        }
    }
    /// Network address.
    pub fn network(&self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) & self.mask())
    }
    /// True if `a` is on this subnet.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & self.mask() == u32::from(self.addr) & self.mask()
    }
}

/// `repr(C, align(64))`: what every packet through the interface reads (qdisc, link
/// direction, capture and probe flags, address) in its first cache line, the names after;
/// with thousands of hosts each visit to an interface is cold, so lines touched are misses.
#[repr(C, align(64))]
pub(crate) struct Iface {
    pub qdisc: Box<dyn Qdisc>,
    pub out: u32,
    pub probe: bool,
    pub capture: Option<u32>,
    pub addr: IfAddr,
    pub name: String,
    pub dev: String,
}

/// Node-level drop and delivery counters.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct NodeCounters {
    /// Packets delivered to a local protocol.
    pub delivered: u64,
    /// Packets forwarded (routers).
    pub forwarded: u64,
    /// No route to the destination.
    pub no_route: u64,
    /// TTL expired while forwarding.
    pub ttl_expired: u64,
    /// Not for this host and forwarding is off.
    pub not_local: u64,
    /// No socket on the destination port/protocol.
    pub no_socket: u64,
    /// Header or checksum errors (e.g. netem `corrupt`).
    pub bad_packets: u64,
}

/// `repr(C, align(64))`, hot fields first: receiving a packet reads the first cache line
/// only (interfaces, stack, the local-address hit, flags, counters), sending one that line
/// and the route cache in the second; names, maps and sorted lists follow. With thousands
/// of hosts every visit to a node is cold (Rust's own order spread these over four lines).
#[repr(C, align(64))]
pub(crate) struct Node {
    pub ifaces: Vec<Iface>,
    /// TCP/SCTP endpoints, created on first use.
    pub stack: Option<Box<HostStack>>,
    /// The last destination found in `local_sorted` (addresses are never removed): a
    /// host's packets are all for one address, and the sorted list is one more cold line.
    local_hit: Option<u32>,
    pub ip_ident: u16,
    pub router: bool,
    /// A node outside the simulation (a live driver's TUN interface): packets arriving at
    /// it are handed to the driver ([`Sim::drain_external`]) instead of being processed.
    pub external: bool,
    pub counters: NodeCounters,
    pub routes: RouteTable,
    pub name: String,
    pub udp_ports: HashMap<u16, u32>,
    /// Interface addresses in interface order (SCTP binds all of them).
    pub addrs: Vec<Ipv4Addr>,
    /// The same, sorted: "is this packet for me" per received packet is a binary search
    /// (a router of a 2000-host dumbbell has 2000 interfaces).
    local_sorted: Vec<u32>,
    /// Interface index by name (a 20 000-host dumbbell's routers have 20 000 interfaces:
    /// a scan per added link made building it quadratic).
    iface_ix: HashMap<String, u32>,
    /// Transport configuration used when the stack is created (boxed: read once per host,
    /// it would otherwise spread the fields every packet touches over 1 kB).
    pub stack_cfg: Box<StackConfig>,
}

impl Node {
    /// Whether `a` is one of the node's addresses.
    #[inline]
    fn is_local(&mut self, a: u32) -> bool {
        if self.local_hit == Some(a) {
            return true;
        }
        let local = self.local_sorted.binary_search(&a).is_ok();
        if local {
            self.local_hit = Some(a);
        }
        local
    }
}

/// `repr(C)`: the fields every event of the direction reads first, then the link (whose
/// own hot fields lead), the name last (see `LinkDirection`'s layout note).
#[repr(C)]
pub(crate) struct LinkDir {
    pub scheduled: Option<Instant>,
    /// The time of a superseded entry of this direction that is still queued (the latest
    /// one; `None` if unknown or fired), see `schedule_dir`.
    pub superseded: Option<Instant>,
    /// No scheduled change (up/down, netem spec) targets this direction.
    pub fixed: bool,
    /// The sending interface's qdisc may ask for a wake-up (`Qdisc::may_wake`: not a
    /// FIFO); if not, `schedule_dir` never reads the qdisc (a cold line per host).
    pub q_wakes: bool,
    /// The datagram being serialised belongs to a local socket that charged it (TCP
    /// Small Queues): its (`sk`, truesize), released when the transmitter is free again
    /// (`tcp_wfree()` at TX completion), at the event the link has then anyway.
    pub tsq_pending: Option<(u64, u32)>,
    pub from: (NodeId, u32),
    pub to: (NodeId, u32),
    pub l2_len: u16,
    pub link: LinkDirection,
    pub name: String,
}

/// A scheduled topology change.
#[derive(Clone, Debug)]
pub enum Change {
    /// Link direction down/up.
    SetUp {
        /// Link direction index.
        dir: u32,
        /// New state.
        up: bool,
    },
    /// New netem spec for a direction.
    SetSpec {
        /// Link direction index.
        dir: u32,
        /// The spec.
        spec: NetemSpec,
    },
    /// An application calls `setsockopt()` on its open TCP sockets (a client's
    /// connection, a server's accepted ones); an error goes to the app's `error`.
    SockOpt {
        /// App index.
        app: u32,
        /// The option.
        opt: wirelab_tcp::SockOpt,
    },
}

/// Run-level counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunCounters {
    /// Events processed.
    pub events: u64,
    /// Packets created.
    pub packets: u64,
}

/// The simulator.
pub struct Sim {
    pub(crate) now: Instant,
    pub(crate) seed: u64,
    pub(crate) events: EventQueue,
    pub(crate) nodes: Vec<Node>,
    pub(crate) dirs: Vec<LinkDir>,
    pub(crate) apps: Vec<App>,
    pub(crate) app_timers: Vec<Option<Instant>>,
    pub(crate) changes: Vec<(Instant, Change)>,
    pub(crate) next_pkt_id: u64,
    pub(crate) drops: Vec<Pkt>,
    /// Verify every received transport checksum, not only those of corrupted packets
    /// (`[scenario] checksum_offload = false`).
    pub(crate) verify_checksums: bool,
    pub(crate) rec: Recorder,
    pub(crate) counters: RunCounters,
    pub(crate) sample_interval: Duration,
    pub(crate) started: bool,
    /// Recycled packet buffers (no per-packet allocation in steady state).
    pub(crate) pool: Vec<Vec<u8>>,
    /// Scratch list of socket events to hand to apps.
    ev_scratch: Vec<(u32, AppInput)>,
    /// A datagram with a by-reference tail, made whole for a capture or a receiving stack.
    whole: Vec<u8>,
    /// Joins a segment's headers and its by-reference pattern tail for a receiving stack.
    joiner: wirelab_core::pattern::Joiner,
    /// Packets that arrived at external nodes, for the live driver to write out.
    external_out: Vec<(NodeId, Vec<u8>)>,
    /// Resource guard called every `mask + 1` events (see [`Sim::set_watch`]).
    watch: Option<(u64, Watch)>,
    /// Why the run stopped early, if a watch stopped it.
    pub(crate) stopped: Option<String>,
    /// The TCP configuration of the last host stack created, shared by the next host
    /// stacks whose configuration is equal.
    tcp_cfg_shared: Option<std::sync::Arc<wirelab_tcp::TcpConfig>>,
    /// Skip duplicate `Link` entries (see `schedule_dir`); off only to test that skipping
    /// them changes nothing but the event count.
    skip_duplicates: bool,
}

/// A check the run loop calls every few thousand events with (now, events so far);
/// returning a reason stops the run there (resource guards: memory, capture bytes, disk).
pub type Watch = Box<dyn FnMut(Instant, u64) -> Option<String> + Send>;

/// Packet buffers kept for reuse.
const POOL_MAX: usize = 8192;

/// Errors from building a simulation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(pub String);

impl core::fmt::Display for BuildError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for BuildError {}

impl Sim {
    /// An empty simulation with run seed `seed`.
    pub fn new(seed: u64) -> Sim {
        Sim {
            now: Instant::ZERO,
            seed,
            events: EventQueue::default(),
            nodes: Vec::new(),
            dirs: Vec::new(),
            apps: Vec::new(),
            app_timers: Vec::new(),
            changes: Vec::new(),
            next_pkt_id: 0,
            drops: Vec::new(),
            verify_checksums: false,
            rec: Recorder::default(),
            counters: RunCounters::default(),
            sample_interval: Duration::from_millis(100),
            started: false,
            pool: Vec::new(),
            ev_scratch: Vec::new(),
            whole: Vec::new(),
            joiner: Default::default(),
            external_out: Vec::new(),
            watch: None,
            stopped: None,
            tcp_cfg_shared: None,
            skip_duplicates: true,
        }
    }

    /// Calls `w(now, events)` every `every` events (rounded up to a power of two) during
    /// [`run`](Self::run); when it returns a reason, the run stops at that event (time does
    /// not advance to `until`) and [`stopped`](Self::stopped) and the results carry the
    /// reason. The recorded results up to there are intact.
    pub fn set_watch(&mut self, every: u64, w: Watch) {
        self.watch = Some((every.max(1).next_power_of_two() - 1, w));
    }

    /// Turns off the skipping of duplicate link-direction entries (on by default): for
    /// tests that show it changes nothing but [`RunCounters::events`].
    #[doc(hidden)]
    pub fn set_skip_duplicate_link_entries(&mut self, on: bool) {
        self.skip_duplicates = on;
    }

    /// Why the run stopped before `until`, if a watch stopped it.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// The run seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }
    /// Current simulated time.
    pub fn now(&self) -> Instant {
        self.now
    }
    /// Sets the time-series sampling interval.
    pub fn set_sample_interval(&mut self, d: Duration) {
        self.sample_interval = d;
    }

    /// Adds a node; routers forward, hosts do not (`net.ipv4.ip_forward`).
    pub fn add_node(&mut self, name: &str, router: bool) -> NodeId {
        self.nodes.push(Node {
            name: name.to_string(),
            router,
            ifaces: Vec::new(),
            routes: RouteTable::default(),
            ip_ident: 0,
            udp_ports: HashMap::new(),
            counters: NodeCounters::default(),
            addrs: Vec::new(),
            local_sorted: Vec::new(),
            local_hit: None,
            iface_ix: HashMap::new(),
            stack_cfg: Box::default(),
            stack: None,
            external: false,
        });
        (self.nodes.len() - 1) as NodeId
    }

    /// Node index by name.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name).map(|i| i as NodeId)
    }
    /// Node name.
    pub fn node_name(&self, n: NodeId) -> &str {
        &self.nodes[n as usize].name
    }
    /// Interface names of a node.
    pub fn iface_names(&self, n: NodeId) -> Vec<String> {
        self.nodes[n as usize].ifaces.iter().map(|i| i.name.clone()).collect()
    }
    /// Interface index by name.
    pub fn iface_id(&self, n: NodeId, name: &str) -> Option<u32> {
        self.nodes[n as usize].iface_ix.get(name).copied()
    }
    /// Address of interface `i` of node `n`.
    pub fn iface_addr(&self, n: NodeId, i: u32) -> IfAddr {
        self.nodes[n as usize].ifaces[i as usize].addr
    }
    /// All interface addresses of a node, in interface order.
    pub fn node_addrs(&self, n: NodeId) -> Vec<Ipv4Addr> {
        self.nodes[n as usize].addrs.clone()
    }
    /// First interface address of a node.
    pub fn primary_addr(&self, n: NodeId) -> Option<Ipv4Addr> {
        self.nodes[n as usize].ifaces.first().map(|i| i.addr.addr)
    }

    /// Joins two nodes with a point-to-point link. `qdisc_a` is the root qdisc of a's
    /// egress, `spec_ab` the a→b direction. Returns the indices of the two directions.
    #[allow(clippy::too_many_arguments)]
    pub fn add_link(
        &mut self,
        name: &str,
        a: (NodeId, &str, IfAddr, Box<dyn Qdisc>, NetemSpec),
        b: (NodeId, &str, IfAddr, Box<dyn Qdisc>, NetemSpec),
        l2_len: u16,
    ) -> Result<(u32, u32), BuildError> {
        let dab = self.dirs.len() as u32;
        let dba = dab + 1;
        let ia = self.nodes[a.0 as usize].ifaces.len() as u32;
        let ib = self.nodes[b.0 as usize].ifaces.len() as u32;
        for (n, nm) in [(a.0, a.1), (b.0, b.1)] {
            if self.nodes[n as usize].iface_ix.contains_key(nm) {
                return Err(BuildError(format!("node `{}` already has an interface `{nm}`", self.nodes[n as usize].name)));
            }
        }
        let seed = self.seed;
        let an = self.nodes[a.0 as usize].name.clone();
        let bn = self.nodes[b.0 as usize].name.clone();
        self.dirs.push(LinkDir {
            name: format!("{name}:{an}->{bn}"),
            link: LinkDirection::new(a.4, Rng::stream(seed, &format!("link/{name}/ab"))),
            q_wakes: a.3.may_wake(),
            from: (a.0, ia),
            to: (b.0, ib),
            scheduled: None,
            superseded: None,
            fixed: true,
            tsq_pending: None,
            l2_len,
        });
        self.dirs.push(LinkDir {
            name: format!("{name}:{bn}->{an}"),
            link: LinkDirection::new(b.4, Rng::stream(seed, &format!("link/{name}/ba"))),
            q_wakes: b.3.may_wake(),
            from: (b.0, ib),
            to: (a.0, ia),
            scheduled: None,
            superseded: None,
            fixed: true,
            tsq_pending: None,
            l2_len,
        });
        for (n, nm, addr, q, out) in [(a.0, a.1, a.2, a.3, dab), (b.0, b.1, b.2, b.3, dba)] {
            let node = &mut self.nodes[n as usize];
            let dev = format!("{}:{}", node.name, nm);
            node.ifaces.push(Iface { name: nm.to_string(), addr, out, qdisc: q, capture: None, probe: false, dev });
            node.addrs.push(addr.addr);
            // addresses usually come in increasing order (the builder numbers links): an
            // append, not an O(n) insert
            let k = u32::from(addr.addr);
            if node.local_sorted.last().is_none_or(|&l| l < k) {
                node.local_sorted.push(k);
            } else if let Err(i) = node.local_sorted.binary_search(&k) {
                node.local_sorted.insert(i, k);
            }
            node.iface_ix.entry(nm.to_string()).or_insert(node.ifaces.len() as u32 - 1);
            // connected route (`proto kernel scope link`)
            let idx = node.ifaces.len() as u32 - 1;
            node.routes.add(addr.network(), addr.prefix, NextHop { iface: idx, via: None });
        }
        Ok((dab, dba))
    }

    /// Adds a static route on node `n`: `net/len` via interface `iface`.
    pub fn add_route(&mut self, n: NodeId, net: Ipv4Addr, len: u8, iface: u32, via: Option<Ipv4Addr>) {
        self.nodes[n as usize].routes.add(net, len, NextHop { iface, via });
    }

    /// Interface of node `n` whose subnet contains `a`.
    pub fn iface_towards(&self, n: NodeId, a: Ipv4Addr) -> Option<u32> {
        self.nodes[n as usize].ifaces.iter().position(|i| i.addr.contains(a)).map(|i| i as u32)
    }

    /// Shortest-path (hop count) routes from every node to every subnet that it has no
    /// route for yet. Ties go to the lower interface index, so the result is deterministic.
    pub fn auto_routes(&mut self) {
        let n = self.nodes.len();
        // neighbours: (node, via iface index on this node, peer address)
        let mut adj: Vec<Vec<(u32, u32, Ipv4Addr)>> = vec![Vec::new(); n];
        for d in &self.dirs {
            let peer_addr = self.nodes[d.to.0 as usize].ifaces[d.to.1 as usize].addr.addr;
            adj[d.from.0 as usize].push((d.to.0, d.from.1, peer_addr));
        }
        let subnets: Vec<(NodeId, IfAddr)> = self
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(i, nd)| nd.ifaces.iter().map(move |f| (i as NodeId, f.addr)))
            .collect();
        for src in 0..n {
            // A node with one interface (a typical host) needs only a default route through
            // its neighbour, as `dhclient` would install; this keeps a 2000-host dumbbell
            // from holding 2000 × 6000 routes.
            if self.nodes[src].ifaces.len() == 1 {
                if let Some(&(_, ifc, via)) = adj[src].first() {
                    if !self.nodes[src].routes.has(Ipv4Addr::UNSPECIFIED, 0) {
                        self.nodes[src].routes.add(Ipv4Addr::UNSPECIFIED, 0, NextHop { iface: ifc, via: Some(via) });
                    }
                }
                continue;
            }
            // BFS from src, remembering the first hop and the hop count
            let mut first: Vec<Option<(u32, Ipv4Addr)>> = vec![None; n];
            let mut dist = vec![u32::MAX; n];
            let mut seen = vec![false; n];
            seen[src] = true;
            let mut q = std::collections::VecDeque::new();
            for &(nb, ifc, pa) in &adj[src] {
                if !seen[nb as usize] {
                    seen[nb as usize] = true;
                    first[nb as usize] = Some((ifc, pa));
                    dist[nb as usize] = 1;
                    q.push_back(nb);
                }
            }
            while let Some(u) = q.pop_front() {
                // only routers forward: do not route through hosts
                if !self.nodes[u as usize].router {
                    continue;
                }
                for &(nb, _, _) in &adj[u as usize] {
                    if !seen[nb as usize] {
                        seen[nb as usize] = true;
                        first[nb as usize] = first[u as usize];
                        dist[nb as usize] = dist[u as usize] + 1;
                        q.push_back(nb);
                    }
                }
            }
            // a subnet is reached through its nearest owner (a multihomed host's other
            // subnet is owned by a closer router too); ties go to the lower node index
            let mut best: std::collections::BTreeMap<(u32, u8), (u32, u32)> = std::collections::BTreeMap::new();
            for &(owner, sub) in &subnets {
                if owner as usize == src || first[owner as usize].is_none() {
                    continue;
                }
                let key = (u32::from(sub.network()), sub.prefix);
                let cand = (dist[owner as usize], owner);
                if best.get(&key).is_none_or(|b| cand < *b) {
                    best.insert(key, cand);
                }
            }
            for ((net, prefix), (_, owner)) in best {
                let net = Ipv4Addr::from(net);
                if let Some((ifc, via)) = first[owner as usize] {
                    if !self.nodes[src].routes.has(net, prefix) {
                        self.nodes[src].routes.add(net, prefix, NextHop { iface: ifc, via: Some(via) });
                    }
                }
            }
        }
    }

    /// Adds an application; returns its index.
    pub fn add_app(&mut self, app: App) -> Result<u32, BuildError> {
        let id = self.apps.len() as u32;
        let node = &mut self.nodes[app.node as usize];
        if let AppKind::UdpSink(s) = &app.kind {
            if node.udp_ports.insert(s.cfg.port, id).is_some() {
                return Err(BuildError(format!("node `{}`: UDP port {} is already bound", node.name, s.cfg.port)));
            }
        }
        if let AppKind::UdpCbr(c) = &app.kind {
            if c.cfg.src_port != 0 {
                node.udp_ports.entry(c.cfg.src_port).or_insert(id);
            }
        }
        self.apps.push(app);
        self.app_timers.push(None);
        Ok(id)
    }

    /// Schedules a topology change.
    pub fn schedule(&mut self, at: Instant, c: Change) {
        self.changes.push((at, c));
    }

    /// Link direction indices whose name starts with `link` (`NAME:` prefix).
    pub fn link_dirs(&self, link: &str) -> Vec<u32> {
        let p = format!("{link}:");
        (0..self.dirs.len() as u32).filter(|&i| self.dirs[i as usize].name.starts_with(&p)).collect()
    }

    /// Attaches a capture sink to interface `iface` of node `n`.
    pub fn capture(&mut self, n: NodeId, iface: u32, sink: Box<dyn CaptureSink>) {
        let id = self.rec.captures.len() as u32;
        self.rec.captures.push(sink);
        self.nodes[n as usize].ifaces[iface as usize].capture = Some(id);
    }

    /// Captures interface `iface` of node `n` into a pcap/pcapng file at `path`.
    pub fn capture_file(&mut self, n: NodeId, iface: u32, path: &std::path::Path, format: crate::capture::CaptureFormat) -> std::io::Result<()> {
        let own = wirelab_wire::ethernet::mac_for(n, iface);
        let out = self.nodes[n as usize].ifaces[iface as usize].out;
        let (pn, pi) = self.dirs[out as usize].to;
        let peer = wirelab_wire::ethernet::mac_for(pn, pi);
        let ifc = &self.nodes[n as usize].ifaces[iface as usize];
        let desc = format!("{} {}/{} -> {}", ifc.dev, ifc.addr.addr, ifc.addr.prefix, self.nodes[pn as usize].name);
        let sink = crate::capture::FileCapture::create(path, format, own, peer, &ifc.dev, &desc)?;
        self.capture(n, iface, Box::new(sink));
        Ok(())
    }

    /// Enables the per-packet queue probe on an interface's egress qdisc.
    pub fn probe_queue(&mut self, n: NodeId, iface: u32) {
        self.nodes[n as usize].ifaces[iface as usize].probe = true;
    }

    /// Arms the applications' start timers, the scheduled changes and the first sample.
    /// [`Sim::run`] calls it; a live driver calls it once before stepping.
    pub fn start(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        for i in 0..self.apps.len() {
            if let Some(t) = self.apps[i].start_time() {
                self.arm_app(i as u32, t);
            }
        }
        for (i, (t, c)) in self.changes.iter().enumerate() {
            self.events.push(*t, Event::Change(i as u32));
            if let Change::SetUp { dir, .. } | Change::SetSpec { dir, .. } = c {
                self.dirs[*dir as usize].fixed = false;
            }
        }
        self.events.push(Instant::ZERO, Event::Sample);
    }

    fn arm_app(&mut self, app: u32, t: Instant) {
        self.app_timers[app as usize] = Some(t);
        self.events.push(t, Event::App(app));
    }

    /// Runs until `until` (inclusive) or until nothing is left to do. `progress` is called
    /// about every `progress_every` of simulated time.
    pub fn run(&mut self, until: Instant, progress_every: Duration, progress: &mut dyn FnMut(Instant)) {
        self.start();
        let mut next_progress = self.now + progress_every;
        while let Some((t, ev)) = self.events.pop_until(until) {
            self.dispatch(t, ev);
            if progress_every > Duration::ZERO && self.now >= next_progress {
                progress(self.now);
                next_progress = self.now + progress_every;
            }
            if let Some((mask, w)) = &mut self.watch {
                if self.counters.events & *mask == 0 {
                    if let Some(why) = w(self.now, self.counters.events) {
                        self.stopped = Some(why);
                        break;
                    }
                }
            }
        }
        self.end(until);
    }

    /// Runs one event. Inlined into the loop (`run`, `step`): as a function of its own
    /// its entry and exit (saving and restoring six registers) cost ~16 instructions per
    /// event.
    #[inline(always)]
    fn dispatch(&mut self, t: Instant, ev: Event) {
        debug_assert!(t >= self.now);
        self.now = t;
        self.counters.events += 1;
        match ev {
            Event::Link(d) => self.on_link(d),
            Event::App(a) => self.on_app(a),
            Event::Stack(n) => self.on_stack_timer(n),
            Event::Change(c) => self.on_change(c),
            Event::Sample => {
                self.sample();
                self.events.push(self.now + self.sample_interval, Event::Sample);
            }
        }
    }

    /// Runs the earliest event if it is due at or before `until` and returns its time
    /// (a live driver steps the heap against the wall clock and measures how late each
    /// event ran); `None` if nothing is due.
    pub fn step(&mut self, until: Instant) -> Option<Instant> {
        let (t, ev) = self.events.pop_until(until)?;
        self.dispatch(t, ev);
        Some(t)
    }

    /// Time of the earliest pending event (possibly a superseded timer entry).
    pub fn next_event_time(&self) -> Option<Instant> {
        self.events.peek_time()
    }

    /// Ends the run at `until` (unless a watch stopped it early): the clock moves there and
    /// the last sample is taken.
    pub fn end(&mut self, until: Instant) {
        if self.now < until && self.stopped.is_none() {
            self.now = until;
        }
        self.sample();
    }

    /// Marks node `n` as external: it has no stack, and every packet reaching it is handed
    /// to the driver ([`Sim::drain_external`]) to be written to a real interface.
    pub fn set_external(&mut self, n: NodeId) {
        self.nodes[n as usize].external = true;
    }

    /// True if node `n` is external.
    pub fn is_external(&self, n: NodeId) -> bool {
        self.nodes[n as usize].external
    }

    /// Moves the packets that reached external nodes since the last call into `out`, as
    /// `(node, IPv4 datagram)`. Hand buffers back with [`Sim::recycle_buf`].
    pub fn drain_external(&mut self, out: &mut Vec<(NodeId, Vec<u8>)>) {
        out.append(&mut self.external_out);
    }

    /// Returns a packet buffer to the pool.
    pub fn recycle_buf(&mut self, buf: Vec<u8>) {
        self.recycle(buf);
    }

    /// An IPv4 datagram sent by external node `n` (read from its TUN interface) at `now`
    /// (clamped so the clock never goes back): routed by `n`'s table onto its egress
    /// qdisc, as if `n` had sent it. Errors say why it was dropped.
    pub fn inject(&mut self, n: NodeId, now: Instant, data: Vec<u8>) -> Result<(), InjectError> {
        if now > self.now {
            self.now = now;
        }
        let dst = match Ipv4Packet::new_checked(&data[..]) {
            Ok(p) => p.dst_addr(),
            _ => {
                self.recycle(data);
                return Err(InjectError::NotIpv4);
            }
        };
        let node = &mut self.nodes[n as usize];
        let Some(hop) = node.routes.lookup(dst) else {
            node.counters.no_route += 1;
            self.recycle(data);
            return Err(InjectError::NoRoute);
        };
        let pkt = self.new_pkt(data, &[]);
        self.enqueue(n, hop.iface, pkt);
        Ok(())
    }

    fn on_change(&mut self, c: u32) {
        let (_, ch) = self.changes[c as usize].clone();
        match ch {
            Change::SetUp { dir, up } => self.dirs[dir as usize].link.set_up(self.now, up),
            Change::SetSpec { dir, spec } => self.dirs[dir as usize].link.set_spec(spec),
            Change::SockOpt { app, opt } => self.app_setsockopt(app, opt),
        }
        let d = match &self.changes[c as usize].1 {
            Change::SetUp { dir, .. } | Change::SetSpec { dir, .. } => *dir,
            Change::SockOpt { .. } => return,
        };
        self.kick(d);
    }

    /// `setsockopt()` by app `a` on each of its open TCP sockets (a scheduled event).
    fn app_setsockopt(&mut self, a: u32, opt: wirelab_tcp::SockOpt) {
        let n = self.apps[a as usize].node;
        self.ensure_stack(n);
        let mut socks = Vec::new();
        self.apps[a as usize].tcp_sockets(&mut |s| socks.push(s));
        let Some(stack) = self.nodes[n as usize].stack.as_deref_mut() else { return };
        for s in socks {
            if let Err(e) = wirelab_apps::HostSockets::set_option(stack, s, opt.clone()) {
                self.apps[a as usize].note_error(e);
            }
        }
        self.service_stack(n);
    }

    fn on_app(&mut self, a: u32) {
        if self.app_timers[a as usize] != Some(self.now) {
            return; // stale entry
        }
        self.app_timers[a as usize] = None;
        let now = self.now;
        let node = self.apps[a as usize].node;
        match &mut self.apps[a as usize].kind {
            AppKind::UdpCbr(c) => {
                let Some(d) = c.on_timer(now) else { return };
                if !self.send_udp(node, d.src_port, d.dst, d.payload, d.seq) {
                    if let AppKind::UdpCbr(c) = &mut self.apps[a as usize].kind {
                        c.unroutable += 1;
                    }
                }
                self.arm_app(a, d.next);
            }
            AppKind::UdpSink(_) => {}
            _ => self.app_input(a, AppInput::Timer),
        }
    }

    /// The applications, in the order they were added (their index is their id).
    pub fn apps(&self) -> &[App] {
        &self.apps
    }

    /// Sets the transport configuration of node `n` (before its stack is created).
    pub fn set_stack_config(&mut self, n: NodeId, cfg: StackConfig) {
        *self.nodes[n as usize].stack_cfg = cfg;
    }

    /// The stack of node `n`, if it was created.
    pub fn stack(&self, n: NodeId) -> Option<&HostStack> {
        self.nodes[n as usize].stack.as_deref()
    }

    /// Run-level counters so far (a bench reads them between two [`Sim::run`] calls).
    pub fn run_counters(&self) -> RunCounters {
        self.counters
    }

    /// Node `n`'s drop and delivery counters so far.
    pub fn node_counters(&self, n: NodeId) -> NodeCounters {
        self.nodes[n as usize].counters
    }

    /// Creates node `n`'s host stack on first use (every delivery asks: the test is
    /// inlined, the creation is not).
    #[inline(always)]
    fn ensure_stack(&mut self, n: NodeId) {
        if self.nodes[n as usize].stack.is_none() {
            self.create_stack(n);
        }
    }

    #[cold]
    #[inline(never)]
    fn create_stack(&mut self, n: NodeId) {
        let seed = self.seed;
        let node = &mut self.nodes[n as usize];
        {
            let cfg = &node.stack_cfg;
            let tcp_cfg = cfg.tcp.clone().unwrap_or_else(|| wirelab_tcp::TcpConfig::profile("linux-6").expect("linux-6"));
            let mut sctp_cfg = cfg.sctp.clone().unwrap_or_else(|| wirelab_sctp::SctpConfig::profile("linux-6").expect("linux-6"));
            // SCTP picks each path's source address by route lookup, as Linux does
            sctp_cfg.source_routes = node.routes.entries().into_iter().map(|(net, len, hop)| (net, len, node.ifaces[hop.iface as usize].addr.addr)).collect();
            sctp_cfg.host_addrs = node.ifaces.iter().map(|f| f.addr.addr).collect();
            // hosts with equal TCP configurations share one copy (read at every segment;
            // one per host was a cold ~300-byte copy at every segment with thousands of hosts)
            let tcp_cfg = match &self.tcp_cfg_shared {
                Some(c) if **c == tcp_cfg => c.clone(),
                _ => {
                    let c = std::sync::Arc::new(tcp_cfg);
                    self.tcp_cfg_shared = Some(c.clone());
                    c
                }
            };
            let mut tcp = wirelab_tcp::TcpEndpoint::new_shared(tcp_cfg, Rng::stream(seed, &format!("node/{}/tcp", node.name)));
            // bulk payload travels by reference (Pkt::tail); captures and receivers see it
            tcp.set_lazy_payload(true);
            // TCP Small Queues: this driver reports when each datagram leaves the host
            // (tsq_release: end of serialisation, a drop, or a delaying netem)
            tcp.set_tx_completions(true);
            // SK_PACING_FQ: Linux's fq_classify() marks each socket whose packets reach an
            // fq with pacing on; here a host whose every egress leads into such an fq
            // (see fq_paces) has all its TCP sockets marked, from their creation
            if !node.ifaces.is_empty() && node.ifaces.iter().all(|f| fq_paces(f.qdisc.as_ref())) {
                tcp.set_fq_pacing(true);
            }
            let sctp = wirelab_sctp::SctpEndpoint::new(sctp_cfg, Rng::stream(seed, &format!("node/{}/sctp", node.name)));
            let mut st = HostStack::new(tcp, sctp, cfg.shim.clone());
            st.rate = cfg.rate.clone();
            node.stack = Some(Box::new(st));
        }
    }

    /// Installs rate controllers on the sockets of node `n` that wait for their qdisc
    /// class (`net.ipv4.cbq_class` set): the class is the leaf the egress qdisc towards
    /// the peer puts the connection's outgoing packets in (seed 003 §5.4 associates
    /// "socket numbers to CBQ class identifiers" with the classify functions).
    fn bind_rate_classes(&mut self, n: NodeId) {
        let Some(stack) = self.nodes[n as usize].stack.as_deref_mut() else { return };
        if stack.rate_class_pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut stack.rate_class_pending);
        for s in pending {
            let Some((local, remote)) = self.nodes[n as usize].stack.as_deref().and_then(|st| st.tcp().addrs(s)) else { continue };
            let class = self.egress_class(n, wirelab_wire::ip_proto::TCP, local, remote);
            if let Some(st) = self.nodes[n as usize].stack.as_deref_mut() {
                st.install_rate(s, class);
            }
        }
    }

    /// The leaf class node `n`'s egress qdisc would put a `proto` packet from `local` to
    /// `remote` in (`Qdisc::leaf_class` on a 40-byte header; `None` if classless or no
    /// route). Not on the packet path.
    pub(crate) fn egress_class(&self, n: NodeId, proto: u8, local: std::net::SocketAddrV4, remote: std::net::SocketAddrV4) -> Option<u32> {
        let node = &self.nodes[n as usize];
        let hop = node.routes.lookup(*remote.ip())?;
        let mut d = vec![0u8; 40];
        Ipv4Repr { src: *local.ip(), dst: *remote.ip(), protocol: proto, payload_len: 20, ttl: 64, tos: 0, ident: 0, dont_frag: true }.emit(&mut d);
        d[20..22].copy_from_slice(&local.port().to_be_bytes());
        d[22..24].copy_from_slice(&remote.port().to_be_bytes());
        if proto == wirelab_wire::ip_proto::TCP {
            d[32] = 5 << 4; // data offset
            d[33] = 0x10; // ACK
        }
        let pkt = Pkt::new(d);
        node.ifaces[hop.iface as usize].qdisc.leaf_class(&pkt).map(|c| c.0)
    }

    /// Receivers verify every transport checksum (`true`) or only those of packets a
    /// link or netem qdisc corrupted (`false`, the default: checksum offload).
    pub fn set_verify_checksums(&mut self, on: bool) {
        self.verify_checksums = on;
    }

    /// Source address for traffic from `n` to `dst` (the outgoing interface's address).
    fn source_addr(&self, n: NodeId, dst: Ipv4Addr) -> Option<Ipv4Addr> {
        let node = &self.nodes[n as usize];
        let hop = node.routes.lookup(dst)?;
        Some(node.ifaces[hop.iface as usize].addr.addr)
    }

    /// Runs one input through a stack-using app, then services the node's stack.
    fn app_input(&mut self, a: u32, input: AppInput) {
        let n = self.apps[a as usize].node;
        self.app_input_inner(a, input);
        self.service_stack(n);
    }

    fn app_input_inner(&mut self, a: u32, input: AppInput) {
        let now = self.now;
        let n = self.apps[a as usize].node;
        self.ensure_stack(n);
        let src = self.apps[a as usize].dst_addr().and_then(|d| self.source_addr(n, d));
        let node = &mut self.nodes[n as usize];
        let Some(stack) = node.stack.as_deref_mut() else { return };
        let mut ctx = AppCtx { now, app: a, sockets: stack, src, local_addrs: &node.addrs };
        let next = self.apps[a as usize].on_input(&mut ctx, input);
        if let Some(t) = next {
            if t >= now && self.app_timers[a as usize] != Some(t) {
                self.arm_app(a, t);
            }
        }
    }

    /// Drains the stack of node `n`: transmits become IPv4 datagrams on their egress
    /// interface, socket events go to the owning apps (which may send more), and the
    /// stack's timer entry is refreshed.
    fn service_stack(&mut self, n: NodeId) {
        let now = self.now;
        loop {
            self.bind_rate_classes(n);
            loop {
                let mut buf = self.pool.pop().unwrap_or_default();
                buf.clear();
                buf.resize(HEADROOM, 0);
                let Some(stack) = self.nodes[n as usize].stack.as_deref_mut() else { return };
                let t = stack.engine().poll_transmit(now, &mut buf);
                match t {
                    Some(t) => self.send_ip(n, t, buf),
                    None => {
                        self.recycle(buf);
                        break;
                    }
                }
            }
            let mut evs = std::mem::take(&mut self.ev_scratch);
            if let Some(stack) = self.nodes[n as usize].stack.as_deref_mut() {
                while let Some(ev) = stack.poll_app_event() {
                    if let Some(x) = ev {
                        evs.push(x);
                    }
                }
            }
            if evs.is_empty() {
                self.ev_scratch = evs;
                break;
            }
            for &(a, input) in &evs {
                self.app_input_inner(a, input);
            }
            evs.clear();
            self.ev_scratch = evs;
        }
        self.schedule_stack(n);
    }

    fn schedule_stack(&mut self, n: NodeId) {
        let now = self.now;
        let Some(stack) = self.nodes[n as usize].stack.as_deref_mut() else { return };
        if let Some(t) = stack.poll_timeout() {
            let t = t.max(now);
            if stack.scheduled.is_none_or(|s| t < s || s < now) {
                stack.scheduled = Some(t);
                self.events.push(t, Event::Stack(n));
            }
        }
    }

    fn on_stack_timer(&mut self, n: NodeId) {
        let now = self.now;
        let Some(stack) = self.nodes[n as usize].stack.as_deref_mut() else { return };
        if stack.scheduled != Some(now) {
            return; // superseded entry
        }
        stack.scheduled = None;
        stack.engine().handle_timeout(now);
        self.service_stack(n);
    }

    #[inline]
    fn recycle(&mut self, buf: Vec<u8>) {
        if self.pool.len() < POOL_MAX {
            self.pool.push(buf);
        }
    }

    /// Wraps a transport segment (after `HEADROOM`) in an IPv4 header and routes it.
    fn send_ip(&mut self, n: NodeId, t: Transmit, mut buf: Vec<u8>) {
        let node = &mut self.nodes[n as usize];
        let Some(hop) = node.routes.lookup_cached(t.dst) else {
            node.counters.no_route += 1;
            if t.tsq != 0 {
                // ip_queue_xmit() fails: the skb is freed (tcp_wfree())
                self.tsq_release(n, t.sk, wirelab_core::tsq::truesize(buf.len() + t.tail.len(), t.tsq));
            }
            self.recycle(buf);
            return;
        };
        node.ip_ident = node.ip_ident.wrapping_add(1);
        let ip = Ipv4Repr {
            src: t.src,
            dst: t.dst,
            protocol: t.proto,
            payload_len: buf.len() - HEADROOM + t.tail.len(),
            ttl: 64,
            tos: t.tos,
            ident: node.ip_ident,
            dont_frag: t.dont_frag,
        };
        ip.emit(&mut buf);
        // the same tail bytes from the pattern's first lines (hot in L1) rather than from
        // wherever in its 64 kB the segment's stream offset fell
        let mut pkt = self.new_pkt(buf, wirelab_core::pattern::canonical(t.tail));
        // scheduling metadata for qdiscs such as fq (skb->sk, skb->tstamp, sk_pacing_rate)
        pkt.meta.sk = if t.sk != 0 { t.sk } else { socket_key(&t, &pkt.data[HEADROOM..]) };
        pkt.meta.txtime = t.txtime;
        pkt.meta.pacing_rate = t.pacing_rate;
        pkt.meta.tsq = t.tsq;
        if t.gso.0 >= 2 && (t.tsq == wirelab_core::tsq::SEG || t.tsq == wirelab_core::tsq::SKB_HEAD) {
            self.gso_segment(n, hop.iface, &mut pkt, t.gso);
        }
        self.enqueue(n, hop.iface, pkt);
    }

    /// `tbf_segment()`: a root qdisc that segments GSO skbs above its `max_size` on
    /// enqueue makes each segment an skb of its own, and `tcp_gso_segment()` charges the
    /// socket the segments' truesizes instead of the skb's. wirelab's TSO skbs are
    /// already segments: re-charge this one ([`wirelab_core::tsq::GSO_SEG`]).
    /// `gso` = (segments, IP bytes) of its skb; `qdisc_pkt_len()` adds each segment's
    /// link-layer header.
    fn gso_segment(&mut self, n: NodeId, iface: u32, pkt: &mut Pkt, gso: (u16, u32)) {
        let node = &mut self.nodes[n as usize];
        let ifc = &node.ifaces[iface as usize];
        let Some(max) = ifc.qdisc.gso_segments_above() else { return };
        let skb_len = gso.1 as usize + gso.0 as usize * self.dirs[ifc.out as usize].l2_len as usize;
        if skb_len <= max {
            return;
        }
        let old = wirelab_core::tsq::truesize(pkt.ip_len(), pkt.meta.tsq);
        pkt.meta.tsq = wirelab_core::tsq::GSO_SEG;
        let new = wirelab_core::tsq::truesize(pkt.ip_len(), pkt.meta.tsq);
        if let Some(stack) = node.stack.as_deref_mut() {
            stack.engine().tcp_mut().tx_recharge(pkt.meta.sk, new as i32 - old as i32);
        }
    }

    fn new_pkt(&mut self, data: Vec<u8>, tail: &'static [u8]) -> Pkt {
        let mut p = Pkt::new(data);
        p.tail = tail;
        // the fingerprint covers the whole datagram, by-reference tail included
        self.rec.packet_bytes_hash(&p.data, p.tail);
        p.meta.id = self.next_pkt_id;
        self.next_pkt_id += 1;
        self.counters.packets += 1;
        p
    }

    /// Builds and routes one CBR datagram; false if there was no route.
    fn send_udp(&mut self, n: NodeId, sport: u16, dst: std::net::SocketAddrV4, payload: usize, seq: u64) -> bool {
        let node = &mut self.nodes[n as usize];
        let Some(hop) = node.routes.lookup(*dst.ip()) else {
            node.counters.no_route += 1;
            return false;
        };
        let src = node.ifaces[hop.iface as usize].addr.addr;
        node.ip_ident = node.ip_ident.wrapping_add(1);
        let ip = Ipv4Repr {
            src,
            dst: *dst.ip(),
            protocol: wirelab_wire::ip_proto::UDP,
            payload_len: 8 + payload,
            ttl: 64,
            tos: 0,
            ident: node.ip_ident,
            dont_frag: true,
        };
        let mut buf = vec![0u8; 20 + 8 + payload];
        write_probe_header(&mut buf[28..], seq, self.now);
        UdpRepr { src_port: sport, dst_port: dst.port(), payload_len: payload }.emit(&mut buf[20..], src, *dst.ip());
        ip.emit(&mut buf);
        let pkt = self.new_pkt(buf, &[]);
        self.enqueue(n, hop.iface, pkt);
        true
    }

    /// Puts a packet on interface `iface`'s egress qdisc and kicks the transmitter.
    pub(crate) fn enqueue(&mut self, n: NodeId, iface: u32, mut pkt: Pkt) {
        let now = self.now;
        let ifc = &mut self.nodes[n as usize].ifaces[iface as usize];
        let dir = ifc.out;
        pkt.meta.l2_len = self.dirs[dir as usize].l2_len;
        pkt.meta.iface = iface;
        let probe = ifc.probe;
        // TCQ_F_CAN_BYPASS: an empty work-conserving qdisc in front of an idle transmitter
        // hands the packet straight over (__dev_xmit_skb -> sch_direct_xmit), counting it
        // as sent; the same as the enqueue and dequeue below, minus their queue operations
        if !probe && self.dirs[dir as usize].link.is_idle(now) && ifc.qdisc.bypass(now, &mut pkt) {
            if let Some(c) = ifc.capture {
                self.rec.capture(c, now, iface, CaptureDir::Out, whole(&mut self.whole, &pkt));
            }
            self.transmit(dir, pkt);
            self.schedule_dir(dir);
            return;
        }
        if pkt.meta.tsq != 0 && ifc.qdisc.orphans_on_enqueue() {
            // netem_enqueue() → skb_orphan_partial(): the socket's charge ends here
            let (sk, truesize) = (pkt.meta.sk, wirelab_core::tsq::truesize(pkt.ip_len(), pkt.meta.tsq));
            pkt.meta.tsq = 0;
            self.tsq_release(n, sk, truesize);
            return self.enqueue(n, iface, pkt);
        }
        let id = pkt.meta.id;
        let len = pkt.len();
        let mut drops = std::mem::take(&mut self.drops);
        let flow = if probe { ProbeRecord::flow_of(&pkt) } else { Default::default() };
        let verdict = ifc.qdisc.enqueue(now, pkt, &mut drops);
        if probe {
            let accepted = !drops.iter().any(|p| p.meta.id == id);
            if accepted {
                self.rec.probe(ProbeRecord::new(now, &ifc.dev, ProbeEvent::Enqueue, id, len, ifc.qdisc.as_ref(), 0, flow));
            }
            for p in &drops {
                self.rec.probe(ProbeRecord::new(now, &ifc.dev, ProbeEvent::Drop, p.meta.id, p.len(), ifc.qdisc.as_ref(), now.saturating_since(p.meta.enqueued).as_nanos(), ProbeRecord::flow_of(p)));
            }
        }
        let _ = verdict;
        for p in drops.drain(..) {
            self.rec.drop_hash(now, p.meta.id);
            if p.meta.tsq != 0 {
                // a local socket's packet dropped in its own host: freed (tcp_wfree())
                self.tsq_release(n, p.meta.sk, wirelab_core::tsq::truesize(p.ip_len(), p.meta.tsq));
            }
            if self.pool.len() < POOL_MAX {
                self.pool.push(p.data);
            }
        }
        self.drops = drops;
        self.kick(dir);
    }

    /// If the transmitter of direction `d` is idle, moves the next packet from the
    /// qdisc onto the wire; then makes sure an event is scheduled for the direction.
    fn kick(&mut self, d: u32) {
        let now = self.now;
        let dir = &self.dirs[d as usize];
        if !dir.link.is_idle(now) && dir.scheduled.is_some_and(|s| s >= now) {
            // A busy transmitter with a live entry: nothing to dequeue, and `schedule_dir`
            // would push nothing. The live entry is no later than anything pending (see
            // `on_link`); since it was set, only a transmission (always followed by
            // `schedule_dir`) can have made something earlier pending; the qdisc's wake-up
            // counts only while the transmitter idles. (1.7 of the ~16 `schedule_dir` calls per
            // delivered segment at 20 flows @ 1 Gbit/s: enqueues behind a busy bottleneck.)
            debug_assert!(self.schedule_dir_is_noop(d));
            return;
        }
        let (fnode, fif) = dir.from;
        if dir.link.is_idle(now) {
            let mut drops = std::mem::take(&mut self.drops);
            let ifc = &mut self.nodes[fnode as usize].ifaces[fif as usize];
            let pkt = ifc.qdisc.dequeue(now, &mut drops);
            if ifc.probe {
                for p in &drops {
                    self.rec.probe(ProbeRecord::new(now, &ifc.dev, ProbeEvent::Drop, p.meta.id, p.len(), ifc.qdisc.as_ref(), now.saturating_since(p.meta.enqueued).as_nanos(), ProbeRecord::flow_of(p)));
                }
                if let Some(p) = &pkt {
                    self.rec.probe(ProbeRecord::new(now, &ifc.dev, ProbeEvent::Dequeue, p.meta.id, p.len(), ifc.qdisc.as_ref(), now.saturating_since(p.meta.enqueued).as_nanos(), ProbeRecord::flow_of(p)));
                }
            }
            let capture = ifc.capture;
            for p in drops.drain(..) {
                self.rec.drop_hash(now, p.meta.id);
                if p.meta.tsq != 0 {
                    self.tsq_release(fnode, p.meta.sk, wirelab_core::tsq::truesize(p.ip_len(), p.meta.tsq));
                }
            }
            self.drops = drops;
            if let Some(pkt) = pkt {
                if let Some(c) = capture {
                    self.rec.capture(c, now, fif, CaptureDir::Out, whole(&mut self.whole, &pkt));
                }
                self.transmit(d, pkt);
            }
        }
        self.schedule_dir(d);
    }

    /// Puts `pkt` on the wire of direction `d` (its transmitter is idle). A packet a
    /// local socket charged (TCP Small Queues) is released when its serialisation ends:
    /// now if the link has no rate, else at the direction's event at `tx_end`.
    #[inline]
    fn transmit(&mut self, d: u32, mut pkt: Pkt) {
        let now = self.now;
        let charged = pkt.meta.tsq;
        if charged == 0 {
            self.dirs[d as usize].link.transmit(now, pkt);
            return;
        }
        pkt.meta.tsq = 0;
        let sk = pkt.meta.sk;
        let truesize = wirelab_core::tsq::truesize(pkt.ip_len(), charged);
        self.tsq_flush(d);
        let r = self.dirs[d as usize].link.transmit(now, pkt);
        if r.tx_end <= now {
            let n = self.dirs[d as usize].from.0;
            self.tsq_release(n, sk, truesize);
        } else {
            self.dirs[d as usize].tsq_pending = Some((sk, truesize));
        }
    }

    /// Releases the charged packet direction `d` finished serialising, if any.
    #[inline]
    fn tsq_flush(&mut self, d: u32) {
        let dir = &mut self.dirs[d as usize];
        if let Some((sk, truesize)) = dir.tsq_pending {
            if dir.link.busy_until() <= self.now {
                dir.tsq_pending = None;
                let n = dir.from.0;
                self.tsq_release(n, sk, truesize);
            }
        }
    }

    /// `tcp_wfree()`: tells node `n`'s stack that `truesize` bytes of socket `sk` left
    /// the host; a socket TSQ throttled runs its write path at once, from a stack event
    /// at `now` (the TSQ tasklet, `tcp_tsq_handler()`), so no engine is re-entered.
    fn tsq_release(&mut self, n: NodeId, sk: u64, truesize: u32) {
        let now = self.now;
        let Some(stack) = self.nodes[n as usize].stack.as_deref_mut() else { return };
        if stack.engine().tx_complete(now, sk, truesize) && stack.scheduled != Some(now) {
            stack.scheduled = Some(now);
            self.events.push(now, Event::Stack(n));
        }
    }

    /// When direction `d` next needs an event: its link's next timeout, or while the
    /// transmitter idles, its qdisc's wake-up (a shaper holding packets).
    #[inline(always)]
    fn dir_next(&self, d: u32) -> Option<Instant> {
        let now = self.now;
        let dir = &self.dirs[d as usize];
        let mut next = dir.link.poll_timeout();
        if dir.q_wakes && dir.link.is_idle(now) {
            let (fnode, fif) = dir.from;
            let q = &self.nodes[fnode as usize].ifaces[fif as usize].qdisc;
            if q.qlen() > 0 {
                if let Some(w) = q.next_wakeup(now) {
                    next = Some(next.map_or(w, |n| n.min(w)));
                }
            }
        }
        next
    }

    /// `schedule_dir(d)` would change nothing (debug builds check `kick`'s shortcut).
    fn schedule_dir_is_noop(&self, d: u32) -> bool {
        let now = self.now;
        let s = self.dirs[d as usize].scheduled;
        self.dir_next(d).is_none_or(|t| s.is_some_and(|s| t.max(now) >= s && s >= now))
    }

    fn schedule_dir(&mut self, d: u32) {
        let now = self.now;
        let next = self.dir_next(d);
        if let Some(t) = next {
            let t = t.max(now);
            let dir = &mut self.dirs[d as usize];
            if dir.scheduled.is_none_or(|s| t < s || s < now) {
                if dir.scheduled.is_none() && dir.superseded == Some(t) && dir.fixed && dir.link.arrives_later() && self.skip_duplicates {
                    // An entry superseded earlier is still queued for exactly `t` (typically
                    // the arrival that a transmission's end pre-empted). It fires before
                    // a new entry for `t` would and, as the live entry, does what that one
                    // would; the new one would then find nothing (all arrivals due at `t`
                    // delivered, none can arrive at its own instant, and the FIFO in front —
                    // checked below — never holds a packet while the transmitter idles).
                    // So no duplicate is pushed: one event fewer, no other change.
                    let (fnode, fif) = dir.from;
                    if self.nodes[fnode as usize].ifaces[fif as usize].qdisc.idle_dequeue_is_noop() {
                        dir.scheduled = Some(t);
                        dir.superseded = None;
                        return;
                    }
                }
                if let Some(s) = dir.scheduled.filter(|&s| s >= now) {
                    // the entry for `s` stays queued
                    dir.superseded = Some(s);
                }
                dir.scheduled = Some(t);
                self.events.push(t, Event::Link(d));
            }
        }
    }

    fn on_link(&mut self, d: u32) {
        let now = self.now;
        if self.dirs[d as usize].tsq_pending.is_some() {
            self.tsq_flush(d);
        }
        let dir = &mut self.dirs[d as usize];
        let due = dir.scheduled == Some(now);
        if due {
            dir.scheduled = None;
        }
        if dir.superseded == Some(now) {
            dir.superseded = None;
        }
        if dir.link.next_arrival().is_none_or(|a| a > now) {
            // Nothing arrives: the entry marks the end of a transmission or was superseded.
            // Half of all events at 20 flows @ 1 Gbit/s; when the transmitter has nothing to
            // pull (still busy, or an empty FIFO) they do exactly what the full path below
            // does without its arrivals, dequeue, probes and drops: note the time and
            // schedule the next wake-up. (Removing these entries altogether would change
            // the sequence numbers, and so the order, of events due at equal times.)
            let (fnode, fif) = dir.from;
            if !dir.link.is_idle(now) || self.nodes[fnode as usize].ifaces[fif as usize].qdisc.idle_dequeue_is_noop() {
                dir.link.handle_timeout(now);
                // A superseded entry (`scheduled` is not now) needs no rescheduling:
                // `scheduled` is the direction's live entry, no later than anything pending
                // (every change to what is pending goes through `schedule_dir`), or `None`
                // when nothing is pending, so `schedule_dir` would push nothing.
                if due {
                    self.schedule_dir(d);
                }
                return;
            }
        }
        while let Some(pkt) = self.dirs[d as usize].link.poll_arrival(now) {
            let (n, i) = self.dirs[d as usize].to;
            self.receive(n, i, pkt);
        }
        // Prefetch the header of the next packet to arrive here, so that it is in cache
        // when it arrives: the buffers of the thousands of packets in flight are cold, and
        // the first read of an arriving header was the costliest instruction of the loop.
        if let Some(h) = self.dirs[d as usize].link.peek_arrival_head() {
            prefetch(h);
        }
        self.kick(d);
    }

    /// A packet arrives on interface `i` of node `n`.
    fn receive(&mut self, n: NodeId, i: u32, mut pkt: Pkt) {
        let now = self.now;
        self.rec.deliver_hash(now, pkt.meta.id, n);
        if let Some(c) = self.nodes[n as usize].ifaces[i as usize].capture {
            self.rec.capture(c, now, i, CaptureDir::In, whole(&mut self.whole, &pkt));
        }
        let node = &mut self.nodes[n as usize];
        if node.external {
            // the kernel behind the TUN interface decides what to do with it: it gets the
            // whole datagram (a by-reference tail is appended)
            node.counters.delivered += 1;
            pkt.materialize();
            self.external_out.push((n, pkt.data));
            return;
        }
        let Ok(ipp) = Ipv4Packet::new_checked_split(&pkt.data[..], pkt.tail.len()) else {
            node.counters.bad_packets += 1;
            return;
        };
        if !ipp.verify_checksum() {
            node.counters.bad_packets += 1;
            return;
        }
        let dst = ipp.dst_addr();
        let local = node.is_local(u32::from(dst));
        if local {
            node.counters.delivered += 1;
            self.deliver_local(n, pkt);
            return;
        }
        if !node.router {
            node.counters.not_local += 1;
            return;
        }
        if ipp.ttl() <= 1 {
            node.counters.ttl_expired += 1;
            return;
        }
        let Some(hop) = node.routes.lookup_cached(dst) else {
            node.counters.no_route += 1;
            return;
        };
        Ipv4Packet::new_unchecked(&mut pkt.data[..]).decrement_ttl();
        // a forwarded packet belongs to no local socket and carries no departure time
        // (ip_forward(): skb->sk is NULL on receive, skb_clear_tstamp())
        pkt.meta.sk = 0;
        pkt.meta.txtime = Instant::ZERO;
        pkt.meta.pacing_rate = wirelab_core::PktMeta::NO_PACING;
        node.counters.forwarded += 1;
        self.enqueue(n, hop.iface, pkt);
    }

    fn deliver_local(&mut self, n: NodeId, pkt: Pkt) {
        let now = self.now;
        let ipp = Ipv4Packet::new_unchecked(&pkt.data[..]);
        let (src, dst) = (ipp.src_addr(), ipp.dst_addr());
        match ipp.protocol() {
            wirelab_wire::ip_proto::UDP => {
                let payload = ipp.payload();
                let Ok(u) = UdpPacket::new_checked(payload) else {
                    self.nodes[n as usize].counters.bad_packets += 1;
                    return;
                };
                let node = &mut self.nodes[n as usize];
                let Some(&app) = node.udp_ports.get(&u.dst_port()) else {
                    if node.stack_cfg.sctp.as_ref().is_some_and(|c| c.udp_port != 0 && c.udp_port == u.dst_port()) {
                        // SCTP over UDP (RFC 6951): the SCTP engine's tunneling port
                        self.deliver_to_stack(n, pkt, src, dst);
                        return;
                    }
                    node.counters.no_socket += 1;
                    return;
                };
                let ok = !(pkt.meta.corrupted || self.verify_checksums) || u.verify_checksum(src, dst);
                let dport = u.dst_port();
                if node.stack_cfg.rate.is_some() {
                    // receiver-side UDP policy (seed 003): OKAY → DROP → WARN → KILL
                    self.ensure_stack(n);
                    let node = &mut self.nodes[n as usize];
                    if let Some(st) = node.stack.as_deref_mut() {
                        let cfg = st.rate.clone().unwrap_or_default();
                        if cfg.cbq_class.is_some() && !st.udp_rate.contains_key(&dport) {
                            // bind the socket to the class of its replies (§5.4)
                            let (l, r) = (std::net::SocketAddrV4::new(dst, dport), std::net::SocketAddrV4::new(src, u.src_port()));
                            let class = self.egress_class(n, wirelab_wire::ip_proto::UDP, l, r);
                            if let Some(st) = self.nodes[n as usize].stack.as_deref_mut() {
                                st.udp_rate.insert(dport, wirelab_ratectl::UdpRatePolicy::new(&cfg).with_class(&cfg, class));
                            }
                        }
                        let node = &mut self.nodes[n as usize];
                        let Some(st) = node.stack.as_deref_mut() else { return };
                        let pol = st.udp_rate.entry(dport).or_insert_with(|| wirelab_ratectl::UdpRatePolicy::new(&cfg));
                        match pol.on_datagram(now, pkt.len()) {
                            wirelab_ratectl::UdpVerdict::Deliver => {}
                            wirelab_ratectl::UdpVerdict::Drop => {
                                if let AppKind::UdpSink(s) = &mut self.apps[app as usize].kind {
                                    s.policy_drops += 1;
                                }
                                self.recycle(pkt.data);
                                return;
                            }
                            wirelab_ratectl::UdpVerdict::Kill => {
                                // the socket is closed, as after an ICMP port unreachable
                                node.udp_ports.remove(&dport);
                                if let AppKind::UdpSink(s) = &mut self.apps[app as usize].kind {
                                    s.killed_at = Some(now);
                                }
                                self.recycle(pkt.data);
                                return;
                            }
                        }
                    }
                }
                if let AppKind::UdpSink(s) = &mut self.apps[app as usize].kind {
                    if ok {
                        s.on_datagram(now, u.payload(), pkt.len());
                    } else {
                        s.bad_checksum += 1;
                    }
                }
            }
            wirelab_wire::ip_proto::TCP | wirelab_wire::ip_proto::SCTP => {
                self.deliver_to_stack(n, pkt, src, dst);
                return;
            }
            wirelab_wire::ip_proto::ICMP if self.nodes[n as usize].stack.is_some() => {
                // ICMP errors (from a live run's kernel) reach the engines: SCTP turns a
                // port unreachable for its UDP tunnel into an abort in COOKIE-WAIT
                self.deliver_to_stack(n, pkt, src, dst);
                return;
            }
            _ => {
                self.nodes[n as usize].counters.no_socket += 1;
            }
        }
        self.recycle(pkt.data);
    }

    /// Hands a TCP, SCTP or UDP-encapsulated SCTP datagram to node `n`'s engines.
    fn deliver_to_stack(&mut self, n: NodeId, pkt: Pkt, src: Ipv4Addr, dst: Ipv4Addr) {
        let now = self.now;
        self.ensure_stack(n);
        if let Some(stack) = self.nodes[n as usize].stack.as_deref_mut() {
            let ipp = Ipv4Packet::new_unchecked(&pkt.data[..]);
            let (proto, tos) = (ipp.protocol(), ipp.tos());
            // the engine sees the whole segment: the headers are written in front of the
            // same pattern bytes as the by-reference tail (a copy of ~50 bytes, not ~1 500),
            // or else the tail is copied next to the headers
            let payload = if pkt.tail.is_empty() {
                ipp.payload()
            } else {
                let hl = ipp.header_len() as usize;
                match self.joiner.join(&pkt.data[hl..], pkt.tail) {
                    Some(s) => s,
                    None => {
                        self.whole.clear();
                        self.whole.extend_from_slice(&pkt.data[hl..]);
                        self.whole.extend_from_slice(pkt.tail);
                        &self.whole[..]
                    }
                }
            };
            // checksum offload: only corrupted packets are verified (PktMeta::corrupted)
            let verify = pkt.meta.corrupted || self.verify_checksums;
            stack.engine().handle_packet(now, wirelab_core::Datagram { src, dst, proto, tos, payload, verify });
        }
        self.recycle(pkt.data);
        self.service_stack(n);
    }

    /// Interval between datagrams for a CBR source of `rate_bps` counted over IP bytes.
    pub fn cbr_interval(payload: u32, rate_bps: u64) -> Duration {
        wirelab_apps::UdpCbrConfig::interval_for(payload, rate_bps)
    }
}

/// Asks the CPU to bring the first cache line of `b` into cache, without waiting for it.
#[inline(always)]
#[allow(unsafe_code)]
fn prefetch(b: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults and changes no memory or register;
    // the pointer comes from a live slice anyway. (`_mm_prefetch` is unsafe only because it
    // takes a raw pointer; SSE is part of the x86_64 baseline.)
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(b.as_ptr() as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = b;
}

/// The whole datagram of `pkt`: its `data`, or `data` and tail copied into `buf`.
fn whole<'a>(buf: &'a mut Vec<u8>, pkt: &'a Pkt) -> &'a [u8] {
    if pkt.tail.is_empty() {
        return &pkt.data;
    }
    buf.clear();
    pkt.write_to(buf);
    buf
}

/// Why [`Sim::inject`] dropped a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InjectError {
    /// Not an IPv4 datagram (e.g. IPv6 router solicitations from the kernel).
    NotIpv4,
    /// The external node has no route to the destination.
    NoRoute,
}

/// Whether every packet offered to this egress qdisc tree ends in an `fq` with pacing on
/// (`rate_enable`): the qdisc itself, or every leaf qdisc of a classful tree (HTB, prio,
/// TBF… with `fq` leaves). That is where Linux's `fq_classify()` sets
/// `sk->sk_pacing_status = SK_PACING_FQ` on the sending socket (new flow, fast path, or a
/// reused socket), which turns TCP's internal pacing off (`tcp_needs_internal_pacing()`).
/// `fq nopacing` leaves the status alone, so TCP keeps pacing itself. Packets an HTB sends
/// from its direct queue (unclassified) never see a leaf; this check ignores that case.
pub(crate) fn fq_paces(q: &dyn Qdisc) -> bool {
    let mut qs = Vec::new();
    q.tree_stats(&mut qs);
    let mut cls = Vec::new();
    q.class_stats(&mut cls);
    // a qdisc is a leaf unless some class belongs to it (classid major = its handle major)
    let is_leaf = |h: wirelab_qdisc::ClassId| h.major() == 0 || !cls.iter().any(|c| c.classid.major() == h.major());
    let leaves: Vec<&wirelab_qdisc::QdiscStats> = qs.iter().filter(|s| is_leaf(s.handle)).collect();
    !leaves.is_empty() && leaves.iter().all(|s| s.kind == "fq" && s.xstats.iter().any(|&(k, v)| k == "pacing" && v != 0))
}

/// A non-zero socket key for a segment whose engine named no socket: the connection's
/// 5-tuple mixed ([`wirelab_core::socket_key`], the key the TCP engine gives its own
/// sockets), so each TCP/SCTP connection is one `fq` flow as its socket would be. `seg`
/// is the transport header onwards.
fn socket_key(t: &Transmit, seg: &[u8]) -> u64 {
    let ports = seg.get(..4).map_or(0, |p| u32::from_be_bytes([p[0], p[1], p[2], p[3]]));
    wirelab_core::socket_key(t.proto, t.src, t.dst, ports)
}
