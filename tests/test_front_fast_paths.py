"""The passes before the sweeps skip work they can prove changes nothing (issue 15: 2,000
statements transformed in under a second); each skip is exact. These functions sit just
past each skip's edge: the work skipped for most functions is done for them, and their
gradients match finite differences in every mode."""

from __future__ import annotations

import ast

import gast
import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler import pipeline
from s2sgrad.compiler.frontend import parse_function
from s2sgrad.compiler.frontend.deep_expressions import may_be_deep
from s2sgrad.compiler.node_kinds import kinds_of
from s2sgrad.compiler.passes.anf import (
    assignment_table,
    join_sequences,
    repeated_sequences,
    to_anf,
)
from s2sgrad.compiler.passes.desugar import desugar
from s2sgrad.compiler.passes.mutation import changed_in_place
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.passes.rename import rename_reassignments
from s2sgrad.compiler.syntax import names_written, names_written_by_walk, parameter_names, walk

MODES = ["s2s", "tape", "auto"]


def joined_after_a_chain_of_copies(x):
    a = [x, x * 2.0]
    b = a
    c = b
    d = c + [np.sin(x)]  # a join, known through two copies
    return d[0] * d[2] + d[1]


def joined_in_a_loop(x):
    items = [x]
    for _ in range(3):
        items = items + [items[-1] * 1.5]  # a sequence only at the fixed point
    return items[0] * items[3]


def repeated_after_copies(x):
    a = [x, np.cos(x)]
    b = a
    ys = b * 2
    return ys[0] * ys[3] + ys[2]


def argument_written_late(x):
    y = x * 2.0
    z = np.sin(y)
    w = z * y
    x[0] = w[1]  # the only write into an argument: x is copied first
    return np.sum(x * w)


def argument_written_in_a_branch(x, flag=True):
    y = np.tanh(x)
    if flag:
        x[1] = y[0] * 3.0
    return np.sum(x * y)


class Box:
    pass


def attribute_stored_late(x):
    o = Box()
    y = np.exp(x)
    z = y * 2.0
    o.h = z * x  # the first store: local objects are found here
    return np.sum(o.h * y)


def written_out_late(x):
    t = np.zeros(3)
    y = x * 2.0
    z = np.sin(y)
    np.multiply(np.ones(3), 2.0, out=t)  # a constant written, before any read of t: allowed
    return np.sum(z * x) + np.sum(t)


ARRAY_FUNCTIONS = [
    argument_written_late,
    argument_written_in_a_branch,
    attribute_stored_late,
    written_out_late,
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f",
    [joined_after_a_chain_of_copies, joined_in_a_loop, repeated_after_copies],
    ids=lambda f: f.__name__,
)
def test_sequences_found_through_names(f, mode):
    expected = numeric_grad(f, (0.7,), 0)
    assert_close(sg.grad(f, mode=mode)(0.7), expected)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", ARRAY_FUNCTIONS, ids=lambda f: f.__name__)
def test_changes_found_past_the_common_case(f, mode):
    x = np.array([0.3, -0.4, 0.8])
    expected = numeric_grad(f, (x.copy(),), 0)
    before = x.copy()
    assert_close(sg.grad(f, mode=mode)(x), expected)
    assert np.array_equal(x, before)  # the caller's array is left as it was


def written_flat_in_a_branch(x):
    t = np.zeros(3)
    y = x * 2.0
    z = np.sin(y)
    if z[0] > -2.0:
        t.flat = z  # a write no sweep sees, of differentiated values: refused at its line
    return np.sum(t * y)


def test_an_untracked_write_after_many_statements_is_still_refused():
    with pytest.raises(sg.UnsupportedError, match=r"\.py:\d+: 't\.flat = \.\.\.' writes"):
        sg.grad(written_flat_in_a_branch, mode="s2s")(np.array([0.3, 0.5, 0.1]))


def _function(source: str) -> gast.FunctionDef:
    return gast.parse(source).body[0]


def _is_builtin(name: str) -> bool:
    return name in ("list", "tuple", "sorted")


def test_a_comprehension_variable_is_not_taken_for_a_sequence():
    # 'a' is also bound by a comprehension (read as a binding of the function's): not
    # surely a sequence, so its '+' stays NumPy's
    source = "def f(x):\n    a = [x]\n    n = [a for a in range(2)]\n    b = a + n\n    return b"
    node = _function(source)
    assert join_sequences(node, set(), _is_builtin, NameGenerator()) is None
    plain = _function(source.replace("[a for a in range(2)]", "[k for k in range(2)]"))
    assert join_sequences(plain, set(), _is_builtin, NameGenerator()) == "concatenated"
    assert type(plain.body[2].value) is gast.Call


def test_repeated_sequences_follow_copies_and_stop_at_other_values():
    node = _function(
        "def f(x, n):\n    a = [x]\n    b = a\n    c = b * n\n    d = x * n\n    return c"
    )
    found = repeated_sequences(node, set(), _is_builtin)
    assert [(s.targets[0].id, seq.id) for s, seq, _ in found] == [("c", "b")]


def test_the_searches_share_one_table_that_reads_values_as_they_are():
    # the join rewrites 'b = a + c' as a call before the repeat search asks the table:
    # the table made before it reads the call, as a table made after would
    source = "def f(x, n):\n    a = [x]\n    c = [x]\n    b = a + c\n    d = b * n\n    return d"
    shared, fresh = _function(source), _function(source)
    table = assignment_table(shared)
    assert join_sequences(shared, set(), _is_builtin, NameGenerator(), table) == "concatenated"
    assert join_sequences(fresh, set(), _is_builtin, NameGenerator()) == "concatenated"
    assert type(table.values()["b"][0]) is gast.Call

    def joined(call: gast.Call) -> bool:  # what the join's helper returns
        return type(call.func) is gast.Name and call.func.id == "concatenated"

    found = repeated_sequences(shared, set(), _is_builtin, joined, table=table)
    again = repeated_sequences(fresh, set(), _is_builtin, joined)
    assert [(s.targets[0].id, q.id) for s, q, _ in found] == [("d", "b")]
    assert [(s.targets[0].id, q.id) for s, q, _ in again] == [("d", "b")]


def _may_be_deep_as_first_written(statement) -> bool:
    for child in ast.iter_child_nodes(statement):
        if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
            continue
        if getattr(child, "end_lineno", None) is None:
            continue
        if child.end_lineno != child.lineno or child.end_col_offset - child.col_offset > 96:
            return True
    return False


LONG_SUM = " + ".join(f"x{k}" for k in range(40))
DEEP_SOURCES = [
    "y = a + b\n",
    f"y = {LONG_SUM}\n",
    "y = f(a,\n      b)\n",
    f"@decorate({LONG_SUM})\ndef g(): return 1\n",
    "@decorate\ndef g(): return 1\n",
    f"if {LONG_SUM}: pass\n",
    "if a: y = 1\n",
    f"class C: z = ({LONG_SUM})\n",
]


@pytest.mark.parametrize("source", DEEP_SOURCES)
def test_may_be_deep_answers_as_the_look_at_every_child(source):
    for statement in ast.parse(source).body:
        assert may_be_deep(statement) == _may_be_deep_as_first_written(statement)


def long_one_line_sum(x):
    return x * 1.0 + x * 2.0 + x * 3.0 + x * 4.0 + x * 5.0 + x * 6.0 + x * 7.0 + x * 8.0 + x * 9.0


@pytest.mark.parametrize("mode", MODES)
def test_a_long_line_is_read_as_before(mode):
    assert_close(sg.grad(long_one_line_sum, mode=mode)(0.5), 45.0)


NAMES_WRITTEN_SOURCES = [
    "def f(x):\n    y = x + 1\n    a, (b, c) = y, (x, y)\n    return [z for z in y]",
    "def f(x):\n    def g(v):\n        w = v\n        return w\n    y = g(x)\n    return y",
    "def f(x):\n    h = lambda v: v * 2\n    return h(x)",
    "def f(x):\n    class C:\n        k = 1\n    try:\n        y = x\n    except ValueError as e:\n"
    "        y = e\n    return y",
]


@pytest.mark.parametrize("source", NAMES_WRITTEN_SOURCES)
def test_the_names_written_read_off_the_walk_are_names_written_s(source):
    node = gast.parse(source).body[0]
    assert names_written_by_walk(node, walk(node)) == names_written(node)


def test_anf_names_the_operands_of_nested_operations_and_calls():
    node = gast.parse("def f(x, y):\n    z = np.sin(x * 2 + y) * -1.5 - (x, y)[0]\n    return z")
    function = node.body[0]
    to_anf(function, NameGenerator({"x", "y", "z", "np"}), {"x", "y", "z"})
    text = ast.unparse(gast.gast_to_ast(node))
    assert text.splitlines()[1:] == [
        "    t1 = x * 2",
        "    t2 = t1 + y",
        "    t3 = np.sin(t2)",
        "    t4 = t3 * -1.5",
        "    t5 = (x, y)",
        "    t6 = t5[0]",
        "    z = t4 - t6",
        "    return z",
    ]


LOCAL_NAMES_SOURCES = [
    "def f(x, *rest, k=1, **options):\n    x = x * 2\n    y = x + 1\n    y = np.sin(y) * k\n"
    "    return y",
    "def f(x, /, w):\n    x = x * w\n    a, (b, c[0]), *d = x, (x, [x]), x, x\n    return a + b\n",
    "def f(x):\n    y = x if x.sum() > 0 else -x\n    for i in range(3):\n        y = y * i\n"
    "    z = [v * 2 for v in y]\n    return np.sum(z) + np.add(*[y, y]).sum()",
    "def f(x):\n    def g(v):\n        w = v * x\n        return w\n    x = g(x) + g(2 * x)\n"
    "    return x",
]


@pytest.mark.parametrize("source", LOCAL_NAMES_SOURCES)
def test_a_normal_form_and_renaming_bind_only_the_names_they_claim(source):
    # what the pipeline's local names after both rest on: no walk of the body again
    node = gast.parse(source).body[0]
    before = parameter_names(node) | pipeline.names_written_in(node)
    names = NameGenerator({n.id for n in walk(node) if type(n) is gast.Name} | {"f", "g"})
    claimed = set(names.taken)
    to_anf(node, names, before)
    rename_reassignments(node, names)
    after = parameter_names(node) | pipeline.names_written_in(node)
    assert after == before | (names.taken - claimed)
    assert names.taken - claimed  # each source makes temporaries


HIDDEN_WRITE_SOURCES = [
    "def f(x):\n    y = x * 2\n    return 0 < y < 1",
    "def f(x):\n    y = x * 2\n    return y",
]


@pytest.mark.parametrize("source", HIDDEN_WRITE_SOURCES)
def test_desugaring_given_the_node_classes_is_desugaring_without(source):
    desugared = []
    for known in (False, True):
        node = gast.parse(source).body[0]
        kinds = kinds_of(walk(node)) if known else None
        desugar(node, NameGenerator({"x", "y", "f"}), kinds=kinds)
        desugared.append(gast.dump(node))
    assert desugared[0] == desugared[1]


def test_hidden_writes_are_refused_after_the_steps_that_change_nothing():
    node = gast.parse("def f(x):\n    del x[0]\n    return x").body[0]
    with pytest.raises(sg.UnsupportedError, match="deleting an item"):
        desugar(node, NameGenerator({"x", "f"}), kinds=kinds_of(walk(node)))


ARGUMENT_UPDATES = [  # (source, the parameters it writes into)
    ("def f(x, y):\n    t = np.sin(x) * y\n    return t", set()),
    ("def f(x, y):\n    t = np.sin(x) * y\n    np.copyto(x, t)\n    return np.sum(x)", {"x"}),
    ("def f(x, y):\n    t = x\n    np.multiply(y, 2.0, out=t)\n    return np.sum(x)", {"x"}),
    ("def f(x, y):\n    v = np.add(np.exp(y), 1.0, y)\n    return np.sum(x) + v", {"y"}),
    (
        "def f(x, y):\n    if y.sum() > 0:\n        np.add.at(x, [0], y[:1])\n    return np.sum(x)",
        {"x"},
    ),
]


@pytest.mark.parametrize(("source", "written"), ARGUMENT_UPDATES)
def test_what_changes_arguments_in_place_is_found_with_the_walk_or_without(source, written):
    node = gast.parse(source).body[0]
    resolve = parse_function(test_what_changes_arguments_in_place_is_found_with_the_walk_or_without)
    for nodes in (None, walk(node)):
        assert changed_in_place(node, resolve.resolve, arrays_only=True, nodes=nodes) == written
