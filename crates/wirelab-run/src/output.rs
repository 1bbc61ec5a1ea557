//! Writes a run's results: `summary.json` and CSV tables.
use serde::Serialize;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use wirelab_scenario::Scenario;
use wirelab_sim::RunResults;

#[derive(Serialize)]
struct ScenarioInfo<'a> {
    name: &'a str,
    file: &'a str,
    description: Option<&'a str>,
}

#[derive(Serialize)]
struct Summary<'a> {
    wirelab_version: &'static str,
    scenario: ScenarioInfo<'a>,
    #[serde(flatten)]
    results: &'a RunResults,
    wall_seconds: f64,
    files: Vec<String>,
}

/// Every table a run may write (`NAME.csv`), in the order of docs/scenario.md.
pub const TABLES: &[&str] = &[
    "flows",
    "connections",
    "queues",
    "links",
    "flow_timeseries",
    "queue_timeseries",
    "queue_probe",
    "tcp_timeseries",
    "sctp_timeseries",
    "sctp_path_timeseries",
    "tcp_rate_timeseries",
    "shim_matches",
    "rr_latency",
];

fn rel(out: &Path, p: &Path) -> String {
    p.strip_prefix(out).unwrap_or(p).display().to_string()
}

/// Writes every output file of a run into `out`.
pub fn write_all(out: &Path, sc: &Scenario, r: &RunResults, wall_seconds: f64, captures: &[PathBuf]) -> std::io::Result<()> {
    let mut files: Vec<String> = captures.iter().map(|p| rel(out, p)).collect();
    files.extend(["flows.csv", "queues.csv", "links.csv", "flow_timeseries.csv", "queue_timeseries.csv"].map(String::from));
    if !r.connections.is_empty() {
        files.push("connections.csv".into());
    }
    if !r.tcp_series.is_empty() {
        files.push("tcp_timeseries.csv".into());
    }
    if !r.sctp_series.is_empty() {
        files.extend(["sctp_timeseries.csv", "sctp_path_timeseries.csv"].map(String::from));
    }
    if !r.rate_series.is_empty() {
        files.push("tcp_rate_timeseries.csv".into());
    }
    if !r.probe.is_empty() {
        files.push("queue_probe.csv".into());
    }
    if !r.shim_matches.is_empty() {
        files.push("shim_matches.csv".into());
    }
    if !r.rr_latency.is_empty() {
        files.push("rr_latency.csv".into());
    }
    let file_name = Path::new(&sc.file).file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
    let s = Summary {
        wirelab_version: env!("CARGO_PKG_VERSION"),
        scenario: ScenarioInfo { name: &sc.doc.scenario.name, file: &file_name, description: sc.doc.scenario.description.as_deref() },
        results: r,
        wall_seconds,
        files,
    };
    let mut f = BufWriter::new(File::create(out.join("summary.json"))?);
    serde_json::to_writer_pretty(&mut f, &s)?;
    f.write_all(b"\n")?;
    f.flush()?;

    table(out, "flows.csv", &r.flows)?;
    if !r.connections.is_empty() {
        table(out, "connections.csv", &r.connections)?;
    }
    let mut w = csv(out, "queues.csv", "dev,kind,classid,sent_packets,sent_bytes,drops,overlimits,qlen,backlog_bytes")?;
    for q in &r.queues {
        writeln!(w, "{},{},,{},{},{},{},{},{}", q.dev, q.kind, q.sent_packets, q.sent_bytes, q.drops, q.overlimits, q.qlen, q.backlog_bytes)?;
        for c in &q.classes {
            writeln!(w, "{},class,{},{},{},{},,{},", q.dev, c.classid, c.packets, c.bytes, c.drops, c.qlen)?;
        }
    }
    w.flush()?;
    table(out, "links.csv", &r.links)?;
    table(out, "flow_timeseries.csv", &r.flow_series)?;
    table(out, "queue_timeseries.csv", &r.queue_series)?;
    if !r.tcp_series.is_empty() {
        table(out, "tcp_timeseries.csv", &r.tcp_series)?;
    }
    if !r.sctp_series.is_empty() {
        table(out, "sctp_timeseries.csv", &r.sctp_series)?;
        table(out, "sctp_path_timeseries.csv", &r.sctp_path_series)?;
    }
    if !r.rate_series.is_empty() {
        table(out, "tcp_rate_timeseries.csv", &r.rate_series)?;
    }
    if !r.shim_matches.is_empty() {
        table(out, "shim_matches.csv", &r.shim_matches)?;
    }
    if !r.rr_latency.is_empty() {
        table(out, "rr_latency.csv", &r.rr_latency)?;
    }
    if !r.probe.is_empty() {
        let mut w = csv(out, "queue_probe.csv", "time_ns,dev,event,pkt_id,len,qlen,backlog,sojourn_ns,src,dst,proto,sport,dport")?;
        for p in &r.probe {
            let ev = match p.event {
                wirelab_sim::record::ProbeEvent::Enqueue => "enqueue",
                wirelab_sim::record::ProbeEvent::Dequeue => "dequeue",
                wirelab_sim::record::ProbeEvent::Drop => "drop",
            };
            let a = p.flow.src;
            let b = p.flow.dst;
            writeln!(
                w,
                "{},{},{},{},{},{},{},{},{}.{}.{}.{},{}.{}.{}.{},{},{},{}",
                p.time_ns, p.dev, ev, p.pkt_id, p.len, p.qlen, p.backlog, p.sojourn_ns, a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], p.flow.proto, p.flow.sport, p.flow.dport
            )?;
        }
        w.flush()?;
    }
    Ok(())
}

/// Writes rows of a flat struct as CSV with a header from the field names.
fn table<T: Serialize>(out: &Path, name: &str, rows: &[T]) -> std::io::Result<()> {
    let mut w = csv::Writer::from_path(out.join(name))?;
    for r in rows {
        w.serialize(r).map_err(std::io::Error::other)?;
    }
    w.flush()
}

fn csv(out: &Path, name: &str, header: &str) -> std::io::Result<BufWriter<File>> {
    let mut w = BufWriter::new(File::create(out.join(name))?);
    writeln!(w, "{header}")?;
    Ok(w)
}

/// `wirelab shim-matches DIR`: the run's shim rule decisions as an aligned text table.
pub fn shim_matches_table(results: &Path) -> Result<String, String> {
    let path = results.join("shim_matches.csv");
    if !path.exists() {
        let why = if results.join("summary.json").exists() { "no node of this run has a shim" } else { "not a wirelab output directory" };
        return Err(format!("{}: no shim_matches.csv ({why})", results.display()));
    }
    let mut rd = csv::Reader::from_path(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let header: Vec<String> = rd.headers().map_err(|e| format!("{}: {e}", path.display()))?.iter().map(String::from).collect();
    let mut rows = vec![header];
    for rec in rd.records() {
        let rec = rec.map_err(|e| format!("{}: {e}", path.display()))?;
        rows.push(rec.iter().map(String::from).collect());
    }
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..ncol).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|x| x.chars().count()).max().unwrap_or(0)).collect();
    let mut s = String::new();
    for r in &rows {
        let line: Vec<String> = r.iter().enumerate().map(|(c, x)| format!("{x:<w$}", w = width[c])).collect();
        s.push_str(line.join("  ").trim_end());
        s.push('\n');
    }
    Ok(s)
}
