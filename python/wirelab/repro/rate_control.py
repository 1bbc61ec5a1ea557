"""Seed system 4 (Shah, UC Riverside 2000, issue #7): receiver-side TCP rate control.

Generates the scenarios of ``scenarios/rate-control/``, runs them in-process (``wirelab.run``)
and draws the figures of ``docs/reproductions/rate-control.md`` (thesis chapter 6).

Topologies (the thesis's two testbeds, §6.1):

* **Ethernet** (ford → oid, 10 Mbit/s hub): one point-to-point 10 Mbit/s link between the
  sender and the receiver, 150 µs one way (the thesis measured a 0.3 ms round trip between
  the end of a data frame and the ACK, §6.5). The hub's third host (a Macintosh) was idle,
  so the shared collision domain carries one data and one ACK direction: a full-duplex
  link omits the data/ACK collisions and the half-duplex sharing (see the report).
* **T1** (amx → nox, 6 hops): a chain of 6 links, 5 routers; the 4th link is a 1.544 Mbit/s
  T1 (PPP/HDLC framing, 8 bytes), the others 100 Mbit/s Ethernet; propagation chosen so
  that the idle round trip is 6 ms (§6.7).
* **PPP** (dioxin → nox, 38.8 kbit/s null-modem serial line, §6.8): one link, 1 ms.
* **Hub with two senders** (§5.4.1's usage example, ``important``): the video server and
  ford each on a 10 Mbit/s link to a forwarding node standing for the hub, which reaches
  oid over one 10 Mbit/s link (75 µs per link); CBQ on oid's egress, class 1:2 for packets
  to the video server, 1:1 (bounded, 500 kbit/s) for everything else.

The receiver runs the ``linux-2.2`` profile with the ``net.ipv4.rate_*`` sysctls; the sender
is ttcp: ``tcp-bulk`` with 8 KB writes (ttcp's default buffer) and a byte count.

Command line (outputs, figures included, only under ``--out``, default
``./wirelab-repro-rate_control``)::

    python -m wirelab.repro.rate_control all --out DIR   # every experiment + figures (DIR/img)
    python -m wirelab.repro.rate_control EXP --out DIR   # eth4m, window, midmss, mss, t1, t1bidir, ppp,
                                                         # pppbuf, multi, t1multi, cbq, important, udp,
                                                         # reps, checks
    python -m wirelab.repro.rate_control gen --out scenarios/rate-control

tshark is used for the pcap excerpts (``window``, ``reps``, ``checks``; skipped without it).
"""
from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .common import add_out, label, pyplot, save, stamp
from .common import run as run_scenario

from .rate_control_topology import (  # noqa: F401 (re-exported for the tests and scripts)
    MSS_ETH,
    ETH_RATE,
    T1_RATE,
    PPP_RATE,
    Sc,
    rate_sysctl,
    ttcp,
    sink,
    ethernet,
    t1_path,
    PPP_PING_IP_BYTES,
    PPP_DELAY_PING,
    PPP_DELAY_NAIVE,
    PPP_ERA_QDISC,
    ppp,
)


# ---------------------------------------------------------------------------------------
# running and reading
# ---------------------------------------------------------------------------------------

def run(sc: Sc, out: Path, seed: int | None = None) -> Path:
    """Write ``sc`` to ``out/NAME/scenario.toml``, run it into ``out/NAME/res`` (cached by
    scenario text)."""
    d = out / sc.name
    toml_path, res = d / "scenario.toml", d / "res"
    text = sc.text() + (f"# run with --seed {seed}\n" if seed is not None else "")
    if toml_path.exists() and toml_path.read_text() == text and (res / "flows.csv").exists():
        return res
    d.mkdir(parents=True, exist_ok=True)
    toml_path.write_text(text)
    if res.exists():
        shutil.rmtree(res)
    t0 = time.time()
    run_scenario(toml_path, res, seed=seed)
    print(f"  {sc.name}: {time.time() - t0:.1f} s wall", file=sys.stderr)
    return res


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def flow_series(res: Path, flow: str) -> tuple[list[float], list[float]]:
    """(time_s, rx rate bit/s) of one app per sample."""
    t, r = [], []
    for row in read_csv(res / "flow_timeseries.csv"):
        if row["flow"] == flow:
            t.append(float(row["time_s"]))
            r.append(float(row["rx_rate_bps"]))
    return t, r


def per_second(t: list[float], r: list[float]) -> tuple[list[float], list[float]]:
    """Average samples into whole seconds (the thesis plots per-second rates)."""
    acc: dict[int, list[float]] = {}
    for ti, ri in zip(t, r):
        acc.setdefault(int(ti - 1e-9), []).append(ri)
    secs = sorted(acc)
    return [s + 1.0 for s in secs], [sum(acc[s]) / len(acc[s]) for s in secs]


def rx_bytes_at(res: Path, flow: str, t: float) -> float:
    best = 0.0
    for row in read_csv(res / "flow_timeseries.csv"):
        if row["flow"] == flow and float(row["time_s"]) <= t + 1e-9:
            best = float(row["rx_bytes"])
    return best


def mean_rate(res: Path, flow: str, t0: float, t1: float) -> float:
    """Mean receive rate (bit/s) of ``flow`` over [t0, t1]."""
    return (rx_bytes_at(res, flow, t1) - rx_bytes_at(res, flow, t0)) * 8 / (t1 - t0)


def transfer_rate(res: Path, flow: str) -> float:
    """ttcp's figure: bytes received / time from the first to the last byte (bit/s)."""
    rows = [r for r in read_csv(res / "flow_timeseries.csv") if r["flow"] == flow]
    total = float(rows[-1]["rx_bytes"]) if rows else 0.0
    t_first = next((float(r["time_s"]) for r in rows if float(r["rx_bytes"]) > 0), None)
    t_last = next((float(r["time_s"]) for r in rows if float(r["rx_bytes"]) >= total), None)
    if not total or t_first is None or t_last is None or t_last <= t_first:
        return 0.0
    # the first sample with bytes ends an interval that began one sample earlier
    step = float(rows[1]["time_s"]) - float(rows[0]["time_s"]) if len(rows) > 1 else 0.0
    return total * 8 / (t_last - t_first + step)


def rate_rows(res: Path) -> list[dict]:
    p = res / "tcp_rate_timeseries.csv"
    return read_csv(p) if p.exists() else []


# ---------------------------------------------------------------------------------------
# figures
# ---------------------------------------------------------------------------------------

def _plt():
    return pyplot()


def _save(fig, path: Path) -> None:
    """72 dpi, or 56 if that makes a file over 100 KB."""
    save(fig, path, max_bytes=100_000)
    print(f"  figure {path} ({path.stat().st_size // 1024} KB)", file=sys.stderr)


# ---------------------------------------------------------------------------------------
# experiments
# ---------------------------------------------------------------------------------------

def exp_eth4m(out: Path, img: Path, dur: float = 60.0) -> dict:
    """§6.2.1 figs 6.1–6.3: ttcp controlled to 4 Mbit/s on 10 Mbit/s Ethernet."""
    res = {}
    free = run(ethernet("eth-free", "§6.2: uncontrolled ttcp over 10 Mbit/s Ethernet", 20.0,
                        rate_sysctl(status=0)), out)
    res["uncontrolled_mbps"] = mean_rate(free, "sink1", 5, 20) / 1e6
    runs = {}
    for pol in ("original", "revised"):
        r = run(ethernet(f"eth-4mbit-{pol}", f"§6.2.1: ttcp controlled to 4 Mbit/s, {pol} window policy",
                         dur, rate_sysctl("4mbit", pol)), out)
        runs[pol] = r
        t, rate = flow_series(r, "sink1")
        ts, rs = per_second(t, rate)
        rows = [x for x in rate_rows(r) if x["node"] == "oid"]
        wins = [int(x["window"]) for x in rows if float(x["time_s"]) >= 10]
        steady = [v for tt, v in zip(ts, rs) if tt > 10]
        res[pol] = {
            "mean_mbps": mean_rate(r, "sink1", 10, dur) / 1e6,
            "per_s_min_mbps": min(steady) / 1e6, "per_s_max_mbps": max(steady) / 1e6,
            "window_min": min(wins) if wins else None, "window_max": max(wins) if wins else None,
            "sub_mss_fraction": (sum(w < MSS_ETH for w in wins) / len(wins)) if wins else None,
        }
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex=True)
    for col, pol in enumerate(("original", "revised")):
        r = runs[pol]
        t, rate = flow_series(r, "sink1")
        ax = axes[0][col]
        ax.plot(t, [x / 1e6 for x in rate], lw=0.5, color="0.7", label="100 ms")
        ts, rs = per_second(t, rate)
        ax.plot(ts, [x / 1e6 for x in rs], lw=1.2, color="C0", label="per second")
        ax.axhline(4, ls="--", color="k", lw=0.8, label="target 4 Mbit/s")
        label(ax, title=f"{pol} policy: rate (mean {res[pol]['mean_mbps']:.2f} Mbit/s)", ylabel="Mbit/s")
        ax.set_ylim(0, 10.5)
        ax.legend(fontsize=7, loc="upper right")
        rows = [x for x in rate_rows(r) if x["node"] == "oid"]
        ax = axes[1][col]
        ax.step([float(x["time_s"]) for x in rows], [int(x["window"]) for x in rows],
                where="post", lw=0.8, color="C1", label="controller window")
        ax.axhline(MSS_ETH, ls="--", color="k", lw=0.8, label="1 MSS (1448 B)")
        ax.set_yscale("log")
        label(ax, ylabel="window (bytes)", xlabel="time (s)", legend=dict(fontsize=7, loc="upper right"))
    _save(fig, img / "rate-eth-4mbit.png")
    # fig 6.3: window vs rate (original policy), per 100 ms sample
    r = runs["original"]
    t, rate = flow_series(r, "sink1")
    rows = {round(float(x["time_s"]), 3): int(x["window"]) for x in rate_rows(r) if x["node"] == "oid"}
    pts = [(rows.get(round(tt, 3)), rr) for tt, rr in zip(t, rate) if tt > 5 and rows.get(round(tt, 3))]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([p[0] for p in pts], [p[1] / 8e3 for p in pts], lw=0.4, marker=".", ms=2, color="C0")
    ax.axhline(500, ls="--", color="k", lw=0.8, label="target 4 Mbit/s = 500 kB/s")
    ax.axvline(MSS_ETH, ls=":", color="k", lw=0.8, label="1 MSS")
    ax.set_xscale("log")
    label(ax, xlabel="controller window (bytes)", ylabel="kB/s (100 ms samples)",
          title="original policy: throughput vs window", legend=dict(fontsize=7))
    _save(fig, img / "rate-eth-window-vs-rate.png")
    return res


def tshark_excerpt(pcap: Path, n: int = 12) -> list[str]:
    if not shutil.which("tshark") or not pcap.exists():
        return []
    p = subprocess.run(
        ["tshark", "-r", str(pcap), "-Y", "tcp", "-T", "fields", "-e", "frame.time_relative",
         "-e", "ip.src", "-e", "tcp.len", "-e", "tcp.seq", "-e", "tcp.ack", "-e",
         "tcp.window_size_value", "-o", "tcp.relative_sequence_numbers:TRUE"],
        capture_output=True, text=True)
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    return lines


def exp_window(out: Path, img: Path, dur: float = 8.0) -> dict:
    """§6.3 figs 6.4/6.5: constant receiver window 32 KB → 1 KB, then 2 KB → 1 KB by 256 B."""
    coarse = [k * 1024 for k in range(32, 0, -1)]
    fine = [2048 - 256 * i for i in range(5)]
    sizes = sorted(set(coarse + fine), reverse=True)
    res = {"window_bytes": [], "mbps": []}
    series = {}
    for w in sizes:
        r = run(ethernet(f"win-{w}", f"§6.3: constant receiver window {w} B", dur,
                         rate_sysctl(fixed=w), capture=(w == 1280)), out)
        res["window_bytes"].append(w)
        res["mbps"].append(mean_rate(r, "sink1", 2, dur) / 1e6)
        if w in (32768, 20480, 10240, 4096, 3072, 2048, 1792, 1536, 1280, 1024):
            series[w] = flow_series(r, "sink1")
    pcap = next((out / "win-1280" / "res").glob("**/*.pcap"), None)
    lines = tshark_excerpt(pcap) if pcap else []
    # pick a steady-state excerpt after 3 s
    steady = [l for l in lines if float(l.split("\t")[0]) > 3.0][:12]
    res["tshark_1280"] = steady
    data_lens = [int(l.split("\t")[2]) for l in lines if l.split("\t")[2] not in ("", "0")
                 and float(l.split("\t")[0]) > 2.0]
    hist: dict[int, int] = {}
    for x in data_lens:
        hist[x] = hist.get(x, 0) + 1
    res["seg_len_hist_1280"] = dict(sorted(hist.items(), key=lambda kv: -kv[1])[:6])
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    ax = axes[0]
    ax.plot([w / 1024 for w in res["window_bytes"]], [m * 1e6 / 8e3 for m in res["mbps"]],
            marker="o", ms=3)
    ax.axvline(MSS_ETH / 1024, ls=":", color="k", lw=0.8, label="1 MSS")
    label(ax, xlabel="constant window (KB)", ylabel="kB/s")
    ax.set_yscale("log")
    label(ax, title="throughput per window", legend=dict(fontsize=7))
    for ax, ws, title in ((axes[1], (32768, 20480, 10240, 4096, 3072, 2048, 1024), "32K … 1K (fig 6.4)"),
                          (axes[2], (2048, 1792, 1536, 1280, 1024), "2K … 1K by 256 B (fig 6.5)")):
        for w in ws:
            t, r = per_second(*series[w])
            ax.plot(t, [x / 8e3 for x in r], lw=1, label=f"{w} B")
        ax.set_yscale("log")
        label(ax, xlabel="time (s)", ylabel="kB/s (per second)", title=title, legend=dict(fontsize=6, ncol=2))
    _save(fig, img / "rate-window-sweep.png")
    return res


def exp_mss(out: Path, img: Path, dur: float = 6.0, rtt: float = 0.3e-3) -> dict:
    """§6.5 fig 6.6: throughput vs MSS with the window fixed at 1 MSS (stop-and-wait)."""
    mss_list = [100, 200, 300, 400, 500, 600, 800, 1000, 1200, 1448]
    res = {"mss": [], "mbps": [], "theory_thesis_mbps": [], "theory_wire_mbps": []}
    for m in mss_list:
        # rate_mss clamps the receiver's advertised MSS; with timestamps the sender's
        # segments carry m - 12 bytes, so the constant window is set to that payload.
        payload = m - 12 if m != 1448 else 1448
        mss_knob = m if m != 1448 else 0
        # net.ipv4.rate_mss alone, as the thesis set it "for every new connection": the
        # listener carries it and the accepted socket advertises it in its SYN-ACK.
        r = run(ethernet(f"mss-{m}", f"§6.5: window = 1 MSS, MSS {m}", dur,
                         rate_sysctl(fixed=payload, mss=mss_knob)), out)
        res["mss"].append(payload)
        res["mbps"].append(mean_rate(r, "sink1", 1, dur) / 1e6)
        # thesis: MSS bits / (latency + MSS bits / 10 Mbit/s)
        tx = payload * 8 / ETH_RATE
        res["theory_thesis_mbps"].append(payload * 8 / (rtt + tx) / 1e6)
        # wire-accurate: frame (payload + 12 opts + 40 IP/TCP + 14 Ethernet) + ACK frame
        tx_data = (payload + 66) * 8 / ETH_RATE
        tx_ack = 66 * 8 / ETH_RATE
        res["theory_wire_mbps"].append(payload * 8 / (rtt + tx_data + tx_ack) / 1e6)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.plot(res["mss"], res["mbps"], marker="o", label="simulated (window = 1 MSS)")
    ax.plot(res["mss"], res["theory_thesis_mbps"], ls="--", label="thesis formula MSS/(0.3 ms + MSS/10 Mbit/s)")
    ax.plot(res["mss"], res["theory_wire_mbps"], ls=":", label="same with headers and ACK time")
    label(ax, xlabel="segment payload (bytes)", ylabel="Mbit/s", title="stop-and-wait: throughput vs MSS (fig 6.6)",
          legend=dict(fontsize=7))
    _save(fig, img / "rate-mss.png")
    return res


MIDMSS_CASES = {
    # name: (rate_mss_option, sender honours the option, description)
    "linux": ("off", False, "no MSS option after the handshake (Linux)"),
    "every": ("every", False, "phase 1: the SYN's MSS on every ACK, Linux sender"),
    "window": ("window", False, "phase 2: the MSS shrinks with the window, Linux sender"),
    "window-honoured": ("window", True, "phase 2, sender honours the option (wirelab extension)"),
}


def midmss_timeline(dur: float = 12.0) -> Sc:
    """§6.4 on one connection: window 1280 B (below the 1448-B MSS), phase 2's MSS option on
    the receiver's ACKs; at 4 s ttcp calls ``setsockopt(TCP_MAXSEG, 500)`` (what Linux lets
    an application do mid-stream), at 8 s it switches the wirelab ``midstream_mss``
    extension on (a sender that believes the option)."""
    sc = ethernet("mss-midstream", "§6.4: MSS option on every ACK shrinking with a 1280-B window; TCP_MAXSEG 500 "
                  "at 4 s, sender honours the option from 8 s", dur, rate_sysctl(fixed=1280, mss_option="window"),
                  capture=True)
    sc.events = [{"at": "4s", "app": "ttcp1", "action": "setsockopt", "mss": 500},
                 {"at": "8s", "app": "ttcp1", "action": "setsockopt", "midstream_mss": True}]
    return sc


def exp_midmss(out: Path, img: Path, dur: float = 8.0, eth_dur: float = 30.0) -> dict:
    """§6.4 "Evaluating the MSS changeability": the thesis's receiver advertised the MSS in
    every header (phase 1), then shrank it with a sub-MSS window (phase 2), and found that a
    mid-stream MSS option is not legal and peers need not act on it. Here: the constant
    1280-B window of §6.3 with each phase against a Linux sender (which ignores the option:
    ``tcp_parse_options()``, kernel-checked by scenarios/rate-control/packetdrill/), against
    a sender that honours it (the thesis's hope, a wirelab extension), TCP_MAXSEG and the
    extension switched on mid-stream by scenario events, and §6.2.1's 4-Mbit/s original
    policy (windows down to 256 B) with and without the honouring sender: does shrinking the
    MSS with the window stop the SWS collapse?"""
    res: dict = {"fixed_1280": {}, "eth4m_original": {}}
    for name, (opt, honour, desc) in MIDMSS_CASES.items():
        sc = ethernet(f"midmss-{name}", f"§6.4: window 1280 B, {desc}", dur,
                      rate_sysctl(fixed=1280, mss_option=opt), capture=True)
        if honour:
            sc.apps[1]["midstream_mss"] = True
        r = run(sc, out)
        one = {"mbps": mean_rate(r, "sink1", 2, dur) / 1e6}
        pcap = next((r / "pcap").glob("*.pcap"), None)
        if pcap and shutil.which("tshark"):
            data = _tshark_fields(pcap, ["tcp.len"], "tcp.len>0 && frame.time_relative>2")
            lens: dict[int, int] = {}
            for (ln,) in data:
                lens[int(ln)] = lens.get(int(ln), 0) + 1
            one["data_segment_lengths"] = lens
            acks = _tshark_fields(pcap, ["tcp.options.mss_val"], "tcp.len==0 && tcp.flags.syn==0 && tcp.srcport==5001")
            opts: dict[str, int] = {}
            for (m,) in acks:
                opts[m or "none"] = opts.get(m or "none", 0) + 1
            one["ack_mss_options"] = opts
            bad = _tshark_fields(pcap, ["frame.number"], "_ws.malformed || _ws.expert.severity >= \"error\"")
            one["tshark_malformed_or_error"] = len(bad)
            # tshark's own verdict on the option: an expert warning on every non-SYN carrying it
            warn = _tshark_fields(pcap, ["frame.number"], '_ws.expert.message == "The non-SYN packet does contain a MSS option"')
            one["tshark_non_syn_mss_warnings"] = len(warn)
        res["fixed_1280"][name] = one
    tl = run(midmss_timeline(), out)
    res["timeline"] = {
        "0-4s_linux_mbps": mean_rate(tl, "sink1", 1, 4) / 1e6,
        "4-8s_after_tcp_maxseg_500_mbps": mean_rate(tl, "sink1", 5, 8) / 1e6,
        "8-12s_honoured_mbps": mean_rate(tl, "sink1", 9, 12) / 1e6,
        "ttcp_error": next(x for x in read_csv(tl / "flows.csv") if x["name"] == "ttcp1")["error"],
    }
    series = {}
    for honour in (False, True):
        key = "honoured" if honour else "linux"
        sc = ethernet(f"midmss-eth4m-{key}", f"§6.4 + §6.2.1: 4 Mbit/s, original policy, phase-2 MSS option, "
                      f"{'sender honours it' if honour else 'Linux sender'}", eth_dur,
                      rate_sysctl("4mbit", "original", mss_option="window"))
        if honour:
            sc.apps[1]["midstream_mss"] = True
        r = run(sc, out)
        t, rate = flow_series(r, "sink1")
        ts, rs = per_second(t, rate)
        steady = [v for tt, v in zip(ts, rs) if tt > 10]
        wins = [int(x["window"]) for x in rate_rows(r) if x["node"] == "oid" and float(x["time_s"]) >= 10]
        res["eth4m_original"][key] = {
            "mean_mbps": mean_rate(r, "sink1", 10, eth_dur) / 1e6,
            "per_s_min_mbps": min(steady) / 1e6, "per_s_max_mbps": max(steady) / 1e6,
            "window_min": min(wins), "window_max": max(wins),
            "sub_mss_fraction": sum(w < MSS_ETH for w in wins) / len(wins),
        }
        series[key] = (ts, rs)
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    t, rate = per_second(*flow_series(tl, "sink1"))
    ax = axes[0]
    ax.plot(t, [x / 1e3 for x in rate], marker=".", lw=1)
    for x, txt in ((4, "TCP_MAXSEG 500"), (8, "midstream_mss on")):
        ax.axvline(x, ls=":", color="k", lw=0.8)
        ax.text(x + 0.1, 0.5, txt, fontsize=7, transform=ax.get_xaxis_transform())
    ax.set_yscale("log")
    label(ax, xlabel="time (s)", ylabel="kbit/s (per second)", title="window 1280 B, MSS option 1280 on every ACK")
    ax = axes[1]
    for key, lab in (("linux", "Linux sender (ignores the option)"), ("honoured", "sender honours the option")):
        ts, rs = series[key]
        ax.plot(ts, [x / 1e6 for x in rs], lw=1, label=f"{lab}: mean {res['eth4m_original'][key]['mean_mbps']:.2f}")
    ax.axhline(4, ls="--", color="k", lw=0.8, label="target 4 Mbit/s")
    label(ax, xlabel="time (s)", ylabel="Mbit/s (per second)", title="original policy, target 4 Mbit/s, phase 2",
          legend=dict(fontsize=7))
    _save(fig, img / "rate-mss-midstream.png")
    return res


def exp_t1(out: Path, img: Path, nbytes: int = 8 * 1024 * 1024, dur: float = 100.0) -> dict:
    """§6.7 figs 6.7/6.8: target 100 % … 10 % of the T1."""
    res = {"pct": [], "target_mbps": [], "mbps": []}
    series = {}
    for pct in range(100, 0, -10):
        tgt = T1_RATE * pct / 100
        r = run(t1_path(f"t1-{pct}", f"§6.7: ttcp over a T1 path, target {pct} %", dur,
                        rate_sysctl(f"{round(tgt)}bit"), nbytes=nbytes), out)
        res["pct"].append(pct)
        res["target_mbps"].append(tgt / 1e6)
        res["mbps"].append(transfer_rate(r, "sink1") / 1e6)
        if pct in (100, 70, 50, 30):
            series[pct] = per_second(*flow_series(r, "sink1"))
        if pct == 10:
            wins = [int(x["window"]) for x in rate_rows(r) if x["node"] == "nox"]
            res["window_at_10pct_min"] = min(wins) if wins else None
    free = run(t1_path("t1-free", "§6.7: ttcp over a T1 path, no control", dur,
                       rate_sysctl(status=0), nbytes=nbytes), out)
    res["uncontrolled_mbps"] = transfer_rate(free, "sink1") / 1e6
    # theory.lowest (§6.7): 1 MSS per (RTT + transmit time)
    tx = (MSS_ETH + 52 + 8) * 8 / T1_RATE
    res["theory_lowest_thesis_mbps"] = 12000 / (6e-3 + 8e-3) / 1e6
    res["theory_lowest_wire_mbps"] = MSS_ETH * 8 / (6e-3 + tx) / 1e6
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    for pct, (t, r) in series.items():
        ax.plot(t, [x / 1e6 for x in r], lw=1, label=f"run.{pct}")
    ax.axhline(res["theory_lowest_wire_mbps"], ls="--", color="k", lw=0.8, label="theory.lowest")
    label(ax, xlabel="time (s)", ylabel="Mbit/s (per second)", title="ttcp over a T1 (fig 6.7)",
          legend=dict(fontsize=7))
    ax = axes[1]
    ax.plot(res["pct"], res["mbps"], marker="o", label="achieved (ttcp rate)")
    ax.plot(res["pct"], res["target_mbps"], ls="--", color="0.5", label="target")
    ax.axhline(res["theory_lowest_wire_mbps"], ls=":", color="k", lw=0.8, label="theory.lowest")
    ax.axhline(res["uncontrolled_mbps"], ls="-.", color="C2", lw=0.8, label="uncontrolled")
    label(ax, xlabel="target (% of 1.544 Mbit/s)", ylabel="Mbit/s")
    ax.set_ylim(0, 1.7)
    ax.invert_xaxis()
    label(ax, title="average rate per target (fig 6.8)", legend=dict(fontsize=7))
    _save(fig, img / "rate-t1.png")
    return res


def exp_ppp(out: Path, img: Path, dur: float = 150.0) -> dict:
    """§6.8 fig 6.9: 38.8 kbit/s PPP, 512 KB, 100 % … 30 %."""
    res = {}
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4))
    for pct in range(100, 20, -10):
        tgt = PPP_RATE * pct / 100
        r = run(ppp(f"ppp-{pct}", f"§6.8: ttcp over 38.8 kbit/s PPP, target {pct} %", dur,
                    rate_sysctl(f"{round(tgt)}bit")), out)
        t, rr = flow_series(r, "sink1")
        act = [i for i, y in enumerate(rr) if y > 0]
        # the active transfer, without the first and the last (partial) second
        lo, hi = (act[0] + 1, act[-1] - 1) if act else (0, -1)
        tt, yy = t[lo:hi + 1], rr[lo:hi + 1]
        tail = yy[-20:]
        fin = sum(tail) / len(tail) if tail else 0.0
        conv = None
        for i in range(len(tt)):
            if all(abs(y - fin) <= 0.1 * fin for y in yy[i:]):
                conv = tt[i]
                break
        wins = [(float(x["time_s"]), int(x["window"])) for x in rate_rows(r) if x["node"] == "nox"]
        final_w = wins[-1][1] if wins else None
        t_final_w = next((tw for tw, w in wins if w == final_w), None)
        res[pct] = {"ttcp_kbps": transfer_rate(r, "sink1") / 1e3, "final_window": final_w,
                    "window_settled_s": t_final_w,
                    "final_kbps": fin / 1e3, "converged_s": conv,
                    "transfer_s": (t[act[-1]] - t[act[0]] + 1) if act else None}
        if pct in (100, 70, 50, 30):
            ax.plot(t, [x / 1e3 for x in rr], lw=1, label=f"{pct} %")
    label(ax, xlabel="time (s)", ylabel="kbit/s (per second)", title="ttcp over a 38.8 kbit/s PPP link (fig 6.9)",
          legend=dict(fontsize=7))
    _save(fig, img / "rate-ppp.png")
    return res


PPP_CONFIGS = {
    # name: (one-way delay, qdisc on both ends or None = pfifo_fast txqueuelen 1000, label)
    "base": ("1ms", None, "1 ms, txqueuelen 1000 (section 4)"),
    "ping-era": (PPP_DELAY_PING, PPP_ERA_QDISC, "16 ms, era buffer (pfifo 13)"),
    "ping-deep": (PPP_DELAY_PING, None, "16 ms, txqueuelen 1000"),
    "naive-era": (PPP_DELAY_NAIVE, PPP_ERA_QDISC, "35 ms, era buffer (pfifo 13)"),
}


def ppp_floor_bps(delay_s: float) -> float:
    """Stop-and-wait with one 1448-B segment on the PPP line: data frame + ACK frame +
    the round-trip delay (frames: payload + 52 B IP/TCP with timestamps + 8 B framing)."""
    tx_data = (MSS_ETH + 52 + 8) * 8 / PPP_RATE
    tx_ack = (52 + 8) * 8 / PPP_RATE
    return MSS_ETH * 8 / (tx_data + tx_ack + 2 * delay_s)


def _ppp_metrics(r: Path) -> dict:
    """Transfer, controller-window and meter behaviour of one PPP run."""
    meter = [(float(x["time_s"]), float(x["rate_bps"]), int(x["window"]))
             for x in rate_rows(r) if x["node"] == "nox" and x["conn"]]
    t, rr = flow_series(r, "sink1")
    act = [i for i, y in enumerate(rr) if y > 0]
    t_end = t[act[-1]] if act else 0.0
    # the window's last change, and its excursions from 1 MSS (a limit cycle)
    last_change = next((meter[i][0] for i in range(len(meter) - 1, 0, -1)
                        if meter[i][2] != meter[i - 1][2]), 0.0)
    rises = [meter[i][0] for i in range(1, len(meter))
             if meter[i - 1][2] == MSS_ETH and meter[i][2] > MSS_ETH]
    cycling = last_change > t_end - 20 and len(rises) >= 2
    period = (rises[-1] - rises[0]) / (len(rises) - 1) if len(rises) >= 2 else None
    # the meter (3-s average): final value and the time from which it stays within 2 %
    tail = sorted(v for tt, v, _ in meter if t_end - 20 <= tt <= t_end - 1)
    fin = tail[len(tail) // 2] if tail else 0.0
    within = None
    act_m = [(tt, v) for tt, v, _ in meter if tt <= t_end - 1]
    for i in range(len(act_m)):
        if all(abs(v - fin) <= 0.02 * fin for _, v in act_m[i:]):
            within = act_m[i][0]
            break
    second_half = [v for tt, v, _ in meter if t_end / 2 <= tt <= t_end - 1]
    flows = {x["name"]: x for x in read_csv(r / "flows.csv")}
    q = {x["dev"]: x for x in read_csv(r / "queues.csv")}
    srtt = [float(x["srtt_ms"]) for x in read_csv(r / "tcp_timeseries.csv") if x["flow"] == "ttcp1"]
    tx = [(float(x["time_s"]), float(x["tx_rate_bps"])) for x in read_csv(r / "flow_timeseries.csv")
          if x["flow"] == "ttcp1"]
    return {
        "ttcp_kbps": round(transfer_rate(r, "sink1") / 1e3, 2),
        "transfer_s": t_end - (t[act[0]] - 1 if act else 0.0),
        "final_window": meter[-1][2] if meter else None,
        "window_last_change_s": last_change,
        "limit_cycle": cycling,
        "cycle_period_s": round(period, 1) if cycling and period else None,
        "meter_final_kbps": round(fin / 1e3, 2),
        "meter_within_2pct_from_s": within,
        "meter_second_half_kbps": [round(min(second_half) / 1e3, 1), round(max(second_half) / 1e3, 1)]
        if second_half else None,
        "retrans": int(flows["ttcp1"]["retrans"]),
        "drops_dioxin": int(q["dioxin:eth0"]["drops"]),
        "max_srtt_ms": round(max(srtt), 0) if srtt else None,
        "ttcp_write_rate_first_s_kbps": round(tx[0][1] / 1e3, 1) if tx else None,
    }


def exp_pppbuf(out: Path, img: Path, dur: float = 200.0) -> dict:
    """§6.8 fig 6.9 with the era's latency and buffering (no engine change): the PPP line
    with a ping-calibrated one-way delay and Linux 2.2's ppp0 + serial-driver buffer."""
    res: dict = {"floor_theory_kbps": {}, "runs": {}}
    pcts = list(range(100, 20, -10))
    keep: dict = {}
    for cfg, (delay, qdisc, _label) in PPP_CONFIGS.items():
        d_s = float(delay.rstrip("ms")) / 1e3
        res["floor_theory_kbps"][cfg] = round(ppp_floor_bps(d_s) / 1e3, 2)
        for pct in pcts:
            tgt = PPP_RATE * pct / 100
            r = run(ppp(f"pppbuf-{cfg}-{pct}",
                        f"§6.8: ttcp over 38.8 kbit/s PPP, target {pct} %, delay {delay}, "
                        f"qdisc {qdisc or 'pfifo_fast 1000'}", dur,
                        rate_sysctl(f"{round(tgt)}bit"), delay=delay, qdisc=qdisc), out)
            res["runs"].setdefault(cfg, {})[pct] = _ppp_metrics(r)
            keep[(cfg, pct)] = r
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    main = "ping-era"
    for pct in (100, 90, 70, 50):
        r = keep[(main, pct)]
        t, rr = flow_series(r, "sink1")
        axes[0][0].plot(t, [x / 1e3 for x in rr], lw=0.9, label=f"{pct} %")
        m = [(float(x["time_s"]), float(x["rate_bps"]), int(x["window"]))
             for x in rate_rows(r) if x["node"] == "nox" and x["conn"]]
        axes[0][1].plot([a for a, _, _ in m], [b / 1e3 for _, b, _ in m], lw=0.9, label=f"{pct} %")
        axes[1][0].step([a for a, _, _ in m], [c for _, _, c in m], where="post", lw=0.9, label=f"{pct} %")
    label(axes[0][0], title=f"{PPP_CONFIGS[main][2]}: per-second rate (fig 6.9)", ylabel="kbit/s (per second)")
    label(axes[0][1], title="the receiver's meter (3-s average)", ylabel="kbit/s")
    axes[0][1].set_ylim(25, 45)
    label(axes[1][0], title="controller window", ylabel="bytes")
    axes[1][0].axhline(MSS_ETH, ls=":", color="k", lw=0.8)
    ax = axes[1][1]
    for cfg, (_d, _q, cfg_label) in PPP_CONFIGS.items():
        r = keep[(cfg, 90)]
        m = [(float(x["time_s"]), int(x["window"])) for x in rate_rows(r) if x["node"] == "nox" and x["conn"]]
        ax.step([a for a, _ in m], [b for _, b in m], where="post", lw=0.9, label=cfg_label)
    label(ax, title="target 90 %: controller window per configuration", ylabel="bytes")
    for a in axes.flat:
        label(a, xlabel="time (s)", legend=dict(fontsize=6))
    _save(fig, img / "rate-ppp-buffered.png")
    return res


def _start_offset(seed: int) -> float:
    """The ttcp start offset of repetition ``seed``: uniform in [0, 2 s) (the meter's
    100-ms chunks, the 10-ms jiffy grid and the 2-s aging tick all fall inside it)."""
    return random.Random(seed).uniform(0.0, 2.0)


def _transfer_time(res: Path, flow: str = "ttcp1") -> float:
    """``transfer_time_s`` of a client in flows.csv (nanosecond resolution)."""
    return next(float(x["transfer_time_s"]) for x in read_csv(res / "flows.csv") if x["name"] == flow)


def exp_reps(out: Path, img: Path, seeds: tuple = (1, 2, 3, 4)) -> dict:
    """Four repetitions per point (thesis fig 6.8 averages 4 ttcp runs): the run seed and a
    seeded ttcp start offset vary, everything else is the experiment's. Reports whether the
    repetitions differ at all (rates relative to each run's own start; T1 transfer times
    from flows.csv, not from the 100-ms samples)."""
    res: dict = {"offsets_s": {k: round(_start_offset(k), 4) for k in seeds}, "eth4m": {}, "t1": {}}
    caps: dict = {}
    for pol in ("original", "revised"):
        vals = []
        for k in seeds:
            off = _start_offset(k)
            sc = ethernet(f"reps-eth-{pol}-s{k}", f"§6.2.1: 4 Mbit/s, {pol} policy, repetition {k}",
                          60.0 + off, rate_sysctl("4mbit", pol))
            sc.apps[1]["start"] = f"{round(off * 1e6)}us"
            sc.capture = ["oid:eth0"]
            r = run(sc, out, seed=k)
            vals.append(mean_rate(r, "sink1", 10 + off, 60 + off) / 1e6)
            # the capture with times relative to the SYN and relative sequence numbers
            # (the seed changes the port and the ISN only)
            pcap = next((r / "pcap").glob("*.pcap"), None)
            if pcap and shutil.which("tshark"):
                rows = _tshark_fields(pcap, ["frame.time_relative", "ip.src", "tcp.len", "tcp.seq",
                                             "tcp.ack", "tcp.window_size_value"])
                caps.setdefault(pol, []).append(rows)
        entry: dict = {"mean_mbps_from_100ms_samples": [round(v, 4) for v in vals]}
        cs = caps.get(pol)
        if cs:
            entry["capture_frames"] = [len(c) for c in cs]
            entry["frames_identical_but_time"] = all([r[1:] for r in c] == [r[1:] for r in cs[0]] for c in cs)
            entry["frames_identical_with_time"] = all(c == cs[0] for c in cs)
            if entry["frames_identical_but_time"]:
                entry["max_time_spread_ms"] = round(1e3 * max(
                    max(float(c[i][0]) for c in cs) - min(float(c[i][0]) for c in cs)
                    for i in range(len(cs[0]))), 3)
        res["eth4m"][pol] = entry
    for pct in range(100, 0, -10):
        tgt = T1_RATE * pct / 100
        times = []
        for k in seeds:
            off = _start_offset(k)
            sc = t1_path(f"reps-t1-{pct}-s{k}", f"§6.7: T1, target {pct} %, repetition {k}", 100.0 + off,
                         rate_sysctl(f"{round(tgt)}bit"), nbytes=8 * 1024 * 1024)
            sc.apps[1]["start"] = f"{round(off * 1e6)}us"
            r = run(sc, out, seed=k)
            times.append(_transfer_time(r))
        res["t1"][pct] = {"transfer_s": times, "mbps": [round(8 * 1024 * 1024 * 8 / x / 1e6, 4) for x in times],
                          "spread_s": max(times) - min(times)}
    return res


def _tshark_fields(pcap: Path, fields: list[str], filt: str | None = None) -> list[list[str]]:
    cmd = ["tshark", "-r", str(pcap), "-T", "fields"]
    if filt:
        cmd += ["-Y", filt]
    for f in fields:
        cmd += ["-e", f]
    p = subprocess.run(cmd, capture_output=True, text=True)
    return [line.split("\t") for line in p.stdout.splitlines() if line.strip()]


def exp_checks(out: Path, img: Path) -> dict:
    """Re-checks of the simulator problems the first run found: rate_mss on the passive
    side (SYN-ACK MSS, segment sizes), the same run with TCP_MAXSEG on the sink instead,
    and duplicate ACKs in the capture."""
    res: dict = {}
    a = run(ethernet("check-mss-200-ratemss", "rate_mss = 200 only (no TCP_MAXSEG)", 6.0,
                     rate_sysctl(fixed=188, mss=200), capture=True), out)
    sc = ethernet("check-mss-200-sinkmss", "rate_mss = 200 and TCP_MAXSEG 200 on the sink", 6.0,
                  rate_sysctl(fixed=188, mss=200), capture=True)
    sc.apps[0]["mss"] = 200
    b = run(sc, out)
    res["mbps_rate_mss_only"] = mean_rate(a, "sink1", 1, 6) / 1e6
    res["mbps_with_sink_mss"] = mean_rate(b, "sink1", 1, 6) / 1e6
    pcap = next((a / "pcap").glob("*.pcap"), None)
    if pcap and shutil.which("tshark"):
        syn = _tshark_fields(pcap, ["ip.src", "tcp.flags", "tcp.options.mss_val"], "tcp.flags.syn==1")
        res["syn_mss"] = {f"{s}/{fl}": m for s, fl, m in syn}
        lens: dict[int, int] = {}
        for (ln,) in _tshark_fields(pcap, ["tcp.len"], "tcp.len>0"):
            lens[int(ln)] = lens.get(int(ln), 0) + 1
        res["data_segment_lengths"] = lens
        rows = _tshark_fields(pcap, ["frame.number", "frame.time_relative", "ip.src", "tcp.len",
                                     "tcp.ack", "tcp.window_size_value"])
        dup = [r[0] for r in _tshark_fields(pcap, ["frame.number"], "tcp.analysis.duplicate_ack")]
        res["duplicate_acks"] = dup
        ctx = []
        for d in dup[:3]:
            n = int(d)
            ctx.append(["\t".join(r) for r in rows if n - 4 <= int(r[0]) <= n + 2])
        res["duplicate_ack_context"] = ctx
    return res


def exp_multi(out: Path, img: Path, dur: float = 10.0) -> dict:
    """§6.9 figs 6.10/6.11: 1…5 concurrent ttcp over Ethernet, per-stream targets."""
    res = {}
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for pct in (100, 80, 60, 40, 20):
        per = []
        for n in range(1, 6):
            # the pct of the link is shared equally: each connection's target is pct / n
            tgt = ETH_RATE * pct / 100 / n
            r = run(ethernet(f"multi-{n}x-{pct}", f"§6.9: {n} concurrent ttcp, {pct} % of the link in total",
                             dur, rate_sysctl(f"{round(tgt)}bit"), streams=n), out)
            rates = [mean_rate(r, f"sink{i + 1}", 2, dur) / 1e6 for i in range(n)]
            per.append(sum(rates) / n)
            res.setdefault(pct, {})[n] = {"per_stream_mbps": round(sum(rates) / n, 3),
                                          "total_mbps": round(sum(rates), 3)}
            if n == 5 and pct == 60:
                t, rr = per_second(*flow_series(r, "sink1"))
                axes[0].plot(t, [x / 1e6 for x in rr], lw=1, label="stream 1 of 5")
                axes[0].axhline(1.2, ls="--", color="k", lw=0.8, label="target 1.2 Mbit/s (60 % / 5)")
                axes[0].set_ylim(0, 3)
        axes[1].plot(range(1, 6), per, marker="o", label=f"{pct} % of the link in total")
    label(axes[0], xlabel="time (s)", ylabel="Mbit/s (per second)", title="one stream of five at 60 % (fig 6.10)",
          legend=dict(fontsize=7))
    label(axes[1], xlabel="concurrent streams", ylabel="mean per-stream Mbit/s",
          title="average rate of a stream (fig 6.11)", legend=dict(fontsize=7))
    _save(fig, img / "rate-multi.png")
    return res


def exp_t1multi(out: Path, img: Path, dur: float = 30.0) -> dict:
    """§6.10 fig 6.12: 1…5 concurrent ttcp over the T1, X % of the T1 shared equally."""
    res = {}
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 4))
    pcts = list(range(100, 0, -10))
    for n in range(1, 6):
        per = []
        for pct in pcts:
            tgt = T1_RATE * pct / 100 / n
            r = run(t1_path(f"t1multi-{n}x-{pct}", f"§6.10: {n} ttcp over the T1, {pct} % in total",
                            dur, rate_sysctl(f"{round(tgt)}bit"), streams=n), out)
            rates = [mean_rate(r, f"sink{i + 1}", 5, dur) / 1e6 for i in range(n)]
            per.append(sum(rates) / n)
            res.setdefault(n, {})[pct] = {"per_stream_mbps": round(sum(rates) / n, 3),
                                          "total_mbps": round(sum(rates), 3),
                                          "min_stream_mbps": round(min(rates), 3),
                                          "max_stream_mbps": round(max(rates), 3)}
        ax.plot(pcts, per, marker="o", ms=3, label=f"{n} stream{'s' if n > 1 else ''}")
    ax.plot(pcts, [T1_RATE * p / 100e6 for p in pcts], ls="--", color="0.5", label="target (total)")
    ax.invert_xaxis()
    label(ax, xlabel="target (% of 1.544 Mbit/s, shared equally)", ylabel="mean per-stream Mbit/s",
          title="multiple ttcp over a T1 (fig 6.12)", legend=dict(fontsize=7))
    _save(fig, img / "rate-t1-multi.png")
    return res


def _overlap_metrics(r: Path) -> dict:
    """Forward (amx → nox) rates while nox's reply runs and after it, and the forward
    connection's smoothed RTT in both phases, of a two-way T1 run."""
    fl = {x["name"]: x for x in read_csv(r / "flows.csv")}
    t_rev_end = float(fl["rttcp1"]["transfer_time_s"]) + _start_of(r, "rttcp1")
    t_fwd_end = float(fl["ttcp1"]["transfer_time_s"])
    srtt = [(float(x["time_s"]), float(x["srtt_ms"])) for x in read_csv(r / "tcp_timeseries.csv")
            if x["flow"] == "ttcp1" and float(x["srtt_ms"]) > 0]

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if xs else None
    rev_start = _start_of(r, "rttcp1")
    both_lo, both_hi = max(1.0, rev_start + 1.0), min(t_rev_end, t_fwd_end) - 1.0
    res = {
        "fwd_mbps": transfer_rate(r, "sink1") / 1e6,
        "fwd_transfer_s": t_fwd_end,
        "rev_mbps": transfer_rate(r, "rsink1") / 1e6,
        "rev_transfer_s": float(fl["rttcp1"]["transfer_time_s"]),
        "fwd_mbps_while_reply": mean_rate(r, "sink1", both_lo, both_hi) / 1e6 if both_hi > both_lo else None,
        "fwd_srtt_ms_while_reply": med([v for t, v in srtt if both_lo <= t <= both_hi]),
        "fwd_srtt_ms_alone": med([v for t, v in srtt if (t < rev_start - 1 or t > t_rev_end + 1) and t < t_fwd_end - 1]),
    }
    if t_fwd_end - 1 > t_rev_end + 1:
        res["fwd_mbps_after_reply"] = mean_rate(r, "sink1", t_rev_end + 1, t_fwd_end - 1) / 1e6
    return res


def _start_of(r: Path, app: str) -> float:
    """An app's configured start (s) from the run's scenario."""
    import tomllib
    sc = tomllib.loads((r.parent / "scenario.toml").read_text())
    a = next(x for x in sc["app"] if x.get("name") == app)
    st = a.get("start", "0ms")
    return float(st[:-2]) / 1e3 if st.endswith("ms") else float(st.rstrip("s"))


def exp_t1bidir(out: Path, img: Path, nbytes: int = 8 * 1024 * 1024, dur: float = 300.0) -> dict:
    """§6.7 as the thesis ran it: "Amx sent 8 megabytes and nox replied with 8 megabytes
    for a total of 16 megabytes transferred over the T1". nox's reply is a second ttcp,
    nox → amx (amx is unmodified, so the reply is not rate-controlled); the text does not
    say whether the reply ran at the same time or after, so both: ``concurrent`` (both
    start at 0) and ``sequential`` (the reply starts 1 s after amx's 8 MB arrived)."""
    res: dict = {"pct": [], "target_mbps": [], "concurrent": [], "sequential": []}
    keep = {}
    for pct in [*range(100, 0, -10), 0]:
        sysctl = rate_sysctl(f"{round(T1_RATE * pct / 100)}bit") if pct else rate_sysctl(status=0)
        what = f"target {pct} %" if pct else "no control"
        one = run(t1_path(f"t1-{pct}" if pct else "t1-free", f"§6.7: ttcp over a T1 path, {what}", 100.0,
                          sysctl, nbytes=nbytes), out)
        seq_start = round(_transfer_time(one) + 1.0, 3)
        conc = run(t1_path(f"t1bidir-conc-{pct}", f"§6.7: 8 MB each way over the T1 at the same time, {what}",
                           dur, sysctl, nbytes=nbytes, reverse=(nbytes, 0.0)), out)
        seq = run(t1_path(f"t1bidir-seq-{pct}", f"§6.7: 8 MB each way over the T1, the reply after, {what}",
                          dur, sysctl, nbytes=nbytes, reverse=(nbytes, seq_start)), out)
        res["pct"].append(pct)
        res["target_mbps"].append(T1_RATE * pct / 100 / 1e6)
        res["concurrent"].append(_overlap_metrics(conc))
        res["sequential"].append({**_overlap_metrics(seq), "one_way_mbps": transfer_rate(one, "sink1") / 1e6})
        if pct in (100, 50, 10):
            keep[pct] = conc
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    ax = axes[0]
    for pct, r in keep.items():
        t, rr = per_second(*flow_series(r, "sink1"))
        ax.plot(t, [x / 1e6 for x in rr], lw=1, label=f"amx → nox, {pct} %")
    t, rr = per_second(*flow_series(keep[10], "rsink1"))
    ax.plot(t, [x / 1e6 for x in rr], lw=1, ls="--", color="0.4", label="nox → amx (reply), 10 % run")
    ax.set_xlim(0, max(x["fwd_transfer_s"] for x in res["concurrent"]) + 5)
    label(ax, xlabel="time (s)", ylabel="Mbit/s (per second)", title="8 MB each way at the same time",
          legend=dict(fontsize=7))
    ax = axes[1]
    pcts = [p for p in res["pct"] if p]
    for key, m, lab in (("concurrent", "o", "reply at the same time"), ("sequential", "s", "reply after")):
        ax.plot(pcts, [x["fwd_mbps"] for p, x in zip(res["pct"], res[key]) if p], marker=m, label=lab)
    ax.plot(pcts, [T1_RATE * p / 100 / 1e6 for p in pcts], ls="--", color="0.5", label="target")
    ax.axhline(0.6, ls=":", color="C3", lw=0.8, label="thesis floor ≈ 0.6")
    ax.axhline(1.14, ls="-.", color="C3", lw=0.8, label="thesis baseline 1.14")
    ax.invert_xaxis()
    ax.set_ylim(0, 1.7)
    label(ax, xlabel="target (% of 1.544 Mbit/s)", ylabel="amx → nox ttcp rate (Mbit/s)",
          title="average rate per target, 8 MB each way (fig 6.8)", legend=dict(fontsize=7))
    _save(fig, img / "rate-t1-bidir.png")
    return res


def cbq_tree(pct: int) -> list[str]:
    """CBQ on nox's egress (the return path): all traffic into a bounded class."""
    rate = round(T1_RATE * pct / 100)
    return [
        "qdisc add root handle 1: cbq bandwidth 100mbit avpkt 1000",
        f"class add parent 1:0 classid 1:1 cbq bandwidth 100mbit rate {rate}bit allot 1514 "
        "prio 5 avpkt 1000 bounded",
        "filter add parent 1:0 protocol ip prio 1 u32 match ip dst 0.0.0.0/0 flowid 1:1",
    ]


def exp_cbq(out: Path, img: Path, nbytes: int = 8 * 1024 * 1024, dur: float = 100.0) -> dict:
    """§6.11 fig 6.13: CBQ alone on the receiver's return path (rate control off)."""
    res = {"pct": [], "mbps": [], "ctl_mbps": []}
    # 100 … 50 % as in the thesis; 5 … 1 % (extension) approach the ACK stream's own rate
    for pct in (100, 90, 80, 70, 60, 50, 5, 3, 2, 1):
        r = run(t1_path(f"cbq-{pct}", f"§6.11: CBQ {pct} % on nox's egress, no rate control", dur,
                        rate_sysctl(status=0), nbytes=nbytes, rx_tc=cbq_tree(pct)), out)
        res["pct"].append(pct)
        res["mbps"].append(transfer_rate(r, "sink1") / 1e6)
        q = [x for x in read_csv(r / "queues.csv") if x["dev"] == "nox:eth0" and x["classid"] == "1:1"]
        res.setdefault("class_1_1_sent_packets", []).append(int(q[0]["sent_packets"]) if q else None)
        res.setdefault("class_1_1_drops", []).append(int(q[0]["drops"]) if q else None)
    t1 = json.loads((out / "t1.json").read_text()) if (out / "t1.json").exists() else None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.set_xscale("log")
    ax.plot(res["pct"], res["mbps"], marker="o", label="CBQ on the ACK path")
    if t1:
        pts = [(p, m) for p, m in zip(t1["pct"], t1["mbps"]) if p >= 50]
        ax.plot([p for p, _ in pts], [m for _, m in pts], marker="s", label="receiver window control")
    ax.plot(res["pct"], [T1_RATE * p / 100e6 for p in res["pct"]], ls="--", color="0.5", label="target")
    ax.set_ylim(0, 1.7)
    ax.invert_xaxis()
    label(ax, xlabel="CBQ class rate (% of 1.544 Mbit/s)", ylabel="Mbit/s", title="CBQ vs our algorithm (fig 6.13)",
          legend=dict(fontsize=7))
    _save(fig, img / "rate-cbq.png")
    return res


# §5.4.1's usage example. The thesis's hub (ford, oid and the idle Mac) becomes a star: the
# two senders each on a 10 Mbit/s link to a forwarding node standing for the hub, which
# reaches oid over one 10 Mbit/s link (the shared medium the two data streams compete for).
# Each link has 75 us one way, so a sender-receiver path keeps the 150 us of section 1.
VIDEO_ADDR = "10.0.2.1"


def star(name: str, desc: str, duration: float, rx_sysctl: dict, rx_tc: list | None = None,
         video_start: float = 0.0, other_start: float = 0.0) -> Sc:
    """video (the video server) and ford → hub → oid, 10 Mbit/s each, one ttcp per sender."""
    sc = Sc(name, desc, duration)
    sc.nodes = [("video", "host", {}), ("ford", "host", {}), ("hub", "router", {}),
                ("oid", "host", rx_sysctl)]
    oid_end = {"node": "oid", "addr": "10.0.1.2/24"}
    if rx_tc:
        oid_end["tc"] = rx_tc  # oid's egress: ACKs to both senders
    sc.links = [
        ("hub-oid", {"node": "hub", "addr": "10.0.1.1/24"}, oid_end, "rate 10mbit delay 75us", {}),
        ("video-hub", {"node": "video", "addr": f"{VIDEO_ADDR}/24"}, {"node": "hub", "addr": "10.0.2.254/24"},
         "rate 10mbit delay 75us", {}),
        ("ford-hub", {"node": "ford", "addr": "10.0.3.1/24"}, {"node": "hub", "addr": "10.0.3.254/24"},
         "rate 10mbit delay 75us", {}),
    ]
    sc.apps = [sink("sink_video", "oid", 5001), ttcp("ttcp_video", "video", "oid:5001", start=video_start),
               sink("sink_other", "oid", 5002), ttcp("ttcp_other", "ford", "oid:5002", start=other_start)]
    return sc


def important_tree() -> list[str]:
    """§5.4.1 on oid's egress: class 1:2 (packets to the video server) may use the whole
    link, class 1:1 (everything else) is bounded at 500 kbit/s."""
    return [
        "qdisc add root handle 1: cbq bandwidth 10mbit avpkt 1000",
        "class add parent 1:0 classid 1:1 cbq bandwidth 10mbit rate 500kbit allot 1514 prio 5 "
        "avpkt 1000 bounded",
        "class add parent 1:0 classid 1:2 cbq bandwidth 10mbit rate 10mbit allot 1514 prio 5 avpkt 1000",
        f"filter add parent 1:0 protocol ip prio 1 u32 match ip dst {VIDEO_ADDR}/32 flowid 1:2",
        "filter add parent 1:0 protocol ip prio 2 u32 match ip dst 0.0.0.0/0 flowid 1:1",
    ]


IMPORTANT_TARGET = "2mbit"  # per connection, below the 4.8 Mbit/s each gets uncontrolled
IMPORTANT_CASES = {
    # name: (rate control on, cbq_class, label)
    "off": (False, None, "rate control off"),
    "no-class": (True, None, "rate control, no cbq_class"),
    "class": (True, "1:2", "rate control, cbq_class = 1:2"),
    # the same class written as one 32-bit id (major << 16 | minor), the thesis's form
    "class-hex": (True, "0x00010002", "rate control, cbq_class = 0x00010002"),
}


def important_case(case: str, dur: float = 60.0) -> Sc:
    on, cls, label = IMPORTANT_CASES[case]
    sysctl = rate_sysctl(IMPORTANT_TARGET if on else None, status=1 if on else 0)
    if cls:
        sysctl["net.ipv4.cbq_class"] = cls
    return star(f"important-{case}", f"§5.4.1: video server + one other ttcp into oid, CBQ 1:2/1:1 on "
                f"oid's egress, {label}", dur, sysctl, rx_tc=important_tree(), other_start=0.0,
                video_start=10.0)


def exp_important(out: Path, img: Path, dur: float = 60.0) -> dict:
    """§5.4/§5.4.1 "Interfacing with CBQ": the video server's stream is important (its ACKs
    leave oid in CBQ class 1:2, named in cbq_class) and keeps its rate; the other stream is
    controlled to the target. Counter-cases: no cbq_class, no rate control."""
    res: dict = {"target": IMPORTANT_TARGET, "cases": {}}
    runs = {}
    for case in IMPORTANT_CASES:
        r = run(important_case(case, dur), out)
        runs[case] = r
        rows = rate_rows(r)
        entry: dict = {}
        for sk, port in (("sink_video", 5001), ("sink_other", 5002)):
            mine = [x for x in rows if x["node"] == "oid" and f":{port}->" in x["conn"]]
            late = [x for x in mine if float(x["time_s"]) >= 30]
            ts, rs = per_second(*flow_series(r, sk))
            ps = [v / 1e6 for t, v in zip(ts, rs) if 30 < t <= dur]
            # limit cycle: the window's departures from 1 MSS after 30 s
            rises = [float(late[i]["time_s"]) for i in range(1, len(late))
                     if int(late[i - 1]["window"]) == MSS_ETH and int(late[i]["window"]) > MSS_ETH]
            entry[sk] = {
                "per_s_range_30_60": [round(min(ps), 2), round(max(ps), 2)] if ps else None,
                "cycle_period_s": round((rises[-1] - rises[0]) / (len(rises) - 1), 2) if len(rises) >= 2 else None,
                "mbps_3_10": round(mean_rate(r, sk, 3, 10) / 1e6, 3),
                "mbps_30_60": round(mean_rate(r, sk, 30, dur) / 1e6, 3),
                "modes": sorted({x["mode"] for x in mine}),
                "window_30_60": [min(int(x["window"]) for x in late), max(int(x["window"]) for x in late)]
                if late else None,
                "linux_window_30_60": [min(int(x["linux_window"]) for x in late),
                                       max(int(x["linux_window"]) for x in late)] if late else None,
            }
        q = [x for x in read_csv(r / "queues.csv") if x["dev"] == "oid:eth0"]
        entry["oid_egress_classes"] = {x["classid"]: {"sent_packets": int(x["sent_packets"]), "drops": int(x["drops"])}
                                       for x in q if x.get("classid")}
        res["cases"][case] = entry
    # the hex spelling names the same class: the runs must be identical
    a, b = (read_csv(runs[c] / "flow_timeseries.csv") for c in ("class", "class-hex"))
    res["hex_form_identical"] = a == b
    plt = _plt()
    cases = ("class", "no-class", "off")
    fig, axes = plt.subplots(2, 3, figsize=(13, 6), sharex=True)
    for col, case in enumerate(cases):
        r = runs[case]
        ax = axes[0][col]
        for sk, lab, c in (("sink_video", "video server (1:2)", "C0"), ("sink_other", "other (1:1)", "C1")):
            ts, rs = per_second(*flow_series(r, sk))
            ax.plot(ts, [x / 1e6 for x in rs], lw=1.1, color=c, label=lab)
        if IMPORTANT_CASES[case][0]:
            ax.axhline(float(IMPORTANT_TARGET.rstrip("mbit")), ls="--", color="k", lw=0.8, label="target per stream")
        ax.set_ylim(0, 10.5)
        e = res["cases"][case]
        ax.set_title(f"{IMPORTANT_CASES[case][2]}\nmean 30-60 s: video {e['sink_video']['mbps_30_60']:.2f}, "
                     f"other {e['sink_other']['mbps_30_60']:.2f} Mbit/s", fontsize=9)
        label(ax, ylabel="Mbit/s (per second)", legend=dict(fontsize=7, loc="upper right"))
        ax = axes[1][col]
        rows = [x for x in rate_rows(r) if x["node"] == "oid"]
        for port, lab, c in ((5001, "video server", "C0"), (5002, "other", "C1")):
            mine = [x for x in rows if f":{port}->" in x["conn"]]
            ax.step([float(x["time_s"]) for x in mine], [int(x["window"]) for x in mine], where="post",
                    lw=0.9, color=c, label=f"{lab}: offered window")
        ax.axhline(MSS_ETH, ls=":", color="k", lw=0.8, label="1 MSS")
        ax.set_yscale("log")
        label(ax, ylabel="window (bytes)", xlabel="time (s)", legend=dict(fontsize=7, loc="lower right"))
    _save(fig, img / "rate-important.png")
    return res


UDP_LIMIT_PPS = 100  # rate_control_udp, packets/s (the thesis's unit)
UDP_DROP_S, UDP_WARN_S = 1, 2  # rate_udp_drop_time / rate_udp_warn_time (no values in the thesis)


def udp_policy(dur: float = 8.0) -> Sc:
    """§5.2.2's UDP policy (ours: the thesis has no UDP experiment): three senders on a
    10 Mbit/s link against a 100 datagram/s limit: ``flood`` (1000/s throughout, never backs
    off), ``burst`` then ``calm`` on one port (1000/s for 1 s, then 50/s: an application
    that throttles itself after its datagrams were dropped, as §5.2.2 relies on), and
    ``steady`` (50/s throughout, under the limit)."""
    sc = Sc("udp-policy", "§5.2.2: UDP policy OKAY/DROP/WARN/KILL, 100 datagram/s limit", dur, sample="10ms")
    sc.nodes = [("ford", "host", {}), ("oid", "host", {
        "net.ipv4.rate_status": 1, "net.ipv4.rate_microsec_per_chunk": 100000, "net.ipv4.rate_chunks": 30,
        "net.ipv4.rate_control_udp": UDP_LIMIT_PPS, "net.ipv4.rate_udp_drop_time": UDP_DROP_S,
        "net.ipv4.rate_udp_warn_time": UDP_WARN_S})]
    sc.links = [("eth", {"node": "ford"}, {"node": "oid"}, "rate 10mbit delay 150us", {})]

    def cbr(name, port, interval, start=None, stop=None):
        d = {"name": name, "kind": "udp-cbr", "node": "ford", "dst": f"oid:{port}", "interval": interval, "size": 100}
        if start:
            d["start"] = start
        if stop:
            d["stop"] = stop
        return d
    sc.apps = [cbr("flood", 7001, "1ms"), cbr("burst", 7002, "1ms", stop="1s"),
               cbr("calm", 7002, "20ms", start="1s"), cbr("steady", 7003, "20ms"),
               *({"name": f"sink{p}", "kind": "udp-sink", "node": "oid", "port": p} for p in (7001, 7002, 7003))]
    return sc


def exp_udp(out: Path, img: Path, dur: float = 8.0) -> dict:
    """§5.2.2 UDP policy, labelled as ours (the thesis describes it but runs no experiment):
    state changes of each policed socket (``tcp_rate_timeseries.csv`` rows ``udp *:PORT``),
    datagrams delivered, dropped and the KILL."""
    r = run(udp_policy(dur), out)
    rows = [x for x in rate_rows(r) if x["conn"].startswith("udp ")]
    flows = {x["name"]: x for x in read_csv(r / "flows.csv")}
    res: dict = {"limit_pps": UDP_LIMIT_PPS, "drop_time_s": UDP_DROP_S, "warn_time_s": UDP_WARN_S, "ports": {}}
    for port, snd in ((7001, ["flood"]), (7002, ["burst", "calm"]), (7003, ["steady"])):
        mine = [x for x in rows if x["conn"] == f"udp *:{port}"]
        changes, last = [], None
        for x in mine:
            if x["mode"] != last:
                changes.append((float(x["time_s"]), x["mode"]))
                last = x["mode"]
        sk = flows[f"sink{port}"]
        res["ports"][port] = {
            "senders": snd, "sent": sum(int(flows[a]["tx_packets"]) for a in snd),
            "delivered": int(sk["rx_packets"]), "state_changes_sampled": changes,
            "sink_state": sk["state"], "sink_error": sk["error"],
        }
    plt = _plt()
    fig, axes = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    order = {"OKAY": 0, "DROP": 1, "WARN": 2, "KILL": 3}
    for i, port in enumerate((7001, 7002, 7003)):
        mine = [x for x in rows if x["conn"] == f"udp *:{port}"]
        lab = "+".join(res["ports"][port]["senders"])
        axes[0].step([float(x["time_s"]) for x in mine], [order[x["mode"]] + 0.06 * (i - 1) for x in mine],
                     where="post", label=f":{port} ({lab})")
        cum = [(float(x["time_s"]), float(x["rx_bytes"])) for x in read_csv(r / "flow_timeseries.csv")
               if x["flow"] == f"sink{port}"]
        t10 = [(0.0, 0.0)] + [c for c in cum if abs(c[0] * 10 - round(c[0] * 10)) < 1e-6]  # every 100 ms
        axes[1].step([b[0] for b in t10[1:]], [(b[1] - a[1]) / 100 / 0.1 for a, b in zip(t10, t10[1:])],
                     where="pre", lw=1, ls=("-", "--", ":")[i], label=f":{port} delivered")
    axes[0].set_yticks(list(order.values()), list(order.keys()))
    label(axes[0], title=f"UDP policy, limit {UDP_LIMIT_PPS} datagrams/s, drop {UDP_DROP_S} s, warn {UDP_WARN_S} s",
          legend=dict(fontsize=7))
    label(axes[1], xlabel="time (s)", ylabel="delivered (datagrams/s, per 100 ms)", legend=dict(fontsize=7))
    _save(fig, img / "rate-udp-policy.png")
    return res


EXPS = {
    "eth4m": exp_eth4m, "window": exp_window, "midmss": exp_midmss, "mss": exp_mss, "t1": exp_t1,
    "t1bidir": exp_t1bidir, "ppp": exp_ppp, "pppbuf": exp_pppbuf, "multi": exp_multi, "t1multi": exp_t1multi,
    "cbq": exp_cbq, "important": exp_important, "udp": exp_udp, "reps": exp_reps, "checks": exp_checks,
}


def gen(outdir: Path) -> None:
    """Write one representative scenario per experiment."""
    outdir.mkdir(parents=True, exist_ok=True)
    scs = [
        ethernet("eth-4mbit-original", "§6.2.1: ttcp controlled to 4 Mbit/s, original window policy",
                 60.0, rate_sysctl("4mbit", "original")),
        ethernet("eth-4mbit-revised", "§6.2.1: ttcp controlled to 4 Mbit/s, revised window policy",
                 60.0, rate_sysctl("4mbit", "revised")),
        ethernet("win-1280", "§6.3: constant receiver window 1280 B", 8.0, rate_sysctl(fixed=1280),
                 capture=True),
        midmss_timeline(),
        ethernet("mss-200", "§6.5: window = 1 MSS, MSS 200", 6.0, rate_sysctl(fixed=188, mss=200)),
        t1_path("t1-50", "§6.7: ttcp over a T1 path, target 50 %", 100.0,
                rate_sysctl(f"{round(T1_RATE / 2)}bit"), nbytes=8 * 1024 * 1024),
        ppp("ppp-50", "§6.8: ttcp over 38.8 kbit/s PPP, target 50 %", 150.0,
            rate_sysctl(f"{round(PPP_RATE / 2)}bit")),
        ppp("ppp-50-buffered", "§6.8: ttcp over 38.8 kbit/s PPP, target 50 %, 16 ms one way "
            "(70-ms ping), Linux 2.2 ppp0 + serial buffer (pfifo limit 13)", 200.0,
            rate_sysctl(f"{round(PPP_RATE / 2)}bit"), delay=PPP_DELAY_PING, qdisc=PPP_ERA_QDISC),
        ppp("ppp-90-buffered", "§6.8: ttcp over 38.8 kbit/s PPP, target 90 %, 16 ms one way "
            "(70-ms ping), Linux 2.2 ppp0 + serial buffer (pfifo limit 13)", 200.0,
            rate_sysctl(f"{round(PPP_RATE * 0.9)}bit"), delay=PPP_DELAY_PING, qdisc=PPP_ERA_QDISC),
        ethernet("multi-5x-60", "§6.9: 5 concurrent ttcp, 60 % of the link in total", 10.0,
                 rate_sysctl("1200000bit"), streams=5),
        t1_path("cbq-50", "§6.11: CBQ 50 % on nox's egress, no rate control", 100.0,
                rate_sysctl(status=0), nbytes=8 * 1024 * 1024, rx_tc=cbq_tree(50)),
        important_case("class"),
        important_case("no-class"),
    ]
    for sc in scs:
        (outdir / f"{sc.name}.toml").write_text(sc.text())
        print(outdir / f"{sc.name}.toml")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wirelab.repro.rate_control", description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["all", "gen", *EXPS])
    add_out(ap, "rate_control")
    ap.add_argument("--img", type=Path, default=None, help="where the figures go (default: OUT/img)")
    a = ap.parse_args(argv)
    if a.what == "gen":
        gen(a.out)
        return 0
    names = list(EXPS) if a.what == "all" else [a.what]
    stamp(a.out, "rate_control", argv)
    a.img = a.img or a.out / "img"
    for n in names:
        t0 = time.time()
        print(f"[{n}]", file=sys.stderr)
        res = EXPS[n](a.out, a.img)
        (a.out / f"{n}.json").write_text(json.dumps(res, indent=1, default=str))
        print(json.dumps(res, indent=1, default=str))
        print(f"[{n}] {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
