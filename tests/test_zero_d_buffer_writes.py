"""Writes into a 0-d array (``o[...] = v``, ``o[()] += v``, ``np.sum(..., out=o)``).

A 0-d array's cotangent is easily a NumPy scalar (arithmetic on 0-d arrays returns one) or a
Python float (once folded), neither of which can be indexed or written; the backward sweep
of a whole-array write makes it a private 0-d array first.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg


def reduced_into_out(x):
    o = np.empty(())
    np.sum(x**2, out=o)
    return o * 1.0


def written_then_float(x):
    o = np.zeros(())
    o[...] = x[0] * x[1]
    return float(o) * 2.0


def written_then_added(x):
    o = np.zeros(())
    o[()] = x[0] * x[1]
    o[...] += x[2]
    return o * 2.0


def written_in_a_loop(x):
    o = np.array(0.0)
    for i in range(3):
        o[...] = o + x[i] ** 2
    return o.item() * 1.0 + np.sum(x)


def read_twice_then_written(x):
    o = np.zeros(())
    o[...] = np.sum(x)
    return o.sum() * o


CASES = [
    reduced_into_out,
    written_then_float,
    written_then_added,
    written_in_a_loop,
    read_twice_then_written,
]
X = np.array([0.3, -0.7, 1.2])


@pytest.mark.parametrize("function", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_gradient_of_writes_into_a_zero_d_array(function, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = call_twice(sg.grad(function, mode=mode), X)
    assert_close(gradient, numeric_grad(function, (X,), 0), rtol=1e-6)


@pytest.mark.parametrize("function", CASES, ids=lambda f: f.__name__)
def test_second_order_of_writes_into_a_zero_d_array(function):
    hessian = sg.hessian(function, mode="s2s")(X)
    expected = np.stack(
        [
            numeric_grad(lambda v, k=k: sg.grad(function, mode="s2s")(v)[k], (X,), 0)
            for k in range(3)
        ]
    )
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-6)


def test_tape_forward_mode_of_a_zero_d_write():
    # the tape's forward pass runs the write's VJP over a float cotangent
    _, tangent = sg.jvp(written_then_added, (X,), (np.ones(3),), mode="tape")
    np.testing.assert_allclose(tangent, np.sum(numeric_grad(written_then_added, (X,), 0)))
