"""What the user's frames hold: their local names, the globals their code names, and what
lists, tuples, dicts and objects hold inside them (three levels deep). The tape's checks of
writes into memory other values may share read it (``helper_writes``, ``view_writes``)."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

__all__ = ["entries_of", "held_values", "is_skipped"]


def is_skipped(frame: Any, skipped_dirs: tuple) -> bool:
    """Whether ``frame`` runs code of s2sgrad's or NumPy's (under ``skipped_dirs``).

    Example::

        is_skipped(frame, _SKIPPED_DIRS)  # True for NumPy's own frames
    """
    return frame.f_code.co_filename.startswith(skipped_dirs)


def held_values(frame: Any, skipped_dirs: tuple) -> Iterator[tuple[Any, str, Any]]:
    """``(frame, name, value)`` for the values the user's frames from ``frame`` outwards
    reach: their local names, the globals their code names, inside lists, tuples, dicts and
    the attributes of objects (three levels deep), until the first frame of s2sgrad's or
    NumPy's (whatever calls the differentiated function)."""
    seen: set[int] = set()
    while frame is not None and not is_skipped(frame, skipped_dirs):
        names = list(frame.f_locals.items())
        scope = frame.f_globals
        names += [(n, scope[n]) for n in frame.f_code.co_names if n in scope]
        for name, held in names:
            for entry in entries_of(held, 3, seen):
                yield frame, name, entry
        frame = frame.f_back


_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def entries_of(value: Any, depth: int, seen: set[int] | None = None) -> Iterator[Any]:
    """``value`` and what it holds, ``depth`` levels down (each container once if ``seen``).

    Example::

        list(entries_of([a, {"k": b}], 2))  # [[a, {...}], a, {...}, b]
    """
    yield value
    if depth == 0 or isinstance(value, _OPAQUE) or (seen is not None and id(value) in seen):
        return
    if seen is not None:
        seen.add(id(value))
    if isinstance(value, dict):
        value = list(value.values())
    elif not isinstance(value, (list, tuple)):
        kind = type(value)
        if kind.__module__ in ("builtins", "numpy") or not hasattr(value, "__dict__"):
            return
        value = list(vars(value).values())
    for entry in value:
        yield from entries_of(entry, depth - 1, seen)
