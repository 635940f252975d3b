"""Reverse mode's sweeps hand over steps, not facts stuck on syntax nodes.

The forward sweep records a step per statement and the backward sweep reads the steps;
what stays on a node travels with it through cloning and is declared in
compiler/annotations.py. A program touching every kind of step (a loop that breaks, a
while loop, a branch, a call of a user function, a call dispatched at run time, list
appends and pops, an item write, a value overwritten) is differentiated in each mode,
against central differences, and its derivative code is checked for undeclared facts.
"""

from __future__ import annotations

import gast
import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler import pipeline
from s2sgrad.compiler.annotations import ANNOTATIONS

RNG = np.random.default_rng(20261126)


def squash(u, scale):
    return np.tanh(u) * scale


class Layer:
    def __init__(self, weight):
        self.weight = weight

    def __call__(self, u):
        return u * self.weight


LAYER = Layer(np.array([0.5, -1.5, 2.0]))


def static_steps(x, y):
    total = x * 0.0
    for i in range(4):
        if np.sum(total) > 3.0:
            break
        total = total + np.sin(x * (i + 1))
    count = 0
    while count < 2:
        total = squash(total, y) + x
        count = count + 1
    items = [x, y]
    items.append(total * y)
    last = items.pop()
    buffer = np.zeros_like(x)
    buffer[1] = np.sum(last * x)
    return total, buffer, items[0]


def static_loss(x, y):
    total, buffer, first = static_steps(x, y)
    return np.sum(total**2) + np.sum(buffer * first)


def every_kind_of_step(x, y):
    total, buffer, first = static_steps(x, y)
    if np.sum(y) > 0.0:
        scaled = LAYER(total)  # dispatched when it runs
        total = scaled * y
    else:
        total = total - y
    return np.sum(total**2) + np.sum(buffer * first)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_program_with_every_kind_of_step_has_the_right_gradient(mode):
    for _ in range(3):
        x, y = RNG.normal(size=3), RNG.normal(size=3) + 0.5
        gradient = sg.grad(every_kind_of_step, wrt=(0, 1), mode=mode)
        expected = tuple(numeric_grad(every_kind_of_step, [x, y], i) for i in (0, 1))
        assert_close(call_twice(gradient, x, y), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_the_gradient_of_those_steps_has_the_right_hvp(mode):
    x, y = RNG.normal(size=3), RNG.normal(size=3) + 0.5
    direction = RNG.normal(size=3)
    product = sg.hvp(static_loss, (x, y), (direction, np.zeros(3)), mode=mode)[0]
    gradient = sg.grad(static_loss, wrt=0, mode="tape")
    expected = numeric_grad(lambda u: np.sum(gradient(u, y) * direction), [x], 0)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)


def test_the_derivative_code_carries_only_declared_annotations(monkeypatch):
    made = []
    reverse_sweeps = pipeline.reverse_sweeps

    def keeping(*args, **kwargs):
        sweeps = reverse_sweeps(*args, **kwargs)
        made.append(sweeps)
        return sweeps

    monkeypatch.setattr(pipeline, "reverse_sweeps", keeping)
    sg.grad(lambda x, y: every_kind_of_step(x, y) * 1.0, mode="s2s")(np.ones(3), np.ones(3))
    assert len(made) >= 2  # the function, and the helper it calls
    for sweeps in made:
        for statement in sweeps.forward + sweeps.backward:
            for node in gast.walk(statement):
                extra = set(vars(node)) - set(node._fields) - set(node._attributes)
                assert extra <= ANNOTATIONS, (type(node).__name__, extra - ANNOTATIONS)
