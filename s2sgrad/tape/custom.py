"""Custom derivatives on the tape: a call whose derivative the user supplied.

A primitive registered with :func:`s2sgrad.rules.registry.custom_derivative` has
``rule.custom(*args) -> (value, pullback)``. When a recording tape tracks one of its
arguments, the tape calls ``rule.custom`` on the plain values (so the value is computed
once and nothing inside it is recorded) and records one entry whose VJP is the returned
pullback. Functions NumPy dispatches to tape values (ufuncs, array functions) reach this
through :func:`s2sgrad.tape.values.apply_rule`; Python functions call :func:`call_custom`
themselves (see :mod:`s2sgrad.controls`).

For a derivative of a derivative (an outer tape tracks the arguments while the backward
pass runs), the recorded pullback only knows plain values, so the entry calls
``rule.custom`` again on the tape values: the outer tape then records the forward
computation and the pullback, and differentiates through both.

Example::

    out = call_custom(my_exp, get_rule(my_exp), (x,), {})  # recorded with my_exp's pullback
"""

from __future__ import annotations

import contextvars
from typing import Any

from s2sgrad import numpy_signatures
from s2sgrad.errors import NonDifferentiableError
from s2sgrad.rules.registry import Rule
from s2sgrad.tape.recording import RECORDING, is_traced, live_serials

__all__ = ["CustomCall", "CUSTOM", "call_custom", "is_recorded", "called_by_tape"]

_CALLED_BY_TAPE = contextvars.ContextVar("s2sgrad_called_by_tape", default=False)


def called_by_tape() -> bool:
    """Whether the custom derivative running now was called by the tape (not generated code).

    A custom derivative that differentiates something itself (``checkpoint`` recomputing
    in its pullback) uses it to stay on the engine that called it.

    Example::

        mode = "tape" if called_by_tape() else "auto"
    """
    return _CALLED_BY_TAPE.get()


class CustomCall:
    """What one custom-derivative call left for the backward pass: its pullback.

    Recorded as the first argument of a :data:`CUSTOM` entry.
    """

    __slots__ = ("rule", "pullback", "kwargs")

    def __init__(self, rule: Rule, pullback: Any, kwargs: dict) -> None:
        self.rule = rule
        self.pullback = pullback
        self.kwargs = kwargs

    def cotangents(self, g: Any, args: tuple) -> tuple:
        """One cotangent per argument (``None`` for none), for the output cotangent ``g``."""
        pullback = self.pullback
        if _any_traced(args):  # a higher derivative: redo it where it is seen
            token = _CALLED_BY_TAPE.set(True)
            try:
                _, pullback = self.rule.custom(*args, **self.kwargs)
            finally:
                _CALLED_BY_TAPE.reset(token)
        result = pullback(g)
        if not isinstance(result, tuple):
            result = (result,)
        return tuple(result[: len(args)]) + (None,) * (len(args) - len(result))

    def __repr__(self) -> str:
        return f"CustomCall({getattr(self.rule.primitive, '__name__', self.rule.primitive)!r})"


def _any_traced(values) -> bool:
    """Whether a recording tape tracks one of ``values`` or a value inside them."""
    for value in values:
        if isinstance(value, (list, tuple)):
            if _any_traced(value):
                return True
        elif isinstance(value, dict):
            if _any_traced(value.values()):
                return True
        elif is_traced(value):
            return True
    return False


def _custom_vjp(g, ans, call, *args):
    return (None, *call.cotangents(g, args))


#: The rule every custom-derivative entry is recorded with; its first argument is a CustomCall.
CUSTOM = Rule("custom derivative", vjp=_custom_vjp, inline_vjp=False)


def is_recorded(args: tuple, kwargs: dict | None = None) -> bool:
    """Whether a recording tape tracks a value among ``args`` and ``kwargs`` (or inside them).

    A Variable counts while any tape records, since reading it may start the watching.

    Example::

        is_recorded((np.ones(2),))  # False
    """
    if not RECORDING:
        return False
    from s2sgrad.tape.values import _any_tracked

    return _any_tracked(args) or bool(kwargs) and _any_tracked(kwargs.values())


def call_custom(primitive: Any, rule: Rule, args: tuple, kwargs: dict | None = None) -> Any:
    """Call ``primitive`` through its custom derivative and record the pullback.

    Tape values passed by keyword are moved to their positions first (the pullback
    returns cotangents for positional arguments).

    Example::

        y = call_custom(my_exp, get_rule(my_exp), (x,), {})
    """
    from s2sgrad.tape.values import _any_tracked, _scan, _wrap, user_location, value_of

    kwargs = dict(kwargs or {})
    if kwargs and _any_tracked(kwargs.values()):
        args, kwargs = _positional(primitive, args, kwargs)
        if _any_tracked(kwargs.values()):
            raise NonDifferentiableError(
                f"{user_location()}: {getattr(primitive, '__qualname__', primitive)} got a "
                "value being differentiated as a keyword-only argument, which its custom "
                "derivative cannot return a cotangent for; pass it positionally."
            )
    recorded, raw, tapes = _scan(tuple(args))
    plain_kwargs = value_of(kwargs)
    token = _CALLED_BY_TAPE.set(True)
    try:
        value, pullback = rule.custom(*raw, **plain_kwargs)
    finally:
        _CALLED_BY_TAPE.reset(token)
    serials = live_serials(tapes)
    if not serials:
        return value
    out = _wrap(value, serials)
    entry = (CUSTOM, (CustomCall(rule, pullback, plain_kwargs), *recorded), None, out)
    for serial in serials:
        RECORDING[serial]._entries.append(entry)
    return out


def _positional(primitive: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Bind ``args`` and ``kwargs`` to ``primitive``'s parameters, positionally where possible."""
    try:
        bound = numpy_signatures.signature(primitive).bind(*args, **kwargs)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{getattr(primitive, '__name__', primitive)}: {error}") from None
    return bound.args, bound.kwargs
