"""A custom derivative of a function that stores values around it: right, or refused.

``@sg.derivative(of=f)`` runs ``df`` where differentiated code calls ``f``. If ``f`` stores
what it computes around it (``HISTORY.append(y)``, ``layer.last = y``) and its caller
reads that back, two things go wrong: ``df`` computes the stored value plainly (calling
``f`` itself), so it carries no derivative where it is read back; or ``df`` does not call
``f`` at all, so nothing is stored and the caller reads a stale value. Both are refused
where ``df`` runs, naming ``f``'s line: a new number stored in what ``f`` and ``df`` keep
around them (``runtime/kept_states``) while ``df`` ran, or ``f``'s code storing around it
(by its instructions) and ``df`` not calling ``f``. Counts and text stored stay allowed.
The states are walked once per derivative (and again where a function walked runs other
code, or a global or closure variable it reads holds another object), so a function that keeps
nothing pays a lookup per call.

Example::

    custom_derivative(f, checked_derivative(f, df))  # what controls.derivative registers
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Iterable
from typing import Any

from s2sgrad.errors import UnsupportedError, where
from s2sgrad.running import code_of
from s2sgrad.runtime.kept_states import KeptStates

__all__ = ["checked_derivative", "checked_jvp", "note_call"]

# id of a function whose custom derivative is running -> how often it was called since
_CALLS: dict[int, int] = {}


def note_call(function: Any) -> None:
    """Count a call of ``function`` (a function with a custom derivative calls it first)."""
    key = id(function)
    if key in _CALLS:
        _CALLS[key] += 1


def checked_derivative(of: Any, derivative: Callable, runs_of: bool = False) -> Callable:
    """``derivative(*args) -> (value, pullback)``, refusing what ``of`` and it store around
    them (see the module's docstring); ``runs_of``: the derivative is ``of``'s own code
    (``custom_gradient``), which cannot leave a store of ``of``'s out.

    Example::

        checked = checked_derivative(f, df)
        value, pullback = checked(x)  # df(x), or UnsupportedError naming f's line
    """

    walked: list = [None]  # the kept states, walked again where no longer current

    @functools.wraps(derivative)
    def checked(*args: Any, **kwargs: Any) -> Any:
        values = (*args, *kwargs.values()) if kwargs else args
        return _run(of, derivative, walked, values, values, runs_of, args, kwargs)

    return checked


def checked_jvp(of: Any, jvp: Callable, runs_of: bool = False) -> Callable:
    """``jvp(primals, tangents) -> (value, tangent)``, checked as :func:`checked_derivative`
    checks a derivative (``runs_of``: it runs ``of``'s code, as a checkpoint's does).

    Example::

        checked_jvp(f, f_jvp)((x,), (dx,))
    """

    walked: list = [None]

    @functools.wraps(jvp)
    def checked(primals: tuple, tangents: tuple) -> Any:
        given = (primals, tangents, *primals, *tangents)
        return _run(of, jvp, walked, tuple(primals), given, runs_of, (primals, tangents), {})

    return checked


def _run(
    of: Any,
    derivative: Callable,
    walked: list,
    values: Iterable,
    given: tuple,
    runs_of: bool,
    args: tuple,
    kwargs: dict,
) -> Any:
    """``derivative(*args, **kwargs)``, checked; ``walked``: the :class:`KeptStates` of
    ``of`` and ``derivative``, made at the first call; ``values``: ``of``'s arguments, whose
    dicts and objects are kept too; ``given``: what the call was given, which it may
    store as it is (a record of its calls)."""
    kept = walked[0]
    if kept is None or not kept.current():  # walked once, again where it changed
        kept = walked[0] = KeptStates(of, also=(derivative,))
    kept = kept.with_arguments(values)
    skipping = not runs_of and kept.may_store()
    if not skipping and kept.empty():
        return derivative(*args, **kwargs)  # it keeps nothing around it
    before = kept.note()
    key = id(of)
    outer = _CALLS.get(key)
    _CALLS[key] = 0
    try:
        result = derivative(*args, **kwargs)
    finally:
        calls = _CALLS.pop(key)
        if outer is not None:  # (a call of f's inside another's derivative)
            _CALLS[key] = outer + calls
    after = kept.note()
    if kept.stored_numbers(before, after, given=given):
        raise _stores_numbers(of, derivative)
    if skipping and not _ran(of, calls, kept, before, after):
        raise _leaves_out_stores(of, derivative)
    return result


def _ran(of: Any, calls: int, kept: KeptStates, before: list, after: list) -> bool:
    """Whether ``of`` ran (and could store what it stores) while its derivative ran: a
    Python function counts its calls (``controls``' dispatcher); for another callable, what
    it keeps changed."""
    if isinstance(of, types.FunctionType):
        return calls > 0
    return kept.stored_numbers(before, after, lambda value: True)


def _stores_numbers(of: Any, derivative: Callable) -> UnsupportedError:
    error = UnsupportedError(
        f"{_described(of)} has a custom derivative ({_name(derivative)}) and stores numbers "
        "around it (in a list or dict it names, an attribute, a global or closure variable "
        "it assigns): the custom derivative computes them without following their "
        "derivative, so where they are read back they would carry none. Return the values "
        "instead of storing them (store them after the differentiated call), or differentiate "
        "it without its custom derivative (sg.forget_derivative)"
    )
    error.tape_cannot_either = True  # the tape calls the same derivative
    return error


def _leaves_out_stores(of: Any, derivative: Callable) -> UnsupportedError:
    name = _name(of)
    error = UnsupportedError(
        f"{_described(of)} stores values around it (in a list or dict it names, an "
        f"attribute, a global or closure variable it assigns), and its custom derivative "
        f"{_name(derivative)} does not call {name}: what its caller reads back would be "
        f"stale. Call {name} in {_name(derivative)} (counts and text it stores are kept; "
        "numbers are refused), or return the values instead of storing them"
    )
    error.tape_cannot_either = True
    return error


def _described(function: Any) -> str:
    """``file:line: name`` of ``function``."""
    code = code_of(getattr(function, "__wrapped__", function)) or code_of(function)
    if code is None:
        return _name(function)
    return f"{where(code.co_filename, code.co_firstlineno)}: {_name(function)}"


def _name(function: Any) -> str:
    return getattr(function, "__qualname__", None) or repr(function)
