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

fn rel(out: &Path, p: &Path) -> String {
    p.strip_prefix(out).unwrap_or(p).display().to_string()
}

/// Writes every output file of a run into `out`.
pub fn write_all(out: &Path, sc: &Scenario, r: &RunResults, wall_seconds: f64, captures: &[PathBuf]) -> std::io::Result<()> {
    let mut files: Vec<String> = captures.iter().map(|p| rel(out, p)).collect();
    files.extend(["flows.csv", "queues.csv", "links.csv", "flow_timeseries.csv", "queue_timeseries.csv"].map(String::from));
    if !r.probe.is_empty() {
        files.push("queue_probe.csv".into());
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

    let mut w = csv(out, "flows.csv", "name,kind,node,tx_packets,tx_bytes,rx_packets,rx_bytes,goodput_bps,wire_rate_bps,lost,loss_ratio,reordered,delay_min_ms,delay_mean_ms,delay_max_ms")?;
    for x in &r.flows {
        writeln!(w, "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", x.name, x.kind, x.node, x.tx_packets, x.tx_bytes, x.rx_packets, x.rx_bytes, x.goodput_bps, x.wire_rate_bps, x.lost, x.loss_ratio, x.reordered, x.delay_min_ms, x.delay_mean_ms, x.delay_max_ms)?;
    }
    w.flush()?;
    let mut w = csv(out, "queues.csv", "dev,kind,classid,sent_packets,sent_bytes,drops,overlimits,qlen,backlog_bytes")?;
    for q in &r.queues {
        writeln!(w, "{},{},,{},{},{},{},{},{}", q.dev, q.kind, q.sent_packets, q.sent_bytes, q.drops, q.overlimits, q.qlen, q.backlog_bytes)?;
        for c in &q.classes {
            writeln!(w, "{},class,{},{},{},{},,{},", q.dev, c.classid, c.packets, c.bytes, c.drops, c.qlen)?;
        }
    }
    w.flush()?;
    let mut w = csv(out, "links.csv", "name,netem,tx_packets,tx_bytes,delivered,lost_random,lost_model,dropped_down,duplicated,corrupted,reordered")?;
    for l in &r.links {
        writeln!(w, "{},\"{}\",{},{},{},{},{},{},{},{},{}", l.name, l.netem, l.tx_packets, l.tx_bytes, l.delivered, l.lost_random, l.lost_model, l.dropped_down, l.duplicated, l.corrupted, l.reordered)?;
    }
    w.flush()?;
    let mut w = csv(out, "flow_timeseries.csv", "time_s,flow,tx_bytes,rx_bytes,tx_rate_bps,rx_rate_bps")?;
    for s in &r.flow_series {
        writeln!(w, "{},{},{},{},{},{}", s.time_s, s.flow, s.tx_bytes, s.rx_bytes, s.tx_rate_bps, s.rx_rate_bps)?;
    }
    w.flush()?;
    let mut w = csv(out, "queue_timeseries.csv", "time_s,dev,qlen,backlog,drops,sent_bytes")?;
    for s in &r.queue_series {
        writeln!(w, "{},{},{},{},{},{}", s.time_s, s.dev, s.qlen, s.backlog, s.drops, s.sent_bytes)?;
    }
    w.flush()?;
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

fn csv(out: &Path, name: &str, header: &str) -> std::io::Result<BufWriter<File>> {
    let mut w = BufWriter::new(File::create(out.join(name))?);
    writeln!(w, "{header}")?;
    Ok(w)
}
