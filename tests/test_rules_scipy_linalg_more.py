"""Rules of scipy.linalg's toeplitz, circulant, hankel, block_diag, lu_factor / lu_solve,
logm and eigh (rules/scipy_linalg_structured.py, rules/scipy_linalg_factors.py), against
central differences at random points, first and second order, forward and reverse, in every
mode, each transform called twice (check_grads)."""

from __future__ import annotations

import warnings
from inspect import signature

import numpy as np
import pytest

import s2sgrad as sg

linalg = pytest.importorskip("scipy.linalg")

MODES = ["s2s", "auto", "tape"]
B = np.random.default_rng(1).normal(size=(4, 2))


def toeplitz_of_one_vector(c):
    return np.sum(np.tanh(linalg.toeplitz(c)) * np.arange(c.size))


def toeplitz_of_two(c):
    return np.sum(linalg.toeplitz(c, c[::-1] * 2.0) ** 2)


def toeplitz_not_square(c):
    return np.sum(np.sin(linalg.toeplitz(c[:3], c)))


def circulant_times(c):
    return np.sum(linalg.circulant(c) @ np.cos(c))


def hankel_of_one_vector(c):
    return np.sum(linalg.hankel(c) ** 2 * c[0])


def hankel_of_two(c):
    return np.sum(np.sin(linalg.hankel(c, c * 3.0)))


def blocks(c):
    a = np.outer(c, c[:2])
    return np.sum(np.sin(linalg.block_diag(a, c[0] * 2.0, c[1:3], np.eye(2) * c[2])) * 1.3)


def solved_by_lu(c):
    a = np.outer(c, c) + np.diag(c) * 0.5 + 4.0 * np.eye(c.size)
    lu, piv = linalg.lu_factor(a)
    return np.sum(linalg.lu_solve((lu, piv), B[: c.size]) ** 2) + np.sum(lu**2)


def solved_by_lu_transposed(c):
    a = np.outer(c, np.sin(c)) + 3.0 * np.eye(c.size) + np.tril(np.ones((c.size, c.size)))
    return np.sum(linalg.lu_solve(linalg.lu_factor(a), np.cos(c) * 2.0, trans=1) ** 3)


def pivoted_lu(c):
    a = np.outer(c, c[::-1]) + np.diag(np.arange(1.0, c.size + 1))[::-1] * 3.0
    lu, piv = linalg.lu_factor(a)
    return np.sum(np.sin(lu)) + np.sum(linalg.lu_solve((lu, piv), c))


def logarithm(c):
    a = np.outer(c, c) + 3.0 * np.eye(c.size) + np.diag(c)
    return np.sum(linalg.logm(a) ** 2)


def eigen(c):
    a = np.outer(c, np.cos(c))
    w, v = linalg.eigh(a + a.T + np.diag(np.arange(c.size) * 2.0))
    return np.sum(w**2) + np.sum(v[:, 0] ** 4)


def eigenvalues_upper(c):
    a = np.outer(c, c) + np.diag(np.arange(c.size) * 2.0)
    return np.sum(np.sin(linalg.eigh(a, lower=False, eigvals_only=True)))


PROGRAMS = [
    toeplitz_of_one_vector,
    toeplitz_of_two,
    toeplitz_not_square,
    circulant_times,
    hankel_of_one_vector,
    hankel_of_two,
    blocks,
    solved_by_lu,
    solved_by_lu_transposed,
    pivoted_lu,
    logarithm,
    eigen,
    eigenvalues_upper,
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [3, 4])
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_the_rule_matches_differences(f, size, mode):
    c = np.random.default_rng(size).uniform(-1.0, 1.0, size=size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        sg.check_grads(f, c, order=2, mode=mode)


def generalized(c):
    a = np.outer(c, c) + np.eye(c.size)
    return np.sum(linalg.eigh(a, np.eye(c.size) * 2.0)[0])


def logarithm_with_an_error_estimate(c):
    a = np.outer(c, c) + 3.0 * np.eye(c.size)
    return np.sum(linalg.logm(a, disp=False)[0])


@pytest.mark.parametrize("f", [generalized, logarithm_with_an_error_estimate])
def test_what_the_rules_do_not_cover_is_refused_naming_the_line(f):
    if f is logarithm_with_an_error_estimate and "disp" not in signature(linalg.logm).parameters:
        pytest.skip("SciPy 1.18 dropped logm's disp: the function itself raises TypeError")
    c = np.random.default_rng(0).normal(size=3)
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(sg.S2SGradError, match=rf"{__file__}:\d+: "):
                sg.grad(f, mode=mode)(c)
