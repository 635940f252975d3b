"""Second order through the rules generated code calls at run time (issue 13, item 3).

Rules registered with ``inline=False`` (einsum, svd, qr, matrix_power, tensordot, kron ...)
are called by generated code (``vjp_call``, ``jvp_call``), not inlined. A derivative of
that code differentiates the rule's own code by source in mode="s2s": reverse over
reverse (``grad`` of ``grad``, compiler/called_rules.py) and forward over reverse
(``hessian``, ``hvp``, runtime/dispatch.py). The oracle is central differences of the s2s
gradient (or of the function), in float64.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import directional_derivative, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.pipeline import clear_cache
from s2sgrad.errors import S2SGradError
from s2sgrad.rules import get_rule

MODES = ["s2s", "tape", "auto"]
HERE = __file__.rsplit("/", 1)[-1]

_rng = np.random.default_rng(20261126)


def r(*shape):
    return _rng.standard_normal(shape)


def einsum_chain(x):
    return np.sum(np.sin(np.einsum("ij,jk->ik", x, x)))


def einsum_diagonal_and_ellipsis(x):
    return np.sum(np.einsum("ii,...j->...j", x, x) ** 2) + np.einsum("ij,ij", x, x) ** 2


def einsum_sublists(x):
    return np.sum(np.cos(np.einsum(x, [0, 1], x, [1, 2], [0, 2])))


def singular_values(x):
    return np.sum(np.linalg.svd(x, compute_uv=False) ** 3)


def singular_vectors(x):
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    return np.sum(u[:, 0] ** 2 * np.arange(1.0, 4.0)) + np.sum(s * vh[1] ** 2)


def qr_factors(x):
    q, r = np.linalg.qr(x)
    return np.sum(np.sin(r)) + np.sum(q**3)


def matrix_cube(x):
    return np.sum(np.linalg.matrix_power(x, 3) ** 2)


def matrix_inverse_square(x):
    return np.sum(np.linalg.matrix_power(x + 3.0 * np.eye(3), -2))


def tensordot_axes(x):
    return np.sum(np.tensordot(x, np.sin(x), axes=([0], [1])) ** 2)


def kron_product(x):
    return np.sum(np.kron(x, x[:2, :2]) ** 3)


FUNCTIONS = [
    einsum_chain,
    einsum_diagonal_and_ellipsis,
    einsum_sublists,
    singular_values,
    singular_vectors,
    qr_factors,
    matrix_cube,
    matrix_inverse_square,
    tensordot_axes,
    kron_product,
]


def _point():
    return r(3, 3) + np.diag([3.0, 1.0, -2.0])  # distinct singular values, full rank


def _quietly(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _expected_hessian(f, x):
    """Central differences of the s2s gradient, one column per entry of x."""
    gradient = sg.grad(f, mode="s2s")
    columns = []
    for k in range(x.size):
        direction = np.zeros(x.size)
        direction[k] = 1.0
        columns.append(directional_derivative(gradient, x, direction.reshape(x.shape)))
    return np.stack(columns, axis=-1).reshape(x.shape + x.shape)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_hessian_through_a_called_rule(f, mode):
    x = _point()
    actual = _quietly(sg.hessian(f, mode=mode), x)
    np.testing.assert_allclose(actual, _expected_hessian(f, x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_hvp_through_a_called_rule(f, mode):
    x, v = _point(), r(3, 3)
    (actual,) = _quietly(sg.hvp, f, (x,), (v,), mode=mode)
    expected = directional_derivative(sg.grad(f, mode="s2s"), x, v)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_grad_of_grad_through_a_called_rule(f, mode):
    """Reverse over reverse: the gradient of <grad f(x), v> is H v."""
    x, v = _point(), r(3, 3)
    gradient = sg.grad(f, mode=mode)

    def along_v(x):
        return np.sum(gradient(x) * v)

    actual = _quietly(sg.grad(along_v, mode=mode), x)
    expected = directional_derivative(sg.grad(f, mode="s2s"), x, v)
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_check_grads_to_second_order_in_s2s(f):
    _quietly(sg.check_grads, f, _point(), order=2, mode="s2s")


# ---------------------------------------------------------------------------------------
# A called rule whose code the transformer cannot differentiate is refused, at the user's
# line, in mode="s2s"; the tape differentiates it, and mode="auto" falls back to the tape.

KRON_VJP = get_rule(np.kron).vjp


def kron_vjp_putting(g, ans, a, b):
    da, db = KRON_VJP(g, ans, a, b)
    if np.ndim(da) < 0:  # never true: its in-place put is what the transformer refuses
        da.put([0], 0.0)
    return da, db


@pytest.fixture
def untransformable_kron_rule(monkeypatch):
    monkeypatch.setattr(get_rule(np.kron), "vjp", kron_vjp_putting)
    yield
    clear_cache()


def kron_cubed(x):
    return np.sum(np.kron(x, x[:2]) ** 3)


def test_a_called_rule_the_transformer_cannot_follow_is_refused_in_s2s(
    untransformable_kron_rule,
):
    x, v = r(3), r(3)
    gradient = sg.grad(kron_cubed, mode="s2s")
    expected_gradient = numeric_grad(kron_cubed, (x,), 0)
    np.testing.assert_allclose(gradient(x), expected_gradient, rtol=1e-5)  # first order

    def along_v(x):
        return np.sum(gradient(x) * v)

    with pytest.raises(S2SGradError, match=rf"{HERE}:\d+.*rule at run time.*put.*mode='tape'"):
        sg.grad(along_v, mode="s2s")(x)
    with pytest.raises(S2SGradError, match=rf"{HERE}:\d+.*rule of kron at run time.*put"):
        sg.hvp(kron_cubed, (x,), (v,), mode="s2s")
    expected = directional_derivative(gradient, x, v)
    for mode in ("tape", "auto"):
        (product,) = _quietly(sg.hvp, kron_cubed, (x,), (v,), mode=mode)
        np.testing.assert_allclose(product, expected, rtol=1e-4, atol=1e-5)
