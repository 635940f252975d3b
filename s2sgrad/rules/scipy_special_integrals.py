"""Rules of ``scipy.special``'s Fresnel and Airy functions, Struve functions and incomplete
elliptic integrals. Loaded with :mod:`s2sgrad.rules.scipy_special`.

* ``fresnel(x) = (S, C)``: ``S' = sin(pi x**2 / 2)``, ``C' = cos(pi x**2 / 2)``.
* ``airy(x) = (Ai, Ai', Bi, Bi')``: the Airy equation ``y'' = x y`` gives the slopes
  ``Ai'``, ``x Ai``, ``Bi'`` and ``x Bi``.
* ``struve(v, x)`` and ``modstruve(v, x)``: ``H_v' = H_{v-1} - v H_v / x`` (the same for
  ``L_v``), in ``x``; the order ``v`` is refused.
* ``ellipkinc(phi, m) = F`` and ``ellipeinc(phi, m) = E``: in ``phi``, ``F' = 1 / D`` and
  ``E' = D`` with ``D = sqrt(1 - m sin(phi)**2)``; in ``m``, ``(E - F) / (2 m)`` for ``E``
  and ``(E - (1 - m) F) / (2 m (1 - m)) - sin(phi) cos(phi) / (2 (1 - m) D)`` for ``F``
  (``0 < m < 1``).

Every slope is made of functions with rules, so derivatives of any order follow.

Example::

    sg.grad(lambda x: np.sum(special.fresnel(x)[0]))(np.array([0.3, 1.2]))
"""

from __future__ import annotations

import numpy as np
from scipy import special

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import unbroadcast

_ORDER_REFUSED = (
    "scipy.special.{name}(v, x) is differentiated in x only: its derivative in the order v "
    "has no closed form; hold v constant (s2sgrad.stop_gradient) or compute it yourself"
)


@vjp_rule(special.fresnel)
def _fresnel(g, ans, x):
    phase = 0.5 * np.pi * x**2
    if g[0] is None:  # noqa: SIM108 (a rule body: statements, not expressions)
        from_s = np.zeros_like(ans[0])
    else:
        from_s = g[0] * np.sin(phase)
    if g[1] is None:  # noqa: SIM108
        from_c = np.zeros_like(ans[1])
    else:
        from_c = g[1] * np.cos(phase)
    return from_s + from_c


@jvp_rule(special.fresnel)
def _fresnel_jvp(t, ans, x):
    phase = 0.5 * np.pi * x**2
    return ((t * np.sin(phase), t * np.cos(phase)),)


@vjp_rule(special.airy)
def _airy(g, ans, x):
    if g[0] is None:  # noqa: SIM108
        from_ai = np.zeros_like(ans[0])
    else:
        from_ai = g[0] * ans[1]
    if g[1] is None:  # noqa: SIM108
        from_ai_slope = np.zeros_like(ans[1])
    else:
        from_ai_slope = g[1] * x * ans[0]
    if g[2] is None:  # noqa: SIM108
        from_bi = np.zeros_like(ans[2])
    else:
        from_bi = g[2] * ans[3]
    if g[3] is None:  # noqa: SIM108
        from_bi_slope = np.zeros_like(ans[3])
    else:
        from_bi_slope = g[3] * x * ans[2]
    return from_ai + from_ai_slope + from_bi + from_bi_slope


@jvp_rule(special.airy)
def _airy_jvp(t, ans, x):
    return ((t * ans[1], t * x * ans[0], t * ans[3], t * x * ans[2]),)


@vjp_rule(special.struve)
def _struve(g, ans, v, x):
    return (
        refuse(_ORDER_REFUSED.format(name="struve")),
        unbroadcast(g * (special.struve(v - 1.0, x) - v * ans / x), x),
    )


@jvp_rule(special.struve)
def _struve_jvp(t, ans, v, x):
    return (
        refuse(_ORDER_REFUSED.format(name="struve")),
        t * (special.struve(v - 1.0, x) - v * ans / x),
    )


@vjp_rule(special.modstruve)
def _modstruve(g, ans, v, x):
    return (
        refuse(_ORDER_REFUSED.format(name="modstruve")),
        unbroadcast(g * (special.modstruve(v - 1.0, x) - v * ans / x), x),
    )


@jvp_rule(special.modstruve)
def _modstruve_jvp(t, ans, v, x):
    return (
        refuse(_ORDER_REFUSED.format(name="modstruve")),
        t * (special.modstruve(v - 1.0, x) - v * ans / x),
    )


@vjp_rule(special.ellipkinc)
def _ellipkinc(g, ans, phi, m):
    sine = np.sin(phi)
    delta = np.sqrt(1.0 - m * sine**2)
    second = special.ellipeinc(phi, m)
    in_m = (second - (1.0 - m) * ans) / (2.0 * m * (1.0 - m)) - sine * np.cos(phi) / (
        2.0 * (1.0 - m) * delta
    )
    return unbroadcast(g / delta, phi), unbroadcast(g * in_m, m)


@jvp_rule(special.ellipkinc)
def _ellipkinc_jvp(t, ans, phi, m):
    sine = np.sin(phi)
    delta = np.sqrt(1.0 - m * sine**2)
    return (
        t / delta,
        t
        * (
            (special.ellipeinc(phi, m) - (1.0 - m) * ans) / (2.0 * m * (1.0 - m))
            - sine * np.cos(phi) / (2.0 * (1.0 - m) * delta)
        ),
    )


@vjp_rule(special.ellipeinc)
def _ellipeinc(g, ans, phi, m):
    delta = np.sqrt(1.0 - m * np.sin(phi) ** 2)
    in_m = (ans - special.ellipkinc(phi, m)) / (2.0 * m)
    return unbroadcast(g * delta, phi), unbroadcast(g * in_m, m)


@jvp_rule(special.ellipeinc)
def _ellipeinc_jvp(t, ans, phi, m):
    return (
        t * np.sqrt(1.0 - m * np.sin(phi) ** 2),
        t * (ans - special.ellipkinc(phi, m)) / (2.0 * m),
    )
