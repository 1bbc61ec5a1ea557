"""Where runs execute: in this process, on a local process pool, or on a Ray cluster.

Every backend calls :func:`execute` on a task and hands its result (the run's kept files
as bytes) back to the driver, which alone writes the store. Workers therefore need no
shared file system, and a worker that dies takes nothing but its own unfinished run.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
import time
import types
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional

from .spec import SweepError

Task = Dict[str, Any]
Outcome = Dict[str, Any]


def execute(task: Task) -> Outcome:
    """Runs one sweep run in a private temporary directory and returns
    ``{"key", "files": {relpath: bytes}, "wall_seconds", "host"}``, or ``{"key", "error",
    "scenario_error"}`` if the run failed. Never raises for a failed run."""
    from .. import _wirelab
    from ..exceptions import ScenarioError, translate

    t0 = time.monotonic()
    c0 = time.process_time()
    # inside the store's tmp/ when this machine has it (cleaned on resume), else system temp
    tmp_root = task.get("tmp_root")
    tmp_root = tmp_root if tmp_root and os.path.isdir(tmp_root) else None
    out = Path(tempfile.mkdtemp(prefix=f"work-{task['key']}-", dir=tmp_root))
    try:
        try:
            _wirelab.run(task["scenario_path"], str(out), task["seed"], list(task["overrides"]),
                         task["scenario_text"])
        except Exception as e:  # noqa: BLE001 - reported to the driver, which records it
            err = translate(e)
            return {"key": task["key"], "error": str(err), "scenario_error": isinstance(err, ScenarioError)}
        keep = {"summary.json"} | {f"{t}.csv" for t in task["tables"]}
        files: Dict[str, bytes] = {}
        for p in sorted(out.rglob("*")):
            if not p.is_file():
                continue
            rel = p.relative_to(out).as_posix()
            if rel in keep or (task.get("pcap") and rel.startswith("pcap/")):
                files[rel] = p.read_bytes()
        return {"key": task["key"], "files": files, "wall_seconds": time.monotonic() - t0,
                "cpu_seconds": time.process_time() - c0, "host": socket.gethostname()}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _worker_init(driver_pid: int) -> None:
    """Pool worker start-up: die with the driver, so a killed sweep leaves no orphans
    computing runs nobody will store. Workers are forked by the forkserver, not by the
    driver, so besides Linux's PR_SET_PDEATHSIG (parent = forkserver) a watchdog thread
    checks that the driver is still alive."""
    import signal
    import threading

    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort (not Linux)
        pass

    def watch() -> None:
        while True:
            try:
                os.kill(driver_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:
                pass
            time.sleep(0.2)

    threading.Thread(target=watch, name="wirelab-driver-watchdog", daemon=True).start()


class Backend:
    """Executes tasks, yielding outcomes as they finish (any order)."""

    name = "?"
    workers = 1

    def map_unordered(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class InlineBackend(Backend):
    """Runs tasks one after another in this process (``jobs=1``)."""

    name = "local"
    workers = 1

    def map_unordered(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        for t in tasks:
            yield execute(t)


@contextlib.contextmanager
def _workers_skip_main() -> Iterator[None]:
    """While worker processes start: a bare ``__main__`` in place of the driver's.

    A forkserver/spawn child re-imports the driver's main script (multiprocessing's
    ``spawn.prepare``) so that functions defined there can be unpickled. A sweep started
    at the top level of a plain script, without ``if __name__ == "__main__":``, would then
    start itself again in every worker (a ``BrokenProcessPool``, then "another sweep is
    running"). The workers run only :func:`execute` on plain data, never the script's
    code, so they are started as if from an interactive session: nothing to re-import."""
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


class ProcessBackend(Backend):
    """A pool of ``jobs`` worker processes on this machine."""

    name = "local"

    def __init__(self, jobs: int):
        import multiprocessing as mp

        self.workers = jobs
        # forkserver/spawn: no fork of a driver that may hold threads (progress bars)
        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        ctx = mp.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(["wirelab.sweep.backends", "wirelab._wirelab"])
        self._pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx,
                                         initializer=_worker_init, initargs=(os.getpid(),))

    def map_unordered(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        it = iter(tasks)
        inflight = set()
        window = 2 * self.workers

        def fill() -> None:
            while len(inflight) < window:
                try:
                    t = next(it)
                except StopIteration:
                    return
                with _workers_skip_main():  # the first submit starts the workers
                    inflight.add(self._pool.submit(execute, t))

        fill()
        while inflight:
            done, _ = wait(inflight, return_when=FIRST_COMPLETED)
            for f in done:
                inflight.discard(f)
                yield f.result()
            fill()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayBackend(Backend):
    """Ray tasks (one CPU each) on a cluster at ``address`` (``"auto"``, ``"ray://…"``),
    or on a local Ray instance with ``jobs`` CPUs when no address is given. If Ray is
    already initialised in this process, that instance is used as is.

    The nodes need the same wirelab installed; the scenario text travels with each task,
    and results come back to the driver, so no shared file system is needed."""

    name = "ray"

    def __init__(self, jobs: Optional[int], address: Optional[str] = None):
        try:
            import ray
        except ImportError:
            raise SweepError("the Ray backend needs Ray: pip install 'wirelab[ray]'") from None
        self.ray = ray
        self._owns = False
        if not ray.is_initialized():
            kw: Dict[str, Any] = dict(ignore_reinit_error=True, log_to_driver=False,
                                      include_dashboard=False, logging_level="ERROR")
            if address:
                kw["address"] = address
            elif jobs:
                kw["num_cpus"] = jobs
            ray.init(**kw)
            self._owns = True
        self.workers = int(ray.cluster_resources().get("CPU", jobs or 1))
        self._remote = ray.remote(num_cpus=1, max_retries=3)(execute)

    def map_unordered(self, tasks: Iterable[Task]) -> Iterator[Outcome]:
        ray = self.ray
        it = iter(tasks)
        inflight: List[Any] = []
        window = 2 * max(self.workers, 1)

        def fill() -> None:
            while len(inflight) < window:
                try:
                    t = next(it)
                except StopIteration:
                    return
                inflight.append(self._remote.remote(t))

        fill()
        while inflight:
            done, rest = ray.wait(inflight, num_returns=1)
            inflight[:] = rest
            for ref in done:
                yield ray.get(ref)
            fill()

    def close(self) -> None:
        if self._owns:
            self.ray.shutdown()


def make_backend(backend: str, jobs: Optional[int], address: Optional[str]) -> Backend:
    if backend == "local":
        if address:
            raise SweepError("--address is only for --backend ray")
        n = jobs or os.cpu_count() or 1
        return InlineBackend() if n == 1 else ProcessBackend(n)
    if backend == "ray":
        return RayBackend(jobs, address)
    raise SweepError(f"unknown backend {backend!r} (local or ray)")


Callback = Callable[[Outcome], None]
