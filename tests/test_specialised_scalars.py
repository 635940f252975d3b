"""Code for Python numbers: called with Python floats, a gradient whose every operation is
on numbers runs ``math`` and plain arithmetic, and gives what the generic code gives.

Where ``math`` raises and NumPy gives ``inf`` or ``nan`` (a logarithm of a negative
number, an overflow, a division by zero), the call runs the generic code instead.
``math`` and NumPy may round the last bit differently, hence the tolerance of the
comparisons with the generic code.
"""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.pipeline import derivative

MODES = ("s2s", "tape", "auto")


def loop(a, b, x):
    for _ in range(20):
        x = np.sin(x) * a + b * x
    return x


def branches(a, x):
    y = np.exp(a * x) / (1.0 + np.tanh(x) ** 2)
    if y > 1.0:  # values decide the branch: generic shapes, still numbers
        y = np.sqrt(y) * a
    return np.log(y + 2.0) * x**1.5


def counted(a, n):
    s = 0.0
    for i in range(n):
        s = s + np.cos(a * i) / n
    return s


def logarithm(x):
    return np.log(x) * x


def exponential(x):
    return np.exp(x) * 2.0


def fractional_power(x):
    return np.sin(x) ** 1.5


def unused_argument(a, b):
    return np.sin(a) * 2.0


def generic_result(f, wrt, args):
    return derivative(f, wrt).function(*args)


def _same(actual, expected):
    actual = actual if isinstance(actual, tuple) else (actual,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for a, e in zip(actual, expected):
        assert type(a) is type(e)
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("mode", MODES)
def test_loop_against_finite_differences(mode):
    rng = np.random.default_rng(0)
    g = sg.grad(loop, wrt=(0, 1), mode=mode)
    for _ in range(2):
        args = tuple(float(v) for v in rng.uniform(0.2, 0.5, size=3))
        expected = [numeric_grad(loop, args, i) for i in (0, 1)]
        for _ in range(2):
            assert_close(list(g(*args)), expected)


def test_loop_runs_math_and_equals_the_generic_code():
    args = (0.4, 0.3, 0.5)
    g = sg.grad(loop, wrt=(0, 1), mode="s2s")
    first, second = g(*args), g(*args)
    code = sg.source(g)
    assert "math.sin" in code and "math.cos" in code, code
    assert not [line for line in code.splitlines() if "np." in line and "#" not in line], code
    assert "unbroadcast" not in code and "zeros_like_value" not in code, code
    _same(first, generic_result(loop, ("a", "b"), args))
    _same(second, generic_result(loop, ("a", "b"), args))


@pytest.mark.parametrize("mode", MODES)
def test_branches_and_powers(mode):
    g = sg.grad(branches, wrt=(0, 1), mode=mode)
    for args in ((0.3, 0.7), (0.3, 0.7), (2.0, 1.5), (0.1, 0.2)):
        expected = [numeric_grad(branches, args, i) for i in (0, 1)]
        assert_close(list(g(*args)), expected)


@pytest.mark.parametrize("mode", MODES)
def test_integer_arguments(mode):
    g = sg.grad(counted, mode=mode)
    for n in (3, 3, 5):
        assert_close(g(0.7, n), numeric_grad(counted, (0.7, n), 0))


def test_numpy_scalars_and_zero_d_arrays_run_numpy():
    g = sg.grad(loop, wrt=(0, 1), mode="s2s")
    expected = g(0.4, 0.3, 0.5)
    for kind in (np.float64, np.array):
        args = (kind(0.4), kind(0.3), kind(0.5))
        for _ in range(2):
            actual = g(*args)
            assert "math." not in sg.source(g)
            for a, e in zip(actual, expected):
                np.testing.assert_allclose(a, e, rtol=1e-12)
                assert type(a) is type(kind(0.0)) or np.ndim(a) == np.ndim(kind(0.0))
    _same(g(0.4, 0.3, 0.5), expected)  # back to Python floats: the math code again


@pytest.mark.parametrize(
    "f, x",
    [
        (logarithm, -1.0),  # math.log raises, np.log gives nan
        (logarithm, 0.0),  # math.log raises, np.log gives -inf (times 0: nan)
        (exponential, 1000.0),  # math.exp overflows, np.exp gives inf
        (fractional_power, -1.0),  # math.pow raises, ** on NumPy's sin gives nan
    ],
)
def test_math_errors_give_numpys_values(f, x):
    g = sg.grad(f, mode="s2s")
    g(0.5)  # specialised to Python floats
    assert "math." in sg.source(g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = generic_result(f, ("x",), (x,))
        for _ in range(2):
            actual = g(x)
            assert type(actual) is type(expected)
            np.testing.assert_equal(actual, expected)


def test_second_order_on_numbers():
    def slope(a):
        return sg.grad(loop, mode="s2s")(a, 0.3, 0.5)

    for mode in ("s2s", "tape"):
        curvature = sg.grad(slope, mode=mode)
        for a in (0.4, 0.4, 0.35):
            assert_close(curvature(a), numeric_grad(slope, (a,), 0), rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_an_argument_the_value_does_not_use(mode):
    g = sg.grad(unused_argument, wrt=(0, 1), mode=mode)
    for _ in range(2):
        da, db = g(0.3, 0.4)
        assert type(db) is float and db == 0.0
        assert_close(da, numeric_grad(unused_argument, (0.3, 0.4), 0))
