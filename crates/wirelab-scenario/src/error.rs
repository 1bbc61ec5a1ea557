//! Errors that name file, line, column and key.
use core::fmt;

/// A scenario problem, located in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// File name as given.
    pub file: String,
    /// 1-based line (0 if the error concerns the whole file).
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// Dotted key path, e.g. `link[1].netem` (empty if unknown).
    pub key: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: ", self.file)?;
        } else {
            write!(f, "{}:{}:{}: ", self.file, self.line, self.col)?;
        }
        if !self.key.is_empty() {
            write!(f, "key `{}`: ", self.key)?;
        }
        write!(f, "{}", self.message)
    }
}
impl std::error::Error for ScenarioError {}

impl ScenarioError {
    /// An error at byte `offset` of `source`; the key path is derived from the position
    /// unless given.
    pub fn at(file: &str, source: &str, offset: usize, key: Option<String>, message: String) -> Self {
        let offset = offset.min(source.len());
        let before = &source[..offset];
        let line = before.matches('\n').count() + 1;
        let col = offset - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
        ScenarioError {
            file: file.to_string(),
            line,
            col,
            key: key.unwrap_or_else(|| key_path_at(source, offset)),
            message,
        }
    }
}

/// The dotted key path of the value at byte `offset`: the enclosing `[table]` or
/// `[[array]]` header (with the array index), then the key of the statement, then the
/// keys and element indices of inline tables and arrays around the offset
/// (`event[1].mss` for the second `{ … }` of `event = [ … ]`). A best-effort reading of
/// the text (strings and comments skipped), good for messages.
pub fn key_path_at(source: &str, offset: usize) -> String {
    let offset = offset.min(source.len());
    let line_start = source[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let mut header = String::new();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    // Scan headers up to the line to know the table and the array index; the statements
    // of that table start after its header line.
    let mut section_start = 0;
    let mut pos = 0;
    for l in source[..line_start].split_inclusive('\n') {
        pos += l.len();
        let t = l.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            let n = counts.entry(name.clone()).or_insert(0);
            header = format!("{name}[{n}]");
            *n += 1;
            section_start = pos;
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            header = name.trim().to_string();
            section_start = pos;
        }
    }
    let line = source[line_start..].split('\n').next().unwrap_or("");
    let t = line.trim_start();
    if t.starts_with('[') && !source[..line_start].trim_end().ends_with([',', '[', '=']) {
        return t.trim_start_matches('[').split(']').next().unwrap_or("").trim().to_string();
    }
    let key = inline_key_path(&source[section_start..offset], word_at(&source[offset..]));
    match (header.is_empty(), key.is_empty()) {
        (true, _) => key,
        (false, true) => header,
        (false, false) => format!("{header}.{key}"),
    }
}

/// The bare key that starts `s` (`bogus` of `bogus = 1 }`), if any.
fn word_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')).unwrap_or(s.len());
    let w = &s[..end];
    if s[end..].trim_start().starts_with('=') {
        w
    } else {
        ""
    }
}

/// One open `{` or `[` of a value being scanned.
enum Open {
    /// An inline table and the key whose value is being read (empty before its `=`).
    Table(String),
    /// An array and the index of the element being read.
    Array(usize),
}

/// The key path at the end of `text` (statements of one table, cut at the error): the
/// statement's key, then `.key` per open inline table and `[i]` per open array. `at` is
/// the bare key the error points at (an unknown key), if any.
fn inline_key_path(text: &str, at: &str) -> String {
    let mut root = String::new();
    let mut token = String::new(); // key characters read since the last `=`, `,` or `{`
    let mut stack: Vec<Open> = Vec::new();
    let mut in_value = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' => {
                // read the string (basic strings honour backslash escapes); kept only as a
                // quoted key (`"net.ipv4.tcp_sack" = 1`)
                let mut esc = false;
                let mut text = String::new();
                for d in chars.by_ref() {
                    if c == '"' && !esc && d == '\\' {
                        esc = true;
                        continue;
                    }
                    if d == c && !esc {
                        break;
                    }
                    esc = false;
                    text.push(d);
                }
                if !in_value || matches!(stack.last(), Some(Open::Table(k)) if k.is_empty()) {
                    token.push_str(&text);
                }
            }
            '#' => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
                if stack.is_empty() {
                    in_value = false;
                    root.clear();
                    token.clear();
                }
            }
            '\n' if stack.is_empty() => {
                in_value = false;
                root.clear();
                token.clear();
            }
            '=' if !in_value => {
                root = token.trim().to_string();
                token.clear();
                in_value = true;
            }
            '=' => {
                if let Some(Open::Table(k)) = stack.last_mut() {
                    *k = token.trim().to_string();
                }
                token.clear();
            }
            '{' if in_value => {
                stack.push(Open::Table(String::new()));
                token.clear();
            }
            '[' if in_value => stack.push(Open::Array(0)),
            '}' | ']' if in_value => {
                stack.pop();
            }
            ',' if in_value => {
                match stack.last_mut() {
                    Some(Open::Array(i)) => *i += 1,
                    Some(Open::Table(k)) => k.clear(),
                    None => {}
                }
                token.clear();
            }
            _ if !in_value || matches!(stack.last(), Some(Open::Table(k)) if k.is_empty()) => token.push(c),
            _ => {}
        }
    }
    let mut path = if in_value { root } else { at.to_string() };
    for o in &stack {
        match o {
            Open::Array(i) => path.push_str(&format!("[{i}]")),
            Open::Table(k) if !k.is_empty() => {
                path.push('.');
                path.push_str(k);
            }
            Open::Table(_) => {}
        }
    }
    if matches!(stack.last(), Some(Open::Table(k)) if k.is_empty()) && !at.is_empty() {
        path.push('.');
        path.push_str(at);
    }
    path
}

#[cfg(test)]
mod test {
    use super::*;
    #[test]
    fn key_paths() {
        let src = "[scenario]\nname = \"x\"\n[[link]]\nnetem = \"a\"\n[[link]]\na = { node = \"h1\", addr = \"bad\" }\n";
        let off = src.find("bad").unwrap();
        assert_eq!(key_path_at(src, off), "link[1].a.addr");
        let off = src.find("\"a\"").unwrap();
        assert_eq!(key_path_at(src, off), "link[0].netem");
        let e = ScenarioError::at("f.toml", src, src.find("name").unwrap(), None, "m".into());
        assert_eq!((e.line, e.col, e.key.as_str()), (2, 1, "scenario.name"));
        assert_eq!(e.to_string(), "f.toml:2:1: key `scenario.name`: m");
    }

    /// Arrays of inline tables (`event = [ {…}, {…} ]`, one line or many): the element
    /// index and the key inside it, not the text before the first `=` of the line.
    #[test]
    fn key_paths_in_arrays_of_inline_tables() {
        let src = "app = [\n    { name = \"s\", port = 1 },\n]\nevent = [\n    { at = \"4s\", mss = 500 },\n    { at = \"8s\", app = \"t,{x}\", mss = 40, bogus = 1 },\n]\n\n[scenario]\nname = \"x\"\n";
        assert_eq!(key_path_at(src, src.find("bogus").unwrap()), "event[1].bogus");
        assert_eq!(key_path_at(src, src.find("40").unwrap()), "event[1].mss");
        assert_eq!(key_path_at(src, src.find("500").unwrap()), "event[0].mss");
        assert_eq!(key_path_at(src, src.find("port").unwrap()), "app[0].port");
        assert_eq!(key_path_at(src, src.find("\"x\"").unwrap()), "scenario.name");
        let one = "event = [{ at = \"1s\", link = \"l\" }, { at = \"2s\", bogus = 1 }] # c\n";
        assert_eq!(key_path_at(one, one.find("bogus").unwrap()), "event[1].bogus");
        let nested = "[[node]]\nname = \"n\"\nsysctl = { \"net.ipv4.tcp_sack\" = 2 }\n";
        assert_eq!(key_path_at(nested, nested.find('2').unwrap()), "node[0].sysctl.net.ipv4.tcp_sack");
    }
}
