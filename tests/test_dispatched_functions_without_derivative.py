"""A function without derivative (``sg.stop_gradient``, ``np.floor``) called through a name
the transformer cannot resolve (``g = sg.stop_gradient; g(x)``, a list of functions, an
argument) is dispatched when it runs; its pullback gave ``None`` for the array argument,
which the generated code added to the other path's cotangent (TypeError in s2s and auto).
A floating argument now gets zeros, as ``dynamic_vjp`` promises. And ``with_derivative``
given a hook that is no function is refused at the user's line instead of raising
Python's TypeError from inside the backward pass."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_dispatched_functions_without_derivative.py"
POINT = np.array([0.3, -0.7, 1.1, 0.4, -1.6])


def stop_through_an_alias(x):
    g = sg.stop_gradient
    return np.sum(g(x) * np.sin(x))


def floor_through_an_alias(x):
    g = np.floor
    return np.sum(g(x * 2.0) * x**2)


def stop_from_a_list(x):
    functions = [sg.stop_gradient, np.tanh]
    return np.sum(functions[0](x) * functions[1](x))


def applied(function, v):
    return function(v) * v


def stop_as_an_argument(x):
    return np.sum(applied(sg.without_derivative, x) + x**3)


# the same functions with what stop_gradient stops read as a constant (the point itself)
ORACLES = {
    stop_through_an_alias: lambda x: np.sum(POINT * np.sin(x)),
    floor_through_an_alias: lambda x: np.sum(np.floor(POINT * 2.0) * x**2),
    stop_from_a_list: lambda x: np.sum(POINT * np.tanh(x)),
    stop_as_an_argument: lambda x: np.sum(POINT * x + x**3),
}


@pytest.mark.parametrize("f", list(ORACLES))
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_gradient_jvp_and_hvp(f, mode):
    oracle = ORACLES[f]
    direction = np.random.default_rng(41).normal(size=POINT.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = call_twice(sg.grad(f, mode=mode), POINT.copy())
        assert_close(gradient, numeric_grad(oracle, [POINT], 0))
        _, tangent = sg.jvp(f, (POINT.copy(),), (direction,), mode=mode)
        assert_close(tangent, numeric_jvp(oracle, [POINT], 0, direction))
        if mode != "s2s":  # forward over a dispatched pullback: the tape's
            (product,) = sg.hvp(f, (POINT.copy(),), (direction,), mode=mode)
            expected = numeric_jvp(sg.grad(oracle, mode="tape"), [POINT], 0, direction)
            assert_close(product, expected, rtol=1e-4, atol=1e-6)


def hook_that_is_text(x):
    return np.sum(sg.with_derivative(x, "log") * x)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_hook_that_is_no_function_is_refused_at_the_users_line(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError, match="hook; give it a function") as refused:
            sg.grad(hook_that_is_text, mode=mode)(POINT.copy())
    assert f"{HERE}:" in str(refused.value)
