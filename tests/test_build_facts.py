"""Facts the build phase reads off a statement's few nodes, or hands from one analysis to
the next, instead of walking again (issue 15: 2,000 statements transformed in under a
second). Each shortcut is exact: it agrees with the walk it replaces on every statement,
plain or not, and the functions at each shortcut's edge get gradients that match finite
differences in every mode."""

from __future__ import annotations

import gast
import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.frontend import parse_function
from s2sgrad.compiler.node_kinds import kinds_of, names_in, of_kind, of_kinds
from s2sgrad.compiler.operations import Operation, OperationKind
from s2sgrad.compiler.passes.sharing import with_local_functions
from s2sgrad.compiler.pipeline import names_read_in
from s2sgrad.compiler.plain_values import (
    calls_in,
    names_read_by_body,
    plain_calls,
    plain_reads,
    reads_of_value,
    writes_nothing,
    written_by,
    written_by_all,
)
from s2sgrad.compiler.steps import Operations
from s2sgrad.compiler.syntax import (
    names_read,
    names_written,
    names_written_in_all,
    nested_statements,
    walk,
)

MODES = ["s2s", "tape", "auto"]

STATEMENTS = [
    "y = x",
    "y = 2.0",
    "y = a * b",
    "y = -a",
    "y = np.sin(t1)",
    "y = f(a, 2, k=b)",
    "y = f(a, k=g(b))",  # a call inside: not plain
    "y = f(*args)",  # a starred argument: not plain
    "y = np.linalg.solve(m, v)",  # an attribute chain: not plain
    "y = a.T",
    "y = a[i]",
    "y = (z := a) + 1",  # a walrus binds z
    "y = [v for v in xs]",  # the comprehension binds v
    "y = lambda q: q * w",
    "y = h(lambda q: q)(a)",
    "y = np.sin(np.cos(a)) * 0.5 + b",
    "a, b = p",
    "y[i] = v",
    "y += f(v)",
    "f(x, out=y)",
    "for k in range(3):\n    y = g(k)",
]


def _statement(source: str) -> gast.stmt:
    return gast.parse(source).body[0]


@pytest.mark.parametrize("source", STATEMENTS)
def test_plain_shortcuts_agree_with_the_walks(source):
    statement = _statement(source)
    assert written_by(statement) == names_written(statement)
    assert calls_in(statement) == [n for n in walk(statement) if type(n) is gast.Call]
    plain = plain_calls(statement)
    if plain is not None:
        assert plain == [n for n in walk(statement) if type(n) is gast.Call]
    value = getattr(statement, "value", None)
    if isinstance(value, gast.expr):
        assert reads_of_value(value) == names_read(value)
        reads = plain_reads(value)
        assert reads is None or reads == names_read(value)
        if writes_nothing(value):
            assert names_written(value) == set()
            # in_place_writes._nested_write looks at the value's own call only
            own = [value] if type(value) is gast.Call else []
            assert [n for n in walk(value) if type(n) is gast.Call] == own


def test_the_names_written_by_a_body_agree_with_one_walk():
    body = [_statement(source) for source in STATEMENTS]
    assert written_by_all(body) == names_written_in_all(body)
    plain = [s for s in body if type(s) is gast.Assign and writes_nothing(s.value)]
    assert written_by_all(plain) == names_written_in_all(plain)


def test_nodes_selected_by_kind_in_c_are_those_of_the_loops():
    function = _statement("def f(x):\n" + "".join(f"    {line}\n" for line in STATEMENTS[:-1]))
    nodes = walk(function)
    for kind in (gast.Name, gast.Call, gast.Constant, gast.Lambda, gast.Assign, gast.Slice):
        assert list(of_kind(nodes, kind)) == [n for n in nodes if type(n) is kind]
    kinds = frozenset({gast.Dict, gast.Call, gast.Assign})
    assert list(of_kinds(nodes, kinds)) == [n for n in nodes if type(n) in kinds]
    assert kinds_of(nodes) == {type(n) for n in nodes}
    for context in (gast.Load, gast.Store, gast.Param):
        expected = {n.id for n in nodes if type(n) is gast.Name and type(n.ctx) is context}
        assert names_in(nodes, gast.Name, context) == expected


def _seeded(statement, operation):
    value = statement.value
    return {id(value): (value, operation)}


def test_operations_take_what_was_classified_of_the_same_value():
    parsed = parse_function(_uses_sin)
    statement = parsed.node.body[0]
    given = Operation(OperationKind.UNKNOWN, description="given")
    assert Operations(parsed, {"y"}, _seeded(statement, given)).of(statement) is given


def test_operations_classify_a_value_changed_since():
    parsed = parse_function(_uses_sin)
    statement = parsed.node.body[0]
    given = Operation(OperationKind.UNKNOWN, description="given")
    seeded = _seeded(statement, given)
    statement.value = gast.parse("np.cos(x)", mode="eval").body  # a new value object
    operation = Operations(parsed, {"y"}, seeded).of(statement)
    assert operation is not given
    assert operation.kind is OperationKind.PRIMITIVE and operation.primitive is np.cos


def _uses_sin(x):
    y = np.sin(x)
    return y


def test_the_names_bound_found_when_asked_are_those_found_at_once():
    source = "def f(x):\n    a = x\n    for i in range(3):\n        b = a[i]\n    return b"
    statements = list(nested_statements(_statement(source).body))
    later = with_local_functions(statements, None, unchanged=True)
    at_once = with_local_functions(statements, None)
    assert later.bound == at_once.bound == {"a", "i", "b"}


def test_a_function_bound_twice_is_not_known_which():
    source = (
        "def f(x):\n    g = lambda v: v\n    g = lambda v: 2 * v\n    h = lambda v: v\n"
        "    return g(x)"
    )
    statements = list(nested_statements(_statement(source).body))
    resolver = with_local_functions(statements, None, unchanged=True)
    assert resolver.bound == {"g", "h"}
    assert not resolver.local("g").known and resolver.local("h").known


SCALE = 3.0


def header_reads_a_global(x, s=SCALE):
    return np.sum(np.sin(x) * s)


def header_annotated(x: np.ndarray) -> float:
    return np.sum(np.sin(x) * SCALE)


@pytest.mark.parametrize("f", [header_reads_a_global, header_annotated], ids=lambda f: f.__name__)
def test_the_free_names_read_by_the_body_only(f):
    node = parse_function(f).node
    assert names_read_by_body(node, walk(node)) == names_read_in(node)


def plain_body_reads_a_global(x):
    y = np.sin(x)
    z = y * SCALE
    return np.sum(z)


def test_the_free_names_of_a_plain_header():
    node = parse_function(plain_body_reads_a_global).node
    found = names_read_by_body(node, walk(node))
    assert found == names_read_in(node) == {"np", "x", "y", "z", "SCALE"}


def halve(a):
    a[:] *= 0.5


def calls_a_helper_changing_its_argument(x):
    y = np.sin(x)
    z = y * 2.0
    t = np.tanh(z)
    halve(t)  # inlined: the update is differentiated
    return np.sum(t * z)


def scaler(s):
    return lambda v: v * s  # a helper returning a function: its body is inlined


def halves_then_scales(x):
    y = np.sin(x)
    halve(y)  # inlined first: the tree changes, and the next inliner walks it anew
    f = scaler(3.0)
    return np.sum(f(y) * x)


def scales_with_a_local_lambda(x):
    g = lambda v: v * 2.0  # noqa: E731 (a lambda: the next inliner walks anew)
    f = scaler(0.5)
    return np.sum(f(g(np.cos(x))))


def clips_entries_in_a_loop(x):
    grads = [np.sin(x), np.cos(x)]
    for g in grads:
        g[:] *= 0.5
    return np.sum(grads[0] * grads[1])


def views_written_after_plain_statements(x):
    t = np.tanh(x)
    u = t * 2.0
    w = np.exp(u)
    v = w[0:2]
    v[:] = v * 3.0  # a view's update, written back into w
    return np.sum(w * u)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f",
    [
        header_reads_a_global,
        plain_body_reads_a_global,
        calls_a_helper_changing_its_argument,
        halves_then_scales,
        scales_with_a_local_lambda,
    ],
    ids=lambda f: f.__name__,
)
def test_gradients_past_the_shortcuts(f, mode):
    x = np.array([0.3, -0.4, 0.8])
    expected = numeric_grad(f, (x.copy(),), 0)
    assert_close(sg.grad(f, mode=mode)(x), expected)


@pytest.mark.parametrize("mode", ["s2s", "auto"])  # the tape refuses the shared updates
@pytest.mark.parametrize(
    "f", [clips_entries_in_a_loop, views_written_after_plain_statements], ids=lambda f: f.__name__
)
def test_shared_updates_past_the_shortcuts(f, mode):
    x = np.array([0.3, -0.4, 0.8])
    expected = numeric_grad(f, (x.copy(),), 0)
    assert_close(sg.grad(f, mode=mode)(x), expected)


def changes_its_argument(a):
    a *= 0.5
    return a


def passes_an_input_to_a_changing_helper(x):
    y = np.sin(x)
    z = y * 2.0
    head = x[:2]  # a view of the input, read after the change
    w = changes_its_argument(x)  # the input changed in place, under a plain statement
    return np.sum(w * z) + np.sum(head)


def test_a_changing_call_under_a_plain_statement_is_still_refused():
    with pytest.raises(sg.UnsupportedError, match=r"test_build_facts\.py:\d+: .*in place"):
        sg.grad(passes_an_input_to_a_changing_helper, mode="s2s")(np.array([0.3, 0.5, 0.1]))


def straight_line_with_calls(x):
    t1 = np.sin(x)
    t2 = t1 * 2.0
    t3 = np.maximum(t2, 0.1)
    return np.sum(t3 * t1)


def test_in_place_writes_are_looked_for_without_a_walk_of_plain_values(monkeypatch):
    from s2sgrad.compiler import in_place_writes

    def no_walk(node):
        raise AssertionError(f"walked {gast.dump(node)}")

    monkeypatch.setattr(in_place_writes, "walk", no_walk)
    x = np.array([0.3, -0.5, 1.1])
    for mode in MODES:
        grad = sg.grad(straight_line_with_calls, mode=mode)(x)
        assert_close(grad, numeric_grad(straight_line_with_calls, (x.copy(),), 0))


def appends_inside_a_call(x):
    items = [x]
    y = np.sum(len([items.append(x)]) * x)  # the append's value used: not differentiated
    return y + items[0].sum()


def test_a_write_inside_a_value_that_is_not_plain_is_still_found():
    with pytest.raises(sg.UnsupportedError, match=r"test_build_facts\.py:\d+: .*append"):
        sg.grad(appends_inside_a_call, mode="s2s")(np.array([0.3, 0.5]))
