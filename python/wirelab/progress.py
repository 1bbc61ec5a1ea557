"""Progress bars with ETA on stderr: tqdm when installed, else a small built-in line.

Quiet when stderr is not a terminal unless asked (``enable=True``), so logs and CI output
stay clean.

>>> from wirelab.progress import Progress
>>> with Progress(total=16, desc="sweep", unit="run", enable=False) as p:
...     p.update(1)
"""
from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


def _fmt_secs(s: float) -> str:
    if s != s or s < 0:  # NaN
        return "?"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m:02d}:{sec:02d}"


class Progress:
    """A progress bar over ``total`` items, ``initial`` of which are already done.

    ``enable=None`` shows the bar only when ``stream`` (stderr) is a terminal. The ETA
    counts only items completed since the bar started (resumed items are not timed).
    """

    def __init__(self, total: float, desc: str = "", unit: str = "it", initial: float = 0,
                 enable: Optional[bool] = None, stream: Optional[TextIO] = None):
        self.total = total
        self.n = initial
        self.desc = desc
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        if enable is None:
            enable = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enable
        self._initial = self.n
        self._t0 = time.monotonic()
        self._last_draw = 0.0
        self._postfix = ""
        self._tqdm = None
        if self.enabled:
            try:
                from tqdm.auto import tqdm  # type: ignore
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._tqdm = tqdm(total=self.total, initial=self.n, desc=desc, unit=unit,
                                  file=self.stream, dynamic_ncols=True, smoothing=0.1)
            else:
                self._draw(force=True)

    def eta_seconds(self) -> float:
        """Estimated seconds to completion (NaN before the first item completes)."""
        done = self.n - self._initial
        if done <= 0:
            return float("nan")
        rate = done / max(time.monotonic() - self._t0, 1e-9)
        return (self.total - self.n) / rate

    def set_postfix(self, text: str) -> None:
        """Extra text after the bar (e.g. ``running 2, failed 0``)."""
        self._postfix = text
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(text, refresh=False)
        elif self.enabled:
            self._draw()

    def set(self, n: float) -> None:
        """Moves the bar to ``n`` (e.g. simulated seconds reached by a run)."""
        self.update(n - self.n)

    def update(self, n: float = 1) -> None:
        self.n += n
        if self._tqdm is not None:
            self._tqdm.update(n)
        elif self.enabled:
            self._draw(force=self.n >= self.total)

    def _line(self) -> str:
        pct = 100.0 * self.n / self.total if self.total else 100.0
        width = 24
        fill = int(width * self.n / self.total) if self.total else width
        bar = "#" * fill + "." * (width - fill)
        el = time.monotonic() - self._t0
        post = f" {self._postfix}" if self._postfix else ""
        num = (lambda v: f"{v:g}" if isinstance(v, float) else str(v))
        return (f"{self.desc}: {num(self.n)}/{num(self.total)} {self.unit}s [{bar}] {pct:3.0f}% "
                f"elapsed {_fmt_secs(el)} eta {_fmt_secs(self.eta_seconds())}{post}")

    def _draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_draw < 0.2:
            return
        self._last_draw = now
        self.stream.write("\r" + self._line() + "\x1b[K")
        self.stream.flush()

    def write(self, msg: str) -> None:
        """Prints a message line without breaking the bar."""
        if self._tqdm is not None:
            self._tqdm.write(msg, file=self.stream)
        elif self.enabled:
            self.stream.write("\r\x1b[K" + msg + "\n")
            self._draw(force=True)
        else:
            self.stream.write(msg + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
        elif self.enabled:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
            self.enabled = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
