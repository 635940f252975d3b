"""Derivative rules of ``scipy.spatial.distance``: ``cdist`` and ``pdist`` (metrics
``euclidean``, ``sqeuclidean``, ``cityblock``, ``cosine`` and ``minkowski`` with its ``p``)
in the points, and ``squareform`` (a rearrangement, linear) in its argument.

With ``d = a_i - b_j`` the distance ``D_ij`` moves with ``a_i`` by

* ``sqeuclidean``: ``2 d``;
* ``euclidean``: ``d / D_ij``, and 0 where ``D_ij == 0`` (two equal points: the convention
  of ``np.linalg.norm`` of the zero vector, docs/conventions.md);
* ``cityblock``: ``sign(d)`` (0 where a coordinate is equal, as ``np.abs`` at 0);
* ``minkowski``: ``sign(d) |d|**(p - 1) / D_ij**(p - 1)``, 0 where ``D_ij == 0`` (``|d|`` is
  read as 1 where ``d == 0``, where ``sign(d)`` is 0, so that no ``0**(p - 1)`` reaches the
  second derivative);
* ``cosine`` (``1 - a.b / (|a| |b|)``): ``-(b / (|a| |b|) - (1 - D_ij) a / |a|**2)``;

and with ``b_j`` by the opposite for the first four (the cosine's is its mirror image).
Reverse mode sums those against the cotangent over the other set of points: with matrix
products for the first two and the cosine, through the ``(m, n, k)`` differences for the
others. ``pdist(X)`` is the upper triangle of ``cdist(X, X)``, so its cotangent spread by
``squareform`` over both triangles differentiates both sets of points at once. Every body
is made of functions with rules, so derivatives of any order follow. Other metrics, a
callable metric and weights ``w=`` are refused at the user's line. Loaded when
``scipy.spatial.distance`` is imported (``registry.OPTIONAL_RULE_MODULES``).

Example::

    sg.grad(lambda x: np.sum(distance.pdist(x)))(np.random.rand(4, 2))
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import distance

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.rules.scipy_common import refuse

_METRIC_REFUSED = (
    "s2sgrad differentiates scipy.spatial.distance's cdist and pdist with the metrics "
    "'euclidean', 'sqeuclidean', 'cityblock', 'cosine' and 'minkowski' (without w=); write "
    "another distance with NumPy (x[:, None, :] - y[None, :, :]) to differentiate it"
)


@vjp_rule(distance.cdist)
def _cdist(g, ans, XA, XB, metric="euclidean", *, out=None, p=2.0, w=None):
    if (
        metric not in ("euclidean", "sqeuclidean", "cityblock", "cosine", "minkowski")
        or w is not None
    ):
        refuse(_METRIC_REFUSED)
    if metric == "sqeuclidean":
        ga = 2.0 * (np.sum(g, axis=1)[:, None] * XA - g @ XB)
        gb = 2.0 * (np.sum(g, axis=0)[:, None] * XB - np.swapaxes(g, 0, 1) @ XA)
    elif metric == "euclidean":
        apart = ans > 0.0
        scaled = np.where(apart, g / np.where(apart, ans, 1.0), 0.0)
        ga = np.sum(scaled, axis=1)[:, None] * XA - scaled @ XB
        gb = np.sum(scaled, axis=0)[:, None] * XB - np.swapaxes(scaled, 0, 1) @ XA
    elif metric == "cosine":
        norms_a = np.linalg.norm(XA, axis=1)
        norms_b = np.linalg.norm(XB, axis=1)
        similar = 1.0 - ans
        scaled = -g / (norms_a[:, None] * norms_b[None, :])
        along = -g * similar
        ga = scaled @ XB - (np.sum(along, axis=1) / norms_a**2)[:, None] * XA
        gb = np.swapaxes(scaled, 0, 1) @ XA - (np.sum(along, axis=0) / norms_b**2)[:, None] * XB
    else:
        differences = XA[:, None, :] - XB[None, :, :]
        if metric == "cityblock":
            slopes = np.sign(differences)
        else:
            apart = ans > 0.0
            spread = np.where(apart, ans, 1.0) ** (p - 1.0)
            slopes = np.where(
                apart[:, :, None],
                np.sign(differences)
                * (np.abs(differences) + (differences == 0.0)) ** (p - 1.0)
                / spread[:, :, None],
                0.0,
            )
        moved = g[:, :, None] * slopes
        ga = np.sum(moved, axis=1)
        gb = -np.sum(moved, axis=0)
    return ga, gb


@jvp_rule(distance.cdist)
def _cdist_jvp(t, ans, XA, XB, metric="euclidean", *, out=None, p=2.0, w=None):
    if (
        metric not in ("euclidean", "sqeuclidean", "cityblock", "cosine", "minkowski")
        or w is not None
    ):
        refuse(_METRIC_REFUSED)
    if metric == "sqeuclidean":
        return (
            2.0 * (np.sum(XA * t, axis=1)[:, None] - t @ np.swapaxes(XB, 0, 1)),
            2.0 * (np.sum(XB * t, axis=1)[None, :] - XA @ np.swapaxes(t, 0, 1)),
        )
    if metric == "euclidean":
        apart = ans > 0.0
        inverse = np.where(apart, 1.0 / np.where(apart, ans, 1.0), 0.0)
        return (
            inverse * (np.sum(XA * t, axis=1)[:, None] - t @ np.swapaxes(XB, 0, 1)),
            inverse * (np.sum(XB * t, axis=1)[None, :] - XA @ np.swapaxes(t, 0, 1)),
        )
    if metric == "cosine":
        norms_a = np.linalg.norm(XA, axis=1)
        norms_b = np.linalg.norm(XB, axis=1)
        similar = 1.0 - ans
        products = norms_a[:, None] * norms_b[None, :]
        return (
            similar * (np.sum(XA * t, axis=1) / norms_a**2)[:, None]
            - (t @ np.swapaxes(XB, 0, 1)) / products,
            similar * (np.sum(XB * t, axis=1) / norms_b**2)[None, :]
            - (XA @ np.swapaxes(t, 0, 1)) / products,
        )
    differences = XA[:, None, :] - XB[None, :, :]
    if metric == "cityblock":
        slopes = np.sign(differences)
    else:
        apart = ans > 0.0
        spread = np.where(apart, ans, 1.0) ** (p - 1.0)
        slopes = np.where(
            apart[:, :, None],
            np.sign(differences)
            * (np.abs(differences) + (differences == 0.0)) ** (p - 1.0)
            / spread[:, :, None],
            0.0,
        )
    return np.sum(slopes * t[:, None, :], axis=2), -np.sum(slopes * t[None, :, :], axis=2)


@vjp_rule(distance.pdist)
def _pdist(g, ans, X, metric="euclidean", *, out=None, p=2.0, w=None):
    if (
        metric not in ("euclidean", "sqeuclidean", "cityblock", "cosine", "minkowski")
        or w is not None
    ):
        refuse(_METRIC_REFUSED)
    spread = distance.squareform(g, checks=False)
    if metric == "sqeuclidean":
        gx = 2.0 * (np.sum(spread, axis=1)[:, None] * X - spread @ X)
    elif metric == "euclidean":
        full = distance.squareform(ans, checks=False)
        apart = full > 0.0
        scaled = np.where(apart, spread / np.where(apart, full, 1.0), 0.0)
        gx = np.sum(scaled, axis=1)[:, None] * X - scaled @ X
    elif metric == "cosine":
        norms = np.linalg.norm(X, axis=1)
        similar = 1.0 - distance.squareform(ans, checks=False)
        scaled = -spread / (norms[:, None] * norms[None, :])
        along = -spread * similar
        gx = scaled @ X - (np.sum(along, axis=1) / norms**2)[:, None] * X
    else:
        full = distance.squareform(ans, checks=False)
        differences = X[:, None, :] - X[None, :, :]
        if metric == "cityblock":
            slopes = np.sign(differences)
        else:
            apart = full > 0.0
            lengths = np.where(apart, full, 1.0) ** (p - 1.0)
            slopes = np.where(
                apart[:, :, None],
                np.sign(differences)
                * (np.abs(differences) + (differences == 0.0)) ** (p - 1.0)
                / lengths[:, :, None],
                0.0,
            )
        gx = np.sum(spread[:, :, None] * slopes, axis=1)
    return gx


@jvp_rule(distance.pdist)
def _pdist_jvp(t, ans, X, metric="euclidean", *, out=None, p=2.0, w=None):
    if (
        metric not in ("euclidean", "sqeuclidean", "cityblock", "cosine", "minkowski")
        or w is not None
    ):
        refuse(_METRIC_REFUSED)
    lengths_moved = np.sum(X * t, axis=1)
    crossed = X @ np.swapaxes(t, 0, 1)
    if metric == "sqeuclidean":
        moved = 2.0 * (
            lengths_moved[:, None] + lengths_moved[None, :] - crossed - np.swapaxes(crossed, 0, 1)
        )
    elif metric == "euclidean":
        full = distance.squareform(ans, checks=False)
        apart = full > 0.0
        inverse = np.where(apart, 1.0 / np.where(apart, full, 1.0), 0.0)
        moved = inverse * (
            lengths_moved[:, None] + lengths_moved[None, :] - crossed - np.swapaxes(crossed, 0, 1)
        )
    elif metric == "cosine":
        norms = np.linalg.norm(X, axis=1)
        similar = 1.0 - distance.squareform(ans, checks=False)
        relative = lengths_moved / norms**2
        moved = similar * (relative[:, None] + relative[None, :]) - (
            crossed + np.swapaxes(crossed, 0, 1)
        ) / (norms[:, None] * norms[None, :])
    else:
        full = distance.squareform(ans, checks=False)
        differences = X[:, None, :] - X[None, :, :]
        if metric == "cityblock":
            slopes = np.sign(differences)
        else:
            apart = full > 0.0
            lengths = np.where(apart, full, 1.0) ** (p - 1.0)
            slopes = np.where(
                apart[:, :, None],
                np.sign(differences)
                * (np.abs(differences) + (differences == 0.0)) ** (p - 1.0)
                / lengths[:, :, None],
                0.0,
            )
        moved = np.sum(slopes * (t[:, None, :] - t[None, :, :]), axis=2)
    return distance.squareform(moved, force="tovector", checks=False)


@vjp_rule(distance.squareform)
def _squareform(g, ans, X, force="no", checks=True):
    if np.ndim(X) == 1:  # noqa: SIM108 (a rule body: statements, not expressions)
        gx = distance.squareform(g + np.swapaxes(g, 0, 1), force="tovector", checks=False)
    else:
        gx = np.triu(distance.squareform(g, force="tomatrix", checks=False), 1)
    return gx


@jvp_rule(distance.squareform)
def _squareform_jvp(t, ans, X, force="no", checks=True):
    return distance.squareform(t, force=force, checks=False)
