import os
import sys
from pathlib import Path

# One BLAS thread per test process: ``make test`` runs one pytest worker per core, and a
# BLAS pool of its own in each worker (OpenBLAS threads spin while they wait) only fights the
# other worker; on two busy cores a 256 x 128 matrix product cost twenty times the CPU time.
# Set before NumPy is first imported (it reads these when it loads); subprocesses inherit
# them. A value set in the environment is kept.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

sys.path.insert(0, str(Path(__file__).parent))
