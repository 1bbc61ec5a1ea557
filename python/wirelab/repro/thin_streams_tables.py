"""Tables and figures of the thin-stream study (:mod:`wirelab.repro.thin_streams`).

:func:`write_tables` reads every finished run (``OUT/<experiment>/<cell>/seed<k>/
metrics.json``) and writes ``OUT/tables.md`` (one section per experiment, in the order
of the report) and the figures. Every number is the mean ± the half-width of the 95 %
Student-t confidence interval over seeds (:func:`wirelab.stats.mean_ci`); "Δ vs vanilla"
columns are paired by seed (the same seed gives both runs the same ITT-jitter draws).
"""
from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Iterable

import numpy as np

from .. import stats
from .common import pyplot, save
from .thin_streams import (ALL, CORE, H1_ITTS, H1_LIMITS, H1_LOSS, LABELS, LTMFR, NS_NV5, NS_NVN, QLIMITS, QUEUES,
                           RATE_BPS, Cell, Experiment, experiments, qdisc)
from .thin_streams_metrics import OUT_BINS, SETUP_SLOW_S

Runs = dict[Cell, list[dict]]


def load(out: Path, exp: Experiment) -> Runs:
    """The finished seeds of every cell of ``exp`` (sorted by seed)."""
    res: Runs = {}
    for c in exp.cells:
        d = out / exp.key / c.name()
        ms = [json.loads(p.read_text()) for p in sorted(d.glob("seed*/metrics.json"))]
        if ms:
            res[c] = sorted(ms, key=lambda m: m["seed"])
    return res


def _vals(ms: Iterable[dict], key: str) -> list[float]:
    return [float(m[key]) if m.get(key) is not None else math.nan for m in ms]


def mc(ms: list[dict] | None, key: str) -> tuple[float, float]:
    if not ms:
        return math.nan, math.nan
    m, h, _ = stats.mean_ci(_vals(ms, key))
    return m, h


def f(ms: list[dict] | None, key: str, nd: int = 1, scale: float = 1.0) -> str:
    """``mean ± ci`` of ``key`` over seeds."""
    m, h = mc(ms, key)
    if math.isnan(m):
        return "–"
    if math.isnan(h):
        return f"{m * scale:.{nd}f}"
    return f"{m * scale:.{nd}f} ± {h * scale:.{nd}f}"


def fm(ms: list[dict] | None, key: str, nd: int = 1) -> str:
    """The mean only."""
    m, _ = mc(ms, key)
    return "–" if math.isnan(m) else f"{m:.{nd}f}"


def delta(runs: Runs, c: Cell, key: str = "thin_lat_p99", nd: int = 0) -> str:
    """Paired relative change (%) of ``key`` against vanilla in the same cell, ± CI."""
    a, v = runs.get(c), runs.get(c.vanilla())
    if not a or not v or c.config == "vanilla":
        return "–"
    vs = {m["seed"]: m.get(key) for m in v}
    d = [100.0 * (m[key] / vs[m["seed"]] - 1.0) for m in a if vs.get(m["seed"]) and m.get(key) is not None]
    mean, h, n = stats.mean_ci(d)
    if n == 0:
        return "–"
    if all(x == 0 for x in d):
        return "0"
    return f"{mean:+.{nd}f}" + ("" if math.isnan(h) else f" ± {h:.{nd}f}")


def same(runs: Runs, c: Cell) -> str:
    """In how many seeds the run is byte-identical to vanilla's (same fingerprint)."""
    a, v = runs.get(c), runs.get(c.vanilla())
    if not a or not v:
        return "–"
    vs = {m["seed"]: m["fingerprint"] for m in v}
    n = [m["fingerprint"] == vs.get(m["seed"]) for m in a if m["seed"] in vs]
    return f"{sum(n)}/{len(n)}"


def md(header: list[str], rows: list[list[str]]) -> str:
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                     + ["| " + " | ".join(str(x) for x in r) + " |" for r in rows])


def lab(c: str) -> str:
    return LABELS[c]


def _out_share(ms: list[dict] | None, below: int, pre: str = "thin") -> float:
    """Share (%) of first retransmissions sent with packets_out < ``below`` (pooled)."""
    if not ms:
        return math.nan
    h = np.sum([m.get(f"{pre}_out_hist", [0] * OUT_BINS) for m in ms], axis=0)
    return 100.0 * h[:below].sum() / h.sum() if h.sum() else math.nan


def _pooled_lat(ms: list[dict], pre: str = "thin") -> tuple[np.ndarray, np.ndarray]:
    """Pooled 1-ms latency histogram of all seeds as (ms, CDF)."""
    acc: dict[int, int] = {}
    for m in ms:
        for k, v in (m.get(f"{pre}_lat_hist") or {}).items():
            acc[int(k)] = acc.get(int(k), 0) + v
    if not acc:
        return np.array([]), np.array([])
    ks = np.array(sorted(acc))
    cs = np.cumsum([acc[k] for k in ks])
    return ks + 0.5, cs / cs[-1]


# ---------------------------------------------------------------------------------------
# Tables, one function per experiment
# ---------------------------------------------------------------------------------------

def t_nvn(runs: Runs) -> str:
    """Figs 4.1/4.2, Table 4.1: N thin vs N greedy on the 1-BDP pfifo."""
    C = lambda n, c: Cell(n, n, c)  # noqa: E731
    ns = [n for n in NS_NVN if C(n, "vanilla") in runs]
    out = []
    out.append("**Thin-stream ACK latency p99 (ms)**\n\n" + md(
        ["N"] + [lab(c) for c in ALL], [[n] + [f(runs.get(C(n, c)), "thin_lat_p99", 0) for c in ALL] for n in ns]))
    out.append("**Aggregated goodput per class (Fig. 4.1): thin sum (kbit/s), greedy sum (Mbit/s) per "
               "configuration**\n\n" + md(
                   ["N", "thin, vanilla (kbit/s)"] + [f"greedy, {lab(c)}" for c in ALL],
                   [[n, f(runs.get(C(n, "vanilla")), "thin_goodput_sum_kbps", 1)]
                    + [f(runs.get(C(n, c)), "greedy_goodput_mbps", 3) for c in ALL] for n in ns]))
    out.append("**Relative packet loss per class (Fig. 4.2), thin / greedy (%)**\n\n" + md(
        ["N"] + [lab(c) for c in ALL],
        [[n] + [f"{fm(runs.get(C(n, c)), 'thin_rel_loss_pkt_pct', 2)} / {fm(runs.get(C(n, c)), 'greedy_rel_loss_pkt_pct', 2)}"
                for c in ALL] for n in ns]))
    out.append("**Where LT and MFR act**: seeds byte-identical to vanilla, exact counters per run, the "
               "share of first retransmissions sent while `packets_out < 4` (vanilla), and the paired "
               "p99 change against vanilla (%)\n\n" + md(
                   ["N", "LT ≡ vanilla", "MFR ≡ vanilla", "linear RTOs (LT)", "thin-dupack retx (MFR)",
                    "vanilla: samples thin (%)", "vanilla: 1st retx with packets_out < 4 (%)", "LT Δp99", "MFR Δp99",
                    "LT+MFR Δp99", "ER+TLP Δp99"],
                   [[n, same(runs, C(n, "lt")), same(runs, C(n, "mfr")),
                     f(runs.get(C(n, "lt")), "cnt_thin_linear_timeouts", 0),
                     f(runs.get(C(n, "mfr")), "cnt_thin_dupack_retrans", 0),
                     f(runs.get(C(n, "vanilla")), "thin_sampled_pct", 1),
                     f"{_out_share(runs.get(C(n, 'vanilla')), 4):.1f}",
                     delta(runs, C(n, "lt")), delta(runs, C(n, "mfr")), delta(runs, C(n, "lt-mfr")),
                     delta(runs, C(n, "er-tlp"))] for n in ns]))
    out.append(t_problematic(runs, [C(n, "vanilla") for n in ns]))
    sel = [n for n in (1, 5, 10, 20, 30) if n in ns]
    out.append(t_cells(runs, [C(n, c) for n in sel for c in ALL], "N"))
    return "\n\n".join(out)


#: A connection whose own p99 ACK latency reaches this is problematic (Table 4.1): more
#: than 1 % of its data waited longer than the most tolerant class of the games the
#: thesis's section 2.2 lists accepts (real-time strategy, ≈ 1 s).
PROBLEM_P99_MS = 1000.0


def problematic(m: dict) -> tuple[int, int, int, int]:
    """(slow set-up, p99 ≥ 1 s, either of the two, a segment lost twice) — counts of the
    run's thin streams (our operationalisation of Table 4.1; see the report)."""
    slow = late = either = twice = 0
    for s in m.get("thin_streams", []):
        a = s["setup_s"] >= SETUP_SLOW_S
        b = s["lat_p99"] >= PROBLEM_P99_MS
        slow += a
        late += b
        either += a or b
        twice += s["max_retx"] >= 2
    return slow, late, either, twice


def t_problematic(runs: Runs, vanilla_cells: list[Cell]) -> str:
    """Table 4.1: problematic thin connections per run (mean over seeds) of N."""
    rows = []
    for v in vanilla_cells:
        row = [f"{v.thin} vs {v.greedy}" + (f", {v.queue}" if v.queue != "pfifo" else "")]
        for c in ALL:
            ms = runs.get(replace(v, config=c))
            if not ms:
                row.append("–")
                continue
            p = np.array([problematic(m) for m in ms], dtype=float).mean(axis=0)
            row.append(f"{p[0]:.1f} + {p[1]:.1f} → **{p[2]:.1f}** ({p[3]:.0f})" if c == "vanilla"
                       else f"{p[2]:.1f}" + ("" if c.startswith("rdb") else f" ({p[3]:.0f})"))
        rows.append(row)
    return ("**Problematic thin connections (Table 4.1)**, of N per run (mean over seeds). vanilla: set-up ≥ 1 s "
            "(SYN or SYN-ACK retransmitted) + own ACK-latency p99 ≥ 1 s → **either**; other configurations: "
            "either. In brackets: connections with a segment lost twice (sent ≥ 3 times, exponential backoff "
            "unless LT; n/a for RDB, whose bundles count as retransmissions)\n\n"
            + md(["streams"] + [lab(c) for c in ALL], rows))


def t_cells(runs: Runs, cells: list[Cell], what: str, counters: bool = True) -> str:
    """Full per-cell tables: thin latency/loss, greedy, mechanism counters."""
    def name(c: Cell) -> str:
        q = c.queue + (f" {c.limit}" if c.limit is not None else "")
        v = f" + {c.vthin} vanilla" if c.vthin else ""
        return f"| {c.thin}{v} vs {c.greedy} | {q} | {lab(c.config)} |"

    cells = [c for c in cells if c in runs]
    t1 = ["| " + what + " | queue | config | ACK lat. p50 (ms) | p99 (ms) | p99.9 (ms) | max (ms) | app delay p99 (ms) | "
          "true loss (%) | thin goodput (kbit/s) | thin throughput (kbit/s) |", "|" + "---|" * 11]
    t2 = ["| " + what + " | queue | config | greedy goodput, sum (Mbit/s) | Jain (greedy) | relative loss thin (%) | "
          "relative loss greedy (%) | greedy retransmissions | bottleneck drops |", "|" + "---|" * 9]
    t3 = ["| " + what + " | queue | config | samples thin (%) | RTOs | linear RTOs (LT) | thin-dupack retx (MFR) | "
          "early retx | TLP probes | RDB packets | 1st retx timer-driven (%) | 1st retx with packets_out < 4 (%) |",
          "|" + "---|" * 12]
    for c in cells:
        r = runs[c]
        rdb = c.config.startswith("rdb")
        t1.append(name(c) + f" {f(r, 'thin_lat_p50')} | {f(r, 'thin_lat_p99', 0)} | {f(r, 'thin_lat_p999', 0)} | "
                  f"{f(r, 'thin_lat_max', 0)} | {f(r, 'thin_app_p99', 0)} | {f(r, 'thin_true_loss_pct', 2)} | "
                  f"{f(r, 'thin_goodput_kbps', 2)} | {f(r, 'thin_throughput_kbps', 2)} |")
        t2.append(name(c) + f" {f(r, 'greedy_goodput_mbps', 3)} | {f(r, 'greedy_jain', 4)} | "
                  f"{f(r, 'thin_rel_loss_pkt_pct', 2)} | {f(r, 'greedy_rel_loss_pkt_pct', 2)} | "
                  f"{f(r, 'greedy_retrans', 0)} | {f(r, 'bottleneck_drops', 0)} |")
        t3.append(name(c) + f" {f(r, 'thin_sampled_pct', 1)} | {f(r, 'cnt_rto_count', 0)} | "
                  f"{f(r, 'cnt_thin_linear_timeouts', 0)} | {f(r, 'cnt_thin_dupack_retrans', 0)} | "
                  f"{f(r, 'cnt_early_retrans', 0)} | {f(r, 'cnt_tlp_probes', 0)} | {f(r, 'cnt_rdb_packets', 0)} | "
                  + ("n/a (bundles) | n/a |" if rdb else
                     f"{f(r, 'thin_first_retx_timer_pct', 1)} | {_out_share(r, 4):.1f} |"))
    return "\n\n".join("\n".join(t) for t in ((t1, t2, t3) if counters else (t1, t2)))


def t_nv5(runs: Runs) -> str:
    """Figs 4.3/4.4: N thin vs 5 greedy."""
    C = lambda n, c: Cell(n, 5, c)  # noqa: E731
    ns = [n for n in NS_NV5 if C(n, "vanilla") in runs]
    out = ["**Aggregated goodput per class (Fig. 4.3): thin sum (kbit/s, vanilla), greedy sum (Mbit/s)**\n\n" + md(
        ["N", "thin, vanilla"] + [f"greedy, {lab(c)}" for c in ALL],
        [[n, f(runs.get(C(n, "vanilla")), "thin_goodput_sum_kbps", 1)]
         + [f(runs.get(C(n, c)), "greedy_goodput_mbps", 3) for c in ALL] for n in ns])]
    rows = []
    for n in ns:
        r = runs.get(C(n, "vanilla"))
        g, t = mc(r, "thin_goodput_cap_kbps")[0], mc(r, "thin_throughput_kbps")[0]
        rows.append([n, f(r, "thin_goodput_kbps", 2), f(r, "thin_goodput_cap_kbps", 2), f(r, "thin_throughput_kbps", 2),
                     f"{100 * (t / g - 1):.1f}" if g else "–", f"{mc(r, 'thin_wire_kbps')[0] / n:.2f}",
                     f(r, "thin_true_loss_pct", 2), f(r, "thin_lat_p99", 0)])
    out.append("**Goodput vs throughput of the unmodified (vanilla) thin streams (Fig. 4.4)**, per stream: "
               "goodput at the receiver, goodput (ACKed payload) and throughput (payload incl. "
               "retransmissions) in the sender's capture, the overhead of retransmissions, the wire rate "
               "(frames with headers)\n\n" + md(
                   ["N", "goodput, receiver (kbit/s)", "goodput, capture", "throughput, capture",
                    "throughput/goodput − 1 (%)", "wire rate (kbit/s)", "true loss (%)", "ACK lat. p99 (ms)"], rows))
    out.append("**Thin ACK latency p99 (ms) and relative loss thin / greedy (%)**\n\n" + md(
        ["N"] + [lab(c) for c in ALL] + ["loss thin / greedy, vanilla"],
        [[n] + [f(runs.get(C(n, c)), "thin_lat_p99", 0) for c in ALL]
         + [f"{fm(runs.get(C(n, 'vanilla')), 'thin_rel_loss_pkt_pct', 2)} / "
            f"{fm(runs.get(C(n, 'vanilla')), 'greedy_rel_loss_pkt_pct', 2)}"] for n in ns]))
    out.append("**Where LT and MFR act**\n\n" + md(
        ["N", "LT ≡ vanilla", "MFR ≡ vanilla", "linear RTOs", "thin-dupack retx", "1st retx packets_out < 4 (%)",
         "LT Δp99", "MFR Δp99", "LT+MFR Δp99", "LT+MFR Δmax"],
        [[n, same(runs, C(n, "lt")), same(runs, C(n, "mfr")), f(runs.get(C(n, "lt")), "cnt_thin_linear_timeouts", 0),
          f(runs.get(C(n, "mfr")), "cnt_thin_dupack_retrans", 0), f"{_out_share(runs.get(C(n, 'vanilla')), 4):.1f}",
          delta(runs, C(n, "lt")), delta(runs, C(n, "mfr")), delta(runs, C(n, "lt-mfr")),
          delta(runs, C(n, "lt-mfr"), "thin_lat_max")] for n in ns]))
    out.append(t_problematic(runs, [C(n, "vanilla") for n in ns]))
    return "\n\n".join(out)


def t_class(runs: Runs, cells: list[Cell], title: str) -> str:
    """One row per configuration: relative loss per class and the thin/greedy summary."""
    rows = []
    for c in cells:
        r = runs.get(c)
        if not r:
            continue
        rows.append([lab(c.config), f(r, "thin_rel_loss_pkt_pct", 2), f(r, "greedy_rel_loss_pkt_pct", 2),
                     f(r, "thin_rel_loss_byte_pct", 2), f(r, "greedy_rel_loss_byte_pct", 2), f(r, "thin_lat_p99", 0),
                     f(r, "thin_lat_max", 0), f(r, "greedy_goodput_mbps", 3), f(r, "cnt_thin_linear_timeouts", 0),
                     f(r, "cnt_thin_dupack_retrans", 0), same(runs, c), delta(runs, c)])
    return title + "\n\n" + md(["config", "rel. packet loss thin (%)", "greedy (%)", "rel. byte loss thin (%)",
                                "greedy (%)", "thin p99 (ms)", "thin max (ms)", "greedy goodput (Mbit/s)",
                                "linear RTOs", "thin-dupack retx", "≡ vanilla", "Δp99 (%)"], rows)


def t_duration(runs: Runs, short: Runs) -> str:
    """Table 4.2: 2 h 05 min, 40 thin vs 10 greedy; beside it the same setting for 300 s.
    Either may be missing (the 7500-s runs are the nightly target's): its columns are –."""
    rows = []
    for k in CORE:
        r, s = runs.get(Cell(40, 10, k, duration_s=7500)), short.get(Cell(40, 10, k))
        if not r and not s:
            continue
        long_cols = ["–"] * 13
        if r:
            dr = stats.mean_ci([m.get("drift_lat_p99", {}).get("per_hour") for m in r])
            long_cols = [f(r, "thin_lat_p50", 1), f(r, "thin_lat_p99", 0), f(r, "thin_lat_p999", 0),
                         f(r, "thin_lat_max", 0), f(r, "thin_true_loss_pct", 2), f(r, "thin_rel_loss_pkt_pct", 2),
                         f(r, "greedy_rel_loss_pkt_pct", 2), f(r, "greedy_goodput_mbps", 3), f(r, "greedy_jain", 4),
                         f(r, "cnt_thin_linear_timeouts", 0), f(r, "cnt_thin_dupack_retrans", 0),
                         f"{dr[0]:+.1f} ± {dr[1]:.1f}" if dr[2] > 1 else f"{dr[0]:+.1f}" if dr[2] else "–",
                         same(runs, Cell(40, 10, k, duration_s=7500))]
        rows.append([lab(k)] + long_cols + [f(s, "thin_lat_p99", 0), f(s, "thin_lat_max", 0),
                                            f(s, "thin_rel_loss_pkt_pct", 2), f(s, "greedy_rel_loss_pkt_pct", 2),
                                            f(s, "greedy_goodput_mbps", 3), f(s, "cnt_thin_linear_timeouts", 0),
                                            f(s, "cnt_thin_dupack_retrans", 0), same(short, Cell(40, 10, k))])
    t = md(["config", "7500 s: ACK lat. p50 (ms)", "p99", "p99.9", "max", "true loss (%)", "rel. loss thin (%)",
            "rel. loss greedy (%)", "greedy goodput (Mbit/s)", "Jain (greedy)", "linear RTOs", "thin-dupack retx",
            "p99 drift (ms/h)", "≡ vanilla", "300 s: p99 (ms)", "max", "rel. loss thin (%)", "greedy (%)",
            "greedy goodput (Mbit/s)", "linear RTOs", "thin-dupack retx", "≡ vanilla"], rows)
    van = [m for c, r in runs.items() if c.config == "vanilla" for m in r]
    wins = ""
    if van and van[0].get("windows"):
        w = van[0]["windows"]
        wins = ("\n\nvanilla, seed " + str(van[0]["seed"]) + ", per 5-minute window: p99 (ms) "
                + ", ".join(f"{x['lat_p99']:.0f}" for x in w) + "; greedy goodput (Mbit/s) "
                + ", ".join(f"{x['greedy_mbps']:.3f}" for x in w))
    seeds = lambda rs: ",".join(map(str, sorted({m["seed"] for r in rs.values() for m in r}))) or "not run"  # noqa: E731
    return (f"**Duration test (Table 4.2)**, 40 thin vs 10 greedy, pfifo 63: 7500 s (seeds {seeds(runs)}; "
            f"`make nightly`) and the same cells for 300 s (seeds {seeds(short)})\n\n" + t + wins)


def t_qdisc(runs: Runs) -> str:
    """Fig 5.1 / Table 5.1: 30 unmodified thin vs 30 greedy per qdisc."""
    rows = []
    for q in QUEUES:
        r = runs.get(Cell(30, 30, "vanilla", q))
        if not r:
            continue
        rows.append([f"`{qdisc(Cell(30, 30, queue=q))}`", f(r, "thin_rel_loss_byte_pct", 2),
                     f(r, "greedy_rel_loss_byte_pct", 2), f(r, "thin_rel_loss_pkt_pct", 2),
                     f(r, "greedy_rel_loss_pkt_pct", 2), f(r, "thin_lat_p50", 0), f(r, "thin_lat_p99", 0),
                     f(r, "greedy_goodput_mbps", 3), f(r, "greedy_jain", 4)])
    out = ["**Relative byte loss per qdisc (Fig. 5.1)**, 30 unmodified thin vs 30 greedy\n\n" + md(
        ["qdisc", "rel. byte loss thin (%)", "greedy (%)", "rel. packet loss thin (%)", "greedy (%)",
         "thin p50 (ms)", "thin p99 (ms)", "greedy goodput (Mbit/s)", "Jain (greedy)"], rows)]
    out.append("**Thin ACK latency p99 (ms) per qdisc and configuration** (paired Δ vs vanilla in %; ≡: seeds "
               "byte-identical to vanilla)\n\n" + md(
                   ["qdisc"] + [lab(c) for c in CORE] + ["LT ≡", "MFR ≡", "thin-dupack retx", "linear RTOs"],
                   [[q, f(runs.get(Cell(30, 30, 'vanilla', q)), "thin_lat_p99", 0)]
                    + [f"{fm(runs.get(Cell(30, 30, c, q)), 'thin_lat_p99', 0)} ({delta(runs, Cell(30, 30, c, q))})"
                       for c in CORE[1:]]
                    + [same(runs, Cell(30, 30, "lt", q)), same(runs, Cell(30, 30, "mfr", q)),
                       f(runs.get(Cell(30, 30, "mfr", q)), "cnt_thin_dupack_retrans", 0),
                       f(runs.get(Cell(30, 30, "lt", q)), "cnt_thin_linear_timeouts", 0)]
                    for q in QUEUES if Cell(30, 30, "vanilla", q) in runs]))
    return "\n\n".join(out)


def t_qlen(runs: Runs) -> str:
    """Fig 5.2: queue length (pfifo limit) vs latency, 30 vs 30."""
    rows = []
    for lim in QLIMITS:
        v = runs.get(Cell(30, 30, "vanilla", limit=lim))
        if not v:
            continue
        ms = lim * 1514 * 8 / RATE_BPS * 1e3
        rows.append([f"{lim} ({ms:.0f} ms)", f(v, "thin_lat_p50", 0), f(v, "thin_lat_p99", 0)]
                    + [f"{fm(runs.get(Cell(30, 30, c, limit=lim)), 'thin_lat_p99', 0)} "
                       f"({delta(runs, Cell(30, 30, c, limit=lim))})" for c in CORE[1:]]
                    + [f"{fm(v, 'thin_rel_loss_pkt_pct', 2)} / {fm(v, 'greedy_rel_loss_pkt_pct', 2)}",
                       f(v, "greedy_goodput_mbps", 3), f"{_out_share(v, 4):.0f}",
                       f(runs.get(Cell(30, 30, "mfr", limit=lim)), "cnt_thin_dupack_retrans", 0),
                       f(runs.get(Cell(30, 30, "lt", limit=lim)), "cnt_thin_linear_timeouts", 0)])
    return ("**Queue length vs latency (Fig. 5.2)**, 30 thin vs 30 greedy, pfifo limit in packets (and the "
            "time a full queue of full-size frames takes to drain); other configurations: p99 (paired Δ % vs "
            "vanilla)\n\n" + md(["pfifo limit", "vanilla p50 (ms)", "vanilla p99 (ms)"] + [lab(c) for c in CORE[1:]]
                                + ["loss thin / greedy (%), vanilla", "greedy goodput (Mbit/s), vanilla",
                                   "vanilla 1st retx packets_out < 4 (%)", "thin-dupack retx (MFR)",
                                   "linear RTOs (LT)"], rows))


def t_60(runs: Runs) -> str:
    """Figs 5.3-5.6: 60 thin vs 10 greedy on pfifo and codel."""
    cells = [Cell(60, 10, c, q) for q in ("pfifo", "codel") for c in ALL]
    return t_cells(runs, cells, "streams") + "\n\n" + t_problematic(runs, [Cell(60, 10), Cell(60, 10, queue="codel")])


def t_tvt(runs: Runs) -> str:
    """H3: thin vs thin."""
    rows = []
    for c in runs:
        r = runs[c]
        rows.append([f"{c.thin} + {c.vthin} vanilla vs {c.greedy}", c.queue, lab(c.config), f(r, "thin_lat_p99", 0),
                     f(r, "vthin_lat_p50", 1), f(r, "vthin_lat_p99", 0), f(r, "vthin_lat_max", 0),
                     f(r, "vthin_true_loss_pct", 2), f(r, "thin_rel_loss_pkt_pct", 2), f(r, "greedy_goodput_mbps", 3),
                     f(r, "bottleneck_drops", 0), f(r, "thin_wire_kbps", 0)])
    return ("**Thin vs thin (H3)**: the configuration applies to the tested group; the vanilla group runs "
            "beside it on its own sender\n\n" + md(
                ["streams", "queue", "tested config", "tested p99 (ms)", "vanilla group p50 (ms)", "vanilla p99 (ms)",
                 "vanilla max (ms)", "vanilla true loss (%)", "rel. loss, all thin (%)", "greedy goodput (Mbit/s)",
                 "drops", "tested wire rate (kbit/s)"], rows))


def t_h1(runs: Runs) -> str:
    """H1: where LT and MFR change packets and latency."""
    out = []
    rows = []
    for lim in H1_LIMITS:
        for itt in H1_ITTS:
            C = lambda c: Cell(10, 10, c, limit=lim, itt_ms=itt)  # noqa: E731
            v = runs.get(C("vanilla"))
            if not v:
                continue
            rows.append([lim, itt, f(v, "thin_lat_p99", 0), f"{_out_share(v, 4):.0f}",
                         same(runs, C("lt")), same(runs, C("mfr")),
                         f(runs.get(C("lt")), "cnt_thin_linear_timeouts", 0),
                         f(runs.get(C("mfr")), "cnt_thin_dupack_retrans", 0),
                         delta(runs, C("lt")), delta(runs, C("mfr")), delta(runs, C("lt-mfr")), delta(runs, C("er-tlp")),
                         delta(runs, C("lt"), "thin_lat_p999"), delta(runs, C("lt"), "thin_lat_max"),
                         delta(runs, C("lt-mfr"), "thin_lat_max"),
                         f"{fm(v, 'thin_rto2_gap_ms_med', 0)} / {fm(runs.get(C('lt')), 'thin_rto2_gap_ms_med', 0)}",
                         f"{fm(v, 'thin_first_retx_timer_pct', 0)} / {fm(runs.get(C('mfr')), 'thin_first_retx_timer_pct', 0)}",
                         f(runs.get(C("lt-mfr")), "greedy_goodput_mbps", 3)])
    out.append("**Congestion loss: 10 thin vs 10 greedy, pfifo limit × ITT** (Δ: paired change vs vanilla, %)\n\n" + md(
        ["pfifo limit", "ITT (ms)", "vanilla p99 (ms)", "1st retx packets_out < 4 (%)", "LT ≡", "MFR ≡",
         "linear RTOs", "thin-dupack retx", "LT Δp99", "MFR Δp99", "LT+MFR Δp99", "ER+TLP Δp99", "LT Δp99.9",
         "LT Δmax", "LT+MFR Δmax", "2nd-RTO gap, vanilla / LT (ms)", "1st retx by timer, vanilla / MFR (%)",
         "greedy goodput, LT+MFR (Mbit/s)"], rows))
    rows = []
    for itt in (100, 200):
        for loss in H1_LOSS:
            C = lambda c: Cell(20, 0, c, itt_ms=itt, loss_pct=loss)  # noqa: E731
            v = runs.get(C("vanilla"))
            if not v:
                continue
            rows.append([itt, loss, f(v, "thin_lat_p99", 0), f(v, "thin_lat_max", 0), f"{_out_share(v, 4):.0f}",
                         same(runs, C("lt")), same(runs, C("mfr")),
                         f(runs.get(C("lt")), "cnt_thin_linear_timeouts", 0),
                         f(runs.get(C("mfr")), "cnt_thin_dupack_retrans", 0),
                         delta(runs, C("lt")), delta(runs, C("mfr")), delta(runs, C("lt-mfr")),
                         delta(runs, C("lt"), "thin_lat_p999"), delta(runs, C("lt"), "thin_lat_max"),
                         delta(runs, C("lt-mfr"), "thin_lat_max"),
                         f"{fm(v, 'thin_rto2_gap_ms_med', 0)} / {fm(runs.get(C('lt')), 'thin_rto2_gap_ms_med', 0)}"])
    out.append("**Random (RTO-dominated) loss: 20 thin streams alone, netem loss on the data path**\n\n" + md(
        ["ITT (ms)", "loss (%)", "vanilla p99 (ms)", "vanilla max (ms)", "1st retx packets_out < 4 (%)", "LT ≡",
         "MFR ≡", "linear RTOs", "thin-dupack retx", "LT Δp99", "MFR Δp99", "LT+MFR Δp99", "LT Δp99.9", "LT Δmax",
         "LT+MFR Δmax", "2nd-RTO gap, vanilla / LT (ms)"], rows))
    return "\n\n".join(out)


def t_threshold(all_runs: dict[str, Runs]) -> str:
    """How many first retransmissions a looser thin test would have covered."""
    pick = [("nvn", Cell(10, 10)), ("nvn", Cell(20, 20)), ("nvn", Cell(30, 30)), ("t60g10", Cell(60, 10)),
            ("t60g10", Cell(60, 10, queue="codel")), ("qdisc", Cell(30, 30, queue="codel")),
            ("qlen", Cell(30, 30, limit=16)), ("h1", Cell(10, 10, limit=20)), ("h1", Cell(10, 10, itt_ms=200)),
            ("h1", Cell(10, 10, limit=10, itt_ms=200)), ("h1", Cell(20, 0, loss_pct=5))]
    rows = []
    for key, c in pick:
        r = all_runs.get(key, {}).get(c)
        if not r:
            continue
        h = np.sum([m["thin_out_hist"] for m in r], axis=0)
        q = c.queue + (f" {c.limit}" if c.limit else "")
        extra = (f", ITT {c.itt_ms}" if c.itt_ms != 100 else "") + (f", loss {c.loss_pct:g} %" if c.loss_pct else "")
        rows.append([f"{c.thin} vs {c.greedy}, {q}{extra}", int(h.sum())]
                    + [f"{100 * h[:k].sum() / h.sum():.0f}" for k in (2, 3, 4, 5, 6, 8)]
                    + [f"{(np.arange(OUT_BINS) * h).sum() / h.sum():.1f}"])
    return ("**packets_out at the first retransmission** (vanilla, pooled over seeds): share (%) below each "
            "threshold; Linux's `tcp_stream_is_thin()` uses < 4\n\n" + md(
                ["cell", "first retransmissions", "< 2", "< 3", "< 4 (Linux)", "< 5", "< 6", "< 8", "mean"], rows))


# ---------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------

#: (colour, line style, marker) of each configuration in the figures.
STYLES = {"vanilla": ("k", "-", "o"), "lt": ("tab:blue", ":", "v"), "mfr": ("tab:cyan", ":", "^"),
          "lt-mfr": ("tab:blue", "--", "s"), "er-tlp": ("tab:orange", "-", "D"),
          "rdb": ("tab:green", "-", "o"), "rdb2008": ("tab:red", "--", "x")}


def _errorbar(ax, runs: Runs, cells_x: list[tuple[float, Cell]], key: str, scale: float = 1.0, **kw):
    pts = [(x, mc(runs.get(c), key)) for x, c in cells_x if c in runs]
    if pts:
        ax.errorbar([x for x, _ in pts], [m * scale for _, (m, _) in pts],
                    yerr=[0 if math.isnan(h) else h * scale for _, (_, h) in pts], capsize=2, markersize=4,
                    linewidth=1.1, **kw)


def fig_cdf(runs: Runs, panels: list[tuple[str, list[Cell]]], path: Path, pre: str = "thin") -> None:
    """CDF (from 0.5 up, log latency) of pooled ACK latency, one panel per cell group."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.0 * len(panels), 3.6), dpi=80, sharey=True)
    axes = list(np.atleast_1d(axes))
    for ax, (title, cells) in zip(axes, panels):
        for c in cells:
            if c not in runs:
                continue
            x, y = _pooled_lat(runs[c], pre)
            col, ls, _ = STYLES[c.config]
            ax.step(x, y, where="post", color=col, linestyle=ls, linewidth=1.2, label=lab(c.config))
        ax.set_xscale("log")
        ax.set_xlim(100, 20000)
        ax.set_ylim(0.5, 1.0005)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("thin-stream ACK latency (ms)")
    axes[0].set_ylabel("CDF (pooled over seeds)")
    axes[-1].legend(loc="lower right", fontsize=7)
    save(fig, path, dpi=None)


def fig_sweep(runs: Runs, xs: list[int], cell, xlabel: str, path: Path, title: str) -> None:
    """p99, greedy goodput and per-class relative loss against N."""
    plt = pyplot()
    fig, ax = plt.subplots(1, 3, figsize=(12, 3.6), dpi=80)
    for c in ALL:
        col, ls, mk = STYLES[c]
        pts = [(n, cell(n, c)) for n in xs]
        _errorbar(ax[0], runs, pts, "thin_lat_p99", color=col, linestyle=ls, marker=mk, label=lab(c))
        _errorbar(ax[1], runs, pts, "greedy_goodput_mbps", color=col, linestyle=ls, marker=mk, label=lab(c))
    for c, mk in (("vanilla", "o"), ("lt-mfr", "s"), ("rdb", "^")):
        pts = [(n, cell(n, c)) for n in xs]
        _errorbar(ax[2], runs, pts, "thin_rel_loss_pkt_pct", color="tab:blue", marker=mk, linestyle=STYLES[c][1],
                  label=f"thin, {lab(c)}")
        _errorbar(ax[2], runs, pts, "greedy_rel_loss_pkt_pct", color="tab:red", marker=mk, linestyle=STYLES[c][1],
                  label=f"greedy, {lab(c)}")
    for a, y in zip(ax, ("thin ACK latency p99 (ms)", "greedy goodput, sum (Mbit/s)", "relative packet loss (%)")):
        a.set_xlabel(xlabel)
        a.set_ylabel(y)
        a.grid(True, alpha=0.3)
    ax[0].legend(fontsize=7, loc="upper left")
    ax[2].legend(fontsize=6, loc="upper left")
    fig.suptitle(title + " (mean ± 95 % CI over seeds)", fontsize=10)
    save(fig, path, dpi=None)


def fig_qdisc_qlen(qd: Runs, ql: Runs, path: Path) -> None:
    """Fig 5.1 (relative byte loss per class and qdisc) and Fig 5.2 (p99 vs pfifo limit)."""
    plt = pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6), dpi=80)
    qs = [q for q in QUEUES if Cell(30, 30, "vanilla", q) in qd]
    x = np.arange(len(qs))
    for k, (cls, col) in enumerate((("thin", "tab:blue"), ("greedy", "tab:red"))):
        vals = [mc(qd[Cell(30, 30, "vanilla", q)], f"{cls}_rel_loss_byte_pct") for q in qs]
        ax[0].bar(x + (k - 0.5) * 0.38, [v[0] for v in vals], 0.38, yerr=[0 if math.isnan(v[1]) else v[1] for v in vals],
                  color=col, label=cls, capsize=2)
    ax[0].set_xticks(x, qs)
    ax[0].set_ylabel("relative byte loss (%)")
    ax[0].set_title("30 unmodified thin vs 30 greedy", fontsize=10)
    ax[0].legend(fontsize=8)
    for c in CORE:
        col, ls, mk = STYLES[c]
        _errorbar(ax[1], ql, [(lim, Cell(30, 30, c, limit=lim)) for lim in QLIMITS], "thin_lat_p99", color=col,
                  linestyle=ls, marker=mk, label=lab(c))
    ax[1].set_xscale("log", base=2)
    ax[1].set_xticks(QLIMITS, [str(q) for q in QLIMITS])
    ax[1].set_xlabel("pfifo limit (packets; 63 = 1 BDP)")
    ax[1].set_ylabel("thin ACK latency p99 (ms)")
    ax[1].legend(fontsize=7)
    for a in ax:
        a.grid(True, alpha=0.3)
    save(fig, path, dpi=None)


def fig_h1(runs: Runs, path: Path) -> None:
    """Paired p99 and max change of LT, MFR, LT+MFR against ITT for each pfifo limit."""
    plt = pyplot()
    fig, ax = plt.subplots(1, len(H1_LIMITS), figsize=(4 * len(H1_LIMITS), 3.4), dpi=80, sharey=True)
    for a, lim in zip(ax, H1_LIMITS):
        for c in ("lt", "mfr", "lt-mfr", "er-tlp"):
            col, ls, mk = STYLES[c]
            ys = []
            for itt in H1_ITTS:
                d = delta(runs, Cell(10, 10, c, limit=lim, itt_ms=itt))
                ys.append(float(d.split(" ")[0]) if d not in ("–",) else math.nan)
            a.plot(H1_ITTS, ys, color=col, linestyle=ls, marker=mk, label=lab(c))
        a.axhline(0, color="k", linewidth=0.8)
        a.set_xscale("log", base=2)
        a.set_xticks(H1_ITTS, [str(i) for i in H1_ITTS])
        a.set_title(f"10 thin vs 10 greedy, pfifo {lim}", fontsize=10)
        a.set_xlabel("thin-stream ITT (ms)")
        a.grid(True, alpha=0.3)
    ax[0].set_ylabel("p99 change vs vanilla (%)")
    ax[0].legend(fontsize=7)
    save(fig, path, dpi=None)


def fig_duration(runs: Runs, path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(2, 1, figsize=(8, 4.6), dpi=80, sharex=True)
    for c in CORE:
        r = runs.get(Cell(40, 10, c, duration_s=7500))
        if not r or not r[0].get("windows"):
            continue
        col, ls, mk = STYLES[c]
        w = r[0]["windows"]
        ax[0].plot([x["t0_s"] / 60 for x in w], [x["lat_p99"] for x in w], color=col, linestyle=ls, marker=mk,
                   markersize=3, label=lab(c))
        ax[1].plot([x["t0_s"] / 60 for x in w], [x["greedy_mbps"] for x in w], color=col, linestyle=ls, marker=mk,
                   markersize=3)
    ax[0].set_ylabel("thin p99 (ms)")
    ax[1].set_ylabel("greedy goodput (Mbit/s)")
    ax[1].set_xlabel("minute of the run (5-min windows, seed 1)")
    ax[0].legend(fontsize=7, ncol=3)
    for a in ax:
        a.grid(True, alpha=0.3)
    ax[0].set_title("40 thin vs 10 greedy, 2 h 05 min, pfifo 63", fontsize=10)
    save(fig, path, dpi=None)


# ---------------------------------------------------------------------------------------

SECTIONS = [
    ("nvn", "N thin vs N greedy (Figs 4.1, 4.2; Table 4.1)", t_nvn),
    ("nv5", "N thin vs 5 greedy (Figs 4.3, 4.4)", t_nv5),
    ("t30g20", "30 thin vs 20 greedy (Fig. 4.5)",
     lambda r: t_class(r, [Cell(30, 20, c) for c in ALL], "**Relative loss per class, 30 thin vs 20 greedy (Fig. 4.5)**")
     + "\n\n" + t_problematic(r, [Cell(30, 20)])),
    ("qdisc", "qdisc comparison, 30 vs 30 (Fig. 5.1, Table 5.1)", t_qdisc),
    ("qlen", "queue length, 30 vs 30 (Fig. 5.2)", t_qlen),
    ("t60g10", "60 thin vs 10 greedy (Figs 5.3-5.6)", t_60),
    ("tvt", "thin vs thin (H3)", t_tvt),
    ("h1", "where LT and MFR act (H1)", t_h1),
]


def write_tables(out: Path, img: Path | None) -> str:
    """Writes ``out/tables.md`` (and the figures to ``img``); returns the text."""
    exps = experiments()
    runs = {k: load(out, e) for k, e in exps.items() if (out / k).is_dir()}
    prov = out / "PROVENANCE.json"
    head = json.loads(prov.read_text()) if prov.exists() else {}
    parts = [f"# Thin-stream study tables\n\ncommit `{head.get('commit', '?')}`; re-create: `{head.get('command', '?')}`"]
    for key, title, fn in SECTIONS:
        if runs.get(key):
            e = exps[key]
            seeds = sorted({m["seed"] for r in runs[key].values() for m in r})
            parts.append(f"## {title}\n\n`{key}`: {len(runs[key])} of {len(e.cells)} cells, seeds "
                         f"{','.join(map(str, seeds))}\n\n" + fn(runs[key]))
        if key == "t30g20" and (runs.get("duration") or runs.get("d300")):
            parts.append("## duration test, 40 thin vs 10 greedy (Table 4.2)\n\n"
                         + t_duration(runs.get("duration", {}), runs.get("d300", {})))
    if runs:
        parts.append("## packets_out at loss (thin-test threshold)\n\n" + t_threshold(runs))
    walls = {k: json.loads((out / k / "experiment.json").read_text()).get("wall_s") for k in runs
             if (out / k / "experiment.json").exists()}
    parts.append("wall time per experiment (s): " + ", ".join(f"{k} {sum(v):.0f}" for k, v in walls.items() if v))
    txt = "\n\n".join(parts) + "\n"
    (out / "tables.md").write_text(txt)
    if img is not None:
        _figures(runs, img)
    return txt


def _figures(runs: dict[str, Runs], img: Path) -> None:
    img.mkdir(parents=True, exist_ok=True)
    if runs.get("nvn"):
        r = runs["nvn"]
        fig_cdf(r, [(f"{n} thin vs {n} greedy, pfifo", [Cell(n, n, c) for c in ALL]) for n in (1, 10, 30)],
                img / "thin-ack-latency-cdf-pfifo.png")
        fig_sweep(r, NS_NVN, lambda n, c: Cell(n, n, c), "N thin vs N greedy", img / "thin-n-sweep.png",
                  "N thin vs N greedy, pfifo 63")
    if runs.get("nv5"):
        fig_sweep(runs["nv5"], NS_NV5, lambda n, c: Cell(n, 5, c), "N thin vs 5 greedy", img / "thin-nv5.png",
                  "N thin vs 5 greedy, pfifo 63")
    if runs.get("qdisc") and runs.get("qlen"):
        fig_qdisc_qlen(runs["qdisc"], runs["qlen"], img / "thin-qdisc-qlen.png")
    if runs.get("t60g10"):
        fig_cdf(runs["t60g10"], [(f"60 thin vs 10 greedy, {q}", [Cell(60, 10, c, q) for c in ALL])
                                 for q in ("pfifo", "codel")], img / "thin-60v10-cdf.png")
    if runs.get("h1"):
        fig_h1(runs["h1"], img / "thin-h1.png")
    if runs.get("duration"):
        fig_duration(runs["duration"], img / "thin-duration.png")
