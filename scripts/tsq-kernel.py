#!/usr/bin/env python3
"""TCP Small Queues on this machine's kernel, next to wirelab (docs/tcp.md "TCP Small Queues").

Two network namespaces joined by a veth pair; a token bucket on the sender's own veth

    tc qdisc add dev v1 root tbf rate 10mbit burst 32kbit latency 400ms

and one bulk TCP flow (CUBIC, a Python sender writing as fast as it can). Every 100 ms the
script samples the tbf's backlog (`tc -s qdisc`) and the socket (`ss -tmi`: cwnd, pacing
rate, `skmem` t = sk_wmem_alloc). With TSQ the tbf holds about the TSQ limit,
min(max(2 truesize, pacing_rate >> 10), tcp_limit_output_bytes), not the window.

Then it runs scenarios/tsq/tbf-veth.toml (the same topology) with wirelab and prints both
side by side. Needs root, `ip netns` and the tbf qdisc; prints a reason and exits 0 (or 77
with --strict) when they are missing.

    sudo python3 scripts/tsq-kernel.py [--wirelab target/release/wirelab] [--seconds 6]
        [--lob BYTES] [--tso-rtt-log N] [--json out.json]
"""
import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

NS1, NS2 = "tsqk1", "tsqk2"
TBF = "tbf rate 10mbit burst 32kbit latency 400ms"
PORT = 5001


def sh(cmd, check=True):
    return subprocess.run(cmd, shell=True, check=check, capture_output=True, text=True).stdout


def missing():
    """Why the kernel half cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if not shutil.which("ip") or not shutil.which("tc") or not shutil.which("ss"):
        return "needs iproute2 (ip, tc, ss)"
    try:
        sh(f"ip netns add {NS1}x && ip netns del {NS1}x")
    except subprocess.CalledProcessError as e:
        return f"cannot create a network namespace: {e.stderr.strip()}"
    return None


def setup(lob, tso_rtt_log):
    teardown()
    sh(f"ip netns add {NS1} && ip netns add {NS2}")
    sh(f"ip link add v1 netns {NS1} type veth peer name v2 netns {NS2}")
    for ns, dev, addr in ((NS1, "v1", "10.0.0.1/24"), (NS2, "v2", "10.0.0.2/24")):
        sh(f"ip -n {ns} addr add {addr} dev {dev} && ip -n {ns} link set {dev} up && ip -n {ns} link set lo up")
    sh(f"ip netns exec {NS1} tc qdisc add dev v1 root {TBF}")
    if lob is not None:
        sh(f"ip netns exec {NS1} sysctl -qw net.ipv4.tcp_limit_output_bytes={lob}")
    if tso_rtt_log is not None:
        sh(f"ip netns exec {NS1} sysctl -qw net.ipv4.tcp_tso_rtt_log={tso_rtt_log}")


def teardown():
    for ns in (NS1, NS2):
        sh(f"ip netns del {ns}", check=False)


RECEIVER = f"""
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("10.0.0.2", {PORT})); s.listen(1); c, _ = s.accept()
while c.recv(1 << 20):
    pass
"""

SENDER = f"""
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
for i in range(50):
    try:
        s.connect(("10.0.0.2", {PORT})); break
    except OSError:
        time.sleep(0.05); s = socket.socket(); s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")
if float(sys.argv[2]) > 0:
    s.setsockopt(socket.SOL_SOCKET, 47, int(float(sys.argv[2])))  # SO_MAX_PACING_RATE: SK_PACING_NEEDED
buf = bytes(1 << 16); end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    s.send(buf)
"""


def sample_kernel(seconds, max_pacing_rate=0):
    rx = subprocess.Popen(["ip", "netns", "exec", NS2, sys.executable, "-c", RECEIVER])
    time.sleep(0.3)
    tx = subprocess.Popen(["ip", "netns", "exec", NS1, sys.executable, "-c", SENDER, str(seconds), str(max_pacing_rate)])
    rows, t0 = [], time.monotonic()
    while tx.poll() is None:
        t = time.monotonic() - t0
        q = json.loads(sh(f"ip netns exec {NS1} tc -s -j qdisc show dev v1"))[0]
        ss = sh(f"ip netns exec {NS1} ss -tmiH dst 10.0.0.2")
        row = {"t": round(t, 2), "backlog_b": q["backlog"], "backlog_p": q["qlen"], "drops": q["drops"]}
        for key, pat in (("wmem_alloc", r"skmem:\(r\d+,rb\d+,t(\d+)"), ("cwnd", r"cwnd:(\d+)"),
                         ("pacing_rate", r"pacing_rate (\S+)"), ("rtt_ms", r" rtt:([\d.]+)")):
            mm = re.search(pat, ss)
            row[key] = mm.group(1) if mm else None
        rows.append(row)
        time.sleep(0.1)
    rx.kill()
    rx.wait()
    return rows


def run_wirelab(binary, seconds, lob, max_pacing_rate=0):
    out = tempfile.mkdtemp(prefix="tsq-wirelab-")
    scen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "tsq", "tbf-veth.toml")
    text = open(scen).read()
    if lob is not None:
        text = text.replace('name = "h1"\n', f'name = "h1"\nsysctl = {{ "net.ipv4.tcp_limit_output_bytes" = "{lob}" }}\n', 1)
    if max_pacing_rate:
        text = text.replace('kind = "tcp-bulk"\n', f'kind = "tcp-bulk"\nmax_pacing_rate = "{int(max_pacing_rate * 8)}bit"\n', 1)
    f = os.path.join(out, "tbf-veth.toml")
    open(f, "w").write(text)
    # `binary` is a path, or a command list such as [sys.executable, "-m", "wirelab"] (the tests)
    cmd = list(binary) if isinstance(binary, (list, tuple)) else [binary]
    subprocess.run([*cmd, "run", f, "--out", os.path.join(out, "run"), "--set", f"scenario.duration={seconds}s"],
                   check=True, capture_output=True)
    rows = []
    for line in open(os.path.join(out, "run", "queue_timeseries.csv")).read().splitlines()[1:]:
        t, dev, qlen, backlog, drops, _ = line.split(",")
        if dev == "h1:eth0":
            rows.append({"t": float(t), "backlog_b": int(backlog), "backlog_p": int(qlen), "drops": int(drops)})
    shutil.rmtree(out)
    return rows


def summary(rows):
    late = [r for r in rows if r["t"] >= 1.0] or rows
    b = [r["backlog_b"] for r in late]
    p = [r["backlog_p"] for r in late]
    return {"samples": len(late), "backlog_b_median": statistics.median(b), "backlog_b_max": max(b),
            "backlog_p_median": statistics.median(p), "drops": late[-1]["drops"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wirelab", default="target/release/wirelab")
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--lob", type=int, help="net.ipv4.tcp_limit_output_bytes on both sides")
    ap.add_argument("--max-pacing-rate", type=float, default=0,
                    help="SO_MAX_PACING_RATE in bytes/s on the sender (turns pacing on: SK_PACING_NEEDED)")
    ap.add_argument("--tso-rtt-log", type=int, help="kernel only: net.ipv4.tcp_tso_rtt_log")
    ap.add_argument("--json", help="write both series here")
    ap.add_argument("--strict", action="store_true", help="exit 77 (skip) instead of 0 when the kernel half cannot run")
    a = ap.parse_args()
    why = missing()
    kernel = None
    if why:
        print(f"kernel half skipped: {why}")
    else:
        try:
            setup(a.lob, a.tso_rtt_log)
            kernel = sample_kernel(a.seconds, a.max_pacing_rate)
        finally:
            teardown()
    wl = run_wirelab(a.wirelab, int(a.seconds), a.lob, a.max_pacing_rate) if os.path.exists(a.wirelab) else None
    res = {"kernel": kernel and summary(kernel), "wirelab": wl and summary(wl), "lob": a.lob,
           "max_pacing_rate": a.max_pacing_rate}
    print(json.dumps(res, indent=1))
    if kernel:
        print("kernel samples (t, backlog B/p, skmem t, cwnd, pacing_rate, rtt ms):")
        for r in kernel[::5]:
            print(f"  {r['t']:5.1f} {r['backlog_b']:7d} B {r['backlog_p']:4d} p  t={r['wmem_alloc']} cwnd={r['cwnd']} {r['pacing_rate']} rtt={r['rtt_ms']}")
    if a.json:
        json.dump({"kernel": kernel, "wirelab": wl, "summary": res}, open(a.json, "w"), indent=1)
    if why and a.strict:
        sys.exit(77)


if __name__ == "__main__":
    main()
