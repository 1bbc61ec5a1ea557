"""Shared test set-up: the reproductions read the scenarios of this checkout (the installed
package does not carry scenarios/)."""
import os
from pathlib import Path

os.environ.setdefault("WIRELAB_CHECKOUT", str(Path(__file__).resolve().parents[2]))
