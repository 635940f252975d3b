"""Forward mode over the gradient of a function whose derivative the user registered as
a pullback (``@sg.derivative(of=f)``, ``@sg.custom_gradient``): hvp and Hessians in
``mode="s2s"`` would have to differentiate the pullback again, and are refused naming the
user's line and the modes that do it; ``"auto"`` and ``"tape"`` are right (checked
against the analytic second derivative)."""

import warnings

import numpy as np
import pytest

import s2sgrad as sg


def softplus(x):
    return np.log1p(np.exp(x))


def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), t / (1 + np.exp(-x))


@sg.derivative(of=softplus, jvp=softplus_jvp)
def _softplus_vjp(x):
    return softplus(x), lambda g: g / (1 + np.exp(-x))


def loss(x):
    return np.sum(softplus(x) ** 2)


def analytic_hvp(x, v):
    s = 1 / (1 + np.exp(-x))
    return 2 * (s * s + softplus(x) * s * (1 - s)) * v


@pytest.mark.parametrize("shape", [(3,), (2, 3)])
@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_hvp_over_a_registered_pullback_is_right(mode, shape):
    rng = np.random.default_rng(len(shape))
    x, v = rng.normal(size=shape), rng.normal(size=shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # auto's fallback to the tape
        (product,) = sg.hvp(loss, (x,), (v,), mode=mode)
    np.testing.assert_allclose(product, analytic_hvp(x, v), rtol=1e-9, atol=1e-12)


def test_s2s_refuses_naming_the_line_and_the_modes_that_work():
    x, v = np.array([0.3, -0.2]), np.array([1.0, 0.5])
    with pytest.raises(sg.UnsupportedError) as refusal:
        sg.hvp(loss, (x,), (v,), mode="s2s")
    message = str(refusal.value)
    assert f"{__file__}:" in message
    assert "softplus" in message and "mode='auto'" in message
    assert "rules.jvp_rule" not in message  # not a public API
