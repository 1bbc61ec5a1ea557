//! `tc -s qdisc show` / `tc -s class show` style text, for logs and golden summaries.
use crate::{ClassId, Qdisc};
use core::fmt::Write;
use wirelab_core::units::format_rate;

fn parent_str(p: ClassId) -> String {
    if p == ClassId::ROOT {
        "root".to_string()
    } else {
        format!("parent {p}")
    }
}

fn handle_str(h: ClassId) -> String {
    format!("{:x}:", h.major())
}

/// The qdisc tree as `tc -s qdisc show dev X` prints it (statistics lines included),
/// followed by the classes as `tc -s class show dev X` prints them.
pub fn tc_show(q: &dyn Qdisc) -> String {
    let mut out = String::new();
    let mut qs = Vec::new();
    q.tree_stats(&mut qs);
    for s in &qs {
        let _ = write!(out, "qdisc {} {} {}", s.kind, handle_str(s.handle), parent_str(s.parent));
        for (k, v) in &s.xstats {
            let _ = write!(out, " {k} {v}");
        }
        let _ = writeln!(out);
        let _ = writeln!(out, " Sent {} bytes {} pkt (dropped {}, overlimits {} requeues {})", s.bytes, s.packets, s.drops, s.overlimits, s.requeues);
        let _ = writeln!(out, " backlog {}b {}p requeues {}", s.backlog_bytes, s.qlen, s.requeues);
    }
    let mut cs = Vec::new();
    q.class_stats(&mut cs);
    for c in &cs {
        let _ = write!(out, "class {} {} {}", c.kind, c.classid, parent_str(c.parent));
        if let Some(l) = c.leaf {
            let _ = write!(out, " leaf {}", handle_str(l));
        }
        if c.rate_bps > 0 {
            let _ = write!(out, " rate {}", format_rate(c.rate_bps));
        }
        if c.ceil_bps > 0 {
            let _ = write!(out, " ceil {}", format_rate(c.ceil_bps));
        }
        let _ = writeln!(out);
        let _ = writeln!(out, " Sent {} bytes {} pkt (dropped {}, overlimits {} requeues 0)", c.bytes, c.packets, c.drops, c.overlimits);
        let _ = writeln!(out, " backlog {}b {}p requeues 0", c.backlog_bytes, c.qlen);
        if c.kind == "htb" {
            let _ = writeln!(out, " lended: {} borrowed: {} giants: 0", c.lends, c.borrows);
            let _ = writeln!(out, " tokens: {} ctokens: {}", c.tokens, c.ctokens);
        } else if c.kind == "cbq" {
            let _ = writeln!(out, "  borrowed {} overactions {} avgidle {} undertime {}", c.borrows, c.lends, c.tokens, c.ctokens);
        }
    }
    out
}

#[cfg(test)]
mod test {
    use crate::TcConfig;
    #[test]
    fn shows_tree_and_classes() {
        let q = TcConfig::parse("htb default 1\n1:1 htb rate 10mbit\nqdisc add parent 1:1 handle 10: sfq").unwrap().build(0, "x").unwrap();
        let s = super::tc_show(q.as_ref());
        assert!(s.contains("qdisc htb 1: root"), "{s}");
        assert!(s.contains("qdisc sfq 10: parent 1:1"), "{s}");
        assert!(s.contains("class htb 1:1 parent 1:0 leaf 10: rate 10Mbit ceil 10Mbit"), "{s}");
        assert!(s.contains(" Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)"), "{s}");
    }
}
