"""``acc.dot(x)`` / ``acc.clip(x)`` of an object of the user's whose methods are named like
ndarray's: read as ``np.ndarray.dot``, the rule crashed (TypeError from ``g * acc``) in
s2s and auto. A receiver not surely an array is now checked where the call runs: refused
in s2s at the user's line, taped in auto; an array receiver keeps the rule."""

import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_grad_jvp_and_hvp,
    assert_refused_in_s2s_and_taped_in_auto,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg

HERE = "test_array_method_receivers_at_run_time.py"


class Accumulator:
    """An object with methods named like ndarray's that compute something else."""

    def __init__(self, weights):
        self.weights = weights

    def dot(self, v):
        return np.sum(self.weights * v * v)

    def clip(self, v):
        return np.tanh(v) * self.weights


ACC = Accumulator(np.array([0.5, -1.5, 2.0, 0.25]))


def dot_of_a_local_alias(z):
    acc = ACC
    return acc.dot(z) + np.sum(z)


def clip_of_a_local_alias(z):
    acc = ACC
    return np.sum(acc.clip(z) * z)


def dot_of_a_default(z, acc=ACC):
    return acc.dot(np.sin(z))


@pytest.mark.parametrize("f", [dot_of_a_local_alias, clip_of_a_local_alias, dot_of_a_default])
def test_a_users_object_is_refused_in_s2s_and_taped_in_auto(f):
    x = np.random.default_rng(3).normal(size=4)
    assert_refused_in_s2s_and_taped_in_auto(f, [x], "class 'Accumulator'.*ndarray", HERE)


@pytest.mark.parametrize("f", [dot_of_a_local_alias, clip_of_a_local_alias, dot_of_a_default])
def test_forward_and_second_order_in_auto(f):
    rng = np.random.default_rng(4)
    assert_grad_jvp_and_hvp(f, rng.normal(size=4), rng.normal(size=4), "auto")


def test_forward_mode_refuses_in_s2s_at_the_users_line():
    x = np.random.default_rng(5).normal(size=4)
    with pytest.raises(sg.UnsupportedError, match="Accumulator") as refused:
        sg.jvp(dot_of_a_local_alias, (x,), (np.ones(4),), mode="s2s")
    assert f"{HERE}:" in str(refused.value)


def test_a_parameter_given_an_object_then_an_array():
    def loss(w, data):
        return np.sum(np.tanh(data.dot(w))) + np.sum(data.clip(w, 2.0) ** 2)

    rng = np.random.default_rng(6)
    w, data = rng.normal(size=3), rng.normal(size=(3, 3))
    v = rng.normal(size=3)
    for mode in ("s2s", "auto"):  # an array: the rule (the tape refuses data.dot(w))
        gradient = sg.grad(loss, mode=mode)
        assert_close(gradient(w, data), numeric_grad(loss, [w, data], 0))
        _, tangent = sg.jvp(loss, (w, data), (v, np.zeros((3, 3))), mode=mode)
        assert_close(tangent, numeric_jvp(lambda u: loss(u, data), [w], 0, v))
        product = sg.hvp(lambda u: loss(u, data), (w,), (v,), mode=mode)
        along = numeric_jvp(gradient, [w, data], 0, v, step=1e-5)
        assert_close(np.reshape(product, (3,)), along, rtol=1e-4, atol=1e-6)

    class Rows:
        def dot(self, v):
            return np.array([np.sum(v**3), np.sum(v)])

        def clip(self, v, hi):
            return np.minimum(v * 3.0, hi)

    rows = Rows()
    expected = numeric_grad(loss, [w, rows], 0)
    with pytest.raises(sg.UnsupportedError, match="class .*Rows") as refused:
        sg.grad(loss, mode="s2s")(w, rows)
    assert f"{HERE}:" in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.grad(loss, mode="auto")(w, rows), expected)
        _, tangent = sg.jvp(loss, (w, rows), (np.ones(3), None), mode="auto")
    assert_close(tangent, numeric_jvp(lambda v: loss(v, rows), [w], 0, np.ones(3)))


def test_the_method_called_through_its_class_is_differentiated():
    def loss(z):
        return Accumulator.dot(ACC, z)

    x = np.random.default_rng(7).normal(size=4)
    assert_close(sg.grad(loss, mode="s2s")(x), numeric_grad(loss, [x], 0))
