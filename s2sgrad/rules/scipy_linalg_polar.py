"""Derivative rules of ``scipy.linalg.polar``: ``u, p = polar(a, side)`` of a real matrix.

With the reduced SVD ``a = W S Vh``, ``u = W Vh``, and ``p = Vh^T S Vh`` (``side="right"``,
``a = u p``) or ``p = W S W^T`` (``side="left"``, ``a = p u``), which is how SciPy computes
them. The rules carry the cotangents (tangents) of ``u`` and ``p`` to those of ``W``, ``s``
and ``Vh`` and call NumPy's SVD rules (rules/linalg.py), so they hold where those do
(distinct nonzero singular values), to any order. A complex matrix is refused at the
user's line.

Example::

    sg.grad(lambda a: np.sum(scipy.linalg.polar(a)[0] * w))(a)
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from s2sgrad.rules.linalg import _svd, _svd_jvp
from s2sgrad.rules.registry import jvp_rule, returns_several, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime.core import is_complex

__all__: list[str] = []

_COMPLEX = (
    "scipy.linalg.polar is differentiated for real matrices; write a complex one's factors "
    "from np.linalg.svd"
)

returns_several(linalg.polar)


def _factors(a):
    if is_complex(a):
        refuse(_COMPLEX)
    return np.linalg.svd(a, full_matrices=False)


def _given(g, value):
    """A cotangent of an output, zeros for one nobody used (None, or a zero)."""
    return np.zeros_like(value) if g is None else np.broadcast_to(g, np.shape(value))


@vjp_rule(linalg.polar, inline=False)
def _polar(g, ans, a, side="right"):
    w, s, vh = _factors(a)
    g_u, g_p = _given(g[0], ans[0]), _given(g[1], ans[1])
    both = g_p + g_p.T
    g_w = np.matmul(g_u, vh.T)
    g_vh = np.matmul(w.T, g_u)
    if side == "right":
        g_vh = g_vh + s[:, None] * np.matmul(vh, both)
        g_s = np.einsum("ij,jk,ik->i", vh, g_p, vh)
    else:
        g_w = g_w + np.matmul(both, w) * s[None, :]
        g_s = np.einsum("ji,jk,ki->i", w, g_p, w)
    return _svd((g_w, g_s, g_vh), (w, s, vh), a, full_matrices=False)


@jvp_rule(linalg.polar, inline=False)
def _polar_jvp(t, ans, a, side="right"):
    w, s, vh = _factors(a)
    ((d_w, d_s, d_vh),) = _svd_jvp(t, (w, s, vh), a, full_matrices=False)
    d_u = np.matmul(d_w, vh) + np.matmul(w, d_vh)
    if side == "right":
        scaled = s[:, None] * vh
        d_p = np.matmul(d_vh.T, scaled) + np.matmul(vh.T * d_s, vh) + np.matmul(scaled.T, d_vh)
    else:
        scaled = w * s[None, :]
        d_p = np.matmul(d_w, scaled.T) + np.matmul(w * d_s, w.T) + np.matmul(scaled, d_w.T)
    return ((d_u, d_p),)
