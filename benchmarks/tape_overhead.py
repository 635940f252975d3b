"""The tape's cost per recorded operation against autograd's, side by side in one run.

    python benchmarks/tape_overhead.py

Each workload is a chain of small-array operations, so the time is almost all per-operation
bookkeeping (recording, then the backward pass): the thing the tape adds to NumPy. Both
engines differentiate the very same Python function; each is timed several times,
interleaved, and the fastest run counts. autograd is optional (``make bench`` installs it).
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import s2sgrad as sg  # noqa: E402


def make_chain(numpy):
    """A 250-step loop of sin, *, +, -: 1,000 recorded operations."""

    def chain(x):
        y = x
        for _ in range(250):
            y = numpy.sin(y) * 0.9 + x - 0.1
        return numpy.sum(y)

    return chain


def make_mlp(numpy):
    def mlp(w1, w2, x):
        h = numpy.tanh(x @ w1)
        return numpy.sum((h @ w2) ** 2)

    return mlp


def best_time(function, repeat=7, number=5):
    return min(timeit.repeat(function, repeat=repeat, number=number)) / number


def main() -> int:
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        autograd = None
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10)
    w1, w2, batch = (
        rng.standard_normal((10, 16)),
        rng.standard_normal((16, 1)),
        rng.standard_normal((8, 10)),
    )
    rows = []
    tape_chain = sg.grad(make_chain(np), mode="tape")
    tape_mlp = sg.grad(make_mlp(np), wrt=(0, 1), mode="tape")
    cases = [
        ("1,000-op chain, 10 elements", lambda: tape_chain(x), 1000),
        ("small MLP loss, both weights", lambda: tape_mlp(w1, w2, batch), 6),
    ]
    if autograd is not None:
        autograd_chain = autograd.grad(make_chain(anp))
        autograd_mlp = autograd.grad(make_mlp(anp), argnum=(0, 1))
        np.testing.assert_allclose(tape_chain(x), autograd_chain(x))
        others = [lambda: autograd_chain(x), lambda: autograd_mlp(w1, w2, batch)]
    else:
        others = [None, None]
    for (name, tape_call, operations), other in zip(cases, others):
        tape_seconds = best_time(tape_call)  # tape, autograd, tape: interleaved
        other_seconds = best_time(other) if other else None
        tape_seconds = min(tape_seconds, best_time(tape_call))
        rows.append((name, operations, tape_seconds, other_seconds))
    print(f"numpy {np.__version__}; autograd {'installed' if autograd else 'not installed'}\n")
    print(f"{'workload':32s} {'tape µs':>10s} {'autograd µs':>12s} {'ratio':>7s}  per op (tape)")
    worst = 0.0
    for name, operations, tape_seconds, other_seconds in rows:
        ratio = tape_seconds / other_seconds if other_seconds else float("nan")
        worst = max(worst, ratio if other_seconds else 0.0)
        other_text = f"{other_seconds * 1e6:12,.0f}" if other_seconds else f"{'-':>12s}"
        ratio_text = f"{ratio:7.2f}x" if other_seconds else f"{'-':>8s}"
        print(
            f"{name:32s} {tape_seconds * 1e6:10,.0f} {other_text} {ratio_text}"
            f"  {tape_seconds / operations * 1e6:6.1f} µs"
        )
    if autograd is not None:
        print(f"\ntape no slower than autograd: {'PASS' if worst <= 1.0 else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
