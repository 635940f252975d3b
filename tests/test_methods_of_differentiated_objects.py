"""An object holding the parameters, differentiated through its methods:
``sg.grad(lambda m: m.loss(x))(model)`` for a dataclass or a registered class whose
``loss`` calls ``self.predict``.

Found here:

* forward mode (``sg.jvp``, ``sg.hvp``) in s2s refused ``m.loss(x)``, "a method of a value
  being differentiated", though reverse mode dispatched it; it now calls
  ``transformed_method_jvp`` (``runtime/dispatch.py``), the class's method differentiated
  with the object as its first argument.
* a callable stored on the object that closes over it (``self.f = lambda x: x @ self.W``)
  was called as a constant, in reverse mode too: a gradient without what flows through it,
  silently wrong in s2s and auto. It is now refused in s2s (naming the line), as any
  function taken out of a value being differentiated that holds values, and mode "auto"
  takes the tape; a stored function holding nothing (``self.act = np.sin``) still runs.
"""

import warnings
from dataclasses import dataclass

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
R = np.random.default_rng(2929)
X = R.normal(size=(5, 3))
Y = R.normal(size=(5, 2))


@dataclass
class Model:
    W: np.ndarray
    b: np.ndarray

    def predict(self, x):
        return np.tanh(x @ self.W + self.b)

    def loss(self, x, y):
        return np.mean((self.predict(x) - y) ** 2) + 0.1 * np.sum(self.b**2)


class Registered:
    def __init__(self, W, b):
        self.W, self.b = W, b
        self.act = np.sin  # a function holding nothing: a constant

    def loss(self, x, y):
        return np.sum((self.act(x @ self.W) + self.b - y) ** 2)


sg.register_pytree(Registered, lambda m: ((m.W, m.b), None), lambda _, c: Registered(*c))


class Closing:
    def __init__(self, W):
        self.W = W
        self.f = lambda x: np.tanh(x @ self.W)  # computes with the object's own W

    def loss(self, x):
        return np.sum(self.f(x) ** 2) + np.sum(np.cos(self.W))


sg.register_pytree(Closing, lambda m: ((m.W,), None), lambda _, c: Closing(*c))


def _as_pair(m):
    return np.concatenate([np.ravel(m.W), np.ravel(m.b)])


def _from_pair(cls, template, flat):
    W = flat[: template.W.size].reshape(template.W.shape)
    return cls(W, flat[template.W.size :].reshape(template.b.shape))


CLASSES = [Model, Registered]
# the stored self.act(...) is a call resolved at run time, whose gradient forward mode in
# s2s does not follow: the Hessian-vector product is refused there, taped in mode "auto"
HVP_FALLS_BACK = {Registered}


def _loss_of_flat(cls, template):
    return lambda flat: _from_pair(cls, template, flat).loss(X, Y)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_gradient_jvp_and_hvp_through_a_method(cls, mode):
    model = cls(R.normal(size=(3, 2)), R.normal(size=2))
    direction = cls(R.normal(size=(3, 2)), R.normal(size=2))
    of_flat = _loss_of_flat(cls, model)
    flat, along = _as_pair(model), _as_pair(direction)
    expected = numeric_grad(of_flat, [flat], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # mode "auto" falls back nowhere
        gradient_of = sg.grad(lambda m: m.loss(X, Y), mode=mode)
        first, got = gradient_of(model), gradient_of(model)  # the second runs specialised code
        _, tangent = sg.jvp(lambda m: m.loss(X, Y), (model,), (direction,), mode=mode)
    with warnings.catch_warnings():
        if cls in HVP_FALLS_BACK:
            if mode == "s2s":
                with pytest.raises(sg.UnsupportedError, match="call resolved at run time"):
                    sg.hvp(lambda m: m.loss(X, Y), (model,), (direction,), mode=mode)
            warnings.simplefilter("ignore", sg.S2SGradWarning)
        else:
            warnings.simplefilter("error", sg.S2SGradWarning)
        products = [
            sg.hvp(lambda m: m.loss(X, Y), (model,), (direction,), mode=mode)[0]
            for _ in range(2)
            if mode != "s2s" or cls not in HVP_FALLS_BACK
        ]
    assert isinstance(got, cls)
    assert_close(_as_pair(first), expected, rtol=1e-5, atol=1e-7)
    assert_close(_as_pair(got), expected, rtol=1e-5, atol=1e-7)
    assert_close(float(tangent), float(numeric_jvp(of_flat, [flat], 0, along)), rtol=1e-5)
    gradient = sg.grad(of_flat, mode="tape")
    assert_close(gradient(flat), expected, rtol=1e-5, atol=1e-7)
    second = numeric_jvp(gradient, [flat], 0, along)
    for product in products:
        assert_close(_as_pair(product), second, rtol=1e-4, atol=1e-6)


def _closing_loss(W):
    return Closing(W).loss(X)


def test_a_stored_closure_over_the_object_is_refused_in_s2s():
    model = Closing(R.normal(size=(3, 2)))
    with pytest.raises(sg.UnsupportedError, match=r"test_methods_of_differentiated_objects\.py:"):
        sg.grad(lambda m: m.loss(X), mode="s2s")(model)
    with pytest.raises(sg.UnsupportedError, match=r"holds values of its own"):
        sg.jvp(lambda m: m.loss(X), (model,), (Closing(np.ones((3, 2))),), mode="s2s")


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_a_stored_closure_over_the_object_is_differentiated_on_the_tape(mode):
    model = Closing(R.normal(size=(3, 2)))
    expected = numeric_grad(_closing_loss, [model.W], 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient_of = sg.grad(lambda m: m.loss(X), mode=mode)
        first, got = gradient_of(model), gradient_of(model)
        direction = R.normal(size=(3, 2))
        _, tangent = sg.jvp(lambda m: m.loss(X), (model,), (Closing(direction),), mode=mode)
    assert_close(first.W, expected, rtol=1e-5, atol=1e-7)
    assert_close(got.W, expected, rtol=1e-5, atol=1e-7)
    assert_close(float(tangent), float(np.sum(expected * direction)), rtol=1e-5)
