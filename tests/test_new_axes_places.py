"""``index_new_axes`` rewrites only the places that hold a noted ``expand_dims`` call, inner
calls first: the tree it leaves is the one a rewrite of every node bottom-up leaves (the
reference below), nested calls, calls held twice and names kept as numbers included; and
the gradients through it match central differences."""

import gast
import numpy as np

import s2sgrad as sg
from s2sgrad.compiler.annotations import NEW_AXES, annotate, annotation
from s2sgrad.compiler.specialize.new_axes import index_new_axes
from s2sgrad.compiler.syntax import constant, walk

SOURCE = """
def f(x, d):
    a = np.expand_dims(np.expand_dims(x, 0) * 2.0, 1) + g(np.expand_dims(d, 0))
    b = np.expand_dims(3.0, 0)
    c = [np.expand_dims(x, (0, 2)) for q in x]
    h = lambda v: np.expand_dims(v, 0)
    return np.expand_dims(a, 1)
"""


class _Reference(gast.NodeTransformer):  # the rewrite of every node, bottom-up
    def __init__(self, numbers):
        self.numbers = numbers

    def visit_Call(self, node):
        self.generic_visit(node)
        noted = annotation(node, NEW_AXES)
        if noted is None or not node.args:
            return node
        names = {n.id for n in walk(node.args[0]) if type(n) is gast.Name}
        if not names or names & self.numbers:
            return node
        new, rank = noted
        index = [
            constant(None) if d in new else gast.Slice(lower=None, upper=None, step=None)
            for d in range(rank)
        ]
        return gast.Subscript(
            value=node.args[0], slice=gast.Tuple(elts=index, ctx=gast.Load()), ctx=gast.Load()
        )


def _noted(share: bool):
    function = gast.parse(SOURCE).body[0]
    calls = [
        n
        for n in walk(function)
        if type(n) is gast.Call and getattr(n.func, "attr", None) == "expand_dims"
    ]
    for position, call in enumerate(calls):
        annotate(call, NEW_AXES, (frozenset({position % 2}), 2 + position % 2))
    if share:  # one call held in two places
        function.body[4].value = function.body[0].value.right.args[0]
    return function


def test_the_places_rewritten_are_those_a_bottom_up_rewrite_changes():
    for share in (False, True):
        for numbers in (frozenset(), frozenset({"d"}), frozenset({"x", "d", "a"})):
            expected, actual = _noted(share), _noted(share)
            _Reference(numbers).visit(expected)
            index_new_axes(actual, numbers)
            assert gast.dump(actual) == gast.dump(expected)


def test_nothing_noted_leaves_the_tree_alone():
    function = gast.parse(SOURCE).body[0]
    before = gast.dump(function)
    index_new_axes(function)
    assert gast.dump(function) == before


def nested(x, v):
    a = np.expand_dims(np.expand_dims(np.sin(x), 0) * v, -1)  # (1, 3, 1) then (1, 3, 2, 1)
    return np.sum(np.cos(a) * x[0]) + np.sum(np.expand_dims(x, 1) ** 2)


def test_gradients_through_nested_new_axes_match_differences():
    rng = np.random.default_rng(3)
    x, v = rng.standard_normal(3), rng.standard_normal((2, 1))
    gradient = sg.grad(nested, mode="s2s")
    for _ in range(2):  # the first call specialises, the second runs the specialised code
        actual = gradient(x, v)
    step = 1e-6
    expected = np.array(
        [(nested(x + step * e, v) - nested(x - step * e, v)) / (2 * step) for e in np.eye(3)]
    )
    assert np.allclose(actual, expected, rtol=1e-6, atol=1e-8)
    code = [line for line in sg.source(gradient).splitlines() if not line.strip().startswith("#")]
    assert not any("np.expand_dims" in line for line in code), code
