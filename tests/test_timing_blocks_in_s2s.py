"""``with Timer():`` around a computation, by source transformation
(``compiler/timing_contexts.py``).

Only NumPy's ``errstate``/``printoptions``, ``warnings.catch_warnings`` and
``contextlib.nullcontext`` made a transparent block; a timer of the user's was refused
("'with' statements that compute differentiated values cannot be transformed") and mode
"auto" took the tape. A context manager class whose ``__init__``, ``__enter__`` and
``__exit__`` only store on itself and call NumPy, ``math``, ``time``, builtins and
reporters, and whose ``__exit__`` never suppresses an exception, now makes a transparent
block. One that suppresses exceptions, or changes a global, stays refused.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_refused_in_s2s_and_taped_in_auto,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg

HERE = "test_timing_blocks_in_s2s.py"
R = np.random.default_rng(3218)
TIMES: list = []


class Timer:
    def __init__(self, label="block"):
        self.label = label

    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.elapsed = time.perf_counter() - self.start
        print(f"{self.label}: {self.elapsed:.6f}s")
        return False


class Swallowing(Timer):
    def __exit__(self, *exc):
        return True  # suppresses what the block raises: another path


class Recording(Timer):
    def __exit__(self, *exc):
        TIMES.append(time.perf_counter() - self.start)  # changes a global list


def timed(x, y):
    with Timer("forward"):
        h = np.tanh(x * y)
        for _ in range(2):
            h = np.sin(h) * y + x
    return np.sum(h**2)


def swallowed(x):
    with Swallowing():
        h = np.tanh(x) * x
    return np.sum(h)


def recorded(x):
    with Recording():
        h = np.tanh(x) * x
    return np.sum(h)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_timer_block_in_every_mode(mode, capsys):
    x, y = R.normal(size=3), R.normal(size=(2, 3))
    vx, vy = R.normal(size=3), R.normal(size=(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # mode "auto": no fallback
        gradient = call_twice(sg.grad(timed, wrt=(0, 1), mode=mode), x, y)
        _, tangent = sg.jvp(timed, (x, y), (vx, vy), mode=mode)
        products = [sg.hvp(timed, (x, y), (vx, vy), mode=mode) for _ in range(2)]
    assert "forward:" in capsys.readouterr().out  # the timer ran
    assert_close(gradient[0], numeric_grad(timed, [x, y], 0))
    assert_close(gradient[1], numeric_grad(timed, [x, y], 1))
    along = numeric_jvp(lambda t: timed(x + t * vx, y + t * vy), [0.0], 0, 1.0)
    assert_close(float(tangent), float(along), rtol=1e-5)
    taped = sg.grad(timed, wrt=(0, 1), mode="tape")
    second = numeric_jvp(lambda t: taped(x + t * vx, y + t * vy), [0.0], 0, 1.0)
    for product in products:
        assert_close(tuple(product), tuple(second), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("f", [swallowed, recorded], ids=lambda f: f.__name__)
def test_managers_that_do_more_stay_refused(f):
    assert_refused_in_s2s_and_taped_in_auto(f, [R.normal(size=3)], "'with' statements", HERE)
