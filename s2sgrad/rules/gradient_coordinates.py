"""How ``np.gradient(f, x, axis=k)`` changes with the coordinate array ``x``.

Along the axis, with steps ``h = np.diff(x)`` and slopes ``s = np.diff(f) / h``, NumPy's
estimate at an inner point is ``(h[i-1] * s[i] + h[i] * s[i-1]) / (h[i-1] + h[i])``, and at
an end ``s`` itself (``edge_order=1``) or the slope of the parabola through the three
points there (``edge_order=2``). Each output point reads at most two steps, so its change
is ``A * dh[left] + B * dh[right]``: :func:`coordinate_tangent` applies that to a tangent of
``x`` and :func:`coordinate_cotangent` its adjoint to a cotangent of the output. Both are
plain NumPy, so the rules that call them are differentiated again for second order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["coordinate_tangent", "coordinate_cotangent"]


def coordinate_tangent(dx: Any, f: Any, x: Any, axis: int, edge_order: int, out: Any) -> Any:
    """The change of ``out = np.gradient(f, x, axis=axis, edge_order=edge_order)`` when the
    coordinates ``x`` move by ``dx`` (``f`` held).

    Example::

        x = np.array([0.0, 1.0, 3.0]); f = x**2
        coordinate_tangent(np.ones(3), f, x, 0, 1, np.gradient(f, x))  # zeros: a shift
    """
    A, B, left, right = _partials(f, x, axis, edge_order, out)
    dh = np.diff(dx)
    return np.moveaxis(A * dh[left] + B * dh[right], -1, axis)


def coordinate_cotangent(g: Any, f: Any, x: Any, axis: int, edge_order: int, out: Any) -> Any:
    """The cotangent of the coordinates ``x`` of ``out = np.gradient(f, x, axis=axis,
    edge_order=edge_order)``, given ``g``, that of ``out``.

    Example::

        x = np.array([0.0, 1.0, 3.0]); f = x**2
        coordinate_cotangent(np.ones(3), f, x, 0, 1, np.gradient(f, x))
    """
    A, B, left, right = _partials(f, x, axis, edge_order, out)
    G = np.moveaxis(g, axis, -1)
    leading = tuple(range(np.ndim(G) - 1))
    steps = np.size(x) - 1
    to_left = np.sum(G * A, axis=leading) @ np.eye(steps)[left]
    to_right = np.sum(G * B, axis=leading) @ np.eye(steps)[right]
    to_steps = to_left + to_right
    # h[j] = x[j+1] - x[j]
    return np.concatenate([[0.0], to_steps]) - np.concatenate([to_steps, [0.0]])


def _partials(f, x, axis, edge_order, out):
    """``A``, ``B`` (the output's shape, its axis moved last) and the step each output point's
    ``A`` and ``B`` multiply (``left``, ``right``: integer arrays along the axis)."""
    F = np.moveaxis(f, axis, -1)
    Out = np.moveaxis(out, axis, -1)
    h = np.diff(x) * 1.0
    s = np.diff(F, axis=-1) / h
    n = np.size(x)
    hl, hr = h[:-1], h[1:]
    sl, sr = s[..., :-1], s[..., 1:]
    inner = Out[..., 1:-1]
    A_inner = (sr - sl * hr / hl - inner) / (hl + hr)
    B_inner = (sl - sr * hl / hr - inner) / (hl + hr)
    if edge_order == 1:
        A_first, B_first = -Out[..., 0] / h[0], 0.0 * Out[..., 0]
        A_last, B_last = -Out[..., -1] / h[-1], 0.0 * Out[..., -1]
        ends = ([0], [0], [n - 2], [n - 2])
    else:
        A_first, B_first = _first_end(h[0], h[1], s[..., 0], s[..., 1])
        A_last, B_last = _last_end(h[-2], h[-1], s[..., -2], s[..., -1])
        ends = ([0], [1], [n - 3], [n - 2])
    A = np.concatenate([A_first[..., None], A_inner, A_last[..., None]], axis=-1)
    B = np.concatenate([B_first[..., None], B_inner, B_last[..., None]], axis=-1)
    middle = np.arange(n - 2)
    left = np.concatenate([ends[0], middle, ends[2]]).astype(int)
    right = np.concatenate([ends[1], middle + 1, ends[3]]).astype(int)
    return A, B, left, right


def _first_end(dx1, dx2, s0, s1):
    """Partials in the first two steps of ``s0 - dx1 / (dx1 + dx2) * (s1 - s0)``."""
    width = dx1 + dx2
    bend = (s1 - s0) / width**2
    by_first = -s0 / dx1 - dx2 * bend - dx1 / width * s0 / dx1
    by_second = dx1 * bend + dx1 / width * s1 / dx2
    return by_first, by_second


def _last_end(dx1, dx2, s0, s1):
    """Partials in the last two steps of ``s1 + dx2 / (dx1 + dx2) * (s1 - s0)``."""
    width = dx1 + dx2
    bend = (s1 - s0) / width**2
    by_first = -dx2 * bend + dx2 / width * s0 / dx1
    by_second = -s1 / dx2 * (1.0 + dx2 / width) + dx1 * bend
    return by_first, by_second
