"""``functools.partial`` objects called by generated code, read as they are at each call.

A partial made at module level (``scaled = functools.partial(helper, k=3.0)``) and called
by the function being differentiated has no source of its own: the call is its function's,
with the bound arguments first and the bound keywords under the call's own. The dispatch
at run time (:mod:`.dispatch`) differentiates ``helper`` with them, so a partial rebound,
or whose keywords changed, between two calls is differentiated as it is then. The bound
values are constants of the call: their cotangents are dropped, their tangents zero.

Example::

    target, args, kwargs, bound = partial_call(functools.partial(f, 2.0, k=1), (x,), {})
    # f, (2.0, x), {"k": 1}, 1
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["is_partial", "partial_call"]


def is_partial(function: Any) -> bool:
    """Whether ``function`` is a ``functools.partial`` itself (not a subclass, which may
    call its function otherwise)."""
    return type(function) is functools.partial


def partial_call(
    function: functools.partial, args: tuple, kwargs: dict
) -> tuple[Any, tuple, dict, int]:
    """The function a partial calls, the arguments and keywords it calls it with, and how
    many of the arguments the partial bound (they come first)."""
    bound = tuple(function.args)
    return function.func, bound + tuple(args), {**function.keywords, **kwargs}, len(bound)
