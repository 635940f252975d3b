"""The front of the pipeline does each piece of work once (issue 15's transform time): the
activity analysis classifies each value once, and the search for checkpointed loops runs
only where the parsed function has a ``for``; the gradients stay right against central
differences, and a checkpointed loop is still found where there is one."""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler import pipeline

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
