"""What Zygote's, Enzyme's and Swift for TensorFlow's differentiation tests ask that
translates to Python, asked of s2sgrad: closures capturing differentiated values (called
where made, returned and called later, passed to ``map`` and ``functools.reduce``),
mutation (a buffer written in a loop, a helper writing its result into an array given to
it, lists grown by ``append``, dicts updated, ``+=`` into slices), recursion, loops whose
end depends on the values, functions chosen from a list at run time, objects with methods
(Swift's layers), ``without_derivative``; in every engine, on a first and a later call,
forward mode and second order too, against central differences in float64.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest
from oracle import call_twice
from peer_suite_checks import MODES, check_function

import s2sgrad as sg

rng = np.random.default_rng(1010059)


def normal(*shape):
    return rng.standard_normal(shape)


# --- closures (Zygote) ---------------------------------------------------------------


def closure_called_where_made(x):
    def scaled(y):
        return x * y

    return np.sum(scaled(3.0) * scaled(x))


def _make_scaler(a):
    def scale(y):
        return a * np.sin(y)

    return scale


def closure_returned_then_called(x, y):
    scale = _make_scaler(x)
    return np.sum(scale(y) * scale(x))


def closure_over_a_loop_variable(x):
    total = 0.0
    for k in range(3):

        def term(u, k=k):
            return u ** (k + 1)

        total = total + np.sum(term(x))
    return total


def map_with_a_closure(x, w):
    return sum(map(lambda u: np.tanh(u * w), x))


def reduce_with_a_closure(x):
    return functools.reduce(lambda acc, u: acc * u + np.sin(acc), x, 1.0)


def sum_of_a_generator(x):
    return sum(np.abs(u) ** 2 for u in x)


def higher_order_compose(x):
    def compose(f, g):
        return lambda u: f(g(u))

    return np.sum(compose(np.sin, np.exp)(x) * compose(np.exp, np.sin)(x))


# --- mutation (Enzyme) -----------------------------------------------------------------


def _write_square_into(out, x):
    for i in range(len(x)):
        out[i] = x[i] * x[i]


def helper_writes_into_a_buffer(x):
    out = np.zeros_like(x)
    _write_square_into(out, x)
    return np.sum(np.sin(out))


def accumulate_into_slices(x):
    y = np.zeros(4)
    for i in range(3):
        y[i : i + 2] += x[i] * np.array([1.0, 2.0])
    return np.sum(y**2)


def list_grown_by_append(x):
    states = [x]
    for _ in range(3):
        states.append(np.tanh(states[-1] * 1.5))
    return np.sum(states[-1] * states[1])


def dict_updated_in_a_loop(x):
    memory = {"h": x, "c": np.zeros_like(x)}
    for _ in range(2):
        memory["c"] = memory["c"] + np.sin(memory["h"])
        memory["h"] = memory["h"] * memory["c"]
    return np.sum(memory["h"])


def in_place_operators_on_a_copy(x):
    y = x.copy()
    y *= 2.0
    y[1:] += y[:-1] ** 2
    y[0] /= 3.0
    return np.sum(y * x)


def swapped_rows(x):
    y = x.copy()
    y[[0, 1]] = y[[1, 0]]
    return np.sum(y * np.arange(6.0).reshape(3, 2) * x)


def running_product(x):
    out = np.ones(len(x) + 1)
    for i in range(len(x)):
        out[i + 1] = out[i] * x[i]
    return np.sum(out)


# --- recursion and value-dependent loops ----------------------------------------------


def recursive_power(x, n):
    if n == 0:
        return 1.0
    return x * recursive_power(x, n - 1)


def recursive_power_of_array(x):
    return np.sum(recursive_power(x, 3))


def newton_sqrt(a):
    x = a
    while np.abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


def loop_until_small(x):
    total = 0.0
    term = x
    while np.max(np.abs(term)) > 1e-3:
        total = total + np.sum(term)
        term = term * 0.5
    return total


def early_exit_search(x):
    for i in range(len(x)):
        if x[i] > 0.5:
            return x[i] ** 2 * i
    return np.sum(x)


# --- run-time choice of functions ------------------------------------------------------

ACTIVATIONS = [np.tanh, np.sin, lambda u: u**3]


def chosen_activations(x):
    total = 0.0
    for k, activation in enumerate(ACTIVATIONS):
        total = total + np.sum(activation(x * (k + 1)))
    return total


def activation_by_name(x, name):
    table = {"tanh": np.tanh, "softplus": lambda u: np.log1p(np.exp(u))}
    return np.sum(table[name](x))


# --- objects with methods (Swift's layers) ----------------------------------------------


@dataclass
class Dense:
    w: np.ndarray
    b: np.ndarray

    def __call__(self, x):
        return np.tanh(x @ self.w + self.b)


def two_layers(params, x):
    first, second = Dense(params["w1"], params["b1"]), Dense(params["w2"], params["b2"])
    return np.sum(second(first(x)) ** 2)


def stopped_target(w, x):
    target = sg.without_derivative(np.tanh(x @ w))
    return np.sum((x @ w - target) ** 2) + np.sum(w**2)


X = normal(5, 3)

# what source transformation does: everything, the gradient and jvp but refuses the hvp (the
# derivative of generated code that writes into a buffer it read, which the aliasing check
# cannot tell apart from a view), or refuses; modes "auto" and "tape" do everything
EVERYTHING, FIRST_ORDER_IN_S2S, TAPE_ONLY = "everything", "first order in s2s", "tape only"

# (name, function, arguments, what s2s does)
CASES = [
    ("closure_called_where_made", closure_called_where_made, [normal(3)], EVERYTHING),
    ("closure_returned_then_called", closure_returned_then_called, [0.7, normal(3)], EVERYTHING),
    ("closure_over_a_loop_variable", closure_over_a_loop_variable, [normal(3)], EVERYTHING),
    ("map_with_a_closure", map_with_a_closure, [normal(4), 0.8], EVERYTHING),
    ("reduce_with_a_closure", reduce_with_a_closure, [normal(4)], EVERYTHING),
    ("sum_of_a_generator", sum_of_a_generator, [normal(4)], EVERYTHING),
    ("higher_order_compose", higher_order_compose, [normal(3)], EVERYTHING),
    ("helper_writes_into_a_buffer", helper_writes_into_a_buffer, [normal(4)], EVERYTHING),
    ("accumulate_into_slices", accumulate_into_slices, [normal(3)], EVERYTHING),
    ("list_grown_by_append", list_grown_by_append, [normal(3)], EVERYTHING),
    ("dict_updated_in_a_loop", dict_updated_in_a_loop, [normal(3)], EVERYTHING),
    ("in_place_operators_on_a_copy", in_place_operators_on_a_copy, [normal(4)], EVERYTHING),
    ("swapped_rows", swapped_rows, [normal(3, 2)], EVERYTHING),
    ("running_product", running_product, [normal(4)], FIRST_ORDER_IN_S2S),
    ("recursive_power_of_array", recursive_power_of_array, [normal(3)], EVERYTHING),
    ("recursive_power_of_number", recursive_power, [0.8, 4], EVERYTHING),
    ("newton_sqrt", newton_sqrt, [2.3], EVERYTHING),
    ("loop_until_small", loop_until_small, [normal(3)], EVERYTHING),
    ("early_exit_search", early_exit_search, [np.array([0.1, -0.3, 0.9, 0.7])], EVERYTHING),
    ("early_exit_none_found", early_exit_search, [np.array([0.1, -0.3, 0.2])], EVERYTHING),
    ("chosen_activations", chosen_activations, [normal(3)], EVERYTHING),
    ("activation_by_name", activation_by_name, [normal(3), "softplus"], EVERYTHING),
    (
        "two_layers",
        two_layers,
        [{"w1": normal(3, 4), "b1": normal(4), "w2": normal(4, 2), "b2": normal(2)}, X],
        EVERYTHING,  # a dataclass made inside: a record since round 33
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f, args, in_s2s", CASES, ids=[c[0] for c in CASES])
def test_closures_mutation_and_loops(name, f, args, in_s2s, mode):
    if mode != "s2s" or in_s2s == EVERYTHING:
        check_function(f, args, mode, key=name)
    elif in_s2s == FIRST_ORDER_IN_S2S:
        check_function(f, args, mode, second_order=False)
        with pytest.raises(sg.UnsupportedError, match="may share memory") as refused:
            sg.hvp(f, tuple(args), tuple(np.ones_like(a) for a in args), mode=mode)
        assert f"{__file__}:" in str(refused.value)
    else:
        with pytest.raises(sg.UnsupportedError, match="use mode='auto'") as refused:
            sg.grad(f, mode=mode)(*args)
        assert f"{__file__}:" in str(refused.value)


@pytest.mark.parametrize("mode", MODES)
def test_without_derivative_holds_a_target_fixed_at_every_order(mode):
    w, v = normal(3), normal(3)
    residual = X @ w - np.tanh(X @ w)
    gradient = call_twice(sg.grad(stopped_target, mode=mode), w, X)
    np.testing.assert_allclose(gradient, 2 * X.T @ residual + 2 * w)
    _, tangent = sg.jvp(lambda u: stopped_target(u, X), (w,), (v,), mode=mode)
    np.testing.assert_allclose(tangent, (2 * X.T @ residual + 2 * w) @ v)
    (product,) = sg.hvp(lambda u: stopped_target(u, X), (w,), (v,), mode=mode)
    np.testing.assert_allclose(product, 2 * X.T @ (X @ v) + 2 * v)
