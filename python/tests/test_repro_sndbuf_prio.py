"""Seed system 1 reproduction (docs/reproductions/sndbuf-prio.md), reduced to 10-s runs of
20 and 200 flows: the study's HTB tree (SFQ leaves, classes by the chunk-0x96 send-buffer
occupancy decile) against plain SFQ. Signature: the senders' marks spread packets over
several decile classes, up to decile 7 (the study's V2 values reach 74 %), and at 200 flows the tree's per-flow bandwidth spread (the study's
statistic, SD) and Jain's index beat SFQ's."""
import json

from wirelab.repro.sndbuf_prio import smoke


def test_sndbuf_prio_smoke(tmp_path):
    assert smoke(tmp_path) == 0
    cell = {q: json.loads((tmp_path / f"{q}-200" / "cell.json").read_text()) for q in ("htb", "sfq")}
    htb, sfq = cell["htb"], cell["sfq"]
    used = {c for c, n in htb["extra"]["classes"].items() if n > 0 and c != "1:1"}
    assert len(used) >= 3, used
    # deciles 6-7 carry traffic (4.6's asoc->sndbuf_used is 77 % payload), 8-9 never
    assert {"1:60", "1:70"} & used and not {"1:80", "1:90", "1:100"} & used, used
    assert htb["sd"] < 0.75 * sfq["sd"], (htb["sd"], sfq["sd"])
    assert htb["jain"] > sfq["jain"]
    assert abs(htb["aggregate_mbps"] / sfq["aggregate_mbps"] - 1) < 0.05, "same link, same load"
