"""Fields of a library function's named-tuple result read by name in forward mode:
``r = np.linalg.slogdet(a); r.logabsdet`` raised AttributeError ("'tuple' object has no
attribute 'logabsdet'") from the generated JVP code, because the rule gives the result's
tangent as a plain tuple. The field's tangent is now taken by its place in the named tuple.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def slogdet_fields(a):
    r = np.linalg.slogdet(a)
    return r.sign * r.logabsdet


def eigh_fields(a):
    result = np.linalg.eigh(a + a.T)
    return np.sum(result.eigenvalues * np.arange(1.0, a.shape[-1] + 1.0)) + np.sum(
        result.eigenvectors[..., 0] ** 2 * a[..., 0]
    )


def svd_fields(a):
    result = np.linalg.svd(a, full_matrices=False)
    return np.sum(result.S**2) + np.sum(result.U[..., 0] ** 2 * a[..., 0])


def well_conditioned(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("f", [slogdet_fields, eigh_fields, svd_fields])
def test_named_fields_in_every_mode(f, n, mode):
    x = well_conditioned((n, n), n)
    v = np.random.default_rng(n + 10).normal(size=(n, n))
    assert_grad_jvp_and_hvp(f, x, v, mode)


@pytest.mark.parametrize("mode", MODES)
def test_jvp_of_the_named_log_determinant_is_the_trace(mode):
    a = well_conditioned((3, 3), 5)
    t = np.random.default_rng(6).normal(size=(3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, tangent = sg.jvp(lambda m: np.linalg.slogdet(m).logabsdet, (a,), (t,), mode=mode)
    assert_close(tangent, np.trace(np.linalg.solve(a, t)))
