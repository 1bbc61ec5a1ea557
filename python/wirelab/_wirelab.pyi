"""Type stub of the compiled extension ``wirelab._wirelab`` (crates/wirelab-py/src/lib.rs).

The public API is in ``wirelab`` (``run``, ``validate``, ``Result``); these are the
low-level entry points it wraps."""
from typing import Callable, List, Optional, Sequence, Tuple, Union

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
    force: bool = False,
    tables: bool = False,
) -> Union[str, Tuple[str, "RunTables"]]:
    """Runs the scenario file ``path`` (or the TOML ``text``, named ``path`` in errors) into
    the directory ``out``; returns the path of ``summary.json``. ``overrides`` are
    ``KEY=VALUE`` strings as ``wirelab run --set``; ``progress(simulated_s, total_s)`` is
    called about 1000 times. ``out`` is cleared of an earlier run's files; a non-empty
    directory no run wrote raises ``FileExistsError`` unless ``force``. Raises
    ``ScenarioError`` or ``OSError``. With ``tables``, returns ``(summary path,
    RunTables)``: the run's tables kept in memory for ``Result`` to take as Arrow."""

class ArrowTable:
    """One table as an Arrow record batch; any Arrow consumer reads it through the
    PyCapsule interface (``pyarrow.table(t)``, ``polars.DataFrame(t)``)."""

    columns: List[str]
    def __arrow_c_stream__(self, requested_schema: object = None) -> object: ...
    def __len__(self) -> int: ...

class RunTables:
    """The tables of an in-process run (``run(..., tables=True)``)."""

    def take(self, name: str) -> Optional[ArrowTable]:
        """Table ``name`` (see ``wirelab.result.TABLES``) as Arrow, its rows freed in Rust;
        ``None`` if the run wrote no rows for it or it was taken before."""

def analyze_tables(sender: str, receiver: Optional[str] = None) -> dict[str, str]:
    """``wirelab analyze`` of a sender capture (and a receiver capture) without printing:
    ``{"segments": CSV text, "flows": CSV text}``. Raises ``ValueError``."""

def live(path: str, out: str, seed: Optional[int] = None, overrides: Sequence[str] = ...,
         text: Optional[str] = None) -> str:
    """Runs the scenario live (TUN nodes, wall clock) into ``out``; returns the path of
    ``summary.json``. Raises ``PermissionError`` without CAP_NET_ADMIN, ``ScenarioError``,
    ``OSError``, or ``KeyboardInterrupt`` after a clean stop on Ctrl-C."""

def validate(path: str, overrides: Sequence[str] = ..., text: Optional[str] = None) -> None:
    """Parses and builds the scenario without running it; raises ``ScenarioError``."""

# The `wirelab` command: one definition (clap, crates/wirelab-cli) for both front ends.
def cli_main(argv: Sequence[str]) -> int:
    """Runs ``wirelab ARGV[1:]`` as the Rust binary would; returns the exit code."""
def cli_python_commands() -> list[tuple[str, str]]:
    """``(name, help)`` of the subcommands the Python package implements."""
def cli_commands() -> list[tuple[str, list[str]]]:
    """``(name, [--flag, ...])`` of every subcommand."""
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

