"""Type stub of the compiled extension ``wirelab._wirelab`` (crates/wirelab-py/src/lib.rs).

The public API is in ``wirelab`` (``run``, ``validate``, ``Result``); these are the
low-level entry points it wraps."""
from typing import Callable, Optional, Sequence

__version__: str

class WirelabError(Exception):
    """Base class of wirelab errors."""

class ScenarioError(ValueError):
    """A scenario is invalid; the message reads ``FILE:LINE:COL: key `KEY`: MESSAGE``
    (``wirelab.exceptions.translate`` turns it into ``wirelab.ScenarioError`` with the
    parts as attributes)."""

def run(
    path: str,
    out: str,
    seed: Optional[int] = None,
    overrides: Sequence[str] = ...,
    text: Optional[str] = None,
    progress: Optional[Callable[[float, float], object]] = None,
) -> str:
    """Runs the scenario file ``path`` (or the TOML ``text``, named ``path`` in errors) into
    the directory ``out``; returns the path of ``summary.json``. ``overrides`` are
    ``KEY=VALUE`` strings as ``wirelab run --set``; ``progress(simulated_s, total_s)`` is
    called about 200 times. Raises ``ScenarioError`` or ``OSError``."""

def live(path: str, out: str, seed: Optional[int] = None, overrides: Sequence[str] = ...,
         text: Optional[str] = None) -> str:
    """Runs the scenario live (TUN nodes, wall clock) into ``out``; returns the path of
    ``summary.json``. Raises ``PermissionError`` without CAP_NET_ADMIN, ``ScenarioError``,
    ``OSError``, or ``KeyboardInterrupt`` after a clean stop on Ctrl-C."""

def validate(path: str, overrides: Sequence[str] = ..., text: Optional[str] = None) -> None:
    """Parses and builds the scenario without running it; raises ``ScenarioError``."""

# The `wirelab` command's Rust subcommands (argparse is in ``wirelab.cli``); each returns
# the exit code and prints what the Rust binary prints.
def cli_run(scenario: str, out: str, seed: Optional[int] = None, set: Sequence[str] = ...,
            progress: bool = False, quiet: bool = False, max_memory: Optional[str] = None,
            max_capture: Optional[str] = None, max_events: Optional[int] = None,
            min_disk_free: Optional[str] = None) -> int: ...
def cli_validate(scenario: str, set: Sequence[str] = ...) -> int: ...
def cli_live(scenario: str, out: str, seed: Optional[int] = None, set: Sequence[str] = ...,
             quiet: bool = False) -> int: ...
def cli_shim_matches(results: str) -> int: ...
def cli_bench(flows: Sequence[int], rate: str, duration: float, json: Optional[str] = None,
              udp: bool = False, repeat: int = 1, mix: bool = False, cc: str = "cubic",
              qdisc: Optional[str] = None) -> int: ...
def cli_analyze(capture: str, receiver: Optional[str] = None, interval: str = "1s",
                classes: Sequence[str] = ..., out: Optional[str] = None, json: Optional[str] = None,
                strict: bool = False) -> int: ...

def packetdrill(
    paths: Sequence[str],
    profile: str = "linux-6",
    seed: int = 1,
    tolerance_usecs: Optional[int] = None,
    defines: Sequence[tuple[str, str]] = ...,
) -> list[dict]:
    """Runs packetdrill scripts against the TCP engine; one dict per script with ``path``,
    ``status`` (pass/fail/parse_error/unsupported), ``exit_code``, ``message``, ``notes``,
    ``printed`` (``wirelab.packetdrill`` wraps it)."""

def cli_packetdrill(
    scripts: Sequence[str],
    profile: str = "linux-6",
    seed: int = 1,
    tolerance_usecs: Optional[int] = None,
    defines: Sequence[str] = ...,
    verbose: bool = False,
    json: Optional[str] = None,
) -> int:
    """``wirelab packetdrill``; returns the exit code."""
