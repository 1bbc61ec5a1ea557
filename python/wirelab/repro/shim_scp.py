"""Seed system 5 (transparent TCP-to-SCTP shim, issue #8): the scp study and the failover demo.

Runs the scp study in-process (``wirelab.run``) for every (profile, mode, loss rate, file size,
seed) — modes ``tcp`` (shim disabled), ``shim`` (TCP–SCTP–TCP, shim on both ends,
``scenarios/shim/scp.toml``) and ``native`` (TCP–SCTP, shim client and a native SCTP
server, ``scenarios/shim/scp-native.toml``) — and ``scenarios/shim/failover.toml`` for the
path-failure demo, then writes tables and figures::

    python -m wirelab.repro.shim_scp --out DIR [--jobs 2]    # default ./wirelab-repro-shim_scp
    python -m wirelab.repro.shim_scp --out DIR --runs 10 --runs-small 30   # quicker
    python -m wirelab.repro.shim_scp --out DIR --only failover

Outputs in DIR: ``runs.jsonl`` (one line per run; rerunning resumes and skips finished
runs), ``results.csv``, ``cells.csv`` (mean, sd, 95 % CI per cell), ``table.md``,
``paired.csv``/``paired.md`` (native server vs shim-to-shim, seed by seed),
``retrans.md`` (client retransmissions per run, TCP vs SCTP),
``stalls.csv`` (sender idle periods from captures of representative runs),
``shim-scp-<profile>.png``, ``failover/`` and ``shim-failover.png``.

The experiment (seed document, "Performance Measurements"): scp of 50 KB, 500 KB, 5 MB and
25 MB over a 1.5 Mbit/s, 35 ms dummynet path with a 50-packet tail-drop queue and uniform
loss of 1, 3, 6, 10 % (0 % added as the baseline), "average transfer times of 30 runs for all
but 50 KB; 90 runs for 50 KB transfers". Sizes are binary (50 KB = 51 200 bytes).

The shim falls back to TCP when its fallback timer (3 s, wirelab's choice; the original value
is unknown) fires before the SCTP handshake completes. RTO.Initial is also 3 s, so one lost
INIT / INIT-ACK / COOKIE-ECHO / COOKIE-ACK makes the connection fall back. Every run records
which transport actually carried the bytes (``transport``), and the tables give both the
shim as run and the runs that stayed on SCTP. With a native server the same event fails the
connect (the server has no TCP listener), so the ``native`` column averages the runs that
connected and counts the failures.
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import struct
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import stats
from .common import add_out, ipv4, pcap_packets, pyplot, run, save, scenario_file, stamp

SCP = scenario_file("shim/scp.toml")
SCP_NATIVE = scenario_file("shim/scp-native.toml")
FAILOVER = scenario_file("shim/failover.toml")
SIZES = {"50 KB": 51_200, "500 KB": 512_000, "5 MB": 5_242_880, "25 MB": 26_214_400}
LOSSES = (0, 1, 3, 6, 10)
PROFILES = ("freebsd-4.10", "linux-6")
#: tcp: shim disabled on both hosts; shim: TCP–SCTP–TCP (shim on both ends, scp.toml);
#: native: TCP–SCTP (shim client, native SCTP server `sctp-sink`, scp-native.toml)
MODES = ("tcp", "shim", "native")
SCENARIO = {"tcp": SCP, "shim": SCP, "native": SCP_NATIVE}
#: "the same with the shim disabled": both hosts keep the shim, every rule says disable.
TCP_OVERRIDES = ['node.c.shim=["remote default disable"]', 'node.s.shim=["local default disable"]']
#: the failover demo with a native SCTP server: no shim on `s`, an `sctp-sink` on port 22
NATIVE_FAILOVER = ["node.s.shim=[]", "app.sshd.kind=sctp-sink"]
MODE_LABEL = {"tcp": "TCP (shim disabled)", "shim": "shim both ends (SCTP)", "native": "shim client, native SCTP server"}
PROFILE_NOTE = {
    "freebsd-4.10": "TCP freebsd-4.10 (NewReno, no SACK); SCTP linux-2.6.37 (no KAME model)",
    "linux-6": "TCP linux-6 (CUBIC, SACK, RACK, PRR); SCTP linux-6",
}


@dataclass(frozen=True)
class Run:
    """One scp run."""

    profile: str
    mode: str
    loss: float
    size: str
    seed: int
    #: extra `--set` overrides for every run (``--set`` of this script)
    extra: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.profile}/{self.mode}/l{self.loss:g}/{self.size.replace(' ', '')}/s{self.seed}"

    def overrides(self) -> list[str]:
        ov = [f"scenario.profile={self.profile}",
              f"link.bottleneck.netem=rate 1.5mbit delay 35ms loss {self.loss:g}%",
              f'app.scp.bytes="{SIZES[self.size]}"']
        if self.mode == "tcp":
            ov += TCP_OVERRIDES
        return ov + list(self.extra)


def transport_of(d: Path, flow: str = "scp") -> str:
    """The transport that carried the client's stream (`flows.csv` `proto`: `tcp`, or
    `sctp` for a shim connection that stayed on SCTP; a fallback says `tcp`)."""
    fl = pd.read_csv(d / "flows.csv").set_index("name")
    return str(fl.loc[flow, "proto"])


def summarize(run: Run, d: Path) -> dict:
    """One results row from a run directory."""
    fl = pd.read_csv(d / "flows.csv").set_index("name")
    c, s = fl.loc["scp"], fl.loc["sshd"]
    row = {"profile": run.profile, "mode": run.mode, "loss": run.loss, "size": run.size,
           "bytes": SIZES[run.size], "seed": run.seed, "state": str(c["state"]),
           "transfer_time_s": float(c["transfer_time_s"]), "goodput_bps": float(c["goodput_bps"]),
           "server_rx": int(s["rx_bytes"]), "transport": transport_of(d),
           # shim over SCTP: DATA chunks sent and SCTP retransmissions (flows.csv since 7018042)
           "tx_packets": int(c["tx_packets"]), "retrans": int(c["retrans"]),
           "error": "" if pd.isna(c.get("error")) else str(c["error"])}
    # data phase: bytes written / sender goodput (t_data → done), the "data phase" time of §5.5
    row["data_time_s"] = SIZES[run.size] * 8 / row["goodput_bps"] if row["goodput_bps"] > 0 else float("nan")
    row["tcp_retrans"] = int(c["retrans"]) if row["transport"] == "tcp" else -1
    return row


def run_grid(runs: list[Run], out: Path, jobs: int) -> pd.DataFrame:
    """Runs what is not yet in runs.jsonl, `jobs` at a time; returns all rows."""
    log = out / "runs.jsonl"
    done: dict[str, dict] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            r = json.loads(line)
            done[r["key"]] = r
    todo = [r for r in runs if r.key not in done]
    lock = threading.Lock()
    tmp = out / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    n = [0]

    def one(r: Run) -> None:
        d = tmp / r.key.replace("/", "_")
        run(SCENARIO[r.mode], d, seed=r.seed, overrides=r.overrides())
        row = summarize(r, d)
        row["key"] = r.key
        shutil.rmtree(d, ignore_errors=True)
        with lock:
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")
            done[r.key] = row
            n[0] += 1
            if n[0] % 100 == 0:
                print(f"  {n[0]}/{len(todo)} runs", file=sys.stderr, flush=True)

    print(f"{len(todo)} runs to do ({len(runs) - len(todo)} already done)", file=sys.stderr, flush=True)
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        for f in [ex.submit(one, r) for r in todo]:
            f.result()
    keys = {r.key for r in runs}
    return pd.DataFrame([v for k, v in done.items() if k in keys])


def cells(df: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and 95 % CI half-width of the transfer time per cell (all runs as run), plus
    the same over the shim runs that stayed on SCTP and the fallback count."""
    rows = []
    for (p, m, l, s), g in df.groupby(["profile", "mode", "loss", "size"], sort=False):
        ok = g[g["state"] == "done"]
        t = ok["transfer_time_s"].to_numpy()
        mean, ci, n = stats.mean_ci(t)
        row = {"profile": p, "mode": m, "loss": l, "size": s, "n": len(g), "done": n,
               "mean_s": mean, "sd_s": stats.mean_sd(t)[1], "ci95_s": ci,
               "median_s": stats.percentile(t, 50),
               "data_mean_s": float(ok["data_time_s"].mean()) if n else float("nan"),
               # shim: connections that fell back to TCP; native: the same event, which fails
               # the connect (the native server has no TCP listener: ECONNREFUSED)
               "fallbacks": int((g["transport"] == "tcp").sum()) if m != "tcp" else 0}
        row["sctp_mean_s"], row["sctp_ci95_s"], row["sctp_n"] = stats.mean_ci(ok[ok["transport"] == "sctp"]["transfer_time_s"])
        rows.append(row)
    return pd.DataFrame(rows)


def _ci(m: float, c: float) -> str:
    if math.isnan(m):
        return "–"
    if math.isnan(c):
        return f"{m:.3g}"
    if m >= 100:
        return f"{m:.0f} ± {c:.0f}"
    return f"{m:.2f} ± {c:.2f}" if m < 10 else f"{m:.1f} ± {c:.1f}"


def write_table(cs: pd.DataFrame, path: Path) -> str:
    """Markdown: per profile, rows = (size, loss); TCP, shim on both ends as run, ratio,
    fallbacks, shim runs on SCTP only, and the shim client with a native SCTP server (runs
    that connected; those whose handshake fell back fail) with its ratio to TCP."""
    out = []
    for p in PROFILES:
        sub = cs[cs["profile"] == p]
        if sub.empty:
            continue
        out.append(f"\n**{p}** — {PROFILE_NOTE[p]}. Transfer time in s, mean ± 95 % CI half-width "
                   "(connect → EOF from the server; n runs per cell).\n")
        out.append("| size | loss | n | TCP | shim both ends (as run) | shim/TCP | fallbacks to TCP | "
                   "shim both ends, runs on SCTP only (n) | native server (n done) | native/TCP | native: failed connects |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for s in SIZES:
            for l in LOSSES:
                r = {m: sub[(sub["mode"] == m) & (sub["size"] == s) & (sub["loss"] == l)] for m in MODES}
                r = {m: (g.iloc[0] if not g.empty else None) for m, g in r.items()}
                if all(v is None for v in r.values()):
                    continue
                tr, hr, nr = r["tcp"], r["shim"], r["native"]
                tm = tr["mean_s"] if tr is not None else float("nan")

                def ratio(x):
                    return f"{x['mean_s'] / tm:.2f}" if x is not None and tr is not None else "–"

                n = int(next(v for v in r.values() if v is not None)["n"])
                undone = ""
                for lab, x in (("TCP", tr), ("shim", hr), ("native", nr)):
                    missing = 0 if x is None else int(x["n"] - x["done"]) - (int(x["fallbacks"]) if lab == "native" else 0)
                    if missing > 0:
                        undone += f" ({lab}: {missing} unfinished)"
                out.append(
                    f"| {s} | {l:g} % | {n} | {_ci(tm, tr['ci95_s']) if tr is not None else '–'} | "
                    f"{_ci(hr['mean_s'], hr['ci95_s']) if hr is not None else '–'} | {ratio(hr)}{undone} | "
                    f"{int(hr['fallbacks']) if hr is not None else '–'} | "
                    f"{_ci(hr['sctp_mean_s'], hr['sctp_ci95_s']) + ' (' + str(int(hr['sctp_n'])) + ')' if hr is not None else '–'} | "
                    f"{_ci(nr['mean_s'], nr['ci95_s']) + ' (' + str(int(nr['done'])) + ')' if nr is not None else '–'} | "
                    f"{ratio(nr)} | {int(nr['fallbacks']) if nr is not None else '–'} |")
    text = "\n".join(out) + "\n"
    path.write_text(text)
    return text


def paired(df: pd.DataFrame) -> pd.DataFrame:
    """Per cell: the shim-to-shim runs that stayed on SCTP against the native-server runs of
    the same seeds (same loss pattern: the runs differ only in the server's shim). Counts the
    seeds in one set but not the other, and the per-seed differences native − shim."""
    k = ["profile", "loss", "size", "seed"]
    sh = df[(df["mode"] == "shim") & (df["transport"] == "sctp") & (df["state"] == "done")]
    na = df[(df["mode"] == "native") & (df["state"] == "done")]
    m = sh[k + ["transfer_time_s", "tx_packets"]].merge(na[k + ["transfer_time_s", "tx_packets"]], on=k, how="outer",
                                                        suffixes=("_shim", "_native"), indicator=True)
    rows = []
    for (p, l, s), g in m.groupby(["profile", "loss", "size"], sort=False):
        both = g[g["_merge"] == "both"]
        d = (both["transfer_time_s_native"] - both["transfer_time_s_shim"]).to_numpy()
        dp = (both["tx_packets_native"] - both["tx_packets_shim"]).to_numpy()
        rows.append({"profile": p, "loss": l, "size": s, "pairs": len(both),
                     "shim_sctp_only": int((g["_merge"] == "left_only").sum()),
                     "native_only": int((g["_merge"] == "right_only").sum()),
                     "diff_mean_ms": float(d.mean() * 1e3) if len(d) else float("nan"),
                     "diff_min_ms": float(d.min() * 1e3) if len(d) else float("nan"),
                     "diff_max_ms": float(d.max() * 1e3) if len(d) else float("nan"),
                     "identical_within_1ms": int((np.abs(d) < 1e-3).sum()),
                     "tx_packets_diff_mean": float(dp.mean()) if len(dp) else float("nan")})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    order = {p: i for i, p in enumerate(PROFILES)}, {s: i for i, s in enumerate(SIZES)}
    return out.sort_values(["profile", "size", "loss"], key=lambda c: c.map(order[0]) if c.name == "profile"
                           else c.map(order[1]) if c.name == "size" else c).reset_index(drop=True)


def paired_table(pr: pd.DataFrame) -> str:
    lines = ["| profile | size | loss | seeds on SCTP in both | only shim–shim / only native | "
             "native − shim, mean (min … max) ms | pairs within 1 ms | DATA packets, native − shim (mean) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for _, r in pr.iterrows():
        lines.append(f"| {r['profile']} | {r['size']} | {r['loss']:g} % | {r['pairs']} | "
                     f"{r['shim_sctp_only']} / {r['native_only']} | {r['diff_mean_ms']:.1f} "
                     f"({r['diff_min_ms']:.1f} … {r['diff_max_ms']:.1f}) | {r['identical_within_1ms']} | "
                     f"{r['tx_packets_diff_mean']:+.2f} |")
    return "\n".join(lines) + "\n"


def retrans_table(df: pd.DataFrame, sizes=("5 MB", "25 MB")) -> str:
    """Retransmissions per run of the client (`flows.csv` `retrans`: TCP segments, or SCTP
    DATA chunks for the shim's association), by the transport that carried the bytes: TCP
    runs (mode tcp) against the shim-to-shim runs that stayed on SCTP. The share is
    retransmissions / new data packets (TCP: segments sent − retransmissions; SCTP: DATA
    chunks sent, which `tx_packets` counts without retransmissions)."""
    ok = df[df["state"] == "done"]
    lines = ["| profile | size | loss | TCP retrans / run | TCP share | SCTP retrans / run | SCTP share | SCTP / TCP |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for p in [x for x in PROFILES if x in set(ok["profile"])]:
        for s in [x for x in sizes if x in set(ok["size"])]:
            for l in sorted(set(ok["loss"])):
                c = ok[(ok["profile"] == p) & (ok["size"] == s) & (ok["loss"] == l)]
                t = c[c["mode"] == "tcp"]
                q = c[(c["mode"] == "shim") & (c["transport"] == "sctp")]
                if t.empty or q.empty:
                    continue
                tr, qr = t["retrans"].mean(), q["retrans"].mean()
                tsh = 100 * tr / max(1.0, (t["tx_packets"] - t["retrans"]).mean())
                qsh = 100 * qr / max(1.0, q["tx_packets"].mean())
                ratio = f"{qr / tr:.2f}" if tr > 0 else "–"
                lines.append(f"| {p} | {s} | {l:g} % | {tr:.0f} | {tsh:.1f} % | {qr:.0f} | {qsh:.1f} % | {ratio} |")
    return "\n".join(lines) + "\n"


def plot_profile(cs: pd.DataFrame, profile: str, path: Path) -> None:
    """Transfer time vs loss, one panel per file size: TCP, shim on both ends, shim client
    with a native SCTP server, with 95 % CIs."""
    plt = pyplot()
    sub = cs[cs["profile"] == profile]
    sizes = [s for s in SIZES if (sub["size"] == s).any()]
    if not sizes:
        return
    fig, axes = plt.subplots(1, len(sizes), figsize=(3 * len(sizes), 3.3), squeeze=False)
    axes = axes[0]
    colors = {"tcp": "#d62728", "shim": "#1f77b4", "native": "#2ca02c"}
    for ax, s in zip(axes, sizes):
        for i, m in enumerate(MODES):
            g = sub[(sub["mode"] == m) & (sub["size"] == s)].sort_values("loss")
            if g.empty:
                continue
            x = g["loss"].to_numpy() + (i - 1) * 0.25
            label = {"tcp": MODE_LABEL[m], "shim": MODE_LABEL[m] + " as run",
                     "native": MODE_LABEL[m] + " (connected runs)"}[m]
            ax.errorbar(x, g["mean_s"], yerr=g["ci95_s"], fmt="s-" if m == "native" else "o-", ms=3.5,
                        lw=1.0 if m == "native" else 1.2, capsize=2.5, color=colors[m], label=label)
            if m == "shim":
                ax.plot(x, g["sctp_mean_s"], "--", lw=0.9, color=colors[m], alpha=0.7, label="shim both ends, runs that stayed on SCTP")
        line = SIZES[s] * 8 / 1.5e6
        ax.axhline(line, color="#888888", lw=0.7, ls=":")
        ax.set_title(f"{s} ({int(sub[sub['size'] == s]['n'].max()) if not sub.empty else 0} runs/cell)", fontsize=9)
        ax.set_xlabel("uniform loss (%)", fontsize=8)
        ax.set_xticks(LOSSES)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
        ax.set_ylim(bottom=0)
    axes[0].set_ylabel("transfer time (s), mean ± 95 % CI", fontsize=8)
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"scp over 1.5 Mbit/s, 35 ms, 50-pkt drop-tail — {PROFILE_NOTE[profile]} (dotted: line rate)", fontsize=9)
    save(fig, path)


# ---- sender stalls from captures (mechanism evidence) ----

def data_times(pcap: Path, min_len: int = 500) -> np.ndarray:
    """Timestamps (s) of the client's data packets (IP total length ≥ min_len, src 10.128.0.1)
    in a nanosecond pcap of c:eth0."""
    src = bytes([10, 128, 0, 1])
    return np.array([t for t, f in pcap_packets(pcap) if (ip := ipv4(f)) is not None
                     and struct.unpack_from(">H", ip, 2)[0] >= min_len and ip[12:16] == src])


GAP_S = 0.2
#: SCTP DATA payload of a full packet (MTU 1500 - IP 20 - common header 12 - DATA header 16),
#: to express the association's cwnd and flight in packets
SCTP_PAYLOAD = 1452


def window_stats(d: Path, transport: str, t_end: float, flow: str = "scp") -> dict:
    """Time averages over the data phase (1 s … t_end) of the client's congestion window and
    data in flight, in full-sized packets, and of its smoothed RTT; from `tcp_timeseries.csv`
    (in flight = unacked − sacked − lost + retrans, Linux's tcp_packets_in_flight) or from
    `sctp_timeseries.csv` (the shim's association)."""
    if transport == "tcp":
        ts = pd.read_csv(d / "tcp_timeseries.csv")
        ts = ts[(ts["flow"] == flow) & (ts["time_s"] >= 1) & (ts["time_s"] < t_end)]
        cwnd, flight = ts["cwnd"], ts["unacked"] - ts["sacked"] - ts["lost"] + ts["retrans"]
    else:
        ts = pd.read_csv(d / "sctp_timeseries.csv")
        ts = ts[(ts["flow"] == flow) & (ts["time_s"] >= 1) & (ts["time_s"] < t_end)]
        cwnd, flight = ts["cwnd"] / SCTP_PAYLOAD, ts["flight"] / SCTP_PAYLOAD
    return {"cwnd_pkts": float(cwnd.mean()), "flight_pkts": float(flight.mean()), "srtt_ms": float(ts["srtt_ms"].mean())}


def stalls(out: Path, losses=(3, 6, 10), size="5 MB", seeds=range(1, 11)) -> pd.DataFrame:
    """Sender idle gaps ≥ GAP_S (retransmission timeouts: at 1.5 Mbit/s a busy sender emits
    a data packet every 8 ms) in representative runs, grouped by the transport that carried
    the bytes, with the sender's mean window, flight and srtt (100 ms samples)."""
    rows = []
    for p in PROFILES:
        for m in ("tcp", "shim"):
            for l in losses:
                for sd in seeds:
                    r = Run(p, m, l, size, sd)
                    d = out / "tmp" / ("cap_" + r.key.replace("/", "_"))
                    run(SCP, d, seed=sd, overrides=r.overrides() + ['measure.capture=["c:eth0"]', "measure.sample_interval=100ms"])
                    t = data_times(d / "pcap" / "c-eth0.pcap")
                    gaps = np.diff(t) if len(t) > 1 else np.array([])
                    big = gaps[gaps >= GAP_S]
                    row = summarize(r, d)
                    rows.append({"profile": p, "mode": m, "loss": l, "size": size, "seed": sd,
                                 "transport": row["transport"], "transfer_time_s": row["transfer_time_s"],
                                 "data_pkts": len(t), "stalls": len(big), "stalled_s": float(big.sum()),
                                 **window_stats(d, row["transport"], row["transfer_time_s"])})
                    shutil.rmtree(d, ignore_errors=True)
    df = pd.DataFrame(rows)
    df.to_csv(out / "stalls.csv", index=False)
    return df


def stalls_table(df: pd.DataFrame) -> str:
    g = df.groupby(["profile", "loss", "transport"]).agg(
        n=("seed", "size"), pkts=("data_pkts", "mean"), stalls=("stalls", "mean"), stalled=("stalled_s", "mean"),
        cwnd=("cwnd_pkts", "mean"), flight=("flight_pkts", "mean"), srtt=("srtt_ms", "mean"), t=("transfer_time_s", "mean"),
        tmed=("transfer_time_s", "median")).reset_index()
    lines = [f"| profile | loss | carried by | runs | data pkts sent | idle gaps ≥ {GAP_S:g} s | time idle (s) | "
             "mean cwnd (pkts) | mean in flight (pkts) | mean srtt (ms) | transfer (s), mean / median |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for _, r in g.iterrows():
        lines.append(f"| {r['profile']} | {r['loss']:g} % | {r['transport'].upper()} | {r['n']} | {r['pkts']:.0f} | "
                     f"{r['stalls']:.1f} | {r['stalled']:.1f} | {r['cwnd']:.2f} | {r['flight']:.2f} | {r['srtt']:.0f} | "
                     f"{r['t']:.1f} / {r['tmed']:.1f} |")
    return "\n".join(lines) + "\n"


# ---- the failover demo ----

def failover(out: Path) -> pd.DataFrame:
    """Runs the path-failure demo (TCP, shim on both ends, shim client with a native SCTP
    server; both profiles); returns receiver throughput series; writes failover/summary.csv."""
    base = out / "failover"
    series, rows = [], []
    for p in PROFILES:
        for m in MODES:
            d = base / f"{p}-{m}"
            ov = [f"scenario.profile={p}"] + (TCP_OVERRIDES if m == "tcp" else NATIVE_FAILOVER if m == "native" else [])
            res = run(FAILOVER, d, overrides=ov + ['measure.capture=["s"]'])
            ts = pd.read_csv(d / "flow_timeseries.csv")
            ts = ts[ts["flow"] == "sshd"].copy().sort_values("time_s")
            # goodput over 1 s bins from the cumulative byte count (the 250 ms samples show the
            # shim's 16 KiB message granularity as spikes)
            b = np.floor(ts["time_s"].to_numpy() - 1e-9).astype(int)
            last = pd.Series(ts["rx_bytes"].to_numpy()).groupby(b).max()
            last = last.reindex(range(0, int(b.max()) + 1)).ffill().fillna(0)
            ts = pd.DataFrame({"time_s": last.index + 1.0, "rx_rate_bps": last.diff().fillna(last.iloc[0]).to_numpy() * 8})
            ts["profile"], ts["mode"] = p, m
            series.append(ts)
            fl = pd.read_csv(d / "flows.csv").set_index("name")
            pk = {}
            for cap in res.pcaps:
                for _t, pkt in pcap_packets(cap):
                    if len(pkt) > 23:
                        key = (cap.stem, {6: "tcp", 132: "sctp"}.get(pkt[23], str(pkt[23])))
                        pk[key] = pk.get(key, 0) + 1
            rows.append({"profile": p, "mode": m, "transport": transport_of(d), "state": fl.loc["scp", "state"],
                         "retrans": int(fl.loc["scp", "retrans"]), "fingerprint": res.fingerprint,
                         "transfer_time_s": fl.loc["scp", "transfer_time_s"], "server_rx": fl.loc["sshd", "rx_bytes"],
                         "packets_by_iface": "; ".join(f"{k[0]} {k[1]} {v}" for k, v in sorted(pk.items()))})
    df = pd.DataFrame(rows)
    df.to_csv(base / "summary.csv", index=False)
    return pd.concat(series), df


def plot_failover(ts: pd.DataFrame, summ: pd.DataFrame, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(len(PROFILES), 1, figsize=(9, 2.3 * len(PROFILES) + 0.4), sharex=True)
    colors = {"tcp": "#d62728", "shim": "#1f77b4", "native": "#2ca02c"}
    style = {"shim": dict(lw=2.6, alpha=0.6), "native": dict(lw=1.0, ls="--"), "tcp": dict(lw=1.0)}
    for ax, p in zip(axes, PROFILES):
        for m in ("shim", "native", "tcp"):  # thin lines on top, so all show where they overlap
            g = ts[(ts["profile"] == p) & (ts["mode"] == m)]
            sel = summ[(summ["profile"] == p) & (summ["mode"] == m)]
            if g.empty or sel.empty:
                continue
            sm = sel.iloc[0]
            done = f"done at {sm['transfer_time_s']:.1f} s" if sm["state"] == "done" else f"not done at 200 s ({sm['server_rx'] / 1e6:.2f} MB received)"
            ax.plot(g["time_s"], g["rx_rate_bps"] / 1e6, color=colors[m], drawstyle="steps-pre",
                    label=f"{MODE_LABEL[m]}: {done}", **style[m])
        for x in (10, 110):
            ax.axvline(x, color="#444444", lw=0.8, ls="--")
        ax.text(10.5, 2.7, "primary down", fontsize=7)
        ax.text(110.5, 2.7, "primary up", fontsize=7)
        ax.set_ylim(0, 3.0)
        ax.set_xlim(0, 200)
        ax.set_ylabel("server goodput, 1 s bins (Mb/s)", fontsize=8)
        ax.set_title(f"{p}: {PROFILE_NOTE[p]}", fontsize=8)
        ax.legend(fontsize=7, loc="upper right")
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=8)
    axes[-1].set_xlabel("time (s)", fontsize=8)
    fig.suptitle("5 MB scp-like transfer, multihomed hosts, two 1.5 Mbit/s 35 ms paths; primary cut 10–110 s", fontsize=9)
    save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wirelab.repro.shim_scp", description=__doc__.split("\n\n")[0])
    add_out(ap, "shim_scp")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--runs", type=int, default=30, help="runs per cell (document: 30)")
    ap.add_argument("--runs-small", type=int, default=90, help="runs per 50 KB cell (document: 90)")
    ap.add_argument("--profiles", default=",".join(PROFILES))
    ap.add_argument("--sizes", default=",".join(SIZES), help="comma-separated subset of: " + ", ".join(SIZES))
    ap.add_argument("--losses", default=",".join(map(str, LOSSES)), help="comma-separated loss rates in %%")
    ap.add_argument("--set", dest="extra", action="append", default=[], metavar="K=V",
                    help="extra override for every scp run, e.g. node.c.shim_fallback=off (use a separate --out)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of: " + ", ".join(MODES))
    ap.add_argument("--only", choices=("scp", "stalls", "failover", "report"), default=None)
    args = ap.parse_args(argv)
    out: Path = args.out
    stamp(out, "shim_scp", argv)
    profiles = [p for p in args.profiles.split(",") if p]
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    losses = [float(x) for x in args.losses.split(",") if x.strip()]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [s for s in sizes if s not in SIZES] + [p for p in profiles if p not in PROFILES] + [m for m in modes if m not in MODES]
    if bad:
        ap.error(f"unknown size or profile: {', '.join(bad)}")
    runs = [Run(p, m, l, s, sd, tuple(args.extra)) for p in profiles for s in sizes for l in losses for m in modes
            for sd in range(1, (args.runs_small if s == "50 KB" else args.runs) + 1)]
    if args.only in (None, "scp", "report"):
        df = run_grid(runs, out, args.jobs) if args.only != "report" else pd.read_csv(out / "results.csv")
        df.drop(columns=["key"], errors="ignore").to_csv(out / "results.csv", index=False)
        cs = cells(df)
        cs.to_csv(out / "cells.csv", index=False)
        print(write_table(cs, out / "table.md"))
        pr = paired(df)
        if not pr.empty:
            pr.to_csv(out / "paired.csv", index=False)
            (out / "paired.md").write_text(paired_table(pr))
            print(paired_table(pr))
        if {"tcp", "shim"} <= set(df["mode"]):
            (out / "retrans.md").write_text(retrans_table(df))
        for p in profiles:
            plot_profile(cs, p, out / f"shim-scp-{p}.png")
    if args.only in (None, "stalls"):
        st = stalls(out)
        print(stalls_table(st))
        (out / "stalls.md").write_text(stalls_table(st))
    if args.only in (None, "failover"):
        ts, summ = failover(out)
        print(summ.to_string())
        plot_failover(ts, summ, out / "shim-failover.png")
    shutil.rmtree(out / "tmp", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
