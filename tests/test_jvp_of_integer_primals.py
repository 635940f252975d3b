"""``sg.jvp`` with a tangent that is not zero for an integer or boolean primal: a
TypeError that says to pass a float (forward mode does not differentiate integers, and the
tangent was dropped: a JVP of 0.0, or None on the tape, where the function has one). A
zero tangent (or None) for an integer setting keeps working."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")


def doubled(x):
    return x * 2


def scaled(x, n):
    return x * n


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("primal", "tangent"), [(3, 1.0), (np.arange(3), np.ones(3)), (True, 1.0)])
def test_a_nonzero_tangent_of_an_integer_is_refused(mode, primal, tangent):
    with pytest.raises(TypeError, match=r"jvp: 'x' is (an integer|a boolean) .* pass a float"):
        sg.jvp(doubled, (primal,), (tangent,), mode=mode)


@pytest.mark.parametrize("mode", MODES)
def test_zero_tangents_of_integer_settings_are_fine(mode):
    x = float(np.random.default_rng(0).normal())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for zero in (0, 0.0, np.zeros(())):
            value, tangent = sg.jvp(scaled, (x, 3), (1.0, zero), mode=mode)
            assert value == pytest.approx(3 * x)
            assert tangent == pytest.approx(3.0)
        assert sg.jvp(doubled, (3.0,), (1.0,), mode=mode)[1] == pytest.approx(2.0)
