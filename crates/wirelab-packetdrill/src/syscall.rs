//! System calls against the engine, with packetdrill's `run_system_call.c` semantics:
//! a call written `...T` blocks in the background and must return at time T while the
//! script goes on; any other call runs in the foreground (if it would block, the clock
//! runs until it can finish). Results and errno values are checked as `end_syscall()`
//! does, and errors read like packetdrill's (`runtime error in write call: …`).
use crate::ast::{Event, EventTime, Expr, SyscallSpec};
use crate::run::{Fd, PdSock, Runner, SockState, HANG_LIMIT};
use crate::symbols::{errno, strerror, symbol};
use crate::Stop;
use std::net::SocketAddrV4;
use wirelab_core::Duration;
use wirelab_tcp::{SockError, SocketId, TcpState};

const O_NONBLOCK: i64 = 0x800;
const MSG_DONTWAIT: i64 = 0x40;
const MSG_MORE: i64 = 0x8000;
const MSG_PEEK: i64 = 0x2;
/// Largest single engine write: beyond any send buffer the engine allows.
const MAX_WRITE: usize = 64 << 20;

/// What a blocked call waits for.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Accept { listener: SocketId, result_fd: i64 },
    Connect { sock: usize, id: SocketId },
    /// `more`: `MSG_MORE` (the engine's `send_more`).
    Write { id: SocketId, total: usize, done: usize, more: bool },
    Read { id: SocketId, max: usize, shut_rd: bool },
}

impl Op {
    fn socket(&self) -> SocketId {
        match self {
            Op::Accept { listener, .. } => *listener,
            Op::Connect { id, .. } | Op::Write { id, .. } | Op::Read { id, .. } => *id,
        }
    }
}

/// A `...T` call in progress (packetdrill's syscall thread).
pub(crate) struct Pending {
    line: u32,
    spec: SyscallSpec,
    time: EventTime,
    start_us: i64,
    end_us: i64,
    op: Op,
}

fn errno_of(e: SockError) -> i64 {
    match e {
        SockError::InvalidSocket => 9,
        SockError::InvalidState | SockError::BadOption => 22,
        SockError::NotConnected => 107,
        SockError::WouldBlock => 11,
        SockError::BrokenPipe => 32,
        SockError::ConnectionReset => 104,
        SockError::ConnectionRefused => 111,
        SockError::TimedOut => 110,
        SockError::AddrInUse => 98,
        SockError::AddrNotAvailable => 99,
    }
}

/// Integer value of an argument (numbers, symbols, `A|B`, `[n]`).
fn int(r: &Runner, line: u32, e: &Expr) -> Result<i64, Stop> {
    match e {
        Expr::Int(i) => Ok(*i),
        Expr::Word(w) => symbol(w).ok_or_else(|| r.unsupported(line, format!("unknown symbol `{w}`"))),
        Expr::Or(v) => v.iter().try_fold(0, |acc, x| Ok(acc | int(r, line, x)?)),
        Expr::List(v) if v.len() == 1 => int(r, line, &v[0]),
        _ => Err(r.unsupported(line, format!("expected an integer argument, got {e:?}"))),
    }
}

fn arg<'s>(r: &Runner, line: u32, s: &'s SyscallSpec, n: usize) -> Result<&'s Expr, Stop> {
    s.args.get(n).ok_or_else(|| r.fail(line, format!("runtime error in {} call: expected at least {} args but got {}", s.name, n + 1, s.args.len())))
}

fn nargs(r: &Runner, line: u32, s: &SyscallSpec, n: &[usize]) -> Result<(), Stop> {
    if !n.contains(&s.args.len()) {
        return Err(r.fail(line, format!("runtime error in {} call: expected {} args but got {}", s.name, n[0], s.args.len())));
    }
    Ok(())
}

/// Runs one system-call event.
pub(crate) fn run(r: &mut Runner, ev: &Event, s: &SyscallSpec, t: i64) -> Result<(), Stop> {
    let blocking = s.end.is_some();
    let waited = await_idle(r);
    if blocking && !waited {
        return Err(r.fail(ev.line, format!("runtime error in {} call: blocking system call while another blocking system call is already in progress", s.name)));
    }
    r.wait_for_event(ev, t, "system call start")?;
    let end_us = match (s.end, ev.time) {
        (Some(e), EventTime::Relative(rel)) => e.saturating_add(t - rel),
        (Some(e), _) => e,
        (None, _) => t,
    };
    let started = start(r, ev.line, s);
    r.drain();
    match started? {
        Started::Done(ret, err, post) => {
            if blocking {
                check_end_time(r, ev.line, ev.time, end_us, t, r.now_us())?;
            }
            check_result(r, ev.line, s, ret, err)?;
            post_check(r, ev.line, s, post)
        }
        Started::Blocked(op) => {
            let mut p = Pending { line: ev.line, spec: s.clone(), time: ev.time, start_us: t, end_us, op };
            if blocking {
                r.pending = Some(p);
                return Ok(());
            }
            // a foreground call that blocks: only the stack's timers can release it
            let limit = r.now + HANG_LIMIT;
            loop {
                if let Some((ret, err)) = try_op(r, &mut p.op) {
                    r.drain();
                    return check_result(r, ev.line, s, ret, err);
                }
                if !r.step(limit) {
                    return Err(r.fail(ev.line, format!("runtime error in {} call: the call blocks and nothing the script does later can release it", s.name)));
                }
            }
        }
    }
}

/// `await_idle_thread()`: lets a pending `...` call finish, waiting at most 1 s.
fn await_idle(r: &mut Runner) -> bool {
    if r.pending.is_none() {
        return true;
    }
    let limit = r.now + Duration::from_secs(1);
    loop {
        poke(r);
        if r.pending.is_none() {
            return true;
        }
        if !r.step(limit) {
            if limit > r.now {
                r.now = limit;
            }
            poke(r);
            return r.pending.is_none();
        }
    }
}

/// At the end of the script: a call still blocked is an error.
pub(crate) fn finish(r: &mut Runner) -> Result<(), Stop> {
    if !await_idle(r) {
        let line = r.pending.as_ref().map_or(0, |p| p.line);
        return Err(r.fail(line, "runtime error: exiting while a blocking system call is in progress"));
    }
    if let Some(e) = r.deferred.take() {
        return Err(e);
    }
    Ok(())
}

/// Retries the pending call if its socket had an event; records a failure in
/// `r.deferred` (packetdrill's syscall thread dies at that moment).
pub(crate) fn poke(r: &mut Runner) -> bool {
    let Some(mut p) = r.pending.take() else {
        r.woken.clear();
        return false;
    };
    let sock = p.op.socket();
    let woke = r.woken.contains(&sock);
    r.woken.clear();
    if woke {
        if let Some((ret, err)) = try_op(r, &mut p.op) {
            let now_us = r.now_us();
            let res = check_end_time(r, p.line, p.time, p.end_us, p.start_us, now_us)
                .and_then(|_| check_result(r, p.line, &p.spec, ret, err));
            if let Err(e) = res {
                if r.deferred.is_none() {
                    r.deferred = Some(e);
                }
            }
            return true;
        }
    }
    r.pending = Some(p);
    false
}

fn check_end_time(r: &Runner, line: u32, time: EventTime, end_us: i64, start_us: i64, actual: i64) -> Result<(), Stop> {
    r.verify_time(time, end_us, 0, actual, Some(start_us), "system call return").map_err(|e| r.fail(line, e))
}

/// `end_syscall()`: result and errno.
fn check_result(r: &Runner, line: u32, s: &SyscallSpec, actual: i64, actual_errno: i64) -> Result<(), Stop> {
    let expected = int(r, line, &s.result)?;
    let fd_mode = matches!(s.name.as_str(), "socket" | "accept");
    let ok = if fd_mode && expected >= 0 { actual >= 0 } else { actual == expected };
    if !ok {
        let msg = if fd_mode && expected >= 0 {
            format!("Expected non-negative result but got {actual} with errno {actual_errno} ({})", strerror(actual_errno))
        } else {
            format!("Expected result {expected} but got {actual} with errno {actual_errno} ({})", strerror(actual_errno))
        };
        return Err(r.fail(line, format!("runtime error in {} call: {msg}", s.name)));
    }
    if let Some(e) = &s.errno {
        let want = errno(e).ok_or_else(|| r.unsupported(line, format!("unknown errno symbol `{e}`")))?;
        if want != actual_errno {
            return Err(r.fail(
                line,
                format!(
                    "runtime error in {} call: Expected errno {want} ({}) but got {actual_errno} ({})",
                    s.name,
                    strerror(want),
                    strerror(actual_errno)
                ),
            ));
        }
    }
    Ok(())
}

/// What to check or record once a call has returned as expected.
pub(crate) enum Post {
    None,
    GetOpt { expected: Expr, optlen: Expr, actual: Result<i64, String> },
    /// `ioctl()`'s int result, as `syscall_ioctl()` checks it.
    Ioctl { expected: Expr, actual: i64 },
}

fn post_check(r: &mut Runner, line: u32, s: &SyscallSpec, post: Post) -> Result<(), Stop> {
    match post {
        Post::None => Ok(()),
        Post::GetOpt { expected, optlen, actual } => {
            let len = int(r, line, &optlen)?;
            match (&expected, actual) {
                (Expr::Str(want), Err(got)) => {
                    if *want != got {
                        return Err(r.fail(line, format!("runtime error in {} call: Bad getsockopt optval: expected: '{want}' actual: '{got}'", s.name)));
                    }
                    Ok(())
                }
                (_, Ok(v)) => {
                    if len != 4 {
                        return Err(r.fail(line, format!("runtime error in {} call: Bad getsockopt optlen: expected: {len} actual: 4", s.name)));
                    }
                    let want = int(r, line, &expected)?;
                    if want != v {
                        return Err(r.fail(line, format!("runtime error in {} call: Bad getsockopt optval: expected: {want} actual: {v}", s.name)));
                    }
                    Ok(())
                }
                _ => Err(r.unsupported(line, "getsockopt value type")),
            }
        }
        Post::Ioctl { expected, actual } => {
            let want = int(r, line, &expected)?;
            if want != actual {
                return Err(r.fail(line, format!("runtime error in ioctl call: Bad ioctl optval: expected: {want} actual: {actual}")));
            }
            Ok(())
        }
    }
}

enum Started {
    Done(i64, i64, Post),
    Blocked(Op),
}

fn ok(v: i64) -> Result<Started, Stop> {
    Ok(Started::Done(v, 0, Post::None))
}
fn err(e: i64) -> Result<Started, Stop> {
    Ok(Started::Done(-1, e, Post::None))
}

/// The script fd's entry.
fn fd<'r>(r: &'r Runner, line: u32, s: &SyscallSpec, e: &Expr) -> Result<(i64, &'r Fd), Stop> {
    let n = int(r, line, e)?;
    match r.fds.get(&n) {
        Some(f) => Ok((n, f)),
        None => Err(r.fail(line, format!("runtime error in {} call: bad script fd {n}", s.name))),
    }
}

/// A byte count argument; negative counts are `EFAULT` in Linux (a huge `size_t`).
fn count(r: &Runner, line: u32, e: &Expr) -> Result<Option<usize>, Stop> {
    let n = int(r, line, e)?;
    Ok(usize::try_from(n).ok())
}

/// Sum of the lengths in an iovec list `[{..., 40}, {..., 100}]`.
fn iov_len(r: &Runner, line: u32, e: &Expr) -> Result<usize, Stop> {
    let Expr::List(v) = e else { return Err(r.unsupported(line, "expected an iovec list")) };
    let mut n = 0;
    for x in v {
        match x {
            Expr::Brace(f) if f.len() == 2 => n += int(r, line, &f[1])?.clamp(0, i32::MAX as i64) as usize,
            _ => return Err(r.unsupported(line, "iovec entries must be {..., LEN}")),
        }
    }
    Ok(n)
}

fn start(r: &mut Runner, line: u32, s: &SyscallSpec) -> Result<Started, Stop> {
    match s.name.as_str() {
        "socket" => {
            nargs(r, line, s, &[3])?;
            let want = int(r, line, &s.result)?;
            let ty = int(r, line, arg(r, line, s, 1)?)?;
            if ty & 0xf != 1 {
                return Err(r.unsupported(line, "only SOCK_STREAM sockets are supported"));
            }
            if want < 0 {
                return Err(r.unsupported(line, "socket() expected to fail"));
            }
            if r.fds.contains_key(&want) {
                return Err(r.fail(line, format!("runtime error in socket call: duplicate fd {want} in script")));
            }
            r.socks.push(PdSock::new(SockState::New));
            r.sut = Some(r.socks.len() - 1);
            r.fds.insert(want, Fd { sock: r.socks.len() - 1, nonblock: ty & O_NONBLOCK != 0, shut_rd: false });
            ok(want)
        }
        "bind" => {
            nargs(r, line, s, &[3])?;
            fd(r, line, s, &s.args[0])?;
            if s.args[1] != Expr::Ellipsis {
                return Err(r.unsupported(line, "bind() to an explicit address (use ...)"));
            }
            ok(0)
        }
        "listen" => {
            nargs(r, line, s, &[2])?;
            let (_, f) = fd(r, line, s, &s.args[0])?;
            let si = f.sock;
            let backlog = int(r, line, &s.args[1])?.clamp(0, u32::MAX as i64) as u32;
            let addr = SocketAddrV4::new(r.local_ip, r.bind_port);
            let l = match r.ep().listen(addr, backlog) {
                Ok(l) => l,
                Err(e) => return err(errno_of(e)),
            };
            let opts = std::mem::take(&mut r.socks[si].pre_opts);
            for o in opts {
                let _ = r.ep().set_option(l, o);
            }
            let sk = &mut r.socks[si];
            sk.engine = Some(l);
            sk.listener = true;
            sk.state = SockState::PassiveListening;
            sk.local = Some(addr);
            ok(0)
        }
        "accept" => {
            nargs(r, line, s, &[3])?;
            let (_, f) = fd(r, line, s, &s.args[0])?;
            let (si, nonblock) = (f.sock, f.nonblock);
            let Some(l) = r.socks[si].engine.filter(|_| r.socks[si].listener) else { return err(22) };
            let result_fd = int(r, line, &s.result)?;
            let mut op = Op::Accept { listener: l, result_fd };
            match try_op(r, &mut op) {
                Some((ret, e)) => Ok(Started::Done(ret, e, Post::None)),
                None if nonblock => err(11),
                None => Ok(Started::Blocked(op)),
            }
        }
        "connect" => connect(r, line, s),
        "write" | "send" | "sendto" | "sendmsg" | "writev" => write(r, line, s),
        "read" | "recv" | "recvfrom" | "readv" => read(r, line, s),
        "close" => {
            nargs(r, line, s, &[1])?;
            let (n, f) = fd(r, line, s, &s.args[0])?;
            let si = f.sock;
            r.fds.remove(&n);
            if let Some(id) = r.socks[si].engine {
                let now = r.now;
                r.ep().close(now, id);
                r.drain();
            }
            ok(0)
        }
        "shutdown" => {
            nargs(r, line, s, &[2])?;
            let (n, f) = fd(r, line, s, &s.args[0])?;
            let si = f.sock;
            let how = int(r, line, &s.args[1])?;
            if !(0..=2).contains(&how) {
                return err(22);
            }
            let Some(id) = r.socks[si].engine.filter(|_| !r.socks[si].listener) else { return err(107) };
            if how != 1 {
                if let Some(f) = r.fds.get_mut(&n) {
                    f.shut_rd = true;
                }
            }
            if how != 0 {
                let now = r.now;
                if let Err(e) = r.ep().shutdown_write(now, id) {
                    return err(errno_of(e));
                }
                r.drain();
            }
            ok(0)
        }
        "fcntl" => {
            nargs(r, line, s, &[2, 3])?;
            let (n, _) = fd(r, line, s, &s.args[0])?;
            let cmd = int(r, line, &s.args[1])?;
            match (cmd, s.args.get(2)) {
                (3, None) => {
                    let nb = r.fds[&n].nonblock;
                    ok(2 | if nb { O_NONBLOCK } else { 0 })
                }
                (4, Some(a)) => {
                    let v = int(r, line, a)?;
                    if let Some(f) = r.fds.get_mut(&n) {
                        f.nonblock = v & O_NONBLOCK != 0;
                    }
                    ok(0)
                }
                _ => Err(r.unsupported(line, "fcntl command (F_GETFL and F_SETFL are supported)")),
            }
        }
        "setsockopt" => {
            nargs(r, line, s, &[5])?;
            crate::sockopt::setsockopt(r, line, s)
                .map(|(ret, e)| Started::Done(ret, e, Post::None))
        }
        "getsockopt" => {
            nargs(r, line, s, &[5])?;
            let (ret, e, actual) = crate::sockopt::getsockopt(r, line, s)?;
            Ok(Started::Done(ret, e, Post::GetOpt { expected: s.args[3].clone(), optlen: s.args[4].clone(), actual }))
        }
        "ioctl" => {
            // syscall_ioctl(): SIOCINQ, SIOCOUTQ, SIOCOUTQNSD with an [int] result
            nargs(r, line, s, &[3])?;
            let (_, f) = fd(r, line, s, &s.args[0])?;
            let si = f.sock;
            let req = int(r, line, &s.args[1])?;
            let which = match req {
                0x541B => 0,
                0x5411 => 1,
                0x894B => 2,
                _ => return Err(r.unsupported(line, format!("ioctl request {req:#x} (SIOCINQ, SIOCOUTQ and SIOCOUTQNSD are supported)"))),
            };
            let sk = &r.socks[si];
            let q = sk.engine.filter(|_| !sk.listener).and_then(|id| r.ep.as_ref()?.queue_lengths(id));
            let Some(q) = q else { return err(22) };
            let actual = [q.0, q.1, q.2][which] as i64;
            Ok(Started::Done(0, 0, Post::Ioctl { expected: s.args[2].clone(), actual }))
        }
        "poll" | "epoll_create" | "epoll_ctl" | "epoll_wait" => Err(r.unsupported(line, format!("{}() is not supported", s.name))),
        other => Err(r.unsupported(line, format!("system call {other}()"))),
    }
}

fn connect(r: &mut Runner, line: u32, s: &SyscallSpec) -> Result<Started, Stop> {
    nargs(r, line, s, &[3])?;
    let (_, f) = fd(r, line, s, &s.args[0])?;
    let (si, nonblock) = (f.sock, f.nonblock);
    if s.args[1] != Expr::Ellipsis {
        return Err(r.unsupported(line, "connect() to an explicit address (use ...)"));
    }
    if let Some(id) = r.socks[si].engine {
        let st = r.ep.as_ref().and_then(|e| e.state(id));
        return match st {
            Some(TcpState::SynSent) => err(114),
            Some(TcpState::Listen) => err(22),
            _ => err(106),
        };
    }
    let remote = SocketAddrV4::new(r.remote_ip, r.connect_port);
    let now = r.now;
    let local_ip = r.local_ip;
    let id = match r.ep().connect(now, local_ip, remote) {
        Ok(id) => id,
        Err(e) => return err(errno_of(e)),
    };
    let opts = std::mem::take(&mut r.socks[si].pre_opts);
    for o in opts {
        let _ = r.ep().set_option(id, o);
    }
    let local = r.ep.as_ref().and_then(|e| e.addrs(id)).map(|(l, _)| l);
    let sk = &mut r.socks[si];
    sk.engine = Some(id);
    sk.state = SockState::ActiveConnecting;
    sk.connecting = true;
    sk.remote = Some(remote);
    // the local port is learnt from the SYN, as find_connect_for_live_packet() does
    let _ = local;
    r.sut = Some(si);
    r.drain();
    if nonblock {
        return err(115);
    }
    Ok(Started::Blocked(Op::Connect { sock: si, id }))
}

fn write(r: &mut Runner, line: u32, s: &SyscallSpec) -> Result<Started, Stop> {
    let (len, flags) = match s.name.as_str() {
        "write" => {
            nargs(r, line, s, &[3])?;
            (count(r, line, &s.args[2])?, 0)
        }
        "send" => {
            nargs(r, line, s, &[4])?;
            (count(r, line, &s.args[2])?, int(r, line, &s.args[3])?)
        }
        "sendto" => {
            nargs(r, line, s, &[6])?;
            if s.args[4] != Expr::Ellipsis && s.args[4] != Expr::Int(0) && s.args[4] != Expr::Word("NULL".into()) {
                return Err(r.unsupported(line, "sendto() with an address (Fast Open)"));
            }
            (count(r, line, &s.args[2])?, int(r, line, &s.args[3])?)
        }
        "writev" => {
            nargs(r, line, s, &[3])?;
            (Some(iov_len(r, line, &s.args[1])?), 0)
        }
        _ => {
            nargs(r, line, s, &[3])?;
            let Expr::Brace(m) = &s.args[1] else { return Err(r.unsupported(line, "sendmsg() needs a msghdr {...}")) };
            let mut len = None;
            for f in m {
                match f {
                    Expr::Field(n, _, v) if n == "msg_iov" => len = Some(iov_len(r, line, v)?),
                    Expr::Field(n, _, v) if n == "msg_flags" => {
                        if int(r, line, v)? != 0 {
                            return Err(r.fail(line, "runtime error in sendmsg call: sendmsg ignores msg_flags field in msghdr"));
                        }
                    }
                    Expr::Field(n, _, _) if n == "msg_name" => {}
                    Expr::Field(n, _, _) if n == "msg_control" => return Err(r.unsupported(line, "sendmsg() control messages")),
                    _ => return Err(r.unsupported(line, "sendmsg() msghdr field")),
                }
            }
            let len = len.ok_or_else(|| r.unsupported(line, "sendmsg() without msg_iov"))?;
            (Some(len), int(r, line, &s.args[2])?)
        }
    };
    let Some(len) = len else { return err(14) };
    let more = flags & MSG_MORE != 0;
    if flags & !(MSG_DONTWAIT | 0x4000 | MSG_MORE) != 0 {
        return Err(r.unsupported(line, format!("send flags {flags:#x}")));
    }
    let (_, f) = fd(r, line, s, &s.args[0])?;
    let (si, nonblock) = (f.sock, f.nonblock || flags & MSG_DONTWAIT != 0);
    let Some(id) = r.socks[si].engine.filter(|_| !r.socks[si].listener) else {
        return err(if r.socks[si].listener { 107 } else { 32 });
    };
    let mut op = Op::Write { id, total: len, done: 0, more };
    match try_op(r, &mut op) {
        Some((ret, e)) => Ok(Started::Done(ret, e, Post::None)),
        None => {
            let Op::Write { done, .. } = op else { unreachable!() };
            if nonblock {
                if done > 0 {
                    return ok(done as i64);
                }
                return err(11);
            }
            Ok(Started::Blocked(op))
        }
    }
}

fn read(r: &mut Runner, line: u32, s: &SyscallSpec) -> Result<Started, Stop> {
    let (max, flags) = match s.name.as_str() {
        "read" => {
            nargs(r, line, s, &[3])?;
            (count(r, line, &s.args[2])?, 0)
        }
        "recv" => {
            nargs(r, line, s, &[4])?;
            (count(r, line, &s.args[2])?, int(r, line, &s.args[3])?)
        }
        "recvfrom" => {
            nargs(r, line, s, &[6])?;
            (count(r, line, &s.args[2])?, int(r, line, &s.args[3])?)
        }
        _ => {
            nargs(r, line, s, &[3])?;
            (Some(iov_len(r, line, &s.args[1])?), 0)
        }
    };
    let Some(max) = max else { return err(14) };
    if flags & MSG_PEEK != 0 || flags & !(MSG_DONTWAIT | 0x100) != 0 {
        return Err(r.unsupported(line, format!("recv flags {flags:#x}")));
    }
    let (_, f) = fd(r, line, s, &s.args[0])?;
    let (si, nonblock, shut_rd) = (f.sock, f.nonblock || flags & MSG_DONTWAIT != 0, f.shut_rd);
    let Some(id) = r.socks[si].engine.filter(|_| !r.socks[si].listener) else { return err(107) };
    let mut op = Op::Read { id, max, shut_rd };
    match try_op(r, &mut op) {
        Some((ret, e)) => Ok(Started::Done(ret, e, Post::None)),
        None if nonblock => err(11),
        None => Ok(Started::Blocked(op)),
    }
}

/// One attempt at a (possibly blocking) operation: `Some((ret, errno))` when it is done.
fn try_op(r: &mut Runner, op: &mut Op) -> Option<(i64, i64)> {
    let now = r.now;
    let res = match op {
        Op::Accept { listener, result_fd } => {
            let id = r.ep().accept(*listener)?;
            let addrs = r.ep.as_ref().and_then(|e| e.addrs(id));
            // run_syscall_accept(): the script socket that did the handshake
            let si = r.socks.iter().position(|s| {
                matches!(s.state, SockState::PassiveSynackSent | SockState::PassiveSynackAcked)
                    && s.engine.is_none()
                    && addrs.is_some_and(|(l, rm)| s.local == Some(l) && s.remote == Some(rm))
            });
            let si = match si {
                Some(i) => i,
                None => {
                    // a connection the script never completed: still hand out the fd
                    let mut s = PdSock::new(SockState::PassiveSynackAcked);
                    s.local = addrs.map(|a| a.0);
                    s.remote = addrs.map(|a| a.1);
                    r.socks.push(s);
                    r.socks.len() - 1
                }
            };
            r.socks[si].engine = Some(id);
            r.fds.insert(*result_fd, Fd { sock: si, nonblock: false, shut_rd: false });
            Some((*result_fd, 0))
        }
        Op::Connect { sock, id } => {
            let st = r.ep.as_ref().and_then(|e| e.state(*id));
            match st {
                Some(TcpState::SynSent) | Some(TcpState::SynRecv) => None,
                Some(TcpState::Closed) | None => {
                    let e = std::mem::take(&mut r.socks[*sock].so_error);
                    Some((-1, if e == 0 { 111 } else { e }))
                }
                Some(_) => Some((0, 0)),
            }
        }
        Op::Write { id, total, done, more } => {
            // one engine call per attempt, as one tcp_sendmsg() copies what fits and
            // pushes (the engine marks PSH where a call ends, unless MSG_MORE)
            let n = (*total - *done).min(MAX_WRITE);
            let zeros = vec![0u8; n];
            match r.ep().send_more(now, *id, &zeros, *more) {
                Ok(k) => *done += k,
                Err(e) => return Some(if *done > 0 { (*done as i64, 0) } else { (-1, errno_of(e)) }),
            }
            (*done == *total).then_some((*total as i64, 0))
        }
        Op::Read { id, max, shut_rd } => {
            // the engine's receive queue is bounded by tcp_rmem; 16 MiB covers any of it
            let mut buf = vec![0u8; (*max).min(16 << 20)];
            match r.ep().recv(now, *id, &mut buf) {
                Ok(n) => Some((n as i64, 0)),
                Err(SockError::WouldBlock) if *shut_rd => Some((0, 0)),
                Err(SockError::WouldBlock) => None,
                Err(e) => Some((-1, errno_of(e))),
            }
        }
    };
    res
}
