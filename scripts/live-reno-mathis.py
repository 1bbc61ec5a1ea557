#!/usr/bin/env python3
"""Linux's Reno against the Mathis model, beside wirelab's Reno on the same path: the
engine test `reno_goodput_follows_the_mathis_model`'s dumbbell (k == 1 Gbit/s, 0.5 ms ==
r1 == 100 Mbit/s, 19 ms, pfifo 1000, random loss on the data direction == r2 == d; RTT
40 ms), the kernel's Reno sending from a TUN node to a wirelab tcp-sink, and wirelab's
Reno simulated from the same node. Needs root and /dev/net/tun (docs/live.md).

    scripts/live-reno-mathis.py [SECONDS] [LOSS_PCT ...]     # default: 120 0.5 1 2

Goodput is over [5 s, SECONDS] (slow start excluded), the model MSS/RTT * sqrt(3/2) /
sqrt(p) with MSS 1448 and RTT 40 ms. One random-loss realisation per run: repeat for
spread; read the driver's event lag first (a late event lengthens the kernel's RTT).
"""
import math
import sys
import tempfile
from pathlib import Path

import pandas as pd

import wirelab

KPEER = Path(__file__).resolve().parents[1] / "crates/wirelab-live/tests/peers/kpeer.py"


def scenario(sender: str, loss: float, secs: int) -> dict:
    k = {"name": "k"}
    app = [{"name": "ksink", "kind": "tcp-sink", "node": "d", "port": 5001}]
    if sender == "kernel":
        k.update(kind="tun", sysctl={"net.ipv4.tcp_congestion_control": "reno"},
                 run=[f"sleep 0.2; {sys.executable} {KPEER} send-for 10.0.3.2 5001 {secs} > k-send.json"])
    else:
        app.append({"name": "f0", "kind": "tcp-bulk", "node": "k", "dst": "10.0.3.2:5001", "cc": "reno", "start": "200ms"})
    return {
        "scenario": {"name": f"reno-{sender}-{loss}", "duration": f"{secs + (15 if sender == 'kernel' else 0)}s"},
        "node": [k, {"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"}, {"name": "d"}],
        "link": [
            {"a": {"node": "k", "addr": "10.0.1.2/24"}, "b": {"node": "r1", "addr": "10.0.1.1/24"}, "netem": "rate 1gbit delay 500us"},
            {"name": "bottleneck", "a": {"node": "r1", "addr": "10.0.0.1/30", "qdisc": "pfifo limit 1000",
                                         "netem": f"rate 100mbit delay 19ms loss {loss}%"},
             "b": {"node": "r2", "addr": "10.0.0.2/30"}, "netem": "rate 100mbit delay 19ms"},
            {"a": {"node": "r2", "addr": "10.0.3.1/24"}, "b": {"node": "d", "addr": "10.0.3.2/24"}, "netem": "rate 1gbit delay 500us"},
        ],
        "app": app,
        "measure": {"sample_interval": "1s"},
    }


def goodput(out: Path, t0: float, t1: float) -> float:
    f = pd.read_csv(out / "flow_timeseries.csv")
    f = f[f["flow"] == "ksink"]
    at = lambda t: int(f[f["time_s"] <= t + 1e-9]["rx_bytes"].iloc[-1])  # noqa: E731
    return (at(t1) - at(t0)) * 8 / (t1 - t0)


def main() -> int:
    secs = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    losses = [float(x) for x in sys.argv[2:]] or [0.5, 1.0, 2.0]
    print("| loss | Mathis Mbit/s | kernel Mbit/s | kernel / model | wirelab Mbit/s | wirelab / model | event lag p99 ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="reno-mathis-") as tmp:
        for p in losses:
            model = 1448 * 8 / 0.040 * math.sqrt(1.5) / math.sqrt(p / 100)
            kout, wout = Path(tmp) / f"k{p}", Path(tmp) / f"w{p}"
            res = wirelab.live(scenario("kernel", p, secs), out=kout)
            wirelab.run(scenario("wirelab", p, secs), out=wout)
            # the kernel's sender starts ~0.2-0.7 s after the clock's zero, wirelab's at 0.2 s
            k, w = goodput(kout, 5.0, secs), goodput(wout, 5.0, secs)
            lag = res.summary["live"]["event_lag"]["p99_ns"] / 1e6
            print(f"| {p} % | {model / 1e6:.3f} | {k / 1e6:.3f} | {k / model:.3f} | {w / 1e6:.3f} | {w / model:.3f} | {lag:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
