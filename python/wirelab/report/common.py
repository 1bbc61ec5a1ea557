"""Shared pieces of the HTML reports: figures as embedded PNG, tables, CDFs (statistics
from :mod:`wirelab.stats`), the page shell. Everything is inline, so a report opens offline."""
from __future__ import annotations

import base64
import html
import io
from typing import Iterable, Sequence

import sys

import matplotlib

# headless PNGs; but inside Jupyter keep the notebook's (inline) backend, which renders to
# PNG just the same: switching it would stop the user's own plots from showing
if "ipykernel" not in sys.modules:
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ..stats import ecdf  # noqa: E402
from ..units import human_bytes, human_rate  # noqa: E402,F401 - re-exported

MAX_LINES = 12  # more series than this make a plot unreadable; the rest is in the tables

CSS = """body{font-family:system-ui,sans-serif;margin:1.2em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
h3{font-size:1em;margin-top:1.2em}
table.t{border-collapse:collapse;font-size:.8em}table.t td,table.t th{padding:.2em .5em;border-bottom:1px solid #eee;text-align:right}
figure{margin:1em 0}img{max-width:100%}figcaption{font-size:.8em;color:#666}code{background:#f4f4f4;padding:0 .2em}
nav a{margin-right:1em}.note{color:#666;font-size:.85em}
.tw{overflow-x:auto;max-width:100%;border:1px solid #f0f0f0}
table.t th{white-space:normal;max-width:9em;vertical-align:bottom;background:#fafafa;position:sticky;top:0}
table.t td{white-space:nowrap}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(520px,1fr));gap:.4em 1em}
.grid figure{margin:.2em 0}.q{font-size:1.05em;font-weight:600;margin:.3em 0 .6em}
.meta{color:#555;font-size:.8em}"""

# A self-check: a figure that fails to decode is reported on the console, where a headless
# browser test (and a person with dev tools) sees it.
SELF_CHECK = """<script>
window.addEventListener('load', function () {
  var bad = 0;
  document.querySelectorAll('img').forEach(function (im) {
    if (!im.complete || im.naturalWidth === 0) { bad++; console.error('wirelab report: figure failed to load: ' + im.alt); }
  });
  document.body.setAttribute('data-figures', String(document.images.length - bad));
});
</script>"""


def png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def img(b64: str, alt: str) -> str:
    return (f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}"/>'
            f'<figcaption>{html.escape(alt)}</figcaption></figure>')


def figure(fig, title: str) -> str:
    return img(png(fig), title)


_BYTE_COLUMNS = {"tx_bytes", "rx_bytes", "sent_bytes", "backlog_bytes", "bytes", "bytes_sent", "bytes_acked",
                 "bytes_received", "bytes_returned", "tx_bytes_mean", "rx_bytes_mean"}


def _fmt_column(name: str, col: pd.Series) -> pd.Series:
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        return col.fillna("")
    if name.endswith("_bps") or name.endswith("_bps_mean") or name.endswith("_bps_ci95"):
        return col.map(human_rate)
    if name in _BYTE_COLUMNS or name.endswith("_bytes"):
        return col.map(human_bytes)
    if "ratio" in name:
        return col.map(lambda v: "" if v != v else f"{v * 100:.2f} %")
    if pd.api.types.is_integer_dtype(col):
        return col.map(lambda v: f"{v:,}".replace(",", "\u2009"))
    return col.map(lambda v: "" if v != v else (f"{v:,.0f}".replace(",", "\u2009") if abs(v) >= 1e5 else f"{v:.4g}"))


def human(df: pd.DataFrame) -> pd.DataFrame:
    """The table with numbers in human units: ``*_bps`` as ``2.84 Mbit/s``, byte counts as
    ``12.3 MB``, ratios in percent, large numbers with thin-space thousands, others to
    four significant digits."""
    out = df.copy()
    for c in out.columns:
        out[c] = _fmt_column(str(c), out[c])
    return out


def table(df, raw: bool = False) -> str:
    """An HTML table in human units (``raw``: as stored) that scrolls sideways when wide."""
    if df is None or len(df) == 0:
        return "<p><em>none</em></p>"
    shown = df if raw else human(df)
    t = shown.to_html(index=False, float_format=lambda x: f"{x:.6g}", border=0, classes="t")
    return f'<div class="tw">{t}</div>'


def page(title: str, body: Sequence[str]) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}{SELF_CHECK}</body></html>\n")


def series_figure(groups, x: str, y: str, ylabel: str, title: str, scale: float = 1.0,
                  legend: dict | None = None, **plot_kw):
    """One panel, a line per ``(label, frame)`` of ``groups`` (at most MAX_LINES): ``y``
    (times ``scale``) over ``x``, time axis, grid and legend."""
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for i, (name, g) in enumerate(groups):
        if i >= MAX_LINES:
            break
        ax.plot(g[x], g[y] * scale, label=name, lw=1.2, **plot_kw)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(**(legend or {"fontsize": 7}))
    return fig


def cdf_figure(series: Iterable[tuple[str, Sequence[float]]], xlabel: str, title: str):
    fig, ax = plt.subplots(figsize=(8, 3.2))
    n = 0
    for label, vals in series:
        x, y = ecdf(vals)
        if len(x) == 0:
            continue
        if n >= MAX_LINES:
            break
        ax.step(x, y, where="post", label=label, lw=1.2)
        n += 1
    ax.set_xlabel(xlabel)
    ax.set_ylabel("fraction ≤ x")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if n > 4:  # many series: legend below the plot, not over the curves
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(0, -0.22), ncol=1, frameon=False)
    elif n:
        ax.legend(fontsize=7, loc="lower right")
    return fig, n


def sink_rows(flows: pd.DataFrame) -> pd.DataFrame:
    """Rows of flows that receive (sinks), which carry goodput, loss and delay."""
    if not len(flows):
        return flows
    if "kind" in flows.columns:
        s = flows[flows["kind"].astype(str).str.contains("sink")]
        if len(s):
            return s
    return flows[flows.get("rx_packets", pd.Series(0, index=flows.index)) > 0]


CWND_COLUMNS = ("cwnd", "snd_cwnd", "cwnd_bytes")


def _socket_label(df: pd.DataFrame, prefix: str = "") -> pd.Series:
    """``flow`` when a flow has one socket, ``flow#sock`` when it has several."""
    if "sock" not in df.columns:
        return prefix + df["flow"].astype(str)
    keys = ["run", "flow"] if "run" in df.columns else ["flow"]
    multi = df.groupby(keys)["sock"].transform("nunique") > 1
    lab = df["flow"].astype(str)
    return prefix + lab.where(~multi, lab + "#" + df["sock"].astype(str))


def window_series(flow_ts: pd.DataFrame, tcp_ts: pd.DataFrame, sctp_ts: pd.DataFrame,
                  column: str = "cwnd") -> pd.DataFrame:
    """Congestion window (or another per-socket column such as ``srtt_ms``) over time from
    the TCP and SCTP socket time series (and a ``flow_timeseries`` column of that name, if
    any), as rows ``time_s, series, value`` (plus ``run`` for sweeps)."""
    from ..plots import sender_sockets
    frames = []
    # sockets that only ACK (a sink's) have a flat window that says nothing: left out
    tcp_ts = sender_sockets(tcp_ts)
    for df, prefix in ((tcp_ts, ""), (sctp_ts, "sctp ")):
        if df is not None and len(df) and column in df.columns and "flow" in df.columns:
            f = pd.DataFrame({"time_s": df["time_s"], "series": _socket_label(df, prefix), "value": df[column]})
            if "run" in df.columns:
                f["run"] = df["run"]
            frames.append(f)
    if not frames and flow_ts is not None and len(flow_ts):
        col = column if column in flow_ts.columns else (
            next((c for c in CWND_COLUMNS if c in flow_ts.columns), None) if column == "cwnd" else None)
        if col is not None:
            f = pd.DataFrame({"time_s": flow_ts["time_s"], "series": flow_ts["flow"].astype(str),
                              "value": flow_ts[col]})
            if "run" in flow_ts.columns:
                f["run"] = flow_ts["run"]
            frames.append(f)
    if not frames:
        return pd.DataFrame(columns=["time_s", "series", "value"])
    out = pd.concat(frames, ignore_index=True)
    keys = ["run", "series"] if "run" in out.columns else ["series"]
    return out[out.groupby(keys)["value"].transform("max") > 0]
