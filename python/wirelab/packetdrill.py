"""Run packetdrill scripts against wirelab's TCP engine (docs/packetdrill.md).

>>> import wirelab
>>> [r] = wirelab.packetdrill("crates/wirelab-packetdrill/scripts/thin-linear-timeouts.pkt")
>>> r.passed, r.status
(True, 'pass')
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

from . import _wirelab

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class PacketdrillResult:
    """The outcome of one script.

    ``status`` is ``pass``, ``fail`` (the stack did something else), ``parse_error`` or
    ``unsupported`` (named in ``message``); ``exit_code`` is 0, 1 or 2 as for
    ``wirelab packetdrill``. ``message`` reads like packetdrill's own errors
    (``script.pkt:LINE: error handling packet: ...``). ``notes`` lists what was accepted
    as having no effect on wirelab, and why.
    """

    path: str
    status: str
    exit_code: int
    message: str
    notes: List[str] = field(default_factory=list)
    printed: List[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "pass"


def packetdrill(*scripts: PathLike, profile: str = "linux-6", seed: int = 1,
                tolerance_usecs: Optional[int] = None,
                defines: Optional[Dict[str, str]] = None) -> List[PacketdrillResult]:
    """Run each script (a ``.pkt`` path) and return one :class:`PacketdrillResult` each.

    ``profile`` selects the TCP era (``linux-6``, ``linux-4.6``, ...), ``seed`` the ISNs and
    timestamp offsets, ``tolerance_usecs`` overrides the scripts' timing tolerance and
    ``defines`` are packetdrill's ``-D NAME=VALUE`` symbols.
    """
    if not scripts:
        raise ValueError("packetdrill() needs at least one script path")
    paths = [os.fspath(s) for s in scripts]
    rows = _wirelab.packetdrill(paths, profile, seed, tolerance_usecs,
                                sorted((defines or {}).items()))
    return [PacketdrillResult(**r) for r in rows]
