"""Exception hierarchy: everything wirelab raises derives from :class:`WirelabError`."""
from . import _wirelab


class WirelabError(Exception):
    """Base class of wirelab errors."""


class ScenarioError(WirelabError, ValueError):
    """A scenario is invalid. The message names file, line, column and key."""


def translate(exc: BaseException) -> BaseException:
    """Maps an extension exception onto the public hierarchy."""
    if isinstance(exc, _wirelab.ScenarioError):
        return ScenarioError(str(exc))
    return exc
