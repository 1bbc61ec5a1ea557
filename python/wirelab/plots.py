"""Plots of one run, shared by ``Result.plot`` (Jupyter) and the HTML report.

Every function takes a :class:`wirelab.Result` and an optional matplotlib ``ax`` and returns
the ``Axes`` it drew on (``None`` when the run has nothing to show). Units are human
(Mbit/s, ms); rates are smoothed over ``smooth`` seconds because a TCP sender's 100 ms
samples swing between zero and the line rate.

>>> res = wirelab.run("scenarios/quickstart.toml", out="results/quickstart")
>>> res.plot.cwnd()            # congestion window of every sending socket
>>> res.plot.latency_cdf()     # thin streams' application delay (or queueing delay)
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from .units import human_rate

MAX_LINES = 12  # more series than this make a plot unreadable; the rest is in the tables


def _plt():
    import matplotlib.pyplot as plt  # the backend matplotlib picks (inline in Jupyter, Agg headless)
    return plt


def _ax(ax, size=(8, 3.2)):
    if ax is not None:
        return ax
    fig, ax = _plt().subplots(figsize=size)
    return ax


def _finish(ax, title: str, xlabel: str, ylabel: str, n: int, legend_cols: int = 1):
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if n:
        ax.legend(fontsize=7, ncol=legend_cols, loc="best")
    return ax


def sender_sockets(tcp: pd.DataFrame) -> pd.DataFrame:
    """Rows of sockets that sent data (a sink's socket only ACKs: its cwnd and srtt are
    flat lines that say nothing)."""
    if tcp is None or not len(tcp) or "bytes_acked" not in tcp.columns:
        return tcp
    keys = [k for k in ("run", "flow", "node", "sock") if k in tcp.columns]
    return tcp[tcp.groupby(keys)["bytes_acked"].transform("max") > 0]


def _socket_series(tcp: pd.DataFrame):
    keys = [k for k in ("flow", "node", "sock") if k in tcp.columns]
    multi = tcp.groupby("flow")["sock"].transform("nunique") > 1 if "sock" in tcp.columns else None
    for k, g in tcp.groupby(keys, sort=True):
        name = k[0] if isinstance(k, tuple) else k
        if multi is not None and multi.loc[g.index].any():
            name = f"{name}#{g['sock'].iloc[0]}"
        yield name, g


def cwnd(res, ax=None, column: str = "cwnd", ylabel: str = "cwnd (segments)", title: str = "Congestion window"):
    """``tcp_info`` column over time for every sending TCP socket (SCTP associations too)."""
    tcp = sender_sockets(res.tcp_timeseries)
    sctp = res.sctp_timeseries
    if (tcp is None or not len(tcp) or column not in tcp.columns) and (not len(sctp) or column not in sctp.columns):
        return None
    ax = _ax(ax)
    n = 0
    if tcp is not None and len(tcp) and column in tcp.columns:
        for name, g in _socket_series(tcp):
            if n >= MAX_LINES:
                break
            ax.plot(g["time_s"], g[column], drawstyle="steps-post", lw=1.1, label=name)
            n += 1
    if len(sctp) and column in sctp.columns:
        for name, g in sctp.groupby("flow", sort=True):
            if n >= MAX_LINES:
                break
            ax.plot(g["time_s"], g[column], drawstyle="steps-post", lw=1.1, label=f"sctp {name}")
            n += 1
    return _finish(ax, title, "time (s)", ylabel, n, legend_cols=2 if n > 4 else 1)


def srtt(res, ax=None):
    """Smoothed RTT over time for every sending socket."""
    return cwnd(res, ax, column="srtt_ms", ylabel="srtt (ms)", title="Smoothed RTT")


def rate(res, ax=None, smooth: float = 1.0, direction: str = "rx"):
    """Receive (``direction="rx"``) or send rate per application, as a moving average over
    ``smooth`` seconds of the ``flow_timeseries`` samples."""
    ts = res.flow_timeseries
    col = f"{direction}_rate_bps"
    if not len(ts) or col not in ts.columns:
        return None
    ts = ts[ts.groupby("flow")[f"{direction}_bytes"].transform("max") > 0]
    if not len(ts):
        return None
    ax = _ax(ax)
    n = 0
    for name, g in ts.groupby("flow", sort=False):
        if n >= MAX_LINES:
            break
        dt = float(np.median(np.diff(g["time_s"]))) if len(g) > 1 else 1.0
        w = max(1, int(round(smooth / dt))) if dt > 0 else 1
        ax.plot(g["time_s"], g[col].rolling(w, min_periods=1).mean() / 1e6, lw=1.2, label=name)
        n += 1
    what = "Receive" if direction == "rx" else "Send"
    return _finish(ax, f"{what} rate per app ({smooth:g} s moving average)", "time (s)", "Mbit/s", n,
                   legend_cols=2 if n > 4 else 1)


def delivery_rate(res, ax=None):
    """``tcpi_delivery_rate`` of every sending socket: the rate the sender measured from
    its ACKs (Linux's ``tcp_rate_gen()``), smooth where the app's send counter is bursty."""
    tcp = sender_sockets(res.tcp_timeseries)
    if tcp is None or not len(tcp) or "delivery_rate_bps" not in tcp.columns:
        return None
    tcp = tcp.assign(delivery_rate_mbit=tcp["delivery_rate_bps"] / 1e6)
    ax = _ax(ax)
    n = 0
    for name, g in _socket_series(tcp):
        if n >= MAX_LINES:
            break
        ax.plot(g["time_s"], g["delivery_rate_mbit"], lw=1.1, label=name)
        n += 1
    return _finish(ax, "Delivery rate (tcp_info)", "time (s)", "Mbit/s", n, legend_cols=2 if n > 4 else 1)


def goodput(res, ax=None):
    """Receiver goodput of every TCP connection (``connections.csv``), or of every sink."""
    c = res.connections
    if len(c):
        labels = c["client"].where(c["client"].astype(str) != "", c["server"]).astype(str)
        vals = c["goodput_bps"] / 1e6
    else:
        f = res.flows
        if not len(f):
            return None
        f = f[f["goodput_bps"] > 0]
        labels, vals = f["name"].astype(str), f["goodput_bps"] / 1e6
    if not len(vals):
        return None
    ax = _ax(ax)
    y = np.arange(len(vals))
    ax.barh(y, vals, color=[f"C{i % 10}" for i in range(len(vals))])
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, float(vals.max()) * 1.28 or 1)  # room for the value labels
    for i, v in enumerate(vals):
        ax.text(v, i, " " + human_rate(v * 1e6), va="center", fontsize=7)
    ax.set_title("Goodput per connection (receiver)", fontsize=10)
    ax.set_xlabel("Mbit/s")
    ax.grid(alpha=0.3, axis="x")
    return ax


def _ecdf(ax, values, label):
    v = np.sort(np.asarray(values, dtype=float))
    v = v[~np.isnan(v)]
    if not len(v):
        return False
    ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", lw=1.3, label=label)
    return True


def _log_x_axis(ax, span: float) -> None:
    """A log axis labelled in plain numbers (``20 50 100 200``) at 1-2-5 steps (1 per
    decade beyond three decades), unlabelled minor ticks between: matplotlib's default
    labels minor ticks too (``2×10¹ 3×10¹ 4×10¹``) when the axis spans about a decade,
    and those labels run into each other."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    axis = ax.xaxis
    subs = (1.0, 2.0, 5.0) if span <= 1e3 else (1.0,)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    axis.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10))))
    axis.set_minor_formatter(NullFormatter())


def latency_cdf(res, ax=None):
    """CDF of the latency that matters most in the run: the application delay of each
    captured TCP flow (sender and receiver captured: ``wirelab analyze``'s ``app_delay``),
    else each flow's queueing delay at the probed queues, else sampled srtt per socket."""
    lat = res.latency
    if len(lat):
        ax = _ax(ax)
        n = 0
        for name, g in lat.groupby("name", sort=False):
            if n >= MAX_LINES:
                break
            n += _ecdf(ax, g["latency_ms"], name)
        what = lat["what"].iloc[0]
        ax.set_ylim(0, 1.02)
        v = lat["latency_ms"].to_numpy(dtype=float)
        v = v[np.isfinite(v) & (v > 0)]
        # delays of 20 ms and 1 s in one plot: a log axis keeps both readable
        if len(v) and v.max() / max(v.min(), 1e-3) > 20:
            _log_x_axis(ax, v.max() / max(v.min(), 1e-3))
        return _finish(ax, f"CDF of {what}", f"{what} (ms)", "fraction ≤ x", n)
    return None


def queue_delay(res, ax=None, smooth: float = 0.5):
    """Queueing (sojourn) delay over time at each probed queue, per packet (dots) with a
    ``smooth``-second moving median (line)."""
    probe = res.queue_probe
    if not len(probe):
        return None
    deq = probe[probe["event"] == "dequeue"]
    if not len(deq):
        return None
    ax = _ax(ax)
    n = 0
    for i, (dev, g) in enumerate(deq.groupby("dev", sort=True)):
        if n >= MAX_LINES:
            break
        t = g["time_ns"].to_numpy() / 1e9
        d = g["sojourn_ns"].to_numpy() / 1e6
        ax.plot(t, d, ".", ms=1, alpha=0.25, color=f"C{i}")
        s = pd.Series(d, index=pd.to_datetime(t, unit="s")).rolling(f"{int(smooth * 1000)}ms").median()
        ax.plot(t, s.to_numpy(), lw=1.4, color=f"C{i}", label=dev)
        n += 1
    return _finish(ax, f"Queueing delay per packet (probe; line: {smooth:g} s moving median)", "time (s)", "ms", n)


def queue(res, ax=None):
    """Queue length over time (sampled) of every queue that ever held a packet."""
    qs = res.queue_timeseries
    if not len(qs):
        return None
    busy = qs[qs.groupby("dev")["backlog"].transform("max") > 0]
    if not len(busy):
        return None
    ax = _ax(ax)
    n = 0
    for dev, g in busy.groupby("dev", sort=True):
        if n >= MAX_LINES:
            break
        ax.plot(g["time_s"], g["qlen"], lw=1.1, label=dev)
        n += 1
    return _finish(ax, "Queue length (sampled)", "time (s)", "packets queued", n)


class PlotAccessor:
    """``res.plot.NAME(ax=None)``: the plots of :mod:`wirelab.plots` bound to one result."""

    def __init__(self, res):
        self._res = res

    def __dir__(self):
        return ["cwnd", "srtt", "rate", "delivery_rate", "goodput", "latency_cdf", "queue_delay", "queue"]

    def __getattr__(self, name):
        if name.startswith("_") or name not in self.__dir__():
            raise AttributeError(name)
        fn = globals()[name]

        def bound(*a, **k):
            return fn(self._res, *a, **k)

        bound.__doc__ = fn.__doc__
        bound.__name__ = name
        return bound
