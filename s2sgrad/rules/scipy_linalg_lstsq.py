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
from s2sgrad.rules.scientific import _lstsq as _numpy_lstsq
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import pinv_tangent

_RANK_DEFICIENT = (
    "scipy.linalg.lstsq of a rank-deficient matrix has no derivative (its solution jumps as "
    "the rank changes); s2sgrad differentiates it for full-rank matrices only. Regularise "
    "the problem (solve (a.T @ a + lam * I) x = a.T @ b with scipy.linalg.solve), or drop "
    "the dependent columns"
)


# NumPy's VJP (rules/scientific.py) called, not repeated: the same four outputs, once the
# rank is known to be full (with SciPy's name in the refusal)
@vjp_rule(linalg.lstsq, inline=False)
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
    ga, gb = _numpy_lstsq(g, ans, a, b)
    return ga, gb


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
