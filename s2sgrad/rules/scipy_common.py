"""What the SciPy rule modules share: refusing a derivative that has no closed form.

``scipy.special.betainc(a, b, x)`` has a closed-form derivative in ``x`` only; in ``a``
and ``b`` it is a hypergeometric series. Its rule's entries for ``a`` and ``b`` refuse::

    return refuse(_BETAINC_REFUSED), refuse(_BETAINC_REFUSED), unbroadcast(g * density, x)

An entry is computed only for an argument that is being differentiated (the source
transformer writes code for those entries only, the tape specialises the rule to them), so
the refusal happens exactly when ``a`` or ``b`` is differentiated, in reverse and forward
mode alike; ``None`` instead would silently mean "no derivative". The error is raised when
the derivative is computed, and names the user's line that asked for it (a rule does not
know the line of the call it differentiates).
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import numpy as np

from s2sgrad.errors import NonDifferentiableError, where

__all__ = ["integer_valued", "refuse", "users_location"]

# frames of these packages are not the user's (s2sgrad's generated code runs in a module
# named "s2sgrad.generated")
_NOT_THE_USERS = ("s2sgrad", "numpy", "scipy", "functools", "contextlib")


def refuse(message: str) -> None:
    """Raise ``NonDifferentiableError(message)``, prefixed with the user's ``file:line``.

    Example::

        refuse("scipy.special.gammainc(a, x) is differentiated in x only")
    """
    error = NonDifferentiableError(f"{users_location()}: {message}")
    error.tape_cannot_either = True  # the tape applies the same rule: mode="auto" stays
    raise error


def integer_valued(value: Any) -> bool:
    """Whether ``value`` is an integer (a Python or NumPy one, or an array of integers or
    booleans): it has no derivative to give. An order's entry is then a zero, not a refusal:
    ``int()``, ``round()`` and ``astype(int)`` of a differentiated value give a zero
    derivative as well, so an integer reaching an order was never moved by the arguments (a
    loop's counter a gradient saved, differentiated again, is taken for a differentiated
    value by the transformer's analysis of the saved tuple).

    Example::

        integer_valued(3), integer_valued(np.arange(2)), integer_valued(0.5)  # True True False
    """
    if isinstance(value, (int, np.integer, np.bool_)):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind in "biu"


def users_location() -> str:
    """``file:line`` of the innermost frame that is neither s2sgrad's, NumPy's nor SciPy's.

    Example::

        users_location()  # 'model.py:12'
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module.split(".", 1)[0] not in _NOT_THE_USERS:
            break
        frame = frame.f_back
    return where(frame.f_code.co_filename, frame.f_lineno) if frame else where(None, None)
