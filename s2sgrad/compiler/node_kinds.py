"""The nodes of a walk selected by their exact class, with the loop run in C.

A pass that looks at one or two kinds of node among the tens of thousands a function's
walk lists (``[n for n in nodes if type(n) is gast.Call]``) spends most of its time in
that loop; :func:`of_kind` gives the same nodes, in the same order, from ``map`` and
``itertools.compress``, and :func:`kinds_of` the classes present, so that a pass asks
first whether anything it looks for is there at all.

Example::

    calls = list(of_kind(walk(function), gast.Call))
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Iterator
from typing import Any

__all__ = ["of_kind", "of_kinds", "kinds_of", "names_in"]


def of_kind(nodes: list[Any], kind: type) -> Iterator[Any]:
    """The nodes of ``nodes`` whose class is ``kind`` (not a subclass), in their order:
    ``(n for n in nodes if type(n) is kind)``.

    Example::

        [n.id for n in of_kind(walk(function), gast.Name)]
    """
    return itertools.compress(nodes, map(functools.partial(operator.is_, kind), map(type, nodes)))


def of_kinds(nodes: list[Any], kinds: frozenset[type]) -> Iterator[Any]:
    """The nodes of ``nodes`` whose class is one of ``kinds``, in their order:
    ``(n for n in nodes if type(n) in kinds)``.

    Example::

        list(of_kinds(walk(function), frozenset({gast.Dict, gast.Call})))
    """
    return itertools.compress(nodes, map(kinds.__contains__, map(type, nodes)))


def kinds_of(nodes: list[Any]) -> set[type]:
    """The classes of ``nodes``: ``{type(n) for n in nodes}``.

    Example::

        gast.For in kinds_of(walk(function))  # whether the function has a for loop
    """
    return set(map(type, nodes))


def names_in(nodes: list[Any], name: type, context: type) -> set[str]:
    """The ids of the ``name`` nodes (``gast.Name``) of ``nodes`` whose context is of class
    ``context``: ``{n.id for n in nodes if type(n) is name and type(n.ctx) is context}``.

    Example::

        names_in(walk(function), gast.Name, gast.Load)  # every name it reads
    """
    names = list(of_kind(nodes, name))
    contexts = map(type, map(operator.attrgetter("ctx"), names))
    chosen = itertools.compress(names, map(functools.partial(operator.is_, context), contexts))
    return set(map(operator.attrgetter("id"), chosen))
