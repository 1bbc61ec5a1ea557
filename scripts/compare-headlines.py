#!/usr/bin/env python3
"""Headline results of scenarios under two wirelab binaries: per flow goodput, retransmits,
application delay, per queue drops and final backlog, per link losses. For a change that
alters fingerprints (say which numbers moved and by how much).

    scripts/compare-headlines.py OLD_BINARY NEW_BINARY scenario.toml... [--set k=v]
"""
import json
import subprocess
import sys
import tempfile


def run(binary, scen, sets):
    out = tempfile.mkdtemp(prefix="headlines-")
    args = [binary, "run", scen, "--out", out, "--seed", "1"]
    for s in sets:
        args += ["--set", s]
    subprocess.run(args, check=True, capture_output=True)
    d = json.load(open(f"{out}/summary.json"))
    subprocess.run(["rm", "-rf", out])
    return d


def rows(d):
    r = {"fingerprint": d["fingerprint"]}
    for f in d["flows"]:
        for k in ("goodput_bps", "retrans", "lost", "delay_mean_ms", "delay_max_ms"):
            v = f.get(k)
            if v:
                r[f"flow {f['name']} {k}"] = v
    for q in d["queues"]:
        for k in ("drops", "sent_packets"):
            if q.get(k):
                r[f"queue {q['dev']} {k}"] = q[k]
    return r


def main():
    old, new, *rest = sys.argv[1:]
    sets = [a.split("=", 1)[1] if a.startswith("--set=") else a for a in rest if "=" in a]
    scens = [a for a in rest if a.endswith(".toml")]
    for s in scens:
        a, b = rows(run(old, s, sets)), rows(run(new, s, sets))
        print(f"## {s}")
        for k in sorted(set(a) | set(b), key=lambda k: (k != "fingerprint", k)):
            x, y = a.get(k), b.get(k)
            if x == y and k != "fingerprint":
                continue
            if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x:
                print(f"  {k}: {x:.6g} -> {y:.6g} ({(y - x) / x * 100:+.1f} %)")
            else:
                print(f"  {k}: {x} -> {y}")


if __name__ == "__main__":
    main()
