"""Helpers for the rules of ufunc methods (rules/ufunc_methods.py) and for the in-place
writes both engines turn into item writes: ``np.fill_diagonal(a, v)`` is
``a[diagonal_index(a, wrap)] = v``, ``np.put_along_axis(a, i, v, axis)`` is
``a[along_axis_index(a, i, axis)] = v`` and ``np.u.at(a, i, b)`` is
``a[i] = np.u(a[unique_index(a, i)], b)``.

The helpers here are piecewise constant (shapes, signs, indices) and declared
non-differentiable, except ``plain_reduction``, an identity that refuses options.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from s2sgrad.rules.registry import jvp_rule, nondifferentiable, vjp_rule
from s2sgrad.runtime.scientific import axis_shape, located_refusal

__all__ = [
    "outer_shape",
    "first_positive",
    "running_source",
    "plain_reduction",
    "diagonal_index",
    "along_axis_index",
    "put_index",
    "unique_index",
]


# ---------------------------------------------------------------------------------------
# ufunc methods (rules/ufunc_methods.py)


def outer_shape(a: Any, b: Any) -> tuple:
    """``a``'s shape followed by a 1 for each axis of ``b``: ``u.outer(a, b)`` is
    ``u(np.reshape(a, outer_shape(a, b)), b)``.

    Example::

        outer_shape(np.zeros(3), np.zeros((2, 4)))  # (3, 1, 1)
    """
    return tuple(np.shape(a)) + (1,) * np.ndim(b)


def first_positive(x: Any, axis: Any = 0) -> Any:
    """Ones shaped like ``x`` with -1 everywhere along ``axis`` but at its first position:
    the signs of ``x``'s elements in ``np.subtract.reduce`` and ``np.subtract.accumulate``.

    Example::

        first_positive(np.zeros(3))  # array([ 1., -1., -1.])
    """
    if axis is None:
        if np.ndim(x) > 1:
            raise located_refusal(
                "np.subtract.reduce over every axis of a multi-dimensional array is not "
                "defined by NumPy; reduce one axis at a time"
            )
        axis = 0
    dtype = np.result_type(x, 1.0)
    signs = -np.ones(np.shape(x), dtype=dtype)
    index: list = [slice(None)] * np.ndim(x)
    index[axis] = 0
    signs[tuple(index)] = 1.0
    return signs


def running_source(x: Any, axis: int = 0, kind: str = "maximum") -> Any:
    """For ``np.maximum.accumulate(x, axis)`` (``kind="minimum"`` for minimum and fmin): at
    each position, the index along ``axis`` of the element the running extremum holds
    there (the first one to reach it).

    Example::

        running_source(np.array([1.0, 3.0, 2.0]))  # array([0, 1, 1])
    """
    extremum = np.fmax if kind == "maximum" else np.fmin
    running = extremum.accumulate(x, axis=axis)
    positions = np.arange(np.shape(x)[axis]).reshape(axis_shape(np.ndim(x), axis))
    marked = np.where(np.equal(x, running), positions, 0)
    return np.maximum.accumulate(marked, axis=axis)


def plain_reduction(array: Any, initial: Any = None, where: Any = True) -> Any:
    """``array`` itself, for a ufunc reduction called without ``initial=`` and ``where=``;
    refused otherwise.

    Example::

        plain_reduction(np.ones(2))  # array([1., 1.])
    """
    if initial is not None or where is not True:
        raise located_refusal(
            "s2sgrad differentiates ufunc.reduce without initial= and where=; select the "
            "elements first (np.where(mask, x, neutral)) and combine the initial value after"
        )
    return array


nondifferentiable(outer_shape, first_positive, running_source)


@vjp_rule(plain_reduction)
def _plain_reduction_vjp(g, ans, array, initial=None, where=True):
    return g


@jvp_rule(plain_reduction)
def _plain_reduction_jvp(t, ans, array, initial=None, where=True):
    return t


# ---------------------------------------------------------------------------------------
# np.fill_diagonal(a, v) is the item write a[diagonal_index(a, wrap)] = v


def diagonal_index(a: Any, wrap: bool = False) -> tuple:
    """The index of the elements ``np.fill_diagonal(a, v, wrap)`` writes, as integer arrays:
    both engines turn the call into the item write ``a[diagonal_index(a, wrap)] = v``.

    Example::

        diagonal_index(np.zeros((3, 2)))  # (array([0, 1]), array([0, 1]))
    """
    shape = np.shape(a)
    if len(shape) < 2 or (len(shape) > 2 and len(set(shape)) != 1):
        raise ValueError("np.fill_diagonal needs a 2-d array, or one whose axes are all equal")
    size = int(np.prod(shape))
    if len(shape) == 2:
        step = shape[1] + 1
        end = size if wrap else min(size, shape[1] * shape[1])
    else:
        step = 1 + int(np.sum(np.cumprod(shape[:-1])))
        end = size
    return np.unravel_index(np.arange(0, end, step), shape)


nondifferentiable(diagonal_index)


# np.put_along_axis(a, i, v, axis) is the item write a[along_axis_index(a, i, axis)] = v


def along_axis_index(a: Any, indices: Any, axis: Any) -> tuple:
    """The index of the elements ``np.put_along_axis(a, indices, v, axis)`` writes (and
    ``np.take_along_axis`` reads), as integer arrays: ``indices`` along ``axis``, and along
    every other axis each position itself; ``axis=None`` reads ``indices`` as positions in
    the flattened ``a``.

    Example::

        along_axis_index(np.zeros((2, 3)), np.array([[2], [0]]), 1)
        # (array([[0], [1]]), array([[2], [0]]))
    """
    shape = np.shape(a)
    indices = np.asarray(indices)
    if not np.issubdtype(indices.dtype, np.integer):
        raise IndexError("np.put_along_axis takes integer indices")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("np.put_along_axis with axis=None takes 1-d indices")
        return np.unravel_index(
            np.where(indices < 0, indices + int(np.prod(shape)), indices), shape
        )
    if indices.ndim != len(shape):
        raise ValueError("np.put_along_axis: indices and the array need the same number of axes")
    axis = axis + len(shape) if axis < 0 else axis
    index = []
    for dimension, size in enumerate(shape):
        if dimension == axis:
            index.append(indices)
            continue
        along = [1] * len(shape)
        along[dimension] = size
        index.append(np.arange(size).reshape(along))
    return tuple(index)


nondifferentiable(along_axis_index)


# np.put(a, indices, v) is the item write a[put_index(a, indices)] = np.resize(v, count)


def put_index(a: Any, indices: Any) -> tuple:
    """The index of the elements ``np.put(a, indices, v)`` writes, as integer arrays (the
    flat ``indices``, negative ones from the end, unravelled): both engines turn the call
    into the item write ``a[put_index(a, indices)] = np.resize(v, np.size(indices))``, whose
    repeated indices keep the last value, as ``np.put`` does.

    Example::

        put_index(np.zeros((2, 3)), [0, -1])  # (array([0, 1]), array([0, 2]))
    """
    flat = np.ravel(np.asarray(indices))
    size = int(np.size(a))
    if flat.size and not np.issubdtype(flat.dtype, np.integer):
        raise TypeError("np.put takes integer indices")
    outside = (flat >= size) | (flat < -size)
    if np.any(outside):
        raise IndexError(
            f"index {int(flat[outside][0])} is out of bounds for axis 0 with size {size}"
        )
    return np.unravel_index(np.where(flat < 0, flat + size, flat).astype(np.intp), np.shape(a))


nondifferentiable(put_index)


# ---------------------------------------------------------------------------------------
# ufunc.at(a, i, b) is the item write a[i] = ufunc(a[i], b) when i picks each element once


def unique_index(a: Any, index: Any) -> Any:
    """``index`` itself, when ``a[index]`` picks each element of ``a`` at most once (so
    ``np.multiply.at(a, index, b)`` is ``a[index] = a[index] * b``); refused otherwise.

    Example::

        unique_index(np.zeros(3), [2, 0])  # [2, 0]
    """
    positions = np.arange(np.size(a)).reshape(np.shape(a))[index]
    if np.unique(positions).size != np.size(positions):
        raise located_refusal(
            "ufunc.at with an index that picks an element more than once combines the "
            "repeats one after another, which s2sgrad differentiates only for np.add.at and "
            "np.subtract.at; combine the repeated values first (for a product, "
            "np.multiply.at of a copy, or np.prod over groups), then write each element once"
        )
    return index


nondifferentiable(unique_index)
