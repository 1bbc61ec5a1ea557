"""Seed system 5, interactive traffic and the SSH-handshake cost through the shim
(docs/reproductions/shim-scp.md, "Interactive traffic" and "SSH-handshake cost"), reduced to
linux-6, 0 and 10 % loss, 3 seeds. Signatures: without loss a keystroke's echo takes one
round trip over SCTP as over TCP; with loss SCTP's tail is set by RTO.Min (1 s) where
Linux TCP's is not; the shim's set-up costs one extra round trip (SCTP's four-way handshake,
or INIT → ABORT before a fallback), a path that drops SCTP costs the 3-s fallback timer."""
from wirelab.repro import shim_interactive as si


def test_interactive_latency_over_the_shim(tmp_path):
    runs, lat = si.run_interactive(tmp_path, seeds=3, jobs=2, profiles=("linux-6",), losses=(0, 10))
    assert len(runs) == 12 and (runs[runs.loss == 0].transactions == 600).all(), "a keystroke every 200 ms for 120 s"
    c = si.interactive_cells(runs, lat).set_index(["mode", "loss"])
    rtt = c.loc[("tcp", 0), "median_ms"]
    assert 72 < rtt < 75 and abs(c.loc[("shim-sctp", 0), "median_ms"] - rtt) < 1 and c.loc[("shim-sctp", 0), "max_ms"] < 76
    # 10 % loss: a lost 64-B chunk alone in flight waits for T3-rtx, at least RTO.Min = 1 s;
    # Linux TCP's 200-ms RTO floor (and TLP) keep its 90th percentile far below
    sctp, tcp = c.loc[("shim-sctp", 10)], c.loc[("tcp", 10)]
    assert sctp.p90_ms > 1000 + rtt and tcp.p90_ms < 1000 and sctp.over_1s_pct > 5 * tcp.over_1s_pct
    assert sctp.median_ms - rtt < 1 and tcp.median_ms - rtt < 1, "most keystrokes are not lost"


def test_ssh_handshake_cost_through_the_shim(tmp_path):
    df = si.run_sshcost(tmp_path, seeds=0, jobs=2, profiles=("linux-6",), losses=(0,))
    s = df.set_index(["mode", "exchanges"]).setup_s
    rtt = s[("tcp", 0)]
    assert 0.072 < rtt < 0.075
    for x in (4, 8):  # one round trip per handshake round, whatever the transport
        assert abs(s[("tcp", x)] - s[("tcp", 0)] - x * (rtt + 0.0045)) < 0.03, s[("tcp", x)]
        assert abs(s[("shim", x)] - s[("tcp", x)] - rtt) < 0.002, "SCTP: one round trip more"
        assert abs(s[("abort", x)] - s[("tcp", x)] - rtt) < 0.002, "INIT → ABORT, then TCP"
        assert abs(s[("blackhole", x)] - s[("tcp", x)] - 3.0) < 0.005, "the 3-s fallback timer, then TCP"
    tr = df.drop_duplicates("mode").set_index("mode")
    assert list(tr.transport) == ["tcp", "sctp", "tcp", "tcp"] and list(tr.fallback.fillna("")) == ["", "", "abort", "timer"]
