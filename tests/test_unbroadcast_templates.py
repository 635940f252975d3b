"""A rule's plan drops the ``unbroadcast`` calls of ``y = x * 2`` from its template once
(``compiler/unbroadcast_templates.py``, a plan's ``without_unbroadcasts``): its copies
are the nodes the backward sweep's walk (``reverse/rules.without_unbroadcasts``) makes
of the whole plan's, and the gradients through it are right."""

from __future__ import annotations

import itertools

import gast
import numpy as np
import pytest
from rulecheck import inlined_vjp_rules
from written_source import function_in_file

import s2sgrad as sg
import s2sgrad.compiler.reverse.rules as reverse_rules
from s2sgrad import runtime
from s2sgrad.compiler.inline import rule_plan
from s2sgrad.compiler.namespace import Namespace
from s2sgrad.compiler.passes.names import NameGenerator
from s2sgrad.compiler.syntax import constant, load
from s2sgrad.compiler.unbroadcast_templates import stripped_template
from s2sgrad.rules.registry import get_rule


def _entries(plan, args, walked: bool):
    namespace = Namespace(NameGenerator({"dy", "y", "a", "np"}))
    wanted = set(range(len(args)))
    inlined = plan.inline(load("dy"), load("y"), args, wanted, namespace)
    entries = inlined.entries
    if walked:
        unbroadcast = runtime.unbroadcast
        objects = namespace.objects
        entries = [
            None if e is None else reverse_rules.without_unbroadcasts(e, objects, unbroadcast, "a")
            for e in entries
        ]
    return [None if e is None else gast.dump(e) for e in entries]


def test_stripped_plans_make_what_the_walk_makes_of_the_plans_copies():
    stripped = 0
    for rule in inlined_vjp_rules():
        for count in (1, 2, 3):
            plan = rule_plan(rule, count)
            if plan is None:
                continue
            for size in range(1, count + 1):
                for positions in itertools.combinations(range(count), size):
                    chosen = frozenset(positions)
                    made = plan.without_unbroadcasts(chosen, runtime.unbroadcast)
                    if made is None:
                        continue
                    args = [load("a") if i in chosen else constant(2.0) for i in range(count)]
                    assert _entries(made, args, False) == _entries(plan, args, True), rule
                    stripped += made is not plan
    assert stripped >= 6  # add, subtract, multiply, divide at either position: not vacuous


def test_stripping_leaves_the_template_as_it_was():
    plan = rule_plan(get_rule(np.multiply).vjp, 2)
    before = [gast.dump(part) for part in plan.parts]
    made = plan.without_unbroadcasts(frozenset({0}), runtime.unbroadcast)
    assert made is not None and made is not plan
    assert [gast.dump(part) for part in plan.parts] == before
    assert plan.without_unbroadcasts(frozenset({0}), runtime.unbroadcast) is made  # kept


def test_a_template_with_a_lambda_is_not_stripped():
    template = gast.parse("(lambda v: unbroadcast(v, x))(g)").body[0].value
    assert stripped_template(template, lambda call: True) is None


_PROGRAM = """
import numpy as np


def scaled(x):
    a = x * 2.0
    b = 0.5 * a
    c = -b
    d = c / 3.0
    e = d - 1.5
    f = 4.0 - e
    return np.sum(np.sin(f) * x)
"""


@pytest.fixture(scope="module")
def scaled(tmp_path_factory):
    directory = tmp_path_factory.mktemp("unbroadcast_templates")
    return function_in_file(directory, "unbroadcast_program", _PROGRAM.splitlines(), "scaled")


def test_scalar_steps_are_differentiated_without_walking_their_entries(scaled, monkeypatch):
    def walked(*_):
        raise AssertionError("a scalar step's entries walked for unbroadcast calls")

    monkeypatch.setattr(reverse_rules, "without_unbroadcasts", walked)
    gradient = sg.grad(scaled, mode="s2s")
    x = np.array([0.3, -0.4, 0.8])
    step = 1e-6
    f = scaled
    expected = np.array([(f(x + step * e) - f(x - step * e)) / (2 * step) for e in np.eye(3)])
    np.testing.assert_allclose(gradient(x), expected, rtol=1e-6, atol=1e-8)
    raw = sg.source(gradient, optimize=False)
    backward = raw[raw.index("grad of: a = x * 2.0") :]
    assert "unbroadcast" not in backward.splitlines()[1]  # dx = da * 2.0
