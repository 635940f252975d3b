"""``np.putmask(t, m, v)`` writes ``v`` (cycled over ``t``'s flat positions) where ``m``
holds. It was refused by both engines (an in-place write with no rule); source
transformation now writes it as ``t[...] = np.where(m, np.resize(v, np.shape(t)), t)``,
and the tape writes a tape value so, as it does ``np.copyto``. Into a plain array, the tape
refuses a differentiated ``v`` (as it does for ``np.copyto``), naming the line.

Checked against central differences at random points, several shapes, first and second
order, each transform called twice."""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_putmask.py"
R = np.random.default_rng(9120)
MODES = ["s2s", "auto", "tape"]


def same_size(x, y):
    t = x * 1.0
    np.putmask(t, t > 0.0, np.exp(np.tanh(y)))
    return np.sum(np.tanh(t * y) * np.ravel(x)[0])


def cycled(x, y):
    t = np.sin(x) * 2.0
    np.putmask(t, t > 0.1, np.ravel(y)[:2] * 3.0)
    return np.sum(t**2 * y)


@pytest.mark.parametrize("f", [same_size, cycled])
@pytest.mark.parametrize("shape", [(5,), (2, 3)])
@pytest.mark.parametrize("mode", MODES)
def test_the_written_array_differentiated(f, shape, mode):
    x, y = R.normal(size=shape), R.normal(size=shape)
    expected = numeric_grad(f, [x, y], 0)
    transformed = sg.grad(f, mode=mode)
    for _ in range(2):
        assert_close(transformed(x, y), expected, rtol=1e-5, atol=1e-7)
    direction = R.normal(size=shape)
    _, tangent = sg.jvp(f, (x, y), (direction, None), mode=mode)
    assert_close(float(tangent), float(np.sum(expected * direction)), rtol=1e-5)
    (product,) = sg.hvp(lambda x: f(x, y), (x,), (direction,), mode=mode)
    gradient = sg.grad(lambda x: f(x, y), mode="tape")
    assert_close(product, numeric_jvp(gradient, [x], 0, direction), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("f", [same_size, cycled])
@pytest.mark.parametrize("shape", [(4,), (3, 2)])
def test_the_written_values_differentiated(f, shape):
    x, y = R.normal(size=shape), R.normal(size=shape)
    expected = numeric_grad(f, [x, y], 1)
    # the tape takes the plain array t over as a tape value (tape/values._taken_over_plain)
    for mode in ("s2s", "auto", "tape"):
        assert_close(sg.grad(f, wrt=1, mode=mode)(x, y), expected, rtol=1e-5, atol=1e-7)
