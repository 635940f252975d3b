"""Functions whose derivative stores values being differentiated in a log of the code
around them (``compiler/logs``), noted so that no derivative calls theirs.

A log is allowed where nothing reads back in the same call what it stores. The function
that logs cannot see its callers: ``def outer(x): loss = inner(x); return HISTORY[-1] * x``
would read back, as a constant, what ``inner`` logged. So the derivative of a function that
logs is made only for the function a user differentiates, never for a callee.

Example::

    note_logging(inner, "HISTORY")  # the derivative of inner logs into HISTORY
    refuse_a_logging_callee(inner, "loss.py:3")  # raises: outer may read HISTORY back
"""

from __future__ import annotations

import types
from typing import Any

from s2sgrad.errors import UnsupportedError
from s2sgrad.running import code_of

__all__ = ["note_logging", "refuse_a_logging_callee"]

# the code of each function whose derivative logs, with the name of the log
_LOGGING: dict[types.CodeType, str] = {}


def note_logging(function: Any, name: str) -> None:
    """Note that ``function``'s derivatives store values in the log ``name``."""
    code = code_of(function)
    if code is not None:
        _LOGGING[code] = name


def refuse_a_logging_callee(function: Any, where: str) -> None:
    """Refuse calling the derivative of ``function`` from another derivative (at
    ``where``, the user's file and line) if it logs."""
    code = code_of(function)
    name = _LOGGING.get(code) if code is not None else None
    if name is None:
        return
    called = getattr(function, "__qualname__", None) or repr(function)
    error = UnsupportedError(
        f"{where}: {called} stores values being differentiated in '{name}', which belongs "
        "to the code around it, and the function calling it could read them back, which "
        "source transformation does not follow: log in the function you differentiate "
        "(or after the call), or use mode='tape'"
    )
    error.whole_function_on_tape = True  # mode="auto": the tape follows the log
    raise error
