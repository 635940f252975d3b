"""Programs as peers' tutorials write them (a cubic fitted to sine, a two-layer ReLU net
with ``.dot``, a chain of layer objects, loops of multiplication, an explicit loop over an
array's entries, logistic regression with a tanh sigmoid, a perceptron over a list of
pairs, a dict of variables with integer labels, Lotka-Volterra by Euler steps, kernel
ridge with ``solve`` and ``slogdet``, a buffer a helper fills, ``zip(params[::2],
params[1::2])``), written here for NumPy. Each is checked in every mode, gradient (two
calls), jvp and hvp, against central differences; where a mode refuses, the refusal names
the program's line, and mode "auto" differentiates it.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from oracle import numeric_grad, numeric_jvp

import s2sgrad as sg

_rng = np.random.default_rng(7)
XS = np.linspace(-math.pi, math.pi, 40)
YS = np.sin(XS)


def poly_fit_sin(w):
    # the classic: fit sin with a cubic, weights a, b, c, d
    a, b, c, d = w[0], w[1], w[2], w[3]
    y_pred = a + b * XS + c * XS**2 + d * XS**3
    loss = np.square(y_pred - YS).sum()
    return loss


def legendre_fit(w):
    def p3(x):
        return 0.5 * (5 * x**3 - 3 * x)

    a, b, c, d = w
    y_pred = a + b * p3(c + d * XS)
    return ((y_pred - YS) ** 2).sum()


X2 = _rng.normal(size=(16, 4))
T2 = _rng.normal(size=(16, 2))


def two_layer_relu(flat):
    w1 = flat[: 4 * 6].reshape(4, 6)
    w2 = flat[4 * 6 :].reshape(6, 2)
    h = X2.dot(w1)
    h_relu = np.maximum(h, 0)
    y_pred = h_relu.dot(w2)
    return np.square(y_pred - T2).sum()


class Dense:
    def __init__(self, W, b, act=np.tanh):
        self.W, self.b, self.act = W, b, act

    def __call__(self, x):
        return self.act(x @ self.W + self.b)


class Chain:
    def __init__(self, *layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def flux_chain(flat):
    W1 = flat[:8].reshape(4, 2)
    b1 = flat[8:10]
    W2 = flat[10:12].reshape(2, 1)
    b2 = flat[12:13]
    model = Chain(Dense(W1, b1), Dense(W2, b2, act=lambda z: z))
    out = model(X2)
    return np.mean((out[:, 0] - T2[:, 0]) ** 2)


def zygote_pow(x):
    # repeated multiplication in a loop with a Python int
    def pow_(v, n):
        r = 1.0
        for _ in range(n):
            r = r * v
        return r

    return np.sum(pow_(x, 3)) + np.sum(pow_(np.sin(x), 2))


def enzyme_norm(x):
    # an explicit loop over entries of an array, like Enzyme's C examples
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i]
    return math.sqrt(s)


def cookbook_tanh_chain(x):
    y = x
    for _ in range(4):
        y = np.tanh(y) * 1.5 + 0.1 * y
    return np.sum(y)


def cookbook_logistic(W):
    inputs = np.array(
        [[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]]
    )
    targets = np.array([True, True, False, True])

    def sigmoid(z):
        return 0.5 * (np.tanh(z / 2) + 1)

    def predict(W, b, inputs):
        return sigmoid(np.dot(inputs, W) + b)

    preds = predict(W[:3], W[3], inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probs))


def swift_perceptron(flat):
    w = flat[:2]
    b = flat[2]
    data = [
        (np.array([0.0, 0.0]), 0.0),
        (np.array([0.0, 1.0]), 1.0),
        (np.array([1.0, 0.0]), 1.0),
        (np.array([1.0, 1.0]), 1.0),
    ]
    loss = 0.0
    for xi, yi in data:
        pred = 1.0 / (1.0 + np.exp(-(w @ xi + b)))
        loss = loss + (pred - yi) ** 2
    return loss / len(data)


def tf_custom_loop(flat):
    # a Keras-like model as a dict of variables, a loss with regularisation
    params = {"kernel": flat[:8].reshape(4, 2), "bias": flat[8:10]}
    logits = X2 @ params["kernel"] + params["bias"]
    labels = (T2[:, 0] > 0).astype(int)
    logits = logits - logits.max(axis=1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    nll = -logp[np.arange(len(labels)), labels].mean()
    reg = 0.01 * sum(np.sum(v**2) for v in params.values())
    return nll + reg


def julia_ode_euler(p):
    # Lotka-Volterra by explicit Euler, loss against fixed data
    a, b, c, d = p
    u = np.array([1.0, 1.0])
    dt = 0.05
    traj = []
    for _ in range(30):
        du = np.array([a * u[0] - b * u[0] * u[1], -c * u[1] + d * u[0] * u[1]])
        u = u + dt * du
        traj.append(u)
    traj = np.stack(traj)
    return np.sum((traj - 1.0) ** 2)


def jax_kernel_ridge(log_ell):
    ell = np.exp(log_ell[0])
    x = XS[:12]
    d2 = (x[:, None] - x[None, :]) ** 2
    K = np.exp(-0.5 * d2 / ell**2) + 1e-3 * np.eye(12)
    alpha = np.linalg.solve(K, YS[:12])
    return YS[:12] @ alpha + np.linalg.slogdet(K)[1] + 0.1 * log_ell[1] ** 2


def buffer_filled_by_helper(x):
    def fill(out, v):
        for i in range(len(v)):
            out[i] = v[i] ** 2 + np.sin(v[i])
        return out

    buf = np.zeros(len(x))
    buf = fill(buf, x)
    return np.sum(buf * x)


def params_pairs_loop(flat):
    shapes = [(4, 3), (3,), (3, 2), (2,)]
    params, k = [], 0
    for s in shapes:
        n = int(np.prod(s))
        params.append(flat[k : k + n].reshape(s))
        k += n
    h = X2
    for W, b in zip(params[::2], params[1::2]):
        h = np.tanh(h @ W + b)
    return np.sum(h**2)


PROGRAMS = {
    "poly_fit_sin": (poly_fit_sin, 4),
    "legendre_fit": (legendre_fit, 4),
    "two_layer_relu": (two_layer_relu, 36),
    "flux_chain": (flux_chain, 13),
    "zygote_pow": (zygote_pow, 5),
    "enzyme_norm": (enzyme_norm, 5),
    "cookbook_tanh_chain": (cookbook_tanh_chain, 5),
    "cookbook_logistic": (cookbook_logistic, 4),
    "swift_perceptron": (swift_perceptron, 3),
    "tf_custom_loop": (tf_custom_loop, 10),
    "julia_ode_euler": (julia_ode_euler, 4),
    "jax_kernel_ridge": (jax_kernel_ridge, 2),
    "buffer_filled_by_helper": (buffer_filled_by_helper, 5),
    "params_pairs_loop": (params_pairs_loop, 23),
}


# what a mode refuses, and why: (program, mode) -> the words the refusal says
REFUSED = {
    ("two_layer_relu", "tape"): "a.dot(b) of a plain array",
    ("buffer_filled_by_helper", "tape"): "element of a plain array",
    ("flux_chain", "s2s"): "keeps differentiated values inside an object",
}


def _point(name: str, size: int):
    rng = np.random.default_rng(size)
    shift = 0.6 if name == "julia_ode_euler" else 0.0
    return rng.normal(size=size) * 0.5 + shift, rng.normal(size=size)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_tutorial_program(name, mode):
    f, size = PROGRAMS[name]
    x, v = _point(name, size)
    refusal = REFUSED.get((name, mode))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mode "auto" falling back to the tape
        if refusal is not None:
            for transform in (
                lambda: sg.grad(f, mode=mode)(x.copy()),
                lambda: sg.jvp(f, (x.copy(),), (v,), mode=mode),
                lambda: sg.hvp(f, (x.copy(),), (v,), mode=mode),
            ):
                with pytest.raises(sg.S2SGradError, match=re.escape(refusal)) as caught:
                    transform()
                assert "test_peer_tutorials.py:" in str(caught.value)
            return
        gradient = sg.grad(f, mode=mode)
        expected = numeric_grad(lambda z: f(z.copy()), [x.copy()], 0)
        for _ in range(2):  # the second call runs the specialised code
            np.testing.assert_allclose(gradient(x.copy()), expected, rtol=1e-5, atol=1e-7)
        _, tangent = sg.jvp(f, (x.copy(),), (v,), mode=mode)
        np.testing.assert_allclose(
            tangent, numeric_jvp(lambda z: f(z.copy()), [x.copy()], 0, v), rtol=1e-5, atol=1e-7
        )
        (product,) = sg.hvp(f, (x.copy(),), (v,), mode=mode)
        reference = sg.grad(f, mode="auto")
        np.testing.assert_allclose(reference(x.copy()), expected, rtol=1e-5, atol=1e-7)
        along = numeric_jvp(lambda z: reference(z.copy()), [x.copy()], 0, v, step=1e-5)
    np.testing.assert_allclose(product, along, rtol=1e-4, atol=1e-6)
