"""A backward loop that pops one saved value per iteration iterates the saved list instead
(``optimize/stack_loops.py``): right against central differences in every mode, and left
alone where the pops and the pushes could differ."""

from __future__ import annotations

import warnings

import gast
import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.optimize.stack_loops import iterate_saved_stacks


def scalar_recurrence(a, b, x):
    for _ in range(30):
        x = np.sin(x) * a + b * x
    return x


def scalar_recurrence_square(a, b, x):
    for _ in range(12):
        x = np.cos(x) * a + b * x * x
    return x


def array_recurrence(w, x):
    for _ in range(5):
        x = np.tanh(x * w) + 0.5 * x
    return np.sum(x**2)


CASES = [
    (scalar_recurrence, (0.4, 0.3, 0.2)),
    (scalar_recurrence_square, (0.3, 0.2, 0.5)),
    (array_recurrence, (np.array([0.5, -0.3, 0.8]), np.array([0.1, 0.2, -0.4]))),
]


@pytest.mark.parametrize("f, args", CASES)
@pytest.mark.parametrize("wrt", [0, 1])
def test_gradient_against_differences(f, args, wrt):
    expected = numeric_grad(f, args, wrt)
    for mode in ("s2s", "auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            actual = call_twice(sg.grad(f, wrt=wrt, mode=mode), *args)
        assert_close(actual, expected, rtol=1e-6)


def test_the_scalar_backward_iterates_the_saved_values():
    gradient = sg.grad(scalar_recurrence, wrt=(0, 1), mode="s2s")
    call_twice(gradient, 0.4, 0.3, 0.2)
    code = sg.source(gradient)
    assert "for x in reversed(stack):" in code
    assert ".pop()" not in code


def rewritten(source: str) -> str:
    body = gast.parse(source).body
    iterate_saved_stacks(body)
    return gast.unparse(gast.Module(body=body, type_ignores=[])).strip()


PAIR = (
    "stack = []\nfor _ in range(3):\n    stack.append(x)\n    x = f(x)\n"
    "for _ in reversed(range(3)):\n    x = stack.pop()\n    d = d * g(x)"
)


def test_the_rewrite():
    assert rewritten(PAIR).endswith("for x in reversed(stack):\n    d = d * g(x)")
    later = PAIR.replace("    x = stack.pop()", "    e = 2 * d\n    x = stack.pop()")
    assert rewritten(later).endswith("for x in reversed(stack):\n    e = 2 * d\n    d = d * g(x)")


@pytest.mark.parametrize(
    "source",
    [
        PAIR.replace("    x = f(x)\n", "    x = f(x)\n    if x > 1:\n        break\n"),
        PAIR.replace("    x = f(x)\n", "    x = f(x)\n    stack.append(x)\n"),  # two pushes
        PAIR.replace("reversed(range(3))", "reversed(range(2))"),  # fewer pops
        PAIR.replace("reversed(range(3))", "reversed(range(n))").replace(
            "in range(3)", "in range(n)"
        ),
        PAIR.replace("for _ in reversed", "for i in reversed") + "\n    d = d * i",  # i read
        PAIR + "\ny = stack",  # the list read after
        PAIR.replace("stack = []\n", "stack = []\nstack.append(y)\n"),  # pushed before
        PAIR.replace("    d = d * g(x)", "    d = d * g(x)\n    x = stack.pop()"),  # two pops
        PAIR.replace("    x = stack.pop()", "    e = x\n    x = stack.pop()"),  # x read first
    ],
)
def test_left_alone_when_pops_and_pushes_may_differ(source):
    assert rewritten(source) == gast.unparse(gast.parse(source)).strip()


def test_the_rewrite_inside_a_branch_and_nothing_without_a_backward_loop():
    nested = "if c:\n" + "\n".join("    " + line for line in PAIR.splitlines())
    assert rewritten(nested).endswith("    for x in reversed(stack):\n        d = d * g(x)")
    forward_only = PAIR.replace("reversed(range(3))", "range(3)")
    body = gast.parse(forward_only).body
    assert iterate_saved_stacks(body) is False
