//! Tokens of the packetdrill language, as packetdrill's `lexer.l` (flex) produces them:
//! longest match first, and on a tie the rule that comes first in `lexer.l` (float,
//! integer, hex, word, IPv4 address). Keywords (`ack`, `win`, `mss`, …) are plain words
//! here; the parser compares their text.
//!
//! Bad input (an unterminated comment, string or code block) is an error with the line
//! where the construct began; a byte the grammar has no use for becomes a [`Tok::Punct`]
//! that the parser reports as a syntax error.
use std::collections::HashMap;

/// One token.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// `--name` or `--name=value` (the value is the raw text up to the next blank).
    Opt(String, Option<String>),
    /// `[-]?[0-9]*.[0-9]+` with its source text (flags like `S.1` need the text).
    Float(f64, String),
    /// `[-]?[0-9]+`.
    Int(i64),
    /// `0x[0-9a-fA-F]+`.
    Hex(i64),
    /// `[a-zA-Z0-9_]+`.
    Word(String),
    /// `"..."` without the quotes.
    Str(String),
    /// `` `...` `` without the quotes: a shell command.
    BackQuoted(String),
    /// `%{ ... }%` with blanks stripped at both ends.
    Code(String),
    /// `...`
    Ellipsis,
    /// `a.b.c.d`
    Ipv4(String),
    /// Any other single character.
    Punct(char),
}

/// A token and the line it starts on (1-based).
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Line of its first character.
    pub line: u32,
}

/// A lexical error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    /// Line where the bad construct begins.
    pub line: u32,
    /// What is wrong.
    pub msg: String,
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Length of `[0-9]+` at `i`.
fn digits(b: &[u8], i: usize) -> usize {
    b[i..].iter().take_while(|c| c.is_ascii_digit()).count()
}

/// Longest match of each numeric/word rule at `i`; 0 where the rule does not match.
fn candidates(b: &[u8], i: usize) -> [usize; 5] {
    let neg = (b[i] == b'-') as usize;
    // FLOAT: [-]?[0-9]*[.][0-9]+
    let mut float = 0;
    let d0 = digits(b, i + neg);
    let dot = i + neg + d0;
    if dot < b.len() && b[dot] == b'.' {
        let d1 = if dot + 1 < b.len() { digits(b, dot + 1) } else { 0 };
        if d1 > 0 {
            float = neg + d0 + 1 + d1;
        }
    }
    // INTEGER: [-]?[0-9]+
    let int = if d0 > 0 { neg + d0 } else { 0 };
    // HEX: 0x[0-9a-fA-F]+
    let mut hex = 0;
    if neg == 0 && b[i] == b'0' && i + 1 < b.len() && b[i + 1] == b'x' {
        let h = b[i + 2..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if h > 0 {
            hex = 2 + h;
        }
    }
    // WORD: [a-zA-Z0-9_]+
    let word = if neg == 0 { b[i..].iter().take_while(|c| is_word(**c)).count() } else { 0 };
    // IPV4: [0-9]+.[0-9]+.[0-9]+.[0-9]+
    let mut ipv4 = 0;
    if neg == 0 {
        let mut j = i;
        let mut ok = true;
        for k in 0..4 {
            let d = if j < b.len() { digits(b, j) } else { 0 };
            if d == 0 {
                ok = false;
                break;
            }
            j += d;
            if k < 3 {
                if j < b.len() && b[j] == b'.' {
                    j += 1;
                } else {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            ipv4 = j - i;
        }
    }
    [float, int, hex, word, ipv4]
}

/// Splits `src` into tokens. `defines` maps `-D NAME=VALUE` symbols: a word equal to a
/// defined name becomes its value (an integer, a string, a back-quoted command or a word).
pub fn lex(src: &[u8], defines: &HashMap<String, String>) -> Result<Vec<Token>, LexError> {
    let text = String::from_utf8_lossy(src);
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line: u32 = 1;
    let count_nl = |s: &[u8]| s.iter().filter(|&&c| c == b'\n').count() as u32;
    while i < b.len() {
        let c = b[i];
        let start_line = line;
        match c {
            b'\n' => {
                line += 1;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let Some(end) = find(b, i + 2, b"*/") else {
                    return Err(LexError { line, msg: "unterminated /* comment".into() });
                };
                line += count_nl(&b[i..end + 2]);
                i = end + 2;
                continue;
            }
            b'%' if b.get(i + 1) == Some(&b'{') => {
                let Some(end) = find(b, i + 2, b"}%") else {
                    return Err(LexError { line, msg: "unterminated %{ code block (missing }%)".into() });
                };
                let body = &text[i + 2..end];
                line += count_nl(&b[i..end + 2]);
                out.push(Token { tok: Tok::Code(body.trim_matches([' ', '\t']).to_string()), line: start_line });
                i = end + 2;
                continue;
            }
            b'`' | b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != c {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                if j >= b.len() {
                    let what = if c == b'`' { "back-quoted command" } else { "string" };
                    return Err(LexError { line, msg: format!("unterminated {what}") });
                }
                let body = text[i + 1..j].to_string();
                line += count_nl(&b[i..j]);
                let tok = if c == b'`' { Tok::BackQuoted(body) } else { Tok::Str(body) };
                out.push(Token { tok, line: start_line });
                i = j + 1;
                continue;
            }
            b'.' if b[i..].starts_with(b"...") => {
                out.push(Token { tok: Tok::Ellipsis, line });
                i += 3;
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-') && b.get(i + 2).is_some_and(|c| is_word(*c)) => {
                let n = b[i + 2..].iter().take_while(|c| is_word(**c)).count();
                let name = text[i + 2..i + 2 + n].to_string();
                i += 2 + n;
                let mut value = None;
                if b.get(i) == Some(&b'=') {
                    let v = b[i + 1..].iter().take_while(|c| !c.is_ascii_whitespace()).count();
                    value = Some(text[i + 1..i + 1 + v].to_string());
                    i += 1 + v;
                }
                out.push(Token { tok: Tok::Opt(name, value), line });
                continue;
            }
            _ => {}
        }
        let starts_number = c.is_ascii_digit()
            || is_word(c)
            || (c == b'-' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit() || *d == b'.'))
            || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit()));
        if starts_number {
            let cand = candidates(b, i);
            let best = *cand.iter().max().unwrap_or(&0);
            if best > 0 {
                let rule = cand.iter().position(|&l| l == best).unwrap_or(3);
                let s = &text[i..i + best];
                let tok = match rule {
                    0 => Tok::Float(s.parse().map_err(|_| LexError { line, msg: format!("bad number `{s}`") })?, s.to_string()),
                    1 => Tok::Int(s.parse().map_err(|_| LexError { line, msg: format!("integer `{s}` out of range") })?),
                    2 => Tok::Hex(
                        i64::from_str_radix(&s[2..], 16)
                            .map_err(|_| LexError { line, msg: format!("hex number `{s}` out of range") })?,
                    ),
                    3 => word_token(s, defines),
                    _ => Tok::Ipv4(s.to_string()),
                };
                out.push(Token { tok, line });
                i += best;
                continue;
            }
        }
        // any other character: one punctuation token (a UTF-8 sequence counts as one)
        let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
        out.push(Token { tok: Tok::Punct(ch), line });
        i += ch.len_utf8();
    }
    Ok(out)
}

fn word_token(s: &str, defines: &HashMap<String, String>) -> Tok {
    let Some(v) = defines.get(s) else { return Tok::Word(s.to_string()) };
    if let Some(q) = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        return Tok::Str(q.to_string());
    }
    if let Some(q) = v.strip_prefix('`').and_then(|v| v.strip_suffix('`')) {
        return Tok::BackQuoted(q.to_string());
    }
    let parsed = if let Some(h) = v.strip_prefix("0x") { i64::from_str_radix(h, 16).ok() } else { v.parse::<i64>().ok() };
    match parsed {
        Some(n) => Tok::Int(n),
        None => Tok::Word(v.clone()),
    }
}

fn find(b: &[u8], from: usize, pat: &[u8]) -> Option<usize> {
    if from > b.len() {
        return None;
    }
    b[from..].windows(pat.len()).position(|w| w == pat).map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s.as_bytes(), &HashMap::new()).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn times_and_ranges() {
        assert_eq!(
            toks("+.3~+.303 > P."),
            vec![
                Tok::Punct('+'),
                Tok::Float(0.3, ".3".into()),
                Tok::Punct('~'),
                Tok::Punct('+'),
                Tok::Float(0.303, ".303".into()),
                Tok::Punct('>'),
                Tok::Word("P".into()),
                Tok::Punct('.'),
            ]
        );
        assert_eq!(
            toks("+0...0.200 accept"),
            vec![Tok::Punct('+'), Tok::Int(0), Tok::Ellipsis, Tok::Float(0.2, "0.200".into()), Tok::Word("accept".into())]
        );
    }

    #[test]
    fn longest_match_and_rule_order() {
        assert_eq!(toks("0x2 1000 192.168.0.1 sackOK -1"), vec![
            Tok::Hex(2),
            Tok::Int(1000),
            Tok::Ipv4("192.168.0.1".into()),
            Tok::Word("sackOK".into()),
            Tok::Int(-1)
        ]);
        assert_eq!(toks("1:1001(1000)"), vec![
            Tok::Int(1),
            Tok::Punct(':'),
            Tok::Int(1001),
            Tok::Punct('('),
            Tok::Int(1000),
            Tok::Punct(')')
        ]);
        assert_eq!(toks("< - 1"), vec![Tok::Punct('<'), Tok::Punct('-'), Tok::Int(1)]);
    }

    #[test]
    fn comments_code_commands_lines() {
        let t = lex(b"// c\n/* a\nb */ x %{ assert 1\n}% `cmd\n2`\n--tolerance_usecs=10000 y", &HashMap::new()).unwrap();
        assert_eq!(t[0], Token { tok: Tok::Word("x".into()), line: 3 });
        assert_eq!(t[1], Token { tok: Tok::Code("assert 1\n".into()), line: 3 });
        assert_eq!(t[2], Token { tok: Tok::BackQuoted("cmd\n2".into()), line: 4 });
        assert_eq!(t[3], Token { tok: Tok::Opt("tolerance_usecs".into(), Some("10000".into())), line: 6 });
        assert_eq!(t[4].line, 6);
    }

    #[test]
    fn unterminated_constructs_name_their_line() {
        for (src, what) in [("a\n/* x", "comment"), ("a\n%{ x", "code"), ("a\n`x", "back-quoted"), ("a\n\"x", "string")] {
            let e = lex(src.as_bytes(), &HashMap::new()).unwrap_err();
            assert_eq!(e.line, 2, "{src}");
            assert!(e.msg.contains(what), "{}", e.msg);
        }
        let e = lex(b"99999999999999999999999", &HashMap::new()).unwrap_err();
        assert!(e.msg.contains("out of range"));
    }

    #[test]
    fn defines_substitute_words() {
        let mut d = HashMap::new();
        d.insert("CODE".to_string(), "host_unreachable".to_string());
        d.insert("N".to_string(), "42".to_string());
        d.insert("S".to_string(), "\"abc\"".to_string());
        assert_eq!(toks_with("CODE N S", &d), vec![Tok::Word("host_unreachable".into()), Tok::Int(42), Tok::Str("abc".into())]);
    }

    fn toks_with(s: &str, d: &HashMap<String, String>) -> Vec<Tok> {
        lex(s.as_bytes(), d).unwrap().into_iter().map(|t| t.tok).collect()
    }
}
