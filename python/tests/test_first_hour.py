"""Issue 21, "a first hour that wins a researcher over": what a new user meets first.
The quickstart and its report, a run owning its directory, the Python errors, Jupyter
representations and plot helpers, human units."""
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import wirelab
from wirelab.report import build_report

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.toml"
UDP = ROOT / "scenarios" / "udp-bottleneck.toml"
WIRELAB = [sys.executable, "-m", "wirelab"]


def readme_first_command() -> str:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0].strip()
    assert block.startswith("pip install . && "), block
    return block[len("pip install . && "):]


@pytest.fixture(scope="module")
def qs(tmp_path_factory):
    """The README's first command after its `pip install .`, as written, in a fresh
    directory holding the checkout's scenarios/: run the quickstart, write its report."""
    cwd = tmp_path_factory.mktemp("quickstart")
    shutil.copytree(ROOT / "scenarios", cwd / "scenarios")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    t0, c0 = time.monotonic(), _child_cpu()
    p = subprocess.run(["bash", "-c", readme_first_command()], cwd=cwd, env=env, capture_output=True, text=True)
    seconds = (time.monotonic() - t0, _child_cpu() - c0)
    assert p.returncode == 0, p.stderr
    # the console names every connection with its congestion control and goodput
    for name in ["fifo-cubic -> fifo-cubic-rx", "sfq-bbr -> sfq-bbr-rx", "sfq-thin-rdb -> sfq-thin-rdb-rx"]:
        assert name in p.stdout, p.stdout
    return cwd / "results" / "quickstart", seconds


def _child_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def test_quickstart_finishes_in_under_a_minute(qs):
    """Run + report take ~12 s wall on an idle 2-core machine (about 4 s of CPU). The bound
    is on the CPU the command needs, which other load on a shared machine does not change
    (wall time there grew to 60 s at a load of 15); wall time gets a loose sanity bound."""
    _, (wall, cpu) = qs
    assert cpu < 30, f"run + report needed {cpu:.1f} s of CPU"
    assert wall < 180, f"run + report took {wall:.1f} s"


def test_quickstart_answers_its_question(qs):
    """CUBIC and BBR bulk flows and thin streams with and without RDB, behind FIFO and SFQ:
    SFQ isolates the thin streams from the bulk flows' queue, a FIFO does not."""
    out, _ = qs
    res = wirelab.Result(out)
    c = res.connections.set_index("client")
    assert set(c["cc"]) >= {"cubic", "bbr"}
    assert {"fifo-thin", "fifo-thin-rdb", "sfq-thin", "sfq-thin-rdb"} <= set(c.index)
    lat = res.latency
    assert set(lat["what"]) == {"application delay"}, "the thin senders and receivers are captured"
    med = lat.groupby("name")["latency_ms"].median()
    # the path's base one-way delay is 20 ms + 2 x 1 ms; behind a FIFO the bulk flows' standing
    # queue adds tens of ms, behind SFQ the thin stream's own queue is empty
    assert med["sfq-thin"] < 30 < med["fifo-thin"]
    assert med["sfq-thin-rdb"] < 30 < med["fifo-thin-rdb"]


def test_quickstart_report_first_screen(qs, tmp_path):
    """The report opens on the question, the connections table and the four overview
    plots; a headless Chromium screenshot of the first screen is not blank."""
    from test_report import assert_not_blank, screenshot  # noqa: F401 - same browser helpers

    out, _ = qs
    page = (out / "report.html").read_text()
    first = page[:page.index("<h2>Details</h2>")]
    assert "How much delay does a thin TCP stream see" in first
    for title in ["Goodput per connection", "Latency CDF", "Congestion window", "Queueing delay"]:
        assert f'alt="{title}"' in first, title
    from wirelab.units import human_rate

    bbr = wirelab.Result(out).connections.set_index("client").loc["fifo-bbr", "goodput_bps"]
    assert ">fifo-bbr<" in first and f">{human_rate(bbr)}<" in first and "Mbit/s<" in first
    assert not re.search(r"<td>-?[0-9.]+e[+-][0-9]+</td>", first), "a number in exponent notation"
    png = tmp_path / "quickstart.png"
    console = screenshot_first_screen(out / "report.html", png)
    assert console == [], console
    from PIL import Image
    import numpy as np

    a = np.asarray(Image.open(png).convert("L"), dtype=float)
    assert a.shape == (1000, 1280)
    lower = a[380:]  # below the title and the table: the overview plots
    assert (lower < 200).mean() > 0.03 and lower.std() > 20, "the first screen shows no plots"
    keep = os.environ.get("WIRELAB_SCREENSHOTS")
    if keep:  # CI keeps the screenshot to look at
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(keep) / "quickstart-report.png")


def _tick_labels_do_not_overlap(fig, ax, minor_unlabelled: bool) -> set:
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    if minor_unlabelled:
        assert not any(t.get_text() for t in ax.get_xticklabels(minor=True))
    lo, hi = ax.get_xlim()
    labels = [t for t in ax.get_xticklabels() + ax.get_xticklabels(minor=True)
              if t.get_text() and lo <= t.get_position()[0] <= hi]
    boxes = sorted((t.get_window_extent(r) for t in labels), key=lambda b: b.x0)
    for a, b in zip(boxes, boxes[1:]):
        assert a.x1 < b.x0, "tick labels overlap"
    return {t.get_text() for t in labels}


def test_latency_cdf_tick_labels_do_not_overlap(qs):
    """A latency CDF spanning 20 … 700 ms gets a log axis: matplotlib's default labelled
    its minor ticks too (2×10¹ 3×10¹ 4×10¹ ran into each other, as in the quickstart
    report of 2026-11-24). Only 1-2-5 major ticks carry labels, in plain numbers, and no
    two labels overlap; the quickstart's own CDF (log or linear) has no overlap either."""
    import types

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(1)
    lat = pd.DataFrame({"name": ["fifo-thin"] * 200 + ["sfq-thin"] * 200,
                        "latency_ms": np.r_[rng.uniform(40, 700, 200), rng.uniform(20, 25, 200)],
                        "what": "application delay"})
    fig, ax = plt.subplots(figsize=(6, 3.5))
    try:
        from wirelab import plots

        plots.latency_cdf(types.SimpleNamespace(latency=lat), ax=ax)
        assert ax.get_xscale() == "log"
        labels = _tick_labels_do_not_overlap(fig, ax, minor_unlabelled=True)
        assert {"20", "50", "100", "200", "500"} <= labels, labels
    finally:
        plt.close(fig)
    out, _ = qs
    fig, ax = plt.subplots(figsize=(6, 3.5))
    try:
        wirelab.Result(out).plot.latency_cdf(ax=ax)
        _tick_labels_do_not_overlap(fig, ax, minor_unlabelled=ax.get_xscale() == "log")
    finally:
        plt.close(fig)


def screenshot_first_screen(html_path: Path, png: Path):
    from test_report import browser

    exe = browser()
    if exe is None:
        msg = "no headless browser (scripts/install-test-deps.sh installs chromium-headless-shell)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--window-size=1280,1000", "--virtual-time-budget=5000", "--enable-logging=stderr", "--v=0",
           f"--user-data-dir={png.parent / 'chrome-profile'}", f"--screenshot={png}", html_path.resolve().as_uri()]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return [ln for ln in p.stderr.splitlines() if ":CONSOLE" in ln]


def test_the_installed_extension_is_abi3():
    """Item 11: the wheel `make wheel` builds is abi3 (one file for CPython >= 3.9): the
    extension pip built from the same pyproject carries the stable-ABI suffix."""
    from wirelab import _wirelab

    assert Path(_wirelab.__file__).name.endswith(".abi3.so"), _wirelab.__file__
    mk = (ROOT / "Makefile").read_text()
    assert "\nwheel:" in mk and "pip wheel" in mk


# -- item 3: a run owns its --out directory ------------------------------------------------

def test_rerun_clears_the_previous_runs_files(tmp_path):
    out = tmp_path / "o"
    first = wirelab.run(UDP, out=out, overrides={"scenario.duration": "1s"})
    assert len(first.pcaps) == 2 and len(first.queue_probe)
    (out / "notes.txt").write_text("mine")
    again = wirelab.run(UDP, out=out, overrides={"scenario.duration": "1s", "measure.capture": [],
                                                 "measure.queue_probe": []})
    assert again.pcaps == [] and not (out / "pcap").exists(), "stale captures were kept"
    assert not (out / "queue_probe.csv").exists() or len(again.queue_probe) == 0
    assert (out / "notes.txt").read_text() == "mine", "a file the user put there was removed"


def test_foreign_directory_is_refused_unless_forced(tmp_path):
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "chapter1.tex").write_text("x")
    with pytest.raises(FileExistsError, match="chapter1.tex.*--force"):
        wirelab.run(UDP, out=out, overrides={"scenario.duration": "1s"})
    p = subprocess.run([*WIRELAB, "run", str(UDP), "--out", str(out), "--set", "scenario.duration=1s"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "--force" in p.stderr
    r = wirelab.run(UDP, out=out, overrides={"scenario.duration": "1s"}, force=True)
    assert r.summary["sim_seconds"] == pytest.approx(1.0) and (out / "chapter1.tex").exists()


def test_scenario_file_inside_out_is_not_foreign(tmp_path):
    out = tmp_path / "study"
    out.mkdir()
    sc = out / "scenario.toml"
    shutil.copy(UDP, sc)
    r = wirelab.run(sc, out=out, overrides={"scenario.duration": "1s"})
    assert r.summary["sim_seconds"] == pytest.approx(1.0) and sc.exists()


# -- item 8: Python API ----------------------------------------------------------------------

def test_run_without_out_leaves_no_temporary_directory():
    res = wirelab.run(UDP, overrides={"scenario.duration": "1s"})
    d = res.out_dir
    assert d.is_dir() and len(res.flows)
    kept = res.save(Path(tempfile.mkdtemp()) / "kept")
    del res
    gc.collect()
    assert not d.exists(), "the temporary output directory outlived its Result"
    assert len(kept.flows)
    shutil.rmtree(kept.out_dir.parent)


def test_result_of_a_missing_directory_raises(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        wirelab.Result("/nonexistent")
    with pytest.raises(FileNotFoundError, match="no summary.json"):
        wirelab.Result(tmp_path)


def test_to_parquet_without_pyarrow_names_the_extra(qs, monkeypatch):
    out, _ = qs
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    with pytest.raises(wirelab.WirelabError, match=r"pip install 'wirelab\[parquet\]'"):
        wirelab.Result(out).to_parquet()


def test_result_repr_html_is_a_summary_with_plots(qs):
    out, _ = qs
    h = wirelab.Result(out)._repr_html_()
    assert "quickstart" in h and ">sfq-thin<" in h
    assert h.count("<img") == 4 and "data:image/png;base64," in h


def test_plot_helpers(qs):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out, _ = qs
    res = wirelab.Result(out)
    assert set(dir(res.plot)) >= {"cwnd", "srtt", "rate", "delivery_rate", "goodput", "latency_cdf",
                                  "queue_delay", "queue"}
    for name in dir(res.plot):
        ax = getattr(res.plot, name)()
        assert ax is not None and ax.has_data(), name
    # item 4: sinks' sockets only ACK; their flat windows are not drawn
    ax = res.plot.cwnd()
    labels = {t.get_text() for t in ax.get_legend().get_texts()}
    assert labels == set(res.connections["client"]), labels
    # the send/receive rate is a moving average: far steadier than the raw 100 ms samples
    ax = res.plot.rate(smooth=1.0)
    ts = res.flow_timeseries
    raw = ts[ts["flow"] == "fifo-cubic-rx"]["rx_rate_bps"] / 1e6
    line = [ln for ln in ax.get_lines() if ln.get_label() == "fifo-cubic-rx"][0]
    smooth = line.get_ydata()
    assert abs(smooth.mean() - raw.mean()) < 0.1 * raw.mean()
    assert abs(sum(abs(x - y) for x, y in zip(smooth[1:], smooth[:-1]))) < 0.5 * raw.diff().abs().sum()
    plt.close("all")


# -- item 7: human units ---------------------------------------------------------------------

def test_human_units():
    from wirelab.report.common import human
    from wirelab.units import human_bytes, human_rate
    import pandas as pd

    assert human_rate(2.84491e6) == "2.84 Mbit/s" and human_rate(9610) == "9.61 kbit/s"
    assert human_bytes(17_012_345) == "17.0 MB" and human_bytes(512) == "512 B"
    t = human(pd.DataFrame({"goodput_bps": [2.84491e6], "retrans_ratio": [0.0236], "events": [366806]}))
    assert list(t.iloc[0]) == ["2.84 Mbit/s", "2.36 %", "366\u2009806"]


def test_sweep_axis_labels_are_parameter_values():
    from wirelab.report.sweep import axis_label, value_labels

    assert value_labels(["rate 10mbit delay 20ms", "rate 10mbit delay 80ms"]) == {
        "rate 10mbit delay 20ms": "delay 20ms", "rate 10mbit delay 80ms": "delay 80ms"}
    assert value_labels(["cubic", "bbr"]) == {"cubic": "cubic", "bbr": "bbr"}
    assert axis_label(["link.bn.netem", "app.bulk.cc"]) == "netem · cc"


# -- items 6 and 10: the command line ----------------------------------------------------------

def test_wirelab_alone_lists_every_subcommand_and_help_explains_each():
    p = subprocess.run(WIRELAB, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    from wirelab import _wirelab

    names = [n for n, _ in _wirelab.cli_commands()]
    assert {"run", "validate", "report", "sweep", "analyze", "bench"} <= set(names)
    for n in names:
        assert f"\n  {n} " in p.stdout, n
        h = subprocess.run([*WIRELAB, "help", n], capture_output=True, text=True)
        assert h.returncode == 0 and "usage" in h.stdout.lower() and len(h.stdout) > 200, (n, h.stdout, h.stderr)


def test_run_without_out_uses_results_name_and_progress_without_a_terminal(tmp_path):
    # long enough (about 10 s wall, 73x real time) for the plain line every 3 s to show
    p = subprocess.run([*WIRELAB, "run", str(QUICKSTART), "--progress", "--set", "scenario.duration=800s",
                        "--set", "measure.capture=[]", "--set", "measure.queue_probe=[]"],
                       cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    summary = tmp_path / "results" / "quickstart" / "summary.json"
    assert summary.exists()
    import json

    wall = json.loads(summary.read_text())["wall_seconds"]
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("progress: ")]
    assert "\r" not in p.stderr, "a redrawn bar where no terminal shows it"
    assert len(lines) >= int(wall // 3) - 1, (wall, p.stderr)
    if wall >= 4:
        assert lines and "s simulated" in lines[0] and "eta" in lines[0], p.stderr


def test_validate_show_lists_the_interfaces_captures_take(tmp_path):
    p = subprocess.run([*WIRELAB, "validate", str(UDP), "--show"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "node r1 (router, forwards)" in out
    r1 = out.split("node r1", 1)[1].split("\nnode ", 1)[0]
    eth2 = [ln for ln in r1.splitlines() if ln.strip().startswith("eth2")][0]
    assert "10.0.0.1/30" in eth2 and "pfifo" in eth2 and "-> r2:eth0" in eth2 and "rate 10Mbit" in eth2
    assert "route 10.0.3.0/24 via 10.0.0.2 dev eth2" in r1
    # every interface it lists is a name measure.capture takes
    ifaces = []
    node = None
    for ln in out.splitlines():
        if ln.startswith("node "):
            node = ln.split()[1]
        elif ln.strip().startswith("eth"):
            ifaces.append(f"{node}:{ln.split()[0]}")
    assert len(ifaces) == 8
    wirelab.validate(UDP, overrides={"measure.capture": ifaces})
