//! The interpreter: runs a parsed script against a [`TcpEndpoint`] on a virtual clock.
//!
//! It follows packetdrill's `run.c` and `run_packet.c`: relative times are relative to
//! "now" when the event starts (or to the previous event's script time for back-to-back
//! inbound packets, `adjust_relative_event_times()`); inbound packets, system calls,
//! commands and code blocks wait for their time (`wait_for_event()`) and are late if the
//! clock is already past it; outbound packets are taken from what the stack sent, in
//! order, skipping packets of other connections, aggregated until the script's payload
//! length as packetdrill does for TSO/GSO (`do_outbound_script_packet()`), mapped into
//! script space and checked field by field, then in time with the tolerance
//! (`verify_time()`). The endpoint's timers run whenever the clock moves.
use crate::ast::*;
use crate::code::{CodeError, Interp};
use crate::packet::{fl, tcp_headers, verify, Seg};
use crate::shell::{self, Effect};
use crate::{Options, Stop};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::PathBuf;
use wirelab_core::{Duration, Instant, Rng, SockEvent, HEADROOM};
use wirelab_tcp::{SockOpt, SocketId, TcpConfig, TcpEndpoint};

/// Live time of script time 0: a quarter of a millisecond into a jiffy, as packetdrill's
/// `schedule_start_time_usecs()` waits for.
const START_NS: u64 = 250_000;
/// How long an interpreter wait may last before it is reported as a hang (packetdrill's
/// runner would be killed by its 20 s timeout).
pub(crate) const HANG_LIMIT: Duration = Duration::from_secs(30);

/// A packet the stack sent.
pub(crate) struct Sent {
    pub time: Instant,
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    pub tos: u8,
    pub bytes: Vec<u8>,
}

/// packetdrill's `enum socket_state_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SockState {
    New,
    PassiveListening,
    PassivePacketReceived,
    PassiveSynackSent,
    PassiveSynackAcked,
    ActiveConnecting,
    ActiveSynSent,
    ActiveSynAcked,
}

/// packetdrill's `struct socket`: the script's view of one connection.
pub(crate) struct PdSock {
    pub state: SockState,
    /// The engine's listener or connection.
    pub engine: Option<SocketId>,
    pub listener: bool,
    pub local: Option<SocketAddrV4>,
    pub remote: Option<SocketAddrV4>,
    pub script_local_isn: u32,
    pub live_local_isn: u32,
    pub remote_isn: u32,
    pub ts_map: HashMap<u32, u32>,
    pub first_ts: Option<(u32, u32)>,
    /// Options set before the engine object existed (applied at listen/connect).
    pub pre_opts: Vec<SockOpt>,
    pub user_mss: u32,
    pub sndbuf: Option<u32>,
    pub rcvbuf: Option<u32>,
    pub nodelay: bool,
    pub tos: u8,
    pub so_error: i64,
    pub connecting: bool,
}

impl PdSock {
    pub fn new(state: SockState) -> Self {
        PdSock {
            state,
            engine: None,
            listener: false,
            local: None,
            remote: None,
            script_local_isn: 0,
            live_local_isn: 0,
            remote_isn: 0,
            ts_map: HashMap::new(),
            first_ts: None,
            pre_opts: Vec::new(),
            user_mss: 0,
            sndbuf: None,
            rcvbuf: None,
            nodelay: false,
            tos: 0,
            so_error: 0,
            connecting: false,
        }
    }
}

/// A script file descriptor.
pub(crate) struct Fd {
    pub sock: usize,
    pub nonblock: bool,
    pub shut_rd: bool,
}

/// A `%{ }%` block with the `tcp_info` snapshot taken at its time.
struct CodeFrag {
    line: u32,
    text: String,
    vars: Vec<(&'static str, i128)>,
}

/// The interpreter state.
pub(crate) struct Runner<'a> {
    pub name: String,
    pub dir: PathBuf,
    pub opts: &'a Options,
    pub tolerance_us: i64,
    pub tolerance_pct: f64,
    pub ts_tick_us: u32,
    pub strict_segments: bool,
    pub local_ip: Ipv4Addr,
    pub remote_ip: Ipv4Addr,
    pub bind_port: u16,
    pub connect_port: u16,
    pub tcp_cfg: TcpConfig,
    saved_cfg: Option<TcpConfig>,
    /// `tc qdisc … pfifo limit 0`: the engine's transmissions fail locally.
    local_drop: bool,
    pub ep: Option<TcpEndpoint>,
    pub now: Instant,
    pub queue: VecDeque<Sent>,
    pub socks: Vec<PdSock>,
    pub sut: Option<usize>,
    pub fds: BTreeMap<i64, Fd>,
    pub pending: Option<crate::syscall::Pending>,
    /// Engine sockets that had an event since the pending call last tried.
    pub woken: Vec<SocketId>,
    /// A failure of a background (`...`) call, reported after the current event.
    pub deferred: Option<Stop>,
    code: Vec<CodeFrag>,
    pub notes: Vec<String>,
    /// Script time (µs) of the previous event and whether it was an inbound packet.
    pub last_event: Option<(i64, bool)>,
    pub ephemeral: u16,
    buf: Vec<u8>,
    pub printed: Vec<String>,
    pub trace: Vec<String>,
}

impl<'a> Runner<'a> {
    pub fn new(name: String, dir: PathBuf, opts: &'a Options, tcp_cfg: TcpConfig) -> Self {
        Runner {
            name,
            dir,
            opts,
            tolerance_us: 4000,
            tolerance_pct: 12.5,
            ts_tick_us: 0,
            strict_segments: false,
            local_ip: Ipv4Addr::new(192, 168, 0, 1),
            remote_ip: Ipv4Addr::new(192, 0, 2, 1),
            bind_port: 8080,
            connect_port: 8080,
            tcp_cfg,
            saved_cfg: None,
            local_drop: false,
            ep: None,
            now: Instant::from_nanos(START_NS),
            queue: VecDeque::new(),
            socks: Vec::new(),
            sut: None,
            fds: BTreeMap::new(),
            pending: None,
            woken: Vec::new(),
            deferred: None,
            code: Vec::new(),
            notes: Vec::new(),
            last_event: None,
            ephemeral: 40000,
            buf: Vec::with_capacity(2048),
            printed: Vec::new(),
            trace: Vec::new(),
        }
    }

    /// Script-relative µs of a live instant.
    pub fn us(&self, t: Instant) -> i64 {
        (t.as_nanos() as i64 - START_NS as i64).div_euclid(1000)
    }
    /// The live instant of script time `us`.
    pub fn inst(&self, us: i64) -> Instant {
        Instant::from_nanos((START_NS as i64).saturating_add(us.max(0).saturating_mul(1000)) as u64)
    }
    pub fn now_us(&self) -> i64 {
        self.us(self.now)
    }

    pub fn fail(&self, line: u32, msg: impl std::fmt::Display) -> Stop {
        Stop::Fail(format!("{}:{line}: {msg}", self.name))
    }
    pub fn unsupported(&self, line: u32, msg: impl std::fmt::Display) -> Stop {
        Stop::Unsupported(format!("{}:{line}: unsupported: {msg}", self.name))
    }

    fn option(&mut self, line: u32, name: &str, val: Option<&str>) -> Result<(), Stop> {
        let num = |v: Option<&str>| -> Result<i64, Stop> {
            v.and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| Stop::Parse(format!("{}:{line}: --{name} needs an integer value", self.name)))
        };
        match name {
            "tolerance_usecs" => self.tolerance_us = num(val)?,
            "tolerance_percent" => {
                self.tolerance_pct = val
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| Stop::Parse(format!("{}:{line}: --tolerance_percent needs a number", self.name)))?
            }
            "tcp_ts_tick_usecs" => self.ts_tick_us = num(val)? as u32,
            "strict_segments" => self.strict_segments = true,
            "ip_version" if val == Some("ipv4") => {}
            "ip_version" => return Err(self.unsupported(line, format!("--ip_version={} (wirelab runs IPv4 only)", val.unwrap_or("")))),
            "local_ip" | "remote_ip" | "gateway_ip" | "netmask_ip" => {
                let ip: Ipv4Addr = val
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| self.unsupported(line, format!("--{name}={} (IPv4 addresses only)", val.unwrap_or(""))))?;
                match name {
                    "local_ip" => self.local_ip = ip,
                    "remote_ip" => self.remote_ip = ip,
                    _ => {}
                }
            }
            "bind_port" => self.bind_port = num(val)? as u16,
            "connect_port" => self.connect_port = num(val)? as u16,
            "send_omit_free" | "verbose" => {}
            "non_fatal" | "dry_run" => return Err(self.unsupported(line, format!("option --{name} (every check is fatal here)"))),
            "define" | "D" => {}
            _ => return Err(self.unsupported(line, format!("option --{name}"))),
        }
        Ok(())
    }

    /// Runs the whole script.
    pub fn run(&mut self, script: &Script) -> Result<(), Stop> {
        for (line, name, val) in &script.options {
            self.option(*line, name, val.as_deref())?;
        }
        if let Some(t) = self.opts.tolerance_usecs {
            self.tolerance_us = t;
        }
        if let Some((line, cmd)) = &script.init {
            self.command(*line, cmd, false)?;
        }
        let mut ep = TcpEndpoint::new(self.tcp_cfg.clone(), Rng::stream(self.opts.seed, "packetdrill/tcp"));
        ep.set_local_drop(self.local_drop);
        self.ep = Some(ep);
        let first = &script.events[0];
        if !matches!(first.time, EventTime::Absolute(0) | EventTime::Relative(0)) {
            return Err(self.fail(first.line, "first event should be at time 0"));
        }
        let mut last_abs: Option<i64> = None;
        for ev in &script.events {
            if let (Some(prev), EventTime::Absolute(t) | EventTime::AbsoluteRange(t, _)) = (last_abs, ev.time) {
                if t < prev {
                    return Err(self.fail(ev.line, format!("time goes backward in script from {prev} usec to {t} usec")));
                }
            }
            last_abs = match ev.time {
                EventTime::Absolute(t) | EventTime::AbsoluteRange(t, _) => Some(t),
                _ => None,
            };
            let inbound = matches!(&ev.action, Action::Packet(p) if p.dir == Direction::Inbound);
            let (t, t_end) = self.adjust(ev, inbound);
            let res = self.event(ev, t, t_end);
            if let Some(d) = self.deferred.take() {
                return Err(d);
            }
            res?;
            self.last_event = Some((t, inbound));
        }
        crate::syscall::finish(self)?;
        if let Some((line, cmd)) = &script.cleanup {
            self.command(*line, cmd, false)?;
        }
        self.run_code()
    }

    fn event(&mut self, ev: &Event, t: i64, t_end: i64) -> Result<(), Stop> {
        match &ev.action {
                Action::Packet(p) if p.dir == Direction::Inbound => {
                    self.wait_for_event(ev, t, "inbound packet")?;
                    self.inbound(ev.line, p)?;
                }
                Action::Packet(p) => self.outbound(ev, p, t, t_end)?,
                Action::Syscall(s) => crate::syscall::run(self, ev, s, t)?,
                Action::Command(c) => {
                    self.wait_for_event(ev, t, "command")?;
                    self.command(ev.line, c, true)?;
                }
                Action::Code(c) => {
                    self.wait_for_event(ev, t, "data collection for code")?;
                    self.snapshot(ev.line, c)?;
                }
            }
        Ok(())
    }

    /// `adjust_relative_event_times()`: the event's script time and range end (µs).
    fn adjust(&self, ev: &Event, inbound: bool) -> (i64, i64) {
        let offset = match self.last_event {
            Some((t, true)) if inbound => t,
            _ => self.now_us(),
        };
        match ev.time {
            EventTime::Absolute(t) => (t, t),
            EventTime::AbsoluteRange(a, b) => (a, b),
            EventTime::Relative(t) => (t.saturating_add(offset), t.saturating_add(offset)),
            EventTime::RelativeRange(a, b) => (a.saturating_add(offset), b.saturating_add(offset)),
            EventTime::Any => (offset, offset),
        }
    }

    /// `verify_time()`: Ok or the timing error text.
    pub fn verify_time(&self, time: EventTime, expected: i64, expected_end: i64, actual: i64, last: Option<i64>, what: &str) -> Result<(), String> {
        if time == EventTime::Any {
            return Ok(());
        }
        let mut tol = self.tolerance_us;
        if let Some(l) = last {
            let dynamic = (self.tolerance_pct / 100.0 * expected.saturating_sub(l) as f64) as i64;
            tol = tol.max(dynamic);
        }
        let s = |us: i64| us as f64 / 1e6;
        match time {
            EventTime::AbsoluteRange(..) | EventTime::RelativeRange(..) => {
                if actual < expected.saturating_sub(tol) || actual > expected_end.saturating_add(tol) {
                    return Err(format!(
                        "timing error: expected {what} in time range {:.6}~{:.6} sec but happened at {:.6} sec",
                        s(expected),
                        s(expected_end),
                        s(actual)
                    ));
                }
            }
            _ => {
                if actual < expected.saturating_sub(tol) || actual > expected.saturating_add(tol) {
                    return Err(format!(
                        "timing error: expected {what} at {:.6} sec but happened at {:.6} sec; tolerance {:.6} sec",
                        s(expected),
                        s(actual),
                        s(tol)
                    ));
                }
            }
        }
        Ok(())
    }

    /// `wait_for_event()` + `check_event_time()`.
    pub fn wait_for_event(&mut self, ev: &Event, t: i64, what: &str) -> Result<(), Stop> {
        let target = self.inst(t);
        if target > self.now {
            self.advance_to(target);
        }
        if self.last_event.is_some() {
            let last = self.last_event.map(|(t, _)| t);
            self.verify_time(ev.time, t, t, self.now_us(), last, what).map_err(|e| self.fail(ev.line, e))?;
        }
        Ok(())
    }

    pub fn ep(&mut self) -> &mut TcpEndpoint {
        self.ep.as_mut().expect("endpoint is created before the first event")
    }

    /// Drains what the endpoint has to say at `now`: packets and events; retries the
    /// pending blocking call if its socket had an event.
    pub fn drain(&mut self) {
        loop {
            self.drain_once();
            if !crate::syscall::poke(self) {
                break;
            }
        }
    }

    fn drain_once(&mut self) {
        let now = self.now;
        let Some(ep) = self.ep.as_mut() else { return };
        self.buf.clear();
        while let Some(t) = ep.poll_transmit(now, &mut self.buf) {
            let tcp = &self.buf[HEADROOM..];
            let (sp, dp) = (u16::from_be_bytes([tcp[0], tcp[1]]), u16::from_be_bytes([tcp[2], tcp[3]]));
            self.queue.push_back(Sent {
                time: now,
                src: SocketAddrV4::new(t.src, sp),
                dst: SocketAddrV4::new(t.dst, dp),
                tos: t.tos,
                bytes: tcp.to_vec(),
            });
        }
        while let Some((id, e)) = ep.poll_event() {
            self.woken.push(id);
            if let Some(s) = self.socks.iter_mut().find(|s| s.engine == Some(id)) {
                match e {
                    SockEvent::Reset => s.so_error = if s.connecting { 111 } else { 104 },
                    SockEvent::ConnectFailed if s.so_error == 0 => s.so_error = 110,
                    SockEvent::Connected => s.connecting = false,
                    _ => {}
                }
            }
        }
    }

    /// Runs the endpoint's timers up to `t` (inclusive) and sets the clock to `t`.
    pub fn advance_to(&mut self, t: Instant) {
        self.drain();
        while self.step(t) {}
        if t > self.now {
            self.now = t;
        }
        self.drain();
    }

    /// Fires the next timer if it is due by `limit`; false if there is none.
    pub fn step(&mut self, limit: Instant) -> bool {
        let Some(next) = self.ep.as_ref().and_then(|e| e.poll_timeout()) else { return false };
        if next > limit {
            return false;
        }
        if next > self.now {
            self.now = next;
        }
        let now = self.now;
        self.ep().handle_timeout(now);
        self.drain();
        true
    }

    fn sut_mut(&mut self) -> Option<&mut PdSock> {
        self.sut.map(|i| &mut self.socks[i])
    }

    /// `find_or_create_socket_for_script_packet()` for an inbound packet.
    fn inbound_socket(&mut self, seq: u32) -> usize {
        let listening = self.sut.is_none_or(|i| self.socks[i].state == SockState::PassiveListening);
        if listening {
            let mut s = PdSock::new(SockState::PassivePacketReceived);
            s.remote = Some(SocketAddrV4::new(self.remote_ip, self.ephemeral));
            s.local = Some(SocketAddrV4::new(self.local_ip, self.bind_port));
            s.remote_isn = seq;
            self.ephemeral = self.ephemeral.wrapping_add(1).max(1024);
            self.socks.push(s);
            self.sut = Some(self.socks.len() - 1);
        }
        self.sut.unwrap_or(0)
    }

    /// `do_inbound_script_packet()`: maps the script packet to live values and injects it.
    fn inbound(&mut self, line: u32, p: &PacketSpec) -> Result<(), Stop> {
        let idx = self.inbound_socket(p.seq);
        let mut seg = Seg::from_script(p);
        {
            let s = &mut self.socks[idx];
            if s.state == SockState::PassiveSynackSent && seg.flags & fl::ACK != 0 {
                s.state = SockState::PassiveSynackAcked;
            } else if s.state == SockState::ActiveSynSent && seg.flags & fl::SYN != 0 && seg.flags & fl::ACK != 0 {
                s.state = SockState::ActiveSynAcked;
                s.remote_isn = p.seq;
            }
        }
        let s = &self.socks[idx];
        let is_syn = seg.flags & fl::SYN != 0;
        if !is_syn {
            seg.seq = seg.seq.wrapping_add(s.remote_isn);
        }
        let ack_off = if is_syn { s.live_local_isn.wrapping_sub(s.script_local_isn) } else { s.live_local_isn };
        if seg.flags & fl::ACK != 0 {
            seg.ack = seg.ack.wrapping_add(ack_off);
        }
        seg.offset_sacks(ack_off);
        if seg.flags & fl::ACK != 0 {
            if let Some((_, ecr)) = seg.timestamp() {
                let live = match s.ts_map.get(&ecr) {
                    Some(v) => *v,
                    None => {
                        return Err(self.fail(
                            line,
                            format!(
                                "error handling packet: unable to infer live TS ecr for script TS ecr {ecr};  no matching or preceding outbound TS val"
                            ),
                        ))
                    }
                };
                seg.set_timestamp(None, Some(live));
            }
        }
        let (Some(local), Some(remote)) = (s.local, s.remote) else {
            return Err(self.fail(line, "error handling packet: no matching socket for script packet"));
        };
        let (sport, dport) = p.ports.unwrap_or((remote.port(), local.port()));
        let bytes = seg.to_wire(*remote.ip(), *local.ip(), sport, dport);
        let now = self.now;
        if self.opts.trace {
            let t = self.now_us() as f64 / 1e6;
            self.trace.push(format!("inbound injected packet: {t:9.6} {}", seg.dump(true)));
        }
        self.ep().handle_packet(now, *remote.ip(), *local.ip(), seg.tos, &bytes);
        self.drain();
        Ok(())
    }

    /// Next packet of the socket under test, running the clock up to `deadline`.
    fn sniff(&mut self, deadline: Instant) -> Option<(Sent, Seg)> {
        loop {
            while let Some(pkt) = self.queue.pop_front() {
                let Some(i) = self.sut else { continue };
                let s = &mut self.socks[i];
                let ours = s.local == Some(pkt.src) && s.remote == Some(pkt.dst);
                let tcp_syn = pkt.bytes.len() >= 14 && pkt.bytes[13] & 0x12 == 0x02;
                // find_connect_for_live_packet(): the SYN of a connect() teaches the port and ISN
                let connect_syn = s.state == SockState::ActiveSynSent && tcp_syn && s.remote == Some(pkt.dst);
                if !ours && !connect_syn {
                    continue;
                }
                if connect_syn && !ours {
                    s.local = Some(pkt.src);
                }
                if connect_syn {
                    s.live_local_isn = u32::from_be_bytes([pkt.bytes[4], pkt.bytes[5], pkt.bytes[6], pkt.bytes[7]]);
                }
                let Ok(seg) = Seg::from_wire(&pkt.bytes, pkt.tos, 64) else { continue };
                if self.opts.trace {
                    let t = self.us(pkt.time) as f64 / 1e6;
                    self.trace.push(format!("outbound sniffed packet: {t:9.6} {}", seg.dump(true)));
                }
                if self.now < pkt.time {
                    self.now = pkt.time;
                }
                return Some((pkt, seg));
            }
            if !self.step(deadline) {
                if deadline > self.now {
                    self.now = deadline;
                }
                self.drain();
                if self.queue.is_empty() {
                    return None;
                }
            }
        }
    }

    /// `tcp_convert_seq_number()`: live → script sequence space.
    fn to_script(&self, idx: usize, seg: &mut Seg) {
        let s = &self.socks[idx];
        let is_syn = seg.flags & fl::SYN != 0;
        let seq_off = if is_syn { s.live_local_isn.wrapping_sub(s.script_local_isn) } else { s.live_local_isn };
        seg.seq = seg.seq.wrapping_sub(seq_off);
        let ack_off = if is_syn { 0 } else { s.remote_isn };
        if seg.flags & fl::ACK != 0 {
            seg.ack = seg.ack.wrapping_sub(ack_off);
        }
        seg.offset_sacks(0u32.wrapping_sub(ack_off));
    }

    /// `do_outbound_script_packet()` + `verify_outbound_live_packet()`.
    fn outbound(&mut self, ev: &Event, p: &PacketSpec, t: i64, t_end: i64) -> Result<(), Stop> {
        // handle_connect_for_script_packet(): a scripted SYN of a connecting socket
        if let Some(s) = self.sut_mut() {
            if p.has('S') && !p.has('.') && s.state == SockState::ActiveConnecting {
                s.state = SockState::ActiveSynSent;
                s.script_local_isn = p.seq;
            }
            if p.has('S') && p.has('.') && s.state == SockState::PassivePacketReceived {
                s.script_local_isn = p.seq;
            }
        }
        let Some(idx) = self.sut else {
            return Err(self.fail(ev.line, "error handling packet: no matching socket for script packet"));
        };
        let script_last = self.last_event.map_or(0, |(l, _)| l);
        let wait_s = if ev.time == EventTime::Any { HANG_LIMIT.as_nanos() / 1_000_000_000 } else { ((t.max(t_end) - script_last).max(0) / 1_000_000 + 2) as u64 };
        let deadline = self.now + Duration::from_secs(wait_s);
        let script_seg = Seg::from_script(p);
        let dump_script = format!("script packet: {:9.6} {}", t as f64 / 1e6, script_seg.dump(p.win.is_some()));
        let mut frags: Vec<(Instant, Seg)> = Vec::new();
        let mut total = 0usize;
        loop {
            let Some((pkt, mut seg)) = self.sniff(deadline) else {
                return Err(self.fail(ev.line, format!("error handling packet: Timed out waiting for packet\n{dump_script}")));
            };
            {
                let s = &mut self.socks[idx];
                if s.state == SockState::PassivePacketReceived && p.has('S') && p.has('.') {
                    s.state = SockState::PassiveSynackSent;
                    s.live_local_isn = seg.seq;
                }
            }
            self.to_script(idx, &mut seg);
            if let Some((_, prev)) = frags.last() {
                let remaining_after = p.len as usize - total;
                let mut err = tcp_headers(prev, &seg, 0, false, false).err();
                if err.is_none() && seg.len < remaining_after && seg.len != prev.len {
                    err = Some(format!(
                        "fragment payload: expected {} bytes vs actual {} bytes; total payload: expected {} bytes vs actual {} bytes",
                        prev.len,
                        seg.len,
                        p.len,
                        seg.len + total
                    ));
                }
                if let Some(e) = err {
                    let mut msg = format!("error handling packet: {e}\n   {dump_script}");
                    for (k, (tm, f)) in frags.iter().chain(std::iter::once(&(pkt.time, seg.clone()))).enumerate() {
                        msg.push_str(&format!("\nactual #{k} packet: {:9.6} {}", self.us(*tm) as f64 / 1e6, f.dump(true)));
                    }
                    return Err(self.fail(ev.line, msg));
                }
            }
            total += seg.len;
            frags.push((pkt.time, seg));
            if total >= p.len as usize || self.strict_segments {
                break;
            }
        }
        // aggregate_packets(): headers of the last, sequence number and CWR of the first
        let (t_last, mut actual) = frags.last().cloned().expect("at least one fragment");
        let first = &frags[0].1;
        actual.seq = first.seq;
        actual.flags = (actual.flags & !fl::CWR) | (first.flags & fl::CWR);
        actual.len = total;
        actual.payload_nonzero = frags.iter().any(|(_, f)| f.payload_nonzero);
        let actual_us = self.us(t_last);
        // map_outbound_live_packet(): TS val into script space
        if let (Some((sv, _)), Some((av, _))) = (script_seg.timestamp(), actual.timestamp()) {
            let s = &mut self.socks[idx];
            s.ts_map.insert(sv, av);
            let (fs, fa) = *s.first_ts.get_or_insert((sv, av));
            actual.set_timestamp(Some(fs.wrapping_add(av.wrapping_sub(fa))), None);
        }
        let dumps = format!("{dump_script}\nactual packet: {:9.6} {}", actual_us as f64 / 1e6, actual.dump(true));
        if total != p.len as usize {
            return Err(self.fail(
                ev.line,
                format!("error handling packet: live packet payload: expected {} bytes vs actual {total} bytes\n{dumps}", p.len),
            ));
        }
        let ts_tol = (self.ts_tick_us > 0).then(|| {
            let dynamic = (self.tolerance_pct / 100.0 * t as f64) as i64;
            (self.ts_tick_us, self.tolerance_us.max(dynamic))
        });
        let last = self.last_event.map(|(l, _)| l);
        let r = verify(p, &script_seg, &actual, ts_tol)
            .and_then(|_| self.verify_time(ev.time, t, t_end, actual_us, last, "outbound packet"));
        r.map_err(|e| self.fail(ev.line, format!("error handling packet: {e}\n{dumps}")))
    }

    /// A back-quoted command. `mid_script`: at an event time (the endpoint exists).
    fn command(&mut self, line: u32, cmd: &str, mid_script: bool) -> Result<(), Stop> {
        let effects = shell::interpret(cmd, &self.dir).map_err(|e| self.unsupported(line, e.0))?;
        for e in effects {
            match e {
                Effect::Note(n) => self.notes.push(format!("line {line}: {n}")),
                Effect::LocalDrop(on) => {
                    self.local_drop = on;
                    if let Some(ep) = self.ep.as_mut() {
                        ep.set_local_drop(on);
                    }
                }
                Effect::Sysctl(k, v) => {
                    let mut cfg = self.tcp_cfg.clone();
                    if self.saved_cfg.is_none() {
                        self.saved_cfg = Some(self.tcp_cfg.clone());
                    }
                    match shell::apply_sysctl(&mut cfg, &k, &v) {
                        Ok(Some(note)) => self.notes.push(format!("line {line}: {note}")),
                        Ok(None) => {}
                        Err(e) => return Err(self.unsupported(line, format!("sysctl {k}={v}: {e}"))),
                    }
                    if mid_script && cfg != self.tcp_cfg {
                        return Err(self.unsupported(line, format!("sysctl {k}={v} while the script runs (the engine's configuration is fixed once it starts)")));
                    }
                    self.tcp_cfg = cfg;
                }
                Effect::CubicParam(p, v) => {
                    let mut cfg = self.tcp_cfg.clone();
                    let n: Option<u32> = v.trim().parse().ok();
                    let c = &mut cfg.cubic;
                    let ok = match (p.as_str(), n) {
                        ("beta", Some(n)) => {
                            c.beta = n;
                            true
                        }
                        ("bic_scale", Some(n)) => {
                            c.bic_scale = n;
                            true
                        }
                        ("fast_convergence", Some(n)) => {
                            c.fast_convergence = n != 0;
                            true
                        }
                        ("tcp_friendliness", Some(n)) => {
                            c.tcp_friendliness = n != 0;
                            true
                        }
                        ("hystart", Some(n)) => {
                            c.hystart = n != 0;
                            true
                        }
                        ("hystart_detect", Some(n)) if n <= 3 => {
                            c.hystart_detect = n as u8;
                            true
                        }
                        ("hystart_low_window", Some(n)) => {
                            c.hystart_low_window = n;
                            true
                        }
                        ("hystart_ack_delta_us", Some(n)) => {
                            c.hystart_ack_delta_us = n;
                            true
                        }
                        _ => false,
                    };
                    if !ok {
                        return Err(self.unsupported(line, format!("tcp_cubic parameter {p}={v}")));
                    }
                    if mid_script && cfg != self.tcp_cfg {
                        return Err(self.unsupported(line, format!("tcp_cubic parameter {p} changed while the script runs")));
                    }
                    self.tcp_cfg = cfg;
                }
                Effect::Restore => {
                    if let Some(saved) = self.saved_cfg.take() {
                        if mid_script && saved != self.tcp_cfg {
                            return Err(self.unsupported(line, "restoring sysctls while the script runs"));
                        }
                        self.tcp_cfg = saved;
                    }
                }
            }
        }
        Ok(())
    }

    /// The engine connection the script's `%{ }%` blocks look at.
    pub fn sut_conn(&self) -> Option<SocketId> {
        let s = &self.socks[self.sut?];
        if let Some(e) = s.engine.filter(|_| !s.listener) {
            return Some(e);
        }
        let ep = self.ep.as_ref()?;
        ep.sockets().find(|&id| ep.addrs(id).is_some_and(|(l, r)| Some(l) == s.local && Some(r) == s.remote))
    }

    /// `run_code_event()`: snapshots `tcp_info` now.
    fn snapshot(&mut self, line: u32, text: &str) -> Result<(), Stop> {
        let now = self.now;
        let info = self.sut_conn().and_then(|id| self.ep.as_ref()?.info_at(now, id));
        let Some(i) = info else {
            return Err(self.fail(line, "runtime error in code: no socket to use for code"));
        };
        let vars = crate::info::tcpi_vars(&i);
        self.code.push(CodeFrag { line, text: text.to_string(), vars });
        Ok(())
    }

    /// `code_execute()`: all blocks in order, one namespace.
    fn run_code(&mut self) -> Result<(), Stop> {
        let mut it = Interp::new();
        let frags = std::mem::take(&mut self.code);
        for f in &frags {
            for (n, v) in &f.vars {
                it.set(n, *v);
            }
            let r = it.run(&f.text);
            self.printed.append(&mut it.printed);
            match r {
                Ok(()) => {}
                Err(CodeError::Assertion(m)) | Err(CodeError::Runtime(m)) => {
                    return Err(self.fail(f.line, format!("error in Python code\n{m}")));
                }
                Err(CodeError::Unsupported(m)) => return Err(self.unsupported(f.line, m)),
            }
        }
        Ok(())
    }
}
