//! The parsed script, shaped like packetdrill's `struct script` / `struct event`.

/// When an event happens (µs; packetdrill's `enum event_time_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventTime {
    /// `0.1`: since the script start.
    Absolute(i64),
    /// `+0.1`: since the previous event (see `adjust_relative_event_times()`).
    Relative(i64),
    /// `*`: any time (outbound packets only).
    Any,
    /// `0.1~0.2`.
    AbsoluteRange(i64, i64),
    /// `+0.1~+0.2`.
    RelativeRange(i64, i64),
}

/// `<` (the script sends) or `>` (the stack under test must send).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Injected into the stack.
    Inbound,
    /// Expected from the stack.
    Outbound,
}

/// How the IP TOS byte of an outbound packet is checked (`enum tos_chk_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TosCheck {
    /// Not checked.
    None,
    /// `[noecn]`, `[ect0]`, `[ect1]`, `[ce]`: the two ECN bits.
    Ecn(u8),
    /// `[ect01]`: either ECT codepoint.
    Ect01,
    /// `(tos 0x..)`: the whole byte.
    Tos(u8),
}

/// One TCP option as written in the script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TcpOpt {
    /// `nop`
    Nop,
    /// `eol`
    Eol,
    /// `mss N`
    Mss(u16),
    /// `wscale N`
    WScale(u8),
    /// `sackOK`
    SackOk,
    /// `sack a:b c:d`
    Sack(Vec<(u32, u32)>),
    /// `TS val V ecr E`
    Timestamp(u32, u32),
}

/// A TCP packet line.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketSpec {
    /// `<` or `>`.
    pub dir: Direction,
    /// IP TOS check (outbound) or value (inbound).
    pub tos: TosCheck,
    /// `ttl N`, if given (checked on outbound packets).
    pub ttl: Option<u8>,
    /// Flag letters as written (`S`, `P.`, `F.`, `SEW`, `` for `-`).
    pub flags: String,
    /// Start sequence number (script space).
    pub seq: u32,
    /// Payload bytes.
    pub len: u16,
    /// `ack N` (0 if absent).
    pub ack: u32,
    /// `win N`; `None` = not checked (outbound only).
    pub win: Option<u16>,
    /// `urg N`.
    pub urg: u16,
    /// Options; `None` for `<...>` (not checked, outbound only).
    pub options: Option<Vec<TcpOpt>>,
    /// Explicit `src>dst` ports, if written.
    pub ports: Option<(u16, u16)>,
}

impl PacketSpec {
    /// True if flag letter `c` is present.
    pub fn has(&self, c: char) -> bool {
        self.flags.contains(c)
    }
}

/// A system-call argument or result (packetdrill's `struct expression`).
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// `...`
    Ellipsis,
    /// A number.
    Int(i64),
    /// A symbol (`SOCK_STREAM`, `O_NONBLOCK`) or a bare word.
    Word(String),
    /// `"..."`
    Str(String),
    /// `a | b | c`
    Or(Vec<Expr>),
    /// `[a, b]`
    List(Vec<Expr>),
    /// `{a, b}` (msghdr, iovec, pollfd, linger, sockaddr).
    Brace(Vec<Expr>),
    /// `name=value` or `name(arg)=value` (struct fields).
    Field(String, Option<Vec<Expr>>, Box<Expr>),
    /// `name(args)` (`htons(8080)`, `inet_addr("1.2.3.4")`).
    Call(String, Vec<Expr>),
}

/// A system call line.
#[derive(Clone, Debug, PartialEq)]
pub struct SyscallSpec {
    /// `...T`: the call blocks and returns at time T (same base as the start time).
    pub end: Option<i64>,
    /// Function name.
    pub name: String,
    /// Arguments.
    pub args: Vec<Expr>,
    /// Expected return value.
    pub result: Expr,
    /// Expected errno symbol.
    pub errno: Option<String>,
}

/// What an event does.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// A TCP packet.
    Packet(PacketSpec),
    /// A system call.
    Syscall(SyscallSpec),
    /// A shell command.
    Command(String),
    /// A `%{ }%` block (asserts on `tcp_info`, run at the end as packetdrill does).
    Code(String),
}

/// One timed line.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Line of its time stamp.
    pub line: u32,
    /// Its time.
    pub time: EventTime,
    /// What it does.
    pub action: Action,
}

/// A whole script.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Script {
    /// `--name[=value]` lines with their line numbers.
    pub options: Vec<(u32, String, Option<String>)>,
    /// The back-quoted command before the first event.
    pub init: Option<(u32, String)>,
    /// The events in order.
    pub events: Vec<Event>,
    /// The back-quoted command after the last event.
    pub cleanup: Option<(u32, String)>,
}
