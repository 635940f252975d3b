"""Rules of more ``scipy.special`` functions (``s2sgrad/rules/scipy_special_closed_forms.py``):
each function's gradient, jvp and hvp in every mode, against central differences, at random
points inside its domain and for several shapes; a parameter with no closed-form derivative
is refused with the user's line. (Each was refused before: "has no derivative rule".)
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_hvp_matches_differences,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg

special = pytest.importorskip("scipy.special")

RNG = np.random.default_rng(1406)


def within(u, low, high):
    """``u`` in (-1, 1) taken to (low, high)."""
    return low + (high - low) * (u + 1.0) / 2.0


# name -> f(u, w) of two arrays in (-1, 1); the second only weighs or scales
FUNCTIONS = {
    "erfi": lambda u, w: special.erfi(u) * w,
    "loggamma": lambda u, w: special.loggamma(within(u, 0.5, 3.0)) * w,
    "k0e": lambda u, w: special.k0e(within(u, 0.5, 3.0)) * w,
    "k1e": lambda u, w: special.k1e(within(u, 0.5, 3.0)) * w,
    "expm1": lambda u, w: special.expm1(u) * w,
    "log1p": lambda u, w: special.log1p(within(u, 0.0, 2.0)) * w,
    "exp2": lambda u, w: special.exp2(u) * w,
    "exp10": lambda u, w: special.exp10(u) * w,
    "cbrt": lambda u, w: special.cbrt(within(u, 0.5, 2.0)) * w,
    "softplus": lambda u, w: special.softplus(3.0 * u) * w,
    "sindg": lambda u, w: special.sindg(50.0 * u) * w,
    "cosdg": lambda u, w: special.cosdg(50.0 * u) * w,
    "tandg": lambda u, w: special.tandg(40.0 * u) * w,
    "cotdg": lambda u, w: special.cotdg(within(u, 10.0, 80.0)) * w,
    "ellipk": lambda u, w: special.ellipk(within(u, 0.0, 0.9)) * w,
    "ellipkm1": lambda u, w: special.ellipkm1(within(u, 0.1, 1.0)) * w,
    "ellipe": lambda u, w: special.ellipe(within(u, 0.0, 0.9)) * w,
    "gammaincinv": lambda u, w: special.gammaincinv(2.5, within(u, 0.1, 0.9)) * w,
    "gammainccinv": lambda u, w: special.gammainccinv(1.5, within(u, 0.1, 0.9)) * w,
    "inv_boxcox": lambda u, w: special.inv_boxcox(u, within(w, 0.1, 0.5)),
    "inv_boxcox1p": lambda u, w: special.inv_boxcox1p(u, within(w, 0.1, 0.5)),
    "poch": lambda u, w: special.poch(within(u, 1.0, 3.0), within(w, 0.5, 2.0)),
    "owens_t": lambda u, w: special.owens_t(2.0 * u, within(w, 0.1, 2.0)),
    "expn": lambda u, w: (
        (special.expn(0, within(u, 0.5, 3.0)) + special.expn(2, within(u, 0.5, 3.0))) * w
    ),
    "hyp0f1": lambda u, w: special.hyp0f1(1.5, u) * w,
    "hyp1f1": lambda u, w: special.hyp1f1(0.5, 1.5, u) * w,
    "hyperu": lambda u, w: special.hyperu(0.5, 1.5, within(u, 0.5, 3.0)) * w,
    "hyp2f1": lambda u, w: special.hyp2f1(0.5, 1.0, 1.5, within(u, -0.5, 0.5)) * w,
    "chdtr": lambda u, w: special.chdtr(3.0, within(u, 0.5, 4.0)) * w,
    "chdtrc": lambda u, w: special.chdtrc(2.5, within(u, 0.5, 4.0)) * w,
    "stdtr": lambda u, w: special.stdtr(4.0, 2.0 * u) * w,
    "gdtr": lambda u, w: special.gdtr(1.5, 2.5, within(u, 0.5, 3.0)) * w,
    "fdtr": lambda u, w: special.fdtr(3.0, 5.0, within(u, 0.5, 3.0)) * w,
}


def summed(name):
    function = FUNCTIONS[name]

    def f(u, w):
        return np.sum(function(u, w))

    return f


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("shape", [(3,), (2, 2)])
@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_gradient_jvp_and_hvp(name, shape, mode):
    f = summed(name)
    u, w = RNG.uniform(-0.9, 0.9, shape), RNG.uniform(-0.9, 0.9, shape)
    gradient = call_twice(sg.grad(f, wrt=(0, 1), mode=mode), u, w)
    assert_close(gradient[0], numeric_grad(f, [u, w], 0), rtol=1e-5)
    assert_close(gradient[1], numeric_grad(f, [u, w], 1), rtol=1e-5)
    v = RNG.normal(size=shape)
    _, tangent = sg.jvp(f, (u, w), (v, v), mode=mode)
    assert_close(tangent, numeric_jvp(lambda t: f(u + t * v, w + t * v), [0.0], 0, 1.0))
    assert_hvp_matches_differences(f, (u, w), mode=mode, seed=len(shape))


def ellipe_at_zero(m):
    return np.sum(special.ellipe(m) + special.ellipk(m))


def test_elliptic_integrals_at_zero():
    m = np.array([0.0, 0.3])
    expected = np.array([0.0, numeric_grad(ellipe_at_zero, [np.array([0.3])], 0)[0]])
    assert_close(sg.grad(ellipe_at_zero, mode="s2s")(m), expected, atol=1e-7)


def shape_of_the_inverse(a):
    return np.sum(special.gammaincinv(a, 0.5))


def parameters_of_hyp2f1(a):
    return np.sum(special.hyp2f1(a, 1.0, 1.5, 0.3))


@pytest.mark.parametrize("f", [shape_of_the_inverse, parameters_of_hyp2f1])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_a_parameter_without_a_closed_form_is_refused(f, mode):
    with pytest.raises(sg.NonDifferentiableError, match="differentiated in") as refused:
        sg.grad(f, mode=mode)(np.array([1.5, 2.0]))
    assert f"{__file__}:" in str(refused.value)
