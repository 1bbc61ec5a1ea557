"""Seed system 4 reproduction (docs/reproductions/rate-control.md), the MSS sweep of §6.5:
with the receiver's window fixed at one MSS (`net.ipv4.rate_fixed_window`, `rate_mss`) a
ttcp stream over 10 Mbit/s Ethernet is stop-and-wait, and its throughput follows
MSS / (RTT + frame time + ACK time) for every MSS."""
from conftest import load_repro

rc = load_repro("rate_control")


def test_rate_control_mss_sweep_is_stop_and_wait(tmp_path):
    img = tmp_path / "img"
    img.mkdir()
    res = rc.exp_mss(tmp_path / "runs", img)
    assert len(res["mss"]) == 10 and (img / "rate-mss.png").exists()
    for m, got, theory in zip(res["mss"], res["mbps"], res["theory_wire_mbps"]):
        assert abs(got / theory - 1) < 0.02, (m, got, theory)
    assert res["mbps"] == sorted(res["mbps"]), "larger segments, more throughput"
