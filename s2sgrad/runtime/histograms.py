"""What ``np.histogram``'s rules (``rules/histograms.py``) ask of the data: the bin of each
sample, and whether the bin edges are fixed (so that the counts are piecewise constant in
the data). Both are declared without a derivative.

Example::

    histogram_bin_index(np.array([0.5, 2.5, 9.0]), np.array([0.0, 1.0, 2.0, 3.0]))
    # array([ 0,  2, -1]): -1 outside the edges
"""

from __future__ import annotations

from typing import Any

import numpy as np

from s2sgrad.rules.registry import nondifferentiable
from s2sgrad.runtime.scientific import located_refusal

__all__ = ["histogram_bin_index", "histogram_fixed_edges"]

_EDGES_FROM_DATA = (
    "np.histogram is differentiated in its data a only where the bin edges are fixed: the "
    "counts are piecewise constant in a, but edges computed from a (bins given as a count "
    "or a rule's name, without range=) move with its smallest and largest values; pass "
    "range=(low, high) or the edges themselves as bins, or wrap a in s2sgrad.stop_gradient"
)


def histogram_bin_index(a: Any, edges: Any) -> np.ndarray:
    """The bin of each sample of ``np.ravel(a)`` among ``edges`` as ``np.histogram`` counts
    it (the last bin includes its right edge), ``-1`` for a sample outside the edges.

    Example::

        histogram_bin_index([3.0], [0.0, 1.5, 3.0])  # array([1])
    """
    values = np.ravel(np.asarray(a))
    edges = np.asarray(edges)
    place = np.searchsorted(edges, values, side="right") - 1
    place = np.minimum(place, np.size(edges) - 2)  # the last edge closes the last bin
    inside = (values >= edges[0]) & (values <= edges[-1])
    return np.where(inside, place, -1)


def histogram_fixed_edges(a: Any, bins: Any, range: Any) -> float:  # noqa: A002 (NumPy's name)
    """``0.0`` where ``np.histogram(a, bins, range)``'s edges do not depend on ``a`` (an
    array of edges, or a count with ``range``); else the refusal, naming the user's line.

    Example::

        histogram_fixed_edges(x, 10, (0.0, 1.0))  # 0.0
    """
    if np.ndim(bins) == 0 and range is None:
        raise located_refusal(_EDGES_FROM_DATA)
    return 0.0


nondifferentiable(histogram_bin_index, histogram_fixed_edges)
