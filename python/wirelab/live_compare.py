"""Kernel TCP next to wirelab's TCP on one emulated bottleneck (issue 16).

A live run (``wirelab live``) in which a kernel flow (a TUN node's program) and a wirelab
flow (a simulated host's ``tcp-bulk``) of the same congestion control share a bottleneck
leaves: the sinks' received bytes over time (``flow_timeseries.csv``), wirelab's socket
state (``tcp_timeseries.csv``: ``cwnd``, ``srtt_ms``), and the kernel socket's state as
``ss -tin`` printed it every 100 ms (a ``spawn`` command's log, each sample preceded by a
``T <unix time>`` line). :func:`compare` lines them up on the run's clock (``summary.json``
``live.t0_unix_s``) and writes ``compare.json``, ``compare.md`` and ``compare.png``. With a
``queue_probe`` on the bottleneck (``queue_probe.csv``) it adds, per flow, the share of its
data packets the bottleneck dropped and the share that reached it back to back (within
50 µs of the flow's previous one: a GSO burst).

    python -m wirelab.live_compare OUT --ss cmd/k-spawn-0.log --kernel-sink ksink \\
        --wirelab-sink wsink --wirelab-flow wbulk --kernel-port 5001
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd

_NUM = r"([0-9.]+)"


def parse_ss(log: Path, t0_unix: float, dport: int) -> pd.DataFrame:
    """Samples of the kernel socket to ``dport``: time_s, cwnd, srtt_ms, rttvar_ms,
    delivery_rate_bps, retrans (total), from ``ss -tin`` output."""
    rows = []
    t = None
    want = False
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("T "):
            t = float(line.split()[1]) - t0_unix
            continue
        if line.startswith("ESTAB"):
            f = line.split()
            want = len(f) >= 5 and f[4].rsplit(":", 1)[-1] == str(dport)
            continue
        if want and t is not None and "cwnd:" in line:
            def get(key, cast=float, default=float("nan")):
                m = re.search(r"\b" + key + ":" + _NUM, line)
                return cast(m.group(1)) if m else default
            rtt = re.search(r"\brtt:" + _NUM + "/" + _NUM, line)
            retr = re.search(r"\bretrans:\d+/(\d+)", line)
            rate = re.search(r"\bdelivery_rate (\d+)bps", line)
            rows.append({
                "time_s": round(t, 3),
                "cwnd": get("cwnd", int, 0),
                "srtt_ms": float(rtt.group(1)) if rtt else float("nan"),
                "rttvar_ms": float(rtt.group(2)) if rtt else float("nan"),
                "delivery_rate_bps": float(rate.group(1)) if rate else float("nan"),
                "retrans": int(retr.group(1)) if retr else 0,
            })
            want = False
    return pd.DataFrame(rows)


def probe_stats(probe: Path, kernel_port: int, skip_s: float) -> dict:
    """Per flow ("kernel": data to ``kernel_port``, "wirelab": the other data) at the
    bottleneck after ``skip_s``: ``bottleneck_loss`` (drops / arrivals) and
    ``back_to_back`` (arrivals within 50 µs of the flow's previous arrival)."""
    p = pd.read_csv(probe)
    p = p[(p["len"] > 1000) & p["event"].isin(["enqueue", "drop"]) & (p["time_ns"] > skip_s * 1e9)]
    out = {}
    for who, g in (("kernel", p[p["dport"] == kernel_port]), ("wirelab", p[p["dport"] != kernel_port])):
        # one interface: a probe on every interface of a router sees each packet once
        gaps = g["time_ns"].diff().dropna()
        out[who] = {"bottleneck_loss": float((g["event"] == "drop").mean()) if len(g) else float("nan"),
                    "back_to_back": float((gaps < 50_000).mean()) if len(gaps) else float("nan")}
    return out


def _rate(flows: pd.DataFrame, sink: str) -> pd.DataFrame:
    f = flows[flows["flow"] == sink][["time_s", "rx_bytes"]].copy()
    f["mbps"] = f["rx_bytes"].diff().fillna(f["rx_bytes"]) * 8 / f["time_s"].diff().fillna(f["time_s"]) / 1e6
    return f


def compare(out: str | Path, ss_log: str | Path, kernel_sink: str, wirelab_sink: str, wirelab_flow: str,
            kernel_port: int, skip_s: float = 5.0) -> dict:
    """Writes compare.json/.md/.png into ``out`` and returns the numbers. Means and
    medians are over the run after ``skip_s`` seconds (slow start excluded)."""
    out = Path(out)
    summary = json.loads((out / "summary.json").read_text())
    t0 = summary["live"]["t0_unix_s"]
    ss = parse_ss(out / ss_log, t0, kernel_port)
    flows = pd.read_csv(out / "flow_timeseries.csv")
    tcp = pd.read_csv(out / "tcp_timeseries.csv")
    w = tcp[(tcp["flow"] == wirelab_flow) & (tcp["state"] == "ESTAB")]
    k_rate, w_rate = _rate(flows, kernel_sink), _rate(flows, wirelab_sink)
    end = float(flows["time_s"].max())

    def mean_rate(r):
        r = r[r["time_s"] > skip_s]
        return float((r["rx_bytes"].iloc[-1] - r["rx_bytes"].iloc[0]) * 8 / (r["time_s"].iloc[-1] - r["time_s"].iloc[0]) / 1e6) if len(r) > 1 else 0.0

    def med(df, col):
        d = df[df["time_s"] > skip_s][col].dropna()
        return float(d.median()) if len(d) else float("nan")

    kt, wt = mean_rate(k_rate), mean_rate(w_rate)
    res = {
        "seconds": end,
        "skip_s": skip_s,
        "kernel": {"throughput_mbps": kt, "cwnd_median": med(ss, "cwnd"), "srtt_ms_median": med(ss, "srtt_ms"),
                   "retrans": int(ss["retrans"].max()) if len(ss) else 0, "samples": len(ss)},
        "wirelab": {"throughput_mbps": wt, "cwnd_median": med(w, "cwnd"), "srtt_ms_median": med(w, "srtt_ms"),
                    "retrans": int(w["total_retrans"].max()) if len(w) else 0, "samples": len(w)},
    }
    if (out / "queue_probe.csv").exists():
        for who, st in probe_stats(out / "queue_probe.csv", kernel_port, skip_s).items():
            res[who].update(st)
    res["jain"] = (kt + wt) ** 2 / (2 * (kt * kt + wt * wt)) if kt + wt > 0 else float("nan")
    res["ratio_wirelab_over_kernel"] = wt / kt if kt > 0 else float("nan")
    (out / "compare.json").write_text(json.dumps(res, indent=2) + "\n")
    lines = [
        f"# Kernel vs wirelab on one bottleneck ({end:.0f} s, statistics after {skip_s:.0f} s)",
        "",
        "| | throughput Mbit/s | median cwnd (pkts) | median srtt ms | retransmits | samples | bottleneck loss | back to back |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for who in ("kernel", "wirelab"):
        r = res[who]
        pr = f"{r['bottleneck_loss']:.1%} | {r['back_to_back']:.2f}" if "back_to_back" in r else "– | –"
        lines.append(f"| {who} | {r['throughput_mbps']:.2f} | {r['cwnd_median']:.0f} | {r['srtt_ms_median']:.1f} | {r['retrans']} | {r['samples']} | {pr} |")
    lines += ["", f"Jain's index {res['jain']:.3f}; wirelab/kernel throughput {res['ratio_wirelab_over_kernel']:.2f}", ""]
    (out / "compare.md").write_text("\n".join(lines))
    _plot(out / "compare.png", k_rate, w_rate, ss, w)
    return res


def congestion_epochs(cwnd: pd.DataFrame, after_s: float = 1.0, min_len_s: float = 1.0) -> pd.DataFrame:
    """The congestion-avoidance epochs of a cwnd series (columns time_s, cwnd; from
    ``parse_ss`` or ``tcp_timeseries.csv``): an epoch starts at the first growth after
    ``after_s`` or after a reduction, and ends where cwnd falls by more than 2 packets.
    One row per epoch longer than ``min_len_s``: start_s, end_s, period_s, w_start,
    w_end (the cwnd just before the reduction: CUBIC's next W_max), g1 and g2 (growth in
    the first and second half of the epoch: CUBIC's concave approach to W_max has
    g1 > g2, Reno's line g1 ≈ g2)."""
    t = cwnd["time_s"].to_numpy()
    w = cwnd["cwnd"].to_numpy()
    spans, start = [], None
    for i in range(len(w) - 1):
        if w[i + 1] + 2 < w[i]:
            if start is not None:
                spans.append((start, i))
                start = None
        elif start is None and t[i] > after_s and w[i + 1] > w[i]:
            start = i
    rows = []
    for a, b in spans:
        if t[b] - t[a] <= min_len_s:
            continue
        mid = (t[a] + t[b]) / 2
        m = a + int((t[a:b + 1] <= mid + 1e-9).sum()) - 1
        rows.append({"start_s": float(t[a]), "end_s": float(t[b]), "period_s": float(t[b] - t[a]),
                     "w_start": int(w[a]), "w_end": int(w[b]), "g1": int(w[m] - w[a]), "g2": int(w[b] - w[m])})
    return pd.DataFrame(rows, columns=["start_s", "end_s", "period_s", "w_start", "w_end", "g1", "g2"])


def _plot(path: Path, k_rate, w_rate, ss, w) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    ax[0].plot(k_rate["time_s"], k_rate["mbps"], label="kernel")
    ax[0].plot(w_rate["time_s"], w_rate["mbps"], label="wirelab")
    ax[0].set_ylabel("throughput (Mbit/s)")
    ax[1].plot(ss["time_s"], ss["cwnd"], label="kernel (ss -ti)")
    ax[1].plot(w["time_s"], w["cwnd"], label="wirelab (tcp_info)")
    ax[1].set_ylabel("cwnd (packets)")
    ax[2].plot(ss["time_s"], ss["srtt_ms"], label="kernel")
    ax[2].plot(w["time_s"], w["srtt_ms"], label="wirelab")
    ax[2].set_ylabel("srtt (ms)")
    ax[2].set_xlabel("time (s)")
    for a in ax:
        a.legend(loc="upper right")
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m wirelab.live_compare", description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--ss", required=True, help="the ss sampler's log, relative to OUT")
    p.add_argument("--kernel-sink", required=True)
    p.add_argument("--wirelab-sink", required=True)
    p.add_argument("--wirelab-flow", required=True)
    p.add_argument("--kernel-port", type=int, required=True)
    p.add_argument("--skip", type=float, default=5.0)
    a = p.parse_args(argv)
    r = compare(a.out, a.ss, a.kernel_sink, a.wirelab_sink, a.wirelab_flow, a.kernel_port, a.skip)
    print((Path(a.out) / "compare.md").read_text())
    return 0 if r["kernel"]["samples"] and r["wirelab"]["samples"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
