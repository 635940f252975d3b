import os
import sys
from collections import Counter
from pathlib import Path

import pytest

# One BLAS thread per test process: ``make test`` runs one pytest worker per core, and a
# BLAS pool of its own in each worker (OpenBLAS threads spin while they wait) only fights the
# other worker; on two busy cores a 256 x 128 matrix product cost twenty times the CPU time.
# Set before NumPy is first imported (it reads these when it loads); subprocesses inherit
# them. A value set in the environment is kept.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

sys.path.insert(0, str(Path(__file__).parent))

# Under ``--dist loadfile`` each test file is one unit of work, handed to whichever worker is
# free, and xdist queues the units by their number of tests. A few files of slow tests
# (second-order checks of whole programs, every NumPy rule to second order) cost more CPU
# time than files of a thousand quick ones; queued by their count, one of them was often
# handed out near the end and kept one worker busy while the other had nothing left. The
# files known to be slow go first, slowest first (measured CPU time, kept roughly in order
# as files grow); the others follow by their number of tests, as xdist would queue them.
SLOW_FILES_FIRST = (
    "test_coverage.py",
    "test_real_programs_round30.py",
    "test_source_writer.py",
    "test_scipy_rules.py",
    "test_peer_style_table.py",
    "test_rules_polynomials.py",
    "test_user_programs_round15.py",
    "test_rules_scipy_spatial_distance.py",
    "test_real_programs_round29.py",
    "test_numpy_surface.py",
    "test_fuzzed_programs.py",
    "test_rules_scipy_stats_shapes.py",
    "test_quantile_methods.py",
    "test_rules_pad_statistics.py",
    "test_reverse_fast_paths.py",
    "test_rules_scientific.py",
    "test_python_ast.py",
    "test_lean_probe.py",
)


def pytest_configure(config):
    if _queued_by_file(config):
        config.option.loadscopereorder = False  # the queue is the order set below


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist's hook in the controller: tell each worker (whose ``dist`` option reads
    "no") whether files are queued whole."""
    node.workerinput["s2sgrad_slow_files_first"] = _queued_by_file(node.config)


def pytest_collection_modifyitems(config, items):
    if not getattr(config, "workerinput", {}).get("s2sgrad_slow_files_first"):
        return  # not an xdist worker queueing whole files: the order is left as it is
    counts = Counter(_file_of(item) for item in items)

    def queued(item):
        file = _file_of(item)
        name = file.rsplit("/", 1)[-1]
        slow = SLOW_FILES_FIRST.index(name) if name in SLOW_FILES_FIRST else len(SLOW_FILES_FIRST)
        return slow, -counts[file], file

    items.sort(key=queued)  # stable: each file's tests keep their order


def _queued_by_file(config) -> bool:
    return getattr(config.option, "dist", "no") in ("loadfile", "loadscope")


def _file_of(item) -> str:
    return item.nodeid.split("::", 1)[0]
