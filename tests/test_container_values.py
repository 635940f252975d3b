"""Tuples and dicts made inside a differentiated function, read more than once."""

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(21)


def pair_of(x):
    return x * 2.0, np.sin(x)


def tuple_read_twice(x):
    t = pair_of(x)
    return np.sum(t[0] * t[1]) + np.sum(t[1])


def tuple_literal(x):
    t = (x**2, np.cos(x))
    return np.sum(t[0]) + np.sum(t[1] * t[0])


def tuple_with_an_unread_entry(x):
    t = (x**2, np.cos(x), np.exp(x))
    return np.sum(t[0] * t[1])


def slogdet_used_twice(a):
    s = np.linalg.slogdet(a)
    return s[0] * s[1] + s[1] ** 2


def dict_literal(x):
    parts = {"square": x**2, "sine": np.sin(x), "unused": x * 3.0}
    return np.sum(parts["square"] * parts["sine"]) + np.sum(parts["sine"])


def dict_read_with_a_computed_key(x):
    parts = {"square": x**2, "sine": np.sin(x), "unused": x * 3.0}
    key = "sine"
    return np.sum(parts["square"] * parts[key]) + np.sum(parts["sine"])


def dict_in_a_loop(x):
    total = 0.0
    for i in range(3):
        d = {"scaled": x * (i + 1.0), "shift": x + i}
        total = total + np.sum(d["scaled"] * d["shift"])
    return total


CASES = [
    (tuple_read_twice, (4,)),
    (tuple_literal, (3, 2)),
    (dict_literal, (5,)),
    (tuple_with_an_unread_entry, (2, 3)),
    (dict_in_a_loop, (3,)),
    (dict_read_with_a_computed_key, (4,)),
]


@pytest.mark.parametrize("function, shape", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_gradient_matches_finite_differences(function, shape, mode):
    x = RNG.uniform(-1.5, 1.5, size=shape)
    gradient = call_twice(sg.grad(function, mode=mode), x)
    assert_close(gradient, numeric_grad(function, (x,), 0), rtol=1e-5, atol=1e-7)


def test_slogdet_read_twice():
    a = np.array([[2.0, 0.3, 0.1], [0.1, 1.5, 0.2], [0.0, 0.4, 1.2]])
    gradient = call_twice(sg.grad(slogdet_used_twice, mode="s2s"), a)
    assert_close(gradient, numeric_grad(slogdet_used_twice, (a,), 0), rtol=1e-5, atol=1e-7)


def outputs_as_dict(x):
    return {"square": x**2, "sine": np.sin(x)}


def test_vjp_and_jvp_of_a_function_returning_a_dict():
    x = RNG.standard_normal(3)
    out, pullback = sg.vjp(outputs_as_dict, x, mode="s2s")
    np.testing.assert_allclose(out["square"], x**2)
    (cotangent,) = pullback({"square": np.ones(3), "sine": 2.0 * np.ones(3)})
    np.testing.assert_allclose(cotangent, 2 * x + 2.0 * np.cos(x))
    value, tangent = sg.jvp(outputs_as_dict, (x,), (np.ones(3),), mode="s2s")
    np.testing.assert_allclose(tangent["square"], 2 * x)
    np.testing.assert_allclose(tangent["sine"], np.cos(x))


def test_second_derivative_through_a_dict():
    def f(x):
        d = {"a": x**3, "b": x * 2.0}
        return d["a"] + d["b"] * d["a"]

    x = 0.7
    second = sg.grad(sg.grad(f, mode="s2s"), mode="s2s")(x)
    assert second == pytest.approx(6 * x + 24 * x**2)  # f = x**3 + 2 x**4


@pytest.mark.parametrize(
    "function, read, unread",
    [
        (dict_literal, "dparts_sine", "parts_unused"),  # entries made variables
        (tuple_with_an_unread_entry, "dt[1]", "dt[2]"),
    ],
)
def test_entries_nobody_reads_get_no_derivative_code(function, read, unread):
    source = sg.source(sg.grad(function, mode="s2s"))
    assert read in source and unread not in source, source


def _unflatten(flat):
    sizes = [("a", (2, 2)), ("b", (2,))]
    parts = {}
    start = 0
    for name, shape in sizes:
        stop = start + int(np.prod(shape))
        parts[name] = flat[start:stop].reshape(shape)
        start = stop
    return parts


def _loss_of_flat_parameters(flat):
    p = _unflatten(flat)
    return np.sum(p["a"] @ p["b"])


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_a_dict_filled_entry_by_entry(mode):
    """Refused by source transformation until its entry writes became a new dict each
    (``compiler/passes/dict_entries.py``)."""
    flat = np.random.default_rng(2).normal(size=6)
    gradient = sg.grad(_loss_of_flat_parameters, mode=mode)
    expected = numeric_grad(_loss_of_flat_parameters, (flat,), 0)
    for _ in ("first call", "later call"):
        np.testing.assert_allclose(gradient(flat), expected, rtol=1e-6)


def sum_of_a_tuple(t):
    return np.sum(t)


def mean_plus_max_of_a_tuple(t):
    return np.mean(t) + np.max(t) * t[0]


def product_of_a_list_of_arrays(t):
    return np.sum(np.prod(t, axis=0) ** 2)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
@pytest.mark.parametrize(
    "function, argument",
    [
        (sum_of_a_tuple, (0.7, -1.2, 2.0)),
        (mean_plus_max_of_a_tuple, (0.7, -1.2, 2.0)),
        (product_of_a_list_of_arrays, [np.array([0.5, -1.0]), np.array([1.5, 0.3])]),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_a_container_argument_that_numpy_reads_as_one_array(function, argument, mode):
    """np.sum(t) of a tuple argument: the rule's cotangent is one array, which goes back to
    the entries (it was dropped, and the gradient was zero)."""

    def flat(v):
        return function(type(argument)(v) if isinstance(argument[0], float) else list(v))

    values = np.array(argument, dtype=float)
    expected = numeric_grad(flat, (values,), 0)
    gradient = call_twice(sg.grad(function, mode=mode), argument)
    assert type(gradient) is type(argument) and len(gradient) == len(argument)
    assert_close(np.array(gradient, dtype=float), expected)
