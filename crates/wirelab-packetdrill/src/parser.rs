//! A recursive-descent parser for the packetdrill grammar (`parser.y`, see
//! `../shared/packetdrill/syntax.md`), covering what the Linux TCP scripts use. Constructs
//! of the grammar that wirelab cannot run (UDP, ICMP, GRE, MPLS, PSP, MD5, Fast Open
//! options) are parsed far enough to name them and reported as unsupported.
use crate::ast::*;
use crate::lexer::{lex, Tok, Token};
use std::collections::HashMap;

/// Why a script could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// Line of the offending token (the last line for an unexpected end of file).
    pub line: u32,
    /// What is wrong.
    pub msg: String,
    /// True if the text is valid packetdrill that wirelab does not support.
    pub unsupported: bool,
}

type PResult<T> = Result<T, ParseError>;

/// Largest event time accepted (µs): a million seconds, far beyond any test.
pub const MAX_TIME_US: i64 = 1_000_000 * 1_000_000;

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    last_line: u32,
}

/// Parses a script. `defines` are `-D NAME=VALUE` symbols.
pub fn parse(src: &[u8], defines: &HashMap<String, String>) -> PResult<Script> {
    let toks = lex(src, defines).map_err(|e| ParseError { line: e.line, msg: e.msg, unsupported: false })?;
    let last_line = toks.last().map_or(1, |t| t.line);
    let mut p = Parser { toks, pos: 0, last_line };
    p.script()
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Opt(n, _) => format!("--{n}"),
        Tok::Float(_, s) => s.clone(),
        Tok::Int(i) => i.to_string(),
        Tok::Hex(h) => format!("{h:#x}"),
        Tok::Word(w) => w.clone(),
        Tok::Str(s) => format!("\"{s}\""),
        Tok::BackQuoted(_) => "`command`".into(),
        Tok::Code(_) => "%{ code }%".into(),
        Tok::Ellipsis => "...".into(),
        Tok::Ipv4(s) => s.clone(),
        Tok::Punct(c) if c.is_ascii_graphic() => c.to_string(),
        Tok::Punct(c) => format!("byte {:#04x}", *c as u32),
    }
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }
    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.pos + k).map(|t| &t.tok)
    }
    fn line(&self) -> u32 {
        self.toks.get(self.pos).map_or(self.last_line, |t| t.line)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).map(|t| t.tok.clone());
        if t.is_some() {
            self.pos += 1;
        }
        t
    }
    fn err<T>(&self, msg: impl Into<String>) -> PResult<T> {
        Err(ParseError { line: self.line(), msg: msg.into(), unsupported: false })
    }
    fn unsupported<T>(&self, msg: impl Into<String>) -> PResult<T> {
        Err(ParseError { line: self.line(), msg: msg.into(), unsupported: true })
    }
    fn unexpected<T>(&self, wanted: &str) -> PResult<T> {
        match self.peek() {
            Some(t) => self.err(format!("syntax error at '{}': expected {wanted}", describe(t))),
            None => self.err(format!("unexpected end of file: expected {wanted}")),
        }
    }
    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }
    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect_punct(&mut self, c: char) -> PResult<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.unexpected(&format!("'{c}'"))
        }
    }
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word(x)) if x == w)
    }
    fn eat_word(&mut self, w: &str) -> bool {
        if self.is_word(w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn int(&mut self, what: &str) -> PResult<i64> {
        match self.peek() {
            Some(Tok::Int(i)) | Some(Tok::Hex(i)) => {
                let v = *i;
                self.pos += 1;
                Ok(v)
            }
            _ => self.unexpected(what),
        }
    }
    fn ranged(&mut self, what: &str, max: i64) -> PResult<i64> {
        let line = self.line();
        let v = self.int(what)?;
        if !(0..=max).contains(&v) {
            return Err(ParseError { line, msg: format!("{what} out of range: {v} (0..={max})"), unsupported: false });
        }
        Ok(v)
    }

    fn script(&mut self) -> PResult<Script> {
        let mut s = Script::default();
        while let Some(Tok::Opt(n, v)) = self.peek() {
            s.options.push((self.line(), n.clone(), v.clone()));
            self.pos += 1;
        }
        if let Some(Tok::BackQuoted(c)) = self.peek() {
            s.init = Some((self.line(), c.clone()));
            self.pos += 1;
        }
        while self.peek().is_some() {
            if let Some(Tok::BackQuoted(c)) = self.peek() {
                if self.pos + 1 == self.toks.len() {
                    s.cleanup = Some((self.line(), c.clone()));
                    self.pos += 1;
                    break;
                }
            }
            s.events.push(self.event()?);
        }
        if s.events.is_empty() {
            return self.err("script has no events");
        }
        Ok(s)
    }

    fn time(&mut self) -> PResult<i64> {
        let line = self.line();
        let v = match self.next() {
            // `(s64)($1 * 1.0e6)` as parser.y converts
            Some(Tok::Float(f, _)) => (f * 1.0e6) as i64,
            Some(Tok::Int(i)) => i.saturating_mul(1_000_000),
            Some(_) => {
                self.pos -= 1;
                return self.unexpected("a time");
            }
            None => return self.unexpected("a time"),
        };
        if v < 0 {
            return Err(ParseError { line, msg: "negative time".into(), unsupported: false });
        }
        if v > MAX_TIME_US {
            return Err(ParseError { line, msg: format!("time out of range: more than {} s", MAX_TIME_US / 1_000_000), unsupported: false });
        }
        Ok(v)
    }

    fn event_time(&mut self) -> PResult<EventTime> {
        if self.eat_punct('*') {
            return Ok(EventTime::Any);
        }
        if self.eat_punct('+') {
            let a = self.time()?;
            if self.eat_punct('~') {
                self.expect_punct('+')?;
                let b = self.time()?;
                return Ok(EventTime::RelativeRange(a, b));
            }
            return Ok(EventTime::Relative(a));
        }
        if matches!(self.peek(), Some(Tok::Float(..)) | Some(Tok::Int(_))) {
            let a = self.time()?;
            if self.eat_punct('~') {
                let b = self.time()?;
                return Ok(EventTime::AbsoluteRange(a, b));
            }
            return Ok(EventTime::Absolute(a));
        }
        self.unexpected("an event time (`0.1`, `+0.1`, `*`, `a~b`)")
    }

    fn event(&mut self) -> PResult<Event> {
        let line = self.line();
        let time = self.event_time()?;
        let action = match self.peek() {
            Some(Tok::Punct('<')) | Some(Tok::Punct('>')) => Action::Packet(self.packet()?),
            Some(Tok::BackQuoted(c)) => {
                let c = c.clone();
                self.pos += 1;
                Action::Command(c)
            }
            Some(Tok::Code(c)) => {
                let c = c.clone();
                self.pos += 1;
                Action::Code(c)
            }
            Some(Tok::Ellipsis) | Some(Tok::Word(_)) => Action::Syscall(self.syscall()?),
            _ => return self.unexpected("a packet, system call, `command` or %{ code }%"),
        };
        let (is_out, is_range) = (
            matches!(&action, Action::Packet(p) if p.dir == Direction::Outbound),
            matches!(time, EventTime::AbsoluteRange(..) | EventTime::RelativeRange(..)),
        );
        if let EventTime::AbsoluteRange(a, b) | EventTime::RelativeRange(a, b) = time {
            if b < a {
                return Err(ParseError { line, msg: "time range is backwards".into(), unsupported: false });
            }
        }
        if time == EventTime::Any && !is_out {
            return Err(ParseError { line, msg: "event time <star> can only be used with outbound packets".into(), unsupported: false });
        }
        if is_range && !is_out {
            return Err(ParseError { line, msg: "event time range can only be used with outbound packets".into(), unsupported: false });
        }
        Ok(Event { line, time, action })
    }

    fn ip_info(&mut self, close: char) -> PResult<(TosCheck, Option<u8>)> {
        let mut tos = TosCheck::None;
        let mut ttl = None;
        loop {
            match self.peek() {
                Some(Tok::Word(w)) => {
                    let w = w.clone();
                    self.pos += 1;
                    match w.as_str() {
                        "noecn" => tos = TosCheck::Ecn(0),
                        "ect1" => tos = TosCheck::Ecn(1),
                        "ect0" => tos = TosCheck::Ecn(2),
                        "ce" => tos = TosCheck::Ecn(3),
                        "ect01" => tos = TosCheck::Ect01,
                        "tos" => tos = TosCheck::Tos(self.ranged("tos value", 255)? as u8),
                        "ttl" => ttl = Some(self.ranged("ttl", 255)? as u8),
                        "flowlabel" => return self.unsupported("IPv6 flow labels are not supported (IPv4 only)"),
                        _ => {
                            self.pos -= 1;
                            return self.unexpected("ECN/tos/ttl information");
                        }
                    }
                }
                _ => return self.unexpected("ECN/tos/ttl information"),
            }
            if self.eat_punct(close) {
                return Ok((tos, ttl));
            }
            self.expect_punct(',')?;
        }
    }

    fn packet(&mut self) -> PResult<PacketSpec> {
        let dir = if self.eat_punct('<') {
            Direction::Inbound
        } else {
            self.expect_punct('>')?;
            Direction::Outbound
        };
        for (w, what) in [("ipv4", "encapsulated IP headers"), ("ipv6", "IPv6"), ("gre", "GRE"), ("GREv0", "GRE"), ("mpls", "MPLS")] {
            if self.is_word(w) {
                return self.unsupported(format!("{what} packets are not supported"));
            }
        }
        let (mut tos, mut ttl) = (TosCheck::None, None);
        if self.eat_punct('[') {
            (tos, ttl) = self.ip_info(']')?;
        } else if self.is_punct('(') && matches!(self.peek_at(1), Some(Tok::Word(_))) {
            self.pos += 1;
            (tos, ttl) = self.ip_info(')')?;
        }
        if self.is_word("encap") || self.is_word("psp") {
            return self.unsupported("PSP encapsulation is not supported");
        }
        for w in ["udp", "icmp"] {
            if self.is_word(w) {
                return self.unsupported(format!("{} packets are not supported (TCP only)", w.to_uppercase()));
            }
        }
        let mut ports = None;
        if matches!(self.peek(), Some(Tok::Int(_))) && self.peek_at(1) == Some(&Tok::Punct('>')) {
            let a = self.ranged("source port", 65535)? as u16;
            self.expect_punct('>')?;
            let b = self.ranged("destination port", 65535)? as u16;
            ports = Some((a, b));
        }
        if self.is_word("udp") || self.is_word("icmp") {
            return self.unsupported("UDP/ICMP packets are not supported (TCP only)");
        }
        let flags = self.flags()?;
        let seq_line = self.line();
        let seq = self.ranged("TCP start sequence number", u32::MAX as i64)? as u32;
        self.expect_punct(':')?;
        let end = self.ranged("TCP end sequence number", u32::MAX as i64)? as u32;
        self.expect_punct('(')?;
        let len = self.ranged("TCP payload size", 65535)? as u16;
        self.expect_punct(')')?;
        if end != seq.wrapping_add(len as u32) {
            return Err(ParseError { line: seq_line, msg: "inconsistent TCP sequence numbers and payload size".into(), unsupported: false });
        }
        let mut p = PacketSpec { dir, tos, ttl, flags, seq, len, ack: 0, win: None, urg: 0, options: Some(Vec::new()), ports };
        if self.eat_word("ack") {
            p.ack = self.ranged("TCP ack sequence number", u32::MAX as i64)? as u32;
        }
        if self.eat_word("win") {
            p.win = Some(self.ranged("TCP window value", 65535)? as u16);
        } else if dir == Direction::Inbound {
            return self.err("window must be specified for inbound packets");
        }
        if self.eat_word("urg") {
            p.urg = self.ranged("urg_ptr value", 65535)? as u16;
        }
        if self.eat_punct('<') {
            if self.peek() == Some(&Tok::Ellipsis) {
                self.pos += 1;
                self.expect_punct('>')?;
                if dir == Direction::Inbound {
                    return self.err("<...> for TCP options can only be used with outbound packets");
                }
                p.options = None;
            } else {
                p.options = Some(self.tcp_options()?);
            }
        }
        if p.tos == TosCheck::Ect01 && dir == Direction::Inbound {
            return self.err("[ect01] can only be used with outbound packets");
        }
        Ok(p)
    }

    fn flags(&mut self) -> PResult<String> {
        let mut f = String::new();
        match self.peek() {
            Some(Tok::Word(w)) => {
                f.push_str(w);
                self.pos += 1;
                if self.eat_punct('.') {
                    f.push('.');
                } else if let Some(Tok::Float(_, s)) = self.peek() {
                    // AccECN "ack and ACE" flags, e.g. `S.1`
                    if s.starts_with('.') {
                        f.push_str(s);
                        self.pos += 1;
                    }
                }
            }
            Some(Tok::Punct('.')) => {
                self.pos += 1;
                f.push('.');
            }
            Some(Tok::Punct('-')) => {
                self.pos += 1;
            }
            Some(Tok::Float(_, s)) if s.starts_with('.') => {
                f.push_str(s);
                self.pos += 1;
            }
            _ => return self.unexpected("TCP flags (e.g. `S`, `.`, `P.`, `-`)"),
        }
        // is_tcp_flags_spec_valid()
        if let Some(bad) = f.chars().find(|c| !"FSRP.UEWA01234567".contains(*c)) {
            self.pos -= 1;
            return self.err(format!("Invalid TCP flag: '{bad}' in `{f}`"));
        }
        Ok(f)
    }

    fn tcp_options(&mut self) -> PResult<Vec<TcpOpt>> {
        let mut v = Vec::new();
        let mut bytes = 0usize;
        loop {
            let w = match self.peek() {
                Some(Tok::Word(w)) => w.clone(),
                _ => return self.unexpected("a TCP option"),
            };
            self.pos += 1;
            let o = match w.as_str() {
                "nop" => TcpOpt::Nop,
                "eol" => TcpOpt::Eol,
                "mss" => TcpOpt::Mss(self.ranged("mss value", 65535)? as u16),
                "wscale" => TcpOpt::WScale(self.ranged("window scale shift count", 255)? as u8),
                "sackOK" => TcpOpt::SackOk,
                "sack" => {
                    let mut blocks = Vec::new();
                    while matches!(self.peek(), Some(Tok::Int(_))) {
                        let l = self.ranged("SACK block left edge", u32::MAX as i64)? as u32;
                        self.expect_punct(':')?;
                        let r = self.ranged("SACK block right edge", u32::MAX as i64)? as u32;
                        blocks.push((l, r));
                    }
                    if blocks.is_empty() {
                        return self.unexpected("a SACK block a:b");
                    }
                    TcpOpt::Sack(blocks)
                }
                "TS" => {
                    if !self.eat_word("val") {
                        return self.unexpected("`val`");
                    }
                    let val = self.ranged("TS val", u32::MAX as i64)? as u32;
                    if !self.eat_word("ecr") {
                        return self.unexpected("`ecr`");
                    }
                    let ecr = self.ranged("TS ecr", u32::MAX as i64)? as u32;
                    TcpOpt::Timestamp(val, ecr)
                }
                "md5" => return self.unsupported("the TCP MD5 signature option is not supported"),
                "FO" | "FOEXP" => return self.unsupported("TCP Fast Open options are not supported"),
                "ECN" => return self.unsupported("the AccECN option is not supported"),
                _ => {
                    self.pos -= 1;
                    return self.unexpected("a TCP option (nop, eol, mss, wscale, sackOK, sack, TS)");
                }
            };
            bytes += opt_len(&o);
            v.push(o);
            if bytes > 40 {
                return self.err("TCP option list too long");
            }
            if self.eat_punct('>') {
                break;
            }
            self.expect_punct(',')?;
        }
        if bytes % 4 != 0 {
            return self.err(format!(
                "TCP options are not padded correctly to ensure TCP header is a multiple of 4 bytes: {} excess bytes",
                bytes % 4
            ));
        }
        Ok(v)
    }

    fn syscall(&mut self) -> PResult<SyscallSpec> {
        let mut end = None;
        if self.peek() == Some(&Tok::Ellipsis) {
            self.pos += 1;
            end = Some(self.time()?);
        }
        let name = match self.next() {
            Some(Tok::Word(w)) => w,
            Some(_) => {
                self.pos -= 1;
                return self.unexpected("a system call name");
            }
            None => return self.unexpected("a system call name"),
        };
        self.expect_punct('(')?;
        let args = if self.eat_punct(')') { Vec::new() } else { self.expr_list(')')? };
        self.expect_punct('=')?;
        let result = self.expr()?;
        let mut errno = None;
        if let Some(Tok::Word(w)) = self.peek() {
            // opt_errno: WORD (checked against the errno table when the call runs)
            errno = Some(w.clone());
            self.pos += 1;
        }
        if self.is_punct('(') {
            // the note: `(Operation now in progress)`, `(flags O_RDWR)`
            let mut depth = 0;
            loop {
                match self.next() {
                    Some(Tok::Punct('(')) => depth += 1,
                    Some(Tok::Punct(')')) => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Some(_) => {}
                    None => return self.unexpected("')' closing the note"),
                }
            }
        }
        Ok(SyscallSpec { end, name, args, result, errno })
    }

    fn expr_list(&mut self, close: char) -> PResult<Vec<Expr>> {
        let mut v = vec![self.expr()?];
        while self.eat_punct(',') {
            v.push(self.expr()?);
        }
        self.expect_punct(close)?;
        Ok(v)
    }

    fn expr(&mut self) -> PResult<Expr> {
        let first = self.primary()?;
        if !self.is_punct('|') {
            return Ok(first);
        }
        let mut v = vec![first];
        while self.eat_punct('|') {
            v.push(self.primary()?);
        }
        Ok(Expr::Or(v))
    }

    fn primary(&mut self) -> PResult<Expr> {
        match self.next() {
            Some(Tok::Ellipsis) => Ok(Expr::Ellipsis),
            Some(Tok::Int(i)) | Some(Tok::Hex(i)) => Ok(Expr::Int(i)),
            Some(Tok::Str(s)) => {
                if self.peek() == Some(&Tok::Ellipsis) {
                    self.pos += 1;
                }
                Ok(Expr::Str(s))
            }
            Some(Tok::Punct('[')) => {
                if self.eat_punct(']') {
                    return Ok(Expr::List(Vec::new()));
                }
                Ok(Expr::List(self.expr_list(']')?))
            }
            Some(Tok::Punct('{')) => Ok(Expr::Brace(self.expr_list('}')?)),
            Some(Tok::Word(w)) => {
                if self.eat_punct('(') {
                    let args = if self.eat_punct(')') { Vec::new() } else { self.expr_list(')')? };
                    if self.eat_punct('=') {
                        return Ok(Expr::Field(w, Some(args), Box::new(self.expr()?)));
                    }
                    return Ok(Expr::Call(w, args));
                }
                if self.eat_punct('=') {
                    return Ok(Expr::Field(w, None, Box::new(self.expr()?)));
                }
                Ok(Expr::Word(w))
            }
            Some(Tok::Ipv4(s)) => Ok(Expr::Str(s)),
            Some(_) => {
                self.pos -= 1;
                self.unexpected("an expression")
            }
            None => self.unexpected("an expression"),
        }
    }
}

/// Encoded length of an option in bytes.
pub fn opt_len(o: &TcpOpt) -> usize {
    match o {
        TcpOpt::Nop | TcpOpt::Eol => 1,
        TcpOpt::Mss(_) => 4,
        TcpOpt::WScale(_) => 3,
        TcpOpt::SackOk => 2,
        TcpOpt::Sack(b) => 2 + 8 * b.len(),
        TcpOpt::Timestamp(..) => 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PResult<Script> {
        parse(s.as_bytes(), &HashMap::new())
    }

    #[test]
    fn a_small_script() {
        let s = p("--tolerance_usecs=10000\n`../common/defaults.sh`\n\
            0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n\
            +0 fcntl(3, F_SETFL, O_RDWR|O_NONBLOCK) = 0\n\
            +0 connect(3, ..., ...) = -1 EINPROGRESS (Operation now in progress)\n\
            +0 > S 0:0(0) <mss 1460,sackOK,TS val 100 ecr 0,nop,wscale 8>\n\
            +.1 < S. 0:0(0) ack 1 win 5792 <mss 1460,nop,wscale 2,nop,nop,sackOK>\n\
            +.3~+.303 > P. 1:1001(1000) ack 1\n\
            +0...0.200 accept(3, ..., ...) = 4\n\
            +0 %{ assert tcpi_snd_cwnd == 10 }%\n\
            `/tmp/sysctl_restore_${PPID}.sh`\n")
        .unwrap();
        assert_eq!(s.options, vec![(1, "tolerance_usecs".into(), Some("10000".into()))]);
        assert_eq!(s.init, Some((2, "../common/defaults.sh".into())));
        assert_eq!(s.events.len(), 8);
        assert_eq!(s.cleanup.as_ref().unwrap().0, 11);
        let Action::Syscall(c) = &s.events[2].action else { panic!() };
        assert_eq!(c.result, Expr::Int(-1));
        assert_eq!(c.errno.as_deref(), Some("EINPROGRESS"));
        let Action::Packet(syn) = &s.events[3].action else { panic!() };
        assert_eq!(syn.options.as_ref().unwrap()[2], TcpOpt::Timestamp(100, 0));
        assert_eq!(s.events[5].time, EventTime::RelativeRange(300_000, 303_000));
        let Action::Syscall(a) = &s.events[6].action else { panic!() };
        assert_eq!(a.end, Some(200_000));
        assert_eq!(s.events[7].line, 10);
    }

    #[test]
    fn structured_arguments() {
        let s = p("0 sendmsg(4, {msg_name(...)=...,\n msg_iov(3)=[{..., 100}, {..., 200}, {..., 195}], msg_flags=0}, MSG_MORE) = 495\n")
            .unwrap();
        let Action::Syscall(c) = &s.events[0].action else { panic!() };
        assert_eq!(c.args.len(), 3);
        let Expr::Brace(m) = &c.args[1] else { panic!() };
        assert!(matches!(&m[1], Expr::Field(n, Some(a), _) if n == "msg_iov" && a == &vec![Expr::Int(3)]));
    }

    #[test]
    fn errors_name_the_line() {
        for (src, line, frag) in [
            ("0 socket(..., SOCK_STREAM) = 3\n+0 > S 0:0(0) <mss 1460,>\n", 2, "syntax error"),
            ("0 socket() = 3\n+0 < S 0:0(0) <mss 1460>\n", 2, "window must be specified"),
            ("0 socket() = 3\n+0 > S 0:10(0)\n", 2, "inconsistent"),
            ("0 socket() = 3\n+0 > Q 0:0(0)\n", 2, "Invalid TCP flag"),
            ("0 socket() = 3\n+0 > S 0:0(0) <mss 99999>\n", 2, "out of range"),
            ("0 socket() = 3\n+0 > S 0:0(0) <mss 1460,nop>\n", 2, "padded"),
            ("0 socket() = 3\n+0 < S 0:0(0) win 1 <...>\n", 2, "<...>"),
            ("0 socket() = 3\n+0.1~+0.2 write(3, ..., 1) = 1\n", 2, "range"),
            ("0 socket(", 1, "end of file"),
            ("", 1, "no events"),
            ("0 socket() = 3\n\u{7f}\n", 2, "0x7f"),
        ] {
            let e = p(src).unwrap_err();
            assert_eq!(e.line, line, "{src}: {e:?}");
            assert!(e.msg.contains(frag), "{src}: {}", e.msg);
            assert!(!e.unsupported);
        }
        let e = p("0 socket() = 3\n+0 < udp (10)\n").unwrap_err();
        assert!(e.unsupported && e.msg.contains("UDP"), "{e:?}");
    }
}
