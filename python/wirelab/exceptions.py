"""Exception hierarchy: everything wirelab raises derives from :class:`WirelabError`."""
from __future__ import annotations

import re
from typing import Optional

from . import _wirelab

# `FILE:LINE:COL: key `KEY`: MESSAGE`, `FILE: key `KEY`: MESSAGE` or `FILE: MESSAGE`, as the
# Rust `ScenarioError` prints itself (crates/wirelab-scenario/src/error.rs); `error: ` may
# lead. FILE is the shortest prefix that fits, so a message with colons stays whole.
_LOCATED = re.compile(r"^(?:error: )?(?P<file>.+?)(?::(?P<line>\d+):(?P<col>\d+))?: "
                      r"(?:key `(?P<key>[^`]*)`: )?(?P<msg>.*)$", re.S)


class WirelabError(Exception):
    """Base class of wirelab errors."""


class ScenarioError(WirelabError, ValueError):
    """A scenario is invalid. ``str()`` is the full message (file, line, column, key and
    what is wrong); the parts are attributes: ``file``, ``line`` and ``col`` (1-based, None
    when the error concerns the whole file or an override), ``key`` (dotted path such as
    ``link[1].netem``, None if unknown) and ``reason`` (the message without the location).
    """

    def __init__(self, message: str, *, file: Optional[str] = None, line: Optional[int] = None,
                 col: Optional[int] = None, key: Optional[str] = None, reason: Optional[str] = None):
        super().__init__(message)
        self.file, self.line, self.col, self.key = file, line, col, key
        self.reason = message if reason is None else reason

    @classmethod
    def parse(cls, message: str) -> "ScenarioError":
        """Reads the location out of the engine's message; keeps the message as it is."""
        m = _LOCATED.match(message)
        if not m:
            return cls(message)
        line = int(m["line"]) if m["line"] else None
        return cls(message, file=m["file"], line=line or None, col=int(m["col"]) if line else None,
                   key=m["key"] or None, reason=m["msg"])


def translate(exc: BaseException) -> BaseException:
    """Maps an extension exception onto the public hierarchy. Location fields the extension
    sets as attributes (``file``, ``line``, ``col``, ``key``) win over the parsed message."""
    if isinstance(exc, _wirelab.ScenarioError):
        err = ScenarioError.parse(str(exc))
        for attr in ("file", "line", "col", "key", "reason"):
            v = getattr(exc, attr, None)
            if v is not None:
                setattr(err, attr, v)
        return err
    return exc
