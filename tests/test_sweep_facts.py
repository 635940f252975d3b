"""The facts reverse mode reads off a body before its sweeps (reverse/facts.py, numeric.py),
held to their definitions: the greatest or least fixed point of rounds over every
statement, which the sweeps' faster forms (one pass, then only what a change reaches)
must give exactly."""

from __future__ import annotations

import random

import gast
import numpy as np

from s2sgrad.compiler.reverse.facts import maybe_structured
from s2sgrad.compiler.reverse.numeric import numeric_names
from s2sgrad.compiler.specialize.criterion import shapes_follow_arguments
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


def _number_or_array(value, numeric) -> bool:
    """What numeric_names asks of a value, for the kinds of value the snippets hold."""
    kind = type(value)
    if kind is gast.Constant:
        return type(value.value) in (int, float, complex, bool)
    if kind is gast.Name:
        return value.id in numeric
    if kind is gast.BinOp:
        return _number_or_array(value.left, numeric) and _number_or_array(value.right, numeric)
    if kind is gast.UnaryOp:
        return type(value.op) is gast.USub and _number_or_array(value.operand, numeric)
    if kind is gast.Subscript:
        return _number_or_array(value.value, numeric)
    return False


def _entries_of(value, structured) -> bool:
    """What maybe_structured asks of a value that calls nothing."""
    if isinstance(value, (gast.List, gast.Tuple, gast.Dict)):
        return True
    if isinstance(value, gast.Name):
        return value.id in structured
    if isinstance(value, gast.Subscript):
        return isinstance(value.value, gast.Name) and value.value.id in structured
    return False


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
            if not all(_number_or_array(v, numeric) for v in values.get(name, ())):
                numeric.discard(name)
                changed = True
    return numeric


class _NoCalls:
    def of(self, statement):  # the snippets call nothing
        raise AssertionError("no call to classify")


def _structured_by_rounds(statements, known):
    """maybe_structured's definition (without calls): rounds until nothing is added."""
    result = set(known)
    changed = True
    while changed:
        changed = False
        for statement in statements:
            target, value = statement.targets[0], statement.value
            if isinstance(target, gast.Tuple):
                found = {value.id} if isinstance(value, gast.Name) else set()
                found |= {e.value.id for e in target.elts if isinstance(e, gast.Starred)}
            elif _entries_of(value, result):
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
        assert structured == _structured_by_rounds(statements, known), lines


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


def test_the_criterion_reads_plain_assignments_without_a_walk():
    import ast

    resolved = {"np.sin": np.sin, "np.nonzero": np.nonzero, "np.argmax": np.argmax}

    def resolve(node):
        return resolved.get(ast.unparse(gast.gast_to_ast(node)))

    def follows(code: str) -> bool:
        return shapes_follow_arguments(gast.parse(code).body, resolve, {"x"})

    assert follows("t = np.sin(x)\nu = t * 2.0")
    assert not follows("t = np.sin(x)\nu = np.nonzero(t)")  # a plain call, value-sized
    assert follows("i = np.argmax(x)\nz = x[i]")  # i, a plain call's, holds integers
    assert not follows("k = x * 2.0\nz = x[k]")  # k holds values: z's size is theirs
    assert not follows("t = np.sin(x)\nif t[0] > 0:\n    t = np.nonzero(x)")
