"""Seed system 3 reproduction (docs/reproductions/thin-streams.md), reduced to one 30-s
cell pair: 2 thin vs 2 greedy streams over the 1-BDP pfifo, vanilla and RDB. Checks the
pipeline end to end (scenario generation, runs, `wirelab analyze`, aggregation) and the
mechanism's signature: RDB bundles, hides the thin streams' losses from the receiver (no
timer-driven recovery, a lower p99 and worst-case ACK latency), vanilla does neither."""
from wirelab.repro import thin_streams as ts


def test_thin_streams_smoke(tmp_path):
    cells = ts.matrix_cells([2], ["vanilla", "rdb"], None, ["pfifo"])
    ts.run_matrix(tmp_path, cells, [1], "30s", jobs=1)
    rows = {r["config"]: r for r in ts.aggregate(tmp_path)}
    van, rdb = rows["vanilla"], rows["rdb"]
    for r in (van, rdb):
        # 2 streams × 30 s / 100 ms writes, each its own segment (TCP_NODELAY)
        assert abs(r["thin_segments"] / 600 - 1) < 0.05, r["thin_segments"]
        assert r["greedy_goodput_mbps"] > 4.0 and 0 < r["greedy_jain"] <= 1
        assert r["bottleneck_drops"] > 0, "the 1-BDP pfifo overflows"
    assert van["cnt_rdb_packets"] == 0 and rdb["cnt_rdb_packets"] > 0
    assert rdb["thin_retrans"] < van["thin_retrans"], (rdb["thin_retrans"], van["thin_retrans"])
    assert rdb["thin_lat_max"] < van["thin_lat_max"], (rdb["thin_lat_max"], van["thin_lat_max"])
    assert rdb["thin_lat_p99"] < 0.8 * van["thin_lat_p99"], (rdb["thin_lat_p99"], van["thin_lat_p99"])
