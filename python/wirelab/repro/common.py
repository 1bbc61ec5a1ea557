"""What every reproduction shares: where its outputs go and how they are stamped, running a
scenario in-process, scenario TOML, reading captures, figures and markdown tables.

Outputs go to ``--out DIR`` only (default ``./wirelab-repro-<study>`` in the working
directory, never into the checkout unless that is asked for). Each output directory gets a
``PROVENANCE.json``: the commit of the checkout the study ran from and the one command
that re-creates it, as the reports in ``docs/reproductions/`` quote them.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import tomli_w

from .. import _wirelab
from ..result import Result
from ..runner import run as _run

#: The checkout whose ``scenarios/`` the studies run: ``$WIRELAB_CHECKOUT``, else the one
#: this package was loaded from (python/wirelab/repro/common.py → root), else (an installed
#: package) the working directory.
_HERE = Path(__file__).resolve().parents[3]
CHECKOUT = Path(os.environ.get("WIRELAB_CHECKOUT") or (_HERE if (_HERE / "scenarios").is_dir() else Path.cwd()))


def scenario_file(rel: str) -> Path:
    """A bundled scenario, e.g. ``scenario_file("shim/scp.toml")``."""
    return CHECKOUT / "scenarios" / rel


# ---------------------------------------------------------------------------------------
# output directory and provenance
# ---------------------------------------------------------------------------------------

def default_out(study: str) -> Path:
    return Path.cwd() / f"wirelab-repro-{study}"


def add_out(ap: argparse.ArgumentParser, study: str) -> None:
    """``--out DIR`` (default ``./wirelab-repro-STUDY``)."""
    ap.add_argument("--out", type=Path, default=default_out(study),
                    help=f"output directory (default ./wirelab-repro-{study}; nothing is written elsewhere)")


def commit() -> str:
    """``git describe``-like stamp of the checkout: the commit, ``-dirty`` if it has
    uncommitted changes, or ``unknown`` outside a checkout."""
    try:
        head = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(CHECKOUT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def stamp(out: Path, study: str, argv: Sequence[str] | None) -> dict:
    """Creates ``out`` and writes ``out/PROVENANCE.json`` (commit, wirelab version, the
    command that re-creates the directory); returns it."""
    out.mkdir(parents=True, exist_ok=True)
    args = list(sys.argv[1:] if argv is None else argv)
    prov = {"study": study, "commit": commit(), "wirelab": _wirelab.__version__,
            "command": shlex.join(["python", "-m", f"wirelab.repro.{study}", *args])}
    (out / "PROVENANCE.json").write_text(json.dumps(prov, indent=1) + "\n")
    print(f"{study}: commit {prov['commit']}; re-create with: {prov['command']}", file=sys.stderr)
    return prov


# ---------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------

def toml(scenario: Mapping[str, Any], comment: str = "") -> str:
    """Scenario TOML text (``tomli_w``) with a leading comment block."""
    head = "".join(f"# {line}\n" for line in comment.splitlines())
    return head + tomli_w.dumps(dict(scenario))


def run(scenario: Mapping[str, Any] | Path, out: Path, seed: int | None = None,
        overrides: Sequence[str] = (), comment: str = "") -> Result:
    """Runs a scenario dict (written to ``out/scenario.toml`` first) or file in-process
    into ``out``; raises :class:`wirelab.ScenarioError` for an invalid one."""
    out.mkdir(parents=True, exist_ok=True)
    if isinstance(scenario, Mapping):
        path = out / "scenario.toml"
        path.write_text(toml(scenario, comment))
        scenario = path
    return _run(scenario, seed=seed, overrides=list(overrides), out=out, progress=False)


_STDOUT = threading.Lock()


def say(*args: Any) -> None:
    """print() that does not interleave with :func:`analyze`'s silenced stdout."""
    with _STDOUT:
        print(*args, flush=True)


@contextlib.contextmanager
def _silenced_stdout() -> Iterator[None]:
    """fd 1 to /dev/null (the Rust side prints its summary there)."""
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def analyze(capture: Path, out: Path, receiver: Path | None = None, classes: Sequence[str] = ()) -> None:
    """``wirelab analyze`` in-process: tables into ``out``, the summary into ``out.json``."""
    with _STDOUT, _silenced_stdout():
        code = _wirelab.cli_analyze(
            str(capture), receiver=str(receiver) if receiver else None, classes=list(classes),
            out=str(out), json=str(out) + ".json",
        )
    if code:
        raise RuntimeError(f"wirelab analyze {capture} failed (exit {code})")


# ---------------------------------------------------------------------------------------
# captures
# ---------------------------------------------------------------------------------------

def pcap_packets(path: Path) -> Iterator[tuple[float, bytes]]:
    """(time s, frame) of every record of a classic pcap (µs or ns, either byte order)."""
    data = path.read_bytes()
    if len(data) < 24:
        return
    magic = data[:4]
    endian, div = {b"\xd4\xc3\xb2\xa1": ("<", 1e6), b"\x4d\x3c\xb2\xa1": ("<", 1e9),
                   b"\xa1\xb2\xc3\xd4": (">", 1e6), b"\xa1\xb2\x3c\x4d": (">", 1e9)}.get(magic, (None, 0))
    if endian is None:
        raise ValueError(f"{path}: not a pcap file")
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _orig = struct.unpack_from(endian + "IIII", data, off)
        yield sec + frac / div, data[off + 16: off + 16 + incl]
        off += 16 + incl


def ipv4(frame: bytes) -> bytes | None:
    """The IPv4 packet of an Ethernet frame, or None."""
    return frame[14:] if len(frame) >= 34 and frame[12:14] == b"\x08\x00" else None


def sctp_chunks(ip: bytes) -> Iterator[tuple[int, int, int, int]]:
    """(type, flags, length, offset in ``ip``) of each chunk of an IPv4 SCTP packet."""
    c = (ip[0] & 0xF) * 4 + 12
    while c + 4 <= len(ip):
        typ, flags, ln = ip[c], ip[c + 1], struct.unpack_from(">H", ip, c + 2)[0]
        yield typ, flags, ln, c
        if ln < 4:
            break
        c += (ln + 3) & ~3


# ---------------------------------------------------------------------------------------
# figures and tables
# ---------------------------------------------------------------------------------------

def pyplot():
    """matplotlib.pyplot on the Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def label(ax, xlabel: str | None = None, ylabel: str | None = None, title: str | None = None,
          legend: dict | None = None) -> None:
    """Axis labels, title and (with its keyword arguments) the legend of one panel."""
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    if legend is not None:
        ax.legend(**legend)


def save(fig, path: Path, dpi: int | None = 72, max_bytes: int | None = None) -> Path:
    """tight_layout, savefig (``dpi=None``: the figure's own; at 56 dpi instead if the file
    would exceed ``max_bytes``), close."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    if max_bytes and path.stat().st_size > max_bytes:
        fig.savefig(path, dpi=56)
    pyplot().close(fig)
    return path


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A markdown table; ``align`` is one character per column (``l`` or ``r``)."""
    al = align or "l" * len(header)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in al) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)
