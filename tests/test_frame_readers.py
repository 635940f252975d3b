"""``locals()``, ``vars()``, ``eval`` and ``sys._getframe()`` read a function's variables
by name: a value being differentiated reaches their result where neither sweep sees it
(the gradient would silently be zero, or generated code, whose variables are not the
function's, would fail with a KeyError). Source transformation refuses them, naming the
line; mode "auto" gives the function to the tape, which sees the values themselves.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from oracle import assert_close, assert_refused_in_s2s_and_taped_in_auto, call_twice

import s2sgrad as sg
from s2sgrad.errors import UnsupportedError

HERE = __file__


def reads_locals(x):
    y = x * 2.0
    return np.sum(locals()["y"] ** 2)


def reads_vars(x):
    y = np.sin(x)  # noqa: F841 (read through vars())
    return np.sum(vars()["y"] * x)


def copies_locals(x):
    y = x * 2.0
    names = dict(locals())
    return np.sum(names["x"] * names["y"])


def evaluates(x):
    return np.sum(eval("x * 2.0") ** 2)  # noqa: S307


def reads_its_frame(x):
    y = x * 2.0  # noqa: F841 (read through the frame)
    return np.sum(sys._getframe().f_locals["y"] ** 2)


READERS = [reads_locals, reads_vars, copies_locals, evaluates, reads_its_frame]


@pytest.mark.parametrize("f", READERS, ids=lambda f: f.__name__)
def test_a_frame_reader_is_refused_and_taped_in_auto(f):
    x = np.array([0.3, -0.7, 1.2])
    assert_refused_in_s2s_and_taped_in_auto(
        f, (x,), "reads this function's variables by name", HERE
    )


def test_forward_mode_refuses_a_frame_reader():
    x = np.array([0.3, -0.7, 1.2])
    with pytest.raises(UnsupportedError, match="reads this function's variables by name"):
        sg.jvp(reads_locals, (x,), (np.ones(3),), mode="s2s")


class Point:
    def __init__(self, v):
        self.v = v


def reads_an_objects_vars(x):
    return np.sum(vars(Point(2.0))["v"] * x)


def test_vars_of_an_object_is_kept():
    x = np.array([0.3, -0.7, 1.2])
    assert_close(call_twice(sg.grad(reads_an_objects_vars, mode="s2s"), x), np.full(3, 2.0))
