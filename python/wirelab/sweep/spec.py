"""Sweep declarations: a sweep file, a ``[sweep]`` table in a scenario, or a dict.

A sweep is a base scenario plus parameters, each a ``--set``-style dotted key with a list
of values. ``grid`` keys form a cross product, ``zip`` keys advance together (like
OMNeT++'s parallel iteration variables), and every combination runs once per seed.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

from ..exceptions import WirelabError

#: Tables a run writes that a sweep can keep (``summary`` is always kept).
TABLES = ("flows", "connections", "queues", "links", "flow_timeseries", "queue_timeseries", "tcp_timeseries",
          "sctp_timeseries", "sctp_path_timeseries", "queue_probe")
#: Kept by default: everything except the per-packet probe records.
DEFAULT_TABLES = ("flows", "connections", "queues", "links", "flow_timeseries", "queue_timeseries", "tcp_timeseries",
                  "sctp_timeseries", "sctp_path_timeseries")

SWEEP_KEYS = {"name", "scenario", "set", "grid", "zip", "seeds", "repetitions", "output"}
OUTPUT_KEYS = {"tables", "pcap"}


class SweepError(WirelabError):
    """A sweep declaration or a sweep directory is invalid."""


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep: parameter values and a seed (``None``: the scenario's seed)."""

    index: int
    key: str
    params: Dict[str, Any]
    seed: Optional[int]

    def overrides(self, base: Mapping[str, Any]) -> List[str]:
        """``--set`` strings for this run: the sweep's fixed ``set`` then the parameters."""
        return [format_override(k, v) for k, v in {**base, **self.params}.items()]


def format_value(v: Any) -> str:
    """A value as the ``--set`` parser reads it: strings raw, the rest as TOML."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple, dict)):
        # JSON arrays/objects of strings and numbers are valid TOML inline values,
        # except objects: those need `k = v` syntax.
        if isinstance(v, dict):
            return "{" + ", ".join(f"{_toml_key(str(k))} = {format_value_toml(x)}" for k, x in v.items()) + "}"
        return "[" + ", ".join(format_value_toml(x) for x in v) + "]"
    raise SweepError(f"unsupported parameter value {v!r} ({type(v).__name__})")


def format_value_toml(v: Any) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    return format_value(v)


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def _is_aot(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, Mapping) for x in v)


def scenario_to_toml(d: Mapping[str, Any]) -> str:
    """A scenario dict as TOML with ``[table]`` and ``[[array.of.tables]]`` headers (not
    inline tables), so ``--set``-style overrides such as ``app.NAME.rate`` can address it."""
    out: List[str] = []
    for k, v in d.items():
        if not isinstance(v, Mapping) and not _is_aot(v):
            out.append(f"{_toml_key(k)} = {format_value_toml(v)}")
    for k, v in d.items():
        tables = [v] if isinstance(v, Mapping) else (v if _is_aot(v) else [])
        for t in tables:
            out.append(f"\n[{_toml_key(k)}]" if isinstance(v, Mapping) else f"\n[[{_toml_key(k)}]]")
            out.extend(f"{_toml_key(str(kk))} = {format_value_toml(vv)}" for kk, vv in t.items())
    return "\n".join(out).lstrip("\n") + "\n"


def format_override(key: str, v: Any) -> str:
    return f"{key}={format_value(v)}"


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_\-\"'. ]+?)\s*\]\]?\s*(#.*)?$")


def strip_sweep_table(text: str) -> str:
    """Removes ``[sweep]`` and ``[sweep.*]`` tables from scenario TOML, keeping line numbers
    (blanked lines) so the engine's error positions still point into the file."""
    out, in_sweep = [], False
    for line in text.splitlines(keepends=True):
        m = _HEADER.match(line)
        if m:
            name = m.group(1).replace('"', "").replace("'", "").replace(" ", "")
            in_sweep = name == "sweep" or name.startswith("sweep.")
        out.append(("\n" if line.endswith("\n") else "") if in_sweep else line)
    return "".join(out)


@dataclass
class SweepSpec:
    """A declared sweep. ``runs()`` expands it into :class:`RunSpec` in a stable order:
    grid keys in declaration order (first key slowest), then zip groups, then seeds."""

    name: str
    scenario_path: str
    scenario_text: str
    base: Dict[str, Any] = field(default_factory=dict)
    grid: Dict[str, List[Any]] = field(default_factory=dict)
    zips: List[Dict[str, List[Any]]] = field(default_factory=list)
    seeds: List[Optional[int]] = field(default_factory=lambda: [None])
    tables: List[str] = field(default_factory=lambda: list(DEFAULT_TABLES))
    pcap: bool = False
    source: Optional[str] = None

    def __post_init__(self) -> None:
        self._check()

    # -- identity -------------------------------------------------------------------
    @property
    def scenario_sha256(self) -> str:
        """Hash of what every run shares: the parsed scenario (comments and layout do not
        count) and the fixed ``set`` overrides. Results of a different hash never mix."""
        try:
            parsed = tomllib.loads(self.scenario_text)
        except tomllib.TOMLDecodeError:
            parsed = {"__text__": self.scenario_text}
        return _sha(_canonical({"scenario": parsed, "set": {k: format_value(v) for k, v in self.base.items()}}))

    @property
    def param_names(self) -> List[str]:
        names = list(self.grid)
        for z in self.zips:
            names.extend(z)
        return names

    def run_key(self, params: Mapping[str, Any], seed: Optional[int]) -> str:
        """Stable key of a run: hash of (scenario hash, parameters, seed)."""
        p = {k: format_value(v) for k, v in params.items()}
        return _sha(_canonical({"scenario": self.scenario_sha256, "params": p, "seed": seed}))[:16]

    def runs(self) -> List[RunSpec]:
        grid_keys = list(self.grid)
        grid_combos = list(itertools.product(*(self.grid[k] for k in grid_keys)))
        zip_combos = [list(zip(*z.values())) for z in self.zips]
        out: List[RunSpec] = []
        sha = self.scenario_sha256
        for g in grid_combos:
            for zs in itertools.product(*zip_combos):
                params = dict(zip(grid_keys, g))
                for z, vals in zip(self.zips, zs):
                    params.update(zip(z.keys(), vals))
                for seed in self.seeds:
                    p = {k: format_value(v) for k, v in params.items()}
                    key = _sha(_canonical({"scenario": sha, "params": p, "seed": seed}))[:16]
                    out.append(RunSpec(len(out), key, dict(params), seed))
        return out

    # -- validation -----------------------------------------------------------------
    def _check(self) -> None:
        where = self.source or "sweep"
        seen = set(self.base)
        for k, vals in list(self.grid.items()) + [kv for z in self.zips for kv in z.items()]:
            if not isinstance(vals, list) or not vals:
                raise SweepError(f"{where}: parameter {k!r} needs a non-empty list of values")
            if k in seen:
                raise SweepError(f"{where}: parameter {k!r} is given more than once (set/grid/zip)")
            seen.add(k)
            formatted = [format_value(v) for v in vals]
            if len(set(formatted)) != len(formatted):
                raise SweepError(f"{where}: parameter {k!r} lists a value twice: {vals}")
        for z in self.zips:
            lens = {k: len(v) for k, v in z.items()}
            if len(set(lens.values())) > 1:
                raise SweepError(f"{where}: zip lists must have equal lengths, got {lens}")
        if not self.seeds:
            raise SweepError(f"{where}: seeds must not be empty")
        for s in self.seeds:
            if s is not None and (not isinstance(s, int) or isinstance(s, bool) or s < 0):
                raise SweepError(f"{where}: seeds must be non-negative integers, got {s!r}")
        if len(set(self.seeds)) != len(self.seeds):
            raise SweepError(f"{where}: seeds contain duplicates: {self.seeds}")
        for t in self.tables:
            if t not in TABLES:
                raise SweepError(f"{where}: unknown output table {t!r} (choose from {', '.join(TABLES)})")
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", self.name or ""):
            raise SweepError(f"{where}: sweep name {self.name!r} must be letters, digits, '_', '-', '.'")


SpecLike = Union[str, "os.PathLike[str]", Mapping[str, Any], SweepSpec]


def _seeds(d: Mapping[str, Any], where: str) -> List[Optional[int]]:
    if "seeds" in d and "repetitions" in d:
        raise SweepError(f"{where}: give either seeds or repetitions, not both")
    if "seeds" in d:
        s = d["seeds"]
        if not isinstance(s, list):
            raise SweepError(f"{where}: seeds must be a list of integers")
        return list(s)
    if "repetitions" in d:
        n = d["repetitions"]
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise SweepError(f"{where}: repetitions must be a positive integer, got {n!r}")
        return list(range(1, n + 1))
    return [None]


def _zips(z: Any, where: str) -> List[Dict[str, List[Any]]]:
    if z is None:
        return []
    if isinstance(z, Mapping):
        return [dict(z)] if z else []
    if isinstance(z, list) and all(isinstance(g, Mapping) for g in z):
        return [dict(g) for g in z if g]
    raise SweepError(f"{where}: zip must be a table of lists (or an array of such tables)")


def from_mapping(d: Mapping[str, Any], *, scenario_path: str, scenario_text: str,
                 default_name: str, where: str, source: Optional[str] = None) -> SweepSpec:
    """Builds a spec from a sweep table (the keys of a sweep file or of ``[sweep]``)."""
    unknown = set(d) - SWEEP_KEYS
    if unknown:
        raise SweepError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} "
                         f"(allowed: {', '.join(sorted(SWEEP_KEYS))})")
    out = d.get("output") or {}
    if not isinstance(out, Mapping) or set(out) - OUTPUT_KEYS:
        raise SweepError(f"{where}: [output] allows only {', '.join(sorted(OUTPUT_KEYS))}")
    for k in ("set", "grid"):
        if k in d and not isinstance(d[k], Mapping):
            raise SweepError(f"{where}: {k} must be a table of dotted keys")
    return SweepSpec(
        name=str(d.get("name") or default_name),
        scenario_path=scenario_path,
        scenario_text=scenario_text,
        base=dict(d.get("set") or {}),
        grid=dict(d.get("grid") or {}),
        zips=_zips(d.get("zip"), where),
        seeds=_seeds(d, where),
        tables=list(out.get("tables", DEFAULT_TABLES)),
        pcap=bool(out.get("pcap", False)),
        source=source,
    )


def _read_toml(path: Path) -> tuple[str, dict]:
    try:
        text = path.read_text()
    except OSError as e:
        raise SweepError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{path}: invalid TOML: {e}") from None


def load(spec: SpecLike, **extra: Any) -> SweepSpec:
    """Loads a sweep from a sweep file, a scenario file (its ``[sweep]`` table, if any), a
    dict with the keys of a sweep file, a scenario built in Python (:mod:`wirelab.build`),
    or returns a :class:`SweepSpec` as is.

    ``extra`` keys (``grid``, ``zip``, ``seeds``, ``repetitions``, ``set``, ``output``,
    ``name``) replace the declared ones, e.g. ``load("scenario.toml", seeds=[1, 2])``.
    """
    extra = {k: v for k, v in extra.items() if v is not None}
    if isinstance(spec, SweepSpec):
        if extra:
            raise SweepError("keyword overrides need a file or dict, not a SweepSpec")
        return spec
    if hasattr(spec, "to_dict"):  # wirelab.build.Dumbbell(...)
        spec = {"scenario": spec.to_dict()}
    if isinstance(spec, Mapping):
        d = _merge(spec, extra)
        sc = d.get("scenario")
        if isinstance(sc, Mapping):
            return from_mapping(d, scenario_path="<dict>", scenario_text=scenario_to_toml(sc),
                                default_name=str(sc.get("scenario", {}).get("name", "sweep")), where="sweep")
        if sc is None:
            raise SweepError("sweep: missing 'scenario' (a path or a scenario dict)")
        p = Path(sc)
        text, parsed = _read_toml(p)
        return from_mapping(d, scenario_path=str(p), scenario_text=strip_sweep_table(text),
                            default_name=_default_name(parsed, p), where="sweep")
    path = Path(spec)
    text, parsed = _read_toml(path)
    if isinstance(parsed.get("scenario"), str):
        # a sweep file: scenario path relative to the sweep file
        sc_path = Path(parsed["scenario"])
        if not sc_path.is_absolute():
            sc_path = path.parent / sc_path
        sc_text, sc_parsed = _read_toml(sc_path)
        if "sweep" in sc_parsed:
            raise SweepError(f"{path}: scenario {sc_path} has its own [sweep] table; run that file directly")
        d = _merge(parsed, extra)
        return from_mapping(d, scenario_path=str(sc_path), scenario_text=sc_text,
                            default_name=path.stem, where=str(path), source=str(path))
    if isinstance(parsed.get("scenario"), Mapping):
        sw = parsed.get("sweep", {})
        if not isinstance(sw, Mapping):
            raise SweepError(f"{path}: [sweep] must be a table")
        if "scenario" in sw:
            raise SweepError(f"{path}: [sweep] inside a scenario cannot name another scenario")
        d = _merge(sw, extra)
        return from_mapping(d, scenario_path=str(path), scenario_text=strip_sweep_table(text),
                            default_name=_default_name(parsed, path), where=f"{path} [sweep]", source=str(path))
    raise SweepError(f"{path}: neither a sweep file (top-level scenario = \"FILE\") nor a scenario "
                     f"([scenario] table, optionally with [sweep])")


def _merge(declared: Mapping[str, Any], extra: Mapping[str, Any]) -> Dict[str, Any]:
    """Declared keys replaced by ``extra``; seeds and repetitions replace each other."""
    d = dict(declared)
    if "seeds" in extra or "repetitions" in extra:
        d.pop("seeds", None)
        d.pop("repetitions", None)
    d.update(extra)
    return d


def _default_name(parsed: Mapping[str, Any], path: Path) -> str:
    name = parsed.get("scenario", {}).get("name") if isinstance(parsed.get("scenario"), Mapping) else None
    name = str(name or path.stem)
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
