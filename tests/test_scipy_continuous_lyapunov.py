"""``scipy.linalg.solve_continuous_lyapunov(a, q)``, which solves ``a x + x a^T = q`` (the
Gramians and covariances of linear systems), had no rule and was refused. It is
``solve_sylvester(a, a^T, q)``, and its rules are that one's with ``b = a^T``; complex
matrices are refused.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
from oracle import assert_grad_jvp_and_hvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def stable(n, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n)) - (n + 1.0) * np.eye(n)


def in_a_with_unsymmetric_q(n):
    q = np.random.default_rng(n).normal(size=(n, n))
    w = np.linspace(-1.0, 1.0, n * n).reshape(n, n)

    def f(a):
        return np.sum(sl.solve_continuous_lyapunov(a, q) * w)

    return f


def in_q(n):
    a = stable(n, seed=n + 1)

    def f(q):
        return np.sum(sl.solve_continuous_lyapunov(a, q) ** 2)

    return f


def in_both(n):
    def f(a):
        return np.sum(np.sin(sl.solve_continuous_lyapunov(a, a @ a.T + np.eye(n))))

    return f


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("make", [in_a_with_unsymmetric_q, in_q, in_both])
def test_lyapunov_solution(make, n, mode):
    rng = np.random.default_rng(10 + n)
    x = stable(n, seed=n) if make is not in_q else rng.normal(size=(n, n))
    assert_grad_jvp_and_hvp(make(n), x, rng.normal(size=(n, n)), mode)


def test_complex_matrices_are_refused():
    q = np.eye(2, dtype=complex)

    def f(a):
        return np.sum(np.abs(sl.solve_continuous_lyapunov(a, q)))

    with pytest.raises(sg.S2SGradError, match="complex"):
        sg.grad(f, mode="tape")(np.array([[-2.0 + 1j, 0.3], [0.1, -3.0]]))
