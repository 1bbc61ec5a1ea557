"""The HTML report of a sweep: per-configuration means with 95 % confidence intervals over
seeds (bar charts and a table), CDFs across configurations, and time series of each
configuration's first seed."""
from __future__ import annotations

import html
import textwrap
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import pandas as pd

from ..stats import mean_ci
from .common import MAX_LINES, cdf_figure, figure, page, plt, sink_rows, table, window_series

# (column, label, scale) of per-flow metrics shown as bar charts, for the flows where they
# are not zero everywhere (sinks for goodput/loss/delay, TCP senders for retransmissions)
METRICS = [
    ("goodput_bps", "goodput (Mbit/s)", 1e-6),
    ("loss_ratio", "loss ratio", 1.0),
    ("delay_mean_ms", "mean one-way delay (ms)", 1.0),
    ("retrans", "retransmitted segments", 1.0),
    ("transfer_time_s", "transfer time (s)", 1.0),
]


def short_names(params: List[str]) -> Dict[str, str]:
    """The shortest dotted suffix of each parameter that is unique among them:
    ``app.flow-a.rate`` → ``flow-a.rate`` when ``app.flow-b.rate`` is swept too."""
    out = {}
    for p in params:
        parts = p.split(".")
        for n in range(1, len(parts) + 1):
            cand = ".".join(parts[-n:])
            if sum(1 for q in params if q == cand or q.endswith("." + cand)) == 1:
                out[p] = cand
                break
        else:
            out[p] = p
    return out


def value_labels(values) -> Dict[str, str]:
    """The shortest form of each value of one parameter that still tells them apart: for
    tc-style ``key value`` lists, the pairs every value shares are dropped
    (``rate 10mbit delay 20ms`` / ``rate 10mbit delay 80ms`` → ``delay 20ms`` / ``delay 80ms``)."""
    vals = [str(v) for v in dict.fromkeys(values)]
    toks = {v: v.split() for v in vals}
    if len(vals) > 1 and all(len(t) >= 2 and len(t) % 2 == 0 for t in toks.values()):
        pairs = {v: [" ".join(t[i:i + 2]) for i in range(0, len(t), 2)] for v, t in toks.items()}
        common = set.intersection(*(set(p) for p in pairs.values()))
        out = {v: " ".join(p for p in pairs[v] if p not in common) or v for v in vals}
        if len(set(out.values())) == len(vals):
            return out
    return {v: v for v in vals}


def axis_label(params: List[str]) -> str:
    """What the configuration labels are values of: the swept parameters' short names."""
    short = short_names(params)
    return " · ".join(short[p] for p in params) if params else "configuration"


def label_maps(df: pd.DataFrame, params: List[str]) -> Dict[str, Dict[str, str]]:
    """Per parameter, value → shortened label, over the values ``df`` holds."""
    return {p: value_labels(df[p].astype(str)) for p in params if p in df.columns}


def _config_labels(df: pd.DataFrame, params: List[str], maps: Optional[Dict[str, Dict[str, str]]] = None) -> pd.Series:
    """One label per row: the values of the swept parameters (shortened by
    :func:`value_labels`; pass ``maps`` from :func:`label_maps` of all runs so every table
    gets the same labels), joined with `` · ``; the axis says which parameters they are."""
    if not params:
        return pd.Series(["(all)"] * len(df), index=df.index)
    maps = maps or label_maps(df, params)
    return df[params].astype(str).apply(lambda row: " · ".join(maps[p][row[p]] for p in params), axis=1)


def _configs(df: pd.DataFrame, params: List[str]) -> List[str]:
    """Configuration labels in manifest order (first appearance)."""
    return list(dict.fromkeys(df["config"]))


def bar_chart(stats: pd.DataFrame, configs: List[str], metric: str, label: str, params: Optional[List[str]] = None):
    """Grouped bars: one group per configuration, one bar per flow, 95 % CI whiskers.
    Returns None when the metric is zero or missing for every flow."""
    col = f"{metric}_mean"
    if col not in stats.columns:
        return None
    vals = stats[col].astype(float)
    shown = stats[vals.notna() & (vals != 0)]["name"]
    flows = list(dict.fromkeys(stats["name"][stats["name"].isin(set(shown))]))[:MAX_LINES]
    if not flows:
        return None
    width = 0.8 / len(flows)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    x = np.arange(len(configs))
    for i, f in enumerate(flows):
        s = stats[stats["name"] == f].set_index("config").reindex(configs)
        err = s[f"{metric}_ci95"].to_numpy(dtype=float)
        ax.bar(x + (i - (len(flows) - 1) / 2) * width, s[col].to_numpy(dtype=float), width,
               yerr=np.where(np.isnan(err), 0, err), capsize=3, label=f)
    ax.set_xticks(x)
    many = len(configs) > 6
    width_chars = max(12, 90 // max(len(configs), 1))
    ax.set_xticklabels([c if many else "\n".join(textwrap.fill(part, width_chars) for part in c.split(" · "))
                        for c in configs],
                       rotation=30 if many else 0, ha="right" if many else "center", fontsize=7)
    if params is not None:
        ax.set_xlabel(axis_label(params), fontsize=8)
    ax.set_ylabel(label)
    ax.set_title(f"{label}: mean over seeds, 95 % CI")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=7)
    return fig


def stats_table(stats: pd.DataFrame) -> str:
    """The per-configuration table in human units: :func:`flow_stats` holds each metric
    scaled for its chart (goodput in Mbit/s); the table shows the metric's own unit, which
    :func:`~wirelab.report.common.table` then prints as ``2.84 Mbit/s``."""
    shown = stats.drop(columns=["config"]).copy()
    for metric, _, scale in METRICS:
        for c in (f"{metric}_mean", f"{metric}_ci95"):
            if c in shown.columns and scale != 1.0:
                shown[c] = shown[c] / scale
    return table(shown)


def flow_stats(flows: pd.DataFrame, params: List[str]) -> pd.DataFrame:
    """Per (configuration, flow): mean, 95 % CI half-width and count over seeds of each
    metric; flows whose metrics are all zero (e.g. UDP senders) are left out."""
    short = short_names(params)
    rows = []
    for (config, name), g in flows.groupby(["config", "name"], sort=False):
        row = {short[p]: g[p].iloc[0] for p in params}
        row.update({"config": config, "name": name, "seeds": len(g)})
        for metric, _, scale in METRICS:
            if metric in g.columns and pd.to_numeric(g[metric], errors="coerce").notna().any():
                m, ci, _n = mean_ci(pd.to_numeric(g[metric], errors="coerce") * scale)
                row[f"{metric}_mean"], row[f"{metric}_ci95"] = m, ci
        rows.append(row)
    st = pd.DataFrame(rows)
    means = [c for c in st.columns if c.endswith("_mean")]
    if means:
        nonzero = st[means].fillna(0).ne(0)
        keep = nonzero.groupby(st["name"]).transform("any").any(axis=1)
        st = st[keep]
        st = st.drop(columns=[c for c in means if not nonzero[c].any()]
                     + [c[:-5] + "_ci95" for c in means if not nonzero[c].any()])
    return st.reset_index(drop=True)


def build_sweep_report(root: Path, dest: Optional[Path] = None) -> Path:
    """Writes ``report.html`` for the sweep directory ``root``; returns its path."""
    from ..sweep import open_sweep

    sw = open_sweep(root)
    dest = Path(dest) if dest else sw.root / "report.html"
    m = sw.manifest
    params = sw.params
    body: List[str] = [f"<h1>wirelab sweep report: {html.escape(sw.name)}</h1>"]
    fixed = ", ".join(f"<code>{html.escape(k)}={html.escape(str(v))}</code>" for k, v in m.get("set", {}).items())
    body.append(
        f"<p>scenario <code>{html.escape(str(m['scenario']['path']))}</code> "
        f"(sha256 <code>{m['scenario']['sha256'][:12]}</code>), {len(sw.done)} of {len(sw.planned)} runs finished, "
        f"seeds {html.escape(str(m.get('seeds')))}, wirelab {html.escape(str(m.get('wirelab_version')))}"
        + (f"; fixed: {fixed}" if fixed else "") + "</p>")
    body.append("<p>Swept: " + (", ".join(f"<code>{html.escape(p)}</code>" for p in params) or "seeds only") + "</p>")
    fails = sw.failures()
    if fails:
        body.append(f"<p><strong>{len(fails)} runs failed</strong>; see <code>failed/</code>.</p>")

    flows = sw.flows
    summary = sw.summary
    maps = label_maps(summary if len(summary) else flows, params)
    if len(flows):
        flows = flows.copy()
        flows["config"] = _config_labels(flows, params, maps)
        configs = _configs(flows, params)
        stats = flow_stats(flows, params)
        body.append("<h2>Per configuration (mean over seeds, 95 % confidence interval)</h2>")
        if len(stats):
            for metric, label, _ in METRICS:
                fig = bar_chart(stats, configs, metric, label, params)
                if fig is not None:
                    body.append(figure(fig, label))
            body.append(stats_table(stats))
        body.append("<h2>Distributions</h2>")
        body.extend(_cdfs(sw, params, configs, maps))
        body.append("<h2>Time series (first seed of each configuration)</h2>")
        body.extend(_timeseries(sw, params, configs, maps))
    body.append("<h2>Runs</h2>")
    if len(summary):
        body.append(table(summary.drop(columns=[c for c in ("wall_seconds",) if c in summary.columns])))
    else:
        body.append("<p><em>no finished runs</em></p>")
    dest.write_text(page(f"wirelab sweep: {sw.name}", body))
    return dest


def _cdfs(sw, params: List[str], configs: List[str], maps=None) -> List[str]:
    out = []
    flows = sw.flows
    sinks = sink_rows(flows).copy()
    if len(sinks) and "goodput_bps" in sinks.columns:
        sinks["config"] = _config_labels(sinks, params, maps)
        series = [(f"{c} · {f}", g["goodput_bps"] / 1e6)
                  for c in configs for f, g in sinks[sinks["config"] == c].groupby("name", sort=True)]
        fig, n = cdf_figure(series, "goodput over seeds (Mbit/s)", "CDF of per-run sink goodput")
        out.append(figure(fig, "CDF of per-run sink goodput")) if n else plt.close(fig)
    ts = sw.flow_timeseries
    if len(ts) and "rx_rate_bps" in ts.columns:
        ts = ts[ts.groupby(["run", "flow"])["rx_bytes"].transform("max") > 0].copy()
        ts["config"] = _config_labels(ts, params, maps)
        series = [(c, ts.loc[ts["config"] == c, "rx_rate_bps"] / 1e6) for c in configs]
        fig, n = cdf_figure(series, "receive rate per sample, all sinks (Mbit/s)", "CDF of receive rate samples")
        out.append(figure(fig, "CDF of receive rate samples")) if n else plt.close(fig)
    qs = sw.queue_timeseries
    if len(qs) and "qlen" in qs.columns:
        busy = qs[qs.groupby(["run", "dev"])["backlog"].transform("max") > 0].copy()
        if len(busy):
            busy["config"] = _config_labels(busy, params, maps)
            series = [(c, busy.loc[busy["config"] == c, "qlen"]) for c in configs]
            fig, n = cdf_figure(series, "packets queued per sample (busy queues)", "CDF of queue length")
            out.append(figure(fig, "CDF of queue length")) if n else plt.close(fig)
    return out


def _timeseries(sw, params: List[str], configs: List[str], maps=None) -> List[str]:
    out = []
    summ = sw.summary
    if not len(summ):
        return out
    summ = summ.copy()
    summ["config"] = _config_labels(summ, params, maps)
    first = summ.groupby("config", sort=False)["run"].first()  # manifest order: first seed
    ts = sw.flow_timeseries
    qs = sw.queue_timeseries
    panels = [c for c in configs if c in first.index][:MAX_LINES]
    if not panels:
        return out
    tcp, sctp = sw.tcp_timeseries, sw.sctp_timeseries
    series = []
    if len(ts) and "rx_rate_bps" in ts.columns:
        rx = pd.DataFrame({"run": ts["run"], "time_s": ts["time_s"], "series": ts["flow"].astype(str),
                           "value": ts["rx_rate_bps"] * 1e-6})
        series.append((rx, "receive rate (Mbit/s)", "Receive rate per flow"))
    for column, ylabel, title in [("cwnd", "cwnd", "Congestion window"), ("srtt_ms", "srtt (ms)", "Smoothed RTT")]:
        w = window_series(ts, tcp, sctp, column)
        if len(w) and "run" in w.columns:
            series.append((w, ylabel, title))
    for df, ylabel, title in series:
        fig, axes = plt.subplots(len(panels), 1, figsize=(8, 1.9 * len(panels) + 0.4), sharex=True, squeeze=False)
        for ax, c in zip(axes[:, 0], panels):
            g = df[df["run"] == first[c]]
            g = g[g.groupby("series")["value"].transform("max") > 0]
            for i, (name, f) in enumerate(g.groupby("series", sort=True)):
                if i >= MAX_LINES:
                    break
                ax.plot(f["time_s"], f["value"], label=name, lw=1.1)
            ax.set_title(c, fontsize=8)
            ax.set_ylabel(ylabel, fontsize=7)
            ax.grid(alpha=0.3)
            if len(g):
                ax.legend(fontsize=6, loc="upper right")
        axes[-1, 0].set_xlabel("time (s)")
        fig.tight_layout()
        out.append(figure(fig, title))
    if len(qs) and panels:
        fig, ax = plt.subplots(figsize=(8, 3.2))
        n = 0
        for c in panels:
            g = qs[qs["run"] == first[c]]
            g = g[g.groupby("dev")["backlog"].transform("max") > 0]
            for dev, f in g.groupby("dev", sort=True):
                if n >= MAX_LINES:
                    break
                ax.plot(f["time_s"], f["qlen"], label=f"{c} {dev}" if len(panels) > 1 else dev, lw=1.1)
                n += 1
        ax.set_xlabel("time (s)")
        ax.set_ylabel("packets queued")
        ax.set_title("Queue length (busy queues)")
        ax.grid(alpha=0.3)
        if n:
            ax.legend(fontsize=6)
            out.append(figure(fig, "Queue length (busy queues)"))
        else:
            plt.close(fig)
    return out
