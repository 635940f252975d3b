"""sg.jvp of a function of floats returning a float gives a float tangent, as sg.grad gives
a float gradient for a float (a rule's np.where made it a 0-d array)."""

import math

import pytest

import s2sgrad as sg


def wrapped(s):
    return math.fmod(s * 3, 1.0)


def remainder(s):
    return divmod(s * 3, 1.0)[1]


@pytest.mark.parametrize("f", [wrapped, remainder], ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_tangent_of_a_float_is_a_float(f, mode):
    _, tangent = sg.jvp(f, (0.7,), (1.0,), mode=mode)
    assert type(tangent) is float
    assert tangent == pytest.approx(3.0)
