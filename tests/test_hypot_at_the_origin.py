"""np.hypot at (0, 0) takes the subgradient 0, as np.linalg.norm at 0 does: a gradient of
hypot(x, y) ** 2 there is 0 (it was nan, from 0 / 0)."""

import numpy as np
import pytest
from oracle import call_twice, numeric_grad

import s2sgrad as sg

X = np.array([0.0, 0.3, 0.0])
Y = np.array([0.0, -0.4, 2.0])


def squared_radius(x, y):
    return np.sum(np.hypot(x, y) ** 2)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize("wrt", [0, 1])
def test_gradient_at_the_origin_is_finite(mode, wrt):
    gradient = call_twice(sg.grad(squared_radius, wrt=wrt, mode=mode), X, Y)
    np.testing.assert_allclose(gradient, numeric_grad(squared_radius, (X, Y), wrt), atol=1e-8)


def test_tangent_at_the_origin_is_finite():
    _, tangent = sg.jvp(squared_radius, (X, Y), (np.ones(3), np.ones(3)), mode="s2s")
    expected = np.sum(
        numeric_grad(squared_radius, (X, Y), 0) + numeric_grad(squared_radius, (X, Y), 1)
    )
    np.testing.assert_allclose(tangent, expected, atol=1e-8)
