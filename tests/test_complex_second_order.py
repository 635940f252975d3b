"""Second order at complex points in s2s: through the rules generated code calls at run
time, list appends, and complex numbers as cotangents.

``np.einsum`` and ``np.linalg.matrix_power`` are called, not inlined: a derivative of the
generated gradient transforms their rule bodies (``s2sgrad/compiler/called_rules.py``),
which build lists (a comprehension, ``powers.append``). Each program is checked at a
complex point in s2s and on the tape (einsum's and matrix_power's in mode "auto" too,
which must stay in s2s): the gradient, the VJP of the gradient (reverse over reverse),
``hvp`` and the JVP of the gradient (forward over reverse), against central differences
of the tape's gradient under docs/complex.md's convention. The einsum forms reach every
branch of its rule: a repeated letter (a diagonal), a letter summed in one operand alone,
``...`` with a stretched size-1 axis, an implicit output, the sublist form. Scalar results
make the cotangent a rule gets, and the seed of ``np.imag``, a complex number.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import numeric_complex_grad

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning

MODES = ("s2s", "tape", "auto")
STEP = 1e-6
rng = np.random.default_rng(13)


def cnormal(*shape):
    return rng.normal(size=shape) + 1j * rng.normal(size=shape)


W = cnormal(3, 3)


def einsum_forms(a, b):
    diagonal = np.einsum("ii->i", a) ** 2
    summed_alone = np.einsum("ij,jk->i", a, b)
    stacked = np.einsum("...ij,...jk->...ik", a[None], np.stack([b, 2.0 * b]))
    implicit = np.einsum("ij,jk", a, a)
    sublists = np.einsum(a, [0, 1], b, [1, 2], [0, 2])
    return (
        np.sum(np.real(diagonal * W[0]) + np.imag(summed_alone * W[1]))
        + np.sum(np.real(stacked * W[:, :2]))
        + np.sum(np.real(implicit * W))
        + np.sum(np.imag(sublists))
    )


def matrix_powers(a):
    cube = np.linalg.matrix_power(a, 3)
    inverse_square = np.linalg.matrix_power(a, -2)
    return np.sum(np.real(cube * W) + np.imag(inverse_square)) + np.real(
        np.sum(np.linalg.matrix_power(a, 1) * W)
    )


def scalar_products(a, b):
    """Scalar results: the cotangent the rules get is a complex number."""
    vectors = np.imag(np.inner(a[0], b[:, 0]) ** 2)
    everything = np.real(np.einsum("ij,ij->", a, a * b[:, :1]) ** 2)
    return vectors + everything + np.imag(np.tensordot(a, a, axes=2) ** 2)


def other_called_rules(a):
    """The other rules called rather than inlined; the svd through functions blind to a
    singular pair's phase (docs/complex.md)."""
    q, r = np.linalg.qr(a)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    blind = np.sum(np.abs(u) ** 2 * np.real(W[:, :2])) + np.sum(s**3)
    pair = np.sum(np.real(u[:, :1] @ vh[:1] * W[:, :2]))
    moved = np.sum(np.real(a.transpose() @ a * W[:2, :2]))
    products = np.sum(np.imag(np.kron(a, a[:1]) ** 2)) + np.sum(np.real(q * W[:, :2]))
    return blind + pair + moved + products + np.sum(np.imag(r**2 * W[:2, :2]))


def imaginary_square(z):
    return np.imag(np.sum(z) ** 2)


def list_appends(z):
    powers = [z**k for k in range(1, 4)]
    sines = []
    for p in powers:
        sines.append(np.sin(p))
    return np.sum(np.real(sum(sines) * W[0]))


def _listed(gradient):
    """``gradient``, giving a tuple for one argument too."""

    def listed(*args):
        result = gradient(*args)
        return result if isinstance(result, tuple) else (result,)

    return listed


CASES = [
    (einsum_forms, (cnormal(3, 3), cnormal(3, 2))),
    (matrix_powers, (cnormal(3, 3) * 0.5 + 2.0 * np.eye(3),)),
    (scalar_products, (cnormal(3, 3), cnormal(3, 2))),
    (other_called_rules, (cnormal(3, 2),)),
    (imaginary_square, (cnormal(2),)),
    (list_appends, (cnormal(3) * 0.5,)),
]

AUTO_TOO = {einsum_forms, matrix_powers}  # mode="auto" compiles anew: the two only


@pytest.mark.parametrize("loss, args", CASES, ids=[f.__name__ for f, _ in CASES])
def test_second_order_at_a_complex_point(loss, args):
    wrt = tuple(range(len(args))) if len(args) > 1 else 0
    oracle_gradient = _listed(sg.grad(loss, wrt=wrt, mode="tape"))
    weights = tuple(cnormal(*np.shape(a)) for a in args)
    tangents = tuple(cnormal(*np.shape(a)) for a in args)

    def h(*args):  # a real function of the gradient
        pairs = zip(weights, oracle_gradient(*args))
        return sum(np.sum(np.real(np.conj(c) * g)) for c, g in pairs)

    indices = range(len(args))
    first = [numeric_complex_grad(loss, args, i) for i in indices]
    second = [numeric_complex_grad(h, args, i) for i in indices]
    up = oracle_gradient(*(a + STEP * t for a, t in zip(args, tangents)))
    down = oracle_gradient(*(a - STEP * t for a, t in zip(args, tangents)))
    along = [(u - d) / (2 * STEP) for u, d in zip(up, down)]
    for mode in MODES if loss in AUTO_TOO else ("s2s", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", FallbackWarning)  # auto stays in s2s
            gradient = sg.grad(loss, wrt=wrt, mode=mode)
            _, pullback = sg.vjp(gradient, *args, mode=mode)
            cotangent = tuple(np.conj(c) for c in weights)
            results = {
                "grad": gradient(*args),
                "grad of grad": pullback(cotangent if len(args) > 1 else cotangent[0]),
                "hvp": sg.hvp(loss, args, tangents, mode=mode),
                "jvp of grad": sg.jvp(gradient, args, tangents, mode=mode)[1],
            }
        expected = {"grad": first, "grad of grad": second, "hvp": along, "jvp of grad": along}
        for what, got in results.items():
            got = got if isinstance(got, tuple) else (got,)
            for i in indices:
                np.testing.assert_allclose(
                    got[i], expected[what][i], rtol=1e-5, atol=1e-6, err_msg=f"{mode}: {what} {i}"
                )
