"""Helpers the examples share: where they write their files, and plotting without a display."""

import os
import sys
from pathlib import Path

OUTPUT_VARIABLE = "S2SGRAD_EXAMPLES_OUTPUT"


def output_directory() -> Path:
    """The directory an example writes into, created if missing.

    The first command-line argument, else the ``S2SGRAD_EXAMPLES_OUTPUT`` environment
    variable, else ``examples/output`` (which git ignores).
    """
    chosen = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(OUTPUT_VARIABLE)
    directory = Path(chosen) if chosen else Path(__file__).resolve().parent / "output"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def pyplot():
    """matplotlib's pyplot on the Agg backend: files only, no window."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def env_int(name: str, default: int) -> int:
    """An integer setting from the environment (the tests use small ones)."""
    return int(os.environ.get(name, default))
