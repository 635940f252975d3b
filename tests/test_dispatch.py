"""Calls resolved only at run time: methods, lists of layers, functions as arguments,
lambdas, recursion and functions without source, in both engines."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(7)


class Dense:
    def __init__(self, n_in, n_out, seed):
        rng = np.random.default_rng(seed)
        self.w = rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)
        self.b = rng.standard_normal(n_out) * 0.1

    def __call__(self, x):
        return np.tanh(x @ self.w + self.b)

    def forward(self, x):
        return self(x) * 2.0


LAYERS = [Dense(3, 4, 0), Dense(4, 4, 1), Dense(4, 2, 2)]


def method_on_layer(x, scale):
    return np.sum(LAYERS[0].forward(x) * scale)


def list_of_layers(x, scale):
    h = x
    for layer in LAYERS:
        h = layer(h)
    return np.sum(h**2) * scale


def function_as_argument(x, scale, activation=np.tanh):
    return np.sum(activation(x * scale))


def apply_twice(f, x, scale):
    return np.sum(f(f(x)) * scale)


def with_lambda(x, scale):
    square = lambda v: v * v * scale  # noqa: E731
    return np.sum(square(np.sin(x)))


def power(x, n):
    if n == 0:
        return np.ones_like(x)
    return x * power(x, n - 1)


def recursive(x, scale):
    return np.sum(power(x, 3)) * scale


def with_try(x, scale):
    try:
        y = np.log(x * x + 1.0)
    except FloatingPointError:
        y = x
    return np.sum(y) * scale


def generator_sum(x, scale):
    def terms():
        for i in range(3):
            yield np.sin(x * (i + 1))

    total = 0.0
    for term in terms():
        total = total + np.sum(term)
    return total * scale


_namespace = {"np": np}
# a file name of its own: another exec in the worker may leave '<string>' in linecache
exec(compile("def no_source(v):\n    return np.exp(v) * 3.0\n", "<no_source>", "exec"), _namespace)
NO_SOURCE = _namespace["no_source"]


def calls_no_source(x, scale):
    return np.sum(NO_SOURCE(x)) * scale


CASES = [
    method_on_layer,
    list_of_layers,
    function_as_argument,
    with_lambda,
    recursive,
    with_try,
    generator_sum,
    calls_no_source,
]


@pytest.mark.parametrize("mode", ["auto", "tape"])
@pytest.mark.parametrize("function", CASES, ids=[f.__name__ for f in CASES])
def test_dynamic_calls_match_finite_differences(function, mode):
    x = RNG.uniform(0.2, 1.0, size=(2, 3))
    scale = 1.3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # auto mode may say it used the tape
        gradient = call_twice(sg.grad(function, wrt=(0, 1), mode=mode), x, scale)
    assert_close(gradient[0], numeric_grad(function, [x, scale], 0), rtol=1e-5, atol=1e-7)
    assert gradient[1] == pytest.approx(numeric_grad(function, [x, scale], 1), rel=1e-5)


def test_function_passed_as_argument_is_dispatched_statically_in_s2s_mode():
    x = RNG.uniform(0.2, 1.0, size=3)

    def cube(v):
        return v**3

    gradient = sg.grad(apply_twice, wrt=1, mode="s2s")(cube, x, 2.0)
    np.testing.assert_allclose(gradient, 2.0 * 9.0 * x**8)


def test_s2s_mode_refuses_what_only_the_tape_can_do():
    x = RNG.uniform(0.2, 1.0, size=3)
    with pytest.raises(sg.S2SGradError, match="no source"):
        sg.grad(calls_no_source, mode="s2s")(x, 1.0)


def test_auto_mode_warns_once_and_names_the_construct():
    def guarded(x, scale):
        try:
            return np.sum(np.sqrt(x)) * scale  # a return in a try body stays refused
        except ValueError:
            y = x
        return np.sum(y) * scale

    x = RNG.uniform(0.2, 1.0, size=3)
    with pytest.warns(UserWarning, match=r"test_dispatch.py:\d+.*'try'") as record:
        df = sg.grad(guarded)
        df(x, 1.0)
        df(x, 1.0)
    assert len([w for w in record if "try" in str(w.message)]) == 1


class Model:
    def __init__(self):
        self.w = RNG.normal(size=3)

    def loss(self, x, scale):
        return np.sum(np.sin(x * self.w)) * scale


MODEL = Model()


def calls_a_module_level_method(x):
    return MODEL.loss(x, 2.0) + np.sum(x**2)


@pytest.mark.parametrize("mode", ["auto", "s2s", "tape"])
def test_a_method_of_a_module_level_object(mode):
    # the method was transformed as a plain function, then called without its self
    x = RNG.normal(size=3)
    gradient = call_twice(sg.grad(calls_a_module_level_method, mode=mode), x)
    assert_close(gradient, numeric_grad(calls_a_module_level_method, (x,), 0))


@pytest.mark.parametrize("mode", ["auto", "s2s", "tape"])
def test_forward_over_a_dispatched_call(mode):
    x, v = RNG.normal(size=3), RNG.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        (product,) = sg.hvp(calls_a_module_level_method, (x,), (v,), mode=mode)
    gradient = sg.grad(calls_a_module_level_method, mode="tape")
    assert_close(product, numeric_grad(lambda x: np.sum(gradient(x) * v), (x,), 0))


def grid_of_rows(x):
    return np.sum(np.meshgrid(*(x.reshape(2, 3) * 2.0))[1] * np.arange(9.0).reshape(3, 3))


def broadcast_rows(x):
    pieces = np.broadcast_arrays(*np.sin(x.reshape(2, 3, 1)))
    return np.sum(pieces[1] ** 2 * np.arange(3.0))


@pytest.mark.parametrize("f", [grid_of_rows, broadcast_rows])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_forward_mode_of_a_dispatched_call_with_several_results(f, mode):
    """Starred arguments make the call dispatched when it runs. The tangents each argument
    gives a function of several results (a list of them) were concatenated, not added:
    the tangent of the second result was the first argument's zeros."""
    x = np.linspace(-0.8, 1.1, 6)
    t = np.cos(np.arange(6.0))
    expected = (f(x + 1e-6 * t) - f(x - 1e-6 * t)) / 2e-6
    for _ in range(2):
        _, tangent = sg.jvp(f, (x,), (t,), mode=mode)
        assert tangent == pytest.approx(expected, rel=1e-6)


def scaled_and_shifted(a, w=1.0, *, shift=0.25):
    return a * w + shift


def keyword_through_starred_call(x, y):
    arguments = [np.sqrt(1.0 + x**2)]
    return np.sum(np.sin(scaled_and_shifted(*arguments, w=y)))


def test_forward_mode_follows_a_differentiated_keyword_of_a_dispatched_call():
    """The tangent of ``w=y`` reaches a call dispatched when it runs (passed last, bound
    back to ``w``: runtime/keyword_arguments.py), in every mode."""
    x, y = np.linspace(-0.6, 0.9, 3), np.array([0.3, -1.1, 0.7])
    tx, ty = np.ones(3), np.array([0.5, -0.2, 1.0])

    def along(h):
        return keyword_through_starred_call(x + h * tx, y + h * ty)

    expected = (along(1e-6) - along(-1e-6)) / 2e-6
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in ("s2s", "auto", "tape"):
            _, tangent = sg.jvp(keyword_through_starred_call, (x, y), (tx, ty), mode=mode)
            assert tangent == pytest.approx(expected, rel=1e-6)
