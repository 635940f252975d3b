"""Programs written the way users write them (peers' examples re-written, scientific
simulations, everyday NumPy style), checked in every mode against central differences:
the gradient on a first and a later call, forward mode, and, where it was asked for, the
Hessian-vector product.

Found here:

* finite-element assembly on the tape: ``K = np.zeros(...)``, ``np.add.at(K, ...)`` per
  element, then ``K = K + eps * np.eye(n)`` before the solve was refused ("np.add.at
  writes into its first argument in place"): the tape took over only a buffer bound once.
  A name every binding of which makes a new array is taken over too.
* the same on the tape when the buffers are made by one unpacking, ``img, transmit =
  np.zeros(n), np.ones(n)`` (Gaussian splatting, a planar flow's log-determinant), then
  ``img += ...``: "updates a plain array in place".
* ``sg.grad(lambda w, x: ...)(w, X)`` inside ``f(w)`` (per-example gradients, a
  Gauss-Newton step) was refused in s2s as "sg.grad is given a function that reads values
  being differentiated": the lambda's own parameter ``w`` was taken for the caller's.
* ``dataclasses.replace(p, b=p.b * 2)`` of differentiated fields was refused in s2s with
  a message naming the line of ``dataclasses.py`` (``replace`` takes them through
  ``**changes``) instead of the user's call.
* ``sg.export`` of a loss reading a global data array refused with "cannot export the
  value of 'X' (ndarray)" and no file or line; it now names the function's ``def``.
* ``sg.hvp`` on the tape (mode="tape", and "auto") of a loss of a callable dataclass (a
  Swift-style differentiable ``Perceptron`` with ``__call__``) was refused as "returned a
  function that holds values of its own (a closure)": the gradient, a ``Perceptron`` too,
  was taken for a closure.
"""

import dataclasses
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp
from scipy.special import expit, gammaln, logsumexp, ndtr

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
R = np.random.default_rng(2929)


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


# --- peers' examples ------------------------------------------------------------------

SIZES = [3, 4, 2]
XB, YB = _n(5, 3, scale=1.0), np.eye(2)[[0, 1, 1, 0, 1]]


def _unflatten(flat):
    params, i = [], 0
    for m, k in zip(SIZES[:-1], SIZES[1:]):
        W = flat[i : i + m * k].reshape(m, k)
        i += m * k
        params.append((W, flat[i : i + k]))
        i += k
    return params


def _log_softmax_net(params, x):
    for W, b in params[:-1]:
        x = np.tanh(x @ W + b)
    W, b = params[-1]
    out = x @ W + b
    return out - logsumexp(out, axis=1, keepdims=True)


def flattened_net(flat):
    return -np.sum(_log_softmax_net(_unflatten(flat), XB) * YB) + 0.01 * np.sum(flat**2)


XL, TL = _n(8, 3, scale=1.0), np.sign(_n(8))


def logistic_logaddexp(w):
    return np.sum(np.logaddexp(0.0, -TL * (XL @ w)))


XN, YN = _n(7, 2, scale=1.0), np.array([0, 2, 1, 5, 3, 0, 1])


def negative_binomial(params):
    w, r = params[:2], np.exp(params[2])
    mu = np.exp(XN @ w)
    p = mu / (mu + r)
    ll = gammaln(YN + r) - gammaln(r) - gammaln(YN + 1) + r * np.log(1 - p) + YN * np.log(p)
    return -np.sum(ll)


XG = np.linspace(-2, 2, 6)
YG = np.sin(XG) + 0.1 * _n(6)


def gp_marginal(hyper):
    mean, log_noise, log_amp, log_len = hyper
    sq = (XG[:, None] - XG[None, :]) ** 2
    K = np.exp(log_amp) * np.exp(-0.5 * sq / np.exp(2 * log_len))
    K = K + np.eye(6) * (np.exp(log_noise) + 1e-6)
    r = YG - mean
    _, logdet = np.linalg.slogdet(K)
    return 0.5 * r @ np.linalg.solve(K, r) + 0.5 * logdet


EPS = _n(12, 2, scale=1.0)


def bbvi(variational):
    mean, log_std = variational[:2], variational[2:]
    z = EPS * np.exp(log_std) + mean
    log_p = -0.5 * np.sum(z**2, axis=1) - 0.1 * np.sum(z**4, axis=1)
    return -(np.sum(log_std) + np.mean(log_p))


def natural_gradient_step(w):
    p = expit(XL @ w)
    F = (XL.T * (p * (1 - p))) @ XL / len(XL) + 1e-3 * np.eye(3)
    g = XL.T @ (p - (TL > 0)) / len(XL)
    return logistic_logaddexp(w - 0.5 * np.linalg.solve(F, g))


XM, YM = _n(6, 3, scale=1.0), _n(6)


def mixture_of_experts(params):
    gates = XM @ params["gate"]
    gates = np.exp(gates - logsumexp(gates, axis=1, keepdims=True))
    experts = np.stack([np.tanh(XM @ e["W"] + e["b"]) for e in params["experts"]], axis=1)
    return np.mean((np.sum(gates * experts, axis=1) - YM) ** 2)


IMG, LABELS = _n(2, 6, 6, scale=1.0), np.array([0, 1])


def _conv2d(x, k):
    kh, kw = k.shape
    H, W = x.shape[-2] - kh + 1, x.shape[-1] - kw + 1
    out = np.zeros(x.shape[:-2] + (H, W))
    for i in range(kh):
        for j in range(kw):
            out = out + k[i, j] * x[..., i : i + H, j : j + W]
    return out


def convnet(params):
    h = np.maximum(0, _conv2d(IMG, params["k"]) + params["bk"]).reshape(len(IMG), -1)
    logits = h @ params["W"]
    return -np.mean(logits[np.arange(2), LABELS] - logsumexp(logits, axis=1))


TEXT = "hello"
VOCAB = {c: i for i, c in enumerate(sorted(set(TEXT)))}
ONE_HOT = np.eye(len(VOCAB))[[VOCAB[c] for c in TEXT]]


def char_rnn(p):
    h = np.zeros(p["Wh"].shape[0])
    loss = 0.0
    for t in range(len(TEXT) - 1):
        h = np.tanh(p["Wx"] @ ONE_HOT[t] + p["Wh"] @ h + p["b"])
        logits = p["Wo"] @ h
        loss -= logits[VOCAB[TEXT[t + 1]]] - logsumexp(logits)
    return loss


XK, YK = _n(6, 2, scale=1.0), _n(6)


def _rbf(x, y):
    return np.exp(-np.sum((x - y) ** 2))


def kernel_least_squares(alpha):
    K = np.array([[_rbf(a, b) for b in XK] for a in XK])
    return np.sum((K @ alpha - YK) ** 2) + 0.1 * alpha @ K @ alpha


def _example_loss(w, x, y):
    return (np.tanh(x @ w) - y) ** 2


def clipped_per_example_step(w):
    per_example = sg.grad(_example_loss)
    total = np.zeros_like(w)
    for x, y in zip(XM, YM):
        g = per_example(w, x, y)
        total += g / np.maximum(1.0, np.sqrt(np.sum(g**2)) / 0.5)
    w = w - 0.1 * total / len(XM)
    return np.sum([_example_loss(w, x, y) for x, y in zip(XM, YM)])


@dataclasses.dataclass
class Perceptron:
    w: np.ndarray
    b: float

    def __call__(self, x):
        return expit(x @ self.w + self.b)


XS, YS = _n(5, 2, scale=1.0), (R.random(5) > 0.5).astype(float)


def perceptron_loss(model):
    p = model(XS)
    return -np.mean(YS * np.log(p) + (1 - YS) * np.log(1 - p))


class Linear(NamedTuple):
    W: np.ndarray
    b: np.ndarray


def named_tuple_layer(layer):
    return np.sum(np.tanh(XM @ layer.W + layer.b) ** 2)


# --- scientific -----------------------------------------------------------------------

ATOMS = np.array([[0.0, 0.0], [1.1, 0.1], [0.2, 1.2], [1.3, 1.1], [2.4, 0.3]])


def lennard_jones(pos, cutoff=2.0):
    diff = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(diff**2, axis=-1) + np.eye(len(pos))
    near = (r2 < cutoff**2) & ~np.eye(len(pos), dtype=bool)
    inv6 = (1.0 / r2) ** 3
    return 0.5 * np.sum(np.where(near, 4 * (inv6**2 - inv6), 0.0))


def velocity_verlet(pos, steps=3, dt=0.005):
    forces = sg.grad(lennard_jones)
    vel = np.zeros_like(pos)
    f = -forces(pos)
    for _ in range(steps):
        vel = vel + 0.5 * dt * f
        pos = pos + dt * vel
        f = -forces(pos)
        vel = vel + 0.5 * dt * f
    return np.sum(pos[:, 0]) + np.sum(vel**2)


MASS = np.array([1.0, 0.5, 0.3, 0.8])


def n_body(x):
    x = x.copy()
    v = np.zeros_like(x)
    for _ in range(4):
        d = x[None, :, :] - x[:, None, :]
        r3 = (np.sum(d**2, -1) + 0.1) ** 1.5
        v += 0.01 * np.sum(MASS[None, :, None] * d / r3[:, :, None], axis=1)
        x += 0.01 * v
    return np.sum(x**2)


NODES = np.array([[0, 0], [1, 0], [0, 1], [1, 1], [0.5, 0.5]], dtype=float)
TRIANGLES = np.array([[0, 1, 4], [1, 3, 4], [3, 2, 4], [2, 0, 4]])
LOAD = np.arange(1.0, 6.0)


def poisson_2d(conductivity):
    K = np.zeros((5, 5))
    for t, tri in enumerate(TRIANGLES):
        p = NODES[tri]
        B = np.array([[1, *p[0]], [1, *p[1]], [1, *p[2]]])
        area = 0.5 * abs(np.linalg.det(B))
        grads = np.linalg.inv(B)[1:, :]
        np.add.at(K, (tri[:, None], tri[None, :]), conductivity[t] * area * grads.T @ grads)
    K = K + 1e-1 * np.eye(5)  # the buffer bound again: the tape refused the add.at above
    return LOAD @ np.linalg.solve(K, LOAD)


def poisson_1d(k):
    n = len(k)
    rows = np.array([[e, e, e + 1, e + 1] for e in range(n)]).ravel()
    cols = np.array([[e, e + 1, e, e + 1] for e in range(n)]).ravel()
    K = np.zeros((n + 1, n + 1))
    np.add.at(K, (rows, cols), (k[:, None] * np.array([1.0, -1.0, -1.0, 1.0]) * n).ravel())
    return np.linalg.solve(K[1:, 1:], np.ones(n) / n)[-1]


def shooting(u):
    x, v, cost = 0.0, 0.0, 0.0
    for t in range(len(u)):
        v = v + 0.1 * (u[t] - 0.1 * v)
        x = x + 0.1 * v
        cost += 0.01 * u[t] ** 2
    return cost + (x - 1.0) ** 2 + v**2


def cloth(flat, rest=1.0):
    pos = flat.reshape(3, 3, 2)
    e = np.sum((np.linalg.norm(pos[1:, :] - pos[:-1, :], axis=-1) - rest) ** 2)
    e += np.sum((np.linalg.norm(pos[:, 1:] - pos[:, :-1], axis=-1) - rest) ** 2)
    return e + 0.1 * np.sum(pos[..., 1])


def heat_implicit(kappa):
    n = 6
    u = np.sin(np.linspace(0, np.pi, n))
    A = np.diag(np.full(n, 1 + 2 * kappa))
    A = A + np.diag(np.full(n - 1, -kappa), 1) + np.diag(np.full(n - 1, -kappa), -1)
    for _ in range(3):
        u = np.linalg.solve(A, u)
    return np.sum(u)


def kinetics(k):
    def rhs(c):
        return np.array([-k[0] * c[0], k[0] * c[0] - k[1] * c[1], k[1] * c[1]])

    c, h = np.array([1.0, 0.0, 0.0]), 0.2
    for _ in range(2):
        k1 = rhs(c)
        k2 = rhs(c + h / 2 * k1)
        k3 = rhs(c + h / 2 * k2)
        k4 = rhs(c + h * k3)
        c = c + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return c[1]


def lotka_volterra(theta):
    a, b, c, d = theta
    x, y = 1.0, 0.5
    path = []
    for _ in range(8):
        x, y = x + 0.05 * (a * x - b * x * y), y + 0.05 * (d * x * y - c * y)
        path.append([x, y])
    return np.sum((np.array(path) - 0.8) ** 2)


def black_scholes(market):
    S, K, T, r, sigma = market[0], market[1], market[2], market[3], market[4]
    d1 = (np.log(S / K) + (r + 0.5 * sigma**2) * T) / (sigma * np.sqrt(T))
    d2 = d1 - sigma * np.sqrt(T)
    return S * ndtr(d1) - K * np.exp(-r * T) * ndtr(d2)


Z = R.normal(size=32)


def monte_carlo_call(sigma, S0=100.0, K=100.0, T=1.0, r=0.02):
    ST = S0 * np.exp((r - 0.5 * sigma**2) * T + sigma * np.sqrt(T) * Z)
    return np.exp(-r * T) * np.mean(np.maximum(ST - K, 0.0))


def american_put(sigma, S0=100.0, K=105.0, T=1.0, r=0.03, steps=4):
    dt = T / steps
    u = np.exp(sigma * np.sqrt(dt))
    d = 1 / u
    p = (np.exp(r * dt) - d) / (u - d)
    values = [max(K - S0 * u**j * d ** (steps - j), 0.0) for j in range(steps + 1)]
    for i in range(steps - 1, -1, -1):
        new = []
        for j in range(i + 1):
            held = np.exp(-r * dt) * (p * values[j + 1] + (1 - p) * values[j])
            new.append(max(held, K - S0 * u**j * d ** (i - j)))
        values = new
    return values[0]


MU = np.array([0.05, 0.08, 0.12, 0.03])
COV = np.cov(R.normal(size=(4, 20))) * 0.01


def portfolio(logits, risk=3.0):
    w = np.exp(logits) / np.sum(np.exp(logits))
    return -(w @ MU - 0.5 * risk * w @ COV @ w)


def _rotation(theta):
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


def arm_reach(q, links=(1.0, 0.8, 0.5)):
    p, frame = np.zeros(2), np.eye(2)
    for angle, length in zip(q, links):
        frame = frame @ _rotation(angle)
        p = p + frame @ np.array([length, 0.0])
    return np.sum((p - np.array([1.2, 0.9])) ** 2)


def homogeneous_chain(q):
    T = np.eye(4)
    for i, t in enumerate(q):
        c, s = np.cos(t), np.sin(t)
        H = np.eye(4)
        if i % 2 == 0:
            H[:3, :3] = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
        else:
            H[:3, :3] = np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])
        H[:3, 3] = [0.0, 0.0, 0.5]
        T = T @ H
    return np.sum(T[:3, 3] ** 2) + T[0, 0]


POINTS = _n(6, 3, scale=1.0) + np.array([0, 0, 5.0])
SEEN = _n(6, 2, scale=0.1)


def reprojection(camera):
    w = camera[:3]
    angle = np.sqrt(w @ w + 1e-12)
    k = w / angle
    Kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    Rot = np.eye(3) + np.sin(angle) * Kx + (1 - np.cos(angle)) * Kx @ Kx
    Xc = POINTS @ Rot.T + camera[3:6]
    return np.sum((camera[6] * Xc[:, :2] / Xc[:, 2:3] - SEEN) ** 2)


SIGNAL = np.sin(np.linspace(0, 6, 24)) + _n(24, scale=0.1)


def fir_filter(taps):
    return np.mean((np.convolve(SIGNAL, taps, mode="same") - np.sin(np.linspace(0, 6, 24))) ** 2)


def stft_energy(x):
    window = np.hanning(8)
    frames = np.stack([x[i : i + 8] * window for i in range(0, len(x) - 7, 4)])
    return np.sum(np.abs(np.fft.rfft(frames, axis=-1)) ** 2)


PIXELS = np.stack(np.meshgrid(np.linspace(0, 1, 4), np.linspace(0, 1, 4), indexing="ij"), -1)
PIXELS = PIXELS.reshape(-1, 2)
PICTURE = R.random(16)


def splatting(params):
    img, transmit = np.zeros(len(PIXELS)), np.ones(len(PIXELS))
    for k in range(len(params["mu"])):
        d2 = np.sum((PIXELS - params["mu"][k]) ** 2, axis=1)
        alpha = expit(params["o"][k]) * np.exp(-0.5 * d2 / np.exp(2 * params["log_s"][k]))
        img += transmit * alpha * params["c"][k]
        transmit = transmit * (1 - alpha)
    return np.mean((img - PICTURE) ** 2)


CLOUD = np.concatenate([_n(4, 2, scale=0.3) + 1, _n(4, 2, scale=0.3) - 1])


def em_centres(centres):
    for _ in range(3):
        d2 = np.sum((CLOUD[:, None, :] - centres[None, :, :]) ** 2, axis=-1)
        resp = np.exp(-d2) / np.sum(np.exp(-d2), axis=1, keepdims=True)
        centres = (resp.T @ CLOUD) / resp.sum(0)[:, None]
    return np.sum(centres**2)


HIGH = _n(6, 4, scale=1.0)
_P = np.exp(-np.sum((HIGH[:, None] - HIGH[None]) ** 2, -1) / 2) * (1 - np.eye(6))
P_TSNE = _P / _P.sum()


def tsne(Y):
    Q = (1.0 / (1.0 + np.sum((Y[:, None] - Y[None]) ** 2, -1))) * (1 - np.eye(len(Y)))
    Q = Q / np.sum(Q)
    off = ~np.eye(len(Y), dtype=bool)
    return np.sum(P_TSNE[off] * np.log(P_TSNE[off] / Q[off]))


RATINGS = R.integers(1, 6, size=(5, 4)).astype(float)
OBSERVED = R.random((5, 4)) < 0.6


def factorisation(params):
    rows, cols = np.nonzero(OBSERVED)
    pred = np.sum(params["U"][rows] * params["V"][cols], axis=1)
    return np.mean((pred - RATINGS[rows, cols]) ** 2)


EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [0, 2], [1, 3]])
FEATURES = _n(4, 3, scale=1.0)


def message_passing(layers):
    h = FEATURES
    for layer in layers:
        msg = h[EDGES[:, 0]] @ layer["W_msg"]
        agg = np.zeros((len(h), msg.shape[1]))
        np.add.at(agg, EDGES[:, 1], msg)
        h = np.maximum(0, h @ layer["W_self"] + agg)
    return np.mean(h)


ZF = _n(6, 2, scale=1.0)


def planar_flow(layers):
    z, logdet = ZF, np.zeros(len(ZF))
    for u, w, b in layers:
        a = np.tanh(z @ w + b)
        z = z + np.outer(a, u)
        logdet += np.log(np.abs(1 + np.outer(1 - a**2, w) @ u))
    return -np.mean(-0.5 * np.sum(z**2, 1) + logdet)


# --- everyday style ---------------------------------------------------------------------


def filled_buffer(w):
    out = np.zeros(len(XM))
    for i, x in enumerate(XM):
        out[i] = np.tanh(x @ w)
    return np.sum((out - YM) ** 2)


def early_return(w):
    s = 0.0
    for i, x in enumerate(XM):
        s = s + np.exp(x @ w)
        if s > 3.0:
            return s * i
    return s


def heron(a):
    x, steps = 1.0, 0
    while True:
        x_new = 0.5 * (x + a / x)
        if abs(x_new - x) < 1e-12 or steps > 50:
            break
        x, steps = x_new, steps + 1
    return x_new


def relu_layers(params):
    h = XM
    for W, b in params[:-1]:
        h = np.maximum(0, h @ W + b)
    W, b = params[-1]
    return np.mean((h @ W + b - YM[:, None]) ** 2)


def in_place_chain(x):
    y = x * 1.0
    y += 1.0
    y *= x
    y /= 2.0
    y -= x**2
    return np.sum(y**2)


def _sgd_steps(w):
    for _ in range(3):
        w = w - 0.1 * 2 * XM.T @ (XM @ w - YM) / len(XM)
    return np.mean((XM @ w - YM) ** 2)


ALL = frozenset(MODES)
BY_THE_TAPE = frozenset({"auto", "tape"})  # s2s refuses forward mode over the gradient
# name: (function, arguments, the modes whose Hessian-vector product is checked too)
PROGRAMS = {
    "flattened_net": (flattened_net, (_n(26),), ALL),
    "logistic_logaddexp": (logistic_logaddexp, (_n(3),), ALL),
    "negative_binomial": (negative_binomial, (np.array([0.2, -0.1, 0.5]),), ALL),
    "gp_marginal": (gp_marginal, (np.array([0.1, -2.0, 0.2, 0.1]),), ALL),
    "bbvi": (bbvi, (np.array([0.1, -0.2, -0.5, -0.3]),), ALL),
    "natural_gradient_step": (natural_gradient_step, (_n(3),), ALL),
    "mixture_of_experts": (
        mixture_of_experts,
        ({"gate": _n(3, 3), "experts": [{"W": _n(3), "b": 0.1 * k} for k in range(3)]},),
        ALL,
    ),
    "convnet": (convnet, ({"k": _n(3, 3), "bk": 0.1, "W": _n(16, 2)},), ALL),
    "char_rnn": (char_rnn, ({"Wx": _n(5, 4), "Wh": _n(5, 5), "b": _n(5), "Wo": _n(4, 5)},), ALL),
    "kernel_least_squares": (kernel_least_squares, (_n(6),), ALL),
    "clipped_per_example_step": (clipped_per_example_step, (_n(3),), BY_THE_TAPE),
    "named_tuple_layer": (named_tuple_layer, (Linear(_n(3, 2), _n(2)),), ALL),
    "lennard_jones": (lennard_jones, (ATOMS,), ALL),
    "velocity_verlet": (velocity_verlet, (ATOMS,), frozenset()),
    "n_body": (n_body, (_n(4, 2, scale=1.0),), ALL),
    "poisson_2d": (poisson_2d, (1 + R.random(4),), ALL),
    "poisson_1d": (poisson_1d, (1 + R.random(4),), ALL),
    "shooting": (shooting, (_n(6),), ALL),
    "cloth": (
        cloth,
        ((np.indices((3, 3)).transpose(1, 2, 0) * 1.05).ravel() + _n(18, scale=0.05),),
        ALL,
    ),
    "heat_implicit": (heat_implicit, (0.4,), ALL),
    "kinetics": (kinetics, (np.array([1.2, 0.5]),), ALL),
    "lotka_volterra": (lotka_volterra, (np.array([1.0, 0.5, 0.8, 0.3]),), ALL),
    "black_scholes": (black_scholes, (np.array([1.0, 0.95, 1.0, 0.03, 0.2]),), ALL),
    "monte_carlo_call": (monte_carlo_call, (0.25,), ALL),
    "american_put": (american_put, (0.25,), BY_THE_TAPE),
    "portfolio": (portfolio, (_n(4),), ALL),
    "arm_reach": (arm_reach, (_n(3),), ALL),
    "homogeneous_chain": (homogeneous_chain, (_n(4),), BY_THE_TAPE),
    "reprojection": (reprojection, (np.concatenate([_n(6, scale=0.1), [1.5]]),), ALL),
    "fir_filter": (fir_filter, (_n(5),), ALL),
    "stft_energy": (stft_energy, (_n(16),), ALL),
    "splatting": (
        splatting,
        ({"mu": R.random((3, 2)), "log_s": np.full(3, -1.2), "c": R.random(3), "o": _n(3)},),
        ALL,
    ),
    "em_centres": (em_centres, (np.array([[0.5, 0.5], [-0.5, -0.2]]),), ALL),
    "tsne": (tsne, (_n(6, 2),), ALL),
    "factorisation": (factorisation, ({"U": _n(5, 2), "V": _n(4, 2)},), ALL),
    "message_passing": (
        message_passing,
        ([{"W_msg": _n(3, 3), "W_self": _n(3, 3)}, {"W_msg": _n(3, 2), "W_self": _n(3, 2)}],),
        BY_THE_TAPE,
    ),
    "planar_flow": (planar_flow, ([(_n(2), _n(2), 0.1), (_n(2), _n(2), -0.2)],), ALL),
    "filled_buffer": (filled_buffer, (_n(3),), ALL),
    "early_return": (early_return, (_n(3),), ALL),
    "heron": (heron, (2.5,), ALL),
    "relu_layers": (relu_layers, ([(_n(3, 4), _n(4)), (_n(4, 1), _n(1))],), ALL),
    "in_place_chain": (in_place_chain, (_n(4),), ALL),
    "sgd_steps": (_sgd_steps, (_n(3),), ALL),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_real_program(name, mode):
    f, args, second_order = PROGRAMS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = call_twice(sg.grad(f, mode=mode), *args)
        assert_close(got, numeric_grad(f, list(args), 0), rtol=1e-5, atol=1e-6)
        direction = sg.tree_map(lambda a: R.normal(size=np.shape(a)) * 0.5, args[0])
        along = numeric_jvp(f, list(args), 0, direction)
        _, tangent = sg.jvp(lambda a: f(a, *args[1:]), (args[0],), (direction,), mode=mode)
        assert_close(float(tangent), float(along), rtol=1e-5, atol=1e-6)
        if mode not in second_order:
            return
        gradient = sg.grad(f, mode=mode)
        expected = numeric_jvp(lambda a: gradient(a, *args[1:]), [args[0]], 0, direction)
        for _ in range(2):
            (product,) = sg.hvp(lambda a: f(a, *args[1:]), (args[0],), (direction,), mode=mode)
            assert_close(product, expected, rtol=1e-4, atol=1e-6)


def _leaves(tree):
    return list(sg.tree_flatten(tree)[0])


@pytest.mark.parametrize("mode", MODES)
def test_a_callable_dataclass_model_second_order(mode):
    """A dataclass with ``__call__`` as the differentiated argument: its gradient is such
    an object too, which the tape took for a closure under sg.hvp."""
    model = Perceptron(_n(2), 0.1)
    direction = Perceptron(_n(2), -0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)

        def flat_loss(leaves):
            return perceptron_loss(Perceptron(*leaves))

        for _ in range(2):  # a first and a later call
            got = sg.grad(perceptron_loss, mode=mode)(model)
            assert type(got) is Perceptron
            assert_close(_leaves(got), numeric_grad(flat_loss, [_leaves(model)], 0))
        gradient = sg.grad(perceptron_loss, mode="tape")
        expected = numeric_jvp(
            lambda leaves: _leaves(gradient(Perceptron(*leaves))),
            [_leaves(model)],
            0,
            _leaves(direction),
        )
        for _ in range(2):
            (product,) = sg.hvp(perceptron_loss, (model,), (direction,), mode=mode)
            assert type(product) is Perceptron
            assert_close(_leaves(product), expected, rtol=1e-4, atol=1e-7)


def _assembled(k, n=4):
    K = np.zeros((n + 1, n + 1))
    for e in range(n):
        np.add.at(
            K, ([e, e, e + 1, e + 1], [e, e + 1, e, e + 1]), k[e] * np.array([1.0, -1, -1, 1])
        )
    K = K + 0.5 * np.eye(n + 1)
    K = K * n
    return np.sum(np.linalg.solve(K, np.arange(1.0, n + 2)) ** 2)


def test_a_buffer_bound_again_after_add_at_is_recorded_on_the_tape():
    k = 1 + R.random(4)
    got = call_twice(sg.grad(_assembled, mode="tape"), k)
    assert_close(got, numeric_grad(_assembled, [k], 0), rtol=1e-6)
    v = R.normal(size=4)
    gradient = sg.grad(_assembled, mode="tape")
    (product,) = sg.hvp(_assembled, (k,), (v,), mode="tape")
    assert_close(product, numeric_jvp(gradient, [k], 0, v), rtol=1e-4, atol=1e-7)


def _composited(colours):
    img, transmit = np.zeros(4), np.ones(4)  # buffers made by one unpacking
    for c in colours:
        img += transmit * c
        transmit = transmit * (1 - 0.3 * np.tanh(c))
    return np.sum((img - 0.5) ** 2)


def test_buffers_made_by_one_unpacking_are_recorded_on_the_tape():
    colours = R.random((3, 4))
    got = call_twice(sg.grad(_composited, mode="tape"), colours)
    assert_close(got, numeric_grad(_composited, [colours], 0), rtol=1e-6)


def _per_example_gradient_norms(w):
    g = sg.grad(lambda w, x: np.sum(np.tanh(x @ w)) ** 2)(w, XM)  # its own w
    return np.sum(g**2)


def _helper_gradient_norms(w):
    def loss(w, x):
        return np.sum(np.sin(x @ w)) ** 2

    return np.sum(sg.grad(loss)(w, XM) ** 2) * w[0]


def _closure_over_the_weights(w):
    return np.sum(sg.grad(lambda v, x: np.sum(x @ (v * w)))(w, XM) ** 2)


@pytest.mark.parametrize("f", [_per_example_gradient_norms, _helper_gradient_norms])
def test_a_gradient_of_a_local_function_with_a_parameter_named_as_the_callers(f):
    w = _n(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # auto needs no tape
        for mode in ("s2s", "auto"):
            got = call_twice(sg.grad(f, mode=mode), w)
            assert_close(got, numeric_grad(f, [w], 0), rtol=1e-6)


def test_a_gradient_of_a_lambda_closing_over_the_weights_is_refused_in_s2s():
    w = _n(3)
    with pytest.raises(sg.UnsupportedError, match=f"{__file__}:.*reads values being diff"):
        sg.grad(_closure_over_the_weights, mode="s2s")(w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = sg.grad(_closure_over_the_weights, mode="auto")(w)
    assert_close(got, numeric_grad(_closure_over_the_weights, [w], 0), rtol=1e-6)


@dataclasses.dataclass
class _Affine:
    W: np.ndarray
    b: np.ndarray


def _replaced_bias(p):
    q = dataclasses.replace(p, b=p.b * 2)  # differentiated values through **changes
    return np.sum(np.tanh(XM @ q.W + q.b))


def test_differentiated_values_through_double_star_are_refused_at_the_users_call():
    p = _Affine(_n(3, 2), _n(2))
    with pytest.raises(sg.UnsupportedError, match=f"{__file__}:{_line_of('q = dataclasses')}"):
        sg.grad(_replaced_bias, mode="s2s")(p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = sg.grad(_replaced_bias, mode="auto")(p)

    def flat(leaves):
        return _replaced_bias(_Affine(*leaves))

    assert_close(_leaves(got), numeric_grad(flat, [_leaves(p)], 0), rtol=1e-6)


def _line_of(text):
    with open(__file__) as source:
        return next(
            i for i, line in enumerate(source, 1) if text in line and "_line_of" not in line
        )


def _loss_reading_global_data(w):
    return np.sum(np.tanh(XM @ w) ** 2)


def test_export_of_a_function_reading_global_data_names_the_function(tmp_path):
    line = _loss_reading_global_data.__code__.co_firstlineno
    with pytest.raises(sg.S2SGradError, match=f"{__file__}:{line}: cannot export .*'XM'"):
        sg.export(_loss_reading_global_data, tmp_path / "dloss.py")
