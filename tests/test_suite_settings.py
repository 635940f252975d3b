"""The settings tests/conftest.py gives the Pythons the suite starts."""

import os
import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def test_a_subprocess_keeps_its_bytecode_outside_the_checkout():
    """A subprocess started with the suite's environment may write bytecode (compiling
    s2sgrad once per run, not once per Python), and where the run forbade writing it into
    the checkout, it writes it into a directory of the run's own."""
    shown = subprocess.run(
        [sys.executable, "-c", "import sys; print(sys.dont_write_bytecode, sys.pycache_prefix)"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        check=True,
    ).stdout.split()
    assert shown[0] == "False", "every Python the suite starts compiles s2sgrad anew"
    if shown[1] != "None":
        assert not Path(shown[1]).resolve().is_relative_to(CHECKOUT)
        assert Path(shown[1]).is_dir()


def test_the_runs_end_freezes_what_is_left():
    """When the run is over (conftest's ``pytest_unconfigure``), everything alive is frozen:
    pytest's closing full collection then walks nothing but what is made after."""
    import gc

    import conftest
    from collector import frozen_for_the_end

    assert conftest.pytest_unconfigure.pytest_impl["tryfirst"]  # before pytest's own
    alive = len(gc.get_objects())
    try:
        frozen_for_the_end()
        assert gc.get_freeze_count() >= alive // 2
        assert len(gc.get_objects()) < alive // 10  # what the collector still walks
    finally:
        gc.unfreeze()
