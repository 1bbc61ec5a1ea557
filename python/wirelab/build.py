"""Scenarios built in Python, without writing TOML.

>>> from wirelab.build import Dumbbell
>>> sc = Dumbbell(n=20, bottleneck="rate 10mbit delay 20ms", qdisc="sfq", cc=["cubic", "bbr"])
>>> res = wirelab.run(sc, out="results/dumbbell")      # or sc.run(out=...)
>>> print(sc.to_toml())                                  # the scenario it stands for

A builder is a plain description: :meth:`Dumbbell.to_dict` gives the same structure a TOML
scenario file has (docs/scenario.md), so everything the TOML accepts is reachable, errors
name the key they are about (``link[20].a.qdisc``) and ``overrides`` (``--set`` keys) work
as on a file: the bottleneck link is named ``bottleneck``, the senders ``flow-1`` …
``flow-N`` and the sinks ``sink-1`` … ``sink-N``.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

import tomli_w


@dataclass
class Dumbbell:
    """``n`` senders and ``n`` receivers on either side of one bottleneck link.

    ::

        s1 ─┐                                   ┌─ d1
        …   ├─ left ══ bottleneck (qdisc) ══ right ─┤  …
        sN ─┘                                   └─ dN

    ``bottleneck`` is the link's netem line and ``qdisc`` the egress queue of ``left``
    towards ``right`` (tc syntax, e.g. ``"sfq"``, ``"pfifo limit 100"``, ``"fq_codel"``);
    ``access`` is the netem line of every host's own link. Sender ``i`` (``flow-i``, on
    ``s{i}``) sends to sink ``i`` (``sink-i`` on ``d{i}``, port ``5000 + i``) as an app of
    ``kind`` (``tcp-bulk`` by default; ``udp-cbr`` takes ``rate=`` in ``app``) with
    congestion control ``cc`` (one name, or a list cycled over the flows); flow ``i``
    starts ``(i - 1) × stagger`` after the first. ``app`` holds extra keys for every sender
    (``{"sysctl": {"net.ipv4.tcp_rdb": 1}}``, ``{"rate": "2mbit"}``). The bottleneck queue
    is probed per packet and, with ``capture``, the first sender's and receiver's
    interfaces are captured.
    """

    n: int = 2
    bottleneck: str = "rate 10mbit delay 20ms"
    qdisc: str = "pfifo limit 100"
    access: str = "rate 1gbit delay 1ms"
    cc: Union[str, Sequence[str]] = "cubic"
    kind: str = "tcp-bulk"
    stagger: str = "0s"
    duration: str = "20s"
    name: str = "dumbbell"
    description: str = ""
    seed: int = 1
    sample_interval: str = "100ms"
    capture: bool = False
    app: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.n, int) or isinstance(self.n, bool) or not 1 <= self.n <= 1000:
            raise ValueError(f"Dumbbell: n must be an integer from 1 to 1000, not {self.n!r}")
        if not self._ccs():
            raise ValueError("Dumbbell: cc must name at least one congestion control")

    def _ccs(self) -> List[str]:
        return [self.cc] if isinstance(self.cc, str) else list(self.cc)

    def _stagger(self, i: int) -> Optional[str]:
        """``i × stagger`` in tc time units (``stagger`` as ``"500ms"``, ``"1s"``)."""
        if i == 0 or self.stagger in ("0", "0s", "0ms"):
            return None
        num = self.stagger.rstrip("abcdefghijklmnopqrstuvwxyz")
        unit = self.stagger[len(num):]
        try:
            value = float(num) * i
        except ValueError:
            raise ValueError(f"Dumbbell: stagger must be a time such as \"500ms\", not {self.stagger!r}") from None
        text = f"{value:.9f}".rstrip("0").rstrip(".")
        return f"{text}{unit}"

    def to_dict(self) -> Dict[str, Any]:
        """The scenario as the dict a TOML scenario file parses to."""
        n = self.n
        nodes = ([{"name": f"s{i}"} for i in range(1, n + 1)]
                 + [{"name": "left", "kind": "router"}, {"name": "right", "kind": "router"}]
                 + [{"name": f"d{i}"} for i in range(1, n + 1)])
        links = [{"a": {"node": f"s{i}"}, "b": {"node": "left"}, "netem": self.access} for i in range(1, n + 1)]
        links.append({"name": "bottleneck", "a": {"node": "left", "qdisc": self.qdisc}, "b": {"node": "right"},
                      "netem": self.bottleneck})
        links += [{"a": {"node": "right"}, "b": {"node": f"d{i}"}, "netem": self.access} for i in range(1, n + 1)]
        tcp = self.kind.startswith("tcp-")
        ccs = self._ccs()
        apps: List[Dict[str, Any]] = []
        for i in range(1, n + 1):
            a: Dict[str, Any] = {"name": f"flow-{i}", "kind": self.kind, "node": f"s{i}", "dst": f"d{i}:{5000 + i}"}
            if tcp:
                a["cc"] = ccs[(i - 1) % len(ccs)]
            start = self._stagger(i - 1)
            if start:
                a["start"] = start
            a.update(copy.deepcopy(self.app))
            apps.append(a)
        sink = "tcp-sink" if tcp else "udp-sink" if self.kind.startswith("udp-") else "sctp-sink"
        apps += [{"name": f"sink-{i}", "kind": sink, "node": f"d{i}", "port": 5000 + i} for i in range(1, n + 1)]
        # interfaces: a host has eth0; `left` has eth0..eth{n-1} towards the senders, then
        # eth{n} on the bottleneck
        measure: Dict[str, Any] = {"sample_interval": self.sample_interval, "queue_probe": [f"left:eth{n}"]}
        if self.capture:
            measure["capture"] = ["s1:eth0", "d1:eth0"]
        scenario: Dict[str, Any] = {"name": self.name, "duration": self.duration, "seed": self.seed}
        if self.description:
            scenario["description"] = self.description
        return {"scenario": scenario, "node": nodes, "link": links, "app": apps, "measure": measure}

    def to_toml(self) -> str:
        """The scenario as TOML text (save it to edit it by hand or run it with ``wirelab run``)."""
        return tomli_w.dumps(self.to_dict())

    def save(self, path) -> None:
        """Writes :meth:`to_toml` to ``path``."""
        from pathlib import Path

        Path(path).write_text(self.to_toml())

    def run(self, **kw):
        """``wirelab.run(self, **kw)``: returns a :class:`wirelab.Result`."""
        from .runner import run

        return run(self, **kw)

    def validate(self, overrides=None) -> None:
        """``wirelab.validate(self)``: raises :class:`wirelab.ScenarioError` if invalid."""
        from .runner import validate

        validate(self, overrides)
