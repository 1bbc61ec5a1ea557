#!/usr/bin/env python3
"""The kernel's own TCP on sctp-autotune's TCP echo path (docs/reproductions/sctp-autotune.md
§5, scenarios/sctp-autotune/tcp-echo.toml), beside wirelab's TCP on the same path.

The study's path: h1 (client) == 1 Gbit/s == h2 (echo server), netem `delay D` on h1's
egress only (RTT = D), the linux-6 profile on both hosts (CUBIC, tcp_rmem 4096 131072
6291456, tcp_wmem 4096 16384 4194304, autotuning). h1 writes 4 KiB messages for 10 s and
reads what comes back; h2 reads what arrives and writes it back, and stops reading while a
reply is stuck (a blocking echo loop). The rate is the bytes received back by h1 over the
10-s write period.

Here h1 and h2 are TUN nodes (`wirelab live`): two network namespaces whose kernel TCP runs
this file's `client` and `server` modes, joined by wirelab's emulated link (the same
`[[link]]` as tcp-echo.toml: pfifo_fast, netem rate 1gbit delay D). Then every `--wirelab`
binary given runs tcp-echo.toml with the same delay in the simulator (`wirelab run`).

    scripts/live-tcp-echo.py [--delays 40,100] [--seconds 10] [--reps 1]
        [--wirelab NAME=BIN ...] [--live-bin BIN] [--json OUT]

Needs root and /dev/net/tun for the kernel runs (prints why and exits 0, or 77 with
--strict, without them). The kernel's flows are not throttled by TCP Small Queues behind a
TUN device (tun_net_xmit() orphans the skb), so their bursts queue in the emulated link's
pfifo instead of in the socket; the script reports that queue's drops and the kernel's
retransmissions so that a run where it mattered is visible.
"""
import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios/sctp-autotune/tcp-echo.toml"
PORT = 5001
# the linux-6 profile's values (crates/wirelab-tcp/src/config.rs, TcpConfig::linux6); a new
# namespace copies the host's, which need not be these
SYSCTL = {
    "net.ipv4.tcp_congestion_control": "cubic",
    "net.ipv4.tcp_rmem": "4096 131072 6291456",
    "net.ipv4.tcp_wmem": "4096 16384 4194304",
    "net.ipv4.tcp_moderate_rcvbuf": "1",
    "net.ipv4.tcp_slow_start_after_idle": "1",
    "net.ipv4.tcp_no_metrics_save": "1",
}

# struct tcp_info (include/uapi/linux/tcp.h): offsets of the fields read here
TI = {"state": (0, "B"), "snd_mss": (16, "I"), "unacked": (24, "I"), "rtt_us": (68, "I"), "snd_ssthresh": (76, "I"), "snd_cwnd": (80, "I"),
      "total_retrans": (100, "I"), "bytes_acked": (120, "Q"), "bytes_received": (128, "Q"),
      "notsent_bytes": (144, "I"), "busy_time_us": (168, "Q"), "rwnd_limited_us": (176, "Q"), "sndbuf_limited_us": (184, "Q"),
      "delivered": (192, "I"), "bytes_sent": (200, "Q"), "bytes_retrans": (208, "Q"), "snd_wnd": (228, "I"), "rcv_wnd": (232, "I")}


def tcp_info(s: socket.socket) -> dict:
    b = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 240)
    out = {k: struct.unpack_from("=" + f, b, o)[0] for k, (o, f) in TI.items() if o + struct.calcsize(f) <= len(b)}
    out["sndbuf"] = s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
    out["rcvbuf"] = s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
    # SO_MEMINFO (55): sk_meminfo's SK_MEMINFO_* (what `ss -m` prints as skmem)
    try:
        m = struct.unpack_from("=9I", s.getsockopt(socket.SOL_SOCKET, 55, 36))
        out["wmem_alloc"], out["wmem_queued"] = m[2], m[5]
    except OSError:
        pass
    return out


# --- the kernel side: run inside the TUN nodes' namespaces ---------------------------------

def netns_counters() -> dict:
    """Where this namespace lost packets: the TUN device's drop counters, the qdisc and
    TcpExt/IpExt counters that are not zero."""
    out = {}
    try:
        out["dev_txqueuelen"] = int(Path("/sys/class/net/eth0/tx_queue_len").read_text())
    except OSError:
        pass
    for k in ("tx_dropped", "rx_dropped", "tx_packets", "rx_packets"):
        try:
            out["dev_" + k] = int(Path(f"/sys/class/net/eth0/statistics/{k}").read_text())
        except OSError:
            pass
    try:
        out["qdisc"] = subprocess.run(["tc", "-s", "qdisc", "show", "dev", "eth0"], capture_output=True, text=True).stdout
    except OSError:
        pass
    for f in ("/proc/net/netstat", "/proc/net/snmp"):
        try:
            lines = Path(f).read_text().splitlines()
        except OSError:
            continue
        for h, v in zip(lines[0::2], lines[1::2]):
            names, vals = h.split()[1:], v.split()[1:]
            pre = h.split()[0].rstrip(":")
            for n, x in zip(names, vals):
                if x.lstrip("-").isdigit() and int(x) != 0 and pre in ("TcpExt", "Tcp", "IpExt", "Ip"):
                    out[f"{pre}.{n}"] = int(x)
    return out


def kernel_nic(rate: str) -> None:
    """The study's hosts send through a 1 Gbit/s NIC of their own, so their TCP Small Queues
    hold a burst in the socket (not in the RTT, not dropped). Behind a TUN device the
    kernel's skbs are orphaned in tun_net_xmit(), so with the rate only in the emulated
    link the kernel would dump its slow-start bursts into that link's 1000-packet pfifo
    (drops) and see its own queue in every RTT sample (HyStart exits early). An HTB at the
    link's rate (14 B of Ethernet header per packet, as wirelab's link counts them) on the
    TUN device makes the kernel's own qdisc the bottleneck, with TSQ intact; a 1000-packet
    pfifo leaf as the study's pfifo_fast. At exactly the link's rate the HTB still ran a
    little ahead of the emulated link and a standing queue grew there (srtt 258-312 ms at
    D = 0, scaled); at 99 % (--nic-pct, the default) it stays in the kernel (37 ms)."""
    for c in (f"tc qdisc replace dev eth0 root handle 1: htb default 1",
              f"tc class add dev eth0 parent 1: classid 1:1 htb rate {rate} ceil {rate} overhead 14",
              f"tc qdisc add dev eth0 parent 1:1 handle 10: pfifo limit 1000"):
        subprocess.run(c.split(), check=True)


def grow_tun_ring() -> None:
    """tun_net_xmit() drops when its ring (tx_queue_len packets, 500) is full, and the
    kernel's flows behind a TUN device are not held back by TSQ (the skb is orphaned):
    a stall of the live driver's reader would drop the kernel's packets there, which the
    simulated hosts (TSQ, a 1000-packet pfifo) would not. A deeper ring removes that."""
    subprocess.run(["ip", "link", "set", "dev", "eth0", "txqueuelen", "20000"], check=False)


def peer_setup() -> None:
    grow_tun_ring()
    rate = os.environ.get("KERNEL_NIC_RATE", "")
    if rate:
        kernel_nic(rate)


def peer_server(port: int) -> None:
    """A blocking echo loop: read what is there, write all of it back, read again (the
    same pattern as wirelab's tcp-echo, which stops reading while a reply is stuck)."""
    peer_setup()
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    c, _ = ls.accept()
    n, buf = 0, bytearray(1 << 20)
    last = 0.0

    def report():
        # rewritten every second: the run may end (SIGTERM) before the client's FIN arrives
        Path("server.json.tmp").write_text(json.dumps({"mode": "server", "bytes": n, "end": tcp_info(c), "counters": netns_counters()}))
        os.replace("server.json.tmp", "server.json")

    try:
        while True:
            k = c.recv_into(buf)
            if k == 0:
                break
            n += k
            c.sendall(memoryview(buf)[:k])
            if time.monotonic() - last >= 1.0:
                last = time.monotonic()
                report()
    except OSError:
        pass
    report()


def peer_client(host: str, port: int, seconds: float, interval: float = 0.05) -> dict:
    """Writes 4 KiB messages for `seconds` while another thread reads the echo; samples
    tcp_info every `interval` from the connect() call on (t = 0)."""
    peer_setup()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t0 = time.monotonic()
    s.connect((host, port))
    stop = threading.Event()
    got = [0]

    def reader():
        buf = bytearray(1 << 18)
        while True:
            try:
                k = s.recv_into(buf)
            except OSError:
                return
            if k == 0:
                return
            got[0] += k

    def writer():
        msg = bytes(4096)
        while not stop.is_set():
            try:
                s.sendall(msg)
            except OSError:
                return

    samples = []
    threads = [threading.Thread(target=reader, daemon=True), threading.Thread(target=writer, daemon=True)]
    for t in threads:
        t.start()
    nxt = t0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        samples.append({"t": now - t0, "read": got[0], **tcp_info(s)})
        nxt += interval
        time.sleep(max(0.0, nxt - time.monotonic()))
    end = {"t": time.monotonic() - t0, "read": got[0], **tcp_info(s)}
    stop.set()
    return {"mode": "client", "seconds": seconds, "end": end, "samples": samples, "counters": netns_counters()}


# --- the experiment --------------------------------------------------------------------------

def live_scenario(delay_ms: int, seconds: float, me: str, rate: str, nic: str, interval: float = 0.05) -> str:
    sysctl = ", ".join(f'"{k}" = "{v}"' for k, v in SYSCTL.items())
    py = f"KERNEL_NIC_RATE={nic} {sys.executable}"
    # with the kernel's own HTB as the bottleneck, the emulated link's queue only absorbs
    # the driver's batching (a late TUN read injects a batch at once): deep, so it never drops
    queue = ', qdisc = "pfifo limit 100000"' if nic else ""
    return f"""
[scenario]
name = "live-tcp-echo-{delay_ms}ms"
duration = "{seconds + 30}s"

[[node]]
name = "h1"
kind = "tun"
sysctl = {{ {sysctl} }}
run = ["{py} {me} client 10.0.0.2 {PORT} {seconds} {interval} > client.json"]

[[node]]
name = "h2"
kind = "tun"
sysctl = {{ {sysctl} }}
spawn = ["{py} {me} server {PORT}"]
ready = ["tcp:{PORT}"]

[[link]]
name = "wire"
a = {{ node = "h1", addr = "10.0.0.1/24", netem = "rate {rate} delay {delay_ms}ms"{queue} }}
b = {{ node = "h2", addr = "10.0.0.2/24", netem = "rate {rate}"{queue} }}
"""


def rate_of(samples: list[dict], t_end: float, t_from: float = 0.0) -> float:
    """Mbit/s of bytes received between t_from and t_end (linear interpolation)."""
    def at(t):
        prev = None
        for s in samples:
            if s["t"] >= t:
                if prev is None:
                    return s["bytes_received"]
                f = (t - prev["t"]) / (s["t"] - prev["t"]) if s["t"] > prev["t"] else 1.0
                return prev["bytes_received"] + f * (s["bytes_received"] - prev["bytes_received"])
            prev = s
        return samples[-1]["bytes_received"]
    return (at(t_end) - at(t_from)) * 8 / (t_end - t_from) / 1e6


def run_kernel(live_bin: str, delay_ms: int, seconds: float, tmp: Path, rate: str, nic: str, rep: int = 0,
               interval: float = 0.05, samples: list | None = None) -> dict:
    """One kernel run; the client's tcp_info samples (every `interval` s) are appended to
    `samples` when it is given."""
    out = tmp / f"live-{delay_ms}-{rep}"
    f = tmp / f"live-{delay_ms}-{rep}.toml"
    f.write_text(live_scenario(delay_ms, seconds, str(Path(__file__).resolve()), rate, nic, interval))
    p = subprocess.run([live_bin, "live", str(f), "--out", str(out), "-q"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"wirelab live failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    c = json.loads((out / "client.json").read_text())
    srv = out / "server.json"
    s = json.loads(srv.read_text()) if srv.exists() and srv.read_text().strip() else {}
    summ = json.loads((out / "summary.json").read_text())
    smp = c["samples"] + [c["end"]]
    if samples is not None:
        samples.extend(smp)
    lag = summ["live"]["event_lag"]
    e = c["end"]
    return {
        "who": "kernel", "delay_ms": delay_ms,
        "rate_mbit": rate_of(smp, seconds), "rate_last_half_mbit": rate_of(smp, seconds, seconds / 2),
        "h1_retrans": e.get("total_retrans"), "h1_sndbuf_end": e.get("sndbuf"), "h1_cwnd_end": e.get("snd_cwnd"),
        "h1_srtt_ms_end": e.get("rtt_us", 0) / 1000, "h1_sndbuf_limited_s": e.get("sndbuf_limited_us", 0) / 1e6,
        "h1_rwnd_limited_s": e.get("rwnd_limited_us", 0) / 1e6, "h1_busy_s": e.get("busy_time_us", 0) / 1e6,
        "h2_sndbuf_end": s.get("end", {}).get("sndbuf"), "h2_rcvbuf_end": s.get("end", {}).get("rcvbuf"),
        "h2_retrans": s.get("end", {}).get("total_retrans"),
        "h1_hystart_cwnd": c["counters"].get("TcpExt.TCPHystartDelayCwnd", 0) + c["counters"].get("TcpExt.TCPHystartTrainCwnd", 0),
        "h2_hystart_cwnd": s.get("counters", {}).get("TcpExt.TCPHystartDelayCwnd", 0) + s.get("counters", {}).get("TcpExt.TCPHystartTrainCwnd", 0),
        "link_drops": drops_of(out), "lag_p50_ms": lag["median_ns"] / 1e6, "lag_p99_ms": lag["p99_ns"] / 1e6,
        "lag_max_ms": lag["max_ns"] / 1e6,
    }


def drops_of(out: Path) -> int:
    """Drops in the emulated link's queues (queues.csv: each host's egress qdisc)."""
    import csv
    return sum(int(r["drops"]) for r in csv.DictReader((out / "queues.csv").open()))


def run_wirelab(name: str, wbin: str, delay_ms: int, seconds: float, tmp: Path, rate: str,
                sets: tuple = (), frames: dict | None = None) -> dict:
    """wirelab's TCP on the same path (tcp-echo.toml); `sets` are more `--set`s, and the
    client's (h1) tcp_timeseries rows go into `frames[name]` when it is given."""
    import pandas as pd
    out = tmp / f"sim-{name}-{delay_ms}"
    extra = [a for kv in sets for a in ("--set", kv)]
    p = subprocess.run([wbin, "run", str(SCENARIO), "--out", str(out), "-q",
                        "--set", f"link.wire.a.netem=rate {rate} delay {delay_ms}ms",
                        "--set", f"link.wire.b.netem=rate {rate}",
                        "--set", f"app.client.stop={100 + int(seconds * 1000)}ms",
                        "--set", f"scenario.duration={int(seconds * 1000) + 2000}ms", *extra],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{wbin} run failed: {p.stderr.strip()[-2000:]}")
    t = pd.read_csv(out / "tcp_timeseries.csv")
    h1 = t[(t["node"] == "h1") & (t["time_s"] >= 0.1)].sort_values("time_s")
    h2 = t[t["node"] == "h2"].sort_values("time_s")
    if frames is not None:
        frames[name] = h1
    # the client connects at 0.1 s: shift to the kernel client's clock (t = 0 at connect())
    smp = [{"t": r.time_s - 0.1, "bytes_received": r.bytes_received} for r in h1.itertuples()]
    e1, e2 = h1[h1["time_s"] <= 0.1 + seconds + 1e-9].iloc[-1], h2[h2["time_s"] <= 0.1 + seconds + 1e-9].iloc[-1]
    return {
        "who": name, "delay_ms": delay_ms,
        "rate_mbit": rate_of(smp, seconds), "rate_last_half_mbit": rate_of(smp, seconds, seconds / 2),
        "h1_retrans": int(e1["total_retrans"]), "h1_sndbuf_end": int(e1["sndbuf"]), "h1_cwnd_end": int(e1["cwnd"]),
        "h1_srtt_ms_end": float(e1["srtt_ms"]), "h2_sndbuf_end": int(e2["sndbuf"]), "h2_rcvbuf_end": int(e2["rcvbuf"]),
        "h2_retrans": int(e2["total_retrans"]), "link_drops": drops_of(out),
    }


def missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces, TUN)"
    if not os.path.exists("/dev/net/tun"):
        return "needs /dev/net/tun"
    if not shutil.which("ip"):
        return "needs iproute2's ip"
    return None


COLS = [("rate_mbit", "Mb/s", "{:.1f}"), ("rate_last_half_mbit", "2nd half", "{:.1f}"),
        ("h1_cwnd_end", "h1 cwnd", "{}"), ("h1_srtt_ms_end", "h1 srtt ms", "{:.1f}"),
        ("h1_sndbuf_end", "h1 sndbuf", "{}"), ("h2_sndbuf_end", "h2 sndbuf", "{}"),
        ("h2_rcvbuf_end", "h2 rcvbuf", "{}"), ("h1_retrans", "retrans h1", "{}"), ("h2_retrans", "h2", "{}"),
        ("link_drops", "link drops", "{}"), ("h1_hystart_cwnd", "HyStart exit h1", "{}"), ("h2_hystart_cwnd", "h2", "{}"), ("h1_sndbuf_limited_s", "h1 sndbuf-limited s", "{:.2f}"),
        ("lag_p50_ms", "lag p50 ms", "{:.3f}"), ("lag_p99_ms", "lag p99 ms", "{:.1f}")]


def fmt(r: dict) -> str:
    cells = []
    for k, _, f in COLS:
        v = r.get(k)
        cells.append("–" if v is None else f.format(v))
    return f"| {r['delay_ms']} ms | {r['who']} | " + " | ".join(cells) + " |"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "server":
        peer_server(int(sys.argv[2]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        iv = float(sys.argv[5]) if len(sys.argv) > 5 else 0.05
        print(json.dumps(peer_client(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), iv)), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--delays", default="40,100", help="one-way delays in ms, comma-separated")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=1, help="kernel runs per delay")
    ap.add_argument("--live-bin", default=str(ROOT / "target/release/wirelab"), help="the wirelab binary for `live`")
    ap.add_argument("--wirelab", action="append", default=[], metavar="NAME=BIN", help="simulate with this binary too")
    ap.add_argument("--no-kernel", action="store_true")
    ap.add_argument("--scale", type=float, default=1.0,
                    help="rate / N, delays and duration x N: the same bytes per RTT at 1/N the packet rate")
    ap.add_argument("--no-kernel-nic", action="store_true", help="no HTB on the kernel's TUN device (see kernel_nic())")
    ap.add_argument("--nic-pct", type=float, default=99.0,
                    help="the kernel's HTB rate in percent of the link's (below 100: the kernel's own qdisc, "
                         "with TSQ, is the bottleneck rather than the emulated link's queue)")
    ap.add_argument("--json", help="write every row here")
    ap.add_argument("--keep", help="keep the run directories under this directory")
    ap.add_argument("--strict", action="store_true", help="exit 77 (skip) instead of 0 when the kernel cannot run")
    a = ap.parse_args()
    delays = [int(round(int(x) * a.scale)) for x in a.delays.split(",")]
    seconds = a.seconds * a.scale
    rate = f"{int(round(1000 / a.scale))}mbit"
    nic = "" if a.no_kernel_nic else f"{int(round(1e6 / a.scale * a.nic_pct / 100))}kbit"
    why = None if a.no_kernel else missing()
    if why:
        print(f"kernel runs skipped: {why}", file=sys.stderr)
        if a.strict:
            return 77
    print(f"path: rate {rate}, one-way delay D on h1's egress, {seconds:g} s of writes")
    print("| delay | TCP | " + " | ".join(h for _, h, _ in COLS) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in COLS) + " |", flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="live-tcp-echo-") as tmp:
        if a.keep:
            tmp = a.keep
            Path(tmp).mkdir(parents=True, exist_ok=True)
        for d in delays:
            if not a.no_kernel and not why:
                for i in range(a.reps):
                    rows.append(run_kernel(a.live_bin, d, seconds, Path(tmp), rate, nic, i))
                    print(fmt(rows[-1]), flush=True)
            for spec in a.wirelab:
                name, _, wbin = spec.partition("=")
                rows.append(run_wirelab(name, wbin, d, seconds, Path(tmp), rate))
                print(fmt(rows[-1]), flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
