"""A helper returning a tuple (``return value, flag``) whose entries the caller reads more
than once: the caller's cotangent of the tuple gathers one part per read. They were added
with ``+``, which runs right on the tuples but differentiates again (hvp, hessian) as
numeric addition: mode="s2s" and mode="auto" crashed with NumPy's "inhomogeneous shape"
ValueError. A name bound to what such a helper returns adds its parts entry by entry now.
"""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def scaled_with_flag(x):
    return x * 2.0, True


def reads_twice(x):
    pair = scaled_with_flag(x)
    return np.sum(pair[0] ** 2) + np.sum(np.sin(pair[0])) * pair[1]


def moments(x):
    return np.mean(x), np.var(x), len(x)


def standardised(x):
    stats = moments(x)
    return np.sum(((x - stats[0]) / np.sqrt(stats[1])) ** 3) + stats[0] * stats[2]


@pytest.mark.parametrize("f", [reads_twice, standardised], ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", MODES)
def test_second_order_through_a_helper_returning_a_tuple(f, mode):
    x, v = np.array([0.3, -0.5, 0.8]), np.array([1.0, 0.5, -2.0])
    assert_close(sg.grad(f, mode=mode)(x), numeric_grad(f, [x], 0))
    gradient = sg.grad(f, mode="tape")
    for _ in range(2):
        (product,) = sg.hvp(f, (x,), (v,), mode=mode)
        assert_close(product, numeric_jvp(gradient, [x], 0, v), rtol=1e-5, atol=1e-6)
