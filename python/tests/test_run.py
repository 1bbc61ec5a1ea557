"""The Python API and the `wirelab` command, against the built extension."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import wirelab

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "udp-bottleneck.toml"


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    return wirelab.run(QUICKSTART, seed=1, out=tmp_path_factory.mktemp("qs"))


def test_run_returns_dataframes(quick):
    assert isinstance(quick.flows, pd.DataFrame)
    sinks = quick.flows[quick.flows["kind"] == "udp-sink"].set_index("name")
    assert set(sinks.index) == {"sink-a", "sink-b"}
    # the bottleneck is 10 Mbit/s: the two sinks together cannot exceed it
    assert sinks["goodput_bps"].sum() < 10e6
    assert (sinks["rx_packets"] > 0).all()
    ts = quick.flow_timeseries
    assert {"time_s", "flow", "rx_rate_bps"} <= set(ts.columns)
    probe = quick.queue_probe
    assert set(probe["event"]) <= {"enqueue", "dequeue", "drop"}
    # probe drops agree with the qdisc's own counter
    q = quick.queues.set_index("dev").loc["r1:eth2"]
    assert (probe["event"] == "drop").sum() == q["drops"]
    assert quick.summary["seed"] == 1 and len(quick.fingerprint) == 16
    assert len(quick.pcaps) == 2


def test_dict_scenario_and_overrides(tmp_path):
    sc = {
        "scenario": {"name": "dict", "duration": "1s"},
        "node": [{"name": "a"}, {"name": "b"}],
        "link": [{"a": {"node": "a"}, "b": {"node": "b"}, "netem": "rate 1mbit delay 5ms"}],
        "app": [
            {"kind": "udp-cbr", "node": "a", "dst": "b:7", "interval": "10ms", "size": 100},
            {"kind": "udp-sink", "node": "b", "port": 7},
        ],
    }
    r = wirelab.run(sc, out=tmp_path / "o", overrides={"scenario.duration": "2s"})
    assert r.summary["sim_seconds"] == pytest.approx(2.0)
    sink = r.flows.set_index("kind").loc["udp-sink"]
    assert 190 <= sink["rx_packets"] <= 200


def test_same_seed_same_fingerprint(tmp_path, quick):
    again = wirelab.run(QUICKSTART, seed=1, out=tmp_path / "again")
    assert again.fingerprint == quick.fingerprint
    other = wirelab.run(QUICKSTART, seed=7, out=tmp_path / "other")
    assert other.fingerprint != quick.fingerprint


def test_scenario_error_names_line_and_key(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(QUICKSTART.read_text().replace('rate = "4mbit"', 'rate = "4 megabits"'))
    with pytest.raises(wirelab.ScenarioError) as ei:
        wirelab.run(bad, out=tmp_path / "o")
    msg = str(ei.value)
    line = bad.read_text().split("4 megabits")[0].count("\n") + 1
    assert f"bad.toml:{line}:" in msg and "app[0].rate" in msg
    assert isinstance(ei.value, ValueError) and isinstance(ei.value, wirelab.WirelabError)


def _cli(*args):
    exe = shutil.which("wirelab")
    cmd = [exe] if exe else [sys.executable, "-m", "wirelab"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True)


def test_cli_run_and_report(tmp_path):
    out = tmp_path / "run"
    p = _cli("run", str(QUICKSTART), "--out", str(out), "--seed", "3")
    assert p.returncode == 0, p.stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["seed"] == 3 and s["scenario"]["name"] == "udp-bottleneck"
    p = _cli("report", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    html = (out / "report.html").read_text()
    assert "<img" in html and "sink-a" in html


def test_cli_bad_input_exit_2(tmp_path):
    bad = tmp_path / "syntax.toml"
    bad.write_text("[scenario\nname = 1\n")
    p = _cli("run", str(bad), "--out", str(tmp_path / "o"))
    assert p.returncode == 2
    assert "syntax.toml:1:" in p.stderr and "Traceback" not in p.stderr
    p = _cli("validate", str(QUICKSTART))
    assert p.returncode == 0, p.stderr


def test_parquet_export(quick):
    pytest.importorskip("pyarrow")
    written = quick.to_parquet()
    assert any(p.name == "flows.parquet" for p in written)
    assert pd.read_parquet(quick.out_dir / "flows.parquet").equals(quick.flows)


def test_run_progress_bar_over_simulated_time(tmp_path, capsys, monkeypatch):
    # the built-in bar (not tqdm) so the output is predictable
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    r = wirelab.run(QUICKSTART, overrides={"scenario.duration": "5s", "measure.capture": []}, out=tmp_path / "p", progress=True)
    err = capsys.readouterr().err
    assert "sim-s" in err and "5" in err, err[-300:]
    assert r.summary["sim_seconds"] == 5.0
    # and none when asked for none
    wirelab.run(QUICKSTART, overrides={"scenario.duration": "1s", "measure.capture": []}, out=tmp_path / "q", progress=False)
    assert "sim-s" not in capsys.readouterr().err


def test_tcp_timeseries_with_tcp_info_names(tmp_path):
    text = """
[scenario]
name = "tcp"
duration = "3s"
[[node]]
name = "a"
[[node]]
name = "b"
[[link]]
a = { node = "a" }
b = { node = "b" }
netem = "rate 10mbit delay 10ms"
[[app]]
name = "bulk"
kind = "tcp-bulk"
node = "a"
dst = "b:5001"
[[app]]
name = "sink"
kind = "tcp-sink"
node = "b"
port = 5001
"""
    f = tmp_path / "tcp.toml"
    f.write_text(text)
    r = wirelab.run(f, out=tmp_path / "o")
    ts = r.tcp_timeseries
    assert {"cwnd", "ssthresh", "srtt_ms", "rto_ms", "unacked", "snd_wnd", "rcv_wnd", "sndbuf", "rcvbuf",
            "delivery_rate_bps"} <= set(ts.columns)
    bulk = ts[ts["flow"] == "bulk"]
    assert bulk["cwnd"].max() > 10 and (bulk["srtt_ms"].iloc[-1] >= 20)
    flows = r.flows.set_index("name")
    assert flows.loc["sink", "rx_bytes"] > 2_000_000 and flows.loc["bulk", "proto"] == "tcp"


def test_shim_matches_table(tmp_path):
    """A shim client's connect and the server's dual listen appear with the rule that decided them."""
    sc = {
        "scenario": {"name": "shim", "duration": "5s"},
        "node": [
            {"name": "c", "shim": ["remote disable 10.9.0.0/16", "remote enable any"]},
            {"name": "s", "shim": ["local enable any"]},
        ],
        "link": [{"a": {"node": "c"}, "b": {"node": "s"}, "netem": "rate 10mbit delay 5ms"}],
        "app": [
            {"name": "get", "kind": "tcp-file", "node": "c", "dst": "s:21", "bytes": 20000},
            {"name": "ftpd", "kind": "tcp-sink", "node": "s", "port": 21},
        ],
    }
    r = wirelab.run(sc, out=tmp_path / "o")
    m = r.shim_matches
    get = m[m["app"] == "get"].iloc[0]
    assert get["rule"] == "#1 remote enable any" and get["transport"] == "sctp"
    # the server's listener (both transports) and the association it accepted
    srv = m[m["app"] == "ftpd"]
    assert list(srv["chain"]) == ["local", "local"]
    assert list(srv["transport"]) == ["tcp+sctp", "sctp"]
    out = subprocess.run([sys.executable, "-m", "wirelab", "shim-matches", str(tmp_path / "o")], capture_output=True, text=True)
    assert out.returncode == 0 and "#1 remote enable any" in out.stdout, out.stderr
    from wirelab.report import build_run_report
    html = build_run_report(tmp_path / "o").read_text()
    assert "Shim rule decisions" in html and "remote enable any" in html
