//! `--set key=value` overrides, applied to the TOML text before parsing so that error
//! positions still point into (nearly) the user's file.
use crate::ScenarioError;
use core::ops::Range;
use toml_edit::{DocumentMut, Item, TableLike, Value};

type Seg = (String, Option<usize>);

/// Where each override landed in the text [`apply_overrides_located`] returns: the byte
/// range of its `key = value`, and the override as the user wrote it. An error whose
/// position falls in such a range is the override's fault, not the file's
/// ([`crate::Scenario::error_at`] names the override then, not a line of the file).
pub type OverrideSpans = Vec<(Range<usize>, String)>;

/// Applies `key=value` overrides. Keys are dotted paths; arrays of tables are addressed
/// by index (`link[1].netem`) or by their `name` (`link.bottleneck.netem`). A segment in
/// double quotes may contain dots, and everything after `sysctl.` is one sysctl name, so
/// `node.h1.sysctl.net.sctp.autotune=faithful` and `node.h1.sysctl."net.sctp.autotune"=...`
/// both work (a missing `sysctl` table is created). Values are parsed as TOML (`20`,
/// `true`, `"x"`) and otherwise taken as strings (`20s`).
pub fn apply_overrides(file: &str, text: &str, overrides: &[String]) -> Result<String, ScenarioError> {
    apply_overrides_located(file, text, overrides).map(|(t, _)| t)
}

/// [`apply_overrides`], also returning where each override landed in the new text.
pub fn apply_overrides_located(file: &str, text: &str, overrides: &[String]) -> Result<(String, OverrideSpans), ScenarioError> {
    let err = |msg: String| ScenarioError { file: file.to_string(), line: 0, col: 0, key: String::new(), message: msg };
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        ScenarioError::at(file, text, e.span().map(|s| s.start).unwrap_or(0), None, e.message().to_string())
    })?;
    for ov in overrides {
        let (path, raw) = ov.split_once('=').ok_or_else(|| err(format!("override `{ov}` is not KEY=VALUE")))?;
        let raw = raw.trim();
        let value: Value = match format!("v = {raw}").parse::<DocumentMut>() {
            Ok(d) => d.get("v").and_then(|i| i.as_value()).cloned().unwrap_or_else(|| Value::from(raw)),
            Err(_) => Value::from(raw),
        };
        let segs = split_path(path.trim());
        if segs.is_empty() {
            return Err(err(format!("override `{ov}` has an empty key")));
        }
        set(doc.as_table_mut(), &segs, value).map_err(|m| ScenarioError { key: path.trim().to_string(), ..err(format!("--set `{ov}`: {m}")) })?;
    }
    let out = doc.to_string();
    // the spans of the overridden values in the new text (a re-parse keeps positions)
    let mut spans = OverrideSpans::new();
    if let Ok(d) = toml_edit::Document::parse(out.as_str()) {
        for ov in overrides {
            let Some((path, _)) = ov.split_once('=') else { continue };
            if let Some(r) = locate(d.as_table(), &split_path(path.trim())) {
                spans.push((r, ov.clone()));
            }
        }
    }
    Ok((out, spans))
}

/// The byte range of `key = value` that `segs` addresses (the same addressing as `set`).
fn locate(t: &dyn TableLike, segs: &[Seg]) -> Option<Range<usize>> {
    let ((name, idx), rest) = segs.split_first()?;
    let (k, item) = t.get_key_value(name)?;
    if rest.is_empty() && idx.is_none() {
        let (ks, vs) = (k.span()?, item.span()?);
        return Some(ks.start.min(vs.start)..ks.end.max(vs.end));
    }
    match item {
        Item::ArrayOfTables(arr) => {
            let (pos, rest) = match idx {
                Some(i) => (*i, rest),
                None => {
                    let want = rest.first().map(|s| s.0.as_str())?;
                    (arr.iter().position(|e| e.get("name").and_then(|v| v.as_str()) == Some(want))?, &rest[1..])
                }
            };
            locate(arr.get(pos)?, rest)
        }
        other if idx.is_none() => locate(other.as_table_like()?, rest),
        _ => None,
    }
}

fn set(t: &mut dyn TableLike, segs: &[Seg], value: Value) -> Result<(), String> {
    let (name, idx) = &segs[0];
    let rest = &segs[1..];
    if rest.is_empty() && idx.is_none() {
        match t.get_mut(name) {
            Some(Item::Value(v)) if !v.is_inline_table() => {
                *v = value;
                return Ok(());
            }
            Some(Item::None) | None => {
                t.insert(name, Item::Value(value));
                return Ok(());
            }
            Some(_) => return Err(format!("`{name}` is a table, not a value")),
        }
    }
    if t.get(name).is_none() && name == "sysctl" && idx.is_none() {
        t.insert(name, Item::Table(toml_edit::Table::new()));
    }
    let item = t.get_mut(name).ok_or_else(|| format!("no key `{name}` in the scenario"))?;
    match item {
        Item::ArrayOfTables(arr) => {
            let (pos, rest) = match idx {
                Some(k) => (*k, rest),
                None => {
                    let want = rest.first().map(|s| s.0.as_str()).unwrap_or("");
                    let names: Vec<&str> = arr.iter().filter_map(|e| e.get("name").and_then(|v| v.as_str())).collect();
                    let p = arr.iter().position(|e| e.get("name").and_then(|v| v.as_str()) == Some(want)).ok_or_else(|| {
                        let named = if names.is_empty() { format!("no `{name}` entry has a `name`") } else { format!("named ones: {}", names.join(", ")) };
                        format!("no `{name}` entry is named `{want}` ({named}); address an entry by its `name` or as {name}[N], N = 0..{}", arr.len().saturating_sub(1))
                    })?;
                    (p, &rest[1.min(rest.len())..])
                }
            };
            let len = arr.len();
            let entry = arr.get_mut(pos).ok_or_else(|| format!("`{name}` has only {len} entries"))?;
            if rest.is_empty() {
                return Err("cannot replace a whole table".into());
            }
            set(entry, rest, value)
        }
        other => {
            if idx.is_some() {
                return Err(format!("`{name}` is not a list"));
            }
            let tl = other.as_table_like_mut().ok_or_else(|| format!("`{name}` is a value, not a table"))?;
            set(tl, rest, value)
        }
    }
}

fn split_path(p: &str) -> Vec<Seg> {
    // split on dots outside double quotes
    let mut parts: Vec<(String, bool)> = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut was_quoted = false;
    for ch in p.chars() {
        match ch {
            '"' => {
                quoted = !quoted;
                was_quoted = true;
            }
            '.' if !quoted => {
                parts.push((std::mem::take(&mut cur), was_quoted));
                was_quoted = false;
            }
            c => cur.push(c),
        }
    }
    parts.push((cur, was_quoted));
    let mut segs: Vec<Seg> = Vec::new();
    let mut i = 0;
    while i < parts.len() {
        let (s, q) = &parts[i];
        i += 1;
        if s.is_empty() {
            continue;
        }
        if *q {
            segs.push((s.clone(), None));
            continue;
        }
        let seg = match s.split_once('[') {
            Some((n, rest)) => (n.to_string(), rest.trim_end_matches(']').parse().ok()),
            None => (s.clone(), None),
        };
        let is_sysctl = seg.0 == "sysctl" && seg.1.is_none();
        segs.push(seg);
        if is_sysctl && i < parts.len() {
            // a sysctl name is dotted: the rest of the path is one key
            let rest: Vec<&str> = parts[i..].iter().map(|(x, _)| x.as_str()).collect();
            segs.push((rest.join("."), None));
            break;
        }
    }
    segs
}

#[cfg(test)]
mod test {
    use super::*;
    const SRC: &str = "[scenario]\nname = \"x\"\nduration = \"10s\"\n\n[[link]]\nname = \"bn\"\nnetem = \"rate 1mbit\"\na = { node = \"h1\" }\n";

    #[test]
    fn set_values() {
        let out = apply_overrides("f", SRC, &["scenario.duration=20s".into(), "link.bn.netem=rate 2mbit".into(), "scenario.seed=7".into(), "link[0].a.node=h2".into()]).unwrap();
        assert!(out.contains("duration = \"20s\""), "{out}");
        assert!(out.contains("netem = \"rate 2mbit\""), "{out}");
        assert!(out.contains("seed = 7"), "{out}");
        assert!(out.contains("node = \"h2\""), "{out}");
        // lines of untouched keys move only by the one inserted key (`seed`)
        let before = SRC.lines().position(|l| l.starts_with("[[link]]")).unwrap();
        assert_eq!(out.lines().position(|l| l.starts_with("[[link]]")), Some(before + 1));
    }

    #[test]
    fn sysctl_names_keep_their_dots() {
        let src = "[scenario]\nname = \"x\"\nduration = \"1s\"\n\n[[node]]\nname = \"h1\"\n\n[[node]]\nname = \"h2\"\nsysctl = { \"net.ipv4.tcp_sack\" = 0 }\n";
        let out = apply_overrides("f", src, &["node.h1.sysctl.net.sctp.autotune=faithful".into(), "node.h2.sysctl.\"net.ipv4.tcp_sack\"=1".into()]).unwrap();
        let doc: toml::Table = toml::from_str(&out).unwrap();
        let nodes = doc["node"].as_array().unwrap();
        assert_eq!(nodes[0]["sysctl"]["net.sctp.autotune"].as_str(), Some("faithful"), "{out}");
        assert_eq!(nodes[1]["sysctl"]["net.ipv4.tcp_sack"].as_integer(), Some(1), "{out}");
    }

    #[test]
    fn spans_cover_each_override() {
        let ovs = ["link.bn.netem=rate 2mbit".to_string(), "scenario.seed=7".into(), "link[0].a.node=h2".into()];
        let (out, spans) = apply_overrides_located("f", SRC, &ovs).unwrap();
        let texts: Vec<&str> = spans.iter().map(|(r, _)| &out[r.clone()]).collect();
        assert_eq!(texts, ["netem = \"rate 2mbit\"", "seed = 7", "node = \"h2\""]);
        assert_eq!(spans.iter().map(|s| s.1.as_str()).collect::<Vec<_>>(), ovs.iter().map(String::as_str).collect::<Vec<_>>());
    }

    #[test]
    fn bad_paths() {
        assert!(apply_overrides("f", SRC, &["nokey".into()]).is_err());
        let e = apply_overrides("f", SRC, &["link.nope.netem=x".into()]).unwrap_err();
        assert_eq!(e.message, "--set `link.nope.netem=x`: no `link` entry is named `nope` (named ones: bn); address an entry by its `name` or as link[N], N = 0..0", "{e}");
        assert!(apply_overrides("f", SRC, &["link[3].netem=x".into()]).is_err());
    }
}
