"""The pullback of a call dispatched at run time, made while forward mode runs over a
gradient (``hvp``, ``hessian``, ``jvp`` of ``grad``): it carries the tangent of what it was
made from, so a later forward-mode call of it follows both its cotangent and the values the
call was made with.

Example::

    pullback = PullbackWithTangent(lambda g: (2 * x * g,), twice_x_jvp)
    pullback(1.0)  # (2 * x,): the cotangents, as the plain pullback
    pullback.tangent_of_call(1.0, 0.0)  # ((2 * x,), (2 * dx,)): and their tangent
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["PullbackWithTangent"]


class PullbackWithTangent:
    """A pullback ``g -> cotangents`` and ``(g, dg) -> (cotangents, their tangent)``, the
    second following the values the pullback was made from along their tangents.

    Example::

        pullback = PullbackWithTangent(backward, backward_jvp)
        cotangents = pullback(g)
        cotangents, tangents = pullback.tangent_of_call(g, dg)
    """

    __slots__ = ("_pullback", "_tangent_of_call", "__weakref__")

    def __init__(self, pullback: Callable, tangent_of_call: Callable) -> None:
        self._pullback = pullback
        self._tangent_of_call = tangent_of_call

    def __call__(self, g: Any) -> Any:
        return self._pullback(g)

    def tangent_of_call(self, g: Any, dg: Any) -> tuple[Any, Any]:
        """``(self(g), its tangent along dg and the tangents of the values it was made
        from)``."""
        return self._tangent_of_call(g, dg)
