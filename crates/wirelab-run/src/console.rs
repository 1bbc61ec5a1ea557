//! What `wirelab run` prints after a run: one line for the run, one per application and
//! one per TCP connection, in human units (`2.84 Mbit/s`, `12.3 MB`), at most
//! [`MAX_LINES`] of each (the tables have everything).
use std::fmt::Write as _;
use wirelab_sim::RunResults;

/// Lines per section before "… N more".
pub const MAX_LINES: usize = 20;

/// `2.84 Mbit/s`, `950 kbit/s`, `1.20 Gbit/s`, as `tc` would spell the unit.
pub fn rate(bps: f64) -> String {
    if !bps.is_finite() {
        return "-".into();
    }
    let (v, u) = if bps >= 1e9 {
        (bps / 1e9, "Gbit/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mbit/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kbit/s")
    } else {
        (bps, "bit/s")
    };
    format!("{} {u}", sig3(v))
}

/// `12.3 MB`, `512 B` (decimal units).
pub fn bytes(b: u64) -> String {
    let x = b as f64;
    let (v, u) = if x >= 1e9 {
        (x / 1e9, "GB")
    } else if x >= 1e6 {
        (x / 1e6, "MB")
    } else if x >= 1e3 {
        (x / 1e3, "kB")
    } else {
        return format!("{b} B");
    };
    format!("{} {u}", sig3(v))
}

/// Three significant digits: `2.84`, `28.4`, `284`.
fn sig3(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn ms(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "-".into()
    }
}

/// The per-app and per-connection lines.
pub fn summary_lines(r: &RunResults) -> String {
    let mut s = String::new();
    let w = r.flows.iter().map(|f| f.name.len()).max().unwrap_or(0).clamp(6, 24);
    for (i, f) in r.flows.iter().enumerate() {
        if i == MAX_LINES {
            let _ = writeln!(s, "  … {} more apps in flows.csv", r.flows.len() - MAX_LINES);
            break;
        }
        let what = match f.kind {
            "udp-sink" => format!(
                "rx {} pkts  {}  loss {:.2}%  delay min/mean/max {}/{}/{} ms",
                f.rx_packets,
                rate(f.goodput_bps),
                f.loss_ratio * 100.0,
                ms(f.delay_min_ms),
                ms(f.delay_mean_ms),
                ms(f.delay_max_ms)
            ),
            "udp-cbr" => format!("tx {} pkts  {}", f.tx_packets, bytes(f.tx_bytes)),
            "tcp-sink" | "tcp-echo" | "sctp-sink" | "sctp-echo" => {
                format!("rx {}  {}  {} conn{}  retrans {}", bytes(f.rx_bytes), rate(f.goodput_bps), f.conns, if f.conns == 1 { "" } else { "s" }, f.retrans)
            }
            "tcp-rr" => format!("{} responses  latency min/mean/max {}/{}/{} ms  retrans {}", f.rx_packets, ms(f.delay_min_ms), ms(f.delay_mean_ms), ms(f.delay_max_ms), f.retrans),
            _ => {
                let done = if f.transfer_time_s.is_finite() { format!("  done in {:.3} s", f.transfer_time_s) } else { String::new() };
                let err = if f.error.is_empty() { String::new() } else { format!("  error {}", f.error) };
                format!("tx {}  retrans {}  {}{done}{err}", bytes(f.tx_bytes), f.retrans, f.state)
            }
        };
        let _ = writeln!(s, "  {:<w$} {:<9} {what}", f.name, f.kind);
    }
    if !r.connections.is_empty() {
        let _ = writeln!(s, "TCP connections (connections.csv): client -> server, receiver goodput, client retransmissions, RTT, completion time");
        for (i, c) in r.connections.iter().enumerate() {
            if i == MAX_LINES {
                let _ = writeln!(s, "  … {} more in connections.csv", r.connections.len() - MAX_LINES);
                break;
            }
            let fct = if c.fct_s.is_finite() { format!("  fct {:.3} s", c.fct_s) } else { String::new() };
            let _ = writeln!(
                s,
                "  {} -> {}  {}:{} -> {}:{}  {}  {}  retrans {} ({:.2}%)  rtt min/mean/max {}/{}/{} ms{fct}",
                if c.client.is_empty() { "?" } else { &c.client },
                if c.server.is_empty() { "?" } else { &c.server },
                c.src,
                c.sport,
                c.dst,
                c.dport,
                if c.cc.is_empty() { c.proto } else { &c.cc },
                rate(c.goodput_bps),
                c.client_retrans,
                c.retrans_ratio * 100.0,
                ms(c.rtt_min_ms),
                ms(c.srtt_mean_ms),
                ms(c.srtt_max_ms)
            );
        }
    }
    s
}

#[cfg(test)]
mod test {
    use super::*;
    #[test]
    fn human_units() {
        assert_eq!(rate(2_844_910.0), "2.84 Mbit/s");
        assert_eq!(rate(28_449_100.0), "28.4 Mbit/s");
        assert_eq!(rate(950_000.0), "950 kbit/s");
        assert_eq!(rate(1.2e9), "1.20 Gbit/s");
        assert_eq!(rate(12.0), "12.0 bit/s");
        assert_eq!(bytes(12_345_678), "12.3 MB");
        assert_eq!(bytes(512), "512 B");
    }
}
