"""Side-by-side timing of two gradients, in this process and in fresh worker processes.

A gradient's time in one process can sit in one of two levels and stay there (Rosenbrock:
about 29 or 37 µs per call, for the generated and the hand-written code alike, set by the
process's memory layout; see README.md), so one process's ratio is a coin toss. As pyperf
does, :func:`ratios_in_workers` repeats the side-by-side timing in several fresh processes
(``run.py --worker KEY``), each with a layout moved at random (:func:`shift_memory_layout`)
and timing both columns interleaved, and the ratio reported is the median over processes
of each process's ratio.

Example:
    >>> best = interleaved_minimum({"sum": lambda: sum(range(9))}, rounds=2, seconds=1e-3)
    >>> best["sum"] < 1e-3
    True
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

RUN_SCRIPT = Path(__file__).resolve().parent / "run.py"
LAYOUT_VARIABLE = "S2SGRAD_BENCHMARK_LAYOUT"  # a worker's random padding (see shift_memory_layout)


def shift_memory_layout() -> bytearray:
    """A block of a random size (1 MiB plus 0 to 4 KiB, in steps of 16 bytes) for the caller
    to keep: the arrays allocated after it start at other offsets within a 4 KiB page.

    Where a process's arrays lie relative to the pages sets how fast a memory-bound
    gradient runs in it, for the whole process (most likely loads and stores whose addresses
    agree in their last 12 bits, which the processor makes wait for each other). Left
    alone, what decides it is incidental and the same in every process started alike: the
    Rosenbrock ratio went from 0.86 to 1.12 with nothing changed but the length of an
    environment variable, and stayed at 1.14-1.27 in eight processes started the same way.
    With this block, eight such processes gave 0.83-1.11. It is larger than any hole the
    interpreter's start leaves in the heap (a block of 4-8 KiB fell into one and moved
    nothing), so it comes off the top of the heap and moves everything after it. Workers
    also start with an environment variable of random length (``LAYOUT_VARIABLE``), which
    moves the stack; the median over the workers is then a median over layouts.
    """
    return bytearray((1 << 20) + 16 * random.randrange(256))


def fix_allocator() -> str:
    """Keep glibc's malloc from returning large blocks to the OS between calls.

    By default glibc serves large blocks (NumPy temporaries of a few hundred KiB and up) with
    mmap or trims them off the heap when freed, and adjusts those thresholds as the process
    runs; the page faults this costs depend on what the process did before, and can double
    or halve a gradient's time. Fixed thresholds make the timings reproducible.
    """
    m_trim_threshold, m_mmap_threshold = -1, -3
    try:
        libc = ctypes.CDLL(None)
        ok = libc.mallopt(m_mmap_threshold, 32 << 20) and libc.mallopt(m_trim_threshold, 1 << 30)
    except (OSError, AttributeError):
        ok = False
    if ok:
        return "glibc malloc with fixed thresholds (mmap 32 MiB, trim 1 GiB)"
    return "the default allocator (mallopt not available)"


def calls_per_measurement(fn: Callable[[], object], seconds: float) -> int:
    """How many calls of ``fn`` take about ``seconds`` (at least one).

    Each step keeps the fastest of five timings: on a loaded machine a single timing that
    was preempted made the count several times too small for one column (1 call where the
    other had 100), and its rounds then ran for a fraction of the other's time.
    """
    number = 1
    while True:
        elapsed = min(timeit.Timer(fn).repeat(repeat=5, number=number))
        if elapsed >= seconds / 4 or number >= 1_000_000:
            return max(1, round(number * seconds / max(elapsed, 1e-9)))
        number *= 4


def interleaved_minimum(
    calls: dict[str, Callable[[], object]], rounds: int, seconds: float
) -> dict[str, float]:
    """Fastest per-call time in seconds of each callable, timed in alternating rounds.

    Each round times every callable once (``seconds`` each), so slow drifts of the machine
    (frequency, other processes) touch all of them alike; every other round takes them in
    the reverse order, so that none always runs right after the same other one (A B, B A).

    Example:
        >>> best = interleaved_minimum({"sum": lambda: sum(range(9))}, rounds=2, seconds=1e-3)
        >>> best["sum"] < 1e-3
        True
    """
    numbers = {name: calls_per_measurement(fn, seconds) for name, fn in calls.items()}
    best = dict.fromkeys(calls, float("inf"))
    order = list(calls.items())
    for index in range(rounds):
        for name, fn in order if index % 2 == 0 else reversed(order):
            per_call = timeit.Timer(fn).timeit(numbers[name]) / numbers[name]
            best[name] = min(best[name], per_call)
    return best


@dataclass
class WorkerTimes:
    """The hand-written and s2sgrad columns' times, one entry per worker process.

    Example:
        >>> t = WorkerTimes(hand=[2e-6, 3e-6, 4e-6], s2sgrad=[2e-6, 3.3e-6, 3.6e-6])
        >>> [round(r, 2) for r in t.ratios], round(t.ratio, 2)
        ([1.0, 1.1, 0.9], 1.0)
    """

    hand: list[float]
    s2sgrad: list[float]

    @property
    def ratios(self) -> list[float]:
        """Each process's s2sgrad/hand (both measured in that process, interleaved)."""
        return [s / h for h, s in zip(self.hand, self.s2sgrad)]

    @property
    def ratio(self) -> float:
        """The median over processes of each process's ratio."""
        return statistics.median(self.ratios)

    @property
    def spread(self) -> float:
        """The interquartile range of the per-process ratios, relative to their median."""
        if len(self.ratios) < 4:
            return 0.0
        first, _, third = statistics.quantiles(self.ratios, n=4)
        return (third - first) / self.ratio

    def extend(self, more: WorkerTimes) -> None:
        self.hand += more.hand
        self.s2sgrad += more.s2sgrad

    def median_times(self) -> dict[str, float]:
        """Each column's median time over the processes (the same statistic for both)."""
        return {"hand": statistics.median(self.hand), "s2sgrad": statistics.median(self.s2sgrad)}


def blas_threads_environment(threads: int | None) -> dict[str, str]:
    """The environment variables that set the BLAS libraries' thread count (none for None).

    Example:
        >>> blas_threads_environment(1)["OPENBLAS_NUM_THREADS"]
        '1'
    """
    if threads is None:
        return {}
    names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    return dict.fromkeys(names, str(threads))


def ratios_in_workers(
    key: str,
    processes: int,
    worker_arguments: list[str],
    environment: dict[str, str] | None = None,
    timeout: float = 300.0,
) -> WorkerTimes:
    """Time workload ``key`` side by side in ``processes`` fresh processes, one after the
    other (never two at once, which would slow each other down).

    Each runs ``run.py --worker KEY`` with ``worker_arguments`` (rounds, mode, ...) and
    ``environment`` added to this process's, and prints one line of JSON,
    ``{"hand": seconds, "s2sgrad": seconds}``; a worker that fails raises RuntimeError with
    its error output (subprocess.TimeoutExpired after ``timeout`` seconds).
    """
    times = WorkerTimes(hand=[], s2sgrad=[])
    command = [sys.executable, str(RUN_SCRIPT), "--worker", key, *worker_arguments]
    for _ in range(processes):
        padding = {LAYOUT_VARIABLE: "x" * random.randrange(4096)}
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=os.environ | (environment or {}) | padding,
        )
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise RuntimeError(
                f"worker for {key} failed (status {done.returncode}): {done.stderr.strip()}"
            )
        measured = json.loads(lines[-1])
        times.hand.append(measured["hand"])
        times.s2sgrad.append(measured["s2sgrad"])
    return times
