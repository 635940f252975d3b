"""Rules of ``scipy.special``'s holomorphic functions with complex values: the Faddeeva
function ``wofz`` and the Lambert W function ``lambertw``. Loaded with
:mod:`s2sgrad.rules.scipy_special`.

* ``w = wofz(z) = exp(-z**2) erfc(-i z)`` solves ``w' = -2 z w + 2 i / sqrt(pi)``.
* ``W = lambertw(z, k)`` inverts ``z = W exp(W)`` on branch ``k``, so
  ``W' = 1 / (exp(W) (1 + W))`` (1 at ``z = 0`` on the principal branch); the branch ``k``
  and the tolerance are not differentiated.

Both follow docs/complex.md for a holomorphic function (``g * f'(z)``, no conjugate), and
give complex values of a real argument (declared with ``complex_source``), whose cotangent
``unbroadcast`` cuts to its real part. The slopes are made of functions with rules (the
answer itself, ``np.exp``), so derivatives of any order follow.

Example::

    sg.grad(lambda x: np.sum(np.real(special.wofz(x + 0.5j))))(np.array([0.3, 1.2]))
"""

from __future__ import annotations

import numpy as np
from scipy import special

from s2sgrad.rules.registry import complex_ready, complex_source, jvp_rule, vjp_rule
from s2sgrad.runtime import unbroadcast

_TWO_OVER_ROOT_PI = 2.0 / np.sqrt(np.pi)


@vjp_rule(special.wofz)
def _wofz(g, ans, z):
    return unbroadcast(g * (1j * _TWO_OVER_ROOT_PI - 2.0 * z * ans), z)


@jvp_rule(special.wofz)
def _wofz_jvp(t, ans, z):
    return t * (1j * _TWO_OVER_ROOT_PI - 2.0 * z * ans)


@vjp_rule(special.lambertw)
def _lambertw(g, ans, z, k=0, tol=1e-8):
    return unbroadcast(g / (np.exp(ans) * (1.0 + ans)), z)


@jvp_rule(special.lambertw)
def _lambertw_jvp(t, ans, z, k=0, tol=1e-8):
    return t / (np.exp(ans) * (1.0 + ans))


complex_ready(special.wofz, special.lambertw)
complex_source(special.wofz, special.lambertw)
