"""Programs written the way users write them, round 34, continued: the habits of everyday
code in new settings (helpers calling helpers, ``for W, b in params[:-1]``, dicts of
parameters, classes for layers, ``np.zeros`` then fill, early returns, while loops with
tolerances, ``math`` mixed with ``np``, ``enumerate``/``zip``, comprehensions, f-string
logging); checked in every mode as round 32 does (``test_real_programs_round32.py``).
"""

import logging
import math

import numpy as np
import pytest
from test_real_programs_round32 import BY_THE_TAPE, MODES, S2S_HVP, _check_program

R = np.random.default_rng(3437)
LOG = logging.getLogger("round34")


def _n(*shape, scale=0.5):
    return R.normal(size=shape) * scale


XS = R.normal(size=(5, 3))
YS = np.array([0.4, -0.2, 1.0, 0.1, -0.7])


def mlp_all_but_last(params):
    """Hidden layers by ``for W, b in params[:-1]``, the last one unpacked after the loop,
    progress logged with an f-string."""
    h = XS
    for depth, (W, b) in enumerate(params[:-1]):
        h = np.tanh(h @ W + b)
        LOG.debug(f"layer {depth}: mean activation {np.mean(h):.3f}")
    W_out, b_out = params[-1]
    pred = (h @ W_out + b_out).ravel()
    return np.mean((pred - YS) ** 2)


def dict_params_with_defaults(params):
    """A dict of parameters read with .get and defaults, a dropout-free residual."""
    scale = params.get("scale", 1.0)
    h = np.tanh(XS @ params["W"])
    if "skip" in params:
        h = h + XS @ params["skip"]
    return np.mean((scale * h.sum(axis=1) - YS) ** 2)


class Dense:
    """A dense layer that knows its activation by name."""

    def __init__(self, W, b, activation="tanh"):
        self.W, self.b, self.activation = W, b, activation

    def __call__(self, x):
        z = x @ self.W + self.b
        if self.activation == "tanh":
            return np.tanh(z)
        if self.activation == "softplus":
            return np.logaddexp(0.0, z)
        return z


def layers_as_objects(params):
    """A network of Dense objects built from a list of weight pairs each call."""
    acts = ["tanh", "softplus", "linear"]
    net = [Dense(W, b, a) for (W, b), a in zip(params, acts)]
    h = XS
    for layer in net:
        h = layer(h)
    return np.mean((h[:, 0] - YS) ** 2)


def zeros_then_fill_features(w):
    """Polynomial features filled column by column into np.zeros, then least squares."""
    x = XS[:, 0]
    features = np.zeros((len(x), 4))
    for p in range(4):
        features[:, p] = x**p
    return np.sum((features @ w - YS) ** 2)


def early_return_on_small_loss(w):
    """A loss that returns early when the data term is already small."""
    data = np.mean((XS @ w - YS) ** 2)
    if data < 1e-3:
        return data
    penalty = 0.1 * np.sum(w**2)
    if penalty > 100.0:
        return penalty
    return data + penalty


def newton_sqrt_while_tolerance(a):
    """Square roots by Newton's method until the change is small, then used in a norm."""
    x = np.ones_like(a)
    change = 1.0
    iterations = 0
    while change > 1e-12 and iterations < 50:
        new = 0.5 * (x + a / x)
        change = float(np.max(np.abs(new - x)))
        x = new
        iterations += 1
    return np.sum(x * a)


def math_and_numpy_mixed(theta):
    """math for the scalars, np for the arrays: a von Mises-like score."""
    kappa = math.exp(0.5)
    norm_const = 2 * math.pi * math.cosh(kappa) / math.e
    angles = np.array([0.1, 1.2, -0.4, 2.0])
    return -np.sum(kappa * np.cos(angles - theta[0])) + np.log(norm_const) * theta[1] ** 2


def zip_enumerate_weighted(w):
    """A weighted loss over zipped inputs and targets with enumerate for the weight."""
    total = 0.0
    for i, (x, y) in enumerate(zip(XS, YS)):
        weight = 1.0 / (1 + i)
        total += weight * (np.tanh(x @ w) - y) ** 2
    return total


def comprehension_features(w):
    """Features from a list comprehension over functions, stacked into columns."""
    basis = [np.sin, np.cos, np.tanh, lambda v: v**2]
    x = XS[:, 1]
    F = np.stack([f(x) for f in basis], axis=1)
    return np.sum((F @ w - YS) ** 2) + sum(wi**2 for wi in w)


def helpers_calling_helpers(params):
    """A loss built from small helpers calling one another with keywords."""

    def affine(x, W, b=0.0):
        return x @ W + b

    def activation(z, kind="tanh"):
        return np.tanh(z) if kind == "tanh" else np.maximum(z, 0.0)

    def block(x, W, b):
        return activation(affine(x, W, b=b), kind="tanh")

    def head(x):
        return affine(block(x, params["W1"], params["b1"]), params["W2"])[:, 0]

    return np.mean((head(XS) - YS) ** 2)


def tuple_unpacking_state(params):
    """A state carried as a tuple and unpacked each step (position, velocity, time)."""
    k, c = params
    state = (1.0, 0.0, 0.0)
    for _ in range(6):
        x, v, t = state
        a = -k * x - c * v
        state = (x + 0.1 * v, v + 0.1 * a, t + 0.1)
    x, v, _t = state
    return x**2 + 0.5 * v**2


def in_place_buffer_moving_average(signal):
    """An exponential moving average written into a preallocated output buffer."""
    out = np.empty_like(signal)
    out[0] = signal[0]
    for t in range(1, len(signal)):
        out[t] = 0.7 * out[t - 1] + 0.3 * signal[t]
    return np.sum((out - np.linspace(0.0, 1.0, len(signal))) ** 2)


def cumulative_lists_then_array(rates):
    """Values appended to a list in a loop, converted once with np.array."""
    balance = 1.0
    history = []
    for r in rates:
        balance = balance * (1 + r) - 0.01
        history.append(balance)
    history = np.array(history)
    return np.std(history) + history[-1]


def while_bisection_fixed_steps(params):
    """Bisection for a root of a monotone function, with the derivative of the result by
    the final linear interpolation (the bracket's choices fixed)."""
    a, b = params
    lo, hi = 0.0, 2.0
    steps = 0
    while hi - lo > 1e-3 and steps < 30:
        mid = 0.5 * (lo + hi)
        if mid**3 + a * mid - b > 0:
            hi = mid
        else:
            lo = mid
        steps += 1
    f_lo, f_hi = lo**3 + a * lo - b, hi**3 + a * hi - b
    return (lo * f_hi - hi * f_lo) / (f_hi - f_lo)


def nested_dict_of_layers(params):
    """Parameters as a nested dict ({'encoder': {...}, 'decoder': {...}}), an autoencoder."""
    enc, dec = params["encoder"], params["decoder"]
    z = np.tanh(XS @ enc["W"] + enc["b"])
    recon = z @ dec["W"] + dec["b"]
    return np.mean(np.sum((recon - XS) ** 2, axis=1))


def named_slices_of_a_vector(theta):
    """A flat parameter vector sliced into named pieces by a dict of slices."""
    layout = {"w": slice(0, 3), "b": slice(3, 4), "log_noise": slice(4, 5)}
    w, b = theta[layout["w"]], theta[layout["b"]][0]
    noise = np.exp(theta[layout["log_noise"]][0])
    r = XS @ w + b - YS
    return 0.5 * np.sum(r**2) / noise**2 + len(YS) * np.log(noise)


def matrix_filled_by_double_loop(params):
    """A kernel matrix filled entry by entry with a double loop, then a quadratic form."""
    length, amp = np.exp(params)
    n = 4
    K = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            d = XS[i, 0] - XS[j, 0]
            K[i, j] = amp * math.exp(0) * np.exp(-0.5 * d**2 / length**2)
    K = K + 0.1 * np.eye(n)
    return YS[:n] @ np.linalg.solve(K, YS[:n]) + np.linalg.slogdet(K)[1]


def class_with_parameters_property(w):
    """A model class with a property computing derived weights and a static helper."""

    class Ridge:
        def __init__(self, w, alpha=0.1):
            self.w, self.alpha = w, alpha

        @property
        def penalty(self):
            return self.alpha * np.sum(self.w**2)

        @staticmethod
        def mse(a, b):
            return np.mean((a - b) ** 2)

        def loss(self, X, y):
            return self.mse(X @ self.w, y) + self.penalty

    return Ridge(w).loss(XS, YS)


def gradient_clipping_by_norm(w):
    """A hand-written gradient step whose step is clipped by its norm (a smooth scale)."""
    residual = XS @ w - YS
    g = XS.T @ residual / len(YS)
    norm = np.sqrt(np.sum(g**2))
    g = g * np.minimum(1.0, 0.5 / norm)
    new_w = w - 0.3 * g
    return np.mean((XS @ new_w - YS) ** 2)


def string_formatting_and_asserts(w):
    """Shape asserts and string formatting of numbers in the middle of the computation."""
    assert w.shape == (3,), f"bad shape {w.shape}"
    pred = XS @ w
    message = "loss={:.4f}".format(float(np.mean(pred**2)))  # noqa: UP032
    LOG.debug(message)
    return np.mean((pred - YS) ** 2)


def ode_with_event_early_exit(params):
    """A falling body with drag integrated until it hits the ground (an early break),
    the final horizontal position as the objective."""
    v0, angle = params
    x, y = 0.0, 1.0
    vx, vy = v0 * np.cos(angle), v0 * np.sin(angle)
    dt = 0.05
    for _ in range(200):
        speed = np.sqrt(vx**2 + vy**2)
        vx, vy = vx - dt * 0.1 * speed * vx, vy - dt * (9.8 + 0.1 * speed * vy)
        x, y = x + dt * vx, y + dt * vy
        if y < 0.0:
            break
    return x


def reversed_and_sorted_iteration(w):
    """Backward recursion with reversed(range(...)) and a sorted list of keys."""
    coeffs = {3: w[0], 1: w[1], 2: w[2]}
    value = 0.0
    for k in sorted(coeffs, reverse=True):
        value = value * 0.5 + coeffs[k]
    acc = 0.0
    for i in reversed(range(len(w))):
        acc = acc * w[i] + 1.0
    return value**2 + acc


def min_over_a_list_by_key(w):
    """A list of (name, loss) pairs; min by key picks the branch (fixed at the point)."""
    candidates = [
        ("linear", np.mean((XS @ w - YS) ** 2)),
        ("tanh", np.mean((np.tanh(XS @ w) - YS) ** 2) + 0.5),
        ("shifted", np.mean((XS @ w + 1.0 - YS) ** 2) + 1.0),
    ]
    name, best = min(candidates, key=lambda item: float(item[1]))
    return best + (0.0 if name == "linear" else 0.1)


def global_settings_read(w):
    """Settings read from module-level names (a config dict and a constant)."""
    reg = SETTINGS["l2"] * np.sum(w**2)
    return np.mean(np.logaddexp(0.0, -SIGNS * (XS @ w))) + reg + SETTINGS["bias"] * w[0]


SETTINGS = {"l2": 0.05, "bias": 0.1}
SIGNS = np.array([1.0, -1.0, 1.0, 1.0, -1.0])


def running_statistics_object(w):
    """An object accumulating running sums with += attributes inside the loop."""

    class Running:
        def __init__(self):
            self.total = 0.0
            self.count = 0

        def add(self, v):
            self.total += v
            self.count += 1

        def mean(self):
            return self.total / self.count

    stats = Running()
    for x, y in zip(XS, YS):
        stats.add((x @ w - y) ** 2)
    return stats.mean()


def recursive_tree_sum(w):
    """A recursive evaluation of a nested tuple expression tree with weights at leaves."""
    tree = ("add", ("mul", 0, 1), ("add", ("mul", 2, 2), 1))

    def evaluate(node):
        if isinstance(node, int):
            return w[node]
        op, left, right = node
        a, b = evaluate(left), evaluate(right)
        return a + b if op == "add" else a * b

    return evaluate(tree) ** 2


def star_args_helpers(params):
    """Helpers taking *args and **kwargs forwarded from a wrapper."""

    def combine(*arrays, weights=None):
        weights = weights or [1.0] * len(arrays)
        return sum(w * a for w, a in zip(weights, arrays))

    def wrapper(*args, **kwargs):
        return combine(*args, **kwargs)

    a, b, c = params
    return np.sum(wrapper(np.sin(a), b**2, c, weights=[0.5, 1.0, -1.0]) ** 2)


def bucketed_loss_dict_accumulation(w):
    """Losses accumulated per group in a dict, then averaged over groups."""
    groups = ["a", "b", "a", "c", "b"]
    sums, counts = {}, {}
    for g, x, y in zip(groups, XS, YS):
        sums[g] = sums.get(g, 0.0) + (np.tanh(x @ w) - y) ** 2
        counts[g] = counts.get(g, 0) + 1
    return sum(sums[g] / counts[g] for g in sums) / len(sums)


def conditional_expression_clip(w):
    """Conditional expressions choosing per element with Python floats."""
    total = 0.0
    for v in XS @ w:
        total += v**2 if abs(v) < 1.0 else 2 * abs(v) - 1.0
    return total


PROGRAMS = [
    (mlp_all_but_last, [(_n(3, 4), _n(4)), (_n(4, 3), _n(3)), (_n(3, 1), _n(1))]),
    (dict_params_with_defaults, {"W": _n(3, 2), "skip": _n(3, 2), "scale": 0.8}),
    (layers_as_objects, [(_n(3, 3), _n(3)), (_n(3, 2), _n(2)), (_n(2, 1), _n(1))]),
    (zeros_then_fill_features, _n(4)),
    (early_return_on_small_loss, _n(3)),
    (newton_sqrt_while_tolerance, np.array([0.5, 2.0, 3.0])),
    (math_and_numpy_mixed, _n(2)),
    (zip_enumerate_weighted, _n(3)),
    (comprehension_features, _n(4)),
    (helpers_calling_helpers, {"W1": _n(3, 3), "b1": _n(3), "W2": _n(3, 1)}),
    (tuple_unpacking_state, np.array([2.0, 0.3])),
    (in_place_buffer_moving_average, _n(5)),
    (cumulative_lists_then_array, _n(4, scale=0.1)),
    (while_bisection_fixed_steps, np.array([1.0, 1.5])),
    (
        nested_dict_of_layers,
        {"encoder": {"W": _n(3, 2), "b": _n(2)}, "decoder": {"W": _n(2, 3), "b": _n(3)}},
    ),
    (named_slices_of_a_vector, np.concatenate([_n(3), [0.1, -0.3]])),
    (matrix_filled_by_double_loop, np.array([0.2, -0.1])),
    (class_with_parameters_property, _n(3)),
    (gradient_clipping_by_norm, _n(3)),
    (string_formatting_and_asserts, _n(3)),
    (ode_with_event_early_exit, np.array([3.0, 0.6])),
    (reversed_and_sorted_iteration, _n(3)),
    (min_over_a_list_by_key, _n(3)),
    (global_settings_read, _n(3)),
    (running_statistics_object, _n(3)),
    (recursive_tree_sum, _n(3)),
    (star_args_helpers, (_n(3), _n(3), _n(3))),
    (bucketed_loss_dict_accumulation, _n(3)),
    (conditional_expression_clip, np.array([0.3, -0.8, 0.5])),
]

# what each mode refuses, naming the program's line. s2s: objects holding the weights, made
# or defined in the function (Dense, a local class, a running-sums object), local functions
# that recurse or take *args, entries written into a dict of values being differentiated,
# and forward mode over a gradient calling a method at run time (params.get,
# "...".format(...)) or whose save stack holds reads of a buffer filled in a loop; auto tapes
# each. The tape: float() of a
# value being differentiated, which s2s (and so auto) sees is used only to decide or print
S2S_REVERSE = frozenset({("s2s", "grad"), ("s2s", "hvp")})
NO_FLOAT_ON_THE_TAPE = frozenset({("tape", "grad"), ("tape", "hvp"), ("tape", "jvp")})
REFUSED = {
    "dict_params_with_defaults": S2S_HVP,
    "layers_as_objects": BY_THE_TAPE,
    "class_with_parameters_property": BY_THE_TAPE,
    "running_statistics_object": BY_THE_TAPE,
    "recursive_tree_sum": BY_THE_TAPE,
    "star_args_helpers": BY_THE_TAPE,
    "bucketed_loss_dict_accumulation": S2S_REVERSE,
    "newton_sqrt_while_tolerance": NO_FLOAT_ON_THE_TAPE,
    "string_formatting_and_asserts": NO_FLOAT_ON_THE_TAPE | S2S_HVP,
    "min_over_a_list_by_key": NO_FLOAT_ON_THE_TAPE,
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, x", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(f, x, mode):
    _check_program(f, x, mode, REFUSED.get(f.__name__, frozenset()))
