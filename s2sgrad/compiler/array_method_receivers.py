"""``r.sum(x)``, classified as ``np.ndarray.sum(r, x)``, where ``r`` may not be an array.

A method call on a name is read as the ``np.ndarray`` method of that name, whose rule
differentiates the receiver and the value operands (``c.dot(x)``, ``c.clip(lo, x)``) but
not its axes, shapes or dtypes. A receiver not differentiated, given a differentiated value
where the array method takes an axis, is no array: ``numpy`` itself (``m = np; m.sum(x)``)
or an object of the user's with a method of that name (``acc.sum(x)``). Such a call is
dispatched by what ``r.sum`` is when it runs (the rule read it as an axis: zero gradient).
A differentiated value where the method takes one (``acc.dot(x)``) fits an array as well
as such an object: the rule stays, and ``runtime.array_receiver`` checks the receiver
where the call runs (``receiver_to_check``).

Example::

    called_on_a_constant(statement, operation, varied)  # m.sum(x * x): True
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import gast
import numpy as np

from s2sgrad.compiler.operations import Operation

__all__ = ["called_on_a_constant", "receiver_to_check"]

# the parameters of np.ndarray's methods that take values (c.dot(x), c.clip(lo, x)): the
# others take axes, shapes, orders and dtypes, which a differentiated value never is
_OPERANDS = frozenset({"other", "min", "max", "choices", "values", "value"})
_OPERANDS_WITHOUT_SIGNATURE = {  # NumPy 1.x gives some methods no signature
    "dot": ("other",),
    "clip": ("min", "max"),
    "choose": ("choices",),
    "put": ("indices", "values"),
    "fill": ("value",),
}


def called_on_a_constant(
    statement: gast.stmt, operation: Operation, varied: Callable[[gast.expr], bool]
) -> bool:
    """Whether ``statement``'s value ``r.method(args)``, classified as ``operation`` (the
    ``np.ndarray`` method), has a receiver ``r`` that ``varied`` says is not
    differentiated and a differentiated argument where the array method takes no value.

    Example::

        called_on_a_constant(parse_statement("y = m.sum(t1)"), operation, varied)  # True
    """
    value = getattr(statement, "value", None)
    if not (isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute)):
        return False
    receiver, method = value.func.value, value.func.attr
    if not isinstance(receiver, gast.Name) or operation.args[:1] != [receiver]:
        return False
    if getattr(np.ndarray, method, None) is not operation.primitive or varied(receiver):
        return False
    names = _parameters(method) + ("",) * len(value.args)  # "": an axis
    given = [*zip(names, value.args), *((k.arg, k.value) for k in value.keywords)]
    # a tuple or list written out is a shape or axes (X.reshape((-1, k(W)))), whose entries
    # the analysis may take for differentiated where a helper gives an integer: left to the
    # rule, which gives them no derivative, as before
    return any(
        varied(v) and n not in _OPERANDS and type(v) not in (gast.Tuple, gast.List)
        for n, v in given
    )


def receiver_to_check(
    statement: gast.stmt, operation: Operation, varied: Callable[[gast.expr], bool]
) -> str | None:
    """The name ``r`` of ``statement``'s value ``r.method(args)``, differentiated by the
    rule of ``operation`` (the ``np.ndarray`` method), when ``r`` is not differentiated
    and a differentiated argument fills a slot the method takes values in: an array there
    (``X.dot(w)``) and an object of the user's (``acc.dot(x)``) look alike until the code
    runs, where ``array_receiver(r, "dot")`` tells them apart; else ``None``.

    Example::

        receiver_to_check(parse_statement("y = acc.dot(t1)"), operation, varied)  # "acc"
    """
    value = getattr(statement, "value", None)
    if not (isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute)):
        return None
    receiver, method = value.func.value, value.func.attr
    if not isinstance(receiver, gast.Name) or operation.args[:1] != [receiver]:
        return None
    if getattr(np.ndarray, method, None) is not operation.primitive or varied(receiver):
        return None
    names = _parameters(method) + ("",) * len(value.args)
    given = [*zip(names, value.args), *((k.arg, k.value) for k in value.keywords)]
    if any(varied(v) and n in _OPERANDS for n, v in given):
        return receiver.id
    return None


@functools.lru_cache(maxsize=256)
def _parameters(method: str) -> tuple[str, ...]:
    """The names of the positional parameters after ``self`` of ``np.ndarray.<method>``
    (``*shape`` repeated for a method taking any number)."""
    try:
        parameters = list(inspect.signature(getattr(np.ndarray, method)).parameters.values())
    except (TypeError, ValueError):
        return _OPERANDS_WITHOUT_SIGNATURE.get(method, ())
    names: list[str] = []
    for parameter in parameters[1:]:
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            return (*names, *[parameter.name] * 32)
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            names.append(parameter.name)
    return tuple(names)
