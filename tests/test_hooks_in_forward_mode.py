"""sg.with_derivative's hook acts in a backward pass only: forward mode (sg.jvp, and the
forward half of sg.hessian) leaves the tangent alone on the tape as source transformation
does. The tape's forward mode transposes a pullback, where the hook ran and scaled it."""

import warnings

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([0.3, -0.7, 1.2])


def hooked(x):
    return np.sum(sg.with_derivative(x**2, lambda g: 2 * g) * x)


def test_jvp_ignores_the_hook_in_every_mode():
    tangents = []
    for mode in ("s2s", "auto", "tape"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tangents.append(sg.jvp(hooked, (X,), (np.ones(3),), mode=mode)[1])
    np.testing.assert_allclose(tangents, np.sum(3 * X**2))


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_hessian_agrees_with_source_transformation(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hessian = sg.hessian(hooked, mode=mode)(X)
    np.testing.assert_allclose(hessian, sg.hessian(hooked, mode="s2s")(X))


def test_gradient_still_applies_the_hook_on_the_tape():
    # the reverse pass: d/dx of x**2 scaled by the hook, plus the direct x**2
    np.testing.assert_allclose(sg.grad(hooked, mode="tape")(X), 2 * 2 * X * X + X**2)
