"""The front of the pipeline does each piece of work once (issue 15's transform time): the
activity analysis classifies each value once, the search for checkpointed loops runs only
where the parsed function has a ``for``, and the loops pass walks only a function with
something it may rewrite but partials; the gradients stay right against central
differences, and a checkpointed loop is still found where there is one."""

from __future__ import annotations

import functools

import gast
import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler import pipeline
from s2sgrad.compiler.node_kinds import kinds_of
from s2sgrad.compiler.passes import loops
from s2sgrad.compiler.syntax import walk

RNG = np.random.default_rng(1515)


def straight_line(x):
    a = np.sin(x) * 0.5 + x
    b = np.tanh(a - 0.1 * x)
    c = a * b * 0.25
    d = c + np.exp(-b * b)
    return np.sum(d * a)


def checkpointed_loop(x):
    y = x
    for _ in sg.checkpointed(range(4), snapshots=2):
        y = np.sin(y) * 0.9 + 0.1 * x
    return np.sum(y)


def _assert_gradient_right(f):
    x = RNG.standard_normal(5)
    expected = numeric_grad(f, (x,), 0)
    gradient = sg.grad(f, mode="s2s")
    for _ in range(2):
        assert_close(gradient(x), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kind", ["grad", "jvp"])
def test_activity_classifies_each_value_once(monkeypatch, kind):
    """Both fixed points of the activity analysis read whether a value blocks the
    derivative: it is asked once of each value, not once per fixed point."""
    classified: list[int] = []
    classify = pipeline.classify

    def counting(value, parsed, local_names):
        classified.append(id(value))
        return classify(value, parsed, local_names)

    monkeypatch.setattr(pipeline, "classify", counting)

    def f(x):
        a = np.sin(x) * 0.5 + x
        b = np.tanh(a - 0.1 * x)
        return np.sum(a * b)

    pipeline.derivative(f, ("x",), kind)
    assert classified
    assert len(classified) == len(set(classified))
    _assert_gradient_right(straight_line)


def test_checkpointed_loops_are_looked_for_only_with_a_for(monkeypatch):
    """A function without a ``for`` holds no checkpointed loop: none is looked for."""
    looked: list[str] = []
    rewrite = pipeline.rewrite_checkpointed_loops

    def noting(node, *args):
        looked.append(node.name)
        return rewrite(node, *args)

    monkeypatch.setattr(pipeline, "rewrite_checkpointed_loops", noting)
    _assert_gradient_right(straight_line)
    assert "straight_line" not in looked
    _assert_gradient_right(checkpointed_loop)
    assert "checkpointed_loop" in looked


def test_a_checkpointed_loop_is_still_rewritten():
    generated = pipeline.derivative(checkpointed_loop, ("x",))
    assert "run_checkpointed_vjp(" in generated.source
    _assert_gradient_right(checkpointed_loop)


def with_partial(x):
    h = functools.partial(_weighted, np.cos(x))
    return np.sum(h(x))


def _weighted(a, b):
    return a * np.exp(b)


@pytest.mark.parametrize("f", [straight_line, with_partial])
def test_loops_pass_walks_no_function_without_a_loop(monkeypatch, f):
    """A function with no loop, comprehension, lambda, nested def, map or call of a call
    is not walked by the loops pass (a partial it inlines is still inlined)."""
    walked: list[gast.FunctionDef] = []
    walk = loops.walk

    def noting(node):
        walked.append(node)
        return walk(node)

    monkeypatch.setattr(loops, "walk", noting)
    _assert_gradient_right(f)
    names = [n.name for n in walked if isinstance(n, gast.FunctionDef)]
    assert (f.__name__ in names) == (f is with_partial)  # walked after inlining, only


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def f(x):\n    return np.sin(x) * 2\n", True),
        ("def f(x):\n    for i in range(3):\n        x = x * 2\n    return x\n", False),
        ("def f(x):\n    return sum(map(np.sin, x))\n", False),
        ("def f(x):\n    return g(1)(x)\n", False),
        ("def f(x):\n    t = x * 1\n    ufunc().at(t, [0], 1.0)\n    return t\n", False),
        ("def f(x):\n    return np.sum([v for v in x])\n", False),
        ("def f(x):\n    return (lambda v: v)(x)\n", False),
    ],
)
def test_only_partials_to_rewrite(source, expected):
    node = gast.parse(source).body[0]
    nodes = walk(node)
    assert loops.only_partials_to_rewrite(nodes, node, kinds_of(nodes)) is expected
