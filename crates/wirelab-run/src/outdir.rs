//! A run owns its output directory (issue 21, item 3).
//!
//! Re-running into a directory used to leave the previous run's pcaps, probe files and
//! report beside the new ones, and `Result`/`wirelab report` then mixed them. Now, before a
//! run writes anything, [`prepare`] looks at `--out`:
//!
//! * missing or empty: created / used;
//! * written by an earlier `wirelab run` (it has [`MARKER`], or a `summary.json` from a
//!   wirelab older than the marker): every file that run wrote is removed (the marker
//!   lists them; the older summary.json lists them under `files`), together with what was
//!   derived from them (`report.html`, `TABLE.parquet`); files the user put there stay;
//! * anything else that is not empty is refused (exit 2) unless `force`, which writes into
//!   it and removes nothing. The run's own scenario file, when it lies in `out` (a study
//!   writes `out/scenario.toml` and runs it there), does not make the directory foreign.
//!
//! The marker is written before the run starts and lists every file the run may write, so
//! a run killed half-way is cleared like a finished one.
use std::path::{Path, PathBuf};

/// The file that marks a directory as a `wirelab run` output and lists what the run wrote.
pub const MARKER: &str = ".wirelab-run.json";

/// Files derived from a run's tables by the Python layer (`wirelab report`,
/// `Result.to_parquet()`): removed with the run.
const DERIVED: &[&str] = &["report.html"];

/// What [`prepare`] did to an existing directory.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cleared {
    /// Files of the previous run that were removed (relative paths).
    pub removed: Vec<String>,
}

/// Makes `out` ready for a run: creates it, clears an earlier run's files, or refuses a
/// foreign non-empty directory unless `force`. `inputs` are the files the run reads (its
/// scenario): those in `out` are not foreign. Errors are `(exit code, message)`.
pub fn prepare(out: &Path, force: bool, inputs: &[&Path]) -> Result<Cleared, (i32, String)> {
    if out.exists() && !out.is_dir() {
        return Err((2, format!("error: --out {} exists and is not a directory", out.display())));
    }
    if !out.exists() {
        std::fs::create_dir_all(out).map_err(|e| (1, format!("error: cannot create {}: {e}", out.display())))?;
        return Ok(Cleared::default());
    }
    let mut entries = list(out).map_err(|e| (1, format!("error: cannot read {}: {e}", out.display())))?;
    let own = std::fs::canonicalize(out).ok();
    entries.retain(|name| {
        !inputs.iter().any(|i| {
            let (Some(own), Ok(i)) = (&own, std::fs::canonicalize(i)) else { return false };
            i.parent() == Some(own.as_path()) && i.file_name().map(|f| f.to_string_lossy() == name.as_str()).unwrap_or(false)
        })
    });
    if entries.is_empty() {
        return Ok(Cleared::default());
    }
    let previous = previous_files(out);
    let Some(files) = previous else {
        if force {
            return Ok(Cleared::default());
        }
        let shown: Vec<String> = entries.iter().take(5).cloned().collect();
        let more = if entries.len() > 5 { format!(" and {} more", entries.len() - 5) } else { String::new() };
        return Err((
            2,
            format!(
                "error: --out {} is not empty and was not written by `wirelab run` (it holds {}{more}); \
                 choose another directory, empty it, or pass --force to write into it anyway",
                out.display(),
                shown.join(", ")
            ),
        ));
    };
    let mut removed = Vec::new();
    for rel in files {
        // only paths inside `out`: the marker is ours, but it is a file anyone can edit
        if Path::new(&rel).components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
            continue;
        }
        let p = out.join(&rel);
        if p.is_file() && std::fs::remove_file(&p).is_ok() {
            removed.push(rel);
        }
    }
    // the directory the run created (pcap/) goes when it is empty now
    let _ = std::fs::remove_dir(out.join("pcap"));
    let _ = std::fs::remove_file(out.join(MARKER));
    Ok(Cleared { removed })
}

/// Writes the marker listing the files a run is about to write (relative to `out`).
pub fn write_marker(out: &Path, files: &[String]) -> std::io::Result<()> {
    let v = serde_json::json!({
        "written_by": format!("wirelab {}", env!("CARGO_PKG_VERSION")),
        "note": "this directory is the output of `wirelab run`; the next run into it removes these files",
        "files": files,
    });
    std::fs::write(out.join(MARKER), serde_json::to_string_pretty(&v)? + "\n")
}

/// Every file name a run of this scenario may write: captures, tables, summary, and the
/// derived ones. `captures` are absolute or relative to `out`.
pub fn planned_files(out: &Path, captures: &[PathBuf], tables: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = captures.iter().map(|p| p.strip_prefix(out).unwrap_or(p).display().to_string()).collect();
    v.push("summary.json".into());
    for t in tables {
        v.push(format!("{t}.csv"));
        v.push(format!("{t}.parquet"));
    }
    v.extend(DERIVED.iter().map(|s| s.to_string()));
    v
}

/// The files of the run that wrote `out`, or `None` if no wirelab run did.
fn previous_files(out: &Path) -> Option<Vec<String>> {
    let marker = out.join(MARKER);
    if let Ok(text) = std::fs::read_to_string(&marker) {
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        return Some(v.get("files")?.as_array()?.iter().filter_map(|f| f.as_str().map(String::from)).collect());
    }
    // a run of a wirelab older than the marker: its summary.json lists the files
    let text = std::fs::read_to_string(out.join("summary.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("wirelab_version")?;
    let mut files: Vec<String> = v.get("files")?.as_array()?.iter().filter_map(|f| f.as_str().map(String::from)).collect();
    files.push("summary.json".into());
    let tables: Vec<String> = files.iter().filter_map(|f| f.strip_suffix(".csv").map(|t| format!("{t}.parquet"))).collect();
    files.extend(tables);
    files.extend(DERIVED.iter().map(|s| s.to_string()));
    Some(files)
}

fn list(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut v: Vec<String> = std::fs::read_dir(dir)?.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().to_string()).collect();
    v.sort();
    Ok(v)
}

#[cfg(test)]
mod test {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wirelab-outdir-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn missing_and_empty_directories_are_fine() {
        let d = tmp("fresh");
        assert_eq!(prepare(&d, false, &[]).unwrap(), Cleared::default());
        assert!(d.is_dir());
        assert_eq!(prepare(&d, false, &[]).unwrap(), Cleared::default());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_foreign_directory_is_refused_unless_forced() {
        let d = tmp("foreign");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("thesis.tex"), "x").unwrap();
        let (code, msg) = prepare(&d, false, &[]).unwrap_err();
        assert_eq!(code, 2);
        assert!(msg.contains("thesis.tex") && msg.contains("--force"), "{msg}");
        assert_eq!(prepare(&d, true, &[]).unwrap(), Cleared::default());
        assert!(d.join("thesis.tex").exists(), "--force removes nothing");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_runs_own_scenario_file_is_not_foreign() {
        let d = tmp("own-scenario");
        std::fs::create_dir_all(&d).unwrap();
        let sc = d.join("scenario.toml");
        std::fs::write(&sc, "x").unwrap();
        assert_eq!(prepare(&d, false, &[sc.as_path()]).unwrap(), Cleared::default());
        assert!(sc.exists(), "the input stays");
        std::fs::write(d.join("other.txt"), "x").unwrap();
        let (_, msg) = prepare(&d, false, &[sc.as_path()]).unwrap_err();
        assert!(msg.contains("other.txt") && !msg.contains("scenario.toml"), "{msg}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_earlier_run_is_cleared_but_user_files_stay() {
        let d = tmp("rerun");
        std::fs::create_dir_all(d.join("pcap")).unwrap();
        let planned = planned_files(&d, &[d.join("pcap/h1-eth0.pcap")], &["flows", "queue_probe"]);
        write_marker(&d, &planned).unwrap();
        for f in ["pcap/h1-eth0.pcap", "flows.csv", "queue_probe.csv", "summary.json", "report.html", "flows.parquet", "notes.txt"] {
            std::fs::write(d.join(f), "x").unwrap();
        }
        let c = prepare(&d, false, &[]).unwrap();
        assert_eq!(c.removed.len(), 6, "{c:?}");
        assert!(!d.join("pcap").exists() && !d.join(MARKER).exists());
        assert_eq!(list(&d).unwrap(), vec!["notes.txt".to_string()]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_run_of_an_older_wirelab_is_recognised_by_its_summary() {
        let d = tmp("old");
        std::fs::create_dir_all(d.join("pcap")).unwrap();
        std::fs::write(d.join("summary.json"), r#"{"wirelab_version": "0.1.0", "files": ["pcap/r1-eth2.pcap", "flows.csv"]}"#).unwrap();
        for f in ["pcap/r1-eth2.pcap", "flows.csv", "flows.parquet"] {
            std::fs::write(d.join(f), "x").unwrap();
        }
        prepare(&d, false, &[]).unwrap();
        assert!(list(&d).unwrap().is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn marker_paths_outside_the_directory_are_ignored() {
        let d = tmp("escape");
        std::fs::create_dir_all(&d).unwrap();
        let outside = tmp("escape-victim");
        std::fs::write(&outside, "keep").unwrap();
        write_marker(&d, &[format!("../{}", outside.file_name().unwrap().to_string_lossy()), "/etc/hostname".into()]).unwrap();
        prepare(&d, false, &[]).unwrap();
        assert!(outside.exists());
        std::fs::remove_file(&outside).unwrap();
        std::fs::remove_dir_all(&d).unwrap();
    }
}
