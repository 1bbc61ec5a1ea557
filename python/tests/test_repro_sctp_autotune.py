"""Seed system 2 reproduction (docs/reproductions/sctp-autotune.md), shortened to 2 s: the
mechanism's signature is that autotuning grows sk_sndbuf and sk_rcvbuf past the fixed
2.6.37 default at 100 ms, and the echo comes back faster for it."""
from pathlib import Path

import pandas as pd

from wirelab.repro.sctp_autotune import MEM_MAX, VANILLA_BUF, Case, run_case, summarize

SCTP_WMEM1 = 16384  # sctp_wmem[1] of the linux-2.6.37 profile
SCTP_RMEM1 = 349500  # sctp_rmem[1]


def test_autotune_grows_buffers_at_100ms_while_vanilla_stays_flat(tmp_path):
    ts, rows = {}, {}
    for mode in ("off", "faithful"):
        case = Case(100, mode, duration_s=2.0)
        # the scenario of this checkout (the installed package does not carry scenarios/)
        scenario = Path(__file__).resolve().parents[2] / "scenarios" / "sctp-autotune" / "echo.toml"
        d = run_case(case, tmp_path, scenario=scenario)
        ts[mode] = pd.read_csv(d / "sctp_timeseries.csv")
        rows[mode] = summarize(case, d)
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
    # and the echo comes back faster than with fixed buffers (≈ rwnd 62 464 B per 100 ms)
    assert rows["off"]["rate_mbit"] < 6.0
    assert rows["faithful"]["rate_mbit"] > 2 * rows["off"]["rate_mbit"]
