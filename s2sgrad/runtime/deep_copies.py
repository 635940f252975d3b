"""``copy.deepcopy`` of an object whose class copies itself: refused, not taken for new.

Both engines take ``q = copy.deepcopy(p)`` for a new value sharing no memory with ``p``
(source transformation's sharing analysis, which the tape asks about ``q.w *= 2``). A class
defining its own ``__deepcopy__`` may hand back ``p`` itself or its arrays, and a write
into the copy then changes ``p``: the derivative would be that of another function. So
where a function's code (or a helper's it names) says ``deepcopy`` and its arguments, or
the globals and closure variables it names, hold such an object or such a class of the
user's, the call is refused, naming the line of ``deepcopy``.

Example::

    refuse_custom_deep_copies(loss, (params, x))  # UnsupportedError if Params.__deepcopy__
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from s2sgrad.errors import UnsupportedError, where
from s2sgrad.runtime.kept_states import code_names, free_values_of, line_naming, walked_functions

__all__ = ["copies_itself", "refuse_custom_deep_copies"]

_LIBRARIES = ("numpy", "scipy", "s2sgrad", "builtins", "copy", "collections")


def copies_itself(kind: type) -> bool:
    """Whether instances of ``kind`` deep-copy with a ``__deepcopy__`` of the user's code
    rather than Python's own, which copies what they hold.

    Example::

        copies_itself(Params)  # True where Params defines __deepcopy__
    """
    for klass in kind.__mro__:
        module = (getattr(klass, "__module__", None) or "").split(".")[0]
        if "__deepcopy__" in vars(klass) and module not in _LIBRARIES:
            return True
    return False


def refuse_custom_deep_copies(function: Any, values: Iterable) -> None:
    """Refuse ``function`` (see the module's docstring) where its code says ``deepcopy``
    and ``values`` (a call's arguments) or the free values of the functions it walks hold
    an object of, or a class, that copies itself."""
    for each in walked_functions(function):  # (only the functions, not what they keep)
        if "deepcopy" not in code_names(each.__code__):
            continue
        found = _copying_itself((*values, *free_values_of(each)))
        if found is not None:
            raise _refusal(each, found)


def _copying_itself(values: tuple) -> type | None:
    """The first class among ``values`` (or of an object they hold, in lists, tuples, dicts
    and attributes, three levels down) that copies itself."""
    pending = list(values)
    for _ in range(3):
        deeper: list = []
        for value in pending:
            if isinstance(value, type):
                if copies_itself(value):
                    return value
                continue
            kind = type(value)
            if copies_itself(kind):
                return kind
            if kind in (list, tuple):
                deeper.extend(value[:64])
            elif kind is dict:
                deeper.extend(list(value.values())[:64])
            elif type(getattr(value, "__dict__", None)) is dict and kind.__module__ != "builtins":
                deeper.extend(list(vars(value).values())[:64])
        pending = deeper
    return None


def _refusal(function: Any, kind: type) -> UnsupportedError:
    code = function.__code__
    line = line_naming(code, "deepcopy")
    name = kind.__qualname__
    return UnsupportedError(
        f"{where(code.co_filename, line)}: copy.deepcopy of a value that may be a {name}, whose "
        "class defines its own __deepcopy__: s2sgrad takes a deep copy for a new value "
        "sharing nothing, and a __deepcopy__ may hand back the object or the arrays it "
        "holds, so that a write into the copy would change the original. Copy what it holds "
        f"explicitly ({name}(p.w.copy()) rather than copy.deepcopy(p)), or remove __deepcopy__"
    )
