#!/usr/bin/env python3
"""Decomposes the thin-stream study's ER+TLP p99 increase (docs/reproductions/thin-streams.md,
"Why ER+TLP raises p99"): runs one `h1` cell (10 thin vs 10 greedy) with every value of
net.ipv4.tcp_early_retrans on the thin sender and the same seed, and prints p99/p99.9, the
mechanism counters and when a lost segment was first retransmitted (from the thin
sender's capture; needs tshark).

    scripts/thin-ertlp-decompose.py [--limit 20] [--itt 200] [--seed 1] [--modes 0,1,2,3,4] [--out DIR]
                                    [--profile linux-6]   # the study's linux-3.14 by default
"""
import argparse, io, subprocess
from pathlib import Path

import numpy as np
import pandas as pd

import wirelab.repro.thin_streams as ts
from wirelab.repro.common import analyze, run


def first_retx_delays(pcap: Path, seg: pd.DataFrame) -> pd.DataFrame:
    """Per range with a lost transmission: ms from its first to its second transmission,
    and whether the second left on a whole millisecond (a timer)."""
    out = subprocess.run(["tshark", "-r", str(pcap), "-Y", "tcp.len>0 && ip.src==10.128.0.1", "-T", "fields",
                          "-e", "frame.time_relative", "-e", "tcp.dstport", "-e", "tcp.seq",
                          "-o", "tcp.relative_sequence_numbers:TRUE"], capture_output=True, text=True, check=True).stdout
    p = pd.read_csv(io.StringIO(out), sep="\t", names=["t", "dport", "seq"])
    tx = p.groupby(["dport", "seq"]).t.apply(list)
    seg = seg.assign(dport=seg.flow.str.rsplit(":", n=1).str[1].astype(int))
    rows = []
    for r in seg[seg.lost >= 1].itertuples():
        ts_ = tx.get((r.dport, r.seq), [])
        if len(ts_) > 1:
            ms = ts_[1] * 1000
            rows.append(((ts_[1] - ts_[0]) * 1000, abs(ms - round(ms)) < 1e-6))
    return pd.DataFrame(rows, columns=["delay_ms", "timer"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--itt", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--modes", default="0,1,2,3,4")
    ap.add_argument("--out", type=Path, default=Path("thin-ertlp-decompose"))
    ap.add_argument("--profile", default="linux-3.14", help="stack profile of every node (the study's: linux-3.14)")
    a = ap.parse_args()
    for mode in (int(m) for m in a.modes.split(",")):
        name = f"er{mode}"
        ts.CONFIGS[name] = {"net.ipv4.tcp_early_retrans": mode}
        ts.LABELS[name] = f"tcp_early_retrans={mode}"
        cell = ts.Cell(10, 10, name, limit=a.limit, itt_ms=a.itt)
        d = a.out / f"{cell.name()}-s{a.seed}"
        scen = ts.scenario(cell, a.seed)
        scen["scenario"]["profile"] = a.profile
        res = run(scen, d / "run", seed=a.seed)
        snd = next(p for p in res.pcaps if p.name.startswith("thinsender"))
        rcv = next((p for p in res.pcaps if p.name.startswith("thinreceiver")), None)
        analyze(snd, d / "analyze", rcv, [f"thin=dport:{ts.THIN_PORT}-{ts.THIN_PORT + 999}"])
        seg = pd.read_csv(d / "analyze" / "segments.csv")
        lat = seg.latency_ms.dropna()
        t = pd.read_csv(d / "run" / "tcp_timeseries.csv")
        c = t[t.node == "thinsender"].sort_values("time_s").groupby("sock").tail(1)
        c = c[["rto_count", "early_retrans", "tlp_probes"]].sum().to_dict()
        r = first_retx_delays(snd, seg)
        spurious = int(((seg.lost == 0) & (seg.retransmissions > 0)).sum())
        p99, p999 = np.percentile(lat, [99, 99.9], method="inverted_cdf")
        print(f"tcp_early_retrans={mode}: p99 {p99:.0f} ms, p99.9 {p999:.0f} ms, {c}, ranges retransmitted though "
              f"delivered {spurious}; a lost range's 1st retransmission after median {r.delay_ms.median():.0f} ms "
              f"(p90 {r.delay_ms.quantile(.9):.0f}), timer-driven {100 * r.timer.mean():.0f} %", flush=True)
        for p in res.pcaps:
            p.unlink()


if __name__ == "__main__":
    main()
