"""Code written for several library versions (``np.trapz`` where NumPy has it, else
``np.trapezoid``) names a function that does not exist here, in a branch not taken. The
transformer refused the whole function ("cannot differentiate through the undefined name
np.trapz"): mode="s2s" failed and mode="auto" fell back to the tape. Such a call is
dispatched when it runs now, where Python raises as the function itself would.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def energy_either_version(phi):
    slope = np.gradient(phi)
    if hasattr(np, "integrate_in_some_future_numpy"):
        return np.integrate_in_some_future_numpy(slope**2)
    return np.sum(0.5 * (slope[1:] ** 2 + slope[:-1] ** 2)) + np.sum(phi**4)


def always_missing(x):
    return np.sum(helper_nobody_defined(x))  # noqa: F821


@pytest.mark.parametrize("mode", MODES)
def test_a_missing_function_in_a_branch_not_taken(mode):
    phi = np.linspace(-1.0, 1.0, 6) ** 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # no fallback in mode="auto"
        got = call_twice(sg.grad(energy_either_version, mode=mode), phi)
        (product,) = sg.hvp(energy_either_version, (phi,), (np.ones(6),), mode=mode)
    assert_close(got, numeric_grad(energy_either_version, [phi], 0))
    gradient = sg.grad(energy_either_version, mode="tape")
    expected = numeric_grad(lambda t: np.sum(gradient(phi + t)), [0.0], 0)
    assert abs(np.sum(product) - expected) < 1e-5


@pytest.mark.parametrize("mode", MODES)
def test_a_missing_function_reached_raises_as_the_function_does(mode):
    with pytest.raises(NameError, match="helper_nobody_defined"):
        always_missing(np.ones(2))
    with pytest.raises(NameError, match="helper_nobody_defined"):
        sg.grad(always_missing, mode=mode)(np.ones(2))
