"""Tangent's test functions (google/tangent, ``tests/functions.py``), written anew and asked
of s2sgrad: small functions of one to three numbers with branches that overwrite their
argument, loops of a fixed or a given count, calls of helpers, lists and dicts built and
read, ``while`` loops, augmented assignment and gradients of gradients, in every engine, on
a first and a later call, against central differences; forward mode and second order too.

A class the differentiated function defines is refused by source transformation (mode
"auto" takes the tape); the refusal names the class by its own name, the user's, not as
"s2sgrad's own" code (the generated code defines the class again, in s2sgrad's module).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "auto", "tape"]


def overwrite_if(a):
    if a > 0:  # noqa: SIM108 (a branch statement is what is tested)
        a = a * 3.0
    else:
        a = a * 2.0
    return a


def nested_if(a):
    if a > 0:
        if a < 10:
            a = a * a
    else:
        a = 3.0 * a
    return a


def multiarg_if(a):
    if a * a / 3.0 > 0:  # noqa: SIM108 (a branch statement is what is tested)
        b = 3.0
    else:
        b = 4.0
    a = a * b
    if a < b - a * b:
        a = a * a
    elif a > b + 3.0 * a:
        if a / 2.0 < 0:  # noqa: SIM108 (a branch statement is what is tested)
            a = a / b
        else:
            a = a * b
    else:
        a = -a
    return a


def serial_if(a):
    if a > 0:
        a = a * a
    a = a + a
    if a < 0:
        a = 3.0 * a
    return a


def overwrite_ifelse(a):
    if a > 0:
        a = a * 3.0
    elif a < 0:
        a = a * 2.0
    else:
        a = 1.0 * a
    return a


def iter_third_power(a):
    out = 1
    for _ in range(3):
        out = out * a
    return out


def conditional_powers(a):
    for _ in range(3):
        if a < 20:
            a = a * a
    return a


def nested_powers(a):
    for _ in range(2):
        for _ in range(2):
            a = a * a
    return a


def _times(a, b):
    return a * b


def powers_by_call(a):
    for _ in range(2):
        a = _times(a, a)
    return a


def powers_by_local_def(a):
    def twice(u, v):
        return u * v

    for _ in range(2):
        a = twice(a, a)
    return a


def branch_by_call(a):
    b = 0.5
    if a > b:  # noqa: SIM108 (a branch statement is what is tested)
        out = _times(a, b)
    else:
        out = _times(b, a)
    return out


def dict_from_keywords(a):
    val = dict(a=a, b=a * 2, c=a**2)
    return val["a"] * val["b"] + val["c"]


def list_literal_sum(a):
    b = [1, a * a, 2]
    return np.sum(b)


def halve_while_big(a):
    while np.abs(a) > 0.1:
        a = a * 0.5
    return a


def augmented(a):
    x = a * a
    x *= x
    return x


def chain_of_products(a):
    b = a
    b = a * a
    c = b * b
    return c * c


def redefined_as_list(a):
    x = a
    x = [a]
    x = x[0]
    return x * a


def loop_with_break(a):
    for _ in range(10):
        if a > 5.0:
            break
        a = a * 2.0
    return a


def loop_with_continue(a):
    s = 0.0
    for i in range(5):
        if i % 2 == 0:
            continue
        s = s + a**i
    return s


SCALAR_FUNCTIONS = [
    overwrite_if, nested_if, multiarg_if, serial_if, overwrite_ifelse, iter_third_power,
    conditional_powers, nested_powers, powers_by_call, powers_by_local_def, branch_by_call,
    dict_from_keywords, list_literal_sum, halve_while_big, augmented, chain_of_products,
    redefined_as_list, loop_with_break, loop_with_continue,
]  # fmt: skip
POINTS = [-2.2, 0.6, 1.8]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", SCALAR_FUNCTIONS, ids=lambda f: f.__name__)
def test_scalar_functions_at_each_branch(f, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)  # mode="auto" may use the tape
        gradient = sg.grad(f, mode=mode)
        for a in POINTS:
            assert_close(call_twice(gradient, a), numeric_grad(f, [a], 0), rtol=1e-5)
            _, tangent = sg.jvp(f, (a,), (1.0,), mode=mode)
            assert tangent == pytest.approx(numeric_grad(f, [a], 0), rel=1e-5, abs=1e-7)
            second = sg.grad(sg.grad(f, mode=mode), mode=mode)(a)
            expected = numeric_grad(sg.grad(f, mode="tape"), [a], 0, step=1e-5)
            assert second == pytest.approx(expected, rel=1e-4, abs=1e-6)


def powers_of_given_count(a, n):
    for _ in range(n):
        a = a * a
    a = 2.0 * a
    for _ in range(n + 1):
        a = a * 3.0
    return a


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [0, 1, 3])
def test_loops_of_a_given_count(n, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        for a in (-0.8, 0.6):
            actual = call_twice(sg.grad(powers_of_given_count, mode=mode), a, n)
            assert actual == pytest.approx(numeric_grad(powers_of_given_count, [a, n], 0))


def rnn(inputs, w):
    h = np.zeros((4, 3))
    for t in range(3):
        h[t + 1] = np.tanh(np.dot(inputs[t], w) + h[t])
    return np.sum(h[1:] ** 2)


def copied_into_buffer(x):
    h = np.zeros((len(x), 3))
    for t in range(len(h)):
        h[t] = x[t]
    return np.sum(h * np.arange(3.0))


def written_subscript(x):
    y = x**2.0
    x = x.copy()
    x[0] = y[1] * y[2]
    return np.sum(x * y)


def logistic_regression(inputs, labels, w, b):
    prediction = 0.5 * (np.tanh(np.dot(inputs, w) + b) + 1)
    probabilities = prediction * labels + (1 - prediction) * (1 - labels)
    return -np.sum(np.log(probabilities))


rng = np.random.default_rng(980031)
ARRAY_CASES = [
    ("rnn", rnn, [rng.standard_normal((3, 2)), rng.standard_normal((2, 3))]),
    ("copied_into_buffer", copied_into_buffer, [rng.standard_normal(5)]),
    ("written_subscript", written_subscript, [rng.standard_normal(5)]),
    ("extended_slice", lambda x: np.sum(x[::2, np.newaxis] ** 2), [rng.standard_normal(5)]),
    (
        "logistic_regression",
        logistic_regression,
        [
            rng.standard_normal((4, 3)),
            (rng.standard_normal((4, 2)) > 0).astype(float),
            rng.standard_normal((3, 2)),
            rng.standard_normal(2),
        ],
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f, args", ARRAY_CASES, ids=[c[0] for c in ARRAY_CASES])
def test_array_functions(name, f, args, mode):
    wrt = tuple(range(len(args)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradients = call_twice(sg.grad(f, wrt=wrt, mode=mode), *args)
        tangents = tuple(rng.standard_normal(np.shape(a)) for a in args)
        _, tangent = sg.jvp(f, tuple(args), tangents, mode=mode)
    for i in wrt:
        assert_close(gradients[i], numeric_grad(f, args, i), rtol=1e-5, atol=1e-6)
    expected = sum(numeric_jvp(f, args, i, t) for i, t in zip(wrt, tangents))
    assert tangent == pytest.approx(expected, rel=1e-5, abs=1e-6)


def made_class(a):
    class Scaled:
        def __init__(self, w):
            self.w = w * 1.0  # computes: no record (runtime/records.py)

        def __call__(self, x):
            return self.w * x

    return Scaled(a)(a + 1.0)


def made_record(a):
    class Scaled:
        def __init__(self, w):
            self.w = w

        def __call__(self, x):
            return self.w * x

    return Scaled(a)(a + 1.0)


def test_a_class_defined_inside_is_named_as_the_users_when_refused():
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.grad(made_class, mode="s2s")(0.7)
    message = str(refused.value)
    assert f"{__file__}:" in message
    assert "Scaled (defined inside the function being differentiated)" in message
    assert "s2sgrad's own" not in message
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        assert call_twice(sg.grad(made_class, mode="auto"), 0.7) == pytest.approx(2 * 0.7 + 1)


def test_a_record_class_defined_inside_is_differentiated_by_source():
    assert call_twice(sg.grad(made_record, mode="s2s"), 0.7) == pytest.approx(2 * 0.7 + 1)
