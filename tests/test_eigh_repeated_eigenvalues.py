"""``np.linalg.eigh`` at a matrix with a repeated eigenvalue: a function symmetric in the
eigenvalues, or not depending on how the repeated eigenvalue's eigenvectors are chosen,
has a derivative (given in every mode, not NaN); one that depends on that choice has none
and is refused with the user's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice

import s2sgrad as sg

REPEATED = np.diag([1.0, 1.0, 3.0])
MODES = ("s2s", "auto", "tape")


def sum_of_squared_eigenvalues(a):
    w, _ = np.linalg.eigh(a)
    return np.sum(w**2)


def exp_trace_from_eigvalsh(a):
    return np.sum(np.exp(np.linalg.eigvalsh(a)))


def distinct_eigenvector(a):
    _, v = np.linalg.eigh(a)
    return np.sum(v[:, 2] * np.array([1.0, 2.0, 3.0])) ** 2


def squared_eigenvector_entries(a):
    _, v = np.linalg.eigh(a)
    return np.sum(v**2)  # 3 for every choice of eigenvectors


def first_eigenvector(a):
    _, v = np.linalg.eigh(a)
    return np.sum(v[:, 0] * np.array([1.0, 2.0, 3.0]))


def first_eigenvalue_weighted(a):
    w, v = np.linalg.eigh(a)
    return w[0] * 2.0 + w[1]


def grads(f, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call_twice(sg.grad(f, mode=mode), REPEATED)


@pytest.mark.parametrize("mode", MODES)
def test_symmetric_functions_of_repeated_eigenvalues(mode):
    assert_close(grads(sum_of_squared_eigenvalues, mode), 2.0 * REPEATED)
    assert_close(grads(exp_trace_from_eigvalsh, mode), np.diag(np.exp([1.0, 1.0, 3.0])))


@pytest.mark.parametrize("mode", MODES)
def test_eigenvectors_that_do_not_depend_on_the_choice(mode):
    # v3 = e3 moves by (da13, da23) / (3 - 1): f = 9 + 3 da13 + 6 da23 (split over the
    # symmetric pair of entries, which the rule treats as one)
    expected = np.zeros((3, 3))
    expected[0, 2] = expected[2, 0] = 1.5
    expected[1, 2] = expected[2, 1] = 3.0
    assert_close(grads(distinct_eigenvector, mode), expected)
    assert_close(grads(squared_eigenvector_entries, mode), np.zeros((3, 3)), atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [first_eigenvector, first_eigenvalue_weighted])
def test_functions_of_the_choice_are_refused(mode, f):
    with pytest.raises(sg.NonDifferentiableError, match="repeated eigenvalues") as refused:
        grads(f, mode)
    assert "test_eigh_repeated_eigenvalues.py:" in str(refused.value)


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode_eigenvalues_at_a_repeated_one(mode):
    tangent = np.array([[0.1, 0.2, 0.0], [0.2, -0.3, 0.1], [0.0, 0.1, 0.5]])
    _, out = sg.jvp(sum_of_squared_eigenvalues, (REPEATED,), (tangent,), mode=mode)
    assert np.isclose(out, np.sum(2.0 * REPEATED * tangent))


def test_distinct_eigenvalues_unchanged():
    a = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 3.0]])
    g = sg.grad(first_eigenvector, mode="s2s")(a)
    step = 1e-6
    for i, j in [(0, 1), (1, 2)]:
        e = np.zeros((3, 3))
        e[i, j] = e[j, i] = step
        fd = (first_eigenvector(a + e) - first_eigenvector(a - e)) / (2 * step)
        assert np.isclose(g[i, j] + g[j, i], fd, rtol=1e-5)


def matrix_function_of_eigh(a):
    w, v = np.linalg.eigh(a)
    return np.sum(
        ((v * w**2) @ v.T) * np.array([[1.0, 2.0, 0.5], [2.0, -1.0, 0.3], [0.5, 0.3, 2.0]])
    )


def reconstruction(a):
    w, v = np.linalg.eigh(a)
    return np.sum((v * w) @ v.T)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [matrix_function_of_eigh, reconstruction])
@pytest.mark.parametrize("point", [REPEATED, np.eye(3)], ids=["diag(1,1,3)", "identity"])
def test_matrix_functions_at_a_repeated_eigenvalue_are_refused(mode, f, point):
    # V f(w) V^T needs f'(w) between the repeated eigenvalues' eigenvectors, which the
    # cotangents do not tell: the gradient of sum(V diag(w) V^T) at the identity is all ones,
    # where leaving the tied entries out gave the identity
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.NonDifferentiableError, match="repeated eigenvalues") as refused:
            sg.grad(f, mode=mode)(point.copy())
    assert "test_eigh_repeated_eigenvalues.py:" in str(refused.value)


@pytest.mark.parametrize("mode", MODES)
def test_matrix_functions_at_distinct_eigenvalues(mode):
    rng = np.random.default_rng(5)
    for _ in range(3):
        b = rng.normal(size=(3, 3))
        a = b + b.T
        g = sg.grad(matrix_function_of_eigh, mode=mode)(a)
        step = 1e-6
        for i, j in [(0, 0), (0, 1), (1, 2)]:
            e = np.zeros((3, 3))
            e[i, j] = e[j, i] = step
            fd = (matrix_function_of_eigh(a + e) - matrix_function_of_eigh(a - e)) / (2 * step)
            assert np.isclose(g[i, j] + g[j, i] if i != j else g[i, i], fd, rtol=1e-5)


def test_forward_mode_on_the_tape_refuses_eigenvectors_of_a_repeated_eigenvalue():
    # the tape's JVP transposes the pullback with zeros for cotangents, which cannot show
    # whether the function combines the tied eigenvectors: sum(A^2 * C) came out wrong
    tangent = np.array([[0.1, 0.2, 0.0], [0.2, -0.3, 0.1], [0.0, 0.1, 0.5]])
    with pytest.raises(sg.NonDifferentiableError, match="repeated eigenvalues") as refused:
        sg.jvp(matrix_function_of_eigh, (REPEATED,), (tangent,), mode="tape")
    assert "test_eigh_repeated_eigenvalues.py:" in str(refused.value)
    rng = np.random.default_rng(3)
    b = rng.normal(size=(3, 3))
    a = b + b.T
    _, got = sg.jvp(matrix_function_of_eigh, (a,), (tangent,), mode="tape")
    step = 1e-6
    expected = (
        matrix_function_of_eigh(a + step * tangent) - matrix_function_of_eigh(a - step * tangent)
    ) / (2 * step)
    assert np.isclose(got, expected, rtol=1e-6)
