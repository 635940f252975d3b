"""What s2sgrad returns at kinks and ties (docs/conventions.md), the same in every engine and
in forward mode. Each value is a convention, not a limit, so each is stated exactly."""

import warnings

import numpy as np
import pytest

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")


def relu_maximum(z):
    return np.sum(np.maximum(z, 0.0))


def relu_maximum_constant_first(z):
    return np.sum(np.maximum(0.0, z))


def relu_minimum(z):
    return np.sum(np.minimum(z, 0.0))


def relu_fmax(z):
    return np.sum(np.fmax(z, 0.0))


def relu_with_constant_array(z, floor):
    return np.sum(np.maximum(z, floor))


def tie_of_two(a, b):
    return np.sum(np.maximum(a, b))


def absolute(z):
    return np.sum(np.abs(z))


def norm(z):
    return np.linalg.norm(z)


def largest(z):
    return np.max(z)


def clipped(z):
    return np.sum(np.clip(z, 0.0, 1.0))


def relu_where(z):
    return np.sum(np.where(z > 0, z, 0.0))


def weighted_sorted(z):
    return np.sum(np.sort(z) * np.arange(4.0))


# (function, point, derivative at the point); the functions are sums, so the gradient is
# the elementwise derivative
CASES = [
    (relu_maximum, [0.0, 2.0, -1.0], [0.0, 1.0, 0.0]),
    (relu_maximum_constant_first, [0.0, 2.0, -1.0], [0.0, 1.0, 0.0]),
    (relu_minimum, [0.0, 2.0, -1.0], [0.0, 0.0, 1.0]),
    (relu_fmax, [0.0, 2.0, -1.0], [0.0, 1.0, 0.0]),
    (absolute, [0.0, 2.0, -1.0], [0.0, 1.0, -1.0]),
    (norm, [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
    (largest, [1.0, 3.0, 3.0], [0.0, 0.5, 0.5]),
    (clipped, [0.0, 1.0, 0.5], [1.0, 1.0, 1.0]),
    (relu_where, [0.0, 2.0, -1.0], [0.0, 1.0, 0.0]),
    (weighted_sorted, [0.3, 0.3, 0.2, 0.9], [1.0, 2.0, 0.0, 3.0]),  # ties: argsort's order
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, point, expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_derivative_at_a_kink_is_the_documented_one(f, point, expected, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = sg.grad(f, mode=mode)
        for _ in range(2):  # the generic code, then the code specialised to the shape
            np.testing.assert_array_equal(gradient(np.array(point)), expected)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, point, expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_forward_mode_agrees_at_the_kink(f, point, expected, mode):
    for index in range(len(point)):
        direction = np.zeros(len(point))
        direction[index] = 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            _, tangent = sg.jvp(f, (np.array(point),), (direction,), mode=mode)
        assert tangent == expected[index]


@pytest.mark.parametrize("mode", MODES)
def test_a_tie_with_a_constant_array_goes_to_the_constant(mode):
    z, floor = np.array([0.5, 0.0]), np.array([0.5, 1.0])
    assert list(sg.grad(relu_with_constant_array, mode=mode)(z, floor)) == [0.0, 0.0]
    dz, dfloor = sg.grad(relu_with_constant_array, wrt=(0, 1), mode=mode)(z, floor)
    assert list(dz) == [0.5, 0.0] and list(dfloor) == [0.5, 1.0]  # both differentiated: split


@pytest.mark.parametrize("mode", MODES)
def test_a_tie_between_two_differentiated_values_is_split(mode):
    a, b = np.array([1.0, 2.0]), np.array([1.0, 0.0])
    da, db = sg.grad(tie_of_two, wrt=(0, 1), mode=mode)(a, b)
    assert list(da) == [0.5, 1.0] and list(db) == [0.5, 0.0]
