"""``wirelab report DIR``: a self-contained HTML report (plots embedded) for one run."""
from __future__ import annotations

import argparse
import base64
import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..result import Result  # noqa: E402

MAX_LINES = 12  # more series than this make a plot unreadable; the rest is in the tables


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _img(b64: str, alt: str) -> str:
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}"/><figcaption>{html.escape(alt)}</figcaption></figure>'


def _table(df) -> str:
    if df is None or len(df) == 0:
        return "<p><em>none</em></p>"
    return df.to_html(index=False, float_format=lambda x: f"{x:.6g}", border=0, classes="t")


def plots(res: Result) -> list[str]:
    out = []
    ts = res.flow_timeseries
    if len(ts):
        rx = ts[ts.groupby("flow")["rx_bytes"].transform("max") > 0]
        tx = ts[ts.groupby("flow")["tx_bytes"].transform("max") > 0]
        for df, col, title in [(rx, "rx_rate_bps", "Receive rate per flow"), (tx, "tx_rate_bps", "Send rate per flow")]:
            if not len(df):
                continue
            fig, ax = plt.subplots(figsize=(8, 3.2))
            for i, (name, g) in enumerate(df.groupby("flow", sort=True)):
                if i >= MAX_LINES:
                    break
                ax.plot(g["time_s"], g[col] / 1e6, label=name, lw=1.2)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("Mbit/s")
            ax.set_title(title)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, ncol=2, loc="best")
            out.append(_img(_png(fig), title))
    qs = res.queue_timeseries
    if len(qs):
        busy = qs[qs.groupby("dev")["backlog"].transform("max") > 0]
        if len(busy):
            fig, ax = plt.subplots(figsize=(8, 3.2))
            for i, (dev, g) in enumerate(busy.groupby("dev", sort=True)):
                if i >= MAX_LINES:
                    break
                ax.plot(g["time_s"], g["qlen"], label=dev, lw=1.2)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("packets queued")
            ax.set_title("Queue length (sampled)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            out.append(_img(_png(fig), "Queue length (sampled)"))
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
            out.append(_img(_png(fig), "Queue sojourn time per packet (probe)"))
    return out


CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1000px;color:#222}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
table.t{border-collapse:collapse;font-size:.8em}table.t td,table.t th{padding:.2em .5em;border-bottom:1px solid #eee;text-align:right}
figure{margin:1em 0}img{max-width:100%}figcaption{font-size:.8em;color:#666}code{background:#f4f4f4;padding:0 .2em}"""


def build_report(out_dir: Path, dest: Path | None = None) -> Path:
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
        "<h2>Files</h2>", f"<ul>{files}</ul>",
    ])
    dest.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>wirelab: {html.escape(s['scenario']['name'])}</title><style>{CSS}</style></head><body>{body}</body></html>\n")
    return dest


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="wirelab report", description="Build an HTML report from a run's output directory.")
    ap.add_argument("dir", type=Path, help="output directory of `wirelab run`")
    ap.add_argument("--out", type=Path, default=None, help="report file (default DIR/report.html)")
    a = ap.parse_args(argv)
    if not (a.dir / "summary.json").exists():
        print(f"error: {a.dir} has no summary.json (is it the --out of `wirelab run`?)")
        return 2
    p = build_report(a.dir, a.out)
    print(p)
    return 0
