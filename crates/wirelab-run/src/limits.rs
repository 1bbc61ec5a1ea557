//! Resource guards for a run (issue 22, item 1): a scenario must not fill the disk, eat
//! the machine's memory, or die in an allocation failure; it stops with a message saying
//! what was hit, exit code 3, and the results up to that point written.
//!
//! Two places check: [`preflight`] before building (what the scenario asks for: time-series
//! rows from `duration / sample_interval`, hosts and apps to build, free disk for captures)
//! and [`watch`], which the simulator's run loop calls every [`WATCH_EVERY`] events (events,
//! resident memory, capture bytes on disk, free disk). Both compare against [`Limits`],
//! which `wirelab run --max-memory/--max-capture/--max-events/--min-disk-free` override.
use std::path::{Path, PathBuf};
use wirelab_core::units::parse_size;
use wirelab_scenario::Scenario;

/// Exit code of a run stopped by a limit.
pub const EXIT_LIMIT: i32 = 3;

/// Events between two checks of the run-time guards (a check reads /proc and stats a few
/// files: ~20 µs, every ~10 ms of a run at 5 M events/s).
pub const WATCH_EVERY: u64 = 1 << 16;

/// Memory one row of a time series takes (the struct and its name string; measured
/// ~100-140 bytes for flow, queue and TCP rows).
const ROW_BYTES: u64 = 128;
/// Lower bounds of the memory built per host (stack, interfaces, routes), per link and per
/// app (docs/performance.md: ≈ 11 KB per host in a dumbbell).
const HOST_BYTES: u64 = 8 * 1024;
const LINK_BYTES: u64 = 2 * 1024;
const APP_BYTES: u64 = 1024;
/// Peak memory of parsing and validating a scenario, per byte of TOML (measured: a 27.7 MB
/// file of 10^5 flows peaks at 1.8 GB; 284 MB of 10^6 flows passed 12 GB mid-parse).
const PARSE_BYTES_PER_BYTE: u64 = 70;

/// The limits of one run. `None` = no limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Resident memory of the process (bytes).
    pub max_memory: Option<u64>,
    /// Bytes of capture files on disk.
    pub max_capture: Option<u64>,
    /// Simulator events.
    pub max_events: Option<u64>,
    /// Free space to keep on the output directory's filesystem (bytes).
    pub min_disk_free: u64,
}

impl Default for Limits {
    /// Half of the memory available when the run starts (a vector that doubles near the
    /// limit still fits), 4 GiB of captures, no event limit, 1 GiB of disk kept free.
    fn default() -> Self {
        Limits { max_memory: mem_available().map(|m| m / 2), max_capture: Some(4 << 30), max_events: None, min_disk_free: 1 << 30 }
    }
}

impl Limits {
    /// Applies `wirelab run` flags: sizes in tc units (`2GB`, `512mb`) or `none`.
    pub fn with_flags(mut self, max_memory: Option<&str>, max_capture: Option<&str>, max_events: Option<u64>, min_disk_free: Option<&str>) -> Result<Self, String> {
        let size = |flag: &str, v: &str| -> Result<Option<u64>, String> {
            if v.eq_ignore_ascii_case("none") {
                return Ok(None);
            }
            parse_size(v).map(Some).map_err(|e| format!("{flag} {v}: {e}, or `none`"))
        };
        if let Some(v) = max_memory {
            self.max_memory = size("--max-memory", v)?;
        }
        if let Some(v) = max_capture {
            self.max_capture = size("--max-capture", v)?;
        }
        if let Some(v) = max_events {
            self.max_events = Some(v);
        }
        if let Some(v) = min_disk_free {
            self.min_disk_free = size("--min-disk-free", v)?.unwrap_or(0);
        }
        Ok(self)
    }
}

/// Bytes in binary units for messages (`2.00 GiB`).
pub fn human(b: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{b} B")
    } else {
        format!("{v:.2} {}", units[i])
    }
}

fn meminfo(key: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    kib_field(&s, key)
}

fn kib_field(s: &str, key: &str) -> Option<u64> {
    let line = s.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

/// `MemAvailable` of /proc/meminfo (None where there is no /proc).
pub fn mem_available() -> Option<u64> {
    meminfo("MemAvailable:")
}

/// Resident memory of this process (`VmRSS` of /proc/self/status).
pub fn resident() -> Option<u64> {
    kib_field(&std::fs::read_to_string("/proc/self/status").ok()?, "VmRSS:")
}

/// Free space for unprivileged writers on the filesystem of `dir`.
pub fn disk_free(dir: &Path) -> Option<u64> {
    fs4::available_space(dir).ok()
}

/// Checks that parsing a scenario of `len` bytes fits in the memory limit (before it is
/// read: a million-flow file would otherwise take the machine's memory in the parser).
pub fn check_text_size(file: &str, len: u64, limits: &Limits) -> Result<(), String> {
    let need = len.saturating_mul(PARSE_BYTES_PER_BYTE);
    match limits.max_memory {
        Some(max) if need > max => Err(format!("{file} is {}: parsing it needs about {}, above --max-memory {}", human(len), human(need), human(max))),
        _ => Ok(()),
    }
}

/// Checks what a scenario asks for before anything is built. `Err` is the message.
pub fn preflight(sc: &Scenario, out: &Path, limits: &Limits) -> Result<(), String> {
    let d = &sc.doc;
    let duration = sc.duration().map_err(|e| e.to_string())?;
    let interval = match &d.measure.sample_interval {
        Some(s) => sc.time(s).map_err(|e| e.to_string())?,
        None => wirelab_core::Duration::from_millis(100),
    };
    let samples = duration.as_nanos() / interval.as_nanos().max(1) + 1;
    // a row per app (flow series), per interface (queue series) and per socket (about
    // one per app): what every sample appends
    let rows = (2 * d.apps.len() + 2 * d.links.len()).max(1) as u64;
    let series = samples.saturating_mul(rows).saturating_mul(ROW_BYTES);
    let build = (d.nodes.len() as u64).saturating_mul(HOST_BYTES) + (d.links.len() as u64).saturating_mul(LINK_BYTES) + (d.apps.len() as u64).saturating_mul(APP_BYTES);
    if let Some(max) = limits.max_memory {
        if series > max {
            let fits = wirelab_core::Duration::from_nanos((duration.as_nanos() as u128 * rows as u128 * ROW_BYTES as u128 / max.max(1) as u128).min(u64::MAX as u128) as u64 + 1);
            return Err(format!(
                "measure.sample_interval = {interval} over {duration} makes {samples} samples of ~{rows} time-series rows: about {} in memory, above --max-memory {} (use a sample_interval of at least {fits}, or raise --max-memory)",
                human(series),
                human(max)
            ));
        }
        if build > max {
            return Err(format!(
                "the scenario has {} nodes, {} links and {} apps: building it needs at least {}, above --max-memory {}",
                d.nodes.len(),
                d.links.len(),
                d.apps.len(),
                human(build),
                human(max)
            ));
        }
    }
    if let Some(max) = limits.max_events {
        if samples > max {
            return Err(format!("measure.sample_interval = {interval} over {duration} alone makes {samples} sample events, above --max-events {max}"));
        }
    }
    if !d.measure.capture.is_empty() && limits.min_disk_free > 0 {
        if let Some(free) = disk_free(out) {
            if free < limits.min_disk_free {
                return Err(format!("only {} free on the filesystem of {} (captures need at least --min-disk-free {})", human(free), out.display(), human(limits.min_disk_free)));
            }
        }
    }
    Ok(())
}

/// The run-time guard handed to `Sim::set_watch`: stops the run when the process's
/// resident memory, the capture files' total size, the event count or the free disk space
/// crosses its limit.
pub fn watch(limits: Limits, captures: Vec<PathBuf>, out: PathBuf) -> wirelab_sim::sim::Watch {
    Box::new(move |now, events| {
        let at = format!("at {:.6} s simulated", now.as_secs_f64());
        if let Some(max) = limits.max_events {
            if events >= max {
                return Some(format!("--max-events {max} reached {at}"));
            }
        }
        if let (Some(max), Some(rss)) = (limits.max_memory, resident()) {
            if rss >= max {
                return Some(format!("resident memory {} reached --max-memory {} {at}", human(rss), human(max)));
            }
        }
        if !captures.is_empty() {
            let bytes: u64 = captures.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
            if let Some(max) = limits.max_capture {
                if bytes >= max {
                    return Some(format!("capture files reached {} (--max-capture {}) {at}", human(bytes), human(max)));
                }
            }
            if let Some(free) = disk_free(&out) {
                if free < limits.min_disk_free {
                    return Some(format!("free disk space on {} fell to {} (--min-disk-free {}) {at}", out.display(), human(free), human(limits.min_disk_free)));
                }
            }
        }
        None
    })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn flags_and_fields() {
        let l = Limits::default().with_flags(Some("2GB"), Some("none"), Some(7), Some("0")).unwrap();
        assert_eq!(l, Limits { max_memory: Some(2 << 30), max_capture: None, max_events: Some(7), min_disk_free: 0 });
        let e = Limits::default().with_flags(Some("lots"), None, None, None).unwrap_err();
        assert!(e.starts_with("--max-memory lots: `lots` is not a size like"), "{e}");
        assert_eq!(kib_field("VmRSS:\t  1234 kB\n", "VmRSS:"), Some(1234 * 1024));
        assert_eq!(human(3 << 29), "1.50 GiB");
        assert!(resident().unwrap() > 1 << 20, "this process has a resident set");
    }
}
