"""Rules of SciPy's spherical Bessel functions ``spherical_jn``, ``spherical_yn``,
``spherical_in`` and ``spherical_kn`` (``f(n, z, derivative=False)``). Loaded with
:mod:`s2sgrad.rules.scipy_special`.

The derivative in ``z`` of ``f(n, z)`` is SciPy's own ``f(n, z, derivative=True)``; that of
``f(n, z, derivative=True)`` follows from the recurrence every one of the four satisfies,
``(2n + 1) f_n' = a n f_(n-1) + b (n + 1) f_(n+1)`` (``a, b`` = 1, -1 for ``jn`` and ``yn``;
1, 1 for ``in``; -1, -1 for ``kn``), differentiated once more: it holds for the
derivatives too, so every order is written with calls that have these rules, and no
division by ``z`` makes ``z = 0`` special. SciPy truncates the order ``n`` to an integer
(and reads ``derivative`` as a flag): the output is piecewise constant in both, whose
derivative is zero by design (a value computed from differentiated ones may reach ``n``,
as the order of a loop's term does in the derivative of a derivative).

Example::

    sg.grad(lambda z: np.sum(special.spherical_jn(2, z)))(np.array([0.5, 1.2]))
"""

from __future__ import annotations

import numpy as np
from scipy import special

from s2sgrad.rules.registry import jvp_rule, vjp_rule, zero_by_design
from s2sgrad.runtime import unbroadcast


@vjp_rule(special.spherical_jn)
def _spherical_jn(g, ans, n, z, derivative=False):
    if derivative:  # the recurrence differentiated (see the module; n = 0 drops "below")
        below = special.spherical_jn(np.maximum(n - 1, 0), z, derivative=True)
        above = special.spherical_jn(n + 1, z, derivative=True)
        slope = (n * below - (n + 1) * above) / (2 * n + 1)
    else:
        slope = special.spherical_jn(n, z, derivative=True)
    return None, unbroadcast(g * slope, z), None


@jvp_rule(special.spherical_jn)
def _spherical_jn_jvp(t, ans, n, z, derivative=False):
    if derivative:  # the recurrence differentiated (see the module; n = 0 drops "below")
        below = special.spherical_jn(np.maximum(n - 1, 0), z, derivative=True)
        above = special.spherical_jn(n + 1, z, derivative=True)
        slope = (n * below - (n + 1) * above) / (2 * n + 1)
    else:
        slope = special.spherical_jn(n, z, derivative=True)
    return None, t * slope, None


@vjp_rule(special.spherical_yn)
def _spherical_yn(g, ans, n, z, derivative=False):
    if derivative:  # the recurrence differentiated (see the module; n = 0 drops "below")
        below = special.spherical_yn(np.maximum(n - 1, 0), z, derivative=True)
        above = special.spherical_yn(n + 1, z, derivative=True)
        slope = (n * below - (n + 1) * above) / (2 * n + 1)
    else:
        slope = special.spherical_yn(n, z, derivative=True)
    return None, unbroadcast(g * slope, z), None


@jvp_rule(special.spherical_yn)
def _spherical_yn_jvp(t, ans, n, z, derivative=False):
    if derivative:  # the recurrence differentiated (see the module; n = 0 drops "below")
        below = special.spherical_yn(np.maximum(n - 1, 0), z, derivative=True)
        above = special.spherical_yn(n + 1, z, derivative=True)
        slope = (n * below - (n + 1) * above) / (2 * n + 1)
    else:
        slope = special.spherical_yn(n, z, derivative=True)
    return None, t * slope, None


@vjp_rule(special.spherical_in)
def _spherical_in(g, ans, n, z, derivative=False):
    if derivative:  # the recurrence differentiated (see the module; n = 0 drops "below")
        below = special.spherical_in(np.maximum(n - 1, 0), z, derivative=True)
        above = special.spherical_in(n + 1, z, derivative=True)
        slope = (n * below + (n + 1) * above) / (2 * n + 1)
    else:
        slope = special.spherical_in(n, z, derivative=True)
    return None, unbroadcast(g * slope, z), None


@jvp_rule(special.spherical_in)
def _spherical_in_jvp(t, ans, n, z, derivative=False):
    if derivative:  # the recurrence differentiated (see the module; n = 0 drops "below")
        below = special.spherical_in(np.maximum(n - 1, 0), z, derivative=True)
        above = special.spherical_in(n + 1, z, derivative=True)
        slope = (n * below + (n + 1) * above) / (2 * n + 1)
    else:
        slope = special.spherical_in(n, z, derivative=True)
    return None, t * slope, None


@vjp_rule(special.spherical_kn)
def _spherical_kn(g, ans, n, z, derivative=False):
    if derivative:  # the recurrence differentiated (see the module; n = 0 drops "below")
        below = special.spherical_kn(np.maximum(n - 1, 0), z, derivative=True)
        above = special.spherical_kn(n + 1, z, derivative=True)
        slope = (-n * below - (n + 1) * above) / (2 * n + 1)
    else:
        slope = special.spherical_kn(n, z, derivative=True)
    return None, unbroadcast(g * slope, z), None


@jvp_rule(special.spherical_kn)
def _spherical_kn_jvp(t, ans, n, z, derivative=False):
    if derivative:  # the recurrence differentiated (see the module; n = 0 drops "below")
        below = special.spherical_kn(np.maximum(n - 1, 0), z, derivative=True)
        above = special.spherical_kn(n + 1, z, derivative=True)
        slope = (-n * below - (n + 1) * above) / (2 * n + 1)
    else:
        slope = special.spherical_kn(n, z, derivative=True)
    return None, t * slope, None


for _function in (
    special.spherical_jn,
    special.spherical_yn,
    special.spherical_in,
    special.spherical_kn,
):
    zero_by_design(_function, 0, 2)
