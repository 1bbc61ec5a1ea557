"""Seed system 5 reproduction (docs/reproductions/shim-scp.md), reduced to 4 seeds of a 5 MB
scp on the linux-6 profile at 0 % and 10 % loss, in all three configurations (TCP, shim on
both ends, shim client with a native SCTP server). Checks the study's two conclusions on
this slice: similar at no loss, SCTP clearly faster at high loss."""
import pandas as pd

from conftest import load_repro

shim_scp = load_repro("shim_scp")


def test_shim_scp_smoke(tmp_path):
    code = shim_scp.main(["--out", str(tmp_path), "--only", "scp", "--runs", "4", "--runs-small", "4",
                          "--profiles", "linux-6", "--sizes", "5 MB", "--losses", "0,10", "--jobs", "2"])
    assert code == 0
    runs = pd.read_csv(tmp_path / "results.csv")
    assert len(runs) == 24 and set(runs["mode"]) == {"tcp", "shim", "native"}
    done = runs[runs["state"] == "done"]
    assert (done["server_rx"] >= 5 * 2**20).all(), "every finished transfer delivered the whole file"
    assert set(done[done["mode"] == "tcp"]["transport"]) == {"tcp"}
    c = pd.read_csv(tmp_path / "cells.csv").set_index(["mode", "loss"])
    # no loss: the shim's SCTP within 5 % of TCP
    assert abs(c.loc[("shim", 0.0), "sctp_mean_s"] / c.loc[("tcp", 0.0), "mean_s"] - 1) < 0.05
    # 10 % loss: SCTP (runs that stayed on SCTP, either server) far faster than TCP
    for mode in ("shim", "native"):
        assert c.loc[(mode, 10.0), "sctp_mean_s"] < 0.8 * c.loc[("tcp", 10.0), "mean_s"], mode
