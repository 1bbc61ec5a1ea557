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
/// `[[array]]` header (with the array index), then the key on the line, then inline-table
/// keys before the offset. A best-effort reading of the text, good for messages.
pub fn key_path_at(source: &str, offset: usize) -> String {
    let offset = offset.min(source.len());
    let line_start = source[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let mut header = String::new();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    // Scan headers up to the line to know the table and the array index.
    for l in source[..line_start].lines() {
        let t = l.trim();
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            let n = counts.entry(name.clone()).or_insert(0);
            header = format!("{name}[{n}]");
            *n += 1;
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            header = name.trim().to_string();
        }
    }
    let line = &source[line_start..];
    let line = line.split('\n').next().unwrap_or("");
    let t = line.trim_start();
    if t.starts_with('[') {
        return t.trim_start_matches('[').split(']').next().unwrap_or("").trim().to_string();
    }
    let mut key = String::new();
    if let Some(eq) = t.find('=') {
        key = t[..eq].trim().trim_matches('"').to_string();
        // inline table keys before the error column: `a = { node = "x", addr = "y" }`
        let col = offset - line_start;
        let lead = line.len() - t.len();
        if col > lead + eq {
            let inner = &line[lead + eq + 1..col.min(line.len())];
            if let Some(brace) = inner.rfind('{') {
                let seg = &inner[brace + 1..];
                if let Some(last) = seg.rsplit(',').next() {
                    if let Some(e2) = last.find('=') {
                        let k2 = last[..e2].trim().trim_matches('"');
                        if !k2.is_empty() {
                            key = format!("{key}.{k2}");
                        }
                    }
                }
            }
        }
    }
    match (header.is_empty(), key.is_empty()) {
        (true, _) => key,
        (false, true) => header,
        (false, false) => format!("{header}.{key}"),
    }
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
}
