#!/usr/bin/env python3
"""Two flows of one congestion control through docs/live.md's shared bottleneck (20 Mbit/s,
20 ms each way, pfifo 70 ≈ 1 BDP), each from its own host to a wirelab sink, with a queue
probe on the bottleneck: the issue-17 kernel-vs-wirelab BBR comparison (docs/live.md).

    scripts/live-bbr-share.py PAIR SECONDS OUT [--cc bbr] [--second-at 0.3] [--seed 1]

PAIR is two letters, first starter first: k = the kernel (a TUN node running
crates/wirelab-live/tests/peers/kpeer.py, first packet ~0.35 s in as python starts),
w = wirelab (a simulated host's tcp-bulk at 0.2 s, or at --second-at when second).
The kernel's flow, when second, sleeps 0.15 s less than --second-at.
`ww` runs in the simulator; anything with a k needs root and /dev/net/tun. Prints per
flow the goodput from 5 s to SECONDS, the share of its data packets the bottleneck
dropped and the share that reached it within 50 µs of the flow's previous one (GSO
bursts), and the driver's event lag.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import wirelab

KPEER = Path(__file__).resolve().parents[1] / "crates/wirelab-live/tests/peers/kpeer.py"


def scenario(pair: str, cc: str, secs: int, second_at: float, seed: int) -> dict:
    nodes = [{"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"}, {"name": "d"}]
    links = [{"name": "bottleneck", "a": {"node": "r1", "addr": "10.0.0.1/30", "qdisc": "pfifo limit 70"},
              "b": {"node": "r2", "addr": "10.0.0.2/30"}, "netem": "rate 20mbit delay 20ms"},
             {"a": {"node": "r2", "addr": "10.0.3.1/24"}, "b": {"node": "d", "addr": "10.0.3.2/24"}}]
    apps = []
    for i, who in enumerate(pair):
        port, host, net = 5001 + i, f"{who}{i}", f"10.0.{1 + i}"
        apps.append({"name": f"sink{i}", "kind": "tcp-sink", "node": "d", "port": port})
        links.append({"a": {"node": host, "addr": f"{net}.2/24"}, "b": {"node": "r1", "addr": f"{net}.1/24"}})
        start = 0.2 if i == 0 else second_at
        if who == "k":
            # the kernel's flow starts when python has started: ~0.15 s after the sleep
            sleep = max(0.0, start - 0.15) if i else 0.2
            nodes.append({"name": host, "kind": "tun", "sysctl": {"net.ipv4.tcp_congestion_control": cc},
                          "run": [f"sleep {sleep}; {sys.executable} {KPEER} send-for 10.0.3.2 {port} {secs} > {host}.json"]})
        else:
            nodes.append({"name": host})
            apps.append({"name": f"bulk{i}", "kind": "tcp-bulk", "node": host, "dst": f"10.0.3.2:{port}", "cc": cc,
                         "start": f"{round(start * 1000)}ms", "stop": f"{secs + start}s"})
    return {"scenario": {"name": f"bbr-share-{pair}", "duration": f"{secs + 3}s", "seed": seed},
            "node": nodes, "link": links, "app": apps,
            "measure": {"sample_interval": "100ms", "queue_probe": ["r1"]}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pair", choices=["kw", "wk", "kk", "ww"])
    ap.add_argument("seconds", type=int)
    ap.add_argument("out", type=Path)
    ap.add_argument("--cc", default="bbr")
    ap.add_argument("--second-at", type=float, default=None,
                    help="start of the second flow (s; default 0.3, or 0.45 after a kernel flow)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    second_at = a.second_at if a.second_at is not None else (0.45 if a.pair[0] == "k" else 0.3)
    sc = scenario(a.pair, a.cc, a.seconds, second_at, a.seed)
    res = wirelab.live(sc, out=a.out) if "k" in a.pair else wirelab.run(sc, out=a.out)
    flows = pd.read_csv(a.out / "flow_timeseries.csv")
    probe = pd.read_csv(a.out / "queue_probe.csv")
    probe = probe[(probe["len"] > 1000) & probe["event"].isin(["enqueue", "drop"]) & (probe["time_ns"] > 5e9)]
    for i, who in enumerate(a.pair):
        s = flows[flows["flow"] == f"sink{i}"].set_index("time_s")["rx_bytes"]
        t0, t1 = s.index[s.index >= 5.0][0], s.index[s.index <= a.seconds][-1]
        mbps = (s[t1] - s[t0]) * 8 / (t1 - t0) / 1e6
        g = probe[probe["dport"] == 5001 + i]
        gaps = np.diff(g["time_ns"].to_numpy())
        print(f"{i + 1}. {'kernel' if who == 'k' else 'wirelab'}: {mbps:.2f} Mbit/s, bottleneck loss "
              f"{(g['event'] == 'drop').mean():.1%}, back to back {(gaps < 50_000).mean():.2f}")
    if "live" in res.summary:
        lag = res.summary["live"]["event_lag"]
        print(f"event lag median {lag['median_ns'] / 1e3:.0f} µs, p99 {lag['p99_ns'] / 1e6:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
