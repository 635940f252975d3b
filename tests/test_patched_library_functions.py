"""A library function patched between calls (``np.tanh = ...``, a test's monkeypatch) is
differentiated as it is now.

Generated code calls ``np.tanh`` through the module at each call, and uses the derivative
rule of the function it saw when it was built. Patching the module between two calls
therefore ran the new function with the old function's derivative, a wrong gradient without
an error. Each attribute the code reads from a library module is a freshness entry, so the
patch makes the code stale and it is built again.
"""

import math

import numpy as np
import pytest
import scipy.special
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")


def soft_sign(v):
    return v / (1.0 + np.abs(v))


def uses_tanh(x):
    return np.sum(np.tanh(x) * 2.0)


def uses_norm(x):
    return np.linalg.norm(x) * 3.0


def uses_math_sin(x):
    return math.sin(x[0]) * x[1]


def uses_expit(x):
    return np.sum(scipy.special.expit(x) ** 2)


PATCHES = [
    (uses_tanh, np, "tanh", np.sin),
    (uses_tanh, np, "tanh", soft_sign),
    (uses_norm, np.linalg, "norm", lambda v: np.sum(v**2)),
    (uses_math_sin, math, "sin", math.cos),
    (uses_expit, scipy.special, "expit", np.arctan),
]
IDS = ["tanh-to-sin", "tanh-to-python", "linalg.norm", "math.sin", "scipy.special.expit"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("f", "module", "name", "replacement"), PATCHES, ids=IDS)
def test_a_patch_after_the_first_call_is_differentiated(
    monkeypatch, mode, f, module, name, replacement
):
    x = np.random.default_rng(3).uniform(-0.9, 0.9, 4)
    g = sg.grad(f, mode=mode)
    assert_close(g(x), numeric_grad(f, (x,), 0))
    g(x)  # the specialised code, too
    with monkeypatch.context() as patch:
        patch.setattr(module, name, replacement)
        assert_close(g(x), numeric_grad(f, (x,), 0))
        assert_close(g(x), numeric_grad(f, (x,), 0))
    assert_close(g(x), numeric_grad(f, (x,), 0))  # and restored


@pytest.mark.parametrize(("f", "module", "name", "replacement"), PATCHES[:2], ids=IDS[:2])
def test_second_order_and_forward_mode_follow_a_patch(monkeypatch, f, module, name, replacement):
    x = np.random.default_rng(4).uniform(-0.9, 0.9, 3)
    v = np.array([0.3, -1.0, 0.5])
    hvp = sg.grad(lambda x: sg.grad(f)(x) @ v)
    hvp(x)
    with monkeypatch.context() as patch:
        patch.setattr(module, name, replacement)
        expected = numeric_jvp(sg.grad(f, mode="tape"), (x,), 0, v)
        assert_close(hvp(x), expected, rtol=1e-5, atol=1e-6)
        _, tangent = sg.jvp(f, (x,), (v,))
        assert_close(tangent, numeric_grad(f, (x,), 0) @ v)
