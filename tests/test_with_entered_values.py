"""``with manager(x) as v:`` where the manager is made from differentiated values.

What ``__enter__`` returns was bound to ``v`` with no derivative: reverse mode took
everything computed from ``v`` for a constant and gave a zero gradient, in modes "s2s"
and "auto" (on main too, for ``contextlib.nullcontext(x)``, a generator's ``yield``, a
class's ``__enter__``). Such a ``with`` is refused now, and mode "auto" tapes it.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp, assert_refused_in_s2s_and_taped_in_auto

HERE = "test_with_entered_values.py"
R = np.random.default_rng(3321)


@contextlib.contextmanager
def doubled(v):
    yield v * 2.0


class Entered:
    def __init__(self, v):
        self.v = v

    def __enter__(self):
        return self.v * 2.0

    def __exit__(self, *exc):
        return False


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.elapsed = time.perf_counter() - self.start
        return False


def through_a_generator(x):
    with doubled(x) as s:
        y = s * 3.0
    return np.sum(y**2)


def through_nullcontext(x):
    with contextlib.nullcontext(x * 2.0) as v:
        y = v * 3.0
    return np.sum(y**2)


def through_enter(x):
    with Entered(np.sin(x)) as y:
        return np.sum(y**2)


def used_after_the_block(x):
    manager = Entered(x)
    with manager as s:
        pass
    return np.sum(s * x)


@pytest.mark.parametrize(
    "f", [through_a_generator, through_nullcontext, through_enter, used_after_the_block]
)
def test_an_entered_value_is_refused_not_constant(f):
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    assert_refused_in_s2s_and_taped_in_auto(f, [x], "with ... as", HERE)
    assert_grad_jvp_and_hvp(f, x, v, "auto")


def timed(x):
    with Timer() as clock:
        y = np.sin(x) * 2.0
    return np.sum(y**2) + 0.0 * clock.start


def test_a_manager_made_of_constants_is_not_refused_for_its_name():
    """Only what the manager is made from counts: Timer() reads nothing differentiated."""
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    assert_grad_jvp_and_hvp(timed, x, v, "auto")
