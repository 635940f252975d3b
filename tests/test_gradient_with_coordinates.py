"""``np.gradient(f, x)`` with coordinate arrays: derivatives in ``f`` and in ``x``.

A physics-informed loss reads ``np.gradient(u, x)`` on a grid of points; the grid itself
may be a parameter (a moving mesh). Both are checked against central differences in every
mode, to first and second order, and in forward mode.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_hvp_matches_differences, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")


def _grid(rng, n):
    return np.cumsum(rng.uniform(0.4, 1.3, n))


def residual_loss(u, x, c):
    du = np.gradient(u, x)
    d2u = np.gradient(du, x)
    return np.mean((d2u + c * u)[1:-1] ** 2) + (u[0] - 1.0) ** 2


def second_order_edges(u, x):
    return np.sum(np.sin(np.gradient(u, x, edge_order=2)) * x)


def along_rows(f, x):
    return np.sum(np.gradient(f, x, axis=1) ** 2)


def per_axis(f, y, x):
    rows, columns = np.gradient(f, y, x)
    return np.sum(rows * columns) + np.sum(np.cos(columns))


def mixed_spacings(f, h, x):
    rows, columns = np.gradient(f, h, x, edge_order=2)
    return np.sum(rows**2) + np.sum(columns * f)


def _check_every_mode(f, args, wrt, rtol=1e-5):
    expected = [numeric_grad(f, args, i) for i in wrt]
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = sg.grad(f, wrt=wrt, mode=mode)
            for _ in range(2):
                for got, want in zip(g(*args), expected):
                    assert_close(got, want, rtol=rtol, atol=1e-7)


@pytest.mark.parametrize("n", [3, 6, 9])
def test_residual_loss_in_the_values_the_grid_and_the_coefficient(n):
    rng = np.random.default_rng(n)
    args = [rng.normal(size=n), _grid(rng, n), 1.7]
    _check_every_mode(residual_loss, args, (0, 1, 2))


@pytest.mark.parametrize("n", [3, 7])
def test_second_order_edges(n):
    rng = np.random.default_rng(10 + n)
    _check_every_mode(second_order_edges, [rng.normal(size=n), _grid(rng, n)], (0, 1))


def test_two_points_with_first_order_edges():
    rng = np.random.default_rng(2)
    _check_every_mode(
        lambda u, x: np.sum(np.gradient(u, x) ** 3), [rng.normal(size=2), _grid(rng, 2)], (0, 1)
    )


@pytest.mark.parametrize("shape", [(1, 5), (3, 4)])
def test_coordinates_along_one_axis_of_a_matrix(shape):
    rng = np.random.default_rng(sum(shape))
    _check_every_mode(along_rows, [rng.normal(size=shape), _grid(rng, shape[1])], (0, 1))


def test_one_coordinate_array_per_axis():
    rng = np.random.default_rng(4)
    _check_every_mode(per_axis, [rng.normal(size=(4, 5)), _grid(rng, 4), _grid(rng, 5)], (0, 1, 2))


def test_a_scalar_spacing_and_coordinates_together():
    rng = np.random.default_rng(5)
    args = [rng.normal(size=(3, 4)), 0.7, _grid(rng, 4)]
    _check_every_mode(mixed_spacings, args, (0, 1, 2))


@pytest.mark.parametrize("mode", MODES)
def test_hessian_vector_products(mode):
    rng = np.random.default_rng(6)
    assert_hvp_matches_differences(second_order_edges, [rng.normal(size=5), _grid(rng, 5)], mode)
    assert_hvp_matches_differences(along_rows, [rng.normal(size=(2, 4)), _grid(rng, 4)], mode)


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode_in_the_values_and_the_grid(mode):
    rng = np.random.default_rng(7)
    u, x = rng.normal(size=6), _grid(rng, 6)
    du, dx = rng.normal(size=6), rng.normal(size=6)

    def both(t):
        return np.gradient(u + t * du, x + t * dx, edge_order=2)

    expected = numeric_jvp(both, [0.0], 0, 1.0)
    for _ in range(2):
        value, tangent = sg.jvp(
            lambda a, b: np.gradient(a, b, edge_order=2), (u, x), (du, dx), mode=mode
        )
        assert_close(value, np.gradient(u, x, edge_order=2), rtol=1e-12)
        assert_close(tangent, expected, rtol=1e-5, atol=1e-7)
