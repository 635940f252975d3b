"""The first call's probe lets go of arrays it no longer needs (``specialize/releases.py``):
values read only for their shapes become stand-ins that hold no memory, the others go
after their last read. Gradients stay right, and the first call's peak memory stays near a
later call's.
"""

import tracemalloc

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.pipeline import clear_cache
from s2sgrad.compiler.specialize import releases

MODES = ("s2s", "tape", "auto")
SIZE = 1200  # above the size from which arrays are stood in for


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def broadcasting(x, b):
    y = np.tanh(x * b + 1.0)  # b is broadcast: its cotangent is summed back
    z = y * y + x
    return np.sum(z * np.exp(-y))


def reused_after_a_shape_read(x):
    t = np.sin(x)
    u = t * 2.0 + x
    v = u / (1.0 + t**2)  # t read for its values after u's shape-only read
    return np.sum(v * u)


def in_a_loop(x, w):
    h = x * 0.5
    for _ in range(3):
        h = np.tanh(h * w + 0.1)
    return np.sum(h**2)


RNG = np.random.default_rng(3)
CASES = [
    (rosenbrock, (RNG.uniform(-1.0, 1.0, SIZE),), (0,)),
    (broadcasting, (RNG.normal(size=(SIZE // 3, 3)), RNG.normal(size=3)), (0, 1)),
    (reused_after_a_shape_read, (RNG.normal(size=SIZE),), (0,)),
    (in_a_loop, (RNG.normal(size=SIZE), RNG.normal(size=SIZE)), (0, 1)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_gradients_of_large_arrays_match_the_oracle(f, args, wrt, mode, monkeypatch):
    monkeypatch.setattr(releases, "LARGE", SIZE // 2)  # large enough to let arrays go
    clear_cache()
    gradient = sg.grad(f, wrt=wrt, mode=mode)
    for _ in range(2):
        got = gradient(*args)
        for position, value in zip(wrt, got):
            expected = numeric_grad(f, args, position)
            assert_close(value, expected, rtol=1e-4, atol=1e-4)


def _peak(call) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_first_call_peaks_near_a_later_call():
    x = RNG.uniform(-1.0, 1.0, 300_000)
    clear_cache()
    gradient = sg.grad(rosenbrock, mode="s2s")
    first = _peak(lambda: gradient(x))
    later = _peak(lambda: gradient(x))
    assert first <= 1.5 * later + 1_000_000, (first / x.nbytes, later / x.nbytes)
