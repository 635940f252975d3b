"""In-place updates that a helper makes to an array its caller sees (``def halve(a): a[:] *=
0.5``), under a function transform on the tape.

An item write ``a[index] = v`` changes the tape value ``a`` itself (a new version, see
:mod:`s2sgrad.tape.writes`), so every name holding that object, in the helper's caller
too, sees the change, as with NumPy. In a helper, ``a op= v`` on an array is made such a
write as well (``a[...] = a op v``), as NumPy changes the array. What the tape cannot
follow is memory shared between *different* values: a view the caller holds (``v = y[:2];
halve(y)``) or a view passed in (``halve(y[:2])``), where NumPy changes the other array
too. Such sharing shows in the plain arrays the tape values hold (the tape computes views
as NumPy does), so before a helper's write, every array that the frames between the helper
and the differentiated function hold is checked, and the write is refused if one of them
(other than the written value itself) may share its memory. A helper's change of an array
the differentiated function was given is refused too: the gradient call leaves the
caller's arrays as they are, while NumPy would change them.

Example::

    def halve(a):
        a[:] *= 0.5          # recorded: y is halved for the caller

    def f(x):
        y = x * 1.0
        halve(y)
        return np.sum(y * x)
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from s2sgrad.errors import UnsupportedError, where
from s2sgrad.running import ORIGINS
from s2sgrad.tape.held import entries_of, held_values, is_skipped
from s2sgrad.tape.in_place import names_unread_after_call

__all__ = [
    "is_helper_frame",
    "is_held",
    "held_values",
    "refuse_changing_an_input",
    "refuse_hidden_changes",
    "refuse_shared_memory",
]


def is_helper_frame(frame: Any, skipped_dirs: tuple) -> bool:
    """Whether ``frame`` runs a function that the user's code called (not the
    differentiated function itself, which s2sgrad calls).

    Example::

        is_helper_frame(frame, _SKIPPED_DIRS)  # True inside halve(y)
    """
    if frame is None or frame.f_back is None:
        return False
    return not frame.f_back.f_code.co_filename.startswith(skipped_dirs)


def is_held(value: Any, frame: Any, skipped_dirs: tuple) -> bool:
    """Whether the function ``frame`` runs, or one of its callers, holds ``value`` (by a
    name, or inside a list, tuple or dict it names), rather than it being a temporary.

    Example::

        is_held(a, frame, _SKIPPED_DIRS)  # True in halve(y) for its parameter a
    """
    return any(held is value for _, _, held in held_values(frame, skipped_dirs))


def refuse_hidden_changes(value: Any, frame: Any, skipped_dirs: tuple) -> None:
    """Raise ``UnsupportedError`` before the helper ``frame`` runs changes ``value`` in place
    if the change is one the tape would not show: of an array the differentiated function
    was given (the gradient leaves the caller's arrays as they are), or of memory that
    another array held by the helper or its callers may share.

    Example::

        refuse_hidden_changes(a, frame, _SKIPPED_DIRS)  # raises for halve(y[:2])
    """
    refuse_changing_an_input(value, frame, skipped_dirs)
    refuse_shared_memory(value, frame, skipped_dirs)


def refuse_changing_an_input(value: Any, frame: Any, skipped_dirs: tuple) -> None:
    """Raise ``UnsupportedError`` if ``value``, about to change in the helper ``frame``, is
    (in) an argument of the differentiated function.

    Example::

        refuse_changing_an_input(a, frame, _SKIPPED_DIRS)  # raises in halve(x) for f's x
    """
    outermost = frame
    while outermost.f_back is not None and not is_skipped(outermost.f_back, skipped_dirs):
        outermost = outermost.f_back
    code = outermost.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    for name in code.co_varnames[:count]:
        if not any(entry is value for entry in entries_of(outermost.f_locals.get(name), 3)):
            continue
        error = UnsupportedError(
            f"{where(frame.f_code.co_filename, frame.f_lineno)}: {frame.f_code.co_name} "
            f"changes in place the array '{name}' that {code.co_name} is given "
            f"({where(code.co_filename, outermost.f_lineno)}), which the gradient leaves as "
            f"it is, so neither engine follows that change; copy it first in {code.co_name} "
            f"({name} = {name}.copy()), or have {frame.f_code.co_name} return a new array "
            "instead (g = g * s rather than g[:] *= s)"
        )
        error.tape_cannot_either = True
        error.in_generated_code = frame.f_code.co_filename in ORIGINS
        raise error


def refuse_shared_memory(value: Any, frame: Any, skipped_dirs: tuple) -> None:
    """Raise ``UnsupportedError`` if another array the helper ``frame`` or its callers hold
    may share memory with ``value``, about to change in place.

    Example::

        refuse_shared_memory(a, frame, _SKIPPED_DIRS)  # raises for halve(y[:2])
    """
    written = getattr(value, "_value", value)
    if not isinstance(written, np.ndarray):
        return
    for holder, name, held in held_values(frame, skipped_dirs):
        if held is value or _unread_again(holder, name, held, frame):
            continue
        array = getattr(held, "_value", held)
        if isinstance(array, np.ndarray) and np.may_share_memory(array, written):
            code = frame.f_code
            error = UnsupportedError(
                f"{where(code.co_filename, frame.f_lineno)}: {code.co_name} changes in place "
                f"an array that '{name}' ({where(holder.f_code.co_filename, holder.f_lineno)}) "
                "may share memory with, a view such as y[:2] or y.T; NumPy would change both, "
                "and neither engine can follow that. Pass the helper an array of its own "
                "(.copy()), or have it return a new array instead (g = g * s rather than "
                "g[:] *= s)"
            )
            error.tape_cannot_either = True
            error.in_generated_code = code.co_filename in ORIGINS  # s2sgrad's code, on the tape
            raise error


def _unread_again(holder: Any, name: str, held: Any, frame: Any) -> bool:
    """Whether ``held`` is the value of the local ``name`` of a caller ``holder`` that the
    caller cannot read again once the call it runs returns (``X = mask(X.reshape(n, -1))``):
    NumPy's change of its memory is then seen by nothing."""
    if holder is frame or holder.f_locals.get(name) is not held:
        return False
    return name in holder.f_code.co_varnames and name in names_unread_after_call(holder)
