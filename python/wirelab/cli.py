"""The ``wirelab`` command: Rust subcommands plus the Python ones (``report``, ``sweep``)."""
from __future__ import annotations

import sys

from . import _wirelab

PY_COMMANDS = {"report", "sweep"}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PY_COMMANDS:
        if argv[0] == "report":
            from .report import main as report_main
            return report_main(argv[1:])
        if argv[0] == "sweep":
            from .sweep.cli import main as sweep_main
            return sweep_main(argv[1:])
    if argv and argv[0] in ("-h", "--help"):
        code = _wirelab.cli_main(["wirelab", *argv])
        print("\nPython subcommands:\n  report   Build an HTML report (plots) from a run's or a sweep's directory"
              "\n  sweep    Run a sweep (parameter grid x seeds) in parallel, resumably")
        return code
    return _wirelab.cli_main(["wirelab", *argv])


if __name__ == "__main__":
    sys.exit(main())
