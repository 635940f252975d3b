"""The facts of the body's statements handed from the broadcast definitions' stripping to the
optimiser (``Finishing.facts``): one walk of every statement where there were two, the
same code, and the facts dropped wherever they might not be true any more.
"""

from __future__ import annotations

import dataclasses
import textwrap

import gast
import numpy as np
from oracle import numeric_grad

import s2sgrad as sg
from s2sgrad.compiler import finishing, pipeline
from s2sgrad.compiler.annotations import BROADCAST_FREE, annotate
from s2sgrad.compiler.codegen import to_source
from s2sgrad.compiler.optimize.facts import FactsCache
from s2sgrad.compiler.specialize.broadcasts import (
    holds_broadcast_calls,
    strip_broadcast_definitions,
)


def f(x, w):
    h = np.tanh(x * w) + x
    u = np.sin(h) * w
    return np.sum(u * h) + np.sum(h)


def _parsed(source: str) -> gast.FunctionDef:
    function = gast.parse(textwrap.dedent(source)).body[0]
    for node in gast.walk(function):  # the probe marks the left of each ``d * ...``
        left = getattr(node, "left", None)
        if isinstance(node, gast.BinOp) and isinstance(left, gast.Name) and left.id == "d":
            annotate(node, BROADCAST_FREE, ["left"])
    return function


def test_the_optimiser_starts_from_the_facts_the_stripping_walked(monkeypatch):
    primed = []
    handed = []
    prime, optimize = FactsCache.prime, finishing.optimize

    def counting_prime(cache, body, *more):
        primed.append(len(body))
        return prime(cache, body, *more)

    def seeing_optimize(body, is_pure, facts=None):
        handed.append(facts is not None)
        return optimize(body, is_pure, facts)

    x, w = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 1.5, 5)
    generated = pipeline.derivative(f, ("x", "w"))
    monkeypatch.setattr(FactsCache, "prime", counting_prime)
    monkeypatch.setattr(finishing, "optimize", seeing_optimize)
    _, fast = finishing.specialised(generated, (x, w), {})
    assert handed[0] is True  # the optimise pass, first to optimise: given the facts
    assert not any(handed[1:])  # later optimisations (after other passes) walk again
    assert "broadcast_to" not in to_source(fast.node)
    body = len(generated.raw_node.body)
    assert primed.count(body) <= 1  # not walked twice over (the raw body's size, once)


def test_the_code_is_the_one_the_optimiser_makes_walking_itself(monkeypatch):
    x, w = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 1.5, 5)
    generated = pipeline.derivative(f, ("x", "w"))
    _, handed = finishing.specialised(generated, (x, w), {})

    def not_handing(node, state):
        if state.probing.broadcast_free:  # strips, but the optimiser walks on its own
            strip_broadcast_definitions(node)
        return node

    steps = tuple(
        dataclasses.replace(step, run=not_handing)
        if step.name == "strip broadcast definitions"
        else step
        for step in finishing.PASSES
    )
    monkeypatch.setattr(finishing, "PASSES", steps)
    generated = pipeline.derivative(f, ("x", "w"))
    _, walked = finishing.specialised(generated, (x, w), {})
    assert to_source(handed.node) == to_source(walked.node)


def test_gradients_match_central_differences():
    x, w = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 1.5, 5)
    g = sg.grad(f, wrt=(0, 1))
    for _ in range(2):  # the generic code's call, then the specialised code's
        dx, dw = g(x, w)
        np.testing.assert_allclose(dx, numeric_grad(f, (x, w), 0), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dw, numeric_grad(f, (x, w), 1), rtol=1e-6, atol=1e-8)


_BROADCAST_DEFINED_AT_THE_TOP = """
def g(e, S, a):
    d = np.broadcast_to(e, S)
    y = d * a
    return y
"""


def test_a_definition_stripped_at_the_top_is_forgotten_the_rest_kept():
    function = _parsed(_BROADCAST_DEFINED_AT_THE_TOP)
    facts = strip_broadcast_definitions(function)
    assert "d = e" in to_source(function)
    assert facts is not None
    definition, use, _ = function.body
    assert facts.known(definition) is None  # changed: walked again when asked
    assert facts.known(use) is not None


def test_no_facts_when_the_definition_is_inside_a_branch():
    function = _parsed(
        """
        def g(e, S, a, c):
            if c:
                d = np.broadcast_to(e, S)
                y = d * a
            return y
        """
    )
    assert strip_broadcast_definitions(function) is None  # the if's facts would be stale
    assert "d = e" in to_source(function)


def test_no_facts_when_the_stripped_name_becomes_a_view_of_an_array_written_in_place():
    function = _parsed(
        """
        def g(e, S, a):
            d = np.broadcast_to(e, S)
            y = d * a
            e[0] = 1.0
            return y
        """
    )
    assert strip_broadcast_definitions(function) is None  # d = e: d shares e's memory now
    assert "d = e" in to_source(function)


def test_a_read_broadcasting_does_not_restore_keeps_the_definition():
    function = _parsed(
        """
        def g(e, S, a):
            d = np.broadcast_to(e, S)
            y = d * a
            return y + h(d)
        """
    )
    facts = strip_broadcast_definitions(function)  # d is read twice, once by h
    assert "np.broadcast_to(e, S)" in to_source(function)
    assert facts is not None and facts.known(function.body[0]) is not None  # unchanged


def _stripping_again(monkeypatch) -> list[bool]:
    """Record what each run of the second stripping (after the optimiser) returns."""
    stripped: list[bool] = []
    strip = finishing.strip_broadcasts_in

    def recording(node):
        stripped.append(strip(node))
        return stripped[-1]

    monkeypatch.setattr(finishing, "strip_broadcasts_in", recording)
    return stripped


def test_no_second_stripping_when_the_optimiser_left_no_broadcast_call(monkeypatch):
    stripped = _stripping_again(monkeypatch)
    x, w = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 1.5, 5)
    g = sg.grad(f, wrt=(0, 1))
    g(x, w)
    dx, dw = g(x, w)  # the specialised code
    assert "broadcast_to" not in sg.source(g)
    assert stripped == []  # its walk of the whole function is skipped
    np.testing.assert_allclose(dx, numeric_grad(f, (x, w), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dw, numeric_grad(f, (x, w), 1), rtol=1e-6, atol=1e-8)


def mean_rows(x, y):
    t = (np.cos(x) * 0.5) + 0.1 * y
    r = np.mean(t, axis=-1, keepdims=True)
    r = r * np.sqrt(1.0 + np.sum(y) ** 2)
    return np.sum(r**2) * 0.5


def test_the_second_stripping_runs_where_folding_brought_a_broadcast_together(monkeypatch):
    stripped = _stripping_again(monkeypatch)
    rng = np.random.default_rng(0)
    x, y = rng.uniform(-1.2, 1.2, size=(2, 3)), rng.uniform(-1.2, 1.2, size=3)
    g = sg.grad(mean_rows, wrt=(0, 1))
    g(x, y)
    dx, dy = g(x, y)  # the specialised code
    assert stripped == [True]  # a broadcast the optimiser left, stripped
    np.testing.assert_allclose(dx, numeric_grad(mean_rows, (x, y), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dy, numeric_grad(mean_rows, (x, y), 1), rtol=1e-6, atol=1e-8)


def test_broadcast_calls_are_found_in_blocks_nested_functions_and_defaults():
    for source, found in (
        ("def g(e, S, c):\n    if c:\n        y = np.broadcast_to(e, S) * 2\n    return y", True),
        ("def g(e, S):\n    h = lambda v: np.expand_dims(v, 0) * e\n    return h(e)", True),
        ("def g(e, S=np.broadcast_to(1.0, (2,))):\n    return e * S", True),
        ("def g(e, S, c):\n    if c:\n        y = np.sum(e) * 2\n    return y", False),
    ):
        function = _parsed(source)
        facts = FactsCache()
        facts.prime(function.body)
        assert holds_broadcast_calls(function, facts) is found, source
    function = _parsed("def g(e, S):\n    y = np.tanh(e) * 2\n    return y")
    facts = FactsCache(enabled=False)  # no records kept: it cannot tell
    assert holds_broadcast_calls(function, facts) is True


def test_no_second_look_for_views_when_no_array_is_written_in_place(monkeypatch):
    from s2sgrad.compiler.specialize import broadcasts

    looked = []
    views = broadcasts.views_of_updated_arrays

    def counting(body, *rest):
        looked.append(len(body))
        return views(body, *rest)

    monkeypatch.setattr(broadcasts, "views_of_updated_arrays", counting)
    function = _parsed(_BROADCAST_DEFINED_AT_THE_TOP)
    facts = strip_broadcast_definitions(function)
    assert "d = e" in to_source(function) and facts is not None
    assert facts.updated == set() and looked == []  # ``d = e`` can be no view that matters
    written = _parsed(
        """
        def g(e, S, a):
            d = np.broadcast_to(e, S)
            y = d * a
            a[0] = 1.0
            return y
        """
    )
    assert strip_broadcast_definitions(written) is not None  # d is no view of a
    assert looked == [4]  # an array is written in place: the views were looked at again


def repeats(x, w):
    t = x * w
    a = np.exp(t)
    b = np.exp(t)
    return np.sum(a * b + np.sin(t) * np.cos(t) + np.sin(t))


def test_common_calls_merging_keeps_the_facts_and_the_code(monkeypatch):
    x, w = np.linspace(-1.0, 1.0, 5), np.linspace(0.5, 1.5, 5)
    kept = []
    [common_calls] = [s.run for s in finishing.PASSES if s.name == "compute each pure call once"]

    def seeing(node, state):
        before = list(node.body)
        node = common_calls(node, state)
        kept.append((node.body != before, state.facts is not None))
        return node

    steps = tuple(
        dataclasses.replace(step, run=seeing) if step.run is common_calls else step
        for step in finishing.PASSES
    )
    monkeypatch.setattr(finishing, "PASSES", steps)
    generated = pipeline.derivative(repeats, ("x", "w"))
    _, handed = finishing.specialised(generated, (x, w), {})
    assert kept[-1] == (True, True)  # a call merged, the facts handed on

    def dropping(node, state):
        node = common_calls(node, state)
        state.facts = None  # the optimiser walks on its own
        return node

    steps = tuple(
        dataclasses.replace(step, run=dropping) if step.run is common_calls else step
        for step in finishing.PASSES
    )
    monkeypatch.setattr(finishing, "PASSES", steps)
    generated = pipeline.derivative(repeats, ("x", "w"))
    _, walked = finishing.specialised(generated, (x, w), {})
    assert to_source(handed.node) == to_source(walked.node)
    dx, dw = sg.grad(repeats, wrt=(0, 1))(x, w)
    np.testing.assert_allclose(dx, numeric_grad(repeats, (x, w), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dw, numeric_grad(repeats, (x, w), 1), rtol=1e-6, atol=1e-8)
