"""Programs written the way users write them (ML losses and models, science and
engineering, everyday student NumPy), checked in every mode against central differences:
the gradient on a first and a later call, forward mode, and the Hessian-vector product.

Found here:

* a recursion in log space that starts from ``-inf`` (the forward variable of CTC,
  ``alpha = np.full(S, -np.inf)``): ``scipy.special.logsumexp`` (and ``np.logaddexp``,
  ``np.logaddexp.reduce``) of entries that are all ``-inf`` gave them the weight
  ``exp(-inf - -inf)``, NaN, where they add nothing: the jvp (and, with ``np.logaddexp``,
  the gradient) came out NaN in every mode.
* on the tape, a buffer handed on by ``alpha = new`` (the step of a dynamic programme)
  was no longer "an array the function made", so a write of a value being differentiated
  into it was refused ("a plain array").
* while a tape records, ``np.full`` is a stand-in whose ``__module__`` is its own, so the
  alias analysis took ``alpha = np.full(S, -np.inf)`` to share memory with ``S`` (read
  again by the next ``np.full(S, ...)``), and refused every later write into ``alpha``.
"""

import math
import sys
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp
from scipy.special import log_softmax, logsumexp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
R = np.random.default_rng(3131)


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


def _hvp_expected(f, x, v):
    """The Hessian of ``f`` at ``x`` times ``v``: central differences of the tape's
    gradient (itself checked against differences of ``f`` first)."""
    gradient = sg.grad(f, mode="tape")
    assert_close(gradient(x), numeric_grad(f, [x], 0), rtol=1e-5, atol=1e-6)
    return numeric_jvp(gradient, [x], 0, v, step=1e-5)


def _check(f, x, mode, hvp=True):
    """``sg.grad`` (a first and a later call), ``sg.jvp`` and ``sg.hvp`` of ``f`` at ``x``
    along a random direction, in ``mode``, against central differences."""
    v = _n(*np.shape(x)) if np.ndim(x) else 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode=mode), x)
        assert_close(got, numeric_grad(f, [x], 0), rtol=1e-5, atol=1e-6)
        _, tangent = sg.jvp(f, (x,), (v,), mode=mode)
        assert_close(float(tangent), float(numeric_jvp(f, [x], 0, v)), rtol=1e-5, atol=1e-6)
        if hvp:
            (product,) = sg.hvp(f, (x,), (v,), mode=mode)
            assert_close(product, _hvp_expected(f, x, v), rtol=1e-4, atol=1e-6)


# --- log-space recursions starting from -inf ---------------------------------------------

CTC_LABELS = [1, 2]


def ctc_loss(logits):
    """The CTC forward variable over the blank-extended labels, with scipy's logsumexp of
    the entries each state is reached from (all -inf for states not reached yet)."""
    logp = logits - logsumexp(logits, axis=1, keepdims=True)
    ext = [0]
    for label in CTC_LABELS:
        ext += [label, 0]
    S = len(ext)
    alpha = np.full(S, -np.inf)
    alpha[0] = logp[0, ext[0]]
    alpha[1] = logp[0, ext[1]]
    for t in range(1, logp.shape[0]):
        new = np.full(S, -np.inf)
        for s in range(S):
            terms = [alpha[s]]
            if s > 0:
                terms.append(alpha[s - 1])
            if s > 1 and ext[s] != 0 and ext[s] != ext[s - 2]:
                terms.append(alpha[s - 2])
            new[s] = logsumexp(np.array(terms)) + logp[t, ext[s]]
        alpha = new
    return -logsumexp(alpha[-2:])


def ctc_with_logaddexp(logits):
    """The same recursion in a (T, S) table, pairs joined by np.logaddexp."""
    logp = log_softmax(logits, axis=1)
    ext = [0, 1, 0, 1, 0]
    S, T = len(ext), logp.shape[0]
    alpha = np.full((T, S), -np.inf)
    alpha[0, 0] = logp[0, 0]
    alpha[0, 1] = logp[0, ext[1]]
    for t in range(1, T):
        for s in range(S):
            a = alpha[t - 1, s]
            if s >= 1:
                a = np.logaddexp(a, alpha[t - 1, s - 1])
            if s >= 2 and ext[s] != 0 and ext[s] != ext[s - 2]:
                a = np.logaddexp(a, alpha[t - 1, s - 2])
            alpha[t, s] = a + logp[t, ext[s]]
    return -np.logaddexp(alpha[-1, -1], alpha[-1, -2])


def unreached_states(x):
    """An HMM-like forward pass whose last state is reached only in the last step, joined
    by np.logaddexp.reduce over the previous states."""
    alpha = np.array([x[0], -np.inf, -np.inf])
    for t in range(2):
        step = alpha[:, None] + np.log(np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0, 0, 1.0]]))
        alpha = np.logaddexp.reduce(step, axis=0) + x[t + 1]
    return np.logaddexp.reduce(alpha) * x[0]


with np.errstate(divide="ignore"):  # the transitions a left-to-right model never takes
    LOG_TRANSITIONS = np.log(np.array([[0.7, 0.3, 0.0], [0.0, 0.6, 0.4], [0.0, 0.0, 1.0]]))
    LOG_START = np.log(np.array([1.0, 0.0, 0.0]))


def left_to_right_hmm(log_emissions):
    """The forward algorithm of a left-to-right HMM: log 0 = -inf for the transitions it
    never takes, and every state but the first unreachable at the start."""
    alpha = LOG_START + log_emissions[0]
    for t in range(1, len(log_emissions)):
        alpha = logsumexp(alpha[:, None] + LOG_TRANSITIONS, axis=0) + log_emissions[t]
    return logsumexp(alpha)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f, shape",
    [
        (ctc_loss, (4, 3)),
        (ctc_with_logaddexp, (4, 2)),
        (unreached_states, (3,)),
        (left_to_right_hmm, (4, 3)),
    ],
)
def test_a_log_space_recursion_starting_from_minus_infinity(f, shape, mode):
    """logsumexp / logaddexp of entries all -inf gave them the weight exp(-inf - -inf),
    NaN: jvp NaN in modes "s2s" and "auto" (the gradient too with np.logaddexp, and in
    every mode for the left-to-right HMM), and on
    the tape the writes into ``new`` (handed on by ``alpha = new``) or into a table made by
    ``np.full(shape_of_names, -np.inf)`` were refused."""
    x = _n(*shape, scale=1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        _check(f, x, mode, hvp=mode != "s2s")  # s2s: the derivative's stack is refused


def dtw_rows(x):
    """A dynamic programme over rows: each row a buffer made anew, handed on by
    ``previous = row`` (a soft minimum of the three neighbours)."""
    reference = np.array([0.0, 0.5, 1.0, 0.4])
    previous = np.full(len(reference) + 1, 1e6)
    previous[0] = 0.5 * x[0]
    for i in range(len(x)):
        row = np.full(len(reference) + 1, 1e6)
        for j in range(1, len(reference) + 1):
            near = np.array([previous[j - 1], previous[j], row[j - 1]])
            soft = -0.3 * logsumexp(-near / 0.3)
            row[j] = (x[i] - reference[j - 1]) ** 2 + soft
        previous = row
    return previous[-1]


@pytest.mark.parametrize("mode", MODES)
def test_a_row_buffer_handed_on_to_the_next_step(mode):
    """``previous = row`` after ``row[j] = ...``: on the tape the writes into ``previous``
    (its first binding ``np.full``, its second a name) were refused as writes into a
    plain array; now a name given only arrays the function made counts as one."""
    x = np.array([0.1, 0.6, 0.9])
    _check(dtw_rows, x, mode, hvp=mode != "s2s")


def shares_a_buffer(x):
    """``b = a`` then ``b[0] = ...`` and ``a`` read: still refused (the alias analysis)."""
    a = np.zeros(3)
    b = a
    b[0] = x[0] * 2
    return np.sum(a * x)


@pytest.mark.parametrize("mode", MODES)
def test_a_buffer_written_through_another_name_is_still_refused(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.UnsupportedError, match=f"{__file__}:[0-9]+: .*may share memory"):
            sg.grad(shares_a_buffer, mode=mode)(_n(3))


def test_logsumexp_of_minus_infinities_has_zero_weights():
    """The rules themselves: an entry -inf gets the weight 0, also where all are."""
    a = np.array([[-np.inf, -np.inf], [0.3, -np.inf]])
    g = np.array([1.0, 2.0])
    with np.errstate(invalid="ignore"):
        (to_a,) = sg.vjp(lambda a: logsumexp(a, axis=1), a)[1](g)
    assert_close(to_a, np.array([[0.0, 0.0], [2.0, 0.0]]))
    with np.errstate(invalid="ignore"):
        _, tangent = sg.jvp(lambda a: logsumexp(a, axis=1), (a,), (np.ones_like(a),))
    assert_close(tangent, np.array([0.0, 1.0]))
    _, tangent = sg.jvp(
        lambda x: np.logaddexp(x, -np.inf), (np.array([-np.inf, 1.0]),), (np.ones(2),)
    )
    assert_close(tangent, np.array([0.0, 1.0]))


# --- the programs, every mode ---------------------------------------------------------------
# Each entry: the function, its argument, and the (mode, transform) pairs refused (their
# message must name this file); everything else must match central differences.

S2S_HVP = frozenset({("s2s", "hvp")})  # the derivative's save stack shares the buffer
BY_THE_TAPE = frozenset({("s2s", "grad"), ("s2s", "jvp"), ("s2s", "hvp")})
S2S_JVP_HVP = frozenset({("s2s", "jvp"), ("s2s", "hvp")})
TAPE_FLOAT = frozenset({("tape", k) for k in ("grad", "jvp", "hvp")})  # float() of a tape value

XB = _n(5, 2, scale=1.0)


def sinkhorn_log_domain(x, eps=0.5, iterations=8):
    cost = np.sum((x[:, None, :] - XB[None, :, :]) ** 2, axis=-1)
    a, b = np.full(len(x), 1.0 / len(x)), np.full(len(XB), 1.0 / len(XB))
    f, g = np.zeros(len(x)), np.zeros(len(XB))
    for _ in range(iterations):
        f = -eps * logsumexp((g[None, :] - cost) / eps + np.log(b)[None, :], axis=1)
        g = -eps * logsumexp((f[:, None] - cost) / eps + np.log(a)[:, None], axis=0)
    plan = np.exp((f[:, None] + g[None, :] - cost) / eps) * a[:, None] * b[None, :]
    return np.sum(plan * cost)


def sinkhorn_scaling(x):
    cost = np.sum((x[:, None, :] - XB[None, :, :]) ** 2, axis=-1)
    K = np.exp(-cost)
    u, v = np.ones(len(x)) / len(x), np.ones(len(XB)) / len(XB)
    for _ in range(10):
        u = (1.0 / len(x)) / (K @ v)
        v = (1.0 / len(XB)) / (K.T @ u)
    return (u[:, None] * K * v[None, :] * cost).sum()


SERIES_REF = np.array([0.0, 0.4, 1.0, 0.3])


def softmin3(a, b, c, gamma):
    values = np.array([a, b, c]) / -gamma
    top = np.max(values)
    return -gamma * (top + np.log(np.sum(np.exp(values - top))))


def soft_dtw(x, gamma=0.3):
    table = np.full((len(x) + 1, len(SERIES_REF) + 1), np.inf)
    table[0, 0] = 0.0
    for i in range(1, len(x) + 1):
        for j in range(1, len(SERIES_REF) + 1):
            cost = (x[i - 1] - SERIES_REF[j - 1]) ** 2
            near = softmin3(table[i - 1, j], table[i, j - 1], table[i - 1, j - 1], gamma)
            table[i, j] = cost + near
    return table[-1, -1]


EMIT = _n(5, 3, scale=1.0)
TAGS = [0, 2, 1, 1, 0]


def crf_negative_log_likelihood(transitions):
    alpha = EMIT[0].copy()
    for t in range(1, EMIT.shape[0]):
        alpha = logsumexp(alpha[:, None] + transitions, axis=0) + EMIT[t]
    score = EMIT[0, TAGS[0]]
    for t in range(1, len(TAGS)):
        score += transitions[TAGS[t - 1], TAGS[t]] + EMIT[t, TAGS[t]]
    return logsumexp(alpha) - score


VIEWS = _n(4, 3, scale=1.0)


def info_nce(z, temperature=0.5):
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    other = VIEWS / np.linalg.norm(VIEWS, axis=1, keepdims=True)
    logits = z @ other.T / temperature
    labels = np.arange(len(z))
    return -np.mean((logits - logsumexp(logits, axis=1, keepdims=True))[labels, labels])


def nt_xent(z, temperature=0.5):
    z = z / np.linalg.norm(z, axis=1, keepdims=True)
    half = len(z) // 2
    similarity = z @ z.T / temperature
    np.fill_diagonal(similarity, -np.inf)
    positives = np.concatenate([np.arange(half, 2 * half), np.arange(half)])
    picked = similarity[np.arange(2 * half), positives]
    return np.mean(logsumexp(similarity, axis=1) - picked)


POSITIVE, NEGATIVE = _n(5, 3), _n(5, 3)


def triplet_loss(anchor, margin=0.5):
    to_positive = np.sum((anchor - POSITIVE) ** 2, axis=1)
    to_negative = np.sum((anchor - NEGATIVE) ** 2, axis=1)
    return np.mean(np.maximum(to_positive - to_negative + margin, 0.0))


CLASSES = np.array([0, 3, 1, 2])


def label_smoothing(logits, eps=0.1):
    k = logits.shape[1]
    target = np.eye(k)[CLASSES] * (1 - eps) + eps / k
    return -(target * (logits - logsumexp(logits, axis=1, keepdims=True))).sum(1).mean()


BINARY = np.array([1, 0, 1, 1, 0], dtype=float)


def focal_loss(z, gamma=2.0, alpha=0.25):
    p = 1 / (1 + np.exp(-z))
    pt = np.where(BINARY == 1, p, 1 - p)
    at = np.where(BINARY == 1, alpha, 1 - alpha)
    return np.mean(-at * (1 - pt) ** gamma * np.log(pt))


ALPHA_BAR = np.cumprod(1 - np.linspace(1e-3, 0.2, 10))
X0, NOISE = _n(4, 3, scale=1.0), np.random.default_rng(3).normal(size=(4, 3))
STEPS = np.array([1, 4, 7, 9])


def diffusion_loss(W):
    kept = ALPHA_BAR[STEPS][:, None]
    noisy = np.sqrt(kept) * X0 + np.sqrt(1 - kept) * NOISE
    embedding = np.sin(STEPS[:, None] * np.arange(1, 4)[None, :] * 0.3)
    predicted = np.tanh(np.concatenate([noisy, embedding], axis=1) @ W)
    return np.mean((predicted - NOISE) ** 2)


def svgd_steps(x0):
    x = x0.copy()
    for _ in range(2):
        diff = x[:, None, :] - x[None, :, :]
        K = np.exp(-np.sum(diff**2, -1))
        phi = (K @ -x - 2 * np.einsum("ij,ijk->jk", K, diff)) / len(x)
        x = x + 0.1 * phi
    return np.sum(x**2) + np.sum(x[:, 0])


def hmc_energy(q, eps=0.1, steps=4):
    def grad_potential(q):
        return q + 0.4 * q**3

    p = np.array([0.3, -0.2, 0.5]) - 0.5 * eps * grad_potential(q)
    for i in range(steps):
        q = q + eps * p
        if i != steps - 1:
            p = p - eps * grad_potential(q)
    p = p - 0.5 * eps * grad_potential(q)
    return 0.5 * np.sum(q**2) + 0.1 * np.sum(q**4) + 0.5 * np.sum(p**2)


XG, YG = _n(6, 2, scale=1.0), None
YG = np.sin(XG[:, 0]) + 0.3 * XG[:, 1]


def gp_ard_negative_log_likelihood(log_lengths):
    d = (XG[:, None, :] - XG[None, :, :]) / np.exp(log_lengths)
    K = np.exp(-0.5 * np.sum(d**2, -1)) + 0.1 * np.eye(len(XG))
    L = np.linalg.cholesky(K)
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, YG))
    return 0.5 * YG @ alpha + np.sum(np.log(np.diag(L)))


XL, YL = _n(8, 3, scale=1.0), (R.random(8) > 0.5).astype(float)
EPS_W = np.random.default_rng(7).normal(size=(4, 3))


def bayesian_logistic_elbo(mu_and_log_sigma):
    mu, log_sigma = mu_and_log_sigma
    w = mu + np.exp(log_sigma) * EPS_W
    z = XL @ w.T
    likelihood = np.sum(YL[:, None] * z - np.logaddexp(0, z)) / len(EPS_W)
    return -(likelihood - 0.5 * np.sum(w**2) / len(EPS_W) + np.sum(log_sigma))


XM = _n(5, 3, scale=1.0)


def mixture_of_experts(p):
    gate = XM @ p["gate"]
    gate = np.exp(gate - gate.max(axis=1, keepdims=True))
    gate /= gate.sum(axis=1, keepdims=True)
    outputs = np.stack([np.tanh(XM @ E) for E in p["experts"]], axis=1)
    return np.sum(np.einsum("be,bed->bd", gate, outputs) ** 2)


U_HAT = _n(3, 2, 4, scale=1.0)


def capsule_routing(W):
    def squash(s):
        squared = np.sum(s**2, axis=-1, keepdims=True)
        return squared / (1 + squared) * s / np.sqrt(squared + 1e-9)

    u = np.einsum("ijk,kl->ijl", U_HAT, W)
    logits = np.zeros((3, 2))
    for _ in range(3):
        c = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        v = squash((c[:, :, None] * u).sum(axis=0))
        logits = logits + (u * v[None]).sum(-1)
    return np.sum(v**2)


GRID = np.linspace(0, 1, 7)


def pinn_residual(params):
    W1, b1, w2 = params

    def u(x):
        return np.tanh(np.outer(x, W1) + b1) @ w2

    h = 1e-2
    uxx = (u(GRID + h) - 2 * u(GRID) + u(GRID - h)) / h**2
    boundary = u(np.array([0.0, 1.0]))
    return np.mean((uxx + np.pi**2 * np.sin(np.pi * GRID)) ** 2) * 1e-3 + np.sum(boundary**2)


def neural_ode_rk4(W, steps=6):
    def dynamics(y):
        return np.tanh(W @ y)

    h, y = 1.0 / steps, np.array([1.0, -0.5])
    for _ in range(steps):
        k1 = dynamics(y)
        k2 = dynamics(y + h / 2 * k1)
        k3 = dynamics(y + h / 2 * k2)
        k4 = dynamics(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return np.sum((y - np.array([0.5, 0.2])) ** 2)


TEACHER = _n(4, 5, scale=2.0)


def distillation(student, T=2.0):
    teacher = np.exp(log_softmax(TEACHER / T, axis=1))
    return np.sum(teacher * (np.log(teacher) - log_softmax(student / T, axis=1))) * T * T / 4


XP, YP = _n(6, 2, scale=1.0), np.array([0, 1, 3, 2, 0, 5])


def poisson_regression(w):
    from scipy.special import gammaln

    eta = XP @ w
    return np.sum(np.exp(eta) - YP * eta + gammaln(YP + 1))


ORDER = np.array([0, 2, 1, 1, 2])


def ordinal_regression(params):
    from scipy.special import expit

    w, raw_cuts = params
    eta = XP[:5] @ w
    cuts = np.concatenate([[-np.inf], np.cumsum(np.exp(raw_cuts)) - 1.0, [np.inf]])
    p = expit(cuts[ORDER + 1] - eta) - expit(cuts[ORDER] - eta)
    return -np.sum(np.log(p))


SEEN = R.random((4, 3)) > 0.3
RATINGS = _n(4, 3, scale=2.0)


def matrix_factorisation(UV):
    U, V = UV
    error = np.where(SEEN, U @ V.T - RATINGS, 0.0)
    return np.sum(error**2) + 0.1 * (np.sum(U**2) + np.sum(V**2))


def holt_smoothing(raw):
    series = np.cumsum(np.array([0.3, -0.2, 0.5, 0.1, -0.4, 0.2, 0.6]))
    a, b = 1 / (1 + np.exp(-raw))
    level, trend = series[0], series[1] - series[0]
    sse = 0.0
    for y in series[1:]:
        sse += (y - level - trend) ** 2
        new_level = a * y + (1 - a) * (level + trend)
        trend = b * (new_level - level) + (1 - b) * trend
        level = new_level
    return sse


ML_PROGRAMS = [
    (sinkhorn_log_domain, _n(4, 2, scale=1.0), frozenset()),
    (sinkhorn_scaling, _n(3, 2, scale=1.0), frozenset()),
    (soft_dtw, np.array([0.1, 0.5, 0.8, 0.2]), S2S_HVP),
    (crf_negative_log_likelihood, _n(3, 3), frozenset()),
    (info_nce, _n(4, 3, scale=1.0), frozenset()),
    (nt_xent, _n(4, 3, scale=1.0), frozenset()),
    (triplet_loss, _n(5, 3), frozenset()),
    (label_smoothing, _n(4, 5), frozenset()),
    (focal_loss, _n(5), frozenset()),
    (diffusion_loss, _n(6, 3), frozenset()),
    (svgd_steps, _n(3, 2), frozenset()),
    (hmc_energy, _n(3), frozenset()),
    (gp_ard_negative_log_likelihood, _n(2), frozenset()),
    (bayesian_logistic_elbo, (_n(3), _n(3)), frozenset()),
    (mixture_of_experts, {"gate": _n(3, 2), "experts": [_n(3, 2), _n(3, 2)]}, frozenset()),
    (capsule_routing, _n(4, 3), frozenset()),
    (pinn_residual, (_n(3), _n(3), _n(3)), frozenset()),
    (neural_ode_rk4, _n(2, 2), frozenset()),
    (distillation, _n(4, 5), frozenset()),
    (poisson_regression, _n(2), frozenset()),
    (ordinal_regression, (_n(2), _n(2)), frozenset()),
    (matrix_factorisation, (_n(4, 2), _n(3, 2)), frozenset()),
    (holt_smoothing, _n(2), frozenset()),
]


def _direction(x):
    return sg.tree_map(lambda a: _n(*np.shape(a)) if np.ndim(a) else 0.5, x)


_EXPECTED: dict = {}  # (f, what) -> central differences, shared by the modes' tests


def _expected(f, x, what):
    """Central differences for ``f`` at ``x``: its gradient, its derivative along a
    direction drawn once per program, or the Hessian times that direction (differences of
    the tape's gradient, which the tape's own test checks; the transformer's where the tape
    refuses)."""
    if (f, what) not in _EXPECTED:
        if what == "direction":
            found = _direction(x)
        elif what == "grad":
            found = numeric_grad(f, [x], 0)
        elif what == "jvp":
            found = float(numeric_jvp(f, [x], 0, _expected(f, x, "direction")))
        else:
            along = _expected(f, x, "direction")
            try:  # the tape's gradient, or the transformer's where the tape refuses
                sg.grad(f, mode="tape")(x)
                gradient = sg.grad(f, mode="tape")
            except sg.S2SGradError:
                gradient = sg.grad(f, mode="s2s")
            found = numeric_jvp(gradient, [x], 0, along, step=1e-5)
        _EXPECTED[f, what] = found
    return _EXPECTED[f, what]


def _check_program(f, x, mode, refused):
    """Each transform of ``f`` at ``x`` in ``mode``: refused where ``refused`` says so (the
    message naming this file), else against central differences."""
    v = _expected(f, x, "direction")
    checks = {
        "grad": lambda: call_twice(sg.grad(f, mode=mode), x),
        "jvp": lambda: float(sg.jvp(f, (x,), (v,), mode=mode)[1]),
        "hvp": lambda: sg.hvp(f, (x,), (v,), mode=mode)[0],
    }
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        for kind, transformed in checks.items():
            if (mode, kind) in refused:
                with pytest.raises(sg.S2SGradError, match=f"{__file__}:[0-9]+"):
                    transformed()
                continue
            tolerance = (1e-4, 1e-6) if kind == "hvp" else (1e-5, 1e-6)
            assert_close(transformed(), _expected(f, x, kind), *tolerance)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, x, refused", ML_PROGRAMS, ids=[p[0].__name__ for p in ML_PROGRAMS])
def test_ml_losses_and_models(f, x, refused, mode):
    _check_program(f, x, mode, refused)


# --- science and engineering ----------------------------------------------------------------


def kepler_anomalies(M, e=0.3, tol=1e-12):
    """Kepler's equation solved by Newton iterations inside the objective."""
    E = M.copy()
    dE = np.ones_like(M)
    while np.max(np.abs(dE)) > tol:
        dE = (E - e * np.sin(E) - M) / (1 - e * np.cos(E))
        E = E - dE
    return np.sum((np.cos(E) - e) * np.sqrt(1 - e**2) * np.sin(E))


def kepler_true_anomaly(p):
    M, e = p[0], p[1]
    E = M + e * np.sin(M)
    for _ in range(50):
        residual = E - e * np.sin(E) - M
        if abs(residual) < 1e-14:
            break
        E = E - residual / (1 - e * np.cos(E))
    return 2 * np.arctan2(np.sqrt(1 + e) * np.sin(E / 2), np.sqrt(1 - e) * np.cos(E / 2))


A_SYS = np.array([[1.0, 0.1], [0.0, 1.0]])
B_SYS = np.array([[0.0], [0.1]])


def lqr_riccati(log_q):
    Q, Rm = np.diag(np.exp(log_q)), np.array([[0.5]])
    P = Q.copy()
    for _ in range(20):
        K = np.linalg.solve(Rm + B_SYS.T @ P @ B_SYS, B_SYS.T @ P @ A_SYS)
        P = Q + A_SYS.T @ P @ (A_SYS - B_SYS @ K)
    x0 = np.array([1.0, 0.5])
    return x0 @ P @ x0


def mpc_rollout(u):
    x, cost = np.array([1.0, 0.0]), 0.0
    for k in range(len(u)):
        uk = np.clip(u[k], -1.0, 1.0)
        x = A_SYS @ x + B_SYS[:, 0] * uk
        cost += x @ x + 0.1 * uk**2
    return cost


NODES = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, 0.8], [1.5, 0.8]])
BARS = [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]


def truss_compliance(areas):
    K = np.zeros((8, 8))
    for e, (i, j) in enumerate(BARS):
        d = NODES[j] - NODES[i]
        length = np.linalg.norm(d)
        c, s = d / length
        dofs = [2 * i, 2 * i + 1, 2 * j, 2 * j + 1]
        K[np.ix_(dofs, dofs)] += areas[e] / length * np.outer([c, s, -c, -s], [c, s, -c, -s])
    free = [2, 4, 5, 6, 7]
    F = np.zeros(8)
    F[7] = -1.0
    u = np.zeros(8)
    u[free] = np.linalg.solve(K[np.ix_(free, free)], F[free])
    return F @ u


def heat_implicit(log_kappa, steps=4):
    n = 6
    r = np.exp(log_kappa) * 0.01 * (n - 1) ** 2
    A = np.eye(n) * (1 + 2 * r) - r * np.eye(n, k=1) - r * np.eye(n, k=-1)
    u = np.sin(np.linspace(0, np.pi, n))
    for _ in range(steps):
        u = np.linalg.solve(A, u)
    return np.sum(u**2)


CHARGES = np.array([1.0, -1.0, 1.0, -0.5])


def coulomb_energy(x):
    r = np.sqrt(np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1) + np.eye(len(x)))
    inverse = 1.0 / r
    np.fill_diagonal(inverse, 0.0)
    return 0.5 * np.sum(CHARGES[:, None] * CHARGES[None, :] * inverse)


def lennard_jones_pairs(x):
    energy = 0.0
    for i in range(len(x)):
        for j in range(len(x)):
            if i != j:
                s6 = (1.0 / np.sum((x[i] - x[j]) ** 2)) ** 3
                energy += 2 * (s6**2 - s6)
    return energy


def lwr_godunov(rho0, steps=4):
    rho = rho0.copy()
    for _ in range(steps):
        left, right = rho[:-1].copy(), rho[1:].copy()
        demand = np.where(left < 0.5, left * (1 - left), 0.25)
        supply = np.where(right > 0.5, right * (1 - right), 0.25)
        flux = np.minimum(demand, supply)
        rho[1:-1] = rho[1:-1] - 0.4 * (flux[1:] - flux[:-1])
    return np.sum(rho**2)


MU0 = np.array([-1.0, 0.5, 0.2])


def gibbs_energy(moles):
    return np.sum(moles * (MU0 + np.log(moles / np.sum(moles))))


MATURITIES = np.array([0.25, 0.5, 1, 2, 5, 10, 30.0])
YIELDS = np.array([0.01, 0.012, 0.015, 0.02, 0.025, 0.028, 0.03])


def nelson_siegel(p):
    b0, b1, b2, lam = p
    x = MATURITIES / lam
    slope = (1 - np.exp(-x)) / x
    return np.sum((b0 + b1 * slope + b2 * (slope - np.exp(-x)) - YIELDS) ** 2) * 1e3


STRIKES = np.array([0.02, 0.025, 0.035, 0.04])


def sabr_volatility(p, F=0.03, K=STRIKES, T=1.0):
    alpha, rho, nu = p[0], p[1], p[2]
    beta = 0.5
    FKb = (F * K) ** ((1 - beta) / 2)
    z = nu / alpha * FKb * np.log(F / K)
    xz = np.log((np.sqrt(1 - 2 * rho * z + z**2) + z - rho) / (1 - rho))
    correction = (
        1
        + (
            (1 - beta) ** 2 / 24 * alpha**2 / FKb**2
            + rho * beta * nu * alpha / (4 * FKb)
            + (2 - 3 * rho**2) / 24 * nu**2
        )
        * T
    )
    return np.sum(alpha / FKb * z / xz * correction)


OBSERVED = np.array([0.2, 0.5, 0.1, -0.3])
RESAMPLED = np.random.default_rng(9).integers(0, 6, size=(4, 6))
PARTICLE_NOISE = np.random.default_rng(10).normal(size=(4, 6))


def particle_filter_likelihood(theta):
    a, s = theta
    x, loglik = np.zeros(6), 0.0
    for t in range(4):
        x = a * x + s * PARTICLE_NOISE[t]
        logw = -0.5 * (OBSERVED[t] - x) ** 2
        top = logw.max()
        loglik += top + np.log(np.exp(logw - top).mean())
        x = x[RESAMPLED[t]]
    return loglik


DEPTHS = np.array([0.5, 1.0, 0.7])


def travel_time(slowness, depths=DEPTHS, p=0.2):
    total = 0.0
    for i in range(len(depths)):
        total += depths[i] * slowness[i] / np.sqrt(1 - (p / slowness[i]) ** 2)
    return total


def thin_lenses(f):
    M = np.eye(2)
    for i, d in enumerate([0.5, 0.3, 0.4]):
        M = np.array([[1, 0], [-1 / f[i], 1]]) @ M
        M = np.array([[1, d], [0, 1]]) @ M
    return M[0, 1] ** 2 + M[1, 1]


def snell_refraction(indices, theta=0.3):
    total = 0.0
    for i in range(len(indices) - 1):
        theta = np.arcsin(indices[i] * np.sin(theta) / indices[i + 1])
        total = total + np.tan(theta)
    return total


def room_modes(L, c=343.0):
    frequencies = []
    for nx in range(3):
        for ny in range(3):
            for nz in range(2):
                if nx + ny + nz == 0:
                    continue
                k2 = (nx / L[0]) ** 2 + (ny / L[1]) ** 2 + (nz / L[2]) ** 2
                frequencies.append(c / 2 * np.sqrt(k2))
    return np.sum(np.diff(np.sort(np.array(frequencies))) ** 2) / 1e4


G_BUS = np.array([[2.0, -1, -1], [-1, 2, -1], [-1, -1, 2]])
B_BUS = np.array([[-5.0, 2, 3], [2, -4, 2], [3, 2, -5]])


def power_flow_mismatch(x):
    V, theta = np.concatenate([[1.0], x[:2]]), np.concatenate([[0.0], x[2:]])
    P, Q = np.zeros(3), np.zeros(3)
    for i in range(3):
        for k in range(3):
            d = theta[i] - theta[k]
            P[i] += V[i] * V[k] * (G_BUS[i, k] * np.cos(d) + B_BUS[i, k] * np.sin(d))
            Q[i] += V[i] * V[k] * (G_BUS[i, k] * np.sin(d) - B_BUS[i, k] * np.cos(d))
    return np.sum((P[1:] - np.array([-0.5, -0.3])) ** 2) + np.sum((Q[1:] + 0.15) ** 2)


EDGES = np.array([[0, 1], [1, 2], [2, 3], [0, 2]])


def spring_network_add_at(k):
    K = np.zeros((4, 4))
    i, j = EDGES[:, 0], EDGES[:, 1]
    np.add.at(K, (i, i), k)
    np.add.at(K, (j, j), k)
    np.add.at(K, (i, j), -k)
    np.add.at(K, (j, i), -k)
    K[0, 0] += 1.0
    return np.linalg.solve(K, np.array([0.0, 0.0, 0.0, 1.0]))[3]


FREQUENCIES = np.linspace(0.1, 5, 5)


def heston_characteristic(p, u=FREQUENCIES, T=1.0):
    kappa, theta, sigma, rho, v0 = p
    xi = kappa - sigma * rho * 1j * u
    d = np.sqrt(xi**2 + sigma**2 * (u**2 + 1j * u))
    g = (xi - d) / (xi + d)
    decay = np.exp(-d * T)
    C = kappa * theta / sigma**2 * ((xi - d) * T - 2 * np.log((1 - g * decay) / (1 - g)))
    D = (xi - d) / sigma**2 * (1 - decay) / (1 - g * decay)
    return np.sum(np.real(np.exp(C + D * v0) * np.exp(-1j * u * 0.1)) / u)


def godunov_cells(rho0):
    rho = list(rho0)
    for _ in range(2):
        fluxes = []
        for i in range(len(rho) - 1):
            left, right = rho[i], rho[i + 1]
            f_left, f_right = left * (1 - left), right * (1 - right)
            if left <= right:
                fluxes.append(min(f_left, f_right))
            elif left > 0.5 > right:
                fluxes.append(0.25)
            else:
                fluxes.append(max(f_left, f_right))
        new = [rho[0]]
        for i in range(1, len(rho) - 1):
            new.append(rho[i] - 0.3 * (fluxes[i] - fluxes[i - 1]))
        rho = new + [rho[-1]]
    return sum(r**2 for r in rho)


def rc_ladder(g):
    G = np.diag(g + np.roll(g, -1))
    for i in range(len(g) - 1):
        G[i, i + 1] = -g[i + 1]
        G[i + 1, i] = -g[i + 1]
    current = np.zeros(len(g))
    current[0] = 1.0
    return np.linalg.solve(G, current) @ current


def gaussian_beam(f):
    q = 1j * 0.5
    for fi in f:
        q = q + 0.3
        q = q / (1 - q / fi)
    return np.imag(-1 / q) * 10


SCIENCE_PROGRAMS = [
    (kepler_anomalies, np.array([0.3, 1.2, 2.5]), frozenset()),
    (kepler_true_anomaly, np.array([1.1, 0.3]), frozenset()),
    (lqr_riccati, _n(2), frozenset()),
    (mpc_rollout, np.array([0.3, -1.4, 0.5, 0.8, 1.3]), frozenset()),
    (truss_compliance, 1 + R.random(5), frozenset()),
    (heat_implicit, 0.3, frozenset()),
    (coulomb_energy, _n(4, 3, scale=1.0), frozenset()),
    (lennard_jones_pairs, np.array([[0, 0, 0], [1.1, 0, 0], [0.5, 1.0, 0.1]]), frozenset()),
    (lwr_godunov, 0.2 + 0.6 * R.random(6), frozenset()),
    (gibbs_energy, 0.5 + R.random(3), frozenset()),
    (nelson_siegel, np.array([0.03, -0.02, 0.01, 1.5]), frozenset()),
    (sabr_volatility, np.array([0.05, -0.3, 0.4]), frozenset()),
    (particle_filter_likelihood, (0.8, 0.5), frozenset()),
    (travel_time, np.array([0.5, 0.4, 0.6]), frozenset()),
    (thin_lenses, np.array([0.4, -0.6, 0.5]), frozenset()),
    (snell_refraction, np.array([1.0, 1.3, 1.5, 1.2]), frozenset()),
    (room_modes, np.array([5.0, 4.0, 3.0]), frozenset()),
    (power_flow_mismatch, np.array([1.0, 0.98, -0.05, -0.03]), frozenset()),
    (spring_network_add_at, 1 + R.random(4), frozenset()),
    (heston_characteristic, np.array([1.5, 0.04, 0.3, -0.6, 0.05]), frozenset()),
    (godunov_cells, np.array([0.2, 0.7, 0.4, 0.9, 0.1]), frozenset()),
    (rc_ladder, 1 + R.random(4), BY_THE_TAPE),
    (gaussian_beam, np.array([0.8, 1.2]), frozenset()),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f, x, refused", SCIENCE_PROGRAMS, ids=[p[0].__name__ for p in SCIENCE_PROGRAMS]
)
def test_science_and_engineering(f, x, refused, mode):
    _check_program(f, x, mode, refused)


# --- student style ----------------------------------------------------------------------------

X_DATA, Y_DATA = _n(6, 3, scale=1.0), _n(6, scale=1.0)


def loss_by_loops(w):
    total = 0
    for i in range(len(Y_DATA)):
        prediction = 0.0
        for j in range(len(w)):
            prediction += X_DATA[i, j] * w[j]
        total += (prediction - Y_DATA[i]) ** 2
    return total / len(Y_DATA)


def math_functions_on_items(w):
    total = 0.0
    for i in range(len(w)):
        total += 1.0 / (1.0 + math.exp(-w[i])) * math.log(1 + w[i] ** 2)
    return total


def promoted_to_a_row(x):
    if x.ndim == 1:
        x = x[None, :]
    assert x.shape[1] == 3
    return np.sum(np.tanh(x @ X_DATA.T) ** 2)


def builtins_on_a_list(w):
    values = [w[0] * 2, w[1] ** 2, math.sin(w[2])]
    return sum(values) + max(values) - min(values) + abs(w[0] - w[1])


def copies_everywhere(w):
    x = w.copy()
    y = x.copy()
    y[0] = y[0] * 3
    z = y.copy()
    z += x
    return np.sum(z**2)


def appended_then_array(w):
    out = []
    for i in range(len(w)):
        out.append(w[i] * (i + 1))
    values = np.array(out)
    return np.sum(values**2) + values[0] * values[-1]


def nested_helpers(w):
    def square(v):
        return v * v

    def layer(v, k):
        return np.tanh(square(v) * k)

    h = w
    for k in [0.5, 1.0, 1.5]:
        h = layer(h, k)
    return np.sum(h)


def with_a_print(w):
    loss = np.sum((X_DATA @ w - Y_DATA) ** 2)
    print("loss is", loss)
    return loss


def sgd_on_a_dict(w):
    params = {"w": w.copy(), "b": np.zeros(1)}
    for _ in range(3):
        error = X_DATA @ params["w"] + params["b"] - Y_DATA
        params["w"] -= 0.1 * X_DATA.T @ error / len(error)
        params["b"] -= 0.1 * np.mean(error)
    return np.sum((X_DATA @ params["w"] + params["b"] - Y_DATA) ** 2)


def logistic_cost_by_items(w):
    cost = 0
    for i in range(X_DATA.shape[0]):
        h = 1 / (1 + math.exp(-np.dot(X_DATA[i], w)))
        y = 1 if Y_DATA[i] > 0 else 0
        cost += -y * math.log(h) - (1 - y) * math.log(1 - h)
    return cost / X_DATA.shape[0]


def numpy_scalar_accumulator(w):
    s = np.float64(0)
    for xi in w:
        s = s + xi * np.exp(-xi)
    return s


def zipped_and_enumerated(w):
    total = 0.0
    for i, (a, b) in enumerate(zip(w, w[::-1])):
        total += (i + 1) * a * b
    return total


def list_comprehensions(w):
    squares = [v**2 for v in w]
    cubes = [squares[i] * w[i] for i in range(len(w)) if i % 2 == 0]
    return sum(squares) + sum(cubes)


def while_counter(w):
    i, total = 0, 0.0
    while i < len(w):
        total = total + w[i] * (i + 1) ** 0.5
        i += 1
    return total**2


def standardised_in_place(w):
    x = w.copy()
    x -= x.mean()
    x /= x.std()
    return np.sum(x * np.arange(len(x)))


def tuple_from_a_helper(w):
    def stats(v):
        return v.mean(), v.var()

    m, v = stats(w)
    return m**2 + v


def a_softmax_by_hand(z):
    exps = []
    for zi in z:
        exps.append(math.exp(zi))
    total = sum(exps)
    probabilities = [e / total for e in exps]
    return -math.log(probabilities[1])


def float_of_the_loss(x):
    column = x.reshape(-1, 1)
    assert x.shape == (len(x),), "bad shape"
    return float(np.sum(column @ column.T))


def np_float64_items(x):
    total = np.float64(0.0)
    for i in range(len(x)):
        total += np.float64(x[i]) ** 2
    return total


def histogram_by_add_at(w):
    hist = np.zeros(3)
    np.add.at(hist, np.array([0, 2, 1, 0, 2, 2]), w)
    return np.sum(hist**2) + hist[0] * hist[2]


def gather_and_scatter(x):
    index = np.array([2, 0, 3, 3])
    gathered = x[index]
    out = np.zeros_like(x)
    out[index[:2]] = gathered[:2] * 2
    return np.sum(out * x) + np.sum(gathered**3)


def out_keywords(x):
    buffer = np.empty_like(x)
    np.multiply(x, x, out=buffer)
    np.exp(-buffer, out=buffer)
    return buffer.sum()


def views_of_a_reshape(x):
    M = x.reshape(2, 3)
    return np.sum(M[0] * 2) + np.sum(M[:, 1] ** 2) + M.T[2, 1]


def buffer_filled_in_a_loop(x):
    buffer = np.zeros(len(x))
    for i in range(len(x)):
        buffer[i] = x[i] * (i + 1)
        if i > 0:
            buffer[i] += buffer[i - 1] * 0.5
    return np.sum(buffer**2)


def adam_on_dicts(w0):
    params, m, v = {"w": w0}, {"w": np.zeros_like(w0)}, {"w": np.zeros_like(w0)}
    for t in range(1, 3):
        g = {"w": X_DATA.T @ (X_DATA @ params["w"] - 1.0)}
        for k in params:
            m[k] = 0.9 * m[k] + 0.1 * g[k]
            v[k] = 0.999 * v[k] + 0.001 * g[k] ** 2
            step = m[k] / (1 - 0.9**t) / (np.sqrt(v[k] / (1 - 0.999**t)) + 1e-8)
            params[k] = params[k] - 0.01 * step
    return np.sum((X_DATA @ params["w"] - 1.0) ** 2)


class Net:
    def __init__(self, W1, W2):
        self.W1, self.W2 = W1, W2

    def forward(self, x):
        return np.maximum(0, x @ self.W1) @ self.W2

    def __call__(self, x):
        return self.forward(x)


def class_with_forward(params):
    return np.mean((Net(*params)(X_DATA) - Y_DATA) ** 2)


def pairwise_differences(x):
    d = x[:, None] - x[None, :]
    return np.sum(np.exp(-(d**2)))


STUDENT_PROGRAMS = [
    (loss_by_loops, _n(3), frozenset()),
    (math_functions_on_items, _n(4), frozenset()),
    (promoted_to_a_row, _n(3), frozenset()),
    (builtins_on_a_list, np.array([0.3, 0.9, -0.4]), frozenset()),
    (copies_everywhere, _n(3), frozenset()),
    (appended_then_array, _n(4), frozenset()),
    (nested_helpers, _n(3), frozenset()),
    (with_a_print, _n(3), frozenset()),
    (sgd_on_a_dict, _n(3), frozenset()),
    (logistic_cost_by_items, _n(3), frozenset()),
    (numpy_scalar_accumulator, _n(4), frozenset()),
    (zipped_and_enumerated, _n(4), frozenset()),
    (list_comprehensions, _n(5), frozenset()),
    (while_counter, _n(4), frozenset()),
    (standardised_in_place, _n(5), frozenset()),
    (tuple_from_a_helper, _n(4), frozenset()),
    (a_softmax_by_hand, _n(3), frozenset()),
    (float_of_the_loss, _n(3), TAPE_FLOAT),
    (np_float64_items, _n(3), TAPE_FLOAT),
    (histogram_by_add_at, _n(6), frozenset()),
    (gather_and_scatter, _n(4), frozenset()),
    (out_keywords, _n(4), frozenset()),
    (views_of_a_reshape, _n(6), frozenset()),
    (buffer_filled_in_a_loop, _n(4), frozenset()),
    (adam_on_dicts, _n(3), frozenset({("s2s", "grad"), ("s2s", "hvp")})),
    (class_with_forward, (_n(3, 4), _n(4)), BY_THE_TAPE),
    (pairwise_differences, _n(4), frozenset()),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f, x, refused", STUDENT_PROGRAMS, ids=[p[0].__name__ for p in STUDENT_PROGRAMS]
)
def test_student_style(f, x, refused, mode, capsys):
    _check_program(f, x, mode, refused)


def test_dicts_made_by_one_tuple_assignment_are_refused_as_dicts():
    """``params, m, v = {...}, {...}, {...}``: the alias analysis did not know these names
    for dicts (only ``params = {...}``), so ``params[k] = ...`` in ``for k in params`` was
    refused as an array write that the key ``k`` "may share memory" with ("give 'k' a
    copy"); now it says what it does not transform, the entries of a dict."""
    with pytest.raises(
        sg.UnsupportedError, match=f"{__file__}:[0-9]+: writing entries of the dict"
    ):
        sg.grad(adam_on_dicts, mode="s2s")(_n(3))


def stiffness_with_two_writes_a_line(k):
    """A student's assembly: two item writes on one line, joined by ';'."""
    K = np.zeros((4, 4))
    for e, (i, j) in enumerate(EDGES):
        K[i, i] += k[e]; K[j, j] += k[e]  # noqa: E702  # fmt: skip
        K[i, j] -= k[e]; K[j, i] -= k[e]  # noqa: E702  # fmt: skip
    K[0, 0] += 1.0
    return np.linalg.solve(K, np.array([0.0, 0.0, 0.0, 1.0]))[3]


STIFFNESSES = 1 + R.random(4)


@pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="the tape tells two writes of a line apart by instruction positions (Python 3.11+)",
)
@pytest.mark.parametrize("mode", MODES)
def test_two_item_writes_on_one_line(mode):
    """On the tape the writes a line makes were found by its number alone, so a line with
    two (``K[i, i] += k; K[j, j] += k``) was refused as a write into a plain array; now the
    store running is told by its rank among the line's."""
    _check_program(stiffness_with_two_writes_a_line, STIFFNESSES, mode, frozenset())
