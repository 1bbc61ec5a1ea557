"""Modern congestion control: BBR, DCTCP and ECN against the published results (issue 17,
docs/reproductions/modern-cc.md).

Runs the scenarios in ``scenarios/modern-cc/`` through ``wirelab.run`` and writes CSV tables,
``table.md`` and figures to ``--out``:

* ``share``   — 1 BBR flow against 1, 2, 4 and 8 CUBIC flows through a drop-tail FIFO of 0.5,
  1, 4 and 16 BDP (10 Mbit/s, 40 ms: Ware et al., IMC 2019; Hock et al., ICNP 2017): BBR's
  share of the goodput from 30 s to 120 s, next to Ware et al.'s model;
* ``loss``    — one BBR or CUBIC flow, 100 Mbit/s, 100 ms, 0–25 % random loss on the data
  path, 60 s (Cardwell et al., ACM Queue 2016): goodput against the (1 − p) ceiling;
* ``dctcp``   — DCTCP's queue at a switch that CE-marks above K packets (RED, min ≈ max = K),
  1 Gbit/s, 100 µs, 2 and 10 flows, K = 20 and 65 (Alizadeh et al., SIGCOMM 2010), with the
  paper's steady-state analysis (Q_max = K + N, amplitude ½√(2N(C·RTT + K))), utilisation;
  CUBIC with RFC 3168 ECN at the same queue and CUBIC on a drop-tail FIFO for comparison;
* ``coexist`` — 1 DCTCP and 1 CUBIC flow through that queue, CUBIC without and with ECN
  (RFC 8257 §6: DCTCP takes the larger share).

Every cell runs ``--seeds`` seeds (default 10; the seed also draws the flows' start times
within the first 0.5 s) and is reported as the median over the seeds with the range
(min–max) beside it; the per-run rows are in ``<part>.csv``. Runs are cheap (0.1–5 s of
wall time each) but many (≈ 540 for all parts, ~15 min on two free cores)::

    nice -n 10 python -m wirelab.repro.modern_cc [--out DIR] [--only share,loss,dctcp,coexist]
                                                [--seeds 10] [--jobs 2]

(default ``./wirelab-repro-modern_cc``; ``PROVENANCE.json`` records the commit and command).
"""
from __future__ import annotations

import argparse
import math
import random
import shutil
import sys
import tempfile
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from .. import stats
from .common import add_out, md_table, pyplot, save, scenario_file, stamp
from .common import run as run_scenario

SHARE = scenario_file("modern-cc/bbr-vs-cubic.toml")
LOSS = scenario_file("modern-cc/bbr-loss.toml")
DCTCP = scenario_file("modern-cc/dctcp-red.toml")

FRAME = 1514  # bytes on the wire per full-sized segment (1448 payload + 32 TCP + 20 IP + 14 Ethernet)
PAYLOAD = 1448

# --- share: 10 Mbit/s, 40 ms base RTT ---
SHARE_RATE = 10e6
SHARE_RTT = 0.040
SHARE_BDP = SHARE_RATE * SHARE_RTT / 8 / FRAME  # 33.0 frames
BUFFERS_BDP = [0.5, 1, 4, 16]
N_CUBIC = [1, 2, 4, 8]
SHARE_WINDOW = (30.0, 120.0)

# --- loss: 100 Mbit/s, 100 ms ---
LOSS_RATE = 100e6
LOSSES = [0.0, 0.01, 0.1, 1.0, 2.0, 5.0, 10.0, 15.0, 20.0, 25.0]

# --- dctcp: 1 Gbit/s, 100 µs ---
DC_RATE = 1e9
DC_RTT = 100e-6
DC_CRTT = DC_RATE * DC_RTT / 8 / FRAME  # 8.26 frames
DC_WINDOW = (1.0, 3.0)


def _load(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def _starts(seed: int, names: list[str], spread: float = 0.5) -> dict[str, str]:
    """Start times drawn per seed, uniform in [0, spread) s, so that flows do not start in
    lock step (the study's only source of variation besides BBR's random cycle phase)."""
    r = random.Random(seed * 7919 + len(names))
    return {n: f"{int(r.uniform(0, spread) * 1e6)}us" for n in names}


# ---------------------------------------------------------------------------------------
# scenarios
# ---------------------------------------------------------------------------------------

def share_scenario(buffer_bdp: float, n_cubic: int, seed: int, duration: float = 120.0) -> dict:
    """bbr-vs-cubic.toml with ``n_cubic`` CUBIC flows (c0…) and a FIFO of ``buffer_bdp``
    BDP (rounded to whole packets)."""
    sc = _load(SHARE)
    sc["scenario"]["duration"] = f"{duration:g}s"
    limit = max(1, round(buffer_bdp * SHARE_BDP))
    proto = dict(next(n for n in sc["node"] if n["name"] == "s0"))
    for link in sc["link"]:
        if link["name"] == "bottleneck":
            link["a"]["qdisc"] = f"pfifo limit {limit}"
    apps = {a["name"]: a for a in sc["app"]}
    for i in range(1, n_cubic):
        sc["node"] += [{**proto, "name": f"s{i}"}, {**proto, "name": f"d{i}"}]
        sc["link"] += [{"name": f"a-{i}", "a": {"node": f"s{i}"}, "b": {"node": "r1"}, "netem": "rate 1gbit delay 500us"},
                       {"name": f"b-{i}", "a": {"node": "r2"}, "b": {"node": f"d{i}"}, "netem": "rate 1gbit delay 500us"}]
        sc["app"] += [{**apps["c0"], "name": f"c{i}", "node": f"s{i}", "dst": f"d{i}:5001"},
                      {**apps["k0"], "name": f"k{i}", "node": f"d{i}"}]
    starts = _starts(seed, ["bbr"] + [f"c{i}" for i in range(n_cubic)])
    for a in sc["app"]:
        if a["name"] in starts:
            a["start"] = starts[a["name"]]
    return sc


def loss_scenario(cc: str, loss_pct: float, duration: float = 60.0) -> dict:
    sc = _load(LOSS)
    sc["scenario"]["duration"] = f"{duration:g}s"
    for link in sc["link"]:
        if link["name"] == "bottleneck":
            link["a"]["netem"] = "rate 100mbit delay 49ms" + (f" loss {loss_pct:g}%" if loss_pct else "")
    for a in sc["app"]:
        if a["name"] == "bulk":
            a["cc"] = cc
    return sc


def red_k(k: int, limit_pkts: int = 1000) -> str:
    """The DCTCP switch: CE-mark ECT packets above K packets (RED min = K·1514 bytes, max
    one byte more, probability 1, burst K so Wlog = 1), drop Not-ECT ones there."""
    return f"red limit {limit_pkts * FRAME} min {k * FRAME} max {k * FRAME + 1} avpkt {FRAME} burst {k} probability 1 ecn"


def dc_scenario(ccs: list[str], qdisc: str, seed: int, duration: float = 3.0) -> dict:
    """dctcp-red.toml with one flow per entry of ``ccs`` (``dctcp``, ``cubic``, or
    ``cubic-ecn`` = CUBIC on a host with ``net.ipv4.tcp_ecn = 1``), each on its own host
    pair (both ends run the flow's module), and ``qdisc`` at the bottleneck."""
    sc = _load(DCTCP)
    sc["scenario"]["duration"] = f"{duration:g}s"
    sc["node"] = [n for n in sc["node"] if n["name"] in ("r1", "r2")]
    sc["link"] = [lk for lk in sc["link"] if lk["name"] == "bottleneck"]
    sc["link"][0]["a"]["qdisc"] = qdisc
    sc["app"] = []
    starts = _starts(seed, [f"f{i}" for i in range(len(ccs))], spread=0.01)
    for i, cc in enumerate(ccs):
        sys_ = {"net.ipv4.tcp_congestion_control": "cubic" if cc.startswith("cubic") else cc}
        if cc == "cubic-ecn":
            sys_["net.ipv4.tcp_ecn"] = 1
        sc["node"] += [{"name": f"s{i}", "sysctl": sys_}, {"name": f"d{i}", "sysctl": sys_}]
        sc["link"] += [{"name": f"a-{i}", "a": {"node": f"s{i}"}, "b": {"node": "r1"}, "netem": "rate 10gbit delay 5us"},
                       {"name": f"b-{i}", "a": {"node": "r2"}, "b": {"node": f"d{i}"}, "netem": "rate 10gbit delay 5us"}]
        sc["app"] += [{"name": f"f{i}", "kind": "tcp-bulk", "node": f"s{i}", "dst": f"d{i}:5001", "start": starts[f"f{i}"]},
                      {"name": f"k{i}", "kind": "tcp-sink", "node": f"d{i}", "port": 5001}]
    return sc


# ---------------------------------------------------------------------------------------
# models the papers give
# ---------------------------------------------------------------------------------------

def ware_bbr_share(buffer_bdp: float, rate_bps: float = SHARE_RATE, rtt_s: float = SHARE_RTT, n_bbr: int = 1) -> float:
    """Ware et al.'s (IMC 2019) BBR share against loss-based flows, for ``n_bbr`` BBR flows
    and any number of loss-based ones: the loss-based flows' fraction p = ½ − 1/(2X) −
    4N/q (at least 0; X = buffer in BDP, q = buffer in packets), and BBR sends nothing in
    PROBE_RTT, which it enters every 10 s for (q/c + 200 ms + RTT):
    share = (1 − p)·(1 − (q/c + 0.2 + l)/10). The model assumes q ≫ BDP."""
    c = rate_bps / 8 / FRAME
    q = buffer_bdp * c * rtt_s
    p = max(0.0, 0.5 - 1 / (2 * buffer_bdp) - 4 * n_bbr / q)
    probe = (q / c + 0.2 + rtt_s) / 10
    return (1 - p) * (1 - probe)


def dctcp_queue_model(n: int, k: float, c_rtt: float = DC_CRTT) -> tuple[float, float, float]:
    """The DCTCP paper's steady-state analysis (§3.3, N synchronised flows): the queue peaks
    at Q_max = K + N and swings by A = ½·√(2N(C·RTT + K)) packets; returns (Q_min, Q_max, A)."""
    a = 0.5 * math.sqrt(2 * n * (c_rtt + k))
    return k + n - a, k + n, a


# ---------------------------------------------------------------------------------------
# running and summarising
# ---------------------------------------------------------------------------------------

def _snap(fts: pd.DataFrame, t: float) -> float:
    """The last sample time at or before ``t`` (the windows below start and end on samples,
    so that a window's bytes and its length agree)."""
    ts = fts["time_s"][fts["time_s"] <= t + 1e-9]
    return float(ts.max()) if len(ts) else 0.0


def _rx_between(fts: pd.DataFrame, sink: str, t0: float, t1: float) -> float:
    """Bytes ``sink`` received between the samples at ``t0`` and ``t1``."""
    s = fts[fts["flow"] == sink].set_index("time_s")["rx_bytes"]
    at = lambda t: float(s[s.index <= t + 1e-9].iloc[-1]) if (s.index <= t + 1e-9).any() else 0.0  # noqa: E731
    return at(t1) - at(t0)


def summarize_share(d: Path, sc: dict) -> dict:
    fts = pd.read_csv(d / "flow_timeseries.csv")
    tcp = pd.read_csv(d / "tcp_timeseries.csv")
    t0, t1 = SHARE_WINDOW
    t1 = _snap(fts, min(t1, float(fts["time_s"].max())))
    t0 = _snap(fts, min(t0, t1 / 4))
    sinks = [a["name"] for a in sc["app"] if a["kind"] == "tcp-sink"]
    rx = {s: _rx_between(fts, s, t0, t1) for s in sinks}
    total = sum(rx.values())
    win = tcp[(tcp["time_s"] > t0) & (tcp["time_s"] <= t1)]
    snd = lambda pref: win[win["flow"].astype(str).str.startswith(pref) & (win["state"] == "ESTAB")]  # noqa: E731
    cub = [rx[s] for s in sinks if s != "kbbr"]
    return {
        "bbr_share": rx["kbbr"] / total if total else math.nan,
        "utilisation": total * 8 / (t1 - t0) / (SHARE_RATE * PAYLOAD / FRAME),
        "bbr_mbit": rx["kbbr"] * 8 / (t1 - t0) / 1e6,
        "cubic_mbit_each": sum(cub) / len(cub) * 8 / (t1 - t0) / 1e6,
        "jain_cubic": stats.jain(cub) if len(cub) > 1 else math.nan,
        "cubic_srtt_ms": float(snd("c")["srtt_ms"].mean()),
        "bbr_srtt_ms": float(snd("bbr")["srtt_ms"].mean()),
        "bbr_retrans": int(tcp[tcp["flow"] == "bbr"]["total_retrans"].max()),
        "probe_rtt_frac": float((snd("bbr")["bbr_mode"] == "PROBE_RTT").mean()),
    }


def summarize_loss(d: Path, sc: dict) -> dict:
    fts = pd.read_csv(d / "flow_timeseries.csv")
    dur = float(fts["time_s"].max())
    t0 = _snap(fts, min(10.0, dur / 3))
    tcp = pd.read_csv(d / "tcp_timeseries.csv")
    snd = tcp[tcp["flow"] == "bulk"]
    return {
        "goodput_mbit": _rx_between(fts, "sink", 0.0, dur) * 8 / dur / 1e6,
        # after BBR's (and CUBIC's) ramp-up: from 10 s (or a third of a shorter run) on
        "goodput_10_60_mbit": _rx_between(fts, "sink", t0, dur) * 8 / (dur - t0) / 1e6,
        "retrans": int(snd["total_retrans"].max()),
        "rto": int(snd["rto_count"].max()),
    }


def summarize_dc(d: Path, sc: dict) -> dict:
    fts = pd.read_csv(d / "flow_timeseries.csv")
    q = pd.read_csv(d / "queue_timeseries.csv")
    t0, t1 = DC_WINDOW
    t1 = _snap(fts, min(t1, float(fts["time_s"].max())))
    t0 = _snap(fts, min(t0, t1 / 3))
    b = q[(q["dev"] == "r1:eth0") & (q["time_s"] > t0) & (q["time_s"] <= t1)]["qlen"]
    sinks = [a["name"] for a in sc["app"] if a["kind"] == "tcp-sink"]
    rx = [_rx_between(fts, s, t0, t1) for s in sinks]
    tcp = pd.read_csv(d / "tcp_timeseries.csv")
    w = tcp[(tcp["time_s"] > t0) & (tcp["time_s"] <= t1) & tcp["flow"].astype(str).str.startswith("f")]
    row = {
        "q_p5": float(b.quantile(0.05)), "q_p25": float(b.quantile(0.25)), "q_median": float(b.median()),
        "q_mean": float(b.mean()), "q_p75": float(b.quantile(0.75)), "q_p95": float(b.quantile(0.95)),
        "q_max": float(b.max()), "q_zero_frac": float((b == 0).mean()),
        "utilisation": sum(rx) * 8 / (t1 - t0) / (DC_RATE * PAYLOAD / FRAME),
        "share_f0": rx[0] / sum(rx) if sum(rx) else math.nan,
        "jain": stats.jain(rx) if len(rx) > 1 else math.nan,
        "srtt_ms": float(w["srtt_ms"].mean()),
        "retrans": int(tcp[tcp["flow"].astype(str).str.startswith("f")].groupby("flow")["total_retrans"].max().sum()),
    }
    if "dctcp_alpha" in w and w["dctcp_alpha"].notna().any():
        row["alpha_mean"] = float(w["dctcp_alpha"].mean())
    return row


SUMMARIZE: dict[str, Callable[[Path, dict], dict]] = {
    "share": summarize_share, "loss": summarize_loss, "dctcp": summarize_dc, "coexist": summarize_dc,
}


def _run(job: tuple) -> dict:
    """One run in a worker: scenario → temporary directory → summary row (the directory is
    removed unless ``keep`` names one)."""
    part, label, sc, seed, keep = job
    out = Path(keep) if keep else Path(tempfile.mkdtemp(prefix=f"wirelab-modern-cc-{part}-"))
    try:
        run_scenario(sc, out, seed=seed)
        return {"part": part, **label, "seed": seed, **SUMMARIZE[part](out, sc)}
    finally:
        if not keep:
            shutil.rmtree(out, ignore_errors=True)


def run_all(jobs: list[tuple], n_jobs: int) -> pd.DataFrame:
    if n_jobs <= 1:
        rows = [_run(j) for j in jobs]
    else:
        with ProcessPoolExecutor(n_jobs) as ex:
            rows = list(ex.map(_run, jobs, chunksize=1))
    return pd.DataFrame(rows)


def part_share(seeds: list[int], duration: float) -> list[tuple]:
    return [("share", {"buffer_bdp": x, "n_cubic": n}, share_scenario(x, n, s, duration), s, None)
            for x in BUFFERS_BDP for n in N_CUBIC for s in seeds]


def part_loss(seeds: list[int], duration: float) -> list[tuple]:
    return [("loss", {"cc": cc, "loss_pct": p}, loss_scenario(cc, p, duration), s, None)
            for p in LOSSES for cc in ("bbr", "cubic") for s in seeds]


DC_CONFIGS = [  # (label, flows' modules, bottleneck) per (N, K)
    ("dctcp, RED K", "dctcp", "red"),
    ("cubic+ecn (RFC 3168), RED K", "cubic-ecn", "red"),
    ("cubic, pfifo 100", "cubic", "pfifo limit 100"),
]


def part_dctcp(seeds: list[int], duration: float) -> list[tuple]:
    jobs = []
    for n in (2, 10):
        for k in (20, 65):
            for name, cc, q in DC_CONFIGS:
                if q != "red" and k != 20:
                    continue  # the drop-tail FIFO has no K
                qd = red_k(k) if q == "red" else q
                for s in seeds:
                    jobs.append(("dctcp", {"config": name, "n": n, "k": k}, dc_scenario([cc] * n, qd, s, duration), s, None))
    return jobs


COEXIST = [("dctcp + dctcp", ["dctcp", "dctcp"]), ("dctcp + cubic (no ECN)", ["dctcp", "cubic"]),
           ("dctcp + cubic+ecn", ["dctcp", "cubic-ecn"]), ("cubic+ecn + cubic+ecn", ["cubic-ecn", "cubic-ecn"])]


def part_coexist(seeds: list[int], duration: float) -> list[tuple]:
    return [("coexist", {"pair": name, "k": 20}, dc_scenario(ccs, red_k(20), s, duration), s, None)
            for name, ccs in COEXIST for s in seeds]


# ---------------------------------------------------------------------------------------
# tables and figures
# ---------------------------------------------------------------------------------------

def ci(values, fmt: str = "{:.3f}") -> str:
    """The median over the seeds, with the range (min–max) when there are several."""
    v = stats.clean(values)
    if len(v) == 0:
        return ""
    med = fmt.format(float(pd.Series(v).median()))
    return med if len(v) == 1 else f"{med} ({fmt.format(float(v.min()))}–{fmt.format(float(v.max()))})"


def med(values) -> float:
    v = stats.clean(values)
    return float(pd.Series(v).median()) if len(v) else math.nan


def _med_iqr(values) -> tuple[float, float, float]:
    """(median, median − p25, p75 − median): error bars for the plots."""
    v = pd.Series(stats.clean(values))
    if v.empty:
        return math.nan, 0.0, 0.0
    m = float(v.median())
    return m, m - float(v.quantile(0.25)), float(v.quantile(0.75)) - m


def share_md(df: pd.DataFrame) -> str:
    rows = []
    for x in BUFFERS_BDP:
        g = df[df["buffer_bdp"] == x]
        cells = [ci(g[g["n_cubic"] == n]["bbr_share"]) for n in N_CUBIC]
        rows.append([f"{x:g} ({max(1, round(x * SHARE_BDP))} pkts)", *cells, f"{ware_bbr_share(x):.3f}",
                     ci(g["utilisation"]), ci(g["cubic_srtt_ms"], "{:.0f}"), ci(g["probe_rtt_frac"])])
    return md_table(["buffer (BDP)", *[f"BBR share vs {n} CUBIC" for n in N_CUBIC], "Ware model",
                     "utilisation", "CUBIC srtt (ms)", "BBR time in PROBE_RTT"], rows, "l" + "r" * (len(N_CUBIC) + 4))


def loss_md(df: pd.DataFrame) -> str:
    rows = []
    ceiling = LOSS_RATE * PAYLOAD / FRAME / 1e6
    for p in LOSSES:
        g = df[df["loss_pct"] == p]
        b, c = g[g["cc"] == "bbr"]["goodput_mbit"], g[g["cc"] == "cubic"]["goodput_mbit"]
        ideal = ceiling * (1 - p / 100)
        b10, c10 = g[g["cc"] == "bbr"]["goodput_10_60_mbit"], g[g["cc"] == "cubic"]["goodput_10_60_mbit"]
        rows.append([f"{p:g}", ci(b, "{:.2f}"), ci(c, "{:.2f}"), f"{ideal:.2f}", f"{med(b) / ideal:.3f}", f"{med(b) / med(c):.1f}",
                     ci(b10, "{:.2f}"), ci(c10, "{:.2f}")])
    return md_table(["loss %", "BBR Mbit/s", "CUBIC Mbit/s", "(1−p)·payload rate", "BBR / ceiling", "BBR / CUBIC",
                     "BBR from 10 s", "CUBIC from 10 s"], rows, "rrrrrrrr")


def dctcp_md(df: pd.DataFrame) -> str:
    rows = []
    for (n, k, name), g in df.groupby(["n", "k", "config"], sort=False):
        qmin, qmax, _ = dctcp_queue_model(n, k)
        model = f"{qmin:.1f}–{qmax:.0f}" if name.startswith("dctcp") else ""
        rows.append([n, k if "RED" in name else "", name, ci(g["q_median"], "{:.1f}"), f"{med(g['q_p5']):.1f}–{med(g['q_p95']):.1f}",
                     model, ci(g["utilisation"]), ci(g["srtt_ms"], "{:.3f}"), ci(g["retrans"], "{:.0f}"),
                     ci(g["alpha_mean"]) if "alpha_mean" in g and g["alpha_mean"].notna().any() else ""])
    return md_table(["N", "K", "flows, queue", "median queue (pkts)", "p5–p95", "analysis Q_min–Q_max", "utilisation",
                     "srtt (ms)", "retransmissions", "mean alpha"], rows, "rrlrrrrrrr")


def coexist_md(df: pd.DataFrame) -> str:
    rows = []
    for name, _ in COEXIST:
        g = df[df["pair"] == name]
        rows.append([name, ci(g["share_f0"]), ci(g["utilisation"]), ci(g["q_median"], "{:.1f}"), ci(g["retrans"], "{:.0f}")])
    return md_table(["flows (first, second)", "first flow's share", "utilisation", "median queue (pkts)", "retransmissions"], rows, "lrrrr")


def plot_share(df: pd.DataFrame, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for n in N_CUBIC:
        g = df[df["n_cubic"] == n]
        m = [_med_iqr(g[g["buffer_bdp"] == x]["bbr_share"]) for x in BUFFERS_BDP]
        ax.errorbar(BUFFERS_BDP, [v[0] for v in m], yerr=[[v[1] for v in m], [v[2] for v in m]], marker="o", capsize=3,
                    label=f"1 BBR vs {n} CUBIC")
    xs = [0.5, 1, 2, 4, 8, 16]
    ax.plot(xs, [ware_bbr_share(x) for x in xs], "k--", lw=1, label="Ware et al. model")
    ax.set_xscale("log", base=2)
    ax.set_xticks(BUFFERS_BDP, [f"{x:g}" for x in BUFFERS_BDP])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("bottleneck FIFO (BDP)")
    ax.set_ylabel("BBR's share of goodput, 30–120 s")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    save(fig, path, dpi=110)


def plot_loss(df: pd.DataFrame, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ps = [p for p in LOSSES if p > 0]
    for cc in ("bbr", "cubic"):
        g = df[(df["cc"] == cc) & (df["loss_pct"] > 0)]
        m = [_med_iqr(g[g["loss_pct"] == p]["goodput_mbit"]) for p in ps]
        ax.errorbar(ps, [v[0] for v in m], yerr=[[v[1] for v in m], [v[2] for v in m]], marker="o", capsize=3, label=cc.upper())
    ceiling = LOSS_RATE * PAYLOAD / FRAME / 1e6
    ax.plot(ps, [ceiling * (1 - p / 100) for p in ps], "k--", lw=1, label="(1 − p) × payload rate")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("random loss on the data path (%)")
    ax.set_ylabel("goodput over 60 s (Mbit/s)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    save(fig, path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wirelab.repro.modern_cc", description=__doc__.split("\n\n")[0])
    add_out(ap, "modern_cc")
    ap.add_argument("--only", default="share,loss,dctcp,coexist")
    ap.add_argument("--seeds", type=int, default=10, help="seeds per cell")
    ap.add_argument("--jobs", type=int, default=2, help="parallel runs (≤ 2 on a shared machine)")
    ap.add_argument("--duration", type=float, default=None,
                    help="simulated seconds per run (default: share 120, loss 60, dctcp/coexist 3)")
    args = ap.parse_args(argv)
    out: Path = args.out
    stamp(out, "modern_cc", argv)
    seeds = list(range(1, args.seeds + 1))
    md: list[str] = []
    builders = {"share": (part_share, 120.0), "loss": (part_loss, 60.0), "dctcp": (part_dctcp, 3.0), "coexist": (part_coexist, 3.0)}
    for part in args.only.split(","):
        if part not in builders:
            ap.error(f"--only: unknown part {part!r} (valid: {', '.join(builders)})")
        build, dur = builders[part]
        jobs = build(seeds, args.duration or dur)
        print(f"modern_cc: {part}: {len(jobs)} runs …", file=sys.stderr, flush=True)
        df = run_all(jobs, args.jobs)
        df.to_csv(out / f"{part}.csv", index=False)
        md.append(f"\n## {part}\n\n")
        if part == "share":
            md.append(share_md(df))
            plot_share(df, out / "modern-cc-share.png")
        elif part == "loss":
            md.append(loss_md(df))
            plot_loss(df, out / "modern-cc-loss.png")
        elif part == "dctcp":
            md.append(dctcp_md(df))
        else:
            md.append(coexist_md(df))
        md.append("\n")
        (out / "table.md").write_text("".join(md))
    print("".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
