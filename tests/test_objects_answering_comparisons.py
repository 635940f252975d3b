"""An object made of differentiated values whose class answers a comparison or ``round``.

``Lt(x) < 1.0`` calls ``Lt.__lt__``, which may return a value computed from ``x``
(``self.v * 3``); Python hands it back as it is. The sweeps took every comparison for a
flag, with no derivative: the object's construction was never asked for one, and the
gradient was zero, silently, in modes "s2s" and "auto" (on main too). Such a comparison,
or ``round``/``math.floor`` of such an object, is refused now, and mode "auto" tapes it;
the comparisons the dataclass decorator writes (of tuples of fields) stay flags.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp, assert_refused_in_s2s_and_taped_in_auto

HERE = "test_objects_answering_comparisons.py"
R = np.random.default_rng(3323)


class Less:
    def __init__(self, v):
        self.v = v

    def __lt__(self, other):
        return self.v * 3.0


class Same:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return self.v * 2.0

    __hash__ = None


class Rounded:
    def __init__(self, v):
        self.v = v

    def __round__(self, digits=None):
        return self.v * 2.0

    def __floor__(self):
        return self.v * 4.0


def less_than(x):
    return np.sum(Less(x) < 1.0)


def greater_reflected(x):
    return np.sum(1.0 > Less(np.sin(x)))  # noqa: SIM300 (the reflected comparison)


def equal_to(x):
    return np.sum(Same(x) == 1.0)


def rounded(x):
    return np.sum(round(Rounded(x)) ** 2)


def floored(x):
    return math.floor(Rounded(x[0])) * x[1]


@pytest.mark.parametrize("f", [less_than, greater_reflected, equal_to, rounded, floored])
def test_an_answer_of_the_objects_class_is_refused_not_zero(f):
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    assert_refused_in_s2s_and_taped_in_auto(f, [x], "round itself|inside an object", HERE)
    assert_grad_jvp_and_hvp(f, x, v, "auto")


@dataclass(order=True)
class Ordered:
    v: object


def ordered_branch(x):
    a, b = Ordered(x[0]), Ordered(x[1] * 2.0)
    if a < b:
        return a.v * 3.0 + b.v
    return a.v + b.v * 3.0


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_the_comparisons_a_dataclass_writes_stay_flags(mode):
    x, v = R.uniform(0.3, 1.2, size=3), R.normal(size=3)
    assert_grad_jvp_and_hvp(ordered_branch, x, v, mode)
