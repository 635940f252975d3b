"""Loops over a string literal (``for axis in "zyx"``, ``zip("xyz", angles)``,
``enumerate("ab")``): a rotation built axis by axis names its axes so. Source
transformation turns a loop into one by index only over what it can index again in the
backward sweep, and took a string literal for an iterator: the loops were refused in
mode "s2s" (and taped in mode "auto")."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, assert_grad_jvp_and_hvp, call_twice, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")


def axis_rotation(axis, angle):
    c, s = np.cos(angle), np.sin(angle)
    if axis == "x":
        return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    if axis == "y":
        return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rotated_cubes(angles):
    """A z-y-x Euler rotation of fixed points, built in a loop zipping the axes' names."""
    rotation = np.eye(3)
    for axis, angle in zip("zyx", angles):
        rotation = rotation @ axis_rotation(axis, angle)
    points = np.array([[1.0, 0.5, -0.2], [0.3, -1.0, 0.8]])
    return np.sum((points @ rotation.T) ** 3)


def weighted_by_letter(x):
    total = 0.0
    k = 0
    for letter in "abca":
        total = total + (2.0 if letter == "a" else 0.5) * np.sin(x[k] * x[k - 1])
        k = k + 1  # noqa: SIM113 (a count kept by hand, as users write it)
    return total


def counted_letters(x):
    total = 0.0
    for k, letter in enumerate("xyz"):
        total = total + np.exp(x[k]) * (k + 1.0) * (letter != "y")
    return total


def reversed_letters(x):
    total = 0.0
    for letter, value in zip(reversed("uvw"), x):
        total = total + value**2 * (3.0 if letter == "w" else 1.0)
    return total


def empty_string(x):
    total = np.sum(x)
    for _letter in "":
        total = total * 0.0
    return total


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f", [rotated_cubes, weighted_by_letter, counted_letters, reversed_letters, empty_string]
)
def test_gradient_jvp_and_hvp_of_a_loop_over_a_string(f, mode):
    rng = np.random.default_rng(7)
    for size in (4, 5):
        x = rng.normal(size=size) * 0.7
        assert_grad_jvp_and_hvp(f, x, rng.normal(size=size), mode)


def test_the_loop_over_a_string_is_transformed_not_taped():
    x = np.array([0.3, -0.2, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the tape in mode "auto"
        gradient = call_twice(sg.grad(rotated_cubes, mode="auto"), x)
    assert_close(gradient, numeric_grad(rotated_cubes, [x], 0))
    source = sg.source(sg.grad(rotated_cubes, mode="s2s"))
    assert "range(" in source


def test_bytes_loop_sees_integers_as_python_does():
    def f(x):
        total = 0.0
        for code in b"\x01\x03":
            total = total + x[code] ** 2
        return total

    x = np.array([0.5, 1.5, -0.5, 2.0])
    for mode in MODES:
        assert_close(call_twice(sg.grad(f, mode=mode), x), np.array([0.0, 3.0, 0.0, 4.0]))
