//! The wall-clock event loop. The simulator's event heap is the set of timers (links,
//! qdisc shapers, host stacks, applications, sampling); this loop pops it against a
//! monotonic clock instead of jumping from event to event, and adds one input the
//! simulator does not have: IPv4 datagrams read from TUN interfaces, injected as if the
//! TUN node had sent them. Packets that reach a TUN node are written to its interface.
//!
//! ```text
//! loop: for each datagram read from a TUN (reader threads, stamped on arrival):
//!           run the events due before its arrival, then inject it at its arrival time
//!       run every event due now (each at its own scheduled time; lag = now − due)
//!       write what reached TUN nodes
//!       wait for the next event, a datagram, or 50 ms (stop flag, commands)
//! ```
//!
//! Each event runs with its scheduled time as `now`, so the engines see the same
//! timestamps they would see in a simulation; a late event only shifts when its packets
//! reach the real world. There is no determinism: when a kernel packet arrives decides
//! the order (docs/live.md).
use crate::lag::LagHist;
use crate::netns::TunSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration as StdDuration;
use wirelab_core::Instant;
use wirelab_sim::{NodeId, Sim};

/// A monotonic clock whose zero is the start of the live run.
#[derive(Clone, Copy)]
pub struct Clock {
    t0: std::time::Instant,
}

impl Clock {
    /// Starts now.
    pub fn start() -> Clock {
        Clock { t0: std::time::Instant::now() }
    }
    /// Now, as simulator time.
    #[inline]
    pub fn now(&self) -> Instant {
        self.at(std::time::Instant::now())
    }
    /// A wall-clock instant as simulator time.
    #[inline]
    pub fn at(&self, w: std::time::Instant) -> Instant {
        Instant::from_nanos(w.saturating_duration_since(self.t0).as_nanos() as u64)
    }
}

/// Per-interface packet counters.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct TunCounters {
    /// Datagrams read from the interface (sent by the kernel).
    pub rx_packets: u64,
    /// Their bytes.
    pub rx_bytes: u64,
    /// Datagrams written to the interface (to the kernel).
    pub tx_packets: u64,
    /// Their bytes.
    pub tx_bytes: u64,
    /// Read datagrams that were not IPv4 (dropped).
    pub not_ipv4: u64,
    /// Read datagrams with no route from the TUN node (dropped).
    pub no_route: u64,
    /// Failed writes.
    pub write_errors: u64,
}

/// Why the loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ended {
    /// The scenario's duration elapsed.
    Duration,
    /// Every `run` command exited.
    Commands,
    /// SIGINT/SIGTERM (or the caller's stop request).
    Signal,
    /// A TUN interface failed.
    Error,
}

/// What the loop measured.
pub struct LoopStats {
    /// Event lag: wall time when an event ran minus its scheduled time.
    pub event_lag: LagHist,
    /// TUN input lag: wall time when a read datagram entered the topology minus its read time.
    pub input_lag: LagHist,
    /// Per TUN interface.
    pub tun: Vec<TunCounters>,
    /// How it ended.
    pub ended: Ended,
    /// Simulator time at the end.
    pub end: Instant,
    /// Wall-clock stalls: waits that overslept their deadline by more than 1 ms.
    pub oversleeps: u64,
    /// An interface error, if one ended the run.
    pub error: Option<String>,
}

enum Msg {
    Packet(usize, std::time::Instant, Vec<u8>),
    Failed(usize, String),
}

/// Reader threads, one per TUN interface: a blocking read (poll with a 100 ms timeout, so
/// they notice the stop flag) stamped with the wall clock on arrival.
pub struct Readers {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    rx: mpsc::Receiver<Msg>,
}

impl Readers {
    /// Starts one thread per interface of `tuns`.
    pub fn start(tuns: &TunSet) -> Readers {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let threads = tuns
            .ifaces
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let (dev, tx, stop) = (Arc::clone(&t.dev), tx.clone(), Arc::clone(&stop));
                std::thread::Builder::new()
                    .name(format!("tun-{}", t.node_name))
                    .spawn(move || {
                        let mut buf = vec![0u8; 65536];
                        while !stop.load(Ordering::Relaxed) {
                            match dev.recv_timeout(&mut buf, StdDuration::from_millis(100)) {
                                Ok(n) => {
                                    if tx.send(Msg::Packet(i, std::time::Instant::now(), buf[..n].to_vec())).is_err() {
                                        return;
                                    }
                                }
                                Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted) => {}
                                Err(e) => {
                                    let _ = tx.send(Msg::Failed(i, e.to_string()));
                                    return;
                                }
                            }
                        }
                    })
                    .expect("spawn reader thread")
            })
            .collect();
        Readers { stop, threads, rx }
    }

    /// Stops and joins the threads (they hold the devices).
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Events run between two looks at the clock while catching up.
const CLOCK_EVERY: u32 = 32;
/// Longest wait: the stop flag and the commands are checked at least this often.
const MAX_WAIT: StdDuration = StdDuration::from_millis(50);

/// The live run's real side: its TUN interfaces, their reader threads, and the simulator
/// node of each interface (`nodes[i]` for `tuns.ifaces[i]`).
pub struct Io<'a> {
    /// Interfaces.
    pub tuns: &'a TunSet,
    /// Their readers.
    pub readers: &'a Readers,
    /// Simulator node per interface.
    pub nodes: &'a [NodeId],
}

/// Runs `sim` against `clock` until `end`, `done()` (commands finished) or `stop()`.
pub fn run_loop(sim: &mut Sim, io: &Io, clock: Clock, end: Instant, stop: &dyn Fn() -> bool, done: &mut dyn FnMut() -> bool) -> LoopStats {
    let (tuns, readers, nodes) = (io.tuns, io.readers, io.nodes);
    let mut st = LoopStats {
        event_lag: LagHist::default(),
        input_lag: LagHist::default(),
        tun: vec![TunCounters::default(); tuns.ifaces.len()],
        ended: Ended::Duration,
        end,
        oversleeps: 0,
        error: None,
    };
    let node_to_tun = |n: NodeId| nodes.iter().position(|&x| x == n);
    let mut out = Vec::new();
    sim.start();
    loop {
        let now = clock.now();
        if now >= end {
            st.ended = Ended::Duration;
            break;
        }
        run_due(sim, &clock, now, &mut st.event_lag);
        flush(sim, tuns, &mut out, &mut st.tun, &node_to_tun);
        if stop() {
            st.ended = Ended::Signal;
            break;
        }
        if done() {
            st.ended = Ended::Commands;
            break;
        }
        // wait for the next event or a datagram
        let wall = clock.now();
        let deadline = sim.next_event_time().unwrap_or(end).min(end).min(wall + wirelab_core::Duration::from_nanos(MAX_WAIT.as_nanos() as u64));
        let timeout = StdDuration::from_nanos(deadline.saturating_since(wall).as_nanos());
        let mut msg = match readers.rx.recv_timeout(timeout) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => {
                if clock.now().saturating_since(deadline).as_nanos() > 1_000_000 {
                    st.oversleeps += 1;
                }
                None
            }
            Err(RecvTimeoutError::Disconnected) => None,
        };
        while let Some(m) = msg.take() {
            match m {
                Msg::Packet(i, t_rx, data) => {
                    let t = clock.at(t_rx).max(sim.now());
                    // what was due before the datagram arrived runs first
                    run_due(sim, &clock, t, &mut st.event_lag);
                    let c = &mut st.tun[i];
                    c.rx_packets += 1;
                    c.rx_bytes += data.len() as u64;
                    match sim.inject(nodes[i], t, data) {
                        Ok(()) => {}
                        Err(wirelab_sim::InjectError::NotIpv4) => c.not_ipv4 += 1,
                        Err(wirelab_sim::InjectError::NoRoute) => c.no_route += 1,
                    }
                    st.input_lag.record(clock.now().saturating_since(t).as_nanos());
                }
                Msg::Failed(i, e) => {
                    st.error = Some(format!("TUN interface of node `{}`: {e}", tuns.ifaces[i].node_name));
                    st.ended = Ended::Error;
                }
            }
            msg = readers.rx.try_recv().ok();
        }
        if st.ended == Ended::Error {
            break;
        }
    }
    st.end = clock.now().min(end).max(sim.now());
    flush(sim, tuns, &mut out, &mut st.tun, &node_to_tun);
    st
}

/// Runs every event due at or before `until`, recording how late each ran.
fn run_due(sim: &mut Sim, clock: &Clock, until: Instant, lag: &mut LagHist) {
    let mut now = clock.now();
    let mut k = 0u32;
    while let Some(t) = sim.step(until) {
        k += 1;
        if k % CLOCK_EVERY == 0 {
            now = clock.now();
        }
        lag.record(now.saturating_since(t).as_nanos());
    }
}

/// Writes the datagrams that reached TUN nodes to their interfaces.
fn flush(sim: &mut Sim, tuns: &TunSet, out: &mut Vec<(NodeId, Vec<u8>)>, ctr: &mut [TunCounters], node_to_tun: &dyn Fn(NodeId) -> Option<usize>) {
    sim.drain_external(out);
    for (n, data) in out.drain(..) {
        if let Some(i) = node_to_tun(n) {
            match tuns.ifaces[i].dev.send(&data) {
                Ok(_) => {
                    ctr[i].tx_packets += 1;
                    ctr[i].tx_bytes += data.len() as u64;
                }
                Err(_) => ctr[i].write_errors += 1,
            }
        }
        sim.recycle_buf(data);
    }
}
