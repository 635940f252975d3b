"""In-place writes made by a call nested in an expression the normal form keeps whole:
a branch of ``a if c else b``, an operand of ``and``/``or``, a returned expression, the
body of a lambda called where it is made. The derivative never sees such a write, so one
that carries a differentiated value is refused (it used to give a wrong gradient, the
write ignored); one of constants is still differentiated. A lambda's ``(call, t)[1]`` keeps
its call when inlined (it was dropped: the write, and any other effect, never ran)."""

import os
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

MODES = ("s2s", "auto", "tape")
HERE = os.path.basename(__file__)
SHAPES = [(3,), (2, 4), (5,)]


def fill_in_a_branch(x):
    a = np.zeros(x.shape)
    a.fill(x.flat[0]) if x.flat[0] > -100 else None
    return np.sum(a * x)


def copyto_in_a_branch(x):
    a = np.zeros(x.shape)
    np.copyto(a, x**2) if x.size else None
    return np.sum(a * x)


def out_in_a_branch(x):
    a = np.zeros(x.shape)
    np.sin(x, out=a) if True else None
    return np.sum(a * x)


def add_at_in_a_branch(x):
    a = np.zeros(x.size)
    np.add.at(a, [0, 0, 1], x.ravel()[:3]) if x.size > 2 else None
    return np.sum(a * x.ravel())


def fill_diagonal_in_or(x):
    v = x.ravel()
    a = np.zeros((v.size, v.size))
    np.fill_diagonal(a, v**2) or None
    return np.sum(a * np.outer(v, v))


def copyto_in_a_return(x):
    a = np.zeros(x.shape)
    return np.copyto(a, x**2) or np.sum(a * x)


def copyto_in_a_called_lambda(x):
    a = np.zeros(x.shape)
    return np.sum((lambda b: (np.copyto(b, x**2), b)[1])(a) * x)


WRITES = [
    fill_in_a_branch,
    copyto_in_a_branch,
    out_in_a_branch,
    add_at_in_a_branch,
    fill_diagonal_in_or,
    copyto_in_a_return,
    copyto_in_a_called_lambda,
]


@pytest.mark.parametrize("f", WRITES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", MODES)
def test_a_nested_write_of_a_differentiated_value_is_refused(f, mode):
    x = np.random.default_rng(1).normal(size=(3,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(sg.S2SGradError) as refused:
            sg.grad(f, mode=mode)(x)
        with pytest.raises(sg.S2SGradError):
            sg.jvp(f, (x,), (np.ones_like(x),), mode=mode)
    assert f"{HERE}:" in str(refused.value)


def constants_written_in_a_branch(x):
    buffer = np.zeros(x.shape)
    np.copyto(buffer, 2.0) if x.flat[0] < 100 else None
    return np.sum(buffer * np.sin(x) * x)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
def test_a_nested_write_of_constants_is_still_differentiated(shape, mode):
    x = np.random.default_rng(sum(shape)).normal(size=shape)
    f = constants_written_in_a_branch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0), rtol=1e-5)
        hessian = sg.hessian(f, mode=mode)(x)
    flat = x.ravel()
    second = 2.0 * (2 * np.cos(flat) - flat * np.sin(flat))  # d2/dx2 of 2 x sin(x)
    assert_close(hessian.reshape(x.size, x.size), np.diag(second), rtol=1e-6, atol=1e-9)


calls: list = []


def effect_in_a_called_lambda(x):
    return np.sum((lambda v: (calls.append(1), v * np.cos(v))[1])(x))


def star_arguments_of_a_called_lambda(x, y):
    return np.sum((lambda *a: a[0] * np.sin(a[1]))(x, y))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", MODES)
def test_a_called_lambda_keeps_the_calls_its_tuple_drops(shape, mode):
    x = np.random.default_rng(len(shape)).normal(size=shape)
    f = effect_in_a_called_lambda
    calls.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = call_twice(sg.grad(f, mode=mode), x)
    assert len(calls) == 2
    assert_close(got, np.cos(x) - x * np.sin(x))
    y = np.random.default_rng(7).normal(size=shape)
    g = star_arguments_of_a_called_lambda
    for wrt in (0, 1):
        expected = numeric_grad(g, [x, y], wrt)
        assert_close(call_twice(sg.grad(g, wrt=wrt, mode=mode), x, y), expected, rtol=1e-5)
