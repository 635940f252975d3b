"""Programs from round 31's adversarial hunt that were silently wrong, crashed, changed the
caller's data or were refused without the user's line.

* ``y.round(1, out=y)`` on the tape: the method's ``out=`` was not followed (only the
  methods of ``_OUT_FOLLOWED`` were), so NumPy wrote the rounded values into the tape
  value's array while the tape still took ``y`` for what it held before: the gradient
  flowed through the rounding as if it were the identity. ``y`` holds a constant now.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg


def _rounded_through_the_method(x):
    y = x * 3.0
    y.round(1, out=y)
    return np.sum(y * x) + np.sum(np.sin(x))


def _rounded_into_an_array_made_from_x(x):
    y = x.copy()
    y.round(out=y)
    return np.sum(y * x**2)


@pytest.mark.parametrize("f", [_rounded_through_the_method, _rounded_into_an_array_made_from_x])
@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_a_method_rounding_a_tape_value_into_itself_makes_it_a_constant(f, mode):
    rng = np.random.default_rng(3)
    # away from the points where rounding jumps, which central differences would cross
    x = np.round(rng.uniform(-2.0, 2.0, size=(3, 4)), 1) / 3.0 + 0.013
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
        v = rng.standard_normal(x.shape)
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(f, [x], 0, v))
