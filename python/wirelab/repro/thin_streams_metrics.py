"""Per-run metrics of the thin-stream study (:mod:`wirelab.repro.thin_streams`).

:func:`run_metrics` reads one run directory (``run/`` from ``wirelab.run``, ``analyze/``
and ``analyze-v/`` from ``wirelab analyze`` of the thin senders' captures) and returns one
flat JSON-able dict; the runner then deletes the directory's bulky files. Definitions:

* **ACK latency** (analyseTCP's metric): per range, first transmission → first cumulative
  ACK, at the sender; nearest-rank percentiles over all ranges of all thin streams.
* **true loss**: thin transmissions never seen at the receiver / data segments sent.
* **relative loss per class** (the thesis's Figs 4.2/4.5/5.1/5.4, same definition for
  both classes): 1 − (packets [bytes] a class's receiver-side access link carried) /
  (packets [bytes] its sender put on its access link). Only r1's bottleneck queue drops
  (netem random loss where a cell asks for it), so this is the class's share of packets
  lost on the path. Packets still queued or in flight at the end count as lost: at most
  ``end_backlog_pkts`` of them (≤ 0.1 % of either class in a 300-s run).
* **mechanism counters**: the thin sender's ``tcp_info`` counters in
  ``tcp_timeseries.csv`` at the end of the run, summed over its streams.
* **packets_out at the first retransmission** of each range (inferred from the capture:
  ranges sent and not yet cumulatively ACKed), the quantity ``tcp_stream_is_thin()``
  compares with 4; **timer-driven** retransmissions leave on a whole millisecond
  (wirelab's TCP timers run on jiffies), the others are ACK-driven.
* **per stream** (Table 4.1): connection set-up time (first data segment − the app's
  start; ≥ 1 s means a SYN or SYN-ACK was retransmitted, Linux 3.14's initial RTO being
  1 s), the largest number of retransmissions of one range, worst ACK latency.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from .. import stats

#: Cumulative per-socket counters of ``tcp_timeseries.csv`` (``TcpInfo``).
COUNTERS = ("rto_count", "thin_linear_timeouts", "thin_dupack_retrans", "early_retrans", "tlp_probes",
            "rdb_packets")
#: A set-up at least this long needed a SYN or SYN-ACK retransmission (TCP_TIMEOUT_INIT).
SETUP_SLOW_S = 1.0
#: packets_out histogram bins at the first retransmission: 0 … 11, 12 = "12 or more".
OUT_BINS = 13
#: Window of the per-window series of long runs (Table 4.2).
WINDOW_S = 300.0


def _pct(xs: np.ndarray, p: float) -> float:
    return float(np.percentile(xs, p, method="inverted_cdf")) if len(xs) else math.nan


def _timer_driven(t_s: np.ndarray) -> np.ndarray:
    """wirelab's TCP timers (RTO, TLP, ER delay) fire on whole jiffies (HZ 1000): a
    retransmission sent at an exact millisecond is timer-driven, any other ACK-driven."""
    ms = t_s * 1000.0
    return np.abs(ms - np.round(ms)) < 1e-6


def _port(flow: str) -> int:
    return int(flow.rsplit(":", 1)[1])


def capture_metrics(adir: Path, pre: str, starts: dict[int, float]) -> dict:
    """ACK latency, application delay, loss, retransmission diagnostics and per-stream
    summaries of one thin sender's capture analysis; keys start with ``pre``. ``starts``
    maps a destination port to its app's start time (s)."""
    seg_p = adir / "segments.csv"
    if not seg_p.exists():
        return {}
    seg = pd.read_csv(seg_p, usecols=["flow", "first_sent_s", "retransmissions", "original_unseen", "acked_at_s",
                                      "latency_ms", "lost", "app_delay_ms"])
    m: dict = {}
    lat = np.sort(seg["latency_ms"].dropna().to_numpy())
    for p, k in ((50, "p50"), (90, "p90"), (99, "p99"), (99.9, "p999")):
        m[f"{pre}_lat_{k}"] = _pct(lat, p)
    m[f"{pre}_lat_max"] = float(lat[-1]) if len(lat) else math.nan
    m[f"{pre}_lat_ranges"] = int(len(lat))
    # 1-ms histogram for pooled CDFs: {ms: count}
    if len(lat):
        b = np.bincount(lat.astype(np.int64))
        nz = np.nonzero(b)[0]
        m[f"{pre}_lat_hist"] = {int(i): int(b[i]) for i in nz}
    app = seg["app_delay_ms"].dropna().to_numpy()
    m[f"{pre}_app_p99"] = _pct(app, 99)
    m[f"{pre}_app_max"] = float(app.max()) if len(app) else math.nan
    af = pd.read_csv(adir / "flows.csv")
    data = float(af["data_segments"].sum())
    m[f"{pre}_segments"] = data
    m[f"{pre}_retx_segments"] = float(af["retransmitted_segments"].sum())
    m[f"{pre}_true_loss_pct"] = 100.0 * float(af["lost_segments"].sum()) / data if data else math.nan
    dur = af["duration_s"].where(af["duration_s"] > 0)
    m[f"{pre}_throughput_kbps"] = float((af["tx_bytes"] * 8 / dur).mean()) / 1e3
    m[f"{pre}_goodput_cap_kbps"] = float((af["acked_bytes"] * 8 / dur).mean()) / 1e3
    m.update(_retx_diagnostics(seg, pd.read_csv(adir / "retransmissions.csv"), pre))
    # per stream (Table 4.1)
    streams = []
    for flow, g in seg.groupby("flow"):
        port = _port(flow)
        gl = g["latency_ms"].dropna()
        streams.append({
            "port": port,
            "setup_s": float(g["first_sent_s"].min()) - starts.get(port, 0.0),
            "max_retx": int(g["retransmissions"].max()),
            "lat_max": float(gl.max()) if len(gl) else math.nan,
            "lat_p99": _pct(np.sort(gl.to_numpy()), 99),
            "ranges_over_1s": int((gl >= 1000.0).sum()),
        })
    m[f"{pre}_streams"] = streams
    return m


def _retx_diagnostics(seg: pd.DataFrame, rx: pd.DataFrame, pre: str) -> dict:
    """packets_out at each range's first retransmission (histogram), the share of first
    retransmissions that were timer-driven, and the gap between the first and second
    timer-driven retransmission of a range (doubled by exponential backoff, not by LT)."""
    rx = rx[rx["kind"] == "retransmission"]
    m: dict = {f"{pre}_retx_ranges": 0, f"{pre}_first_retx_timer_pct": math.nan, f"{pre}_out_hist": [0] * OUT_BINS,
               f"{pre}_rto2_gaps": 0, f"{pre}_rto2_gap_ms_med": math.nan}
    if rx.empty:
        return m
    rx = rx.sort_values("sent_s")
    timer = _timer_driven(rx["sent_s"].to_numpy())
    rx = rx.assign(timer=timer)
    first = rx.groupby(["flow", "seq"], sort=False).first()
    m[f"{pre}_retx_ranges"] = int(len(first))
    m[f"{pre}_first_retx_timer_pct"] = 100.0 * float(first["timer"].mean())
    second = rx.groupby(["flow", "seq"], sort=False).nth(1).set_index(["flow", "seq"])
    both = first.merge(second, left_index=True, right_index=True, suffixes=("", "_2"))
    both = both[both["timer"] & both["timer_2"]]
    if len(both):
        gaps = (both["sent_s_2"] - both["sent_s"]).to_numpy() * 1000.0
        m[f"{pre}_rto2_gaps"] = int(len(gaps))
        m[f"{pre}_rto2_gap_ms_med"] = float(np.median(gaps))
    # packets_out(t) = #(ranges first sent < t) - #(ranges cumulatively ACKed <= t); first
    # transmissions are in sequence order and cumulative ACK times are monotone in sequence
    hist = np.zeros(OUT_BINS, dtype=np.int64)
    s = seg[seg["original_unseen"] != 1]
    for flow, g in s.groupby("flow"):
        if flow not in first.index.get_level_values(0):
            continue
        g = g.sort_values("first_sent_s")
        sent = g["first_sent_s"].to_numpy()
        acked = np.maximum.accumulate(g["acked_at_s"].fillna(np.inf).to_numpy())
        t = first.loc[flow, "sent_s"].to_numpy()
        out = np.searchsorted(sent, t, "left") - np.searchsorted(acked, t, "right")
        hist += np.bincount(np.clip(out, 0, OUT_BINS - 1), minlength=OUT_BINS)
    m[f"{pre}_out_hist"] = [int(x) for x in hist]
    return m


def class_loss(links: pd.DataFrame, vthin: bool) -> dict:
    """Relative packet and byte loss per class from the access links' counters."""
    tx = links.set_index("name")
    m: dict = {}
    thin_in = ["thin-access:thinsender->r1"] + (["vthin-access:vthinsender->r1"] if vthin else [])
    pairs = {"thin": (thin_in, ["thin-rx:r2->thinreceiver"]),
             "greedy": (["greedy-access:greedysender->r1"], ["greedy-rx:r2->greedyreceiver"])}
    for cls, (ins, outs) in pairs.items():
        for unit, col in (("pkt", "tx_packets"), ("byte", "tx_bytes")):
            sent = float(sum(tx.loc[n, col] for n in ins if n in tx.index))
            got = float(sum(tx.loc[n, col] for n in outs if n in tx.index))
            m[f"{cls}_rel_loss_{unit}_pct"] = 100.0 * (1.0 - got / sent) if sent else math.nan
        m[f"{cls}_sent_pkts"] = float(sum(tx.loc[n, "tx_packets"] for n in ins if n in tx.index))
    bn = tx.loc["bottleneck:r1->r2"]
    m["end_backlog_pkts"] = float(bn["tx_packets"] - bn["delivered"])
    return m


def counters(ts: pd.DataFrame) -> dict:
    """Mechanism counters of the streams under test (apps ``thin*`` on ``thinsender``)
    and the share of 1-s samples (ESTABLISHED) at which ``tcp_stream_is_thin()`` held."""
    t = ts[(ts["node"] == "thinsender") & ts["flow"].str.startswith("thin")]
    if t.empty:
        return {}
    last = t.groupby("flow").last()
    m = {f"cnt_{k}": float(last[k].sum()) for k in COUNTERS}
    est = t[t["state"] == "ESTAB"]
    m["thin_sampled_pct"] = 100.0 * float((est["thin"].astype(str).str.lower() == "true").mean()) if len(est) else math.nan
    return m


def windows(d: Path, window_s: float = WINDOW_S) -> dict:
    """Per-window series of a long run (Table 4.2): thin ACK latency and true loss by
    first-send time, greedy goodput, bottleneck drops and counter increments; plus the
    least-squares drift per hour of the per-minute p99 and loss (first and last minute
    left out)."""
    seg = pd.read_csv(d / "analyze" / "segments.csv", usecols=["first_sent_s", "latency_ms", "lost"])
    seg["lost"] = seg["lost"].fillna(0)
    flows = pd.read_csv(d / "run" / "flow_timeseries.csv")
    rx = flows[flows["flow"].str.startswith(f"sink{6}")].groupby("time_s")["rx_bytes"].sum()
    q = pd.read_csv(d / "run" / "queue_timeseries.csv")
    drops = q[q["dev"] == "r1:eth2"].groupby("time_s")["drops"].last()
    ts = pd.read_csv(d / "run" / "tcp_timeseries.csv")
    ts = ts[(ts["node"] == "thinsender") & ts["flow"].str.startswith("thin")]
    cnt = ts.groupby("time_s")[list(COUNTERS)].sum()

    def at(series, t: float):
        s = series[series.index <= t + 1e-9]
        return s.iloc[-1] if len(s) else 0.0 * series.iloc[0]

    rows = []
    for w, g in seg.groupby((seg["first_sent_s"] // window_s).astype(int)):
        t0, t1 = w * window_s, (w + 1) * window_s
        lat = np.sort(g["latency_ms"].dropna().to_numpy())
        c0, c1 = at(cnt, t0), at(cnt, t1)
        rows.append({"t0_s": t0, "ranges": int(len(g)), "lat_p50": _pct(lat, 50), "lat_p99": _pct(lat, 99),
                     "lat_max": float(lat[-1]) if len(lat) else math.nan,
                     "true_loss_pct": 100.0 * float(g["lost"].sum()) / len(g),
                     "greedy_mbps": float(at(rx, t1) - at(rx, t0)) * 8 / window_s / 1e6,
                     "drops": float(at(drops, t1) - at(drops, t0)),
                     **{f"d_{k}": float(c1[k] - c0[k]) for k in COUNTERS}})
    per_min = [(mi / 60.0, _pct(np.sort(g["latency_ms"].dropna().to_numpy()), 99), 100.0 * g["lost"].sum() / len(g))
               for mi, g in seg.groupby((seg["first_sent_s"] // 60).astype(int))][1:-1]
    m: dict = {"windows": rows}
    if len(per_min) >= 3:
        for i, key in ((1, "lat_p99"), (2, "true_loss_pct")):
            b, se, my = stats.drift([x[0] for x in per_min], [x[i] for x in per_min])
            m[f"drift_{key}"] = {"per_hour": b, "se": se, "mean": my, "minutes": len(per_min)}
    return m


def run_metrics(d: Path, cell) -> dict:
    """All metrics of one run directory (see the module docstring)."""
    m: dict = {"fingerprint": json.loads((d / "run" / "summary.json").read_text())["fingerprint"]}
    flows = pd.read_csv(d / "run" / "flows.csv")
    sinks = flows[flows["name"].str.startswith("sink")].assign(port=lambda f: f["name"].str[4:].astype(int))
    gs = sinks[sinks["port"] >= 6000]["goodput_bps"].to_numpy(dtype=float)
    m["greedy_goodput_mbps"] = float(gs.sum()) / 1e6 if len(gs) else math.nan
    m["greedy_jain"] = stats.jain(gs) if len(gs) else math.nan
    greedy = flows[flows["name"].str.startswith("greedy")]
    m["greedy_retrans"] = float(greedy["retrans"].sum()) if len(greedy) else math.nan
    # everything the greedy senders' sockets put out (payload and headers, retransmissions)
    m["greedy_tx_mbps"] = float(greedy["tx_bytes"].sum()) * 8 / cell.duration_s / 1e6 if len(greedy) else math.nan
    for pre, lo, hi in (("thin", 5000, 5500), ("vthin", 5500, 6000)):
        s = sinks[(sinks["port"] >= lo) & (sinks["port"] < hi)]["goodput_bps"]
        if len(s):
            m[f"{pre}_goodput_kbps"] = float(s.mean()) / 1e3
            m[f"{pre}_goodput_sum_kbps"] = float(s.sum()) / 1e3
            m[f"{pre}_goodput_min_kbps"] = float(s.min()) / 1e3
    thin = flows[flows["name"].str.startswith("thin")]
    if len(thin):
        m["thin_retrans"] = float(thin["retrans"].sum())
    q = pd.read_csv(d / "run" / "queues.csv")
    m["bottleneck_drops"] = float(q.loc[q["dev"] == "r1:eth2", "drops"].sum())
    links = pd.read_csv(d / "run" / "links.csv")
    dur = float(cell.duration_s)
    li = links.set_index("name")
    if "thin-access:thinsender->r1" in li.index:
        m["thin_wire_kbps"] = float(li.loc["thin-access:thinsender->r1", "tx_bytes"]) * 8 / dur / 1e3
    m.update(class_loss(links, bool(cell.vthin)))
    m.update(counters(pd.read_csv(d / "run" / "tcp_timeseries.csv")))
    starts = {5000 + i: i * cell.itt_ms / cell.thin / 1e3 for i in range(cell.thin)}
    m.update(capture_metrics(d / "analyze", "thin", starts))
    vstarts = {5500 + i: (i + 0.5) * cell.itt_ms / cell.vthin / 1e3 for i in range(cell.vthin)}
    m.update(capture_metrics(d / "analyze-v", "vthin", vstarts))
    if cell.duration_s > 3600:
        m.update(windows(d))
    return m
