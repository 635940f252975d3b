"""Programs written the way users write them, round 32, continued: library calls as users
reach for them (masks written in place, np.bincount, np.polyfit, scipy.signal.lfilter ...),
statistics, economics and more science, and student NumPy (classes, closures, generators,
dataclasses and named tuples of parameters); checked in every mode as the first part of
this round does (``test_real_programs_round32.py``).
"""

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from scipy.special import gammaln
from test_real_programs_round32 import (
    BY_THE_TAPE,
    EVERYWHERE,
    IMAGE,
    ITEMS,
    LX,
    LY,
    MODES,
    NO_SECOND,
    ON_THE_TAPE,
    S2S_HVP,
    SIGNAL,
    TOKENS,
    USERS,
    _check_program,
    _n,
)

# --- student style --------------------------------------------------------------------------

xs = np.linspace(0.0, 2.0, 7)
ys = 1.5 * np.exp(-0.8 * xs) + 0.05 * np.cos(5 * xs)


def exponential_fit_by_items(p):
    total = 0.0
    for i in range(len(xs)):
        pred = p[0] * math.exp(-p[1] * xs[i])
        total += (pred - ys[i]) ** 2
    return total


def residuals_appended(p):
    residuals = []
    for x, y in zip(xs, ys):
        residuals.append(p[0] * np.exp(-p[1] * x) - y)
    residuals = np.array(residuals)
    return residuals @ residuals


def loss_with_print_and_assert(w):
    pred = xs * w[0] + w[1]
    loss = np.mean((pred - ys) ** 2)
    assert loss >= 0, "negative loss?"
    print("loss is", loss)
    return loss


@dataclass
class LinearParams:
    slope: np.ndarray
    intercept: np.ndarray


def dataclass_params(params):
    pred = params.slope * xs + params.intercept
    return np.sum((pred - ys) ** 2)


class Polynomial:
    def __init__(self, coefficients):
        self.coefficients = coefficients

    @property
    def degree(self):
        return len(self.coefficients) - 1

    @staticmethod
    def powers(x, n):
        return np.stack([x**k for k in range(n + 1)], axis=1)

    def __call__(self, x):
        return self.powers(x, self.degree) @ self.coefficients


def polynomial_class(c):
    model = Polynomial(c)
    return np.mean((model(xs) - ys) ** 2)


class TwoLayer:
    def __init__(self, params):
        self.W1 = params["W1"]
        self.W2 = params["W2"]

    def forward(self, x):
        self.hidden = np.tanh(x @ self.W1)
        return self.hidden @ self.W2

    def loss(self, x, y):
        return np.mean((self.forward(x) - y) ** 2)


def class_with_cached_hidden(params):
    net = TwoLayer(params)
    return net.loss(xs[:, None], ys)


def dict_of_layers(params):
    h = xs[:, None]
    for name in ["layer1", "layer2"]:
        W, b = params[name]
        h = np.tanh(h @ W + b)
    return np.sum((h[:, 0] - ys) ** 2)


def sigmoid(z):
    return 1 / (1 + math.exp(-z))


def logistic_by_hand(w):
    labels = [1, 0, 1, 1, 0, 0, 1]
    cost = 0
    for i in range(len(xs)):
        h = sigmoid(w[0] + w[1] * xs[i])
        if labels[i] == 1:  # noqa: SIM108
            cost = cost - math.log(h)
        else:
            cost = cost - math.log(1 - h)
    return cost / len(xs)


def gradient_descent_unrolled(lr):
    """Hyper-gradient of a learning rate: plain GD on a line fit, unrolled."""
    w = np.zeros(2)
    for epoch in range(10):  # noqa: B007
        pred = w[0] * xs + w[1]
        grad = np.array([np.mean(2 * (pred - ys) * xs), np.mean(2 * (pred - ys))])
        w = w - lr * grad
    return np.mean((w[0] * xs + w[1] - ys) ** 2)


def trapezoid_by_loop(a):
    area = 0
    for i in range(1, len(xs)):
        f0 = a[0] * xs[i - 1] ** 2 + a[1] * np.sin(xs[i - 1])
        f1 = a[0] * xs[i] ** 2 + a[1] * np.sin(xs[i])
        area += (xs[i] - xs[i - 1]) * (f0 + f1) / 2
    return (area - 1.0) ** 2


def moving_average_buffer(x):
    out = np.zeros(len(x) - 2)
    for i in range(len(out)):
        out[i] = (x[i] + x[i + 1] + x[i + 2]) / 3
    return np.sum(out**2) + out.max()


def min_max_scaling(x):
    scaled = (x - x.min()) / (x.max() - x.min())
    return np.sum(scaled * np.arange(len(x)))


def standard_score_with_std(x):
    z = (x - np.mean(x)) / np.std(x, ddof=1)
    return np.sum(z**3) / len(x)


def list_of_arrays_stacked(w):
    rows = [w * k for k in range(1, 4)]
    M = np.vstack(rows)
    return np.linalg.norm(M) + np.sum(np.diff(M, axis=0) ** 2)


def cumulative_returns(r):
    wealth = [1.0]
    for ret in r:
        wealth.append(wealth[-1] * (1 + ret))
    wealth = np.array(wealth)
    peak = np.maximum.accumulate(wealth)
    return np.max((peak - wealth) / peak) + np.log(wealth[-1])


def nested_lists_to_matrix(a):
    M = [[a[0], a[1]], [a[1] * 2, a[0] + a[2]]]
    M = np.array(M)
    return np.linalg.det(M) ** 2 + np.trace(M @ M)


def global_counter_and_history(w):
    history = {"loss": [], "grad_norm": []}
    for step in range(3):
        loss = np.sum((w - step) ** 2)
        history["loss"].append(loss)
    return sum(history["loss"]) / len(history["loss"])


def while_until_converged(c):
    x = 1.0
    it = 0
    while True:
        x_new = 0.5 * (x + c / x)
        it += 1
        if abs(x_new - x) < 1e-12 or it > 50:
            break
        x = x_new
    return x_new


def string_keys_and_formatting(w):
    params = {f"w{i}": w[i] for i in range(3)}
    total = 0.0
    for key, value in params.items():
        total += int(key[1:]) * value**2
    return total


def tuple_returning_helper(w):
    def mean_and_var(v):
        m = sum(v) / len(v)
        return m, sum((vi - m) ** 2 for vi in v) / len(v)

    m, var = mean_and_var(w)
    return m**2 + var


def enumerate_with_start(w):
    total = 0.0
    for k, wk in enumerate(w, 1):
        total += wk**2 / k
    return total


class Accumulator:
    def __init__(self):
        self.total = 0.0
        self.count = 0

    def add(self, value):
        self.total += value
        self.count += 1

    def mean(self):
        return self.total / self.count


def accumulator_object(w):
    acc = Accumulator()
    for v in w:
        acc.add(v**2)
    return acc.mean()


def argmax_one_hot(logits):
    probs = np.exp(logits) / np.sum(np.exp(logits))
    one_hot = np.zeros_like(probs)
    one_hot[np.argmax(probs)] = 1.0
    return -np.sum(one_hot * np.log(probs))


def sort_and_take_top(x):
    s = np.sort(x)[::-1]
    return np.sum(s[:3] * np.array([3.0, 2.0, 1.0]))


def vectors_as_python_lists(w):
    a = list(w)
    b = [2 * v for v in a]
    return sum(x * y for x, y in zip(a, b)) + max(a) - min(b)


STUDENT_PROGRAMS = [
    (exponential_fit_by_items, np.array([1.2, 0.6])),
    (residuals_appended, np.array([1.2, 0.6])),
    (loss_with_print_and_assert, _n(2)),
    (dataclass_params, LinearParams(np.array(0.3), np.array(-0.2))),
    (polynomial_class, _n(3)),
    (class_with_cached_hidden, {"W1": _n(1, 3), "W2": _n(3)}),
    (dict_of_layers, {"layer1": (_n(1, 3), _n(3)), "layer2": (_n(3, 1), _n(1))}),
    (logistic_by_hand, _n(2)),
    (gradient_descent_unrolled, 0.1),
    (trapezoid_by_loop, _n(2)),
    (moving_average_buffer, _n(6)),
    (min_max_scaling, _n(5)),
    (standard_score_with_std, _n(5)),
    (list_of_arrays_stacked, _n(3)),
    (cumulative_returns, 0.1 * _n(5)),
    (nested_lists_to_matrix, _n(3)),
    (global_counter_and_history, _n(3)),
    (while_until_converged, 2.0),
    (string_keys_and_formatting, _n(3)),
    (tuple_returning_helper, _n(4)),
    (enumerate_with_start, _n(4)),
    (accumulator_object, _n(3)),
    (argmax_one_hot, _n(4)),
    (sort_and_take_top, _n(5)),
    (vectors_as_python_lists, _n(4)),
]


# --- library calls as users reach for them -------------------------------------------------


def masked_scores_in_place(Wq):
    """Causal attention with the mask written in place: scores[mask] = -np.inf."""
    q = TOKENS @ Wq
    scores = q @ TOKENS.T / 2.0
    mask = np.triu(np.ones((3, 3), dtype=bool), k=1)
    scores[mask] = -np.inf
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    return np.sum((weights @ TOKENS) ** 2)


def relu_in_place(W):
    h = TOKENS @ W
    h[h < 0] = 0
    return np.sum(h**2)


def segment_sums_by_bincount(values):
    """Per-user totals by np.bincount with weights."""
    totals = np.bincount(USERS, weights=values, minlength=4)
    return np.sum(totals**2) + np.sum(np.log1p(totals**2))


def unique_inverse_means(values):
    keys, inverse = np.unique(ITEMS, return_inverse=True)
    sums = np.zeros(len(keys))
    np.add.at(sums, inverse, values)
    counts = np.bincount(inverse)
    return np.sum((sums / counts) ** 2)


def take_along_axis_pool(kernel):
    patches = sliding_window_view(IMAGE, (3, 3))
    fmap = np.tensordot(patches, kernel, axes=([2, 3], [0, 1]))
    idx = np.argmax(fmap, axis=1)[:, None]
    pooled = np.take_along_axis(fmap, idx, axis=1)
    return np.sum(pooled**2)


def median_and_percentile(x):
    return np.median(x) ** 2 + np.percentile(x, 75) + np.quantile(x, 0.2) ** 2


def polyfit_residual(y):
    """Least squares by np.polyfit, then the residual of the fit."""
    t = np.linspace(0, 1, len(y))
    coefficients = np.polyfit(t, y, 2)
    return np.sum((np.polyval(coefficients, t) - y) ** 2) + coefficients[0] ** 2


def lstsq_and_pinv(A):
    b = np.array([1.0, 0.5, -0.3, 0.8])
    x, *_ = np.linalg.lstsq(A, b, rcond=None)
    return np.sum(x**2) + np.sum(np.linalg.pinv(A) ** 2)


def interp_lookup_table(table):
    grid = np.linspace(0, 1, len(table))
    queries = np.array([0.05, 0.33, 0.5, 0.81, 0.97])
    return np.sum(np.interp(queries, grid, table) ** 2)


def convolve_and_correlate(h):
    s = SIGNAL[:12]
    y = np.convolve(s, h, mode="valid")
    c = np.correlate(y, h, mode="full")
    return np.sum(y**2) + np.sum(c**2) / 10


def lfilter_audio(b):
    from scipy.signal import lfilter

    y = lfilter(b, [1.0, -0.5], SIGNAL[:16])
    return np.sum((y - SIGNAL[:16]) ** 2)


def lpc_autocorrelation(frame):
    """LPC by the autocorrelation method: Toeplitz normal equations solved."""
    from scipy.linalg import solve_toeplitz

    r = np.array([np.dot(frame[: len(frame) - k], frame[k:]) for k in range(4)])
    a = solve_toeplitz(r[:3], r[1:])
    return r[0] - a @ r[1:]


def expm_rotation(omega):
    """A rotation by scipy.linalg.expm of a skew-symmetric matrix."""
    from scipy.linalg import expm

    K = np.array([[0, -omega[2], omega[1]], [omega[2], 0, -omega[0]], [-omega[1], omega[0], 0]])
    R_ = expm(K)
    return np.sum((R_ @ np.array([1.0, 0.0, 0.0]) - np.array([0.0, 1.0, 0.0])) ** 2)


def cholesky_solves(L_entries):
    from scipy.linalg import cho_factor, cho_solve

    A = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]]) + np.diag(L_entries**2)
    c = cho_factor(A)
    x = cho_solve(c, np.array([1.0, 2.0, 3.0]))
    return x @ x


def errstate_and_nan_to_num(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.sin(x) / x
    ratio = np.where(np.isfinite(ratio), ratio, 1.0)
    return np.sum(ratio**2)


def try_except_in_loss(x):
    try:
        L = np.linalg.cholesky(np.outer(x, x) + np.eye(len(x)))
    except np.linalg.LinAlgError:
        L = np.eye(len(x))
    return np.sum(np.log(np.diag(L)))


def kron_and_outer(a):
    K = np.kron(np.outer(a, a), np.array([[1.0, 0.5], [0.5, 1.0]]))
    return np.trace(K) + np.sum(K**2) / 10


def xlogy_entropy(logits):
    from scipy.special import softmax, xlogy

    p = softmax(logits)
    return -np.sum(xlogy(p, p))


def searchsorted_piecewise(theta):
    """Piecewise-linear interpolation by np.searchsorted into a knot vector."""
    knots = np.array([0.0, 0.3, 0.6, 1.0])
    q = np.array([0.1, 0.45, 0.7, 0.95])
    k = np.clip(np.searchsorted(knots, q) - 1, 0, len(knots) - 2)
    t = (q - knots[k]) / (knots[k + 1] - knots[k])
    return np.sum(((1 - t) * theta[k] + t * theta[k + 1]) ** 2)


def digitize_histogram_loss(x):
    bins = np.array([-1.0, 0.0, 1.0])
    which = np.digitize(x, bins)
    means = np.array([np.mean(x[which == b]) if np.any(which == b) else 0.0 for b in range(4)])
    return np.sum(means**2)


def solve_triangular_whitening(b):
    from scipy.linalg import solve_triangular

    L = np.array([[1.0, 0.0, 0.0], [0.4, 1.2, 0.0], [-0.3, 0.2, 0.9]])
    z = solve_triangular(L, b, lower=True)
    return z @ z


def rfft_power_spectrum(x):
    spectrum = np.fft.rfft(x)
    power = np.abs(spectrum) ** 2
    return np.sum(power[1:] * np.arange(1, len(power)))


LIBRARY_PROGRAMS = [
    (masked_scores_in_place, _n(4, 4)),
    (relu_in_place, _n(4, 3)),
    (segment_sums_by_bincount, _n(6)),
    (unique_inverse_means, _n(6)),
    (take_along_axis_pool, _n(3, 3)),
    (median_and_percentile, _n(6)),
    (polyfit_residual, _n(6)),
    (lstsq_and_pinv, _n(4, 2)),
    (interp_lookup_table, _n(5)),
    (convolve_and_correlate, _n(3)),
    (lfilter_audio, _n(3)),
    (lpc_autocorrelation, SIGNAL[:10].copy()),
    (expm_rotation, np.array([0.3, -0.2, 0.9])),
    (cholesky_solves, _n(3)),
    (errstate_and_nan_to_num, np.array([0.5, 1.0, -0.7])),
    (try_except_in_loss, _n(3)),
    (kron_and_outer, _n(2)),
    (xlogy_entropy, _n(4)),
    (searchsorted_piecewise, _n(4)),
    (digitize_histogram_loss, np.array([-1.5, -0.4, 0.3, 0.7, 1.4, 0.2])),
    (solve_triangular_whitening, _n(3)),
    (rfft_power_spectrum, _n(8)),
]


# --- more science, statistics and economics --------------------------------------------------


def thin_film_reflectance(thickness, wavelengths=np.array([450.0, 550.0, 650.0])):  # noqa: B008
    """Transfer matrices of a two-layer coating (complex arithmetic), the mean reflectance."""
    indices = [1.38, 2.1]
    total = 0.0
    for lam in wavelengths:
        M = np.eye(2, dtype=complex)
        for n, d in zip(indices, thickness):
            delta = 2 * np.pi * n * d / lam
            layer = np.array(
                [[np.cos(delta), 1j * np.sin(delta) / n], [1j * n * np.sin(delta), np.cos(delta)]]
            )
            M = M @ layer
        n0, ns = 1.0, 1.52
        B = M[0, 0] + M[0, 1] * ns
        C = M[1, 0] + M[1, 1] * ns
        r = (n0 * B - C) / (n0 * B + C)
        total += np.abs(r) ** 2
    return total / len(wavelengths)


FREQS = np.array([10.0, 100.0, 1000.0, 1e4])
MEASURED_Z = np.array([50.0 - 1500j, 50.0 - 150j, 52.0 - 10j, 60.0 + 8j])


def ac_impedance_fit(p):
    R_, log_C, log_L = p
    w = 2 * np.pi * FREQS
    Z = R_ + 1 / (1j * w * np.exp(log_C)) + 1j * w * np.exp(log_L)
    return np.sum(np.abs(Z - MEASURED_Z) ** 2) / 1e4


def erlang_c_wait(rate, servers=3, mu=1.0):
    """The mean wait of an M/M/c queue by Erlang's C formula, with a loop of factorials."""
    a = rate / mu
    partial = 0.0
    for k in range(servers):
        partial += a**k / math.factorial(k)
    top = a**servers / math.factorial(servers) * servers / (servers - a)
    p_wait = top / (partial + top)
    return p_wait / (servers * mu - rate)


MATCHES = [(0, 1, 1), (1, 2, 0), (2, 0, 1), (0, 3, 1), (3, 1, 0), (2, 3, 1)]


def bradley_terry(ratings):
    nll = 0.0
    for i, j, i_won in MATCHES:
        p = 1 / (1 + np.exp(-(ratings[i] - ratings[j])))
        nll -= np.log(p) if i_won else np.log(1 - p)
    return nll + 0.1 * np.sum(ratings**2)


RESPONSES = np.array([[1, 0, 1], [1, 1, 1], [0, 0, 1], [1, 0, 0]])


def item_response_2pl(params):
    ability, discrimination, difficulty = params
    logits = discrimination[None, :] * (ability[:, None] - difficulty[None, :])
    return -np.sum(RESPONSES * logits - np.logaddexp(0, logits))


RANKING = np.array([2, 0, 3, 1])


def plackett_luce(scores):
    ordered = scores[RANKING]
    tail = np.log(np.cumsum(np.exp(ordered)[::-1])[::-1])
    return -np.sum(ordered - tail)


def solow_growth(s, alpha=0.33, delta=0.05, n=0.01, years=30):
    k = 1.0
    consumption = 0.0
    for t in range(years):
        y = k**alpha
        consumption += (1 - s) * y / 1.03**t
        k = k + s * y - (delta + n) * k
    return -consumption


def ces_production(p, inputs=np.array([[1.0, 2.0], [2.0, 1.0], [1.5, 1.5]])):  # noqa: B008
    share, rho = p
    out = (share * inputs[:, 0] ** rho + (1 - share) * inputs[:, 1] ** rho) ** (1 / rho)
    return np.sum((out - np.array([1.4, 1.5, 1.5])) ** 2)


def energy_balance_climate(p, years=40):
    """A zero-dimensional energy-balance model with a tanh ice-albedo feedback."""
    heat_capacity, feedback = p
    T = 288.0
    for _ in range(years):
        albedo = 0.3 - 0.1 * np.tanh((T - 265.0) / 10)
        absorbed = 340.0 * (1 - albedo)
        emitted = 240.0 + feedback * (T - 288.0)
        T = T + (absorbed - emitted) / heat_capacity
    return (T - 290.0) ** 2


INFLOW = np.array([1.0, 3.0, 8.0, 5.0, 3.0, 2.0, 1.5, 1.0, 1.0, 1.0])


def nash_cascade(log_k, reservoirs=3):
    k = np.exp(log_k)
    storage = np.zeros(reservoirs)
    outflow = []
    for q_in in INFLOW:
        for r in range(reservoirs):
            q_out = storage[r] / k
            storage[r] = storage[r] + q_in - q_out
            q_in = q_out
        outflow.append(q_in)
    return np.sum((np.array(outflow) - 0.8 * INFLOW) ** 2)


def muskingum_routing(p):
    K, X = p
    dt = 1.0
    denom = 2 * K * (1 - X) + dt
    c0 = (dt - 2 * K * X) / denom
    c1 = (dt + 2 * K * X) / denom
    c2 = (2 * K * (1 - X) - dt) / denom
    out = [INFLOW[0]]
    for t in range(1, len(INFLOW)):
        out.append(c0 * INFLOW[t] + c1 * INFLOW[t - 1] + c2 * out[-1])
    return np.max(out) + np.sum(np.array(out) ** 2) / 100


def leslie_growth_rate(fecundity):
    """The dominant eigenvalue of a Leslie matrix by np.linalg.eig (a real, positive root)."""
    L = np.zeros((3, 3))
    L[0, :] = fecundity
    L[1, 0] = 0.5
    L[2, 1] = 0.7
    eigenvalues = np.linalg.eig(L)[0]
    return np.max(np.real(eigenvalues))


def logistic_harvest(r, K=1.0, h=0.1, steps=30):
    N = 0.2
    yield_total = 0.0
    for _ in range(steps):
        catch = h * N
        N = N + r * N * (1 - N / K) - catch
        yield_total += catch
    return -yield_total


def transit_light_curve(p):
    """A box-shaped transit smoothed by a logistic edge, fitted to flux."""
    t = np.linspace(-1, 1, 15)
    depth, width, t0 = p
    inside = 1 / (1 + np.exp(-(width - np.abs(t - t0)) * 20))
    model = 1 - depth * inside
    observed = 1 - 0.01 * (np.abs(t) < 0.3)
    return np.sum((model - observed) ** 2) * 1e4


def differential_drive(wheel_speeds, dt=0.1):
    x = y = theta = 0.0
    for left, right in wheel_speeds:
        v = (left + right) / 2
        w = (right - left) / 0.5
        x += v * math.cos(theta) * dt
        y += v * math.sin(theta) * dt
        theta += w * dt
    return (x - 0.3) ** 2 + (y - 0.1) ** 2 + theta**2


def goertzel_power(signal, k=3):
    N = len(signal)
    w = 2 * np.pi * k / N
    coeff = 2 * np.cos(w)
    s_prev = s_prev2 = 0.0
    for sample in signal:
        s = sample + coeff * s_prev - s_prev2
        s_prev2 = s_prev
        s_prev = s
    return s_prev2**2 + s_prev**2 - coeff * s_prev * s_prev2


def biquad_by_loops(b):
    a1, a2 = -0.6, 0.2
    x1 = x2 = y1 = y2 = 0.0
    out = np.zeros(len(SIGNAL[:12]))
    for n, x0 in enumerate(SIGNAL[:12]):
        y0 = b[0] * x0 + b[1] * x1 + b[2] * x2 - a1 * y1 - a2 * y2
        x2, x1 = x1, x0
        y2, y1 = y1, y0
        out[n] = y0
    return np.sum(out**2)


def shoelace_area(vertices):
    x, y = vertices[:, 0], vertices[:, 1]
    area = 0.5 * np.abs(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))
    perimeter = np.sum(np.linalg.norm(vertices - np.roll(vertices, 1, axis=0), axis=1))
    return area / perimeter**2


TRIANGLES = np.array([[0, 1, 2], [0, 2, 3], [0, 3, 1], [1, 3, 2]])


def mesh_area_and_normals(vertices):
    a, b, c = vertices[TRIANGLES[:, 0]], vertices[TRIANGLES[:, 1]], vertices[TRIANGLES[:, 2]]
    n = np.cross(b - a, c - a)
    areas = 0.5 * np.linalg.norm(n, axis=1)
    normals = n / (2 * areas[:, None])
    return np.sum(areas) + np.sum(normals[:, 2] ** 2)


def laplacian_smoothing(vertices, lam=0.3):
    neighbours = [[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]]
    v = vertices.copy()
    for _ in range(3):
        new = v.copy()
        for i, nbrs in enumerate(neighbours):
            new[i] = v[i] + lam * (np.mean(v[nbrs], axis=0) - v[i])
        v = new
    return np.sum((v - vertices) ** 2)


def fresnel_reflectance(n2, theta=np.array([0.1, 0.5, 0.9])):  # noqa: B008
    n1 = 1.0
    cos_t = np.sqrt(1 - (n1 / n2 * np.sin(theta)) ** 2)
    rs = (n1 * np.cos(theta) - n2 * cos_t) / (n1 * np.cos(theta) + n2 * cos_t)
    rp = (n1 * cos_t - n2 * np.cos(theta)) / (n1 * cos_t + n2 * np.cos(theta))
    return np.mean((rs**2 + rp**2) / 2)


T_DATA = np.array([0.3, -1.2, 2.5, 0.1, 0.8, -0.4])


def student_t_likelihood(p):
    from scipy import stats

    loc, log_scale, log_df = p
    return -np.sum(stats.t.logpdf(T_DATA, np.exp(log_df), loc=loc, scale=np.exp(log_scale)))


def dirichlet_multinomial(log_alpha, counts=np.array([[3, 1, 0], [2, 2, 1], [0, 4, 2]])):  # noqa: B008
    alpha = np.exp(log_alpha)
    total = 0.0
    for c in counts:
        n = c.sum()
        total += (
            gammaln(alpha.sum())
            - gammaln(n + alpha.sum())
            + np.sum(gammaln(c + alpha) - gammaln(alpha))
        )
    return -total


ANGLES = np.array([0.1, 0.5, -0.3, 0.2, 6.1])


def von_mises_likelihood(p):
    from scipy.special import i0

    mu, log_kappa = p
    kappa = np.exp(log_kappa)
    return -np.sum(kappa * np.cos(ANGLES - mu) - np.log(2 * np.pi * i0(kappa)))


def gaussian_copula(rho, u=np.array([[0.2, 0.3], [0.7, 0.8], [0.5, 0.1], [0.9, 0.95]])):  # noqa: B008
    from scipy.stats import norm

    z = norm.ppf(u)
    det = 1 - rho**2
    quad = (rho**2 * (z[:, 0] ** 2 + z[:, 1] ** 2) - 2 * rho * z[:, 0] * z[:, 1]) / det
    return np.sum(0.5 * np.log(det) + 0.5 * quad)


def elastic_net_coordinate_descent(log_lam, l1_ratio=0.5):
    lam = np.exp(log_lam)
    w = np.zeros(4)
    norms = np.sum(LX**2, axis=0)
    for _ in range(5):
        for j in range(4):
            residual = LY - LX @ w + LX[:, j] * w[j]
            rho = LX[:, j] @ residual
            w[j] = (
                np.sign(rho)
                * max(abs(rho) - lam * l1_ratio, 0.0)
                / (norms[j] + lam * (1 - l1_ratio))
            )
    return np.sum((LX @ w - LY) ** 2)


def huber_irls(delta):
    w = np.zeros(4)
    for _ in range(4):
        r = LY - LX @ w
        weights = np.where(np.abs(r) <= delta, 1.0, delta / np.abs(r))
        W = np.diag(weights)
        w = np.linalg.solve(LX.T @ W @ LX + 1e-3 * np.eye(4), LX.T @ W @ LY)
    return np.sum(w**2)


PCA_DATA = _n(8, 3, scale=1.0) @ np.array([[2.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.0, 0.3, 0.2]])


def pca_reconstruction(scale):
    X = PCA_DATA * scale
    Xc = X - X.mean(axis=0)
    U, s, Vt = np.linalg.svd(Xc, full_matrices=False)
    top = Vt[:2]
    reconstruction = Xc @ top.T @ top
    return np.sum((Xc - reconstruction) ** 2) + s[0]


def procrustes_alignment(A):
    B = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.5]])
    U, _, Vt = np.linalg.svd(A.T @ B)
    R_ = U @ Vt
    return np.sum((A @ R_ - B) ** 2)


def whitening_by_eigh(X):
    C = X.T @ X / len(X) + 0.1 * np.eye(X.shape[1])
    evals, evecs = np.linalg.eigh(C)
    W = evecs @ np.diag(1 / np.sqrt(evals)) @ evecs.T
    Z = X @ W
    return np.sum(Z[:, 0] * Z[:, 1]) + np.sum(np.log(evals))


MORE_SCIENCE_PROGRAMS = [
    (thin_film_reflectance, np.array([100.0, 60.0])),
    (ac_impedance_fit, np.array([50.0, np.log(1e-5), np.log(1e-4)])),
    (erlang_c_wait, 2.2),
    (bradley_terry, _n(4)),
    (item_response_2pl, (_n(4), 1 + 0.2 * _n(3), _n(3))),
    (plackett_luce, _n(4)),
    (solow_growth, 0.25),
    (ces_production, np.array([0.4, 0.5])),
    (energy_balance_climate, np.array([30.0, 2.0])),
    (nash_cascade, np.log(2.0)),
    (muskingum_routing, np.array([2.0, 0.2])),
    (leslie_growth_rate, np.array([0.2, 1.2, 1.5])),
    (logistic_harvest, 0.4),
    (transit_light_curve, np.array([0.012, 0.28, 0.02])),
    (differential_drive, 0.5 + 0.2 * _n(5, 2)),
    (goertzel_power, SIGNAL[:12].copy()),
    (biquad_by_loops, _n(3)),
    (shoelace_area, np.array([[0.0, 0.0], [1.0, 0.1], [1.1, 1.0], [0.1, 0.9]])),
    (
        mesh_area_and_normals,
        np.array([[0.0, 0, 0], [1.0, 0.1, 0], [0.1, 1.0, 0.2], [0.3, 0.2, 1.0]]),
    ),
    (laplacian_smoothing, _n(4, 3, scale=1.0)),
    (fresnel_reflectance, 1.5),
    (student_t_likelihood, np.array([0.2, 0.1, np.log(4.0)])),
    (dirichlet_multinomial, _n(3)),
    (von_mises_likelihood, np.array([0.2, 0.5])),
    (gaussian_copula, 0.4),
    (elastic_net_coordinate_descent, np.log(0.5)),
    (huber_irls, 0.8),
    (pca_reconstruction, 1.2),
    (procrustes_alignment, _n(3, 2, scale=1.0)),
    (whitening_by_eigh, _n(6, 2, scale=1.0)),
]


# --- more student style -------------------------------------------------------------------

LEARNING_RATE = 0.1
history = []


class Layer:
    activation = staticmethod(np.tanh)

    def __init__(self, W, b):
        self.W, self.b = W, b

    def __call__(self, x):
        return self.activation(x @ self.W + self.b)


class ResidualLayer(Layer):
    def __call__(self, x):
        return x + super().__call__(x)


def inheritance_and_super(params):
    W, b = params
    layer = ResidualLayer(W, b)
    return np.sum(layer(np.array([[0.5, -0.3], [0.1, 0.9]])) ** 2)


class Model:
    @classmethod
    def from_vector(cls, theta):
        model = cls()
        model.slope, model.intercept = theta[0], theta[1]
        return model

    def predict(self, x):
        return self.slope * x + self.intercept


def classmethod_constructor(theta):
    m = Model.from_vector(theta)
    return np.mean((m.predict(xs) - ys) ** 2)


def recursive_horner(c, x=0.7):
    def horner(coefficients, x):
        if len(coefficients) == 1:
            return coefficients[0]
        return coefficients[0] + x * horner(coefficients[1:], x)

    return horner(c, x) ** 2


def generator_of_terms(w):
    def terms():
        for k in range(len(w)):
            yield w[k] ** 2 / (k + 1)

    return sum(terms())


def closure_with_nonlocal(w):
    total = 0.0

    def add(v):
        nonlocal total
        total += v

    for wi in w:
        add(wi**2)
    return total


def sorted_with_key(w):
    pairs = sorted(zip(w, [3.0, 1.0, 2.0, 0.5]), key=lambda p: p[1])
    return sum(a * b for a, b in pairs[:2])


def min_max_with_key(w):
    best = max(range(len(w)), key=lambda i: w[i])
    return w[best] ** 2 + min(w) ** 2


def zip_star_transpose(w):
    rows = [[w[0], w[1]], [w[2], w[3]], [w[1], w[2]]]
    cols = list(zip(*rows))
    return sum(sum(c) ** 2 for c in cols)


def dict_get_defaults(w):
    config = {"scale": 2.0}
    scale = config.get("scale", 1.0)
    offset = config.get("offset", 0.5)
    return np.sum((scale * w + offset) ** 2)


def kwargs_config(w):
    def model(x, *, depth=2, **options):
        out = x
        for _ in range(depth):
            out = np.sin(out) * options.get("gain", 1.0)
        return out

    return np.sum(model(w, depth=3, gain=1.5) ** 2)


def vectorized_helper(w):
    step = np.vectorize(lambda v: v**2 if v > 0 else 0.1 * v)
    return np.sum(step(w))


def itertools_product_grid(w):
    import itertools

    total = 0.0
    for i, j in itertools.product(range(len(w)), repeat=2):
        total += w[i] * w[j] * np.exp(-abs(i - j))
    return total


def partial_of_a_loss(w):
    from functools import partial

    def loss(w, X, y):
        return np.mean((X @ w - y) ** 2)

    bound = partial(loss, X=np.stack([xs, np.ones_like(xs)], axis=1), y=ys)
    return bound(w)


def lambda_list_of_features(w):
    features = [lambda x: x, lambda x: x**2, np.sin]
    design = np.stack([f(xs) for f in features], axis=1)
    return np.sum((design @ w - ys) ** 2)


def item_and_float_calls(w):
    loss = np.sum(w**2)
    if loss.item() > 10:
        loss = loss / 10
    return loss * float(np.sign(w[0]))


def round_abs_builtins(w):
    return abs(w[0]) + round(2.7) * w[1] ** 2 + pow(w[2], 3)


def fsum_and_statistics(w):
    import statistics

    return math.fsum([w[0] ** 2, w[1] ** 2]) + statistics.mean([0.5, 1.5]) * w[2]


def global_history_append(w):
    loss = np.sum(np.tanh(w) ** 2)
    history.append(0.0)
    return loss * LEARNING_RATE


def in_place_normalisation(w):
    v = w * 1.0
    v /= np.linalg.norm(v)
    v *= 3
    v -= v.mean()
    return np.sum(v**3)


def np_sum_of_a_list(w):
    parts = [w * 2, np.sin(w), w**2]
    return np.sum(np.sum(parts, axis=0) ** 2)


def norms_of_kinds(w):
    M = w.reshape(2, 2)
    return (
        np.linalg.norm(w, ord=1) + np.linalg.norm(M, "fro") + np.abs(w).max() + np.linalg.norm(M, 2)
    )


def prod_and_cumprod(w):
    return np.prod(1 + w) + np.sum(np.cumprod(w))


def namedtuple_params(p):
    return np.sum((p.gain * xs + p.bias - ys) ** 2)


def tuple_swap_and_unpack(w):
    a, b, *rest = w
    a, b = b, a
    return a * 2 + b**2 + sum(r**3 for r in rest)


def chained_comparisons_and_ternary(w):
    total = 0.0
    for v in w:
        total += v**2 if -0.5 < v < 0.5 else abs(v)
    return total


def early_return(w):
    if np.sum(w) > 100:
        return 0.0
    s = 0.0
    for v in w:
        if v > 1.5:
            return s + v
        s += v**2
    return s


class Affine(NamedTuple):
    gain: float
    bias: float


MORE_STUDENT_PROGRAMS = [
    (inheritance_and_super, (_n(2, 2), _n(2))),
    (classmethod_constructor, _n(2)),
    (recursive_horner, _n(4)),
    (generator_of_terms, _n(4)),
    (closure_with_nonlocal, _n(3)),
    (sorted_with_key, _n(4)),
    (min_max_with_key, _n(4)),
    (zip_star_transpose, _n(4)),
    (dict_get_defaults, _n(3)),
    (kwargs_config, _n(3)),
    (vectorized_helper, _n(4)),
    (itertools_product_grid, _n(3)),
    (partial_of_a_loss, _n(2)),
    (lambda_list_of_features, _n(3)),
    (item_and_float_calls, _n(3)),
    (round_abs_builtins, _n(3)),
    (fsum_and_statistics, _n(3)),
    (global_history_append, _n(3)),
    (in_place_normalisation, _n(4)),
    (np_sum_of_a_list, _n(3)),
    (norms_of_kinds, _n(4)),
    (prod_and_cumprod, _n(4)),
    (namedtuple_params, Affine(0.4, -0.2)),
    (tuple_swap_and_unpack, _n(5)),
    (chained_comparisons_and_ternary, np.array([0.2, -0.9, 0.4, 1.3])),
    (early_return, np.array([0.2, -0.9, 1.8, 0.3])),
]


# --- numerical methods written by hand, in place ----------------------------------------------


def thomas(d):
    n = len(d)
    a = np.full(n, -1.0)
    b = np.full(n, 2.5)
    c = np.full(n, -1.0)
    cp = np.zeros(n)
    dp = np.zeros(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.zeros(n)
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return np.sum(x**2)


def gauss_seidel(b):
    A = np.array([[4.0, 1, 0], [1, 4, 1], [0, 1, 4]])
    x = np.zeros(3)
    for _ in range(6):
        for i in range(3):
            s = b[i] - A[i, :i] @ x[:i] - A[i, i + 1 :] @ x[i + 1 :]
            x[i] = s / A[i, i]
    return np.sum(x**3)


def lu_by_hand(v):
    A = np.array([[4.0, 1, 2], [1, 3, 0.5], [2, 0.5, 5]]) + np.diag(v)
    n = 3
    L = np.eye(n)
    U = A.copy()
    for k in range(n):
        for i in range(k + 1, n):
            L[i, k] = U[i, k] / U[k, k]
            U[i, k:] -= L[i, k] * U[k, k:]
    return np.prod(np.diag(U)) + np.sum(L)


def cholesky_by_hand(v):
    A = np.array([[4.0, 1, 2], [1, 3, 0.5], [2, 0.5, 5]]) + np.diag(v**2)
    n = 3
    L = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j] - np.dot(L[i, :j], L[j, :j])
            if i == j:
                L[i, j] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    return np.sum(np.log(np.diag(L)))


def gram_schmidt(V):
    Q = V.copy()
    for j in range(Q.shape[1]):
        for k in range(j):
            Q[:, j] -= (Q[:, k] @ V[:, j]) * Q[:, k]
        Q[:, j] /= np.linalg.norm(Q[:, j])
    return np.sum(Q[:, -1] * np.arange(Q.shape[0]))


def power_iteration(v):
    A = np.array([[2.0, 1, 0], [1, 3, 1], [0, 1, 4]]) + np.outer(v, v)
    x = np.ones(3)
    for _ in range(30):
        x = A @ x
        x /= np.linalg.norm(x)
    return x @ A @ x


def bubble_sort_weighted(w):
    a = w.copy()
    n = len(a)
    for i in range(n):
        for j in range(n - 1 - i):
            if a[j] > a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
    return np.sum(a * np.arange(1, n + 1))


def insertion_sort(w):
    a = list(w)
    for i in range(1, len(a)):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key
    return sum(k * v for k, v in enumerate(a))


def prefix_by_hand(w):
    s = w.copy()
    for i in range(1, len(s)):
        s[i] += s[i - 1]
    p = w.copy()
    for i in range(1, len(p)):
        p[i] *= p[i - 1]
    return np.sum(s**2) + np.sum(p)


def jacobi_heat_in_place(u0):
    u = u0.copy()
    for _ in range(5):
        old = u.copy()
        u[1:-1] = 0.5 * (old[:-2] + old[2:])
    return np.sum(u**2)


def swap_rows_pivoting(v):
    A = np.array([[0.1, 2.0, 1.0], [3.0, 1.0, 0.5], [1.0, 0.2, 4.0]]) + np.diag(v)
    b = np.array([1.0, 2.0, 3.0])
    n = 3
    for k in range(n):
        p = k + np.argmax(np.abs(A[k:, k]))
        A[[k, p]] = A[[p, k]]
        b[[k, p]] = b[[p, k]]
        for i in range(k + 1, n):
            f = A[i, k] / A[k, k]
            A[i, k:] = A[i, k:] - f * A[k, k:]
            b[i] = b[i] - f * b[k]
    x = np.zeros(n)
    for i in range(n - 1, -1, -1):
        x[i] = (b[i] - A[i, i + 1 :] @ x[i + 1 :]) / A[i, i]
    return np.sum(x**2)


def horner_in_loop(c):
    xs = np.linspace(0, 1, 4)
    out = np.empty_like(xs)
    for k, x in enumerate(xs):
        acc = c[-1]
        for coeff in c[-2::-1]:
            acc = acc * x + coeff
        out[k] = acc
    return np.sum(out**2)


IN_PLACE_PROGRAMS = [
    (thomas, _n(5)),
    (gauss_seidel, _n(3)),
    (lu_by_hand, np.abs(_n(3))),
    (cholesky_by_hand, _n(3)),
    (gram_schmidt, _n(4, 3, scale=1.0)),
    (power_iteration, _n(3)),
    (bubble_sort_weighted, _n(5)),
    (insertion_sort, _n(5)),
    (prefix_by_hand, _n(5)),
    (jacobi_heat_in_place, _n(6)),
    (swap_rows_pivoting, np.abs(_n(3))),
    (horner_in_loop, _n(4)),
]

PROGRAMS = [
    *LIBRARY_PROGRAMS,
    *MORE_SCIENCE_PROGRAMS,
    *STUDENT_PROGRAMS,
    *MORE_STUDENT_PROGRAMS,
    *IN_PLACE_PROGRAMS,
]

REFUSED = {
    "thomas": S2S_HVP,
    "gauss_seidel": S2S_HVP,
    "lu_by_hand": S2S_HVP,
    "cholesky_by_hand": S2S_HVP,
    "gram_schmidt": S2S_HVP,
    "bubble_sort_weighted": S2S_HVP,
    "prefix_by_hand": S2S_HVP,
    "swap_rows_pivoting": S2S_HVP,
    "muskingum_routing": S2S_HVP,
    "leslie_growth_rate": S2S_HVP,
    "laplacian_smoothing": S2S_HVP,
    "string_keys_and_formatting": S2S_HVP,
    "polynomial_class": BY_THE_TAPE,
    "class_with_cached_hidden": BY_THE_TAPE,
    "accumulator_object": BY_THE_TAPE,
    "inheritance_and_super": BY_THE_TAPE,
    "classmethod_constructor": BY_THE_TAPE,
    "generator_of_terms": BY_THE_TAPE,
    "closure_with_nonlocal": BY_THE_TAPE,
    "sorted_with_key": BY_THE_TAPE,
    "min_max_with_key": BY_THE_TAPE,
    "lpc_autocorrelation": EVERYWHERE,
    "vectorized_helper": EVERYWHERE,
    "item_and_float_calls": ON_THE_TAPE,
    "norms_of_kinds": NO_SECOND,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(f, x, mode, capsys):
    _check_program(f, x, mode, REFUSED.get(f.__name__, frozenset()))
