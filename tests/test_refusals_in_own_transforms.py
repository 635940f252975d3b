"""mode='s2s' over a function that calls s2sgrad's own transforms (sg.vmap, sg.jvp, sg.hvp,
sg.jacobian) refuses at the user's call, not at a line of s2sgrad's own files; mode='auto'
differentiates it on the tape."""

import warnings

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([0.3, -0.7, 1.2])
BATCH = np.array([[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]])


def through_vmap(w):
    return np.sum(sg.vmap(np.tanh)(BATCH * w))


def through_jvp(x):
    return sg.jvp(lambda v: np.sum(np.sin(v) * v), (x,), (np.ones(3),))[1]


def through_hvp(x):
    return np.sum(sg.hvp(lambda v: np.sum(v**4), (x,), (np.ones(3),))[0])


def through_jacobian(x):
    return np.sum(sg.jacobian(lambda v: v**2)(x))


CASES = [through_vmap, through_jvp, through_hvp, through_jacobian]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_refusal_names_the_users_line(f):
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.grad(f, mode="s2s")(X)
    assert str(refused.value).startswith(f"{__file__}:")


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_auto_differentiates_on_the_tape(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(f, mode="auto")(X)
    step = 1e-6
    expected = np.array([(f(X + step * e) - f(X - step * e)) / (2 * step) for e in np.eye(3)])
    np.testing.assert_allclose(gradient, expected, rtol=1e-5, atol=1e-7)
