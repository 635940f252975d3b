"""A library function without a rule whose Python code reads an ndarray attribute the tape
does not give (SciPy's array-API plumbing asks ``x.device``) is named in the refusal, with
the user's line and the rule to register: not the attribute, which the user never wrote.
A decorator's wrapper (SciPy wraps many functions) is named as the function it wraps."""

import contextlib

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg
from s2sgrad.rules.registry import get_rule

stats = pytest.importorskip("scipy.stats")

HERE = __file__.rsplit("/", 1)[-1]


def second_moment(x):
    return stats.moment(x, 2) * 2.0  # the refused line


def interquartile_range(x):
    return stats.iqr(x) ** 2  # the refused line


@pytest.mark.parametrize("f, called", [(second_moment, "moment"), (interquartile_range, "iqr")])
@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_the_refusal_names_the_library_function_and_the_users_line(f, called, mode):
    name = f"scipy.stats.{called}"
    if get_rule(getattr(stats, called)) is not None:
        pytest.skip(f"{name} has a rule now")
    x = np.array([0.5, 1.2, 0.7, -0.3])
    warned = pytest.warns(sg.S2SGradWarning) if mode == "auto" else contextlib.nullcontext()
    try:
        with warned:
            gradient = sg.grad(f, mode=mode)(x)
    except sg.S2SGradError as error:
        refusal = error
    else:  # an older SciPy computes with NumPy's functions, which the tape follows
        np.testing.assert_allclose(gradient, numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8)
        return
    message = str(refusal)
    assert f"{HERE}:" in message
    if "np.asarray()" in message:  # an older SciPy converts its input instead of asking .device
        return
    assert f"{name} has no derivative rule" in message or f"{name} converts a value" in message
    assert f"@s2sgrad.derivative(of={name})" in message
