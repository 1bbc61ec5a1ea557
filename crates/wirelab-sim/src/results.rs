//! What a run produces, as plain tables (serialised by the CLI and Python layers).
use wirelab_apps::FlowSummary;
use crate::record::{FlowSample, ProbeRecord, QueueSample, RateSample, SctpPathSample, SctpSample, TcpSample};
use crate::sim::{NodeCounters, Sim};
use serde::Serialize;

/// Totals of one egress queue.
#[derive(Clone, Debug, Serialize)]
pub struct QueueSummary {
    /// `node:iface`.
    pub dev: String,
    /// Root qdisc kind.
    pub kind: String,
    /// Packets sent.
    pub sent_packets: u64,
    /// Bytes sent (link header included).
    pub sent_bytes: u64,
    /// Packets dropped.
    pub drops: u64,
    /// Overlimits.
    pub overlimits: u64,
    /// Packets still queued at the end.
    pub qlen: u64,
    /// Bytes still queued at the end.
    pub backlog_bytes: u64,
    /// Per-class counters (`tc -s class show`), empty for classless roots.
    pub classes: Vec<ClassSummary>,
}

/// One class's counters.
#[derive(Clone, Debug, Serialize)]
pub struct ClassSummary {
    /// `major:minor`.
    pub classid: String,
    /// Packets sent.
    pub packets: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Drops.
    pub drops: u64,
    /// Packets queued at the end.
    pub qlen: u64,
}

/// Totals of one link direction.
#[derive(Clone, Debug, Serialize)]
pub struct LinkSummary {
    /// `link:a->b`.
    pub name: String,
    /// netem spec in tc form.
    pub netem: String,
    /// Packets put on the wire.
    pub tx_packets: u64,
    /// Bytes put on the wire (frames).
    pub tx_bytes: u64,
    /// Packets delivered to the far end.
    pub delivered: u64,
    /// Lost to random/correlated loss.
    pub lost_random: u64,
    /// Lost to the state/Gilbert–Elliott models.
    pub lost_model: u64,
    /// Lost because the link was down.
    pub dropped_down: u64,
    /// Duplicated.
    pub duplicated: u64,
    /// Corrupted.
    pub corrupted: u64,
    /// Sent out of order by `reorder`.
    pub reordered: u64,
    /// CE-marked by netem's `ecn` instead of lost.
    pub ecn_marked: u64,
}

/// Node counters with the node name.
#[derive(Clone, Debug, Serialize)]
pub struct NodeSummary {
    /// Node name.
    pub node: String,
    /// Counters.
    #[serde(flatten)]
    pub counters: NodeCounters,
}

/// Everything a run produced.
#[derive(Clone, Debug, Serialize)]
pub struct RunResults {
    /// Seed.
    pub seed: u64,
    /// Simulated seconds.
    pub sim_seconds: f64,
    /// Events processed.
    pub events: u64,
    /// Packets created.
    pub packets: u64,
    /// Hash of every packet's bytes, every delivery and every drop.
    pub fingerprint: String,
    /// Set when a resource guard stopped the run early: what was hit (the results cover
    /// the run up to `sim_seconds`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_by_limit: Option<String>,
    /// Per-application totals.
    pub flows: Vec<FlowSummary>,
    /// One row per TCP connection, both ends (`connections.csv`).
    #[serde(skip)]
    pub connections: Vec<crate::connections::ConnectionSummary>,
    /// Per-queue totals.
    pub queues: Vec<QueueSummary>,
    /// Per-link-direction totals.
    pub links: Vec<LinkSummary>,
    /// Per-node counters.
    pub nodes: Vec<NodeSummary>,
    /// Per-app time series.
    #[serde(skip)]
    pub flow_series: Vec<FlowSample>,
    /// Per-queue time series.
    #[serde(skip)]
    pub queue_series: Vec<QueueSample>,
    /// Queue probe rows.
    #[serde(skip)]
    pub probe: Vec<ProbeRecord>,
    /// Per-TCP-socket time series (`tcp_info` names).
    #[serde(skip)]
    pub tcp_series: Vec<TcpSample>,
    /// Per-SCTP-association time series.
    #[serde(skip)]
    pub sctp_series: Vec<SctpSample>,
    /// Per-SCTP-path time series.
    #[serde(skip)]
    pub sctp_path_series: Vec<SctpPathSample>,
    /// Receiver-side rate control time series (`tcp_rate` rows per sample).
    #[serde(skip)]
    pub rate_series: Vec<RateSample>,
    /// Shim rule decisions (`shim_matches.csv`): which rule matched which connection.
    #[serde(skip)]
    pub shim_matches: Vec<crate::record::ShimMatchRow>,
    /// Every completed `tcp-rr` transaction (`rr_latency.csv`), app by app.
    #[serde(skip)]
    pub rr_latency: Vec<crate::record::RrLatency>,
}

impl Sim {
    /// Flushes captures and gathers the results (leaves the recorded tables empty).
    pub fn finish(&mut self) -> std::io::Result<RunResults> {
        for c in &mut self.rec.captures {
            c.finish()?;
        }
        // sockets still open at the end: their final tcp_info/assoc info feeds the totals
        for a in self.apps.iter_mut() {
            let Some(st) = self.nodes[a.node as usize].stack.as_deref() else { continue };
            a.refresh_final_info(st);
        }
        let flows = self.apps.iter().map(|a| a.summary(&self.nodes[a.node as usize].name)).collect();
        let connections = self.connection_rows(&self.rec.tcp_series);
        let mut queues = Vec::new();
        for n in &self.nodes {
            for f in &n.ifaces {
                let st = f.qdisc.stats();
                let mut cls = Vec::new();
                f.qdisc.class_stats(&mut cls);
                queues.push(QueueSummary {
                    dev: f.dev.clone(),
                    kind: st.kind.to_string(),
                    sent_packets: st.packets,
                    sent_bytes: st.bytes,
                    drops: st.drops,
                    overlimits: st.overlimits,
                    qlen: st.qlen,
                    backlog_bytes: st.backlog_bytes,
                    classes: cls
                        .iter()
                        .map(|c| ClassSummary { classid: c.classid.to_string(), packets: c.packets, bytes: c.bytes, drops: c.drops, qlen: c.qlen })
                        .collect(),
                });
            }
        }
        let links = self
            .dirs
            .iter()
            .map(|d| {
                let s = d.link.stats();
                LinkSummary {
                    name: d.name.clone(),
                    netem: d.link.spec().to_string(),
                    tx_packets: s.tx_packets,
                    tx_bytes: s.tx_bytes,
                    delivered: s.delivered,
                    lost_random: s.lost_random,
                    lost_model: s.lost_model,
                    dropped_down: s.dropped_down,
                    duplicated: s.duplicated,
                    corrupted: s.corrupted,
                    reordered: s.reordered,
                    ecn_marked: s.ecn_marked,
                }
            })
            .collect();
        let nodes = self.nodes.iter().map(|n| NodeSummary { node: n.name.clone(), counters: n.counters }).collect();
        let shim_matches = self.shim_match_rows();
        let mut rr_latency = Vec::new();
        for a in &self.apps {
            if let Some((starts, lat)) = a.rr_latencies() {
                rr_latency.extend(starts.iter().zip(lat).map(|(t, l)| crate::record::RrLatency { flow: a.name.clone(), start_s: t.as_secs_f64(), latency_ms: *l as f64 / 1e6 }));
            }
        }
        Ok(RunResults {
            seed: self.seed,
            sim_seconds: self.now.as_secs_f64(),
            events: self.counters.events,
            packets: self.counters.packets,
            fingerprint: format!("{:016x}", self.rec.fingerprint()),
            stopped_by_limit: self.stopped.clone(),
            flows,
            connections,
            queues,
            links,
            nodes,
            flow_series: std::mem::take(&mut self.rec.flow_series),
            queue_series: std::mem::take(&mut self.rec.queue_series),
            probe: std::mem::take(&mut self.rec.probe),
            tcp_series: std::mem::take(&mut self.rec.tcp_series),
            sctp_series: std::mem::take(&mut self.rec.sctp_series),
            sctp_path_series: std::mem::take(&mut self.rec.path_series),
            rate_series: std::mem::take(&mut self.rec.rate_series),
            shim_matches,
            rr_latency,
        })
    }

    /// Every shim node's rule-match log, in node order then decision order.
    fn shim_match_rows(&self) -> Vec<crate::record::ShimMatchRow> {
        use wirelab_shim::{FallbackReason, Policy, Transport};
        let mut rows = Vec::new();
        for n in &self.nodes {
            let Some(st) = n.stack.as_deref() else { continue };
            let Some(sh) = st.shim() else { continue };
            for m in sh.matches() {
                let rule = match m.matched.rule {
                    Some(i) => sh.config().rules.chain(m.matched.chain).get(i).map_or_else(|| format!("#{i}"), |r| format!("#{i} {r}")),
                    None => "default".to_string(),
                };
                let listener = m.matched.chain == wirelab_shim::Chain::Local;
                let transport = match (m.transport, listener) {
                    (Some(Transport::Sctp), _) => "sctp",
                    (Some(Transport::Tcp), _) => "tcp",
                    (None, true) if m.matched.policy == Policy::Enable => "tcp+sctp",
                    (None, true) => "tcp",
                    (None, false) => "",
                };
                let fallback = match m.fallback {
                    Some(FallbackReason::Abort) => "abort",
                    Some(FallbackReason::IcmpUnreachable) => "icmp",
                    Some(FallbackReason::Timer) => "timer",
                    None => "",
                };
                let app = st.tcp_owner(wirelab_tcp::SocketId(m.socket.0)).and_then(|a| self.apps.get(a as usize)).map(|a| a.name.clone()).unwrap_or_default();
                rows.push(crate::record::ShimMatchRow {
                    time_s: m.at.as_secs_f64(),
                    node: n.name.clone(),
                    app,
                    socket: m.socket.0,
                    chain: m.matched.chain.name(),
                    addr: m.addr.to_string(),
                    rule,
                    policy: m.matched.policy.name(),
                    transport,
                    fallback: fallback.to_string(),
                });
            }
        }
        rows
    }
}
