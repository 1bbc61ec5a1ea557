"""wirelab: a deterministic, wire-accurate packet-level lab for TCP and SCTP research.

>>> import wirelab
>>> res = wirelab.run("scenarios/quickstart.toml", seed=1)
>>> res.flows[["name", "goodput_bps", "loss_ratio"]]
"""
from ._wirelab import __version__
from .exceptions import ScenarioError, WirelabError
from .packetdrill import PacketdrillResult, packetdrill
from .result import Result
from .runner import live, run, validate

__all__ = ["run", "live", "validate", "packetdrill", "PacketdrillResult", "Result", "ScenarioError",
           "WirelabError", "__version__"]
