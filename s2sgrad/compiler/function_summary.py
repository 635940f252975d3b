"""One summary of a function's tree, made in one walk, that the normal form's passes ask
before they look at the function themselves.

Most passes rewrite a construct that most functions do not have (``match``, ``np.piecewise``,
``d[k] = v`` of a dict made here, ``items.pop(i)``, ``a[i][j] = v`` ...). Each used to walk
the whole function to find out; a :class:`FunctionSummary` answers "is any of it there?" in
O(1) from the node classes, names, attributes, called names and keywords present. Its
answers are exact facts of the tree it was made from: a pass may skip only when the summary
proves that it has nothing to do, and a summary is made anew once a pass changed the tree.

Example::

    summary = FunctionSummary.of(function)
    if summary.mentions("piecewise"):
        ...  # only then look for np.piecewise calls
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import partial
from itertools import compress
from operator import is_

import gast

from s2sgrad.compiler.node_kinds import kinds_of, of_kind, of_kinds
from s2sgrad.compiler.syntax import walk

__all__ = ["FunctionSummary"]

_ID = operator.attrgetter("id")
_ATTR = operator.attrgetter("attr")
_CONTEXT = operator.attrgetter("ctx")
_FUNC = operator.attrgetter("func")
_ARG = operator.attrgetter("arg")
_VALUE = operator.attrgetter("value")
_DEFINITIONS = frozenset({gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef})


def _defines(kinds: set[type]) -> bool:
    return not _DEFINITIONS.isdisjoint(kinds)


@dataclass(frozen=True)
class FunctionSummary:
    """What a function's tree holds, anywhere in it (nested functions and lambdas too).

    ``kinds``: the classes of its nodes; ``names``: the ids of its ``Name`` nodes (any
    context); ``attributes``: the ``attr`` of its ``Attribute`` nodes; ``called_names``:
    the names called directly (``f(...)``); ``keywords``: the names of the keyword
    arguments passed (None for ``**kwargs``); ``rebound``: whether some name is bound
    twice (stored by two ``Name`` nodes, or a ``def`` or ``class`` name among them, the
    function's own name included); ``subscript_stores``: whether an item is
    written (``a[i] = v``, ``a[i] += v``, ``a[i], b = ...``); ``call_statements``: whether a
    statement is a call alone (``np.add.at(t, i, v)``, ``items.append(v)``).
    """

    kinds: frozenset[type]
    names: frozenset[str]
    attributes: frozenset[str]
    called_names: frozenset[str]
    keywords: frozenset[str | None]
    rebound: bool
    subscript_stores: bool
    call_statements: bool

    @classmethod
    def of(cls, node: gast.AST, nodes: list[gast.AST] | None = None) -> FunctionSummary:
        """The summary of ``node``'s tree; ``nodes``: ``walk(node)``, when the caller has it
        (and nothing changed the tree since).

        Example::

            FunctionSummary.of(parse("def f(x):\\n    return x.T").body[0]).attributes
            # frozenset({'T'})
        """
        nodes = walk(node) if nodes is None else nodes
        kinds = kinds_of(nodes)
        name_nodes = list(of_kind(nodes, gast.Name))
        contexts = map(type, map(_CONTEXT, name_nodes))
        stored = list(map(_ID, compress(name_nodes, map(partial(is_, gast.Store), contexts))))
        # a def or class binds its name too (``syntax.names_written`` counts it)
        stored += [d.name for d in of_kinds(nodes, _DEFINITIONS)] if _defines(kinds) else []
        attributes = frozenset(map(_ATTR, of_kind(nodes, gast.Attribute)))
        callees = list(map(_FUNC, of_kind(nodes, gast.Call)))
        named = compress(callees, map(partial(is_, gast.Name), map(type, callees)))
        keywords = (
            frozenset(map(_ARG, of_kind(nodes, gast.keyword)))
            if gast.keyword in kinds
            else frozenset()
        )
        subscript_stores = gast.Subscript in kinds and gast.Store in map(
            type, map(_CONTEXT, of_kind(nodes, gast.Subscript))
        )
        call_statements = gast.Expr in kinds and gast.Call in map(
            type, map(_VALUE, of_kind(nodes, gast.Expr))
        )
        return cls(
            kinds=frozenset(kinds),
            names=frozenset(map(_ID, name_nodes)),
            attributes=attributes,
            called_names=frozenset(map(_ID, named)),
            keywords=keywords,
            rebound=len(stored) != len(set(stored)),
            subscript_stores=subscript_stores,
            call_statements=call_statements,
        )

    def has(self, *kinds: type) -> bool:
        """Whether a node of any of the classes ``kinds`` is there.

        Example::

            summary.has(gast.For, gast.While)  # a loop anywhere
        """
        return not self.kinds.isdisjoint(kinds)

    def mentions(self, name: str) -> bool:
        """Whether ``name`` is there as a name or as an attribute (``piecewise`` or
        ``np.piecewise``).

        Example::

            summary.mentions("piecewise")
        """
        return name in self.names or name in self.attributes
