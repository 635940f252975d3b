"""Derivative rules of ``np.histogram``: linear in ``weights``, piecewise constant in the data.

``hist, edges = np.histogram(a, bins, range, density, weights)`` adds each weight to the bin
its sample falls in (``runtime.histogram_bin_index``), so the cotangent of a weight is the
cotangent of its bin (zero outside the edges). With ``density=True``, ``hist = n / (widths
* S)`` with ``n`` the weighted counts and ``S = sum(n)``: the cotangent of ``n`` is
``(g / widths - sum(g * hist)) / S``. The counts do not change as a sample moves within its
bin, and the edges do not move with the data where they are given (an array ``bins``) or
bounded (``range=``): the data's derivative is zero there. Edges computed from the data
(``bins`` a count or a rule's name without ``range``) move with its extremes, and the
data's derivative is refused there (``runtime.histogram_fixed_edges``), as are derivatives
in ``bins`` and ``range`` themselves.

Every rule body is made of functions with rules, so derivatives of any order follow.

Example::

    sg.grad(lambda w: np.sum(np.histogram(x, bins=4, range=(0, 1), weights=w)[0] ** 2))(w)
"""

from __future__ import annotations

import numpy as np

from s2sgrad.rules.registry import jvp_rule, refused_argument, returns_several, vjp_rule
from s2sgrad.runtime import histogram_bin_index, histogram_fixed_edges

__all__: list[str] = []

returns_several(np.histogram)
refused_argument(
    np.histogram,
    1,
    "np.histogram is not differentiated in its bin edges (the counts jump as an edge passes "
    "a sample); wrap bins in s2sgrad.stop_gradient",
)
refused_argument(
    np.histogram,
    2,
    "np.histogram is not differentiated in range= (the counts jump as the range passes a "
    "sample); wrap range in s2sgrad.stop_gradient",
)


@vjp_rule(np.histogram)
def _histogram(g, ans, a, bins=10, range=None, density=None, weights=None):
    place = histogram_bin_index(a, ans[1])
    inside = place >= 0
    if g[0] is None:  # noqa: SIM108 (a rule body: statements, not expressions)
        g_hist = np.zeros_like(ans[0])
    else:
        g_hist = g[0]
    if weights is None:  # noqa: SIM108 (a rule body: statements, not expressions)
        mass = np.ones(np.size(a))
    else:
        mass = np.ravel(weights)
    if density:
        widths = np.diff(ans[1])
        total = np.sum(np.where(inside, mass, 0.0))
        per_bin = (g_hist / widths - np.sum(g_hist * ans[0])) / total
    else:
        per_bin = g_hist
    spread = np.where(inside, per_bin[np.maximum(place, 0)], 0.0)
    return (
        np.zeros(np.shape(a)) + histogram_fixed_edges(a, bins, range),
        None,
        None,
        None,
        np.reshape(spread, np.shape(weights)),
    )


@jvp_rule(np.histogram)
def _histogram_jvp(t, ans, a, bins=10, range=None, density=None, weights=None):
    edges = ans[1]
    if weights is None:  # noqa: SIM108 (a rule body: statements, not expressions)
        mass = np.ones(np.shape(a))
    else:
        mass = weights
    if density:
        counts = np.histogram(a, edges, weights=mass)[0]
        scale = np.diff(edges) * np.sum(counts)
        return (
            (np.zeros_like(ans[0]) + histogram_fixed_edges(a, bins, range), np.zeros_like(edges)),
            None,
            None,
            None,
            (
                (
                    np.histogram(a, edges, weights=t)[0]
                    - counts * np.sum(np.histogram(a, edges, weights=t)[0]) / np.sum(counts)
                )
                / scale,
                np.zeros_like(edges),
            ),
        )
    return (
        (np.zeros_like(ans[0]) + histogram_fixed_edges(a, bins, range), np.zeros_like(edges)),
        None,
        None,
        None,
        (np.histogram(a, edges, weights=t)[0], np.zeros_like(edges)),
    )
