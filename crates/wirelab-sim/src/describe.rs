//! A built network as text (`wirelab validate --show`): every node with its interfaces
//! (the names captures and queue probes take), addresses, egress qdisc and the link each
//! leads to, its routes (`ip route` spelling), and every application. Read-only; runs
//! nothing.
use crate::sim::Sim;
use std::fmt::Write;

impl Sim {
    /// Nodes, interfaces, addresses, routes and apps, one block per node.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for (ni, n) in self.nodes.iter().enumerate() {
            let _ = writeln!(s, "node {} ({})", n.name, if n.router { "router, forwards" } else { "host" });
            for (ii, f) in n.ifaces.iter().enumerate() {
                let peer = self.dirs.iter().find(|d| d.from == (ni as u32, ii as u32));
                let to = peer.map(|d| {
                    let (pn, pi) = d.to;
                    let p = &self.nodes[pn as usize];
                    let netem = d.link.spec().to_string();
                    format!("  -> {}:{} {}", p.name, p.ifaces[pi as usize].name, if netem.is_empty() { String::new() } else { format!("[{netem}]") })
                });
                let _ = writeln!(s, "  {:<6} {:<18} qdisc {:<10}{}", f.name, format!("{}/{}", f.addr.addr, f.addr.prefix), f.qdisc.kind(), to.unwrap_or_default().trim_end());
            }
            for (net, len, hop) in n.routes.entries() {
                let dst = if len == 0 { "default".to_string() } else { format!("{net}/{len}") };
                let via = hop.via.map(|v| format!(" via {v}")).unwrap_or_default();
                let dev = n.ifaces.get(hop.iface as usize).map(|f| f.name.as_str()).unwrap_or("?");
                let _ = writeln!(s, "  route {dst}{via} dev {dev}");
            }
            for a in self.apps.iter().filter(|a| a.node as usize == ni) {
                let _ = writeln!(s, "  app {} ({})", a.name, a.describe());
            }
        }
        s
    }
}
