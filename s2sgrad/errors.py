"""The exceptions s2sgrad raises; every message names the user's file and line."""

from __future__ import annotations

__all__ = [
    "S2SGradError",
    "UnsupportedError",
    "NonDifferentiableError",
    "where",
    "no_forward_derivative",
]


class S2SGradError(Exception):
    """Base class of every error s2sgrad raises about the user's code."""


class UnsupportedError(S2SGradError):
    """A construct the source transformer cannot differentiate."""


class NonDifferentiableError(S2SGradError):
    """A call with no derivative rule and no source to transform."""


def where(filename: str | None, line: int | None) -> str:
    """Format a location the way tracebacks do, for the start of an error message.

    Example::

        where("model.py", 12)  # 'model.py:12'
    """
    if not filename:
        return "<unknown location>"
    return f"{filename}:{line}" if line else filename


def no_forward_derivative(function, location: str | None = None) -> NonDifferentiableError:
    """The error for forward mode meeting a custom derivative that has no ``jvp=``.

    Example::

        raise no_forward_derivative(softplus, "model.py:12")
    """
    name = getattr(function, "__qualname__", function)
    start = f"{location}: " if location else ""
    return NonDifferentiableError(
        f"{start}{name} has a custom derivative for reverse mode only; give "
        "@s2sgrad.derivative a jvp= companion to use it in forward mode"
    )
