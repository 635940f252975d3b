"""Loops save only what their backward sweep reads for its values.

``b = b * 2`` in a ``while`` loop: ``b * 2`` has b's shape, so the cotangent needs no
``unbroadcast(..., b)`` and the loop saves nothing per iteration, only its trip count.
Loops whose shapes or branches change per iteration stay right (finite differences).
"""

from __future__ import annotations

import ast

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]


def d2l_control(a):
    b = a * 2
    while np.linalg.norm(b) < 1000:
        b = b * 2
    if b.sum() > 0:  # noqa: SIM108 (the textbook's if statement is the point)
        c = b
    else:
        c = 100 * b
    return np.sum(c)


def growing(x):
    b = x * 0.5
    while b.size < 12:  # the shape of b changes every iteration
        b = np.concatenate([b, b * 2.0 - 1.0])
        b = b * 1.5
    return np.sum(np.sin(b))


def switching(x):
    b = x
    while np.sum(b * b) < 50.0:  # each iteration picks its branch from the values
        if np.sum(b) > 0:  # noqa: SIM108 (a branch statement is the point)
            b = b * 1.5 + 0.5
        else:
            b = -b * 2.0
    return np.sum(b**2)


def reads_its_answer(x):
    b = x
    while np.max(b) < 3.0:
        b = np.exp(b * 0.5) - 0.25  # exp's rule reads its result
    return np.sum(b * x)


def broadcast_in_loop(x, y):
    b = x
    for _ in range(3):
        b = b * 2.0 + y  # y broadcasts: its cotangent is summed down
    return np.sum(np.tanh(b))


def pushes_and_pops(function, *args) -> int:
    gradient = sg.grad(function, mode="s2s")
    gradient(*args)
    tree = ast.parse(sg.source(gradient))
    return sum(
        isinstance(node, ast.Attribute) and node.attr in ("append", "pop")
        for node in ast.walk(tree)
    )


POINTS = {
    "positive": np.array([0.3, 0.1, 0.2, -0.05]),
    "negative": np.array([-0.3, 0.1, -0.2, -0.05]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("point", sorted(POINTS))
def test_d2l_control_matches_finite_differences(mode, point):
    a = POINTS[point]
    gradient = sg.grad(d2l_control, mode=mode)
    for _ in range(2):  # the first call (probe) and a later one
        assert_close(gradient(a), numeric_grad(d2l_control, (a,), 0), rtol=1e-5)


def test_a_loop_linear_in_its_value_saves_nothing_per_iteration():
    assert pushes_and_pops(d2l_control, POINTS["positive"]) == 0


def test_multiplying_by_a_number_drops_unbroadcast():
    gradient = sg.grad(d2l_control, mode="s2s")
    gradient(POINTS["negative"])
    assert "unbroadcast" not in sg.source(gradient)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("function", "x"),
    [
        (growing, np.array([0.3, -0.7])),
        (switching, np.array([0.3, -0.2, 0.4])),
        (switching, np.array([-0.3, -0.2, 0.1])),
        (reads_its_answer, np.array([0.3, -0.2, 0.1])),
    ],
    ids=["growing", "switching+", "switching-", "reads_its_answer"],
)
def test_loops_with_changing_shapes_and_branches(mode, function, x):
    gradient = sg.grad(function, mode=mode)
    for _ in range(2):
        assert_close(gradient(x), numeric_grad(function, (x,), 0), rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_broadcast_operand_in_a_loop_is_summed_down(mode):
    x, y = np.array([[0.1, -0.2, 0.3], [0.2, 0.1, -0.1]]), np.array([0.05, -0.1, 0.02])
    gradient = sg.grad(broadcast_in_loop, wrt=(0, 1), mode=mode)
    expected = tuple(numeric_grad(broadcast_in_loop, (x, y), i) for i in (0, 1))
    for _ in range(2):
        assert_close(gradient(x, y), expected, rtol=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("function", [switching, reads_its_answer], ids=lambda f: f.__name__)
def test_second_order_through_value_dependent_loops(mode, function):
    x = np.array([0.3, -0.2, 0.1])
    along = np.array([0.5, -1.0, 0.25])
    product = sg.hvp(function, (x,), (along,), mode=mode)[0]
    first = sg.grad(function, mode="tape")
    step = 1e-5
    expected = (first(x + step * along) - first(x - step * along)) / (2 * step)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kind", [np.float64, np.float32, np.float16, np.int64])
def test_seed_of_a_numpy_scalar_matches_ones_like(kind):
    from s2sgrad.runtime import seed_cotangent

    out = kind(2.5)
    seed = seed_cotangent(out)
    expected = np.ones_like(out, dtype=np.promote_types(np.result_type(out), np.float32))
    assert type(seed) is type(expected) and seed.dtype == expected.dtype
    assert seed.shape == expected.shape == () and seed == 1 and seed.flags.writeable


def pair(x):
    return (x, x * 2.0)


def tuple_from_a_helper_repeated(x):
    t = pair(x)
    ys = t * 2  # a tuple repeated: its entries' cotangents add up, nothing is scaled
    return np.sum(ys[3] * ys[0])


def test_a_value_that_may_be_a_tuple_keeps_its_unbroadcast():
    """``t * 2`` scales only numbers and arrays: a tuple a helper returns is repeated (its
    copies' cotangents add up; never a gradient of ``t`` scaled by 2)."""
    x = np.array([0.3, -0.2])
    expected = numeric_grad(tuple_from_a_helper_repeated, (x,), 0)
    for mode in MODES:
        assert_close(sg.grad(tuple_from_a_helper_repeated, mode=mode)(x), expected)


def _pair_or_array(x, as_pair):
    if as_pair:
        return (x, x * 2.0)
    return x * 3.0


def maybe_a_tuple_repeated(x, as_pair=True):
    t = _pair_or_array(x, as_pair)
    ys = t * 2  # repetition of a tuple the transformer cannot tell from a product
    return np.sum(ys[3] * ys[0])


def test_a_sequence_taken_for_a_number_is_refused_when_it_runs():
    """Where the transformer cannot tell, the generated code's unbroadcast meets a sequence
    of another length and refuses (never half the gradient); the tape is right, and mode
    "auto" takes it."""
    x = np.array([0.3, -0.2])
    with pytest.raises(sg.UnsupportedError, match="repeated with"):
        sg.grad(maybe_a_tuple_repeated, mode="s2s")(x)
    expected = numeric_grad(maybe_a_tuple_repeated, (x,), 0)
    assert_close(sg.grad(maybe_a_tuple_repeated, mode="tape")(x), expected)
    with pytest.warns(sg.S2SGradWarning, match="repeated with"):
        assert_close(sg.grad(maybe_a_tuple_repeated, mode="auto")(x), expected)


def test_numeric_names_follow_arithmetic_and_leave_sequences_out():
    import gast

    from s2sgrad.compiler.reverse.numeric import numeric_names

    code = """
b = a * 2
while np.linalg.norm(b) < 1000:
    b = b * 2
s = b.sum()
n = np.sum(b) + s
items = [a]
r = items * 2
h = helper(a)
m = h * 2
for v in a:
    w = v * 2
"""
    statements = gast.parse(code).body
    resolved = {"np.linalg.norm": np.linalg.norm, "np.sum": np.sum, "helper": pair}

    def resolve(node):
        return resolved[ast.unparse(gast.gast_to_ast(node))]

    found = numeric_names(statements, {"a", "xs"}, {"xs"}, resolve, {"b", "items"})
    assert found == {"a", "b", "s", "n"}
