"""Reductions with a ``where=`` mask, and the ``initial=`` of ``prod``, ``max`` and ``min``:
``np.mean(x, where=m)``, ``np.var``, ``np.std``, ``np.prod``, ``np.max`` and ``np.min`` with
those keywords were refused ("np.mean with the keyword where= has no derivative rule"), in
every mode; only ``np.sum`` took them. The masked entries now get no cotangent, ``mean``,
``var`` and ``std`` count the kept entries only, and ``initial=`` is differentiated.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, call_twice, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
SHAPES = [(5,), (3, 4), (2, 3, 4)]


def mask(shape, seed=0):
    rng = np.random.default_rng(seed)
    kept = rng.random(shape) > 0.4
    kept.flat[:: max(1, shape[-1] - 1)] = True  # every group along any axis keeps some
    kept[..., 0] = True
    if len(shape) > 1:
        kept[0] = True
    return kept


def point(shape, seed=1):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, size=shape)


def smooth_reductions(m):
    def mean_all(x):
        return np.mean(x**3, where=m)

    def mean_last_axis(x):
        return np.sum(np.mean(x**2, axis=-1, where=m) * np.sin(np.sum(x)))

    def mean_first_axis_kept(x):
        return np.sum(np.mean(np.sin(x), axis=0, keepdims=True, where=m) * x)

    def var_all(x):
        return np.var(x, where=m)

    def var_last_axis_ddof(x):
        return np.sum(np.var(x * np.cos(x), axis=-1, ddof=1, where=m) ** 2)

    def std_first_axis(x):
        return np.sum(np.std(x, axis=0, where=m))

    def prod_masked(x):
        return np.prod(x, where=m)

    def prod_last_axis_initial(x):
        return np.sum(np.prod(x, axis=-1, initial=1.5, where=m))

    def method_mean(x):
        return x.mean(where=m) * x.std(where=m)

    return [
        mean_all,
        mean_last_axis,
        mean_first_axis_kept,
        var_all,
        var_last_axis_ddof,
        std_first_axis,
        prod_masked,
        prod_last_axis_initial,
        method_mean,
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
def test_smooth_reductions_with_a_mask(shape, mode):
    m = mask(shape)
    x = point(shape)
    v = np.random.default_rng(2).normal(size=shape)
    for f in smooth_reductions(m):
        if f.__name__ in ("var_last_axis_ddof",) and np.min(np.sum(m, axis=-1)) < 2:
            continue
        assert_grad_jvp_and_hvp(f, x, v, mode)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
def test_extrema_with_a_mask_and_an_initial_value(shape, mode):
    m = mask(shape, seed=3)
    x = point(shape, seed=4)

    def masked_max(y):
        return np.max(y**2, where=m, initial=-10.0)

    def masked_min_last_axis(y):
        return np.sum(np.min(np.sin(y), axis=-1, where=m, initial=10.0) ** 2)

    def max_method(y):
        return y.max(axis=0, where=m, initial=-10.0).sum()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f in (masked_max, masked_min_last_axis, max_method):
            assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
            t = np.random.default_rng(5).normal(size=shape)
            _, tangent = sg.jvp(f, (x,), (t,), mode=mode)
            assert_close(tangent, np.sum(numeric_grad(f, [x], 0) * t))


@pytest.mark.parametrize("mode", MODES)
def test_the_initial_value_takes_the_derivative_where_it_wins(mode):
    def bounded_max(x, floor):
        return np.max(x, initial=floor) * 2.0

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(bounded_max, wrt=(0, 1), mode=mode)
        d_x, d_floor = gradient(np.array([1.0, 2.0]), 3.0)
        assert_close(d_x, np.zeros(2))
        assert_close(d_floor, 2.0)
        d_x, d_floor = gradient(np.array([1.0, 4.0]), 3.0)
        assert_close(d_x, np.array([0.0, 2.0]))
        assert_close(d_floor, 0.0)

        def scaled_prod(x, start):
            return np.prod(x, initial=start)

        x = point((4,), seed=6)
        d_x, d_start = sg.grad(scaled_prod, wrt=(0, 1), mode=mode)(x, 1.7)
        assert_close(d_x, numeric_grad(scaled_prod, [x, 1.7], 0))
        assert_close(d_start, np.prod(x))


@pytest.mark.parametrize("mode", MODES)
def test_per_example_gradients_of_a_masked_mean(mode):
    m = mask((2, 3), seed=7)

    def loss(x):
        return np.mean(x**2, axis=1, where=m)[0] + np.var(x, where=m)

    batch = point((4, 2, 3), seed=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        per_example = sg.vmap(sg.grad(loss, mode=mode))(batch)
    for example, gradient in zip(batch, per_example):
        assert_close(gradient, numeric_grad(loss, [example], 0))
