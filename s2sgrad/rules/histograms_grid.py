"""Derivative rules of ``np.histogram2d`` and ``np.histogramdd``: linear in ``weights``,
piecewise constant in the sample positions.

``H, edges = np.histogramdd(sample, bins, range, density, weights)`` adds each weight to
the cell its point falls in (:func:`grid_cell`: a flat index into ``H``, -1 outside the
edges; the last bin along an axis includes its right edge, as NumPy counts). So the
cotangent of a weight is the cotangent of its cell, and the tangent of ``H`` the histogram
of the weights' tangent. With ``density=True``, ``H = n / (volumes * S)`` with ``n`` the
weighted counts, ``volumes`` the cells' volumes and ``S = sum(n)``: the cotangent of ``n``
is ``(g / volumes - sum(g * H)) / S``. A point moving inside its cell changes no count, and
where every axis' edges are given (an array of edges, or a count with that axis' range) they
do not move with the points: the derivative in the sample is zero by design there (proved by
tests/test_rules_histograms_grid.py). Edges computed from the points (a count without a
range) move with their extremes: the sample's derivative is refused there, naming the
user's line, as derivatives in ``bins`` and ``range`` are. ``np.histogram2d(x, y, ...)`` is
``np.histogramdd((x, y), ...)``. Every rule body is made of functions with rules, so
derivatives of any order follow.

Example::

    sg.grad(lambda w: np.sum(np.histogram2d(x, y, 4, [[0, 1], [0, 1]], weights=w)[0] ** 2))(w)
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from s2sgrad.rules.registry import (
    jvp_rule,
    nondifferentiable,
    refused_argument,
    returns_several,
    vjp_rule,
)
from s2sgrad.rules.scipy_common import refuse
from s2sgrad.runtime import histogram_bin_index

__all__ = ["grid_cell", "grid_fixed_edges", "grid_volumes", "zero_edges"]

_EDGES_FROM_POINTS = (
    "{name} is differentiated in its sample points only where every axis' bin edges are "
    "fixed (an array of edges, or a number of bins with that axis' range=): here some move "
    "with the points' extremes. Give range= (or the edges), or wrap the points in "
    "s2sgrad.stop_gradient if only the weights are differentiated"
)

returns_several(np.histogram2d, np.histogramdd)
for _function, _bins, _range in ((np.histogram2d, 2, 3), (np.histogramdd, 1, 2)):
    refused_argument(
        _function,
        _bins,
        f"np.{_function.__name__} is not differentiated in its bin edges (the counts jump as "
        "an edge passes a point); wrap bins in s2sgrad.stop_gradient",
    )
    refused_argument(
        _function,
        _range,
        f"np.{_function.__name__} is not differentiated in range= (the counts jump as the "
        "range passes a point); wrap range in s2sgrad.stop_gradient",
    )


def _coordinates(sample: Any) -> list:
    """The points' coordinates, one 1-D array per axis, of an ``(N, D)`` array or a
    sequence of ``D`` arrays (as ``np.histogramdd`` takes them)."""
    if isinstance(sample, (list, tuple)):
        return [np.ravel(np.asarray(axis)) for axis in sample]
    values = np.asarray(sample)
    return [values[:, axis] for axis in range(values.shape[1])]


def grid_cell(sample: Any, edges: Any) -> np.ndarray:
    """The flat index into ``np.histogramdd``'s counts of the cell each point falls in,
    ``-1`` for a point outside the edges.

    Example::

        grid_cell(np.array([[0.5, 1.5]]), [np.array([0.0, 1.0]), np.array([0.0, 1.0, 2.0])])
        # array([1])
    """
    places = [histogram_bin_index(axis, e) for axis, e in zip(_coordinates(sample), edges)]
    inside = functools.reduce(np.logical_and, [place >= 0 for place in places])
    shape = tuple(np.size(e) - 1 for e in edges)
    flat = np.ravel_multi_index(tuple(np.maximum(place, 0) for place in places), shape)
    return np.where(inside, flat, -1)


def grid_volumes(edges: Any) -> np.ndarray:
    """The volume of each cell of the grid of ``edges`` (one array per axis).

    Example::

        grid_volumes([np.array([0.0, 1.0, 3.0]), np.array([0.0, 0.5])])  # [[0.5], [1.0]]
    """
    return functools.reduce(np.multiply.outer, [np.diff(np.asarray(e)) for e in edges])


def _is_count(bins: Any) -> bool:
    """Whether ``bins`` is a number of bins (not edges, nor one entry per axis)."""
    return np.isscalar(bins) or (isinstance(bins, np.ndarray) and bins.ndim == 0)


def grid_fixed_edges(bins: Any, range: Any, dimensions: int, name: str) -> float:  # noqa: A002
    """``0.0`` where every axis' edges are fixed (an array of edges, or a count with that
    axis' range); else the refusal, naming the user's line.

    Example::

        grid_fixed_edges(4, [(0, 1), (0, 1)], 2, "np.histogram2d")  # 0.0
    """
    if _is_count(bins):
        per_axis = [bins] * dimensions
    elif dimensions == 2 and name == "np.histogram2d" and len(bins) not in (1, 2):
        per_axis = [bins, bins]  # one array of edges for both axes
    else:
        per_axis = list(bins)
    ranges = [None] * dimensions if range is None else list(range)
    if any(_is_count(b) and r is None for b, r in zip(per_axis, ranges)):
        refuse(_EDGES_FROM_POINTS.format(name=name))
    return 0.0


def zero_edges(edges: Any) -> list:
    """Zeros like each array of edges: their tangents, which the weights do not move.

    Example::

        zero_edges([np.array([0.0, 1.0])])  # [array([0., 0.])]
    """
    return [np.zeros_like(np.asarray(e, dtype=float)) for e in edges]


nondifferentiable(grid_cell, grid_volumes, grid_fixed_edges, zero_edges)


@vjp_rule(np.histogramdd)
def _histogramdd(g, ans, sample, bins=10, range=None, density=None, weights=None):
    cell = grid_cell(sample, ans[1])
    inside = cell >= 0
    if g[0] is None:  # noqa: SIM108 (a rule body: statements, not expressions)
        g_hist = np.zeros_like(ans[0])
    else:
        g_hist = g[0]
    if weights is None:  # noqa: SIM108
        mass = np.ones(np.shape(cell))
    else:
        mass = np.ravel(weights)
    if density:
        total = np.sum(np.where(inside, mass, 0.0))
        per_cell = (g_hist / grid_volumes(ans[1]) - np.sum(g_hist * ans[0])) / total
    else:
        per_cell = g_hist
    spread = np.where(inside, np.ravel(per_cell)[np.maximum(cell, 0)], 0.0)
    return (
        np.zeros(np.shape(sample)) + grid_fixed_edges(bins, range, len(ans[1]), "np.histogramdd"),
        None,
        None,
        None,
        np.reshape(spread, np.shape(weights)),
    )


@jvp_rule(np.histogramdd)
def _histogramdd_jvp(t, ans, sample, bins=10, range=None, density=None, weights=None):
    if weights is None:  # noqa: SIM108
        mass = np.ones(np.shape(grid_cell(sample, ans[1])))
    else:
        mass = weights
    if density:
        counts = np.histogramdd(sample, ans[1], weights=mass)[0]
        moved = np.histogramdd(sample, ans[1], weights=t)[0]
        weights_tangent = (moved - counts * np.sum(moved) / np.sum(counts)) / (
            grid_volumes(ans[1]) * np.sum(counts)
        )
    else:
        weights_tangent = np.histogramdd(sample, ans[1], weights=t)[0]
    return (
        (
            np.zeros_like(ans[0]) + grid_fixed_edges(bins, range, len(ans[1]), "np.histogramdd"),
            zero_edges(ans[1]),
        ),
        None,
        None,
        None,
        (weights_tangent, zero_edges(ans[1])),
    )


@vjp_rule(np.histogram2d)
def _histogram2d(g, ans, x, y, bins=10, range=None, density=None, weights=None):
    cell = grid_cell((x, y), (ans[1], ans[2]))
    inside = cell >= 0
    if g[0] is None:  # noqa: SIM108
        g_hist = np.zeros_like(ans[0])
    else:
        g_hist = g[0]
    if weights is None:  # noqa: SIM108
        mass = np.ones(np.shape(cell))
    else:
        mass = np.ravel(weights)
    if density:
        total = np.sum(np.where(inside, mass, 0.0))
        per_cell = (g_hist / grid_volumes((ans[1], ans[2])) - np.sum(g_hist * ans[0])) / total
    else:
        per_cell = g_hist
    spread = np.where(inside, np.ravel(per_cell)[np.maximum(cell, 0)], 0.0)
    return (
        np.zeros(np.shape(x)) + grid_fixed_edges(bins, range, 2, "np.histogram2d"),
        np.zeros(np.shape(y)) + grid_fixed_edges(bins, range, 2, "np.histogram2d"),
        None,
        None,
        None,
        np.reshape(spread, np.shape(weights)),
    )


@jvp_rule(np.histogram2d)
def _histogram2d_jvp(t, ans, x, y, bins=10, range=None, density=None, weights=None):
    edges = [ans[1], ans[2]]
    if weights is None:  # noqa: SIM108
        mass = np.ones(np.shape(x))
    else:
        mass = weights
    if density:
        counts = np.histogram2d(x, y, edges, weights=mass)[0]
        moved = np.histogram2d(x, y, edges, weights=t)[0]
        weights_tangent = (moved - counts * np.sum(moved) / np.sum(counts)) / (
            grid_volumes(edges) * np.sum(counts)
        )
    else:
        weights_tangent = np.histogram2d(x, y, edges, weights=t)[0]
    return (
        (
            np.zeros_like(ans[0]) + grid_fixed_edges(bins, range, 2, "np.histogram2d"),
            np.zeros_like(ans[1]),
            np.zeros_like(ans[2]),
        ),
        (
            np.zeros_like(ans[0]) + grid_fixed_edges(bins, range, 2, "np.histogram2d"),
            np.zeros_like(ans[1]),
            np.zeros_like(ans[2]),
        ),
        None,
        None,
        None,
        (weights_tangent, np.zeros_like(ans[1]), np.zeros_like(ans[2])),
    )
