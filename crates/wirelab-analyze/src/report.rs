//! Writing an [`Analysis`]: CSV tables, a JSON summary and a human summary.
//!
//! Numbers are formatted from integers where they are integers (times: seconds with 9
//! decimals, milliseconds with 6), so outputs are byte-identical across runs and machines.
use crate::analysis::Analysis;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// Formats signed ns as seconds with 9 decimals.
pub fn secs(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000)
}

/// Formats signed ns as milliseconds with 6 decimals.
pub fn millis(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    format!("{sign}{}.{:06}", a / 1_000_000, a % 1_000_000)
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map(f).unwrap_or_default()
}

/// `x + 0.0` turns -0.0 into +0.0 (IEEE 754 round-to-nearest), so no table prints `-0`.
fn f6(x: f64) -> String {
    format!("{:.6}", x + 0.0)
}

/// As [`f6`], without decimals.
fn f0(x: f64) -> String {
    format!("{:.0}", x + 0.0)
}

impl Analysis {
    /// `segments.csv`: one row per first-transmitted byte range.
    pub fn segments_csv(&self) -> String {
        let rx = self.receiver_stats.is_some();
        let mut s = String::from(
            "flow,seq,len,first_sent_s,first_frame,last_sent_s,last_frame,retransmissions,original_unseen,acked_at_s,acked_frame,latency_ms,sacked_at_s,latency_sack_ms",
        );
        if rx {
            s.push_str(",lost,delivered_at_s,app_delay_ms");
        }
        s.push('\n');
        for r in &self.segments {
            let _ = write!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                self.flows[r.flow].flow,
                r.seq,
                r.len,
                secs(r.first_sent_ns),
                r.first_frame,
                secs(r.last_sent_ns),
                r.last_frame,
                r.retransmissions,
                r.original_unseen as u8,
                opt(r.acked_ns, secs),
                opt(r.acked_frame, |f| f.to_string()),
                opt(r.latency_ns, millis),
                opt(r.sacked_ns, secs),
                opt(r.latency_sack_ns, millis),
            );
            if rx {
                let _ = write!(
                    s,
                    ",{},{},{}",
                    opt(r.lost, |l| l.to_string()),
                    opt(r.delivered_ns, secs),
                    opt(r.app_delay_ns, millis)
                );
            }
            s.push('\n');
        }
        s
    }

    /// `retransmissions.csv`: one row per retransmitted (`kind` = `retransmission`) or
    /// out-of-order (`out_of_order`) segment, by flow and frame.
    pub fn retransmissions_csv(&self) -> String {
        let mut rows: Vec<(&crate::RetxRow, &str)> = self
            .retransmissions
            .iter()
            .map(|r| (r, "retransmission"))
            .chain(self.out_of_order.iter().map(|r| (r, "out_of_order")))
            .collect();
        rows.sort_by_key(|(r, _)| (r.flow, r.frame));
        let mut s = String::from("flow,frame,kind,sent_s,seq,len\n");
        for (r, kind) in rows {
            let _ = writeln!(s, "{},{},{kind},{},{},{}", self.flows[r.flow].flow, r.frame, secs(r.sent_ns), r.seq, r.len);
        }
        s
    }

    /// `flows.csv`: one row per flow.
    pub fn flows_csv(&self) -> String {
        let mut s = String::from(
            "flow,class,data_segments,retransmitted_segments,est_loss,lost_segments,true_loss,tx_bytes,retx_bytes,acked_bytes,delivered_bytes,start_s,duration_s,throughput_bps,goodput_bps,ack_latency_n,ack_latency_p50_ms,ack_latency_p90_ms,ack_latency_p99_ms,ack_latency_max_ms,ack_latency_sack_p50_ms,ack_latency_sack_p99_ms,app_delay_p50_ms,app_delay_p90_ms,app_delay_p99_ms,app_delay_max_ms,unacked_segments,keepalives,acked_unseen,original_unseen,out_of_order\n",
        );
        for f in &self.flows {
            let l = &f.ack_latency;
            let ad = f.app_delay.unwrap_or_default();
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                f.flow,
                f.class.as_deref().unwrap_or(""),
                f.data_segments,
                f.retransmitted_segments,
                f6(f.est_loss),
                opt(f.lost_segments, |x| x.to_string()),
                opt(f.true_loss, f6),
                f.tx_bytes,
                f.retx_bytes,
                f.acked_bytes,
                opt(f.delivered_bytes, |x| x.to_string()),
                secs(f.start_ns),
                secs(f.duration_ns),
                f0(f.throughput_bps),
                f0(f.goodput_bps),
                l.n,
                opt(l.p50_ns, millis),
                opt(l.p90_ns, millis),
                opt(l.p99_ns, millis),
                opt(l.max_ns, millis),
                opt(f.ack_latency_sack.p50_ns, millis),
                opt(f.ack_latency_sack.p99_ns, millis),
                opt(ad.p50_ns, millis),
                opt(ad.p90_ns, millis),
                opt(ad.p99_ns, millis),
                opt(ad.max_ns, millis),
                f.unacked_segments,
                f.keepalives,
                f.acked_unseen,
                f.original_unseen,
                f.out_of_order,
            );
        }
        s
    }

    /// `latency_cdf.csv`: empirical CDFs.
    pub fn cdf_csv(&self) -> String {
        let mut s = String::from("flow,metric,value_ms,fraction\n");
        for c in &self.cdf {
            let _ = writeln!(s, "{},{},{},{}", self.flows[c.flow].flow, c.metric, millis(c.value_ns), f6(c.fraction));
        }
        s
    }

    /// `intervals.csv`: per-flow throughput and goodput per interval.
    pub fn intervals_csv(&self) -> String {
        let mut s = String::from(
            "flow,start_s,tx_bytes,retx_bytes,acked_bytes,delivered_bytes,throughput_bps,goodput_bps\n",
        );
        for r in &self.intervals {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{}",
                self.flows[r.flow].flow,
                secs(r.start_ns),
                r.tx_bytes,
                r.retx_bytes,
                r.acked_bytes,
                opt(r.delivered_bytes, |x| x.to_string()),
                f0(r.throughput_bps),
                f0(r.goodput_bps)
            );
        }
        s
    }

    /// `fairness.csv`: Jain's index across active flows per interval.
    pub fn fairness_csv(&self) -> String {
        let mut s = String::from("start_s,active_flows,jain_goodput,jain_throughput\n");
        for r in &self.fairness {
            let _ = writeln!(
                s,
                "{},{},{},{}",
                secs(r.start_ns),
                r.active_flows,
                opt(r.jain_goodput, f6),
                opt(r.jain_throughput, f6)
            );
        }
        s
    }

    /// `classes.csv`: per-class totals.
    pub fn classes_csv(&self) -> String {
        let mut s = String::from(
            "class,flows,goodput_sum_bps,goodput_mean_bps,jain_within,est_loss,ack_latency_p50_ms,ack_latency_p99_ms\n",
        );
        for c in &self.classes {
            let _ = writeln!(
                s,
                "{},{},{},{},{},{},{},{}",
                c.name,
                c.flows,
                f0(c.goodput_sum_bps),
                f0(c.goodput_mean_bps),
                opt(c.jain_within, f6),
                f6(c.est_loss),
                opt(c.ack_latency.p50_ns, millis),
                opt(c.ack_latency.p99_ns, millis)
            );
        }
        s
    }

    /// The JSON summary: everything but the per-segment, CDF and interval tables.
    pub fn summary_json(&self) -> String {
        let v = serde_json::json!({
            "t0_ns": self.t0_ns,
            "interval_ns": self.interval_ns,
            "sender": self.sender_stats,
            "receiver": self.receiver_stats,
            "flows": self.flows,
            "jain_flows": self.jain_flows,
            "classes": self.classes,
            "jain_classes": self.jain_classes,
            "warnings": self.warnings,
        });
        let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
        s.push('\n');
        s
    }

    /// Writes every table and `summary.json` into `dir` (created if missing); returns
    /// the files written, in order.
    pub fn write_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut files = vec![
            ("segments.csv", self.segments_csv()),
            ("flows.csv", self.flows_csv()),
            ("retransmissions.csv", self.retransmissions_csv()),
            ("latency_cdf.csv", self.cdf_csv()),
            ("intervals.csv", self.intervals_csv()),
            ("fairness.csv", self.fairness_csv()),
        ];
        if !self.classes.is_empty() {
            files.push(("classes.csv", self.classes_csv()));
        }
        files.push(("summary.json", self.summary_json()));
        let mut out = Vec::new();
        for (name, body) in files {
            let p = dir.join(name);
            std::fs::write(&p, body)?;
            out.push(p);
        }
        Ok(out)
    }

    /// A short human-readable summary.
    pub fn summary_text(&self) -> String {
        let mut s = String::new();
        let st = &self.sender_stats;
        let _ = writeln!(
            s,
            "sender capture: {} frames, {} TCP, {} snaplen-cut, {} undecodable{}",
            st.frames,
            st.tcp,
            st.snaplen_cut,
            st.undecodable,
            if st.file_cut_short { ", file cut short" } else { "" }
        );
        if let Some(r) = &self.receiver_stats {
            let _ = writeln!(s, "receiver capture: {} frames, {} TCP, {} undecodable", r.frames, r.tcp, r.undecodable);
        }
        let _ = writeln!(s, "{} flow(s) with data", self.flows.len());
        for f in &self.flows {
            let l = &f.ack_latency;
            let _ = write!(
                s,
                "  {}{}\n    segments {} retx {} est_loss {:.2}%",
                f.flow,
                f.class.as_ref().map(|c| format!(" [{c}]")).unwrap_or_default(),
                f.data_segments,
                f.retransmitted_segments,
                f.est_loss * 100.0
            );
            if let (Some(lost), Some(tl)) = (f.lost_segments, f.true_loss) {
                let _ = write!(s, " lost {lost} true_loss {:.2}%", tl * 100.0);
            }
            let _ = writeln!(
                s,
                " goodput {:.0} bit/s throughput {:.0} bit/s",
                f.goodput_bps, f.throughput_bps
            );
            let ms = |v: Option<i64>| opt(v, millis);
            let _ = writeln!(
                s,
                "    ack latency ms: p50 {} p90 {} p99 {} max {} (n={}, {} unacked)",
                ms(l.p50_ns),
                ms(l.p90_ns),
                ms(l.p99_ns),
                ms(l.max_ns),
                l.n,
                f.unacked_segments
            );
            if let Some(a) = &f.app_delay {
                let _ = writeln!(
                    s,
                    "    app delay ms:   p50 {} p90 {} p99 {} max {} (n={})",
                    ms(a.p50_ns),
                    ms(a.p90_ns),
                    ms(a.p99_ns),
                    ms(a.max_ns),
                    a.n
                );
            }
        }
        let _ = writeln!(s, "Jain fairness across flows (goodput): {}", opt(self.jain_flows, |j| format!("{j:.4}")));
        for c in &self.classes {
            let _ = writeln!(
                s,
                "  class {}: {} flow(s), mean goodput {:.0} bit/s, Jain within {}, ack latency p99 {} ms",
                c.name,
                c.flows,
                c.goodput_mean_bps,
                opt(c.jain_within, |j| format!("{j:.4}")),
                opt(c.ack_latency.p99_ns, millis)
            );
        }
        if !self.classes.is_empty() {
            let _ = writeln!(s, "Jain fairness across classes: {}", opt(self.jain_classes, |j| format!("{j:.4}")));
        }
        for w in &self.warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        s
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn time_formats() {
        assert_eq!(secs(1_500_000_001), "1.500000001");
        assert_eq!(secs(-5), "-0.000000005");
        assert_eq!(millis(12_345_678), "12.345678");
        assert_eq!(millis(0), "0.000000");
    }

    #[test]
    fn no_negative_zero() {
        assert_eq!(f0(-0.0), "0");
        assert_eq!(f6(-0.0), "0.000000");
        assert_eq!(f0(-3.0), "-3", "a real negative value keeps its sign");
        assert_eq!(f0(1234.4), "1234");
    }
}
