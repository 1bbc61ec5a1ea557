"""The results store of a sweep: one directory, a manifest, one immutable run per key.

Layout::

    DIR/
      manifest.json     sweep name, scenario hash, fixed overrides, parameters, the planned runs
      scenario.toml     the scenario text every run used
      .lock             flock()ed while a sweep runs here (one writer at a time)
      runs/KEY/         a finished run: run.json (key, params, seed), summary.json, kept tables
      tmp/              runs being written; a leftover here is an unfinished run
      failed/KEY.json   the last error of a failed run (retried on resume)
      flows.parquet ... concatenated tables with the parameters as columns (.csv without pyarrow)

A run becomes visible only by ``rename(tmp/…, runs/KEY)`` after its files are written and
fsync()ed, so a sweep killed at any moment leaves every run either complete or absent.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional

import pandas as pd

from .spec import TABLES, RunSpec, SweepError, SweepSpec, format_value

FORMAT = 1
MANIFEST = "manifest.json"


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Writes ``path`` so that readers see the old or the new content, never a part."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _version() -> str:
    try:
        from .. import __version__
        return str(__version__)
    except Exception:  # noqa: BLE001 - version is informational
        return "unknown"


def parquet_available() -> bool:
    """Whether pyarrow is installed (tables are written as Parquet, else CSV)."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


class Store:
    """A sweep directory. Use :meth:`create_or_resume` to start or continue a sweep."""

    def __init__(self, root: os.PathLike | str):
        self.root = Path(root)
        self._lock_fd: Optional[int] = None

    # -- paths ----------------------------------------------------------------------
    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def tmp_dir(self) -> Path:
        return self.root / "tmp"

    @property
    def failed_dir(self) -> Path:
        return self.root / "failed"

    def manifest(self) -> Dict[str, Any]:
        p = self.root / MANIFEST
        try:
            return json.loads(p.read_text())
        except FileNotFoundError:
            raise SweepError(f"{self.root}: not a sweep directory (no {MANIFEST})") from None

    def exists(self) -> bool:
        return (self.root / MANIFEST).exists()

    # -- opening --------------------------------------------------------------------
    @classmethod
    def create_or_resume(cls, root: os.PathLike | str, spec: SweepSpec, runs: List[RunSpec],
                         force_new: bool = False) -> "Store":
        """Opens ``root`` for ``spec``: creates it, or resumes it if it holds the same
        scenario. A different scenario is an error unless ``force_new`` (which deletes the
        old sweep's results). Takes the directory's lock; call :meth:`close` when done."""
        st = cls(root)
        root = st.root
        if root.exists() and not root.is_dir():
            raise SweepError(f"{root}: exists and is not a directory")
        if root.exists() and any(root.iterdir()) and not st.exists():
            raise SweepError(f"{root}: exists, is not empty and is not a sweep directory; choose another --out")
        root.mkdir(parents=True, exist_ok=True)
        st._lock()
        try:
            if st.exists():
                old = st.manifest()
                if old.get("scenario", {}).get("sha256") != spec.scenario_sha256:
                    if not force_new:
                        raise SweepError(
                            f"{root} holds results of a different scenario "
                            f"(stored {old.get('scenario', {}).get('sha256', '?')[:12]}, "
                            f"now {spec.scenario_sha256[:12]}: the scenario file or the sweep's fixed "
                            f"'set' overrides changed). Use a new output directory, or --force-new "
                            f"(force_new=True) to delete the old results.")
                    st._wipe()
            for d in (st.runs_dir, st.tmp_dir, st.failed_dir):
                d.mkdir(exist_ok=True)
            st.clean_tmp()
            st._write_manifest(spec, runs)
            atomic_write(root / "scenario.toml", spec.scenario_text.encode("utf-8"))
        except BaseException:
            st.close()
            raise
        return st

    def _lock(self) -> None:
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EAGAIN, errno.EACCES):
                raise SweepError(f"{self.root}: another sweep is running in this directory") from None
            raise
        self._lock_fd = fd

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def _wipe(self) -> None:
        for name in os.listdir(self.root):
            if name == ".lock":
                continue
            p = self.root / name
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()

    def _write_manifest(self, spec: SweepSpec, runs: List[RunSpec]) -> None:
        created = None
        if self.exists():
            created = self.manifest().get("created")
        m = {
            "format": FORMAT,
            "name": spec.name,
            "created": created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "wirelab_version": _version(),
            "source": spec.source,
            "scenario": {"path": spec.scenario_path, "sha256": spec.scenario_sha256},
            "set": {k: format_value(v) for k, v in spec.base.items()},
            "params": spec.param_names,
            "grid": spec.grid,
            "zip": spec.zips,
            "seeds": spec.seeds,
            "output": {"tables": spec.tables, "pcap": spec.pcap},
            "runs": [{"index": r.index, "key": r.key, "params": r.params, "seed": r.seed} for r in runs],
        }
        atomic_write(self.root / MANIFEST, (json.dumps(m, indent=1, default=str) + "\n").encode("utf-8"))

    # -- runs -----------------------------------------------------------------------
    def clean_tmp(self) -> None:
        """Removes unfinished runs and half-written tables left by a killed sweep."""
        for p in self.root.glob(".*.tmp"):
            p.unlink(missing_ok=True)
        if self.tmp_dir.exists():
            for p in self.tmp_dir.iterdir():
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)

    def is_done(self, key: str) -> bool:
        return (self.runs_dir / key / "run.json").exists()

    def done_keys(self) -> set:
        if not self.runs_dir.exists():
            return set()
        return {p.name for p in self.runs_dir.iterdir() if (p / "run.json").exists()}

    def commit(self, run: RunSpec, files: Mapping[str, bytes], meta: Mapping[str, Any]) -> bool:
        """Stores a finished run atomically. Returns False (and keeps the stored one) if the
        key is already stored: a run is never overwritten."""
        final = self.runs_dir / run.key
        if final.exists():
            if (final / "run.json").exists():
                return False
            # not written by a sweep (ours appear whole, by rename): set it aside
            shutil.rmtree(final, ignore_errors=True)
        tmp = self.tmp_dir / f"{run.key}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True)
        try:
            for rel, data in sorted(files.items()):
                p = tmp / rel
                if Path(rel).is_absolute() or ".." in Path(rel).parts:
                    raise SweepError(f"run {run.key}: refusing to write outside the run directory: {rel}")
                p.parent.mkdir(parents=True, exist_ok=True)
                with open(p, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            info = {"key": run.key, "index": run.index, "params": run.params, "seed": run.seed, **meta}
            with open(tmp / "run.json", "wb") as f:  # written last: marks the run complete
                f.write((json.dumps(info, indent=1, default=str) + "\n").encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
            for p in tmp.rglob("*"):
                if p.is_file():
                    p.chmod(0o444)
            _fsync_dir(tmp)
            try:
                os.rename(tmp, final)
            except OSError as e:
                if e.errno in (errno.EEXIST, errno.ENOTEMPTY):
                    return False
                raise
            _fsync_dir(self.runs_dir)
            (self.failed_dir / f"{run.key}.json").unlink(missing_ok=True)
            return True
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def record_failure(self, run: RunSpec, error: str) -> None:
        self.failed_dir.mkdir(exist_ok=True)
        info = {"key": run.key, "index": run.index, "params": run.params, "seed": run.seed, "error": error}
        atomic_write(self.failed_dir / f"{run.key}.json", (json.dumps(info, indent=1, default=str) + "\n").encode())

    def failures(self) -> List[Dict[str, Any]]:
        if not self.failed_dir.exists():
            return []
        return [json.loads(p.read_text()) for p in sorted(self.failed_dir.glob("*.json"))]

    # -- tables ---------------------------------------------------------------------
    def planned(self) -> List[Dict[str, Any]]:
        return list(self.manifest()["runs"])

    def table(self, name: str, only_done: bool = True) -> pd.DataFrame:
        """One table concatenated over the planned runs (manifest order), with columns
        ``run`` (key), the parameters and ``seed`` in front. ``summary`` has one row per run."""
        m = self.manifest()
        params = list(m.get("params", []))
        frames = []
        for r in m["runs"]:
            d = self.runs_dir / r["key"]
            info_p = d / "run.json"
            if not info_p.exists():
                if only_done:
                    continue
                raise SweepError(f"run {r['key']} is not finished")
            info = json.loads(info_p.read_text())
            summary = json.loads((d / "summary.json").read_text())
            if name == "summary":
                df = pd.DataFrame([{
                    "sim_seconds": summary.get("sim_seconds"), "events": summary.get("events"),
                    "packets": summary.get("packets"), "fingerprint": summary.get("fingerprint"),
                    "wall_seconds": summary.get("wall_seconds"),
                }])
            else:
                if name not in TABLES:
                    raise SweepError(f"unknown table {name!r}")
                p = d / f"{name}.csv"
                if not p.exists() or p.stat().st_size == 0:
                    continue
                df = pd.read_csv(p)
            front = {"run": info["key"]}
            for k in params:
                front[k] = info["params"].get(k)
            front["seed"] = summary.get("seed", info.get("seed"))
            for i, (k, v) in enumerate(front.items()):
                df.insert(i, k, [v] * len(df))
            frames.append(df)
        if not frames:
            return pd.DataFrame(columns=["run", *params, "seed"])
        out = pd.concat(frames, ignore_index=True)
        for k in params:  # a column of mixed types cannot go to Parquet; make it text
            if out[k].map(type).nunique() > 1:
                out[k] = out[k].map(format_value)
        return out

    def write_tables(self, names: Iterable[str]) -> List[Path]:
        """Writes the concatenated tables that have rows beside the manifest: Parquet if
        pyarrow is installed, CSV otherwise. Returns the paths."""
        ext = "parquet" if parquet_available() else "csv"
        written = []
        for name in names:
            df = self.table(name)
            p = self.root / f"{name}.{ext}"
            if len(df) == 0 and name != "summary":  # e.g. sctp_timeseries of a TCP-only sweep
                for e in ("parquet", "csv"):
                    (self.root / f"{name}.{e}").unlink(missing_ok=True)
                continue
            tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex[:8]}.tmp")
            if ext == "parquet":
                df.to_parquet(tmp, index=False)
            else:
                df.to_csv(tmp, index=False)
            os.replace(tmp, p)
            other = self.root / f"{name}.{'csv' if ext == 'parquet' else 'parquet'}"
            other.unlink(missing_ok=True)
            written.append(p)
        return written
