"""The cotangents a user's derivative returns, checked against its arguments' shapes.

A pullback registered with ``@derivative`` or ``custom_gradient`` may return a cotangent
with extra leading axes or axes of one (summed back to the argument, as for a broadcast
argument), or a scalar for an array; a shape that fits neither way is the derivative's
mistake, reported at its definition rather than as a NumPy error deep in generated code.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from s2sgrad.errors import CotangentShapeError, where

__all__ = ["check_cotangent_shapes"]


def check_cotangent_shapes(derivative: Any, cotangents: tuple, args: tuple) -> None:
    """Raise :class:`CotangentShapeError` naming ``derivative``'s definition when one of
    ``cotangents`` (one per argument of ``args``, ``None`` for none) cannot be brought to
    its argument's shape.

    Example::

        check_cotangent_shapes(df, (np.ones(2),), (np.ones(3),))  # CotangentShapeError
    """
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
        code = getattr(getattr(derivative, "__func__", derivative), "__code__", None)
        origin = where(code.co_filename, code.co_firstlineno) if code else repr(derivative)
        name = getattr(derivative, "__qualname__", "the custom derivative")
        raise CotangentShapeError(
            f"{origin}: the pullback of {name} returned a cotangent of shape {got} for "
            f"argument {position}, of shape {expected}; return one with the argument's "
            "shape (one value per element of the argument)"
        )


def _shape(value: Any) -> tuple[int, ...] | None:
    """The shape of an array, a NumPy scalar or a Python number (a tape's value has one
    too); ``None`` for anything else (a container, an object)."""
    if isinstance(value, (bool, str)) or value is None:
        return None
    if isinstance(value, (int, float, complex, np.generic)):
        return ()
    shape = getattr(value, "shape", None)
    return tuple(shape) if isinstance(shape, tuple) else None
