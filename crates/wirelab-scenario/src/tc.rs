//! Builds root qdiscs from the scenario's `qdisc` (short form) or `tc` (command lines).
use wirelab_qdisc::{Qdisc, TcConfig};

/// `"pfifo limit 100"` / `"htb default 1"`: one root qdisc, no classes.
pub fn build_short(s: &str, seed: u64, name: &str) -> Result<Box<dyn Qdisc>, String> {
    let mut c = TcConfig::new();
    c.add(s).map_err(|e| e.to_string())?;
    c.build(seed, name).map_err(|e| e.to_string())
}

/// Full tc command lines; on error returns the index of the offending line.
pub fn build_lines(lines: &[&str], seed: u64, name: &str) -> Result<Box<dyn Qdisc>, (usize, String)> {
    let mut c = TcConfig::new();
    for (i, l) in lines.iter().enumerate() {
        c.add(l).map_err(|e| (i, e.to_string()))?;
    }
    c.build(seed, name).map_err(|e| (lines.len().saturating_sub(1), e.to_string()))
}
