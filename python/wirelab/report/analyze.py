"""``wirelab report DIR`` for the output of ``wirelab analyze CAPTURE --out DIR``: the
analyzer's tables as an HTML page with plots (ACK-latency and application-delay CDFs per
class or flow, goodput per interval, Jain's index over time). Everything is embedded."""
from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd

from .common import cdf_figure, figure, page, plt, series_figure, table

#: Files that mark a directory as ``wirelab analyze`` output.
MARKERS = ("segments.csv", "intervals.csv", "fairness.csv")


def is_analyze_dir(d: Path) -> bool:
    """True if ``d`` holds ``wirelab analyze --out`` tables."""
    return all((Path(d) / m).exists() for m in MARKERS)


def _csv(d: Path, name: str) -> pd.DataFrame:
    p = d / name
    if not p.exists() or p.stat().st_size == 0:
        return pd.DataFrame()
    return pd.read_csv(p)


def _groups(flows: pd.DataFrame) -> dict[str, str]:
    """flow → the label its curves are drawn under: its class when classes were given
    (a handful of curves for hundreds of flows), else the flow itself."""
    if "class" in flows.columns and flows["class"].notna().any():
        return {f: (c if isinstance(c, str) and c else "(no class)") for f, c in zip(flows["flow"], flows["class"])}
    return {f: f for f in flows["flow"]}


def analyze_plots(d: Path) -> list[str]:
    """The figures of one analyze directory."""
    out: list[str] = []
    flows, segs = _csv(d, "flows.csv"), _csv(d, "segments.csv")
    if not len(flows) or not len(segs):
        return out
    label = _groups(flows)
    segs = segs.assign(group=segs["flow"].map(label))
    for col, xlabel, title in [
        ("latency_ms", "ACK latency (ms): first send → first covering ACK", "CDF of ACK latency"),
        ("latency_sack_ms", "ACK latency with SACK (ms)", "CDF of ACK latency, SACK-aware"),
        ("app_delay_ms", "application delay (ms): write → delivery at the receiver", "CDF of application delay"),
    ]:
        if col not in segs.columns or not segs[col].notna().any():
            continue
        fig, n = cdf_figure(((g, v[col].dropna()) for g, v in segs.groupby("group", sort=True)), xlabel, title)
        if n:
            out.append(figure(fig, title))
        else:
            plt.close(fig)
    iv = _csv(d, "intervals.csv")
    if len(iv):
        iv = iv.assign(group=iv["flow"].map(label))
        per = iv.groupby(["group", "start_s"], sort=True)["goodput_bps"].sum().reset_index()
        fig = series_figure(per.groupby("group", sort=True), "start_s", "goodput_bps", "goodput (Mbit/s)",
                            "Goodput per interval (sum over the group)", scale=1e-6, drawstyle="steps-post")
        out.append(figure(fig, "Goodput per interval"))
    fair = _csv(d, "fairness.csv")
    if len(fair) and fair["jain_goodput"].notna().any():
        fig, ax = plt.subplots(figsize=(8, 3.2))
        ax.plot(fair["start_s"], fair["jain_goodput"], lw=1.2, drawstyle="steps-post", label="goodput")
        ax.plot(fair["start_s"], fair["jain_throughput"], lw=1.0, drawstyle="steps-post", label="throughput")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("Jain's index")
        ax.set_title("Jain's fairness index across active flows, per interval")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        out.append(figure(fig, "Jain's index per interval"))
    return out


def build_analyze_report(d: Path, dest: Path | None = None) -> Path:
    """Writes ``report.html`` for the ``wirelab analyze`` output in ``d``; returns its path."""
    d = Path(d)
    dest = Path(dest) if dest else d / "report.html"
    summ = json.loads((d / "summary.json").read_text()) if (d / "summary.json").exists() else {}
    def _cap(name: str) -> str:
        c = summ.get(name)
        if not isinstance(c, dict):
            return ""
        cut = " (cut short)" if c.get("file_cut_short") else ""
        return (f"{name} capture: {c.get('frames', 0)} frames, {c.get('tcp', 0)} TCP, "
                f"{c.get('undecodable', 0)} undecodable{cut}")
    caps = [x for x in (_cap("sender"), _cap("receiver")) if x]
    meta = f"<p>{html.escape('; '.join(caps))}</p>" if caps else ""
    warnings = summ.get("warnings") or []
    warn = "".join(f"<li>{html.escape(str(w))}</li>" for w in warnings)
    flows = _csv(d, "flows.csv")
    keep = [c for c in ["flow", "class", "data_segments", "retransmitted_segments", "est_loss", "true_loss",
                        "goodput_bps", "ack_latency_p50_ms", "ack_latency_p99_ms", "ack_latency_max_ms",
                        "app_delay_p99_ms"] if c in flows.columns]
    body = [
        "<h1>wirelab analyze report</h1>", meta,
        *(["<h2>Warnings</h2>", f"<ul>{warn}</ul>"] if warn else []),
        "<h2>Plots</h2>", *analyze_plots(d),
    ]
    classes = _csv(d, "classes.csv")
    if len(classes):
        body += ["<h2>Classes</h2>", table(classes)]
    body += ["<h2>Flows</h2>", table(flows[keep] if keep else flows)]
    dest.write_text(page("wirelab analyze report", ["\n".join(body)]))
    return dest
