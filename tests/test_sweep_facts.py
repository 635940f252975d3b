"""The facts reverse mode reads off a body before its sweeps (reverse/facts.py, numeric.py),
held to their definitions: the greatest or least fixed point of rounds over every
statement, which the sweeps' faster forms (one pass, then only what a change reaches)
must give exactly."""

from __future__ import annotations

import random

import gast
import numpy as np

from s2sgrad.compiler.reverse.facts import _structured_value, maybe_structured
from s2sgrad.compiler.reverse.numeric import _numeric, numeric_names
from s2sgrad.compiler.syntax import names_written, nested_statements

_SNIPPETS = [
    "b = c * 2",
    "c = [a]",
    "c = a * 3",
    "d = b + c",
    "e = d[0]",
    "f, g = e",
    "h = f",
    "k = h[1]",
    "m = k * 2.0",
    "n = -m",
    "p = (a, m)",
    "q = p[0]",
    "r = q",
    "s = r[2]",
    "t = s + 1",
    "u, *w = t",
    "v = w[0] * 2",
]


def _numeric_by_rounds(statements, parameters, containers):
    """numeric_names's definition: rounds over every name until none is dropped."""
    values: dict = {}
    for statement in nested_statements(statements):
        if type(statement.targets[0]) is gast.Name:
            values.setdefault(statement.targets[0].id, []).append(statement.value)
    other = set().union(
        *(names_written(s) for s in statements if type(s.targets[0]) is not gast.Name)
    )
    numeric = ((set(values) | parameters) - containers) - other
    changed = True
    while changed:
        changed = False
        for name in list(numeric):
            if not all(_numeric(v, numeric, lambda f: None) for v in values.get(name, ())):
                numeric.discard(name)
                changed = True
    return numeric


class _NoCalls:
    def of(self, statement):  # the snippets call nothing
        raise AssertionError("no call to classify")


def _structured_by_rounds(statements, known, parameters):
    """maybe_structured's definition (without calls): rounds until nothing is added."""
    result = set(known)
    arrays = parameters - known
    changed = True
    while changed:
        changed = False
        for statement in statements:
            target, value = statement.targets[0], statement.value
            if isinstance(target, gast.Tuple):
                found = {value.id} if isinstance(value, gast.Name) else set()
                found |= {e.value.id for e in target.elts if isinstance(e, gast.Starred)}
            elif _structured_value(statement, result, arrays, _NoCalls()):
                found = {target.id}
            else:
                found = set()
            holds = isinstance(target, gast.Tuple) or found or target.id in result
            if holds and isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name):
                found.add(value.value.id)
            if found - result:
                result |= found
                changed = True
    return result


def test_numeric_and_structured_names_are_their_fixed_points_in_any_order():
    chooser = random.Random(5)
    for _ in range(300):
        lines = chooser.sample(_SNIPPETS, chooser.randint(1, len(_SNIPPETS)))
        statements = gast.parse("\n".join(lines)).body
        containers = set(chooser.sample(["a", "x"], chooser.randint(0, 2)))
        parameters = {"a", "x"}
        found = numeric_names(statements, parameters, containers, lambda f: None, set())
        assert found == _numeric_by_rounds(statements, parameters, containers), lines
        known = set(chooser.sample(["a", "b", "c", "t"], chooser.randint(0, 2)))
        structured = maybe_structured(statements, known, parameters, _NoCalls())
        assert structured == _structured_by_rounds(statements, known, parameters), lines


def test_a_name_read_before_a_name_dropped_later_is_asked_again():
    # b is asked first and is numeric while c is; c, a list, then drops b too
    statements = gast.parse("b = c * 2\nc = [1.0]\nd = b + 1.0").body
    assert numeric_names(statements, set(), set(), lambda f: None, set()) == set()
    statements = gast.parse("b = c * 2\nc = np.float64(1.0)").body
    resolved = lambda f: np.float64  # noqa: E731 -- not an array function: unknown
    assert numeric_names(statements, set(), set(), resolved, set()) == set()


def test_entries_reach_back_through_copies_and_items():
    # u, *w = t: w is a list; v = w[0] reads it; t = s + 1 is arithmetic, s an entry of r,
    # r a copy of q, q an entry of p, p a tuple: every holder of entries may hold lists
    statements = gast.parse("\n".join(_SNIPPETS)).body
    found = maybe_structured(statements, set(), {"a", "x"}, _NoCalls())
    assert {"p", "q", "r", "s", "w", "e", "d"} <= found
    assert "m" not in found


def test_the_criterion_outline_of_plain_assignments_is_the_walk_s():
    from s2sgrad.compiler.specialize.criterion import _Outline
    from s2sgrad.compiler.syntax import walk

    code = """
t1 = np.sin(x)
t2 = t1 * 0.5
t3 = -t2
t4 = t3
t5 = 2.0
t6 = f(t5, k=t4)
t7 = np.linalg.norm(t6)
t8 = x[t1]
t9 = g(x[0])
a, b = t9
if t1 > 0:
    t10 = np.exp(t2)
for i in range(3):
    t11 = t10[i]
t12 = np.sum(t11, axis=0)
"""
    body = gast.parse(code).body
    walked = _Outline.of(walk(gast.Module(body=body, type_ignores=[]))[1:])
    read = _Outline.of_body(body)
    for field in ("named", "unpacked", "loops", "regions", "subscripts", "calls", "stored"):
        assert sorted(map(id, getattr(read, field))) == sorted(map(id, getattr(walked, field)))
