"""Seed system 2 (SCTP auto buffer tuning for Linux 2.6.37, issue #5): the echo experiment.

Runs ``scenarios/sctp-autotune/echo.toml`` in-process (``wirelab.run``) for every
(added delay, autotuning mode) pair, reads the per-association time series, draws
``sk_sndbuf`` / ``sk_rcvbuf`` / cwnd over time on both ends (one figure per delay) and
writes a transfer-rate table::

    python -m wirelab.repro.sctp_autotune [--out DIR]   # default ./wirelab-repro-sctp_autotune

Outputs in DIR: ``runs/<case>/`` (each run's outputs), ``results.csv`` (one row per run),
``table.md`` (markdown tables), ``sctp-autotune-<delay>ms.png``.

The experiment (seed document, "Performance"): host A writes for 10 s, host B echoes
everything, "the amount of data received back by Computer A is used for calculating the
transfer rate"; netem delay 0, 10 and 100 ms on the router between them (one direction,
so RTT = D). The main grid delays one direction; ``--rtt2d`` adds the same delay on the
return path (RTT = 2D) for 10 and 100 ms, because the document does not say which
interface of the router carried netem (seed-systems §2.4).
"""
from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .common import add_out, md_table, pyplot, run, save, scenario_file, stamp

SCENARIO = scenario_file("sctp-autotune/echo.toml")
DELAYS_MS = (0, 10, 100)
MODES = ("off", "faithful", "overhead_corrected")
MODE_LABEL = {"off": "vanilla 2.6.37 (fixed)", "faithful": "autotune, faithful", "overhead_corrected": "autotune, overhead-corrected"}
#: The client writes from `start` to `stop` in echo.toml (0.1 s … 10.1 s).
WRITE_START_S, WRITE_STOP_S = 0.1, 10.1
#: net.core.{w,r}mem_default of a 64-bit 2.6.37 kernel (seed-systems §2.2).
VANILLA_BUF = 124_928
#: sctp_{w,r}mem[2] of the author's host.
MEM_MAX = 3_989_504


@dataclass(frozen=True)
class Case:
    """One run: added delay, autotuning mode, where the delay sits, receiving app."""

    delay_ms: int
    mode: str
    both_ways: bool = False
    server: str = "sctp-echo"
    size: int = 4096
    duration_s: float | None = None

    @property
    def name(self) -> str:
        s = f"d{self.delay_ms}-{self.mode}"
        if self.both_ways:
            s += "-2way"
        if self.server != "sctp-echo":
            s += "-" + self.server
        if self.size != 4096:
            s += f"-{self.size}B"
        return s

    def overrides(self) -> list[str]:
        netem = f"rate 1gbit delay {self.delay_ms}ms"
        ov = [f"link.wire.a.netem={netem}"]
        if self.both_ways:
            ov.append(f"link.wire.b.netem={netem}")
        # `--set` splits paths on '.', so sysctl names (which contain dots) are set by
        # inserting the whole table; echo.toml deliberately has no `sysctl` table.
        for node in ("h1", "h2"):
            ov.append(f'node.{node}.sysctl={{"net.sctp.autotune" = "{self.mode}"}}')
        if self.server != "sctp-echo":
            ov.append(f"app.server.kind={self.server}")
        if self.size != 4096:
            ov.append(f"app.client.size={self.size}")
        if self.duration_s is not None:
            ov.append(f"app.client.stop={WRITE_START_S + self.duration_s:g}s")
            ov.append(f"scenario.duration={WRITE_START_S + self.duration_s + 1.9:g}s")
        return ov


def run_case(case: Case, out: Path, scenario: Path = SCENARIO) -> Path:
    """Runs one case in-process; returns its output directory ``out/runs/<case>``."""
    d = out / "runs" / case.name
    if d.exists():
        shutil.rmtree(d)
    run(scenario, d, overrides=case.overrides())
    return d


def _at(ts: pd.DataFrame, col: str, t: float) -> float:
    """Value of `col` at time t (linear interpolation between samples)."""
    if ts.empty:
        return float("nan")
    return float(np.interp(t, ts["time_s"].to_numpy(), ts[col].to_numpy().astype(float)))


def _settle(ts: pd.DataFrame, col: str) -> float:
    """Time of the last change of `col` while established ("where the lines end")."""
    v = ts[col].to_numpy()
    ch = np.nonzero(v[1:] != v[:-1])[0]
    return float(ts["time_s"].iloc[ch[-1] + 1]) if len(ch) else float(ts["time_s"].iloc[0])


def summarize(case: Case, d: Path) -> dict:
    """One results row from a run directory."""
    flows = pd.read_csv(d / "flows.csv").set_index("name")
    ts = pd.read_csv(d / "sctp_timeseries.csv")
    row: dict = {"case": case.name, "delay_ms": case.delay_ms, "mode": case.mode,
                 "rtt": "2D" if case.both_ways else "D", "server": case.server, "msg_size": case.size}
    cl = flows.loc["client"]
    row["client_state"] = cl["state"] if isinstance(cl["state"], str) else ""
    row["client_error"] = cl["error"] if isinstance(cl["error"], str) else ""
    stop = WRITE_START_S + (case.duration_s if case.duration_s is not None else WRITE_STOP_S - WRITE_START_S)
    h1 = ts[ts["node"] == "h1"].sort_values("time_s")
    h2 = ts[ts["node"] == "h2"].sort_values("time_s")
    span = stop - WRITE_START_S
    # transfer rate as the document: bytes received back by A during the write period
    row["echo_bytes_10s"] = _at(h1, "bytes_delivered", stop)
    row["rate_mbit"] = row["echo_bytes_10s"] * 8 / span / 1e6
    row["rate_MBps"] = row["echo_bytes_10s"] / span / 1e6
    row["fwd_rate_mbit"] = _at(h2, "bytes_delivered", stop) * 8 / span / 1e6
    # steady state: the last 5 s of the write period (buffers have settled by then)
    t0 = max(WRITE_START_S, stop - 5.0)
    row["rate_last5s_mbit"] = (_at(h1, "bytes_delivered", stop) - _at(h1, "bytes_delivered", t0)) * 8 / (stop - t0) / 1e6
    row["srtt_ms"] = _at(h1, "srtt_ms", stop)
    for tag, t in (("h1", h1), ("h2", h2)):
        est = t[t["time_s"] <= stop]
        if est.empty:
            continue
        for col in ("sndbuf", "rcvbuf", "cwnd", "rwnd"):
            row[f"{tag}_{col}_end"] = int(est[col].iloc[-1])
            row[f"{tag}_{col}_max"] = int(est[col].max())
        row[f"{tag}_sndbuf_settle_s"] = _settle(est, "sndbuf")
        row[f"{tag}_rcvbuf_settle_s"] = _settle(est, "rcvbuf")
        row[f"{tag}_retransmits"] = int(est["retransmits"].iloc[-1])
    return row


def plot_delay(delay_ms: int, runs: dict[str, pd.DataFrame], path: Path, rtt_note: str) -> None:
    """sndbuf, rcvbuf and cwnd vs time on both ends for one delay, one line per mode."""
    plt = pyplot()
    cols = (("sndbuf", "sk_sndbuf"), ("rcvbuf", "sk_rcvbuf"), ("cwnd", "cwnd"))
    nodes = (("h1", "A: client (h1)"), ("h2", "B: echo server (h2)"))
    colors = {"off": "#444444", "faithful": "#1f77b4", "overhead_corrected": "#d62728"}
    styles = {"off": "-", "faithful": "-", "overhead_corrected": "--"}
    fig, axes = plt.subplots(2, 3, figsize=(11, 5.4), sharex=True)
    for r, (node, nlabel) in enumerate(nodes):
        for c, (col, clabel) in enumerate(cols):
            ax = axes[r][c]
            for mode, ts in runs.items():
                t = ts[(ts["node"] == node) & (ts["time_s"] <= WRITE_STOP_S + 0.05)]
                ax.plot(t["time_s"], t[col] / 1e6, styles[mode], color=colors[mode], lw=1.3, label=MODE_LABEL[mode], drawstyle="steps-post")
            ax.set_title(f"{nlabel}: {clabel}", fontsize=9)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=8)
            if c == 0:
                ax.set_ylabel("MB (10^6 bytes)", fontsize=8)
            if r == 1:
                ax.set_xlabel("time (s)", fontsize=8)
    for ax in axes[:, :2].ravel():
        ax.axhline(VANILLA_BUF / 1e6, color="#999999", lw=0.6, ls=":")
    axes[0][0].legend(fontsize=7, loc="best")
    fig.suptitle(f"SCTP echo, linux-2.6.37, GbE, {delay_ms} ms added delay ({rtt_note}), 4 KiB writes for 10 s", fontsize=10)
    save(fig, path)


def _fmt_b(v) -> str:
    return "–" if pd.isna(v) else f"{int(v):,}".replace(",", " ")


def write_table(df: pd.DataFrame, path: Path) -> str:
    """Markdown tables: transfer rate per delay × mode, then buffer end values."""
    main = df[(df["rtt"] == "D") & (df["server"] == "sctp-echo") & (df["msg_size"] == 4096)]
    rates = []
    for d in DELAYS_MS:
        cells = []
        for m in MODES:
            r = main[(main["delay_ms"] == d) & (main["mode"] == m)]
            cells.append("–" if r.empty else f"{r['rate_mbit'].iloc[0]:.1f} Mb/s ({r['rate_MBps'].iloc[0]:.2f} MB/s); "
                         f"last 5 s: {r['rate_last5s_mbit'].iloc[0]:.1f}")
        rates.append([f"{d} ms", *cells])
    bufs = []
    for _, r in df.iterrows():
        if r["client_error"]:
            bufs.append([r["case"], f"client failed: {r['client_error']}", *[""] * 8])
            continue
        bufs.append([r["case"], *(_fmt_b(r.get(k)) for k in ("h1_sndbuf_end", "h1_rcvbuf_end", "h2_sndbuf_end",
                                                               "h2_rcvbuf_end")),
                     f"{r.get('h2_sndbuf_settle_s', float('nan')):.2f} s", f"{r.get('h2_rcvbuf_settle_s', float('nan')):.2f} s",
                     _fmt_b(r.get("h1_cwnd_end")), _fmt_b(r.get("h2_cwnd_end")), f"{r['srtt_ms']:.1f}"])
    parts = [
        "Transfer rate (bytes echoed back to A during the 10 s write period), RTT = D:\n",
        md_table(["added delay", *(MODE_LABEL[m] for m in MODES)], rates, "l" + "r" * len(MODES)), "",
        "Buffers at the end of the write period (bytes) and when they last changed:\n",
        md_table(["case", "A sndbuf", "A rcvbuf", "B sndbuf", "B rcvbuf", "B sndbuf settles", "B rcvbuf settles",
                  "A cwnd", "B cwnd", "srtt (ms)"], bufs, "l" + "r" * 9)]
    extra = df[(df["rtt"] == "2D") | (df["server"] != "sctp-echo") | (df["msg_size"] != 4096)]
    if not extra.empty:
        rows = [[r["case"], r["rtt"], r["server"], r["msg_size"], f"{r['fwd_rate_mbit']:.1f}",
                 "–" if r["server"] != "sctp-echo" else f"{r['rate_mbit']:.1f}", _fmt_b(r.get("h2_rcvbuf_end")),
                 _fmt_b(r.get("h1_sndbuf_end")), r["client_error"]] for _, r in extra.iterrows()]
        parts += ["", "Variants (RTT = 2D, one-way transfer to a sink, other message sizes):\n",
                  md_table(["case", "RTT", "receiver", "message", "rate A→B (Mb/s)", "echoed to A (Mb/s)",
                            "B rcvbuf end", "A sndbuf end", "note"], rows, "lllrrrrrl")]
    text = "\n".join(parts) + "\n"
    path.write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wirelab.repro.sctp_autotune", description=__doc__.split("\n\n")[0])
    add_out(ap, "sctp_autotune")
    ap.add_argument("--scenario", type=Path, default=SCENARIO)
    ap.add_argument("--no-variants", action="store_true", help="only the 3 × 3 main grid")
    ap.add_argument("--duration", type=float, default=None,
                    help="write period in seconds (default: the document's 10 s; shorter for a quick look)")
    args = ap.parse_args(argv)
    out: Path = args.out
    stamp(out, "sctp_autotune", argv)

    cases = [Case(d, m, duration_s=args.duration) for d in DELAYS_MS for m in MODES]
    if not args.no_variants:
        cases += [Case(d, m, both_ways=True, duration_s=args.duration) for d in (10, 100) for m in MODES]
        # one-way transfer: the receiver has no RTT sample of its own (the document's
        # "unresolved issue"); wirelab falls back to RTO.Initial
        cases += [Case(100, m, server="sctp-sink", duration_s=args.duration) for m in MODES]
        # iperf3's 64 KiB messages against the 16 KiB initial autotuned sk_sndbuf
        cases += [Case(10, m, size=65536, duration_s=args.duration) for m in ("off", "faithful")]
    rows, series = [], {}
    for c in cases:
        print(f"running {c.name} …", file=sys.stderr, flush=True)
        d = run_case(c, out, args.scenario)
        rows.append(summarize(c, d))
        if not c.both_ways and c.server == "sctp-echo" and c.size == 4096:
            series[(c.delay_ms, c.mode)] = pd.read_csv(d / "sctp_timeseries.csv")
    df = pd.DataFrame(rows)
    df.to_csv(out / "results.csv", index=False)
    for d in DELAYS_MS:
        runs = {m: series[(d, m)] for m in MODES if (d, m) in series}
        plot_delay(d, runs, out / f"sctp-autotune-{d}ms.png", "one-way, RTT = D")
    print(write_table(df, out / "table.md"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
