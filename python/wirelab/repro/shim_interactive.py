"""Seed system 5 (transparent TCP-to-SCTP shim, issue #18): interactive traffic and the
SSH-handshake cost through the shim.

The slides report that telnet and SSH "work as expected without modification" over the
shim, and their scp times include an SSH session set-up. Two experiments put numbers on
both, on the scp study's path (1.5 Mbit/s, 35 ms each way, 50-packet drop-tail queues,
uniform loss both ways)::

    python -m wirelab.repro.shim_interactive --out DIR            # both (≈ 1–2 min)
    python -m wirelab.repro.shim_interactive --out DIR --only interactive --seeds 5

* ``interactive`` — ``scenarios/shim/interactive.toml``: a ``tcp-rr`` client (64 B every
  200 ms, TCP_NODELAY, 120 s) against ``tcp-echo``; per-keystroke latency (request written →
  echo read, ``rr_latency.csv``) over TCP and over the shim, loss 0/1/3/6/10 %, both
  profiles, ``--seeds`` runs per cell. Cells pool every transaction of their runs: median,
  90th/99th percentile, the share over 1 s, and the median of the per-run medians.
* ``sshcost`` — ``scenarios/shim/scp.toml`` with a 50 KB file: the time from ``connect()``
  to the first data byte, i.e. the connection set-up plus ``exchanges`` request/response
  rounds standing in for the SSH handshake (4 = the scp study's, 8 = an SSH-2 count: banner,
  DH group exchange (2), service request, user-auth ``none`` + public-key query + signature
  (3), channel open, exec). Modes: TCP; the shim (SCTP); the shim client against a server
  without the shim, whose SCTP stack answers the INIT with ABORT (fallback after one round
  trip); and a path whose router silently drops SCTP (protocol 132; the fallback timer,
  3 s). Lossless runs give the round-trip count; with loss, ``--seeds`` runs per cell give
  the set-up time's distribution.

Outputs in DIR: ``interactive.csv`` (one row per run), ``interactive-cells.csv``,
``interactive.md``, ``sshcost.csv``, ``sshcost.md``, ``shim-interactive.png``,
``PROVENANCE.json``.
"""
from __future__ import annotations

import argparse
import copy
import shutil
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from .common import add_out, md_table, pyplot, run, save, scenario_file, stamp

INTERACTIVE = scenario_file("shim/interactive.toml")
SCP = scenario_file("shim/scp.toml")
LOSSES = (0, 1, 3, 6, 10)
PROFILES = ("linux-6", "freebsd-4.10")
TCP_RULES = {"c": ["remote default disable"], "s": ["local default disable"]}
#: the router's egress towards the server drops every SCTP packet (a middlebox that does
#: not pass protocol 132); everything else goes through the usual 50-packet FIFO
SCTP_BLACKHOLE_TC = [
    "qdisc add root handle 1: prio bands 3",
    "qdisc add parent 1:1 handle 10: pfifo limit 0",
    "qdisc add parent 1:2 handle 20: pfifo limit 50",
    "filter add parent 1: protocol ip prio 1 u32 match ip protocol 132 0xff flowid 1:1",
    "filter add parent 1: protocol ip prio 2 u32 match ip protocol 0 0x00 flowid 1:2",
]
SSH_MODES = {
    "tcp": "TCP (shim disabled)",
    "shim": "shim both ends (SCTP)",
    "abort": "shim client, server without shim (INIT → ABORT → TCP)",
    "blackhole": "shim client, router drops SCTP (fallback timer → TCP)",
}
FILE_BYTES = 51_200


def _load(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def scenario(base: dict, profile: str, loss: float, mode: str, exchanges: int | None = None) -> dict:
    """``base`` for one cell: profile, loss on the bottleneck, the mode's shim rules / router
    filter, and (scp) the exchange count and the 50 KB file."""
    sc = copy.deepcopy(base)
    sc["scenario"]["profile"] = profile
    nodes = {n["name"]: n for n in sc["node"]}
    links = {lk["name"]: lk for lk in sc["link"]}
    links["bottleneck"]["netem"] = f"rate 1.5mbit delay 35ms loss {loss:g}%"
    if mode == "tcp":
        for n, rules in TCP_RULES.items():
            nodes[n]["shim"] = rules
    elif mode == "abort":
        nodes["s"]["shim"] = []
    elif mode == "blackhole":
        a = links["bottleneck"]["a"]
        a.pop("qdisc", None)
        a["tc"] = SCTP_BLACKHOLE_TC
    if exchanges is not None:
        app = next(x for x in sc["app"] if x["name"] == "scp")
        app["exchanges"] = exchanges
        app["bytes"] = FILE_BYTES
    return sc


def _transport(d: Path) -> tuple[str, str]:
    """(transport, fallback reason) of the client's connection from shim_matches.csv."""
    m = pd.read_csv(d / "shim_matches.csv")
    row = m[(m["node"] == "c") & (m["chain"] == "remote")].iloc[0]
    fb = "" if pd.isna(row["fallback"]) else str(row["fallback"])
    return str(row["transport"]), fb


def _pool(jobs: int, fn, items) -> list:
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        return [f.result() for f in [ex.submit(fn, x) for x in items]]


# ---------------------------------------------------------------------------------------
# interactive: per-keystroke latency
# ---------------------------------------------------------------------------------------

def run_interactive(out: Path, seeds: int, jobs: int, profiles=PROFILES, losses=LOSSES) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every (profile, mode, loss, seed): one row per run, and every transaction."""
    base = _load(INTERACTIVE)
    cells = [(p, m, l, s) for p in profiles for m in ("tcp", "shim") for l in losses for s in range(1, seeds + 1)]
    tmp = out / "tmp-interactive"

    def one(c):
        p, m, l, s = c
        d = tmp / f"{p}-{m}-{l}-{s}"
        run(scenario(base, p, l, m), d, seed=s)
        lat = pd.read_csv(d / "rr_latency.csv")
        fl = pd.read_csv(d / "flows.csv").set_index("name")
        tr, fb = _transport(d)
        row = {"profile": p, "mode": m, "loss": l, "seed": s, "transport": tr, "fallback": fb,
               "transactions": len(lat), "first_request_s": float(lat["start_s"].iloc[0]),
               "median_ms": float(lat["latency_ms"].median()), "p99_ms": float(lat["latency_ms"].quantile(0.99)),
               "max_ms": float(lat["latency_ms"].max()), "retrans": int(fl.loc["ssh", "retrans"])}
        lat = lat.assign(profile=p, mode=m, loss=l, seed=s, transport=tr)
        shutil.rmtree(d, ignore_errors=True)
        return row, lat

    res = _pool(jobs, one, cells)
    shutil.rmtree(tmp, ignore_errors=True)
    return pd.DataFrame([r for r, _ in res]), pd.concat([x for _, x in res], ignore_index=True)


def interactive_cells(runs: pd.DataFrame, lat: pd.DataFrame) -> pd.DataFrame:
    """Per (profile, mode, loss): pooled percentiles of every transaction; the shim also on
    the runs that stayed on SCTP only (``shim-sctp``)."""
    rows = []
    groups = [(k, g, runs[(runs.profile == k[0]) & (runs["mode"] == k[1]) & (runs.loss == k[2])])
              for k, g in lat.groupby(["profile", "mode", "loss"], sort=False)]
    for (p, m, l), g, r in list(groups):
        if m == "shim":
            groups.append(((p, "shim-sctp", l), g[g.transport == "sctp"], r[r.transport == "sctp"]))
    for (p, m, l), g, r in groups:
        x = g["latency_ms"].to_numpy()
        if not len(x):
            continue
        rows.append({"profile": p, "mode": m, "loss": l, "runs": len(r), "fallbacks": int((r.transport == "tcp").sum()) if m == "shim" else 0,
                     "transactions": len(x), "median_ms": np.percentile(x, 50), "p90_ms": np.percentile(x, 90),
                     "p99_ms": np.percentile(x, 99), "max_ms": x.max(), "over_1s_pct": 100 * (x > 1000).mean(),
                     "median_of_run_medians_ms": float(r["median_ms"].median()),
                     "run_p99_min_ms": float(r["p99_ms"].min()), "run_p99_max_ms": float(r["p99_ms"].max())})
    return pd.DataFrame(rows).sort_values(["profile", "loss", "mode"], kind="stable")


def interactive_md(cs: pd.DataFrame) -> str:
    out = []
    for p in cs.profile.unique():
        sub = cs[cs.profile == p]
        out.append(f"\n**{p}**: per-keystroke latency (ms), every transaction of the cell's runs pooled.\n")
        out.append(md_table(
            ["loss", "transport", "runs (fallbacks)", "transactions", "median", "p90", "p99", "max", "> 1 s",
             "median of run medians", "p99 range over runs"],
            [[f"{r.loss:g} %", {"tcp": "TCP", "shim": "shim as run", "shim-sctp": "shim, SCTP runs"}[r["mode"]],
              f"{r.runs} ({r.fallbacks})" if r["mode"] == "shim" else r.runs, r.transactions,
              f"{r.median_ms:.1f}", f"{r.p90_ms:.1f}", f"{r.p99_ms:.0f}", f"{r.max_ms:.0f}", f"{r.over_1s_pct:.2f} %",
              f"{r.median_of_run_medians_ms:.1f}", f"{r.run_p99_min_ms:.0f}–{r.run_p99_max_ms:.0f}"]
             for _, r in sub.iterrows()], "rllrrrrrrrr"))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------
# sshcost: connection set-up + handshake rounds
# ---------------------------------------------------------------------------------------

def run_sshcost(out: Path, seeds: int, jobs: int, profiles=PROFILES, losses=LOSSES) -> pd.DataFrame:
    """Lossless: every mode with 0, 4 and 8 rounds (seed 1); lossy: TCP and the shim with 8
    rounds, ``seeds`` runs per (profile, loss)."""
    base = _load(SCP)
    cells = [(p, m, 0, x, 1) for p in profiles for m in SSH_MODES for x in (0, 4, 8)]
    cells += [(p, m, l, 8, s) for p in profiles for m in ("tcp", "shim") for l in losses if l for s in range(1, seeds + 1)]
    tmp = out / "tmp-sshcost"

    def one(c):
        p, m, l, x, s = c
        d = tmp / f"{p}-{m}-{l}-{x}-{s}"
        run(scenario(base, p, l, m, exchanges=x), d, seed=s)
        fl = pd.read_csv(d / "flows.csv").set_index("name")
        c_ = fl.loc["scp"]
        tr, fb = _transport(d)
        total = float(c_["transfer_time_s"])
        data = FILE_BYTES * 8 / float(c_["goodput_bps"]) if float(c_["goodput_bps"]) > 0 else float("nan")
        shutil.rmtree(d, ignore_errors=True)
        return {"profile": p, "mode": m, "loss": l, "exchanges": x, "seed": s, "state": str(c_["state"]),
                "transport": tr, "fallback": fb, "total_s": total, "setup_s": total - data}

    df = pd.DataFrame(_pool(jobs, one, cells))
    shutil.rmtree(tmp, ignore_errors=True)
    return df


def sshcost_md(df: pd.DataFrame) -> str:
    out = []
    lossless = df[df.loss == 0]
    for p in lossless.profile.unique():
        sub = lossless[lossless.profile == p]
        tcp0 = sub[(sub["mode"] == "tcp") & (sub.exchanges == 0)].setup_s.iloc[0]
        out.append(f"\n**{p}**, no loss: connect() → first data byte (ms) and in units of the TCP "
                   f"handshake's round trip ({tcp0 * 1e3:.1f} ms).\n")
        rows = []
        for m, lab in SSH_MODES.items():
            r = sub[sub["mode"] == m].set_index("exchanges")
            tr = sub[sub["mode"] == m].iloc[0]
            rows.append([lab, f"{tr.transport}{' (' + tr.fallback + ')' if tr.fallback else ''}",
                         *(f"{r.loc[x, 'setup_s'] * 1e3:.1f} ({r.loc[x, 'setup_s'] / tcp0:.2f})" for x in (0, 4, 8))])
        out.append(md_table(["mode", "transport", "connect only", "+ 4 rounds (scp study)", "+ 8 rounds (SSH-2)"],
                            rows, "llrrr"))
    lossy = df[df.loss > 0]
    rows = []
    for (p, l), g in lossy.groupby(["profile", "loss"], sort=False):
        cells = []
        for m in ("tcp", "shim"):
            x = g[(g["mode"] == m) & (g.state == "done")].setup_s.to_numpy()
            cells += [f"{np.median(x):.2f}", f"{np.percentile(x, 90):.2f}", f"{x.max():.2f}"]
        fb = int(((g["mode"] == "shim") & (g.transport == "tcp")).sum())
        n = int((g["mode"] == "shim").sum())
        rows.append([p, f"{l:g} %", n, *cells, f"{fb} of {n}"])
    out.append("\nWith loss, 8 rounds: set-up time (s) over the seeds, TCP vs the shim as run.\n")
    out.append(md_table(["profile", "loss", "runs", "TCP median", "TCP p90", "TCP max", "shim median",
                         "shim p90", "shim max", "shim fell back"], rows, "llrrrrrrrr"))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------

def plot(cs: pd.DataFrame, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for ax, p in zip(axes, PROFILES):
        sub = cs[cs.profile == p]
        for m, c, lab in (("tcp", "C0", "TCP"), ("shim-sctp", "C1", "shim (runs on SCTP)")):
            s = sub[sub["mode"] == m]
            ax.plot(s.loss, s.median_ms, marker="o", color=c, label=f"{lab}: median")
            ax.plot(s.loss, s.p99_ms, marker="s", ls="--", color=c, label=f"{lab}: 99th percentile")
        ax.set_yscale("log")
        ax.set_xlabel("loss each way (%)")
        ax.set_title(f"{p}: per-keystroke latency")
        ax.legend(fontsize=7)
    axes[0].set_ylabel("request → echo (ms)")
    save(fig, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wirelab.repro.shim_interactive", description=__doc__.split("\n")[0])
    add_out(ap, "shim_interactive")
    ap.add_argument("--only", choices=["interactive", "sshcost"], default=None)
    ap.add_argument("--seeds", type=int, default=20, help="runs per lossy cell (default 20)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    stamp(a.out, "shim_interactive", argv)
    if a.only in (None, "interactive"):
        runs, lat = run_interactive(a.out, a.seeds, a.jobs)
        runs.to_csv(a.out / "interactive.csv", index=False)
        cs = interactive_cells(runs, lat)
        cs.to_csv(a.out / "interactive-cells.csv", index=False)
        (a.out / "interactive.md").write_text(interactive_md(cs))
        plot(cs, a.out / "shim-interactive.png")
        print(interactive_md(cs))
    if a.only in (None, "sshcost"):
        df = run_sshcost(a.out, a.seeds, a.jobs)
        df.to_csv(a.out / "sshcost.csv", index=False)
        (a.out / "sshcost.md").write_text(sshcost_md(df))
        print(sshcost_md(df))
    return 0


if __name__ == "__main__":
    sys.exit(main())
