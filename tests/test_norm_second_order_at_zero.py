"""A norm has no derivative at a zero vector; its first derivative there is 0 (a
subgradient), but a second derivative through it would be silently wrong
(``norm(x)**2`` at 0 gave 0 or NaN for its Hessian ``2 I``): it is refused, naming the
user's line, in every mode; away from 0 it is unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")


def squared_norm(x):
    return np.linalg.norm(x) ** 2


def squared_two_norm(x):
    return np.linalg.norm(x, 2) ** 2


def squared_distance(x):
    return np.linalg.norm(x - np.array([1.0, 2.0, 3.0])) ** 2


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f, at",
    [
        (squared_norm, np.zeros(3)),
        (squared_two_norm, np.zeros(3)),
        (squared_norm, np.zeros((2, 2))),
        (squared_distance, np.array([1.0, 2.0, 3.0])),
    ],
)
def test_second_derivative_at_zero_is_refused(mode, f, at):
    with pytest.raises(sg.NonDifferentiableError, match="no second derivative at a zero") as e:
        sg.hessian(f, mode=mode)(at)
    assert "test_norm_second_order_at_zero.py:" in str(e.value)


@pytest.mark.parametrize("mode", MODES)
def test_hessian_vector_product_at_zero_is_refused(mode):
    with pytest.raises(sg.NonDifferentiableError, match="no second derivative at a zero"):
        sg.hvp(squared_norm, (np.zeros(3),), (np.ones(3),), mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_first_derivative_at_zero_and_second_elsewhere(mode):
    assert np.array_equal(sg.grad(squared_norm, mode=mode)(np.zeros(3)), np.zeros(3))
    x = np.array([0.3, -0.7, 1.2])
    assert np.allclose(sg.hessian(squared_norm, mode=mode)(x), 2.0 * np.eye(3))
    assert np.allclose(sg.hessian(squared_two_norm, mode=mode)(x), 2.0 * np.eye(3))
