"""Derivative rules of ``scipy.linalg.lu``: ``p, l, u = lu(a)`` of a square matrix.

``a = P L U`` with ``P`` a permutation (constant where the pivots do not change), ``L`` unit
lower triangular and ``U`` upper triangular. With ``X = L^-1 P^T da U^-1``, ``dL = L
tril(X, -1)`` and ``dU = triu(X) U`` (``lu_factor``'s derivative, rules/scipy_linalg_factors.py,
with the permutation as a matrix); reverse mode: ``M = tril(L^T G_L, -1) + triu(G_U U^T)``
and ``da = P L^-T M U^-T``. A rectangular or stacked matrix, ``permute_l=True`` (``P L`` as
one factor), ``p_indices=True`` and ``overwrite_a=True`` are refused at the user's line.

The rules are made of functions that have rules, so derivatives of any order follow.

Example::

    sg.grad(lambda a: np.sum(scipy.linalg.lu(a)[2] ** 2))(a)
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from s2sgrad.rules.registry import jvp_rule, returns_several, vjp_rule
from s2sgrad.rules.scipy_common import refuse

__all__: list[str] = []

_REFUSED = (
    "scipy.linalg.lu is differentiated for one square matrix, with permute_l, p_indices and "
    "overwrite_a left False; got {what} (for a rectangular matrix differentiate "
    "scipy.linalg.lu_factor of a square block, or use np.linalg.qr)"
)

returns_several(linalg.lu)


def _plain_square(a, permute_l, overwrite_a, p_indices) -> None:
    shape = np.shape(a)
    if len(shape) != 2 or shape[0] != shape[1]:
        refuse(_REFUSED.format(what=f"shape {shape}"))
    for name, given in (
        ("permute_l", permute_l),
        ("overwrite_a", overwrite_a),
        ("p_indices", p_indices),
    ):
        if given:
            refuse(_REFUSED.format(what=f"{name}=True"))


@vjp_rule(linalg.lu)
def _lu(g, ans, a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    _plain_square(a, permute_l, overwrite_a, p_indices)
    p, lower, upper = ans
    # an output nobody used has None, or a zero (a tuple's entry picked by index)
    g_lower = np.zeros_like(lower) if g[1] is None else np.broadcast_to(g[1], np.shape(lower))
    g_upper = np.zeros_like(upper) if g[2] is None else np.broadcast_to(g[2], np.shape(upper))
    middle = np.tril(np.matmul(lower.T, g_lower), -1) + np.triu(np.matmul(g_upper, upper.T))
    left = linalg.solve_triangular(lower, middle, trans=1, lower=True, unit_diagonal=True)
    return np.matmul(p, linalg.solve_triangular(upper, left.T, lower=False).T)


@jvp_rule(linalg.lu)
def _lu_jvp(t, ans, a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    _plain_square(a, permute_l, overwrite_a, p_indices)
    p, lower, upper = ans
    moved = np.matmul(p.T, t)
    left = linalg.solve_triangular(lower, moved, lower=True, unit_diagonal=True)
    middle = linalg.solve_triangular(upper, left.T, trans=1, lower=False).T
    d_lower = np.matmul(lower, np.tril(middle, -1))
    d_upper = np.matmul(np.triu(middle), upper)
    return ((np.zeros_like(p), d_lower, d_upper),)  # the permutation does not move
