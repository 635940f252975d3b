"""The shared tree walks of ``syntax`` (issue 15's transform time: every pass calls them)
answer exactly as the plain walk they replace: the same nodes, in the same order, for
every kind of node (annotated parameters, nested functions and lambdas, ``match``,
``**`` in dict displays, operators) and each choice of entering functions and operators."""

from __future__ import annotations

import gast
import pytest

from s2sgrad.compiler import syntax
from s2sgrad.compiler.syntax import walk

SOURCE = """
def f(x: 'float', *rest: int, scale=2.0, **options) -> float:
    y: float = -x ** 2 + (x if x > 0 else 1) - (not x)
    d = {**options, 'a': y, 'b': [t for t in rest if t]}
    g = lambda v, w=y: v @ w
    def inner(a: int = 1):
        nonlocal y
        return a + y
    class Box:
        size = 3
    match d:
        case {'a': 1, **more}:
            y = more
        case [first, *others] if first:
            y = others
        case Box(size=s) | None:
            y = s
    try:
        del d['a']
    except (KeyError, ValueError) as error:
        raise RuntimeError(f'{error!r:>10}') from error
    with open(y) as handle, open(x):
        y = handle[1:2, ..., None]
    global z
    import numpy as np
    from os import path as p
    assert y, 'message'
    async def later():
        await later()
    return inner(g(x, y)) and x or y
"""


def _reference(node, into_functions, skip_operators):
    # the walk as it was first written: every node pushed, its fields read when popped
    plans = syntax._OPERATOR_FREE if skip_operators else syntax._NODE_FIELDS
    found, stack = [node], [node]
    while stack:
        current = stack.pop()
        kind = type(current)
        if not into_functions and kind in syntax.SCOPES and current is not node:
            continue
        fields = plans.get(kind)
        if fields is None:
            fields = syntax._node_fields(kind, skip_operators)
        for field in fields:
            value = current.__dict__.get(field)
            for item in value if type(value) is list else [value]:
                if item is not None and type(item) not in syntax._LEAVES:
                    found.append(item)
                    stack.append(item)
    return found


def _trees():
    module = gast.parse(SOURCE)
    function = module.body[0]
    annotated = gast.Name(id="a", ctx=gast.Load(), annotation=None, type_comment=None)
    annotated.annotation = gast.Name(id="hint", ctx=gast.Load(), annotation=None, type_comment=None)
    bare = gast.Name(id="b", ctx=gast.Load())  # made without the optional fields
    made = gast.Tuple(elts=[annotated, bare], ctx=gast.Load())
    return [module, function, *function.body, made, bare]


@pytest.mark.parametrize("into_functions", [True, False])
@pytest.mark.parametrize("skip_operators", [True, False])
def test_nodes_as_the_plain_walk_in_order(into_functions, skip_operators):
    for tree in _trees():
        expected = _reference(tree, into_functions, skip_operators)
        found = syntax._nodes(tree, into_functions, skip_operators)
        assert [id(n) for n in found] == [id(n) for n in expected]


def test_walk_finds_what_gast_walk_finds():
    tree = gast.parse(SOURCE)
    contexts = (gast.Load, gast.Store, gast.Del, gast.Param)
    everything = {id(n) for n in gast.walk(tree) if not isinstance(n, contexts)}
    assert {id(n) for n in walk(tree)} == everything
