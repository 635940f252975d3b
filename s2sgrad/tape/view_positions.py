"""Where the elements of a NumPy view lie in the array it views, found from memory addresses.

A view (``t[0]``, ``t.T``, ``t.reshape(-1)``, ``np.split(t, 2)[1]``) reads elements of
another array's memory. :func:`positions_within` gives, for each element of the view, the
flat (C-order) index of the element of the other array at the same address, whatever made
the view; :func:`view_at` makes a view of another array that reads the elements at given
flat indices, where a strided view can. Plain NumPy only: :mod:`s2sgrad.tape.view_writes`
uses them to follow a write through a view on the tape.

Example::

    t = np.arange(6.0).reshape(2, 3)
    positions_within(t.T[1], t)       # array([1, 4])
    view_at(t.copy(), np.array([1, 4]))  # a view reading elements 1 and 4
"""

from __future__ import annotations

import numpy as np

__all__ = ["byte_bounds", "positions_within", "view_at"]


def _element_offsets(a: np.ndarray) -> np.ndarray:
    """The byte offset of each element of ``a`` from its first element (shape ``a.shape``)."""
    offsets = np.zeros(a.shape, dtype=np.intp)
    for axis, (length, stride) in enumerate(zip(a.shape, a.strides)):
        step = np.arange(length, dtype=np.intp) * stride
        offsets = offsets + step.reshape((length,) + (1,) * (a.ndim - axis - 1))
    return offsets


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def byte_bounds(a: np.ndarray) -> tuple[int, int]:
    """The first and one-past-the-last byte addresses of a non-empty array's elements.

    Example::

        byte_bounds(np.zeros(3))  # (address, address + 24)
    """
    start = _address(a)
    spans = [(length - 1) * stride for length, stride in zip(a.shape, a.strides)]
    low = start + sum(span for span in spans if span < 0)
    return low, start + sum(span for span in spans if span > 0) + a.itemsize


def positions_within(part: np.ndarray, whole: np.ndarray) -> np.ndarray | None:
    """For each element of ``part``, the flat C-order index of the element of ``whole`` at
    the same address (an integer array shaped like ``part``); None when an element of
    ``part`` is not one of ``whole``'s (another dtype, a byte in the middle of an element,
    memory outside it) or ``whole`` reads one address twice (a broadcast view).

    Example::

        positions_within(t[:, 1:], t)  # array([[1, 2], [4, 5]]) for t of shape (2, 3)
    """
    if part.dtype != whole.dtype:
        return None
    if part.size == 0:
        return np.zeros(part.shape, dtype=np.intp)
    if whole.size == 0:
        return None
    whole_offsets = _element_offsets(whole).ravel()
    order = np.argsort(whole_offsets, kind="stable")
    ordered = whole_offsets[order]
    if np.any(ordered[1:] == ordered[:-1]):
        return None
    wanted = _element_offsets(part) + (_address(part) - _address(whole))
    found = np.minimum(np.searchsorted(ordered, wanted), ordered.size - 1)
    if np.any(ordered[found] != wanted):
        return None
    return order[found]


def view_at(whole: np.ndarray, positions: np.ndarray) -> np.ndarray | None:
    """A view of ``whole`` (C- or Fortran-contiguous) whose element at each index is
    ``whole``'s element at the flat C-order index ``positions`` holds there; None where no
    strided view reads those elements.

    Example::

        view_at(np.arange(6.0).reshape(2, 3), np.array([[1, 4], [2, 5]]))  # t.T[1:]
    """
    if not (whole.flags.c_contiguous or whole.flags.f_contiguous) or positions.size == 0:
        return None
    offsets = _element_offsets(whole).ravel()[positions]
    first = (0,) * positions.ndim
    start = int(offsets[first])
    strides = []
    for axis, length in enumerate(positions.shape):
        if length == 1:
            strides.append(0)
            continue
        second = list(first)
        second[axis] = 1
        strides.append(int(offsets[tuple(second)]) - start)
    view = np.ndarray(
        positions.shape, whole.dtype, buffer=whole, offset=start, strides=tuple(strides)
    )
    if not np.array_equal(_element_offsets(view) + start, offsets):
        return None
    return view
