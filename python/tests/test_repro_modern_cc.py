"""Modern congestion-control study (docs/reproductions/modern-cc.md), shortened: the
signatures of each mechanism the study rests on. The full study is `make nightly`."""
from wirelab.repro import modern_cc as m


def run(part, sc, seed=1):
    return m._run((part, {}, sc, seed, None))


def test_dctcp_holds_the_queue_near_k_with_full_utilisation():
    # 2 DCTCP flows, 1 Gbit/s, 100 µs: the queue sits at K (the paper's analysis for N = 2:
    # between K + N − ½√(2N(C·RTT + K)) and K + N), the link stays busy, nothing is lost
    for k in (20, 65):
        r = run("dctcp", m.dc_scenario(["dctcp", "dctcp"], m.red_k(k), 1, duration=1.5))
        qmin, qmax, _ = m.dctcp_queue_model(2, k)
        assert qmin - 3 <= r["q_median"] <= qmax + 1, (k, r)
        assert r["q_p95"] <= qmax + 4 and r["q_zero_frac"] < 0.01, (k, r)
        assert r["utilisation"] > 0.95, (k, r)
        assert r["retrans"] == 0 and 0.0 < r["alpha_mean"] < 0.5, (k, r)
    # CUBIC on a 100-packet drop-tail FIFO fills it instead and loses packets
    c = run("dctcp", m.dc_scenario(["cubic", "cubic"], "pfifo limit 100", 1, duration=1.5))
    assert c["q_median"] > 60 and c["retrans"] > 100, c


def test_bbr_goodput_under_random_loss_is_far_above_cubic():
    # 100 Mbit/s, 100 ms, 5 % random loss on the data path, 20 s
    bbr = run("loss", m.loss_scenario("bbr", 5.0, duration=20.0))
    cubic = run("loss", m.loss_scenario("cubic", 5.0, duration=20.0))
    assert bbr["goodput_mbit"] > 20 * cubic["goodput_mbit"], (bbr, cubic)
    # once out of startup BBR runs at most of the (1 − p) ceiling of 90.9 Mbit/s
    assert bbr["goodput_10_60_mbit"] > 60, bbr
    assert cubic["goodput_mbit"] < 2, cubic
    # and without loss both fill the link alike
    bbr0 = run("loss", m.loss_scenario("bbr", 0.0, duration=20.0))
    cubic0 = run("loss", m.loss_scenario("cubic", 0.0, duration=20.0))
    assert bbr0["goodput_10_60_mbit"] > 90 and cubic0["goodput_10_60_mbit"] > 90, (bbr0, cubic0)
