"""The save and restore of an entry the forward sweep overwrites under a string key
(``cache["k"] = v``), where the entry may not be there yet.

``stack.append(snapshot(cache["k"]))`` would fail before a first write of ``"k"``; generated
code saves :func:`entry_snapshot` instead, :data:`ABSENT` for a missing entry, and the
backward sweep's :func:`put_back_entry` deletes the entry again where it was absent::

    stack.append(entry_snapshot(CACHE, "k"))  # ABSENT: CACHE had no "k"
    CACHE["k"] = t2
    ...
    put_back_entry(CACHE, "k", stack.pop())  # del CACHE["k"]

Example::

    put_back_entry(cache, "k", entry_snapshot(cache, "k"))  # cache as it was
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from s2sgrad.rules.registry import nondifferentiable
from s2sgrad.runtime.core import snapshot

__all__ = ["ABSENT", "entry_snapshot", "put_back_entry"]


class _Absent:
    """The saved state of an entry that was not there."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


def entry_snapshot(container: Any, key: Any) -> Any:
    """A copy of ``container[key]``, or :data:`ABSENT` when ``container`` is a mapping
    without ``key``.

    Example::

        entry_snapshot({}, "k")  # ABSENT
        entry_snapshot({"k": 1}, "k")  # 1
    """
    if isinstance(container, Mapping) and key not in container:
        return ABSENT
    return snapshot(container[key])


def put_back_entry(container: Any, key: Any, saved: Any) -> None:
    """Write ``saved`` back as ``container[key]``, or delete the entry when ``saved`` is
    :data:`ABSENT` (it was not there before the forward sweep wrote it).

    Example::

        cache = {"k": 2}
        put_back_entry(cache, "k", ABSENT)  # cache == {}
    """
    if saved is ABSENT:
        if key in container:
            del container[key]
        return
    container[key] = saved


# the entries of a dict of the code around the function, never differentiated (source
# transformation refuses to store values being differentiated there)
nondifferentiable(entry_snapshot, put_back_entry)
