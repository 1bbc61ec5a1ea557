"""``wirelab sweep FILE``: run a sweep from the command line."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List

from ..exceptions import ScenarioError
from .spec import SweepError, load


def _seeds(text: str) -> List[int]:
    out: List[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part[1:]:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="wirelab sweep",
        description="Run a sweep (parameter grid x seeds) on local cores or a Ray cluster. "
                    "Rerunning the same command resumes: finished runs are kept and skipped.")
    ap.add_argument("file", type=Path, help="sweep file, or a scenario (with an optional [sweep] table)")
    ap.add_argument("--out", "-o", type=Path, default=None, help="sweep directory (default results/NAME)")
    ap.add_argument("--jobs", "-j", type=int, default=None, help="parallel runs (default: number of CPUs)")
    ap.add_argument("--backend", choices=["local", "ray"], default="local")
    ap.add_argument("--address", default=None, help="Ray cluster address (auto, ray://HOST:PORT); "
                                                   "default: start a local Ray instance")
    ap.add_argument("--force-new", action="store_true",
                    help="if --out holds a sweep of a different scenario, delete it and start anew")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--seeds", type=_seeds, default=None, help="seeds, e.g. 1,2,3 or 1-10")
    g.add_argument("--repetitions", "-r", type=int, default=None, help="run seeds 1..N")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="fixed override for every run (like wirelab run --set)")
    p = ap.add_mutually_exclusive_group()
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar even when stderr is not a terminal")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    ap.add_argument("--report", action="store_true", help="write DIR/report.html when done")
    ap.add_argument("--dry-run", action="store_true", help="list the runs and exit")
    return ap


def main(argv: List[str]) -> int:
    a = parser().parse_args(argv)
    from . import default_out, execute_sweep

    try:
        spec = load(a.file)
        if a.set:
            sets = dict(spec.base)
            for kv in a.set:
                if "=" not in kv:
                    raise SweepError(f"--set {kv!r}: expected KEY=VALUE")
                k, v = kv.split("=", 1)
                sets[k.strip()] = v
            spec.base = sets
        # the CLI's seeds replace the declared ones, whichever form the file used
        if a.seeds is not None:
            spec.seeds = list(a.seeds)
        elif a.repetitions is not None:
            if a.repetitions < 1:
                raise SweepError("--repetitions must be positive")
            spec.seeds = list(range(1, a.repetitions + 1))
        spec._check()
        runs = spec.runs()
        if a.dry_run:
            for r in runs:
                print(r.key, r.seed if r.seed is not None else "-", " ".join(r.overrides(spec.base)))
            print(f"{len(runs)} runs", file=sys.stderr)
            return 0
        out = a.out or default_out(spec)
        o = execute_sweep(spec, out, jobs=a.jobs, backend=a.backend, address=a.address,
                          force_new=a.force_new, progress=a.progress)
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except SweepError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted: finished runs are stored; rerun the same command to resume", file=sys.stderr)
        return 130
    print(f"sweep {spec.name}: {o.total} runs ({o.resumed} already done, {o.ran} run, "
          f"{len(o.failed)} failed) in {o.seconds:.1f} s -> {o.root}", file=sys.stderr)
    for p in o.tables:
        print(p)
    if a.report:
        from ..report import build_report
        print(build_report(o.root))
    if o.failed:
        print(f"error: {len(o.failed)} runs failed, see {o.root}/failed/ (rerun to retry)", file=sys.stderr)
        return 1
    return 0

