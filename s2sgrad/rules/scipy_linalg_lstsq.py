"""``scipy.linalg.lstsq(a, b)``: the least-squares solution ``x``, the residues, the rank and
the singular values of ``a``, differentiated in ``a`` and ``b`` for full-rank matrices, tall
(``x = pinv(a) b`` minimises ``|a x - b|``) and wide (``x`` is the solution of least norm).
Loaded with :mod:`s2sgrad.rules.scipy_linalg`.

The rules are NumPy's for ``np.linalg.lstsq`` (``s2sgrad/rules/scientific.py``): ``x`` moves
with the derivative of the pseudo-inverse (``pinv_tangent``), the residues
``sum((b - a x)**2, axis=0)`` (SciPy returns them only for tall full-rank ``a``, as one
number for a 1-D ``b``) with ``-2 (b - a x) . (da x)`` and ``2 (b - a x) . db``, and the
singular values with ``u_i^T da v_i``. A rank-deficient ``a`` is refused where it is
differentiated: its solution jumps as the rank changes. A differentiated ``cond`` (a
cutoff) is refused; ``lapack_driver="gelsy"``, which gives no singular values, is differentiated in
``x`` and the residues.

Example::

    sg.grad(lambda a: np.sum(scipy.linalg.lstsq(a, b)[0]))(np.random.rand(5, 3))
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import pinv_tangent

_RANK_DEFICIENT = (
    "scipy.linalg.lstsq of a rank-deficient matrix has no derivative (its solution jumps as "
    "the rank changes); s2sgrad differentiates it for full-rank matrices only. Regularise "
    "the problem (solve (a.T @ a + lam * I) x = a.T @ b with scipy.linalg.solve), or drop "
    "the dependent columns"
)


@vjp_rule(linalg.lstsq)
def _lstsq(
    g,
    ans,
    a,
    b,
    cond=None,
    overwrite_a=False,
    overwrite_b=False,
    check_finite=True,
    lapack_driver=None,
):
    if ans[2] < np.min(np.shape(a)):
        refuse(_RANK_DEFICIENT)
    inverse = np.linalg.pinv(a)
    inverse_t = np.swapaxes(inverse, 0, 1)
    b_columns = np.reshape(b, (np.shape(b)[0], -1))
    x_columns = np.reshape(ans[0], (np.shape(a)[1], -1))
    if g[0] is None:  # noqa: SIM108 (a rule body: statements, not expressions)
        g_x = np.zeros_like(x_columns)
    else:
        g_x = np.reshape(g[0], np.shape(x_columns))
    g_inverse_t = np.matmul(b_columns, np.swapaxes(g_x, 0, 1))
    gb = np.matmul(inverse_t, g_x)
    through = -np.matmul(inverse_t, np.matmul(np.swapaxes(g_inverse_t, 0, 1), inverse_t))
    left_null = np.matmul(g_inverse_t - a @ inverse @ g_inverse_t, inverse @ inverse_t)
    right_null = np.matmul(inverse_t @ inverse, g_inverse_t - g_inverse_t @ inverse @ a)
    ga = through + left_null + right_null
    if g[1] is not None and np.size(ans[1]) > 0:  # else no residues (a square or wide a)
        residual = b_columns - np.matmul(a, x_columns)
        weighted = residual * np.reshape(g[1], (1, -1))
        ga = ga - 2.0 * np.matmul(weighted, np.swapaxes(x_columns, 0, 1))
        gb = gb + 2.0 * weighted
    if g[3] is not None:
        directions = np.linalg.svd(a, full_matrices=False)
        ga = ga + np.matmul(directions[0] * np.reshape(g[3], (1, -1)), directions[2])
    return ga, np.reshape(gb, np.shape(b))


@jvp_rule(linalg.lstsq)
def _lstsq_jvp(
    t,
    ans,
    a,
    b,
    cond=None,
    overwrite_a=False,
    overwrite_b=False,
    check_finite=True,
    lapack_driver=None,
):
    if ans[2] < np.min(np.shape(a)):
        refuse(_RANK_DEFICIENT)
    inverse = np.linalg.pinv(a)
    b_columns = np.reshape(b, (np.shape(b)[0], -1))
    x_columns = np.reshape(ans[0], (np.shape(a)[1], -1))
    residual = b_columns - np.matmul(a, x_columns)
    count = np.size(ans[1])
    directions = np.linalg.svd(a, full_matrices=False)
    return (
        (
            np.reshape(np.matmul(pinv_tangent(t, a, inverse), b_columns), np.shape(ans[0])),
            np.reshape(
                (-2.0 * np.sum(residual * np.matmul(t, x_columns), axis=0))[:count],
                np.shape(ans[1]),
            ),
            None,
            np.sum(directions[0] * np.matmul(t, np.swapaxes(directions[2], 0, 1)), axis=0),
        ),
        (
            np.reshape(np.matmul(inverse, t), np.shape(ans[0])),
            np.reshape(
                (2.0 * np.sum(residual * np.reshape(t, np.shape(b_columns)), axis=0))[:count],
                np.shape(ans[1]),
            ),
            None,
            np.zeros(np.shape(directions[1]), dtype=np.result_type(t, 0.0)),
        ),
    )
