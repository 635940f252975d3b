"""``np.quantile`` / ``np.percentile`` with NumPy's other methods, which JAX's quantile tests
use: all but ``"linear"`` were refused ("the other methods pick or round to sample values").
The interpolating methods of Hyndman and Fan (``"hazen"``, ``"weibull"``,
``"median_unbiased"``, ``"normal_unbiased"``, ``"interpolated_inverted_cdf"``) mix two
sorted values by a fraction linear in ``q``, and ``"lower"``, ``"higher"``, ``"nearest"`` and
``"midpoint"`` pick one (or the middle of two): all are differentiated now, in ``a`` and in
``q``. The discontinuous inverted-CDF methods stay refused.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp, grad_jvp_and_hvp_oracle

from s2sgrad.runtime.scientific import quantile_cells

MODES = ["s2s", "auto", "tape"]
INTERPOLATING = ["linear", "hazen", "weibull", "median_unbiased", "normal_unbiased"]
INTERPOLATING += ["interpolated_inverted_cdf"]
PICKING = ["lower", "higher", "nearest", "midpoint"]
LEVELS = np.array([0.05, 0.3, 0.62, 0.97])


# One function per case, made once: the modes differentiate the same function (mode "auto"
# takes the code mode "s2s" built) and compare with one oracle
@functools.cache
def in_the_values(method, axis, percent=False):
    def f(x):
        if percent:
            values = np.percentile(x, 100.0 * LEVELS, axis=axis, method=method)
        else:
            values = np.quantile(x, LEVELS, axis=axis, method=method)
        return np.sum(values * np.cos(np.arange(np.size(values)).reshape(np.shape(values))))

    return f


@functools.cache
def in_the_levels(method):
    def f(q):
        return np.sum(np.quantile(DATA, q, method=method) ** 2)

    return f


@functools.cache
def oracle_in_the_values(method, shape, axis, percent):
    f = in_the_values(method, axis, percent)
    return grad_jvp_and_hvp_oracle(f, distinct(shape, seed=len(shape)), direction(shape))


@functools.cache
def oracle_in_the_levels(method):
    return grad_jvp_and_hvp_oracle(in_the_levels(method), LEVELS_ASKED, LEVELS_DIRECTION)


def direction(shape):
    return np.random.default_rng(3).normal(size=shape)


def distinct(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.permutation(np.linspace(-2.0, 2.0, int(np.prod(shape)))).reshape(shape) + 0.01 * (
        rng.normal(size=shape)
    )


DATA = distinct((6,), seed=4)
LEVELS_ASKED = np.array([0.13, 0.41, 0.77])  # away from the samples' levels
LEVELS_DIRECTION = np.array([1.0, -0.5, 2.0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape, axis", [((7,), None), ((3, 5), 1), ((4, 3), 0)])
@pytest.mark.parametrize("method", INTERPOLATING + PICKING)
def test_derivative_in_the_values(method, shape, axis, mode):
    x = distinct(shape, seed=len(shape))
    v = direction(shape)
    for percent in (False, True):
        expected = oracle_in_the_values(method, shape, axis, percent)
        assert_grad_jvp_and_hvp(in_the_values(method, axis, percent), x, v, mode, expected)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", INTERPOLATING + PICKING)
def test_derivative_in_the_levels(method, mode):
    f, expected = in_the_levels(method), oracle_in_the_levels(method)
    assert_grad_jvp_and_hvp(f, LEVELS_ASKED, LEVELS_DIRECTION, mode, expected)


@pytest.mark.parametrize("method", INTERPOLATING + PICKING)
@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_the_cells_give_numpys_quantiles(method, n):
    rng = np.random.default_rng(n)
    a = np.sort(rng.normal(size=n))
    q = np.concatenate([rng.random(12), [0.0, 0.25, 0.5, 1.0]])
    for scale in (1.0, 0.01):
        lower, upper, _, rate, offset = quantile_cells(n, q / scale, method, None, scale)
        fraction = (q / scale) * rate + offset
        mixed = (lower + fraction[:, None] * (upper - lower)) @ a
        np.testing.assert_allclose(mixed, np.quantile(a, q, method=method), atol=1e-12)
