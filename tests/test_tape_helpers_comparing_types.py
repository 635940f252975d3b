"""The tape reads the source of the user's helpers too for ``type(v)`` compared: a helper
called from the taped function runs on the tape's values, whose class is not NumPy's, so
``type(v) is np.ndarray`` would take the other branch (round 34: the tape gave zero)."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

R = np.random.default_rng(34)


def doubled_if_array(v):
    return v * 2.0 if type(v) is np.ndarray else v * 0.0


def through_one_helper(x):
    return np.sum(doubled_if_array(x) ** 2)


def squared_doubled(v):
    return doubled_if_array(v) ** 2


def through_two_helpers(x):
    return np.sum(squared_doubled(x) * x)


def plain_helper(v):
    return np.tanh(v) * 3.0


def through_a_plain_helper(x):
    return np.sum(plain_helper(x) ** 2)


@pytest.mark.parametrize("f", [through_one_helper, through_two_helpers], ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_a_helper_comparing_type_is_refused_on_the_tape_and_auto_is_right(f, shape):
    x = R.normal(size=shape)
    with pytest.raises(
        sg.UnsupportedError, match=r"test_tape_helpers_comparing_types\.py:\d+: type"
    ):
        sg.grad(f, mode="tape")(x)
    expected = numeric_grad(f, (x,), 0)
    for mode in ("s2s", "auto"):
        assert_close(sg.grad(f, mode=mode)(x), expected)
        assert_close(sg.grad(f, mode=mode)(x), expected)  # a later call too


def test_a_helper_that_compares_no_type_runs_on_the_tape():
    x = R.normal(size=(2, 3))
    expected = numeric_grad(through_a_plain_helper, (x,), 0)
    assert_close(sg.grad(through_a_plain_helper, mode="tape")(x), expected)
    v = R.normal(size=(2, 3))
    (product,) = sg.hvp(through_a_plain_helper, (x,), (v,), mode="tape")
    gradient = sg.grad(through_a_plain_helper, mode="s2s")
    h = 1e-5
    assert_close(product, (gradient(x + h * v) - gradient(x - h * v)) / (2 * h), rtol=1e-5)
