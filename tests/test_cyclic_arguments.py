"""An argument that holds itself (``c = []; c.append(c)``) is refused with the caller's line,
in every transform and mode: describing its structure (the signature, its leaves) would
never end, and each description raised RecursionError from s2sgrad's own code."""

import warnings

import numpy as np
import pytest
from oracle import numeric_grad

import s2sgrad as sg


def loss(x, extra):
    return np.sum(x**2) * 1.5


def _cyclic():
    held = [1.0, {"k": 2.0}]
    held[1]["back"] = held
    return held


TRANSFORMS = {
    "grad": lambda x, c, mode: sg.grad(loss, mode=mode)(x, c),
    "grad, by keyword": lambda x, c, mode: sg.grad(loss, mode=mode)(x, extra=c),
    "value_and_grad": lambda x, c, mode: sg.value_and_grad(loss, mode=mode)(x, c),
    "vjp": lambda x, c, mode: sg.vjp(loss, x, c, mode=mode),
    "jvp": lambda x, c, mode: sg.jvp(loss, (x, c), (x, None), mode=mode),
    "hvp": lambda x, c, mode: sg.hvp(loss, (x, c), (x, None), mode=mode),
    "jacobian": lambda x, c, mode: sg.jacobian(loss, mode=mode)(x, c),
    "jacfwd": lambda x, c, mode: sg.jacfwd(loss, mode=mode)(x, c),
    "hessian": lambda x, c, mode: sg.hessian(loss, mode=mode)(x, c),
}


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_an_argument_holding_itself_is_refused_at_the_call(transform, mode):
    x = np.array([0.5, -1.0, 2.0])
    with warnings.catch_warnings(), pytest.raises(sg.S2SGradError, match="holds itself") as e:
        warnings.simplefilter("ignore")
        TRANSFORMS[transform](x, _cyclic(), mode)
    assert f"{__file__}:" in str(e.value)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_value_held_twice_without_a_cycle_is_differentiated(mode):
    x = np.array([0.5, -1.0, 2.0])
    shared = {"k": 2.0}
    extra = [shared, shared, (shared,)]
    got = sg.grad(loss, mode=mode)(x, extra)
    np.testing.assert_allclose(got, numeric_grad(loss, [x, extra], 0), rtol=1e-6)
