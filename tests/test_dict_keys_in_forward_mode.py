"""Forward mode over a loop on a dict's keys read by a builtin (``for k in sorted(p)``,
``list(p)``): the call is resolved at run time, and a builtin has no source, so source
transformation refused it in forward mode (``sg.jvp``, ``sg.jacfwd``), though it reads
only the keys, constants. It now gives the keys, with a zero tangent.

Checked against central differences at random points, several shapes, in every mode."""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

R = np.random.default_rng(3301)
MODES = ["s2s", "auto", "tape"]


def sorted_keys(x, y):
    p = {"w": np.exp(np.tanh(x)), "b": y * 0.5, "c": np.sin(x) * y}
    r = x * 0.0
    for k in sorted(p):
        r = r * 0.5 + p[k]
    return np.sum(np.sin(r))


def listed_keys(x, y):
    p = {"w": x**2, "b": y * x}
    total = 0.0
    for k in list(p):
        total = total + np.sum(np.cos(p[k]))
    return total * len(p)


@pytest.mark.parametrize("f", [sorted_keys, listed_keys])
@pytest.mark.parametrize("shape", [(3,), (2, 2)])
@pytest.mark.parametrize("mode", MODES)
def test_forward_mode_over_the_keys_of_a_dict(f, shape, mode):
    x, y = R.normal(size=shape), R.normal(size=shape)
    direction = R.normal(size=shape)
    for index in (0, 1):
        expected = numeric_grad(f, [x, y], index)
        tangents = [None, None]
        tangents[index] = direction
        for _ in range(2):
            _, tangent = sg.jvp(f, (x, y), tuple(tangents), mode=mode)
            assert_close(float(tangent), float(np.sum(expected * direction)), rtol=1e-5)
        jacobian = sg.jacfwd(f, wrt=index, mode=mode)(x, y)
        assert_close(jacobian, expected, rtol=1e-5, atol=1e-7)
