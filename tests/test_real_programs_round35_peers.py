"""Programs written the way users write them, round 35: peers' example programs told again in
plain NumPy from their descriptions (a neural net on toy data, a mixture density network,
black-box variational inference, a fluid simulation, Hamiltonian dynamics, the Rosenbrock
and Himmelblau suite of test functions), and everyday code shapes: helpers calling helpers,
tuple unpacking, early returns, while loops with convergence tests, dict and list
parameters, buffers filled in loops, recursion and generators. Each is checked in every
mode as round 32 does (``test_real_programs_round32.py``).
"""

import math
from functools import reduce

import numpy as np
import pytest
from test_real_programs_round32 import BY_THE_TAPE, MODES, S2S_HVP, S2S_JVP, _check_program

R = np.random.default_rng(3535_3)


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


# --- the optimisation test suite ------------------------------------------------------------


def rosenbrock_nd(x):
    """The n-dimensional Rosenbrock function with slices."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def himmelblau(p):
    x, y = p
    return (x**2 + y - 11) ** 2 + (x + y**2 - 7) ** 2


def beale(p):
    x, y = p[0], p[1]
    return (1.5 - x + x * y) ** 2 + (2.25 - x + x * y**2) ** 2 + (2.625 - x + x * y**3) ** 2


def rastrigin(x, a=10.0):
    return a * len(x) + np.sum(x**2 - a * np.cos(2 * math.pi * x))


def ackley(x):
    n = len(x)
    s1 = np.sqrt(np.sum(x**2) / n)
    s2 = np.sum(np.cos(2 * np.pi * x)) / n
    return -20.0 * np.exp(-0.2 * s1) - np.exp(s2) + 20.0 + np.e


def styblinski_tang(x):
    return 0.5 * np.sum(x**4 - 16 * x**2 + 5 * x)


def booth_and_matyas(p):
    """Two classic functions summed, read by tuple unpacking of an array."""
    x, y = p
    booth = (x + 2 * y - 7) ** 2 + (2 * x + y - 5) ** 2
    matyas = 0.26 * (x**2 + y**2) - 0.48 * x * y
    return booth + matyas


def gradient_descent_unrolled(p0):
    """A few steps of hand-written gradient descent on Himmelblau: the final value, as
    a function of the start point (differentiating through the optimiser)."""
    x, y = p0[0], p0[1]
    lr = 0.01
    for _ in range(5):
        gx = 4 * x * (x**2 + y - 11) + 2 * (x + y**2 - 7)
        gy = 2 * (x**2 + y - 11) + 4 * y * (x + y**2 - 7)
        x, y = x - lr * gx, y - lr * gy
    return (x**2 + y - 11) ** 2 + (x + y**2 - 7) ** 2


def newton_rosenbrock_2d(p):
    """Two damped Newton steps on the 2-D Rosenbrock with the Hessian written out."""
    x = p.copy()
    for _ in range(2):
        a, b = x[0], x[1]
        g = np.array([-400 * a * (b - a**2) - 2 * (1 - a), 200 * (b - a**2)])
        H = np.array([[1200 * a**2 - 400 * b + 2, -400 * a], [-400 * a, 200.0]])
        x = x - 0.5 * np.linalg.solve(H + 10 * np.eye(2), g)
    return 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2


# --- peers' examples ---------------------------------------------------------------------------

TOY_X = np.linspace(-2, 2, 8)[:, None]
TOY_Y = np.cos(TOY_X[:, 0]) + 0.1 * _n(8, scale=1.0)


def init_layers(scales):
    return [(s * np.ones((a, b)), np.zeros(b)) for s, (a, b) in zip(scales, [(1, 4), (4, 1)])]


def toy_regression_net(flat):
    """A net on toy 1-D data with the parameters unflattened from one vector by a
    helper returning a list of pairs, the log-likelihood under Gaussian noise."""

    def unflatten(v):
        shapes = [(1, 4), (4,), (4, 1), (1,)]
        out, start = [], 0
        for shape in shapes:
            size = int(np.prod(shape))
            out.append(v[start : start + size].reshape(shape))
            start += size
        return [(out[0], out[1]), (out[2], out[3])]

    h = TOY_X
    layers = unflatten(flat)
    for i, (W, b) in enumerate(layers):
        h = h @ W + b
        if i < len(layers) - 1:
            h = np.tanh(h)
    log_noise = -1.0
    return -np.sum(-0.5 * (h[:, 0] - TOY_Y) ** 2 / np.exp(2 * log_noise) - log_noise)


def mixture_density_network(params):
    """A mixture density network: a hidden layer outputs mixture weights, means and
    log-scales of two Gaussians per input; the negative log-likelihood by logsumexp."""
    W1, W2 = params
    h = np.tanh(TOY_X @ W1)
    out = h @ W2
    logits, means, log_s = out[:, :2], out[:, 2:4], out[:, 4:6]
    log_w = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    y = TOY_Y[:, None]
    log_comp = -0.5 * ((y - means) / np.exp(log_s)) ** 2 - log_s - 0.5 * np.log(2 * np.pi)
    joint = log_w + log_comp
    m = np.max(joint, axis=1, keepdims=True)
    return -np.sum(m[:, 0] + np.log(np.sum(np.exp(joint - m), axis=1)))


EPS_SAMPLES = _n(6, 2, scale=1.0)


def log_density_banana(z):
    return -0.5 * z[:, 0] ** 2 - 0.5 * (z[:, 1] - 0.5 * z[:, 0] ** 2) ** 2


def black_box_vi(params):
    """Black-box variational inference by the reparameterisation trick with fixed draws:
    a diagonal Gaussian's ELBO against an unnormalised banana density."""
    mean, log_std = params[:2], params[2:]
    samples = mean + np.exp(log_std) * EPS_SAMPLES
    entropy = np.sum(log_std) + 0.5 * len(mean) * (1 + np.log(2 * np.pi))
    return -(np.mean(log_density_banana(samples)) + entropy)


def fluid_advection_semi_lagrangian(vx):
    """A 1-D semi-Lagrangian advection step (the "stable fluids" idea): each cell traces
    back along the velocity and interpolates linearly between neighbours, periodic."""
    n = 8
    density = np.exp(-((np.arange(n) - 3.0) ** 2) / 2.0)
    for _ in range(3):
        new = np.zeros(n)
        for i in range(n):
            x = i - vx[i]
            i0 = int(np.floor(x))
            frac = x - i0
            new[i] = (1 - frac) * density[i0 % n] + frac * density[(i0 + 1) % n]
        density = new
    return np.sum(density * np.arange(n)) / np.sum(density)


def fluid_diffusion_gauss_seidel(visc):
    """Implicit diffusion solved by Gauss-Seidel sweeps in place, as stable fluids does."""
    n = 6
    x0 = np.array([0.0, 0.5, 1.0, 0.8, 0.2, 0.0])
    x = x0.copy()
    a = visc[0] * 4.0
    for _ in range(6):
        for i in range(1, n - 1):
            x[i] = (x0[i] + a * (x[i - 1] + x[i + 1])) / (1 + 2 * a)
    return np.sum(x**2) + visc[1] * x[2]


def hamiltonian_dynamics_leapfrog(q0):
    """Hamiltonian Monte Carlo's trajectory: the potential's gradient written by hand,
    leapfrog steps, and the Hamiltonian's change (the acceptance term)."""
    Sigma_inv = np.array([[2.0, 0.6], [0.6, 1.0]])

    def potential(q):
        return 0.5 * q @ Sigma_inv @ q

    def grad_potential(q):
        return Sigma_inv @ q

    p = np.array([0.5, -0.3])
    q = q0
    h0 = potential(q) + 0.5 * p @ p
    eps = 0.2
    p = p - 0.5 * eps * grad_potential(q)
    for step in range(4):
        q = q + eps * p
        if step < 3:
            p = p - eps * grad_potential(q)
    p = p - 0.5 * eps * grad_potential(q)
    return potential(q) + 0.5 * p @ p - h0 + np.sum(q**2)


def hamiltonian_pendulum_energy_drift(params):
    """A pendulum Hamiltonian H = p^2/2 - k cos q integrated by symplectic Euler with the
    trajectory recorded in lists, then turned into arrays."""
    k, q = params[0], params[1]
    p = 0.0
    qs, ps = [], []
    for _ in range(8):
        p = p - 0.2 * k * np.sin(q)
        q = q + 0.2 * p
        qs.append(q)
        ps.append(p)
    qs, ps = np.array(qs), np.array(ps)
    energy = 0.5 * ps**2 - k * np.cos(qs)
    return np.var(energy) * 100 + qs[-1]


# --- everyday code shapes --------------------------------------------------------------------


def early_return_piecewise(x):
    """A helper with early returns chosen on values, used in a loop over entries."""

    def penalty(v):
        if v > 1.0:
            return (v - 1.0) ** 2
        if v < -1.0:
            return (v + 1.0) ** 2 * 2
        return 0.1 * v**2

    return sum(penalty(v) for v in x) + np.sum(x**3) * 0.01


def while_newton_sqrt(a):
    """Square roots by Newton's iteration with a convergence test, vectorised."""
    y = np.ones_like(a)
    it = 0
    while np.max(np.abs(y * y - a)) > 1e-12 and it < 50:
        y = 0.5 * (y + a / y)
        it += 1
    return np.sum(y * np.arange(1, len(a) + 1))


def bisection_root_then_use(c):
    """A root found by bisection (piecewise constant in c, steps far below the differences'
    step), then polished by two Newton steps, whose map has zero first and second
    derivatives at the root: the derivatives are the implicit function's to second order."""
    lo, hi = 0.0, 2.0
    f = lambda x: x**3 + c[0] * x - 1.0  # noqa: E731
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0:
            hi = mid
        else:
            lo = mid
    root = 0.5 * (lo + hi)
    for _ in range(2):
        root = root - f(root) / (3 * root**2 + c[0])
    return root**2 + c[1] * root


def fixed_point_with_tolerance(theta):
    """x = cos(theta x) iterated to tolerance, an implicit function differentiated by
    unrolling all iterations taken."""
    x = 0.5
    for _ in range(200):
        new = np.cos(theta[0] * x) * theta[1]
        if abs(new - x) < 1e-13:
            x = new
            break
        x = new
    return x


def dict_of_arrays_params(params):
    """Parameters in a dict iterated with .items(), a regulariser on every entry, and a
    model reading entries by key."""
    reg = 0.0
    for name, value in params.items():
        if name.startswith("W"):
            reg += np.sum(value**2)
    h = np.tanh(TOY_X @ params["W_in"] + params["bias"])
    pred = h @ params["W_out"]
    return np.mean((pred[:, 0] - TOY_Y) ** 2) + 0.01 * reg


def nested_helpers_chain(x):
    """Helpers calling helpers with keyword arguments and defaults."""

    def scale(v, by=2.0):
        return v * by

    def shift_and_scale(v, shift=0.5, **kw):
        return scale(v + shift, **kw)

    def normalise(v):
        centred = v - np.mean(v)
        return centred / np.sqrt(np.mean(centred**2) + 1e-8)

    return np.sum(normalise(shift_and_scale(x, shift=0.1, by=3.0)) * np.arange(len(x)))


def tuple_swaps_and_stars(v):
    """Tuple packing, swapping, and starred unpacking of a vector's entries."""
    first, *middle, last = v
    a, b = first, last
    for m in middle:
        a, b = b, a * m + b
    return a * b + sum(middle)


def recursion_on_halves(x):
    """A recursive pairwise reduction (a tree of soft maxima) on halves of the vector."""

    def tree(v):
        if len(v) == 1:
            return v[0]
        half = len(v) // 2
        left, right = tree(v[:half]), tree(v[half:])
        return np.log(np.exp(left) + np.exp(right))

    return tree(x)


def generator_of_windows(x):
    """A generator yielding windows, consumed by a comprehension."""

    def windows(v, size):
        for start in range(len(v) - size + 1):
            yield v[start : start + size]

    return sum(np.prod(w) for w in windows(x, 3)) + np.sum(x**2)


def reduce_and_lambda_composition(x):
    """functools.reduce over a list of lambdas applied in sequence."""
    layers = [lambda v: np.sin(v), lambda v: v * 1.5 + 0.1, lambda v: np.tanh(v) ** 2]
    out = reduce(lambda acc, f: f(acc), layers, x)
    return np.sum(out)


def in_place_buffer_stencil(u):
    """A smoothing stencil written into an output buffer element by element, then
    accumulated with +=."""
    out = np.zeros_like(u)
    out[0] = u[0]
    out[-1] = u[-1]
    for i in range(1, len(u) - 1):
        out[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1]
    out += 0.1 * u**2
    return np.sum(out**2)


def cumulative_product_loop(r):
    """Wealth compounded in a loop into a preallocated buffer, a drawdown penalty with
    np.maximum.accumulate."""
    wealth = np.empty(len(r) + 1)
    wealth[0] = 1.0
    for t in range(len(r)):
        wealth[t + 1] = wealth[t] * (1.0 + 0.1 * np.tanh(r[t]))
    peak = np.maximum.accumulate(wealth)
    return -np.log(wealth[-1]) + np.sum((peak - wealth) ** 2)


def enumerate_zip_weights(w):
    """enumerate over zip of weights and a list of data chunks, a running average."""
    chunks = [TOY_X[:3, 0], TOY_X[3:6, 0], TOY_X[6:, 0]]
    avg = 0.0
    for k, (weight, chunk) in enumerate(zip(w, chunks), start=1):
        avg += (np.sum(weight * chunk**2) - avg) / k
    return avg**2


def string_keyed_dispatch(x):
    """Activation functions chosen from a dict by name, applied in a loop of names."""
    acts = {"tanh": np.tanh, "sin": np.sin, "softplus": lambda v: np.log1p(np.exp(v))}
    h = x
    for name in ["tanh", "softplus", "sin"]:
        h = acts[name](h * 1.2)
    return np.sum(h**2)


def class_with_methods(w):
    """A small model class created inside the function, its methods called in a loop."""

    class Polynomial:
        def __init__(self, coeffs):
            self.coeffs = coeffs

        def __call__(self, t):
            out = 0.0
            for c in self.coeffs[::-1]:
                out = out * t + c
            return out

    poly = Polynomial(w)
    ts = np.linspace(-1, 1, 5)
    return np.sum((poly(ts) - np.exp(ts)) ** 2)


def conditional_accumulate_mask(x):
    """A loop accumulating only the entries passing a test on their values, the count
    used to normalise."""
    total, count = 0.0, 0
    for v in x:
        if v > 0:
            total = total + v**2
            count += 1
    return total / max(count, 1) + np.mean(x)


def list_of_arrays_concat(params):
    """Per-group arrays in a list, each transformed and concatenated, then standardised."""
    groups = [np.tanh(p) * (i + 1) for i, p in enumerate(params)]
    allv = np.concatenate(groups)
    z = (allv - allv.mean()) / allv.std()
    return np.sum(z**3)


def numerically_stable_logsumexp_loop(x):
    """An online (streaming) logsumexp written with a running maximum."""
    m, s = -np.inf, 0.0
    for v in x:
        if v > m:
            s = s * np.exp(m - v) + 1.0
            m = v
        else:
            s = s + np.exp(v - m)
    return m + np.log(s)


def matrix_power_iteration(A_flat):
    """The largest eigenvalue by power iteration with normalisation and a Rayleigh
    quotient, the loop stopping on the change."""
    A = A_flat.reshape(3, 3)
    A = A @ A.T + np.eye(3)
    v = np.ones(3) / np.sqrt(3)
    lam = 0.0
    for _ in range(200):
        w = A @ v
        v = w / np.linalg.norm(w)
        new = v @ A @ v
        if abs(new - lam) < 1e-14:
            break
        lam = new
    return v @ A @ v


def spline_like_interpolation(y):
    """Piecewise-linear interpolation at fixed points by searchsorted on the knots and
    a weighted sum of neighbours."""
    knots = np.linspace(0.0, 1.0, len(y))
    t = np.array([0.1, 0.35, 0.5, 0.8, 0.95])
    idx = np.clip(np.searchsorted(knots, t) - 1, 0, len(y) - 2)
    frac = (t - knots[idx]) / (knots[idx + 1] - knots[idx])
    values = (1 - frac) * y[idx] + frac * y[idx + 1]
    return np.sum(values**2) + np.sum(np.diff(y) ** 2)


PROGRAMS = [
    (rosenbrock_nd, np.array([-0.5, 0.8, 1.2, 0.3])),
    (himmelblau, np.array([2.5, 1.5])),
    (beale, np.array([1.2, 0.3])),
    (rastrigin, np.array([0.3, -0.2, 0.6])),
    (ackley, np.array([0.3, -0.6])),
    (styblinski_tang, np.array([-2.0, 1.5, 0.3])),
    (booth_and_matyas, np.array([0.7, 2.2])),
    (gradient_descent_unrolled, np.array([2.5, 1.5])),
    (newton_rosenbrock_2d, np.array([-0.3, 0.6])),
    (toy_regression_net, _n(13)),
    (mixture_density_network, (_n(1, 4), _n(4, 6))),
    (black_box_vi, np.array([0.2, -0.1, -0.3, -0.5])),
    (fluid_advection_semi_lagrangian, 0.3 + 0.2 * R.random(8)),
    (fluid_diffusion_gauss_seidel, np.array([0.3, 0.5])),
    (hamiltonian_dynamics_leapfrog, np.array([0.8, -0.4])),
    (hamiltonian_pendulum_energy_drift, np.array([1.2, 0.9])),
    (early_return_piecewise, np.array([1.4, -0.3, 0.6, -1.6, 0.2])),
    (while_newton_sqrt, np.array([0.5, 2.0, 3.5])),
    (bisection_root_then_use, np.array([0.8, 0.4])),
    (fixed_point_with_tolerance, np.array([1.1, 0.9])),
    (dict_of_arrays_params, {"W_in": _n(1, 3), "bias": _n(3), "W_out": _n(3, 1)}),
    (nested_helpers_chain, _n(5)),
    (tuple_swaps_and_stars, _n(5)),
    (recursion_on_halves, _n(4)),
    (generator_of_windows, _n(5)),
    (reduce_and_lambda_composition, _n(4)),
    (in_place_buffer_stencil, _n(6)),
    (cumulative_product_loop, np.array([0.5, -0.8, 0.3, 1.0, -1.2])),
    (enumerate_zip_weights, np.array([0.5, 1.2, 0.8])),
    (string_keyed_dispatch, _n(4)),
    (class_with_methods, _n(4)),
    (conditional_accumulate_mask, np.array([0.5, -0.3, 1.2, -0.8, 0.1])),
    (list_of_arrays_concat, [_n(2), _n(3)]),
    (numerically_stable_logsumexp_loop, np.array([0.3, 1.2, -0.5, 2.0, 0.9])),
    (matrix_power_iteration, _n(9)),
    (spline_like_interpolation, _n(5)),
]

# what s2s refuses, naming the program's line (auto tapes each): a lambda called in a
# branch's test, a generator function defined inside (auto had refused it too, naming the
# generated file), a class defined inside, in forward mode; forward mode over a gradient
# whose save stack holds reads of a buffer filled in a loop
REFUSED = {
    "bisection_root_then_use": BY_THE_TAPE,
    "generator_of_windows": BY_THE_TAPE,
    "class_with_methods": S2S_JVP | S2S_HVP,
    "fluid_advection_semi_lagrangian": S2S_HVP,
    "cumulative_product_loop": S2S_HVP,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(f, x, mode):
    _check_program(f, x, mode, REFUSED.get(f.__name__, frozenset()))
