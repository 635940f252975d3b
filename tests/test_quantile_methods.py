"""``np.quantile`` / ``np.percentile`` with NumPy's other methods, which JAX's quantile tests
use: all but ``"linear"`` were refused ("the other methods pick or round to sample values").
The interpolating methods of Hyndman and Fan (``"hazen"``, ``"weibull"``,
``"median_unbiased"``, ``"normal_unbiased"``, ``"interpolated_inverted_cdf"``) mix two
sorted values by a fraction linear in ``q``, and ``"lower"``, ``"higher"``, ``"nearest"`` and
``"midpoint"`` pick one (or the middle of two): all are differentiated now, in ``a`` and in
``q``. The discontinuous inverted-CDF methods stay refused.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_grad_jvp_and_hvp

from s2sgrad.runtime.scientific import quantile_cells

MODES = ["s2s", "auto", "tape"]
INTERPOLATING = ["linear", "hazen", "weibull", "median_unbiased", "normal_unbiased"]
INTERPOLATING += ["interpolated_inverted_cdf"]
PICKING = ["lower", "higher", "nearest", "midpoint"]
LEVELS = np.array([0.05, 0.3, 0.62, 0.97])


def in_the_values(method, axis, percent=False):
    def f(x):
        if percent:
            values = np.percentile(x, 100.0 * LEVELS, axis=axis, method=method)
        else:
            values = np.quantile(x, LEVELS, axis=axis, method=method)
        return np.sum(values * np.cos(np.arange(np.size(values)).reshape(np.shape(values))))

    return f


def in_the_levels(method, data):
    def f(q):
        return np.sum(np.quantile(data, q, method=method) ** 2)

    return f


def distinct(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.permutation(np.linspace(-2.0, 2.0, int(np.prod(shape)))).reshape(shape) + 0.01 * (
        rng.normal(size=shape)
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape, axis", [((7,), None), ((3, 5), 1), ((4, 3), 0)])
@pytest.mark.parametrize("method", INTERPOLATING + PICKING)
def test_derivative_in_the_values(method, shape, axis, mode):
    x = distinct(shape, seed=len(shape))
    v = np.random.default_rng(3).normal(size=shape)
    assert_grad_jvp_and_hvp(in_the_values(method, axis), x, v, mode)
    assert_grad_jvp_and_hvp(in_the_values(method, axis, percent=True), x, v, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", INTERPOLATING + PICKING)
def test_derivative_in_the_levels(method, mode):
    data = distinct((6,), seed=4)
    q = np.array([0.13, 0.41, 0.77])  # away from the samples' levels
    assert_grad_jvp_and_hvp(in_the_levels(method, data), q, np.array([1.0, -0.5, 2.0]), mode)


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
