"""Programs written the way users write them, checked in all three modes against central
differences on the first call and on a later one (which runs the code specialised to the
arguments' shapes), and forward mode along a random direction.

Found here: a loss that is one median or percentile of its input (``np.median(x)``) crashed
on its second call in s2s and auto: the specialised code holds the gradient's seed as the
float ``1.0``, and the median's backward called ``.reshape`` on it (a rewrite the probe
made because the seed was a 0-d array when it ran); ``np.linalg.slogdet(a)[1]`` as the
loss failed the same way through ``scale[None, None]``.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ("s2s", "tape", "auto")
R = np.random.default_rng(17)


def kalman_log_likelihood(q, ys):
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    H = np.array([[1.0, 0.0]])
    m = np.zeros(2)
    P = np.eye(2)
    ll = 0.0
    for t in range(ys.shape[0]):
        m = A @ m
        P = A @ P @ A.T + q * np.eye(2)
        S = H @ P @ H.T + 0.5
        K = P @ H.T / S
        r = ys[t] - H @ m
        m = m + (K * r).ravel()
        P = P - K @ H @ P
        ll = ll - 0.5 * (np.log(S[0, 0]) + r[0] ** 2 / S[0, 0])
    return ll


def particles(vel0, pos0):
    pos = pos0.copy()
    vel = vel0.copy()
    dt = 0.05
    for _ in range(5):
        acc = -pos * 2.0
        vel += dt * acc
        pos[:] = pos + dt * vel
        pos = np.clip(pos, -3.0, 3.0)
    return np.sum(pos**2) + np.sum(vel**2)


def _dynamics(state, theta):
    x, v = state
    return v, -theta[0] * x - theta[1] * v


def _euler(state, theta, dt):
    dx, dv = _dynamics(state, theta)
    x, v = state
    return x + dt * dx, v + dt * dv


def damped_oscillator(theta, x0):
    state = (x0, np.zeros_like(x0))
    for _ in range(10):
        state = _euler(state, theta, 0.1)
    x, v = state
    return np.sum(x**2) + 0.1 * np.sum(v**2)


def horner(coeffs, x):
    y = np.zeros_like(x)
    for c in coeffs[::-1]:
        y = y * x + c
    return np.sum(y)


def recurrence_in_a_buffer(a, x):
    out = np.empty_like(x)
    out[0] = x[0]
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] * a + x[i]
    return np.sum(out**2)


def gaussian_log_likelihood(L, x):
    S = L @ L.T + np.eye(L.shape[0])
    sign, logdet = np.linalg.slogdet(S)
    return -0.5 * (logdet + x @ np.linalg.solve(S, x)) + np.trace(S) * 0.01


def masked_attention(Wq, X):
    Q = X @ Wq
    s = np.einsum("id,jd->ij", Q, X) / np.sqrt(X.shape[1])
    n = s.shape[0]
    s = np.where(np.triu(np.ones((n, n)), 1) > 0, -1e9, s)
    s = s - s.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    return np.sum((p @ X) ** 2)


def robust_statistics(x):
    return np.var(x, ddof=1) + np.prod(x[:3]) + np.linalg.norm(x, ord=1) + np.median(x)


def median_loss(x):
    return np.median(x)


def percentile_loss(x):
    return np.percentile(x, 30)


def log_determinant(a):
    return np.linalg.slogdet(a)[1]


PROGRAMS = {
    "kalman": (kalman_log_likelihood, lambda: (0.3, R.normal(size=(6, 1)))),
    "particles": (particles, lambda: (R.normal(size=4), R.normal(size=4))),
    "oscillator": (damped_oscillator, lambda: (np.array([1.5, 0.2]), R.normal(size=3))),
    "horner": (horner, lambda: (R.normal(size=4), R.normal(size=5))),
    "recurrence": (recurrence_in_a_buffer, lambda: (0.7, R.normal(size=6))),
    "gaussian": (gaussian_log_likelihood, lambda: (R.normal(size=(3, 3)), R.normal(size=3))),
    "attention": (masked_attention, lambda: (R.normal(size=(3, 3)) * 0.5, R.normal(size=(4, 3)))),
    "statistics": (robust_statistics, lambda: (R.normal(size=6) + 0.1 * np.arange(6),)),
    "median": (median_loss, lambda: (R.normal(size=7),)),
    "percentile": (percentile_loss, lambda: (R.normal(size=7),)),
    "logdet": (log_determinant, lambda: (np.eye(3) * 2 + 0.1 * R.normal(size=(3, 3)),)),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_gradient_on_first_and_later_calls_and_forward_mode(name, mode):
    function, make = PROGRAMS[name]
    primals = make()
    wrt = tuple(range(len(primals)))
    expected = [numeric_grad(function, primals, position) for position in wrt]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mode="auto" may say it used the tape
        gradient = sg.grad(function, wrt=wrt, mode=mode)
        for _ in ("first call", "later call"):
            got = gradient(*primals)
            for position in wrt:
                assert_close(got[position], expected[position], 1e-5, 1e-6)
        position = len(primals) - 1
        along = R.normal(size=np.shape(primals[position]))
        tangents = tuple(
            along if i == position else np.zeros_like(p) for i, p in enumerate(primals)
        )
        _, tangent = sg.jvp(function, primals, tangents, mode=mode)
        assert_close(tangent, numeric_jvp(function, primals, position, along), 1e-5, 1e-6)


def largest_of_the_sums(xs):
    return max(np.sum(x**2) for x in xs) + min(np.sum(xs[0]), np.sum(xs[1]), 0.5)


@pytest.mark.parametrize("mode", MODES)
def test_builtin_max_of_a_sequence_and_min_of_three(mode):
    """Python's max of a generator and min of three values crashed in s2s and auto with
    the two-value rule's TypeError; the value returned gets the whole cotangent."""
    xs = [np.array([0.3, -0.9, 0.4]), np.array([0.8, 0.2])]
    expected = [
        numeric_grad(lambda a: largest_of_the_sums([a, xs[1]]), (xs[0],), 0),
        numeric_grad(lambda b: largest_of_the_sums([xs[0], b]), (xs[1],), 0),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradient = sg.grad(largest_of_the_sums, mode=mode)
        for _ in ("first call", "later call"):
            got = gradient(xs)
            for part, want in zip(got, expected):
                assert_close(part, want, 1e-5, 1e-7)
        along = [np.array([0.1, 0.2, -0.3]), np.array([0.4, -0.5])]
        _, tangent = sg.jvp(largest_of_the_sums, (xs,), (along,), mode=mode)
    assert_close(tangent, sum(np.sum(w * a) for w, a in zip(expected, along)), 1e-5, 1e-7)
