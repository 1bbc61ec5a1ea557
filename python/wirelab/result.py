"""A run's results as DataFrames."""
from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

import pandas as pd


class Result:
    """The outputs of one run, loaded lazily from its output directory.

    Tables are tidy pandas DataFrames (one row per sample); column names follow
    ``tcp_info``/``ss`` and ``tc -s`` spelling.
    """

    def __init__(self, out_dir: Path):
        self.out_dir = Path(out_dir)

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
        p = self.out_dir / name
        if not p.exists() or p.stat().st_size == 0:
            return pd.DataFrame()
        return pd.read_csv(p)

    @cached_property
    def flows(self) -> pd.DataFrame:
        """Per-application totals."""
        return self._csv("flows.csv")

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
        """Writes every table as Parquet beside its CSV (needs ``pyarrow``)."""
        written = []
        for name in ["flows", "queues", "links", "flow_timeseries", "queue_timeseries", "queue_probe",
                     "tcp_timeseries", "sctp_timeseries", "sctp_path_timeseries", "tcp_rate_timeseries",
                     "shim_matches", "rr_latency"]:
            df = getattr(self, name)
            if len(df.columns):
                p = self.out_dir / f"{name}.parquet"
                df.to_parquet(p, index=False)
                written.append(p)
        return written
