"""Peak memory and time of the gradient of a long loop, plain and checkpointed
(``for t in sg.checkpointed(range(n), snapshots=k):``), in both engines.

Two loops: an RNN of 10,000 steps (state 16×64, ``h = tanh(h @ W + x[t] @ U)``) and a
scalar loop of 100,000 steps on Python floats (``y = sin(y) * a + b * y``). For each: the
plain loop (every step's values kept for the backward pass), ``k = 10`` and ``k = √n``
snapshots. Peak memory is ``tracemalloc``'s during one gradient call (after a warm-up
call); time is the best of ``--repeat`` calls, without tracing. Each checkpointed gradient
is compared with the plain one (largest difference printed; it must be ≤ 1e-12 relative).

Run it with ``.venv/bin/python benchmarks/checkpointed_loops.py [--modes s2s,tape]
[--loops rnn,scalar] [--rnn-steps 10000] [--scalar-steps 100000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import math
import time
import tracemalloc

import numpy as np

import s2sgrad as sg


def rnn(W, U, h, x, k):
    for t in sg.checkpointed(range(x.shape[0]), snapshots=k):
        h = np.tanh(h @ W + x[t] @ U)
    return np.sum(h * h)


def rnn_plain(W, U, h, x, k):
    for t in range(x.shape[0]):
        h = np.tanh(h @ W + x[t] @ U)
    return np.sum(h * h)


def scalar_loop(a, b, y, n, k):
    for _ in sg.checkpointed(range(n), snapshots=k):
        y = np.sin(y) * a + b * y
    return y


def scalar_loop_plain(a, b, y, n, k):
    for _ in range(n):
        y = np.sin(y) * a + b * y
    return y


def measure(gradient, args, repeat: int):
    """(gradient, peak MiB, best seconds) of ``gradient(*args)``, after a warm-up call."""
    result = gradient(*args)
    tracemalloc.start()
    gradient(*args)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        gradient(*args)
        best = min(best, time.perf_counter() - start)
    return result, peak / 2**20, best


def largest_difference(got, expected) -> float:
    return max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b)) / (1.0 + np.abs(np.asarray(b)))))
        for a, b in zip(got, expected)
    )


def run(name, plain, checkpointed, args, steps, mode, repeat) -> None:
    """One table block: plain, k = 10 and k = √n for one loop in one engine."""
    wrt = (0, 1)
    reference, plain_peak, plain_time = measure(
        sg.grad(plain, wrt=wrt, mode=mode), (*args, None), repeat
    )
    print(f"{name:<7} {mode:<5} {'plain':>6} {plain_peak:>9.2f} {'':>8} {plain_time:>8.3f} {'':>6}")
    for label, k in (("10", 10), ("√n", math.isqrt(steps))):
        got, peak, seconds = measure(sg.grad(checkpointed, wrt=wrt, mode=mode), (*args, k), repeat)
        difference = largest_difference(got, reference)
        print(
            f"{name:<7} {mode:<5} {'k=' + label:>6} {peak:>9.2f} {plain_peak / peak:>7.1f}x "
            f"{seconds:>8.3f} {seconds / plain_time:>5.2f}x  max rel diff {difference:.1e}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="s2s,tape", help="engines, comma-separated")
    parser.add_argument("--rnn-steps", type=int, default=10_000)
    parser.add_argument("--scalar-steps", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="timed calls (best kept)")
    parser.add_argument("--loops", default="rnn,scalar", help="which loops, comma-separated")
    options = parser.parse_args()
    rng = np.random.default_rng(0)
    n = options.rnn_steps
    W, U = rng.normal(scale=0.1, size=(64, 64)), rng.normal(scale=0.1, size=(8, 64))
    h, x = rng.normal(size=(16, 64)), rng.normal(size=(n, 16, 8))
    print(
        f"{'loop':<7} {'mode':<5} {'k':>6} {'peak MiB':>9} {'saving':>8} {'seconds':>8} {'time':>6}"
    )
    loops = options.loops.split(",")
    m = options.scalar_steps
    for mode in options.modes.split(","):
        if "rnn" in loops:
            run("rnn", rnn_plain, rnn, (W, U, h, x), n, mode, options.repeat)
        if "scalar" in loops:
            arguments = (0.9, 0.05, 0.3, m)
            run("scalar", scalar_loop_plain, scalar_loop, arguments, m, mode, options.repeat)


if __name__ == "__main__":
    main()
