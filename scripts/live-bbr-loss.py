#!/usr/bin/env python3
"""The kernel's own TCP (a TUN node of `wirelab live`, docs/live.md) through the loss
study's path (docs/reproductions/modern-cc.md, section 2): r1 == 100 Mbit/s, 49 ms each
way, pfifo 826, random loss on the data direction == r2, to a wirelab tcp-sink; 64-MB
socket buffers as scenarios/modern-cc/bbr-loss.toml. Needs root and /dev/net/tun.

    scripts/live-bbr-loss.py CC LOSS_PCT SECONDS OUT      # e.g. bbr 15 60 /tmp/k15

Prints the kernel flow's goodput over the run and from 10 s on, and the driver's event lag
(a loaded machine delays packets: read the lag before the rate).
"""
import json
import sys
from pathlib import Path
import pandas as pd
import wirelab
KPEER = Path(__file__).resolve().parents[1] / "crates/wirelab-live/tests/peers/kpeer.py"
cc, loss, secs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
big = {"net.ipv4.tcp_rmem": [4096, 131072, 67108864], "net.ipv4.tcp_wmem": [4096, 16384, 67108864]}
sc = {
    "scenario": {"name": f"live-loss-{cc}", "duration": f"{secs + 15}s"},
    "node": [
        {"name": "k", "kind": "tun", "sysctl": {"net.ipv4.tcp_congestion_control": cc, **big},
         "run": [f"sleep 0.2; {sys.executable} {KPEER} send-for 10.0.3.2 5001 {secs} > k-send.json"]},
        {"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"},
        {"name": "d", "sysctl": big},
    ],
    "link": [
        {"a": {"node": "k", "addr": "10.0.1.2/24"}, "b": {"node": "r1", "addr": "10.0.1.1/24"}, "netem": "rate 1gbit delay 500us"},
        {"name": "bottleneck", "a": {"node": "r1", "addr": "10.0.0.1/30", "qdisc": "pfifo limit 826",
                                     "netem": "rate 100mbit delay 49ms" + (f" loss {loss:g}%" if loss else "")},
         "b": {"node": "r2", "addr": "10.0.0.2/30"}, "netem": "rate 100mbit delay 49ms"},
        {"a": {"node": "r2", "addr": "10.0.3.1/24"}, "b": {"node": "d", "addr": "10.0.3.2/24"}, "netem": "rate 1gbit delay 500us"},
    ],
    "app": [{"name": "ksink", "kind": "tcp-sink", "node": "d", "port": 5001}],
    "measure": {"sample_interval": "1s"},
}
out = Path(sys.argv[4])
res = wirelab.live(sc, out=out)
f = pd.read_csv(out / "flow_timeseries.csv"); s = f[f.flow == "ksink"].set_index("time_s")["rx_bytes"]
k = json.loads((out / "k-send.json").read_text())
# kernel flow starts ~0.2-0.5 s in; goodput over the send period and from 10 s
t_end = float(s.index[s.index <= secs + 1].max())
at = lambda t: float(s[s.index <= t].iloc[-1])
print(f"kernel {k.get('cc')} loss {loss:g}%: goodput {at(t_end)*8/t_end/1e6:.2f} Mbit/s over {t_end:.0f} s, from 10 s {(at(t_end)-at(10))*8/(t_end-10)/1e6:.2f}; lag {res.summary['live'].get('event_lag')}", flush=True)
