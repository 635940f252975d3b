"""Rules of ``scipy.linalg`` functions that are NumPy's, or a block of a function with a rule:
``eigvalsh``, ``svd`` and ``pinv`` by NumPy's rules (``rules/linalg.py``), ``khatri_rao``
(column-wise Kronecker products: bilinear) and ``expm_frechet``.

* ``eigvalsh(a, lower=...)`` is ``np.linalg.eigvalsh(a, UPLO)``; a second matrix ``b``,
  ``type`` or a subset of the eigenvalues is refused, as for ``eigh``.
* ``svd(a, full_matrices, compute_uv)`` and ``pinv(a)`` (full rank; ``atol``/``rtol`` only
  cut off singular values, so they do not change the derivative where the rank is full) are
  NumPy's; ``return_rank=True`` is refused.
* ``expm_frechet(A, E)`` is ``L(A, E)``, the top right block of ``expm([[A, E], [0, A]])``
  (with ``expm(A)`` its top left block): ``scipy.linalg.expm``'s rule on that block matrix.

``overwrite_a=True`` (and ``overwrite_b``) may overwrite what the derivative reads and is
refused. Each rule is made of functions with rules, so derivatives of any order follow.

Example::

    sg.grad(lambda a: np.sum(scipy.linalg.svd(a, compute_uv=False)))(a)
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from s2sgrad.rules.linalg import _eigvalsh, _eigvalsh_jvp, _pinv, _pinv_jvp, _svd, _svd_jvp
from s2sgrad.rules.registry import jvp_rule, nondifferentiable, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.rules.scipy_linalg_factors import _uplo

__all__: list[str] = []

_OVERWRITTEN = (
    "scipy.linalg.{name} with overwrite_a=True or overwrite_b=True may overwrite the matrix "
    "the derivative reads; drop overwrite_a and overwrite_b"
)
_RANK = (
    "scipy.linalg.pinv with return_rank=True is not differentiated; call it without "
    "return_rank (np.linalg.matrix_rank gives the rank)"
)
_FRECHET_SHAPES = (
    "scipy.linalg.expm_frechet is differentiated for two square matrices of one shape; got "
    "shapes {a} and {e}"
)


def _kept(name: str, *overwrite) -> None:
    if any(overwrite):
        refuse(_OVERWRITTEN.format(name=name))


# ---------------------------------------------------------------------------------------
# NumPy's twins


@vjp_rule(linalg.eigvalsh, inline=False)
def _scipy_eigvalsh(g, ans, a, b=None, *, lower=True, overwrite_a=False, overwrite_b=False,
                    type=1, check_finite=True, subset_by_index=None, subset_by_value=None,
                    driver=None):  # fmt: skip
    _kept("eigvalsh", overwrite_a, overwrite_b)
    uplo = _uplo(b, lower, type, subset_by_index, subset_by_value)
    return _eigvalsh(g, ans, a, uplo), None


@jvp_rule(linalg.eigvalsh, inline=False)
def _scipy_eigvalsh_jvp(t, ans, a, b=None, *, lower=True, overwrite_a=False, overwrite_b=False,
                        type=1, check_finite=True, subset_by_index=None, subset_by_value=None,
                        driver=None):  # fmt: skip
    _kept("eigvalsh", overwrite_a, overwrite_b)
    uplo = _uplo(b, lower, type, subset_by_index, subset_by_value)
    return _eigvalsh_jvp(t, ans, a, uplo), None


@vjp_rule(linalg.svd, inline=False)
def _scipy_svd(g, ans, a, full_matrices=True, compute_uv=True, overwrite_a=False,
               check_finite=True, lapack_driver="gesdd"):  # fmt: skip
    _kept("svd", overwrite_a)
    return _svd(g, ans, a, full_matrices, compute_uv)


@jvp_rule(linalg.svd, inline=False)
def _scipy_svd_jvp(t, ans, a, full_matrices=True, compute_uv=True, overwrite_a=False,
                   check_finite=True, lapack_driver="gesdd"):  # fmt: skip
    _kept("svd", overwrite_a)
    return _svd_jvp(t, ans, a, full_matrices, compute_uv)


@vjp_rule(linalg.pinv, inline=False)
def _scipy_pinv(g, ans, a, *, atol=None, rtol=None, return_rank=False, check_finite=True):
    if return_rank:
        refuse(_RANK)
    return _pinv(g, ans, a)


@jvp_rule(linalg.pinv, inline=False)
def _scipy_pinv_jvp(t, ans, a, *, atol=None, rtol=None, return_rank=False, check_finite=True):
    if return_rank:
        refuse(_RANK)
    return _pinv_jvp(t, ans, a)


# ---------------------------------------------------------------------------------------
# khatri_rao(a, b)[:, j] = kron(a[:, j], b[:, j])


@vjp_rule(linalg.khatri_rao)
def _khatri_rao(g, ans, a, b):
    blocks = np.reshape(g, (np.shape(a)[0], np.shape(b)[0], np.shape(a)[1]))
    ga = np.sum(blocks * np.expand_dims(b, 0), axis=1)
    gb = np.sum(blocks * np.expand_dims(a, 1), axis=0)
    return ga, gb


@jvp_rule(linalg.khatri_rao)
def _khatri_rao_jvp(t, ans, a, b):
    return linalg.khatri_rao(t, b), linalg.khatri_rao(a, t)


# ---------------------------------------------------------------------------------------
# expm_frechet(A, E): blocks of expm([[A, E], [0, A]])


def _square_pair(A, E) -> None:
    if np.ndim(A) != 2 or np.shape(A) != np.shape(E) or np.shape(A)[0] != np.shape(A)[1]:
        refuse(_FRECHET_SHAPES.format(a=np.shape(A), e=np.shape(E)))


nondifferentiable(_square_pair)  # a check of shapes


def _expm_along(a, e):
    """The derivative of ``expm`` at ``a`` along ``e``: the top right block of ``expm`` of
    ``[[a, e], [0, a]]`` (as ``rules/scipy_linalg.py``'s, which imports this module)."""
    n = np.shape(a)[-1]
    return linalg.expm(_blocks(a, e, a))[:n, n:]


def _blocks(top_left, top_right, bottom_right):
    zeros = np.zeros_like(top_left)
    top = np.concatenate([top_left, top_right], axis=1)
    return np.concatenate([top, np.concatenate([zeros, bottom_right], axis=1)], axis=0)


@vjp_rule(linalg.expm_frechet, inline=False)
def _expm_frechet(g, ans, A, E, method=None, compute_expm=True, check_finite=True):
    _square_pair(A, E)
    n = np.shape(A)[0]
    block = _blocks(A, E, A)
    if compute_expm:
        g_expm = np.zeros_like(A) if g[0] is None else g[0]
        g_frechet = np.zeros_like(A) if g[1] is None else g[1]
    else:
        g_expm = np.zeros_like(A)
        g_frechet = g
    g_block = _expm_along(block.T, _blocks(g_expm, g_frechet, np.zeros_like(A)))
    return g_block[:n, :n] + g_block[n:, n:], g_block[:n, n:]


@jvp_rule(linalg.expm_frechet, inline=False)
def _expm_frechet_jvp(t, ans, A, E, method=None, compute_expm=True, check_finite=True):
    # forward mode calls this once per differentiated argument, with that argument's
    # tangent; A and E have one shape, so each entry is computed for either tangent
    _square_pair(A, E)
    n = np.shape(A)[0]
    block = _blocks(A, E, A)
    from_a = _expm_along(block, _blocks(t, np.zeros_like(t), t))
    from_e = _expm_along(block, _blocks(np.zeros_like(t), t, np.zeros_like(t)))
    if compute_expm:
        return (from_a[:n, :n], from_a[:n, n:]), (from_e[:n, :n], from_e[:n, n:])
    return from_a[:n, n:], from_e[:n, n:]
