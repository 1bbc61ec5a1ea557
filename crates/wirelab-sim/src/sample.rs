//! Time-series sampling: the driver walks its hosts and queues and hands the recorder
//! snapshots (`tcp_info`, SCTP association info, rate-control and qdisc counters).
use crate::sim::Sim;

impl Sim {
    /// Records one sample of every app, socket, rate controller and egress queue at `now`.
    pub(crate) fn sample(&mut self) {
        let Sim { now, rec, apps, nodes, .. } = self;
        let now = *now;
        if !rec.begin_sample(now, apps.iter().map(|a| (a.name.as_str(), a.counter_bytes()))) {
            return;
        }
        for a in apps.iter() {
            let node = &nodes[a.node as usize];
            let Some(stack) = node.stack.as_deref() else { continue };
            a.tcp_sockets(&mut |s| {
                if let Some(i) = stack.s_info(s) {
                    let conn = stack.s_addrs(s).map(|(l, r)| format!("{l}->{r}")).unwrap_or_default();
                    rec.tcp(now, &a.name, &node.name, s.0, conn, &i);
                } else if let Some(i) = stack.s_sctp(s).and_then(|x| stack.sctp().info(x)) {
                    // a TCP application whose shim carries it over SCTP
                    rec.sctp(now, &a.name, &node.name, s.0, &i);
                }
            });
            a.sctp_sockets(&mut |s| {
                if let Some(i) = stack.sctp().info(s) {
                    rec.sctp(now, &a.name, &node.name, s.0, &i);
                }
            });
        }
        for n in nodes.iter() {
            let Some(stack) = n.stack.as_deref() else { continue };
            for (s, probe) in &stack.rate_probes {
                let conn = stack.tcp().addrs(*s).map(|(l, r)| format!("{l}->{r}")).unwrap_or_default();
                rec.rate(now, &n.name, conn, &probe.snapshot_at(now));
            }
            // UDP sockets under the OKAY/DROP/WARN/KILL policy (thesis §5.2.2): one row
            // per policed port, `mode` = the state
            for (port, pol) in &stack.udp_rate {
                rec.rate(now, &n.name, format!("udp *:{port}"), &pol.probe().snapshot_at(now));
            }
        }
        for n in nodes.iter() {
            for f in &n.ifaces {
                rec.queue(now, &f.dev, f.qdisc.as_ref());
            }
        }
    }
}
