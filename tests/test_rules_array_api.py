"""NumPy 2's array-API names (s2sgrad/rules/array_api.py) beyond the one sample each of
tests/test_coverage.py: their axes, orders and options, in s2s, auto and tape against
central differences, forward mode against finite differences of the value, and the
complex values they refuse. Skipped where the installed NumPy lacks the name."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_gradient_in_every_mode, numeric_jvp

import s2sgrad as sg
from s2sgrad.errors import S2SGradError

rng = np.random.default_rng(2018)


def needs(module, name):
    return pytest.mark.skipif(not hasattr(module, name), reason=f"NumPy {np.__version__}")


def _weights(shape):
    return np.linspace(0.5, 1.5, int(np.prod(shape))).reshape(shape)


def loss(out):
    """A weighted sum, so that every entry of ``out`` counts differently."""
    return np.sum(out * _weights(np.shape(out)))


CASES = [
    (np.linalg, "vector_norm", lambda x: loss(np.linalg.vector_norm(x)), (3, 4)),
    (np.linalg, "vector_norm", lambda x: loss(np.linalg.vector_norm(x, ord=1, axis=0)), (3, 4)),
    (np.linalg, "vector_norm", lambda x: loss(np.linalg.vector_norm(x, ord=np.inf)), (3, 4)),
    (
        np.linalg,
        "vector_norm",
        lambda x: loss(np.linalg.vector_norm(x, ord=3, axis=-1, keepdims=True)),
        (2, 3),
    ),
    (np.linalg, "matrix_norm", lambda x: loss(np.linalg.matrix_norm(x, ord=1)), (2, 3, 3)),
    (
        np.linalg,
        "matrix_norm",
        lambda x: loss(np.linalg.matrix_norm(x, ord="nuc", keepdims=True)),
        (2, 3, 2),
    ),
    (np.linalg, "matrix_norm", lambda x: loss(np.linalg.matrix_norm(x, ord=2)), (3, 3)),
    (np.linalg, "trace", lambda x: loss(np.linalg.trace(x)), (2, 3, 3)),
    (np.linalg, "trace", lambda x: loss(np.linalg.trace(x, offset=-1)), (4, 3)),
    (np.linalg, "diagonal", lambda x: loss(np.linalg.diagonal(x, offset=-1)), (2, 3, 3)),
    (np.linalg, "cross", lambda x: loss(np.linalg.cross(x, x[::-1] ** 2)), (4, 3)),
    (np.linalg, "vecdot", lambda x: loss(np.linalg.vecdot(x, x[0] + 1.0, axis=-1)), (3, 4)),
    (np.linalg, "svdvals", lambda x: loss(np.linalg.svdvals(x)), (4, 3)),
    (np.linalg, "outer", lambda x: loss(np.linalg.outer(x, x**2)), (3,)),
    (np.linalg, "matmul", lambda x: loss(np.linalg.matmul(x, x.T)), (3, 2)),
    (np.linalg, "tensordot", lambda x: loss(np.linalg.tensordot(x, x)), (2, 3)),
    (np, "vecdot", lambda x: loss(np.vecdot(x, x[:1] * 2.0)), (3, 4)),
    (np, "matvec", lambda x: loss(np.matvec(x, x[0])), (3, 3)),
    (np, "vecmat", lambda x: loss(np.vecmat(x[0], x)), (3, 3)),
    (np, "matrix_transpose", lambda x: loss(np.matrix_transpose(x) @ x), (2, 3)),
    (np, "unstack", lambda x: loss(np.unstack(x)[1] * 3.0), (3, 2)),
    (np, "unstack", lambda x: loss(np.stack(np.unstack(x, axis=-1)[::-1])), (2, 3)),
    (np, "cumulative_sum", lambda x: loss(np.cumulative_sum(x**2)), (4,)),
    (np, "cumulative_sum", lambda x: loss(np.cumulative_sum(x, include_initial=True)), (4,)),
    (np, "cumulative_sum", lambda x: loss(np.cumulative_sum(x, axis=0)), (3, 2)),
    (np, "cumulative_prod", lambda x: loss(np.cumulative_prod(x, include_initial=True)), (4,)),
    (
        np,
        "cumulative_prod",
        lambda x: loss(np.cumulative_prod(x, axis=-1, include_initial=True)),
        (2, 3),
    ),
]
IDS = [f"{case[1]}-{i}" for i, case in enumerate(CASES)]


@pytest.mark.parametrize(("module", "name", "f", "shape"), CASES, ids=IDS)
def test_gradient_in_every_mode(module, name, f, shape):
    if not hasattr(module, name):
        pytest.skip(f"NumPy {np.__version__} has no {name}")
    x = rng.uniform(0.5, 2.0, shape)
    assert_gradient_in_every_mode(f, (x,))


@pytest.mark.parametrize(("module", "name", "f", "shape"), CASES, ids=IDS)
def test_forward_mode(module, name, f, shape):
    if not hasattr(module, name):
        pytest.skip(f"NumPy {np.__version__} has no {name}")
    x = rng.uniform(0.5, 2.0, shape)
    tangent = rng.standard_normal(shape)
    expected = numeric_jvp(f, (x,), 0, tangent)
    for mode in ("s2s", "tape"):
        _, actual = sg.jvp(f, (x,), (tangent,), mode=mode)
        assert_close(actual, expected, rtol=1e-5, atol=1e-7)


@needs(np.linalg, "vector_norm")
def test_vector_norm_of_a_matrix_is_the_norm_of_its_entries():
    """With no axis, vector_norm flattens (np.linalg.norm's ord=1 of a matrix is the
    largest column sum, a different function)."""
    x = rng.standard_normal((3, 4))
    for mode in ("s2s", "tape"):
        gradient = sg.grad(lambda x: np.linalg.vector_norm(x, ord=1), mode=mode)(x)
        assert_close(gradient, np.sign(x))


@needs(np, "cumulative_prod")
def test_float32_stays_float32():
    x = rng.uniform(0.5, 2.0, (2, 3)).astype(np.float32)
    for _, name, f, shape in CASES:
        if shape == (2, 3) and hasattr(np.linalg, name) | hasattr(np, name):
            for mode in ("s2s", "tape"):
                assert sg.grad(f, mode=mode)(x).dtype == np.float32


@needs(np.linalg, "vecdot")
@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_products_that_conjugate_refuse_complex_values(mode):
    """vecdot and vecmat conjugate their first argument: their rules are for real values,
    and complex ones are refused, never differentiated wrongly."""
    z = rng.standard_normal(3) + 1j * rng.standard_normal(3)

    def f(z):
        return np.real(np.linalg.vecdot(z, z * 2.0))

    with pytest.raises(S2SGradError):
        sg.grad(f, mode=mode)(z)
