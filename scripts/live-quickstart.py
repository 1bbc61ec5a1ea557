#!/usr/bin/env python3
"""The quickstart's FIFO half (scenarios/quickstart.toml) with the kernel's own CUBIC and BBR
as the bulk flows, beside wirelab's simulation of the same path.

The path: fifo-bulk ═ 100 Mbit/s, 1 ms ═ fifo-r1 ═ 10 Mbit/s, 20 ms, pfifo limit 100 ═
fifo-r2 ═ 100 Mbit/s, 1 ms ═ fifo-sink; a CUBIC bulk flow from 0 s and a BBR bulk flow
from 1 s to the sink, and two thin streams (120 B every 100 ms, one with RDB) from fifo-thin
to fifo-thinrx through the same bottleneck.

Here fifo-bulk is a TUN node (`wirelab live`): its namespace's kernel TCP (linux-6 sysctls
as the simulated host's profile) runs both bulk flows from this file's `kernel-bulk` mode:
CUBIC as soon as python has started (≈ 0.1–0.3 s), BBR at 1 s and both stop at SECONDS on
the live clock (the shell's timestamp before python starts is the clock's zero). Everything
else — routers, the bottleneck and its pfifo, the sinks, the thin streams (RDB is not in
mainline Linux) — is wirelab, as in the simulation. As scripts/live-tcp-echo.py found, a
kernel host behind a TUN device is not held back by TSQ (tun_net_xmit() orphans the skb),
so the TUN device gets an HTB at 99 % of the access link's rate (its own NIC) and a
20 000-packet ring (kernel_nic(), grow_tun_ring() there).

Then every `--wirelab NAME=BIN` runs scenarios/quickstart.toml unchanged in the simulator
(the SFQ half too; only the FIFO half is read) for the same duration.

    scripts/live-quickstart.py [--seconds 20] [--reps 3] [--wirelab NAME=BIN ...]
        [--seeds N] [--json OUT] [--keep DIR]

Run it with the venv's python (it uses `wirelab.live`). Needs root and /dev/net/tun for the
kernel runs (says why and exits 0, or 77 with --strict, without them). Prints per run the
bulk flows' goodput (the sinks' `goodput_bps`, as the quickstart's summary; and over the
second half), BBR's share, the bottleneck's drops and the kernel flows' retransmissions.
"""
import argparse
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios/quickstart.toml"
_spec = importlib.util.spec_from_file_location("live_tcp_echo", ROOT / "scripts/live-tcp-echo.py")
echo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(echo)

FLOWS = (("cubic", 5001, 0.0), ("bbr", 5002, 1.0))  # the quickstart's fifo-cubic / fifo-bbr
BOTTLENECK = "fifo-r1:eth2"


# --- the kernel side: runs inside fifo-bulk's namespace ------------------------------------

def kernel_bulk(host: str, seconds: float, t0: float) -> dict:
    """Both bulk flows, each from its own thread: connect at t0 + start (CUBIC at once),
    write 64 KiB blocks until t0 + seconds (t0: wall clock when the live clock started)."""
    echo.peer_setup()
    out = {}

    def flow(cc: str, port: int, start: float):
        time.sleep(max(0.0, t0 + start - time.time()))
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        s.connect((host, port))
        t_conn = time.time() - t0
        b, n = bytes(1 << 16), 0
        s.settimeout(0.2)
        while time.time() - t0 < seconds:
            try:
                n += s.send(b)
            except socket.timeout:
                pass
        out[cc] = {"connect_s": t_conn, "bytes_written": n, "end": echo.tcp_info(s),
                   "cc": s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()}
        s.close()

    threads = [threading.Thread(target=flow, args=f) for f in FLOWS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"flows": out, "counters": echo.netns_counters()}


# --- the experiment ------------------------------------------------------------------------

def fifo_half(seconds: float) -> dict:
    """quickstart.toml's FIFO half with fifo-bulk a TUN node (addresses spelled out: the
    kernel connects to an address, not a node name)."""
    sc = tomllib.loads(SCENARIO.read_text())
    sc["scenario"].update(name="live-quickstart", duration=f"{seconds + 10:g}s")
    sc["node"] = [n for n in sc["node"] if n["name"].startswith("fifo")]
    links = [dict(lk) for lk in sc["link"] if lk["a"]["node"].startswith("fifo")]
    for i, lk in enumerate(links):  # subnet per link: 10.0.<i>.1 (a) and .2 (b)
        lk["a"] = {**lk["a"], "addr": f"10.0.{i}.1/24"}
        lk["b"] = {**lk["b"], "addr": f"10.0.{i}.2/24"}
    sink = next(lk["b"]["addr"].split("/")[0] for lk in links if lk["b"]["node"] == "fifo-sink")
    nic = next(lk["netem"] for lk in links if lk["a"]["node"] == "fifo-bulk")
    nic_kbit = int(float(nic.split()[1].removesuffix("mbit")) * 1000 * 0.99)
    me = Path(__file__).resolve()
    for n in sc["node"]:
        if n["name"] == "fifo-bulk":
            n.update(kind="tun", sysctl=dict(echo.SYSCTL),
                     run=[f"KERNEL_NIC_RATE={nic_kbit}kbit {sys.executable} {me} kernel-bulk {sink} {seconds} "
                          f"$(date +%s.%N) > kernel.json"])
    sc["link"] = links
    sc["app"] = [a for a in sc["app"] if a["node"].startswith("fifo") and a["name"] not in ("fifo-cubic", "fifo-bbr")]
    # the thin senders' captures stay; the per-packet queue probe is not needed here
    sc["measure"] = {"sample_interval": "100ms", "capture": [c for c in sc["measure"]["capture"] if c.startswith("fifo")]}
    return sc


def flow_rates(out: Path, seconds: float) -> dict:
    """Per bulk sink: the summary's goodput_bps and the rate over [seconds/2, seconds]."""
    import pandas as pd
    summ = json.loads((out / "summary.json").read_text())
    t = pd.read_csv(out / "flow_timeseries.csv")
    r = {}
    for cc, _, _ in FLOWS:
        sink = f"fifo-{cc}-rx"
        r[f"{cc}_mbit"] = next(f["goodput_bps"] for f in summ["flows"] if f["name"] == sink) / 1e6
        s = t[t["flow"] == sink].set_index("time_s")["rx_bytes"]
        a, b = s[s.index <= seconds / 2 + 1e-9].iloc[-1], s[s.index <= seconds + 1e-9].iloc[-1]
        r[f"{cc}_2nd_half_mbit"] = (b - a) * 8 / (seconds / 2) / 1e6
    r["bbr_share"] = r["bbr_mbit"] / (r["bbr_mbit"] + r["cubic_mbit"])
    q = {x["dev"]: x for x in summ["queues"]}
    r["bottleneck_drops"] = q[BOTTLENECK]["drops"]
    r["other_drops"] = sum(x["drops"] for d, x in q.items() if d != BOTTLENECK and d.startswith("fifo"))
    return r


def run_kernel(seconds: float, tmp: Path, rep: int) -> dict:
    import wirelab
    out = tmp / f"live-{rep}"
    tmp.mkdir(parents=True, exist_ok=True)
    res = wirelab.live(fifo_half(seconds), out=out)
    k = json.loads((out / "kernel.json").read_text())
    r = {"who": "kernel", **flow_rates(out, seconds)}
    for cc, _, _ in FLOWS:
        f = k["flows"][cc]
        assert f["cc"] == cc, f
        r[f"{cc}_retrans"] = f["end"]["total_retrans"]
        r[f"{cc}_start_s"] = f["connect_s"]
    c = k["counters"]
    # the TUN device's ring and the kernel's own HTB/pfifo (`tc -s`: "(dropped N, ...")
    r["host_drops"] = c.get("dev_tx_dropped", 0) + sum(int(n) for n in re.findall(r"dropped (\d+)", c.get("qdisc", "")))
    lag = res.summary["live"]["event_lag"]
    r["lag_p50_ms"], r["lag_p99_ms"] = lag["median_ns"] / 1e6, lag["p99_ns"] / 1e6
    return r


def run_wirelab(name: str, wbin: str, seconds: float, tmp: Path, seed: int = 1) -> dict:
    out = tmp / f"sim-{name}-{seed}"
    tmp.mkdir(parents=True, exist_ok=True)
    p = subprocess.run([wbin, "run", str(SCENARIO), "--out", str(out), "-q", "--seed", str(seed),
                        "--set", f"scenario.duration={seconds:g}s"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{wbin} run failed: {p.stderr.strip()[-2000:]}")
    summ = json.loads((out / "summary.json").read_text())
    r = {"who": name if seed == 1 else f"{name} seed {seed}", **flow_rates(out, seconds)}
    for cc, _, start in FLOWS:
        f = next(f for f in summ["flows"] if f["name"] == f"fifo-{cc}")
        r[f"{cc}_retrans"], r[f"{cc}_start_s"] = f["retrans"], start
    return r


COLS = [("cubic_mbit", "CUBIC Mb/s", "{:.2f}"), ("bbr_mbit", "BBR Mb/s", "{:.2f}"), ("bbr_share", "BBR share", "{:.2f}"),
        ("cubic_2nd_half_mbit", "CUBIC 2nd half", "{:.2f}"), ("bbr_2nd_half_mbit", "BBR 2nd half", "{:.2f}"),
        ("bottleneck_drops", "bottleneck drops", "{}"), ("cubic_retrans", "retrans CUBIC", "{}"),
        ("bbr_retrans", "BBR", "{}"), ("other_drops", "other drops", "{}"),
        ("host_drops", "kernel host drops", "{}"), ("lag_p99_ms", "lag p99 ms", "{:.1f}")]


def fmt(seconds: float, r: dict) -> str:
    cells = ["–" if r.get(k) is None else f.format(r[k]) for k, _, f in COLS]
    return f"| {seconds:g} s | {r['who']} | " + " | ".join(cells) + " |"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "kernel-bulk":
        print(json.dumps(kernel_bulk(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", default="20", help="durations, comma-separated (s)")
    ap.add_argument("--reps", type=int, default=3, help="kernel runs per duration")
    ap.add_argument("--wirelab", action="append", default=[], metavar="NAME=BIN", help="simulate with this binary too")
    ap.add_argument("--seeds", type=int, default=1, help="simulate seeds 1..N (the thin streams' timing)")
    ap.add_argument("--no-kernel", action="store_true")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--keep", help="keep the run directories under this directory")
    ap.add_argument("--strict", action="store_true", help="exit 77 (skip) instead of 0 when the kernel cannot run")
    a = ap.parse_args()
    why = None if a.no_kernel else echo.missing()
    if why:
        print(f"kernel runs skipped: {why}", file=sys.stderr)
        if a.strict:
            return 77
    header = ["run", "bulk TCP"] + [h for _, h, _ in COLS]
    print("| " + " | ".join(header) + " |\n|" + " --- |" * len(header), flush=True)
    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="live-quickstart-"))
    tmp.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for seconds in (float(x) for x in a.seconds.split(",")):
            d = tmp / f"{seconds:g}"
            for name, _, wbin in (w.partition("=") for w in a.wirelab):
                rows += [{"seconds": seconds, **run_wirelab(name, wbin, seconds, d, seed)} for seed in range(1, a.seeds + 1)]
                print("\n".join(fmt(seconds, r) for r in rows[-a.seeds:]), flush=True)
            for i in range(0 if a.no_kernel or why else a.reps):
                rows.append({"seconds": seconds, **run_kernel(seconds, d, i)})
                print(fmt(seconds, rows[-1]), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
