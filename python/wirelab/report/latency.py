"""The latency samples behind a run's latency CDF (``Result.latency``).

In order of preference, since each says more about what an application sees:

1. **application delay** of every TCP flow whose sender and receiver were both captured:
   ``wirelab analyze SENDER --receiver RECEIVER``'s ``app_delay_ms`` (first transmission
   of a segment to its in-order delivery at the receiver: queueing, retransmissions and
   head-of-line blocking included; docs/analyze.md);
2. **queueing delay** per flow (5-tuple) at the probed queues (``measure.queue_probe``);
3. **smoothed RTT** samples of every sending socket (``tcp_timeseries``).
"""
from __future__ import annotations

import io
from pathlib import Path
from typing import Dict, List, Tuple

import pandas as pd

EMPTY = pd.DataFrame(columns=["name", "latency_ms", "what"])
MAX_FLOWS = 12


def _captures(res, node: str) -> List[Path]:
    d = res.out_dir / "pcap"
    if not d.is_dir() or not node:
        return []
    # pcap/NODE-IFACE.pcap: a longer node name with this one as prefix is another node's
    longer = [n["node"] for n in res.summary.get("nodes", []) if n["node"].startswith(node + "-")]
    return sorted(p for p in d.glob(f"{node}-*.pcap*") if not any(p.name.startswith(n + "-") for n in longer))


def _names(res) -> Dict[Tuple[str, int, str, int], str]:
    """5-tuple (client side) -> the connection's client app name."""
    c = res.connections
    if not len(c):
        return {}
    return {(str(r.src), int(r.sport), str(r.dst), int(r.dport)): str(r.client or r.server)
            for r in c.itertuples()}


def app_delay(res) -> pd.DataFrame:
    """Application delay of captured TCP flows (1. above)."""
    c = res.connections
    if not len(c) or not (res.out_dir / "pcap").is_dir():
        return EMPTY
    from .. import _wirelab

    names = _names(res)
    frames = []
    done = set()
    for r in c.itertuples():
        snd, rcv = _captures(res, str(r.client_node)), _captures(res, str(r.server_node))
        if len(snd) != 1 or len(rcv) != 1 or (snd[0], rcv[0]) in done:
            continue
        done.add((snd[0], rcv[0]))
        if snd[0].stat().st_size > 200e6:  # a report must stay quick; analyze it by hand
            continue
        try:
            t = _wirelab.analyze_tables(str(snd[0]), str(rcv[0]))
        except ValueError:
            continue
        seg = pd.read_csv(io.StringIO(t["segments"]))
        if "app_delay_ms" not in seg.columns:
            continue
        for flow, g in seg.groupby("flow", sort=False):
            a, b = str(flow).split(">")
            key = (a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1]), b.rsplit(":", 1)[0], int(b.rsplit(":", 1)[1]))
            if key not in names:
                continue
            frames.append(pd.DataFrame({"name": names[key], "latency_ms": g["app_delay_ms"],
                                        "what": "application delay"}))
    if not frames:
        return EMPTY
    return pd.concat(frames, ignore_index=True).dropna(subset=["latency_ms"])


def queueing_delay(res) -> pd.DataFrame:
    """Queueing delay per flow at the probed queues (2. above)."""
    probe = res.queue_probe
    if not len(probe):
        return EMPTY
    deq = probe[probe["event"] == "dequeue"]
    if not len(deq):
        return EMPTY
    names = _names(res)
    key = deq["src"].astype(str) + ":" + deq["sport"].astype(str) + ">" + deq["dst"].astype(str) + ":" + deq["dport"].astype(str)
    top = key.value_counts().index[:MAX_FLOWS]
    frames = []
    for k in top:
        a, b = k.split(">")
        t = (a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1]), b.rsplit(":", 1)[0], int(b.rsplit(":", 1)[1]))
        sel = deq[key == k]
        label = names.get(t, k)
        if sel["dev"].nunique() > 1:
            for dev, g in sel.groupby("dev"):
                frames.append(pd.DataFrame({"name": f"{label} @{dev}", "latency_ms": g["sojourn_ns"] / 1e6,
                                            "what": "queueing delay"}))
        else:
            frames.append(pd.DataFrame({"name": label, "latency_ms": sel["sojourn_ns"] / 1e6, "what": "queueing delay"}))
    return pd.concat(frames, ignore_index=True) if frames else EMPTY


def srtt_samples(res) -> pd.DataFrame:
    """Sampled smoothed RTT of sending sockets (3. above)."""
    from ..plots import sender_sockets
    tcp = sender_sockets(res.tcp_timeseries)
    if tcp is None or not len(tcp) or "srtt_ms" not in tcp.columns:
        return EMPTY
    tcp = tcp[tcp["srtt_ms"] > 0]
    return pd.DataFrame({"name": tcp["flow"].astype(str), "latency_ms": tcp["srtt_ms"], "what": "smoothed RTT"})


def latency_samples(res) -> pd.DataFrame:
    for f in (app_delay, queueing_delay, srtt_samples):
        df = f(res)
        if len(df):
            return df.reset_index(drop=True)
    return EMPTY
