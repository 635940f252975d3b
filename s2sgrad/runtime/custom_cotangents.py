"""The cotangents a user's derivative returns, checked against its arguments' shapes.

A pullback registered with ``@derivative`` or ``custom_gradient`` may return a cotangent
with extra leading axes or axes of one (summed back to the argument, as for a broadcast
argument), or a scalar for an array; a shape that fits neither way is the derivative's
mistake, reported at its definition rather than as a NumPy error deep in generated code.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from s2sgrad.errors import CotangentShapeError, where
from s2sgrad.numpy_signatures import parameters
from s2sgrad.running import code_of, origin_of

__all__ = ["check_cotangent_shapes", "check_hook_cotangent", "cotangent_tuple"]


def cotangent_tuple(
    derivative: Any, returned: Any, args: tuple, differentiated: int | None = None
) -> tuple:
    """What a user's pullback ``returned`` as one entry per argument: a tuple as it is, one
    value as the first argument's. Refused with :class:`CotangentShapeError` where one
    value would give the first argument a cotangent meant for several: a list for a call
    of several arguments that may be differentiated (whose first is no list: ``[g * b,
    g * a]`` was summed into the first argument, the second's dropped), or any one value
    when ``differentiated`` (how many of ``args`` are being differentiated, when the
    caller knows) is more than one. One value for ``shifted(x, 4.0)``, its scale a
    constant, stays x's.

    Example::

        cotangent_tuple(df, [g * b, g * a], (a, b))  # CotangentShapeError: return a tuple
    """
    if isinstance(returned, tuple) or returned is None:
        return (returned,) if returned is None else returned
    several = sum(map(_may_be_differentiated, args)) > 1
    listed = isinstance(returned, list) and not (args and isinstance(args[0], list))
    if (several and listed) or (differentiated is not None and differentiated > 1):
        origin, name = _described(derivative)
        raise CotangentShapeError(
            f"{origin}: the pullback of {name} returned one {type(returned).__name__} for a "
            f"call with {len(args)} arguments; return a tuple with one cotangent per "
            "argument (None for one without), as in 'return g * b, g * a'"
        )
    return (returned,)


def _may_be_differentiated(value: Any) -> bool:
    """Whether an argument may carry a derivative: not None, an integer, a boolean or
    text (an integer or boolean array neither)."""
    if value is None or isinstance(value, (bool, int, str, bytes, np.integer, np.bool_)):
        return False
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    return kind is None or kind in "fc"


def check_cotangent_shapes(derivative: Any, cotangents: tuple, args: tuple) -> None:
    """Raise :class:`CotangentShapeError` naming ``derivative``'s definition when one of
    ``cotangents`` (one per argument of ``args``, ``None`` for none) cannot be brought to
    its argument's shape.

    Example::

        check_cotangent_shapes(df, (np.ones(2),), (np.ones(3),))  # CotangentShapeError
    """
    if len(cotangents) > max(len(args), _positional_count(derivative)):
        origin, name = _described(derivative)
        raise CotangentShapeError(
            f"{origin}: the pullback of {name} returned {len(cotangents)} cotangents for a "
            f"call with {len(args)} argument(s); return one per argument (None for one "
            "without), and for a single argument that is a tuple, a 1-tuple holding its "
            "cotangent ((g_first, g_second),)"
        )
    for position, (cotangent, argument) in enumerate(zip(cotangents, args)):
        expected, got = _shape(argument), _shape(cotangent)
        if expected is None or got is None or got == expected:
            continue
        try:
            joint = np.broadcast_shapes(got, expected)
        except ValueError:
            joint = None
        if joint in (got, expected):
            continue
        origin, name = _described(derivative)
        raise CotangentShapeError(
            f"{origin}: the pullback of {name} returned a cotangent of shape {got} for "
            f"argument {position}, of shape {expected}; return one with the argument's "
            "shape (one value per element of the argument)"
        )


def check_hook_cotangent(hook: Any, replacement: Any, cotangent: Any) -> None:
    """Raise :class:`CotangentShapeError` naming ``hook``'s definition when what it returned
    to replace ``cotangent`` (a ``with_derivative`` hook) is no number or numeric array, or
    has a shape that cannot be brought to the cotangent's.

    Example::

        check_hook_cotangent(lambda g: "oops", "oops", np.ones(3))  # CotangentShapeError
    """
    kind = getattr(getattr(replacement, "dtype", None), "kind", None)
    if isinstance(replacement, (str, bytes)) or (kind is not None and kind not in "biufc"):
        origin, name = _described(hook)
        raise CotangentShapeError(
            f"{origin}: the hook {name} given to with_derivative returned "
            f"{type(replacement).__name__} {str(replacement)[:40]!r} to replace a cotangent of "
            f"shape {_shape(cotangent)}; return numbers of that shape, or None to keep it"
        )
    check_cotangent_shapes(hook, (replacement,), (cotangent,))


def _described(derivative: Any) -> tuple[str, str]:
    """Where ``derivative`` is defined, and its name."""
    code = code_of(getattr(derivative, "__wrapped__", derivative))  # (a checked one's own)
    origin = where(code.co_filename, code.co_firstlineno) if code else repr(derivative)
    if code and origin_of(code.co_filename):  # a lambda copied into generated code
        origin = str(origin_of(code.co_filename))
    return origin, getattr(derivative, "__qualname__", "the custom derivative")


def _positional_count(derivative: Any) -> float:
    """How many positional parameters ``derivative`` has: any number when it takes
    ``*args`` or ``**kwargs`` (a wrapper may return cotangents for keyword arguments too)
    or has no signature to read."""
    try:
        found = parameters(getattr(derivative, "__wrapped__", derivative))  # (a checked one's)
    except (TypeError, ValueError):
        return math.inf
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in found):
        return math.inf
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in found)


def _shape(value: Any) -> tuple[int, ...] | None:
    """The shape of an array, a NumPy scalar or a Python number (a tape's value has one
    too); ``None`` for anything else (a container, an object)."""
    if isinstance(value, (bool, str)) or value is None:
        return None
    if isinstance(value, (int, float, complex, np.generic)):
        return ()
    shape = getattr(value, "shape", None)
    return tuple(shape) if isinstance(shape, tuple) else None
