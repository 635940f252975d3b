"""np.linalg.det of a singular matrix: its derivative is the matrix of cofactors, which a
singular matrix has too (det(a) * inv(a).T is only its form for an invertible one). The
rule raised LinAlgError there; here it is checked against central differences in every
mode, in forward mode and to second order."""

import warnings

import numpy as np
import pytest
from oracle import call_twice, numeric_grad

import s2sgrad as sg

SINGULAR = [
    np.array([[1.0, 2.0], [2.0, 4.0]]),
    np.zeros((3, 3)),
    np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]),  # rank 2
    np.array([[[1.0, 0.0], [0.0, 0.0]], [[2.0, 1.0], [1.0, 3.0]]]),  # a stack, one singular
]
IDS = ["rank1", "zero3", "rank2", "stack"]


def total_det(a):
    return np.sum(np.linalg.det(a))


@pytest.mark.parametrize("a", SINGULAR, ids=IDS)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_gradient_of_a_singular_determinant(a, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = call_twice(sg.grad(total_det, mode=mode), a)
    np.testing.assert_allclose(gradient, numeric_grad(total_det, (a,), 0), atol=1e-7)


@pytest.mark.parametrize("a", SINGULAR, ids=IDS)
def test_tangent_of_a_singular_determinant(a):
    direction = np.linspace(-1.0, 1.0, a.size).reshape(a.shape)
    _, tangent = sg.jvp(total_det, (a,), (direction,), mode="s2s")
    expected = np.sum(numeric_grad(total_det, (a,), 0) * direction)
    np.testing.assert_allclose(tangent, expected, atol=1e-7)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_hessian_of_a_singular_determinant(mode):
    a = SINGULAR[2]
    hessian = sg.hessian(total_det, mode=mode)(a)
    expected = np.stack(
        [
            numeric_grad(lambda v, k=k: np.ravel(sg.grad(total_det, mode="tape")(v))[k], (a,), 0)
            for k in range(a.size)
        ]
    ).reshape(a.shape * 2)
    np.testing.assert_allclose(hessian, expected, atol=1e-6)
