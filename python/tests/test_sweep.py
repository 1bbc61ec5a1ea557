"""Sweeps: declaration, the resumable store (SIGKILL and resume), equal tables across
backends, parallel speed-up, progress."""
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import wirelab
import wirelab.sweep as ws
from wirelab.progress import Progress
from wirelab.sweep.spec import strip_sweep_table

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "udp-bottleneck.toml"

# no captures, no per-packet probe: a sweep keeps tables only
LEAN = {"measure.capture": [], "measure.queue_probe": [], "measure.sample_interval": "500ms"}


def sweep_file(tmp_path, duration="3s", seeds=(1, 2), name="sw.toml", extra=""):
    """2 bottlenecks x 2 zipped rate pairs x seeds, on the udp-bottleneck scenario."""
    sets = "\n".join(f'"{k}" = {json.dumps(v)}' for k, v in {**LEAN, "scenario.duration": duration}.items())
    p = tmp_path / name
    p.write_text(f"""scenario = "{QUICKSTART}"
seeds = {list(seeds)}
{extra}
[set]
{sets}
[grid]
"link.bottleneck.netem" = ["rate 10mbit delay 20ms loss 0.5%", "rate 5mbit delay 20ms"]
[zip]
"app.flow-a.rate" = ["2mbit", "4mbit"]
"app.flow-b.rate" = ["3mbit", "6mbit"]
""")
    return p


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "wirelab", *map(str, args)], capture_output=True, text=True, **kw)


# -- declaration ------------------------------------------------------------------------

def test_spec_expands_grid_zip_seeds(tmp_path):
    spec = ws.load(sweep_file(tmp_path, seeds=(1, 2, 3)))
    runs = spec.runs()
    assert len(runs) == 2 * 2 * 3
    assert spec.param_names == ["link.bottleneck.netem", "app.flow-a.rate", "app.flow-b.rate"]
    # zip keys advance together, seeds innermost, first grid key slowest
    assert {(r.params["app.flow-a.rate"], r.params["app.flow-b.rate"]) for r in runs} == {("2mbit", "3mbit"), ("4mbit", "6mbit")}
    assert [r.seed for r in runs[:3]] == [1, 2, 3]
    assert runs[0].params["link.bottleneck.netem"] == runs[5].params["link.bottleneck.netem"] != runs[6].params["link.bottleneck.netem"]
    assert len({r.key for r in runs}) == len(runs)
    # keys depend on content only: reordering the declaration keeps them
    d = {"scenario": str(QUICKSTART), "set": {**LEAN, "scenario.duration": "3s"}, "seeds": [1, 2, 3],
         "zip": {"app.flow-b.rate": ["3mbit", "6mbit"], "app.flow-a.rate": ["2mbit", "4mbit"]},
         "grid": {"link.bottleneck.netem": ["rate 10mbit delay 20ms loss 0.5%", "rate 5mbit delay 20ms"]}}
    assert {r.key for r in ws.load(d).runs()} == {r.key for r in runs}
    # ... and a different scenario changes every key
    d2 = {**d, "set": {**d["set"], "scenario.duration": "4s"}}
    assert not {r.key for r in ws.load(d2).runs()} & {r.key for r in runs}
    assert ws.load(d, seeds=None, repetitions=None).seeds == [1, 2, 3]
    assert ws.load({**{k: v for k, v in d.items() if k != "seeds"}, "repetitions": 4}).seeds == [1, 2, 3, 4]


@pytest.mark.parametrize("bad,msg", [
    ({"zip": {"a.b": [1, 2], "c.d": [1]}}, "equal lengths"),
    ({"grid": {"a.b": []}}, "non-empty list"),
    ({"grid": {"a.b": [1, 1]}}, "twice"),
    ({"seeds": [1, 2], "repetitions": 2}, "not both"),
    ({"seeds": [1, 1]}, "duplicates"),
    ({"grids": {}}, "unknown key"),
    ({"output": {"tables": ["flowz"]}}, "unknown output table"),
    ({"grid": {"a.b": [1]}, "set": {"a.b": 2}}, "more than once"),
])
def test_spec_errors(bad, msg):
    with pytest.raises(ws.SweepError, match=msg):
        ws.load({"scenario": str(QUICKSTART), **bad})


def test_sweep_table_inside_scenario(tmp_path):
    text = QUICKSTART.read_text() + '\n[sweep]\nseeds = [4, 5]\n[sweep.grid]\n"app.flow-a.rate" = ["1mbit", "2mbit"]\n'
    # put a table after [sweep] to check it survives the stripping
    text += '\n[[app]]\nname = "extra-sink"\nkind = "udp-sink"\nnode = "h3"\nport = 5009\n'
    sc = tmp_path / "with-sweep.toml"
    sc.write_text(text)
    stripped = strip_sweep_table(text)
    assert stripped.count("\n") == text.count("\n") and "[sweep" not in stripped and "extra-sink" in stripped
    df = ws.run(sc, out=tmp_path / "o", jobs=1, set={**LEAN, "scenario.duration": "2s"}, progress=False)
    assert sorted(df["seed"].unique()) == [4, 5]
    assert set(df["app.flow-a.rate"]) == {"1mbit", "2mbit"}
    assert "extra-sink" in set(df["name"])
    # the engine's error positions still point into the file
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('port = 5009', 'port = "x"'))
    line = bad.read_text().split('port = "x"')[0].count("\n") + 1
    with pytest.raises(wirelab.ScenarioError, match=f"bad.toml:{line}:"):
        ws.run(bad, out=tmp_path / "o2", jobs=1, set=LEAN, progress=False)


def test_bad_parameter_value_fails_before_running(tmp_path):
    f = sweep_file(tmp_path)
    f.write_text(f.read_text().replace('"4mbit"]', '"4 megabits"]'))
    p = cli("sweep", f, "--out", tmp_path / "o", "--jobs", "2")
    assert p.returncode == 2, p.stderr
    assert "app[0].rate" in p.stderr and "Traceback" not in p.stderr
    assert not list((tmp_path / "o" / "runs").iterdir())


# -- Python API ---------------------------------------------------------------------------

def test_python_api_returns_dataframe_with_params(tmp_path):
    df = ws.run(sweep_file(tmp_path), out=tmp_path / "o", jobs=2, progress=False)
    assert isinstance(df, pd.DataFrame) and df.attrs["sweep_dir"] == str(tmp_path / "o")
    assert list(df.columns[:5]) == ["run", "link.bottleneck.netem", "app.flow-a.rate", "app.flow-b.rate", "seed"]
    assert df["run"].nunique() == 8 and len(df) == 8 * 4  # 4 apps per run
    sinks = df[df["name"] == "sink-a"]
    # an uncongested 10 Mbit/s bottleneck delivers what flow-a sends (minus 0.5 % loss)
    ok = sinks[sinks["link.bottleneck.netem"].str.startswith("rate 10mbit")].groupby("app.flow-a.rate")["goodput_bps"].mean()
    assert ok["2mbit"] == pytest.approx(2e6, rel=0.05) and ok["4mbit"] == pytest.approx(4e6, rel=0.05)
    # the same run through wirelab.run gives the same numbers
    r0 = df.iloc[0]
    single = wirelab.run(QUICKSTART, seed=int(r0["seed"]), out=tmp_path / "single", overrides={
        **LEAN, "scenario.duration": "3s", "link.bottleneck.netem": r0["link.bottleneck.netem"],
        "app.flow-a.rate": r0["app.flow-a.rate"], "app.flow-b.rate": r0["app.flow-b.rate"]})
    sw = ws.open_sweep(tmp_path / "o")
    assert sw.complete and sw.result(r0["run"]).fingerprint == single.fingerprint
    assert (tmp_path / "o" / "flows.parquet").exists() or (tmp_path / "o" / "flows.csv").exists()
    summ = sw.summary
    assert len(summ) == 8
    lossy = summ[summ["link.bottleneck.netem"].str.contains("loss")]  # seeds matter only with loss
    assert len(lossy) == 4 and lossy["fingerprint"].nunique() == 4


def _tables(out):
    sw = ws.open_sweep(out)
    return {t: sw.table(t).drop(columns=["wall_seconds"], errors="ignore")
            for t in ["flows", "queues", "links", "flow_timeseries", "queue_timeseries", "summary"]}


def _assert_same_tables(a, b):
    for t in a:
        assert len(a[t]) > 0, t
        pd.testing.assert_frame_equal(a[t], b[t], obj=t)


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory):
    d = tmp_path_factory.mktemp("w1")
    f = sweep_file(d)
    ws.run(f, out=d / "o", jobs=1, progress=False)
    return f, _tables(d / "o")


def test_same_tables_with_1_and_2_workers(one_worker, tmp_path):
    f, t1 = one_worker
    ws.run(f, out=tmp_path / "o2", jobs=2, progress=False)
    _assert_same_tables(t1, _tables(tmp_path / "o2"))


def test_same_tables_with_ray(one_worker, tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'wirelab[ray]')")
    f, t1 = one_worker
    # the backend starts (and stops) a local Ray instance with 2 CPUs
    ws.run(f, out=tmp_path / "oray", backend="ray", jobs=2, progress=False)
    assert not ray.is_initialized()
    _assert_same_tables(t1, _tables(tmp_path / "oray"))
    runs = [json.loads(p.read_text()) for p in (tmp_path / "oray" / "runs").glob("*/run.json")]
    assert runs and {r["backend"] for r in runs} == {"ray"}


# -- the store: kill, resume, changed scenario ------------------------------------------------

def _done(out):
    d = Path(out) / "runs"
    return sorted(p.name for p in d.iterdir() if (p / "run.json").exists()) if d.exists() else []


def _fingerprint_dir(d):
    """(inode and mtime of run.json, hash of every file): changes if the run is redone."""
    h = hashlib.sha256()
    for p in sorted(d.rglob("*")):
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    st = (d / "run.json").stat()
    return st.st_ino, st.st_mtime_ns, h.hexdigest()


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def test_sigkill_at_several_points_then_resume(tmp_path):
    # 12 runs of ~0.15-0.3 s each on 2 workers
    f = sweep_file(tmp_path, duration="300s", seeds=(1, 2, 3))
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "wirelab", "sweep", str(f), "--out", str(out), "--jobs", "2", "--no-progress"]
    seen = {}
    kills = 0
    for target in (0, 3, 7):  # finished runs before the kill (0: as soon as the sweep started)
        p = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            if (out / "manifest.json").exists() and len(_done(out)) >= target and p.poll() is None:
                break
            if p.poll() is not None:
                break
            time.sleep(0.005)
        assert p.poll() is None, f"sweep ended before the kill point {target}: {p.stderr.read()}"
        if target == 3:
            # only the driver: its workers must not outlive it
            os.kill(p.pid, signal.SIGKILL)
            p.wait()
            t0 = time.monotonic()
            while _group_alive(p.pid) and time.monotonic() - t0 < 10:
                time.sleep(0.02)
            assert not _group_alive(p.pid), "workers outlived the killed sweep"
        else:
            os.killpg(p.pid, signal.SIGKILL)  # the driver and its workers, like a crash
            p.wait()
        kills += 1
        done = _done(out)
        assert len(done) < 12
        for k in done:  # every finished run is complete, and runs finished earlier are untouched
            fp = _fingerprint_dir(out / "runs" / k)
            assert json.loads((out / "runs" / k / "run.json").read_text())["key"] == k
            assert (out / "runs" / k / "summary.json").exists() and (out / "runs" / k / "flows.csv").exists()
            if k in seen:
                assert seen[k] == fp, f"run {k} was rewritten"
            seen[k] = fp
    assert kills == 3 and len(seen) >= 7
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"({len(seen)} already done, {12 - len(seen)} run, 0 failed)" in p.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    planned = [r["key"] for r in manifest["runs"]]
    assert sorted(os.listdir(out / "runs")) == sorted(planned)  # nothing extra, nothing missing
    assert not list((out / "tmp").iterdir())
    for k, fp in seen.items():
        assert _fingerprint_dir(out / "runs" / k) == fp
    summary = ws.open_sweep(out).summary
    assert list(summary["run"]) == planned  # one row per run, no duplicates
    # and the results equal an uninterrupted sweep's
    clean = tmp_path / "clean"
    ws.run(f, out=clean, jobs=2, progress=False)
    _assert_same_tables(_tables(clean), _tables(out))


def test_changed_scenario_is_detected(tmp_path):
    sc = tmp_path / "sc.toml"
    sc.write_text(QUICKSTART.read_text())
    f = sweep_file(tmp_path)
    f.write_text(f.read_text().replace(str(QUICKSTART), "sc.toml"))
    out = tmp_path / "o"

    def again(**kw):
        return ws.execute_sweep(ws.load(f, **kw), out, jobs=2, progress=False)

    o = again()
    assert (o.resumed, o.ran) == (0, 8)
    o = again()  # the same sweep again: nothing to do
    assert (o.resumed, o.ran) == (8, 0)
    # comments and layout do not change the scenario
    sc.write_text("# a comment\n\n" + QUICKSTART.read_text())
    assert again().resumed == 8
    # values do: refused, results untouched
    sc.write_text(QUICKSTART.read_text().replace("pfifo limit 100", "pfifo limit 50"))
    p = cli("sweep", f, "--out", out, "-j", "2")
    assert p.returncode == 2 and "different scenario" in p.stderr and "--force-new" in p.stderr
    assert len(_done(out)) == 8
    with pytest.raises(ws.SweepError, match="different scenario"):
        again()
    p = cli("sweep", f, "--out", out, "-j", "2", "--force-new")
    assert p.returncode == 0 and "(0 already done, 8 run, 0 failed)" in p.stderr, p.stderr
    # a grown sweep reuses the finished runs
    o = again(seeds=None, repetitions=3)
    assert (o.resumed, o.ran) == (8, 4)
    assert len(ws.open_sweep(out).summary) == 12


def test_failed_runs_are_recorded_and_retried(tmp_path, monkeypatch):
    from wirelab import _wirelab
    f = sweep_file(tmp_path)
    real = _wirelab.run

    def flaky(path, out, seed, overrides, text):
        if seed == 2 and "app.flow-a.rate=4mbit" in overrides:
            raise RuntimeError("worker ran out of memory")
        return real(path, out, seed, overrides, text)

    monkeypatch.setattr(_wirelab, "run", flaky)  # jobs=1 runs in this process
    with pytest.raises(ws.SweepError, match="2 of 8 runs failed.*out of memory"):
        ws.run(f, out=tmp_path / "o", jobs=1, progress=False)
    sw = ws.open_sweep(tmp_path / "o")
    assert len(sw.done) == 6 and len(sw.failures()) == 2
    assert {x["seed"] for x in sw.failures()} == {2}
    monkeypatch.setattr(_wirelab, "run", real)
    o = ws.execute_sweep(ws.load(f), tmp_path / "o", jobs=1, progress=False)
    assert (o.resumed, o.ran, o.failed) == (6, 2, [])
    assert ws.open_sweep(tmp_path / "o").failures() == []


def test_resume_cleans_leftovers(tmp_path):
    f = sweep_file(tmp_path)
    out = tmp_path / "o"
    ws.run(f, out=out, jobs=1, progress=False)
    keys = _done(out)
    # what a crash can leave: a scratch directory, a half-written table; and a stray
    # directory without run.json under runs/ that is not a finished run
    (out / "tmp" / "work-x").mkdir()
    (out / "tmp" / "work-x" / "flows.csv").write_text("partial")
    (out / ".flows.parquet.1234abcd.tmp").write_text("partial")
    import shutil
    shutil.copytree(out / "runs" / keys[0], tmp_path / "keep")
    shutil.rmtree(out / "runs" / keys[0])
    (out / "runs" / keys[0]).mkdir()
    (out / "runs" / keys[0] / "flows.csv").write_text("junk")
    o = ws.execute_sweep(ws.load(f), out, jobs=1, progress=False)
    assert (o.resumed, o.ran) == (7, 1)
    assert not list((out / "tmp").iterdir()) and not list(out.glob(".*.tmp"))
    assert (out / "runs" / keys[0] / "flows.csv").read_text() == (tmp_path / "keep" / "flows.csv").read_text()


def test_tables_fall_back_to_csv_without_pyarrow(tmp_path, monkeypatch):
    import wirelab.sweep.store as store
    monkeypatch.setattr(store, "parquet_available", lambda: False)
    df = ws.run(sweep_file(tmp_path), out=tmp_path / "o", jobs=1, progress=False)
    on_disk = pd.read_csv(tmp_path / "o" / "flows.csv")
    assert not (tmp_path / "o" / "flows.parquet").exists()
    assert list(on_disk.columns) == list(df.columns) and len(on_disk) == len(df) == 32
    assert (on_disk["goodput_bps"].to_numpy() == df["goodput_bps"].to_numpy()).all()


def test_second_sweep_in_same_dir_is_refused(tmp_path):
    f = sweep_file(tmp_path)
    spec = ws.load(f)
    st = ws.Store.create_or_resume(tmp_path / "o", spec, spec.runs())
    try:
        with pytest.raises(ws.SweepError, match="another sweep is running"):
            ws.run(f, out=tmp_path / "o", jobs=1, progress=False)
    finally:
        st.close()
    assert len(ws.run(f, out=tmp_path / "o", jobs=1, progress=False, table="summary")) == 8


# -- parallel speed-up ------------------------------------------------------------------------

@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs 2 cores")
def test_16_runs_on_2_workers_take_about_half_the_time(tmp_path):
    # 16 runs of ~0.4 s (400 s simulated each): process start-up does not dominate
    d = {"scenario": str(QUICKSTART), "set": {**LEAN, "scenario.duration": "400s", "measure.sample_interval": "2s"},
         "grid": {"app.flow-a.rate": ["2mbit", "3mbit", "4mbit", "5mbit"]}, "repetitions": 4}
    tries = []
    for attempt in range(2):  # one retry on noise
        t = {}
        for jobs in (1, 2):
            out = tmp_path / f"j{jobs}-{attempt}"
            t0 = time.monotonic()
            df = ws.run(d, out=out, jobs=jobs, progress=False, table="summary")
            t[jobs] = time.monotonic() - t0
            assert len(df) == 16
        # CPU the runs of the 2-worker sweep got per wall second: 2 when the machine is ours
        cpu = sum(json.loads(p.read_text())["cpu_seconds"] for p in out.glob("runs/*/run.json"))
        t["cores"] = cpu / t[2]
        tries.append(t)
        print(f"16 runs: 1 worker {t[1]:.2f} s, 2 workers {t[2]:.2f} s, ratio {t[2] / t[1]:.2f}, "
              f"cores used {t['cores']:.2f}")
        if t[2] <= 0.75 * t[1]:
            break
    best = min(tries, key=lambda t: t[2] / t[1])
    assert best[1] > 3, "runs too short to measure"
    # The claim needs two free cores. When other processes hold them (the 2-worker sweep's
    # runs got < 1.4 CPU-seconds per wall second), a speed-up cannot be measured: skip, in
    # CI too, rather than report a machine problem as a sweep failure.
    if best[2] > 0.75 * best[1] and best["cores"] < (1.4 if os.environ.get("CI") else 1.6):
        pytest.skip(f"the machine is shared: 2 workers got only {best['cores']:.2f} cores "
                    f"(1 worker {best[1]:.2f} s, 2 workers {best[2]:.2f} s)")
    assert best[2] <= 0.75 * best[1]


# -- progress ----------------------------------------------------------------------------------

def test_progress_line_has_eta(monkeypatch):
    import builtins
    real = builtins.__import__

    def no_tqdm(name, *a, **kw):
        if name.startswith("tqdm"):
            raise ImportError
        return real(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    buf = io.StringIO()
    p = Progress(total=4, desc="sweep x", unit="run", initial=1, enable=True, stream=buf)
    time.sleep(0.05)
    p.update(1)
    assert 0 < p.eta_seconds() < 10
    p.update(2)
    p.close()
    text = buf.getvalue()
    assert "sweep x: 4/4 runs" in text and "eta 00:00" in text and "eta ?" in text
    quiet = io.StringIO()  # not a terminal: silent unless asked
    Progress(total=2, stream=quiet).update(2)
    assert quiet.getvalue() == ""


def test_cli_progress_bar_when_forced(tmp_path):
    p = cli("sweep", sweep_file(tmp_path), "--out", tmp_path / "o", "-j", "2", "--progress")
    assert p.returncode == 0, p.stderr
    assert "sweep sw" in p.stderr and "8/8" in p.stderr
    # not a terminal: no bar (the other CLI tests run without --progress)
    p = cli("sweep", sweep_file(tmp_path), "--out", tmp_path / "o", "-j", "2")
    assert p.returncode == 0 and "8/8" not in p.stderr and "(8 already done" in p.stderr


def test_sweep_in_a_plain_script_without_main_guard(tmp_path):
    """Issue 21 item 2: a sweep at the top level of a script (no `if __name__ ==
    "__main__":`) runs once, on 2 worker processes, instead of every worker re-running
    the script (BrokenProcessPool, then "another sweep is running")."""
    script = tmp_path / "plain.py"
    script.write_text(
        "import wirelab.sweep\n"
        f"df = wirelab.sweep.run({str(QUICKSTART)!r}, out='o', jobs=2, progress=False,\n"
        "                       grid={'app.flow-a.rate': ['1mbit', '2mbit']}, seeds=[1, 2],\n"
        "                       set={'scenario.duration': '1s', 'measure.capture': []})\n"
        "print('script body ran; rows', len(df))\n")
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.count("script body ran") == 1, p.stdout
    assert "rows 16" in p.stdout  # 2 values x 2 seeds x 4 apps
    sw = ws.open_sweep(tmp_path / "o")
    assert sw.complete and len(sw.done) == 4


def test_the_documented_sweep_file_exists_and_expands():
    """docs/sweeps.md's example names sweeps/bottleneck.toml: it exists, holds the 36 runs the
    docs count, and every configuration is a valid scenario."""
    doc = (ROOT / "docs" / "sweeps.md").read_text()
    assert "sweeps/bottleneck.toml" in doc
    spec = ws.load(ROOT / "sweeps" / "bottleneck.toml")
    runs = spec.runs()
    assert len(runs) == 36 and spec.name == "bottleneck"
    for r in runs[::3]:
        wirelab.validate(ROOT / "scenarios" / "udp-bottleneck.toml",
                         overrides={**{"scenario.duration": "30s"}, **r.params})
