"""Issue 21 item 8: a run's tables move from Rust to pandas as Arrow (the C stream
interface, PyCapsule ``arrow_array_stream``) when ``wirelab.run()`` runs in this process,
instead of a CSV round trip; the DataFrames are the ones ``pd.read_csv`` gives for the
files the run wrote (which stay as they are), dtypes and values. Without pyarrow the
CSV files are read, with the same result."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

import wirelab
from wirelab.result import TABLES

ROOT = Path(__file__).resolve().parents[2]
pa = pytest.importorskip("pyarrow", reason="pyarrow (wirelab[parquet]) is not installed")

# scenario, overrides: between them every table a run writes (queue_probe and tcp from
# the quickstart, HTB classes in queues.csv, SCTP, receiver rate control, shim matches
# and tcp-rr latency)
CASES = {
    "quickstart": ("quickstart.toml", {"scenario.duration": "4s"}),
    "htb": ("sndbuf-prio/htb-20.toml", {"scenario.duration": "3s"}),
    "sctp": ("sctp-autotune/echo.toml", {"scenario.duration": "3s"}),
    "rate": ("rate-control/mss-midstream.toml", {"scenario.duration": "9s"}),
    "shim": ("shim/interactive.toml", {"scenario.duration": "10s"}),
}


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """Per case: (Result of wirelab.run(): Arrow path, Result(out): reads the CSV files)."""
    out = {}
    for name, (file, sets) in CASES.items():
        d = tmp_path_factory.mktemp(name)
        res = wirelab.run(ROOT / "scenarios" / file, overrides={**sets, "measure.capture": []}, out=d, progress=False)
        assert res._tables is not None, "wirelab.run() kept no tables in memory"
        out[name] = (res, wirelab.Result(d))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_arrow_frames_equal_csv_frames(pairs, name):
    """Every table: same columns, dtypes and values as read_csv of the file the run wrote,
    and it did come through Arrow (the rows were taken from Rust)."""
    res, disk = pairs[name]
    assert disk._tables is None
    seen = 0
    for t in TABLES:
        if not (res.out_dir / f"{t}.csv").exists():
            continue
        a, c = getattr(res, t), getattr(disk, t)
        if len(c):
            seen += 1
            assert res._tables.take(t) is None, f"{name}/{t} was not taken as Arrow"
        # exact, floats too: the CSV holds the shortest round-trip form of each f64
        pd.testing.assert_frame_equal(a, c, check_exact=True, obj=f"{name}/{t}")
    assert seen >= 5, name


def test_every_table_is_covered(pairs):
    """Between the cases, every table a run can write has rows in at least one (fails if a
    table is added without a case here that writes it)."""
    written = {t for res, _ in pairs.values() for t in TABLES if len(getattr(res, t))}
    assert written == set(TABLES), f"no case writes {sorted(set(TABLES) - written)}"


def test_the_capsule_is_the_arrow_c_stream_interface(tmp_path):
    """Any Arrow consumer reads a table through ``__arrow_c_stream__`` (here pyarrow's
    RecordBatchReader), with the CSV file's column names and order."""
    res = wirelab.run(ROOT / "scenarios" / "quickstart.toml", overrides={"scenario.duration": "2s"}, out=tmp_path, progress=False)
    t = res._tables.take("queue_probe")
    assert len(t) > 1000 and t.columns == (tmp_path / "queue_probe.csv").read_text().split("\n", 1)[0].split(",")
    cap = t.__arrow_c_stream__()
    assert type(cap).__name__ == "PyCapsule" and "arrow_array_stream" in repr(cap)
    reader = pa.RecordBatchReader.from_stream(t)
    tab = reader.read_all()
    assert tab.num_rows == len(t) and tab.column_names == t.columns
    assert tab.schema.field("time_ns").type == pa.int64() and tab.schema.field("event").type == pa.string()
    # the object can be read again (each call hands out a new stream of the same batch)
    assert pa.table(t).equals(tab)


def test_without_pyarrow_the_csv_files_are_read(tmp_path, monkeypatch):
    """No pyarrow (it is the optional wirelab[parquet] extra): wirelab.run() keeps no
    tables in memory and Result reads the CSV files; the frames are the same."""
    sets = {"scenario.duration": "2s", "measure.capture": []}
    with_arrow = wirelab.run(ROOT / "scenarios" / "quickstart.toml", overrides=sets, out=tmp_path / "a", progress=False)
    names = ["flows", "connections", "tcp_timeseries", "queue_probe", "queues"]
    frames = {t: getattr(with_arrow, t) for t in names}
    from wirelab import runner
    from wirelab.result import have_arrow

    with monkeypatch.context() as m:
        m.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` raises ImportError
        assert not have_arrow()
    # pandas itself may use pyarrow (string storage), so only wirelab is told it is missing
    monkeypatch.setattr(runner, "have_arrow", lambda: False)
    without = wirelab.run(ROOT / "scenarios" / "quickstart.toml", overrides=sets, out=tmp_path / "b", progress=False)
    assert without._tables is None
    for t in names:
        pd.testing.assert_frame_equal(frames[t], getattr(without, t), check_exact=True, obj=t)


def test_csv_like_follows_read_csv():
    """The rules that make a typed table read as read_csv reads its CSV text: missing-value
    strings, all-missing and all-null columns, numeric strings, nullable integers."""
    import io

    from wirelab.result import csv_like

    t = pa.table({"s": ["a", "", "NA", "b"], "allna": ["", "", None, "NA"], "num": ["1", "2", "", "3"],
                  "int": ["1", "2", "3", "4"], "f": ["1.5", "2", "inf", "-3e2"], "n": pa.nulls(4),
                  "i": pa.array([1, None, 3, 4], pa.int64()), "b": [True, False, True, False]})
    text = "s,allna,num,int,f,n,i,b\na,,1,1,1.5,,1,true\n,,2,2,2,,,false\nNA,,,3,inf,,3,true\nb,NA,3,4,-3e2,,4,false\n"
    pd.testing.assert_frame_equal(csv_like(t).to_pandas(), pd.read_csv(io.StringIO(text)), check_exact=True)
