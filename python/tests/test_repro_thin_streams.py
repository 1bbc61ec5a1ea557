"""Seed system 3 reproduction (docs/reproductions/thin-streams.md), reduced to a few short
cells. Checks the pipeline end to end (scenario generation, in-process runs, `wirelab
analyze`, metrics, tables) and each mechanism's signature where it acts:

* LT and MFR in the H1 setting (10 thin vs 10 greedy, pfifo 20, ITT 200 ms, where the
  streams have < 4 packets out when they lose): MFR turns timer-driven first
  retransmissions into dupACK-driven ones; LT keeps the second timeout of a segment at
  one RTO instead of doubling it;
* RDB (2 vs 2 on the 1-BDP pfifo): bundles, so the thin streams' losses are repaired
  without retransmission and the latency tail shrinks.
"""
import json

import pytest

from wirelab.repro import thin_streams as ts
from wirelab.repro import thin_streams_tables as tt


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("thin")
    h1 = [ts.Cell(10, 10, c, limit=20, itt_ms=200, duration_s=60) for c in ("vanilla", "lt", "mfr")]
    rdb = [ts.Cell(2, 2, c, duration_s=30) for c in ("vanilla", "rdb")]
    exp = ts.Experiment("smoke", "smoke", h1 + rdb, seeds=[1])
    ts.run_experiment(exp, out, jobs=2, progress=lambda s: None)
    return out, exp, {c.config + ("-h1" if c.thin == 10 else ""): ms[0] for c, ms in tt.load(out, exp).items()}


def test_only_metrics_are_kept(runs):
    out, exp, _ = runs
    for c in exp.cells:
        d = out / "smoke" / c.name() / "seed1"
        assert [p.name for p in d.iterdir()] == ["metrics.json"]
        assert json.loads((d / "metrics.json").read_text())["cell"]["config"] == c.config


def test_lt_and_mfr_signatures(runs):
    m = runs[2]
    van, lt, mfr = m["vanilla-h1"], m["lt-h1"], m["mfr-h1"]
    # ITT 200 ms, 60 s: 300 writes per stream, each its own segment (TCP_NODELAY)
    assert abs(van["thin_segments"] / 3000 - 1) < 0.1, van["thin_segments"]
    assert van["cnt_thin_linear_timeouts"] == 0 and van["cnt_thin_dupack_retrans"] == 0
    # the streams are thin when they lose: almost every first retransmission leaves with < 4 out
    assert tt._out_share([van], 4) > 90
    # MFR: retransmits on the first dupACK instead of waiting for the RTO
    assert mfr["cnt_thin_dupack_retrans"] > 10
    assert van["thin_first_retx_timer_pct"] > 70
    assert mfr["thin_first_retx_timer_pct"] < van["thin_first_retx_timer_pct"] - 20
    # LT: the timeout after a timeout is not doubled
    assert lt["cnt_thin_linear_timeouts"] > 10
    assert van["thin_rto2_gaps"] >= 1 and lt["thin_rto2_gaps"] >= 1
    assert lt["thin_rto2_gap_ms_med"] < 0.7 * van["thin_rto2_gap_ms_med"], (
        lt["thin_rto2_gap_ms_med"], van["thin_rto2_gap_ms_med"])
    assert len({van["fingerprint"], lt["fingerprint"], mfr["fingerprint"]}) == 3


def test_rdb_signature(runs):
    m = runs[2]
    van, rdb = m["vanilla"], m["rdb"]
    for r in (van, rdb):
        assert r["greedy_goodput_mbps"] > 4.0 and 0 < r["greedy_jain"] <= 1
        assert r["bottleneck_drops"] > 0, "the 1-BDP pfifo overflows"
        assert 0 < r["greedy_rel_loss_pkt_pct"] < 20 and r["end_backlog_pkts"] > 0
    assert van["cnt_rdb_packets"] == 0 and rdb["cnt_rdb_packets"] > 0
    assert rdb["thin_retrans"] < van["thin_retrans"], (rdb["thin_retrans"], van["thin_retrans"])
    assert rdb["thin_lat_max"] < van["thin_lat_max"], (rdb["thin_lat_max"], van["thin_lat_max"])
    assert rdb["thin_lat_p99"] < 0.8 * van["thin_lat_p99"], (rdb["thin_lat_p99"], van["thin_lat_p99"])


def test_scenario_errors():
    with pytest.raises(ValueError, match="unknown config"):
        ts.scenario(ts.Cell(1, 1, "fast"))
    with pytest.raises(ValueError, match="unknown queue"):
        ts.scenario(ts.Cell(1, 1, queue="wfq"))
    assert ts.Cell(3, 3, limit=63) == ts.Cell(3, 3), "the default limit spelled out is the default cell"
