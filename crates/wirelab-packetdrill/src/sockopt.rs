//! `setsockopt()` / `getsockopt()`: script options mapped to [`SockOpt`] and read back
//! from the engine's `tcp_info` the way Linux's `sock_getsockopt()` /
//! `do_tcp_getsockopt()` compute them. Options set before `listen()`/`connect()` are kept
//! and applied when the engine object is created.
use crate::ast::{Expr, SyscallSpec};
use crate::run::Runner;
use crate::Stop;
use wirelab_tcp::{SockError, SockOpt, TcpState};

const SOL_SOCKET: i64 = 1;
const SOL_TCP: i64 = 6;
const SOL_IP: i64 = 0;
/// `TCP_MIN_MSS`, `MAX_TCP_WINDOW` (include/net/tcp.h).
const TCP_MIN_MSS: i64 = 88;
const MAX_TCP_WINDOW: i64 = 32767;
/// `TCP_MSS_DEFAULT`.
const TCP_MSS_DEFAULT: i64 = 536;

fn errno_of(e: SockError) -> i64 {
    match e {
        SockError::InvalidSocket => 9,
        SockError::NotConnected => 107,
        _ => 22,
    }
}

fn fd_sock(r: &Runner, line: u32, s: &SyscallSpec) -> Result<usize, Stop> {
    let n = match &s.args[0] {
        Expr::Int(n) => *n,
        e => return Err(r.unsupported(line, format!("fd argument {e:?}"))),
    };
    r.fds.get(&n).map(|f| f.sock).ok_or_else(|| r.fail(line, format!("runtime error in {} call: bad script fd {n}", s.name)))
}

fn int_arg(r: &Runner, line: u32, e: &Expr) -> Result<i64, Stop> {
    match e {
        Expr::Int(i) => Ok(*i),
        Expr::Word(w) => crate::symbols::symbol(w).ok_or_else(|| r.unsupported(line, format!("unknown symbol `{w}`"))),
        Expr::List(v) if v.len() == 1 => int_arg(r, line, &v[0]),
        Expr::Or(v) => v.iter().try_fold(0, |a, x| Ok(a | int_arg(r, line, x)?)),
        _ => Err(r.unsupported(line, format!("option value {e:?}"))),
    }
}

/// Returns (result, errno).
pub(crate) fn setsockopt(r: &mut Runner, line: u32, s: &SyscallSpec) -> Result<(i64, i64), Stop> {
    let si = fd_sock(r, line, s)?;
    let level = int_arg(r, line, &s.args[1])?;
    let name = int_arg(r, line, &s.args[2])?;
    let val = &s.args[3];
    let v = || int_arg(r, line, val);
    let opt = match (level, name) {
        (SOL_SOCKET, 2 | 15) => return Ok((0, 0)), // SO_REUSEADDR / SO_REUSEPORT: no bind conflicts here
        (SOL_SOCKET, 7) => {
            let x = v()? as u32;
            r.socks[si].sndbuf = Some(x);
            SockOpt::SndBuf(x)
        }
        (SOL_SOCKET, 8) => {
            let x = v()? as u32;
            r.socks[si].rcvbuf = Some(x);
            SockOpt::RcvBuf(x)
        }
        (SOL_TCP, 1) => {
            let x = v()? != 0;
            r.socks[si].nodelay = x;
            SockOpt::NoDelay(x)
        }
        (SOL_TCP, 2) => {
            // do_tcp_setsockopt(TCP_MAXSEG)
            let x = v()?;
            if x != 0 && !(TCP_MIN_MSS..=MAX_TCP_WINDOW).contains(&x) {
                return Ok((-1, 22));
            }
            r.socks[si].user_mss = x as u32;
            SockOpt::MaxSeg(x as u16)
        }
        (SOL_TCP, 10) => SockOpt::WindowClamp(v()? as u32),
        (SOL_TCP, 12) => SockOpt::QuickAck(v()? != 0),
        (SOL_TCP, 13) => match val {
            Expr::Str(n) => {
                if wirelab_tcp::CongestionAlgo::from_name(n).is_err() {
                    return Ok((-1, 2)); // tcp_set_congestion_control(): ENOENT
                }
                SockOpt::Congestion(n.clone())
            }
            _ => return Err(r.unsupported(line, "TCP_CONGESTION needs a string value")),
        },
        (SOL_TCP, 16) => SockOpt::ThinLinearTimeouts(v()? != 0),
        (SOL_TCP, 17) => SockOpt::ThinDupack(v()? != 0),
        (SOL_TCP, 3) => SockOpt::Cork(v()? != 0),
        (SOL_TCP, 18) => {
            // do_tcp_setsockopt(TCP_USER_TIMEOUT): negative values are EINVAL
            let x = v()?;
            if x < 0 {
                return Ok((-1, 22));
            }
            SockOpt::UserTimeout(x as u32)
        }
        (SOL_IP, 1) => {
            // ip_setsockopt(IP_TOS) on a stream socket keeps the socket's ECN bits
            let x = (v()? as u8) & !3;
            r.socks[si].tos = x;
            SockOpt::Tos(x)
        }
        (SOL_IP, 10) => {
            r.notes.push(format!("line {line}: IP_MTU_DISCOVER accepted: wirelab does no path MTU discovery"));
            return Ok((0, 0));
        }
        _ => return Err(r.unsupported(line, format!("setsockopt level {level} option {name}"))),
    };
    match r.socks[si].engine {
        Some(id) => match r.ep().set_option(id, opt) {
            Ok(()) => Ok((0, 0)),
            Err(e) => Ok((-1, errno_of(e))),
        },
        None => {
            let sk = &mut r.socks[si];
            sk.pre_opts.retain(|o| core::mem::discriminant(o) != core::mem::discriminant(&opt));
            sk.pre_opts.push(opt);
            Ok((0, 0))
        }
    }
}

/// Returns (result, errno, value): an integer, or `Err(string)` for string options.
pub(crate) fn getsockopt(r: &mut Runner, line: u32, s: &SyscallSpec) -> Result<(i64, i64, Result<i64, String>), Stop> {
    let si = fd_sock(r, line, s)?;
    let level = int_arg(r, line, &s.args[1])?;
    let name = int_arg(r, line, &s.args[2])?;
    let sk = &r.socks[si];
    let conn = sk.engine.filter(|_| !sk.listener);
    let info = conn.and_then(|id| r.ep.as_ref()?.info_at(r.now, id));
    let cfg = r.ep.as_ref().map_or(&r.tcp_cfg, |e| e.config());
    let v = match (level, name) {
        // sock_getsockopt(SO_SNDBUF/SO_RCVBUF): sk_sndbuf, doubled by setsockopt
        (SOL_SOCKET, 7) => match info {
            Some(i) => i.sndbuf as i64,
            None => sk.sndbuf.map_or(cfg.tcp_wmem[1] as i64, |x| (x.min(cfg.wmem_max) as i64 * 2).max(4608)),
        },
        (SOL_SOCKET, 8) => match info {
            Some(i) => i.rcvbuf as i64,
            None => sk.rcvbuf.map_or(cfg.tcp_rmem[1] as i64, |x| (x.min(cfg.rmem_max) as i64 * 2).max(2304)),
        },
        (SOL_SOCKET, 4) => {
            let e = r.socks[si].so_error;
            r.socks[si].so_error = 0;
            e
        }
        // do_tcp_getsockopt(TCP_MAXSEG): user_mss on closed/listening sockets, else mss_cache
        (SOL_TCP, 2) => match info {
            Some(i) if !matches!(i.state, TcpState::Closed | TcpState::Listen) => i.snd_mss as i64,
            _ if sk.user_mss != 0 => sk.user_mss as i64,
            _ => TCP_MSS_DEFAULT,
        },
        (SOL_TCP, 1) => sk.nodelay as i64,
        (SOL_IP, 1) => sk.tos as i64,
        (SOL_TCP, 13) => {
            let n = info.map_or(cfg.tcp_congestion_control.name(), |i| i.congestion);
            return Ok((0, 0, Err(n.to_string())));
        }
        _ => return Err(r.unsupported(line, format!("getsockopt level {level} option {name}"))),
    };
    Ok((0, 0, Ok(v)))
}
