"""``wirelab report DIR``: a self-contained HTML report (plots embedded, viewable offline)
for one run (``wirelab run --out DIR``) or a sweep (``wirelab sweep --out DIR``)."""
from __future__ import annotations

import argparse
import html
import sys
from pathlib import Path

from ..result import Result
from .common import (  # noqa: F401 - CSS, CWND_COLUMNS re-exported
    CSS, CWND_COLUMNS, cdf_figure, figure, img, page, plt, png, series_figure, table, window_series,
)

_png, _img = png, img  # older private names


def _table(df) -> str:
    return table(df)




def _optional(res: Result, name: str):
    """A table the run may not have (older wirelab, no TCP/SCTP flows)."""
    try:
        return getattr(res, name)
    except AttributeError:
        return res._csv(f"{name}.csv") if hasattr(res, "_csv") else None


def socket_plots(res: Result) -> list[str]:
    """Congestion window and smoothed RTT per TCP socket / SCTP association."""
    out = []
    tcp, sctp = _optional(res, "tcp_timeseries"), _optional(res, "sctp_timeseries")
    for column, ylabel, title in [("cwnd", "cwnd", "Congestion window"), ("srtt_ms", "srtt (ms)", "Smoothed RTT")]:
        w = window_series(res.flow_timeseries, tcp, sctp, column)
        if not len(w):
            continue
        fig = series_figure(w.groupby("series", sort=True), "time_s", "value", ylabel, title,
                            drawstyle="steps-post")
        out.append(figure(fig, title))
    return out


def plots(res: Result) -> list[str]:
    out = []
    ts = res.flow_timeseries
    if len(ts):
        rx = ts[ts.groupby("flow")["rx_bytes"].transform("max") > 0]
        tx = ts[ts.groupby("flow")["tx_bytes"].transform("max") > 0]
        for df, col, title in [(rx, "rx_rate_bps", "Receive rate per flow"), (tx, "tx_rate_bps", "Send rate per flow")]:
            if not len(df):
                continue
            fig = series_figure(df.groupby("flow", sort=True), "time_s", col, "Mbit/s", title, scale=1e-6,
                                legend={"fontsize": 7, "ncol": 2, "loc": "best"})
            out.append(figure(fig, title))
        rx_flows = rx.groupby("flow", sort=True)
        fig, n = cdf_figure(((name, g["rx_rate_bps"] / 1e6) for name, g in rx_flows),
                            "receive rate per sample (Mbit/s)", "CDF of receive rate")
        if n:
            out.append(figure(fig, "CDF of receive rate"))
        else:
            plt.close(fig)
    out.extend(socket_plots(res))
    qs = res.queue_timeseries
    if len(qs):
        busy = qs[qs.groupby("dev")["backlog"].transform("max") > 0]
        if len(busy):
            fig = series_figure(busy.groupby("dev", sort=True), "time_s", "qlen", "packets queued",
                                "Queue length (sampled)")
            out.append(figure(fig, "Queue length (sampled)"))
    probe = res.queue_probe
    if len(probe):
        deq = probe[probe["event"] == "dequeue"]
        if len(deq):
            fig, ax = plt.subplots(figsize=(8, 3.2))
            for dev, g in deq.groupby("dev", sort=True):
                ax.plot(g["time_ns"] / 1e9, g["sojourn_ns"] / 1e6, ".", ms=1.5, label=dev)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("sojourn (ms)")
            ax.set_title("Queue sojourn time per packet (probe)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            out.append(figure(fig, "Queue sojourn time per packet (probe)"))
            fig, n = cdf_figure(((dev, g["sojourn_ns"] / 1e6) for dev, g in deq.groupby("dev", sort=True)),
                                "sojourn (ms)", "CDF of queue sojourn time (probe)")
            if n:
                out.append(figure(fig, "CDF of queue sojourn time (probe)"))
            else:
                plt.close(fig)
    return out


def build_report(out_dir: Path, dest: Path | None = None) -> Path:
    """Writes ``report.html`` for the run or sweep in ``out_dir``; returns its path."""
    if (Path(out_dir) / "manifest.json").exists():
        from .sweep import build_sweep_report
        return build_sweep_report(out_dir, dest)
    from .analyze import build_analyze_report, is_analyze_dir
    if is_analyze_dir(Path(out_dir)):
        return build_analyze_report(Path(out_dir), dest)
    return build_run_report(out_dir, dest)


def build_run_report(out_dir: Path, dest: Path | None = None) -> Path:
    """Writes ``report.html`` for the run in ``out_dir``; returns its path."""
    res = Result(Path(out_dir))
    s = res.summary
    dest = Path(dest) if dest else res.out_dir / "report.html"
    meta = (f"<p>scenario <code>{html.escape(s['scenario']['file'])}</code>, seed {s['seed']}, "
            f"{s['sim_seconds']:.3f} s simulated in {s['wall_seconds']:.3f} s wall, {s['events']} events, "
            f"fingerprint <code>{s['fingerprint']}</code>, wirelab {s['wirelab_version']}</p>")
    desc = f"<p>{html.escape(s['scenario'].get('description') or '')}</p>"
    files = "".join(f"<li><code>{html.escape(f)}</code></li>" for f in s.get("files", []))
    body = "\n".join([
        f"<h1>wirelab report: {html.escape(s['scenario']['name'])}</h1>", meta, desc,
        "<h2>Plots</h2>", *plots(res),
        "<h2>Flows</h2>", _table(res.flows),
        "<h2>Queues</h2>", _table(res.queues),
        "<h2>Links</h2>", _table(res.links),
        *(["<h2>Shim rule decisions</h2>", _table(res.shim_matches)] if len(res.shim_matches.columns) else []),
        "<h2>Files</h2>", f"<ul>{files}</ul>",
    ])
    dest.write_text(page(f"wirelab: {s['scenario']['name']}", [body]))
    return dest


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="wirelab report",
                                 description="Build an HTML report (plots embedded, viewable offline) "
                                             "from a run's, a sweep's or an analysis's directory.")
    ap.add_argument("dir", type=Path, help="output directory of `wirelab run`, `wirelab sweep` or `wirelab analyze`")
    ap.add_argument("--out", type=Path, default=None, help="report file (default DIR/report.html)")
    a = ap.parse_args(argv)
    if not (a.dir / "summary.json").exists() and not (a.dir / "manifest.json").exists():
        print(f"error: {a.dir} has neither summary.json nor manifest.json "
              f"(is it the --out of `wirelab run`, `wirelab sweep` or `wirelab analyze`?)", file=sys.stderr)
        return 2
    p = build_report(a.dir, a.out)
    print(p)
    return 0
