#!/usr/bin/env python3
"""Scaling of a 200-run sweep on 1 and 2 workers (docs/sweeps.md, "Scaling").

The quickstart scenario (8 TCP connections through two 10 Mbit/s bottlenecks) without
captures, over 4 bottleneck settings x 50 seeds = 200 runs, run as a sweep with each
backend and worker count given. For each: wall seconds (for Ray, without starting it),
the sum of the runs' own CPU seconds (their run.json), the driver's CPU seconds,
the 1-minute load average before and after, and how busy the whole machine was meanwhile
(/proc/stat), so a measurement taken while others compile says so.

    python scripts/sweep-scaling.py                       # local backend, 1 and 2 workers
    python scripts/sweep-scaling.py --backends local ray  # and a local Ray with 1 and 2 CPUs
    python scripts/sweep-scaling.py --runs 20 --duration 5s   # a quick look

Prints a Markdown table (the one in docs/sweeps.md); --json FILE keeps the numbers. The
sweep directories go to a temporary directory and are removed.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NETEMS = ["rate 10mbit delay 20ms", "rate 10mbit delay 40ms", "rate 20mbit delay 20ms", "rate 20mbit delay 40ms"]


def cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all cores since boot."""
    f = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    v = [int(x) for x in f]
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return sum(v) - idle, sum(v)


def rusage_cpu() -> float:
    """CPU seconds of this process (the driver; pool workers are the forkserver's
    children, not ours, so their CPU comes from the runs' own run.json)."""
    s = resource.getrusage(resource.RUSAGE_SELF)
    return s.ru_utime + s.ru_stime


def measure(backend: str, jobs: int, runs: int, duration: str, scratch: Path) -> dict:
    import wirelab.sweep as ws

    out = scratch / f"{backend}-{jobs}"
    seeds = list(range(1, runs // len(NETEMS) + 1))
    load0 = os.getloadavg()[0]
    b0, t0_jiffies = cpu_times()
    c0, t0 = rusage_cpu(), time.monotonic()
    if backend == "ray":
        import ray
        ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        r0 = time.monotonic()
    df = ws.run(str(ROOT / "scenarios" / "quickstart.toml"), out=str(out), jobs=jobs, backend=backend,
                grid={"link.fifo.netem": NETEMS}, seeds=seeds, progress=False,
                set={"scenario.duration": duration, "measure.capture": [], "measure.queue_probe": []},
                output={"tables": ["flows", "connections"]}, table="connections")
    wall = time.monotonic() - t0
    ray_start = None
    if backend == "ray":
        import ray
        ray_start = r0 - t0
        ray.shutdown()  # its workers' CPU is not ours to count: see cpu_runs
    cpu = rusage_cpu() - c0
    b1, t1_jiffies = cpu_times()
    load1 = os.getloadavg()[0]
    ncpu = os.cpu_count() or 1
    busy_cores = (b1 - b0) / max(t1_jiffies - t0_jiffies, 1) * ncpu
    run_json = [json.loads(p.read_text()) for p in (out / "runs").glob("*/run.json")]
    cpu_runs = sum(r.get("cpu_seconds", 0.0) for r in run_json)
    wall_runs = sum(r.get("wall_seconds", 0.0) for r in run_json)
    n = len(run_json)
    assert n == len(NETEMS) * len(seeds), f"{n} runs stored"
    assert df["run"].nunique() == n
    shutil.rmtree(out, ignore_errors=True)
    return {"backend": backend, "workers": jobs, "runs": n, "duration": duration, "wall_s": round(wall, 2),
            "sweep_wall_s": round(wall - (ray_start or 0.0), 2),
            "driver_cpu_s": round(cpu, 2), "cpu_runs_s": round(cpu_runs, 2),
            "wall_per_run_s": round(wall_runs / max(n, 1), 3), "runs_per_s": round(n / (wall - (ray_start or 0.0)), 2),
            "load1_before": round(load0, 2), "load1_after": round(load1, 2),
            "machine_busy_cores": round(busy_cores, 2), "ray_start_s": None if ray_start is None else round(ray_start, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=200, help="runs per sweep (a multiple of 4; default 200)")
    ap.add_argument("--duration", default="60s", help="simulated time per run (default 60s)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--backends", nargs="+", default=["local"], choices=["local", "ray"])
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="wirelab-sweep-scaling-") as tmp:
        for backend in a.backends:
            for j in a.workers:
                r = measure(backend, j, a.runs, a.duration, Path(tmp))
                rows.append(r)
                print(json.dumps(r), file=sys.stderr)
    base = {r["backend"]: r["sweep_wall_s"] for r in rows if r["workers"] == min(a.workers)}
    print("| backend | workers | runs | wall (s) | speed-up | runs/s | CPU of the runs (s) | CPU of the driver (s) "
          "| load avg 1 min before → after | machine busy (cores of %d) |" % (os.cpu_count() or 1))
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for r in rows:
        wall = f"{r['sweep_wall_s']:.1f}" + (f" (+{r['ray_start_s']:.1f} Ray start)" if r["ray_start_s"] else "")
        print(f"| {r['backend']} | {r['workers']} | {r['runs']} | {wall} | {base[r['backend']] / r['sweep_wall_s']:.2f}× "
              f"| {r['runs_per_s']:.2f} | {r['cpu_runs_s']:.1f} | {r['driver_cpu_s']:.1f} | {r['load1_before']:.2f} → {r['load1_after']:.2f} "
              f"| {r['machine_busy_cores']:.2f} |")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
