"""A builtin the function calls (``sum``, ``max``, ``abs``) may be hidden later by a global
of the same name (``def sum(...)`` further down a notebook). The function then calls the
global; its derivative, made when the name meant the builtin, must not go on differentiating
the builtin: the name's absence from the module's globals is an assumption checked at each
call, as a global's value is, and a global bound there makes the derivative anew."""

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg


def sums_builtins(x):
    return sum(x * x) + abs(x[0]) * max(x[1], x[2])


def hidden_sum(values):
    return np.prod(values)


def hidden_max(a, b):
    return a * b


@pytest.fixture
def restore_globals():
    yield
    for name in ("sum", "max"):
        globals().pop(name, None)


def check(df, x):
    want = numeric_grad(sums_builtins, [x.copy()], 0)
    np.testing.assert_allclose(df(x), want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("name, hiding", [("sum", hidden_sum), ("max", hidden_max)])
@pytest.mark.parametrize("size", [3, 5])
def test_a_builtin_hidden_by_a_global_later(mode, name, hiding, size, restore_globals):
    x = np.random.default_rng(size).uniform(0.5, 1.5, size=size)
    df = sg.grad(sums_builtins, mode=mode)
    check(df, x)
    check(df, x)
    globals()[name] = hiding
    check(df, x)  # the global now: the derivative of the function as it is
    check(df, x)
    del globals()[name]
    check(df, x)  # the builtin again


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_hidden_builtin_in_forward_and_second_order(mode, restore_globals):
    x = np.random.default_rng(7).uniform(0.5, 1.5, size=4)
    direction = np.linspace(-1.0, 1.0, 4)
    jvp = lambda: sg.jvp(sums_builtins, (x,), (direction,), mode=mode)[1]  # noqa: E731
    hessian = sg.hessian(sums_builtins, mode=mode)
    np.testing.assert_allclose(jvp(), numeric_grad(sums_builtins, [x], 0) @ direction, rtol=1e-6)
    hessian(x)
    globals()["sum"] = hidden_sum
    np.testing.assert_allclose(jvp(), numeric_grad(sums_builtins, [x], 0) @ direction, rtol=1e-6)
    rows = [lambda z, i=i: sg.grad(sums_builtins, mode=mode)(z)[i] for i in range(x.size)]
    want = np.stack([numeric_grad(row, [x], 0) for row in rows])
    np.testing.assert_allclose(hessian(x), want, rtol=1e-5, atol=1e-6)
