"""An array given to an object of the user's (``layer = Layer(W)``) and changed in place
through it (``layer.step()`` whose body is ``self.W -= lr * self.W``, or a helper
``step(layer)`` inlined into the caller), while the function reads ``W`` afterwards.

Source transformation called the method as code that changes nothing being differentiated
(the object was not, as its value never reaches the output) and wrote the inlined ``W -=``
as a new array: the gradient missed the change (silently wrong in s2s and auto). Now the
method call is refused as a call changing its argument (``self``) where a name sharing it is
watched, and the attribute's update as it runs when it holds an array; mode "auto" takes
the tape, which follows the change.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
_C = np.arange(1.0, 10.0).reshape(3, 3)


class _Layer:
    def __init__(self, w, b):
        self.w, self.b = w, b

    def step(self, lr):
        self.w -= lr * self.w

    def shrink(self, lr):
        self.w[...] = self.w * (1.0 - lr)

    def count(self):
        self.b += 1.0  # a number: rebinds the attribute alone


class _Holder:
    pass


def _step(layer, lr):
    layer.w -= lr * np.sin(layer.w)


def _steps_by_a_method(x):
    w = np.outer(x, x + 1.0)
    layer = _Layer(w, x * 0.5)
    layer.step(0.1)
    return np.sum(w * _C)


def _shrinks_by_a_method(x):
    w = np.outer(x, x + 1.0)
    layer = _Layer(w, x * 0.5)
    layer.shrink(0.2)
    return np.sum(w * _C) + np.sum(x)


def _steps_by_a_helper(x):
    w = np.outer(x, x + 1.0)
    layer = _Layer(w, x * 0.5)
    _step(layer, 0.1)
    return np.sum(w * _C)


def _steps_an_object_it_filled(x):
    w = np.outer(x, x + 1.0)
    holder = _Holder()
    holder.w = w
    _step(holder, 0.3)
    return np.sum(w * _C)


def _counts_a_number(x):
    w = np.outer(x, x + 1.0)
    layer = _Layer(w, 2.0)
    layer.count()
    return np.sum(w * _C) * 2.0


@pytest.mark.parametrize(
    "f",
    [
        _steps_by_a_method,
        _shrinks_by_a_method,
        _steps_by_a_helper,
        _steps_an_object_it_filled,
        _counts_a_number,
    ],
    ids=lambda f: f.__name__,
)
@pytest.mark.parametrize("mode", MODES)
def test_an_array_changed_through_an_object_is_right_or_refused(f, mode):
    x = np.random.default_rng(51).standard_normal(3)
    v = np.random.default_rng(52).standard_normal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = call_twice(sg.grad(f, mode=mode), x)
            _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        except sg.S2SGradError as error:
            assert mode != "tape", error  # _counts_a_number: self.b may be an array
            assert f"{__file__}:" in str(error)
            return
    assert_close(got, numeric_grad(f, [x], 0))
    assert_close(tangent, numeric_jvp(f, [x], 0, v))


@pytest.mark.parametrize("f", [_steps_by_a_method, _steps_by_a_helper], ids=lambda f: f.__name__)
def test_mode_auto_takes_the_tape_for_an_array_changed_through_an_object(f):
    x = np.random.default_rng(53).standard_normal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode="auto"), x)
    assert_close(got, numeric_grad(f, [x], 0))


def _reads_a_new_layer(x):
    layer = _Layer(np.ones(3), 1.0)
    return np.sum(x**2 * layer.w)


def test_what_a_refused_run_stored_on_an_object_is_forgotten_when_auto_falls_back():
    x = np.random.default_rng(54).standard_normal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sg.grad(_steps_an_object_it_filled, mode="auto")(x)  # source transformation refused
    # as it ran, after storing a differentiated value on an object: no later computation
    # takes that value for one of its own
    got = sg.grad(_reads_a_new_layer, mode="s2s")(x)
    assert_close(got, numeric_grad(_reads_a_new_layer, [x], 0))
