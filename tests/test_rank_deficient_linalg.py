"""Matrix functions at a singular or rank-deficient matrix.

* ``np.linalg.slogdet`` of a singular matrix: log|det| is -inf and has no derivative; its
  rules called ``inv``/``solve`` and NumPy's ``LinAlgError`` reached the user from the
  generated code. Refused now, naming the user's line.
* ``np.linalg.pinv`` of a rank-deficient matrix jumps as the rank changes: its full-rank
  formula gave a finite, wrong gradient silently. Refused now, as ``lstsq`` is.
* A zero singular value (``svd(a, compute_uv=False)``, ``norm(a, "nuc")``, ``norm(a, -2)``):
  its derivative was taken from singular vectors whose signs LAPACK picks at random; it now
  contributes as ``abs`` does at 0 (nothing), which is what central differences give.
"""

import os
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")
HERE = os.path.basename(__file__)
RANK_DEFICIENT = [(3, 3, 2), (4, 3, 2), (2, 4, 1), (3, 5, 2)]  # rows, columns, rank


def low_rank(rows, columns, rank, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(rows, rank)) @ rng.normal(size=(rank, columns))


def log_abs_det(a):
    return np.linalg.slogdet(a)[1] * 2.0


def pinv_energy(a):
    return np.sum(np.linalg.pinv(a) ** 2)


def singular_value_sum(a):
    return np.sum(np.linalg.svd(a, compute_uv=False) * 1.5)


def nuclear_norm(a):
    return np.linalg.norm(a, "nuc") * 2.0


def smallest_singular_value(a):
    return np.linalg.norm(a, -2) + np.sum(a**2) * 0.1


def _quiet(thunk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return thunk()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [2, 3])
def test_slogdet_of_a_singular_matrix_is_refused(mode, size):
    a = np.random.default_rng(size).normal(size=(size, size))
    a[-1] = 0.0  # exactly singular: log|det| is -inf
    with pytest.raises(sg.NonDifferentiableError, match="singular") as refused:
        _quiet(lambda: sg.grad(log_abs_det, mode=mode)(a))
    assert f"{HERE}:" in str(refused.value)
    with pytest.raises(sg.NonDifferentiableError, match="singular"):
        _quiet(lambda: sg.jvp(log_abs_det, (a,), (np.ones_like(a),), mode=mode))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [2, 3])
def test_slogdet_of_an_invertible_matrix_is_differentiated(mode, size):
    a = np.random.default_rng(size).normal(size=(size, size)) + size * np.eye(size)
    got = _quiet(lambda: call_twice(sg.grad(log_abs_det, mode=mode), a))
    assert_close(got, numeric_grad(log_abs_det, [a], 0), rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows, columns, rank", RANK_DEFICIENT)
def test_pinv_of_a_rank_deficient_matrix_is_refused(mode, rows, columns, rank):
    a = low_rank(rows, columns, rank, seed=rows + columns)
    with pytest.raises(sg.NonDifferentiableError, match="rank-deficient") as refused:
        _quiet(lambda: sg.grad(pinv_energy, mode=mode)(a))
    assert f"{HERE}:" in str(refused.value)
    with pytest.raises(sg.NonDifferentiableError, match="rank-deficient"):
        _quiet(lambda: sg.jvp(pinv_energy, (a,), (np.ones_like(a),), mode=mode))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 5)])
def test_pinv_of_a_full_rank_matrix_is_differentiated(mode, shape):
    a = np.random.default_rng(sum(shape)).normal(size=shape)
    got = _quiet(lambda: call_twice(sg.grad(pinv_energy, mode=mode), a))
    assert_close(got, numeric_grad(pinv_energy, [a], 0), rtol=1e-5, atol=1e-6)


SPECTRAL = [singular_value_sum, nuclear_norm, smallest_singular_value]


@pytest.mark.parametrize("f", SPECTRAL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("rows, columns, rank", RANK_DEFICIENT)
def test_a_zero_singular_value_contributes_nothing(f, mode, rows, columns, rank):
    a = low_rank(rows, columns, rank, seed=3 * rows + columns)
    got = _quiet(lambda: call_twice(sg.grad(f, mode=mode), a))
    assert_close(got, numeric_grad(f, [a], 0), rtol=1e-5, atol=1e-6)
    direction = np.random.default_rng(rows).normal(size=a.shape)
    _, tangent = _quiet(lambda: sg.jvp(f, (a,), (direction,), mode=mode))
    assert_close(tangent, numeric_jvp(f, [a], 0, direction), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", SPECTRAL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", MODES)
def test_full_rank_spectral_functions_are_unchanged(f, mode):
    a = np.random.default_rng(5).normal(size=(4, 3))
    got = _quiet(lambda: call_twice(sg.grad(f, mode=mode), a))
    assert_close(got, numeric_grad(f, [a], 0), rtol=1e-5, atol=1e-6)
