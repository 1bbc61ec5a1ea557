"""Seed system 3 (Markussen 2014): retransmission aggressiveness for thin TCP streams.

Every experiment the thesis names (its lists of figures and tables; the copy in
``shared/seeds/002_*.txt`` stops after section 2.1) is an entry of :data:`EXPERIMENTS`;
``all`` runs them in-process (``wirelab.run``), analyses the thin sender's capture with
``wirelab analyze``, keeps one small ``metrics.json`` per run (captures and CSV tables are
deleted) and writes every table of ``docs/reproductions/thin-streams.md`` to
``OUT/tables.md``, the figures to ``OUT/img`` (or ``--img``).

Topology (seed-systems §3.8, the Simula harness reconstructed)::

    thinsender  ──┐  1 Gbit/s, 50 us                                  ┌── thinreceiver
                  r1 ══ 5 Mbit/s, 75 ms each way, root qdisc on r1 ══ r2
    greedysender ─┘                                                   └── greedyreceiver

* ``thinsender`` (the harness's ``rdbsender``) runs N ``tcp-thin`` streams: 120-byte
  writes every ITT (100 ms) ± 10 ms (uniform, application-level), ``TCP_NODELAY``, to
  ports 5000+; stream i starts at i·ITT/N.
* ``greedysender`` (``zsender``) runs M CUBIC ``tcp-bulk`` flows to ports 6000+; flow i
  starts at i·RTT/M.
* The thin-stream mechanisms are sysctls of ``thinsender`` only (:data:`CONFIGS`); every
  node runs ``profile = "linux-3.14"``.
* The bottleneck queue is r1's egress root qdisc (:data:`QUEUES`); default ``pfifo limit
  63`` (1 BDP).

Command line (outputs only under ``--out``, default ``./wirelab-repro-thin_streams``)::

    python -m wirelab.repro.thin_streams --out DIR [--seeds 1,2,3]  # = all: every experiment but
                                                                     # the nightly 2 h 05 one + tables
    python -m wirelab.repro.thin_streams all --out DIR --only duration --seeds 1  # make nightly
    python -m wirelab.repro.thin_streams all --out DIR --only nvn,h1 # some experiments
    python -m wirelab.repro.thin_streams tables DIR [--img IMG]      # tables of finished runs
    python -m wirelab.repro.thin_streams list                        # the experiments
    python -m wirelab.repro.thin_streams gen --thin 10 --greedy 10 --config lt -o x.toml
    python -m wirelab.repro.thin_streams commit-scenarios --dir scenarios/thin-streams
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable

from .common import add_out, analyze, run, say, stamp, toml

#: Bottleneck (seed-systems §3.8).
RATE = "5mbit"
RATE_BPS = 5_000_000
ONE_WAY_MS = 75
RTT_MS = 150.0
#: ⌈rate·RTT / 1500⌉ = ⌈5e6 · 0.15 / 8 / 1500⌉ = 63 packets (1 BDP).
PFIFO_LIMIT = 63
#: A full-size frame with its Ethernet header (bfifo limits count it).
FRAME = 1514
#: Root qdiscs of r1's bottleneck interface. ``{limit}`` is the packet limit of the cell
#: (default :data:`PFIFO_LIMIT`); bfifo gets the same bytes for full-size frames. RED is
#: set up as tc-red(8) recommends: min = 30 000 B (48 ms at 5 Mbit/s), max = 3·min,
#: burst = (2·min + max) / (3·avpkt), limit ≫ max.
QUEUES = {
    "pfifo": "pfifo limit {limit}",
    "bfifo": "bfifo limit {bytes}",
    "red": "red limit 400000 min 30000 max 90000 avpkt 1000 burst 50 probability 0.02 bandwidth 5mbit",
    "sfq": "sfq",
    "codel": "codel",
    "fq_codel": "fq_codel",
}
#: Thin stream: ITT 100 ms ± 10 ms, 120-byte payload.
ITT_MS = 100
JITTER = "10ms"
PAYLOAD = 120
THIN_PORT = 5000
VTHIN_PORT = 5500
GREEDY_PORT = 6000
CONFIGS: dict[str, dict[str, int]] = {
    "vanilla": {"net.ipv4.tcp_early_retrans": 0},
    "lt": {"net.ipv4.tcp_early_retrans": 0, "net.ipv4.tcp_thin_linear_timeouts": 1},
    "mfr": {"net.ipv4.tcp_early_retrans": 0, "net.ipv4.tcp_thin_dupack": 1},
    "lt-mfr": {"net.ipv4.tcp_early_retrans": 0, "net.ipv4.tcp_thin_linear_timeouts": 1,
               "net.ipv4.tcp_thin_dupack": 1},
    "er-tlp": {"net.ipv4.tcp_early_retrans": 3},
    "rdb": {"net.ipv4.tcp_early_retrans": 0, "net.ipv4.tcp_rdb": 1},
    "rdb2008": {"net.ipv4.tcp_early_retrans": 0, "net.ipv4.tcp_rdb": 2},
}
LABELS = {"vanilla": "vanilla", "lt": "LT", "mfr": "MFR", "lt-mfr": "LT+MFR", "er-tlp": "ER+TLP",
          "rdb": "RDB", "rdb2008": "RDB-2008"}
ALL = list(CONFIGS)
#: The thesis's two mechanisms with their baseline, plus Linux 3.14's default (ER+TLP)
#: and the 2015 RDB as references.
CORE = ["vanilla", "lt", "mfr", "lt-mfr", "er-tlp", "rdb"]
LTMFR = ["vanilla", "lt", "mfr", "lt-mfr"]


@dataclass(frozen=True)
class Cell:
    """One point of an experiment (everything but the seed)."""
    thin: int
    greedy: int
    config: str = "vanilla"
    queue: str = "pfifo"
    #: packet limit of pfifo (bfifo: this many full-size frames); None = 1 BDP (63)
    limit: int | None = None
    itt_ms: int = ITT_MS
    #: netem random loss (%) on the bottleneck's data direction (r1 → r2)
    loss_pct: float = 0.0
    #: vanilla thin streams on a second sender (thin vs thin)
    vthin: int = 0
    duration_s: int = 300

    def __post_init__(self) -> None:
        if self.limit == PFIFO_LIMIT:  # the default spelled out is the default cell
            object.__setattr__(self, "limit", None)

    def name(self) -> str:
        parts = [f"n{self.thin}", f"g{self.greedy}"]
        if self.vthin:
            parts.append(f"v{self.vthin}")
        parts.append(self.queue + (f"{self.limit}" if self.limit is not None else ""))
        if self.itt_ms != ITT_MS:
            parts.append(f"itt{self.itt_ms}")
        if self.loss_pct:
            parts.append(f"loss{self.loss_pct:g}")
        if self.duration_s != 300:
            parts.append(f"{self.duration_s}s")
        return "-".join(parts) + f"-{self.config}"

    def vanilla(self) -> "Cell":
        return replace(self, config="vanilla")


def _us(x: float) -> str:
    """A time in ms as tc spelling with microsecond resolution."""
    return f"{int(round(x * 1000))}us"


def _access(name: str, a: str, b: str, a_iface: bool = True) -> dict:
    """A 1 Gbit/s, 50 µs access link."""
    return {"name": name, "a": {"node": a, "iface": "eth0"} if a_iface else {"node": a},
            "b": {"node": b} if a_iface else {"node": b, "iface": "eth0"}, "netem": "rate 1gbit delay 50us"}


def _thin_app(name: str, node: str, port: int, start_ms: float, itt_ms: int) -> dict:
    return {"name": name, "kind": "tcp-thin", "node": node, "dst": f"thinreceiver:{port}", "size": PAYLOAD,
            "interval": f"{itt_ms}ms", "jitter": JITTER, "start": _us(start_ms)}


def qdisc(cell: Cell) -> str:
    """The bottleneck's root qdisc in tc short form."""
    if cell.queue not in QUEUES:
        raise ValueError(f"unknown queue {cell.queue!r}; one of {', '.join(QUEUES)}")
    lim = PFIFO_LIMIT if cell.limit is None else cell.limit
    return QUEUES[cell.queue].format(limit=lim, bytes=lim * FRAME)


def scenario(cell: Cell, seed: int = 1, capture: bool = True, name: str | None = None) -> dict:
    """The scenario (a dict) of one cell. Raises ``ValueError`` on an unknown config or
    queue or out-of-range counts."""
    c = cell
    if c.config not in CONFIGS:
        raise ValueError(f"unknown config {c.config!r}; one of {', '.join(CONFIGS)}")
    if not (0 <= c.thin <= 499 and 0 <= c.greedy <= 999 and 0 <= c.vthin <= 499):
        raise ValueError("stream counts must be in 0..499 (thin, vthin) and 0..999 (greedy)")
    if not (10 <= c.itt_ms <= 10_000 and 0 <= c.loss_pct < 100):
        raise ValueError("itt_ms must be in 10..10000 and loss_pct in [0, 100)")
    netem = f"rate {RATE} delay {ONE_WAY_MS}ms"
    # mechanisms are sysctls of the thin sender only (harness: rdbsender); the greedy
    # sender (zsender) keeps the profile's defaults; receivers are split so the thin
    # streams' arrivals can be captured alone and each class counted on its own link
    nodes = [{"name": "thinsender", "sysctl": dict(CONFIGS[c.config])}, {"name": "greedysender"},
             {"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"},
             {"name": "thinreceiver"}, {"name": "greedyreceiver"}]
    r1 = {"node": "r1", "iface": "eth2", "qdisc": qdisc(c)}
    if c.loss_pct:  # random loss on the data direction only (endpoint netem = this egress)
        r1["netem"] = f"{netem} loss {c.loss_pct:g}%"
    links = [_access("thin-access", "thinsender", "r1"), _access("greedy-access", "greedysender", "r1"),
             # 5 Mbit/s, netem delay 75 ms on the data and on the ACK path (RTT 150 ms)
             {"name": "bottleneck", "a": r1, "b": {"node": "r2"}, "netem": netem},
             _access("thin-rx", "r2", "thinreceiver", a_iface=False),
             _access("greedy-rx", "r2", "greedyreceiver", a_iface=False)]
    if c.vthin:  # after the bottleneck link, so r1's bottleneck interface keeps its name eth2
        nodes.append({"name": "vthinsender", "sysctl": dict(CONFIGS["vanilla"])})
        links.append(_access("vthin-access", "vthinsender", "r1"))
    sink = lambda port, node: {"name": f"sink{port}", "kind": "tcp-sink", "node": node, "port": port}  # noqa: E731
    apps = ([sink(VTHIN_PORT + i, "thinreceiver") for i in range(c.vthin)]
            + [sink(THIN_PORT + i, "thinreceiver") for i in range(c.thin)]
            + [sink(GREEDY_PORT + i, "greedyreceiver") for i in range(c.greedy)]
            + [_thin_app(f"thin{i}", "thinsender", THIN_PORT + i, i * c.itt_ms / c.thin, c.itt_ms)
               for i in range(c.thin)]
            + [_thin_app(f"vthin{i}", "vthinsender", VTHIN_PORT + i, (i + 0.5) * c.itt_ms / c.vthin, c.itt_ms)
               for i in range(c.vthin)]
            + [{"name": f"greedy{i}", "kind": "tcp-bulk", "node": "greedysender",
                "dst": f"greedyreceiver:{GREEDY_PORT + i}", "cc": "cubic", "start": _us(i * RTT_MS / c.greedy)}
               for i in range(c.greedy)])
    measure: dict = {"sample_interval": "1s"}
    if capture and c.thin:
        measure["capture"] = ["thinsender:eth0"] + (["vthinsender:eth0"] if c.vthin else []) + ["thinreceiver:eth0"]
    extra = (f", ITT {c.itt_ms} ms" if c.itt_ms != ITT_MS else "") + (f", {c.loss_pct:g} % random loss" if c.loss_pct else "")
    vdesc = f" + {c.vthin} vanilla thin streams" if c.vthin else ""
    return {"scenario": {"name": name or f"thin-{c.name()}",
                         "description": f"Seed system 3: {c.thin} thin streams (120 B every {c.itt_ms}+-10 ms, "
                                        f"{LABELS[c.config]}){vdesc} vs {c.greedy} greedy CUBIC flows over 5 Mbit/s, "
                                        f"RTT 150 ms, {qdisc(c)}{extra}.",
                         "duration": f"{c.duration_s}s", "seed": seed, "profile": "linux-3.14"},
            "node": nodes, "link": links, "app": apps, "measure": measure}


def generate(cell: Cell, seed: int = 1, name: str | None = None) -> str:
    """:func:`scenario` as TOML text."""
    return toml(scenario(cell, seed, name=name),
                "Generated by python -m wirelab.repro.thin_streams (seed system 3, Markussen 2014).\n"
                + " ".join(f"{k}={v}" for k, v in asdict(cell).items()))


# ---------------------------------------------------------------------------------------
# Experiments: one per figure/table of the thesis (and the H1 settings search)
# ---------------------------------------------------------------------------------------

@dataclass
class Experiment:
    key: str
    #: what the thesis's list of figures/tables names
    source: str
    cells: list[Cell]
    seeds: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5])
    #: parallel runs (memory/disk-heavy long runs: 1)
    jobs: int | None = None
    #: too long for an ordinary ``all``: runs only when named (``--only``; ``make nightly``)
    nightly: bool = False


def _grid(configs, **kw) -> list[Cell]:
    return [Cell(config=c, **kw) for c in configs]


#: N grids: a subset of 1…30 (and up to 60 against 5 greedy) that runs in ≈ 15 min on 2 shared cores
NS_NVN = [1, 2, 3, 5, 10, 15, 20, 25, 30]
NS_NV5 = [1, 2, 5, 10, 20, 30, 40, 60]
QLIMITS = [16, 32, 63, 126, 252]
H1_LIMITS = [10, 20, 63]
H1_ITTS = [50, 100, 200, 400]
H1_LOSS = [1, 2, 5, 10]


def experiments() -> dict[str, Experiment]:
    """Every experiment, keyed by name."""
    e = [
        Experiment("nvn", "Figs 4.1/4.2 (N thin vs N greedy: goodput, relative loss), Table 4.1",
                   [c for n in NS_NVN for c in _grid(ALL, thin=n, greedy=n)]),
        Experiment("nv5", "Figs 4.3/4.4 (N thin vs 5 greedy: goodput; goodput vs throughput)",
                   [c for n in NS_NV5 for c in _grid(ALL, thin=n, greedy=5)]),
        Experiment("t30g20", "Fig 4.5 (relative packet loss, 30 thin vs 20 greedy)", _grid(ALL, thin=30, greedy=20)),
        Experiment("duration", "Table 4.2 (duration test, 2 h 05 min, 40 thin vs 10 greedy)",
                   _grid(CORE, thin=40, greedy=10, duration_s=7500), seeds=[1, 2, 3], jobs=1, nightly=True),
        Experiment("d300", "Table 4.2's setting for the usual 5 min (40 thin vs 10 greedy, 300 s)",
                   _grid(CORE, thin=40, greedy=10)),
        Experiment("qdisc", "Fig 5.1 + Table 5.1 (relative byte loss per qdisc, 30 vs 30)",
                   [c for q in QUEUES for c in _grid(CORE, thin=30, greedy=30, queue=q)]),
        Experiment("qlen", "Fig 5.2 (impact of the queue length on latency, 30 vs 30, pfifo)",
                   [c for lim in QLIMITS for c in _grid(CORE, thin=30, greedy=30, limit=lim)]),
        Experiment("t60g10", "Figs 5.3-5.6 (60 thin vs 10 greedy: throughput, loss, ACK latency)",
                   [c for q in ("pfifo", "codel") for c in _grid(ALL, thin=60, greedy=10, queue=q)]),
        Experiment("tvt", "H3 (thin vs thin: 10 tested + 10 vanilla thin vs 10 greedy; N + N without greedy)",
                   [c for q in ("pfifo", "codel") for c in _grid(ALL, thin=10, greedy=10, vthin=10, queue=q)]
                   + [c for n in (100, 125) for c in _grid(["vanilla", "rdb", "rdb2008"], thin=n, greedy=0, vthin=n)]
                   + _grid(ALL, thin=150, greedy=0, vthin=150)),
        Experiment("h1", "H1: settings where LT and MFR act (queue depth x ITT; random loss)",
                   [c for lim in H1_LIMITS for itt in H1_ITTS
                    for c in _grid(LTMFR + ["er-tlp"], thin=10, greedy=10, limit=lim, itt_ms=itt)]
                   + [c for itt in (100, 200) for loss in H1_LOSS
                      for c in _grid(LTMFR, thin=20, greedy=0, itt_ms=itt, loss_pct=loss)]),
    ]
    return {x.key: x for x in e}


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------

def run_one(cell: Cell, seed: int, d: Path, keep: bool = False) -> dict:
    """Runs one cell and seed into ``d``, analyses the thin sender's capture(s) and writes
    ``d/metrics.json``; unless ``keep``, deletes everything else (captures, CSV tables).
    Skips work already done, so an experiment can be resumed. Returns the metrics."""
    from .thin_streams_metrics import run_metrics

    done = d / "metrics.json"
    if done.exists():
        return json.loads(done.read_text())
    if d.exists():
        shutil.rmtree(d)  # an interrupted run
    d.mkdir(parents=True)
    t0 = time.monotonic()
    res = run(scenario(cell, seed), d / "run", seed=seed)
    t1 = time.monotonic()
    rcv = next((p for p in res.pcaps if p.name.startswith("thinreceiver")), None)
    # the thin sender under test -> analyze/, the vanilla thin sender -> analyze-v/
    for prefix, sub in (("thinsender", "analyze"), ("vthinsender", "analyze-v")):
        snd = [p for p in res.pcaps if p.name.startswith(prefix)]
        if snd:
            analyze(snd[0], d / sub, rcv, [f"thin=dport:{THIN_PORT}-{THIN_PORT + 999}"])
    for p in res.pcaps:
        p.unlink()
    t2 = time.monotonic()
    m = run_metrics(d, cell)
    m.update({"cell": asdict(cell), "seed": seed, "wall_run_s": t1 - t0, "wall_analyze_s": t2 - t1,
              "wall_metrics_s": time.monotonic() - t2})
    tmp = d / "metrics.json.tmp"
    tmp.write_text(json.dumps(m))
    tmp.rename(done)
    if not keep:
        for p in d.iterdir():
            if p.name != "metrics.json":
                shutil.rmtree(p) if p.is_dir() else p.unlink()
    return m


def run_experiment(exp: Experiment, out: Path, seeds: list[int] | None = None, jobs: int = 2,
                   progress: Callable[[str], None] = say) -> float:
    """Runs every cell × seed of ``exp`` under ``out/exp.key``; returns the wall time."""
    seeds = seeds or exp.seeds
    base = out / exp.key
    todo = [(c, s) for c in exp.cells for s in seeds]
    t0 = time.monotonic()

    def work(item):
        c, s = item
        return item, run_one(c, s, base / c.name() / f"seed{s}")

    with ThreadPoolExecutor(max_workers=exp.jobs or jobs) as ex:
        for k, ((c, s), m) in enumerate(ex.map(work, todo), 1):
            if k % 25 == 0 or k == len(todo) or c.duration_s > 300:
                progress(f"[{exp.key} {k}/{len(todo)} {time.monotonic() - t0:6.0f}s] {c.name()} seed {s}: "
                         f"run {m['wall_run_s']:.1f}s analyze {m['wall_analyze_s']:.1f}s")
    wall = time.monotonic() - t0
    meta = base / "experiment.json"
    old = json.loads(meta.read_text()) if meta.exists() else {}
    meta.write_text(json.dumps({"key": exp.key, "source": exp.source, "seeds": seeds,
                                "cells": [c.name() for c in exp.cells],
                                "wall_s": old.get("wall_s", []) + [wall]}, indent=1))
    return wall


# ---------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------

#: Representative scenarios kept in scenarios/thin-streams/ (file stem -> cell).
COMMITTED = {
    "thin10-greedy10-vanilla-pfifo": Cell(10, 10, "vanilla"),
    "thin10-greedy10-lt-mfr-pfifo": Cell(10, 10, "lt-mfr"),
    "thin10-greedy10-er-tlp-pfifo": Cell(10, 10, "er-tlp"),
    "thin10-greedy10-rdb-pfifo": Cell(10, 10, "rdb"),
    "thin10-greedy10-rdb2008-pfifo": Cell(10, 10, "rdb2008"),
    "thin10-greedy10-vanilla-codel": Cell(10, 10, "vanilla", "codel"),
    "thin30-greedy30-vanilla-pfifo": Cell(30, 30, "vanilla"),
    "thin10-greedy10-lt-mfr-pfifo20-itt200": Cell(10, 10, "lt-mfr", limit=20, itt_ms=200),
    "thin10-vthin10-greedy10-rdb-pfifo": Cell(10, 10, "rdb", vthin=10),
    "duration-2h05-thin40-greedy10-lt-mfr": Cell(40, 10, "lt-mfr", duration_s=7500),
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wirelab.repro.thin_streams", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="write one scenario")
    g.add_argument("--thin", type=int, default=10)
    g.add_argument("--greedy", type=int, default=10)
    g.add_argument("--config", default="vanilla", choices=list(CONFIGS))
    g.add_argument("--queue", default="pfifo", choices=list(QUEUES))
    g.add_argument("--limit", type=int, default=None, help="pfifo/bfifo limit in packets (default 63)")
    g.add_argument("--itt", type=int, default=ITT_MS, help="thin streams' inter-transmission time, ms")
    g.add_argument("--loss", type=float, default=0.0, help="random loss (%%) on the data direction")
    g.add_argument("--vthin", type=int, default=0, help="vanilla thin streams beside the tested ones")
    g.add_argument("--duration", type=int, default=300, help="seconds")
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("-o", "--output", default="-")
    c = sub.add_parser("commit-scenarios", help="write the representative scenarios (the checkout's are in "
                       "scenarios/thin-streams)")
    c.add_argument("--dir", type=Path, required=True)
    sub.add_parser("list", help="the experiments and their run counts")
    a_ = sub.add_parser("all", help="run every experiment (resumable) and write OUT/tables.md")
    add_out(a_, "thin_streams")
    a_.add_argument("--only", default="", help="comma-separated experiment keys (default: all but the nightly)")
    a_.add_argument("--seeds", default="", help="override the seeds, e.g. 1,2 (default: each experiment's)")
    a_.add_argument("--jobs", type=int, default=2)
    a_.add_argument("--img", default=None, help="figure directory (default OUT/img)")
    t = sub.add_parser("tables", help="tables and figures of finished runs")
    t.add_argument("dir", type=Path)
    t.add_argument("--img", default=None)
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-") and args[0] not in ("-h", "--help"):
        args.insert(0, "all")  # `python -m wirelab.repro.thin_streams --out DIR`, the repro convention
    a = ap.parse_args(args)
    exps = experiments()
    if a.cmd == "gen":
        txt = generate(Cell(a.thin, a.greedy, a.config, a.queue, a.limit, a.itt, a.loss, a.vthin, a.duration), a.seed)
        sys.stdout.write(txt) if a.output == "-" else Path(a.output).write_text(txt)
    elif a.cmd == "commit-scenarios":
        a.dir.mkdir(parents=True, exist_ok=True)
        for stem, cell in COMMITTED.items():
            (a.dir / f"{stem}.toml").write_text(generate(cell, name=stem))
    elif a.cmd == "list":
        for x in exps.values():
            print(f"{x.key:9} {len(x.cells):4} cells x {len(x.seeds)} seeds  {x.source}"
                  + ("  [nightly: only with --only]" if x.nightly else ""))
    elif a.cmd == "all":
        from .thin_streams_tables import write_tables

        stamp(a.out, "thin_streams", argv)
        keys = [k for k in a.only.split(",") if k] or [k for k, x in exps.items() if not x.nightly]
        bad = [k for k in keys if k not in exps]
        if bad:
            ap.error(f"unknown experiment(s) {', '.join(bad)}; one of {', '.join(exps)}")
        seeds = [int(s) for s in a.seeds.split(",") if s] or None
        for k in keys:
            run_experiment(exps[k], a.out, seeds, a.jobs)
        write_tables(a.out, Path(a.img) if a.img else a.out / "img")
    elif a.cmd == "tables":
        from .thin_streams_tables import write_tables

        write_tables(a.dir, Path(a.img) if a.img else a.dir / "img")
    return 0


if __name__ == "__main__":
    sys.exit(main())
