"""Comprehensions with several ``for`` clauses are transformed: nested loops, the later
sequences computed inside the earlier loops (``range(i)``), and the comprehension's own
variables kept apart from the function's."""

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg


def pair_products(x):
    return sum(x[i] * x[j] for i in range(3) for j in range(i))


def filtered_pairs(x):
    return np.sum(np.stack([x[i] * x[j] for i in range(3) for j in range(3) if i != j if j > 0]))


def flattened_rows(x):
    rows = [[x[i] ** (j + 1) for j in range(2)] for i in range(3)]
    return sum(v for row in rows for v in row)


def shadowed_variable(x):
    i = 2
    total = sum(x[i] * x[j] for i in range(3) for j in range(i + 1))
    return total * x[i]


def keyed_pairs(x):
    d = {(i, j): x[i] * x[j] for i in range(3) for j in range(i, 3)}
    return d[(0, 1)] + d[(2, 2)] * d[(1, 2)]


def element_pairs(x):
    pairs = [(a, b) for a in x for b in x[:2]]
    return sum(a * np.sin(b) for a, b in pairs)


@pytest.mark.parametrize(
    "f",
    [pair_products, filtered_pairs, flattened_rows, shadowed_variable, keyed_pairs, element_pairs],
)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_comprehension_with_several_for_clauses(f, mode):
    x = np.array([0.3, -0.5, 1.2])
    assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))


def test_the_later_sequences_are_loops_inside_the_first():
    code = sg.source(sg.grad(pair_products, mode="s2s"))
    assert code.count("for ") >= 2 and "dynamic_vjp" not in code
