"""Derivatives of a gradient of a bound method (``sg.hessian(model.loss)``,
``sg.jvp(sg.grad(model.loss), ...)``): the generated code of ``grad(model.loss)`` takes
``self`` first, which differentiating it again must pass (it crashed with a TypeError in
modes "s2s" and "auto")."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close

import s2sgrad as sg

X = np.array([0.3, -0.7, 1.2])
W = np.array([[0.5, -0.2, 0.1], [0.3, 0.8, -0.4]])


class Model:
    def __init__(self, weights):
        self.weights = weights

    def loss(self, x):
        return np.sum(np.tanh(self.weights @ x) ** 2)


MODEL = Model(W)


def expected_hessian(x):
    t = np.tanh(W @ x)
    curvature = 2.0 * (1.0 - t**2) ** 2 - 4.0 * t**2 * (1.0 - t**2)
    return W.T @ (curvature[:, None] * W)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_second_derivatives_of_a_bound_method(mode):
    expected = expected_hessian(X)
    v = np.array([1.0, -0.5, 0.25])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(sg.hessian(MODEL.loss, mode=mode)(X), expected)
        assert_close(sg.hvp(MODEL.loss, (X,), (v,), mode=mode)[0], expected @ v)
        gradient = sg.grad(MODEL.loss, mode=mode)
        assert_close(sg.jvp(gradient, (X,), (v,), mode=mode)[1], expected @ v)
        assert_close(sg.jacobian(gradient, mode=mode)(X), expected)
        assert_close(sg.jacfwd(gradient, mode=mode)(X), expected)
        _, pullback = sg.vjp(gradient, X, mode=mode)
        cotangents = pullback(v)
        assert len(cotangents) == 1
        assert_close(cotangents[0], expected @ v)
