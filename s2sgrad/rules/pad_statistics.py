"""``np.pad`` with the statistical modes ``maximum``, ``minimum``, ``mean`` and ``median``
(and ``stat_length``): the helpers its rules (``rules/shapes.py``) call.

NumPy pads one axis after the other: the border before (after) the array along an axis is
the statistic of the first (last) ``stat_length`` entries along that axis, of the array as
padded along the axes before it. Each statistic is a weighted sum of its entries whose
weights only change where the order of the entries does: ``1 / L`` for the mean, the
position of the extreme for ``maximum`` and ``minimum`` (ties share it equally, as
``np.max``'s derivative does), the middle one or two for ``median``. So the padding is
piecewise linear in the array: its tangent is the same weighted sums of the tangent
(:func:`pad_by_statistic_tangent`) and its cotangent their transpose
(:func:`unpad_by_statistic`): the border's cotangents are spread back by the weights onto
the entries that made them, the last axis first. The two helpers are each other's
derivative in their first argument, and constant in the array (the weights are piecewise
constant), so derivatives of any order follow.

Example::

    unpad_by_statistic(np.ones(5), np.array([1.0, 3.0, 2.0]), 1, "maximum", None)
    # array([0., 3., 0.]): the maximum made both borders
"""

from __future__ import annotations

from typing import Any

import numpy as np

from s2sgrad.rules.registry import jvp_rule, vjp_rule
from s2sgrad.runtime.shapes import _pad_pairs

__all__ = ["STATISTICAL_MODES", "pad_by_statistic_tangent", "unpad_by_statistic"]

STATISTICAL_MODES = ("maximum", "minimum", "mean", "median")


def _lengths(stat_length: Any, sizes: tuple) -> list[tuple[int, int]]:
    """``stat_length`` as one (before, after) pair per axis, cut to the axis' length."""
    if stat_length is None:
        return [(size, size) for size in sizes]
    pairs = _pad_pairs(stat_length, len(sizes))
    return [(min(before, size), min(after, size)) for (before, after), size in zip(pairs, sizes)]


def _weights(region: np.ndarray, axis: int, mode: str) -> np.ndarray:
    """Weights ``w`` with ``statistic(region, axis) == sum(w * region, axis)`` here, real
    and of the region's precision (float32 stays float32)."""
    precision = np.real(region).dtype if np.issubdtype(region.dtype, np.inexact) else float
    if mode == "mean":
        return np.full(region.shape, 1.0 / region.shape[axis], dtype=precision)
    if mode == "median":
        count = region.shape[axis]
        ranks = np.argsort(np.argsort(region, axis=axis, kind="stable"), axis=axis)
        if count % 2:
            return (ranks == count // 2).astype(precision)
        return ((ranks == count // 2 - 1) | (ranks == count // 2)).astype(precision) / 2
    extreme = np.max(region, axis=axis, keepdims=True)
    if mode == "minimum":
        extreme = np.min(region, axis=axis, keepdims=True)
    chosen = (region == extreme).astype(precision)
    return chosen / np.sum(chosen, axis=axis, keepdims=True)


def _take(array: np.ndarray, axis: int, start: int, stop: int) -> np.ndarray:
    index = [slice(None)] * array.ndim
    index[axis] = slice(start, stop)
    return array[tuple(index)]


def _steps(array: Any, pad_width: Any, mode: str, stat_length: Any) -> list:
    """Per axis with a border: (axis, widths, lengths, the array padded along the axes
    before it)."""
    values = np.asarray(array)
    widths = _pad_pairs(pad_width, values.ndim)
    lengths = _lengths(stat_length, values.shape)
    steps = []
    for axis in range(values.ndim):
        if widths[axis] == (0, 0):
            continue
        steps.append((axis, widths[axis], lengths[axis], values))
        only_this = [(0, 0)] * values.ndim
        only_this[axis] = widths[axis]
        values = np.pad(values, only_this, mode=mode, stat_length=lengths)  # type: ignore[call-overload]
    return steps


def pad_by_statistic_tangent(
    t: Any, array: Any, pad_width: Any, mode: str, stat_length: Any = None
) -> np.ndarray:
    """The tangent of ``np.pad(array, pad_width, mode, stat_length=stat_length)`` (a
    statistical mode) when ``array`` moves by ``t``.

    Example::

        pad_by_statistic_tangent(np.ones(3), np.arange(3.0), 1, "mean")  # five ones
    """
    moved = np.asarray(t)
    for axis, (before, after), (first, last), values in _steps(array, pad_width, mode, stat_length):
        size = values.shape[axis]
        parts = []
        if before:
            head = _take(values, axis, 0, first)
            stat = np.sum(
                _weights(head, axis, mode) * _take(moved, axis, 0, first), axis=axis, keepdims=True
            )
            parts.append(np.repeat(stat, before, axis=axis))
        parts.append(moved)
        if after:
            tail = _take(values, axis, size - last, size)
            stat = np.sum(
                _weights(tail, axis, mode) * _take(moved, axis, size - last, size),
                axis=axis,
                keepdims=True,
            )
            parts.append(np.repeat(stat, after, axis=axis))
        moved = np.concatenate(parts, axis=axis)
    return moved


def unpad_by_statistic(
    g: Any, array: Any, pad_width: Any, mode: str, stat_length: Any = None
) -> np.ndarray:
    """The cotangent of ``array`` when ``g`` is the cotangent of ``np.pad(array, pad_width,
    mode, stat_length=stat_length)`` (a statistical mode).

    Example::

        unpad_by_statistic(np.ones(5), np.arange(3.0), 1, "mean")  # array([1.67, 1.67, 1.67])
    """
    spread = np.asarray(g)
    for axis, (before, after), (first, last), values in reversed(
        _steps(array, pad_width, mode, stat_length)
    ):
        size = values.shape[axis]
        inner = _take(spread, axis, before, before + size).copy()
        if before:
            head = _take(values, axis, 0, first)
            total = np.sum(_take(spread, axis, 0, before), axis=axis, keepdims=True)
            _take(inner, axis, 0, first)[...] += total * _weights(head, axis, mode)
        if after:
            tail = _take(values, axis, size - last, size)
            total = np.sum(
                _take(spread, axis, before + size, before + size + after), axis=axis, keepdims=True
            )
            _take(inner, axis, size - last, size)[...] += total * _weights(tail, axis, mode)
        spread = inner
    return spread


@vjp_rule(pad_by_statistic_tangent)
def _pad_by_statistic_tangent_vjp(g, ans, t, array, pad_width, mode, stat_length=None):
    return unpad_by_statistic(g, array, pad_width, mode, stat_length), None


@jvp_rule(pad_by_statistic_tangent)
def _pad_by_statistic_tangent_jvp(t, ans, moved, array, pad_width, mode, stat_length=None):
    return pad_by_statistic_tangent(t, array, pad_width, mode, stat_length), None


@vjp_rule(unpad_by_statistic)
def _unpad_by_statistic_vjp(g, ans, spread, array, pad_width, mode, stat_length=None):
    return pad_by_statistic_tangent(g, array, pad_width, mode, stat_length), None


@jvp_rule(unpad_by_statistic)
def _unpad_by_statistic_jvp(t, ans, spread, array, pad_width, mode, stat_length=None):
    return unpad_by_statistic(t, array, pad_width, mode, stat_length), None
