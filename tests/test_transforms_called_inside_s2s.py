"""``sg.jvp``, ``sg.vjp``, ``sg.hvp`` or a function ``sg.vmap`` made, called inside a function
differentiated by source transformation: refused at the user's line in the user's words
(the refusal named s2sgrad's own ``api.py:177`` or ``batching/vmap.py``, and forward mode
even ran a derivative of ``sg.jvp``'s own code into ``engines/products.py``); mode "auto"
differentiates them on the tape, right on a first and a later call."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

HERE = "test_transforms_called_inside_s2s.py"


def inner(y):
    return np.sum(np.sin(y) * y)


def through_jvp(x):
    _, tangent = sg.jvp(inner, (x,), (x * 2.0,))
    return tangent * 2.0


def through_vjp(x):
    _, pullback = sg.vjp(inner, x)
    return np.sum(pullback(1.0)[0] ** 2)


def through_hvp(x):
    return np.sum(sg.hvp(inner, (x,), (np.cos(x),))[0] ** 2)


def through_vmap(x):
    return np.sum(sg.vmap(lambda row: np.sum(np.tanh(row) ** 2))(x))


CASES = [
    (through_jvp, r"sg\.jvp is called"),
    (through_vjp, r"sg\.vjp is called"),
    (through_hvp, r"sg\.hvp is called"),
    (through_vmap, r"a function made by sg\.vmap is called"),
]


def _point(f):
    rng = np.random.default_rng(11)
    return rng.normal(size=(3, 2)) if f is through_vmap else rng.normal(size=3)


@pytest.mark.parametrize(("f", "match"), CASES)
def test_reverse_mode_refuses_at_the_users_line(f, match):
    with pytest.raises(sg.UnsupportedError, match=match) as refused:
        sg.grad(f, mode="s2s")(_point(f))
    message = str(refused.value)
    assert f"{HERE}:" in message and "s2sgrad/" not in message, message


@pytest.mark.parametrize(("f", "match"), CASES)
def test_forward_mode_refuses_at_the_users_line(f, match):
    x = _point(f)
    with pytest.raises(sg.UnsupportedError, match=match) as refused:
        sg.jvp(f, (x,), (np.ones_like(x),), mode="s2s")
    message = str(refused.value)
    assert f"{HERE}:" in message and "s2sgrad/" not in message, message


@pytest.mark.parametrize(("f", "match"), CASES)
def test_auto_differentiates_them_on_the_tape(f, match):
    x = _point(f)
    direction = np.random.default_rng(12).normal(size=x.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode="auto"), x), numeric_grad(f, [x], 0), rtol=1e-5)
        _, tangent = sg.jvp(f, (x,), (direction,), mode="auto")
        assert_close(tangent, numeric_jvp(f, [x], 0, direction), rtol=1e-5)
        (product,) = sg.hvp(f, (x,), (direction,), mode="auto")
        gradient = sg.grad(f, mode="tape")
    expected = numeric_jvp(gradient, [x], 0, direction, step=1e-5)
    assert_close(product, expected, rtol=1e-4, atol=1e-6)


def test_the_advice_works_a_vjp_as_the_gradient_of_a_weighted_sum():
    def through_grad(x):
        return np.sum(sg.grad(lambda y, v: np.sum(np.sin(y) * y * v))(x, np.cos(x)) ** 2)

    x = np.random.default_rng(13).normal(size=3)
    assert_close(sg.grad(through_grad, mode="s2s")(x), numeric_grad(through_grad, [x], 0))
