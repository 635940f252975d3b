"""A function taken out of a value being differentiated and called (``out = stats(x);
out[3](y)``, a helper returning ``(value, np.sum)``): source transformation refused every
such call, as a function that may capture differentiated values. It now calls it through
``plain_callable``, which lets a function that holds no value through (NumPy's, a module's,
a closure over functions only) and refuses one that holds values (a lambda over ``x``, a
partial of an array) when it runs, naming the user's file; mode="auto" then uses the tape."""

import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_grad, numeric_jvp

import s2sgrad as sg


def _stats(a):
    return np.mean(a), a.shape, "stats", np.sum


def _squash(v):
    return np.tanh(v) * 2.0


def _with_reducer(a, pick=np.max):
    return a * 2.0, pick


def _with_composed(a):
    def composed(v):
        return _squash(np.sin(v))

    return a + 1.0, composed


def reducer_out_of_a_tuple(x, y):
    out = _stats(x**2 * y)
    return np.sum((out[0] + out[3](x)) ** 2) * 0.5


def default_reducer(x):
    scaled, reduce = _with_reducer(x)
    return reduce(scaled) + np.sum(scaled)


def closure_over_functions(x):
    shifted, transform = _with_composed(x)
    return np.sum(transform(shifted) * x)


PROGRAMS = [reducer_out_of_a_tuple, default_reducer, closure_over_functions]
R = np.random.default_rng(41)


def _arguments(function):
    count = function.__code__.co_argcount
    return tuple(R.normal(size=3) for _ in range(count))


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("function", PROGRAMS)
def test_a_function_holding_nothing_is_called_where_it_runs(function, mode):
    args = _arguments(function)
    wrt = tuple(range(len(args)))
    gradient = sg.grad(function, wrt=wrt, mode=mode)
    for _ in ("first call", "later call"):
        got = gradient(*args)
        for position in wrt:
            assert_close(got[position], numeric_grad(function, args, position), 1e-5, 1e-7)
    along = R.normal(size=3)
    tangents = (along, *(np.zeros(3) for _ in args[1:]))
    _, tangent = sg.jvp(function, args, tangents, mode=mode)
    assert_close(tangent, numeric_jvp(function, args, 0, along), 1e-5, 1e-7)


def _scaled_by(w):
    return lambda v: v * w


SCALE_BY_RAMP = _scaled_by(np.arange(3.0))  # holds an array: counted as a value it may use


def _with_ramp(a):
    return a * 2.0, SCALE_BY_RAMP


def function_holding_an_array(x):
    value, scale = _with_ramp(x)
    return np.sum(scale(value) * x)


def test_a_function_holding_values_is_refused_when_it_runs_and_taped_in_auto():
    x = R.normal(size=3)
    with pytest.raises(sg.UnsupportedError, match=r"test_plain_callables\.py:\d+.*holds values"):
        sg.grad(function_holding_an_array, mode="s2s")(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.grad(function_holding_an_array, mode="auto")(x)
    assert_close(got, numeric_grad(function_holding_an_array, (x,), 0), 1e-5, 1e-7)
