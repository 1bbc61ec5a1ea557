"""Seed system 2 reproduction (docs/reproductions/sctp-autotune.md), shortened to 2–4 s runs.
Signatures: autotuning grows sk_sndbuf and sk_rcvbuf past the fixed 2.6.37 default at 100 ms
and the echo comes back faster for it; the patch's receiver never grows its buffer without
an RTT sample (one-way transfer) while the RTO.Initial option does after 3 s; the quick fix
starts the send buffer at 122 880 B; TCP with linux-6 autotuning beats fixed-buffer SCTP."""
from pathlib import Path

import pandas as pd

from wirelab.repro.sctp_autotune import MEM_MAX, VANILLA_BUF, Case, run_case, summarize, timeseries

SCTP_WMEM1 = 16384  # sctp_wmem[1] of the linux-2.6.37 profile
SCTP_RMEM1 = 349500  # sctp_rmem[1]
# the scenarios of this checkout (the installed package does not carry scenarios/)
SCEN = Path(__file__).resolve().parents[2] / "scenarios" / "sctp-autotune"


def _run(tmp_path, case):
    d = run_case(case, tmp_path, scenario=SCEN / "echo.toml", tcp_scenario=SCEN / "tcp-echo.toml")
    return timeseries(case, d), summarize(case, d)


def test_autotune_grows_buffers_at_100ms_while_vanilla_stays_flat(tmp_path):
    ts, rows = {}, {}
    for mode in ("off", "faithful", "quickfix", "tcp"):
        ts[mode], rows[mode] = _run(tmp_path, Case(100, mode, duration_s=2.0))
    # vanilla 2.6.37: net.core.{w,r}mem_default on both ends, for the whole run
    off = ts["off"]
    assert set(off["node"]) == {"h1", "h2"}
    assert (off["sndbuf"] == VANILLA_BUF).all() and (off["rcvbuf"] == VANILLA_BUF).all()
    # autotuning: starts from sctp_{w,r}mem[1] and grows past the fixed default on both ends
    on = ts["faithful"]
    for node in ("h1", "h2"):
        t = on[on["node"] == node].sort_values("time_s")
        assert t["sndbuf"].iloc[0] == SCTP_WMEM1 and t["rcvbuf"].iloc[0] == SCTP_RMEM1
        assert VANILLA_BUF < t["sndbuf"].max() <= MEM_MAX
        assert t["rcvbuf"].max() > SCTP_RMEM1
        assert t["sndbuf"].is_monotonic_increasing and t["rcvbuf"].is_monotonic_increasing
    # sndbuf tracks 2·cwnd (faithful rule), never above it
    h1 = on[on["node"] == "h1"]
    assert (h1["sndbuf"] <= (2 * h1["cwnd"]).clip(lower=SCTP_WMEM1)).all()
    # the quick fix starts from sctp_wmem[1] = 122 880 B instead
    qf = ts["quickfix"].sort_values("time_s")
    assert (qf.groupby("node")["sndbuf"].first() == 122880).all()
    # the echo comes back faster than with fixed buffers (≈ rwnd 62 464 B per 100 ms), and
    # TCP's own autotuning is faster still
    assert rows["off"]["rate_mbit"] < 6.0
    assert rows["faithful"]["rate_mbit"] > 2 * rows["off"]["rate_mbit"]
    assert rows["tcp"]["rate_mbit"] > rows["faithful"]["rate_mbit"]


def test_patch_needs_an_rtt_sample_to_grow_the_receive_buffer(tmp_path):
    # one-way transfer to a sink: the receiver sends no DATA, so it has no RTT sample
    b = {}
    for mode in ("faithful", "faithful_rto"):
        ts, _row = _run(tmp_path, Case(100, mode, server="sctp-sink", duration_s=3.5))
        b[mode] = ts[ts["node"] == "h2"].sort_values("time_s")
    assert (b["faithful"]["rcvbuf"] == SCTP_RMEM1).all(), "the patch: no RTT measured -> no rcvbuf growth"
    grown = b["faithful_rto"][b["faithful_rto"]["rcvbuf"] > SCTP_RMEM1]
    assert not grown.empty and grown["time_s"].iloc[0] >= 3.0, "the option grows it after RTO.Initial = 3 s"
