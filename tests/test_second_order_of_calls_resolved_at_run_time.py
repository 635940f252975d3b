"""Second derivatives (``sg.hvp``, ``sg.hessian``) of code whose gradient calls a function
resolved at run time: an integrator given its right-hand side (``rk4(f, y, h)``), a layer
given its activation (``np.tanh`` or one of the user's), a method of a module-level
object, a callable object. The gradient's call ``dynamic_vjp(f, *args)`` returns a
pullback; forward mode over it differentiates ``f``'s generated VJP and then the pullback's
backward with respect to the cotangent and to what it saved (``runtime/dispatch.py``).
Source transformation refused these before (mode "auto" taped them)."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "auto")


def rk4_step(f, y, h, p):
    k1 = f(y, p)
    k2 = f(y + 0.5 * h * k1, p)
    k3 = f(y + 0.5 * h * k2, p)
    k4 = f(y + h * k3, p)
    return y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)


def cubic_damping(y, p):
    return -p * y**3 + 0.5 * np.sin(y)


def integrated(y0, p):
    y = y0
    for _ in range(4):
        y = rk4_step(cubic_damping, y, 0.1, p)
    return np.sum(y**2) + p * np.sum(y)


class Oscillator:
    def __init__(self, stiffness):
        self.stiffness = stiffness

    def rhs(self, y, p):
        return -self.stiffness * p * np.tanh(y)

    def __call__(self, y, p):
        return -self.stiffness * y * p**2


OSCILLATOR = Oscillator(1.7)


def integrated_by_method(y0, p):
    y = y0
    for _ in range(3):
        y = rk4_step(OSCILLATOR.rhs, y, 0.1, p)
    return np.sum(np.cos(y)) * p


def integrated_by_callable_object(y0, p):
    return np.sum(rk4_step(OSCILLATOR, y0, 0.2, p) ** 3)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def layer(x, w, activation):
    return activation(x * w + 0.1)


def activations_passed_in(x, w):
    h = layer(x, w, np.tanh)
    return np.sum(layer(h, w, sigmoid) ** 2) + np.sum(layer(x, 2.0 * w, np.sin))


PROGRAMS = [integrated, integrated_by_method, integrated_by_callable_object, activations_passed_in]


def expected_hvp(f, y, p, vy, vp):
    gradient = sg.grad(f, wrt=(0, 1), mode="tape")
    for index in (0, 1):
        assert_close(gradient(y, p)[index], numeric_grad(f, [y, p], index), rtol=1e-5)
    return numeric_jvp(lambda t: gradient(y + t * vy, p + t * vp), [0.0], 0, 1.0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("size", [1, 3])
def test_hessian_vector_product(f, size, mode):
    rng = np.random.default_rng(size)
    y, vy = rng.normal(size=size) * 0.8, rng.normal(size=size)
    p, vp = 0.6, 0.9
    expected = expected_hvp(f, y, p, vy, vp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # mode "auto": no fallback to the tape
        for _ in range(2):  # the generic code, then the code specialised to the shapes
            products = sg.hvp(f, (y, p), (vy, vp), mode=mode)
            assert_close(products[0], expected[0], rtol=1e-4, atol=1e-6)
            assert_close(products[1], expected[1], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_hessian(f):
    z = np.array([0.4, -0.7, 0.5])

    def packed(v):
        return f(v[:2], v[2])

    expected = np.stack(
        [numeric_grad(lambda v, i=i: sg.grad(packed, mode="tape")(v)[i], [z], 0) for i in range(3)]
    )
    assert_close(sg.hessian(packed, mode="s2s")(z), expected, rtol=1e-4, atol=1e-6)


def test_a_partial_passed_in_is_differentiated_again_in_every_mode():
    """A partial passed to a helper (refused by source transformation before partials were
    dispatched as their function with the bound arguments, runtime/partials.py)."""
    from functools import partial

    def scaled(k, y, p):
        return -k * y * p

    step = partial(scaled, 2.0)

    def f(y, p):
        return np.sum(rk4_step(step, y, 0.1, p) ** 2)

    y, p = np.array([0.3, 0.6]), 0.8
    expected = expected_hvp(f, y, p, np.ones(2), 1.0)
    for mode in ("s2s", "auto", "tape"):
        products = sg.hvp(f, (y, p), (np.ones(2), 1.0), mode=mode)
        assert_close(products[0], expected[0], rtol=1e-4, atol=1e-6)
        assert_close(products[1], expected[1], rtol=1e-4, atol=1e-6)
