"""A helper that copies its argument, updates the copy with ``W *= 2.0`` and then writes
into it (``W[:, 1] = ...``) leaves its argument alone. The analysis of what a helper
changes looked for the binding that made ``W`` and stopped at ``W *= 2.0``, so the caller
was refused in mode="s2s" and mode="auto" ("may change its argument 'W' in place"). An
update ``W op= v`` keeps the array ``W`` held, so the binding before it decides.
"""

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
DATA = np.linspace(-1.0, 1.0, 6).reshape(2, 3)


def scaled_copy(W, x):
    W = W.copy()
    W *= 2.0
    W[:, 1] = np.tanh(W[:, 1])
    return np.sum((x @ W) ** 2)


def loss_of_scaled_copy(W):
    return scaled_copy(W, DATA)


def scaled_in_place(W, x):
    W *= 2.0
    W[:, 1] = np.tanh(W[:, 1])
    return np.sum((x @ W) ** 2)


def loss_of_scaled_in_place(W):
    return scaled_in_place(W, DATA) + np.sum(W)


@pytest.mark.parametrize("mode", MODES)
def test_helper_updating_its_own_copy(mode):
    W = np.arange(9.0).reshape(3, 3) / 10
    before = W.copy()
    got = call_twice(sg.grad(loss_of_scaled_copy, mode=mode), W)
    assert_close(got, numeric_grad(loss_of_scaled_copy, [W], 0))
    np.testing.assert_array_equal(W, before)
    (product,) = sg.hvp(loss_of_scaled_copy, (W,), (np.ones((3, 3)),), mode=mode)
    gradient = sg.grad(loss_of_scaled_copy, mode="tape")
    expected = numeric_grad(lambda t: np.sum(gradient(W + t * np.ones((3, 3)))), [0.0], 0)
    assert abs(np.sum(product) - expected) < 1e-5


def test_helper_updating_its_argument_is_still_refused_by_the_transformer():
    with pytest.raises(sg.UnsupportedError, match="may change its argument 'W'"):
        sg.grad(loss_of_scaled_in_place, mode="s2s")(np.ones((3, 3)))
