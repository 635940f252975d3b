"""Forms of linear-algebra functions JAX's linalg tests differentiate that were refused:
``np.linalg.qr(a, mode="r")`` ("s2sgrad differentiates np.linalg.qr in mode='reduced'"),
``np.linalg.tensorinv`` and SciPy's ``scipy.linalg.svdvals``, ``scipy.linalg.norm`` and
``scipy.linalg.qr`` ("has no derivative rule"). Each is differentiated by NumPy's rules of
what it computes; the forms with no derivative are refused with what to write instead.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.linalg as sl
from oracle import assert_grad_jvp_and_hvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def weights(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def upper_r_weighted(a):
    r = np.linalg.qr(a, mode="r")
    return np.sum(r * np.triu(weights(np.shape(r)[-2:])))


def log_abs_diagonal_of_r(a):
    r = np.linalg.qr(a, "r")
    return np.sum(np.log(np.abs(np.diagonal(r, axis1=-2, axis2=-1))))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (2, 4, 2)])
@pytest.mark.parametrize("f", [upper_r_weighted, log_abs_diagonal_of_r])
def test_qr_r_mode(f, shape, mode):
    a = weights(shape, seed=len(shape))
    assert_grad_jvp_and_hvp(f, a, weights(shape, seed=9), mode)


def tensor_inverse(ind, shape):
    w = weights(shape[ind:] + shape[:ind], seed=3)

    def f(a):
        return np.sum(np.linalg.tensorinv(a, ind=ind) * w)

    return f


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("ind, shape", [(1, (6, 2, 3)), (2, (2, 3, 6)), (2, (2, 2, 2, 2))])
def test_tensorinv(ind, shape, mode):
    side = int(np.prod(shape[:ind]))
    a = (weights((side, side), seed=4) + side * np.eye(side)).reshape(shape)
    assert_grad_jvp_and_hvp(tensor_inverse(ind, shape), a, weights(shape, seed=5), mode)


def scipy_singular_values(a):
    return np.sum(sl.svdvals(a) * np.arange(1.0, min(np.shape(a)) + 1.0))


def scipy_norms(a):
    return sl.norm(a) + np.sum(sl.norm(a, axis=0) ** 2) + sl.norm(a, 1)


def scipy_economic_qr(a):
    q, r = sl.qr(a, mode="economic")
    return np.sum(r * np.triu(weights(np.shape(r), seed=6))) + np.sum(q[:, 0] ** 2)


def scipy_square_qr(a):
    q, r = sl.qr(a)
    return np.sum(q * weights(np.shape(q), seed=7)) + np.sum(np.diag(r) ** 2)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f, shape",
    [
        (scipy_singular_values, (3, 4)),
        (scipy_singular_values, (4, 2)),
        (scipy_norms, (3, 4)),
        (scipy_economic_qr, (5, 3)),
        (scipy_economic_qr, (3, 3)),
        (scipy_square_qr, (3, 3)),
    ],
)
def test_scipy_forms_of_numpy_functions(f, shape, mode):
    a = weights(shape, seed=8)
    assert_grad_jvp_and_hvp(f, a, weights(shape, seed=10), mode)


def wide_r(a):
    return np.sum(np.linalg.qr(a, mode="r"))


def pivoting_qr(a):
    return np.sum(sl.qr(a, pivoting=True)[1])


def full_qr_of_a_tall_matrix(a):
    return np.sum(sl.qr(a)[0])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f, shape, match",
    [
        (wide_r, (2, 4), "mode='reduced' or 'r' of matrices with at least as many rows"),
        (pivoting_qr, (3, 3), "without pivoting"),
        (full_qr_of_a_tall_matrix, (4, 3), "mode='full' of a square one"),
    ],
)
def test_forms_without_a_derivative_are_refused(f, shape, match, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.NonDifferentiableError, match=match):
            sg.grad(f, mode=mode)(weights(shape, seed=11))
