"""Private copies of the values a VJP's backward sweep restores in place, views included.

A backward sweep that restores an array's items (``acc[:2] = stack.pop()``) works on a copy
of it, so that the pullback can be called again. A saved view of that array (``t = acc[:2]``,
read by the backward sweep after the restoring) must then see the copy, as it saw the array
in the forward sweep: it is rebuilt over the copy, at the same offset and strides.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from s2sgrad.runtime.core import owned

__all__ = ["owned_together"]


def owned_together(changed: tuple, others: tuple) -> tuple:
    """Private copies of ``changed``, then ``others``, with every array sharing memory with
    a changed array (an entry of a changed list too: a stack of views) rebuilt as the same
    view of its copy; the other values of ``others`` as they are.

    Example::

        acc = np.arange(4.0)
        acc_, head_ = owned_together((acc,), (acc[:2],))
        acc_[0] = 9.0   # head_[0] is 9.0 too; acc is unchanged
    """
    entries = [e for v in changed if type(v) is list for e in v]
    arrays = [v for v in (*changed, *entries, *others) if _is_plain_array(v)]
    copies: dict[int, tuple[np.ndarray, int]] = {}  # id(root) -> (copy of the bytes, address)
    for value in changed:
        if _is_plain_array(value) and id(_root(value)) not in copies:
            root = _root(value)
            copies[id(root)] = _copied_bytes([a for a in arrays if _root(a) is root])
    return (
        *(_private(v, copies) for v in changed),
        *(_rebuilt(v, copies) if _is_view_of_copy(v, copies) else v for v in others),
    )


def _private(value: Any, copies: dict) -> Any:
    """A private copy of ``value`` (what :func:`owned` makes), keeping views of copies so."""
    if _is_plain_array(value):
        return _rebuilt(value, copies)
    if type(value) is list:
        return [_private(entry, copies) for entry in value]
    return owned(value)


def _is_plain_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) and not value.dtype.hasobject


def _is_view_of_copy(value: Any, copies: dict) -> bool:
    return _is_plain_array(value) and id(_root(value)) in copies


def _root(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _bounds(array: np.ndarray) -> tuple[int, int]:
    low = high = array.ctypes.data
    if array.size == 0:
        return low, low
    for size, stride in zip(array.shape, array.strides):
        if stride < 0:
            low += (size - 1) * stride
        else:
            high += (size - 1) * stride
    return low, high + array.itemsize


def _copied_bytes(arrays: list) -> tuple[np.ndarray, int]:
    """A copy of the bytes the ``arrays`` (views of one root) span, and their first address."""
    spans = [_bounds(a) for a in arrays]
    low, high = min(s[0] for s in spans), max(s[1] for s in spans)
    buffer = np.empty(high - low, dtype=np.uint8)
    if high > low:
        ctypes.memmove(buffer.ctypes.data, low, high - low)
    return buffer, low


def _rebuilt(array: np.ndarray, copies: dict) -> np.ndarray:
    """``array`` over the copy of its root's bytes (a copy of it when its root is not
    copied)."""
    entry = copies.get(id(_root(array)))
    if entry is None:
        return owned(array)
    buffer, low = entry
    return np.ndarray(
        array.shape,
        array.dtype,
        buffer=buffer,
        offset=array.ctypes.data - low,
        strides=array.strides,
    )
