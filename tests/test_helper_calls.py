"""Calling user functions (helpers): in loops, through functools.partial and map, helpers
that update their arguments in place, helpers returning functions, methods and layer
objects, in both engines, against finite differences."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(19)
MODES = ("s2s", "auto", "tape")


def check_gradient(f, args, wrt=0, modes=MODES):
    """The gradient of ``f`` in every mode, on the first and the second call, matches
    central differences; in mode="auto" the source transformer handles it (no fallback)."""
    expected = numeric_grad(f, args, wrt)
    for mode in modes:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # no fallback to the tape
            gradient = sg.grad(f, wrt=wrt, mode=mode)
            for _ in range(2):  # the first call specialises, the second runs that code
                assert_close(gradient(*args), expected, rtol=1e-5, atol=1e-6)


def check_second_order(f, args, modes=("s2s", "tape")):
    """The Hessian-vector product of ``f`` wrt its first argument, against differences of
    the (already checked) gradient."""
    vector = RNG.standard_normal(np.shape(args[0]))
    gradient = sg.grad(f, mode=modes[-1])  # checked against differences by check_gradient
    expected = numeric_grad(lambda v, *rest: np.sum(gradient(v, *rest) * vector), args, 0)
    for mode in modes:
        primals = tuple(args)
        vectors = (vector, *(zeros_like_tree(a) for a in args[1:]))
        actual = sg.hvp(f, primals, vectors, mode=mode)[0]
        assert_close(actual, expected, rtol=1e-4, atol=1e-6)


def zeros_like_tree(value):
    if isinstance(value, dict):
        return {k: zeros_like_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(zeros_like_tree(v) for v in value)
    return np.zeros_like(value)


# 1. helpers called in loops: the callee's saved values are kept per iteration ---------------
def center(a):
    return a - np.mean(a)


def predict(ws, x):
    for w in ws:
        out = center(x * w)
        x = np.tanh(out)
    return out


def loss_through_loop(ws, x):
    return np.sum(predict(ws, x) ** 2)


def test_helper_called_in_a_loop_inside_a_helper():
    args = (RNG.standard_normal(3), RNG.standard_normal(4))
    check_gradient(loss_through_loop, args, wrt=0)
    check_gradient(loss_through_loop, args, wrt=1)
    check_second_order(loss_through_loop, args)


def scaled(v, s):
    return v * s, s


def saved_values_of_one_shape(x):
    total = 0.0
    for i in range(3):  # the helper's saved tuple holds arrays of one shape and an int
        y, s = scaled(x, x * (i + 1))
        total = total + np.sum(np.sin(y) * s)
    return total


def test_saved_values_of_one_shape_are_not_stacked_into_an_array():
    check_gradient(saved_values_of_one_shape, (RNG.standard_normal(3),))
    check_second_order(saved_values_of_one_shape, (RNG.standard_normal(3),))


# 4. helpers returning functions --------------------------------------------------------------
def flatten(parts):
    flat = np.concatenate([parts[0], parts[1]])
    size = len(parts[0])

    def unflatten(v):
        return [v[:size], v[size:]]

    return flat, unflatten


def uses_flatten(x):
    flat, unflatten = flatten([x, x * 2.0])
    return np.sum(flat**2)


def test_helper_returning_a_function_in_a_tuple():
    check_gradient(uses_flatten, (RNG.standard_normal(2),))
    check_second_order(uses_flatten, (RNG.standard_normal(2),))


def first_of(pair):
    a, b = pair
    return a * 2.0


def tuple_argument(x):
    pair = (x, x * 3.0)
    return np.sum(first_of(pair)) + np.sum(np.cos(x))


def test_helper_that_reads_one_entry_of_a_tuple_argument():
    # the callee's cotangent of the tuple has an entry nothing flowed into
    check_gradient(tuple_argument, (RNG.standard_normal(3),))
    check_second_order(tuple_argument, (RNG.standard_normal(3),))


# 2. every way of calling a user function carries cotangents ---------------------------------
def inner_product(x, d):
    return np.sum(x * d)


def square(t):
    return t**2


class Scale:
    def __init__(self, s):
        self.s = s

    def run(self, v):
        return v * self.s

    def __call__(self, v):
        return np.sin(v) * self.s


SCALE = Scale(1.5)
FUNCTIONS = [np.tanh, square, SCALE]


def through_partial_and_map(x, data):
    return sum(map(partial(inner_product, x), data))


def through_map_of_a_lambda(x, data):
    return sum(map(lambda t: t**2 * data[0][0], x))


def through_map_of_two_sequences(x, data):
    return sum(map(inner_product, [x, x * 2.0], data))


def looping_over_a_map(x, data):
    total = 0.0
    for y in map(partial(inner_product, x), data):
        total = total + y * y
    return total


def map_of_a_function(x, data):
    return np.sum(sum(map(square, data)) * x)


def calling_a_partial(x, data):
    return partial(inner_product, x)(data[0]) + partial(inner_product, d=data[1])(x)


def list_of_functions(x, data):
    for function in FUNCTIONS:
        x = function(x)
    return np.sum(x * data[0])


def method_of_a_module_level_object(x, data):
    return np.sum(SCALE.run(x) * data[1])


def calling_a_lambda_that_captures(x, data):
    square = lambda v: v * x  # noqa: E731
    y = square(data[0]) + square(x * 2.0)
    x = x * 3.0  # Python reads x when the lambda runs: the call below sees the new x
    return np.sum(square(y) ** 2)


def calling_a_nested_function_in_a_loop(x, data):
    def activation(v, s):
        return np.tanh(v * s) * x

    total = 0.0
    for i in range(3):
        total = total + np.sum(activation(data[1], i + 1.0))
    return total


def calling_a_named_partial(x, data):
    dot = partial(inner_product, x)
    x = x * 3.0  # partial read x when it was made: dot keeps the earlier x
    return dot(data[0]) * dot(x) + np.sum(x)


CALLS = [
    calling_a_named_partial,
    calling_a_lambda_that_captures,
    calling_a_nested_function_in_a_loop,
    through_partial_and_map,
    through_map_of_a_lambda,
    through_map_of_two_sequences,
    looping_over_a_map,
    map_of_a_function,
    calling_a_partial,
    list_of_functions,
    method_of_a_module_level_object,
]


def data_pair():
    return [RNG.standard_normal(3), RNG.standard_normal(3)]


@pytest.mark.parametrize("f", CALLS, ids=lambda f: f.__name__)
def test_ways_of_calling_a_user_function(f):
    args = (RNG.standard_normal(3), data_pair())
    check_gradient(f, args)
    check_second_order(f, args)  # calls resolved at run time (list_of_functions) too


def apply(function, v):
    return function(v)


def partial_passed_on(x, data):
    return np.sum(apply(partial(inner_product, x), data[0]))


def test_a_partial_of_a_differentiated_value_passed_on_is_refused_in_s2s():
    args = (RNG.standard_normal(3), data_pair())
    with pytest.raises(sg.UnsupportedError) as caught:
        sg.grad(partial_passed_on, mode="s2s")(*args)
    message = str(caught.value)
    line = partial_passed_on.__code__.co_firstlineno + 1
    assert f"test_helper_calls.py:{line}" in message
    assert "call the function with them directly" in message and "mode='tape'" in message
    with pytest.warns(UserWarning, match="test_helper_calls.py"):
        gradient = sg.grad(partial_passed_on)(*args)  # auto: the tape, right
    assert_close(gradient, numeric_grad(partial_passed_on, args, 0), rtol=1e-5, atol=1e-6)


# 3. helpers that change their arguments in place ----------------------------------------------
def halve(a):
    a[:] *= 0.5


def halve_twice(b):
    halve(b)
    halve(b)


def halved_copy(a):
    a = a.copy()
    a[:] *= 0.5
    return a


def calls_halve(x):
    y = x.copy()
    halve(y)
    return np.sum(y * x)


def calls_halve_through_another_helper(x):
    y = x * 1.0
    halve_twice(y)
    return np.sum(y * x)


def halves_a_constant_read_by_a_derivative(x):
    scale = np.ones(3)
    z = x * scale
    halve(scale)
    return np.sum(z * z)


def calls_halved_copy(x):
    y = halved_copy(x)
    return np.sum(y * x)


def refusal_line(f, text):
    lines, first = __import__("inspect").getsourcelines(f)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"test_helper_calls.py:{first + offset}"


@pytest.mark.parametrize(
    "f", [calls_halve, calls_halve_through_another_helper, halves_a_constant_read_by_a_derivative]
)
def test_helpers_changing_an_argument_in_place_are_differentiated(f):
    """By source the helper's body is inlined at the call, with the caller's name for the
    array it updates, so the update is differentiated like one written in the caller."""
    x = RNG.standard_normal(3)
    check_gradient(f, (x,), modes=("s2s", "auto"))
    # not to second order: the gradient's own code reads a view of the updated array, which
    # its transformation refuses (as for 'y[:] *= 0.5' written in the caller itself)
    tangent = RNG.standard_normal(3)
    _, actual = sg.jvp(f, (x,), (tangent,), mode="s2s")
    assert_close(actual, np.sum(numeric_grad(f, (x,), 0) * tangent), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [calls_halve, calls_halve_through_another_helper])
def test_helpers_changing_an_argument_in_place_are_differentiated_by_the_tape(f):
    """The tape changes the caller's value itself, a new version of it (tape/helper_writes.py)."""
    check_gradient(f, (RNG.standard_normal(3),), modes=("tape",))


def changes_its_input_through_a_helper(x):
    halve(x)
    return np.sum(x)


def test_a_helper_changing_the_input_in_place_is_differentiated_on_a_copy():
    x = RNG.standard_normal(3)
    before = x.copy()
    for mode in ("s2s", "auto"):
        gradient = sg.grad(changes_its_input_through_a_helper, mode=mode)(x)
        np.testing.assert_allclose(gradient, [0.5, 0.5, 0.5])  # sum(x / 2)
        np.testing.assert_array_equal(x, before)
    with pytest.raises(sg.UnsupportedError, match="in place"):
        sg.grad(changes_its_input_through_a_helper, mode="tape")(x)


def test_a_helper_that_changes_its_own_copy_is_differentiated():
    # the tape has no item writes at all (it says so, and points at mode='s2s')
    check_gradient(calls_halved_copy, (RNG.standard_normal(3),), modes=("s2s", "auto"))


# 5. and 6. layer objects: s2s never uses the tape; the tape leaves objects plain --------------
class BatchNorm:
    def __init__(self, n):
        self.gamma = np.linspace(0.5, 1.5, n)
        self.beta = np.zeros(n)
        self.moving_mean = np.zeros(n)
        self.history = []

    def __call__(self, X):
        mean = X.mean(axis=0)
        var = ((X - mean) ** 2).mean(axis=0)
        self.moving_mean = 0.9 * self.moving_mean + 0.1 * mean
        self.history.append({"mean": mean})
        return self.gamma * (X - mean) / np.sqrt(var + 1e-5) + self.beta


NORM = BatchNorm(3)


def through_batch_norm(X):
    return np.sum(np.tanh(NORM(X)) ** 2)


def test_a_layer_that_cannot_be_transformed_is_refused_in_s2s():
    X = RNG.standard_normal((5, 3))
    with pytest.raises(sg.UnsupportedError) as caught:
        sg.grad(through_batch_norm, mode="s2s")(X)
    message = str(caught.value)
    assert "test_helper_calls.py:" in message and "mode='tape'" in message
    assert "BatchNorm.__call__ stores self.moving_mean" in message


@pytest.mark.parametrize("mode", ["tape", "auto"])
def test_state_stored_on_objects_stays_plain_arrays(mode):
    X = RNG.standard_normal((5, 3))
    expected = numeric_grad(through_batch_norm, (X,), 0)
    NORM.__init__(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # auto: BatchNorm.__call__ runs on the tape
        gradient = sg.grad(through_batch_norm, mode=mode)
        for _ in range(2):  # two updates of the running mean
            assert_close(gradient(X), expected, atol=1e-6)
    assert type(NORM.moving_mean) is np.ndarray
    assert all(type(entry["mean"]) is np.ndarray for entry in NORM.history)
    assert_close(NORM.moving_mean, 0.1 * X.mean(axis=0) * (1 + 0.9), atol=1e-12)


def test_forward_mode_through_layer_objects_never_uses_the_tape_in_s2s():
    x, data = RNG.standard_normal(3), data_pair()
    v = RNG.standard_normal(3)
    zeros = [np.zeros(3), np.zeros(3)]
    expected = np.sum(numeric_grad(list_of_functions, (x, data), 0) * v)
    for mode in MODES:
        _, tangent = sg.jvp(list_of_functions, (x, data), (v, zeros), mode=mode)
        assert_close(float(tangent), float(expected), atol=1e-6)
    X, V = RNG.standard_normal((5, 3)), RNG.standard_normal((5, 3))
    with pytest.raises(sg.UnsupportedError) as caught:  # it keeps a differentiated value
        sg.jvp(through_batch_norm, (X,), (V,), mode="s2s")
    message = str(caught.value)
    # the first write that keeps it is refused: the attribute store, or the append
    assert (
        refusal_line(BatchNorm.__call__, "self.history.append") in message
        or "storing a differentiated value in an attribute" in message
    )
    assert "mode='tape'" in message


class Box:
    def keep(self, v):
        self.v = v


def stores_through_a_method(x, data):
    box = Box()
    box.keep(x * data[0])  # its result unused: it matters only by what it stores
    return np.sum(box.v**2)


def test_a_call_kept_only_for_what_it_stores_is_refused_not_ignored():
    args = (RNG.standard_normal(3), data_pair())
    for mode in ("s2s",):
        with pytest.raises(sg.UnsupportedError, match="is not used") as caught:
            sg.grad(stores_through_a_method, mode=mode)(*args)
        assert refusal_line(stores_through_a_method, "box.keep(") in str(caught.value)
    expected = numeric_grad(stores_through_a_method, args, 0)
    assert_close(sg.grad(stores_through_a_method, mode="tape")(*args), expected, atol=1e-6)
    with pytest.warns(UserWarning, match="is not used"):  # auto: the tape, right
        assert_close(sg.grad(stores_through_a_method)(*args), expected, atol=1e-6)


def dense_from_spec(x, spec):
    w, name = spec
    return np.tanh(x * w) if name == "tanh" else x * w


SPEC_LAYERS = [dense_from_spec, dense_from_spec]


def layers_given_a_tuple_with_a_name(w, x):
    for layer in SPEC_LAYERS:  # resolved at run time, given (array, string)
        x = layer(x, (w, "tanh"))
    return np.sum(x**2)


def test_a_call_resolved_at_run_time_with_a_tuple_holding_a_name():
    check_gradient(
        layers_given_a_tuple_with_a_name, (RNG.standard_normal(3), RNG.standard_normal(3))
    )
