"""scipy.linalg's eigvalsh, svd, pinv, khatri_rao and expm_frechet
(s2sgrad/rules/scipy_linalg_twins.py): to second order, reverse and forward, in s2s, tape
and auto on a first and a later call, against central differences; what is refused names
the line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, check_grads_on_two_calls, numeric_grad
from rulecheck import assert_every_rule_is_tested

import s2sgrad as sg

linalg = pytest.importorskip("scipy.linalg")

HERE = __file__
MODES = ("s2s", "tape", "auto")
rng = np.random.default_rng(2929)


def symmetric(c):
    a = np.reshape(c, (3, 3))
    return a + a.T + np.diag([0.0, 3.0, 6.0])


def eigenvalues_upper(c, b):
    return np.sum(np.sin(linalg.eigvalsh(symmetric(c), lower=False)) * b)


def eigenvalues_lower(c, b):
    return np.sum(linalg.eigvalsh(symmetric(c) * b[0]) ** 3)


def singular_vectors(c, b):
    u, s, vh = linalg.svd(np.reshape(c, (4, 3)), full_matrices=False)
    return np.sum(s**2 * b) + np.sum(u[:, 0] ** 4) + np.sum(vh[0] ** 4)


def singular_values(c, b):
    return np.sum(np.sin(linalg.svd(np.reshape(c, (3, 4)), compute_uv=False)) * b)


def pseudo_inverse(c, b):
    weights = np.arange(12.0).reshape(3, 4)
    return np.sum(linalg.pinv(np.reshape(c, (4, 3)) * b[0]) ** 2 * weights)


def columnwise_kronecker(c, b):
    weights = np.arange(12.0).reshape(6, 2)
    product = linalg.khatri_rao(np.reshape(c[:6], (3, 2)), np.reshape(b[:2] * c[6:8], (1, 2)))
    return np.sum(product**2 * weights[:3])


def frechet_with_exponential(c, b):
    exponential, derivative = linalg.expm_frechet(np.reshape(c[:4], (2, 2)) * 0.5, b[:4])
    return np.sum(exponential * np.arange(4.0).reshape(2, 2)) + np.sum(derivative**2)


def frechet_alone(c, b):
    a = np.reshape(c[:4], (2, 2)) * 0.5
    return np.sum(np.sin(linalg.expm_frechet(a, np.reshape(b[:4], (2, 2)), compute_expm=False)))


CASES = [
    (eigenvalues_upper, rng.normal(size=9), rng.normal(size=3)),
    (eigenvalues_lower, rng.normal(size=9), rng.uniform(0.5, 1.5, 3)),
    (singular_vectors, rng.normal(size=12), rng.normal(size=3)),
    (singular_values, rng.normal(size=12), rng.normal(size=3)),
    (pseudo_inverse, rng.normal(size=12), rng.uniform(0.5, 1.5, 3)),
    (columnwise_kronecker, rng.normal(size=8), rng.normal(size=3)),
    (frechet_with_exponential, rng.normal(size=4), rng.normal(size=(2, 2))),
    (frechet_alone, rng.normal(size=4), rng.normal(size=4)),
]
IDS = [case[0].__name__ for case in CASES]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("f", "a", "b"), CASES, ids=IDS)
def test_second_order_reverse_and_forward_against_differences(f, a, b, mode):
    check_grads_on_two_calls(f, (a, b), mode)


@pytest.mark.parametrize(("f", "a", "b"), CASES, ids=IDS)
def test_gradient_against_central_differences(f, a, b):
    expected = [numeric_grad(f, (a, b), i) for i in (0, 1)]
    for mode in MODES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(f, wrt=(0, 1), mode=mode)
            for _ in range(2):
                for actual, wanted in zip(gradient(a, b), expected):
                    assert_close(actual, wanted, rtol=1e-5, atol=1e-7)


def overwritten(c):
    return np.sum(linalg.svd(np.reshape(c, (3, 3)), overwrite_a=True, compute_uv=False))


def with_rank(c):
    return np.sum(linalg.pinv(np.reshape(c, (3, 3)), return_rank=True)[0])


def generalized(c):
    return np.sum(linalg.eigvalsh(symmetric(c), np.eye(3) * 2.0))


REFUSED = [
    (overwritten, "overwrite_a"),
    (with_rank, "return_rank"),
    (generalized, "generalized"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("f", "match"), REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_what_is_not_differentiated_is_refused_naming_the_line(f, match, mode):
    refused = pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+: .*{match}")
    with refused, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sg.grad(f, mode=mode)(rng.normal(size=9))


def test_every_rule_is_tested():
    tested = [linalg.eigvalsh, linalg.svd, linalg.pinv, linalg.khatri_rao, linalg.expm_frechet]
    assert_every_rule_is_tested(["s2sgrad.rules.scipy_linalg_twins"], tested)
