"""Peak memory of gradients (tracemalloc, which sees NumPy's arrays), for run.py.

* :func:`first_call_peak`: the peak of a gradient's first call, the transformation and the
  shape probe included, from a cold cache; set against a later call's peak.
* :func:`measure_large_input`: the peaks of ``f``, of the hand-written gradient and of the
  first and a later call of s2sgrad's gradient on one large input, in multiples of the
  input's size: what a user with big arrays meets.

Targets: every workload's peak <= 1.1x the hand-written gradient's; the first call's peak
<= 1.5x a later call's.

Example:
    >>> peak_bytes(lambda: np.ones(1000)) >= 8000
    True
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import numpy as np
from verdicts import judge
from workloads import rosenbrock, rosenbrock_grad

MEMORY_TARGET = 1.1  # s2sgrad peak / hand-written peak
FIRST_CALL_TARGET = 1.5  # first call's peak / a later call's
LARGE_INPUT_SIZE = 1_000_000


def peak_bytes(fn: Callable[[], object]) -> int:
    """Peak memory allocated during one call of ``fn`` (tracemalloc, NumPy arrays included)."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def first_call_peak(sg, fn: Callable, wrt, args: tuple, mode: str) -> int:
    """Peak bytes of the first ``sg.grad(fn)(*args)`` after every generated code is dropped."""
    from s2sgrad.compiler.pipeline import clear_cache

    clear_cache()
    return peak_bytes(lambda: sg.grad(fn, wrt=wrt, mode=mode)(*args))


def measure_large_input(sg, mode: str) -> None:
    """Print the peaks for the Rosenbrock function of a large input, in input sizes."""
    x = np.random.default_rng(0).uniform(-2.0, 2.0, size=LARGE_INPUT_SIZE)
    size = x.nbytes
    first = first_call_peak(sg, rosenbrock, 0, (x,), mode)
    gradient = sg.grad(rosenbrock, wrt=0, mode=mode)
    later = peak_bytes(lambda: gradient(x))
    plain = peak_bytes(lambda: rosenbrock(x))
    hand = peak_bytes(lambda: rosenbrock_grad(x))
    ratio = first / later
    verdict = judge("first-call memory on a large input", ratio <= FIRST_CALL_TARGET)
    print(
        f"\nPeak memory on a large input (rosenbrock, {LARGE_INPUT_SIZE:,} elements), in "
        f"input sizes: f {plain / size:.1f}x, hand-written gradient {hand / size:.1f}x, "
        f"s2sgrad first call {first / size:.1f}x, later call {later / size:.1f}x; "
        f"first/later {ratio:.2f}x (target <= {FIRST_CALL_TARGET}x) {verdict}"
    )
