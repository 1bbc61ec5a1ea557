//! The `%{ … }%` blocks: a small evaluator for the Python subset the Linux TCP scripts
//! write. packetdrill snapshots `TCP_INFO` at each block's time and runs all blocks, in
//! order and in one namespace, after the script's events (`code_execute()`); so does
//! this module.
//!
//! Supported: statements separated by newlines or `;` (with `\` and bracket line
//! joining, `#` comments), `assert cond[, message]` (the message is evaluated only when
//! the assertion fails, as in Python), `print(...)`, `name = expr`, `name += expr` / `-=`,
//! and expressions with `or`/`and`/`not`, chained comparisons, `+ - * / // %`, unary
//! minus, parentheses and tuples, integers (decimal, hex), floats, strings, `%` string
//! formatting, and `abs`/`min`/`max`/`int`. Anything else is reported as unsupported, never
//! guessed.
use std::collections::HashMap;
use std::fmt;

/// A value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// An integer (Python ints are unbounded; tcp_info fields fit in i128).
    Int(i128),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A boolean.
    Bool(bool),
    /// A tuple (for `%` formatting).
    Tuple(Vec<Value>),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
            Value::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            Value::Tuple(v) => {
                let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                write!(f, "({})", s.join(", "))
            }
        }
    }
}

/// Why a block did not pass.
#[derive(Clone, Debug, PartialEq)]
pub enum CodeError {
    /// `assert` failed; the message is Python's `AssertionError: …` text.
    Assertion(String),
    /// Uses a `tcpi_*` field wirelab does not provide, or Python wirelab cannot run.
    Unsupported(String),
    /// A runtime error (a name that is not defined, a type error).
    Runtime(String),
}

#[derive(Clone, Debug, PartialEq)]
enum T {
    Num(Value),
    Str(String),
    Name(String),
    Op(&'static str),
    Newline,
}

const OPS: &[&str] = &["//", "**", "==", "!=", "<=", ">=", "+=", "-=", "<", ">", "+", "-", "*", "/", "%", "(", ")", ",", "=", ";"];

fn tokenize(src: &str) -> Result<Vec<T>, CodeError> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut depth = 0i32;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' && b.get(i + 1) == Some(&b'\n') {
            i += 2;
            continue;
        }
        if c == b'\n' {
            if depth == 0 {
                out.push(T::Newline);
            }
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let start = i;
            if c == b'0' && matches!(b.get(i + 1), Some(b'x') | Some(b'X')) {
                i += 2;
                while i < b.len() && b[i].is_ascii_hexdigit() {
                    i += 1;
                }
                let v = i128::from_str_radix(&src[start + 2..i], 16).map_err(|_| unsup(format!("bad number `{}`", &src[start..i])))?;
                out.push(T::Num(Value::Int(v)));
                continue;
            }
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'_') {
                i += 1;
            }
            let s = src[start..i].replace('_', "");
            let v = if s.contains('.') {
                Value::Float(s.parse().map_err(|_| unsup(format!("bad number `{s}`")))?)
            } else {
                Value::Int(s.parse().map_err(|_| unsup(format!("bad number `{s}`")))?)
            };
            out.push(T::Num(v));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(T::Name(src[start..i].to_string()));
            continue;
        }
        if c == b'\'' || c == b'"' {
            let mut j = i + 1;
            let mut s = String::new();
            while j < b.len() && b[j] != c {
                if b[j] == b'\\' && j + 1 < b.len() {
                    s.push(match b[j + 1] {
                        b'n' => '\n',
                        b't' => '\t',
                        o => o as char,
                    });
                    j += 2;
                    continue;
                }
                let ch = src[j..].chars().next().unwrap_or('?');
                s.push(ch);
                j += ch.len_utf8();
            }
            if j >= b.len() {
                return Err(unsup("unterminated string in Python code".into()));
            }
            out.push(T::Str(s));
            i = j + 1;
            continue;
        }
        let Some(op) = OPS.iter().find(|o| src[i..].starts_with(**o)) else {
            return Err(unsup(format!("unsupported character `{}` in Python code", src[i..].chars().next().unwrap_or('?'))));
        };
        match *op {
            "(" => depth += 1,
            ")" => depth -= 1,
            _ => {}
        }
        out.push(T::Op(op));
        i += op.len();
    }
    out.push(T::Newline);
    Ok(out)
}

fn unsup(m: String) -> CodeError {
    CodeError::Unsupported(m)
}

/// An expression tree.
#[derive(Clone, Debug)]
enum E {
    Lit(Value),
    Name(String),
    Neg(Box<E>),
    Not(Box<E>),
    Bin(&'static str, Box<E>, Box<E>),
    And(Box<E>, Box<E>),
    Or(Box<E>, Box<E>),
    Cmp(Box<E>, Vec<(&'static str, E)>),
    Tuple(Vec<E>),
    Call(String, Vec<E>),
}

#[derive(Clone, Debug)]
enum Stmt {
    Assert(E, Option<E>),
    Print(Vec<E>),
    Assign(String, Option<&'static str>, E),
    Expr(E),
}

struct P {
    t: Vec<T>,
    i: usize,
}

impl P {
    fn peek(&self) -> &T {
        self.t.get(self.i).unwrap_or(&T::Newline)
    }
    fn is_op(&self, o: &str) -> bool {
        matches!(self.peek(), T::Op(x) if *x == o)
    }
    fn is_name(&self, n: &str) -> bool {
        matches!(self.peek(), T::Name(x) if x == n)
    }
    fn eat_op(&mut self, o: &str) -> bool {
        if self.is_op(o) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn stmts(&mut self) -> Result<Vec<Stmt>, CodeError> {
        let mut v = Vec::new();
        while self.i < self.t.len() {
            if matches!(self.peek(), T::Newline) || self.is_op(";") {
                self.i += 1;
                continue;
            }
            v.push(self.stmt()?);
            if !(matches!(self.peek(), T::Newline) || self.is_op(";")) {
                return Err(unsup(format!("unsupported Python syntax near {:?}", self.peek())));
            }
        }
        Ok(v)
    }
    fn stmt(&mut self) -> Result<Stmt, CodeError> {
        if self.is_name("assert") {
            self.i += 1;
            let c = self.test()?;
            let m = if self.eat_op(",") { Some(self.expr()?) } else { None };
            return Ok(Stmt::Assert(c, m));
        }
        if self.is_name("print") && matches!(self.t.get(self.i + 1), Some(T::Op("("))) {
            self.i += 2;
            let mut args = Vec::new();
            if !self.eat_op(")") {
                loop {
                    args.push(self.test()?);
                    if self.eat_op(")") {
                        break;
                    }
                    if !self.eat_op(",") {
                        return Err(unsup("expected `,` or `)` in print()".into()));
                    }
                }
            }
            return Ok(Stmt::Print(args));
        }
        if let T::Name(n) = self.peek().clone() {
            if let Some(T::Op(o @ ("=" | "+=" | "-="))) = self.t.get(self.i + 1) {
                let aug = if *o == "=" { None } else { Some(*o) };
                self.i += 2;
                return Ok(Stmt::Assign(n, aug, self.expr()?));
            }
        }
        Ok(Stmt::Expr(self.expr()?))
    }
    /// A tuple or a single test.
    fn expr(&mut self) -> Result<E, CodeError> {
        let first = self.test()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut v = vec![first];
        while self.eat_op(",") {
            if matches!(self.peek(), T::Newline) || self.is_op(")") || self.is_op(";") {
                break;
            }
            v.push(self.test()?);
        }
        Ok(E::Tuple(v))
    }
    fn test(&mut self) -> Result<E, CodeError> {
        let mut l = self.and_test()?;
        while self.is_name("or") {
            self.i += 1;
            l = E::Or(Box::new(l), Box::new(self.and_test()?));
        }
        Ok(l)
    }
    fn and_test(&mut self) -> Result<E, CodeError> {
        let mut l = self.not_test()?;
        while self.is_name("and") {
            self.i += 1;
            l = E::And(Box::new(l), Box::new(self.not_test()?));
        }
        Ok(l)
    }
    fn not_test(&mut self) -> Result<E, CodeError> {
        if self.is_name("not") {
            self.i += 1;
            return Ok(E::Not(Box::new(self.not_test()?)));
        }
        self.comparison()
    }
    fn comparison(&mut self) -> Result<E, CodeError> {
        let l = self.arith()?;
        let mut rest = Vec::new();
        while let T::Op(o @ ("==" | "!=" | "<" | "<=" | ">" | ">=")) = self.peek() {
            let op = *o;
            self.i += 1;
            rest.push((op, self.arith()?));
        }
        Ok(if rest.is_empty() { l } else { E::Cmp(Box::new(l), rest) })
    }
    fn arith(&mut self) -> Result<E, CodeError> {
        let mut l = self.term()?;
        while let T::Op(o @ ("+" | "-")) = self.peek() {
            let o = *o;
            self.i += 1;
            l = E::Bin(o, Box::new(l), Box::new(self.term()?));
        }
        Ok(l)
    }
    fn term(&mut self) -> Result<E, CodeError> {
        let mut l = self.factor()?;
        while let T::Op(o @ ("*" | "/" | "//" | "%")) = self.peek() {
            let o = *o;
            self.i += 1;
            l = E::Bin(o, Box::new(l), Box::new(self.factor()?));
        }
        Ok(l)
    }
    fn factor(&mut self) -> Result<E, CodeError> {
        if self.eat_op("-") {
            return Ok(E::Neg(Box::new(self.factor()?)));
        }
        if self.eat_op("+") {
            return self.factor();
        }
        self.atom()
    }
    fn atom(&mut self) -> Result<E, CodeError> {
        let t = self.peek().clone();
        self.i += 1;
        match t {
            T::Num(v) => Ok(E::Lit(v)),
            T::Str(s) => Ok(E::Lit(Value::Str(s))),
            T::Name(n) if n == "True" || n == "False" => Ok(E::Lit(Value::Bool(n == "True"))),
            T::Name(n) => {
                if self.eat_op("(") {
                    let mut args = Vec::new();
                    if !self.eat_op(")") {
                        loop {
                            args.push(self.test()?);
                            if self.eat_op(")") {
                                break;
                            }
                            if !self.eat_op(",") {
                                return Err(unsup(format!("expected `,` or `)` in call of {n}()")));
                            }
                        }
                    }
                    return Ok(E::Call(n, args));
                }
                Ok(E::Name(n))
            }
            T::Op("(") => {
                if self.eat_op(")") {
                    return Ok(E::Tuple(Vec::new()));
                }
                let first = self.test()?;
                if self.eat_op(")") {
                    return Ok(first);
                }
                let mut v = vec![first];
                while self.eat_op(",") {
                    if self.is_op(")") {
                        break;
                    }
                    v.push(self.test()?);
                }
                if !self.eat_op(")") {
                    return Err(unsup("expected `)`".into()));
                }
                Ok(E::Tuple(v))
            }
            other => Err(unsup(format!("unsupported Python syntax at {other:?}"))),
        }
    }
}

/// The namespace all blocks of one script share, and what they printed.
#[derive(Default)]
pub struct Interp {
    vars: HashMap<String, Value>,
    /// Lines printed by `print()`.
    pub printed: Vec<String>,
}

impl Interp {
    /// A namespace with the symbols packetdrill's `write_symbols()` defines.
    pub fn new() -> Self {
        let mut i = Interp::default();
        for (n, v) in crate::symbols::CODE_SYMBOLS {
            i.vars.insert(n.to_string(), Value::Int(*v as i128));
        }
        i
    }

    /// Sets a variable (the `tcpi_*` fields of a snapshot).
    pub fn set(&mut self, name: &str, v: i128) {
        self.vars.insert(name.to_string(), Value::Int(v));
    }

    /// Runs one block's text.
    pub fn run(&mut self, text: &str) -> Result<(), CodeError> {
        let toks = tokenize(text)?;
        let stmts = P { t: toks, i: 0 }.stmts()?;
        for s in &stmts {
            match s {
                Stmt::Assert(c, m) => {
                    if !truthy(&self.eval(c)?) {
                        let msg = match m {
                            None => "AssertionError".to_string(),
                            Some(m) => match self.eval(m) {
                                Ok(v) => format!("AssertionError: {v}"),
                                Err(CodeError::Unsupported(e)) | Err(CodeError::Runtime(e)) => {
                                    format!("AssertionError (message not evaluated: {e})")
                                }
                                Err(e) => return Err(e),
                            },
                        };
                        return Err(CodeError::Assertion(msg));
                    }
                }
                Stmt::Print(args) => {
                    let mut parts = Vec::new();
                    for a in args {
                        parts.push(self.eval(a)?.to_string());
                    }
                    self.printed.push(parts.join(" "));
                }
                Stmt::Assign(n, aug, e) => {
                    let v = self.eval(e)?;
                    let v = match aug {
                        None => v,
                        Some(o) => {
                            let old = self.lookup(n)?;
                            binop(if *o == "+=" { "+" } else { "-" }, old, v)?
                        }
                    };
                    self.vars.insert(n.clone(), v);
                }
                Stmt::Expr(e) => {
                    self.eval(e)?;
                }
            }
        }
        Ok(())
    }

    fn lookup(&self, n: &str) -> Result<Value, CodeError> {
        match self.vars.get(n) {
            Some(v) => Ok(v.clone()),
            None if n.starts_with("tcpi_") => Err(unsup(format!("{n} is not provided by wirelab's tcp_info"))),
            None => Err(CodeError::Runtime(format!("NameError: name '{n}' is not defined"))),
        }
    }

    fn eval(&self, e: &E) -> Result<Value, CodeError> {
        Ok(match e {
            E::Lit(v) => v.clone(),
            E::Name(n) => self.lookup(n)?,
            E::Neg(x) => match self.eval(x)? {
                Value::Int(i) => Value::Int(i.checked_neg().ok_or_else(|| unsup("integer too large".into()))?),
                Value::Float(f) => Value::Float(-f),
                v => return Err(CodeError::Runtime(format!("TypeError: bad operand for unary -: {v}"))),
            },
            E::Not(x) => Value::Bool(!truthy(&self.eval(x)?)),
            E::And(a, b) => {
                let l = self.eval(a)?;
                if !truthy(&l) {
                    l
                } else {
                    self.eval(b)?
                }
            }
            E::Or(a, b) => {
                let l = self.eval(a)?;
                if truthy(&l) {
                    l
                } else {
                    self.eval(b)?
                }
            }
            E::Bin(o, a, b) => binop(o, self.eval(a)?, self.eval(b)?)?,
            E::Cmp(first, rest) => {
                let mut l = self.eval(first)?;
                for (op, r) in rest {
                    let r = self.eval(r)?;
                    if !compare(op, &l, &r)? {
                        return Ok(Value::Bool(false));
                    }
                    l = r;
                }
                Value::Bool(true)
            }
            E::Tuple(v) => Value::Tuple(v.iter().map(|x| self.eval(x)).collect::<Result<_, _>>()?),
            E::Call(n, args) => {
                let a: Vec<Value> = args.iter().map(|x| self.eval(x)).collect::<Result<_, _>>()?;
                call(n, a)?
            }
        })
    }
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::Str(s) => !s.is_empty(),
        Value::Bool(b) => *b,
        Value::Tuple(t) => !t.is_empty(),
    }
}

fn num(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Bool(b) => Some(*b as i32 as f64),
        _ => None,
    }
}

fn as_int(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(*b as i128),
        _ => None,
    }
}

fn compare(op: &str, l: &Value, r: &Value) -> Result<bool, CodeError> {
    let ord = match (as_int(l), as_int(r)) {
        (Some(a), Some(b)) => a.partial_cmp(&b),
        _ => match (num(l), num(r)) {
            (Some(a), Some(b)) => a.partial_cmp(&b),
            _ => match (l, r) {
                (Value::Str(a), Value::Str(b)) => a.partial_cmp(b),
                _ if op == "==" => return Ok(false),
                _ if op == "!=" => return Ok(true),
                _ => return Err(CodeError::Runtime(format!("TypeError: cannot compare {l} and {r}"))),
            },
        },
    };
    let Some(o) = ord else { return Ok(op == "!=") };
    use std::cmp::Ordering::*;
    Ok(match op {
        "==" => o == Equal,
        "!=" => o != Equal,
        "<" => o == Less,
        "<=" => o != Greater,
        ">" => o == Greater,
        _ => o != Less,
    })
}

fn binop(o: &str, a: Value, b: Value) -> Result<Value, CodeError> {
    if o == "%" {
        if let Value::Str(fmt) = &a {
            return Ok(Value::Str(percent_format(fmt, &b)?));
        }
    }
    if o == "+" {
        if let (Value::Str(x), Value::Str(y)) = (&a, &b) {
            return Ok(Value::Str(format!("{x}{y}")));
        }
    }
    if let (Some(x), Some(y)) = (as_int(&a), as_int(&b)) {
        let zero = || CodeError::Runtime("ZeroDivisionError: division by zero".into());
        let big = || unsup("integer result too large for wirelab's evaluator".into());
        return Ok(match o {
            "+" => Value::Int(x.checked_add(y).ok_or_else(big)?),
            "-" => Value::Int(x.checked_sub(y).ok_or_else(big)?),
            "*" => Value::Int(x.checked_mul(y).ok_or_else(big)?),
            "/" => Value::Float(x as f64 / if y == 0 { return Err(zero()) } else { y as f64 }),
            "//" => Value::Int(x.checked_div_euclid(y).ok_or_else(zero)?),
            "%" => Value::Int(x.checked_rem_euclid(y).ok_or_else(zero)?),
            _ => return Err(unsup(format!("operator {o}"))),
        });
    }
    let (Some(x), Some(y)) = (num(&a), num(&b)) else {
        return Err(CodeError::Runtime(format!("TypeError: unsupported operand types for {o}: {a} and {b}")));
    };
    Ok(Value::Float(match o {
        "+" => x + y,
        "-" => x - y,
        "*" => x * y,
        "/" => x / y,
        "//" => (x / y).floor(),
        "%" => x.rem_euclid(y),
        _ => return Err(unsup(format!("operator {o}"))),
    }))
}

/// `'fmt' % args` for `%d`, `%u`, `%i`, `%s`, `%x`, `%f` and `%%`.
fn percent_format(fmt: &str, args: &Value) -> Result<String, CodeError> {
    let list = match args {
        Value::Tuple(v) => v.clone(),
        v => vec![v.clone()],
    };
    let mut it = list.into_iter();
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let spec = chars.next().ok_or_else(|| CodeError::Runtime("ValueError: incomplete format".into()))?;
        if spec == '%' {
            out.push('%');
            continue;
        }
        let v = it.next().ok_or_else(|| CodeError::Runtime("TypeError: not enough arguments for format string".into()))?;
        match spec {
            'd' | 'i' | 'u' => out.push_str(&as_int(&v).map(|i| i.to_string()).unwrap_or_else(|| v.to_string())),
            'x' => out.push_str(&as_int(&v).map(|i| format!("{i:x}")).unwrap_or_else(|| v.to_string())),
            'f' => out.push_str(&num(&v).map(|f| format!("{f:.6}")).unwrap_or_else(|| v.to_string())),
            's' | 'r' => out.push_str(&v.to_string()),
            other => return Err(unsup(format!("format %{other}"))),
        }
    }
    Ok(out)
}

fn call(n: &str, a: Vec<Value>) -> Result<Value, CodeError> {
    let bad = || CodeError::Runtime(format!("TypeError: bad arguments for {n}()"));
    match n {
        "abs" => match a.as_slice() {
            [Value::Int(i)] => i.checked_abs().map(Value::Int).ok_or_else(bad),
            [Value::Float(f)] => Ok(Value::Float(f.abs())),
            _ => Err(bad()),
        },
        "int" => match a.as_slice() {
            [v] => num(v).map(|f| Value::Int(f.trunc() as i128)).ok_or_else(bad),
            _ => Err(bad()),
        },
        "min" | "max" => {
            let mut best: Option<Value> = None;
            for v in a {
                best = Some(match best {
                    None => v,
                    Some(b) => {
                        let less = compare("<", &v, &b)?;
                        if (n == "min") == less {
                            v
                        } else {
                            b
                        }
                    }
                });
            }
            best.ok_or_else(bad)
        }
        _ => Err(unsup(format!("Python function {n}() is not supported"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(i: &mut Interp, s: &str) -> Result<(), CodeError> {
        i.run(s)
    }

    #[test]
    fn corpus_shapes() {
        let mut i = Interp::new();
        i.set("tcpi_snd_cwnd", 58);
        i.set("tcpi_rwnd_limited", 100_000);
        i.set("tcpi_ca_state", 3);
        run(&mut i, "print(tcpi_snd_cwnd); cwnd = 58; assert tcpi_snd_cwnd == cwnd, tcpi_snd_cwnd").unwrap();
        i.set("tcpi_snd_cwnd", 59);
        run(&mut i, "print(tcpi_snd_cwnd); cwnd += 1; assert tcpi_snd_cwnd == cwnd, tcpi_snd_cwnd").unwrap();
        run(&mut i, "assert 98000 <= tcpi_rwnd_limited <= 110000, tcpi_rwnd_limited;\\\n   assert 0 == 0;\\\n").unwrap();
        run(&mut i, "\nassert tcpi_ca_state == TCP_CA_Recovery, tcpi_ca_state\n# comment\nTCP_INFINITE_SSTHRESH = 0x7fffffff\n").unwrap();
        assert_eq!(i.printed, vec!["58", "59"]);
        let e = run(&mut i, "assert tcpi_snd_cwnd == 12, 'cwnd=%d' % tcpi_snd_cwnd").unwrap_err();
        assert_eq!(e, CodeError::Assertion("AssertionError: cwnd=59".into()));
        let e = run(&mut i, "assert 200000 <= tcpi_rwnd_limited <= 210000").unwrap_err();
        assert_eq!(e, CodeError::Assertion("AssertionError".into()));
    }

    #[test]
    fn message_evaluated_lazily() {
        let mut i = Interp::new();
        i.set("tcpi_ca_state", 3);
        // the message names a field wirelab lacks: only evaluated when the assert fails
        run(&mut i, "assert tcpi_ca_state == TCP_CA_Recovery, 'ca_state: %d min_rtt: %d' % (tcpi_ca_state, tcpi_min_rtt)").unwrap();
        let e = run(&mut i, "assert tcpi_ca_state == TCP_CA_Open, 'x %d' % tcpi_min_rtt").unwrap_err();
        assert!(matches!(e, CodeError::Assertion(m) if m.contains("tcpi_min_rtt")));
        let e = run(&mut i, "assert tcpi_busy_time > 0").unwrap_err();
        assert!(matches!(e, CodeError::Unsupported(m) if m.contains("tcpi_busy_time")));
        let e = run(&mut i, "assert undefined_name").unwrap_err();
        assert!(matches!(e, CodeError::Runtime(m) if m.contains("NameError")));
        for bad in ["import os", "x = [1]", "assert (1", "lambda: 1", "'abc"] {
            assert!(matches!(run(&mut i, bad), Err(CodeError::Unsupported(_))), "{bad}");
        }
    }

    #[test]
    fn arithmetic_and_logic() {
        let mut i = Interp::new();
        run(&mut i, "a = 7 // 2; b = 7 % 3; c = -3 + 2 * 5; d = 1 / 4").unwrap();
        run(&mut i, "assert a == 3 and b == 1 and c == 7 and d == 0.25").unwrap();
        run(&mut i, "assert not (a == 4) or False; assert max(1, a, 2) == 3 and abs(-2) == 2").unwrap();
        assert!(run(&mut i, "assert 1 / 0").is_err());
    }
}
