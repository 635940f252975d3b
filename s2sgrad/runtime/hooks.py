"""What the runtime needs at run time from the layers above it, which fill it in when they
are imported.

The tape and the source transformer are built on the runtime (they import its helpers), so
the runtime cannot import them; yet generated code calls the runtime for what only they can
do. The tape registers its value type and its VJP (:func:`register_tape`, from
``s2sgrad.tape``), the compiler its ``derivative`` (:func:`register_transformer`, from
``s2sgrad.compiler.pipeline``). ``import s2sgrad`` imports both, so both are in place
before any generated code runs; until the tape registers, no value is a tape value.

Example::

    from s2sgrad.runtime import hooks

    hooks.value_of(x)  # x's plain value if x is a tape value, else x
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = [
    "TapeValue",
    "register_tape",
    "register_tape_primal",
    "register_transformer",
    "tape_primal",
    "value_of",
]


class _NoTapeValue:
    """The tape's value type until the tape registers it: nothing is an instance."""


TapeValue: type = _NoTapeValue
_value_of: Callable[[Any], Any] = lambda x: x  # noqa: E731


def _unregistered(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("s2sgrad's tape or source transformer is not imported yet")


tape_vjp: Callable[..., tuple[Any, Callable]] = _unregistered
derivative: Callable[..., Any] = _unregistered
_tape_primal: Callable[[Any], Any] = lambda f: f  # noqa: E731


def register_tape(
    value_type: type, value_of: Callable[[Any], Any], vjp: Callable[..., tuple[Any, Callable]]
) -> None:
    """The tape's value type, how to unwrap its values, and ``tape_vjp``.

    Example::

        register_tape(TapeValue, value_of, tape_vjp)  # in s2sgrad.tape
    """
    global TapeValue, _value_of, tape_vjp
    TapeValue, _value_of, tape_vjp = value_type, value_of, vjp


def register_transformer(derive: Callable[..., Any]) -> None:
    """The source transformer's ``derivative(function, wrt, kind, ...)``.

    Example::

        register_transformer(derivative)  # in s2sgrad.compiler.pipeline
    """
    global derivative
    derivative = derive


def register_tape_primal(rewrite: Callable[[Any], Any]) -> None:
    """The compiler's rewrite of a function for the tape to run in its place (its
    checkpointed loops made calls of ``run_checkpointed``).

    Example::

        register_tape_primal(primal_for_tape)  # in s2sgrad.compiler.passes.checkpointed_loops
    """
    global _tape_primal
    _tape_primal = rewrite


def tape_primal(f: Any) -> Any:
    """The function the tape runs for ``f``: ``f`` itself unless the compiler rewrote it.

    Example::

        tape_primal(f)(*args)
    """
    return _tape_primal(f)


def value_of(x: Any) -> Any:
    """The plain value of a tape value (containers element by element); ``x`` itself for
    anything else.

    Example::

        value_of(2.0)  # 2.0
    """
    return _value_of(x)
