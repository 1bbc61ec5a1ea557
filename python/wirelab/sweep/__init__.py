"""Sweeps: a grid of runs (parameters × seeds), executed in parallel and stored resumably.

>>> import wirelab.sweep
>>> df = wirelab.sweep.run("scenarios/udp-bottleneck.toml", out="results/udp-sweep", jobs=2,
...                        grid={"link.bottleneck.netem": ["rate 10mbit delay 20ms", "rate 5mbit delay 20ms"]},
...                        seeds=[1, 2, 3])
>>> df.groupby("link.bottleneck.netem")["goodput_bps"].mean()

The declaration, the store layout and the CLI (``wirelab sweep FILE --jobs N``) are
described in ``docs/sweeps.md``.
"""
from __future__ import annotations

import os
import time
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, List, Optional

import pandas as pd

from ..progress import Progress
from .backends import Backend, execute, make_backend
from .spec import DEFAULT_TABLES, TABLES, RunSpec, SpecLike, SweepError, SweepSpec, load
from .store import Store

__all__ = ["run", "load", "open_sweep", "execute_sweep", "SweepSpec", "RunSpec", "SweepResult",
           "SweepError", "Store", "TABLES", "DEFAULT_TABLES"]


class SweepResult:
    """A sweep directory's results as DataFrames (finished runs only, manifest order).

    Every table has the columns ``run`` (the run key), one per swept parameter (named by
    its dotted key) and ``seed`` in front of the run's own columns."""

    def __init__(self, root: os.PathLike | str):
        self.store = Store(root)
        self.root = self.store.root
        self.manifest = self.store.manifest()

    def _repr_html_(self) -> str:
        from ..report.notebook import sweep_html
        return sweep_html(self)

    def __repr__(self) -> str:
        return (f"<wirelab.sweep.SweepResult {self.name!r} {len(self.done)}/{len(self.planned)} runs "
                f"dir={str(self.root)!r}>")

    @property
    def name(self) -> str:
        return self.manifest["name"]

    @property
    def params(self) -> List[str]:
        """Swept parameters (dotted keys), in declaration order."""
        return list(self.manifest.get("params", []))

    @property
    def planned(self) -> List[Dict[str, Any]]:
        return list(self.manifest["runs"])

    @cached_property
    def done(self) -> List[str]:
        """Keys of finished runs, in manifest order."""
        have = self.store.done_keys()
        return [r["key"] for r in self.planned if r["key"] in have]

    @property
    def complete(self) -> bool:
        return len(self.done) == len(self.planned)

    def failures(self) -> List[Dict[str, Any]]:
        return self.store.failures()

    def table(self, name: str) -> pd.DataFrame:
        """``summary`` or any of :data:`TABLES`, concatenated over finished runs."""
        return self.store.table(name)

    def result(self, key: str):
        """One run's outputs as a :class:`wirelab.Result`."""
        from ..result import Result
        return Result(self.store.runs_dir / key)

    flows = property(lambda self: self.table("flows"), doc="Per-application totals of every run.")
    connections = property(lambda self: self.table("connections"), doc="One row per TCP connection of every run.")
    queues = property(lambda self: self.table("queues"), doc="Per-queue totals of every run.")
    links = property(lambda self: self.table("links"), doc="Per-link totals of every run.")
    summary = property(lambda self: self.table("summary"), doc="One row per run: fingerprint, events, times.")
    flow_timeseries = property(lambda self: self.table("flow_timeseries"))
    queue_timeseries = property(lambda self: self.table("queue_timeseries"))
    tcp_timeseries = property(lambda self: self.table("tcp_timeseries"), doc="Per-TCP-socket tcp_info samples.")
    sctp_timeseries = property(lambda self: self.table("sctp_timeseries"))
    sctp_path_timeseries = property(lambda self: self.table("sctp_path_timeseries"))
    queue_probe = property(lambda self: self.table("queue_probe"))


def open_sweep(root: os.PathLike | str) -> SweepResult:
    """Opens a sweep directory (finished or not) for reading."""
    return SweepResult(root)


def default_out(spec: SweepSpec) -> Path:
    return Path("results") / spec.name


def _validate(spec: SweepSpec, runs: List[RunSpec]) -> None:
    """Checks every distinct parameter combination with the engine's validator before
    any run starts, so a bad value fails fast with its key named."""
    from .. import _wirelab
    from ..exceptions import ScenarioError, translate

    seen = set()
    for r in runs:
        ov = tuple(r.overrides(spec.base))
        if ov in seen:
            continue
        seen.add(ov)
        try:
            _wirelab.validate(spec.scenario_path, list(ov), spec.scenario_text)
        except Exception as e:  # noqa: BLE001
            err = translate(e)
            if isinstance(err, ScenarioError):
                where = ", ".join(f"{k}={v!r}" for k, v in r.params.items()) or "fixed settings"
                raise ScenarioError(f"{err}\n  (in sweep run with {where})", file=err.file, line=err.line,
                                    col=err.col, key=err.key, reason=err.reason) from None
            raise err from None


def _task(spec: SweepSpec, r: RunSpec, tmp_root: Optional[Path] = None) -> Dict[str, Any]:
    return {"key": r.key, "tmp_root": str(tmp_root) if tmp_root else None,
            "scenario_path": spec.scenario_path, "scenario_text": spec.scenario_text,
            "seed": r.seed, "overrides": r.overrides(spec.base), "tables": list(spec.tables),
            "pcap": spec.pcap}


class SweepOutcome:
    """What :func:`execute_sweep` did."""

    def __init__(self, root: Path, total: int, resumed: int, ran: int, failed: List[Dict[str, Any]],
                 seconds: float, tables: List[Path]):
        self.root, self.total, self.resumed, self.ran = root, total, resumed, ran
        self.failed, self.seconds, self.tables = failed, seconds, tables

    def __repr__(self) -> str:
        return (f"<SweepOutcome {self.total} runs: {self.resumed} resumed, {self.ran} run, "
                f"{len(self.failed)} failed, {self.seconds:.1f}s, dir={str(self.root)!r}>")


def execute_sweep(spec: SweepSpec, out: Optional[os.PathLike | str] = None, *, jobs: Optional[int] = None,
                  backend: str = "local", address: Optional[str] = None, force_new: bool = False,
                  progress: Optional[bool] = None, log=None) -> SweepOutcome:
    """Runs the missing runs of ``spec`` into the store at ``out`` and writes the
    concatenated tables. Finished runs in ``out`` are kept and not run again."""
    t0 = time.monotonic()
    runs = spec.runs()
    root = Path(out) if out is not None else default_out(spec)
    store = Store.create_or_resume(root, spec, runs, force_new=force_new)
    try:
        done = store.done_keys()
        todo = [r for r in runs if r.key not in done]
        if todo:
            _validate(spec, todo)
        resumed = len(runs) - len(todo)
        byk = {r.key: r for r in todo}
        failed: List[Dict[str, Any]] = []
        ran = 0
        prog = Progress(total=len(runs), initial=resumed, desc=f"sweep {spec.name}", unit="run", enable=progress)
        try:
            if todo:
                be: Backend = make_backend(backend, jobs, address)
                try:
                    prog.set_postfix(f"{be.name} x{be.workers}")
                    for o in be.map_unordered(_task(spec, r, store.tmp_dir.resolve()) for r in todo):
                        r = byk[o["key"]]
                        if "error" in o:
                            store.record_failure(r, o["error"])
                            failed.append({"key": r.key, "params": r.params, "seed": r.seed, "error": o["error"]})
                            prog.write(f"run {r.key} failed ({r.params}, seed {r.seed}): {o['error']}")
                        else:
                            store.commit(r, o["files"], {"wall_seconds": o.get("wall_seconds"),
                                                         "cpu_seconds": o.get("cpu_seconds"),
                                                         "host": o.get("host"), "backend": be.name})
                            ran += 1
                        prog.update(1)
                        prog.set_postfix(f"{be.name} x{be.workers}" + (f", {len(failed)} failed" if failed else ""))
                finally:
                    be.close()
        finally:
            prog.close()
        tables = store.write_tables([*spec.tables, "summary"])
    finally:
        store.close()
    return SweepOutcome(root, len(runs), resumed, ran, failed, time.monotonic() - t0, tables)


def run(spec: SpecLike, out: Optional[os.PathLike | str] = None, *, jobs: Optional[int] = None,
        backend: str = "local", address: Optional[str] = None, force_new: bool = False,
        progress: Optional[bool] = None, table: str = "flows", **declare: Any) -> pd.DataFrame:
    """Runs a sweep and returns one concatenated table (``flows`` by default; any of
    :data:`TABLES` or ``summary``) with ``run``, the swept parameters and ``seed`` as
    columns.

    ``spec`` is a sweep file, a scenario file (with or without a ``[sweep]`` table), a dict
    with a sweep file's keys, or a :class:`SweepSpec`. Keywords ``grid``, ``zip``, ``seeds``,
    ``repetitions``, ``set``, ``output`` and ``name`` replace the declared ones. Results
    go to ``out`` (default ``results/NAME``); rerunning resumes. ``jobs`` defaults to the
    number of CPUs. ``backend="ray"`` runs on Ray (``address`` of a cluster, or a local
    instance). Raises :class:`SweepError` if runs failed (after storing the others),
    :class:`wirelab.ScenarioError` for an invalid scenario or parameter value.

    The DataFrame's ``attrs["sweep_dir"]`` names the directory; :func:`open_sweep` reads
    the other tables.
    """
    s = load(spec, **declare)
    o = execute_sweep(s, out, jobs=jobs, backend=backend, address=address, force_new=force_new,
                      progress=progress)
    if o.failed:
        first = o.failed[0]
        raise SweepError(f"{len(o.failed)} of {o.total} runs failed (see {o.root}/failed/; rerun to retry); "
                         f"first: {first['params']} seed {first['seed']}: {first['error']}")
    df = Store(o.root).table(table)
    df.attrs["sweep_dir"] = str(o.root)
    return df
