"""Seed system 3 (Markussen 2014): retransmission aggressiveness for thin TCP streams.

Generates the dumbbell scenarios of ``scenarios/thin-streams/``, runs a matrix of them
in-process (``wirelab.run``), analyses the thin sender's capture with ``wirelab analyze`` and
aggregates mean and 95 % confidence intervals over seeds.

Topology (seed-systems §3.8, the Simula harness reconstructed)::

    thinsender  ──┐  1 Gbit/s, 50 us
                  r1 ══ bottleneck: 5 Mbit/s, 75 ms each way, root qdisc on r1 ══ receiver
    greedysender ─┘

* ``thinsender`` (the harness's ``rdbsender``) runs N ``tcp-thin`` streams: 120-byte
  writes every 100 ms ± 10 ms (uniform, application-level jitter), ``TCP_NODELAY``,
  destination ports 5000, 5001, …; stream i starts at i·ITT/N.
* ``greedysender`` (``zsender``) runs M ``tcp-bulk`` CUBIC flows to ports 6000, 6001, …;
  flow i starts at i·RTT/N.
* ``receiver`` (``zreceiver``) has one ``tcp-sink`` per port and reads at once.
* The thin-stream mechanisms are sysctls of ``thinsender`` only, so the greedy flows keep
  the profile's defaults (``linux-3.14``: CUBIC, SACK, ER+TLP mode 3).
* Queue on r1's bottleneck egress: ``pfifo limit 63`` (1 BDP), ``bfifo`` with the same
  bytes (63 × 1514), ``sfq`` and ``codel`` with their defaults.

Configurations (sysctls on ``thinsender``):

=========  ==================================================================
vanilla    ``tcp_early_retrans = 0`` (no ER/TLP, no thin-stream mechanism)
lt         LT: ``tcp_thin_linear_timeouts = 1``, ER off
mfr        MFR: ``tcp_thin_dupack = 1``, ER off
lt-mfr     LT + MFR, ER off
er-tlp     ``tcp_early_retrans = 3`` (linux-3.14's default: delayed ER + TLP)
rdb        RDB (2015 patch): ``tcp_rdb = 1``, ER off
rdb2008    original RDB (Evensen 2008): ``tcp_rdb = 2`` (wirelab's value), ER off
=========  ==================================================================

Thin vs thin (``--vthin V``): a second sender node ``vthinsender`` runs V vanilla thin
streams to ports 5500, 5501, … next to the N thin streams of the configuration under test
(and the greedy flows), so one can see whether an aggressive thin group hurts a vanilla one.

Command line (outputs only under ``--out``, default ``./wirelab-repro-thin_streams``)::

    python -m wirelab.repro.thin_streams gen --thin 10 --greedy 10 --config vanilla -o x.toml
    python -m wirelab.repro.thin_streams commit-scenarios --dir scenarios/thin-streams
    python -m wirelab.repro.thin_streams matrix --out DIR --duration 300s --seeds 1,2,3,4,5
    python -m wirelab.repro.thin_streams report DIR --img DIR/img        # tables to stdout
    python -m wirelab.repro.thin_streams matrix --out DIR --ns 10 --greedy 10 --vthin 10   # thin vs thin
    python -m wirelab.repro.thin_streams n-sweep DIR [DIR...] --img IMG   # p99/goodput per N
    python -m wirelab.repro.thin_streams stability --out DIR --img IMG    # the 2-hour run
"""
from __future__ import annotations

import argparse
import bisect
import csv
import json
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from .. import stats
from .common import add_out, analyze, label, pyplot, run, save, say, stamp, toml

#: Bottleneck (seed-systems §3.8).
RATE = "5mbit"
ONE_WAY = "75ms"
RTT_MS = 150.0
#: ⌈rate·RTT / 1500⌉ = ⌈5e6 · 0.15 / 8 / 1500⌉ = 63 packets (1 BDP).
PFIFO_LIMIT = 63
#: bfifo with pfifo's byte capacity for full-size frames (63 × 1514, l2 header counted).
BFIFO_LIMIT = PFIFO_LIMIT * 1514
QUEUES = {
    "pfifo": f"pfifo limit {PFIFO_LIMIT}",
    "bfifo": f"bfifo limit {BFIFO_LIMIT}",
    "sfq": "sfq",
    "codel": "codel",
}
#: Thin stream: ITT 100 ms ± 10 ms, 120-byte payload.
ITT_MS = 100.0
JITTER = "10ms"
PAYLOAD = 120
THIN_PORT = 5000
GREEDY_PORT = 6000
CONFIGS: dict[str, dict[str, int]] = {
    "vanilla": {"net.ipv4.tcp_early_retrans": 0},
    "lt": {"net.ipv4.tcp_early_retrans": 0, "net.ipv4.tcp_thin_linear_timeouts": 1},
    "mfr": {"net.ipv4.tcp_early_retrans": 0, "net.ipv4.tcp_thin_dupack": 1},
    "lt-mfr": {
        "net.ipv4.tcp_early_retrans": 0,
        "net.ipv4.tcp_thin_linear_timeouts": 1,
        "net.ipv4.tcp_thin_dupack": 1,
    },
    "er-tlp": {"net.ipv4.tcp_early_retrans": 3},
    "rdb": {"net.ipv4.tcp_early_retrans": 0, "net.ipv4.tcp_rdb": 1},
    "rdb2008": {"net.ipv4.tcp_early_retrans": 0, "net.ipv4.tcp_rdb": 2},
}
LABELS = {
    "vanilla": "vanilla",
    "lt": "LT",
    "mfr": "MFR",
    "lt-mfr": "LT+MFR",
    "er-tlp": "ER+TLP",
    "rdb": "RDB",
    "rdb2008": "RDB-2008",
}
#: The vanilla thin streams of a thin-vs-thin run: their own sender node and ports.
VTHIN_PORT = 5500
VTHIN_CONFIG = "vanilla"


def _us(x: float) -> str:
    """A time in ms as tc spelling with microsecond resolution."""
    return f"{int(round(x * 1000))}us"


def _access(name: str, a: str, b: str, a_iface: bool = True) -> dict:
    """A 1 Gbit/s, 50 µs access link."""
    return {"name": name, "a": {"node": a, "iface": "eth0"} if a_iface else {"node": a},
            "b": {"node": b} if a_iface else {"node": b, "iface": "eth0"}, "netem": "rate 1gbit delay 50us"}


def _thin_app(name: str, node: str, port: int, start_ms: float) -> dict:
    return {"name": name, "kind": "tcp-thin", "node": node, "dst": f"thinreceiver:{port}", "size": PAYLOAD,
            "interval": f"{int(ITT_MS)}ms", "jitter": JITTER, "start": _us(start_ms)}


def scenario(thin: int, greedy: int, config: str = "vanilla", queue: str = "pfifo", duration: str = "300s",
             seed: int = 1, capture: bool = True, vthin: int = 0, name: str | None = None) -> dict:
    """The scenario (a dict) for ``thin`` thin vs ``greedy`` greedy streams.

    Starts are staggered as in the harness (§3.8): thin stream i at i·ITT/thin, greedy flow
    i at i·RTT/greedy. ``vthin`` > 0 adds a node ``vthinsender`` with that many vanilla thin
    streams (ports 5500+, starts (i + ½)·ITT/vthin). Raises ``ValueError`` on an unknown
    config or queue.
    """
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r}; one of {', '.join(CONFIGS)}")
    if queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}; one of {', '.join(QUEUES)}")
    if thin < 0 or greedy < 0 or thin > 499 or greedy > 999 or not 0 <= vthin <= 499:
        raise ValueError("stream counts must be in 0..499 (thin, vthin) and 0..999 (greedy)")
    vdesc = f" + {vthin} vanilla thin streams" if vthin else ""
    # mechanisms are sysctls of the thin sender only (harness: rdbsender); the greedy
    # sender (zsender) keeps the profile's defaults; receivers (zreceiver) are split so the
    # thin streams' arrivals can be captured alone
    nodes = [{"name": "thinsender", "sysctl": dict(CONFIGS[config])}, {"name": "greedysender"},
             {"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"},
             {"name": "thinreceiver"}, {"name": "greedyreceiver"}]
    links = [_access("thin-access", "thinsender", "r1"), _access("greedy-access", "greedysender", "r1"),
             # 5 Mbit/s, netem delay 75 ms on the data and on the ACK path (RTT 150 ms)
             {"name": "bottleneck", "a": {"node": "r1", "iface": "eth2", "qdisc": QUEUES[queue]}, "b": {"node": "r2"},
              "netem": f"rate {RATE} delay {ONE_WAY}"},
             _access("thin-rx", "r2", "thinreceiver", a_iface=False),
             _access("greedy-rx", "r2", "greedyreceiver", a_iface=False)]
    if vthin:  # after the bottleneck link, so r1's bottleneck interface keeps its name eth2
        nodes.append({"name": "vthinsender", "sysctl": dict(CONFIGS[VTHIN_CONFIG])})
        links.append(_access("vthin-access", "vthinsender", "r1"))
    sink = lambda port, node: {"name": f"sink{port}", "kind": "tcp-sink", "node": node, "port": port}  # noqa: E731
    apps = ([sink(VTHIN_PORT + i, "thinreceiver") for i in range(vthin)]
            + [sink(THIN_PORT + i, "thinreceiver") for i in range(thin)]
            + [sink(GREEDY_PORT + i, "greedyreceiver") for i in range(greedy)]
            + [_thin_app(f"thin{i}", "thinsender", THIN_PORT + i, i * ITT_MS / thin) for i in range(thin)]
            + [_thin_app(f"vthin{i}", "vthinsender", VTHIN_PORT + i, (i + 0.5) * ITT_MS / vthin) for i in range(vthin)]
            + [{"name": f"greedy{i}", "kind": "tcp-bulk", "node": "greedysender", "dst": f"greedyreceiver:{GREEDY_PORT + i}",
                "cc": "cubic", "start": _us(i * RTT_MS / greedy)} for i in range(greedy)])
    measure: dict = {"sample_interval": "1s"}
    if capture and thin:
        measure["capture"] = ["thinsender:eth0"] + (["vthinsender:eth0"] if vthin else []) + ["thinreceiver:eth0"]
    default = f"thin-{thin}v{greedy}-{config}-{queue}" + (f"-vthin{vthin}" if vthin else "")
    return {"scenario": {"name": name or default,
                         "description": f"Seed system 3: {thin} thin streams (120 B every 100+-10 ms, {LABELS[config]}){vdesc} "
                                        f"vs {greedy} greedy CUBIC flows over 5 Mbit/s, RTT 150 ms, {QUEUES[queue]}.",
                         "duration": duration, "seed": seed, "profile": "linux-3.14"},
            "node": nodes, "link": links, "app": apps, "measure": measure}


def generate(thin: int, greedy: int, config: str = "vanilla", queue: str = "pfifo", duration: str = "300s",
             seed: int = 1, capture: bool = True, vthin: int = 0, name: str | None = None) -> str:
    """:func:`scenario` as TOML text."""
    return toml(scenario(thin, greedy, config, queue, duration, seed, capture, vthin, name),
                "Generated by python -m wirelab.repro.thin_streams (seed system 3, Markussen 2014).\n"
                f"thin={thin} vthin={vthin} greedy={greedy} config={config} queue={queue} duration={duration}")


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------

def run_one(sc: dict, out: Path, seed: int) -> dict:
    """Runs one scenario and analyses the thin sender's capture; returns wall times.

    Skips work already done (``out/done.json`` exists), so a matrix can be resumed.
    """
    done = out / "done.json"
    if done.exists():
        return json.loads(done.read_text())
    out.mkdir(parents=True, exist_ok=True)
    (out / "scenario.toml").write_text(toml(sc))
    t0 = time.monotonic()
    res = run(out / "scenario.toml", out / "run", seed=seed)
    t1 = time.monotonic()
    caps = res.pcaps
    rcv = next((p for p in caps if p.name.startswith("thinreceiver")), None)
    # the thin sender under test -> analyze/, the vanilla thin sender of a thin-vs-thin
    # run -> analyze-v/
    for prefix, sub in (("thinsender", "analyze"), ("vthinsender", "analyze-v")):
        snd = [p for p in caps if p.name.startswith(prefix)]
        if snd:
            analyze(snd[0], out / sub, rcv, [f"thin=dport:{THIN_PORT}-{THIN_PORT + 999}",
                                             f"greedy=dport:{GREEDY_PORT}-{GREEDY_PORT + 999}"])
    # captures and the CDF tables are regenerable; keep the results directory small
    for p in caps + [out / sub / "latency_cdf.csv" for sub in ("analyze", "analyze-v")]:
        if p.exists():
            p.unlink()
    info = {"run_s": t1 - t0, "analyze_s": time.monotonic() - t1, "seed": seed}
    done.write_text(json.dumps(info))
    return info


def matrix_cells(ns: list[int], configs: list[str], queue_n: int | None, queues: list[str]):
    """(n, config, queue) cells: every N on pfifo, plus the queue variants for ``queue_n``."""
    cells = [(n, c, "pfifo") for n in ns for c in configs]
    if queue_n is not None:
        cells += [(queue_n, c, q) for q in queues if q != "pfifo" for c in configs]
    return cells


def cell_name(n: int, config: str, queue: str, greedy: int | None = None, vthin: int = 0) -> str:
    """Directory name of a cell; ``greedy`` only when it differs from ``n``, ``vthin`` when
    there are vanilla thin streams beside the ones under test."""
    g = "" if greedy is None or greedy == n else f"g{greedy}-"
    v = f"v{vthin}-" if vthin else ""
    return f"n{n}-{v}{g}{config}-{queue}"


def run_matrix(out: Path, cells, seeds: list[int], duration: str, jobs: int = 2,
               greedy: int | None = None, vthin: int = 0) -> None:
    """Runs every cell × seed with ``jobs`` parallel processes; prints progress.

    ``greedy``: a fixed number of greedy flows (default: as many as thin streams);
    ``vthin``: vanilla thin streams beside the ones under test (thin vs thin). A second
    invocation with other cells but the same seeds, duration, greedy and vthin adds its
    cells to ``matrix.json`` (so N = 1 or a new config can be added to a finished matrix).
    """
    out.mkdir(parents=True, exist_ok=True)
    todo = [(n, c, q, s) for (n, c, q) in cells for s in seeds]
    t_start = time.monotonic()

    def work(item):
        n, c, q, s = item
        d = out / cell_name(n, c, q, greedy, vthin) / f"seed{s}"
        info = run_one(scenario(n, n if greedy is None else greedy, c, q, duration, s, vthin=vthin), d, s)
        return item, info

    with ThreadPoolExecutor(max_workers=jobs) as ex:
        for k, (item, info) in enumerate(ex.map(work, todo), 1):
            say(f"[{k}/{len(todo)} {time.monotonic() - t_start:6.0f}s] {cell_name(*item[:3], greedy, vthin)} "
                f"seed {item[3]}: run {info['run_s']:.1f}s analyze {info['analyze_s']:.1f}s")
    meta = {"cells": [list(c) for c in cells], "seeds": seeds, "duration": duration, "greedy": greedy,
            "vthin": vthin, "wall_s": [time.monotonic() - t_start]}
    mp = out / "matrix.json"
    if mp.exists():
        old = json.loads(mp.read_text())
        same = all(old.get(k) == meta[k] for k in ("seeds", "duration", "greedy")) and old.get("vthin", 0) == vthin
        if same:
            w = old.get("wall_s", [])
            meta["wall_s"] = (w if isinstance(w, list) else [w]) + meta["wall_s"]
            merged = [list(c) for c in old["cells"]]
            meta["cells"] = merged + [c for c in meta["cells"] if c not in merged]
    mp.write_text(json.dumps(meta, indent=1))


# ---------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------

def mean_ci(xs: list[float]) -> tuple[float, float]:
    """Mean and half-width of the 95 % t confidence interval (nan half-width for n < 2)."""
    return stats.mean_ci(xs)[:2]


def _read_csv(p: Path) -> list[dict]:
    with p.open() as f:
        return list(csv.DictReader(f))


def _num(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def nearest_rank(xs: list[float], p: float) -> float:
    """Nearest-rank percentile (as ``wirelab analyze``)."""
    return stats.percentile(xs, p, "nearest-rank")


def thin_at_retransmission(segs: list[dict], retx: list[dict]) -> float:
    """Share (%) of first retransmissions sent while the stream had < 4 packets out.

    ``packets_out`` at time t is approximated from the sender capture as the number of
    ranges (≈ skbs) first sent before t and not cumulatively ACKed by t; Linux's
    ``tcp_stream_is_thin()`` needs it < 4 (and ssthresh set), so this is the share of
    loss events at which LT/MFR could act at all.
    """
    by_flow: dict[str, list[tuple[float, float]]] = {}
    for r in segs:
        if r.get("original_unseen") == "1":
            continue
        a = _num(r.get("acked_at_s"))
        by_flow.setdefault(r["flow"], []).append((_num(r["first_sent_s"]), math.inf if math.isnan(a) else a))
    first: dict[tuple[str, str], float] = {}
    for r in retx:
        if r.get("kind") != "retransmission":
            continue
        k = (r["flow"], r["seq"])
        t = _num(r["sent_s"])
        if k not in first or t < first[k]:
            first[k] = t
    if not first:
        return math.nan
    # first transmissions are in sequence order, and cumulative ACK times are monotone in
    # sequence, so both columns are sorted: packets_out(t) = #(sent < t) - #(acked <= t)
    cols = {}
    for flow, v in by_flow.items():
        v.sort()
        sent = [x for x, _ in v]
        acked = [a for _, a in v]
        for i in range(1, len(acked)):  # guard against a non-monotone capture
            acked[i] = max(acked[i], acked[i - 1])
        cols[flow] = (sent, acked)
    thin = 0
    for (flow, _seq), t in first.items():
        sent, acked = cols.get(flow, ([], []))
        out = bisect.bisect_left(sent, t) - bisect.bisect_right(acked, t)
        thin += out < 4
    return 100.0 * thin / len(first)


def _timer_driven(t_s: float) -> bool:
    """wirelab's TCP timers (RTO, TLP, ER delay) fire on whole jiffies (HZ 1000): a
    retransmission sent at an exact millisecond is timer-driven, any other ACK-driven."""
    return abs(t_s * 1000 - round(t_s * 1000)) < 1e-6


#: A timer retransmission this soon after an ACK-driven one of the same range cannot be
#: that retransmission's own RTO (≥ srtt + 200 ms ≥ 350 ms at RTT 150 ms): it is the
#: spurious-RTO pattern of the bug fixed in ab77d70 (an RTO armed before the loss).
SPURIOUS_GAP_S = 0.3


def retransmission_kinds(retx: list[dict]) -> dict:
    """Counts of first retransmissions by trigger, and of timer retransmissions that
    repeat an ACK-driven (fast) retransmission of the same range within
    :data:`SPURIOUS_GAP_S` (an RTO firing while the fast retransmission is in flight)."""
    per: dict[tuple[str, str], list[float]] = {}
    for r in retx:
        if r.get("kind") == "retransmission":
            per.setdefault((r["flow"], r["seq"]), []).append(_num(r["sent_s"]))
    first_timer = 0
    rto_after_fr = 0
    for ts in per.values():
        ts.sort()
        first_timer += _timer_driven(ts[0])
        for a, b in zip(ts, ts[1:]):
            if not _timer_driven(a) and _timer_driven(b) and b - a < SPURIOUS_GAP_S:
                rto_after_fr += 1
    n = len(per)
    return {
        "thin_retx_ranges": n,
        "thin_first_retx_timer_pct": 100.0 * first_timer / n if n else math.nan,
        "thin_timer_after_fr": rto_after_fr,
    }


def seed_metrics(d: Path) -> dict:
    """Per-seed metrics of one run directory (``run/`` and ``analyze/``)."""
    m: dict = {}
    flows = _read_csv(d / "run" / "flows.csv")
    # goodput is counted at the sinks (bytes read by the application)
    gsink = [r for r in flows if r.get("name", "").startswith(f"sink{GREEDY_PORT // 1000}")]
    gp = [_num(r.get("goodput_bps")) for r in gsink]
    m["greedy_goodput_mbps"] = sum(gp) / 1e6 if gp else math.nan
    m["greedy_jain"] = stats.jain(gp) if gp else math.nan
    greedy = [r for r in flows if r.get("name", "").startswith("greedy")]
    m["greedy_retrans"] = sum(_num(r.get("retrans")) for r in greedy) if greedy else math.nan
    tsink = [r for r in flows if r.get("name", "").startswith(f"sink{THIN_PORT // 1000}")]
    if tsink:
        m["thin_goodput_kbps"] = sum(_num(r.get("goodput_bps")) for r in tsink) / len(tsink) / 1e3
    thin = [r for r in flows if r.get("name", "").startswith("thin")]
    if thin:
        m["thin_retrans"] = sum(_num(r.get("retrans")) for r in thin)
    for q in _read_csv(d / "run" / "queues.csv"):
        if q.get("dev") == "r1:eth2":
            m["bottleneck_drops"] = _num(q.get("drops"))
    dur = _num(json.loads((d / "run" / "summary.json").read_text()).get("sim_seconds"))
    for r in _read_csv(d / "run" / "links.csv"):
        if r.get("name") == "thin-access:thinsender->r1":
            # everything the thin sender puts on the wire (frames incl. headers)
            m["thin_wire_kbps"] = _num(r.get("tx_bytes")) * 8 / dur / 1e3
    m.update(thin_capture_metrics(d / "analyze", "thin"))
    m.update(thin_capture_metrics(d / "analyze-v", "vthin"))
    vsink = [r for r in flows if r.get("name", "").startswith("sink") and
             VTHIN_PORT <= _num(r["name"][4:]) < GREEDY_PORT]
    if vsink:
        m["vthin_goodput_kbps"] = sum(_num(r.get("goodput_bps")) for r in vsink) / len(vsink) / 1e3
        tsink = [r for r in tsink if r not in vsink]
        m["thin_goodput_kbps"] = sum(_num(r.get("goodput_bps")) for r in tsink) / len(tsink) / 1e3
    m.update(mechanism_counters(d / "run" / "tcp_timeseries.csv"))
    return m


#: Cumulative per-socket counters of ``tcp_timeseries.csv`` (``TcpInfo``) summed over the
#: thin sender's streams at the end of the run.
COUNTERS = ("rto_count", "thin_linear_timeouts", "thin_dupack_retrans", "early_retrans",
            "tlp_probes", "rdb_packets")


def mechanism_counters(ts: Path) -> dict:
    """Exact mechanism counters of the streams under test (apps ``thin*``, node
    ``thinsender``): each counter's last value per stream, summed; and ``thin_sampled_pct``,
    the share of 1-s samples (ESTABLISHED) at which ``tcp_stream_is_thin()`` held."""
    if not ts.exists():
        return {}
    last: dict[str, dict] = {}
    thin_n = tot = 0
    with ts.open() as f:
        for r in csv.DictReader(f):
            if r.get("node") != "thinsender" or not r.get("flow", "").startswith("thin"):
                continue
            last[r["flow"]] = r
            if r.get("state") == "ESTAB":
                tot += 1
                thin_n += r.get("thin") == "true"
    out = {f"cnt_{k}": sum(_num(r.get(k)) for r in last.values()) for k in COUNTERS}
    out["thin_sampled_pct"] = 100.0 * thin_n / tot if tot else math.nan
    return out


def thin_capture_metrics(adir: Path, pre: str) -> dict:
    """ACK latency, application delay, loss and retransmission diagnostics of one thin
    sender's capture analysis (``wirelab analyze --out adir``); keys start with ``pre``."""
    m: dict = {}
    seg_p = adir / "segments.csv"
    if not seg_p.exists():
        return m
    segs = [r for r in _read_csv(seg_p)]
    lat = sorted(_num(r["latency_ms"]) for r in segs if r.get("latency_ms") not in ("", None))
    m[f"{pre}_lat_p50"] = nearest_rank(lat, 50)
    m[f"{pre}_lat_p90"] = nearest_rank(lat, 90)
    m[f"{pre}_lat_p99"] = nearest_rank(lat, 99)
    m[f"{pre}_lat_p999"] = nearest_rank(lat, 99.9)
    m[f"{pre}_lat_max"] = lat[-1] if lat else math.nan
    m[f"{pre}_lat_samples"] = lat
    app = sorted(_num(r["app_delay_ms"]) for r in segs if r.get("app_delay_ms") not in ("", None))
    m[f"{pre}_app_p99"] = nearest_rank(app, 99)
    m[f"{pre}_app_max"] = app[-1] if app else math.nan
    m[f"{pre}_app_samples"] = app
    rx = _read_csv(adir / "retransmissions.csv")
    m[f"{pre}_at_retx_pct"] = thin_at_retransmission(segs, rx)
    m.update({k.replace("thin_", f"{pre}_", 1): v for k, v in retransmission_kinds(rx).items()})
    af = _read_csv(adir / "flows.csv")
    data = sum(_num(r.get("data_segments")) for r in af)
    m[f"{pre}_segments"] = data
    m[f"{pre}_retx_segments"] = sum(_num(r.get("retransmitted_segments")) for r in af)
    lost = sum(_num(r.get("lost_segments")) for r in af)
    m[f"{pre}_true_loss_pct"] = 100 * lost / data if data else math.nan
    m[f"{pre}_est_loss_pct"] = 100 * m[f"{pre}_retx_segments"] / data if data else math.nan
    return m


def _order(row: dict) -> tuple:
    """Report order: pfifo first, then the other queues; N; configuration."""
    qs, cs = list(QUEUES), list(CONFIGS)
    return (qs.index(row["queue"]) if row["queue"] in qs else 99, row["n"],
            cs.index(row["config"]) if row["config"] in cs else 99)


def aggregate(out: Path) -> list[dict]:
    """One row per cell: means and 95 % CI half-widths over seeds, pooled latency samples."""
    meta = json.loads((out / "matrix.json").read_text())
    rows = []
    greedy = meta.get("greedy")
    vthin = meta.get("vthin", 0)
    for n, c, q in meta["cells"]:
        cd = out / cell_name(n, c, q, greedy, vthin)
        per = [seed_metrics(cd / f"seed{s}") for s in meta["seeds"] if (cd / f"seed{s}" / "done.json").exists()]
        if not per:
            continue
        row: dict = {"n": n, "greedy": n if greedy is None else greedy, "vthin": vthin, "config": c,
                     "queue": q, "seeds": len(per)}
        keys = sorted({k for p in per for k in p if not k.endswith("_samples")})
        for k in keys:
            row[k], row[k + "_ci"] = mean_ci([p.get(k, math.nan) for p in per])
        row["pooled_lat"] = sorted(x for p in per for x in p.get("thin_lat_samples", []))
        row["pooled_app"] = sorted(x for p in per for x in p.get("thin_app_samples", []))
        rows.append(row)
    return sorted(rows, key=_order)


def _f(m: float, ci: float, nd: int = 1) -> str:
    if m is None or math.isnan(m):
        return "–"
    if ci is None or math.isnan(ci):
        return f"{m:.{nd}f}"
    return f"{m:.{nd}f} ± {ci:.{nd}f}"


def _label(r: dict) -> str:
    n = str(r["n"])
    if r.get("vthin"):
        n += f" + {r['vthin']} vanilla"
    if r.get("vthin") or r.get("greedy", r["n"]) != r["n"]:
        n += f" vs {r['greedy']}"
    return f"| {n} | {r['queue']} | {LABELS[r['config']]} | "


def markdown_tables(rows: list[dict]) -> str:
    """The report's tables: thin latency and loss; greedy goodput and fairness;
    retransmission diagnostics from the capture; exact mechanism counters; for thin-vs-thin
    runs the vanilla group's latency. Cells are mean ± 95 % CI half-width over seeds."""
    g = lambda r, k, nd=1: _f(r.get(k), r.get(k + "_ci"), nd)  # noqa: E731
    lab = _label
    t1 = ["| N | queue | config | ACK lat. p50 (ms) | p99 (ms) | max (ms) | app delay p99 (ms) | "
          "true loss (%) | thin goodput (kbit/s) |", "|---|---|---|---|---|---|---|---|---|"]
    t2 = ["| N | queue | config | greedy goodput, sum (Mbit/s) | Jain (greedy flows) | "
          "greedy retransmissions | bottleneck drops |", "|---|---|---|---|---|---|---|"]
    t3 = ["| N | queue | config | retransmitted thin ranges | first retx sent with packets_out < 4 (%) | "
          "first retx timer-driven (%) | timer retx < 300 ms after a fast retx |",
          "|---|---|---|---|---|---|---|"]
    t4 = ["| N | queue | config | samples thin (%) | RTOs | linear RTOs (LT) | thin-dupack retx (MFR) | "
          "early retx | TLP probes | RDB packets |", "|---|---|---|---|---|---|---|---|---|---|"]
    t5 = ["| N | queue | config of the tested group | tested p99 (ms) | vanilla group p50 (ms) | "
          "vanilla p99 (ms) | vanilla max (ms) | vanilla app delay p99 (ms) | vanilla true loss (%) |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t1.append(lab(r) + f"{g(r, 'thin_lat_p50')} | {g(r, 'thin_lat_p99', 0)} | {g(r, 'thin_lat_max', 0)} | "
                  f"{g(r, 'thin_app_p99', 0)} | {g(r, 'thin_true_loss_pct', 2)} | {g(r, 'thin_goodput_kbps', 2)} |")
        t2.append(lab(r) + f"{g(r, 'greedy_goodput_mbps', 3)} | {g(r, 'greedy_jain', 4)} | "
                  f"{g(r, 'greedy_retrans', 0)} | {g(r, 'bottleneck_drops', 0)} |")
        if r["config"].startswith("rdb"):  # every bundle re-sends old bytes: counted as retransmission
            t3.append(lab(r) + "n/a (bundles) | n/a | n/a | n/a |")
        else:
            t3.append(lab(r) + f"{g(r, 'thin_retx_ranges', 0)} | {g(r, 'thin_at_retx_pct')} | "
                      f"{g(r, 'thin_first_retx_timer_pct')} | {g(r, 'thin_timer_after_fr', 0)} |")
        t4.append(lab(r) + f"{g(r, 'thin_sampled_pct')} | "
                  + " | ".join(g(r, f"cnt_{k}", 0) for k in COUNTERS) + " |")
        if r.get("vthin"):
            t5.append(lab(r) + f"{g(r, 'thin_lat_p99', 0)} | {g(r, 'vthin_lat_p50')} | {g(r, 'vthin_lat_p99', 0)} | "
                      f"{g(r, 'vthin_lat_max', 0)} | {g(r, 'vthin_app_p99', 0)} | {g(r, 'vthin_true_loss_pct', 2)} |")
    out = "\n\n".join("\n".join(t) for t in (t1, t2, t3, t4))
    if len(t5) > 2:
        out += "\n\n" + "\n".join(t5)
    return out


#: (colour, line style, marker) of each configuration in the figures.
STYLES = {"vanilla": ("k", "-", "o"), "lt": ("tab:blue", ":", "v"), "mfr": ("tab:cyan", ":", "^"),
          "lt-mfr": ("tab:blue", "--", "s"), "er-tlp": ("tab:orange", "-", "D"),
          "rdb": ("tab:green", "-", "o"), "rdb2008": ("tab:red", "--", "x")}


def plot_cdf(rows: list[dict], panels: list[tuple[int, str]], path: Path) -> None:
    """CCDF-style plot (CDF from 0.5 up, log latency) of pooled thin-stream ACK latency per
    config, one panel per (N, queue)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.0 * len(panels), 3.6), dpi=80, sharey=True)
    axes = axes if len(panels) > 1 else [axes]
    for ax, (n, queue) in zip(axes, panels):
        for r in rows:
            if r["n"] != n or r["queue"] != queue:
                continue
            xs = r["pooled_lat"]
            if not xs:
                continue
            # thin the step CDF to <= 600 points (all of the tail) to keep the PNG small
            k = len(xs)
            idx = sorted(set(list(range(0, k, max(1, k // 400))) + list(range(max(0, k - 200), k))))
            col, ls, _mk = STYLES.get(r["config"], (None, "-", "o"))
            ax.step([xs[i] for i in idx], [(i + 1) / k for i in idx], where="post", color=col,
                    linestyle=ls, linewidth=1.2, label=LABELS[r["config"]])
        ax.set_xscale("log")
        ax.set_xlim(100, 10000)
        ax.set_ylim(0.5, 1.0005)
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"{n} thin vs {n} greedy, {queue}", fontsize=10)
        ax.set_xlabel("thin-stream ACK latency (ms)")
    axes[0].set_ylabel("CDF (pooled over seeds)")
    axes[-1].legend(loc="lower right", fontsize=8)
    save(fig, path, dpi=None)


def report(out: Path, img: Path | None, cdf_ns: list[int], queues_n: int | None) -> str:
    rows = aggregate(out)
    (out / "cells.json").write_text(json.dumps(
        [{k: v for k, v in r.items() if not k.startswith("pooled")} for r in rows], indent=1))
    txt = markdown_tables(rows)
    if img is not None:
        img.mkdir(parents=True, exist_ok=True)
        plot_cdf(rows, [(n, "pfifo") for n in cdf_ns], img / "thin-ack-latency-cdf-pfifo.png")
        if queues_n is not None:
            plot_cdf(rows, [(queues_n, q) for q in QUEUES], img / "thin-ack-latency-cdf-queues.png")
    return txt


def n_sweep(dirs: list[Path], queue: str = "pfifo", img: Path | None = None) -> str:
    """Compact N-sweep tables over one or more matrix directories (N thin vs N greedy on
    ``queue``): thin ACK-latency p99 and greedy aggregate goodput per N and configuration,
    mean ± 95 % CI; optionally the plot ``img/thin-n-sweep.png``."""
    rows = [r for d in dirs for r in aggregate(d)
            if r["queue"] == queue and r.get("greedy") == r["n"] and not r.get("vthin")]
    ns = sorted({r["n"] for r in rows})
    cfgs = [c for c in CONFIGS if any(r["config"] == c for r in rows)]
    cell = {(r["n"], r["config"]): r for r in rows}
    out = []
    for key, nd, title in (("thin_lat_p99", 0, "thin ACK latency p99 (ms)"),
                           ("greedy_goodput_mbps", 3, "greedy goodput, sum (Mbit/s)")):
        t = ["| N | " + " | ".join(LABELS[c] for c in cfgs) + " |", "|---|" + "---|" * len(cfgs)]
        for n in ns:
            t.append(f"| {n} | " + " | ".join(
                _f(cell[(n, c)].get(key), cell[(n, c)].get(key + "_ci"), nd) if (n, c) in cell else "–"
                for c in cfgs) + " |")
        out.append(f"{title}, {queue}:\n\n" + "\n".join(t))
    out.append(f"where the thin-stream mechanisms act, {queue}:\n\n" + _mechanism_table(dirs, queue, ns, cell))
    if img is not None:
        fig, ax = pyplot().subplots(1, 2, figsize=(9, 3.6), dpi=80)
        for c in cfgs:
            col, ls, mk = STYLES.get(c, (None, "-", "o"))
            pts = [(n, cell[(n, c)]) for n in ns if (n, c) in cell]
            for a, key, scale in ((ax[0], "thin_lat_p99", 1.0), (ax[1], "greedy_goodput_mbps", 1.0)):
                a.errorbar([n for n, _ in pts], [r[key] * scale for _, r in pts],
                           yerr=[(r.get(key + "_ci") or 0) * scale for _, r in pts],
                           color=col, linestyle=ls, marker=mk, markersize=4, linewidth=1.1, capsize=2,
                           label=LABELS[c])
        ax[0].set_ylabel("thin ACK latency p99 (ms)")
        ax[1].set_ylabel("greedy goodput, sum (Mbit/s)")
        for a in ax:
            a.set_xlabel("N thin vs N greedy")
            a.grid(True, alpha=0.3)
        ax[0].legend(fontsize=7, loc="upper left")
        fig.suptitle(f"N sweep, {queue}, mean ± 95 % CI over seeds", fontsize=10)
        save(fig, img / "thin-n-sweep.png", dpi=None)
    return "\n\n".join(out)


def _fingerprints(dirs: list[Path], queue: str) -> dict[tuple[int, str, int], str]:
    """``(n, config, seed) -> fingerprint`` of every finished N-vs-N run on ``queue``."""
    fps: dict[tuple[int, str, int], str] = {}
    for d in dirs:
        meta = json.loads((d / "matrix.json").read_text())
        if meta.get("vthin") or meta.get("greedy") is not None:
            continue
        for n, c, q in meta["cells"]:
            if q != queue:
                continue
            for s in meta["seeds"]:
                sp = d / cell_name(n, c, q) / f"seed{s}" / "run" / "summary.json"
                if sp.exists():
                    fps[(n, c, s)] = str(json.loads(sp.read_text()).get("fingerprint"))
    return fps


def _mechanism_table(dirs: list[Path], queue: str, ns: list[int], cell: dict) -> str:
    """Per N: in how many seeds LT, MFR and LT+MFR are byte-identical to vanilla (same
    ``fingerprint``), the exact LT and MFR counters (per run, summed over the streams), the
    share of 1-s samples at which vanilla's streams were thin, and ER+TLP's and LT's p99
    change against vanilla."""
    fps = _fingerprints(dirs, queue)

    def same(n: int, c: str) -> str:
        seeds = sorted(s for (n2, c2, s) in fps if n2 == n and c2 == c and (n, "vanilla", s) in fps)
        if not seeds:
            return "–"
        return f"{sum(fps[(n, c, s)] == fps[(n, 'vanilla', s)] for s in seeds)}/{len(seeds)}"

    def val(n: int, c: str, key: str, nd: int = 0) -> str:
        r = cell.get((n, c))
        return _f(r.get(key), r.get(key + "_ci"), nd) if r and key in r else "–"

    def dp99(n: int, c: str) -> str:
        r, v = cell.get((n, c)), cell.get((n, "vanilla"))
        if not r or not v or not v.get("thin_lat_p99"):
            return "–"
        return f"{100.0 * (r['thin_lat_p99'] / v['thin_lat_p99'] - 1.0):+.0f}"

    t = ["| N | LT ≡ vanilla (seeds) | MFR ≡ vanilla | LT+MFR ≡ vanilla | linear RTOs (LT) | "
         "thin-dupack retx (MFR) | vanilla samples thin (%) | LT Δp99 (%) | ER+TLP Δp99 (%) |",
         "|---|---|---|---|---|---|---|---|---|"]
    for n in ns:
        t.append(f"| {n} | {same(n, 'lt')} | {same(n, 'mfr')} | {same(n, 'lt-mfr')} | "
                 f"{val(n, 'lt', 'cnt_thin_linear_timeouts')} | {val(n, 'mfr', 'cnt_thin_dupack_retrans')} | "
                 f"{val(n, 'vanilla', 'thin_sampled_pct', 1)} | {dp99(n, 'lt')} | {dp99(n, 'er-tlp')} |")
    return "\n".join(t)


# ---------------------------------------------------------------------------------------
# Long-run stability (seed-systems §3.9: 60 thin vs 10 greedy for 2 h)
# ---------------------------------------------------------------------------------------

#: The stability scenario: 60 thin (LT+MFR) vs 10 greedy, pfifo, 2 hours. Not run in CI.
STABILITY = {"thin": 60, "greedy": 10, "config": "lt-mfr", "queue": "pfifo", "duration": "7200s"}


def stability_windows(d: Path, window_s: float = 600.0, minute_s: float = 60.0) -> tuple[list[dict], list[dict]]:
    """Per-window series of one long run directory (``run/`` and ``analyze/`` of
    :func:`run_one`): thin ACK latency percentiles and true loss by first-send time, greedy
    goodput from the sinks' received bytes, bottleneck drops, and the mechanism counters'
    increments. Returns (``window_s`` rows, ``minute_s`` rows of latency p99 and loss)."""
    seg = pd.read_csv(d / "analyze" / "segments.csv", usecols=["first_sent_s", "latency_ms", "lost"])
    seg["lost"] = seg["lost"].fillna(0)
    flows = pd.read_csv(d / "run" / "flow_timeseries.csv")
    # greedy goodput: the sinks' cumulative received bytes at window edges
    rx = flows[flows["flow"].str.startswith(f"sink{GREEDY_PORT // 1000}")].groupby("time_s")["rx_bytes"].sum()
    q = pd.read_csv(d / "run" / "queue_timeseries.csv")
    drops = q[q["dev"] == "r1:eth2"].groupby("time_s")["drops"].last()
    tcp = pd.read_csv(d / "run" / "tcp_timeseries.csv")
    cnt = tcp[(tcp["node"] == "thinsender") & tcp["flow"].str.startswith("thin")].groupby("time_s")[list(COUNTERS)].sum()

    def at(series, t: float):
        """The last sample at or before t (0 before the first)."""
        s = series[series.index <= t + 1e-9]
        return s.iloc[-1] if len(s) else 0.0 * series.iloc[0]

    def per(width: float):
        return seg.groupby((seg["first_sent_s"] // width).astype(int))

    rows = []
    for w, g in per(window_s):
        t0, t1 = w * window_s, (w + 1) * window_s
        lat = g["latency_ms"].dropna()
        c0, c1 = at(cnt, t0), at(cnt, t1)
        rows.append({
            "t0_s": t0, "t1_s": t1, "thin_ranges": len(g),
            "lat_p50": nearest_rank(lat, 50), "lat_p99": nearest_rank(lat, 99),
            "lat_p999": nearest_rank(lat, 99.9), "lat_max": lat.max() if len(lat) else math.nan,
            "true_loss_pct": 100.0 * g["lost"].sum() / len(g),
            "greedy_mbps": (at(rx, t1) - at(rx, t0)) * 8 / window_s / 1e6,
            "drops": at(drops, t1) - at(drops, t0),
            **{f"d_{k}": c1[k] - c0[k] for k in COUNTERS},
        })
    minutes = [{"t0_s": mi * minute_s, "lat_p99": nearest_rank(g["latency_ms"].dropna(), 99),
                "true_loss_pct": 100.0 * g["lost"].sum() / len(g)} for mi, g in per(minute_s)]
    return rows, minutes


def stability_report(d: Path, img: Path | None, window_s: float = 600.0) -> str:
    """Markdown table of :func:`stability_windows`; a per-minute p99/loss plot to ``img``."""
    rows, minutes = stability_windows(d, window_s)
    t = ["| window (min) | thin ranges | ACK lat. p50 (ms) | p99 (ms) | p99.9 (ms) | max (ms) | true loss (%) | "
         "greedy goodput (Mbit/s) | bottleneck drops | RTOs | linear RTOs | thin-dupack retx |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        t.append(f"| {r['t0_s'] / 60:.0f}–{r['t1_s'] / 60:.0f} | {r['thin_ranges']} | {r['lat_p50']:.1f} | "
                 f"{r['lat_p99']:.0f} | {r['lat_p999']:.0f} | {r['lat_max']:.0f} | {r['true_loss_pct']:.2f} | "
                 f"{r['greedy_mbps']:.3f} | {r['drops']:.0f} | {r['d_rto_count']:.0f} | "
                 f"{r['d_thin_linear_timeouts']:.0f} | {r['d_thin_dupack_retrans']:.0f} |")
    # drift: least-squares slope per hour of the per-minute series (first and last minute
    # left out: slow start, and segments still in flight at the end count as lost)
    mid = minutes[1:-1]
    if len(mid) >= 3:
        for key, unit in (("lat_p99", "ms"), ("true_loss_pct", "percentage points")):
            b, se, my = stats.drift([m["t0_s"] / 3600 for m in mid], [m[key] for m in mid])
            t.append(f"\ndrift of per-minute {key}: {b:+.3f} ± {se:.3f} (s.e.) {unit} per hour "
                     f"around a mean of {my:.3f} ({len(mid)} minutes)")
    if img is not None and minutes:
        fig, ax = pyplot().subplots(2, 1, figsize=(8, 4.4), dpi=80, sharex=True)
        xs = [m["t0_s"] / 60 for m in minutes]
        ax[0].plot(xs, [m["lat_p99"] for m in minutes], "k-", linewidth=1)
        ax[0].set_ylabel("ACK latency p99 (ms)")
        ax[0].grid(True, alpha=0.3)
        ax[1].plot(xs, [m["true_loss_pct"] for m in minutes], "tab:red", linewidth=1)
        label(ax[1], ylabel="true loss (%)", xlabel="minute of the run (first transmission)")
        ax[1].grid(True, alpha=0.3)
        ax[0].set_title("60 thin (LT+MFR) vs 10 greedy, pfifo: per-minute series", fontsize=10)
        save(fig, img / "thin-stability-2h.png", dpi=None)
    return "\n".join(t)


# ---------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------

COMMITTED = [
    (10, 10, "vanilla", "pfifo"),
    (10, 10, "lt-mfr", "pfifo"),
    (10, 10, "er-tlp", "pfifo"),
    (10, 10, "rdb", "pfifo"),
    (10, 10, "rdb2008", "pfifo"),
    (10, 10, "vanilla", "codel"),
    (20, 20, "vanilla", "pfifo"),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wirelab.repro.thin_streams", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="write one scenario")
    g.add_argument("--thin", type=int, default=10)
    g.add_argument("--greedy", type=int, default=10)
    g.add_argument("--config", default="vanilla", choices=list(CONFIGS))
    g.add_argument("--queue", default="pfifo", choices=list(QUEUES))
    g.add_argument("--duration", default="300s")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--vthin", type=int, default=0, help="vanilla thin streams beside the tested ones")
    g.add_argument("-o", "--output", default="-")
    c = sub.add_parser("commit-scenarios", help="write the representative scenarios (the checkout's are in "
                       "scenarios/thin-streams)")
    c.add_argument("--dir", type=Path, required=True)
    m = sub.add_parser("matrix", help="run N thin vs N greedy × configs × queues × seeds")
    add_out(m, "thin_streams")
    m.add_argument("--ns", default="1,5,10,20,30")
    m.add_argument("--configs", default=",".join(CONFIGS))
    m.add_argument("--queue-n", type=int, default=10)
    m.add_argument("--queues", default="pfifo,bfifo,sfq,codel")
    m.add_argument("--seeds", default="1,2,3,4,5")
    m.add_argument("--duration", default="300s")
    m.add_argument("--jobs", type=int, default=2)
    m.add_argument("--greedy", type=int, default=None, help="fixed greedy count (default: = N)")
    m.add_argument("--vthin", type=int, default=0,
                   help="thin vs thin: this many vanilla thin streams on a second sender")
    ns_ = sub.add_parser("n-sweep", help="compact p99 / greedy goodput tables per N over matrices")
    ns_.add_argument("dirs", nargs="+")
    ns_.add_argument("--queue", default="pfifo")
    ns_.add_argument("--img", default=None)
    st = sub.add_parser("stability", help="run the 2-hour stability scenario (or --duration) and "
                        "print per-window latency/loss/goodput")
    add_out(st, "thin_streams")
    st.add_argument("--duration", default=STABILITY["duration"])
    st.add_argument("--seed", type=int, default=1)
    st.add_argument("--window", default="600", help="window in seconds (default 600)")
    st.add_argument("--img", default=None)
    r = sub.add_parser("report", help="aggregate a matrix; print markdown tables; plot CDFs")
    r.add_argument("dir")
    r.add_argument("--img", default=None)
    r.add_argument("--cdf-ns", default="10,30")
    r.add_argument("--queue-n", type=int, default=10)
    a = ap.parse_args(argv)
    if a.cmd in ("matrix", "stability"):
        stamp(a.out, "thin_streams", argv)
    if a.cmd == "gen":
        t = generate(a.thin, a.greedy, a.config, a.queue, a.duration, a.seed, vthin=a.vthin)
        if a.output == "-":
            sys.stdout.write(t)
        else:
            Path(a.output).write_text(t)
    elif a.cmd == "commit-scenarios":
        d = a.dir
        d.mkdir(parents=True, exist_ok=True)
        for th, gr, cf, q in COMMITTED:
            (d / f"thin{th}-greedy{gr}-{cf}-{q}.toml").write_text(generate(th, gr, cf, q))
        (d / "thin10-vthin10-greedy10-rdb-pfifo.toml").write_text(generate(10, 10, "rdb", "pfifo", vthin=10))
        (d / "stability-2h.toml").write_text(generate(
            STABILITY["thin"], STABILITY["greedy"], STABILITY["config"], STABILITY["queue"],
            STABILITY["duration"], name="thin-stability-2h"))
    elif a.cmd == "matrix":
        ns = [int(x) for x in a.ns.split(",") if x]
        cells = matrix_cells(ns, a.configs.split(","), a.queue_n, a.queues.split(","))
        run_matrix(a.out, cells, [int(s) for s in a.seeds.split(",")], a.duration, a.jobs, a.greedy,
                   a.vthin)
    elif a.cmd == "n-sweep":
        print(n_sweep([Path(x) for x in a.dirs], a.queue, Path(a.img) if a.img else None))
    elif a.cmd == "stability":
        out = a.out
        scn = scenario(STABILITY["thin"], STABILITY["greedy"], STABILITY["config"], STABILITY["queue"],
                       a.duration, a.seed, name="thin-stability-2h")
        info = run_one(scn, out, a.seed)
        print(f"run {info['run_s']:.0f} s wall, analyze {info['analyze_s']:.0f} s wall", file=sys.stderr)
        print(stability_report(out, Path(a.img) if a.img else None, float(a.window)))
    elif a.cmd == "report":
        print(report(Path(a.dir), Path(a.img) if a.img else None, [int(x) for x in a.cdf_ns.split(",")], a.queue_n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
