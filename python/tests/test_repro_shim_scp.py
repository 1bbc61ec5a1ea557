"""Seed system 5 reproduction (docs/reproductions/shim-scp.md), reduced to 4 seeds of a 5 MB
scp on the linux-6 profile at 0 % and 10 % loss, in all three configurations (TCP, shim on
both ends, shim client with a native SCTP server). Checks the study's two conclusions on
this slice (similar at no loss, SCTP clearly faster at high loss) and the shim's
transparency: against a peer without SCTP the connection falls back to TCP at once."""
import pandas as pd

from wirelab.repro import shim_scp
from wirelab.repro.common import run


def test_shim_scp_smoke(tmp_path):
    code = shim_scp.main(["--out", str(tmp_path), "--only", "scp", "--runs", "4", "--runs-small", "4",
                          "--profiles", "linux-6", "--sizes", "5 MB", "--losses", "0,10", "--jobs", "2"])
    assert code == 0 and (tmp_path / "PROVENANCE.json").exists()
    runs = pd.read_csv(tmp_path / "results.csv")
    assert len(runs) == 24 and set(runs["mode"]) == {"tcp", "shim", "native"}
    done = runs[runs["state"] == "done"]
    assert (done["server_rx"] >= 5 * 2**20).all(), "every finished transfer delivered the whole file"
    assert set(done[done["mode"] == "tcp"]["transport"]) == {"tcp"}
    assert set(done[(done["mode"] == "shim") & (done["loss"] == 0)]["transport"]) == {"sctp"}
    c = pd.read_csv(tmp_path / "cells.csv").set_index(["mode", "loss"])
    # no loss: the shim's SCTP within 5 % of TCP
    assert abs(c.loc[("shim", 0.0), "sctp_mean_s"] / c.loc[("tcp", 0.0), "mean_s"] - 1) < 0.05
    # 10 % loss: SCTP (runs that stayed on SCTP, either server) far faster than TCP
    for mode in ("shim", "native"):
        assert c.loc[(mode, 10.0), "sctp_mean_s"] < 0.8 * c.loc[("tcp", 10.0), "mean_s"], mode


def test_shim_falls_back_to_tcp_when_the_peer_has_no_sctp(tmp_path):
    ov = ["scenario.profile=linux-6", "link.bottleneck.netem=rate 1.5mbit delay 35ms", 'app.scp.bytes="51200"']
    both = run(shim_scp.SCP, tmp_path / "shim", seed=1, overrides=ov)
    plain = run(shim_scp.SCP, tmp_path / "plain", seed=1, overrides=ov + ["node.s.shim=[]"])
    for r, proto in ((both, "sctp"), (plain, "tcp")):
        f = r.flows.set_index("name")
        assert f.loc["scp", "state"] == "done" and f.loc["sshd", "rx_bytes"] >= 51200
        assert f.loc["scp", "proto"] == proto and f.loc["sshd", "proto"] == proto
    m = plain.shim_matches
    client = m[m["app"] == "scp"].iloc[0]
    assert (client["policy"], client["transport"], client["fallback"]) == ("enable", "tcp", "abort")
    # the server's ABORT answers the INIT: the TCP connection is accepted after about one
    # round trip, not after the 3-s fallback timer
    accepted = m[(m["app"] == "sshd") & (m["socket"] > 0)]["time_s"].min()
    assert accepted < 0.5, accepted
