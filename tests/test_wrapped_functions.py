"""Functions decorated with ``functools.wraps``: a logging or timing decorator around a loss.

``functools.wraps`` copies the wrapped function's name and sets ``__wrapped__``, which
``inspect.signature`` and ``inspect.getsource`` follow. The transformer works on the code
that runs (the wrapper's), so it must read that code's own parameters and lines: it read
the wrapped function's instead ("wrapper has no parameter 'x'", an internal error, or "the
file was edited" for a wrapping lambda).
"""

from __future__ import annotations

import functools
import time

import numpy as np
import pytest
from oracle import assert_gradient_in_every_mode

import s2sgrad as sg


def timed(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        wrapper.seconds = time.perf_counter() - start
        return out

    return wrapper


def scaled(factor):
    def decorate(fn):
        @functools.wraps(fn)
        def inner(x, shift=0.0):
            return fn(x + shift) * factor

        return inner

    return decorate


@timed
def loss(x):
    return np.sum(np.sin(x) ** 2)


@scaled(3.0)
def cubic(x):
    return np.sum(x**3 - x)


def calls_both(x):
    return loss(x) * cubic(x, shift=0.5)


def _square(x):
    return np.sum(x * x * np.cos(x))


wrapping_lambda = functools.wraps(_square)(lambda *a, **k: _square(*a, **k))


@pytest.mark.parametrize(
    "f", [loss, cubic, calls_both, wrapping_lambda], ids=["args", "keyword", "callee", "lambda"]
)
def test_decorated_functions_in_every_mode(f):
    x = np.random.default_rng(7).normal(size=(2, 3))
    assert_gradient_in_every_mode(f, (x,))


def test_the_signature_read_is_the_wrappers():
    x = np.array([0.2, -0.4])
    gradient = sg.grad(cubic, wrt="shift", mode="s2s")(x, 0.3)
    assert isinstance(gradient, float)
    assert abs(gradient - 3.0 * np.sum(3 * (x + 0.3) ** 2 - 1)) < 1e-9
    with pytest.raises(ValueError, match="no parameter named 'y'"):
        sg.grad(cubic, wrt="y")
