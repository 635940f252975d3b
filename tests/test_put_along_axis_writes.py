"""``np.put_along_axis(t, indices, values, axis)``, NumPy's in-place counterpart of
``take_along_axis`` (JAX's tests differentiate both): it was refused ("np.put_along_axis
writes into 't' in place, which cannot be differentiated") in every mode. Both engines now
make it the item write ``t[along_axis_index(t, indices, axis)] = values``.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp

from s2sgrad.runtime.ufunc_methods import along_axis_index

MODES = ["s2s", "auto", "tape"]
WEIGHTS = np.linspace(-1.0, 2.0, 24)


def positions(shape, axis, seed):
    rng = np.random.default_rng(seed)
    if axis is None:
        return rng.permutation(int(np.prod(shape)))[:3]
    return np.argsort(rng.random(shape), axis=axis).take([0, 1], axis=axis)


def overwrite_own_entries(shape, axis, seed):
    indices = positions(shape, axis, seed)

    def f(x):
        y = x * 1.0
        np.put_along_axis(y, indices, 0.5, axis)
        return np.sum(np.sin(y) * WEIGHTS[: y.size].reshape(shape))

    return f


def write_computed_values(shape, axis, seed):
    indices = positions(shape, axis, seed)

    def f(x):
        y = np.cos(x)
        values = np.take_along_axis(x, indices, axis=axis) ** 2
        np.put_along_axis(y, indices, values, axis=axis)
        return np.sum(y * WEIGHTS[: y.size].reshape(shape))

    return f


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape, axis", [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -1)])
@pytest.mark.parametrize("make", [overwrite_own_entries, write_computed_values])
def test_put_along_axis(make, shape, axis, mode):
    rng = np.random.default_rng(len(shape))
    x, v = rng.normal(size=shape), rng.normal(size=shape)
    assert_grad_jvp_and_hvp(make(shape, axis, seed=1), x, v, mode)


@pytest.mark.parametrize("mode", MODES)
def test_flat_positions(mode):
    indices = np.array([0, 7, -1])

    def f(x):
        y = x + 0.0
        np.put_along_axis(y, indices, x[0, :3] ** 3, None)
        return np.sum(y**2 * WEIGHTS[:12].reshape(3, 4))

    rng = np.random.default_rng(4)
    assert_grad_jvp_and_hvp(f, rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), mode)


@pytest.mark.parametrize("shape, axis", [((3, 4), 1), ((2, 3, 4), 0), ((3, 4), None)])
def test_the_index_writes_what_numpy_writes(shape, axis):
    rng = np.random.default_rng(5)
    a = rng.normal(size=shape)
    indices = positions(shape, axis, seed=6) if axis is not None else np.array([1, -2, 5])
    values = rng.normal(size=np.shape(indices))
    expected = a.copy()
    np.put_along_axis(expected, indices, values, axis)
    written = a.copy()
    written[along_axis_index(written, indices, axis)] = values
    np.testing.assert_array_equal(written, expected)
