"""Walks over deeply nested code visit each statement once (issue 15: 90 nested ifs took
quadratic time) and answer as the plain recursive walks do."""

import gast

from s2sgrad.compiler.specialize.path_shapes import names_assigned_in
from s2sgrad.compiler.syntax import nested_statements, walk

SOURCE = """
def f(x, s):
    y = x
    if s > 0:
        y = y + 1
        while s > 1:
            z = y * 2
            if s > 2:
                w = z
            else:
                v = z
        for i in range(3):
            u = i
    else:
        try:
            t = 1
        finally:
            r = 2
    def g(a):
        q = a
    return y
"""


def _recursive(body):
    for statement in body:
        yield statement
        if isinstance(statement, (gast.FunctionDef, gast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                yield from _recursive(inner)


def _function():
    return gast.parse(SOURCE).body[0]


def test_nested_statements_in_source_order():
    body = _function().body
    assert [id(s) for s in nested_statements(body)] == [id(s) for s in _recursive(body)]


def test_nested_statements_of_deep_nesting_each_once():
    source = "def f(x):\n" + "".join(
        "    " * (k + 1) + f"if x > {k}:\n" + "    " * (k + 2) + f"y{k} = x\n" for k in range(60)
    )
    body = gast.parse(source).body[0].body
    found = list(nested_statements(body))
    assert len(found) == 120 and len({id(s) for s in found}) == 120


def _plain_assigned(region):
    return {
        node.id
        for statement in [*region.body, *region.orelse]
        for node in walk(statement)
        if type(node) is gast.Name and type(node.ctx) is gast.Store
    }


def test_names_assigned_in_with_shared_answers_as_plain_walk():
    regions = [n for n in walk(_function()) if isinstance(n, (gast.If, gast.While))]
    known: dict = {}
    # innermost first and outermost first: the remembered answers must not change either
    for order in (regions, regions[::-1]):
        for region in order:
            assert names_assigned_in(region, known) == _plain_assigned(region)
            assert names_assigned_in(region) == _plain_assigned(region)


EVERY_BLOCK = """
def f(x, s):
    match s:
        case 1:
            a = 1
            if a:
                b = 2
        case _:
            c = 3
    with open(x) as handle:
        d = 4
    try:
        e = 5
    except ValueError:
        h = 6
    else:
        k = 7
    while s:
        m = 8
    else:
        n = 9
    async def g():
        o = 10
    class C:
        p = 11
    for i in []:
        pass
    else:
        q = 12
    return x
"""


def _reference(body):
    """nested_statements as it was first written (a match's cases, each block in order)."""
    for statement in body:
        yield statement
        if isinstance(statement, (gast.FunctionDef, gast.ClassDef)):
            continue
        if isinstance(statement, gast.Match):
            for case in statement.cases:
                yield from _reference(case.body)
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(statement, field, None)
            if isinstance(inner, list):
                yield from _reference(inner)


def test_nested_statements_of_every_kind_of_block_as_the_reference():
    body = gast.parse(EVERY_BLOCK).body[0].body
    assert [id(s) for s in nested_statements(body)] == [id(s) for s in _reference(body)]
    assert [id(s) for s in nested_statements([])] == []


def test_nested_statements_follows_blocks_changed_while_it_runs():
    body = gast.parse("def f(x):\n    if x:\n        y = 1\n    z = 2").body[0].body
    seen = []
    for statement in nested_statements(body):
        seen.append(type(statement).__name__)
        if type(statement) is gast.If:  # a pass replacing a block as it goes
            statement.body = [gast.Pass(), gast.Pass()]
    assert seen == ["If", "Pass", "Pass", "Assign"]


def test_names_of_all_statements_as_the_union_of_each():
    from s2sgrad.compiler.syntax import (
        names_read,
        names_read_in_all,
        names_written,
        names_written_in_all,
    )

    source = EVERY_BLOCK + "\n" + SOURCE.replace("def f(", "def h(")
    for function in gast.parse(source).body:
        body = function.body
        assert names_written_in_all(body) == set().union(*map(names_written, body))
        assert names_read_in_all(body) == set().union(*map(names_read, body))
    nested = gast.parse("def f(x):\n    def g(a):\n        q = a\n    k = lambda b: b\n").body[0]
    assert names_written_in_all(nested.body) == {"g", "q", "k"}  # as names_written of each
    assert names_written_in_all([]) == set() == names_read_in_all([])
