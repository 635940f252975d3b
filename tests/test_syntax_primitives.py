"""The shared tree primitives of ``syntax`` (issue 15's transform time: every pass calls
them) answer exactly as the plain code they replace. The walk: the same nodes, in the same
order, for every kind of node (annotated parameters, nested functions and lambdas,
``match``, ``**`` in dict displays, operators). The builders: the nodes gast's
constructors make, field for field, placed where ``located`` placed them; ``clone``: a
copy of every node but operators and contexts."""

from __future__ import annotations

import gast

from s2sgrad.compiler.syntax import (
    assign,
    call,
    clone,
    clone_rewriting,
    constant,
    load,
    located,
    store,
    walk,
)

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


def _reference(node):
    # the walk as it was first written: every node pushed, its children listed when popped
    found, stack = [node], [node]
    while stack:
        current = stack.pop()
        for field in current._fields:
            value = current.__dict__.get(field)
            for item in value if type(value) is list else [value]:
                if isinstance(item, gast.AST) and not isinstance(item, gast.expr_context):
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


def test_walk_as_the_plain_walk_in_order():
    for tree in _trees():
        assert [id(n) for n in walk(tree)] == [id(n) for n in _reference(tree)]


def test_walk_finds_what_gast_walk_finds():
    tree = gast.parse(SOURCE)
    contexts = (gast.Load, gast.Store, gast.Del, gast.Param)
    everything = {id(n) for n in gast.walk(tree) if not isinstance(n, contexts)}
    assert {id(n) for n in walk(tree)} == everything


def _same(made, expected):
    assert type(made) is type(expected)
    assert list(made.__dict__) == list(expected.__dict__)  # the same fields, in order
    assert gast.dump(made) == gast.dump(expected)


def test_builders_make_what_the_constructors_make():
    def name(text, ctx):
        return gast.Name(id=text, ctx=ctx, annotation=None, type_comment=None)

    _same(load("x"), name("x", gast.Load()))
    _same(store("y"), name("y", gast.Store()))
    _same(constant(1.5), gast.Constant(value=1.5, kind=None))
    _same(
        assign("y", load("x")),
        gast.Assign(
            targets=[name("y", gast.Store())], value=name("x", gast.Load()), type_comment=None
        ),
    )
    _same(
        call(load("f"), [load("x")], {"axis": constant(0)}),
        gast.Call(
            func=name("f", gast.Load()),
            args=[name("x", gast.Load())],
            keywords=[gast.keyword(arg="axis", value=gast.Constant(value=0, kind=None))],
        ),
    )
    _same(
        call("np.sum"), gast.Call(func=gast.parse("np.sum", mode="eval").body, args=[], keywords=[])
    )


def test_located_places_a_statement_and_those_of_its_blocks():
    old = gast.parse("y = 1").body[0]
    old.lineno, old.col_offset, old.end_lineno, old.end_col_offset = 7, 4, 8, 2
    plain = located(assign("a", constant(1)), old)
    assert (plain.lineno, plain.col_offset, plain.end_lineno, plain.end_col_offset) == (7, 4, 8, 2)
    placed = gast.parse("y = 1").body[0]
    placed.lineno = 3
    assert located(placed, old).lineno == 3  # a statement with a place keeps it
    compound = gast.If(test=load("c"), body=[assign("b", load("c"))], orelse=[placed])
    located(compound, old)
    assert (compound.lineno, compound.body[0].lineno, compound.orelse[0].lineno) == (7, 7, 3)
    assert located(assign("a", constant(1)), None).__dict__.get("lineno") is None


def test_clone_copies_every_node_but_operators_and_contexts():
    tree = gast.parse(SOURCE)
    tree.body[0].body[0].facts = [load("attached")]  # what a pass attaches is copied too
    copied = clone(tree)
    assert gast.dump(copied) == gast.dump(tree)
    assert copied.body[0].body[0].facts[0].id == "attached"
    assert copied.body[0].body[0].facts[0] is not tree.body[0].body[0].facts[0]
    shared = (gast.expr_context, gast.operator, gast.unaryop, gast.cmpop, gast.boolop)
    originals = {id(n) for n in gast.walk(tree) if not isinstance(n, shared)}
    for old, new in zip(gast.walk(tree), gast.walk(copied)):
        assert type(old) is type(new)
        assert list(old.__dict__) == list(new.__dict__)
        assert isinstance(new, shared) or id(new) not in originals
    rewritten = clone_rewriting(tree, lambda n: n)  # the same copy, through the other path
    assert gast.dump(rewritten) == gast.dump(copied)
