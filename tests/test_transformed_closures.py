"""``sg.grad(g)`` (or value_and_grad, jacobian, jacfwd, hessian) made inside a function
being differentiated, where ``g`` closes over a value being differentiated: source
transformation kept the call as it is (its result is a function) and so took what ``g``
reads as a constant, a wrong gradient. It is refused now, naming the user's line; "auto"
differentiates on the tape, which follows the closure, and passing the value to ``g`` as
an argument is differentiated by source.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_refused_in_s2s_and_taped_in_auto,
    call_twice,
    calls_counted,
    numeric_grad,
)

import s2sgrad as sg

HERE = "test_transformed_closures.py"


def grad_of_a_named_lambda(x):
    scaled = lambda y: np.sum(x * y**2)  # noqa: E731 (a user's closure, as written)
    return np.sum(sg.grad(scaled)(np.ones_like(x)) * x)


def grad_of_a_def_at_the_point(x):
    def energy(y):
        return np.sum(np.sin(x) * y**3)

    return np.sum(sg.grad(energy)(x))


def value_and_grad_of_a_def(x):
    def energy(y):
        return np.sum(x * np.cos(y))

    value, slope = sg.value_and_grad(energy)(x * 0.5)
    return value + np.sum(slope**2)


def grad_of_an_inline_lambda(x):
    g = sg.grad(lambda y: np.sum(np.exp(x) * y))
    return np.sum(g(x) * 2.0)


def jacobian_of_a_def(x):
    def stretch(y):
        return x * y

    return np.sum(sg.jacobian(stretch)(np.ones_like(x)) ** 2)


def jacfwd_of_a_def(x):
    def stretch(y):
        return np.tanh(x) * y

    return np.sum(sg.jacfwd(stretch)(x))


def hessian_of_a_def(x):
    def cubic(y):
        return np.sum(x * y**3)

    return np.sum(sg.hessian(cubic)(x))


CLOSURES = [
    grad_of_a_named_lambda,
    grad_of_a_def_at_the_point,
    value_and_grad_of_a_def,
    grad_of_an_inline_lambda,
    jacobian_of_a_def,
    jacfwd_of_a_def,
    hessian_of_a_def,
]


@pytest.mark.parametrize("shape", [(3,), (2, 2)])
@pytest.mark.parametrize("f", CLOSURES)
def test_refused_by_source_transformation_and_right_in_auto(f, shape):
    x = np.random.default_rng(len(shape)).uniform(0.3, 1.2, size=shape)
    expected = assert_refused_in_s2s_and_taped_in_auto(f, [x], "reads values being", HERE)
    assert_close(call_twice(sg.grad(f, mode="tape"), x), expected, rtol=1e-5)


def test_the_message_names_the_transform_and_what_to_write():
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.grad(value_and_grad_of_a_def, mode="s2s")(np.ones(2))
    message = str(refused.value)
    assert "sg.value_and_grad is given a function" in message
    assert "as arguments" in message and "mode='tape'" in message


def scaled_as_an_argument(x):
    def energy(y, w):
        return np.sum(np.sin(w) * y**3)

    return np.sum(sg.grad(energy, wrt=0)(x, x))


def closure_over_a_constant(x, w):
    def energy(y):
        return np.sum(w * y**3)

    return np.sum(sg.grad(energy)(x) * x)


def test_values_passed_as_arguments_stay_source_transformed():
    x = np.array([0.4, -0.7, 1.1])
    expected = numeric_grad(scaled_as_an_argument, [x], 0)
    assert_close(call_twice(sg.grad(scaled_as_an_argument, mode="s2s"), x), expected)


def test_a_closure_over_constants_stays_source_transformed():
    x, w = np.array([0.4, -0.7, 1.1]), np.array([2.0, 0.5, -1.0])
    expected = numeric_grad(closure_over_a_constant, [x, w], 0)
    assert_close(call_twice(sg.grad(closure_over_a_constant, mode="s2s"), x, w), expected)


def test_a_closure_used_only_for_a_printout_is_not_refused():
    def logs_a_slope(x):
        def energy(y):
            return np.sum(x * y)

        slope = sg.grad(energy)(np.ones_like(x))
        del slope
        return np.sum(x**2)

    x = np.array([0.5, 1.5])
    assert_close(call_twice(sg.grad(logs_a_slope, mode="s2s"), x), 2 * x)


@pytest.mark.parametrize("f", [grad_of_a_def_at_the_point, grad_of_an_inline_lambda])
def test_second_order_in_auto(f):
    x = np.array([0.6, 0.9, 1.1])
    v = np.array([0.3, -1.0, 0.7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inner = sg.grad(f, mode="tape")
        expected = numeric_grad(lambda z: inner(z) @ v, [x], 0, step=1e-5)
        got = sg.grad(lambda z: sg.grad(f, mode="auto")(z) @ v, mode="auto")(x)
    assert_close(got, expected, rtol=1e-4, atol=1e-6)


def deeply_nested_ifs(x, s):
    y = x
    if s > 0:
        y = np.sin(y)
        if s > 1:
            y = np.sin(y)
            if s > 2:
                y = np.sin(y)
                if s > 3:
                    y = np.sin(y)
    return np.sum(y)


def test_a_function_without_a_function_maker_is_not_walked_for_local_functions(monkeypatch):
    # the local functions are looked for only where a function maker is called: walking
    # each nested statement whole for them made 90 nested ifs quadratic (a tenth of their
    # transformation)
    from s2sgrad.compiler import transformed_closures

    asked = calls_counted(monkeypatch, transformed_closures, "_local_functions")
    x = np.linspace(0.2, 0.9, 3)
    assert_close(
        call_twice(sg.grad(deeply_nested_ifs, mode="s2s"), x, 4.0),
        numeric_grad(deeply_nested_ifs, [x, 4.0], 0),
    )
    assert asked == []
