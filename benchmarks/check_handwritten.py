"""Check the hand-written gradients in workloads.py against central finite differences.

Run as a script (``python benchmarks/check_handwritten.py``); it uses the workloads' small
sizes, so it takes about a second. It exits with status 1 if any gradient disagrees.
This is not part of the test suite: it checks the benchmark's reference code, not s2sgrad.
"""

from __future__ import annotations

import sys

import numpy as np
from workloads import WORKLOADS, Workload

EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-7


def central_difference(fn, args: tuple, index: int) -> np.ndarray | float:
    """d fn / d args[index] by central differences, one pair of calls per element.

    Example:
        >>> central_difference(lambda x: float(np.sum(x**2)), (np.array([1.0, 2.0]),), 0)
        array([2., 4.])
    """
    x = args[index]

    def at(value):
        changed = list(args)
        changed[index] = value
        return float(fn(*changed))

    if np.isscalar(x):
        return (at(x + EPS) - at(x - EPS)) / (2 * EPS)
    x = np.asarray(x, dtype=np.float64)
    grad = np.empty_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = EPS
        grad[i] = (at(x + step) - at(x - step)) / (2 * EPS)
    return grad


def check(w: Workload, seed: int) -> list[str]:
    """Messages for each gradient of ``w`` that disagrees with finite differences."""
    args = w.make_args(np.random.default_rng(seed), **w.small)
    hand = w.hand_grad(*args)
    problems = []
    if len(hand) != len(w.wrt):
        return [f"{w.name}: {len(hand)} gradients for wrt={w.wrt}"]
    for index, got in zip(w.wrt_indices(), hand):
        want = central_difference(w.fn, args, index)
        if np.shape(got) != np.shape(want):
            problems.append(f"{w.name} arg {index}: shape {np.shape(got)} != {np.shape(want)}")
        elif not np.allclose(got, want, rtol=RTOL, atol=ATOL):
            error = np.max(np.abs(np.asarray(got) - want))
            problems.append(f"{w.name} arg {index}: max abs error {error:.3g}")
    return problems


def main() -> int:
    failures = 0
    for w in WORKLOADS:
        problems = [p for seed in (0, 1, 2) for p in check(w, seed)]
        print(f"{w.name:<12} {'ok' if not problems else 'WRONG'}")
        for p in problems:
            print("    " + p)
        failures += bool(problems)
    print(f"{len(WORKLOADS) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
