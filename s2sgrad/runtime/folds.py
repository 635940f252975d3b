"""``functools.reduce(f, items[, initial])`` of values being differentiated, resolved when it
runs: the chain of calls ``acc = f(acc, item)``, each differentiated as a call dispatched at
run time (``dispatch`` hands its own dispatchers in), over a list, a tuple or the rows of an
array.

Example::

    value, pullback = fold_vjp(dispatch, (np.multiply, [x, y, z]), tape=False)
    _, (dx, dy, dz) = pullback(1.0)[:2]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from s2sgrad.runtime.core import CotangentList, zeros_like_value
from s2sgrad.runtime.forward_pullbacks import PullbackWithTangent

__all__ = ["is_fold", "fold_vjp", "fold_jvp", "fold_pullback_with_tangent"]


def is_fold(function: Any, args: tuple, kwargs: dict) -> bool:
    """Whether ``function(*args, **kwargs)`` is ``functools.reduce(f, items[, initial])``
    over a list, a tuple or an array.

    Example::

        is_fold(functools.reduce, (np.add, [x, y]), {})  # True
    """
    return (
        function is functools.reduce
        and not kwargs
        and len(args) in (2, 3)
        and callable(args[0])
        and isinstance(args[1], (list, tuple, np.ndarray))
    )


def _steps(args: tuple) -> tuple[Any, list, bool]:
    """The first accumulated value, the items folded into it, and whether an initial value
    was given."""
    items = list(args[1])
    if len(args) == 3:
        return args[2], items, True
    if not items:
        functools.reduce(args[0], items)  # raises the TypeError reduce gives
    return items[0], items[1:], False


def fold_vjp(dispatch: Callable, args: tuple, tape: bool) -> tuple[Any, Callable]:
    """``(reduce(*args), pullback)``, ``pullback(g)`` giving one cotangent per argument:
    ``None`` for the function, the items' (a list, or an array of an array's rows), and the
    initial value's.

    Example::

        value, pullback = fold_vjp(dispatch, (np.multiply, [x, y]), tape=False)
    """
    function = args[0]
    accumulated, items, initial = _steps(args)
    pullbacks = []
    for item in items:
        accumulated, pullback = dispatch(function, (accumulated, item), {}, tape)
        pullbacks.append(pullback)

    def fold_pullback(g):
        cotangents = []
        for pullback in reversed(pullbacks):
            g, cotangent = pullback(g)[:2]
            cotangents.append(cotangent)
        cotangents.reverse()
        return _spread(args, g, cotangents, initial)

    return accumulated, fold_pullback


def fold_jvp(dispatch_jvp: Callable, tangents: tuple, args: tuple, tape: bool):
    """``(reduce(*args), its tangent)`` along ``tangents`` (one per argument).

    Example::

        value, tangent = fold_jvp(dispatch_jvp, (None, [dx, dy]), (np.multiply, [x, y]), False)
    """
    function = args[0]
    accumulated, items, initial = _steps(args)
    moving, item_tangents = _tangent_steps(tangents, args, initial)
    for item, item_tangent in zip(items, item_tangents):
        accumulated, moving = dispatch_jvp(
            function, (moving, item_tangent), (accumulated, item), {}, tape
        )
    return accumulated, moving


def fold_pullback_with_tangent(made: Callable, tangents: tuple, args: tuple, tape: bool):
    """``(value, tangent, pullback)`` of ``reduce(*args)`` for forward mode over a gradient:
    ``made(function, args, tangents, kwargs, tape)`` gives each step's, or None (then so
    does this).

    Example::

        fold_pullback_with_tangent(_pullback_with_tangent, tangents, args, tape=False)
    """
    function = args[0]
    accumulated, items, initial = _steps(args)
    moving, item_tangents = _tangent_steps(tangents, args, initial)
    pullbacks = []
    for item, item_tangent in zip(items, item_tangents):
        step = made(function, (accumulated, item), (moving, item_tangent), {}, tape)
        if step is None:
            return None
        accumulated, moving, pullback = step
        pullbacks.append(pullback)

    def fold_pullback(g):
        cotangents = []
        for pullback in reversed(pullbacks):
            g, cotangent = pullback(g)[:2]
            cotangents.append(cotangent)
        cotangents.reverse()
        return _spread(args, g, cotangents, initial)

    def fold_tangent_of_call(g, dg):
        cotangents, moved = [], []
        for pullback in reversed(pullbacks):
            (g, cotangent), (dg, tangent) = (
                tuple(entries[:2]) for entries in pullback.tangent_of_call(g, dg)
            )
            cotangents.append(cotangent)
            moved.append(tangent)
        cotangents.reverse()
        moved.reverse()
        return _spread(args, g, cotangents, initial), _spread(args, dg, moved, initial)

    return accumulated, moving, PullbackWithTangent(fold_pullback, fold_tangent_of_call)


def _tangent_steps(tangents: tuple, args: tuple, initial: bool) -> tuple[Any, list]:
    """The tangent of the first accumulated value and those of the items folded into it."""
    items = list(args[1])
    given = tangents[1] if len(tangents) > 1 else None
    item_tangents = [zeros_like_value(item) for item in items] if given is None else list(given)
    if initial:
        first = tangents[2] if len(tangents) > 2 and tangents[2] is not None else None
        return (zeros_like_value(args[2]) if first is None else first), item_tangents
    return item_tangents[0], item_tangents[1:]


def _spread(args: tuple, first: Any, cotangents: list, initial: bool) -> tuple:
    """One cotangent per argument of ``reduce(function, items[, initial])``: the items'
    in the shape of ``items`` (a list for a list or tuple, an array for an array)."""
    items = args[1]
    of_items = cotangents if initial else [first, *cotangents]
    of_items = [zeros_like_value(i) if c is None else c for c, i in zip(of_items, items)]
    if isinstance(items, np.ndarray):
        gathered: Any = np.zeros_like(items, dtype=np.result_type(items, 0.0))
        for index, cotangent in enumerate(of_items):
            gathered[index] = cotangent
    else:
        gathered = CotangentList(of_items)
    return (None, gathered, first) if initial else (None, gathered)
