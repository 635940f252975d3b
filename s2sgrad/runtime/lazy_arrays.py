"""Dask arrays in generated code: what it takes for the code to stay lazy.

Generated derivative code is NumPy calls, and a Dask array takes part in NumPy's dispatch
protocols, so the code runs on Dask arrays unchanged and builds a task graph. One NumPy
function the rules use is not implemented by Dask: ``np.size`` (a mean's derivative divides
by it). Dask computes the array to answer it, so :func:`teach_dask` registers an
implementation that reads the size from the array's shape, once, when s2sgrad first meets
a Dask array. Arrays whose chunk sizes are unknown (after boolean indexing) have their chunk
sizes computed, not their values.

Example::

    teach_dask()
    np.size(dask.array.ones((10, 4), chunks=5))  # 40, without computing anything
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["teach_dask"]

_taught = False


def teach_dask() -> None:
    """Let Dask answer ``np.size`` from shapes (idempotent; the caller has met a Dask array,
    so Dask is imported)."""
    global _taught
    if _taught:
        return
    from dask.array.core import _HANDLED_FUNCTIONS, implements

    if np.size not in _HANDLED_FUNCTIONS:
        implements(np.size)(_dask_size)
    _taught = True


def _dask_size(a: Any, axis: int | None = None) -> int:
    shape = a.shape
    if any(math.isnan(length) for length in shape):
        shape = a.compute_chunk_sizes().shape  # the sizes, not the values
    return math.prod(shape) if axis is None else shape[axis]
