"""Refusals the user's own code caught: raised again where the function returns.

On the tape, ``float(x)`` or ``hasattr(x, "base")`` of a value being differentiated raises
a refusal. A function that catches it (``try: v = float(x) except Exception: v = 0.0``)
goes on along a path NumPy's values would not take, and its gradient is of another
program, silently. Each refusal raised straight into the user's code is noted here, and
:func:`raise_caught` (after the function returned normally) raises the first one again.

Example::

    mark = noted()
    out = f(*arguments)
    raise_caught(mark)  # the refusal f caught, if any
"""

from __future__ import annotations

import os
import sysconfig
from typing import Any

from s2sgrad.errors import S2SGradError
from s2sgrad.running import origin_of

__all__ = ["note_refusal", "noted", "raise_caught", "forget_since", "noted_since"]

_RAISED: list[S2SGradError] = []
_NOT_USERS = (
    os.path.dirname(os.path.dirname(__file__)) + os.sep,  # s2sgrad's own files
    *{os.path.join(sysconfig.get_paths()[k], "") for k in ("stdlib", "purelib", "platlib")},
)


def note_refusal(error: S2SGradError, caller: Any) -> None:
    """Note ``error``, about to be raised into the frame ``caller``, if that frame runs the
    user's code (not s2sgrad's, generated code, NumPy's, the standard library's or an
    installed package's: their own ``except`` clauses are theirs to keep)."""
    if caller is None:
        return
    filename = caller.f_code.co_filename
    if filename.startswith(_NOT_USERS) or origin_of(filename) is not None:
        return
    _RAISED.append(error)


def noted() -> int:
    """A mark: how many refusals are noted now."""
    return len(_RAISED)


def raise_caught(mark: int) -> None:
    """Raise the first refusal noted since ``mark`` (the function caught it and returned)."""
    if len(_RAISED) <= mark:
        return
    error = _RAISED[mark]
    del _RAISED[mark:]
    caught = type(error)(
        f"{error} (The function caught this refusal in an 'except' clause and went on, "
        "as it would not with NumPy's values; its gradient would be of another program.)"
    )
    raise caught.with_traceback(error.__traceback__)


def noted_since(mark: int) -> S2SGradError | None:
    """The first refusal noted since ``mark``, if any: NumPy replaces an exception raised
    while it stores one item (``b.flat[0] = x`` calls ``float(x)``) by a bare ``ValueError``
    without a cause, so the refusal itself is found here."""
    return _RAISED[mark] if len(_RAISED) > mark else None


def forget_since(mark: int) -> None:
    """Forget what was noted since ``mark`` (the function raised: nothing was kept)."""
    del _RAISED[mark:]
