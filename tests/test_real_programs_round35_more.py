"""Programs written the way users write them, round 35, continued: statistics, signal
processing, control, finance, geometry and graphics, and more of users' code shapes
(accumulators, buffers, early exits, small classes and dataclasses of settings). Each is
checked in every mode as round 32 does (``test_real_programs_round32.py``).
"""

import sys
from dataclasses import dataclass

import numpy as np
import pytest
from test_real_programs_round32 import BY_THE_TAPE, MODES, S2S_HVP, _check_program

R = np.random.default_rng(3535_4)
S2S_GRAD_HVP = frozenset({("s2s", "grad"), ("s2s", "hvp")})


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


# --- statistics -------------------------------------------------------------------------------

SAMPLE = _n(8, scale=1.0) + 0.3


def student_t_log_likelihood(params):
    """A location-scale Student-t log-likelihood with the degrees of freedom free, lgamma
    written with math.lgamma-free Stirling terms (np.log of a gamma-like product)."""
    mu, log_sigma, log_nu = params
    sigma, nu = np.exp(log_sigma), np.exp(log_nu) + 1.0
    z = (SAMPLE - mu) / sigma
    return -np.sum(-0.5 * (nu + 1) * np.log1p(z**2 / nu) - np.log(sigma) - 0.5 * np.log(nu))


def weighted_quantile_loss(q):
    """The pinball loss of three quantile estimates at once, weights by np.where."""
    taus = np.array([0.1, 0.5, 0.9])
    diff = SAMPLE[:, None] - q[None, :]
    return np.mean(np.where(diff >= 0, taus * diff, (taus - 1) * diff))


def kernel_density_log_score(log_bw):
    """Leave-one-out log score of a Gaussian kernel density estimate, the diagonal
    removed by masking."""
    bw = np.exp(log_bw)
    d = SAMPLE[:, None] - SAMPLE[None, :]
    k = np.exp(-0.5 * (d / bw) ** 2) / (bw * np.sqrt(2 * np.pi))
    k = k * (1 - np.eye(len(SAMPLE)))
    return -np.sum(np.log(np.sum(k, axis=1) / (len(SAMPLE) - 1)))


def em_gaussian_mixture_step(means):
    """Two EM steps of a 1-D mixture with fixed variances, the responsibilities by a
    normalised exponential; the final means' log-likelihood."""
    m = means
    for _ in range(2):
        log_p = -0.5 * (SAMPLE[:, None] - m[None, :]) ** 2
        resp = np.exp(log_p - np.max(log_p, axis=1, keepdims=True))
        resp = resp / resp.sum(axis=1, keepdims=True)
        m = (resp * SAMPLE[:, None]).sum(axis=0) / resp.sum(axis=0)
    log_p = -0.5 * (SAMPLE[:, None] - m[None, :]) ** 2
    return -np.sum(np.log(np.mean(np.exp(log_p), axis=1)))


def bootstrap_like_weighted_mean(w):
    """Fixed resampling indices, a softmax-weighted mean per resample, the variance."""
    idx = np.array([[0, 1, 1, 3], [2, 2, 5, 7], [4, 6, 6, 0]])
    weights = np.exp(w) / np.sum(np.exp(w))
    means = np.array([np.sum(SAMPLE[row] * weights) for row in idx])
    return np.var(means) + np.mean(means) ** 2


def ar2_conditional_likelihood(phi):
    """An AR(2) model's conditional Gaussian likelihood with residuals in a loop."""
    x = np.cumsum(SAMPLE) * 0.3
    resid = []
    for t in range(2, len(x)):
        resid.append(x[t] - phi[0] * x[t - 1] - phi[1] * x[t - 2])
    resid = np.array(resid)
    s2 = np.mean(resid**2)
    return 0.5 * len(resid) * np.log(s2)


def logistic_growth_least_squares(params):
    """A logistic growth curve fitted with parameters on a log scale."""
    r, K = np.exp(params)
    t = np.arange(6.0)
    y = np.array([0.1, 0.2, 0.38, 0.6, 0.78, 0.88])
    model = K / (1 + (K / 0.1 - 1) * np.exp(-r * t))
    return np.sum((model - y) ** 2)


# --- signals and control ----------------------------------------------------------------------


def iir_filter_loop(coeffs):
    """A second-order IIR filter written with an output buffer and past samples."""
    b0, a1, a2 = coeffs
    x = np.sin(np.arange(10) * 0.7)
    y = np.zeros_like(x)
    for n in range(len(x)):
        y[n] = b0 * x[n]
        if n >= 1:
            y[n] -= a1 * y[n - 1]
        if n >= 2:
            y[n] -= a2 * y[n - 2]
    return np.sum(y**2)


def fir_design_by_dft(taps):
    """A filter's magnitude response at chosen frequencies by a DFT written with cos and
    sin matrices, matched to a low-pass target."""
    freqs = np.linspace(0, np.pi, 6)
    n = np.arange(len(taps))
    re = np.cos(np.outer(freqs, n)) @ taps
    im = -np.sin(np.outer(freqs, n)) @ taps
    mag = np.sqrt(re**2 + im**2 + 1e-12)
    target = (freqs < 1.2).astype(float)
    return np.sum((mag - target) ** 2)


def fft_power_spectrum_match(signal):
    """The power spectrum by np.fft.rfft matched to a target, plus smoothness."""
    spec = np.abs(np.fft.rfft(signal)) ** 2
    target = np.array([0.0, 4.0, 1.0, 0.5, 0.0])
    return np.sum((spec - target) ** 2) + np.sum(np.diff(signal) ** 2)


def lqr_rollout_cost(K):
    """A double integrator under state feedback u = -K x: the quadratic cost of a
    rollout, states kept in a list."""
    A = np.array([[1.0, 0.1], [0.0, 1.0]])
    B = np.array([0.0, 0.1])
    x = np.array([1.0, 0.0])
    cost = 0.0
    states = [x]
    for _ in range(10):
        u = -K @ x
        cost += x @ x + 0.1 * u**2
        x = A @ x + B * u
        states.append(x)
    return cost + 10 * np.sum(states[-1] ** 2)


def pid_controller_tracking(gains):
    """A PID loop on a first-order plant, integral and previous error kept in variables,
    the tracking error squared."""
    kp, ki, kd = gains
    y, integral, prev_err = 0.0, 0.0, 1.0
    total = 0.0
    for _ in range(12):
        err = 1.0 - y
        integral += err * 0.1
        deriv = (err - prev_err) / 0.1
        u = kp * err + ki * integral + kd * deriv
        y = y + 0.1 * (-y + u)
        prev_err = err
        total += err**2
    return total


def kalman_smoother_rts(log_q):
    """A scalar Kalman filter forward, Rauch-Tung-Striebel smoother backward, filtered
    and predicted moments in preallocated arrays."""
    q, r = np.exp(log_q), 0.2
    ys = np.array([0.1, 0.4, 0.3, 0.8, 0.7])
    n = len(ys)
    mf, Pf = np.zeros(n), np.zeros(n)
    mp, Pp = np.zeros(n), np.zeros(n)
    m, P = 0.0, 1.0
    for t in range(n):
        mp[t], Pp[t] = m, P + q
        K = Pp[t] / (Pp[t] + r)
        m = mp[t] + K * (ys[t] - mp[t])
        P = (1 - K) * Pp[t]
        mf[t], Pf[t] = m, P
    ms = mf.copy()
    for t in range(n - 2, -1, -1):
        G = Pf[t] / Pp[t + 1]
        ms[t] = mf[t] + G * (ms[t + 1] - mp[t + 1])
    return np.sum((ms - ys) ** 2)


# --- finance ---------------------------------------------------------------------------------

RETURNS = _n(12, 3, scale=0.05) + 0.01


def mean_variance_portfolio(logits):
    """Portfolio weights by softmax, mean-variance utility from a sample covariance."""
    w = np.exp(logits) / np.sum(np.exp(logits))
    mu = RETURNS.mean(axis=0)
    cov = np.cov(RETURNS, rowvar=False)
    return -(w @ mu) + 2.0 * w @ cov @ w


def black_scholes_call(params):
    """A Black-Scholes call price with the normal CDF by erf written as tanh's
    approximation, strike and volatility as parameters."""
    S, K, vol = 1.0, params[0], np.exp(params[1])
    T, r = 0.5, 0.01

    def ncdf(x):
        return 0.5 * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))

    d1 = (np.log(S / K) + (r + 0.5 * vol**2) * T) / (vol * np.sqrt(T))
    d2 = d1 - vol * np.sqrt(T)
    return S * ncdf(d1) - K * np.exp(-r * T) * ncdf(d2)


def binomial_tree_american_put(params):
    """An American put on a small binomial tree: backward induction with early exercise by
    np.maximum on value arrays."""
    S0, K = 1.0, params[0]
    sigma = np.exp(params[1])
    steps, T, r = 4, 1.0, 0.02
    dt = T / steps
    u = np.exp(sigma * np.sqrt(dt))
    d = 1 / u
    p = (np.exp(r * dt) - d) / (u - d)
    prices = S0 * u ** np.arange(steps, -1, -1) * d ** np.arange(0, steps + 1)
    values = np.maximum(K - prices, 0.0)
    for _ in range(steps):
        prices = prices[:-1] / u
        cont = np.exp(-r * dt) * (p * values[:-1] + (1 - p) * values[1:])
        values = np.maximum(cont, K - prices)
    return values[0]


def garch_log_likelihood(params):
    """GARCH(1,1) with the conditional variance recursion in a loop."""
    omega, alpha, beta = np.exp(params)
    r = RETURNS[:, 0]
    var = np.var(r)
    nll = 0.0
    for t in range(1, len(r)):
        var = omega + alpha * r[t - 1] ** 2 + beta * var
        nll += 0.5 * (np.log(var) + r[t] ** 2 / var)
    return nll


def risk_parity_objective(logits):
    """Risk contributions of a portfolio made equal: the spread of w * (C w)."""
    w = np.exp(logits) / np.sum(np.exp(logits))
    cov = np.cov(RETURNS, rowvar=False) + 1e-4 * np.eye(3)
    contrib = w * (cov @ w)
    return np.sum((contrib - np.mean(contrib)) ** 2) * 1e6


# --- geometry and graphics ---------------------------------------------------------------------


def rotation_alignment(angles):
    """Rotation matrices from Euler angles composed, point sets aligned (a Procrustes
    residual)."""
    a, b, c = angles

    def rz(t):
        return np.array(
            [[np.cos(t), -np.sin(t), 0.0], [np.sin(t), np.cos(t), 0.0], [0.0, 0.0, 1.0]]
        )

    def ry(t):
        return np.array(
            [[np.cos(t), 0.0, np.sin(t)], [0.0, 1.0, 0.0], [-np.sin(t), 0.0, np.cos(t)]]
        )

    Rm = rz(a) @ ry(b) @ rz(c)
    P = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    Q = P @ np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]).T
    return np.sum((P @ Rm.T - Q) ** 2)


def bezier_curve_length(ctrl):
    """A cubic Bezier curve's polyline length by de Casteljau evaluation at samples."""
    pts = ctrl.reshape(4, 2)
    length = 0.0
    prev = pts[0]
    for t in np.linspace(0.1, 1.0, 6):
        level = pts
        while len(level) > 1:
            level = (1 - t) * level[:-1] + t * level[1:]
        length += np.sqrt(np.sum((level[0] - prev) ** 2))
        prev = level[0]
    return length


def soft_rasteriser_coverage(center):
    """A soft rasteriser: a disc's coverage of pixel centres by a sigmoid of the signed
    distance, the image matched to a target."""
    xs, ys = np.meshgrid(np.linspace(0, 1, 5), np.linspace(0, 1, 5))
    dist = np.sqrt((xs - center[0]) ** 2 + (ys - center[1]) ** 2) - 0.3
    image = 1.0 / (1.0 + np.exp(dist / 0.05))
    target = ((xs - 0.5) ** 2 + (ys - 0.5) ** 2 < 0.09).astype(float)
    return np.mean((image - target) ** 2)


def mesh_laplacian_smoothing(vertices):
    """Laplacian smoothing energy of a closed polygon and its signed area (shoelace)."""
    v = vertices.reshape(-1, 2)
    lap = np.roll(v, 1, axis=0) + np.roll(v, -1, axis=0) - 2 * v
    x, y = v[:, 0], v[:, 1]
    area = 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)
    return np.sum(lap**2) + (area - 1.0) ** 2


def inverse_kinematics_arm(angles):
    """A planar three-link arm: joint positions by cumulative angles, distance of the
    end effector to a target, a comfort penalty."""
    lengths = np.array([1.0, 0.8, 0.5])
    total = np.cumsum(angles)
    x = np.sum(lengths * np.cos(total))
    y = np.sum(lengths * np.sin(total))
    return (x - 1.2) ** 2 + (y - 0.9) ** 2 + 0.01 * np.sum(angles**2)


# --- users' code shapes -----------------------------------------------------------------------


@dataclass
class Settings:
    lr: float = 0.1
    steps: int = 3
    decay: float = 0.9


DEFAULTS = Settings()


def training_loop_with_settings(w, settings=DEFAULTS):
    """An inner training loop configured by a dataclass of settings (numbers, not
    differentiated), its final loss differentiated with respect to the start."""
    X = np.array([[1.0, 0.5], [0.2, -0.3], [-0.4, 0.8]])
    y = np.array([0.3, -0.1, 0.5])
    lr = settings.lr
    for _ in range(settings.steps):
        r = X @ w - y
        w = w - lr * X.T @ r
        lr *= settings.decay
    return np.sum((X @ w - y) ** 2)


class RunningStats:
    """Welford's running mean and variance, updated value by value."""

    def __init__(self):
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def push(self, x):
        self.n += 1
        delta = x - self.mean
        self.mean = self.mean + delta / self.n
        self.m2 = self.m2 + delta * (x - self.mean)

    def variance(self):
        return self.m2 / (self.n - 1)


def welford_running_variance(x):
    """A running-statistics object made in the function and fed each value."""
    stats = RunningStats()
    for v in x:
        stats.push(v)
    return stats.variance() + stats.mean**2


def accumulate_in_dict_by_key(x):
    """Values accumulated in a dict keyed by a group label, then combined."""
    labels = ["a", "b", "a", "c", "b", "a"]
    sums = {}
    for label, v in zip(labels, x):
        sums[label] = sums.get(label, 0.0) + v**2
    return sums["a"] * sums["b"] + sums["c"]


def early_stopping_descent(w):
    """Gradient steps with the gradient written by hand, stopped when the loss stops
    improving (the comparisons decide how many steps count)."""
    best, taken = np.inf, 0
    for _ in range(20):
        loss = np.sum((w - 1.0) ** 2) + 0.1 * np.sum(w**4)
        if loss > best - 1e-3:
            break
        best = loss
        taken += 1
        w = w - 0.1 * (2 * (w - 1.0) + 0.4 * w**3)
    return best + 0.01 * taken


def nested_list_comprehension_energy(x):
    """A pairwise energy with a nested list comprehension and a conditional."""
    n = len(x)
    terms = [np.exp(-((x[i] - x[j]) ** 2)) for i in range(n) for j in range(n) if i < j]
    return sum(terms) + np.sum(x**2) * 0.1


def slices_and_strides(x):
    """Even and odd entries, reversed halves and strided windows."""
    evens, odds = x[::2], x[1::2]
    first, second = x[: len(x) // 2], x[len(x) // 2 :][::-1]
    return np.sum(evens * odds) + np.sum(first * second) + np.sum(x[1:-1:2] ** 3)


def masked_mean_with_boolean_index(x):
    """Boolean indexing picks entries, their mean and a squared deviation."""
    mask = x > np.median(x)
    chosen = x[mask]
    rest = x[~mask]
    return np.mean(chosen) ** 2 + np.sum((rest - chosen.mean()) ** 2)


def argmax_selection_and_gather(M_flat):
    """The best column per row by argmax, its score gathered with take_along_axis."""
    M = M_flat.reshape(3, 4)
    best = np.argmax(M, axis=1)
    picked = np.take_along_axis(M, best[:, None], axis=1)[:, 0]
    return np.sum(picked**2) + np.sum(np.sort(M, axis=1)[:, :2])


def helper_returning_tuple_in_loop(x):
    """A helper returning two values used in a loop with augmented assignment."""

    def stats(v):
        return np.mean(v), np.std(v)

    total = 0.0
    for k in range(1, 4):
        m, s = stats(x[: k + 2] * k)
        total += m * s
    return total


def polynomial_horner_helper(coeffs):
    """Horner evaluation in a helper at several points, a least-squares fit to cos."""

    def horner(c, t):
        out = np.zeros_like(t)
        for ck in c:
            out = out * t + ck
        return out

    t = np.linspace(-1, 1, 6)
    return np.sum((horner(coeffs, t) - np.cos(t)) ** 2)


PROGRAMS = [
    (student_t_log_likelihood, np.array([0.2, -0.1, 1.0])),
    (weighted_quantile_loss, np.array([-0.8, 0.25, 1.3])),
    (kernel_density_log_score, np.array(-0.5)),
    (em_gaussian_mixture_step, np.array([-0.5, 0.8])),
    (bootstrap_like_weighted_mean, _n(4)),
    (ar2_conditional_likelihood, np.array([0.5, 0.2])),
    (logistic_growth_least_squares, np.log(np.array([0.8, 1.0]))),
    (iir_filter_loop, np.array([0.8, -0.5, 0.2])),
    (fir_design_by_dft, _n(5)),
    (fft_power_spectrum_match, _n(8)),
    (lqr_rollout_cost, np.array([1.0, 1.5])),
    (pid_controller_tracking, np.array([1.2, 0.5, 0.05])),
    (kalman_smoother_rts, np.array(-1.0)),
    (mean_variance_portfolio, _n(3)),
    (black_scholes_call, np.array([1.05, np.log(0.25)])),
    (binomial_tree_american_put, np.array([1.05, np.log(0.3)])),
    (garch_log_likelihood, np.log(np.array([1e-4, 0.1, 0.8]))),
    (risk_parity_objective, _n(3)),
    (rotation_alignment, np.array([1.3, 0.2, 0.1])),
    (bezier_curve_length, np.array([0.0, 0.0, 0.3, 1.0, 0.7, -0.5, 1.0, 0.2])),
    (soft_rasteriser_coverage, np.array([0.45, 0.55])),
    (mesh_laplacian_smoothing, np.array([0.0, 0.0, 1.1, 0.1, 1.0, 1.0, -0.1, 0.9])),
    (inverse_kinematics_arm, np.array([0.3, 0.4, 0.2])),
    (training_loop_with_settings, _n(2)),
    (welford_running_variance, _n(5)),
    (accumulate_in_dict_by_key, _n(6)),
    (early_stopping_descent, np.array([0.2, 0.4])),
    (nested_list_comprehension_energy, _n(4)),
    (slices_and_strides, _n(8)),
    (masked_mean_with_boolean_index, np.array([0.3, -1.2, 0.8, 0.1, -0.4, 1.5])),
    (
        argmax_selection_and_gather,
        np.array([0.3, -0.2, 1.0, 0.5, 0.8, 0.1, -0.5, 0.2, -0.6, 0.7, 0.2, 1.4]),
    ),
    (helper_returning_tuple_in_loop, _n(5)),
    (polynomial_horner_helper, _n(4)),
]

# what s2s refuses, naming the program's line (auto tapes each): an object made in the
# function whose method changes it, entries written into a dict of values being
# differentiated; forward mode over a gradient whose save stack holds reads of a buffer
# filled in a loop
REFUSED = {
    "welford_running_variance": BY_THE_TAPE,
    "accumulate_in_dict_by_key": S2S_GRAD_HVP,
    "iir_filter_loop": S2S_HVP,
    "kalman_smoother_rts": S2S_HVP,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(f, x, mode):
    if f is kalman_smoother_rts and mode != "s2s" and sys.version_info < (3, 11):
        pytest.skip(
            "the tape tells the item writes of one unpacking apart by instruction positions (3.11+)"
        )
    _check_program(f, x, mode, REFUSED.get(f.__name__, frozenset()))
