"""`wirelab report` for a run and for a sweep: content, offline, and a headless-browser
screenshot without console errors."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import wirelab
import wirelab.sweep as ws
from wirelab.report import build_report
from wirelab.report.sweep import short_names

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "udp-bottleneck.toml"
BROWSERS = ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome", "headless_shell")


def browser():
    for b in BROWSERS:
        p = shutil.which(b)
        if p:
            return p
    return None


def screenshot(html_path: Path, png: Path):
    """Opens the page in headless Chromium; returns the console lines it logged."""
    exe = browser()
    if exe is None:
        msg = "no headless browser (apt-get install chromium-headless-shell; scripts/install-test-deps.sh does)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--window-size=1100,2600", "--virtual-time-budget=5000", "--enable-logging=stderr", "--v=0",
           f"--user-data-dir={png.parent / 'chrome-profile'}", f"--screenshot={png}", html_path.resolve().as_uri()]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return [ln for ln in p.stderr.splitlines() if ":CONSOLE" in ln]


def assert_not_blank(png: Path):
    from PIL import Image
    import numpy as np

    assert png.exists() and png.stat().st_size > 10_000
    a = np.asarray(Image.open(png).convert("L"), dtype=float)
    assert a.shape[0] >= 2000 and a.shape[1] >= 1000
    ink = (a < 200).mean()  # text, axes, bars
    assert ink > 0.01, f"screenshot looks blank ({ink:.4f} dark pixels)"
    assert a.std() > 10


def assert_offline(html: str):
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "report must not load anything remote"


LEAN = {"measure.capture": [], "measure.queue_probe": [], "measure.sample_interval": "250ms"}


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep-report")
    ws.run({"scenario": str(QUICKSTART), "set": {**LEAN, "scenario.duration": "5s"},
            "grid": {"link.bottleneck.a.qdisc": ["pfifo limit 100", "pfifo limit 20"]},
            "zip": {"app.flow-a.rate": ["2mbit", "4mbit"], "app.flow-b.rate": ["4mbit", "8mbit"]},
            "seeds": [1, 2, 3]}, out=d / "o", jobs=2, progress=False)
    return d / "o"


def test_sweep_report_content(sweep_dir):
    p = subprocess.run([sys.executable, "-m", "wirelab", "report", str(sweep_dir)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    html = (sweep_dir / "report.html").read_text()
    assert_offline(html)
    for title in ["goodput (Mbit/s)", "loss ratio", "CDF of per-run sink goodput", "CDF of receive rate samples",
                  "CDF of queue length", "Receive rate per flow", "Queue length (busy queues)"]:
        assert f'alt="{title}"' in html, title
    assert html.count("<img") >= 7
    # the per-configuration table holds the mean of the three seeds
    flows = ws.open_sweep(sweep_dir).flows
    g = flows[(flows["name"] == "sink-a") & (flows["app.flow-a.rate"] == "2mbit")
              & (flows["link.bottleneck.a.qdisc"] == "pfifo limit 100")]
    assert len(g) == 3
    # in human units, as the table shows it (not 1.94732e+06)
    from wirelab.report.common import human_rate
    assert f">{human_rate(g['goodput_bps'].mean())}<" in html
    assert not re.search(r"<td>[0-9.]+e[+-][0-9]+</td>", html), "a number in exponent notation"


def test_sweep_report_in_headless_browser(sweep_dir, tmp_path):
    dest = build_report(sweep_dir, tmp_path / "sweep.html")
    png = tmp_path / "sweep.png"
    console = screenshot(dest, png)
    assert console == [], console
    assert_not_blank(png)


def test_run_report_in_headless_browser(tmp_path):
    out = tmp_path / "run"
    wirelab.run(QUICKSTART, seed=2, out=out, overrides={"scenario.duration": "4s"})
    html_path = build_report(out)
    html = html_path.read_text()
    assert_offline(html)
    for title in ["Receive rate per app", "CDF of receive rate", "Queue length (sampled)",
                  "CDF of queue sojourn time (probe)", "Goodput per connection", "Latency CDF", "Queueing delay"]:
        assert f'alt="{title}"' in html, title
    png = tmp_path / "run.png"
    console = screenshot(html_path, png)
    assert console == [], console
    assert_not_blank(png)


def sweep_dir_plain(tmp_path):
    ws.run({"scenario": str(QUICKSTART), "set": {**LEAN, "scenario.duration": "1s"}, "seeds": [1]},
           out=tmp_path / "plain", jobs=1, progress=False)
    return tmp_path / "plain"


TCP = {
    "scenario": {"name": "tcp-dumbbell", "duration": "3s"},
    "node": [{"name": "a"}, {"name": "r", "kind": "router"}, {"name": "b"}],
    "link": [{"a": {"node": "a"}, "b": {"node": "r"}, "netem": "rate 100mbit delay 1ms"},
             {"name": "bn", "a": {"node": "r", "qdisc": "pfifo limit 30"}, "b": {"node": "b"},
              "netem": "rate 10mbit delay 20ms loss 0.2%"}],
    "app": [{"name": "bulk", "kind": "tcp-bulk", "node": "a", "dst": "b:5001", "cc": "cubic"},
            {"name": "sink", "kind": "tcp-sink", "node": "b", "port": 5001}],
    "measure": {"sample_interval": "50ms"},
}


def test_tcp_sweep_report_plots_cwnd(tmp_path):
    try:
        wirelab.validate(TCP)
    except wirelab.ScenarioError as e:
        pytest.skip(f"this build has no TCP apps: {e}")
    out = tmp_path / "tcp"
    ws.run({"scenario": TCP, "grid": {"app.bulk.cc": ["cubic", "reno"]}, "seeds": [1, 2]},
           out=out, jobs=2, progress=False)
    sw = ws.open_sweep(out)
    tcp = sw.tcp_timeseries
    assert {"run", "app.bulk.cc", "seed", "cwnd", "srtt_ms"} <= set(tcp.columns)
    assert set(tcp["app.bulk.cc"]) == {"cubic", "reno"} and (tcp["cwnd"] > 0).any()
    html_path = build_report(out)
    html = html_path.read_text()
    for title in ["Congestion window", "Smoothed RTT", "Receive rate per flow"]:
        assert f'alt="{title}"' in html, title
    # one-way delay is measured by UDP sinks only: no empty chart for TCP
    assert 'alt="goodput (Mbit/s)"' in html and 'alt="mean one-way delay (ms)"' not in html
    run_html = build_report(sw.store.runs_dir / sw.done[0], tmp_path / "run.html").read_text()
    assert 'alt="Congestion window"' in run_html and 'alt="Delivery rate"' in run_html
    # a UDP-only run has no sockets: no empty window plot
    assert 'alt="Congestion window"' not in build_report(sweep_dir_plain(tmp_path)).read_text()
    console = screenshot(html_path, tmp_path / "tcp.png")
    assert console == [], console
    assert_not_blank(tmp_path / "tcp.png")


def test_broken_figure_is_reported_on_the_console(tmp_path):
    # the report's self-check is what the browser test relies on: prove it fires
    from wirelab.report.common import page
    bad = tmp_path / "bad.html"
    bad.write_text(page("bad", ['<img alt="broken" src="data:image/png;base64,AAAA"/>']))
    console = screenshot(bad, tmp_path / "bad.png")
    assert any("figure failed to load: broken" in ln for ln in console), console


def test_short_names():
    assert short_names(["app.flow-a.rate", "app.flow-b.rate", "link.x.netem"]) == {
        "app.flow-a.rate": "flow-a.rate", "app.flow-b.rate": "flow-b.rate", "link.x.netem": "netem"}


def test_report_cli_rejects_other_dirs(tmp_path):
    p = subprocess.run([sys.executable, "-m", "wirelab", "report", str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 2 and "manifest.json" in p.stderr


def test_analyze_report_plots_latency_goodput_and_fairness(tmp_path):
    """`wirelab report` on a `wirelab analyze --out` directory: ACK-latency and application
    delay CDFs per class, goodput per interval, Jain's index, and the class table."""
    sc = {
        "scenario": {"name": "thin", "duration": "10s"},
        "node": [{"name": "a"}, {"name": "b"}],
        "link": [{"a": {"node": "a"}, "b": {"node": "b"}, "netem": "rate 2mbit delay 20ms loss 2%"}],
        "app": [
            {"name": "thin", "kind": "tcp-thin", "node": "a", "dst": "b:5000", "preset": "bzflag"},
            {"name": "bulk", "kind": "tcp-bulk", "node": "a", "dst": "b:6000"},
            {"kind": "tcp-sink", "node": "b", "port": 5000},
            {"kind": "tcp-sink", "node": "b", "port": 6000},
        ],
        "measure": {"capture": ["a:eth0", "b:eth0"]},
    }
    run = tmp_path / "run"
    wirelab.run(sc, out=run)
    an = tmp_path / "an"
    cmd = [sys.executable, "-m", "wirelab", "analyze", str(run / "pcap" / "a-eth0.pcap"),
           "--receiver", str(run / "pcap" / "b-eth0.pcap"), "--out", str(an),
           "--class", "thin=dport:5000", "--class", "bulk=dport:6000"]
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0
    p = subprocess.run([sys.executable, "-m", "wirelab", "report", str(an)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    page = (an / "report.html").read_text()
    for title in ["CDF of ACK latency", "CDF of application delay", "Goodput per interval", "index per interval"]:
        assert title in page, title
    assert page.count("<img") == 5 and "Classes" in page and ">thin<" in page and ">bulk<" in page
