"""Jupyter representations (``_repr_html_``) of a run's :class:`~wirelab.Result` and of a
sweep: a summary table and a few plots, built from the same pieces as the HTML report."""
from __future__ import annotations

import html

from .common import figure, plt


def result_html(res) -> str:
    from . import headline, overview
    s = res.summary
    desc = s["scenario"].get("description") or ""
    parts = [f"<h3>wirelab run <code>{html.escape(s['scenario']['name'])}</code></h3>",
             f"<p><b>{html.escape(desc)}</b></p>" if desc else "",
             f"<p>seed {s['seed']}, {s['sim_seconds']:.3f} s simulated in {s['wall_seconds']:.3f} s, "
             f"{s['events']} events, fingerprint <code>{s['fingerprint']}</code>, "
             f"directory <code>{html.escape(str(res.out_dir))}</code></p>",
             headline(res), *overview(res),
             "<p><small><code>res.flows</code>, <code>res.connections</code>, <code>res.tcp_timeseries</code>, … "
             "are DataFrames; <code>res.plot.cwnd()</code>, <code>.srtt()</code>, <code>.rate()</code>, "
             "<code>.latency_cdf()</code>, <code>.queue_delay()</code> draw them; "
             "<code>wirelab.report.build_report(res.out_dir)</code> writes the full report.</small></p>"]
    return "<div>" + "".join(parts) + "</div>"


def sweep_html(sw) -> str:
    from .sweep import METRICS, _config_labels, _configs, bar_chart, flow_stats, stats_table
    parts = [f"<h3>wirelab sweep <code>{html.escape(sw.name)}</code></h3>",
             f"<p>{len(sw.done)} of {len(sw.planned)} runs finished; swept: "
             + (", ".join(f"<code>{html.escape(p)}</code>" for p in sw.params) or "seeds only")
             + f"; directory <code>{html.escape(str(sw.root))}</code></p>"]
    flows = sw.flows
    if len(flows):
        flows = flows.copy()
        flows["config"] = _config_labels(flows, sw.params)
        stats = flow_stats(flows, sw.params)
        if len(stats):
            for metric, label, _ in METRICS[:1]:
                fig = bar_chart(stats, _configs(flows, sw.params), metric, label, sw.params)
                if fig is not None:
                    parts.append(figure(fig, label))
            parts.append(stats_table(stats))
    else:
        plt.close("all")
    return "<div>" + "".join(parts) + "</div>"
