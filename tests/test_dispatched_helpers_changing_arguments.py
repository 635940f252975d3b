"""A helper that changes its argument in place, called as a function known only when it
runs (from a list, passed in as an argument): its derivative works on a copy of the
argument, so the code around the call, transformed without knowing the call changes the
array, went on with the array as it was, a silently wrong gradient and jvp. Source
transformation now refuses the call, naming the user's line; mode "auto" takes the whole
function to the tape, which follows the change. A helper that only rebinds its parameter
(``v = v.copy()``, ``total += x`` of a number) is still differentiated by source.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_hvp_matches_differences,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg

RNG = np.random.default_rng(1407)


def scale_first(v, s):
    v[0] = v[0] * s[0]
    return v * s


def scale_all(v, s):
    v *= s
    return v * 2.0


def from_a_list(x, y):
    z = x * 1.0
    r = [scale_first][0](z, y)
    return np.sum(r * z) + np.sum(z**2)


def updating_in_place(x, y):
    z = x * 1.0
    for fn in [scale_all]:
        r = fn(z, y)
    return np.sum(r * z)


def apply(fn, v, s):
    return fn(v, s)


def passed_as_an_argument(x, y):
    z = x * 1.0
    return np.sum(apply(scale_first, z, y) * z)


@pytest.mark.parametrize("f", [from_a_list, updating_in_place, passed_as_an_argument])
def test_refused_by_source_transformation_and_right_in_auto(f):
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    for refused_call in (
        lambda: sg.grad(f, wrt=(0, 1), mode="s2s")(x, y),
        lambda: sg.jvp(f, (x, y), (x, y), mode="s2s"),
    ):
        with pytest.raises(sg.UnsupportedError, match="changes its argument v in place") as e:
            refused_call()
        assert f"{__file__}:" in str(e.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = call_twice(sg.grad(f, wrt=(0, 1), mode="auto"), x, y)
        _, tangent = sg.jvp(f, (x, y), (y, x), mode="auto")
    assert_close(gradient[0], numeric_grad(f, [x, y], 0))
    assert_close(gradient[1], numeric_grad(f, [x, y], 1))
    assert_close(tangent, numeric_jvp(lambda t: f(x + t * y, y + t * x), [0.0], 0, 1.0))
    # the gradient of mode "auto", on the tape of forward mode, refuses the call too (its
    # arguments are tape values) and takes the tape: the product was wrong
    assert_hvp_matches_differences(f, (x, y), mode="auto")


def copy_first(v, s):
    v = v.copy()
    v[0] = v[0] * s[0]
    return v * s


def accumulate(total, v):
    total += np.sum(v)
    return total


def rebinding_helpers(x, y):
    fs = [copy_first]
    return np.sum(fs[0](x * 1.0, y) ** 2) + [accumulate][0](1.0, x * y) ** 2


def test_helpers_rebinding_their_parameters_are_differentiated():
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    gradient = call_twice(sg.grad(rebinding_helpers, wrt=(0, 1), mode="s2s"), x, y)
    assert_close(gradient[0], numeric_grad(rebinding_helpers, [x, y], 0))
    assert_close(gradient[1], numeric_grad(rebinding_helpers, [x, y], 1))
