import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# One BLAS thread per test process: ``make test`` runs one pytest worker per core, and a
# BLAS pool of its own in each worker (OpenBLAS threads spin while they wait) only fights the
# other worker; on two busy cores a 256 x 128 matrix product cost twenty times the CPU time.
# Set before NumPy is first imported (it reads these when it loads); subprocesses inherit
# them. A value set in the environment is kept.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

# Bytecode in a directory of the run's own where the environment forbids writing it: with
# PYTHONDONTWRITEBYTECODE set, every Python the suite starts (the xdist workers, and the
# examples', packaging, export and CLI tests' subprocesses) compiled each module of s2sgrad
# again (1.1 s of the 1.4 s an import costs) and pytest rewrote every test file again. The
# workers and subprocesses inherit PYCACHEPREFIX instead: nothing is written into the
# checkout, and the directory goes when the run ends. A prefix already set is kept.
_BYTECODE_DIRECTORY = None
if os.environ.get("PYTHONDONTWRITEBYTECODE") and not os.environ.get("PYTHONPYCACHEPREFIX"):
    _BYTECODE_DIRECTORY = tempfile.mkdtemp(prefix="s2sgrad-tests-bytecode-")
    os.environ["PYTHONPYCACHEPREFIX"] = _BYTECODE_DIRECTORY
    del os.environ["PYTHONDONTWRITEBYTECODE"]


@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    # The run is over: pytest's last full collections (the unraisable-exception plugin's,
    # two per process) walk nothing, where late in a worker they walked its millions of
    # objects, seconds each. Exceptions in finalisers that ran
    # during the tests are reported as before; cycles left in the oldest generation at the
    # end are simply not finalised.
    from collector import frozen_for_the_end

    frozen_for_the_end()
    if _BYTECODE_DIRECTORY is not None:
        shutil.rmtree(_BYTECODE_DIRECTORY, ignore_errors=True)


sys.path.insert(0, str(Path(__file__).parent))
