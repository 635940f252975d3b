"""Custom derivatives on the tape: a call whose derivative the user supplied.

A primitive registered with :func:`s2sgrad.rules.registry.custom_derivative` has
``rule.custom(*args) -> (value, pullback)``. When a recording tape tracks one of its
arguments, the tape calls ``rule.custom`` on the plain values (so the value is computed
once and nothing inside it is recorded) and records one entry whose VJP is the returned
pullback. Functions NumPy dispatches to tape values (ufuncs, array functions) reach this
through :func:`s2sgrad.tape.values.apply_rule`; Python functions call
:func:`s2sgrad.tape.values.call_custom` themselves (see :mod:`s2sgrad.controls`). This
module holds what such an entry records.

For a derivative of a derivative (an outer tape tracks the arguments while the backward
pass runs), the recorded pullback only knows plain values, so the entry calls
``rule.custom`` again on the tape values: the outer tape then records the forward
computation and the pullback, and differentiates through both.

Example::

    entry = (CUSTOM, (CustomCall(rule, pullback, {}), x), None, out)  # what call_custom records
"""

from __future__ import annotations

import contextvars
from typing import Any

from s2sgrad.rules.registry import Rule
from s2sgrad.runtime.core import rebuild_sequence, zeros_like_value
from s2sgrad.runtime.custom_cotangents import check_cotangent_shapes, cotangent_tuple
from s2sgrad.runtime.replays import DrawsAtStart
from s2sgrad.tape.recording import is_traced

__all__ = ["CustomCall", "CUSTOM", "CALLED_BY_TAPE", "called_by_tape"]

# set while the tape calls a custom derivative (see ``called_by_tape``)
CALLED_BY_TAPE = contextvars.ContextVar("s2sgrad_called_by_tape", default=False)


def called_by_tape() -> bool:
    """Whether the custom derivative running now was called by the tape (not generated code).

    A custom derivative that differentiates something itself (``checkpoint`` recomputing
    in its pullback) uses it to stay on the engine that called it.

    Example::

        mode = "tape" if called_by_tape() else "auto"
    """
    return CALLED_BY_TAPE.get()


class CustomCall:
    """What one custom-derivative call left for the backward pass: its pullback, and the
    states its random generators started from (``draws``).

    Recorded as the first argument of a :data:`CUSTOM` entry.
    """

    __slots__ = ("rule", "pullback", "kwargs", "draws", "traced")

    def __init__(
        self, rule: Rule, pullback: Any, kwargs: dict, draws: DrawsAtStart, args: tuple = ()
    ) -> None:
        self.rule = rule
        self.pullback = pullback
        self.kwargs = kwargs
        self.draws = draws
        # how many arguments the tape tracked when it recorded the call: a pullback's one
        # value is refused where several are differentiated (cotangent_tuple)
        self.traced = sum(1 for a in args if _any_traced([a]))

    def cotangents(self, g: Any, args: tuple) -> tuple:
        """One cotangent per argument (``None`` for none), for the output cotangent ``g``."""
        pullback = self.pullback
        # what runs again (redone below, or a pullback called again) draws the same numbers
        now = self.draws.rewind()
        try:
            if _any_traced(args):  # a higher derivative: redo it where it is seen
                token = CALLED_BY_TAPE.set(True)
                try:
                    _, pullback = self.rule.part("custom")(*args, **self.kwargs)
                finally:
                    CALLED_BY_TAPE.reset(token)
            result = pullback(g)
        finally:
            self.draws.restore(now)
        result = cotangent_tuple(self.rule.custom, result, args, self.traced)
        check_cotangent_shapes(self.rule.custom, result, args)
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
    return (None, *call.cotangents(_filled(g, ans), args))


def _filled(g: Any, ans: Any) -> Any:
    """``g`` with zeros for the parts of a structured output the backward pass left without
    a cotangent (``None``): a pullback sees a whole cotangent, as from generated code."""
    if g is None:
        return zeros_like_value(ans)
    if isinstance(g, (list, tuple)) and isinstance(ans, (list, tuple)) and len(g) == len(ans):
        return rebuild_sequence(g, [_filled(part, value) for part, value in zip(g, ans)])
    if isinstance(g, dict) and isinstance(ans, dict):
        return {key: _filled(g.get(key), value) for key, value in ans.items()}
    return g


#: The rule every custom-derivative entry is recorded with; its first argument is a CustomCall.
CUSTOM = Rule("custom derivative", vjp=_custom_vjp, inline_vjp=False)
