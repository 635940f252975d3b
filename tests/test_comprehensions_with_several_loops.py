"""Comprehensions with several ``for`` clauses, by source transformation.

``[e for a in xs for b in ys]`` was refused in mode "s2s" ("cannot differentiate through
ListComp"); it is now the nested loops Python runs: the first iterable computed once in the
function's scope, each later one every time round (it may read the outer variables), the
variables the comprehension's own. Pairwise interactions are written this way."""

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

R = np.random.default_rng(3501)


def pairwise_energy(x):
    points = x.reshape(3, 2)
    return sum(
        1.0 / (0.5 + np.sum((p - q) ** 2))
        for i, p in enumerate(points)
        for j, q in enumerate(points)
        if i < j
    )


def inner_loop_reads_the_outer_variable(x):
    terms = [x[i] * y for i in range(len(x)) for y in x[i:] if y > -10.0]
    return np.sum(np.array(terms) ** 2)


def products_by_name(x):
    table = {(a, b): x[a] * np.sin(x[b]) for a in range(2) for b in range(a, 3)}
    return table[(0, 2)] + table[(1, 1)] * table[(0, 0)]


def shadowing_the_functions_names(x):
    u = x * 2.0
    k = 3.0
    pieces = [u * k for u in (x, x**2) for k in (1.0, 0.5)]
    return np.sum(pieces[0] * pieces[3]) + np.sum(u) * k


def three_clauses_and_a_condition(x):
    total = 0.0
    for value in (a * b * c for a in x[:2] for b in x[1:] if b > a - 5.0 for c in (1.0, -2.0)):
        total = total + np.tanh(value)
    return total


def grid_of_rows(x):
    m = x.reshape(2, 3)
    rows = [[m[i, j] ** 2 + m[i, (j + 1) % 3] for j in range(3)] for i in range(2)]
    flat = [v for row in rows for v in row]
    return np.sum(np.array(flat) * np.arange(1.0, 7.0))


PROGRAMS = [
    pairwise_energy,
    inner_loop_reads_the_outer_variable,
    products_by_name,
    shadowing_the_functions_names,
    three_clauses_and_a_condition,
    grid_of_rows,
]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_several_for_clauses(f, mode):
    x = R.uniform(0.3, 1.2, size=6 if f in (pairwise_energy, grid_of_rows) else 3)
    v = R.normal(size=x.shape)
    if mode == "s2s" and f is products_by_name:
        # a dict's entries read back in the gradient: forward mode over it is refused by
        # source transformation with one for clause too (auto and tape do it)
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
        assert_close(sg.jvp(f, (x,), (v,), mode=mode)[1], numeric_jvp(f, [x], 0, v))
        with pytest.raises(sg.UnsupportedError, match="forward mode .* over the gradient"):
            sg.hvp(f, (x,), (v,), mode=mode)
        return
    assert_grad_jvp_and_hvp(f, x, v, mode)


def test_the_first_iterable_is_read_in_the_functions_scope():
    """``[u * 2 for u in u]``: the iterable is the function's ``u``; the variable is the
    comprehension's own, and the function's ``u`` is unchanged after it."""

    def f(x):
        u = [x[0], x[1] * 3.0]
        doubled = [u * 2.0 for u in u for _ in range(2)]
        return doubled[0] * doubled[3] + u[1]

    x = np.array([0.7, -0.4])
    # f = (2 x0)(6 x1) + 3 x1
    np.testing.assert_allclose(sg.grad(f, mode="s2s")(x), [12 * x[1], 12 * x[0] + 3.0])
