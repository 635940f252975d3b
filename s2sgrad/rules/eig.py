"""Derivative rules of ``np.linalg.eig`` and ``np.linalg.eigvals`` (docs/complex.md).

``a = V diag(w) V^-1``. With ``M = V^-1 da V``: ``dw = diag(M)`` and ``dV = V (F * M)``,
where ``F[i, j] = 1 / (w[j] - w[i])`` off the diagonal and 0 on it. Both are holomorphic
in ``a``, so the VJPs transpose without conjugating: ``V^-T (diag(gw) + F * (V^T gV)) V^T``.

Conditions, as in JAX and autograd: the eigenvalues are distinct; and an eigenvector is
only defined up to a complex factor (NumPy scales each to length 1 with some phase), so
the derivative through ``V`` is that of losses that do not see those factors
(``V diag(f(w)) V^-1``, ratios of entries of one eigenvector). A real ``a`` gets the real
part of its cotangent, whether NumPy returned real or complex eigenvalues.
"""

import numpy as np

from s2sgrad.rules.registry import complex_ready, complex_source, jvp_rule, vjp_rule
from s2sgrad.runtime import unbroadcast


@vjp_rule(np.linalg.eig)
def _eig(g, ans, a):
    w = ans[0]
    v = ans[1]
    v_t = np.swapaxes(v, -1, -2)
    eye = np.eye(np.shape(w)[-1], dtype=w.dtype)
    gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1)
    inverse_gaps = (1.0 - eye) / (gaps + eye)
    if g[0] is None:
        middle = inverse_gaps * np.matmul(v_t, g[1])
    elif g[1] is None:
        middle = np.expand_dims(g[0], -1) * eye
    else:
        middle = np.expand_dims(g[0], -1) * eye + inverse_gaps * np.matmul(v_t, g[1])
    return unbroadcast(np.linalg.solve(v_t, np.matmul(middle, v_t)), a)


@jvp_rule(np.linalg.eig)
def _eig_jvp(t, ans, a):
    w = ans[0]
    v = ans[1]
    eye = np.eye(np.shape(w)[-1], dtype=w.dtype)
    gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1)
    inverse_gaps = (1.0 - eye) / (gaps + eye)
    m = np.linalg.solve(v, np.matmul(t, v))
    return ((np.diagonal(m, axis1=-2, axis2=-1), np.matmul(v, inverse_gaps * m)),)


@vjp_rule(np.linalg.eigvals)
def _eigvals(g, ans, a):
    v_t = np.swapaxes(np.linalg.eig(a)[1], -1, -2)
    return unbroadcast(np.linalg.solve(v_t, np.expand_dims(g, -1) * v_t), a)


@jvp_rule(np.linalg.eigvals)
def _eigvals_jvp(t, ans, a):
    v = np.linalg.eig(a)[1]
    return np.diagonal(np.linalg.solve(v, np.matmul(t, v)), axis1=-2, axis2=-1)


complex_ready(np.linalg.eig, np.linalg.eigvals)
complex_source(np.linalg.eig, np.linalg.eigvals)
