"""``eigh``, ``eigvalsh`` and ``cholesky`` read one triangle of their input, and their rules
treat the input as symmetric. A visibly unsymmetric input would get a gradient that is not
the derivative of what NumPy computed: it is refused at the user's line, in every engine,
in reverse and forward mode. Symmetric inputs keep their gradients."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
UNSYMMETRIC = np.array([[4.0, 0.3, -0.2], [1.1, 3.0, 0.4], [0.5, -0.7, 5.0]])


def eigenvalues_upper(a):
    return np.sum(np.sin(np.linalg.eigh(a, UPLO="U")[0]))


def eigenvalues_lower(a):
    return np.sum(np.linalg.eigvalsh(a) ** 3)


def eigenvectors(a):
    return np.sum(np.linalg.eigh(a)[1][:, 0] ** 2 * np.arange(3.0))


def cholesky_factor(a):
    return np.sum(np.linalg.cholesky(a) ** 2 * np.arange(9.0).reshape(3, 3))


FUNCTIONS = [eigenvalues_upper, eigenvalues_lower, eigenvectors, cholesky_factor]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", FUNCTIONS)
def test_an_unsymmetric_input_is_refused_at_the_users_line(f, mode):
    with pytest.raises(sg.NonDifferentiableError, match="not symmetric") as caught:
        sg.grad(f, mode=mode)(UNSYMMETRIC)  # asks for the gradient
    assert str(caught.value).startswith(f"{__file__}:{_line_of('# asks for the gradient')}: ")
    with pytest.raises(sg.NonDifferentiableError, match="not symmetric"):
        sg.jvp(f, (UNSYMMETRIC,), (np.ones((3, 3)),), mode=mode)


def _line_of(marker):
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if line.rstrip().endswith(marker))


def symmetrised(f):
    def through_the_symmetric_part(b):
        return f((b + b.T) / 2.0)

    return through_the_symmetric_part


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", FUNCTIONS)
def test_a_symmetric_input_keeps_its_gradient(f, mode):
    b = UNSYMMETRIC
    g = sg.grad(f, mode=mode)((b + b.T) / 2.0)
    expected = numeric_grad(symmetrised(f), [b], 0)
    np.testing.assert_allclose((g + g.T) / 2.0, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", range(6))
def test_a_product_rounded_in_single_precision_then_promoted_is_symmetric(mode, seed):
    # a @ a^H in complex64 plus a float64 identity is complex128 (NumPy 2) yet symmetric
    # only to single precision: NumPy 2.0 on Python 3.12 refused it at a 1e-8 tolerance
    rng = np.random.default_rng(seed)
    a = (rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))).astype(np.complex64) * 2.0

    def loss(a):
        return np.sum(np.abs(np.linalg.cholesky(a @ np.conj(a.T) + np.eye(3))) ** 2)

    gradient = sg.grad(loss, mode=mode)(a)
    assert gradient.shape == a.shape and np.all(np.isfinite(gradient))
