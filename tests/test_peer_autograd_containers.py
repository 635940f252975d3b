"""What autograd's ``test_dict.py``, ``test_list.py``, ``test_tuple.py`` and
``test_builtins.py`` ask of containers, asked of s2sgrad: parameters in dicts, lists,
tuples and named tuples, containers built, read and repeated inside the function, in every
engine, on a first and a later call, against central differences.

A tuple repeated with ``*`` that source transformation took for a number
(``t = (x,) + (x ** 2,); t * 2``) is refused by mode "s2s" at the user's line, and mode
"auto" then runs the function on the tape instead of passing the refusal on.
"""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]
rng = np.random.default_rng(980023)


def normal(*shape):
    return rng.standard_normal(shape)


def repeated_tuple(x):
    t = (x,) + (x**2,)
    t = t * 2
    return np.sum(t[3] * t[0]) + len(t)


def repeated_list(x):
    items = [x, np.sin(x)] * 2
    return np.sum(items[3] * items[0])


def items_weighted(d):
    total = 0.0
    for key, value in d.items():
        total = total + np.sum(value**2) * (2.0 if key == "a" else 1.0)
    return total


def nested_parameters(p):
    return np.sum(np.tanh(p["layer"]["w"] @ p["layer"]["b"])) + p["scale"] ** 2


def list_of_layers(params, x):
    for w, b in params:
        x = np.tanh(x @ w + b)
    return np.sum(x**2)


def unpacked_helper_results(x):
    def helper(y):
        return y**2, np.sin(y), (y, 2 * y)

    a, b, (c, d) = helper(x)
    return np.sum(a * b + c * d)


def starred_unpacking(x):
    first, *rest = (x, x**2, x**3)
    return np.sum(first * rest[1] + rest[0])


def list_updated_by_index(x):
    items = [x, x, x]
    items[1] = x**2
    items[-1] = items[1] * 3
    return np.sum(items[0] + items[1] * items[2])


Layer = namedtuple("Layer", ["w", "b"])


def named_layer(p, x):
    return np.sum(np.tanh(x @ p.w + p.b))


W23 = normal(2, 3)

# (name, function, arguments)
CASES = [
    ("repeated_tuple", repeated_tuple, [normal(3)]),
    ("repeated_list", repeated_list, [normal(3)]),
    ("dict_items", items_weighted, [{"a": normal(3), "b": normal(2)}]),
    ("nested_dict", nested_parameters, [{"layer": {"w": W23, "b": normal(3)}, "scale": 0.7}]),
    ("list_of_layers", list_of_layers, [[(W23, normal(3)), (W23.T, normal(2))], normal(4, 2)]),
    ("unpacked_helper_results", unpacked_helper_results, [normal(3)]),
    ("starred_unpacking", starred_unpacking, [normal(2)]),
    ("list_updated_by_index", list_updated_by_index, [normal(2)]),
    ("named_tuple", named_layer, [Layer(normal(2, 3), normal(3)), normal(4, 2)]),
    ("builtin_sum_start", lambda x: sum([x, x], 1.0) ** 2, [0.5]),
    ("builtin_max_of_list", lambda x: max([x[0], x[1] * 2, x[2]]) ** 2, [np.array([0.3, -1, 2])]),
]  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f, args", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_central_differences(name, f, args, mode):
    if f is repeated_tuple and mode == "s2s":
        pytest.skip("refused by source transformation: the test below")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # mode="auto" may use the tape
        gradients = call_twice(sg.grad(f, wrt=tuple(range(len(args))), mode=mode), *args)
    for i, gradient in enumerate(gradients):
        assert_close(gradient, numeric_grad(f, args, i), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", [repeated_tuple, repeated_list])
def test_forward_and_second_order_of_repeated_sequences_in_auto(f):
    x, v = normal(3), normal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        _, tangent = sg.jvp(f, (x,), (v,), mode="auto")
        hessian = sg.hessian(f, mode="auto")(x)
    np.testing.assert_allclose(tangent, numeric_jvp(f, [x], 0, v), rtol=1e-5)
    expected = np.stack(
        [numeric_jvp(sg.grad(f, mode="tape"), [x], 0, e, step=1e-5) for e in np.eye(3)]
    )
    np.testing.assert_allclose(hessian, expected, rtol=1e-4, atol=1e-6)


def test_a_repeated_tuple_is_refused_by_source_transformation_at_the_users_file():
    with pytest.raises(sg.UnsupportedError, match="repeated with '\\*'") as refused:
        sg.grad(repeated_tuple, mode="s2s")(normal(3))
    assert f"{__file__}:" in str(refused.value)


def test_auto_warns_once_and_takes_the_repeated_tuple_to_the_tape():
    def repeated_pair(x):  # a function of its own: a transform made before warned already
        t = (np.cos(x),) + (x**3,)
        t = t * 2
        return np.sum(t[3] * t[0])

    x = normal(3)
    gradient = sg.grad(repeated_pair, mode="auto")
    with pytest.warns(sg.S2SGradWarning, match="repeated with"):
        first = gradient(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the later calls go to the tape without a word
        second = gradient(x)
    expected = 3 * x**2 * np.cos(x) - x**3 * np.sin(x)
    assert_close(first, expected)
    assert_close(second, expected)
