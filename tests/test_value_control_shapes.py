"""Branches and loops on values whose shapes do not depend on the path: specialised code
(``specialize/path_shapes.py``), uniform cotangents kept as numbers
(``specialize/uniform.py``) and empty forward branches dropped; each checked against
central finite differences in every mode, with the branch and the number of iterations
changing between calls of one specialised signature."""

from __future__ import annotations

import warnings

import gast
import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.compiler.specialize.criterion import shapes_follow_arguments
from tests.oracle import assert_close, numeric_grad

MODES = ("s2s", "tape", "auto")


def d2l(a):
    b = a * 2
    while np.linalg.norm(b) < 1000:
        b = b * 2
    if b.sum() > 0:  # noqa: SIM108
        c = b
    else:
        c = 100 * b
    return np.sum(c)


def nonlinear_loop(a):
    b = a * 2
    while np.linalg.norm(b) < 10:
        b = b * b + 1
    if b.sum() > 0:  # noqa: SIM108
        c = b * 3
    else:
        c = b
    return np.sum(c * c)


def counter_sets_shape(a):
    k = 1
    while np.sum(np.abs(a[:k])) < 0.3 and k < a.size:
        k = k + 1
    return np.sum(a[:k] * a[:k])


def branch_changes_shape(a):
    if a.sum() > 0:  # noqa: SIM108
        c = a[:2]
    else:
        c = a
    return np.sum(c * c)


def quadrupling(a):
    b = a * 3
    while np.linalg.norm(b) < 500:
        b = b * 4
    return np.sum(b)


def tripling(a):
    b = a * 2
    while np.linalg.norm(b) < 500:
        b = 3 * b
    if b.sum() > 0:  # noqa: SIM108
        c = b
    else:
        c = b * 7
    return np.sum(c)


def cotangent_read_twice(a):
    b = a * 2
    while np.linalg.norm(b) < 100:
        b = b * 2
    return np.sum(b) + np.sum(b * a)


def nested_paths(a):
    b = a * 1
    while np.linalg.norm(b) < 50:
        if np.max(b) > 3:  # noqa: SIM108
            b = b * 3
        else:
            b = b * 2
        if np.linalg.norm(b) > 40:
            break
    return np.sum(b * b)


FUNCTIONS = [
    nested_paths,
    d2l,
    nonlinear_loop,
    counter_sets_shape,
    branch_changes_shape,
    quadrupling,
    tripling,
    cotangent_read_twice,
]


def _inputs(n, sign=1.0, scale=0.1, seed=0):
    rng = np.random.default_rng(seed)
    return sign * (np.abs(rng.normal(size=n)) * scale + 0.05)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_gradients_follow_the_path_of_each_call(f, mode):
    g = sg.grad(f, mode=mode)
    calls = [  # one signature: another branch, other iteration counts; then other shapes
        _inputs(6, 1.0, 0.1),
        _inputs(6, -1.0, 0.1, seed=1),
        _inputs(6, 1.0, 3.0, seed=2),
        _inputs(6, -1.0, 0.01, seed=3),
        _inputs(3, 1.0, 0.5, seed=4),
        _inputs(3, -1.0, 0.1, seed=5),
    ]
    for x in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # mode="auto" may say it used the tape
            got = g(x)
        assert_close(got, numeric_grad(f, [x], 0, step=1e-7), rtol=1e-5)


def test_float32_gradient_keeps_its_dtype():
    g = sg.grad(d2l)
    for x in (_inputs(5).astype(np.float32), -_inputs(5, seed=1).astype(np.float32)):
        got = g(x)
        assert got.dtype == np.float32
        assert_close(got, numeric_grad(d2l, [x.astype(np.float64)], 0), rtol=1e-4)


def test_d2l_code_is_specialised_to_numbers():
    g = sg.grad(d2l)
    x = _inputs(4)
    g(x)
    g(-x)
    code = sg.source(g)
    assert "broadcast_to" not in code and "seed_cotangent" not in code
    assert "np.full((4,)" in code
    assert "c = 100 * b" not in [line.strip() for line in code.splitlines()]
    assert "times_power_of_two(db, iterations1)" in code and "for " not in code
    assert_close(g(-x), numeric_grad(d2l, [-x], 0))


def test_only_powers_of_two_become_ldexp():
    quadrupled = "times_power_of_two(db, 2 * iterations1)"
    for f, expected in ((quadrupling, quadrupled), (tripling, "for ")):
        g = sg.grad(f)
        x = _inputs(4)
        g(x)
        assert expected in sg.source(g)
        assert_close(g(x), numeric_grad(f, [x], 0))


def test_value_and_grad_through_value_branches():
    for x in (_inputs(5), -_inputs(5, seed=2)):
        value, grad = sg.value_and_grad(d2l)(x)
        assert_close(value, d2l(x))
        assert_close(grad, numeric_grad(d2l, [x], 0))


def quadratic_loop(a):
    b = a * 2
    while np.linalg.norm(b) < 100:
        b = b * 3
    if b.sum() > 0:  # noqa: SIM108
        c = b * b
    else:
        c = 5 * b * b
    return np.sum(c)


@pytest.mark.parametrize("x", [_inputs(4), -_inputs(4, seed=7)])
def test_second_order_through_value_branches(x):
    h = sg.hessian(quadratic_loop)(x)
    v = np.linspace(0.5, 1.5, 4)
    expected = numeric_grad(lambda y: float(np.dot(sg.grad(quadratic_loop)(y), v)), [x], 0)
    assert_close(h @ v, expected, rtol=1e-4, atol=1e-5)
    (product,) = sg.hvp(quadratic_loop, (x,), (v,))
    assert_close(product, expected, rtol=1e-4, atol=1e-5)


def _body(source: str) -> list:
    return gast.parse(source).body


def _resolve(node):
    return {"np": np}[node.id] if type(node) is gast.Name else getattr(np.linalg, node.attr)


def test_criterion_accepts_shape_keeping_paths_only():
    keeps = (
        "b = a * 2\nwhile np.linalg.norm(b) < 1000:\n    b = b * 2\n"
        "if b.sum() > 0:\n    c = b\nelse:\n    c = 100 * b\n"
    )
    assert shapes_follow_arguments(_body(keeps), _resolve)
    counter = "k = 1\nwhile a.sum() < 1:\n    k = k + 1\nc = a[:k]\n"
    assert not shapes_follow_arguments(_body(counter), _resolve)
    sliced = "if a.sum() > 0:\n    c = a[:2]\nelse:\n    c = a\n"
    assert not shapes_follow_arguments(_body(sliced), _resolve)
    floats = "b = a\nwhile b.sum() < 1:\n    b = b * 2.0\n"  # could make integers floats
    assert not shapes_follow_arguments(_body(floats), _resolve)
    rebound = "b = a[:2]\nc = b\nb = a\nif a.sum() > 0:\n    c = b\n"
    assert not shapes_follow_arguments(_body(rebound), _resolve)
    compared = "t = a > 0\nu = t\nt = a[:2] > 0\nif a.sum() > 0:\n    u = t\n"
    assert not shapes_follow_arguments(_body(compared), _resolve)
    tested = "t = a\nu = t > 0\nt = a[:2]\nif a.sum() > 0:\n    u = t > 0\n"
    assert not shapes_follow_arguments(_body(tested), _resolve)


def test_criterion_reads_every_loop_over_a_name():
    # a name two loops bind holds shapes only when both iterate over shapes, in any order
    shaped = "for i in range(a.shape[0]):\n    pass\n"
    valued = "for i in range(3):\n    pass\n"
    for first, second in ((shaped, valued), (valued, shaped)):
        assert shapes_follow_arguments(_body(first + second + "c = a[:i]\n"), _resolve)
    on_values = "for i in range(a.shape[0]):\n    pass\nfor i in a:\n    pass\nc = a[:i]\n"
    assert not shapes_follow_arguments(_body(on_values), _resolve)


def test_an_emptied_forward_if_goes_only_when_tested_again_unchanged():
    from s2sgrad.compiler.optimize.saves import tested_again

    again = _body("if not t:\n    pass\ndb = 1\nif t:\n    db = 2\n")
    assert tested_again(again) == {0}
    rebound = _body("if not t:\n    pass\nt = x\nif t:\n    db = 2\n")
    assert not tested_again(rebound)
    never = _body("if t:\n    pass\ndb = 1\n")
    assert not tested_again(never)
