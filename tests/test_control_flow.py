"""Branches, loops, jumps, in-place updates and lists, against finite differences."""

from __future__ import annotations

import ast
import warnings

import gast
import numpy as np
import pytest
from oracle import (
    assert_close,
    call_twice,
    directional_derivative,
    numeric_grad,
    numeric_jacobian,
)

import s2sgrad as sg


def branches(x, y):
    if np.sum(x) > 0:
        z = x * y
    elif np.sum(y) > 0:
        z = np.sin(x) + y
        w = z * 2.0
        z = w - x
    else:
        z = x**2
    return np.sum(z * y)


def conditional_expression(x, y):
    z = np.tanh(x) if np.sum(x) > 0 and np.sum(y) > -1 else x * y
    return np.sum(z)


def range_loop(x, y):
    total = 0.0
    for i in range(len(x)):
        total = total + np.sin(x[i] * y[i % len(y)])
    return total


def overwriting_loop(x, y):
    for _ in range(3):
        x = np.sin(x) * y + 0.5 * x
    return np.sum(x)


def rows_enumerate_zip(x, y):
    total = 0.0
    for row in x:
        total = total + np.sum(row**2)
    for i, row in enumerate(x):
        total = total + i * np.sum(row * y)
    for a, b in zip(x, reversed(x)):
        total = total + np.sum(a * b)
    for row in reversed(x):
        total = total * 0.5 + np.sum(np.cos(row))
    return total


def nested_loops(x, y):
    acc = x * 1.0
    for _ in range(2):
        for j in range(3):
            acc = acc * np.cos(y) + j * x
            if np.sum(acc) > 5.0:
                acc = acc * 0.1
    return np.sum(acc)


def while_loop(x, y):
    z = x * y
    while np.sum(z**2) < 50.0:
        z = z * 1.5 + x
    return np.sum(z)


def break_in_while(x, y):
    z = x
    count = 0
    while True:
        z = np.sin(z) + y
        count = count + 1
        if count >= 4 or np.sum(z) > 100.0:
            break
    return np.sum(z**2)


def continue_and_break(x, y):
    total = 0.0
    for i in range(6):
        if i == 1:
            continue
        total = total + np.sum(np.exp(x * i * 0.1) * y)
        if i >= 4:
            break
    return total


def early_return_from_nested_loop(x, y):
    z = x
    for i in range(4):
        for _ in range(3):
            z = z * np.cos(y) + 0.1
            if np.sum(z) > 2.0 + i:
                return np.sum(z * x)
    return np.sum(z)


def several_returns(x, y):
    if np.sum(x) > 1.0:
        return np.sum(x**3)
    if np.sum(y) > 0.0:
        return np.sum(x * y)
    return np.sum(np.exp(y))


def loop_in_branch_in_loop(x, y):
    z = x
    for i in range(3):
        if i % 2 == 0:
            for _ in range(2):
                z = z * y + np.sin(z)
        else:
            z = z - 0.1 * y
    return np.sum(z)


def in_place_updates(x, y):
    out = np.zeros((len(x), 2))
    out[:, 0] = x * y[0]
    out[:, 1] += np.sin(x)
    mask = x > 0
    out[mask] = out[mask] * 2.0
    for i in range(len(x)):
        out[i, 1] = out[i, 1] * y[1] + out[i, 0]
    return np.sum(out**2)


def copy_then_update(x, y):
    z = x.copy()
    z[0] = z[0] * y[0]
    z[1:] = np.cos(z[1:])
    return np.sum(z * y)


def list_storage(x, y):
    states = []
    h = x
    for i in range(3):
        h = np.tanh(h * y + i)
        states.append(h)
    last = states.pop()
    return np.sum(np.stack(states)) + np.sum(last * y) + np.sum(np.array(states) ** 2)


def comprehensions(x, y):
    squares = [x[i] ** 2 * y[i] for i in range(len(x))]
    return sum(squares) + np.sum(np.stack([np.sin(r) for r in x])) + sum(v * 2.0 for v in y)


def list_item_assignment(x, y):
    items = [x * 1.0, y * 2.0, x * y]
    items[1] = items[0] * items[2]
    return np.sum(items[1]) + np.sum(items[2])


def comprehension_variable_named_like_another(x, y):
    k = 10.0  # the comprehension's k is its own, in Python 3
    total = sum([x * k for k in range(3)])
    return np.sum(total * y) * k


def constant_work_after_a_loop(x, y):
    # the later loop and branch only overwrite k, which the first loop's backward reads:
    # they differentiate to nothing, but k must be restored on the same paths
    k = 0.0
    h = x * 1.0
    while k < 3:
        h = np.tanh(h) + y * k
        k += 1
    while k < 5:
        k += 1
    if np.sum(x) > 0:
        k = -1.0
    return np.sum(h * y)


def constant_in_x_loop_with_a_branch(x, y):
    # with respect to x alone, the second loop and its branch differentiate to nothing,
    # but they overwrite w, which the backward sweep reads: the pops keep their shape
    h = x * 1.0
    for i in range(1):
        h = h * 0.5 + np.sin(x) * (i + 1)
    w = np.sin(y) * 1.0
    for i in range(2):
        if i % 2 == 1:
            continue
        w = np.sin(w) * y
    return np.sum(np.sin(h * w))


@pytest.mark.parametrize("wrt", [0, 1])
def test_a_loop_constant_in_the_argument_still_restores_what_it_overwrote(wrt):
    x, y = POINTS[0]
    gradient = call_twice(sg.grad(constant_in_x_loop_with_a_branch, wrt=wrt, mode="s2s"), x, y)
    expected = numeric_grad(constant_in_x_loop_with_a_branch, [x, y], wrt)
    assert_close(gradient, expected, rtol=1e-5, atol=1e-6)


CONSTRUCTS = [
    comprehension_variable_named_like_another,
    constant_work_after_a_loop,
    branches,
    conditional_expression,
    range_loop,
    overwriting_loop,
    rows_enumerate_zip,
    nested_loops,
    while_loop,
    break_in_while,
    continue_and_break,
    early_return_from_nested_loop,
    several_returns,
    loop_in_branch_in_loop,
    in_place_updates,
    copy_then_update,
    list_storage,
    comprehensions,
    list_item_assignment,
]

POINTS = [
    # both sides of every branch: positive, negative and mixed inputs
    (np.array([0.3, 0.8, 0.5]), np.array([0.9, -0.4, 0.7])),
    (np.array([-0.6, -0.2, -0.9]), np.array([0.5, 0.6, -0.1])),
    (np.array([-0.6, -0.2, -0.9]), np.array([-0.5, -0.6, -0.1])),
    (np.array([1.2, -0.7, 0.9]), np.array([1.1, 0.4, 0.2])),
]


@pytest.mark.parametrize("function", CONSTRUCTS, ids=[f.__name__ for f in CONSTRUCTS])
@pytest.mark.parametrize("point", range(len(POINTS)))
def test_construct_matches_finite_differences(function, point):
    x, y = (a.copy() for a in POINTS[point])
    gradients = call_twice(sg.grad(function, wrt=(0, 1), mode="s2s"), x, y)
    for index in range(2):
        expected = numeric_grad(function, [x, y], index)
        assert_close(gradients[index], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(x, POINTS[point][0])


def doubling(a):
    b = 2 * a
    while np.linalg.norm(b) < 1000:
        b = 2 * b
    if np.sum(b) > 0:  # noqa: SIM108  (the documented example is written with if/else)
        c = b
    else:
        c = 100 * b
    return c


def test_documented_doubling_example():
    rng = np.random.default_rng(3)
    for _ in range(5):
        a = rng.standard_normal(3)
        c = doubling(a)
        _, pullback = sg.vjp(doubling, a, mode="s2s")
        jacobian = np.stack([pullback(e)[0] for e in np.eye(3)])
        np.testing.assert_allclose(np.diag(jacobian), c / a)
        gradient = sg.grad(lambda a: np.sum(doubling(a)), mode="s2s")(a)
        np.testing.assert_allclose(gradient, c / a)


def restored_names(function) -> list[str]:
    """The names the backward sweep of ``function``'s gradient takes back from the values
    the forward sweep saved (``name = <saved>.pop()``), one entry for each restore written."""
    gradient = sg.grad(function, wrt=(0, 1), mode="s2s")
    restores = [
        node.targets[0].id
        for node in ast.walk(ast.parse(sg.source(gradient)))
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "pop"
    ]
    x, y = 0.3, 0.9
    assert_close(
        call_twice(gradient, x, y), tuple(numeric_grad(function, (x, y), i) for i in (0, 1))
    )
    return restores


def test_range_loop_pushes_nothing_per_iteration_for_its_counter():
    def f(x, a):
        for _ in range(50):
            x = x * a
        return x

    assert restored_names(f) == ["x"]  # only x is saved: nothing for the counter


def test_values_never_overwritten_are_not_pushed():
    def f(x, y):
        s = np.sin(x * y)
        total = 0.0
        for i in range(4):
            total = total + s * i
        return np.sum(total)

    def overwriting_s(x, y):  # the same, with s overwritten: its old values are saved
        s = np.sin(x * y)
        total = 0.0
        for i in range(4):
            s = np.sin(s * y)
            total = total + s * i
        return np.sum(total)

    assert "s" in restored_names(overwriting_s)  # what the check looks for, where it is
    assert not {"s", "x", "y", "i"} & set(restored_names(f))


def test_mutating_an_argument_differentiates_its_values_at_the_call():
    def f(x):
        x[0] = 2.0 * x[1]
        return np.sum(x**2)

    x = np.ones(3)
    np.testing.assert_allclose(sg.grad(f, mode="s2s")(x), [0.0, 10.0, 2.0])
    np.testing.assert_array_equal(x, np.ones(3))


def test_updating_a_view_changes_the_array_it_views():
    def f(x):
        y = x * 2.0
        view = y[1:]
        view[0] = 3.0
        return np.sum(y)

    for mode in ("s2s", "auto"):
        np.testing.assert_allclose(sg.grad(f, mode=mode)(np.ones(3)), [2.0, 0.0, 2.0])


def power_loop(x, y):
    z = x * 1.0
    for _ in range(3):
        z = z * y  # one statement that reads the variable it assigns
    return np.sum(z)


def sine_loop(x, y):
    z = x
    for _ in range(3):
        z = np.sin(z)
    if np.sum(y) > -10.0:
        z = z**2
    while np.sum(z**2) < 5.0:
        z = z @ np.eye(len(x)) * 1.5 + 0.1 * y
    return np.sum(z * y)


@pytest.mark.parametrize("function", [power_loop, sine_loop])
@pytest.mark.parametrize("point", range(len(POINTS)))
def test_statements_that_read_what_they_assign(function, point):
    x, y = POINTS[point]
    gradients = call_twice(sg.grad(function, wrt=(0, 1), mode="s2s"), x, y)
    for index in range(2):
        assert_close(gradients[index], numeric_grad(function, [x, y], index), rtol=1e-5, atol=1e-6)


def branch_feeding_only_y(x, y):
    if x.ndim > 1:  # noqa: SIM108 (a branch statement is what is tested)
        v = np.flip(y, axis=-1) if np.ndim(y) else y
    else:
        v = x + x
    return np.sum(np.sin(v)) + 0.5 * np.sum(x * y)


def _is_constant_expression(statement) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


@pytest.mark.parametrize("x_shape", [(3,), (2, 3)])
def test_a_branch_left_with_comments_only_still_compiles(x_shape):
    # wrt x alone, one branch's adjoint code is all for y: only its comment was left
    rng = np.random.default_rng(5)
    x, y = rng.normal(size=x_shape), rng.normal(size=3)
    gradient = sg.grad(branch_feeding_only_y, wrt=0, mode="s2s")
    np.testing.assert_allclose(
        gradient(x, y), numeric_grad(branch_feeding_only_y, (x, y), 0), rtol=1e-6, atol=1e-8
    )
    empty_arms = [
        arm
        for node in ast.walk(ast.parse(sg.source(gradient)))
        if isinstance(node, ast.If)
        for arm in (node.body, node.orelse)
        if arm and all(isinstance(s, ast.Pass) or _is_constant_expression(s) for s in arm)
    ]
    assert not empty_arms  # an arm left with nothing to do is dropped, not filled in
    hessian = sg.hessian(branch_feeding_only_y, wrt=0, mode="s2s")(x, y)
    expected = numeric_jacobian(gradient, (x, y), 0)
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-7)


# A branch overwrites a value that an earlier statement's backward reads, and its other arm
# holds a loop (or the branch sits in a loop): the backward sweep must restore the value on
# the path the forward sweep took, however little the arms have to differentiate.
def restore_beside_a_loop(x, y):
    t1 = x
    t2 = np.sum(t1**2 * y)
    if np.sum(y) > 0.0:
        t1 = np.sum(y) * x
    else:
        for _ in range(3):
            t5 = np.tanh(t1[1])  # noqa: F841 (a loop with nothing to differentiate)
    return t2


def loop_beside_a_restore(x, y):
    t1 = x * 1.0
    t2 = np.sum(np.sin(t1) * y)
    if np.sum(y) <= 0.0:
        t1 = y * x
    else:
        for i in range(3):
            t5 = np.tanh(t1[i])  # noqa: F841
    return t2


def restore_beside_a_while(x, y):
    t1 = x * 1.0
    t2 = np.sum(np.cos(t1) * y)
    if np.sum(y) > 0.0:
        t1 = y * x
    else:
        k = 0
        while k < 3:
            t5 = np.tanh(t1)  # noqa: F841
            k += 1
    return t2


def restore_beside_a_break(x, y):
    t1 = x * 1.0
    t2 = np.sum(np.sin(t1) * y)
    if np.sum(y) > 0.0:
        t1 = y * x
    else:
        for i in range(4):
            t5 = np.tanh(t1) * i
            if np.sum(t5) > 0.5:
                break
    return t2


def restore_beside_a_continue(x, y):
    t1 = x * 1.0
    t2 = np.sum(np.sin(t1) * y)
    if np.sum(y) > 0.0:
        t1 = y * x
    else:
        for i in range(4):
            if i % 2 == 0:
                continue
            t5 = np.tanh(t1)  # noqa: F841
    return t2


def restore_in_a_loop_beside_a_loop(x, y):
    t1 = x * 1.0
    total = 0.0
    for j in range(2):
        total = total + np.sum(t1**2 * y)
        if np.sum(y) > 0.0:
            t1 = y * x + j
        else:
            for _ in range(3):
                t5 = np.tanh(t1[0])  # noqa: F841
    return total


def restore_in_nested_branches(x, y):
    t1 = x * 1.0
    t2 = np.sum(np.cos(t1) * y)
    if np.sum(y) > -1.0:
        if np.sum(y) > 1.1:
            t1 = y * x
        else:
            for _ in range(2):
                t5 = t1 * 2.0  # noqa: F841
    else:
        t1 = x * 3.0
    return t2


def restore_in_a_while_that_breaks(x, y):
    t1 = x * 1.0
    t2 = np.sum(np.cos(t1) * y)
    k = 0
    while True:
        if np.sum(y) > 0.0:
            t1 = y * x + k
        else:
            for _ in range(2):
                t5 = t1 * 2.0  # noqa: F841
        k += 1
        if k > 2:
            break
    return t2


def restore_beside_a_loop_in_an_elif(x, y):
    t1 = x * 1.0
    t2 = np.sum(np.sin(t1) * y)
    if np.sum(y) > 1.5:
        t1 = y * x
    elif np.sum(y) > 0.0:
        k = 0
        while k < 2:
            t5 = np.tanh(t1)  # noqa: F841
            k += 1
    else:
        t1 = x * 2.0
    return t2


def issue_12_program(b, x):
    t1 = x
    t2 = np.sum(t1**2)
    if b > 0.0:
        t1 = b * x
    else:
        for _ in range(3):
            t5 = np.tanh(t1[1])  # noqa: F841
    return t2


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("b", [0.3, -0.3])
def test_the_reported_program_differentiates_to_twice_x(mode, b):
    x = np.array([0.3, -1.2, 0.8])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = call_twice(sg.grad(issue_12_program, wrt=1, mode=mode), b, x)
    assert_close(gradient, 2 * x)  # analytic: t2 = sum(x ** 2) whatever the branch does


# Found by tests/program_fuzzer.py (seed 21): the test of the guard that follows a jump
# was pushed after the jump, so an iteration that jumped pushed nothing and the backward
# sweep, replaying every iteration whole, popped one value too many.
def restore_after_a_break_in_a_branch(x, y):
    t4 = x * 1.0
    for i in range(3):
        if i == 1:  # noqa: SIM102 - the jump nested in a branch is the point
            if np.sum(y) > -1.0:
                break
        if np.sum(x) > -1.5:
            t4 = np.log1p(x**2) * t4
    return np.sum(np.sin(t4) * y)


def restore_after_a_continue_in_a_branch(x, y):
    t4 = x * 1.0
    for i in range(3):
        if i % 2 == 0:  # noqa: SIM102 - the jump nested in a branch is the point
            if np.sum(y) > -1.0:
                continue
        if np.sum(x) > -1.5:
            t4 = np.log1p(x**2) * t4 + y
    return np.sum(np.sin(t4) * 3.0)


RESTORING = [
    restore_after_a_break_in_a_branch,
    restore_after_a_continue_in_a_branch,
    restore_beside_a_loop,
    loop_beside_a_restore,
    restore_beside_a_while,
    restore_beside_a_break,
    restore_beside_a_continue,
    restore_in_a_loop_beside_a_loop,
    restore_in_nested_branches,
    restore_in_a_while_that_breaks,
    restore_beside_a_loop_in_an_elif,
]


@pytest.mark.parametrize("function", RESTORING, ids=[f.__name__ for f in RESTORING])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("point", range(len(POINTS)))
def test_a_branch_restores_what_it_overwrote_beside_a_loop(function, mode, point):
    x, y = POINTS[point]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # mode="auto" transforms them: no fallback
        gradients = call_twice(sg.grad(function, wrt=(0, 1), mode=mode), x, y)
    for index in range(2):
        assert_close(gradients[index], numeric_grad(function, [x, y], index), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("function", RESTORING, ids=[f.__name__ for f in RESTORING])
@pytest.mark.parametrize("point", [0, 2])  # both arms of the branches on y
def test_a_branch_beside_a_loop_differentiates_twice(function, point):
    x, y = POINTS[point]
    along = np.array([0.4, -1.0, 0.7])
    product = sg.hvp(function, (x, y), (along, np.zeros(3)), mode="s2s")[0]
    gradient = sg.grad(function, wrt=0, mode="tape")
    expected = numeric_grad(lambda x: np.sum(gradient(x, y) * along), [x], 0)
    assert_close(product, expected, rtol=1e-5, atol=1e-6)


def test_restores_out_of_step_with_their_saves_are_refused(monkeypatch):
    # what the backward sweep of a branch once did: its taken arm, holding only restores,
    # was replaced by the other one; the check that pops mirror pushes now catches that
    from s2sgrad.compiler.reverse.backward_sweep import BackwardSweep

    replay = BackwardSweep.backward_if

    def losing_an_arm(self, statement, later_reads):
        (block,) = replay(self, statement, later_reads)
        block.body, block.orelse = block.orelse or [gast.Pass()], []
        return [block]

    monkeypatch.setattr(BackwardSweep, "backward_if", losing_an_arm)

    def overwrites_in_a_branch(x, y):
        t1 = x * 1.0
        t2 = np.sum(t1**2 * y)
        if np.sum(y) > 0.0:
            t1 = y * x
        return t2

    x, y = POINTS[0]
    line = overwrites_in_a_branch.__code__.co_firstlineno
    with pytest.raises(sg.UnsupportedError, match="use mode='tape'") as caught:
        sg.grad(overwrites_in_a_branch, mode="s2s")(x, y)
    assert f"{__file__}:{line}:" in str(caught.value)
    with pytest.warns(UserWarning, match="internal error"):
        gradient = sg.grad(overwrites_in_a_branch)(x, y)  # the tape takes over
    assert_close(gradient, numeric_grad(overwrites_in_a_branch, [x, y], 0))


# Iterators (map, filter, zip, enumerate, reversed) read whole where they are made become
# list comprehensions, whose values the backward sweep can read again.
def map_of_a_lambda(x, y):
    return sum(map(lambda t: t**2 * y[0], x))


def map_of_two_sequences(x, y):
    return sum(map(lambda a, b: np.sin(a) * b, x, y))


def map_of_a_function(x, y):
    return np.sum(np.stack(list(map(np.tanh, x * y))))


def filter_of_a_lambda(x, y):
    return sum(filter(lambda t: t > 0, x * y)) + sum(filter(None, np.round(x * 0.9) * y))


def zip_enumerate_reversed_in_lists(x, y):
    pairs = list(zip(x, np.sin(y)))
    numbered = list(enumerate(x * y))
    backwards = list(reversed(x**2))
    return sum([a * b for a, b in pairs]) + sum([i * v for i, v in numbered]) + backwards[0]


def loop_over_a_map(x, y):
    total = 0.0
    for v in map(lambda t: t**3, x):
        total = total * y[1] + v
    return total


ITERATORS = [
    zip_enumerate_reversed_in_lists,  # list(reversed(xs)): a comprehension over it
    map_of_a_lambda,
    map_of_two_sequences,
    map_of_a_function,
    loop_over_a_map,
]


@pytest.mark.parametrize("function", ITERATORS, ids=[f.__name__ for f in ITERATORS])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("point", [0, 1])
def test_iterators_read_whole_where_they_are_made(function, mode, point):
    x, y = POINTS[point]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradients = call_twice(sg.grad(function, wrt=(0, 1), mode=mode), x, y)
    for index in range(2):
        assert_close(gradients[index], numeric_grad(function, [x, y], index), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("function", ITERATORS, ids=[f.__name__ for f in ITERATORS])
def test_iterators_read_whole_differentiate_twice(function):
    x, y = POINTS[3]
    along = np.array([0.4, -1.0, 0.7])
    product = sg.hvp(function, (x, y), (along, np.zeros(3)), mode="s2s")[0]
    gradient = sg.grad(function, wrt=0, mode="tape")
    expected = numeric_grad(lambda x: np.sum(gradient(x, y) * along), [x], 0)
    assert_close(product, expected, rtol=1e-5, atol=1e-6)


def kept_map(x):
    squares = map(np.sin, x)
    return sum(squares)


def read_bit_by_bit(x):
    items = iter(x)
    first = next(items)
    return np.sum(first * x)


@pytest.mark.parametrize("function", [kept_map, read_bit_by_bit])
def test_iterators_kept_or_read_bit_by_bit_are_refused(function):
    x = POINTS[0][0]
    with pytest.raises(sg.UnsupportedError, match=r"build a list instead") as caught:
        sg.grad(function, mode="s2s")(x)
    line = function.__code__.co_firstlineno + 1  # the line that makes the iterator
    assert f"{__file__}:{line}:" in str(caught.value)
    with pytest.warns(UserWarning, match="makes an iterator"):  # the tape takes over
        gradient = sg.grad(function)(x)
    assert_close(gradient, numeric_grad(function, [x], 0))


@pytest.mark.parametrize("function", [filter_of_a_lambda])
def test_filter_zip_enumerate_reversed_iterators_are_refused_and_taped(function):
    """Only map (and partial) become comprehensions; other iterators are refused by source
    transformation, and the tape takes over in auto."""
    x, y = POINTS[0]
    with pytest.raises(sg.UnsupportedError, match=r"makes an iterator") as caught:
        sg.grad(function, wrt=(0, 1), mode="s2s")(x, y)
    assert f"{__file__}:" in str(caught.value)
    with pytest.warns(UserWarning, match="makes an iterator"):
        gradients = sg.grad(function, wrt=(0, 1))(x, y)
    for index in range(2):
        assert_close(gradients[index], numeric_grad(function, [x, y], index), rtol=1e-5, atol=1e-6)


def squares_one_at_a_time(x):
    for v in x:
        yield v**2


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_generator_functions_are_refused(mode):
    first = squares_one_at_a_time.__code__.co_firstlineno
    lines = {first, first + 2}  # the def (tape) or the yield (source)
    with pytest.raises(sg.UnsupportedError, match="generator functions cannot be differentiated"):
        sg.grad(squares_one_at_a_time, mode=mode)(np.ones(3))
    try:
        sg.grad(squares_one_at_a_time, mode=mode)(np.ones(3))
    except sg.UnsupportedError as error:
        assert any(f"{__file__}:{line}:" in str(error) for line in lines), str(error)
        assert "return them instead" in str(error)


def sum_of_a_generator(x):
    return sum(squares_one_at_a_time(x))


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_generator_read_whole_is_differentiated_by_source(mode):
    # what the generator yields is read whole inside the function: its body runs there,
    # each value appended to a list (tests/test_lambdas_and_iterators.py has the family)
    x = POINTS[0][0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradient = sg.grad(sum_of_a_generator, mode=mode)
        for _ in range(2):
            assert_close(gradient(x), 2 * x)


# a comprehension is computed where it stands: inside the loop or branch that holds it
def comprehension_in_a_loop(x, y):
    total = 0.0
    for _ in range(3):
        x = x * 1.1 + y
        total = total + sum([t * 2.0 for t in x])
    return total


def comprehension_in_a_branch(x, y):
    total = 0.0
    if np.sum(y) > 0:
        x = x * np.sin(y)
        total = total + sum([t**2 for t in x])
    else:
        total = sum([t * 3.0 for t in x])
    return total


def comprehension_in_a_while_test(x, y):
    k = 0
    while sum([t * 1.0 for t in x]) < 3.0 and k < 6:
        x = x * 1.5 + y**2
        k += 1
    return np.sum(x * y)


def comprehension_filtering_an_expression(x, y):
    return sum([t for t in np.round(x * 0.9) * y if t])  # an arithmetic result, iterated


COMPUTED_IN_PLACE = [
    comprehension_in_a_loop,
    comprehension_in_a_branch,
    comprehension_in_a_while_test,
    comprehension_filtering_an_expression,
]


@pytest.mark.parametrize("function", COMPUTED_IN_PLACE, ids=[f.__name__ for f in COMPUTED_IN_PLACE])
@pytest.mark.parametrize("mode", ["s2s", "tape"])
@pytest.mark.parametrize("point", range(len(POINTS)))
def test_comprehensions_are_computed_where_they_stand(function, mode, point):
    x, y = POINTS[point]
    gradients = call_twice(sg.grad(function, wrt=(0, 1), mode=mode), x, y)
    for index in range(2):
        assert_close(gradients[index], numeric_grad(function, [x, y], index), rtol=1e-5, atol=1e-6)


def pairs_in_a_tuple(x, y):
    # tuple(...) is called at run time on (index, value) pairs: integers beside the values
    pairs = tuple([(i, v * y[i]) for i, v in enumerate(x)])
    same = pairs
    return sum([i * v for i, v in same])


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_a_tuple_of_index_and_value_pairs(mode):
    x, y = POINTS[1]
    gradients = call_twice(sg.grad(pairs_in_a_tuple, wrt=(0, 1), mode=mode), x, y)
    for index in range(2):
        assert_close(gradients[index], numeric_grad(pairs_in_a_tuple, [x, y], index))


def argument_overwritten_in_a_branch(x, y):
    v = np.exp(np.tanh(y)) * x - y
    if np.sum(y) < 0.5:
        y = y + x * 0.5  # y, a constant wrt x, becomes a differentiated value on this path
    else:
        k = 0
        while k < 3:
            k += 1
    return np.sum(np.sin(v)) + 0.1 * np.sum(x) * np.sum(y**2)


@pytest.mark.parametrize("point", [0, 2])  # both paths
def test_forward_mode_wrt_one_argument_when_another_is_overwritten(point):
    # found by random programs: the Hessian wrt x alone read y's tangent, never set when
    # y is not differentiated, after the branch that overwrites y (an internal NameError)
    x, y = POINTS[point]
    hessian = sg.hessian(argument_overwritten_in_a_branch, wrt=0, mode="s2s")(x, y)
    gradient = sg.grad(argument_overwritten_in_a_branch, wrt=0, mode="tape")
    assert_close(hessian, numeric_jacobian(gradient, (x, y), 0), rtol=1e-5, atol=1e-6)
    along = np.array([0.4, -1.0, 0.7])
    _, tangent = sg.jvp(lambda x: argument_overwritten_in_a_branch(x, y), (x,), (along,))
    expected = numeric_grad(lambda x: argument_overwritten_in_a_branch(x, y), [x], 0) @ along
    assert_close(float(tangent), float(expected), rtol=1e-5, atol=1e-6)


# A random program whose Hessian-vector product crashed (None indexed in the generated
# forward-over-reverse code) before backward branches mirrored forward ones.


def layers_then_loops_then_branches(x, y):
    v0 = -x
    if v0.ndim > 1:  # noqa: SIM108 (kept as the generator wrote it)
        v1 = y**2
    else:
        v1 = np.flip(x, axis=-1) if np.ndim(x) else x
    layers = [(x + v1, x * 1.5), (np.sum(y, axis=-1, keepdims=True), v0 * 0.5)]
    v2 = x * 1.0
    for i, (w, b) in enumerate(reversed(layers)):
        v2 = np.tanh(v2 * w) + b * (i + 1.0)
    v3 = x * 1.0
    k = 0
    while k < 1:
        v3 = v3 * np.tanh(x) + v1
        if k % 2 == 1:
            x = x * 0.75
        else:
            for i in range(3):
                if i == 1:
                    continue
                w = x * i
        k += 1
    v4 = v0 * 1.0
    k = 0
    while k < 2:
        v4 = v4 * np.tanh(v0) + x
        if k % 2 == 1:
            v0 = v0 * 0.75
        else:
            for i in range(3):
                if i == 1:
                    continue
                w = v0 * i
        k += 1
    if np.sum(v0) > 1.0:
        v5 = np.maximum(x, v0 + 0.25)  # noqa: F841
    elif np.sum(v0) > -1.0:
        v5 = np.sin(v3) * v4  # noqa: F841
    else:
        v5 = v4 * 1.0  # noqa: F841
    v6 = np.square(v0) - v0 * v4
    if np.sum(v4) > -1.0:
        if np.sum(v0) > 0.0:
            v0 = np.sin(v0) + 0.5
        else:
            k = 0
            while True:
                k += 1
                if k >= 1:
                    break
    else:
        v0 = v0 * 2.0
    return np.sum(np.sin(v6) * 1.0) + np.sum(np.sin(v3) * 2.0) + 0.01 * np.sum(x) * np.sum(y)


def test_hvp_through_layers_loops_and_nested_branches():
    rng = np.random.default_rng(5)
    x, y = rng.uniform(-1.5, 1.5, (2, 3)), rng.uniform(-1.5, 1.5, (2, 3))
    along = (rng.normal(size=(2, 3)), rng.normal(size=(2, 3)))
    products = sg.hvp(layers_then_loops_then_branches, (x, y), along, mode="s2s")
    gradient = sg.grad(layers_then_loops_then_branches, wrt=(0, 1), mode="tape")

    expected = directional_derivative(lambda xy: gradient(*xy), (x, y), along, step=1e-5)
    for got, want in zip(products, expected, strict=True):
        assert_close(got, want, rtol=1e-4, atol=1e-5)


def list_built_by_an_inner_range_loop(x, y):
    for _ in range(2):
        parts = []
        for j in range(2):
            parts.append(np.sin(x * y) * (j + 1.0))
        x = sum(parts) * 0.5 + x
    return np.sum(np.sin(x))


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_hvp_through_an_inner_range_loop_in_a_loop(mode):
    """The inner loop's range is rebound on each outer iteration, so forward mode reads its
    items through its tangent, which for a range was None (tests/program_families.py,
    seed 5037)."""
    x, y = POINTS[0]
    along = np.array([0.4, -1.0, 0.7])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        product = sg.hvp(list_built_by_an_inner_range_loop, (x, y), (along, 0.0 * y), mode=mode)[0]
    gradient = sg.grad(list_built_by_an_inner_range_loop, wrt=0, mode="tape")
    expected = numeric_grad(lambda x: np.sum(gradient(x, y) * along), [x], 0)
    assert_close(product, expected, rtol=1e-5, atol=1e-6)


def list_rebuilt_twice_in_a_branch(x, y):
    total = x * 1.0
    if np.sum(y) < 0.3:
        parts = []
        for j in range(3):
            parts.append(np.sin(x) * (j + 1.0))
        total = sum(parts)
        parts = []
        for j in range(2):
            parts.append(np.sin(total * y) * (j + 1.0))
        total = total + sum(parts)
    return np.sum(np.sin(total))


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("point", range(len(POINTS)))
def test_a_list_bound_twice_in_one_branch_is_restored(mode, point):
    """Bindings were counted once per top-level statement, so the second 'parts = []' in
    the branch did not save the first list and the backward sweep popped an empty one
    (tests/program_families.py, seed 11549)."""
    x, y = POINTS[point]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradients = call_twice(sg.grad(list_rebuilt_twice_in_a_branch, wrt=(0, 1), mode=mode), x, y)
    for index in range(2):
        expected = numeric_grad(list_rebuilt_twice_in_a_branch, [x, y], index)
        assert_close(gradients[index], expected, rtol=1e-5, atol=1e-6)
