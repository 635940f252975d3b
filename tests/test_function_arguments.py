"""Helpers given a function the caller defines: an ODE step given the right-hand side as a
nested ``def`` reading the parameters, an Euler step given a lambda, a helper applying a
function twice inside a larger expression. The helper's body is copied into the caller
and its calls of that function inlined, so every mode differentiates it by source (no
fallback), first and second order, against central differences."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_helper_calls import check_gradient, check_second_order

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning

RNG = np.random.default_rng(77)


def rk4(f, y, t, h):
    k1 = f(t, y)
    k2 = f(t + h / 2, y + h / 2 * k1)
    k3 = f(t + h / 2, y + h / 2 * k2)
    k4 = f(t + h, y + h * k3)
    return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def euler(f, y, h=0.1):
    return y + h * f(y)


def apply_twice(f, x):
    return f(f(x))


def pendulum(p, y0):
    g, length = p[0], p[1]

    def rhs(t, y):
        return np.stack([y[1], -(g / length) * np.sin(y[0]) + 0.1 * np.cos(t)])

    y, t = y0, 0.0
    for _ in range(6):
        y = rk4(rhs, y, t, 0.05)
        t += 0.05
    return y[0] ** 2 + y[1]


def decay_with_lambda(k, y):
    for _ in range(4):
        y = euler(lambda v: -k * v**2, y)
    return np.sum(y)


def twice_inside_an_expression(w, x):
    scale = lambda v: np.tanh(v * w)  # noqa: E731
    return np.sum(apply_twice(scale, x) ** 2) + np.sum(w)


def given_by_keyword(k, y):
    def rhs(v):
        return np.sin(k * v)

    return np.sum(euler(h=0.2, f=rhs, y=y))


def reading_the_target(k, y):
    y = euler(lambda v: -k * y * v, y)  # the lambda reads y as it was before the call
    return np.sum(y**2)


PROGRAMS = [
    (pendulum, (np.array([9.8, 1.3]), np.array([0.4, -0.2]))),
    (decay_with_lambda, (np.array([0.7, 0.3]), np.array([1.0, 2.0]))),
    (twice_inside_an_expression, (RNG.normal(size=3), RNG.normal(size=3))),
    (given_by_keyword, (np.array([0.6, -0.4]), np.array([1.0, 0.5]))),
    (reading_the_target, (np.array([0.5, 0.2]), np.array([0.3, -0.8]))),
]


@pytest.mark.parametrize("f, args", PROGRAMS, ids=[f.__name__ for f, _ in PROGRAMS])
def test_a_helper_given_the_callers_function_is_differentiated_by_source(f, args):
    check_gradient(f, args, wrt=0)
    check_gradient(f, args, wrt=1)
    check_second_order(f, args, modes=("s2s", "auto", "tape"))
    gradient = sg.grad(f, mode="s2s")
    gradient(*args)
    code = "\n".join(line.split("#")[0] for line in sg.source(gradient).splitlines())
    assert not any(f"{h}(" in code for h in ("rk4", "euler", "apply_twice"))  # copied


def apply_n(f, x, n):
    return x if n == 0 else apply_n(f, f(x), n - 1)


def recursive_helper(w, x):
    return np.sum(apply_n(lambda v: v * w, x, 3))


def test_a_recursive_helper_given_a_function_is_refused_in_s2s_and_taped_in_auto():
    args = (RNG.normal(size=2), RNG.normal(size=2))
    with pytest.raises(sg.UnsupportedError, match="test_function_arguments.py"):
        sg.grad(recursive_helper, mode="s2s")(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        check_gradient(recursive_helper, args, modes=("tape",))
        np.testing.assert_allclose(
            sg.grad(recursive_helper)(*args), sg.grad(recursive_helper, mode="tape")(*args)
        )


k = 3.0  # a global the helper below reads, which the caller also names locally


def euler_with_global(f, y):
    return y + k * f(y)


def caller_shadowing_the_helpers_global(k, y):
    return np.sum(euler_with_global(lambda v: np.sin(k * v), y))


def test_a_helper_reading_a_global_the_caller_shadows_is_not_copied():
    """Copied into the caller, the helper's ``k`` would read the caller's: it is left a
    call, refused in s2s (the lambda is passed on), taped in mode auto."""
    args = (np.array([0.5, 0.2]), np.array([0.3, -0.8]))
    with pytest.raises(sg.UnsupportedError, match="lambda"):
        sg.grad(caller_shadowing_the_helpers_global, mode="s2s")(*args)
    check_gradient(caller_shadowing_the_helpers_global, args, modes=("tape",))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        np.testing.assert_allclose(
            sg.grad(caller_shadowing_the_helpers_global)(*args),
            sg.grad(caller_shadowing_the_helpers_global, mode="tape")(*args),
        )
