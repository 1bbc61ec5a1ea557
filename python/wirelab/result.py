"""A run's results as DataFrames."""
from __future__ import annotations

import json
import shutil
from functools import cached_property
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from .exceptions import WirelabError

#: Every table a run may write (``NAME.csv``), as ``wirelab-run``'s ``output::TABLES``.
TABLES = ["flows", "connections", "queues", "links", "flow_timeseries", "queue_timeseries", "queue_probe",
          "tcp_timeseries", "sctp_timeseries", "sctp_path_timeseries", "tcp_rate_timeseries", "shim_matches",
          "rr_latency"]


#: what ``pd.read_csv`` reads as a missing value by default (its ``na_values``)
_CSV_NA = frozenset(["", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                     "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"])


def have_arrow() -> bool:
    """pyarrow new enough to read the Arrow C stream interface (``__arrow_c_stream__``)."""
    try:
        import pyarrow as pa
    except ImportError:
        return False
    return int(pa.__version__.split(".")[0]) >= 14


def from_arrow(tables, name: str) -> Optional[pd.DataFrame]:
    """Table ``name`` of an in-process run, moved from Rust as Arrow (the C stream
    interface: no CSV written and parsed again), as the same DataFrame ``pd.read_csv``
    gives for its file; ``None`` if the run has no rows for it (read the file)."""
    import pyarrow as pa

    t = tables.take(name)
    if t is None:
        return None
    table = csv_like(pa.table(t))
    del t  # the Rust buffers now belong to pyarrow alone: freed as columns convert
    df = table.to_pandas(split_blocks=True, self_destruct=True)
    for c in df.columns:  # a nullable bool column: read_csv's missing cells are NaN
        if df[c].dtype == object:
            df[c] = df[c].where(df[c].notna(), np.nan)
    return df


_INT = r"^[+-]?[0-9]+$"
_FLOAT = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$|^[+-]?(inf|Inf|INF|infinity|Infinity)$"


def csv_like(table):
    """Gives an Arrow table the types and values ``pd.read_csv`` infers from the same
    table written as CSV: strings it reads as missing (``""``, ``NA``, ``None``, ...)
    become null, a column of only those is float64 (as is an all-null column), and a
    string column whose values are all numbers is int64 (float64 with nulls or
    fractions). Decided on each column's distinct values, in Arrow's compute kernels."""
    import pyarrow as pa
    import pyarrow.compute as pc

    na_values = pa.array(sorted(_CSV_NA))
    for i, f in enumerate(table.schema):
        col = table.column(i)
        if pa.types.is_null(f.type):
            table = table.set_column(i, f.name, pa.nulls(len(col), pa.float64()))
            continue
        if not (pa.types.is_string(f.type) or pa.types.is_large_string(f.type)):
            continue
        u = pc.unique(col)
        na_u = pc.or_kleene(pc.is_null(u), pc.is_in(u, value_set=na_values.cast(f.type)))
        if pc.all(na_u).as_py():
            table = table.set_column(i, f.name, pa.nulls(len(col), pa.float64()))
            continue
        rest = pc.filter(u, pc.invert(na_u))
        has_na = pc.any(na_u).as_py()
        if has_na:
            col = pc.if_else(pc.is_in(col, value_set=na_values.cast(f.type)), pa.scalar(None, f.type), col)
        if pc.all(pc.match_substring_regex(rest, _INT)).as_py():
            col = pc.cast(col, pa.float64() if has_na else pa.int64())
        elif pc.all(pc.match_substring_regex(rest, _FLOAT)).as_py():
            col = pc.cast(col, pa.float64())
        elif not has_na:
            continue
        table = table.set_column(i, f.name, col)
    return table


class Result:
    """The outputs of one run, loaded lazily from its output directory.

    Tables are tidy pandas DataFrames (one row per sample); column names follow
    ``tcp_info``/``ss`` and ``tc -s`` spelling. ``res.plot.cwnd()`` and the other methods
    of :mod:`wirelab.plots` draw them; in Jupyter a Result shows itself as a summary with
    plots.

    Raises :class:`FileNotFoundError` if ``out_dir`` is not the output of a run (it has no
    ``summary.json``).
    """

    def __init__(self, out_dir: Path, _owner: Optional[object] = None, _tables: Optional[object] = None):
        self.out_dir = Path(out_dir)
        # a temporary directory this Result owns (wirelab.run() without out=): removed when
        # the Result is garbage-collected or the interpreter exits
        self._owner = _owner
        # the run's tables still in Rust memory (wirelab.run() in this process, pyarrow
        # installed): each is taken once as Arrow instead of parsing its CSV file
        self._tables = _tables
        if not (self.out_dir / "summary.json").is_file():
            why = "does not exist" if not self.out_dir.exists() else "has no summary.json"
            raise FileNotFoundError(f"{self.out_dir}: not the output directory of a wirelab run ({why})")

    @property
    def plot(self):
        """Plots of this run: ``res.plot.cwnd()``, ``.srtt()``, ``.rate()``, ``.delivery_rate()``,
        ``.goodput()``, ``.latency_cdf()``, ``.queue_delay()``, ``.queue()`` (each takes ``ax=``)."""
        from .plots import PlotAccessor
        return PlotAccessor(self)

    def save(self, dest) -> "Result":
        """Copies the outputs to ``dest`` (which must not exist) and returns a Result there:
        keeps a run made without ``out=`` beyond this Result's lifetime."""
        dest = Path(dest)
        shutil.copytree(self.out_dir, dest)
        return Result(dest)

    def _repr_html_(self) -> str:
        from .report.notebook import result_html
        return result_html(self)

    def __repr__(self) -> str:
        s = self.summary
        return (f"<wirelab.Result {s['scenario']['name']!r} seed={s['seed']} "
                f"sim={s['sim_seconds']:.3f}s fingerprint={s['fingerprint']} dir={str(self.out_dir)!r}>")

    @cached_property
    def summary(self) -> dict:
        """``summary.json`` as a dict."""
        return json.loads((self.out_dir / "summary.json").read_text())

    @property
    def fingerprint(self) -> str:
        return self.summary["fingerprint"]

    def _csv(self, name: str) -> pd.DataFrame:
        if self._tables is not None:
            df = from_arrow(self._tables, name[:-len(".csv")])
            if df is not None:
                return df
        p = self.out_dir / name
        if not p.exists() or p.stat().st_size == 0:
            return pd.DataFrame()
        return pd.read_csv(p)

    @cached_property
    def flows(self) -> pd.DataFrame:
        """Per-application totals."""
        return self._csv("flows.csv")

    @cached_property
    def connections(self) -> pd.DataFrame:
        """One row per TCP connection: 5-tuple, client and server app, bytes, receiver
        goodput, retransmissions of each end, min/mean/max RTT, flow completion time."""
        return self._csv("connections.csv")

    @cached_property
    def latency(self) -> pd.DataFrame:
        """Per-packet latency samples ``name, latency_ms, what`` for the latency CDF: the
        application delay of TCP flows whose sender and receiver were both captured
        (``wirelab analyze``), else the queueing delay per flow at probed queues, else
        the sampled srtt of sending sockets."""
        from .report.latency import latency_samples
        return latency_samples(self)

    @cached_property
    def queues(self) -> pd.DataFrame:
        """Per-queue (and per-class) totals, like ``tc -s qdisc/class show``."""
        return self._csv("queues.csv")

    @cached_property
    def links(self) -> pd.DataFrame:
        """Per-link-direction totals."""
        return self._csv("links.csv")

    @cached_property
    def flow_timeseries(self) -> pd.DataFrame:
        """Per-application rates sampled every ``measure.sample_interval``."""
        return self._csv("flow_timeseries.csv")

    @cached_property
    def queue_timeseries(self) -> pd.DataFrame:
        """Per-queue length/backlog/drops sampled every ``measure.sample_interval``."""
        return self._csv("queue_timeseries.csv")

    @cached_property
    def tcp_timeseries(self) -> pd.DataFrame:
        """Per-TCP-socket ``tcp_info`` samples (cwnd, ssthresh, srtt_ms, rto_ms, ...)."""
        return self._csv("tcp_timeseries.csv")

    @cached_property
    def sctp_timeseries(self) -> pd.DataFrame:
        """Per-SCTP-association samples (cwnd, flight, rwnd, sndbuf, rcvbuf, occupancy, ...)."""
        return self._csv("sctp_timeseries.csv")

    @cached_property
    def sctp_path_timeseries(self) -> pd.DataFrame:
        """Per-SCTP-path samples (state, cwnd, rto, srtt, error count)."""
        return self._csv("sctp_path_timeseries.csv")

    @cached_property
    def tcp_rate_timeseries(self) -> pd.DataFrame:
        """Receiver-side rate control (``net.ipv4.rate_*``): per controlled connection and
        sample, the measured rate and the window offered (``/proc/net/tcp_rate`` columns)."""
        return self._csv("tcp_rate_timeseries.csv")

    @cached_property
    def shim_matches(self) -> pd.DataFrame:
        """TCP-to-SCTP shim rule decisions: which rule matched which connection (chain,
        address, ``#i rule`` or ``default``, policy) and the transport it ended up on."""
        return self._csv("shim_matches.csv")

    @cached_property
    def rr_latency(self) -> pd.DataFrame:
        """Every completed ``tcp-rr`` transaction: ``flow``, ``start_s`` (request written),
        ``latency_ms`` (request written → whole response read), whatever the transport."""
        return self._csv("rr_latency.csv")

    @cached_property
    def queue_probe(self) -> pd.DataFrame:
        """Per-packet enqueue/dequeue/drop records of probed queues."""
        return self._csv("queue_probe.csv")

    @property
    def pcaps(self) -> list[Path]:
        """Capture files written by the run."""
        return sorted((self.out_dir / "pcap").glob("*.pcap*")) if (self.out_dir / "pcap").exists() else []

    def to_parquet(self) -> list[Path]:
        """Writes every table as Parquet beside its CSV (needs ``pyarrow``:
        ``pip install 'wirelab[parquet]'``)."""
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise WirelabError("Result.to_parquet() needs pyarrow: pip install 'wirelab[parquet]'") from None
        written = []
        for name in TABLES:
            df = getattr(self, name)
            if len(df.columns):
                p = self.out_dir / f"{name}.parquet"
                df.to_parquet(p, index=False)
                written.append(p)
        return written
