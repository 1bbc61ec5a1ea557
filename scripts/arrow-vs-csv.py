#!/usr/bin/env python3
"""Time and memory of getting a long run's tables into pandas: as Arrow from the
in-process run (``wirelab.run()`` with pyarrow) vs reading the CSV files back (without
pyarrow, and ``Result(dir)``). docs/performance.md, "Results to pandas", has the numbers.

Each mode runs in its own process (peak RSS = ru_maxrss of that process):

    python scripts/arrow-vs-csv.py --duration 300s      # the quickstart: 1 M probe rows
    python scripts/arrow-vs-csv.py --duration 3000s --set "measure.queue_probe=[]"

For each mode: the run's wall seconds, the seconds to load every table (all of
``wirelab.result.TABLES``), the tables' rows and CSV megabytes, RSS after the run and peak
RSS. The run writes into a temporary directory (removed).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(mode: str, scenario: str, duration: str, sets: list) -> dict:
    import wirelab
    import wirelab.runner
    from wirelab.result import TABLES

    if mode == "csv":
        wirelab.runner.have_arrow = lambda: False  # what a machine without pyarrow does
    with tempfile.TemporaryDirectory(prefix="wirelab-arrow-") as tmp:
        t0 = time.monotonic()
        res = wirelab.run(scenario, out=tmp, progress=False,
                          overrides=["scenario.duration=" + duration, "measure.capture=[]", *sets])
        run_s = time.monotonic() - t0
        rss_run = rss_mb()
        t1, c1 = time.monotonic(), time.process_time()
        frames = {t: getattr(res, t) for t in TABLES}
        load_s, load_cpu = time.monotonic() - t1, time.process_time() - c1
        rows = {t: len(df) for t, df in frames.items() if len(df)}
        csv_mb = {t: round((Path(tmp) / f"{t}.csv").stat().st_size / 1e6, 2) for t in rows}
        mem = {t: round(df.memory_usage(deep=True).sum() / 1e6, 1) for t, df in frames.items() if len(df)}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"mode": mode, "run_s": round(run_s, 2), "load_s": round(load_s, 3), "load_cpu_s": round(load_cpu, 3),
            "rss_after_run_mb": round(rss_run), "peak_rss_mb": round(peak), "rows": rows, "csv_mb": csv_mb,
            "frame_mb": mem, "used_arrow": mode == "arrow"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "quickstart.toml"))
    ap.add_argument("--duration", default="300s")
    ap.add_argument("--set", action="append", default=[], help="more KEY=VALUE overrides")
    ap.add_argument("--repeat", type=int, default=1, help="alternate the modes this many times")
    ap.add_argument("--child", choices=["arrow", "csv"], help=argparse.SUPPRESS)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a.scenario, a.duration, a.set)))
        return 0
    out = []
    for _ in range(a.repeat):
        for mode in ["csv", "arrow"]:
            sets = [x for s in a.set for x in ("--set", s)]
            p = subprocess.run([sys.executable, __file__, "--child", mode, "--scenario", a.scenario, "--duration", a.duration, *sets],
                               capture_output=True, text=True, check=True)
            r = json.loads(p.stdout.strip().splitlines()[-1])
            r["load1"] = round(os.getloadavg()[0], 2)
            out.append(r)
            print(json.dumps(r), file=sys.stderr)
    print(f"| mode | run (s) | load tables (s wall / CPU) | RSS after run (MB) | peak RSS (MB) | load avg 1 min |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for r in out:
        print(f"| {r['mode']} | {r['run_s']:.1f} | {r['load_s']:.2f} / {r['load_cpu_s']:.2f} | {r['rss_after_run_mb']} "
              f"| {r['peak_rss_mb']} | {r['load1']:.2f} |")
    big = out[0]
    print("tables (rows, CSV MB):", {t: (big["rows"][t], big["csv_mb"][t]) for t in big["rows"]})
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
