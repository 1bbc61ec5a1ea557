"""Running scenarios from Python."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import tomli_w

from . import _wirelab
from .exceptions import translate
from .result import Result, have_arrow

ScenarioLike = Union[str, os.PathLike, Mapping[str, Any]]


def _overrides(overrides: Optional[Union[Mapping[str, Any], Sequence[str]]]) -> list[str]:
    if overrides is None:
        return []
    if isinstance(overrides, Mapping):
        out = []
        for k, v in overrides.items():
            if isinstance(v, bool):
                v = "true" if v else "false"
            elif isinstance(v, str):
                v = v  # plain strings are taken as strings by the override parser
            out.append(f"{k}={v}")
        return out
    return list(overrides)


def _source(scenario: ScenarioLike) -> tuple[Path, Optional[str]]:
    if hasattr(scenario, "to_dict"):  # wirelab.build scenarios: errors name the builder
        return Path(f"<{type(scenario).__name__}>"), tomli_w.dumps(scenario.to_dict())
    if isinstance(scenario, Mapping):
        return Path("<dict>"), tomli_w.dumps(dict(scenario))
    return Path(scenario), None


def run(
    scenario: ScenarioLike,
    seed: Optional[int] = None,
    overrides: Optional[Union[Mapping[str, Any], Sequence[str]]] = None,
    out: Optional[Union[str, os.PathLike]] = None,
    progress: Optional[bool] = None,
    force: bool = False,
) -> Result:
    """Runs a scenario (a TOML path, a dict with the same structure, or a
    :mod:`wirelab.build` scenario such as ``Dumbbell(...)``).

    ``overrides`` maps dotted keys to values (``{"scenario.duration": "20s"}``), exactly
    like ``wirelab run --set``. Outputs go to ``out``, which the run owns: the files of an
    earlier run there are replaced, and a non-empty directory no run wrote is refused
    unless ``force``. Without ``out`` they go to a temporary directory that the returned
    :class:`Result` owns: it is removed when the Result is garbage-collected or Python
    exits (``res.save(path)`` keeps a copy). Raises :class:`wirelab.ScenarioError` for
    invalid scenarios. ``progress`` shows a bar with ETA over simulated seconds on stderr
    (default: when it is a terminal).
    """
    from .progress import Progress

    path, text = _source(scenario)
    owner = None
    if out is None:
        owner = tempfile.TemporaryDirectory(prefix="wirelab-")
        out_dir = Path(owner.name)
    else:
        out_dir = Path(out)
    bar: list = []

    def on_progress(t: float, total: float) -> None:
        if not bar:
            bar.append(Progress(total=round(total, 3), desc="run", unit="sim-s", enable=progress))
        bar[0].set(round(t, 3))

    # with pyarrow the tables come back as Arrow from memory; without it Result reads the CSVs
    arrow = have_arrow()
    try:
        r = _wirelab.run(str(path), str(out_dir), seed, _overrides(overrides), text,
                         on_progress if progress is not False else None, force, arrow)
    except Exception as e:  # noqa: BLE001 - re-raised as the public type
        if owner is not None:
            owner.cleanup()
        raise translate(e) from None
    finally:
        if bar:
            bar[0].close()
    summary, tables = r if arrow else (r, None)
    return Result(Path(summary).parent, _owner=owner, _tables=tables)


def live(
    scenario: ScenarioLike,
    seed: Optional[int] = None,
    overrides: Optional[Union[Mapping[str, Any], Sequence[str]]] = None,
    out: Optional[Union[str, os.PathLike]] = None,
) -> Result:
    """Runs a scenario live, against the wall clock (``wirelab live``; docs/live.md).

    Nodes of ``kind = "tun"`` are TUN interfaces in network namespaces: the machine's
    kernel sockets and real programs (the nodes' ``run``/``spawn`` commands) send through
    the simulated topology. Needs root or CAP_NET_ADMIN (:class:`PermissionError`
    otherwise). Ctrl-C ends the run cleanly (outputs written, namespaces removed) and then
    raises :class:`KeyboardInterrupt`. The result has the ``live`` section of
    ``summary.json`` (lag, TUN counters, commands) in ``Result.summary["live"]``.
    """
    path, text = _source(scenario)
    out_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="wirelab-live-"))
    try:
        summary = _wirelab.live(str(path), str(out_dir), seed, _overrides(overrides), text)
    except (KeyboardInterrupt, PermissionError, OSError):
        raise
    except Exception as e:  # noqa: BLE001 - re-raised as the public type
        raise translate(e) from None
    return Result(Path(summary).parent)


def validate(scenario: ScenarioLike, overrides=None) -> None:
    """Checks a scenario without running it; raises :class:`wirelab.ScenarioError`."""
    path, text = _source(scenario)
    try:
        _wirelab.validate(str(path), _overrides(overrides), text)
    except Exception as e:  # noqa: BLE001
        raise translate(e) from None
