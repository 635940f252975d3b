"""Benchmark workloads: functions written in plain NumPy and their hand-written gradients.

Each workload pairs a function ``fn`` (what a user would hand to ``s2sgrad.grad``) with
``hand_grad``, the gradient an expert would write by hand: it runs the forward pass once,
keeps the intermediates the backward pass needs, and returns one gradient per entry of
``wrt``, in that order.

The functions refer to NumPy only through the global name ``np``, so that
:func:`with_numpy` can rebind them to ``autograd.numpy`` or ``jax.numpy`` for comparison.

Example:
    >>> w = WORKLOADS[0]
    >>> args = w.make_args(np.random.default_rng(0), **w.small)
    >>> grads = w.hand_grad(*args)
    >>> len(grads) == len(w.wrt)
    True
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# --------------------------------------------------------------------------------------------
# (a) a tiny MLP on XOR: 2 -> 8 -> 1, tanh hidden layer, mean squared error on the 4 points.


def xor_mlp(W1, b1, W2, b2, X, y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def xor_mlp_grad(W1, b1, W2, b2, X, y):
    h = np.tanh(X @ W1 + b1)
    out = h @ W2 + b2
    dout = (out - y) * (2.0 / out.size)
    dW2 = h.T @ dout
    db2 = dout.sum(axis=0)
    dz = (dout @ W2.T) * (1.0 - h * h)
    dW1 = X.T @ dz
    db1 = dz.sum(axis=0)
    return dW1, db1, dW2, db2


def xor_args(rng, n_hidden):
    X = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = np.array([[0.0], [1.0], [1.0], [0.0]])
    W1 = rng.normal(size=(2, n_hidden))
    b1 = rng.normal(size=n_hidden) * 0.1
    W2 = rng.normal(size=(n_hidden, 1)) / np.sqrt(n_hidden)
    b2 = rng.normal(size=1) * 0.1
    return W1, b1, W2, b2, X, y


# --------------------------------------------------------------------------------------------
# (b) an MLP with softmax cross-entropy: batch 128, 784 -> 256 -> 10, relu, stable log-softmax.
# Y holds one-hot labels.


def mlp_softmax(W1, b1, W2, b2, X, Y):
    h = np.maximum(X @ W1 + b1, 0.0)
    logits = h @ W2 + b2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.sum(Y * logp) / X.shape[0]


def mlp_softmax_grad(W1, b1, W2, b2, X, Y):
    h = np.maximum(X @ W1 + b1, 0.0)
    logits = h @ W2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    # The rows of Y are one-hot, so d(-sum(Y * logp))/dlogits is p - Y.
    dlogits = (p - Y) / X.shape[0]
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dz = dlogits @ W2.T
    dz *= h > 0.0
    dW1 = X.T @ dz
    db1 = dz.sum(axis=0)
    return dW1, db1, dW2, db2


def mlp_softmax_args(rng, batch, n_in, n_hidden, n_out):
    X = rng.normal(size=(batch, n_in))
    Y = np.eye(n_out)[rng.integers(0, n_out, size=batch)]
    W1 = rng.normal(size=(n_in, n_hidden)) / np.sqrt(n_in)
    b1 = rng.normal(size=n_hidden) * 0.1
    W2 = rng.normal(size=(n_hidden, n_out)) / np.sqrt(n_hidden)
    b2 = rng.normal(size=n_out) * 0.1
    return W1, b1, W2, b2, X, Y


# --------------------------------------------------------------------------------------------
# (c) single-head self-attention: softmax(Q K^T / sqrt(d)) V, loss = sum of squares of the output.


def attention(Wq, Wk, Wv, X):
    q = X @ Wq
    k = X @ Wk
    v = X @ Wv
    scores = (q @ k.T) / np.sqrt(X.shape[1])
    e = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    weights = e / np.sum(e, axis=1, keepdims=True)
    out = weights @ v
    return np.sum(out**2)


def attention_grad(Wq, Wk, Wv, X):
    scale = 1.0 / np.sqrt(X.shape[1])
    q = X @ Wq
    k = X @ Wk
    v = X @ Wv
    scores = (q @ k.T) * scale
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    out = weights @ v
    dout = 2.0 * out
    dweights = dout @ v.T
    dv = weights.T @ dout
    dscores = weights * (dweights - (dweights * weights).sum(axis=1, keepdims=True))
    dscores *= scale
    dq = dscores @ k
    dk = dscores.T @ q
    return X.T @ dq, X.T @ dk, X.T @ dv


def attention_args(rng, seq, d_model):
    X = rng.normal(size=(seq, d_model))
    Wq, Wk, Wv = (rng.normal(size=(d_model, d_model)) / np.sqrt(d_model) for _ in range(3))
    return Wq, Wk, Wv, X


# --------------------------------------------------------------------------------------------
# (d) the Rosenbrock function.


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_grad(x):
    head = x[:-1]
    t = x[1:] - head * head
    g = np.empty_like(x)
    g[:-1] = -400.0 * t * head - 2.0 * (1.0 - head)
    g[-1] = 0.0
    g[1:] += 200.0 * t
    return (g,)


def rosenbrock_args(rng, n):
    return (rng.uniform(-2.0, 2.0, size=n),)


# --------------------------------------------------------------------------------------------
# (e) a vanilla RNN: h = tanh(x_t Wx + h Wh + b) over the time steps, loss on the last state.
# The hand-written gradient keeps every hidden state (its "saved activations") and runs the
# usual backpropagation through time, step by step like the forward loop.


def rnn(Wx, Wh, b, xs):
    h = np.zeros((xs.shape[1], Wh.shape[0]))
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return np.sum(h**2)


def rnn_grad(Wx, Wh, b, xs):
    steps = xs.shape[0]
    hs = np.empty((steps + 1, xs.shape[1], Wh.shape[0]))
    hs[0] = 0.0
    for t in range(steps):
        hs[t + 1] = np.tanh(xs[t] @ Wx + hs[t] @ Wh + b)
    dWx = np.zeros_like(Wx)
    dWh = np.zeros_like(Wh)
    db = np.zeros_like(b)
    dh = 2.0 * hs[steps]
    for t in range(steps - 1, -1, -1):
        dz = dh * (1.0 - hs[t + 1] * hs[t + 1])
        dWx += xs[t].T @ dz
        dWh += hs[t].T @ dz
        db += dz.sum(axis=0)
        dh = dz @ Wh.T
    return dWx, dWh, db


def rnn_saved_bytes(Wx, Wh, b, xs):
    """Bytes of the activations ``rnn_grad`` keeps for its backward loop (the array ``hs``)."""
    return (xs.shape[0] + 1) * xs.shape[1] * Wh.shape[0] * xs.itemsize


def rnn_args(rng, steps, batch, n_in, n_hidden):
    xs = rng.normal(size=(steps, batch, n_in))
    Wx = rng.normal(size=(n_in, n_hidden)) / np.sqrt(n_in)
    Wh = rng.normal(size=(n_hidden, n_hidden)) / np.sqrt(n_hidden)
    b = rng.normal(size=n_hidden) * 0.1
    return Wx, Wh, b, xs


# --------------------------------------------------------------------------------------------
# (f) a scalar Python loop of 200 iterations; gradient with respect to a and b.


def scalar_loop(a, b, x):
    for _ in range(200):
        x = np.sin(x) * a + b * x
    return x


def scalar_loop_grad(a, b, x):
    # On Python floats a person writes math.sin, not np.sin (about 20x cheaper per call).
    xs = []
    sines = []
    for _ in range(200):
        s = math.sin(x)
        xs.append(x)
        sines.append(s)
        x = s * a + b * x
    da = 0.0
    db = 0.0
    dx = 1.0
    for x, s in zip(reversed(xs), reversed(sines)):
        da += dx * s
        db += dx * x
        dx = dx * (math.cos(x) * a + b)
    return da, db


def scalar_loop_args(rng):
    # |a cos(x) + b| < 1 keeps the derivative of the 200-step recurrence bounded.
    return float(rng.uniform(0.3, 0.5)), float(rng.uniform(0.2, 0.4)), float(rng.uniform(-1, 1))


# --------------------------------------------------------------------------------------------
# (g) a small CNN whose convolution is a helper function: conv, 2x2 max-pool, dense, softmax
# cross-entropy with one-hot labels (the network of examples/checkpointed_cnn.py).


def conv2d(x, kernel, bias):
    """A 'valid' convolution of images x (N, H, W, C) with kernel (KH, KW, C, O)."""
    kh, kw, _, _ = kernel.shape
    oh = x.shape[1] - kh + 1
    ow = x.shape[2] - kw + 1
    out = bias
    for i in range(kh):
        for j in range(kw):
            out = out + x[:, i : i + oh, j : j + ow, :] @ kernel[i, j]
    return out


def cnn(kernel, bias, weights, offsets, images, labels):
    features = conv2d(images, kernel, bias)
    n, h, w, c = features.shape
    pooled = np.max(np.reshape(features, (n, h // 2, 2, w // 2, 2, c)), axis=(2, 4))
    logits = np.reshape(pooled, (n, -1)) @ weights + offsets
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(labels * logp, axis=1))


def cnn_grad(kernel, bias, weights, offsets, images, labels):
    kh, kw, _, _ = kernel.shape
    features = conv2d(images, kernel, bias)
    n, h, w, c = features.shape
    windows = features.reshape(n, h // 2, 2, w // 2, 2, c)
    pooled = windows.max(axis=(2, 4))
    flat = pooled.reshape(n, -1)
    logits = flat @ weights + offsets
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    dlogits = (e / e.sum(axis=1, keepdims=True) - labels) / n
    dweights = flat.T @ dlogits
    doffsets = dlogits.sum(axis=0)
    dpooled = (dlogits @ weights.T).reshape(n, h // 2, 1, w // 2, 1, c)
    # Random inputs have no ties, so the window's maximum is where it equals the pooled value.
    dfeatures = ((windows == pooled[:, :, None, :, None, :]) * dpooled).reshape(features.shape)
    dbias = dfeatures.sum(axis=(0, 1, 2))
    dkernel = np.empty_like(kernel)
    for i in range(kh):
        for j in range(kw):
            patch = images[:, i : i + h, j : j + w, :]
            dkernel[i, j] = np.tensordot(patch, dfeatures, axes=([0, 1, 2], [0, 1, 2]))
    return dkernel, dbias, dweights, doffsets


def cnn_args(rng, n, size, channels, k, filters, classes):
    images = rng.normal(size=(n, size, size, channels))
    labels = np.eye(classes)[rng.integers(0, classes, size=n)]
    kernel = rng.normal(size=(k, k, channels, filters)) / np.sqrt(k * k * channels)
    bias = rng.normal(size=filters) * 0.1
    flat = ((size - k + 1) // 2) ** 2 * filters
    weights = rng.normal(size=(flat, classes)) / np.sqrt(flat)
    offsets = rng.normal(size=classes) * 0.1
    return kernel, bias, weights, offsets, images, labels


# --------------------------------------------------------------------------------------------
# (h) the MLP of (b) with cross-entropy on integer labels: logp[np.arange(n), y].


def mlp_labels(W1, b1, W2, b2, X, y):
    h = np.maximum(X @ W1 + b1, 0.0)
    logits = h @ W2 + b2
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    logp = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    n = X.shape[0]
    return -np.mean(logp[np.arange(n), y])


def mlp_labels_grad(W1, b1, W2, b2, X, y):
    h = np.maximum(X @ W1 + b1, 0.0)
    logits = h @ W2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    dlogits = e / e.sum(axis=1, keepdims=True)
    n = X.shape[0]
    dlogits[np.arange(n), y] -= 1.0
    dlogits /= n
    dW2 = h.T @ dlogits
    db2 = dlogits.sum(axis=0)
    dz = dlogits @ W2.T
    dz *= h > 0.0
    dW1 = X.T @ dz
    db1 = dz.sum(axis=0)
    return dW1, db1, dW2, db2


def mlp_labels_args(rng, batch, n_in, n_hidden, n_out):
    W1, b1, W2, b2, X, _ = mlp_softmax_args(rng, batch, n_in, n_hidden, n_out)
    return W1, b1, W2, b2, X, rng.integers(0, n_out, size=batch)


# --------------------------------------------------------------------------------------------
# (i) the control-flow example of Dive into Deep Learning (section 2.5): a while loop whose
# trip count depends on the values, then an if on them.


def d2l_control(a):
    b = a * 2
    while np.linalg.norm(b) < 1000:
        b = b * 2
    if b.sum() > 0:  # noqa: SIM108 (the textbook's if statement is the point)
        c = b
    else:
        c = 100 * b
    return np.sum(c)


def d2l_control_grad(a):
    # c is a times a constant: 2 for each doubling, times 100 on the else branch.
    b = a * 2
    scale = 2.0
    while np.linalg.norm(b) < 1000:
        b = b * 2
        scale *= 2.0
    if b.sum() <= 0:
        scale *= 100.0
    return (np.full_like(a, scale),)


def d2l_control_args(rng, n):
    return (rng.normal(size=n) * 0.1,)


# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """One benchmark: a NumPy function, its hand-written gradient and how to build inputs.

    ``make_args(rng, **sizes)`` builds the arguments; ``full`` holds the benchmark sizes and
    ``small`` sizes cheap enough for finite differences. ``wrt`` are argument indices or names
    as ``s2sgrad.grad`` takes them. ``target`` is the largest acceptable ratio of the s2sgrad
    gradient's time to the hand-written one's. ``loops`` marks workloads that need loops in
    the source transformer.

    Example:
        >>> w = workload("rosenbrock")
        >>> w.wrt_indices()
        (0,)
    """

    key: str
    name: str
    fn: Callable[..., Any]
    hand_grad: Callable[..., tuple]
    make_args: Callable[..., tuple]
    wrt: tuple
    target: float
    full: dict = field(default_factory=dict)
    small: dict = field(default_factory=dict)
    loops: bool = False
    sizes_text: str = ""

    def wrt_indices(self) -> tuple[int, ...]:
        """``wrt`` as positional indices (names are looked up in ``fn``'s parameters)."""
        params = list(self.fn.__code__.co_varnames[: self.fn.__code__.co_argcount])
        return tuple(params.index(w) if isinstance(w, str) else w for w in self.wrt)


WORKLOADS: list[Workload] = [
    Workload(
        key="a",
        name="xor_mlp",
        fn=xor_mlp,
        hand_grad=xor_mlp_grad,
        make_args=xor_args,
        wrt=(0, 1, 2, 3),
        target=1.15,
        full={"n_hidden": 8},
        small={"n_hidden": 3},
        sizes_text="4 points, 2-8-1, tanh",
    ),
    Workload(
        key="b",
        name="mlp_softmax",
        fn=mlp_softmax,
        hand_grad=mlp_softmax_grad,
        make_args=mlp_softmax_args,
        wrt=(0, 1, 2, 3),
        target=1.15,
        full={"batch": 128, "n_in": 784, "n_hidden": 256, "n_out": 10},
        small={"batch": 5, "n_in": 6, "n_hidden": 4, "n_out": 3},
        sizes_text="batch 128, 784-256-10, relu",
    ),
    Workload(
        key="c",
        name="attention",
        fn=attention,
        hand_grad=attention_grad,
        make_args=attention_args,
        wrt=(0, 1, 2),
        target=1.15,
        full={"seq": 64, "d_model": 64},
        small={"seq": 5, "d_model": 4},
        sizes_text="seq 64, d_model 64",
    ),
    Workload(
        key="d",
        name="rosenbrock",
        fn=rosenbrock,
        hand_grad=rosenbrock_grad,
        make_args=rosenbrock_args,
        wrt=(0,),
        target=1.15,
        full={"n": 10_000},
        small={"n": 7},
        sizes_text="10,000 elements",
    ),
    Workload(
        key="e",
        name="rnn",
        fn=rnn,
        hand_grad=rnn_grad,
        make_args=rnn_args,
        wrt=(0, 1, 2),
        target=1.15,
        full={"steps": 40, "batch": 16, "n_in": 32, "n_hidden": 64},
        small={"steps": 4, "batch": 3, "n_in": 2, "n_hidden": 3},
        loops=True,
        sizes_text="40 steps, batch 16, 32-64, tanh",
    ),
    Workload(
        key="f",
        name="scalar_loop",
        fn=scalar_loop,
        hand_grad=scalar_loop_grad,
        make_args=scalar_loop_args,
        wrt=("a", "b"),
        target=1.5,
        loops=True,
        sizes_text="200 iterations, Python floats; hand-written with math",
    ),
    Workload(
        key="g",
        name="cnn",
        fn=cnn,
        hand_grad=cnn_grad,
        make_args=cnn_args,
        wrt=(0, 1, 2, 3),
        target=1.1,
        full={"n": 10, "size": 16, "channels": 3, "k": 5, "filters": 6, "classes": 10},
        small={"n": 2, "size": 6, "channels": 2, "k": 3, "filters": 2, "classes": 3},
        loops=True,
        sizes_text="10 images 16x16x3, conv 5x5x6 (a helper), pool 2x2, dense 216-10",
    ),
    Workload(
        key="h",
        name="mlp_labels",
        fn=mlp_labels,
        hand_grad=mlp_labels_grad,
        make_args=mlp_labels_args,
        wrt=(0, 1, 2, 3),
        target=1.15,
        full={"batch": 128, "n_in": 784, "n_hidden": 256, "n_out": 10},
        small={"batch": 5, "n_in": 6, "n_hidden": 4, "n_out": 3},
        sizes_text="batch 128, 784-256-10, relu, integer labels",
    ),
    Workload(
        key="i",
        name="d2l_control",
        fn=d2l_control,
        hand_grad=d2l_control_grad,
        make_args=d2l_control_args,
        wrt=(0,),
        target=1.3,
        full={"n": 100},
        small={"n": 4},
        loops=True,
        sizes_text="100 elements, while/if on values",
    ),
]


def workload(name: str) -> Workload:
    """The workload called ``name`` (or with that key letter).

    Example:
        >>> workload("b").name
        'mlp_softmax'
    """
    for w in WORKLOADS:
        if name in (w.key, w.name):
            return w
    raise KeyError(f"no workload {name!r}; have {', '.join(w.name for w in WORKLOADS)}")


def with_numpy(fn: Callable, module: types.ModuleType) -> Callable:
    """A copy of ``fn`` whose global name ``np`` is ``module`` (``autograd.numpy``, ...).

    Example:
        >>> with_numpy(rosenbrock, np)(np.ones(3))
        np.float64(0.0)
    """
    namespace = dict(fn.__globals__)
    namespace["np"] = module
    return types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
