"""The types of values s2sgrad differentiates: floats, NumPy floating scalars, exact
float ``np.ndarray``s, complex ones (tests/test_complex.py), and dicts, lists, tuples and
NamedTuples of them. Anything else among the arguments (``np.matrix``, masked arrays,
duck arrays, …) gave
silently wrong derivatives; every transform refuses it, in every mode, with a TypeError
naming the function's file and line and what to pass instead."""

from __future__ import annotations

import inspect
import warnings
from fractions import Fraction
from typing import NamedTuple

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

HERE = "test_argument_types.py"
MODES = ("s2s", "tape", "auto")


class DuckArray:
    """A minimal duck array, like Dask's or xarray's: NumPy calls dispatch to it."""

    def __init__(self, data):
        self.data = np.asarray(data, dtype=float)

    shape = property(lambda self: self.data.shape)
    dtype = property(lambda self: self.data.dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = [i.data if isinstance(i, DuckArray) else i for i in inputs]
        return DuckArray(getattr(ufunc, method)(*inputs, **kwargs))

    def __array_function__(self, func, types, args, kwargs):
        args = [a.data if isinstance(a, DuckArray) else a for a in args]
        return DuckArray(func(*args, **kwargs))

    def __mul__(self, other):
        return np.multiply(self, other)

    __rmul__ = __mul__


def square_sum(x):
    return np.sum(x**2)


def scaled_sum(x, c):
    return np.sum(x * c)


def elementwise(x):
    return np.sin(x) * 2.0


with warnings.catch_warnings():
    warnings.simplefilter("ignore", PendingDeprecationWarning)  # np.matrix's own warning
    _MATRIX = np.matrix([[1.0, 2.0], [3.0, 4.0]])
_MASKED = np.ma.array([1.0, 2.0, 3.0], mask=[False, True, False])
NOT_UNDERSTOOD = {
    "matrix": (_MATRIX, "np.asarray(x)"),
    "masked": (_MASKED, "np.asarray(x)"),
    "duck": (DuckArray([1.0, 2.0]), "np.asarray(x, dtype=float)"),
    "fraction": (Fraction(1, 3), "np.asarray(x, dtype=float)"),
    "object array": (np.array([1.0, 2.0], dtype=object), "np.asarray(x, dtype=float)"),
    "in a dict": ({"w": np.ones(2), "m": _MATRIX}, "np.asarray(x)"),
}

TRANSFORMS = {
    "grad": lambda f, x, mode: sg.grad(f, mode=mode)(x),
    "value_and_grad": lambda f, x, mode: sg.value_and_grad(f, mode=mode)(x),
    "vjp": lambda f, x, mode: sg.vjp(f, x, mode=mode),
    "jvp": lambda f, x, mode: sg.jvp(f, (x,), (x,), mode=mode),
    "jacobian": lambda f, x, mode: sg.jacobian(f, mode=mode)(x),
    "jacfwd": lambda f, x, mode: sg.jacfwd(f, mode=mode)(x),
    "hessian": lambda f, x, mode: sg.hessian(f, mode=mode)(x),
    "hvp": lambda f, x, mode: sg.hvp(f, (x,), (x,), mode=mode),
}


def _assert_refusal(error, function, advice):
    message = str(error.value)
    line = inspect.getsourcelines(function)[1]
    assert f"{HERE}:{line}" in message, message
    assert advice in message, message


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("case", NOT_UNDERSTOOD)
def test_a_differentiated_argument_of_a_type_not_understood_is_refused(case, transform, mode):
    value, advice = NOT_UNDERSTOOD[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before any engine runs: no fallback
        with pytest.raises(TypeError) as error:
            TRANSFORMS[transform](square_sum, value, mode)
    _assert_refusal(error, square_sum, advice)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["matrix", "masked", "duck"])
def test_a_constant_argument_of_an_array_type_not_understood_is_refused(case, mode):
    """``x * m`` is a matrix product for an np.matrix m, and a masked array hides
    elements from ``np.sum``: as constants too, they made derivatives wrong."""
    value, advice = NOT_UNDERSTOOD[case]
    x = np.ones(np.shape(value.data if case == "duck" else value))
    calls = [
        lambda: sg.grad(scaled_sum, mode=mode)(x, value),
        lambda: sg.grad(scaled_sum, mode=mode)(x, c=value),
        lambda: sg.vjp(scaled_sum, x, value, mode=mode),
        lambda: sg.jacobian(scaled_sum, mode=mode)(x, value),
    ]
    for call in calls:
        with pytest.raises(TypeError) as error:
            call()
        _assert_refusal(error, scaled_sum, advice.replace("(x", "(c"))


def test_the_message_says_what_the_type_does_wrong():
    with pytest.raises(TypeError, match=r"numpy\.matrix.*\* and \*\* are matrix products"):
        sg.grad(square_sum)(_MATRIX)
    with pytest.raises(TypeError, match=r"MaskedArray.*masked elements"):
        sg.grad(square_sum)(_MASKED)


class Pair(NamedTuple):
    a: np.ndarray
    b: float


UNDERSTOOD = {
    "float": 0.7,
    "float64 scalar": np.float64(-0.3),
    "float32 array": np.linspace(-1.0, 1.0, 4, dtype=np.float32),
    "float64 array": np.linspace(-1.0, 1.0, 6).reshape(2, 3),
    "list": [np.array([0.5, -0.2]), 1.5],
    "tuple": (np.array([0.5, -0.2]), 1.5),
    "dict": {"w": np.array([[0.1, 0.2]]), "b": -0.4},
    "named tuple": Pair(np.array([0.3, 0.6]), 0.9),
}


def tree_loss(x):
    if isinstance(x, dict):
        return np.sum(np.sin(x["w"]) ** 2) * x["b"]
    if isinstance(x, (list, tuple)):
        return np.sum(np.tanh(x[0]) * x[1])
    return np.sum(np.sin(x) * x)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", UNDERSTOOD)
def test_understood_types_are_still_differentiated(case, mode):
    value = UNDERSTOOD[case]
    got = call_twice(sg.grad(tree_loss, mode=mode), value)
    as_float = _to_float64(value)
    expected = numeric_grad(tree_loss, (as_float,), 0)
    tolerance = 1e-3 if case == "float32 array" else 1e-5
    assert_close(_to_float64(got), expected, rtol=tolerance, atol=tolerance)


def _to_float64(value):
    if isinstance(value, dict):
        return {k: _to_float64(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*map(_to_float64, value))
    if isinstance(value, (list, tuple)):
        return type(value)(map(_to_float64, value))
    if isinstance(value, (float, np.floating)):
        return float(value)
    return np.asarray(value, dtype=np.float64)


@pytest.mark.parametrize("mode", MODES)
def test_non_numeric_arguments_are_not_differentiated_by_vjp(mode):
    """Strings, functions and other objects are left alone: their cotangent is None."""

    def f(x, how, scale):
        return np.sum(getattr(np, how)(x)) * scale(2.0)

    x = np.array([0.2, 0.4])
    out, pullback = sg.vjp(f, x, "sin", float, mode=mode)
    dx, dhow, dscale = pullback(1.0)
    assert dhow is None and dscale is None
    assert_close(dx, 2.0 * np.cos(x))


@pytest.mark.parametrize("mode", MODES)
def test_second_order_still_works_for_arrays(mode):
    x = np.array([0.3, -0.8, 1.1])
    hessian = sg.hessian(lambda v: np.sum(np.sin(v) * v), mode=mode)(x)
    expected = np.diag(2 * np.cos(x) - x * np.sin(x))
    assert_close(hessian, expected, rtol=1e-7, atol=1e-9)
    (product,) = sg.hvp(lambda v: np.sum(np.sin(v) * v), (x,), (np.ones(3),), mode=mode)
    assert_close(product, expected @ np.ones(3), rtol=1e-7, atol=1e-9)


GLOBAL_MATRIX = _MATRIX
GLOBAL_MASKED = _MASKED
GLOBAL_DUCK = DuckArray([3.0, 4.0])


def times_global_matrix(x):
    return np.sum(x * GLOBAL_MATRIX)


def times_global_masked(x):
    return np.sum(x * GLOBAL_MASKED)


def times_global_duck(x):
    return np.sum(x * GLOBAL_DUCK)


def _closing_over(constant):
    def times_closure(x):
        return np.sum(x * constant)

    return times_closure


FOREIGN_CONSTANTS = {
    "global matrix": (times_global_matrix, np.ones((2, 2)), "numpy.matrix"),
    "global masked": (times_global_masked, np.ones(3), "MaskedArray"),
    "global duck": (times_global_duck, np.ones(2), "DuckArray"),
    "closure matrix": (_closing_over(_MATRIX), np.ones((2, 2)), "numpy.matrix"),
    "closure masked": (_closing_over(_MASKED), np.ones(3), "MaskedArray"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", FOREIGN_CONSTANTS)
def test_a_global_or_closure_array_of_a_type_not_understood_is_refused(case, mode):
    """Not arguments, so not checked at the call: the transformer checks the values it
    binds, the tape each operation a value being differentiated takes part in."""
    function, x, kind = FOREIGN_CONSTANTS[case]
    with pytest.raises(sg.UnsupportedError) as error:
        sg.grad(function, mode=mode)(x)
    message = str(error.value)
    line = inspect.getsourcelines(function)[1] + 1  # the line that reads it
    assert f"{HERE}:{line}" in message, message
    assert kind in message and "np.asarray" in message, message


def test_a_gradient_tape_refuses_an_operation_with_a_foreign_array():
    x = sg.constant(np.ones((2, 2)))
    with sg.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(sg.UnsupportedError, match=f"{HERE}:.*numpy.matrix"):
            x * GLOBAL_MATRIX


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", ["matrix", "complex array"])
def test_tangents_and_cotangents_of_a_type_not_understood_are_refused(case, mode):
    """A complex tangent of a real argument, or a complex cotangent of a real output,
    has no meaning (docs/complex.md): refused like a matrix."""
    value = _MATRIX if case == "matrix" else np.array([1.0 + 2.0j, 3.0 - 1.0j])
    x = np.ones(np.shape(value))
    with pytest.raises(TypeError, match="the tangent of 'x'"):
        sg.jvp(elementwise, (x,), (value,), mode=mode)
    _, pullback = sg.vjp(elementwise, x, mode=mode)
    with pytest.raises(TypeError, match="the cotangent"):
        pullback(value)


def test_a_setting_inside_differentiated_parameters_is_named_by_its_place():
    """A dict of layers holding an activation's name: the error says which entry, and to
    pass settings as another argument (it advised "pass a float" for the whole dict)."""

    def loss(params, x):
        h = x @ params["layers"][0]["W"]
        return np.sum(np.tanh(h) if params["layers"][0]["act"] == "tanh" else h)

    params = {"layers": [{"W": np.ones((2, 2)), "act": "tanh"}]}
    for mode in ("s2s", "auto", "tape"):
        with pytest.raises(TypeError, match=r"params\['layers'\]\[0\]\['act'\] holds a str"):
            sg.grad(loss, mode=mode)(params, np.ones(2))
