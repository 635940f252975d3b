"""Rules of ``scipy.linalg`` functions that compute what a NumPy function with a rule does:
``svdvals(a)`` is ``np.linalg.svd(a, compute_uv=False)``, ``norm`` is ``np.linalg.norm``
and ``qr(a, mode="economic")`` (or ``mode="full"`` of a square matrix) is
``np.linalg.qr(a)``. Their rules are NumPy's, so derivatives of any order follow. Pivoting
QR, ``mode="r"`` and ``"raw"``, the full QR of a non-square matrix (its extra columns of
``Q`` are not functions of ``a``) and ``overwrite_a=True`` are refused.

Example::

    sg.grad(lambda a: np.sum(scipy.linalg.svdvals(a)))(a)  # U @ Vh, the nuclear norm's
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from s2sgrad.rules.linalg import _qr, _qr_jvp, _svd, _svd_jvp
from s2sgrad.rules.reductions import _norm, _norm_jvp
from s2sgrad.rules.registry import jvp_rule, returns_several, vjp_rule
from s2sgrad.rules.scipy_common import refuse

__all__: list[str] = []

_OVERWRITTEN = (
    "scipy.linalg.{name} with overwrite_a=True may overwrite the matrix the derivative "
    "reads; drop overwrite_a"
)
_QR_REFUSED = (
    "s2sgrad differentiates scipy.linalg.qr without pivoting, in mode='economic' of a "
    "matrix with at least as many rows as columns (or mode='full' of a square one), not "
    "mode={mode!r}{pivoting} of a {m} x {n} matrix; use np.linalg.qr(a) for the reduced "
    "factorisation"
)


@vjp_rule(linalg.svdvals, inline=False)
def _svdvals(g, ans, a, overwrite_a=False, check_finite=True):
    if overwrite_a:
        refuse(_OVERWRITTEN.format(name="svdvals"))
    return _svd(g, ans, a, full_matrices=False, compute_uv=False)


@jvp_rule(linalg.svdvals, inline=False)
def _svdvals_jvp(t, ans, a, overwrite_a=False, check_finite=True):
    if overwrite_a:
        refuse(_OVERWRITTEN.format(name="svdvals"))
    return _svd_jvp(t, ans, a, full_matrices=False, compute_uv=False)


# NumPy's rules themselves: a second derivative NumPy's refuses names the user's line
vjp_rule(linalg.norm)(_norm)  # check_finite= is not taken (a call passing it is refused)
jvp_rule(linalg.norm)(_norm_jvp)


returns_several(linalg.qr)


def _refuse_qr(a, overwrite_a, mode, pivoting) -> None:
    if overwrite_a:
        refuse(_OVERWRITTEN.format(name="qr"))
    m, n = np.shape(a)[-2:]
    if pivoting or m < n or mode not in ("economic", "full") or (mode == "full" and m != n):
        with_pivoting = " with pivoting" if pivoting else ""
        refuse(_QR_REFUSED.format(mode=mode, pivoting=with_pivoting, m=m, n=n))


@vjp_rule(linalg.qr, inline=False)
def _scipy_qr(
    g, ans, a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True
):
    _refuse_qr(a, overwrite_a, mode, pivoting)
    return _qr(g, ans, a)


@jvp_rule(linalg.qr, inline=False)
def _scipy_qr_jvp(
    t, ans, a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True
):
    _refuse_qr(a, overwrite_a, mode, pivoting)
    return _qr_jvp(t, ans, a)
