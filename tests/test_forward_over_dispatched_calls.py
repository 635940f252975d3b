"""Second order in mode "s2s" through calls the gradient resolves only when it runs (a
function from a list or a tuple, a function passed in, a layer object, ``sorted`` of a dict
of parameters): forward mode over the gradient makes each such call's pullback carry the
tangents of the values it was made from, so that its later call follows them. (It was
refused: "forward mode ... over the gradient of a call resolved at run time".)
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, assert_hvp_matches_differences, numeric_jvp

import s2sgrad as sg

RNG = np.random.default_rng(1402)


def squash(a, b):
    return np.tanh(a) * b


def scale(a, b):
    return a * b


def smooth_max(a):
    return np.log(np.sum(np.exp(a)))


def stats(a):
    return np.mean(a), a.shape, "stats", np.sum


class Layer:
    def __init__(self, k):
        self.k = k

    def __call__(self, v):
        return np.sin(v * self.k) * v

    def forward(self, v, w):
        return np.tanh(v) * w * self.k


def functions_from_a_list(x, y):
    r = x * 0.0
    for fn in [scale, squash]:
        r = r + fn(np.log1p(x**2), y)
    return np.sum(r**2) * 0.5


def numpy_functions_from_a_list(x, y):
    fs = [np.sin, np.tanh, smooth_max]
    r = sum(fn((x**2) * y) for fn in fs)
    return np.sum(np.sin(r))


def function_from_a_tuple(x, y):
    m, shape, label, how = stats(np.log1p(x**2))
    return np.sum((m * y + len(shape) + how(y * x)) ** 2)


def sorted_keys_of_a_dict(x, y):
    p = {"w": np.log1p(x**2), "b": y * 0.5, "c": y**2}
    r = x * 0.0
    for k in sorted(p):
        r = r * 0.5 + p[k] * x
    return np.sum(r**2) * 0.5


def layer_objects(x, y):
    h = x * y
    for layer in [Layer(0.5), Layer(1.5)]:
        h = layer(h)
    return np.sum(h**2)


def bound_methods_of_layers(x, y):
    h = x
    for layer in [Layer(0.5), Layer(-1.2)]:
        h = layer.forward(h, y)
    return np.sum(h * x)


def apply(fn, v, w):
    return fn(v, w) * w


def functions_passed_in(x, y):
    return np.sum(apply(squash, x, y) ** 2) + np.sum(apply(scale, np.sin(x), y))


def twice(fn, v):
    return fn(fn(v))


def dispatch_inside_a_helper(x, y):
    return np.sum(twice(np.tanh, x * y) * x) + np.sum(twice(smooth_max, x) * y)


def one_function_called_twice(x, y):
    fs = [squash]
    a = fs[0](x, y)
    return np.sum(a * fs[0](a, x))


PROGRAMS = [
    functions_from_a_list,
    numpy_functions_from_a_list,
    function_from_a_tuple,
    sorted_keys_of_a_dict,
    layer_objects,
    bound_methods_of_layers,
    functions_passed_in,
    dispatch_inside_a_helper,
    one_function_called_twice,
]


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("size", [1, 3, 5])
def test_hvp_by_source_transformation(f, size):
    x, y = RNG.uniform(-1, 1, size), RNG.uniform(-1, 1, size)
    assert_hvp_matches_differences(f, (x, y), mode="s2s", seed=size)
    assert_hvp_matches_differences(f, (x, y), mode="auto", seed=size)


@pytest.mark.parametrize("f", PROGRAMS[:4], ids=lambda f: f.__name__)
def test_hessian_and_jvp_of_the_gradient(f):
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    v = RNG.normal(size=3)
    hessian = sg.hessian(f, mode="s2s")(x, y)
    expected = np.stack(
        [numeric_jvp(lambda a: sg.grad(f, mode="tape")(a, y), [x], 0, e) for e in np.eye(3)],
        axis=1,
    )
    assert_close(hessian, expected, rtol=1e-4, atol=1e-6)
    _, tangent = sg.jvp(lambda a: sg.grad(f, mode="s2s")(a, y), (x,), (v,), mode="s2s")
    assert_close(tangent, expected @ v, rtol=1e-4, atol=1e-6)


def activation_from_a_closure(x, y):
    h = x * y
    act = [lambda v: np.tanh(v) * y]  # holds y: its pullback is refused, not followed
    return np.sum(act[0](h) ** 2)


def test_a_function_holding_values_is_still_refused():
    x, y = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    with pytest.raises(sg.UnsupportedError, match="mode='tape'") as refused:
        sg.hvp(activation_from_a_closure, (x, y), (x, y), mode="s2s")
    assert f"{__file__}:" in str(refused.value)
    assert_hvp_matches_differences(activation_from_a_closure, (x, y), mode="auto")
