"""Golden tests of the generated code, so a readability regression shows up in review.

Set S2SGRAD_UPDATE_GOLDEN=1 to rewrite the files in tests/golden after an intended change.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import s2sgrad as sg

GOLDEN = Path(__file__).parent / "golden"


def mlp_loss(x, W1, b1, W2, b2, y):
    h = np.maximum(x @ W1 + b1, 0.0)
    return np.mean((h @ W2 + b2 - y) ** 2)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def logistic(w, x, y):
    z = x @ w
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p))


def scalar(x, y):
    z = np.sin(x) * y
    z = z + x**2
    return z


def softmax_cross_entropy(logits, labels):
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * log_probs, axis=1))


def golden_labels(W, X, y):
    logits = X @ W
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(X.shape[0]), y])


def golden_attention(Wq, Wk, Wv, X):
    q, k, v = X @ Wq, X @ Wk, X @ Wv
    scores = (q @ k.T) / np.sqrt(X.shape[1])
    e = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    return np.sum((e / np.sum(e, axis=1, keepdims=True) @ v) ** 2)


def golden_conv(x, kernel):
    out = x[:, :-1] @ kernel[0]
    for i in range(1, kernel.shape[0]):
        out = out + x[:, i : x.shape[1] - kernel.shape[0] + 1 + i] @ kernel[i]
    return out


def golden_conv_loss(kernel, x):
    return np.sum(np.tanh(golden_conv(x, kernel)) ** 2)


RNG = np.random.default_rng(0)


def _args(*shapes):
    return tuple(RNG.standard_normal(shape) for shape in shapes)


# name: (function, wrt, example arguments or None for the generic, shape-independent code)
CASES = {
    "mlp_loss": (mlp_loss, ("W1", "b1", "W2", "b2"), None),
    "mlp_loss_specialised": (
        mlp_loss,
        ("W1", "b1", "W2", "b2"),
        _args((16, 4), (4, 8), (8,), (8, 1), (1,), (16, 1)),
    ),
    "rosenbrock": (rosenbrock, 0, None),
    "rosenbrock_specialised": (rosenbrock, 0, _args((10,))),
    "logistic_specialised": (logistic, "w", _args((3,), (5, 3), (5,))),
    "scalar": (scalar, (0, 1), None),
    "scalar_specialised": (scalar, (0, 1), (0.5, 1.5)),
    "labels_specialised": (golden_labels, "W", (*_args((4, 3), (6, 4)), np.arange(6) % 3)),
    "attention_specialised": (
        golden_attention,
        (0, 1, 2),
        _args((16, 4), (16, 4), (16, 4), (5, 16)),
    ),
    "conv_helper_specialised": (golden_conv_loss, "kernel", _args((2, 3, 2), (4, 5, 3))),
    "softmax_cross_entropy_specialised": (softmax_cross_entropy, 0, _args((4, 3), (4, 3))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_code_matches_golden(name):
    function, wrt, example = CASES[name]
    transformed = sg.grad(function, wrt=wrt)
    if example is not None:
        transformed(*example)
    text = sg.source(transformed)
    path = GOLDEN / f"{name}.py"
    if os.environ.get("S2SGRAD_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"no golden file {path}; run with S2SGRAD_UPDATE_GOLDEN=1"
    assert text == path.read_text()


def test_golden_code_compiles_and_has_comments():
    for path in GOLDEN.glob("*.py"):
        text = path.read_text()
        compile(text, str(path), "exec")
        assert "# grad of:" in text
