"""``scipy.linalg.lu_factor`` and ``lu_solve``: factor once, solve many times (a
Crank-Nicolson heat step, Newton's method), differentiated in every mode against central
differences, to second order. Both were refused ("no derivative rule")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg as sl
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]


def solves(A, b):
    lu, piv = sl.lu_factor(A)
    x = sl.lu_solve((lu, piv), b)
    y = sl.lu_solve((lu, piv), x, trans=1)
    return np.sum(np.sin(x)) + np.sum(y**2) + 0.1 * np.sum(lu**2)


def crank_nicolson(u0, kappa):
    n = u0.shape[0]
    r = kappa * 0.5 * (n + 1) ** 2 * 1e-3
    L = -2.0 * np.eye(n) + np.eye(n, k=1) + np.eye(n, k=-1)
    lu_piv = sl.lu_factor(np.eye(n) - r * L)
    B = np.eye(n) + r * L
    u = u0
    total = 0.0
    for _ in range(3):
        u = sl.lu_solve(lu_piv, B @ u)
        total = total + np.sum(u**2)
    return total


def shifted(A, t, d):
    return [a + t * e for a, e in zip(A, d)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("n", "columns"), [(1, None), (3, None), (4, 2), (5, 3)])
def test_factor_and_solves(mode, n, columns):
    rng = np.random.default_rng(10 * n + (columns or 0))
    A = rng.normal(size=(n, n)) + 0.5 * np.eye(n)
    b = rng.normal(size=n if columns is None else (n, columns))
    direction = (rng.normal(size=A.shape), rng.normal(size=b.shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = sg.grad(solves, wrt=(0, 1), mode=mode)
        for _ in range(2):
            for got, i in zip(g(A, b), (0, 1)):
                assert_close(got, numeric_grad(solves, [A, b], i), rtol=1e-5, atol=1e-7)
        _, tangent = sg.jvp(solves, (A, b), direction, mode=mode)
        along = numeric_jvp(lambda t: solves(*shifted((A, b), t, direction)), [0.0], 0, 1.0)
        assert_close(tangent, along, rtol=1e-5, atol=1e-7)
        products = sg.hvp(solves, (A, b), direction, mode=mode)
    gradient = sg.grad(solves, wrt=(0, 1), mode="tape")
    expected = numeric_jvp(lambda t: gradient(*shifted((A, b), t, direction)), [0.0], 0, 1.0)
    for got, want in zip(products, expected):
        assert_close(got, want, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_crank_nicolson_heat_steps(mode):
    rng = np.random.default_rng(4)
    u0, kappa = np.sin(np.linspace(0, 3, 6)) + 0.1 * rng.normal(size=6), 0.7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = sg.grad(crank_nicolson, wrt=(0, 1), mode=mode)(u0, kappa)
    for got, i in zip(g, (0, 1)):
        assert_close(got, numeric_grad(crank_nicolson, [u0, kappa], i), rtol=1e-5, atol=1e-8)


def rectangular(A):
    lu, piv = sl.lu_factor(A)
    return np.sum(lu**2)


def conjugate_transpose(A, b):
    return np.sum(sl.lu_solve(sl.lu_factor(A), b, trans=2) ** 2)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_what_is_not_differentiated_is_refused(mode):
    rng = np.random.default_rng(1)
    with pytest.raises(sg.S2SGradError, match="square"):
        sg.grad(rectangular, mode=mode)(rng.normal(size=(3, 2)))
    with pytest.raises(sg.S2SGradError, match="trans=1"):
        sg.grad(conjugate_transpose, mode=mode)(rng.normal(size=(3, 3)), rng.normal(size=3))
