//! The `wirelab packetdrill` command (shared by the Rust binary's clap front end and the
//! Python one): runs scripts, prints one `PASS`/`FAIL`/`UNSUPPORTED` line per script and
//! the failure message, optionally a JSON file. Exit code: 0 all passed, 1 a script
//! failed, 2 a script could not be parsed or uses something unsupported.
use crate::{run_file, Options};
use std::path::{Path, PathBuf};

/// Parses `-D NAME=VALUE` definitions into `opts`; the error names the bad one.
pub fn add_defines(opts: &mut Options, defines: &[String]) -> Result<(), String> {
    for d in defines {
        let Some((k, v)) = d.split_once('=') else {
            return Err(format!("-D {d}: expected NAME=VALUE"));
        };
        opts.defines.insert(k.to_string(), v.to_string());
    }
    Ok(())
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Runs `scripts` with `opts`; `verbose` prints notes, print() output and the packet
/// trace; `json` writes one object per script (path, status, rc, message, notes).
/// Returns the exit code.
pub fn command(scripts: &[PathBuf], opts: &Options, verbose: bool, json: Option<&Path>) -> i32 {
    let opts = Options { trace: opts.trace || verbose, ..opts.clone() };
    let mut worst = 0;
    let mut rows = Vec::new();
    for p in scripts {
        let o = run_file(p, &opts);
        let code = o.exit_code();
        let tag = match code {
            0 => "PASS",
            1 => "FAIL",
            _ => "UNSUPPORTED",
        };
        println!("{tag} {}", p.display());
        if !o.message.is_empty() {
            eprintln!("{}", o.message);
        }
        if verbose {
            for l in &o.trace {
                println!("  {l}");
            }
            for n in &o.notes {
                eprintln!("  note: {n}");
            }
            for l in &o.printed {
                println!("  {l}");
            }
        }
        // 2 (cannot run) outranks 1 (failed)
        worst = worst.max(code);
        let notes: Vec<String> = o.notes.iter().map(|n| json_str(n)).collect();
        rows.push(format!(
            "  {{\"path\": {}, \"status\": {}, \"rc\": {code}, \"message\": {}, \"notes\": [{}]}}",
            json_str(&p.display().to_string()),
            json_str(tag),
            json_str(&o.message),
            notes.join(", ")
        ));
    }
    if let Some(j) = json {
        let text = format!("[\n{}\n]\n", rows.join(",\n"));
        if let Err(e) = std::fs::write(j, text) {
            eprintln!("error: cannot write {}: {e}", j.display());
            return worst.max(1);
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes() {
        assert_eq!(json_str("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
    }

    #[test]
    fn defines_need_equals() {
        let mut o = Options::default();
        assert!(add_defines(&mut o, &["A=1".into()]).is_ok());
        assert_eq!(o.defines.get("A").map(String::as_str), Some("1"));
        assert!(add_defines(&mut o, &["B".into()]).unwrap_err().contains("NAME=VALUE"));
    }
}
