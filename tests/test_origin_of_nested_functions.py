"""A refusal about a function defined inside the user's function names the user's file,
also when it meets the function's copy in generated code (forward mode of a function that
takes ``sg.jacobian`` of a nested function named the generated file alone)."""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg


def damped_step(thetas, target):
    lengths = np.array([1.0, 0.8, 0.5])

    def reach(th):
        c = np.cumsum(th)
        return np.stack([np.sum(lengths * np.cos(c)), np.sum(lengths * np.sin(c))])

    J = sg.jacobian(reach)(thetas)
    step = J.T @ np.linalg.solve(J @ J.T + 0.05 * np.eye(2), target - reach(thetas))
    return np.sum((reach(thetas + step) - target) ** 2)


def test_forward_mode_names_the_users_file():
    thetas, target = np.array([0.3, -0.2, 0.5]), np.array([1.2, 0.7])
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.jvp(lambda t: damped_step(t, target), (thetas,), (np.ones(3),), mode="s2s")
    assert "test_origin_of_nested_functions.py:" in str(refused.value).split("(in its")[0]


def test_the_tape_differentiates_it():
    thetas, target = np.array([0.3, -0.2, 0.5]), np.array([1.2, 0.7])
    g = sg.grad(damped_step, mode="auto")(thetas, target)
    h = 1e-6
    expected = [
        (damped_step(thetas + h * e, target) - damped_step(thetas - h * e, target)) / (2 * h)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-8)
