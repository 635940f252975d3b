"""The probe's copy of the raw code (``specialize/probe_copy.py``) is the deep copy
``clone`` makes, but for plain names and literals, which it shares; the walk that makes
it finds what ``raw_facts`` finds, on the copy, and lists the copy's operations and
calls, each after its operands."""

import gast
import numpy as np

import s2sgrad as sg
from s2sgrad.compiler.specialize.broadcasts import raw_facts
from s2sgrad.compiler.specialize.probe_copy import copy_with_facts
from s2sgrad.compiler.syntax import clone, walk

SOURCE = """
def f(x, y: int = 2, *a: g(1), k=lambda q: q + 1):
    a = x * y + g(x, k=1)
    def inner(z):
        w = z * 2
        return w + g(z)
    b = [a, (a, -a)][0][1:]
    c, d = locals(), b[x]
    e = h(*a, **k)
    return inner(b) if a else b
"""


def _nodes(tree):  # operators, which carry nothing, are shared
    operators = (gast.operator, gast.unaryop, gast.cmpop, gast.boolop)
    return [n for n in walk(tree) if not isinstance(n, operators)]


def _plain_leaf(node):  # shared by the copy: the specialised code replaces, never changes, them
    if type(node) is gast.Name:
        return node.annotation is None and len(node.__dict__) <= 4 + len(node._attributes)
    return type(node) is gast.Constant and len(node.__dict__) <= 2 + len(node._attributes)


def _same_facts(found, expected):
    for field in ("assignments", "arithmetic", "subscripts", "calls", "checked"):
        got = sorted(gast.dump(n) for n in getattr(found, field))
        assert got == sorted(gast.dump(n) for n in getattr(expected, field)), field
    assert found.kinds == expected.kinds
    assert found.bound == expected.bound


def test_the_copy_is_clone_s_copy_and_its_facts_are_raw_facts():
    function = gast.parse(SOURCE).body[0]
    function.body[0].value.attached = [gast.Constant(1, None)]  # a pass's attribute
    copy, facts, operations = copy_with_facts(function)
    assert gast.dump(copy) == gast.dump(clone(function))
    originals = {id(n) for n in _nodes(function)}
    leaves = {id(n) for n in _nodes(function) if _plain_leaf(n)}
    shared = originals & {id(n) for n in _nodes(copy)}
    assert shared <= leaves  # every node else is new (functions inside: all of them)
    assert any(type(n) is gast.Name and id(n) in shared for n in _nodes(function))
    assert any(type(n) is gast.Constant and id(n) in shared for n in _nodes(function))
    assert function.args.args[1].annotation is not None  # a parameter's annotation: copied
    assert copy.args.args[1] is not function.args.args[1]
    assert copy.body[0].value.attached[0] is not function.body[0].value.attached[0]
    _same_facts(facts, raw_facts(function))
    copies = {id(n) for n in _nodes(copy)}
    facts_nodes = [n for field in facts[:4] for n in field] + facts.checked
    assert all(id(n) in copies for n in facts_nodes)  # of the copy's own nodes
    scopes = [n for n in _nodes(copy) if type(n) in (gast.FunctionDef, gast.Lambda)]
    inside = {id(n) for scope in scopes if scope is not copy for n in _nodes(scope)}
    assert len(scopes) == 3 and len(operations) == len({id(n) for n in operations})
    listed = {id(n) for n in _nodes(copy) if type(n) in (gast.BinOp, gast.Call)} - inside
    assert {id(n) for n in operations} == listed  # not inside `inner` or the lambda


def test_each_operation_is_listed_after_its_operands():
    function = gast.parse("def f(x):\n    return (x + 1) * g(x - 2)").body[0]
    _, _, operations = copy_with_facts(function)
    assert [gast.dump(n) for n in operations] == [
        gast.dump(gast.parse(text, mode="eval").body)
        for text in ("x + 1", "x - 2", "g(x - 2)", "(x + 1) * g(x - 2)")
    ]


def test_gradients_through_the_probe_s_copy_match_differences():
    def f(x):
        d = x * 0.0
        for _ in range(3):
            d = d + np.sin(x) * x[::-1]
        return np.sum(d * np.broadcast_to(x[0], x.shape))

    x = np.linspace(0.2, 0.9, 5)
    for mode in ("s2s", "tape", "auto"):
        sg.check_grads(f, x, mode=mode, order=1)
