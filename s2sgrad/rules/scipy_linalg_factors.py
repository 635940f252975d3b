"""Derivative rules of ``scipy.linalg.lu_factor``, ``lu_solve``, ``logm`` and ``eigh``.

* ``lu, piv = lu_factor(a)``: ``a[perm] = L U`` with ``L`` the unit lower triangle of ``lu``,
  ``U`` its upper triangle and ``perm`` the rows LAPACK's interchanges ``piv`` gather
  (constant where the pivots do not change). With ``X = L^-1 da[perm] U^-1``, ``dL = L
  tril(X, -1)`` and ``dU = triu(X) U``; reverse mode: ``M = tril(L^T G_L, -1) + triu(G_U
  U^T)`` and ``da[perm] = L^-T M U^-T``.
* ``x = lu_solve((lu, piv), b, trans)`` solves ``a x = b`` (``a^T x = b`` for ``trans`` 1 or
  "T"), ``a = P L U`` read from ``lu``: ``db = a^-T g`` (``a^-1 g``) and the cotangent of
  ``a``, ``-db x^T`` (``-x db^T``), is carried to ``lu`` through ``da = P (dL U + L dU)``.
* ``logm(A)``: its derivative along ``E`` is the top-right block of ``logm([[A, E], [0,
  A]])`` (as ``expm``'s); reverse mode takes it at ``A^T`` along ``G``. Real logarithms only.
* ``eigh(a, lower=...)`` is NumPy's ``eigh`` with ``UPLO`` ``"L"`` or ``"U"`` (and
  ``eigvals_only`` its ``eigvalsh``): NumPy's rules. A second matrix ``b`` (the generalized
  problem), ``type``, or a subset of the eigenvalues is refused.

Each rule is made of functions that have rules, so derivatives of any order follow.

Example::

    sg.grad(lambda a: np.sum(lu_solve(lu_factor(a), b)))(a)
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from s2sgrad.rules.linalg import _eigh, _eigh_jvp, _eigvalsh, _eigvalsh_jvp
from s2sgrad.rules.registry import jvp_rule, returns_several, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import index_cotangent
from s2sgrad.runtime.core import is_complex

__all__: list[str] = []

_OVERWRITTEN = (
    "scipy.linalg.{name} with overwrite_{which}=True may overwrite the matrix the "
    "derivative reads; drop overwrite_{which}"
)
_COMPLEX_TRANS = (
    "scipy.linalg.lu_solve with trans=2 ('C', the conjugate transpose) is differentiated for "
    "real matrices as trans=1; pass trans=1 ('T')"
)


_SQUARE = "scipy.linalg.lu_factor is differentiated for square matrices; got shape {shape}"


def _square(a) -> None:
    shape = np.shape(a)
    if len(shape) != 2 or shape[0] != shape[1]:
        refuse(_SQUARE.format(shape=shape))


def _rows(piv) -> np.ndarray:
    """The rows ``perm`` with ``a[perm] = L U``: LAPACK's interchanges applied in turn."""
    perm = np.arange(np.size(piv))
    for i, j in enumerate(np.asarray(piv)):
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _factors(lu):
    size = np.shape(lu)[-1]
    return np.tril(lu, -1) + np.eye(size), np.triu(lu)


def _transposed(trans) -> bool:
    if trans in (2, "C"):
        refuse(_COMPLEX_TRANS)
    return trans in (1, "T")


returns_several(linalg.lu_factor)


@vjp_rule(linalg.lu_factor)
def _lu_factor(g, ans, a, overwrite_a=False, check_finite=True):
    _square(a)
    if overwrite_a:
        refuse(_OVERWRITTEN.format(name="lu_factor", which="a"))
    lu, piv = ans
    g_lu = np.zeros_like(lu) if g[0] is None else g[0]
    lower, upper = _factors(lu)
    middle = np.tril(np.matmul(lower.T, np.tril(g_lu, -1)), -1) + np.triu(
        np.matmul(np.triu(g_lu), upper.T)
    )
    left = linalg.solve_triangular(lower, middle, trans=1, lower=True, unit_diagonal=True)
    permuted = linalg.solve_triangular(upper, left.T, lower=False).T
    return permuted[np.argsort(_rows(piv))]


@jvp_rule(linalg.lu_factor)
def _lu_factor_jvp(t, ans, a, overwrite_a=False, check_finite=True):
    _square(a)
    if overwrite_a:
        refuse(_OVERWRITTEN.format(name="lu_factor", which="a"))
    lu, piv = ans
    lower, upper = _factors(lu)
    left = linalg.solve_triangular(lower, t[_rows(piv)], lower=True, unit_diagonal=True)
    middle = linalg.solve_triangular(upper, left.T, trans=1, lower=False).T
    d_lu = np.matmul(lower, np.tril(middle, -1)) + np.matmul(np.triu(middle), upper)
    return ((d_lu, None),)


def _lu_cotangent(g_a, lu, piv):
    """The cotangent of ``lu`` when ``g_a`` is that of ``a = P L U``."""
    lower, upper = _factors(lu)
    moved = g_a[_rows(piv)]
    return np.tril(np.matmul(moved, upper.T), -1) + np.triu(np.matmul(lower.T, moved))


def _lu_tangent(d_lu, lu, piv):
    """The tangent of ``a = P L U`` when ``lu`` moves by ``d_lu``."""
    lower, upper = _factors(lu)
    moved = np.matmul(np.tril(d_lu, -1), upper) + np.matmul(lower, np.triu(d_lu))
    return moved[np.argsort(_rows(piv))]


@vjp_rule(linalg.lu_solve)
def _lu_solve(g, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    if overwrite_b:
        refuse(_OVERWRITTEN.format(name="lu_solve", which="b"))
    transposed = _transposed(trans)
    lu, piv = lu_and_piv
    g_b = linalg.lu_solve((lu, piv), g, trans=0 if transposed else 1)
    size = np.shape(lu)[-1]
    x_columns = np.reshape(ans, (size, -1))
    g_columns = np.reshape(g_b, (size, -1))
    if transposed:  # noqa: SIM108  (folded where the rule is inlined)
        g_a = -np.matmul(x_columns, g_columns.T)
    else:
        g_a = -np.matmul(g_columns, x_columns.T)
    return index_cotangent(_lu_cotangent(g_a, lu, piv), lu_and_piv, 0), g_b


@jvp_rule(linalg.lu_solve)
def _lu_solve_jvp(t, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    if overwrite_b:
        refuse(_OVERWRITTEN.format(name="lu_solve", which="b"))
    transposed = _transposed(trans)
    lu, piv = lu_and_piv
    if type(t) is not tuple and type(t) is not list:  # the tangent of b
        return None, linalg.lu_solve((lu, piv), t, trans=trans)
    d_a = _lu_tangent(t[0], lu, piv)
    if transposed:
        d_a = d_a.T
    size = np.shape(lu)[-1]
    moved = np.matmul(d_a, np.reshape(ans, (size, -1)))
    along_lu = -linalg.lu_solve((lu, piv), np.reshape(moved, np.shape(ans)), trans=trans)
    return along_lu, None


_LOGM_DISP = (
    "scipy.linalg.logm(A, disp=False) returns an error estimate beside the logarithm and is "
    "not differentiated; call logm(A)"
)
_COMPLEX_LOG = (
    "scipy.linalg.logm of a matrix whose logarithm is complex (a negative real eigenvalue) "
    "is not differentiated; s2sgrad differentiates real logarithms only"
)


def _logm_along(a, e):
    """The derivative of ``logm`` at ``a`` along ``e``: a block of a matrix twice as big."""
    n = np.shape(a)[-1]
    top = np.concatenate([a, e], axis=-1)
    bottom = np.concatenate([np.zeros_like(a), a], axis=-1)
    return linalg.logm(np.concatenate([top, bottom], axis=-2))[..., :n, n:]


@vjp_rule(linalg.logm)
def _logm(g, ans, A, disp=True):
    if disp is False:
        refuse(_LOGM_DISP)
    if is_complex(ans) and not is_complex(A):
        refuse(_COMPLEX_LOG)
    return _logm_along(np.swapaxes(A, -1, -2), g)


@jvp_rule(linalg.logm)
def _logm_jvp(t, ans, A, disp=True):
    if disp is False:
        refuse(_LOGM_DISP)
    if is_complex(ans) and not is_complex(A):
        refuse(_COMPLEX_LOG)
    return _logm_along(A, t)


_EIGH_REFUSED = (
    "scipy.linalg.eigh is differentiated for one symmetric matrix and all its eigenvalues; "
    "a second matrix b (the generalized problem), type= or subset_by_index= / "
    "subset_by_value= is not (solve the generalized problem as eigh of "
    "inv(cholesky(b)) a inv(cholesky(b)).T)"
)


def _uplo(b, lower, type, subset_by_index, subset_by_value) -> str:
    if b is not None or type != 1 or subset_by_index is not None or subset_by_value is not None:
        refuse(_EIGH_REFUSED)
    return "L" if lower else "U"


# NumPy's eigh and eigvalsh rules (rules/linalg.py) called, not repeated: scipy's ``lower``
# is NumPy's ``UPLO``, and ``eigvals_only=True`` is ``eigvalsh``.


@vjp_rule(linalg.eigh, inline=False)
def _scipy_eigh(g, ans, a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False,
                overwrite_b=False, type=1, check_finite=True, subset_by_index=None,
                subset_by_value=None, driver=None):  # fmt: skip
    uplo = _uplo(b, lower, type, subset_by_index, subset_by_value)
    if eigvals_only:
        return _eigvalsh(g, ans, a, uplo), None
    return _eigh(g, ans, a, uplo), None


@jvp_rule(linalg.eigh, inline=False)
def _scipy_eigh_jvp(t, ans, a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False,
                    overwrite_b=False, type=1, check_finite=True, subset_by_index=None,
                    subset_by_value=None, driver=None):  # fmt: skip
    uplo = _uplo(b, lower, type, subset_by_index, subset_by_value)
    if eigvals_only:
        return _eigvalsh_jvp(t, ans, a, uplo), None
    return _eigh_jvp(t, ans, a, uplo)[0], None
