"""wirelab.packetdrill(): scripts against the TCP engine, with packetdrill's verdicts."""
from pathlib import Path

import pytest

import wirelab

ROOT = Path(__file__).resolve().parents[2]
OWN = ROOT / "crates" / "wirelab-packetdrill" / "scripts"


def test_own_script_passes():
    [r] = wirelab.packetdrill(OWN / "thin-linear-timeouts.pkt")
    assert r.passed, r.message
    assert (r.status, r.exit_code, r.message) == ("pass", 0, "")
    # the script's shell lines that have no effect on wirelab are reported, not hidden
    assert any("tc qdisc" in n and "pfifo" in n for n in r.notes), r.notes


def test_failure_reads_like_packetdrill(tmp_path):
    # the same script, expecting the first retransmission 100 ms too early
    src = (OWN / "thin-linear-timeouts.pkt").read_text()
    bad = src.replace(" +.32 > P. 1:101(100) ack 1", " +.22 > P. 1:101(100) ack 1", 1)
    (tmp_path / "common").symlink_to(OWN / "common")
    p = tmp_path / "late.pkt"
    p.write_text(bad)
    [r] = wirelab.packetdrill(p)
    assert (r.status, r.exit_code) == ("fail", 1)
    assert r.message.startswith("late.pkt:"), r.message
    assert "timing error: expected outbound packet at" in r.message
    assert "script packet:" in r.message and "actual packet:" in r.message


def test_bad_and_unsupported_scripts(tmp_path):
    broken = tmp_path / "broken.pkt"
    broken.write_text("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 > S 0:0(0) <mss\n")
    odd = tmp_path / "odd.pkt"
    odd.write_text("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 frobnicate(3) = 0\n")
    a, b = wirelab.packetdrill(broken, odd)
    assert (a.status, a.exit_code) == ("parse_error", 2)
    assert a.message.startswith("broken.pkt:2: error:"), a.message
    assert (b.status, b.exit_code) == ("unsupported", 2)
    assert "frobnicate" in b.message and b.message.startswith("odd.pkt:2:")


def test_needs_a_script():
    with pytest.raises(ValueError):
        wirelab.packetdrill()


def test_cli_subcommand(tmp_path, capfd):
    from wirelab.cli import main

    out = tmp_path / "r.json"
    assert main(["packetdrill", str(OWN / "thin-linear-timeouts.pkt"), "--json", str(out)]) == 0
    assert "PASS" in capfd.readouterr().out
    import json

    [row] = json.loads(out.read_text())
    assert (row["status"], row["rc"]) == ("PASS", 0)
    odd = tmp_path / "odd.pkt"
    odd.write_text("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n+0 frobnicate(3) = 0\n")
    assert main(["packetdrill", str(odd)]) == 2
    assert main(["packetdrill", str(odd), "-D", "NOEQUALS"]) == 2
