"""NumPy reductions on arrays run as their method twins in specialised code
(``np.max(s, axis=1, keepdims=True)`` is ``s.max(axis=1, keepdims=True)``, without NumPy's
dispatch in Python), and stay NumPy calls on anything the probe did not see an array."""

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")


def softmax_loss(W, X):
    logits = X @ W
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    p = np.exp(shifted) / np.sum(np.exp(shifted), axis=1, keepdims=True)
    return (
        np.mean(np.transpose(p)[0]) + np.prod(np.min(p, 0)) + np.sum(p**2, 1, keepdims=True)[0, 0]
    )


def on_a_number(x, w):
    return np.sum(x) * np.max(x) + np.sum(np.sin(w * x), axis=0)


@pytest.mark.parametrize("mode", MODES)
def test_reductions_against_finite_differences(mode):
    rng = np.random.default_rng(6)
    W, X = rng.normal(size=(3, 4)), rng.normal(size=(5, 3))
    g = sg.grad(softmax_loss, mode=mode)
    for _ in range(3):
        assert_close(g(W, X), numeric_grad(softmax_loss, (W, X), 0))
    if mode == "s2s":
        code = "\n".join(line for line in sg.source(g).splitlines() if "#" not in line)
        assert "logits.max(axis=1, keepdims=True)" in code, code
        for call in ("np.max(", "np.sum(", "np.mean(", "np.min(", "np.prod(", "np.transpose("):
            assert call not in code, code


@pytest.mark.parametrize("mode", MODES)
def test_a_number_keeps_the_numpy_call(mode):
    w = np.array([0.3, -0.2])
    g = sg.grad(on_a_number, wrt=(0, 1), mode=mode)
    for _ in range(3):
        dx, dw = g(0.7, w)
        assert_close(dx, numeric_grad(on_a_number, (0.7, w), 0))
        assert_close(dw, numeric_grad(on_a_number, (0.7, w), 1))
    if mode == "s2s":
        assert "x.sum" not in sg.source(g) and "x.max" not in sg.source(g), sg.source(g)
