"""The ``wirelab`` command: the Rust subcommands plus the Python ones (``report``, ``sweep``).

Arguments are parsed here with argparse, with the flags of the Rust binary's clap front end
(``crates/wirelab-cli``); the commands themselves are the Rust crate ``wirelab-run``'s,
reached through the extension's ``cli_*`` functions, so both front ends run the same code
and print the same output. A new Rust subcommand is one ``add_parser`` block here and one
``cli_*`` function in ``crates/wirelab-py``.
"""
from __future__ import annotations

import argparse
import sys

from . import _wirelab

PY_COMMANDS = {"report", "sweep"}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="wirelab",
        description="wirelab: a deterministic, wire-accurate packet-level lab for TCP and SCTP research.",
        epilog="Python subcommands:\n  report   Build an HTML report (plots) from a run's or a sweep's directory"
               "\n  sweep    Run a sweep (parameter grid x seeds) in parallel, resumably",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-V", "--version", action="version", version=f"wirelab {_wirelab.__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", required=True)

    r = sub.add_parser("run", help="Run a scenario and write its results to --out.")
    r.add_argument("scenario", help="Scenario TOML file.")
    r.add_argument("-o", "--out", required=True, help="Output directory (created).")
    r.add_argument("--seed", type=int, help="Run seed (overrides scenario.seed).")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help='Override a scenario key: --set scenario.duration=20s --set link.bn.netem="rate 5mbit".')
    r.add_argument("--progress", action="store_true", help="Show a progress bar even when stderr is not a terminal.")
    r.add_argument("-q", "--quiet", action="store_true", help="Print nothing but errors.")
    r.add_argument("--max-memory", metavar="SIZE",
                   help="Stop (exit 3, partial results written) when the process's resident memory reaches "
                        "this (tc size units, e.g. 8GB; `none`). Default: half of the memory available at the start.")
    r.add_argument("--max-capture", metavar="SIZE", help="Stop when the capture files reach this size in total (default 4GB; `none`).")
    r.add_argument("--max-events", type=int, metavar="N", help="Stop after this many simulator events (default: no limit).")
    r.add_argument("--min-disk-free", metavar="SIZE",
                   help="Stop when free space on --out's filesystem falls below this while capturing (default 1GB).")
    r.set_defaults(fn=lambda a: _wirelab.cli_run(a.scenario, a.out, a.seed, a.set, a.progress, a.quiet,
                                                 a.max_memory, a.max_capture, a.max_events, a.min_disk_free))

    lv = sub.add_parser("live", help="Run a scenario against the wall clock with TUN nodes (root or CAP_NET_ADMIN; docs/live.md).")
    lv.add_argument("scenario", help="Scenario TOML file.")
    lv.add_argument("-o", "--out", required=True, help="Output directory (created).")
    lv.add_argument("--seed", type=int, help="Run seed (overrides scenario.seed).")
    lv.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="Overrides, as for `run`.")
    lv.add_argument("-q", "--quiet", action="store_true", help="Print nothing but errors and warnings.")
    lv.set_defaults(fn=lambda a: _wirelab.cli_live(a.scenario, a.out, a.seed, a.set, a.quiet))

    v = sub.add_parser("validate", help="Check a scenario without running it.")
    v.add_argument("scenario", help="Scenario TOML file.")
    v.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="Overrides, as for `run`.")
    v.set_defaults(fn=lambda a: _wirelab.cli_validate(a.scenario, a.set))

    an = sub.add_parser("analyze", help="Analyse a TCP capture (wirelab's or tcpdump's): ACK latency, "
                        "retransmissions, loss, goodput per interval, Jain's index (docs/analyze.md).")
    an.add_argument("capture", metavar="CAPTURE", help="Capture taken at (or near) the data senders: pcap or pcapng.")
    an.add_argument("--receiver", metavar="CAPTURE", help="Capture taken at the receivers, on the same clock.")
    an.add_argument("--interval", default="1s", metavar="TIME", help="Interval for throughput, goodput and fairness.")
    an.add_argument("--class", dest="classes", action="append", default=[], metavar="NAME=RULE",
                    help="A flow class, e.g. thin=dport:5000-5100 (repeatable; first match wins).")
    an.add_argument("--out", metavar="DIR", help="Directory for the CSV tables and summary.json.")
    an.add_argument("--json", metavar="FILE", help="Also write the JSON summary here (`-` for stdout).")
    an.add_argument("--strict", action="store_true", help="Fail on the first undecodable frame or a capture cut short.")
    an.set_defaults(fn=lambda a: _wirelab.cli_analyze(a.capture, a.receiver, a.interval, a.classes, a.out, a.json, a.strict))

    sm = sub.add_parser("shim-matches", help="Show which shim rule matched which connection in a finished run.")
    sm.add_argument("results", help="Output directory of `wirelab run`.")
    sm.set_defaults(fn=lambda a: _wirelab.cli_shim_matches(a.results))

    pd = sub.add_parser("packetdrill", help="Run packetdrill scripts against wirelab's TCP (docs/packetdrill.md).")
    pd.add_argument("scripts", nargs="+", help="Scripts to run (.pkt files).")
    pd.add_argument("--profile", default="linux-6", help="TCP profile of the stack under test.")
    pd.add_argument("--seed", type=int, default=1, help="Seed for ISNs, timestamp offsets and ports.")
    pd.add_argument("--tolerance_usecs", type=int, help="Override every script's --tolerance_usecs.")
    pd.add_argument("-D", "--define", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                    help="-D NAME=VALUE symbol definitions (as packetdrill's -D).")
    pd.add_argument("-v", "--verbose", action="store_true",
                    help="Print notes, print() output and every packet injected and sent (as packetdrill -v).")
    pd.add_argument("--json", help="Write one JSON object per script (path, status, exit code, message) here.")
    pd.set_defaults(fn=lambda a: _wirelab.cli_packetdrill(a.scripts, a.profile, a.seed, a.tolerance_usecs,
                                                         a.defines, a.verbose, a.json))

    b = sub.add_parser("bench", help="Run the dumbbell benchmark and print events/s, simulated/wall ratio, packets/s.")
    b.add_argument("--flows", type=lambda s: [int(x) for x in s.split(",")], default=[2, 20, 200, 2000],
                   help="Numbers of sender/receiver pairs (comma-separated).")
    b.add_argument("--rate", default="10mbit", help="Bottleneck rate.")
    b.add_argument("--duration", type=float, default=10.0, help="Simulated seconds per case.")
    b.add_argument("--json", help="Write the table as JSON here too.")
    b.add_argument("--udp", action="store_true", help="UDP CBR sources instead of TCP bulk flows.")
    b.add_argument("--repeat", type=int, default=1, help="Runs per case; the one with the median CPU time is reported.")
    b.add_argument("--mix", action="store_true",
                   help="Web-like workload instead of the dumbbell: --flows short flows with heavy-tailed sizes "
                        "plus 4 long flows on a 5-router parking lot.")
    b.add_argument("--cc", default="cubic", help="Congestion control of every TCP host (reno, cubic, bbr, dctcp, vegas).")
    b.add_argument("--qdisc", help="Bottleneck qdisc in tc syntax (default: a one-BDP pfifo; "
                                    "for dctcp an ECN-marking RED at K = max(20, BDP/7) packets).")
    b.set_defaults(fn=lambda a: _wirelab.cli_bench(a.flows, a.rate, a.duration, a.json, a.udp, a.repeat, a.mix,
                                                   a.cc, a.qdisc))
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PY_COMMANDS:
        if argv[0] == "report":
            from .report import main as report_main
            return report_main(argv[1:])
        if argv[0] == "sweep":
            from .sweep.cli import main as sweep_main
            return sweep_main(argv[1:])
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # argparse: --help/--version exit 0, bad arguments exit 2
        return int(e.code or 0)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
