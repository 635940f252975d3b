"""A write through a view on the tape (``v = t[0]; v[:] = y``), under a function transform.

A tape value never changes its array in place (see :mod:`s2sgrad.tape.writes`), so after
``v[:] = y`` NumPy's ``t``, which ``v`` views, would change while the tape's would not. Where
the values that the running function holds share memory (the views hold views of the same
array, as NumPy made them), the tape follows NumPy instead: it finds the array ``r`` the
others lie in (:func:`s2sgrad.tape.view_positions.positions_within`), records the write on
``r`` (``r = with_item(r_old, positions of v[index], y)``), and then gives each held value
that shares ``r``'s memory its new elements, recorded as a read of the new ``r``, with its
array again a view of ``r``'s, so that a later write through any of them is followed too.
Anything it cannot tell (a held plain array sharing the memory, an element outside ``r``, a
view no strided view of the new array can make) leaves the write refused as before.

Example::

    def f(x):
        t = x * 1.0
        v = t[0]
        v[:] = 2.0          # recorded as a write into t; v reads the new t
        return np.sum(t)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.tape.held import held_values
from s2sgrad.tape.view_positions import byte_bounds, positions_within, view_at

__all__ = ["write_through_views", "STALE", "is_stale", "forget_superseded", "supersede"]

#: (numpy_semantics depth, first byte, end byte, array) of each array a write through a
#: view replaced: a value still reading its memory is a view the tape did not find
STALE: list[tuple[int, int, int, np.ndarray]] = []


def is_stale(value: Any) -> bool:
    """Whether the plain ``value`` reads memory that a write through a view replaced (see
    :data:`STALE`): a view held where the tape could not see it when following the write.

    Example::

        is_stale(v._value)  # True for a view kept in a deque while t changed through another
    """
    if type(value) is not np.ndarray or not value.size:
        return False
    low, high = byte_bounds(value)
    return any(low < end and start < high for _, start, end, _ in STALE)


def forget_superseded(depth: int) -> None:
    """Forget the arrays replaced at ``depth`` or deeper (its function transform ended).

    Example::

        forget_superseded(1)
    """
    STALE[:] = [entry for entry in STALE if entry[0] < depth]


def write_through_views(
    frame: Any,
    target: Any,
    index: Any,
    value: Any,
    write_item: Callable[[Any, Any, Any], None],
    skipped_dirs: tuple,
    depth: int,
    check: Callable[[Any], None] | None = None,
) -> bool:
    """Record ``target[index] = value`` where ``target`` shares memory with other tape values
    the user's frames from ``frame`` outwards hold, as NumPy's write into their common
    array (see the module docstring); False, with nothing recorded, where that is not
    certain. ``write_item(t, index, v)`` records an item write on the tape value ``t``;
    ``check(t)``, called on each value that will change before anything is recorded, may
    refuse the write; ``depth``: that of the function transform running (see :data:`STALE`).

    Example::

        write_through_views(frame, v, slice(None), y, _write_item, _SKIPPED_DIRS, 1)
    """
    kind = type(target)
    written = target._value
    if type(written) is not np.ndarray or not written.flags.writeable:
        return False  # a read-only view (np.diagonal, np.broadcast_to): NumPy refuses it
    held = _held_arrays(frame, skipped_dirs, kind)
    if held is None:
        return False
    sharing = [t for t in held if np.may_share_memory(t._value, written)]
    if not any(t is target for t in sharing):
        sharing.append(target)
    root = max(sharing, key=lambda t: t._value.size)
    whole = root._value
    sharing = [t for t in held if np.may_share_memory(t._value, whole)]
    if not any(t is target for t in sharing):
        sharing.append(target)
    if any(type(t._value) is not np.ndarray for t in sharing):
        return False
    if any(_plain_shares(a, whole) for a in _held_plain(frame, skipped_dirs)):
        return False
    if len(sharing) < 2:  # nothing held shares its memory (ravel made a copy, say)
        if written.base is not None:  # a view of an array nothing holds any more
            return False
        if check is not None:
            check(target)
        write_item(target, index, value)
        supersede(written, depth)  # a view of it held where the tape does not look
        return True
    found = [positions_within(t._value, whole) for t in sharing]
    positions = [p for p in found if p is not None]
    if len(positions) != len(found):
        return False
    layout = np.empty_like(whole)  # what with_item's copy of the root array looks like
    if any(view_at(layout, p) is None for t, p in zip(sharing, positions) if t is not root):
        return False
    if check is not None:
        for t in sharing:
            check(t)
    where_written = next(p for t, p in zip(sharing, positions) if t is target)
    try:
        index_written = where_written[_plain_index(index)]
    except (IndexError, TypeError, ValueError):
        return False  # the write fails as NumPy's would: let it
    write_item(root, np.unravel_index(index_written, whole.shape), value)
    if type(root._value) is not np.ndarray or root._value.strides != layout.strides:
        raise AssertionError("a write through a view left the array in another layout")
    changed = np.zeros(whole.size, dtype=bool)
    changed[index_written.ravel()] = True
    for t, p in zip(sharing, positions):
        if t is root:
            continue
        if changed[p].any():
            write_item(t, Ellipsis, root[np.unravel_index(p, whole.shape)])
        t._value = view_at(root._value, p)
    supersede(whole, depth)
    return True


def supersede(array: Any, depth: int) -> None:
    """Note that ``array``'s memory was replaced (see :data:`STALE`).

    Example::

        supersede(old_array, 1)
    """
    if type(array) is not np.ndarray:
        return
    if array.size:
        STALE.append((depth, *byte_bounds(array), array))


def _held_arrays(frame: Any, skipped_dirs: tuple, kind: type) -> list | None:
    """The distinct tape values (of exactly ``kind``) holding arrays that the user's frames
    hold; None if one of a subclass (a Variable) holds an array."""
    found: dict[int, Any] = {}
    for _, _, held in held_values(frame, skipped_dirs):
        if isinstance(held, kind) and type(getattr(held, "_value", None)) is np.ndarray:
            if type(held) is not kind:
                return None
            found[id(held)] = held
    return list(found.values())


def _held_plain(frame: Any, skipped_dirs: tuple):
    for _, _, held in held_values(frame, skipped_dirs):
        if type(held) is np.ndarray:
            yield held


def _plain_shares(array: np.ndarray, whole: np.ndarray) -> bool:
    return np.may_share_memory(array, whole)


def _plain_index(index: Any) -> Any:
    """The index with the plain values of any tape values in it."""
    if type(index) is tuple:
        return tuple(getattr(i, "_value", i) for i in index)
    return getattr(index, "_value", index)
