"""Numbers in human units, as ``tc`` and ``ss`` print them: ``2.84 Mbit/s``, ``12.3 MB``."""
from __future__ import annotations


def human_rate(bps: float) -> str:
    """``2.84 Mbit/s`` (three significant digits, tc's unit names)."""
    if bps is None or bps != bps:
        return ""
    for scale, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if abs(bps) >= scale:
            return f"{_sig3(bps / scale)} {unit}"
    return f"{_sig3(bps)} bit/s"


def human_bytes(b: float) -> str:
    """``12.3 MB``, ``512 B`` (decimal units)."""
    if b is None or b != b:
        return ""
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(b) >= scale:
            return f"{_sig3(b / scale)} {unit}"
    return f"{int(b)} B"


def _sig3(v: float) -> str:
    a = abs(v)
    return f"{v:.0f}" if a >= 100 else f"{v:.1f}" if a >= 10 else f"{v:.2f}"
