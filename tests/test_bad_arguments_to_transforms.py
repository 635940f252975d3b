"""Arguments a transform cannot take are refused in words that name the user's line.

A ``mode`` that is an array (a slip of argument order) compared with the mode names gave
NumPy's "truth value of an array is ambiguous" from inside s2sgrad; a 0-d value iterated on
the tape gave "object of type 'float' has no len()" where NumPy says "iteration over a 0-d
array".
"""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg


def loss(x):
    return np.sum(np.sin(x) * x)


def total_of_entries(xs):
    return sum(np.sum(v) for v in xs)


@pytest.mark.parametrize(
    "mode", [np.ones(3), np.array(["s2s", "tape"]), np.zeros(0), 3, None, "fast", ("s2s",)]
)
@pytest.mark.parametrize(
    "transform", ["grad", "value_and_grad", "vjp", "jvp", "hvp", "jacobian", "jacfwd", "hessian"]
)
def test_a_mode_that_is_not_a_mode_name_is_refused_naming_the_line(transform, mode):
    x = np.linspace(0.1, 0.5, 3)
    calls = {
        "grad": lambda: sg.grad(loss, mode=mode)(x),
        "value_and_grad": lambda: sg.value_and_grad(loss, mode=mode)(x),
        "jvp": lambda: sg.jvp(loss, (x,), (x,), mode=mode),
        "hvp": lambda: sg.hvp(loss, (x,), (x,), mode=mode),
        "jacobian": lambda: sg.jacobian(np.sin, mode=mode)(x),
        "vjp": lambda: sg.vjp(loss, x, mode=mode),
        "jacfwd": lambda: sg.jacfwd(np.sin, mode=mode)(x),
        "hessian": lambda: sg.hessian(loss, mode=mode)(x),
    }
    with pytest.raises(ValueError, match="mode must be one of") as caught:
        calls[transform]()
    assert "test_bad_arguments_to_transforms.py:" in str(caught.value)


def test_iterating_a_number_on_the_tape_fails_as_numpy_says():
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        sg.grad(total_of_entries, mode="tape")(np.float64(1.5))
    with pytest.raises(TypeError, match="iteration over a 0-d array"):
        total_of_entries(np.array(1.5))  # what NumPy itself says


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_iterating_an_array_still_differentiates(mode):
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(sg.grad(total_of_entries, mode=mode)(x), np.ones((2, 3)))
