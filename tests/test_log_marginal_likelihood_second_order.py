"""A Gaussian-process log marginal likelihood that takes both ``np.linalg.slogdet`` and
``scipy.linalg.cho_solve``: its Hessian-vector product by source transformation. The
derivative of slogdet had a complex literal in its branch for complex matrices, so the
transformer took the gradient's code for code that makes complex values, and refused
cho_solve (not declared right for complex values) in it. The branch now computes
``1j * Im(z)`` as ``z - Re(z)``; complex slogdet keeps its derivatives (checked here
against differences of its real and imaginary parts)."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp
from scipy.linalg import cho_solve

import s2sgrad as sg

R = np.random.default_rng(2026)


def log_marginal_likelihood(log_theta, X, y):
    ell, sf, sn = np.exp(log_theta)
    d = X[:, None, :] - X[None, :, :]
    K = sf**2 * np.exp(-0.5 * np.sum(d**2, -1) / ell**2) + sn**2 * np.eye(len(X))
    L = np.linalg.cholesky(K)
    alpha = cho_solve((L, True), y)
    _, logdet = np.linalg.slogdet(K)
    return -0.5 * y @ alpha - 0.5 * logdet


@pytest.mark.parametrize("points", [1, 3, 6])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_hessian_vector_product(points, mode):
    args = (
        np.array([0.1, 0.2, -1.0]) + 0.1 * R.normal(size=3),
        R.normal(size=(points, 2)),
        R.normal(size=points),
    )
    direction = R.normal(size=3)

    def along(log_theta):
        return log_marginal_likelihood(log_theta, *args[1:])

    gradient = sg.grad(along, mode="tape")
    assert_close(gradient(args[0]), numeric_grad(along, [args[0]], 0), rtol=1e-5)
    expected = numeric_jvp(gradient, [args[0]], 0, direction)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # no fallback to the tape
        for _ in range(2):
            product = sg.hvp(along, (args[0],), (direction,), mode=mode)[0]
            assert_close(product, expected, rtol=1e-4, atol=1e-6)
        hessian = sg.hessian(along, mode=mode)(args[0])
    assert_close(hessian @ direction, expected, rtol=1e-4, atol=1e-6)


def _complex_log_determinant(re, im):
    a = re + 1j * im
    sign, logdet = np.linalg.slogdet(a)
    return np.real(sign) * 0.3 + np.imag(sign) * 0.7 + logdet


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_complex_slogdet_first_and_forward(mode):
    re = R.normal(size=(3, 3)) + 3 * np.eye(3)
    im = R.normal(size=(3, 3))
    for index in (0, 1):
        expected = numeric_grad(_complex_log_determinant, [re, im], index)
        got = sg.grad(_complex_log_determinant, wrt=index, mode=mode)(re, im)
        assert_close(got, expected, rtol=1e-5, atol=1e-7)
    tangents = (R.normal(size=(3, 3)), R.normal(size=(3, 3)))
    _, tangent = sg.jvp(_complex_log_determinant, (re, im), tangents, mode=mode)

    def moved(t):
        return _complex_log_determinant(re + t * tangents[0], im + t * tangents[1])

    assert_close(tangent, numeric_jvp(moved, [0.0], 0, 1.0), rtol=1e-5, atol=1e-7)
