#!/usr/bin/env python3
"""How the echo client's send buffer fills and drains: the kernel's TCP against wirelab's.

sctp-autotune's TCP echo (scripts/live-tcp-echo.py, scenarios/sctp-autotune/tcp-echo.toml)
is window-limited at 40-100 ms, yet wirelab's client keeps less in flight than the kernel's
with the same peer window. This samples the client socket often (`--interval`: 20 ms on
the x10 path) on both sides and compares, over the second half of the writes:

  in flight   packets_out x MSS (tcp_info's unacked)
  notsent     write_seq - snd_nxt (tcpi_notsent_bytes)
  queued      in flight + notsent, against sk_sndbuf
  wmem_queued SO_MEMINFO's SK_MEMINFO_WMEM_QUEUED (the kernel only: payload + skb heads)

and how often the queued bytes fall to the 2/3-of-sndbuf wake-up of
sk_stream_write_space() ("dips"). The kernel's client is live-tcp-echo.py's: a writer
thread blocked in sendall() of 4 KiB messages and a reader thread, on one socket.

    scripts/live-tcp-echo-sndbuf.py [--delay 40] [--scale 10] [--seconds 10]
        [--interval 0.002] [--wirelab NAME=BIN ...] [--no-kernel] [--json OUT] [--csv DIR]

Needs root and /dev/net/tun for the kernel run (see live-tcp-echo.py); `--csv DIR` keeps
each side's samples (t, inflight, notsent, queued, sndbuf, wmem_queued).
"""
import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("live_tcp_echo", HERE / "live-tcp-echo.py")
lte = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lte)


def kernel_rows(samples: list[dict]) -> list[dict]:
    return [{"t": s["t"], "inflight": s["unacked"] * s["snd_mss"], "notsent": s["notsent_bytes"],
             "sndbuf": s["sndbuf"], "wmem_queued": s.get("wmem_queued"), "cwnd": s["snd_cwnd"],
             "snd_wnd": s.get("snd_wnd"), "bytes_received": s["bytes_received"]} for s in samples]


def wirelab_rows(h1) -> list[dict]:
    # the client connects at 0.1 s: t = 0 at connect(), as the kernel client's clock
    return [{"t": r.time_s - 0.1, "inflight": r.unacked * r.snd_mss, "notsent": r.notsent, "sndbuf": r.sndbuf,
             "wmem_queued": None, "cwnd": r.cwnd, "snd_wnd": r.snd_wnd, "bytes_received": r.bytes_received}
            for r in h1.itertuples()]


def stats(rows: list[dict], t0: float, t1: float) -> dict:
    w = [r for r in rows if t0 <= r["t"] <= t1]
    if not w:
        return {}
    q = [r["inflight"] + r["notsent"] for r in w]
    sb = [r["sndbuf"] for r in w]
    frac = sorted(a / b for a, b in zip(q, sb))
    # a dip: the queued bytes fall to 2/3 of sndbuf or below after having been above 0.9
    dips, high = 0, False
    for a, b in zip(q, sb):
        if a >= 0.9 * b:
            high = True
        elif a <= 2 * b / 3 and high:
            dips += 1
            high = False
    pct = lambda xs, p: xs[min(len(xs) - 1, int(p * len(xs)))]
    wq = [r["wmem_queued"] for r in w if r["wmem_queued"] is not None]
    return {
        "samples": len(w),
        "inflight_mean": statistics.fmean(r["inflight"] for r in w),
        "notsent_mean": statistics.fmean(r["notsent"] for r in w),
        "queued_mean": statistics.fmean(q),
        "sndbuf_mean": statistics.fmean(sb), "sndbuf_max": max(sb),
        "queued_frac_p10": pct(frac, 0.1), "queued_frac_p50": pct(frac, 0.5), "queued_frac_p90": pct(frac, 0.9),
        "dips_per_s": dips / (t1 - t0),
        "wmem_queued_mean": statistics.fmean(wq) if wq else None,
        "wmem_frac_mean": statistics.fmean(a / b for a, b in zip(wq, sb)) if wq else None,
        "cwnd_mean": statistics.fmean(r["cwnd"] for r in w),
        "mbit": (w[-1]["bytes_received"] - w[0]["bytes_received"]) * 8 / max(1e-9, w[-1]["t"] - w[0]["t"]) / 1e6,
    }


COLS = [("mbit", "Mb/s", "{:.1f}"), ("inflight_mean", "in flight B", "{:,.0f}"), ("notsent_mean", "notsent B", "{:,.0f}"),
        ("queued_mean", "queued B", "{:,.0f}"), ("sndbuf_max", "sndbuf max", "{:,}"),
        ("queued_frac_p10", "queued/sndbuf p10", "{:.3f}"), ("queued_frac_p50", "p50", "{:.3f}"),
        ("queued_frac_p90", "p90", "{:.3f}"), ("dips_per_s", "dips to 2/3 per s", "{:.2f}"),
        ("wmem_frac_mean", "wmem_queued/sndbuf", "{:.3f}"), ("cwnd_mean", "cwnd", "{:.0f}"),
        ("lag_p99_ms", "lag p99 ms", "{:.1f}")]


def fmt(who: str, st: dict) -> str:
    cells = ["–" if st.get(k) is None else f.format(st[k]) for k, _, f in COLS]
    return f"| {who} | " + " | ".join(cells) + " |"


def write_csv(path: Path, rows: list[dict]) -> None:
    keys = ["t", "inflight", "notsent", "sndbuf", "wmem_queued", "cwnd", "snd_wnd", "bytes_received"]
    with path.open("w") as f:
        f.write(",".join(keys) + "\n")
        for r in rows:
            f.write(",".join("" if r[k] is None else str(r[k]) for k in keys) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--delay", type=int, default=40, help="one-way delay in ms (before --scale)")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--scale", type=float, default=10.0, help="as live-tcp-echo.py's --scale")
    ap.add_argument("--interval", type=float, default=0.002, help="sampling interval (s, before --scale: 20 ms at x10)")
    ap.add_argument("--reps", type=int, default=1, help="kernel runs")
    ap.add_argument("--live-bin", default=str(lte.ROOT / "target/release/wirelab"))
    ap.add_argument("--wirelab", action="append", default=[], metavar="NAME=BIN")
    ap.add_argument("--no-kernel", action="store_true")
    ap.add_argument("--nic-pct", type=float, default=99.0)
    ap.add_argument("--json", help="write the statistics here")
    ap.add_argument("--csv", help="keep every side's samples as CSV in this directory")
    a = ap.parse_args()
    delay = int(round(a.delay * a.scale))
    seconds = a.seconds * a.scale
    rate = f"{int(round(1000 / a.scale))}mbit"
    nic = f"{int(round(1e6 / a.scale * a.nic_pct / 100))}kbit"
    t0, t1 = seconds / 2, seconds
    why = None if a.no_kernel else lte.missing()
    if why:
        print(f"kernel run skipped: {why}", file=sys.stderr)
    print(f"path: rate {rate}, one-way delay {delay} ms, {seconds:g} s of writes; statistics over {t0:g}-{t1:g} s")
    print("| client | " + " | ".join(h for _, h, _ in COLS) + " |")
    print("| --- | " + " | ".join("---" for _ in COLS) + " |", flush=True)
    out = []
    with tempfile.TemporaryDirectory(prefix="echo-sndbuf-") as tmp:
        sides = []
        if not a.no_kernel and not why:
            for i in range(a.reps):
                smp: list = []
                row = lte.run_kernel(a.live_bin, delay, seconds, Path(tmp), rate, nic, i, a.interval * a.scale, smp)
                sides.append((f"kernel#{i + 1}", kernel_rows(smp), row))
                st = stats(sides[-1][1], t0, t1)
                st["lag_p99_ms"] = row["lag_p99_ms"]
                out.append({"who": sides[-1][0], **st})
                print(fmt(sides[-1][0], st), flush=True)
        for spec in a.wirelab:
            name, _, wbin = spec.partition("=")
            frames: dict = {}
            iv = f"{int(round(a.interval * a.scale * 1000))}ms"
            lte.run_wirelab(name, wbin, delay, seconds, Path(tmp), rate, (f"measure.sample_interval={iv}",), frames)
            sides.append((name, wirelab_rows(frames[name]), {}))
            st = stats(sides[-1][1], t0, t1)
            out.append({"who": name, **st})
            print(fmt(name, st), flush=True)
        if a.csv:
            Path(a.csv).mkdir(parents=True, exist_ok=True)
            for who, rows, _ in sides:
                write_csv(Path(a.csv) / f"{who.replace('#', '-')}-{delay}ms.csv", rows)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
