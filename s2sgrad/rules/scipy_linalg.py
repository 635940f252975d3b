"""Derivative rules of ``scipy.linalg``: ``expm``, ``sqrtm``, ``solve``, ``solve_triangular``,
``solve_banded``, ``solve_sylvester``, ``solve_continuous_lyapunov``, ``cholesky``,
``cho_factor``, ``cho_solve``, ``lu_factor``, ``lu_solve``, and ``inv`` and ``det`` (NumPy's
rules: a singular matrix's determinant differentiates to its cofactors).

* ``expm(A)``: its derivative along ``E`` (the Fréchet derivative) is the top-right block
  of ``expm([[A, E], [0, A]])``; reverse mode takes it at ``A^T`` along ``G``.

* ``X = solve_sylvester(A, B, Q)`` solves ``A X + X B = Q``. Differentiating,
  ``A dX + dX B = dQ - dA X - X dB``: forward mode solves that; reverse mode solves the
  adjoint equation ``A^T L + L B^T = G`` and gives ``dQ = L``, ``dA = -L X^T``,
  ``dB = -X^T L``.
* ``X = sqrtm(A)`` has ``X X = A``, so ``X dX + dX X = dA``: a Sylvester equation again
  (reverse mode: ``X^T L + L X^T = G``). Matrices with a real principal square root
  (e.g. symmetric positive definite ones) are differentiated.
* ``x = solve_triangular(a, b, trans, lower, unit_diagonal)`` solves ``op(a) x = b`` and
  reads only one triangle of ``a`` (without the diagonal if ``unit_diagonal``): the
  cotangent of ``a`` is zero outside it. Reverse mode: ``L = op(a)^-T G``, ``db = L`` and
  ``d op(a) = -L x^T``.
* ``x = solve(a, b, lower, assume_a, transposed)`` solves ``a x = b`` (``a^T x = b`` when
  ``transposed``): ``L = a^-T G``, ``db = L``, ``da = -L x^T``. With ``assume_a`` symmetric
  or positive definite SciPy reads one triangle of ``a`` (the upper one unless ``lower``)
  as the symmetric matrix it stands for, so ``da`` is folded onto that triangle (an entry
  off the diagonal stands for two); the other structures are refused.
* ``x = solve_banded((l, u), ab, b)`` solves ``a x = b`` for the matrix ``a`` whose band
  ``ab`` holds (LAPACK's storage: ``ab[u + i - j, j] = a[i, j]``). The rule reads ``a`` as
  a dense matrix, gathered from ``ab`` (``np.take``), and gives ``ab`` the band of
  ``-L x^T`` (gathered back), with ``L = a^-T G`` and ``db = L``.

Each rule is made of functions that have rules (``solve_sylvester`` itself,
``solve_triangular`` itself, NumPy), so derivatives of any order follow.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from s2sgrad.rules.linalg import _cholesky, _cholesky_jvp, _det, _det_jvp, _inv, _inv_jvp
from s2sgrad.rules.registry import jvp_rule, returns_several, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import index_cotangent

_DISP = (
    "scipy.linalg.sqrtm(A, disp=False) returns an error estimate beside the root and is not "
    "differentiated; call sqrtm(A) (disp=True, the default)"
)
_COMPLEX_TRANS = (
    "scipy.linalg.solve_triangular with trans=2 ('C', the conjugate transpose) is "
    "differentiated for real matrices as trans=1; pass trans=1 ('T')"
)


_OVERWRITTEN = (
    "scipy.linalg.{name} with overwrite_a=True may overwrite the matrix the derivative "
    "reads; drop overwrite_a"
)
# an argument SciPy may overwrite (a Fortran-ordered matrix, any 1-d right-hand side): the
# derivative reads it, and the function's own code may read it after, neither seeing the change
_OVERWRITES = (
    "scipy.linalg.{name} with overwrite_{which}=True may overwrite its argument {which} in "
    "place, which neither the derivative nor the code after the call sees change; drop "
    "overwrite_{which}"
)


@vjp_rule(linalg.inv)
def _scipy_inv(g, ans, a, overwrite_a=False, check_finite=True):
    return _inv(g, ans, a) if not overwrite_a else refuse(_OVERWRITTEN.format(name="inv"))


@jvp_rule(linalg.inv)
def _scipy_inv_jvp(t, ans, a, overwrite_a=False, check_finite=True):
    return _inv_jvp(t, ans, a) if not overwrite_a else refuse(_OVERWRITTEN.format(name="inv"))


@vjp_rule(linalg.det)
def _scipy_det(g, ans, a, overwrite_a=False, check_finite=True):
    return _det(g, ans, a) if not overwrite_a else refuse(_OVERWRITTEN.format(name="det"))


@jvp_rule(linalg.det)
def _scipy_det_jvp(t, ans, a, overwrite_a=False, check_finite=True):
    return _det_jvp(t, ans, a) if not overwrite_a else refuse(_OVERWRITTEN.format(name="det"))


@vjp_rule(linalg.solve_sylvester)
def _solve_sylvester(g, ans, a, b, q):
    adjoint = linalg.solve_sylvester(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), g)
    return (
        -np.matmul(adjoint, np.swapaxes(ans, -1, -2)),
        -np.matmul(np.swapaxes(ans, -1, -2), adjoint),
        adjoint,
    )


@jvp_rule(linalg.solve_sylvester)
def _solve_sylvester_jvp(t, ans, a, b, q):
    return (
        linalg.solve_sylvester(a, b, -np.matmul(t, ans)),
        linalg.solve_sylvester(a, b, -np.matmul(ans, t)),
        linalg.solve_sylvester(a, b, t),
    )


# X = solve_continuous_lyapunov(A, Q) solves A X + X A^T = Q (real A): solve_sylvester with
# B = A^T, whose cotangent of B, transposed, adds to A's: dA = -L X^T - L^T X, dQ = L with
# A^T L + L A = G. (Complex matrices are refused: the rule is not marked complex.)


@vjp_rule(linalg.solve_continuous_lyapunov)
def _solve_continuous_lyapunov(g, ans, a, q):
    adjoint = linalg.solve_sylvester(np.swapaxes(a, -1, -2), a, g)
    from_a = -np.matmul(adjoint, np.swapaxes(ans, -1, -2))
    return from_a - np.matmul(np.swapaxes(adjoint, -1, -2), ans), adjoint


@jvp_rule(linalg.solve_continuous_lyapunov)
def _solve_continuous_lyapunov_jvp(t, ans, a, q):
    a_t = np.swapaxes(a, -1, -2)
    moved = np.matmul(t, ans) + np.matmul(ans, np.swapaxes(t, -1, -2))  # dA X + X dA^T
    return (
        linalg.solve_sylvester(a, a_t, -moved),
        linalg.solve_sylvester(a, a_t, t),
    )


@vjp_rule(linalg.sqrtm)
def _sqrtm(g, ans, A, disp=True, blocksize=64):
    if disp is False:
        refuse(_DISP)
    transposed = np.swapaxes(ans, -1, -2)
    return linalg.solve_sylvester(transposed, transposed, g)


@jvp_rule(linalg.sqrtm)
def _sqrtm_jvp(t, ans, A, disp=True, blocksize=64):
    if disp is False:
        refuse(_DISP)
    return linalg.solve_sylvester(ans, ans, t)


def _expm_along(a, e):
    """The derivative of ``expm`` at ``a`` along ``e``: a block of a matrix twice as big."""
    n = np.shape(a)[-1]
    top = np.concatenate([a, e], axis=-1)
    bottom = np.concatenate([np.zeros_like(a), a], axis=-1)
    return linalg.expm(np.concatenate([top, bottom], axis=-2))[..., :n, n:]


@vjp_rule(linalg.expm)
def _expm(g, ans, A):
    return _expm_along(np.swapaxes(A, -1, -2), g)


@jvp_rule(linalg.expm)
def _expm_jvp(t, ans, A):
    return _expm_along(A, t)


# trans: 0 or "N" solves a x = b, 1 or "T" solves a^T x = b
@vjp_rule(linalg.solve_triangular)
def _solve_triangular(
    g,
    ans,
    a,
    b,
    trans=0,
    lower=False,
    unit_diagonal=False,
    overwrite_b=False,
    check_finite=True,
):
    if overwrite_b:
        refuse(_OVERWRITES.format(name="solve_triangular", which="b"))
    if trans in (2, "C"):
        refuse(_COMPLEX_TRANS)
    if trans in (0, "N"):  # noqa: SIM108  (folded where the rule is inlined)
        flipped = 1
    else:
        flipped = 0
    adjoint = linalg.solve_triangular(a, g, trans=flipped, lower=lower, unit_diagonal=unit_diagonal)
    columns = np.reshape(adjoint, (np.shape(a)[-1], -1))
    solution = np.reshape(ans, (np.shape(a)[-1], -1))
    if trans in (0, "N"):  # noqa: SIM108
        to_op = -np.matmul(columns, solution.T)
    else:
        to_op = -np.matmul(solution, columns.T)
    if unit_diagonal:  # noqa: SIM108
        above = 1  # the diagonal is not read
    else:
        above = 0
    if lower:  # noqa: SIM108
        to_a = np.tril(to_op, -above)
    else:
        to_a = np.triu(to_op, above)
    return to_a, adjoint


@jvp_rule(linalg.solve_triangular)
def _solve_triangular_jvp(
    t,
    ans,
    a,
    b,
    trans=0,
    lower=False,
    unit_diagonal=False,
    overwrite_b=False,
    check_finite=True,
):
    if overwrite_b:
        refuse(_OVERWRITES.format(name="solve_triangular", which="b"))
    if trans in (2, "C"):
        refuse(_COMPLEX_TRANS)
    if unit_diagonal:  # noqa: SIM108
        above = 1
    else:
        above = 0
    if lower:  # noqa: SIM108  (the triangle of a that is read)
        read = np.tril(np.ones_like(a), -above)
    else:
        read = np.triu(np.ones_like(a), above)
    if trans in (0, "N"):  # noqa: SIM108  (np.swapaxes(m, -1, -1) is m)
        other = -1
    else:
        other = -2
    return (
        linalg.solve_triangular(
            a,
            -np.matmul(np.swapaxes(t * read, -1, other), ans),
            trans=trans,
            lower=lower,
            unit_diagonal=unit_diagonal,
        ),
        linalg.solve_triangular(a, t, trans=trans, lower=lower, unit_diagonal=unit_diagonal),
    )


_GENERAL = (None, "gen", "general")
_ONE_TRIANGLE = ("sym", "symmetric", "pos", "positive definite")
_SOLVE_STRUCTURE = (
    "scipy.linalg.solve is differentiated with assume_a None, 'gen', 'sym' or 'pos'; for "
    "another structure call solve_triangular, solve_banded or np.linalg.solve"
)
_SOLVE_BATCH = (
    "scipy.linalg.solve of a stack of matrices is not differentiated; use np.linalg.solve"
)


def _solved_matrix(a, lower, assume_a):
    """The matrix ``solve`` inverts: ``a``, or the symmetric one its read triangle holds."""
    if assume_a in _GENERAL:
        return a
    if assume_a not in _ONE_TRIANGLE:
        refuse(_SOLVE_STRUCTURE)
    if lower:  # noqa: SIM108
        read = np.tril(a)
    else:
        read = np.triu(a)
    return read + np.swapaxes(read, -1, -2) - read * np.eye(np.shape(a)[-1])


def _onto_read_entries(d, lower, assume_a):
    """A derivative with respect to the matrix ``solve`` inverts, as one with respect to the
    entries of ``a`` it reads (each entry off the diagonal of a triangle stands for two)."""
    if assume_a in _GENERAL:
        return d
    both = d + np.swapaxes(d, -1, -2) - d * np.eye(np.shape(d)[-1])
    if lower:
        return np.tril(both)
    return np.triu(both)


@vjp_rule(linalg.solve)
def _solve(
    g,
    ans,
    a,
    b,
    lower=False,
    overwrite_a=False,
    overwrite_b=False,
    check_finite=True,
    assume_a=None,
    transposed=False,
):
    if overwrite_a:
        refuse(_OVERWRITES.format(name="solve", which="a"))
    if overwrite_b:
        refuse(_OVERWRITES.format(name="solve", which="b"))
    if np.ndim(a) != 2:
        refuse(_SOLVE_BATCH)
    matrix = _solved_matrix(a, lower, assume_a)
    if transposed:  # noqa: SIM108  (a^T x = b)
        adjoint = np.linalg.solve(matrix, g)
    else:
        adjoint = np.linalg.solve(np.swapaxes(matrix, -1, -2), g)
    columns = np.reshape(adjoint, (np.shape(a)[-1], -1))
    solution = np.reshape(ans, (np.shape(a)[-1], -1))
    if transposed:  # noqa: SIM108
        to_matrix = -np.matmul(solution, columns.T)
    else:
        to_matrix = -np.matmul(columns, solution.T)
    return _onto_read_entries(to_matrix, lower, assume_a), adjoint


@jvp_rule(linalg.solve)
def _solve_jvp(
    t,
    ans,
    a,
    b,
    lower=False,
    overwrite_a=False,
    overwrite_b=False,
    check_finite=True,
    assume_a=None,
    transposed=False,
):
    if overwrite_a:
        refuse(_OVERWRITES.format(name="solve", which="a"))
    if overwrite_b:
        refuse(_OVERWRITES.format(name="solve", which="b"))
    if np.ndim(a) != 2:
        refuse(_SOLVE_BATCH)
    matrix = _solved_matrix(a, lower, assume_a)
    if transposed:
        matrix = np.swapaxes(matrix, -1, -2)
    return (
        np.reshape(
            np.linalg.solve(
                matrix,
                -np.matmul(
                    _transposed_if(_solved_matrix(t, lower, assume_a), transposed),
                    np.reshape(ans, (np.shape(a)[-1], -1)),
                ),
            ),
            np.shape(ans),
        ),
        np.linalg.solve(matrix, t),
    )


def _transposed_if(m, transposed):
    if transposed:
        return np.swapaxes(m, -1, -2)
    return m


def _band_cells(l_and_u, n):
    """Constant gathers between a banded matrix's storage ``ab`` (``(l + u + 1, n)``) and
    the ``(n, n)`` matrix: the flat index into ``ab`` of each matrix cell with a 0/1 mask
    of the band, and the flat index into the matrix of each cell of ``ab`` with a mask of
    the cells inside the matrix."""
    lower, upper = l_and_u
    i, j = np.indices((n, n))
    in_band = (i - j <= lower) & (j - i <= upper)
    from_band = np.where(in_band, (upper + i - j) * n + j, 0)
    r, c = np.indices((lower + upper + 1, n))
    row = r - upper + c
    inside = (row >= 0) & (row < n)
    from_matrix = np.where(inside, row * n + c, 0)
    return from_band, in_band.astype(float), from_matrix, inside.astype(float)


def _banded_matrix(l_and_u, ab):
    from_band, in_band, _, _ = _band_cells(l_and_u, np.shape(ab)[-1])
    return np.take(np.ravel(ab), from_band) * in_band


def _band_of(l_and_u, matrix):
    _, _, from_matrix, inside = _band_cells(l_and_u, np.shape(matrix)[-1])
    return np.take(np.ravel(matrix), from_matrix) * inside


@vjp_rule(linalg.solve_banded)
def _solve_banded(g, ans, l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    if overwrite_ab or overwrite_b:
        refuse(_OVERWRITES.format(name="solve_banded", which="ab" if overwrite_ab else "b"))
    adjoint = np.linalg.solve(np.swapaxes(_banded_matrix(l_and_u, ab), -1, -2), g)
    columns = np.reshape(adjoint, (np.shape(ab)[-1], -1))
    solution = np.reshape(ans, (np.shape(ab)[-1], -1))
    return None, _band_of(l_and_u, -np.matmul(columns, solution.T)), adjoint


@jvp_rule(linalg.solve_banded)
def _solve_banded_jvp(
    t, ans, l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True
):
    if overwrite_ab or overwrite_b:
        refuse(_OVERWRITES.format(name="solve_banded", which="ab" if overwrite_ab else "b"))
    return (
        None,
        linalg.solve_banded(
            l_and_u,
            ab,
            -np.reshape(
                np.matmul(_banded_matrix(l_and_u, t), np.reshape(ans, (np.shape(ab)[-1], -1))),
                np.shape(ans),
            ),
        ),
        linalg.solve_banded(l_and_u, ab, t),
    )


# scipy.linalg.cholesky(a, lower=False) is np.linalg.cholesky's factor (its transpose by
# default); cho_factor(a, lower) returns (c, lower), c holding the factor in one triangle
# and, in the other, a's own entries (SciPy before 1.18: LAPACK leaves them) or zeros
# (SciPy 1.18 and later), which cho_solve((c, lower), b) ignores: it solves (F^T F) x = b
# for c's upper factor F (L L^T for a lower one).


def _cho_factor_keeps_entries() -> bool:
    """Whether this SciPy's ``cho_factor`` leaves ``a``'s entries in the triangle the
    factor does not use (so they move with ``a``), rather than zeros (constants)."""
    c, _ = linalg.cho_factor(np.array([[4.0, 1.0], [1.0, 4.0]]))
    return bool(c[1, 0] == 1.0)


CHO_FACTOR_KEEPS_ENTRIES = _cho_factor_keeps_entries()


@vjp_rule(linalg.cholesky)
def _scipy_cholesky(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    if overwrite_a:
        refuse(_OVERWRITES.format(name="cholesky", which="a"))
    return _cholesky(g, ans, a, upper=not lower)


@jvp_rule(linalg.cholesky)
def _scipy_cholesky_jvp(t, ans, a, lower=False, overwrite_a=False, check_finite=True):
    if overwrite_a:
        refuse(_OVERWRITES.format(name="cholesky", which="a"))
    return _cholesky_jvp(t, ans, a, upper=not lower)


returns_several(linalg.cho_factor)


@vjp_rule(linalg.cho_factor)
def _cho_factor(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    if overwrite_a:
        refuse(_OVERWRITES.format(name="cho_factor", which="a"))
    g_c = np.zeros_like(ans[0])
    if g[0] is not None:
        g_c = g[0]
    if lower:
        factor, g_factor, g_kept = np.tril(ans[0]), np.tril(g_c), np.triu(g_c, 1)
    else:
        factor, g_factor, g_kept = np.triu(ans[0]), np.triu(g_c), np.tril(g_c, -1)
    if CHO_FACTOR_KEEPS_ENTRIES:
        return _cholesky(g_factor, factor, a, upper=not lower) + g_kept
    return _cholesky(g_factor, factor, a, upper=not lower)


@jvp_rule(linalg.cho_factor)
def _cho_factor_jvp(t, ans, a, lower=False, overwrite_a=False, check_finite=True):
    if overwrite_a:
        refuse(_OVERWRITES.format(name="cho_factor", which="a"))
    if lower:
        factor = np.tril(ans[0])
        d_c = np.tril(_cholesky_jvp(t, factor, a, upper=False))
        other = np.triu(t, 1)
    else:
        factor = np.triu(ans[0])
        d_c = np.triu(_cholesky_jvp(t, factor, a, upper=True))
        other = np.tril(t, -1)
    if CHO_FACTOR_KEEPS_ENTRIES:
        d_c = d_c + other
    return ((d_c, None),)


@vjp_rule(linalg.cho_solve)
def _cho_solve(g, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    if overwrite_b:
        refuse(_OVERWRITES.format(name="cho_solve", which="b"))
    c, lower = c_and_lower
    g_b = linalg.cho_solve((c, lower), g)
    size = np.shape(c)[-1]
    d_a = -np.matmul(np.reshape(g_b, (size, -1)), np.reshape(ans, (size, -1)).T)
    d_a = d_a + d_a.T
    if lower:  # noqa: SIM108  (folded where the rule is inlined)
        g_c = np.tril(np.matmul(d_a, np.tril(c)))
    else:
        g_c = np.triu(np.matmul(np.triu(c), d_a))
    return index_cotangent(g_c, c_and_lower, 0), g_b


@jvp_rule(linalg.cho_solve)
def _cho_solve_jvp(t, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    if overwrite_b:
        refuse(_OVERWRITES.format(name="cho_solve", which="b"))
    # each entry reads only its own argument's tangent
    return _cho_solve_along_factor(c_and_lower, t[0], ans), linalg.cho_solve(c_and_lower, t)


def _cho_solve_along_factor(c_and_lower, d_c, x):
    """The tangent of ``x = cho_solve((c, lower), b)`` along ``d_c`` (of c's factor)."""
    c, lower = c_and_lower
    if lower:
        factor, d_factor = np.tril(c), np.tril(d_c)
        d_a = np.matmul(d_factor, factor.T) + np.matmul(factor, d_factor.T)
    else:
        factor, d_factor = np.triu(c), np.triu(d_c)
        d_a = np.matmul(d_factor.T, factor) + np.matmul(factor.T, d_factor)
    size = np.shape(c)[-1]
    moved = np.matmul(d_a, np.reshape(x, (size, -1)))
    return -linalg.cho_solve((c, lower), np.reshape(moved, np.shape(x)))


# rules of more of scipy.linalg, loaded with these
from s2sgrad.rules import scipy_linalg_factors as _factors  # noqa: E402, F401
from s2sgrad.rules import scipy_linalg_lstsq as _lstsq  # noqa: E402, F401
from s2sgrad.rules import scipy_linalg_lu as _lu  # noqa: E402, F401
from s2sgrad.rules import scipy_linalg_numpy_forms as _numpy_forms  # noqa: E402, F401
from s2sgrad.rules import scipy_linalg_polar as _polar  # noqa: E402, F401
from s2sgrad.rules import scipy_linalg_structured as _structured  # noqa: E402, F401
from s2sgrad.rules import scipy_linalg_twins as _twins  # noqa: E402, F401
