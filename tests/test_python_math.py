"""Python's ``math`` module in differentiated code: scalar code as people write it
(``math.sin(theta)``, ``math.exp(-k * t)``), differentiated by source transformation with
the rules of each function's NumPy twin (``rules/python_math.py``), checked against central
differences to second order, on a first and a later call. The tape records them through the
``math`` module while it records (``math`` converts with ``float()``, which the tape
refuses): a function taken before (``from math import sin``) is refused naming the line."""

import math
import warnings
from math import sin as sin_taken_before

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg
from s2sgrad.rules.python_math import NUMPY_TWINS

R = np.random.default_rng(18)
HERE = __file__.rsplit("/", 1)[-1]

# where each function is smooth: (low, high) of its argument
DOMAINS = {
    "asin": (-0.8, 0.8),
    "acos": (-0.8, 0.8),
    "atanh": (-0.8, 0.8),
    "acosh": (1.2, 3.0),
    "log1p": (0.1, 2.0),
    "log2": (0.2, 3.0),
    "log10": (0.2, 3.0),
    "sqrt": (0.2, 3.0),
    "cbrt": (0.2, 3.0),
    "pow": (0.3, 2.0),
    "fmod": (0.3, 0.9),
}
ONE_ARGUMENT = [f for f in NUMPY_TWINS if f not in (math.pow, math.atan2, math.fmod)]


def _point(function):
    low, high = DOMAINS.get(function.__name__, (-1.5, 1.5))
    value = float(R.uniform(low, high))
    if function is math.fabs and abs(value) < 0.2:
        value += 0.5  # away from the kink
    return value


def _program(function):
    def program(x):
        return function(x) * x + 0.5 * function(x) ** 2

    return program


@pytest.mark.parametrize("function", ONE_ARGUMENT, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["s2s", "auto"])  # the function is taken before the tape
def test_one_argument_functions_to_second_order(function, mode):
    program = _program(function)
    x = _point(function)
    expected = numeric_grad(program, [x], 0)
    assert_close(call_twice(sg.grad(program, mode=mode), x), expected)
    sg.check_grads(program, x, order=2, mode=mode)


@pytest.mark.parametrize(
    "program, x, y",
    [
        (lambda x, y: math.pow(x, y) * y, 1.3, 0.7),
        (lambda x, y: math.atan2(x, y) ** 2, 0.4, -1.1),
        (lambda x, y: math.fmod(x * 3.0, y) * x, 0.5, 0.9),
        (lambda x, y: math.log(x, y) * x, 2.2, 3.5),
        (lambda x, y: math.log(x) + math.log(x * y), 1.7, 0.6),
        (lambda x, y: math.hypot(x, y, x * y) ** 1.5, 0.8, -1.3),
        (lambda x, y: math.erf(x * y) - math.erfc(y), 0.3, 0.9),
    ],
    ids=["pow", "atan2", "fmod", "log base", "log", "hypot of three", "erf erfc"],
)
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_functions_of_two_values(program, x, y, mode):
    for index in (0, 1):
        gradient = call_twice(sg.grad(program, wrt=index, mode=mode), x, y)
        assert_close(gradient, numeric_grad(program, [x, y], index))
    sg.check_grads(program, x, y, order=2, mode=mode)


def pendulum(theta0, length):
    theta, omega = theta0, 0.0
    for _ in range(60):
        omega = omega - 0.01 * 9.81 / length * math.sin(theta)
        theta = theta + 0.01 * omega
    energy = 0.5 * length**2 * omega**2 + 9.81 * length * (1.0 - math.cos(theta))
    return theta**2 + math.sqrt(energy + 1.0) + math.atan2(theta, length)


def logistic_likelihood(a, b, xs, ys):
    total = 0.0
    for x, y in zip(xs, ys):
        p = 1.0 / (1.0 + math.exp(-(a * x + b)))
        total = total + y * math.log(p) + (1.0 - y) * math.log1p(-p)
    return -total


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_scalar_programs_written_with_math(mode):
    for program, args in [
        (pendulum, (0.5, 1.3)),
        (logistic_likelihood, (0.7, -0.2, [0.5, -1.0, 2.0], [1.0, 0.0, 1.0])),
    ]:
        for index in (0, 1):
            gradient = call_twice(sg.grad(program, wrt=index, mode=mode), *args)
            assert_close(gradient, numeric_grad(program, list(args), index))
            tangent = 0.3
            _, derivative = sg.jvp(
                lambda v, i=index, f=program, a=args: f(*a[:i], v, *a[i + 1 :]),
                (args[index],),
                (tangent,),
                mode=mode,
            )
            assert_close(derivative, numeric_jvp(program, list(args), index, tangent))
        sg.check_grads(program, *args[:2], *args[2:], order=2, mode=mode)


def test_math_of_one_entry_of_an_array():
    def program(x):
        return np.sum(x**2) * math.cos(float(x[0])) + math.exp(x[1])

    x = R.normal(size=3)
    for mode in ("s2s", "auto"):
        assert_close(call_twice(sg.grad(program, mode=mode), x), numeric_grad(program, [x], 0))


def _swing(theta):
    return sin_taken_before(theta) * theta


def test_tape_refuses_a_math_function_taken_before_naming_the_line_and_what_to_do():
    with pytest.raises(sg.NonDifferentiableError, match=rf"{HERE}:\d+: float\(\).*math.*np.sin"):
        sg.grad(_swing, mode="tape")(0.5)
    assert_close(sg.grad(_swing, mode="s2s")(0.5), numeric_grad(_swing, [0.5], 0))


def test_math_without_a_rule_stays_refused():
    def program(x):
        return math.remainder(x, 0.7) * x

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mode in ("s2s", "auto"):
            with pytest.raises(sg.S2SGradError, match=rf"{HERE}:\d+"):
                sg.grad(program, mode=mode)(1.5)
