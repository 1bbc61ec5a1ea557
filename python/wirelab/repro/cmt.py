"""SCTP concurrent multipath transfer (CMT) study (issue 19, docs/cmt.md).

Runs scenarios/cmt/two-paths.toml (10 Mbit/s 20 ms + 5 Mbit/s 60 ms disjoint paths) and
scenarios/cmt/scp-two-paths.toml (the shim's scp transfer over two 1.5 Mbit/s 35 ms paths)
through ``wirelab.run`` and writes CSV tables, ``table.md`` and figures to ``--out``:

* ``goodput``  — CMT vs single-path SCTP on each path vs two single-homed associations at
  once (AppStripe, the paper's "sum of the paths"), over receive-buffer sizes, without and
  with 1 % loss on path 2;
* ``ablation`` — CMT with and without SFR, CUC and DAC: goodput, fast retransmits,
  duplicate TSNs at the receiver (spurious retransmissions), SACKs;
* ``rtx``      — the retransmission policies RTX-SAME/ASAP/CWND/SSTHRESH over rbuf sizes;
* ``rp``       — cmt_on_off 1–4 (CMT and FreeBSD's resource-pooling variants);
* ``failover`` — path 1 down from 10 s to 40 s during a transfer, with and without CMT;
* ``scp``      — TCP vs the shim vs the shim with CMT, transfer times.

Every run is 30 s of simulated time or less (failover: 100 s), well under a second of
wall time each::

    python -m wirelab.repro.cmt [--out DIR] [--only goodput,ablation] [--seeds 10] [--jobs 2]

(default ``./wirelab-repro-cmt``; ``PROVENANCE.json`` records the commit and the command).
``WIRELAB_BIN=target/release/wirelab`` runs a freshly built CLI instead of the in-process
package.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd

from .common import add_out, pyplot, scenario_file, stamp
from .common import run as run_scenario

TWO_PATHS = scenario_file("cmt/two-paths.toml")
SCP = scenario_file("cmt/scp-two-paths.toml")
PATH2_ADDR = "10.128.3.2"  # s's address on the 5 Mbit/s path (link p2b)

# CMT variants: FreeBSD sysctl spelling, set on both hosts
FULL = {"net.inet.sctp.cmt_on_off": 1, "net.inet.sctp.cmt_use_dac": 1}
VARIANTS: dict[str, dict[str, Any]] = {
    "cmt (SFR+CUC+DAC)": FULL,
    "cmt, no DAC (FreeBSD default)": {"net.inet.sctp.cmt_on_off": 1},
    "cmt, no SFR": {**FULL, "net.inet.sctp.cmt_sfr": 0},
    "cmt, no CUC (cum-ack growth only)": {**FULL, "net.inet.sctp.cmt_cuc": "off"},
    "cmt, RFC 9260 growth instead of CUC": {**FULL, "net.inet.sctp.cmt_cuc": "any"},
    "naive cmt (no SFR, CUC, DAC)": {"net.inet.sctp.cmt_on_off": 1, "net.inet.sctp.cmt_sfr": 0, "net.inet.sctp.cmt_cuc": "off"},
}
BIG = 8 << 20


def _load(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def two_paths(rbuf: int, cmt: dict | None = None, mode: str = "cmt", loss2: float = 0.0,
              duration: str = "30s", events: list | None = None, loss1: float = 0.0) -> dict:
    """The two-path scenario as a dict. ``mode``: ``cmt`` (one association over both
    paths, CMT by ``cmt`` sysctls), ``p1``/``p2`` (one single-homed association on that
    path) or ``stripe`` (one single-homed association per path at once: AppStripe)."""
    sc = _load(TWO_PATHS)
    sc["scenario"]["duration"] = duration
    sys_ = {"net.core.rmem_max": BIG, "net.core.wmem_max": BIG, **(cmt or {})}
    for n in sc["node"]:
        if n["name"] in ("c", "s"):
            n["sysctl"] = {k: str(v) for k, v in sys_.items()}
    for link in sc["link"]:
        if link["name"] == "p2b" and loss2:
            link["netem"] = f"rate 5mbit delay 60ms loss {loss2:g}%"
        if link["name"] == "p1b" and loss1:
            link["netem"] = f"rate 10mbit delay 20ms loss {loss1:g}%"
    apps = {a["name"]: a for a in sc["app"]}
    apps["sink"]["rcvbuf"] = str(rbuf)
    bulk = apps["bulk"]
    bulk["sndbuf"] = str(4 << 20)
    if mode == "p1":
        bulk["dst"], bulk["single_homed"] = "10.128.1.2:6000", True
    elif mode == "p2":
        bulk["dst"], bulk["single_homed"] = f"{PATH2_ADDR}:6000", True
    elif mode == "stripe":
        bulk["dst"], bulk["single_homed"] = "10.128.1.2:6000", True
        sc["app"].append({**bulk, "name": "bulk2", "dst": f"{PATH2_ADDR}:6000"})
    if events:
        sc["event"] = events
    return sc


def _run(args: tuple) -> dict:
    """One run (in a worker): returns the summary row."""
    label, sc, seed, keep = args
    import tempfile

    out = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="wirelab-cmt-"))
    binary = os.environ.get("WIRELAB_BIN")
    if binary:  # a freshly built CLI instead of the installed package
        import subprocess

        import tomli_w

        out.mkdir(parents=True, exist_ok=True)
        f = out.parent / f"{out.name}.toml"
        f.write_text(tomli_w.dumps(sc))
        subprocess.run([binary, "run", str(f), "--out", str(out), "--seed", str(seed), "-q"], check=True)
        f.unlink()
    else:
        run_scenario(sc, out, seed=seed)
    row = {**label, "seed": seed, **summarize(out, sc)}
    if not keep:
        import shutil

        shutil.rmtree(out, ignore_errors=True)
    return row


def summarize(d: Path, sc: dict) -> dict:
    d = Path(d)
    csv = lambda name: pd.read_csv(d / name) if (d / name).exists() and (d / name).stat().st_size else pd.DataFrame({"flow": [], "time_s": []})  # noqa: E731
    ts, ps, flows = csv("sctp_timeseries.csv"), csv("sctp_path_timeseries.csv"), pd.read_csv(d / "flows.csv")
    row: dict[str, Any] = {}
    if "sink" in set(ts["flow"]):
        sink = ts[ts["flow"] == "sink"]
        end = sink["time_s"].max()
        # bytes delivered by all of the sink's associations, 5 s → end (steady state)
        at = lambda t: sink[sink["time_s"] <= t + 1e-9].groupby("sock")["bytes_delivered"].last().sum()  # noqa: E731
        row["goodput_mbit"] = (at(end) - at(5.0)) * 8 / (end - 5.0) / 1e6
        last_rx = sink.groupby("sock").last()
        row["dup_tsns"] = int(last_rx["dup_tsns"].sum())
        row["sacks"] = int(last_rx["sacks_sent"].sum())
    sender = ("bulk", "scp")  # the sending app of two-paths.toml / scp-two-paths.toml
    snd = ts[ts["flow"].astype(str).str.startswith(sender)]
    if len(snd):
        last = snd.groupby(["flow", "sock"]).last()
        row["fast_rtx"] = int(last["fast_retransmits"].sum())
        row["t3"] = int(last["t3_expiries"].sum())
        row["rtx_chunks"] = int(last["retransmits"].sum())
        pl = ps[ps["flow"].astype(str).str.startswith(sender)].groupby(["flow", "path"]).last()
        sent = pl.groupby("addr")["bytes_sent"].sum()
        row["share_path2"] = float(sent.get(PATH2_ADDR, 0) / max(sent.sum(), 1)) if len(sent) else 0.0
    if "scp" in set(flows["name"]):
        f = flows[flows["name"] == "scp"].iloc[0]
        row["transfer_time_s"] = f["transfer_time_s"]
        row["state"] = f["state"]
        row["transport"] = "sctp" if len(ts) else "tcp"
    return row


def run_all(jobs: list[tuple], n_jobs: int) -> pd.DataFrame:
    if n_jobs <= 1:
        rows = [_run(j) for j in jobs]
    else:
        with ProcessPoolExecutor(n_jobs) as ex:
            rows = list(ex.map(_run, jobs))
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------
# parts
# ---------------------------------------------------------------------------------------

RBUFS = [32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20]
# random loss (%) on (path 1, path 2), each direction
LOSSES = [(0.0, 0.0), (0.0, 1.0), (1.0, 1.0)]


def loss_label(l1: float, l2: float) -> str:
    return f"loss p1 {l1:g} % / p2 {l2:g} %"


def _label(part: str, config: str, rbuf: int, l1: float, l2: float) -> dict:
    return {"part": part, "config": config, "rbuf": rbuf, "loss": loss_label(l1, l2)}


def part_goodput(seeds: list[int]) -> list[tuple]:
    jobs = []
    for rbuf, (l1, l2) in itertools.product(RBUFS, LOSSES):
        for mode, cmt in [("p1", None), ("p2", None), ("stripe", None), ("cmt", VARIANTS["cmt, no DAC (FreeBSD default)"]), ("cmt", FULL)]:
            name = {"p1": "single path 1", "p2": "single path 2", "stripe": "AppStripe (p1+p2)"}.get(mode, "cmt+dac" if cmt is FULL else "cmt")
            for s in seeds:
                jobs.append((_label("goodput", name, rbuf, l1, l2), two_paths(rbuf, cmt, mode, l2, loss1=l1), s, None))
    return jobs


def part_ablation(seeds: list[int]) -> list[tuple]:
    jobs = []
    for rbuf, (l1, l2) in itertools.product([128 << 10, 2 << 20], LOSSES):
        for name, cmt in VARIANTS.items():
            for s in seeds:
                jobs.append((_label("ablation", name, rbuf, l1, l2), two_paths(rbuf, cmt, "cmt", l2, loss1=l1), s, None))
    return jobs


def part_rtx(seeds: list[int]) -> list[tuple]:
    jobs = []
    for rbuf, (l1, l2), pol in itertools.product([32 << 10, 64 << 10, 128 << 10, 256 << 10, 1 << 20], [(0.0, 1.0), (0.0, 3.0), (1.0, 1.0)], ["same", "asap", "cwnd", "ssthresh"]):
        cmt = {**FULL, "net.inet.sctp.cmt_rtx_policy": pol}
        for s in seeds:
            jobs.append((_label("rtx", f"RTX-{pol.upper()}", rbuf, l1, l2), two_paths(rbuf, cmt, "cmt", l2, loss1=l1), s, None))
    return jobs


def part_rp(seeds: list[int]) -> list[tuple]:
    jobs = []
    for v, (l1, l2) in itertools.product([1, 2, 3, 4], LOSSES):
        cmt = {**FULL, "net.inet.sctp.cmt_on_off": v}
        for s in seeds:
            jobs.append((_label("rp", f"cmt_on_off={v}", 2 << 20, l1, l2), two_paths(2 << 20, cmt, "cmt", l2, loss1=l1), s, None))
    return jobs


FAILOVER_EVENTS = [{"at": "10s", "link": "p1b", "action": "down"}, {"at": "40s", "link": "p1b", "action": "up"}]


def part_failover(out: Path) -> list[tuple]:
    jobs = []
    for name, cmt in [("single-path SCTP (linux-6 PF)", None), ("cmt+dac", FULL)]:
        sc = two_paths(2 << 20, cmt, "cmt", 0.0, duration="100s", events=FAILOVER_EVENTS)
        jobs.append((_label("failover", name, 2 << 20, 0.0, 0.0), sc, 1, str(out / "failover" / name.split()[0].replace("-", ""))))
    return jobs


SCP_MODES = {
    "TCP": {"shim": False, "cmt": None},
    "shim (SCTP)": {"shim": True, "cmt": None},
    "shim + CMT": {"shim": True, "cmt": FULL},
}


def scp(mode: str, size: int, loss: float) -> dict:
    sc = _load(SCP)
    m = SCP_MODES[mode]
    for n in sc["node"]:
        if n["name"] == "c" and not m["shim"]:
            n["shim"] = ["remote default disable"]
        if n["name"] == "s" and not m["shim"]:
            n["shim"] = ["local default disable"]
        if n["name"] in ("c", "s") and m["cmt"]:
            n["sysctl"] = {k: str(v) for k, v in m["cmt"].items()}
    for link in sc["link"]:
        if link["name"] in ("p1b", "p2b"):
            link["netem"] = f"rate 1.5mbit delay 35ms loss {loss:g}%"
    for a in sc["app"]:
        if a["name"] == "scp":
            a["bytes"] = str(size)
    return sc


def part_scp(seeds: list[int]) -> list[tuple]:
    jobs = []
    for mode, size, loss in itertools.product(SCP_MODES, [50_000, 500_000, 5_000_000], [0.0, 1.0, 3.0, 6.0, 10.0]):
        for s in seeds:
            jobs.append(({"part": "scp", "config": mode, "size": size, "loss": loss}, scp(mode, size, loss), s, None))
    return jobs


# ---------------------------------------------------------------------------------------
# tables and figures
# ---------------------------------------------------------------------------------------

def _kb(b: int) -> str:
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def table(df: pd.DataFrame, value: str, fmt: str = "{:.2f}") -> str:
    """Mean (± half-range over seeds) of ``value`` per config × rbuf, per loss."""
    out = []
    for loss, g in df.groupby("loss", sort=False):
        out.append(f"\n{loss}: {value} (mean over {g['seed'].nunique()} seed(s); ± half the range)\n")
        rb = sorted(g["rbuf"].unique())
        out.append("| config | " + " | ".join(f"rbuf {_kb(r)}" for r in rb) + " |")
        out.append("|---|" + "---:|" * len(rb))
        for cfg in dict.fromkeys(g["config"]):
            cells = []
            for r in rb:
                v = g[(g["config"] == cfg) & (g["rbuf"] == r)][value]
                if not len(v):
                    cells.append("")
                    continue
                c = fmt.format(v.mean())
                if len(v) > 1 and v.max() > v.min():
                    c += " ± " + fmt.format((v.max() - v.min()) / 2)
                cells.append(c)
            out.append(f"| {cfg} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def plot_goodput(df: pd.DataFrame, path: Path) -> None:
    plt = pyplot()
    groups = list(df.groupby("loss", sort=False))
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 3.6), sharey=True)
    for ax, (loss, g) in zip(axes, groups):
        for cfg, h in g.groupby("config", sort=False):
            m = h.groupby("rbuf")["goodput_mbit"].mean()
            ax.plot([r / 1024 for r in m.index], m.values, marker="o", label=cfg)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("SO_RCVBUF (KiB) = initial rwnd")
        ax.set_title(loss)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("goodput 5–30 s (Mbit/s)")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_failover(out: Path, path: Path) -> pd.DataFrame:
    plt = pyplot()
    fig, axes = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    rows = []
    for d in sorted((out / "failover").iterdir()):
        ts = pd.read_csv(d / "sctp_timeseries.csv")
        sink = ts[ts["flow"] == "sink"].groupby("time_s")["bytes_delivered"].sum()
        per_s = sink.groupby((sink.index).astype(int)).last().diff().fillna(0) * 8 / 1e6
        axes[0].plot(per_s.index, per_s.values, label=d.name)
        ps = pd.read_csv(d / "sctp_path_timeseries.csv")
        for p, g in ps[ps["flow"] == "bulk"].groupby("path"):
            s = g.set_index("time_s")["bytes_sent"]
            rate = s.groupby(s.index.astype(int)).last().diff().fillna(0) * 8 / 1e6
            axes[1].plot(rate.index, rate.values, label=f"{d.name}: path {p + 1} sent")
        # recovery: first second after the failure with ≥ 80 % of the pre-failure rate
        pre = per_s[(per_s.index > 5) & (per_s.index <= 10)].mean()
        during = per_s[(per_s.index > 12) & (per_s.index <= 40)].mean()
        after = per_s[(per_s.index > 90)].mean()
        stall = per_s[(per_s.index > 10) & (per_s.index <= 15)]
        back = stall[stall.values >= 0.5 * during].index.min()
        # path 1 in use again: first second after 40 s in which it sent data
        p1 = ps[(ps["flow"] == "bulk") & (ps["path"] == 0)].set_index("time_s")["bytes_sent"]
        p1s = p1.groupby(p1.index.astype(int)).last().diff().fillna(0)
        reused = p1s[(p1s.index > 40) & (p1s.values > 0)].index.min()
        rows.append({"config": d.name, "before_mbit": pre, "during_mbit": during, "after_mbit": after,
                     "resumed_at_s": back, "path1_used_again_at_s": reused})
    axes[0].axvspan(10, 40, color="grey", alpha=0.15)
    axes[1].axvspan(10, 40, color="grey", alpha=0.15)
    axes[0].set_ylabel("delivered (Mbit/s)")
    axes[1].set_ylabel("sent per path (Mbit/s)")
    axes[1].set_xlabel("time (s); path 1 down 10–40 s")
    for ax in axes:
        ax.set_xlim(0, 100)
    axes[0].legend(fontsize=7)
    axes[1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return pd.DataFrame(rows)


def frame_md(df: pd.DataFrame) -> str:
    fmt = lambda v: f"{v:.2f}" if isinstance(v, float) else str(v)  # noqa: E731
    rows = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    rows += ["| " + " | ".join(fmt(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(rows) + "\n"


def scp_table(df: pd.DataFrame) -> str:
    out = ["| size | loss | " + " | ".join(SCP_MODES) + " |", "|---|---:|" + "---:|" * len(SCP_MODES)]
    for (size, loss), g in df.groupby(["size", "loss"]):
        cells = []
        for m in SCP_MODES:
            v = g[g["config"] == m]["transfer_time_s"]
            cells.append(f"{v.mean():.2f} s ({v.min():.1f}–{v.max():.1f})" if len(v) else "")
        out.append(f"| {size // 1000} KB | {loss:g} % | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wirelab.repro.cmt", description=__doc__.split("\n\n")[0])
    add_out(ap, "cmt")
    ap.add_argument("--only", default="goodput,ablation,rtx,rp,failover,scp")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per cell")
    ap.add_argument("--scp-seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    out: Path = args.out
    stamp(out, "cmt", argv)
    parts = args.only.split(",")
    seeds = list(range(1, args.seeds + 1))
    md = []
    for part in parts:
        print(f"cmt study: {part} …", file=sys.stderr, flush=True)
        if part == "failover":
            jobs = part_failover(out)
        elif part == "scp":
            jobs = part_scp(list(range(1, args.scp_seeds + 1)))
        else:
            jobs = {"goodput": part_goodput, "ablation": part_ablation, "rtx": part_rtx, "rp": part_rp}[part](seeds)
        df = run_all(jobs, args.jobs)
        df.to_csv(out / f"{part}.csv", index=False)
        md.append(f"\n## {part}\n")
        if part == "goodput":
            md.append(table(df, "goodput_mbit"))
            plot_goodput(df, out / "cmt-goodput.png")
        elif part in ("ablation", "rp"):
            for v, f in [("goodput_mbit", "{:.2f}"), ("fast_rtx", "{:.0f}"), ("dup_tsns", "{:.0f}"), ("sacks", "{:.0f}"), ("t3", "{:.0f}"), ("share_path2", "{:.2f}")]:
                md.append(table(df, v, f))
        elif part == "rtx":
            md.append(table(df, "goodput_mbit"))
            md.append(table(df, "rtx_chunks", "{:.0f}"))
        elif part == "failover":
            s = plot_failover(out, out / "cmt-failover.png")
            s.to_csv(out / "failover-summary.csv", index=False)
            md.append(frame_md(s))
        elif part == "scp":
            md.append(scp_table(df))
        (out / "table.md").write_text("".join(md))
    print("".join(md))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
