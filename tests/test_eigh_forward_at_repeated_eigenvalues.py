"""Forward mode through ``np.linalg.eigh`` at repeated eigenvalues.

A function of the eigenvalues alone (symmetric in the repeated ones) has a tangent there,
which every engine gives. A function that combines the eigenvectors of a repeated
eigenvalue (a matrix function ``V f(w) V^T``) has none that forward mode can tell: its JVP
rule leaves the eigenvectors' tangent NaN there, and source transformation used to return
that NaN as the tangent (``sg.jvp``, ``sg.jacfwd``); it is now refused, naming the line,
as the tape and reverse mode refuse it."""

import numpy as np
import pytest
from oracle import assert_close

import s2sgrad as sg

HERE = "test_eigh_forward_at_repeated_eigenvalues.py"
R = np.random.default_rng(4411)
MODES = ["s2s", "auto", "tape"]
WEIGHTS = np.arange(16.0).reshape(4, 4)


def _with_eigenvalues(values):
    q, _ = np.linalg.qr(R.normal(size=(len(values), len(values))))
    a = q @ np.diag(values) @ q.T
    return (a + a.T) / 2


def _symmetric(n):
    t = R.normal(size=(n, n))
    return t + t.T


def eigenvalues_only(a):
    w, _ = np.linalg.eigh(a)
    return np.sum(w**2) + np.sum(np.exp(0.1 * w))


def matrix_function(a):
    w, v = np.linalg.eigh(a)
    return np.sum(((v * w**2) @ v.T) * WEIGHTS)


def _directional(f, a, t, step=1e-6):
    return (f(a + step * t) - f(a - step * t)) / (2 * step)


@pytest.mark.parametrize("values", [[1.0, 1.0, 3.0, 5.0], [2.0, 2.0, 2.0, -1.0]])
@pytest.mark.parametrize("mode", MODES)
def test_a_function_of_the_eigenvalues_has_a_tangent(values, mode):
    a = _with_eigenvalues(values)
    t = _symmetric(4)
    expected = _directional(eigenvalues_only, a, t)
    for _ in range(2):
        _, tangent = sg.jvp(eigenvalues_only, (a,), (t,), mode=mode)
        assert_close(float(tangent), float(expected), rtol=1e-5)
        jacobian = sg.jacfwd(eigenvalues_only, mode=mode)(a)
        assert_close(float(np.sum(jacobian * t)), float(expected), rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_a_matrix_function_at_repeated_eigenvalues_is_refused(mode):
    a = _with_eigenvalues([1.0, 1.0, 3.0, 5.0])
    t = _symmetric(4)
    with pytest.raises(sg.NonDifferentiableError, match="repeated eigenvalues") as refused:
        sg.jvp(matrix_function, (a,), (t,), mode=mode)
    assert f"{HERE}:" in str(refused.value)
    with pytest.raises(sg.NonDifferentiableError, match="repeated eigenvalues"):
        sg.jacfwd(matrix_function, mode=mode)(a)


@pytest.mark.parametrize("mode", MODES)
def test_a_matrix_function_at_distinct_eigenvalues_has_a_tangent(mode):
    a = _with_eigenvalues([1.0, 1.5, 3.0, 5.0])
    t = _symmetric(4)
    _, tangent = sg.jvp(matrix_function, (a,), (t,), mode=mode)
    assert_close(float(tangent), float(_directional(matrix_function, a, t)), rtol=1e-5)
