"""np.sinc near 0: its derivative's formula cancels there, and its derivative must still
differentiate right (sinc''(0) = -pi**2 / 3) in every mode and in forward mode."""

import warnings

import numpy as np
import pytest
from oracle import call_twice, numeric_grad

import s2sgrad as sg

POINTS = np.array([0.0, 1e-4, -3e-4, 0.2, -1.7])


def total_sinc(x):
    return np.sum(np.sinc(x))


def exact_second_derivative(x):
    # d2/dx2 of sin(pi x) / (pi x), by its series near 0
    z = np.pi * x
    far = (-(z**2) * np.sin(z) - 2 * z * np.cos(z) + 2 * np.sin(z)) / np.where(z == 0, 1, z**3)
    return np.pi**2 * np.where(np.abs(z) < 1e-2, -1 / 3 + z**2 / 10, far)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_sinc_hessian_at_and_near_zero(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hessian = call_twice(sg.hessian(total_sinc, mode=mode), POINTS)
    np.testing.assert_allclose(hessian, np.diag(exact_second_derivative(POINTS)), atol=1e-9)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_sinc_gradient_at_and_near_zero(mode):
    gradient = call_twice(sg.grad(total_sinc, mode=mode), POINTS)
    np.testing.assert_allclose(gradient, numeric_grad(total_sinc, (POINTS,), 0), atol=1e-8)


def test_sinc_tangent_at_zero():
    _, tangent = sg.jvp(lambda x: np.sinc(x), (POINTS,), (np.ones(5),), mode="s2s")
    np.testing.assert_allclose(tangent, numeric_grad(total_sinc, (POINTS,), 0), atol=1e-8)
