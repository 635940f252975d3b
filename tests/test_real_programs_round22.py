"""Programs written the way users write them (autograd's examples, CS231n and D2L models,
scientific simulations), checked in every mode against central differences, first order
and, where a bug was found, second order.

Found here:

* ``sum(c * x ** i for i in range(k))`` had a nan gradient at ``x == 0`` in every mode (a
  ``ZeroDivisionError`` for a Python float): the power rule computed ``0 * 0 ** -1``
  (``tests/test_powers_at_zero.py``).
* ``sg.hvp`` on the tape gave 0-d arrays for float arguments through ``np.clip`` and
  ``np.where`` (a bouncing ball).
* a helper doing ``W = W.copy(); W *= 2.0; W[:, 1] = ...`` was taken to change its argument,
  and its caller refused in mode="s2s" and mode="auto" (``tests/test_updates_of_a_copy.py``).
* the Hessian of an im2col convolution was refused in mode="s2s": forward mode did not
  take the backward sweep's ``np.s_[c, i:i + oh, j:j + ow]`` for the index it is.
* ``L = np.zeros((d, d)); L[np.tril_indices(d)] = v`` was refused on the tape.
* ``scipy.linalg.cho_factor`` / ``cho_solve`` (a GP's predictive mean) had no rules.
* ``np.trapz(...) if hasattr(np, "trapz") else np.trapezoid(...)`` was refused by the
  transformer on NumPy 2 (the missing name, in the branch not taken).
* a helper returning ``(value, flag)`` read twice crashed the Hessian in s2s and auto.
"""

import warnings

import numpy as np
import pytest
import scipy.linalg
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp
from scipy.special import logsumexp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
R = np.random.default_rng(2222)


def polynomial_fit(coefs, x):
    features = [x**i for i in range(len(coefs))]
    prediction = sum(c * f for c, f in zip(coefs, features))
    return np.sum((prediction - np.sin(x)) ** 2)


def bouncing_ball(h, v):
    for _ in range(20):
        v = v - 9.81 * 0.02
        h = h + v * 0.02
        v = np.where(h < 0, -0.9 * v, v)
        h = np.clip(h, 0.0, None)
    return np.sum(h) + np.sum(v**2)


def _scaled_copy(W, x):
    W = W.copy()
    W *= 2.0
    W[0] += 1.0
    W[:, 1] = np.tanh(W[:, 1])
    return np.sum((x @ W) ** 2)


def scaled_copy_loss(W, x):
    return _scaled_copy(W, x) + 0.1 * np.sum(W**2)


def _im2col(x, kh, kw):
    C, H, W = x.shape
    oh, ow = H - kh + 1, W - kw + 1
    cols = np.zeros((C * kh * kw, oh * ow))
    idx = 0
    for c in range(C):
        for i in range(kh):
            for j in range(kw):
                cols[idx, :] = x[c, i : i + oh, j : j + ow].reshape(-1)
                idx += 1
    return cols


def convnet(filters, x):
    F, C, kh, kw = filters.shape
    out = filters.reshape(F, -1) @ _im2col(x, kh, kw)
    return np.sum(np.tanh(out) ** 2)


def gaussian_from_a_triangle(L_flat, X):
    d = X.shape[1]
    L = np.zeros((d, d))
    L[np.tril_indices(d)] = L_flat
    P = L @ L.T + np.eye(d)
    sign, logdet = np.linalg.slogdet(P)
    return -0.5 * np.einsum("ni,ij,nj->", X, P, X) + 0.5 * len(X) * logdet


def gp_predictive_mean(log_ls, X, y, Xs):
    ls = np.exp(log_ls)

    def k(a, b):
        d = a[:, None, :] - b[None, :, :]
        return np.exp(-0.5 * np.sum(d**2, -1) / ls**2)

    factor = scipy.linalg.cho_factor(k(X, X) + 0.1 * np.eye(len(X)))
    alpha = scipy.linalg.cho_solve(factor, y)
    return np.sum(k(Xs, X) @ alpha) + np.sum(np.log(np.diag(factor[0])))


def field_energy(phi):
    slope = np.gradient(phi)
    if hasattr(np, "trapz"):
        return np.trapz(slope**2 + 0.5 * phi**4)
    return np.trapezoid(slope**2 + 0.5 * phi**4)


def _standardise(x):
    return (x - np.mean(x)) / np.std(x), True


def normalised_scores(x):
    out = _standardise(x)
    return np.sum(out[0] ** 3) + np.sum(np.exp(out[0])) * out[1]


def lstm_log_likelihood(params, inputs, targets):
    def step(x, h, c):
        both = np.hstack([x, h, np.ones((x.shape[0], 1))])
        gates = [both @ params[k] for k in ("change", "forget", "in", "out")]
        c = c / (1 + np.exp(-gates[1])) + np.tanh(gates[0]) / (1 + np.exp(-gates[2]))
        return np.tanh(c) / (1 + np.exp(-gates[3])), c

    h = np.repeat(params["h0"], inputs.shape[1], axis=0)
    c = np.zeros_like(h)
    total = 0.0
    for x, y in zip(inputs, targets):
        h, c = step(x, h, c)
        logits = np.hstack([h, np.ones((h.shape[0], 1))]) @ params["predict"]
        total += np.sum((logits - logsumexp(logits, axis=1, keepdims=True)) * y)
    return -total


def kalman_nll(log_q, ys, A, H):
    n = A.shape[0]
    Q = np.exp(log_q) * np.eye(n)
    x, P, nll = np.zeros(n), np.eye(n), 0.0
    for y in ys:
        x = A @ x
        P = A @ P @ A.T + Q
        S = H @ P @ H.T + 0.5 * np.eye(H.shape[0])
        innovation = y - H @ x
        K = P @ H.T @ np.linalg.inv(S)
        nll = nll + 0.5 * (innovation @ np.linalg.solve(S, innovation) + np.log(np.linalg.det(S)))
        x = x + K @ innovation
        P = (np.eye(n) - K @ H) @ P
    return nll


def _lstm_params():
    p = {k: R.normal(size=(3 + 2 + 1, 2)) * 0.4 for k in ("change", "forget", "in", "out")}
    p["h0"], p["predict"] = R.normal(size=(1, 2)) * 0.1, R.normal(size=(3, 3)) * 0.4
    return p


_ONE_HOT = np.eye(3)[R.integers(0, 3, size=(3, 2))]
PROGRAMS = {  # name: (function, arguments, second order checked too)
    "polynomial_fit": (polynomial_fit, (R.normal(size=4), np.linspace(-1, 1, 5)), True),
    "bouncing_ball": (bouncing_ball, (1.0, 0.3), True),
    "scaled_copy_loss": (scaled_copy_loss, (R.normal(size=(3, 3)), R.normal(size=(2, 3))), True),
    "convnet": (convnet, (R.normal(size=(2, 2, 2, 2)), R.normal(size=(2, 3, 3))), True),
    "gaussian_from_a_triangle": (
        gaussian_from_a_triangle,
        (R.normal(size=3) * 0.5, R.normal(size=(4, 2))),
        True,
    ),
    "gp_predictive_mean": (
        gp_predictive_mean,
        (0.2, R.normal(size=(4, 2)), R.normal(size=4), R.normal(size=(2, 2))),
        True,
    ),
    "field_energy": (field_energy, (R.normal(size=6),), True),
    "normalised_scores": (normalised_scores, (R.normal(size=5),), True),
    "lstm_log_likelihood": (lstm_log_likelihood, (_lstm_params(), _ONE_HOT, _ONE_HOT), False),
    "kalman_nll": (
        kalman_nll,
        (0.1, R.normal(size=(4, 1)), np.array([[1.0, 0.1], [0.0, 0.9]]), np.array([[1.0, 0.0]])),
        False,
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_real_program(name, mode):
    f, args, second_order = PROGRAMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = call_twice(sg.grad(f, mode=mode), *args)
        assert_close(got, numeric_grad(f, list(args), 0), rtol=1e-5, atol=1e-6)
        if not second_order:
            return
        direction = sg.tree_map(lambda a: np.ones(np.shape(a)) * 0.5, args[0])
        gradient = sg.grad(f, mode="tape")
        expected = numeric_jvp(lambda a: gradient(a, *args[1:]), [args[0]], 0, direction)
        for _ in range(2):
            product = sg.jvp(
                lambda a: sg.grad(f, mode=mode)(a, *args[1:]), (args[0],), (direction,), mode=mode
            )[1]
            # (the tape's forward pass over its gradient of a float gives a 0-d array)
            as_arrays = sg.tree_map(np.asarray, (product, expected))
            assert_close(*as_arrays, rtol=1e-4, atol=1e-6)
        if type(args[0]) is float:  # a Hessian-vector product of a float is a float
            vectors = tuple(0.5 if type(a) is float else np.zeros_like(a) for a in args)
            products = sg.hvp(f, args, vectors, mode=mode)
            assert type(products[0]) is float
