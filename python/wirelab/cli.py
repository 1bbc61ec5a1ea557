"""The ``wirelab`` command.

Its subcommands and flags have one definition: clap's, in ``crates/wirelab-cli`` (shared
with the Rust binary ``cargo run -p wirelab-cli``). This module hands the arguments to it
(``_wirelab.cli_main``), except for the subcommands written in Python, listed in
:data:`PY_COMMANDS` (``report``, ``sweep``): clap declares them too, with their one-line
help, so ``wirelab`` and ``wirelab help`` list every command, and
``python/tests/test_cli.py`` checks that the two lists agree.

Adding a subcommand (docs/architecture.md, "The command line"): in Rust, one variant of
``Cmd`` and one match arm in ``crates/wirelab-cli/src/lib.rs``, nothing here; in Python,
its ``main(argv) -> int`` in :data:`PY_COMMANDS` plus the declaration in ``Cmd``.
"""
from __future__ import annotations

import sys
from typing import Callable, Dict, List


def _report(argv: List[str]) -> int:
    from .report import main
    return main(argv)


def _sweep(argv: List[str]) -> int:
    from .sweep.cli import main
    return main(argv)


#: Subcommands implemented in Python: name -> ``main(argv) -> exit code``.
PY_COMMANDS: Dict[str, Callable[[List[str]], int]] = {"report": _report, "sweep": _sweep}


def _python(name: str, argv: List[str]) -> int:
    try:
        return int(PY_COMMANDS[name](argv) or 0)
    except SystemExit as e:  # argparse: --help exits 0, bad arguments 2
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)


def main(argv: List[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PY_COMMANDS:
        return _python(argv[0], argv[1:])
    if len(argv) >= 2 and argv[0] == "help" and argv[1] in PY_COMMANDS:
        # `wirelab help sweep`: the Python command's own (argparse) help
        return _python(argv[1], ["--help"])
    from . import _wirelab
    sys.stdout.flush()
    sys.stderr.flush()
    return int(_wirelab.cli_main(["wirelab", *argv]))


if __name__ == "__main__":
    sys.exit(main())
