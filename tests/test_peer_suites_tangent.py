"""What Tangent's suite (google/tangent: ``tests/functions.py`` and its reverse-mode,
forward-mode, reverse-over-reverse and Hessian-vector-product drivers) asks, asked of
s2sgrad: small functions of numbers, arrays, tuples and dicts differentiated with respect to
each argument, in every engine on a first and a later call, in forward mode and to second
order, against central differences in float64.

The functions are written anew for the kinds that suite covers and the ones
``test_peer_tangent_functions.py`` does not: several arguments, a branch on two of them,
loops before and after a branch, calls of helpers and of helpers calling helpers, a helper
defined inside, tuples and dicts as arguments, packing and picking by a given index,
comprehensions, ``while``, subscripts written in a copy, early ``return``, conditional
expressions, calls with keywords and attribute reads (``.T``, ``.shape``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import call_twice, numeric_grad
from peer_suite_checks import MODES, check_function

import s2sgrad as sg

rng = np.random.default_rng(1010017)


def normal(*shape):
    return rng.standard_normal(shape)


def identity(a):
    return a


def unary_sub(a):
    return -a


def cast_sum(x):
    return np.sum(np.array(x))


def overwrite_call(x):
    x = np.sum(x)
    x = x * x
    return x


def saxpy(a, b, c):
    return a * b + c


def mul(a, b):
    return a * b


def add(a, b):
    return a + b


def saxpy_call(a, b, c):
    return add(mul(a, b), c)


def saxpy_overwrite(a, b, c):
    t = a * b
    t = t + c
    return t


def gradname_aliasing(a):
    da = a * a
    return da


def fn_multiply(a):
    return np.multiply(a, 3.0)


def deep_list(x):
    b = [1, x[0] * x[1] * x[2], 3]
    return np.sum(b)


def subscript_product(x):
    a = x[0]
    b = x[1]
    return a * b


def subscript_written_in_a_copy(x):
    x = np.copy(x)
    a = x[0]
    b = x[1]
    x[0] = a * b
    return np.sum(x)


def list_and_subscript(a):
    x = [1.0, a, 3.0]
    return x[0] * x[1]


def multivar_if(a, b):
    if a > b:  # noqa: SIM108 (a branch statement is what is tested)
        a = a * a
    else:
        a = a * b
    return a


def serial_if_then_for(a, n):
    if a > 0:
        a = a * a
    a = 2.0 * a
    for _ in range(n):
        a = a * a
    return a


def serial_for_then_if(a, n):
    for _ in range(n):
        a = a * a
    a = 2.0 * a
    if a > 0:
        a = a * a
    return a


def devilish_nested_if(a):
    if a > 0:
        a = a * 3.0
        if a < 10:  # noqa: SIM108 (a branch statement is what is tested)
            a = a * a
        else:
            a = a * 2.0
    return a


def overwrite_non_arg(a):
    b = a
    b = b * 3.0
    return b


def third_pow(a):
    return a * a * a


def direct_third_pow(a):
    return a**3


def iter_third_pow(a):
    out = a
    for _ in range(3 - 1):
        out = out * a
    return out


def cond_iterpower(a):
    if a < 20:
        for _ in range(3):
            a = a * a
    return a


def super_iterpower(a):
    for _ in range(3):
        a = a * a * a
    return a


def numpy_mean(x):
    return np.mean(x)


def numpy_exp2(a):
    return np.exp(np.exp(a))


def numpy_sqrt(a):
    return np.sqrt(a)


def _inner(a, b):
    return a * b


def mul_with_call(a, b):
    return _inner(a, b)


def if_mul_with_call(a, b):
    if a > b:  # noqa: SIM108 (a branch statement is what is tested)
        o = _inner(a, b)
    else:
        o = _inner(b, a)
    return o


def nested_call(a, b):
    return mul_with_call(a, b)


def iterpower_with_nested_def(a, n):
    def times(u, v):
        return u * v

    for _ in range(n):
        a = times(a, a)
    return a


def unpacking_saxpy(packed):
    a, b, c = packed
    return a * b + c


def dict_saxpy(val):
    return val["a"] * val["b"] + val["c"]


def dict_wrapper(packed):
    a, b, c = packed
    return dict_saxpy(dict(a=a, b=b, c=c))


def passthru_pack(a, b, c, i):
    x = a, b, c
    return x[i]


def passthru_unpack(packed):
    a, b, c = packed
    return a


def cart2polar_radius_plus_angle(a, b):
    r = np.sqrt(a**2.0 + b**2.0)
    theta = np.arctan2(b, a)
    return r + 0.5 * theta


def listcomp(x):
    return np.sum([i * 3 for i in x])


def active_subscript(x):
    y = np.zeros_like(x)
    for i in range(len(x)):
        y[i] = x[i]
    return np.sum(y * y)


def slicing(x):
    return np.sum(x[1:] ** 2)


def bilinear(x, h, u, w, b):
    y = np.dot(x, w)
    y = y + np.dot(h, u)
    y = y + b
    y = np.tanh(y)
    return np.sum(y)


def gradgrad_pow(a, b):
    a = a**b
    return a


def gradgrad_chain_of_multcalls(a):
    b = mul(a, a)
    c = mul(b, b)
    d = mul(c, c)
    return d


def nested_dict(p):
    return p["i"]["j"] * p["i"]["k"]


def early_return(a, b):
    if a > b:
        return a * b
    c = a + b
    return c * c


def conditional_expression(a, b):
    return a * a if a > b else np.sin(b) * a


def keywords(x, y):
    return np.sum(np.clip(x * y, a_min=-0.5, a_max=0.7) + np.power(x, 2))


def attributes(x):
    return np.sum(x.T @ x) + x.shape[0] * np.sum(x.real)


def dict_comprehension(x):
    parts = {k: x[k] ** 2 for k in range(3)}
    return sum(parts.values())


def while_with_counter(a):
    i = 0
    while i < 4:
        a = np.sin(a) + a
        i += 1
    return a


def augmented_everything(x, y):
    z = x.copy()
    z += y
    z *= y
    z -= x
    z /= 2.0 + y * y
    z **= 2
    return np.sum(z)


def tuple_swap(a, b):
    for _ in range(3):
        a, b = b, a * b
    return a + b


def loop_over_array_rows(x):
    total = 0.0
    for row in x:
        total = total + np.sum(row * row[::-1])
    return total


def zip_and_enumerate(x, y):
    total = 0.0
    for i, (u, v) in enumerate(zip(x, y)):
        total = total + i * u * v
    return total


def helper_with_defaults(a, scale=2.0, power=3):
    return scale * a**power


def calls_with_defaults(a):
    return helper_with_defaults(a) + helper_with_defaults(a, power=2, scale=a)


P = normal(3)
A, B = 0.7, -1.3

# (name, function, arguments, second order checked)
CASES = [
    ("id", identity, [A], True),
    ("unary_sub", unary_sub, [A], True),
    ("sum", np.sum, [normal(4)], True),
    ("cast_sum", cast_sum, [normal(4)], True),
    ("overwrite_call", overwrite_call, [normal(4)], True),
    ("tanh", lambda a: np.tanh(a), [A], True),  # NumPy 1.26: a ufunc has no signature
    ("saxpy", saxpy, [A, B, 0.4], True),
    ("saxpy_call", saxpy_call, [A, B, 0.4], True),
    ("saxpy_overwrite", saxpy_overwrite, [A, B, 0.4], True),
    ("gradname_aliasing", gradname_aliasing, [A], True),
    ("fn_multiply", fn_multiply, [A], True),
    ("deep_list", deep_list, [normal(3)], True),
    ("subscript_product", subscript_product, [normal(3)], True),
    ("subscript_written_in_a_copy", subscript_written_in_a_copy, [normal(3)], True),
    ("list_and_subscript", list_and_subscript, [A], True),
    ("multivar_if_first", multivar_if, [A, B], True),
    ("multivar_if_second", multivar_if, [B, A], True),
    ("serial_if_then_for", serial_if_then_for, [A, 2], True),
    ("serial_for_then_if", serial_for_then_if, [B, 1], True),
    ("devilish_nested_if", devilish_nested_if, [A], True),
    ("devilish_nested_if_big", devilish_nested_if, [4.0], True),
    ("overwrite_non_arg", overwrite_non_arg, [A], True),
    ("third_pow", third_pow, [B], True),
    ("direct_third_pow", direct_third_pow, [B], True),
    ("iter_third_pow", iter_third_pow, [B], True),
    ("cond_iterpower", cond_iterpower, [A], True),
    ("super_iterpower", super_iterpower, [0.9], True),
    ("numpy_mean", numpy_mean, [normal(5)], True),
    ("numpy_exp2", numpy_exp2, [A], True),
    ("numpy_sqrt", numpy_sqrt, [1.7], True),
    ("mul_with_call", mul_with_call, [A, B], True),
    ("if_mul_with_call", if_mul_with_call, [A, B], True),
    ("if_mul_with_call_else", if_mul_with_call, [B, A], True),
    ("nested_call", nested_call, [A, B], True),
    ("iterpower_with_nested_def", iterpower_with_nested_def, [A, 2], True),
    ("unpacking_saxpy", unpacking_saxpy, [(A, B, 0.4)], True),
    ("dict_saxpy", dict_saxpy, [{"a": A, "b": B, "c": 0.4}], True),
    ("dict_wrapper", dict_wrapper, [(A, B, 0.4)], True),
    ("passthru_pack", passthru_pack, [A, B, 0.4, 1], True),
    ("passthru_unpack", passthru_unpack, [(A, B, 0.4)], True),
    ("cart2polar", cart2polar_radius_plus_angle, [A, B], True),
    ("listcomp", listcomp, [normal(4)], True),
    ("active_subscript", active_subscript, [normal(4)], True),
    ("slicing", slicing, [normal(4)], True),
    (
        "bilinear",
        bilinear,
        [normal(2, 3), normal(2, 4), normal(4, 5), normal(3, 5), normal(5)],
        True,
    ),
    ("gradgrad_pow", gradgrad_pow, [1.3, 2.2], True),
    ("gradgrad_chain_of_multcalls", gradgrad_chain_of_multcalls, [0.9], True),
    ("nested_dict", nested_dict, [{"i": {"j": A, "k": B}}], True),
    ("early_return_taken", early_return, [A, B], True),
    ("early_return_not_taken", early_return, [B, A], True),
    ("conditional_expression", conditional_expression, [A, B], True),
    ("conditional_expression_else", conditional_expression, [B, A], True),
    ("keywords", keywords, [normal(2, 3), normal(3)], False),
    ("attributes", attributes, [normal(3, 2)], True),
    ("while_with_counter", while_with_counter, [A], True),
    ("augmented_everything", augmented_everything, [normal(2, 3), normal(3)], True),
    ("tuple_swap", tuple_swap, [A, B], True),
    ("loop_over_array_rows", loop_over_array_rows, [normal(3, 4)], True),
    ("zip_and_enumerate", zip_and_enumerate, [normal(4), normal(4)], True),
    ("calls_with_defaults", calls_with_defaults, [A], True),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name, f, args, second", CASES, ids=[c[0] for c in CASES])
def test_each_argument_forward_and_second_order(name, f, args, second, mode):
    check_function(f, args, mode, second_order=second, key=name)


def test_sum_of_a_dicts_values_is_refused_by_s2s_at_the_line_and_taped_in_auto():
    x = normal(3)
    with pytest.raises(sg.UnsupportedError, match=r"\.values\(\) of a dict") as refused:
        sg.grad(dict_comprehension, mode="s2s")(x)
    assert f"{__file__}:" in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = call_twice(sg.grad(dict_comprehension, mode="auto"), x)
    np.testing.assert_allclose(gradient, numeric_grad(dict_comprehension, [x], 0), rtol=1e-6)
