"""What a ``with_derivative`` hook returns replaces the cotangent; a hook returning text or
numbers of a shape that cannot be the cotangent's is the hook's mistake, reported as a
``CotangentShapeError`` naming the user's file (a NumPy error from inside generated code
before), in every engine. A scalar or a same-shape array still replaces it."""

import os

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.errors import CotangentShapeError

MODES = ["s2s", "auto", "tape"]


def text_returned(x):
    return np.sum(sg.with_derivative(x * 2, lambda g: "oops"))


def wrong_shape_returned(x):
    return np.sum(sg.with_derivative(x * 2, lambda g: np.ones(g.shape[0] + 2)))


def halved(x):
    return np.sum(np.sin(sg.with_derivative(x * 2, lambda g: g / 2)))


def constant_returned(x):
    return np.sum(np.sin(sg.with_derivative(x * 2, lambda g: 3.0)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [text_returned, wrong_shape_returned])
@pytest.mark.parametrize("size", [2, 4])
def test_a_hook_returning_no_cotangent_is_refused_naming_the_file(f, size, mode):
    x = np.random.default_rng(size).normal(size=size)
    with pytest.raises(CotangentShapeError, match=os.path.basename(__file__)):
        sg.grad(f, mode=mode)(x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [2, 4])
def test_a_hook_replacing_the_cotangent_still_does(size, mode):
    x = np.random.default_rng(size).normal(size=size)
    for _ in range(2):
        np.testing.assert_allclose(sg.grad(halved, mode=mode)(x), np.cos(2 * x), rtol=1e-12)
        np.testing.assert_allclose(sg.grad(constant_returned, mode=mode)(x), 6.0 + 0 * x)
