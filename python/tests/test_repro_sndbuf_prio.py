"""Seed system 1 reproduction (docs/reproductions/sndbuf-prio.md), reduced to 10-s runs of
20 and 200 flows: the study's tree and plain SFQ run end to end, packets spread over the
decile classes, and the tree's per-flow SD is below SFQ's at 200 flows (the headline)."""
from wirelab.repro.sndbuf_prio import smoke


def test_sndbuf_prio_smoke(tmp_path):
    assert smoke(tmp_path) == 0
