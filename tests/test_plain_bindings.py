"""``name = value`` of atoms (the commonest statement of the normal form) answers
``names_read``, ``names_written``, ``names_modified`` and ``names_changed_in_place``
without a walk (issue 15's transform time): the answers are a walk's for every form, and
functions whose loops change lists and arrays in place, which the sweeps ask these of,
still have right gradients in every mode against central differences."""

from __future__ import annotations

import gast
import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler import syntax

PLAIN = [
    ("y = x", ("y", ["x"])),
    ("y = 2.0", ("y", [])),
    ("y = a * b", ("y", ["a", "b"])),
    ("y = -a", ("y", ["a"])),
    ("y = np.sin(t1)", ("y", ["np", "t1"])),
    ("y = f(a, 2, k=b)", ("y", ["f", "a", "b"])),
    ("y = items.pop()", ("y", ["items"])),
]
NOT_PLAIN = [
    "y = z = x",
    "y[i] = x",
    "a, b = x",
    "y.w = x",
    "y = a * b + c",
    "y = f(g(x))",
    "y = f(*xs)",
    "y = np.linalg.norm(x)",
    "y = (lambda v: v)(x)",
    "y = [v := x]",
    "y = x[0]",
]


def _statement(source: str) -> gast.stmt:
    return gast.parse(source).body[0]


@pytest.mark.parametrize(("source", "expected"), PLAIN)
def test_plain_bindings_are_seen_through(source, expected):
    assert syntax.plain_binding(_statement(source)) == expected


@pytest.mark.parametrize("source", NOT_PLAIN)
def test_other_statements_are_walked(source):
    assert syntax.plain_binding(_statement(source)) is None


def _walked(node: gast.AST, context: type) -> set[str]:
    """The names of ``context`` a walk finds below ``node`` (none of these statements
    defines a function, whose own names the answers leave out)."""
    return {n.id for n in syntax.walk(node) if type(n) is gast.Name and type(n.ctx) is context}


def _walked_modified(node: gast.AST) -> set[str]:
    """``names_modified`` as a walk answers it: the names written, the bases of items and
    attributes stored into, and the receivers of mutating methods."""
    found = _walked(node, gast.Store)
    for child in syntax.walk(node):
        if type(child) in (gast.Subscript, gast.Attribute) and type(child.ctx) is gast.Store:
            base = child.value
            while type(base) in (gast.Subscript, gast.Attribute):
                base = base.value
            if type(base) is gast.Name:
                found.add(base.id)
        elif (
            type(child) is gast.Call
            and type(child.func) is gast.Attribute
            and type(child.func.value) is gast.Name
            and child.func.attr in syntax.MUTATING_METHODS
        ):
            found.add(child.func.value.id)
    return found


@pytest.mark.parametrize("source", [s for s, _ in PLAIN] + NOT_PLAIN + ["items.append(x)"])
def test_the_answers_are_a_walks(source):
    node = _statement(source)
    read, written = _walked(node, gast.Load), _walked(node, gast.Store)
    modified = _walked_modified(node)
    assert syntax.names_read(node) == read
    assert syntax.names_written(node) == written
    assert syntax.names_modified(node) == modified
    assert syntax.names_changed_in_place(node) == modified - written


def popped_in_a_loop(x):
    items = [x * 0.5, np.sin(x), x**2]
    total = 0.0
    for _ in range(2):
        v = items.pop()
        total = total + np.sum(v * x)
    return total + np.sum(items[0])


def written_into_in_a_loop(x):
    y = np.zeros(3)
    for i in range(3):
        t = np.tanh(x[i] * 2.0)
        y[i] = t * x[i]
    return np.sum(y * x)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("function", [popped_in_a_loop, written_into_in_a_loop])
def test_gradients_of_loops_changing_values_in_place(function, mode):
    x = np.random.default_rng(15).normal(size=3)
    expected = numeric_grad(function, (x,), 0)
    assert_close(call_twice(sg.grad(function, mode=mode), x), expected)
