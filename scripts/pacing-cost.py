#!/usr/bin/env python3
"""What pacing costs the simulator, per delivered data segment (docs/performance.md,
"Congestion control and pacing"; issue 17).

Runs `wirelab bench`'s TCP dumbbell (N senders -> r1 -> 20 ms bottleneck -> r2 -> N
receivers, 1 Gbit/s 0.5 ms access links, a one-BDP pfifo at least 100 packets deep) in
variants that differ only in who paces:

  cubic            CUBIC, unpaced (sk_pacing_status NONE)
  cubic+internal   CUBIC with SO_MAX_PACING_RATE 100 Gbit/s: TCP paces itself at
                   tcp_update_pacing_rate()'s rate (pacing timer)
  cubic+fq         CUBIC behind an `fq` on every sender (SK_PACING_FQ: fq enforces the EDTs)
  bbr              BBR, which always paces (internally: no fq)
  bbr+fq           BBR behind `fq` on every sender
  dctcp            DCTCP on both ends, ECN-marking RED at K packets (bench's default)

and prints, per variant, instructions per delivered segment from `valgrind
--tool=cachegrind` (robust on a loaded machine; the whole process is counted: parsing,
building and writing add < 1 % at these sizes) and the CPU time (user + system, from
getrusage of the child: what a shared machine's load does not inflate as much as wall
time) of native runs, median of --reps, with the load average. Usage:

    scripts/pacing-cost.py [--bin target/release/wirelab] [--cases 20@10mbit:10,200@10mbit:10]
                           [--variants cubic,cubic+internal,bbr] [--reps 3] [--no-cachegrind]
                           [--cache-sim]

--cache-sim adds cachegrind's simulated L1 data (D1) and last-level (LL) misses per
delivered segment (slower): paced and unpaced runs execute about the same instructions,
and what separates them is D1 misses (docs/performance.md, "Where paced runs lose time").
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

IREFS = r"I\s+refs"
VARIANTS = ["cubic", "cubic+internal", "cubic+fq", "bbr", "bbr+fq", "dctcp"]


def dumbbell(n: int, rate: str, dur: float, variant: str) -> str:
    """`wirelab bench`'s tcp_dumbbell_toml (crates/wirelab-run/src/bench.rs) plus the
    variant's pacing."""
    mult = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    m = re.fullmatch(r"([\d.]+)(kbit|mbit|gbit)", rate)
    bps = float(m.group(1)) * mult[m.group(2)]
    bdp = math.ceil(bps * 0.042 / 8 / 1514)
    limit = max(bdp, 100)
    cc = variant.split("+")[0]
    if cc == "dctcp":
        k = max(-(-bdp // 7), 20)
        q = f"red limit {limit * 1514} min {k * 1514} max {k * 1514 + 1} avpkt 1514 burst {k} probability 1 ecn"
    else:
        q = f"pfifo limit {limit}"
    sysctl = "" if cc == "cubic" else f'sysctl = {{ "net.ipv4.tcp_congestion_control" = "{cc}" }}\n'
    host_q = ', qdisc = "fq"' if variant.endswith("+fq") else ""
    app_opt = 'max_pacing_rate = "100gbit"\n' if variant.endswith("+internal") else ""
    s = f'[scenario]\nname = "pacing-cost"\nduration = "{dur}s"\nseed = 1\n\n[measure]\nsample_interval = "{dur}s"\n\n'
    s += '[[node]]\nname = "r1"\nkind = "router"\n\n[[node]]\nname = "r2"\nkind = "router"\n\n'
    for i in range(n):
        s += f'[[node]]\nname = "s{i}"\n{sysctl}\n[[node]]\nname = "d{i}"\n{sysctl}\n'
    s += f'[[link]]\nname = "bottleneck"\na = {{ node = "r1", qdisc = "{q}" }}\nb = {{ node = "r2" }}\nnetem = "rate {rate} delay 20ms"\n\n'
    for i in range(n):
        s += f'[[link]]\na = {{ node = "s{i}"{host_q} }}\nb = {{ node = "r1" }}\nnetem = "rate 1gbit delay 500us"\n\n'
        s += f'[[link]]\na = {{ node = "r2" }}\nb = {{ node = "d{i}" }}\nnetem = "rate 1gbit delay 500us"\n\n'
    for i in range(n):
        s += f'[[app]]\nkind = "tcp-bulk"\nnode = "s{i}"\ndst = "d{i}:5001"\nstart = "{100_000 * i // n}us"\n{app_opt}\n'
        s += f'[[app]]\nkind = "tcp-sink"\nnode = "d{i}"\nport = 5001\n\n'
    return s


def delivered(out: Path) -> tuple[int, float, int]:
    """(data segments delivered to d*, goodput bit/s, events) from summary.json."""
    j = json.loads((out / "summary.json").read_text())
    segs = sum(n["delivered"] for n in j["nodes"] if n["node"].startswith("d"))
    good = sum(f["rx_bytes"] for f in j["flows"]) * 8 / j["sim_seconds"]
    return segs, good, j["events"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/wirelab")
    ap.add_argument("--cases", default="20@10mbit:10,200@10mbit:10,20@1gbit:2")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-cachegrind", action="store_true")
    ap.add_argument("--cache-sim", action="store_true", help="also D1 and LL misses per segment (slower)")
    ap.add_argument("--cg-dir", help="keep each variant's cachegrind output here (for cg_annotate / cg_diff)")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="pacing-cost-"))
    print(f"load average before: {os.getloadavg()}")
    cs = " D1 misses/seg | LL misses/seg |" if a.cache_sim else ""
    print(f"| flows | bottleneck | variant | pacing | segments | goodput Mbit/s | events/seg | Ir/seg |{cs} CPU ms (median) | CPU ns/seg | wall ms (median) |")
    print("| --- " * (11 + 2 * a.cache_sim) + "|")
    for case in a.cases.split(","):
        n, rest = case.split("@")
        rate, dur = rest.split(":")
        for v in a.variants.split(","):
            f = tmp / f"{n}-{rate}-{v}.toml"
            f.write_text(dumbbell(int(n), rate, float(dur), v))
            out = tmp / "out"
            walls, cpus = [], []
            for _ in range(a.reps):
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                subprocess.run([a.bin, "run", str(f), "--out", str(out), "-q"], check=True, stdout=subprocess.DEVNULL)
                walls.append(time.perf_counter() - t0)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpus.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
            segs, good, events = delivered(out)
            ir, misses = "", ""
            if not a.no_cachegrind:
                cg = Path(a.cg_dir) / f"cg.{n}-{rate}-{v}.out" if a.cg_dir else tmp / "cg.out"
                # this VM's caches, given explicitly (cachegrind's guess of LL is the host's L3)
                caches = ["--D1=49152,12,64", "--LL=2097152,16,64"] if a.cache_sim else []
                r = subprocess.run(["valgrind", "--tool=cachegrind", f"--cache-sim={'yes' if a.cache_sim else 'no'}", *caches,
                                    f"--cachegrind-out-file={cg}", a.bin, "run", str(f), "--out", str(out), "-q"],
                                   capture_output=True, text=True, check=True)

                def count(what: str) -> int:
                    m = re.search(what + r":\s+([\d,]+)", r.stderr)
                    return int(m.group(1).replace(",", ""))
                ir = f"{count(IREFS) / segs:,.0f}"
                if a.cache_sim:
                    misses = f" {count('D1  misses') / segs:.1f} | {count('LL misses') / segs:.2f} |"
            elif a.cache_sim:
                misses = " | |"
            pacing = {"cubic": "none", "dctcp": "none"}.get(v, "fq" if v.endswith("+fq") else "internal")
            w, c = statistics.median(walls), statistics.median(cpus)
            print(f"| {n} | {rate} | {v} | {pacing} | {segs} | {good / 1e6:.2f} | {events / segs:.2f} | {ir} |{misses} {c * 1e3:.0f} | {c * 1e9 / segs:,.0f} | {w * 1e3:.0f} |",
                  flush=True)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
