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


def _fig(ax, title: str) -> str:
    """The figure of ``ax`` embedded, or nothing when the plot had nothing to draw."""
    if ax is None:
        return ""
    return figure(ax.figure, title)  # saved with bbox_inches="tight": no tight_layout() pass


def overview(res: Result) -> list[str]:
    """The first screen: the four plots that answer "who got what, at which delay":
    goodput per connection, the latency CDF, congestion windows, queueing delay."""
    from .. import plots as P
    small = (5.6, 2.9)
    out = []
    for fn, title in [(P.goodput, "Goodput per connection"), (P.latency_cdf, "Latency CDF"),
                      (P.cwnd, "Congestion window"), (P.queue_delay, "Queueing delay")]:
        fig, ax = plt.subplots(figsize=small)
        drawn = fn(res, ax=ax)
        if drawn is None:
            plt.close(fig)
            continue
        out.append(_fig(drawn, title))
    return ['<div class="grid">', *out, "</div>"] if out else []


def socket_plots(res: Result) -> list[str]:
    """Congestion window, smoothed RTT and delivery rate per sending TCP socket (sinks'
    sockets, which only ACK, are left out) and SCTP association."""
    from .. import plots as P
    out = []
    for fn, title in [(P.cwnd, "Congestion window"), (P.srtt, "Smoothed RTT"), (P.delivery_rate, "Delivery rate")]:
        fig, ax = plt.subplots(figsize=(8, 3.2))
        drawn = fn(res, ax=ax)
        if drawn is None:
            plt.close(fig)
            continue
        out.append(_fig(drawn, title))
    return out


def plots(res: Result) -> list[str]:
    from .. import plots as P
    out = []
    for fn, kw, title in [(P.rate, {"direction": "rx"}, "Receive rate per app"),
                          (P.rate, {"direction": "tx"}, "Send rate per app")]:
        fig, ax = plt.subplots(figsize=(8, 3.2))
        drawn = fn(res, ax=ax, **kw)
        if drawn is None:
            plt.close(fig)
        else:
            out.append(_fig(drawn, title))
    ts = res.flow_timeseries
    if len(ts):
        rx = ts[ts.groupby("flow")["rx_bytes"].transform("max") > 0]
        fig, n = cdf_figure(((name, g["rx_rate_bps"] / 1e6) for name, g in rx.groupby("flow", sort=True)),
                            "receive rate per sample (Mbit/s)", "CDF of receive rate")
        if n:
            out.append(figure(fig, "CDF of receive rate"))
        else:
            plt.close(fig)
    out.extend(socket_plots(res))
    fig, ax = plt.subplots(figsize=(8, 3.2))
    drawn = P.queue(res, ax=ax)
    if drawn is None:
        plt.close(fig)
    else:
        out.append(_fig(drawn, "Queue length (sampled)"))
    probe = res.queue_probe
    if len(probe):
        deq = probe[probe["event"] == "dequeue"]
        if len(deq):
            fig, n = cdf_figure(((dev, g["sojourn_ns"] / 1e6) for dev, g in deq.groupby("dev", sort=True)),
                                "sojourn (ms)", "CDF of queue sojourn time (probe)")
            if n:
                out.append(figure(fig, "CDF of queue sojourn time (probe)"))
            else:
                plt.close(fig)
    return out


HEADLINE = ["client", "server", "cc", "goodput_bps", "bytes_received", "client_retrans", "retrans_ratio",
            "rtt_min_ms", "srtt_mean_ms", "srtt_max_ms", "fct_s"]


def headline(res: Result) -> str:
    """The connections (or the apps, without TCP) in a compact table."""
    c = res.connections
    if len(c):
        c = c[[k for k in HEADLINE if k in c.columns]]
        return _table(c.dropna(axis=1, how="all"))  # no empty fct_s while transfers run
    f = res.flows
    if not len(f):
        return ""
    cols = [k for k in ["name", "kind", "node", "tx_bytes", "rx_bytes", "goodput_bps", "loss_ratio",
                        "delay_mean_ms", "delay_max_ms", "retrans"] if k in f.columns]
    return _table(f[cols])


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
    """Writes ``report.html`` for the run in ``out_dir``; returns its path. Its first
    screen is the scenario's question (its description), the headline table and the
    overview plots; details follow."""
    res = Result(Path(out_dir))
    s = res.summary
    dest = Path(dest) if dest else res.out_dir / "report.html"
    meta = (f"<p class='meta'>scenario <code>{html.escape(s['scenario']['file'])}</code>, seed {s['seed']}, "
            f"{s['sim_seconds']:.3f} s simulated in {s['wall_seconds']:.3f} s wall, {s['events']} events, "
            f"fingerprint <code>{s['fingerprint']}</code>, wirelab {s['wirelab_version']}</p>")
    desc = s["scenario"].get("description") or ""
    files = "".join(f"<li><code>{html.escape(f)}</code></li>" for f in s.get("files", []))
    lat = res.latency
    lat_note = (f"<p class='note'>Latency: {html.escape(lat['what'].iloc[0])} "
                + {"application delay": "(first transmission to in-order delivery at the receiver, from the "
                                        "sender's and receiver's captures, as <code>wirelab analyze</code>).",
                   "queueing delay": "per flow at the probed queues (<code>measure.queue_probe</code>).",
                   "smoothed RTT": "samples of the sending sockets."}.get(lat["what"].iloc[0], "")
                + "</p>") if len(lat) else ""
    body = "\n".join([
        f"<h1>wirelab report: {html.escape(s['scenario']['name'])}</h1>",
        f"<p class='q'>{html.escape(desc)}</p>" if desc else "", meta,
        headline(res), *overview(res), lat_note,
        "<h2>Details</h2>", *plots(res),
        *(["<h2>Connections</h2>", _table(res.connections)] if len(res.connections.columns) else []),
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
