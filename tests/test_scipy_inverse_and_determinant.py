"""scipy.linalg.inv and scipy.linalg.det differentiate as NumPy's do (they were refused as
having no rule), in every mode, forward mode and to second order; overwrite_a=True, which
may destroy the matrix the derivative reads, is refused."""

import warnings

import numpy as np
import pytest
from oracle import call_twice, numeric_grad
from scipy import linalg

import s2sgrad as sg

A = np.array([[0.4, -0.3, 0.8], [0.1, 0.9, -0.5], [0.7, 0.2, 0.65]])
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])


def inverse_energy(a):
    return np.sum(linalg.inv(a) ** 2)


def determinant(a):
    return linalg.det(a) * 2.0


def determinant_positional(a):
    return linalg.det(a, False, True) ** 2


@pytest.mark.parametrize("f", [inverse_energy, determinant, determinant_positional])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("a", [A, SINGULAR], ids=["invertible", "singular"])
def test_gradient(f, mode, a):
    if f is inverse_energy and a is SINGULAR:
        pytest.skip("no inverse")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = call_twice(sg.grad(f, mode=mode), a)
    np.testing.assert_allclose(gradient, numeric_grad(f, (a,), 0), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("f", [inverse_energy, determinant])
def test_forward_and_second_order(f):
    direction = np.linspace(-1.0, 1.0, 9).reshape(3, 3)
    _, tangent = sg.jvp(f, (A,), (direction,), mode="s2s")
    np.testing.assert_allclose(tangent, np.sum(numeric_grad(f, (A,), 0) * direction), rtol=1e-5)
    product = sg.hvp(f, (A,), (direction,), mode="s2s")[0]
    expected = numeric_grad(lambda a: np.sum(sg.grad(f, mode="tape")(a) * direction), (A,), 0)
    np.testing.assert_allclose(product, expected, rtol=1e-4, atol=1e-6)


def test_overwriting_the_matrix_is_refused():
    with pytest.raises(sg.S2SGradError, match="overwrite_a"):
        sg.grad(lambda a: linalg.det(a, overwrite_a=True), mode="s2s")(A.copy())
