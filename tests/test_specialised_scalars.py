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


# saves computed again, common factors taken out (specialize/scalar_saves.py, scalar_factors.py)
def shifted_before_use(a, b, x):  # sin(x) of the x before the shift: two saves of x
    for _ in range(10):
        s = np.sin(x)
        x = x + 1.0
        x = s * a + b * x
    return x


def chained(a, b, x):  # x * a, then the cosine of it: both computed again
    for _ in range(10):
        s = np.cos(x * a)
        x = s * b + x * 0.5
    return x


def carried(a, x):  # y is read in the next iteration: it stays saved
    y = 0.5
    for _ in range(10):
        t = np.sin(x) * a
        x = y * x + t
        y = np.cos(t)
    return x + y


def read_after_loop(a, b, x):  # s is read after the loop
    s = 0.0
    for _ in range(8):
        s = np.sin(x)
        x = s * a + b * x
    return x * s


def nested(a, b, x):
    for _ in range(4):
        for _ in range(3):
            x = np.tanh(x * a) + b * np.exp(-x * x)
        x = x * 0.9 + np.sin(b) * a
    return x


def counted_while(a, b, x):  # a while loop on values
    k = 0
    while x < 5.0 and k < 30:
        x = x + np.exp(a * x) * b
        k += 1
    return x


def subtracted(a, b, x):  # a common factor of a difference, forward and backward
    for _ in range(10):
        x = a * x - a * np.sin(x) * b + b
    return x


def paired(a, b, x):  # a tuple of values: no factor is taken out
    for _ in range(5):
        u, v = np.sin(x), np.cos(x)
        x = u * a + v * b + a * x
    return x


SAVES = [
    (loop, (0.4, 0.3, 0.5)),
    (shifted_before_use, (0.4, 0.3, 0.5)),
    (chained, (0.4, 0.3, 0.5)),
    (carried, (0.4, 0.5)),
    (read_after_loop, (0.4, 0.3, 0.5)),
    (nested, (0.4, 0.3, 0.5)),
    (counted_while, (0.3, 0.2, 0.5)),
    (subtracted, (0.4, 0.3, 0.5)),
    (paired, (0.4, 0.3, 0.5)),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, args", SAVES, ids=[f.__name__ for f, _ in SAVES])
def test_saves_computed_again_against_finite_differences(f, args, mode):
    wrt = tuple(range(len(args)))
    g = sg.grad(f, wrt=wrt, mode=mode)
    expected = [numeric_grad(f, args, i) for i in wrt]
    for _ in range(3):  # the first call specialises, the third runs through the guard
        assert_close(list(g(*args)), expected)
    if mode == "s2s":
        names = tuple(f.__code__.co_varnames[: len(args)])
        _same(g(*args), generic_result(f, names, args))


def benchmark_loop(a, b, x):  # benchmarks/workloads.py's scalar loop (its own code cache)
    for _ in range(200):
        x = np.sin(x) * a + b * x
    return x


def test_the_loop_saves_only_x_and_keeps_the_users_statement():
    g = sg.grad(benchmark_loop, wrt=(0, 1), mode="s2s")
    g(0.4, 0.3, 0.5)
    code = sg.source(g)
    assert code.count(".append(") == 1 and "stack.append(x)" in code, code
    assert "for x in reversed(stack):" in code and " = None" not in code, code
    assert ".pop()" not in code, code  # the backward iterates the saved values
    assert "x = math.sin(x) * a + b * x" in code, code  # the forward is the user's line
    assert "dx = dx * (b + a * math.cos(x))" in code, code


def test_values_read_where_the_pop_restored_them_stay_saved():
    for f, saved in ((shifted_before_use, "stack.append(s)"), (carried, "stack.append(y)")):
        g = sg.grad(f, wrt=(0, 1), mode="s2s")
        g(*dict(SAVES)[f])
        assert saved in sg.source(g), sg.source(g)


def test_the_forward_sweep_keeps_the_users_arithmetic():
    g = sg.grad(subtracted, wrt=(0, 1), mode="s2s")
    g(0.4, 0.3, 0.5)
    code = sg.source(g)
    assert "a * x - a * math.sin(x) * b" in code, code  # forward: as written
    assert "dx = a * (" in code, code  # backward: a taken out
