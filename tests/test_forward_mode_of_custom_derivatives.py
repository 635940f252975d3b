"""sg.jvp and sg.jacfwd given a function with a user's derivative itself (not a function
calling it): forward mode calls its jvp= companion (sg.checkpoint has one), and refuses a
reverse-only derivative by name. Source transformation read the wrapper's source instead
and failed with an internal error, or blamed an edited file."""

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([0.3, -0.7, 1.2])
V = np.array([0.5, 0.1, -0.4])


def square(x):
    return x**2


COMPANION_CALLS = []


def _square_jvp(primals, tangents):
    COMPANION_CALLS.append(primals)
    return primals[0] ** 2, 2 * primals[0] * tangents[0]


@sg.derivative(of=square, jvp=_square_jvp)
def _square_derivative(x):
    return x**2, lambda g: 2 * x * g


def scaled_sine(x, scale=2.0):
    return np.sin(x) * x * scale


@sg.custom_gradient
def reverse_only(x):
    return np.sum(x**2), lambda g: 2 * x * g


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_jvp_of_a_function_with_a_jvp_companion(mode):
    for _ in range(2):
        value, tangent = sg.jvp(square, (X,), (V,), mode=mode)
        np.testing.assert_allclose(value, X**2)
        np.testing.assert_allclose(tangent, 2 * X * V)


def test_source_transformation_calls_the_companion():
    COMPANION_CALLS.clear()
    sg.jvp(square, (X,), (V,), mode="s2s")
    assert len(COMPANION_CALLS) == 1


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_jvp_and_jacfwd_of_a_checkpointed_function(mode):
    checkpointed = sg.checkpoint(scaled_sine)
    derivative = 2.0 * (np.cos(X) * X + np.sin(X))
    for _ in range(2):
        _, tangent = sg.jvp(checkpointed, (X,), (V,), mode=mode)
        np.testing.assert_allclose(tangent, derivative * V)
    np.testing.assert_allclose(sg.jacfwd(checkpointed, mode=mode)(X), np.diag(derivative))


def test_jvp_of_a_reverse_only_derivative_is_refused_by_name():
    with pytest.raises(sg.NonDifferentiableError, match="reverse_only has a custom derivative"):
        sg.jvp(reverse_only, (X,), (V,), mode="s2s")
