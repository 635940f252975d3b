"""``np.asanyarray``, ``np.ascontiguousarray`` and ``np.asfortranarray`` of a value being
differentiated: the values of ``np.asarray`` (the last two at least 1-d), laid out
otherwise. They had no derivative rule, so source transformation refused them (and mode
"auto" then failed on the tape too, for the two that NumPy does not dispatch to it).

Checked against central differences at random points, several shapes, first and second
order, in reverse and forward mode, each transform called twice."""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

R = np.random.default_rng(6127)


def any_array(x):
    return np.sum(np.asanyarray(x) ** 3)


def contiguous_transpose(x):
    return np.sum(np.ascontiguousarray(x.T) * np.sin(x.T))


def fortran_with_dtype(x):
    return np.sum(np.asfortranarray(x, dtype=np.float64) ** 2 * x)


def contiguous_scalar(x):
    return np.sum(np.ascontiguousarray(np.sum(x)) * x)


def any_array_of_a_list(x):
    return np.sum(np.asanyarray([np.ravel(x)[0], np.ravel(x)[1] * 2.0]) ** 2)


FUNCTIONS = [
    any_array,
    contiguous_transpose,
    fortran_with_dtype,
    contiguous_scalar,
    any_array_of_a_list,
]


@pytest.mark.parametrize("f", FUNCTIONS)
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_layout_conversions_are_differentiated(f, shape, mode):
    x = R.normal(size=shape)
    expected = numeric_grad(f, [x], 0)
    transformed = sg.grad(f, mode=mode)
    for _ in range(2):
        assert_close(transformed(x), expected, rtol=1e-5, atol=1e-7)
    direction = R.normal(size=shape)
    _, tangent = sg.jvp(f, (x,), (direction,), mode=mode)
    assert_close(float(tangent), float(np.sum(expected * direction)), rtol=1e-5)
    (product,) = sg.hvp(f, (x,), (direction,), mode=mode)
    gradient = sg.grad(f, mode="tape") if f is any_array else sg.grad(f, mode="s2s")
    assert_close(product, numeric_jvp(gradient, [x], 0, direction), rtol=1e-4, atol=1e-6)
