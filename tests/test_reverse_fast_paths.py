"""The reverse sweeps' fast paths make what the general paths make.

Rule inlining builds each call site's copy with code compiled once per rule template
(``compiler/template_builders.py``; its first copies by a walk that makes the same nodes)
and, for a rule whose body is one ``return``, by a plan made once per rule and argument
count (``inline._Plan``); the facts and sweeps read
plain assignments without a walk (``reverse/facts.writes_nothing``, ``plain_reads``) and
skip what cannot apply (saves of straight-line code, integers without item writes,
entries read without literals). Each is checked against the general path it stands for,
and gradients that go through each are checked against central differences in every mode.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys

import gast
import numpy as np
import pytest
from rulecheck import inlined_vjp_rules

import s2sgrad as sg
import s2sgrad.compiler.template_builders as template_builders
from s2sgrad.compiler.inline import has_plan, inline_rule, rule_plan
from s2sgrad.compiler.namespace import Namespace
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.reverse.facts import plain_reads, writes_nothing, written_by
from s2sgrad.compiler.reverse.nodes import added, name_load, name_store
from s2sgrad.compiler.syntax import (
    clone_rewriting,
    constant,
    load,
    names_read,
    names_used,
    names_written,
    parse_expression,
    store,
)
from s2sgrad.compiler.template_builders import template_builder
from s2sgrad.rules.registry import get_rule

MODES = ("s2s", "tape", "auto")

_TEMPLATES = [
    "g * np.cos(x)",
    "unbroadcast(g * x2, x1), unbroadcast(-g, x2)",
    "np.where(x > 0, g, 0.0)",
    "(lambda v: v * x)(g)",
    "f(*xs, k=y)[1:n, ::2]",
    "[v * x for v in g if v]",
    "{'a': x, **y}",
    "np.sum(g, axis=(0, 1), keepdims=True) + 1.5j",
]


@pytest.mark.parametrize("text", _TEMPLATES)
def test_template_builder_copies_as_clone_rewriting_does(text, monkeypatch):
    monkeypatch.setattr(template_builders, "COMPILE_AFTER", 2)
    template = parse_expression(text)
    build = template_builder(template)
    assert build is not None
    for _ in range(4):  # walked copies, then copies made by the compiled code
        asked, seen = [], []

        def renamed(node, asked=asked):
            asked.append(node.id)
            node = gast.Name(id=node.id + "_1", ctx=node.ctx, annotation=None, type_comment=None)
            return node

        def substitute(node, seen=seen):
            seen.append(node.id)
            return gast.Name(id=node.id + "_1", ctx=node.ctx, annotation=None, type_comment=None)

        built = build(renamed)
        expected = clone_rewriting(template, substitute, kinds=(gast.Name,))
        assert gast.dump(built) == gast.dump(expected)
        assert asked == seen  # names asked for in the same order: namespace bindings follow
        nodes = {id(n) for n in _own_nodes(template)}
        assert not any(id(n) in nodes for n in _own_nodes(built))  # a copy, sharing no node
        assert gast.dump(template) == gast.dump(parse_expression(text))  # left as it was


def test_a_template_is_compiled_only_once_it_has_been_copied_often(monkeypatch):
    compiled = []

    def counted(*arguments):
        compiled.append(arguments[0])
        return compile_template(*arguments)

    compile_template = template_builders.compile_template
    monkeypatch.setattr(template_builders, "compile_template", counted)
    template = parse_expression("unbroadcast(g * x2, x1)")
    build = template_builder(template)
    assert build is not None
    for _ in range(template_builders.COMPILE_AFTER):
        build(lambda node: gast.Name(node.id, node.ctx, None, None))
    assert compiled == []  # the first copies cost no compiling
    build(lambda node: gast.Name(node.id, node.ctx, None, None))
    assert compiled == [template]
    build(lambda node: gast.Name(node.id, node.ctx, None, None))
    assert compiled == [template]  # compiled once


def _own_nodes(tree):
    """The nodes a copy must not share (operators and contexts carry nothing: shared)."""
    kinds = (gast.expr, gast.stmt, gast.keyword, gast.comprehension, gast.arguments)
    return [n for n in gast.walk(tree) if isinstance(n, kinds)]


def test_template_builder_leaves_templates_with_attached_facts_to_the_general_copy():
    template = parse_expression("f(g * x)")
    template.args[0].s2s_keep_name = True  # something a pass attached
    assert template_builder(template) is None
    assert template_builder(gast.Lambda(args=None, body=load("x"))) is None


def _inlined(rule, count, wanted, planned: bool):
    names = NameGenerator({"dy", "y", "a0", "a1", "a2", "np"})
    namespace = Namespace(names)
    args = [load(f"a{i}") for i in range(count)]
    result = inline_rule(
        rule, load("dy"), load("y"), args, {}, set(wanted), names, namespace, planned=planned
    )
    if result is None:
        return None
    return (
        [gast.dump(s) for s in result.statements],
        [None if e is None else gast.dump(e) for e in result.entries],
        dict(namespace.objects),
    )


def test_rule_plans_inline_as_the_general_path_for_every_registered_rule():
    planned = 0
    for rule in inlined_vjp_rules():
        for count in (1, 2, 3):
            for size in range(count + 1):
                for wanted in itertools.combinations(range(count), size):
                    fast = _inlined(rule, count, wanted, planned=True)
                    assert fast == _inlined(rule, count, wanted, planned=False), rule
                    planned += fast is not None and has_plan(rule, count)
    assert planned > 100  # the plan serves most rules: the check above is not vacuous


@pytest.mark.parametrize("compile_after", [10**9, 0])
def test_rule_plans_walked_and_compiled_inline_as_the_general_path(compile_after, monkeypatch):
    # 10**9: a plan not compiled yet copies by walking; 0: every plan's code is compiled
    monkeypatch.setattr(template_builders, "COMPILE_AFTER", compile_after)
    compared = 0
    for rule in inlined_vjp_rules():
        for count in (1, 2, 3):
            if not has_plan(rule, count):
                continue
            wanted = tuple(range(count))
            fast = _inlined(rule, count, wanted, planned=True)
            assert fast == _inlined(rule, count, wanted, planned=False), rule
            compared += 1
    assert compared > 100


@pytest.mark.parametrize(
    "keywords",
    [{"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": None}, {"keepdims": False}],
)
@pytest.mark.parametrize("primitive", [np.sum, np.mean, np.std, np.max])
def test_folding_a_rule_on_literals_leaves_the_rule_as_it_was(primitive, keywords):
    rule = get_rule(primitive).vjp
    literals = {key: constant(value) for key, value in keywords.items()}
    made = []
    for _ in range(2):  # the second inlining sees the rule the first one folded from
        names = NameGenerator({"dy", "y", "a0", "np"})
        namespace = Namespace(names)
        inlined = inline_rule(
            rule, load("dy"), load("y"), [load("a0")], dict(literals), {0}, names, namespace
        )
        assert inlined is not None
        statements = [gast.dump(s) for s in inlined.statements]
        assert not any("If(" in s for s in statements)  # every test was on a literal
        made.append((statements, [None if e is None else gast.dump(e) for e in inlined.entries]))
    assert made[0] == made[1]


def test_a_rule_plan_copies_its_literal_defaults_and_arguments_anew_at_each_site():
    rule = get_rule(np.sum).vjp
    first = _inlined(rule, 1, (0,), planned=True)
    names = NameGenerator(set())
    namespace = Namespace(names)
    argument = load("a0")
    one = inline_rule(rule, load("dy"), load("y"), [argument], {}, {0}, names, namespace)
    two = inline_rule(rule, load("dy"), load("y"), [argument], {}, {0}, names, namespace)
    assert one is not None and two is not None and first is not None
    ids = {id(n) for e in one.entries if e is not None for n in _own_nodes(e)}
    assert not any(id(n) in ids for e in two.entries if e is not None for n in _own_nodes(e))
    assert argument not in [n for e in one.entries if e is not None for n in _own_nodes(e)]


_VALUES = [
    "x",
    "1.5",
    "-x",
    "x + 2",
    "np.sin(x)",
    "f(x, 2, k=y)",
    "obj.method(x)",
    "np.linalg.norm(x)",
    "(y := x + 1)",
    "[v for v in x]",
    "f(lambda v: v + 1, x)",
    "f(*x)",
    "x[0]",
    "x.shape",
    "(x, y)",
    "x < y",
    "f((z := 2), x)",
    "-(x + 1)",
    "f(x, k=y[0])",
    "obj.a.method(x)",
    "f(x)(y)",
    "f(x, k=2)",
]


@pytest.mark.parametrize("text", _VALUES)
def test_writes_nothing_and_plain_reads_agree_with_the_walks(text):
    value = parse_expression(text)
    reads = plain_reads(value)
    if writes_nothing(value):
        assert names_written(value) == set()
        assert reads == names_read(value) == names_used(value)
    assert reads is None or reads == names_read(value) == names_used(value)
    statement = gast.Assign(targets=[gast.Name("t", gast.Store(), None, None)], value=value)
    assert written_by(statement) == names_written(statement)


def test_the_plain_checks_see_through_the_commonest_values():
    for text in ("x", "1.5", "-x", "x + 2", "np.sin(x)", "f(x, 2, k=y)", "obj.method(x)"):
        assert writes_nothing(parse_expression(text)), text
    for text in ("(y := x + 1)", "[v for v in x]", "f(lambda v: v + 1, x)", "x[0]"):
        assert not writes_nothing(parse_expression(text)), text


_PROGRAMS = """
import numpy as np


def straight(x):
    t0 = x
    t1 = x * 0.5
    t2 = np.sin(t1) * 0.5 + t0
    t3 = t2 * t1 * 0.25
    t4 = np.tanh(t3 - 0.1 * t2)
    t5 = t4 + np.exp(-t3 * t3)
    return np.sum(t5)


def literal_entries(x):
    pair = (np.sin(x), x * 2.0)
    named = {"a": x ** 2, "b": np.cos(x)}
    return np.sum(pair[0] * named["b"]) + np.sum(pair[1]) + np.sum(named["a"])


def item_writes(x):
    y = np.zeros(4)
    n = 1
    y[0] = x[0] * 2.0
    y[n + 1] = np.sin(x[1])
    y[3] = y[0] * x[2]
    return np.sum(y * y)


def overwritten(x):
    y = x * 2.0
    y = np.sin(y) + x
    if np.sum(x) > 0:
        y = y * y
    return np.sum(y)


def attribute_reads(x):
    a = x.T
    b = np.sum(a * x) + x.shape[0]
    return b * np.max(x)
"""


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    path = tmp_path_factory.mktemp("fast_paths") / "fast_path_programs.py"
    path.write_text(_PROGRAMS)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(path.stem, None)


@pytest.mark.parametrize(
    "name", ["straight", "literal_entries", "item_writes", "overwritten", "attribute_reads"]
)
@pytest.mark.parametrize("mode", MODES)
def test_gradients_through_the_fast_paths(programs, name, mode):
    x = np.array([0.3, -0.4, 0.8])
    f = getattr(programs, name)
    gradient = sg.grad(f, mode=mode)(x)
    step = 1e-6
    expected = np.array([(f(x + step * e) - f(x - step * e)) / (2 * step) for e in np.eye(len(x))])
    np.testing.assert_allclose(gradient, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.grad(f, mode=mode)(x), gradient)  # the second call too


def test_the_sweeps_nodes_are_the_ones_the_generic_constructors_make():
    """reverse/nodes.py makes names and sums without gast's constructor: the same fields
    in the same order, the one context syntax shares, a fresh operator per sum."""
    assert name_load("dy").__dict__ == load("dy").__dict__
    assert list(name_load("dy").__dict__) == list(load("dy").__dict__)
    assert name_load("dy").ctx is load("z").ctx
    assert name_store("dy").__dict__ == store("dy").__dict__
    assert list(name_store("dy").__dict__) == list(store("dy").__dict__)
    left, right = load("a"), load("b")
    made = added(left, right)
    expected = gast.BinOp(left=left, op=gast.Add(), right=right)
    assert gast.dump(made) == gast.dump(expected)
    assert list(made.__dict__) == list(expected.__dict__)
    assert made.left is left and made.right is right
    assert added(left, right).op is not made.op  # no node shared between two sums


def test_a_rules_plan_is_the_one_inline_rule_inlines_by():
    """RuleAdjoints.plan looks plans up per rule and count: rule_plan is has_plan's plan."""
    for rule in inlined_vjp_rules():
        for count in (1, 2, 3):
            assert (rule_plan(rule, count) is not None) == has_plan(rule, count), rule


def test_constant_keeps_literal_defaults_plain():
    assert gast.dump(constant(None)) == gast.dump(parse_expression("None"))
