"""Derivative rules for products and linear algebra: ``dot``, ``matmul`` (``@``), ``vdot``,
``inner``, ``outer``, ``tensordot``, ``einsum`` (with subscripts or sublists), ``kron``,
``cross`` and ``np.linalg``'s ``inv``, ``det``, ``slogdet``, ``solve``, ``cholesky``,
``eigh``, ``eigvalsh``, ``svd``, ``qr``, ``matrix_power``, ``pinv``, ``cond``,
``tensorsolve`` and ``tensorinv``.

Matrix functions work on stacks of matrices (the last two axes), as NumPy's do.

Symmetric inputs: ``cholesky`` and ``eigh`` read one triangle of their input, so as
functions of all its entries they are not what the user means. Their rules treat the input
as symmetric: the VJP returns a symmetric cotangent, and the JVP uses the symmetric part of
the tangent (``eigvalsh`` too). An input that is visibly not symmetric is refused (its
gradient would not be the derivative of what NumPy computed). ``eigh`` with repeated
eigenvalues differentiates functions that treat them alike and do not depend on how their
eigenvectors are chosen, and refuses the others, among them those combining the repeated
eigenvalue's eigenvectors, as a matrix function ``V f(w) V^T`` does (its derivative there
needs ``f'``, which cotangents do not carry; :func:`s2sgrad.runtime.eigh_gap_mask`); a
JVP gives NaN eigenvector tangents where they are undefined; ``pinv`` of a rank-deficient
matrix and ``slogdet`` of a singular one are refused at run time; ``svd`` assumes distinct
nonzero singular values (``compute_uv=False`` takes a zero one's derivative as abs's at 0,
as matrix norms ``2``, ``-2`` and ``"nuc"`` do); ``qr`` assumes full rank and
differentiates ``mode="reduced"`` of matrices with at least as many rows as columns.

Multi-output functions: ``slogdet`` returns ``(sign, logabsdet)`` and ``eigh``
``(eigenvalues, eigenvectors)``. Their VJP's ``g`` holds one cotangent per output (``None``
for an unused one), and their JVP's entry is a tuple with one tangent per output.
"""

from __future__ import annotations

import operator
import string

import numpy as np

from s2sgrad.errors import NonDifferentiableError
from s2sgrad.rules.registry import jvp_rule, nondifferentiable, vjp_rule, zero_by_design
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import (
    dot_cotangent_a,
    dot_cotangent_b,
    eigh_gap_mask,
    eigh_tangent_mask,
    einsum_subscripts,
    is_complex,
    matmul_cotangent_a,
    matmul_cotangent_b,
    norm_direction,
    operand_dtype,
    rhs_as_matrix,
    unbroadcast,
)

# ---------------------------------------------------------------------------------------
# Products


@vjp_rule(np.matmul, operator.matmul)
def _matmul(g, ans, a, b):
    return matmul_cotangent_a(g, a, b), matmul_cotangent_b(g, a, b)


@jvp_rule(np.matmul, operator.matmul)
def _matmul_jvp(t, ans, a, b):
    return np.matmul(t, b), np.matmul(a, t)


@vjp_rule(np.dot, np.ndarray.dot)
def _dot(g, ans, a, b, out=None):
    return dot_cotangent_a(g, a, b), dot_cotangent_b(g, a, b)


@jvp_rule(np.dot, np.ndarray.dot)
def _dot_jvp(t, ans, a, b, out=None):
    return np.dot(t, b), np.dot(a, t)


@vjp_rule(np.vdot)
def _vdot(g, ans, a, b):  # vdot conjugates a
    return np.conj(g * np.reshape(b, np.shape(a))), g * np.conj(np.reshape(a, np.shape(b)))


@jvp_rule(np.vdot)
def _vdot_jvp(t, ans, a, b):
    return np.vdot(t, b), np.vdot(a, t)


@vjp_rule(np.outer)
def _outer(g, ans, a, b, out=None):
    da = np.reshape(np.dot(g, np.ravel(b)), np.shape(a))
    return da, np.reshape(np.dot(np.ravel(a), g), np.shape(b))


@jvp_rule(np.outer)
def _outer_jvp(t, ans, a, b, out=None):
    return np.outer(t, b), np.outer(a, t)


# inner(a, b)[A..., B...] = sum_k a[A..., k] * b[B..., k]; a scalar operand multiplies.


@vjp_rule(np.inner, inline=False)
def _inner(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a), unbroadcast(g * a, b)
    leading = list(range(np.ndim(a) - 1))
    return np.tensordot(g, b, np.ndim(b) - 1), np.tensordot(g, a, (leading, leading))


@jvp_rule(np.inner)
def _inner_jvp(t, ans, a, b):
    return np.inner(t, b), np.inner(a, t)


@vjp_rule(np.tensordot, inline=False)
def _tensordot(g, ans, a, b, axes=2):
    axes_a, axes_b = _tensordot_axes(axes, np.ndim(a), np.ndim(b))
    free_a = [i for i in range(np.ndim(a)) if i not in axes_a]
    free_b = [i for i in range(np.ndim(b)) if i not in axes_b]
    # g's axes are a's free axes, then b's.
    g_free_a = list(range(len(free_a)))
    g_free_b = list(range(len(free_a), len(free_a) + len(free_b)))
    # Contracting g with the other operand leaves the free axes of g, then the contracted
    # axes of the other operand in increasing order; those stand for their partners.
    da = np.tensordot(g, b, (g_free_b, free_b))
    da_axes = free_a + [axes_a[axes_b.index(j)] for j in sorted(axes_b)]
    db = np.tensordot(a, g, (free_a, g_free_a))
    db_axes = [axes_b[axes_a.index(i)] for i in sorted(axes_a)] + free_b
    return np.transpose(da, _inverse(da_axes)), np.transpose(db, _inverse(db_axes))


@jvp_rule(np.tensordot)
def _tensordot_jvp(t, ans, a, b, axes=2):
    return np.tensordot(t, b, axes), np.tensordot(a, t, axes)


def _tensordot_axes(axes, ndim_a: int, ndim_b: int) -> tuple[list[int], list[int]]:
    """``np.tensordot``'s ``axes`` as two lists of non-negative axes, paired in order."""
    if isinstance(axes, (int, np.integer)):
        return list(range(ndim_a - axes, ndim_a)), list(range(axes))
    axes_a, axes_b = axes
    axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    return [int(i) % ndim_a for i in axes_a], [int(i) % ndim_b for i in axes_b]


def _inverse(permutation: list[int]) -> list[int]:
    inverse = [0] * len(permutation)
    for position, axis in enumerate(permutation):
        inverse[axis] = position
    return inverse


# cross(a, b): g . (a x b) = a . (b x g) = b . (g x a). The rules move the vector axes
# last; a 2-vector is a 3-vector with no z component, and the cross product of two
# 2-vectors is the z component alone.


@vjp_rule(np.cross, inline=False)
def _cross(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    axisa, axisb, axisc = _cross_axes(axisa, axisb, axisc, axis)
    a_last = np.moveaxis(a, axisa, -1)
    b_last = np.moveaxis(b, axisb, -1)
    if np.shape(a_last)[-1] == 2 and np.shape(b_last)[-1] == 2:
        g_last = np.stack([np.zeros_like(g), np.zeros_like(g), g], axis=-1)
    else:
        g_last = np.moveaxis(g, axisc, -1)
    da = np.cross(_as_3_vectors(b_last), g_last)[..., : np.shape(a_last)[-1]]
    db = np.cross(g_last, _as_3_vectors(a_last))[..., : np.shape(b_last)[-1]]
    da = np.moveaxis(unbroadcast(da, a_last), -1, axisa)
    return da, np.moveaxis(unbroadcast(db, b_last), -1, axisb)


@jvp_rule(np.cross, inline=False)
def _cross_jvp(t, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    # entry i is asked for only when t is the tangent of argument i, so has its shape
    from_a = from_b = None
    if np.shape(t) == np.shape(a):
        from_a = np.cross(t, b, axisa, axisb, axisc, axis)
    if np.shape(t) == np.shape(b):
        from_b = np.cross(a, t, axisa, axisb, axisc, axis)
    return from_a, from_b


def _cross_axes(axisa, axisb, axisc, axis):
    if axis is not None:
        return axis, axis, axis
    return axisa, axisb, axisc


def _as_3_vectors(v):
    """Vectors along the last axis with a zero z component added to 2-vectors."""
    if np.shape(v)[-1] == 2:
        return np.concatenate([v, np.zeros_like(v[..., :1])], axis=-1)
    return v


# kron(a, b) with both padded to the same rank n has shape (p0 * q0, ..., pn * qn); seen
# with shape (p0, q0, p1, q1, ...) it is the outer product of a and b, axes interleaved.


@vjp_rule(np.kron, inline=False)
def _kron(g, ans, a, b):
    rank = max(np.ndim(a), np.ndim(b))
    shape_a = (1,) * (rank - np.ndim(a)) + np.shape(a)
    shape_b = (1,) * (rank - np.ndim(b)) + np.shape(b)
    blocks = np.reshape(g, [n for pair in zip(shape_a, shape_b) for n in pair])
    a_axes, b_axes = list(range(0, 2 * rank, 2)), list(range(1, 2 * rank, 2))
    da = np.tensordot(blocks, np.reshape(b, shape_b), (b_axes, list(range(rank))))
    db = np.tensordot(np.reshape(a, shape_a), blocks, (list(range(rank)), a_axes))
    return np.reshape(da, np.shape(a)), np.reshape(db, np.shape(b))


@jvp_rule(np.kron)
def _kron_jvp(t, ans, a, b):
    return np.kron(t, b), np.kron(a, t)


# ---------------------------------------------------------------------------------------
# einsum: the cotangent of operand k is another einsum, of g and the other operands, into
# operand k's subscripts. A letter repeated in operand k (a diagonal) gets a fresh letter
# tied to it by an identity matrix; a letter summed in operand k alone gets a vector of
# ones; size-1 dimensions that broadcasting stretched are summed back.


@vjp_rule(np.einsum, inline=False)
def _einsum(g, ans, subscripts, *operands, out=None, optimize=False, **kwargs):
    # plain code, which a derivative of the generated code transforms (called_rules.py):
    # the subscripts and positions come from a helper without a derivative, so stay constant
    spec, positions = einsum_subscripts(subscripts, operands)
    arguments = (subscripts, *operands)
    arrays = [arguments[p] for p in positions]
    terms, output = _einsum_terms(spec, [np.ndim(a) for a in arrays])
    entries = [
        _einsum_cotangent(g, terms, output, arrays, positions.index(i), optimize)
        if i in positions
        else None
        for i in range(1 + len(operands))
    ]
    return tuple(entries)


@jvp_rule(np.einsum, inline=False)
def _einsum_jvp(t, ans, subscripts, *operands, out=None, optimize=False, **kwargs):
    spec, arrays, positions = _einsum_call(subscripts, operands)
    entries = [None] * (1 + len(operands))
    for k, position in enumerate(positions):
        if np.shape(arrays[k]) != np.shape(t):  # t cannot be the tangent of this operand
            continue
        changed = (*arrays[:k], t, *arrays[k + 1 :])
        entries[position] = np.einsum(spec, *changed, optimize=optimize)
    return tuple(entries)


def _einsum_call(subscripts, operands) -> tuple[str, list, list[int]]:
    """An einsum call as ``(subscripts string, operands, their positions among the call's
    positional arguments)``, for both forms of subscripts (``einsum_subscripts``)."""
    spec, positions = einsum_subscripts(subscripts, operands)
    arguments = (subscripts, *operands)
    return spec, [arguments[p] for p in positions], positions


def _einsum_terms(subscripts, ndims) -> tuple[list[str], str]:
    """The input subscripts and the output subscript, with every ``...`` spelled in letters
    (``ndims``: the operands' numbers of dimensions)."""
    spec = subscripts.replace(" ", "")
    parts = spec.split("->")  # not .partition: an array's method of that name sorts in place
    inputs, arrow, output = parts[0], len(parts) > 1, parts[-1]
    terms = inputs.split(",")
    # An operand's "..." stands for its last few broadcast axes.
    ranks = [ndim - len(term) + 3 if "..." in term else 0 for term, ndim in zip(terms, ndims)]
    spare = [c for c in string.ascii_letters if c not in spec]
    broadcast = "".join(spare[: max(ranks, default=0)])
    if not arrow:  # implicit output: the broadcast axes, then the letters used once, sorted
        letters = "".join(terms).replace("...", "")
        once = sorted(c for c in letters if letters.count(c) == 1)
        output = "..." * ("..." in inputs) + "".join(once)
    spelled = [
        term.replace("...", broadcast[len(broadcast) - rank :]) for term, rank in zip(terms, ranks)
    ]
    return spelled, output.replace("...", broadcast)


def _einsum_cotangent(g, terms: list[str], output: str, operands, k: int, optimize):
    shape = np.shape(operands[k])
    inputs = [output] + [term for j, term in enumerate(terms) if j != k]
    present = set("".join(inputs))
    dtype = np.result_type(g, *[operand_dtype(o) for o in operands])
    fresh = iter(c for c in string.ascii_letters if c not in "".join(terms) + output)
    target = ""
    # identity matrices and vectors of ones, after g and the other operands
    constant_inputs, constants = [], []
    for letter, size in zip(terms[k], shape):
        if letter in target:
            tied = next(fresh)
            constant_inputs.append(letter + tied)
            constants.append(np.eye(size, dtype=dtype))
            target += tied
            continue
        if letter not in present:
            constant_inputs.append(letter)
            constants.append(np.ones(size, dtype=dtype))
        target += letter
    spec = ",".join(inputs + constant_inputs) + "->" + target
    arrays = [g] + [op for j, op in enumerate(operands) if j != k] + constants
    cotangent = np.einsum(spec, *arrays, optimize=optimize)
    stretched = tuple(
        i for i, (n, m) in enumerate(zip(shape, np.shape(cotangent))) if n == 1 and m != 1
    )
    return np.sum(cotangent, axis=stretched, keepdims=True) if stretched else cotangent


# ---------------------------------------------------------------------------------------
# Inverse, determinants, solves


@vjp_rule(np.linalg.inv)
def _inv(g, ans, a):
    ans_t = np.swapaxes(ans, -1, -2)
    return -np.matmul(ans_t, np.matmul(g, ans_t))


@jvp_rule(np.linalg.inv)
def _inv_jvp(t, ans, a):
    return -np.matmul(ans, np.matmul(t, ans))


@vjp_rule(np.linalg.det)
def _det(g, ans, a):
    if np.all(ans != 0):
        return np.expand_dims(g * ans, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)
    return np.expand_dims(g, (-2, -1)) * _cofactors(a)  # a singular matrix has no inverse


@jvp_rule(np.linalg.det)
def _det_jvp(t, ans, a):
    if np.all(ans != 0):
        return ans * np.trace(np.linalg.solve(a, t), axis1=-2, axis2=-1)
    return np.sum(_cofactors(a) * t, axis=(-2, -1))


def _cofactors(a):
    """The matrix of cofactors of ``a`` (det(a) * inv(a).T where ``a`` is invertible), from
    the determinants of its minors: defined for a singular matrix too."""
    n = np.shape(a)[-1]
    if n == 1:
        return np.ones_like(a)
    others = np.array([[j for j in range(n) if j != i] for i in range(n)])
    minors = a[..., others[:, None, :, None], others[None, :, None, :]]
    signs = 1.0 - 2.0 * (np.add.outer(np.arange(n), np.arange(n)) % 2)
    return signs * np.linalg.det(minors)


# The sign is locally constant: only the log-determinant's cotangent matters.


@vjp_rule(np.linalg.slogdet)
def _slogdet(g, ans, a):
    scale = np.zeros_like(np.real(ans[1]))
    if g[1] is not None:
        scale = np.real(g[1])
    if g[0] is not None and is_complex(a):  # the sign exp(i angle(det)) moves too
        # - 1j Re(1j z) = 1j Im(z) = z - Re(z), exactly: no complex literal, which would
        # have the derivative of this code taken for complex code (complex_values.py)
        turned = ans[0] * g[0]
        scale = scale + (turned - np.real(turned))
    _refuse_singular_slogdet(ans)
    return np.expand_dims(scale, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


def _refuse_singular_slogdet(ans) -> None:
    """log|det(a)| is -inf where ``a`` is singular, with no derivative there (NumPy's
    inverse or solve would raise LinAlgError)."""
    if np.any(np.isneginf(np.real(ans[1]))):
        raise NonDifferentiableError(
            "np.linalg.slogdet of a singular matrix: its log-determinant is -inf there and "
            "has no derivative; differentiate at a matrix with a nonzero determinant (add a "
            "small multiple of the identity), or use np.linalg.det, whose derivative is "
            "defined there"
        )


@jvp_rule(np.linalg.slogdet)
def _slogdet_jvp(t, ans, a):
    _refuse_singular_slogdet(ans)
    d_log = np.trace(np.linalg.solve(a, t), axis1=-2, axis2=-1)
    d_sign = np.zeros_like(ans[0])
    if is_complex(a):
        d_sign = ans[0] * (d_log - np.real(d_log))  # 1j Im(d_log), as in the rule above
    return ((d_sign, np.real(d_log)),)


# x = solve(a, b): db = solve(a.T, g) and da = -db @ x.T, with b and x as matrices.


@vjp_rule(np.linalg.solve)
def _solve(g, ans, a, b):
    gb = np.linalg.solve(np.swapaxes(a, -1, -2), rhs_as_matrix(g, b, a))
    ga = -np.matmul(gb, np.swapaxes(rhs_as_matrix(ans, b, a), -1, -2))
    return unbroadcast(ga, a), unbroadcast(np.reshape(gb, np.shape(ans)), b)


@jvp_rule(np.linalg.solve)
def _solve_jvp(t, ans, a, b):
    from_a = np.linalg.solve(a, -np.matmul(t, rhs_as_matrix(ans, b, a)))
    return np.reshape(from_a, np.shape(ans)), np.linalg.solve(a, t)


# ---------------------------------------------------------------------------------------
# Factorisations of symmetric matrices
#
# Cholesky, a = L L^T: L^-1 da L^-T = X + X^T with X = L^-1 dL lower triangular, so
# dL = L phi(L^-1 da L^-T), where phi keeps the lower triangle and halves the diagonal;
# phi is self-adjoint, so the cotangent is L^-T phi(L^T g) L^-1 (then symmetrised).


@vjp_rule(np.linalg.cholesky)
def _cholesky(g, ans, a, *, upper=False):
    _refuse_unsymmetric(a, "cholesky")
    lower = ans
    g_lower = g
    if upper:
        lower = np.conj(np.swapaxes(ans, -1, -2))
        g_lower = np.conj(np.swapaxes(g, -1, -2))
    lower_t = np.swapaxes(lower, -1, -2)
    inner = np.matmul(lower_t, g_lower)
    phi = (np.tril(inner) + np.tril(inner, -1)) / 2.0
    left = np.linalg.solve(lower_t, phi)
    ga = np.swapaxes(np.linalg.solve(np.conj(lower_t), np.swapaxes(left, -1, -2)), -1, -2)
    return (ga + np.conj(np.swapaxes(ga, -1, -2))) / 2.0


@jvp_rule(np.linalg.cholesky)
def _cholesky_jvp(t, ans, a, *, upper=False):
    _refuse_unsymmetric(a, "cholesky")
    lower = ans
    if upper:
        lower = np.conj(np.swapaxes(ans, -1, -2))
    left = np.linalg.solve(lower, (t + np.conj(np.swapaxes(t, -1, -2))) / 2.0)
    left_h = np.conj(np.swapaxes(left, -1, -2))
    middle = np.conj(np.swapaxes(np.linalg.solve(lower, left_h), -1, -2))
    d_lower = np.matmul(lower, (np.tril(middle) + np.tril(middle, -1)) / 2.0)
    if upper:
        d_lower = np.conj(np.swapaxes(d_lower, -1, -2))
    return d_lower


# eigh, a = V diag(w) V^T: with M = V^T da V, dw = diag(M) and dV = V (F * M), where
# F[i, j] = 1 / (w[j] - w[i]) off the diagonal and 0 on it.


@vjp_rule(np.linalg.eigh)
def _eigh(g, ans, a, UPLO="L"):
    _refuse_unsymmetric(a, "eigh")
    w = ans[0]
    v = ans[1]
    v_t = np.swapaxes(v, -1, -2)
    eye = np.eye(np.shape(w)[-1], dtype=w.dtype)
    gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1)
    if g[0] is None:
        through_v = np.matmul(v_t, g[1])
        mask = eigh_gap_mask(w, through_v)
        middle = mask / (gaps + 1.0 - mask) * through_v
    elif g[1] is None:
        mask = eigh_gap_mask(w, None, np.real(g[0]))
        middle = np.expand_dims(np.real(g[0]), -1) * eye
    else:
        through_v = np.matmul(v_t, g[1])
        mask = eigh_gap_mask(w, through_v, np.real(g[0]))
        middle = np.expand_dims(np.real(g[0]), -1) * eye + mask / (gaps + 1.0 - mask) * through_v
    ga = np.matmul(np.conj(v), np.matmul(middle, v_t))
    return (ga + np.conj(np.swapaxes(ga, -1, -2))) / 2.0


@jvp_rule(np.linalg.eigh)
def _eigh_jvp(t, ans, a, UPLO="L"):
    _refuse_unsymmetric(a, "eigh")
    w = ans[0]
    v = ans[1]
    gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1)
    v_h = np.conj(np.swapaxes(v, -1, -2))
    m = np.matmul(v_h, np.matmul((t + np.conj(np.swapaxes(t, -1, -2))) / 2.0, v))
    mask = eigh_tangent_mask(w, m)
    inverse_gaps = mask / (gaps + 1.0 - mask)
    return ((np.real(np.diagonal(m, axis1=-2, axis2=-1)), np.matmul(v, inverse_gaps * m)),)


# eigvalsh: the eigenvalues of eigh, dw = diag(V^T da V); the cotangent V diag(g) V^T.


@vjp_rule(np.linalg.eigvalsh)
def _eigvalsh(g, ans, a, UPLO="L"):
    _refuse_unsymmetric(a, "eigvalsh")
    v = np.linalg.eigh(a, UPLO)[1]
    return np.matmul(np.conj(v) * np.expand_dims(np.real(g), -2), np.swapaxes(v, -1, -2))


@jvp_rule(np.linalg.eigvalsh)
def _eigvalsh_jvp(t, ans, a, UPLO="L"):
    _refuse_unsymmetric(a, "eigvalsh")
    v = np.linalg.eigh(a, UPLO)[1]
    v_h = np.conj(np.swapaxes(v, -1, -2))
    m = np.matmul(v_h, np.matmul((t + np.conj(np.swapaxes(t, -1, -2))) / 2.0, v))
    return np.real(np.diagonal(m, axis1=-2, axis2=-1))


# matrix_power(a, n) for n >= 0: d(a^n) = sum_k a^k da a^(n-1-k); a negative n is a power
# of inv(a), whose rules give the rest.


@vjp_rule(np.linalg.matrix_power, inline=False)
def _matrix_power(g, ans, a, n):
    if n < 0:
        inverse = np.linalg.inv(a)
        inverse_t = np.swapaxes(inverse, -1, -2)
        g_inverse = _sum_of_power_products(inverse_t, g, -n)
        return -np.matmul(inverse_t, np.matmul(g_inverse, inverse_t))
    return _sum_of_power_products(np.swapaxes(a, -1, -2), g, n)


@jvp_rule(np.linalg.matrix_power, inline=False)
def _matrix_power_jvp(t, ans, a, n):
    if n < 0:
        inverse = np.linalg.inv(a)
        t_inverse = -np.matmul(inverse, np.matmul(t, inverse))
        return _sum_of_power_products(inverse, t_inverse, -n)
    return _sum_of_power_products(a, t, n)


def _sum_of_power_products(a, middle, n):
    """sum over k < n of a^k @ middle @ a^(n-1-k), for stacks of square matrices."""
    powers = [np.broadcast_to(np.eye(np.shape(a)[-1], dtype=np.result_type(a)), np.shape(a))]
    for _ in range(n - 1):
        powers.append(np.matmul(powers[-1], a))
    total = np.zeros_like(middle)
    for k in range(n):
        total = total + np.matmul(powers[k], np.matmul(middle, powers[n - 1 - k]))
    return total


# svd, a = U diag(s) Vh with k = min(m, n) singular values, assumed distinct and nonzero.
# With ^H the conjugate transpose (^T for real a), h = conj(g) and F[i, j] =
# 1 / (s[j]^2 - s[i]^2) off the diagonal (0 on it), J = F * (U^H hU - hU^H U) and
# K = F * (Vh hV - hV^H Vh^H) (hV = gVh^T), the gradient X of Re tr(X^H da) is
#   U (J S + diag(gs) + S K + i Im(U^H hU)_jj / s_j) Vh + (I - U U^H) hU S^-1 Vh
#   + U S^-1 hVh (I - Vh^H Vh),
# and the VJP is conj(X) (docs/complex.md). A complex singular pair (u_j, v_j) is defined up
# to a common phase: the derivative is that of functions blind to it (|U|, u_j v_j^H, ...);
# the JVP turns U's columns by i Im(U^H da V)_jj / s_j and leaves V's phases.
# With full_matrices, the columns of U (rows of Vh) past k span the rest of the space in a
# way NumPy does not define: only cotangents that leave them out have a meaning.


@vjp_rule(np.linalg.svd, inline=False)
def _svd(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        g = g * _nonzero(ans, a)
        return np.matmul(np.conj(u) * np.expand_dims(g, -2), np.conj(vh))
    u, s, vh = _reduced_svd(ans, a)
    k = np.shape(s)[-1]
    eye = np.eye(k, dtype=s.dtype)
    g_u, g_s, g_vh = _svd_cotangents(g, u, s, vh, full_matrices)
    # the gradient X of Re tr(X^H da), from h = conj(g); the VJP is conj(X) (docs/complex.md)
    h_u, g_v = np.conj(g_u), np.swapaxes(g_vh, -1, -2)
    u_h, v = _h(u), _h(vh)
    gaps = np.expand_dims(s**2, -2) - np.expand_dims(s**2, -1)
    inverse_gaps = (1.0 - eye) / (gaps + eye)
    skew_u = np.matmul(u_h, h_u) - np.matmul(_h(h_u), u)
    skew_v = np.matmul(vh, g_v) - np.matmul(_h(g_v), v)
    s_row, s_column = np.expand_dims(s, -2), np.expand_dims(s, -1)
    middle = inverse_gaps * (skew_u * s_row + s_column * skew_v) + eye * np.expand_dims(g_s, -2)
    if is_complex(skew_u):  # the phases of U's columns: i Im(U^H h_u)_jj / s_j
        middle = middle + eye * skew_u / (2.0 * s_row)
    x = np.matmul(u, np.matmul(middle, vh))
    x = x + np.matmul((h_u - np.matmul(u, np.matmul(u_h, h_u))) / s_row, vh)
    h_vh = np.conj(g_vh)
    x = x + np.matmul(u, (h_vh - np.matmul(np.matmul(h_vh, v), vh)) / s_column)
    return np.conj(x)


@jvp_rule(np.linalg.svd, inline=False)
def _svd_jvp(t, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        d_s = np.real(np.diagonal(np.matmul(_h(u), np.matmul(t, _h(vh))), axis1=-2, axis2=-1))
        return d_s * _nonzero(ans, a)
    m, n = np.shape(a)[-2:]
    if full_matrices and m != n:
        raise NonDifferentiableError(_SVD_FULL_MATRICES)
    u, s, vh = _reduced_svd(ans, a)
    k = np.shape(s)[-1]
    eye = np.eye(k, dtype=s.dtype)
    u_h, v = _h(u), _h(vh)
    gaps = np.expand_dims(s**2, -2) - np.expand_dims(s**2, -1)
    inverse_gaps = (1.0 - eye) / (gaps + eye)
    p = np.matmul(u_h, np.matmul(t, v))
    p_h = _h(p)
    s_row, s_column = np.expand_dims(s, -2), np.expand_dims(s, -1)
    d_u = np.matmul(u, inverse_gaps * (p * s_row + s_column * p_h))
    d_u = d_u + (np.matmul(t, v) - np.matmul(u, p)) / s_row
    diagonal = np.diagonal(p, axis1=-2, axis2=-1)
    if is_complex(p):  # the phases: U's columns turn with Im(p_jj) / s_j, V's do not
        d_u = d_u + u * (1j * np.imag(np.expand_dims(diagonal, -2)) / s_row)
    d_v = np.matmul(v, inverse_gaps * (s_column * p + p_h * s_row))
    d_v = d_v + (np.matmul(_h(t), u) - np.matmul(v, p_h)) / s_row
    return ((d_u, np.real(diagonal), _h(d_v)),)


def _h(x):
    """The conjugate transpose of the last two axes (the transpose of a real x)."""
    return np.conj(np.swapaxes(x, -1, -2))


_NOT_SYMMETRIC = (
    "np.linalg.{name} reads one triangle of its input, and this input is not symmetric "
    "(Hermitian), so its derivative would not be the derivative of what NumPy computes; "
    "pass a symmetric matrix, for instance (a + a.T) / 2"
)


def _refuse_unsymmetric(a, name: str) -> None:
    """Raise ``NonDifferentiableError`` when ``a`` is visibly not symmetric (Hermitian): the
    rules of the functions reading one triangle treat their input as symmetric."""
    # a @ a.T rounded in float32 or complex64 is symmetric only to its precision, and may
    # have been promoted since (NumPy 2: complex64 + a float64 array is complex128); an
    # input meant to be unsymmetric differs by far more than a millionth
    precision = np.finfo(np.result_type(getattr(a, "dtype", np.float64), np.float32)).eps
    tolerance = max(1e-6, 1e3 * float(precision))
    if np.size(a) and np.max(np.abs(a - _h(a))) > tolerance * max(np.max(np.abs(a)), 1.0):
        refuse(_NOT_SYMMETRIC.format(name=name))


_SVD_FULL_MATRICES = (
    "np.linalg.svd(a) of a non-square a with full_matrices=True returns columns of U (rows "
    "of Vh) past min(m, n) that NumPy does not define as functions of a, so they have no "
    "derivative; pass full_matrices=False, or use only the first min(m, n) of them"
)


def _nonzero(s, a):
    """1 for each singular value ``s`` above NumPy's rank cutoff, 0 for one that is zero:
    a singular value is the norm of ``a`` along a pair of directions, whose derivative at 0
    is taken as abs's is there (0, the subgradient both sides share), not as the pair's
    arbitrary signs would make it."""
    s = np.real(s)
    if np.size(s) == 0:
        return np.ones_like(s)
    cutoff = max(np.shape(a)[-2:]) * np.finfo(s.dtype).eps * s[..., :1]
    return (s > cutoff).astype(s.dtype)


def _reduced_svd(ans, a):
    """``(U, s, Vh)`` of ``svd``'s result with U's and Vh's first min(m, n) columns and rows."""
    k = min(np.shape(a)[-2:])
    return ans[0][..., :, :k], ans[1], ans[2][..., :k, :]


def _svd_cotangents(g, u, s, vh, full_matrices):
    """The cotangents of the reduced U, s and Vh (zeros for outputs nobody used); refused
    where a cotangent reaches the columns of U or rows of Vh that full_matrices added."""
    k = np.shape(s)[-1]
    g_u, g_s, g_vh = g
    if g_u is not None and np.shape(g_u)[-1] != k:
        if np.any(g_u[..., :, k:] != 0):
            raise NonDifferentiableError(_SVD_FULL_MATRICES)
        g_u = g_u[..., :, :k]
    if g_vh is not None and np.shape(g_vh)[-2] != k:
        if np.any(g_vh[..., k:, :] != 0):
            raise NonDifferentiableError(_SVD_FULL_MATRICES)
        g_vh = g_vh[..., :k, :]
    g_u = np.zeros_like(u) if g_u is None else g_u
    g_s = np.zeros_like(s) if g_s is None else g_s
    g_vh = np.zeros_like(vh) if g_vh is None else g_vh
    return g_u, g_s, g_vh


# qr (reduced, a m x n with m >= n and full rank), a = Q R with R's diagonal real (also
# for complex a, as LAPACK makes it): with ^H the conjugate transpose (^T for real a),
# M = R gR^T - gQ^T Q and herm(M) = tril(M, -1) + tril(M, -1)^H + diag(Re M), the
# cotangent (docs/complex.md) is (gQ + conj(Q herm(M))) R^-T. Forward: C = Q^H da R^-1
# and its skew-Hermitian part W = tril(C, -1) - tril(C, -1)^H + i diag(Im C) give
# dR = (C - W) R and dQ = da R^-1 - Q (C - W).


@vjp_rule(np.linalg.qr, inline=False)
def _qr(g, ans, a, mode="reduced"):
    _refuse_qr(a, mode)
    q, r = ans
    g_q, g_r = g
    g_q = np.zeros_like(q) if g_q is None else g_q
    g_r = np.zeros_like(r) if g_r is None else g_r
    m = np.matmul(r, np.swapaxes(g_r, -1, -2)) - np.matmul(np.swapaxes(g_q, -1, -2), q)
    left = g_q + np.conj(np.matmul(q, _hermitian_from_below(m)))
    return np.swapaxes(np.linalg.solve(r, np.swapaxes(left, -1, -2)), -1, -2)


@jvp_rule(np.linalg.qr, inline=False)
def _qr_jvp(t, ans, a, mode="reduced"):
    _refuse_qr(a, mode)
    q, r = ans
    t_over_r = np.swapaxes(np.linalg.solve(np.swapaxes(r, -1, -2), np.swapaxes(t, -1, -2)), -1, -2)
    c = np.matmul(np.conj(np.swapaxes(q, -1, -2)), t_over_r)
    below = np.tril(c, -1)
    skew = below - np.conj(np.swapaxes(below, -1, -2))
    if is_complex(c):  # R's diagonal stays real: Q's phases move with a
        skew = skew + 1j * np.imag(c) * np.eye(np.shape(c)[-1], dtype=np.imag(c).dtype)
    upper = c - skew
    return ((t_over_r - np.matmul(q, upper), np.matmul(upper, r)),)


def _hermitian_from_below(m):
    """tril(m, -1) + its conjugate transpose + the real part of m's diagonal."""
    below = np.tril(m, -1)
    diagonal = np.real(m) * np.eye(np.shape(m)[-1], dtype=np.real(m).dtype)
    return below + np.conj(np.swapaxes(below, -1, -2)) + diagonal


def _refuse_qr(a, mode):
    m, n = np.shape(a)[-2:]
    if mode != "reduced" or m < n:
        raise NonDifferentiableError(
            f"s2sgrad differentiates np.linalg.qr in mode='reduced' of matrices with at least "
            f"as many rows as columns, not mode={mode!r} of a {m} x {n} matrix; for a wide "
            "matrix, differentiate the QR of its first columns, or np.linalg.qr(a.T)"
        )


# pinv of a full-rank a (P = pinv(a)), with ^H the conjugate transpose (^T for real a):
# dP = -P da P + P P^H da^H (I - a P) + (I - P a) da^H P^H P. The VJP follows
# docs/complex.md: the conjugate of the adjoint applied to the conjugate of g.


zero_by_design(np.linalg.pinv, 1)  # rcond: a cutoff, piecewise constant


def _refuse_rank_deficient_pinv(a, rcond, rtol) -> None:
    """pinv is not even continuous where ``a`` loses rank (a singular value that pinv
    cuts to zero inverts to 1/s as soon as it moves): refused there, as lstsq is."""
    s = np.linalg.svd(a, compute_uv=False)
    if np.size(s) == 0:
        return
    relative = max(np.shape(a)[-2:]) * np.finfo(np.result_type(a, 1.0)).eps
    for cut in (rcond, rtol):
        if cut is not None:
            relative = max(relative, float(np.max(cut)))
    if np.any(s[..., -1] <= relative * s[..., 0]):
        raise NonDifferentiableError(
            "np.linalg.pinv of a rank-deficient matrix has no derivative (the pseudo-inverse "
            "jumps as the rank changes); s2sgrad differentiates it for full-rank matrices "
            "only. Regularise (np.linalg.solve(a.T @ a + lam * I, a.T)), or drop the "
            "dependent rows or columns"
        )


@vjp_rule(np.linalg.pinv)
def _pinv(g, ans, a, rcond=None, hermitian=False, *, rtol=None):
    _refuse_rank_deficient_pinv(a, rcond, rtol)
    ans_t = np.swapaxes(ans, -1, -2)
    ans_c = np.conj(ans)
    g_h = np.conj(np.swapaxes(g, -1, -2))
    through_p = -np.matmul(ans_t, np.matmul(g, ans_t))
    left_null = np.matmul(g_h - np.matmul(np.conj(a), np.matmul(ans_c, g_h)), ans_c @ ans_t)
    right_null = np.matmul(ans_t @ ans_c, g_h - np.matmul(np.matmul(g_h, ans_c), np.conj(a)))
    return through_p + left_null + right_null


@jvp_rule(np.linalg.pinv)
def _pinv_jvp(t, ans, a, rcond=None, hermitian=False, *, rtol=None):
    _refuse_rank_deficient_pinv(a, rcond, rtol)
    ans_h = np.conj(np.swapaxes(ans, -1, -2))
    t_h = np.conj(np.swapaxes(t, -1, -2))
    through_p = -np.matmul(ans, np.matmul(t, ans))
    left_null = np.matmul(np.matmul(ans, ans_h), t_h - np.matmul(np.matmul(t_h, a), ans))
    right_null = np.matmul(t_h - np.matmul(np.matmul(ans, a), t_h), np.matmul(ans_h, ans))
    return through_p + left_null + right_null


nondifferentiable(np.linalg.matrix_rank)


# cond(x, p): for p = None, 2 or -2 the ratio of the largest and smallest singular values,
# whose derivatives are u_i v_i^T (distinct singular values, as svd's rules assume); else
# norm(x, p) norm(inv(x), p): with N = inv(x), d norm(N) = <D_N, dN> and dN = -N dx N, so the
# derivative is norm(N) D_x - norm(x) N^T D_N N^T, D the norms' derivatives (norm_direction).


@vjp_rule(np.linalg.cond)
def _cond(g, ans, x, p=None):
    _refuse_complex_cond(x)
    return np.expand_dims(g, (-2, -1)) * _cond_direction(x, p)


@jvp_rule(np.linalg.cond)
def _cond_jvp(t, ans, x, p=None):
    _refuse_complex_cond(x)
    return np.sum(t * _cond_direction(x, p), axis=(-2, -1))


def _cond_direction(x, p):
    """The derivative of ``np.linalg.cond(x, p)`` with respect to ``x`` (real)."""
    if p is None or p == 2 or p == -2:
        u, s, vh = np.linalg.svd(x, full_matrices=False)
        largest = np.expand_dims(s[..., :1], -1)
        smallest = np.expand_dims(s[..., -1:], -1)
        toward_largest = np.matmul(u[..., :, :1], vh[..., :1, :])
        toward_smallest = np.matmul(u[..., :, -1:], vh[..., -1:, :])
        if p == -2:
            return toward_smallest / largest - smallest / largest**2 * toward_largest
        return toward_largest / smallest - largest / smallest**2 * toward_smallest
    inverse = np.linalg.inv(x)
    inverse_t = np.swapaxes(inverse, -1, -2)
    norm_x = np.linalg.norm(x, p, axis=(-2, -1), keepdims=True)
    norm_inverse = np.linalg.norm(inverse, p, axis=(-2, -1), keepdims=True)
    d_inverse = norm_direction(inverse, norm_inverse, p, (-2, -1))
    through_inverse = np.matmul(inverse_t, np.matmul(d_inverse, inverse_t))
    return norm_inverse * norm_direction(x, norm_x, p, (-2, -1)) - norm_x * through_inverse


def _refuse_complex_cond(x):
    if is_complex(x):
        refuse(
            "np.linalg.cond of a complex matrix has no derivative rule; write it with the "
            "singular values (np.linalg.svd(x, compute_uv=False)) of a real matrix"
        )


# tensorsolve(a, b) solves tensordot(a, x, x.ndim) = b: with A = a as a (b.size, x.size)
# matrix, x = solve(A, b.ravel()); the cotangent of b is solve(A^T, g), that of a the outer
# product -g_b x^T; forward, dx = tensorsolve(a, db - tensordot(da, x, x.ndim)).

_TENSORSOLVE_AXES = (
    "np.linalg.tensorsolve is differentiated without axes= only; move the axes yourself "
    "(np.moveaxis(a, axes, -1)) and call it without axes"
)


@vjp_rule(np.linalg.tensorsolve)
def _tensorsolve(g, ans, a, b, axes=None):
    if axes is not None:
        refuse(_TENSORSOLVE_AXES)
    matrix = np.reshape(a, (np.size(b), np.size(ans)))
    g_b = np.linalg.solve(np.transpose(matrix), np.reshape(g, (np.size(ans),)))
    g_a = -np.outer(g_b, np.reshape(ans, (np.size(ans),)))
    return np.reshape(g_a, np.shape(a)), np.reshape(g_b, np.shape(b))


@jvp_rule(np.linalg.tensorsolve)
def _tensorsolve_jvp(t, ans, a, b, axes=None):
    if axes is not None:
        refuse(_TENSORSOLVE_AXES)
    t_matrix = np.reshape(t, (np.size(b), np.size(ans)))
    t_b = -np.reshape(np.matmul(t_matrix, np.reshape(ans, (np.size(ans),))), np.shape(b))
    return np.linalg.tensorsolve(a, t_b), np.linalg.tensorsolve(a, t)


# tensorinv(a, ind) is inv(A) for A = a as a (rows, columns) matrix, rows the size of
# a.shape[:ind]; its result, as a (columns, rows) matrix, is inv(A). So, as for inv, the
# cotangent of A is -inv(A)^T G inv(A)^T and its tangent -inv(A) T inv(A).


def _tensorinv_matrices(ans, a, ind):
    rows = int(np.prod(np.shape(a)[:ind]))
    return np.reshape(ans, (np.size(a) // rows, rows)), rows


@vjp_rule(np.linalg.tensorinv)
def _tensorinv(g, ans, a, ind=2):
    inverse, rows = _tensorinv_matrices(ans, a, ind)
    inverse_t = np.transpose(inverse)
    g_matrix = np.reshape(g, np.shape(inverse))
    return np.reshape(-np.matmul(inverse_t, np.matmul(g_matrix, inverse_t)), np.shape(a))


@jvp_rule(np.linalg.tensorinv)
def _tensorinv_jvp(t, ans, a, ind=2):
    inverse, rows = _tensorinv_matrices(ans, a, ind)
    t_matrix = np.reshape(t, (rows, np.size(a) // rows))
    return np.reshape(-np.matmul(inverse, np.matmul(t_matrix, inverse)), np.shape(ans))
