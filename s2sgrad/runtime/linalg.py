"""Helpers for the derivatives of matrix products and linear solves.

``np.matmul`` and ``np.dot`` treat 1-D operands, scalars and stacks differently, so the
cotangent of each operand is a helper that looks at the operands' dimensions:
``matmul_cotangent_a(g, a, b)`` is the cotangent of ``a`` when ``g`` is that of ``a @ b``.

A product is bilinear, so its cotangent helpers are linear in ``g`` and in the *other*
operand and only read the shape of their own one. Their derivatives are therefore the
product itself and the other helper (for example the adjoint of ``g -> g @ b.T`` is
``h -> h @ b``), and the generated code that calls them can be differentiated again.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from s2sgrad.errors import NonDifferentiableError
from s2sgrad.rules.registry import batches_as_is, jvp_rule, nondifferentiable, vjp_rule
from s2sgrad.runtime.core import unbroadcast
from s2sgrad.runtime.dispatch import backward_hooks_apply

__all__ = [
    "matmul_cotangent_a",
    "matmul_cotangent_b",
    "dot_cotangent_a",
    "dot_cotangent_b",
    "rhs_as_matrix",
    "einsum_subscripts",
    "operand_dtype",
    "eigh_gap_mask",
    "eigh_tangent_mask",
]


# ---------------------------------------------------------------------------------------
# np.matmul (and the @ operator): 1-D operands are promoted and stacks broadcast.


def matmul_cotangent_a(g: Any, a: Any, b: Any) -> Any:
    """The cotangent of ``a`` when ``g`` is the cotangent of ``np.matmul(a, b)``.

    Batch dimensions that broadcasting added are summed away.

    Example::

        a, b = np.ones((2, 3)), np.ones((3, 4))
        matmul_cotangent_a(np.ones((2, 4)), a, b)  # g @ b.T, shape (2, 3)
    """
    if np.ndim(b) == 1:
        return np.expand_dims(g, -1) * b
    b_t = np.swapaxes(b, -1, -2)
    if np.ndim(a) == 1:
        return unbroadcast(np.matmul(np.expand_dims(g, -2), b_t)[..., 0, :], a)
    return unbroadcast(np.matmul(g, b_t), a)


batches_as_is(matmul_cotangent_a)  # right on batched values as it is


def matmul_cotangent_b(g: Any, a: Any, b: Any) -> Any:
    """The cotangent of ``b`` when ``g`` is the cotangent of ``np.matmul(a, b)``.

    Example::

        a, b = np.ones((2, 3)), np.ones((3, 4))
        matmul_cotangent_b(np.ones((2, 4)), a, b)  # a.T @ g, shape (3, 4)
    """
    if np.ndim(a) == 1:
        if np.ndim(b) == 1:
            return g * a
        return np.expand_dims(a, -1) * np.expand_dims(g, -2)
    if np.ndim(b) == 1:
        return unbroadcast(np.matmul(np.expand_dims(g, -2), a)[..., 0, :], b)
    return unbroadcast(np.matmul(np.swapaxes(a, -1, -2), g), b)


batches_as_is(matmul_cotangent_b)  # right on batched values as it is


# <h, matmul_cotangent_a(g, a, b)> = <g, h @ b>, and <h, matmul_cotangent_b(g, a, b)> =
# <g, a @ h>: differentiating those right-hand sides gives the rules.


@vjp_rule(matmul_cotangent_a)
def _matmul_cotangent_a_vjp(h, ans, g, a, b):
    return np.matmul(h, b), None, matmul_cotangent_b(g, h, b)


@jvp_rule(matmul_cotangent_a)
def _matmul_cotangent_a_jvp(t, ans, g, a, b):
    return matmul_cotangent_a(t, a, b), None, matmul_cotangent_a(g, a, t)


@vjp_rule(matmul_cotangent_b)
def _matmul_cotangent_b_vjp(h, ans, g, a, b):
    return np.matmul(a, h), matmul_cotangent_a(g, a, h), None


@jvp_rule(matmul_cotangent_b)
def _matmul_cotangent_b_jvp(t, ans, g, a, b):
    return matmul_cotangent_b(t, a, b), matmul_cotangent_b(g, t, b), None


# ---------------------------------------------------------------------------------------
# np.dot: a scalar operand multiplies; otherwise the last axis of a is contracted with the
# last axis of a 1-D b or the second-to-last of an N-D b (no broadcasting).


def dot_cotangent_a(g: Any, a: Any, b: Any) -> Any:
    """The cotangent of ``a`` when ``g`` is the cotangent of ``np.dot(a, b)``.

    Example::

        a, b = np.ones((2, 3)), np.ones((5, 3, 4))
        dot_cotangent_a(np.ones((2, 5, 4)), a, b).shape  # (2, 3)
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    if np.ndim(b) == 1:
        return np.expand_dims(g, -1) * b
    return np.tensordot(g, np.swapaxes(b, -1, -2), np.ndim(b) - 1)


batches_as_is(dot_cotangent_a)  # right on batched values as it is


def dot_cotangent_b(g: Any, a: Any, b: Any) -> Any:
    """The cotangent of ``b`` when ``g`` is the cotangent of ``np.dot(a, b)``.

    Example::

        a, b = np.ones((2, 3)), np.ones((5, 3, 4))
        dot_cotangent_b(np.ones((2, 5, 4)), a, b).shape  # (5, 3, 4)
    """
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * a, b)
    if np.ndim(b) == 1:
        return np.tensordot(g, a, np.ndim(g))
    contracted = np.tensordot(np.moveaxis(a, -1, 0), g, np.ndim(a) - 1)
    return np.moveaxis(contracted, 0, -2)


batches_as_is(dot_cotangent_b)  # right on batched values as it is


@vjp_rule(dot_cotangent_a)
def _dot_cotangent_a_vjp(h, ans, g, a, b):
    return np.dot(h, b), None, dot_cotangent_b(g, h, b)


@jvp_rule(dot_cotangent_a)
def _dot_cotangent_a_jvp(t, ans, g, a, b):
    return dot_cotangent_a(t, a, b), None, dot_cotangent_a(g, a, t)


@vjp_rule(dot_cotangent_b)
def _dot_cotangent_b_vjp(h, ans, g, a, b):
    return np.dot(a, h), dot_cotangent_a(g, a, h), None


@jvp_rule(dot_cotangent_b)
def _dot_cotangent_b_jvp(t, ans, g, a, b):
    return dot_cotangent_b(t, a, b), dot_cotangent_b(g, t, b), None


# ---------------------------------------------------------------------------------------
# np.linalg.solve(a, b) treats a 1-D b as one vector and anything else as a stack of
# matrices (NumPy 2). Working with matrices throughout makes the rules uniform.


# NumPy 1.x's solve(a, b) takes b as (stacked) vectors when b has one dimension fewer than a;
# NumPy 2.0 only when b is 1-D.
_SOLVE_STACKS_VECTORS = np.lib.NumpyVersion(np.__version__) < "2.0.0"


def rhs_as_matrix(v: Any, b: Any, a: Any = None) -> Any:
    """``v`` (shaped like ``solve(a, b)``'s ``b`` or its result) as a matrix: a column if
    ``solve`` takes ``b`` as vectors (1-D ``b``; on NumPy 1.x, ``b`` one dimension short of
    ``a``).

    Example::

        rhs_as_matrix(np.ones((4, 3)), np.ones(3)).shape     # (4, 3, 1)
        rhs_as_matrix(np.ones((3, 2)), np.ones((3, 2))).shape  # (3, 2)
    """
    if np.ndim(b) == 1 or (
        _SOLVE_STACKS_VECTORS and a is not None and np.ndim(b) == np.ndim(a) - 1
    ):
        return np.expand_dims(v, -1)
    return v


batches_as_is(rhs_as_matrix)  # right on batched values as it is


@vjp_rule(rhs_as_matrix)
def _rhs_as_matrix_vjp(g, ans, v, b, a=None):
    return np.reshape(g, np.shape(v)), None, None


@jvp_rule(rhs_as_matrix)
def _rhs_as_matrix_jvp(t, ans, v, b, a=None):
    return rhs_as_matrix(t, b, a), None, None


# ---------------------------------------------------------------------------------------
# np.einsum's two forms of subscripts


def einsum_subscripts(subscripts: Any, operands: tuple) -> tuple[str, list[int]]:
    """An einsum call's subscripts as a string, and the positions of its operands among the
    call's positional arguments: the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``
    is spelled ``"ab,bc->ac"`` (each integer a letter, ``Ellipsis`` as ``...``).

    Declared without a derivative (strings and positions), so that the einsum rule's own
    code, which a derivative of generated code transforms, keeps them constant.

    Example::

        einsum_subscripts(a, ([0, 1], b, [1, 2]))  # ("ab,bc", [0, 2])
        einsum_subscripts("ij,jk", (a, b))  # ("ij,jk", [1, 2])
    """
    if isinstance(subscripts, str):
        return subscripts, list(range(1, len(operands) + 1))
    arguments = (subscripts, *operands)
    pairs = len(arguments) // 2
    spec = ",".join(_sublist_letters(arguments[2 * k + 1]) for k in range(pairs))
    if len(arguments) % 2:  # an output sublist follows the pairs
        spec += "->" + _sublist_letters(arguments[-1])
    return spec, [2 * k for k in range(pairs)]


def _sublist_letters(sublist) -> str:
    return "".join("..." if s is Ellipsis else string.ascii_letters[int(s)] for s in sublist)


nondifferentiable(einsum_subscripts)


def operand_dtype(value: Any) -> np.dtype:
    """The dtype NumPy gives ``value`` as an operand: a list of arrays (the rows a loop
    appended) by its entries, which ``np.result_type`` would read as a structured dtype's
    fields.

    Example::

        operand_dtype([np.ones(2), np.ones(2, np.float32)])  # dtype('float64')
    """
    if isinstance(value, (list, tuple)):
        return np.result_type(*[operand_dtype(v) for v in value]) if value else np.dtype(float)
    return np.result_type(value)


nondifferentiable(operand_dtype)  # a dtype: a rule differentiated again reads it as a constant


# ---------------------------------------------------------------------------------------
# np.linalg.eigh with repeated eigenvalues


def eigh_gap_mask(w: Any, middle: Any = None, g_w: Any = None) -> Any:
    """1 where eigenvalues ``w[j]`` and ``w[i]`` differ (off the diagonal), 0 where they
    are equal (to rounding) or ``i == j``: the entries ``eigh``'s rules may divide by the
    gap. In a VJP, ``middle`` (``V^T g_V``) and ``g_w`` say whether the function's value
    depends on how eigenvectors of a repeated eigenvalue are chosen, or on which of the
    repeated eigenvalues is which: it has no derivative then, and this raises.

    Example::

        eigh_gap_mask(np.array([1.0, 1.0, 3.0]))  # [[0, 0, 1], [0, 0, 1], [1, 1, 0]]
    """
    w = np.real(w)
    n = np.shape(w)[-1]
    scale = np.maximum(np.max(np.abs(w), axis=-1, initial=0.0), 1.0)[..., None, None]
    gaps = np.abs(np.expand_dims(w, -2) - np.expand_dims(w, -1))
    tied = gaps <= 1e-10 * scale
    if middle is not None:
        skew = np.abs(middle - np.conj(np.swapaxes(middle, -1, -2)))
        off_diagonal = tied & ~np.eye(n, dtype=bool)
        size = np.max(np.abs(middle), axis=(-2, -1), initial=0.0)[..., None, None]
        if np.any(off_diagonal & (skew > 1e-8 * size + 1e-300)):
            raise _repeated_eigenvalues("eigenvectors")
        # A symmetric part there is divided by a gap of zero too: its limit depends on how
        # the function changes as the eigenvalues part (V f(w) V^T has the entries f'(w)),
        # which the cotangents do not tell, so leaving it out would be a wrong derivative.
        if np.any(off_diagonal & (np.abs(middle) > 1e-8 * size + 1e-300)):
            raise _mixed_repeated_eigenvectors()
        if np.any(off_diagonal) and _in_forward_mode_on_the_tape():
            raise _mixed_repeated_eigenvectors()  # the cotangents there are stand-in zeros
    if g_w is not None:
        spread = np.abs(np.expand_dims(g_w, -2) - np.expand_dims(g_w, -1))
        size = np.max(np.abs(g_w), axis=-1, initial=0.0)[..., None, None]
        if np.any(tied & (spread > 1e-8 * size + 1e-300)):
            raise _repeated_eigenvalues("eigenvalues")
    return (~tied).astype(w.dtype)


def eigh_tangent_mask(w: Any, middle: Any) -> Any:
    """:func:`eigh_gap_mask` for a JVP, whose ``middle`` is ``V^H da V``: NaN (not an error,
    as the eigenvectors' tangent may go unused) where eigenvalues are repeated and ``da``
    mixes their eigenvectors, whose tangent is then undefined.

    Example::

        eigh_tangent_mask(np.ones(2), np.ones((2, 2)))  # [[0, nan], [nan, 0]]
    """
    mask = eigh_gap_mask(w)
    n = np.shape(mask)[-1]
    size = np.max(np.abs(middle), axis=(-2, -1), initial=0.0)[..., None, None]
    mixed = (mask == 0) & ~np.eye(n, dtype=bool) & (np.abs(middle) > 1e-8 * size + 1e-300)
    if np.any(mixed):
        _UNDEFINED_TANGENTS[0] += 1
    return np.where(mixed, np.nan, mask)


_UNDEFINED_TANGENTS = [0]  # how many eigenvector tangents were left NaN, so far


def undefined_eigenvector_tangents() -> int:
    """How many times :func:`eigh_tangent_mask` left an eigenvector's tangent NaN: a
    forward-mode result that comes out NaN after this grew is refused
    (:func:`refuse_undefined_tangent`), not returned.

    Example::

        before = undefined_eigenvector_tangents()
    """
    return _UNDEFINED_TANGENTS[0]


def refuse_undefined_tangent(before: int, tangent: Any) -> None:
    """Raise ``NonDifferentiableError`` when ``tangent`` holds a NaN and an eigenvector's
    tangent was left NaN since ``before`` (:func:`undefined_eigenvector_tangents`): the
    function combines eigenvectors of a repeated eigenvalue, and has no tangent there that
    forward mode can tell.

    Example::

        refuse_undefined_tangent(before, tangent)
    """
    if _UNDEFINED_TANGENTS[0] == before:
        return
    leaves = tangent if isinstance(tangent, (tuple, list)) else (tangent,)
    for leaf in leaves:
        try:
            undefined = bool(np.any(np.isnan(leaf)))
        except TypeError:  # not numbers (None, a structure): nothing to look at
            continue
        if undefined:
            error = _mixed_repeated_eigenvectors()
            error.tape_cannot_either = True  # type: ignore[attr-defined]
            raise error


def _repeated_eigenvalues(what: str) -> Exception:
    return NonDifferentiableError(
        "np.linalg.eigh found repeated eigenvalues, and the function depends on which of "
        f"their {what} is which, so it has no derivative there (only functions that treat "
        "repeated eigenvalues alike and do not depend on how their eigenvectors are chosen "
        "have one); perturb the matrix slightly, or use np.linalg.eigvalsh with a function "
        "symmetric in the eigenvalues"
    )


def _in_forward_mode_on_the_tape() -> bool:
    """Whether the tape's forward mode runs this rule, transposing a pullback: its
    cotangents are zeros standing in for any, so they cannot show what the function uses."""
    return not backward_hooks_apply()


def _mixed_repeated_eigenvectors() -> Exception:
    return NonDifferentiableError(
        "np.linalg.eigh found repeated eigenvalues, and the function combines their "
        "eigenvectors (as a matrix function V f(w) V^T does): its derivative there depends "
        "on how the function changes as the repeated eigenvalues part, which neither mode "
        "can tell from the eigenvectors alone; perturb the matrix slightly (distinct "
        "eigenvalues), or compute the matrix function without eigh (a @ a, scipy.linalg.expm)"
    )


# where eigenvalues are equal: piecewise constant
nondifferentiable(eigh_gap_mask, eigh_tangent_mask)
