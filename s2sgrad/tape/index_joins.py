"""``np.r_[...]`` and ``np.c_[...]`` on the tape.

NumPy's index tricks make a plain array of each item (``np.array(item, subok=True,
ndmin=...)``), which would drop a tape value's derivative, and then join the items with
``np.concatenate``. A tape value asked for its array there gives a view of its value that
remembers it (``HeldForJoin``); the ``np.concatenate`` that follows finds the views
(NumPy hands the call to the view's ``__array_function__``) and joins the tape values
themselves, reshaped to what NumPy made of them (a 0-d value to one entry, a row to a
column for ``np.c_``), so that the join is recorded. Any other use of such a view is a
plain array's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["HeldForJoin", "held_for_join"]


class HeldForJoin(np.ndarray):
    """A tape value's array, held by ``np.r_``/``np.c_`` until it joins the others."""

    owner: Any = None

    def __array_finalize__(self, made) -> None:
        self.owner = getattr(made, "owner", None)

    def __array_function__(self, func, types, args, kwargs):
        if getattr(func, "__name__", None) == "concatenate" and args:
            items = [_recorded(item) for item in args[0]]
            return np.concatenate(items, *args[1:], **kwargs)
        for held in _held_in((args, kwargs)):  # not the join it was made for
            if held.owner is not None:
                held.owner._refuse_plain("np.asarray() / np.array()")
        plain = tuple(_plain(a) for a in args)
        return func(*plain, **{k: _plain(v) for k, v in kwargs.items()})


def held_for_join(owner: Any, value: np.ndarray) -> HeldForJoin:
    """The view of ``value`` that ``np.r_``/``np.c_`` may join as the tape value ``owner``.

    Example::

        held_for_join(tape_value, tape_value.value)  # np.r_ joins tape_value itself
    """
    held = np.asarray(value).view(HeldForJoin)
    held.owner = owner
    return held


def _recorded(item: Any) -> Any:
    """The tape value an item stands for, shaped as NumPy made it; other items as they are."""
    if not isinstance(item, HeldForJoin):
        return item
    owner, plain = item.owner, item.view(np.ndarray)
    if owner is None:
        return plain
    if np.shape(owner) == plain.shape:
        return owner
    if np.size(owner) != plain.size or not np.array_equal(
        np.reshape(owner._value, plain.shape), plain
    ):  # NumPy moved its entries: not a reshape (no such index trick is known)
        owner._refuse_plain("np.r_[...] / np.c_[...]")
    return np.reshape(owner, plain.shape)  # ndmin's new axes, np.c_'s row as a column


def _held_in(value: Any):
    if isinstance(value, HeldForJoin):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _held_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _held_in(item)


def _plain(value: Any) -> Any:
    if isinstance(value, HeldForJoin):
        return value.view(np.ndarray)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value
