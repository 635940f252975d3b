"""The probe's copy of the raw code (``specialize/probe_copy.py``) is the deep copy
``clone`` makes, its rewriter seeing each operation and call with its original."""

import gast
import numpy as np

import s2sgrad as sg
from s2sgrad.compiler.specialize.probe_copy import copy_with_sites
from s2sgrad.compiler.syntax import clone, walk

SOURCE = """
def f(x, y: int = 2):
    a = x * y + g(x, k=1)
    def inner(z):
        return z * 2 + g(z)
    b = [a, (a, -a)][0][1:]
    return inner(b) if a else b
"""


def _nodes(tree):  # operators, which carry nothing, are shared
    operators = (gast.operator, gast.unaryop, gast.cmpop, gast.boolop)
    return [n for n in walk(tree) if not isinstance(n, operators)]


def test_a_copy_that_rewrites_nothing_is_clone_s_copy():
    function = gast.parse(SOURCE).body[0]
    function.body[0].value.attached = [gast.Constant(1, None)]  # a pass's attribute
    seen = []
    copy = copy_with_sites(function, lambda original, new: seen.append(original) or new)
    assert gast.dump(copy) == gast.dump(clone(function))
    originals = {id(n) for n in _nodes(function)}
    assert not originals & {id(n) for n in _nodes(copy)}  # every node is new
    assert copy.body[0].value.attached[0] is not function.body[0].value.attached[0]
    inner = function.body[1]
    inside = {id(n) for n in _nodes(inner)}
    assert seen and all(id(n) in originals - inside for n in seen)  # not inside `inner`
    assert {type(n) for n in seen} == {gast.BinOp, gast.Call}


def test_each_operation_is_rewritten_after_its_operands():
    function = gast.parse("def f(x):\n    return (x + 1) * (x - 2)").body[0]
    order = []

    def rewrite(original, new):
        order.append(gast.dump(original))
        return gast.Name(f"s{len(order)}", gast.Load(), None, None)

    copy = copy_with_sites(function, rewrite)
    assert len(order) == 3 and order[-1] == gast.dump(function.body[0].value)
    assert gast.dump(copy.body[0].value) == gast.dump(gast.Name("s3", gast.Load(), None, None))


def test_gradients_through_the_probe_s_copy_match_differences():
    def f(x):
        d = x * 0.0
        for _ in range(3):
            d = d + np.sin(x) * x[::-1]
        return np.sum(d * np.broadcast_to(x[0], x.shape))

    x = np.linspace(0.2, 0.9, 5)
    for mode in ("s2s", "tape", "auto"):
        sg.check_grads(f, x, mode=mode, order=1)
