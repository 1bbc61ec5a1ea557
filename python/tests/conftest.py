"""Shared test helpers."""
import importlib.util
import sys
from pathlib import Path

REPRO = Path(__file__).resolve().parents[1] / "wirelab" / "repro"


def load_repro(name: str):
    """The reproduction script ``python/wirelab/repro/NAME.py`` of this checkout (not the
    installed copy): some read scenarios that sit next to the checkout's sources."""
    spec = importlib.util.spec_from_file_location(f"{name}_checkout", REPRO / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod

