"""What a value looked like to the probe: kind, shape, dtype, and the value itself where it
may set a shape (an integer, a tuple of them, a basic index).

Example::

    Seen._make(observed(np.ones((2, 3))))  # Seen(kind='array', shape=(2, 3), dtype='d', value=None)
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["Seen", "observed"]


class Seen(NamedTuple):
    """What one argument or result of a probed call looked like (a tuple: quick to make)."""

    # array | scalar | float | int | tuple | basic index | array index | unchanged | other
    kind: str
    shape: tuple | None = None
    dtype: str | None = None
    value: Any = None


def observed(value: Any) -> tuple:
    """What ``value`` looks like: the fields of a :class:`Seen`, as a plain tuple (quicker to
    make: the probe makes one per argument of every probed call)."""
    if type(value) is np.ndarray:
        return ("array", value.shape, value.dtype.char, None)
    if isinstance(value, np.generic):
        return ("scalar", (), value.dtype.char, None)
    if type(value) is float:
        return ("float", (), None, None)
    if type(value) is int:
        return ("int", (), None, value)
    if isinstance(value, tuple) and all(type(v) is int for v in value):
        return ("tuple", None, None, value)
    if _is_basic_index(value):
        return ("basic index", None, None, _hashable_index(value))
    if type(value) is tuple:
        parts = _array_index(value)
        if parts is not None:
            return ("array index", None, None, parts)
    return ("other", None, None, None)


def _array_index(index: tuple) -> tuple | None:
    """An index of arrays mixed with basic parts, each array part as ``("array", shape,
    dtype char)`` and the others as in a basic index; None if it holds anything else."""
    parts = []
    arrays = False
    for part in index:
        if type(part) is np.ndarray:
            parts.append(("array", part.shape, part.dtype.char))
            arrays = True
        elif type(part) is not tuple and _is_basic_index(part):  # a tuple in it is an array
            parts.extend(_hashable_index(part))
        else:
            return None
    return tuple(parts) if arrays else None


def _hashable_index(index) -> tuple:
    """A basic index as a hashable tuple (slices are not hashable before Python 3.12)."""
    parts = index if isinstance(index, tuple) else (index,)
    return tuple(("slice", p.start, p.stop, p.step) if isinstance(p, slice) else p for p in parts)


def _is_basic_index(index) -> bool:
    """Integers, slices, None and Ellipsis: indexing that never repeats an element."""
    parts = index if isinstance(index, tuple) else (index,)
    return all(
        isinstance(p, (int, np.integer, slice)) or p is None or p is Ellipsis for p in parts
    ) and not any(isinstance(p, bool) for p in parts)
