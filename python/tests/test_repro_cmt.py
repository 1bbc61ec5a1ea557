"""CMT study (docs/cmt.md), shortened: the signatures the study rests on.

Set WIRELAB_BIN to a freshly built CLI to test it instead of the installed package."""
from wirelab.repro import cmt


def run(sc, seed=1):
    return cmt._run(({}, sc, seed, None))


def test_cmt_uses_both_paths_and_beats_the_better_path_alone():
    big = 2 << 20
    single = run(cmt.two_paths(big, None, "p1", duration="12s"))
    both = run(cmt.two_paths(big, cmt.FULL, "cmt", duration="12s"))
    stripe = run(cmt.two_paths(big, None, "stripe", duration="12s"))
    assert single["share_path2"] == 0.0
    assert both["share_path2"] > 0.15, both
    assert both["goodput_mbit"] > 1.15 * single["goodput_mbit"], (both, single)
    # no more than the two paths give two independent associations (AppStripe)
    assert both["goodput_mbit"] <= 1.05 * stripe["goodput_mbit"], (both, stripe)


def test_without_sfr_reordering_causes_spurious_retransmissions():
    big = 2 << 20
    full = run(cmt.two_paths(big, cmt.FULL, "cmt", duration="12s"))
    naive = run(cmt.two_paths(big, cmt.VARIANTS["naive cmt (no SFR, CUC, DAC)"], "cmt", duration="12s"))
    # spurious retransmissions arrive as duplicate TSNs at the receiver
    assert naive["dup_tsns"] > 10 * max(full["dup_tsns"], 1), (naive, full)
    assert naive["fast_rtx"] > full["fast_rtx"], (naive, full)
    # DAC: about one SACK per two packets despite the reordering
    no_dac = run(cmt.two_paths(big, cmt.VARIANTS["cmt, no DAC (FreeBSD default)"], "cmt", duration="12s"))
    assert full["sacks"] < 0.65 * no_dac["sacks"], (full, no_dac)


def test_small_receive_buffer_blocks_cmt():
    small = run(cmt.two_paths(64 << 10, cmt.FULL, "cmt", duration="12s"))
    big = run(cmt.two_paths(2 << 20, cmt.FULL, "cmt", duration="12s"))
    single_small = run(cmt.two_paths(64 << 10, None, "p1", duration="12s"))
    assert small["goodput_mbit"] < 0.6 * big["goodput_mbit"], (small, big)
    # with a small rbuf the slow path's TSNs hold the window: CMT falls below the fast
    # path alone (the paper's receive-buffer blocking)
    assert small["goodput_mbit"] < single_small["goodput_mbit"], (small, single_small)
