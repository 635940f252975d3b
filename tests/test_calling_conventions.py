"""Functions of every calling convention are differentiated: ``*args`` (what wrappers look
like), ``**kwargs``, keyword-only and defaulted parameters, NamedTuple parameters, and
Jacobians wrt several arguments."""

import warnings
from typing import NamedTuple

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

MODES = ["auto", "s2s", "tape"]
RNG = np.random.default_rng(12)


@pytest.fixture(autouse=True)
def _quiet_fallbacks():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        yield


def star_args(*args):
    return np.sum(np.tanh(args[0]) * args[1])


@pytest.mark.parametrize("mode", MODES)
def test_wrt_counts_the_arguments_star_args_takes(mode):
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    for wrt in (0, 1):
        gradient = call_twice(sg.grad(star_args, wrt=wrt, mode=mode), x, y)
        assert_close(gradient, numeric_grad(star_args, (x, y), wrt))
    both = sg.grad(star_args, wrt=(0, 1), mode=mode)(x, y)
    assert_close(both, (numeric_grad(star_args, (x, y), 0), numeric_grad(star_args, (x, y), 1)))
    out, pullback = sg.vjp(star_args, x, y, mode=mode)
    assert_close(pullback(1.0), both)
    (product,) = sg.hvp(lambda x: star_args(x, y), (x,), (y,), mode=mode)
    assert_close(product, numeric_grad(lambda x: np.sum(sg.grad(star_args)(x, y) * y), (x,), 0))


def test_star_args_are_transformed_by_source_without_falling_back():
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)
        gradient = sg.grad(star_args, wrt=1, mode="auto")
        assert_close(call_twice(gradient, x, y), numeric_grad(star_args, (x, y), 1))
    assert "args" in sg.source(gradient)  # generated code, shown
    hessian = sg.hessian(star_args, wrt=0, mode="s2s")(x, y)
    expected = np.diag(-2 * np.tanh(x) * (1 - np.tanh(x) ** 2) * y)
    assert_close(hessian, expected)


def wrapper_of(function):
    def wrapped(*args, scale=1.0, **kwargs):
        return function(*args, **kwargs) * scale

    return wrapped


@pytest.mark.parametrize("mode", MODES)
def test_a_wrapper_taking_star_args_and_star_star_kwargs(mode):
    x, y = RNG.normal(size=3), RNG.normal(size=3)
    wrapped = wrapper_of(star_args)
    for wrt in (0, 1):
        gradient = call_twice(sg.grad(wrapped, wrt=wrt, mode=mode), x, y, scale=2.0)
        assert_close(gradient, 2.0 * numeric_grad(star_args, (x, y), wrt))


def test_wrt_past_the_star_args_passed_is_a_type_error():
    with pytest.raises(TypeError, match="missing"):
        sg.grad(star_args, wrt=2, mode="tape")(np.ones(2), np.ones(2))


def with_options(x, **options):
    return np.sum(x**2) * options.get("scale", 1.0) + options["shift"] * np.sum(x)


@pytest.mark.parametrize("mode", MODES)
def test_keyword_arguments_reach_a_function_taking_star_star_kwargs(mode):
    x = RNG.normal(size=3)
    kwargs = {"scale": 3.0, "shift": 2.0}
    gradient = call_twice(sg.grad(with_options, mode=mode), x, **kwargs)
    assert_close(gradient, numeric_grad(with_options, (x,), 0, kwargs))
    assert_close(sg.grad(with_options, mode=mode)(x, shift=1.0), 2 * x + 1.0)


def keyword_only(x, *, scale=2.0, shift):
    return np.sum(np.sin(x) * scale) + shift**2


def defaulted(x, scale=2.0):
    return np.sum(np.sin(x) * scale**3)


@pytest.mark.parametrize("mode", MODES)
def test_wrt_a_keyword_only_parameter(mode):
    x = RNG.normal(size=3)
    scale = call_twice(sg.grad(keyword_only, wrt="scale", mode=mode), x, scale=1.5, shift=0.5)
    assert_close(scale, np.sum(np.sin(x)))
    shift = sg.grad(keyword_only, wrt="shift", mode=mode)(x, shift=0.5)
    assert_close(shift, 1.0)
    both = sg.grad(keyword_only, wrt=("x", "shift"), mode=mode)(x, shift=0.25)
    assert_close(both, (2.0 * np.cos(x), 0.5))


@pytest.mark.parametrize("mode", MODES)
def test_wrt_a_defaulted_parameter_not_passed(mode):
    x = RNG.normal(size=3)
    gradient = call_twice(sg.grad(defaulted, wrt="scale", mode=mode), x)
    assert_close(gradient, 3 * 2.0**2 * np.sum(np.sin(x)))
    assert_close(sg.grad(defaulted, wrt=1, mode=mode)(x), gradient)


class Params(NamedTuple):
    w: np.ndarray
    b: float


def indexes_a_named_tuple(p, x):
    return np.sum(np.sin(p[0] * x + p[1]))


def unpacks_a_named_tuple(p, x):
    w, b = p
    return np.sum(np.sin(w * x + b))


@pytest.mark.parametrize("f", [indexes_a_named_tuple, unpacks_a_named_tuple])
@pytest.mark.parametrize("mode", MODES)
def test_the_gradient_wrt_a_named_tuple_is_that_named_tuple(mode, f):
    p, x = Params(RNG.normal(size=3), 0.3), RNG.normal(size=3)
    gradient = call_twice(sg.grad(f, mode=mode), p, x)
    assert type(gradient) is Params
    assert_close(tuple(gradient), tuple(numeric_grad(f, (tuple(p), x), 0)))
    (product,) = sg.hvp(lambda p: f(p, x), (p,), (Params(np.ones(3), 1.0),), mode=mode)
    assert type(product) is Params


def two_inputs(x, y):
    return np.sin(x) * y[:, None]


@pytest.mark.parametrize("jacobian", [sg.jacobian, sg.jacfwd])
@pytest.mark.parametrize("mode", MODES)
def test_a_jacobian_wrt_a_tuple_is_a_tuple_of_jacobians(mode, jacobian):
    x, y = RNG.normal(size=2), RNG.normal(size=3)
    jx, jy = jacobian(two_inputs, wrt=(0, 1), mode=mode)(x, y)
    assert_close(jx, jacobian(two_inputs, wrt=0, mode=mode)(x, y))
    assert_close(jy, jacobian(two_inputs, wrt="y", mode=mode)(x, y))
    assert jx.shape == (3, 2, 2) and jy.shape == (3, 2, 3)
    for row in range(3):
        for column in range(2):

            def entry(x, y, row=row, column=column):
                return two_inputs(x, y)[row, column]

            assert_close(jx[row, column], numeric_grad(entry, (x, y), 0))
            assert_close(jy[row, column], numeric_grad(entry, (x, y), 1))


def star_args_vector(*args):
    return np.tanh(args[0]) * args[1]


@pytest.mark.parametrize("jacobian", [sg.jacobian, sg.jacfwd])
@pytest.mark.parametrize("mode", MODES)
def test_jacobians_of_a_star_args_function(mode, jacobian):
    x, y = RNG.normal(size=2), RNG.normal(size=2)
    jx, jy = jacobian(star_args_vector, wrt=(0, 1), mode=mode)(x, y)
    for row in range(2):

        def entry(x, y, row=row):
            return star_args_vector(x, y)[row]

        assert_close(jx[row], numeric_grad(entry, (x, y), 0))
        assert_close(jy[row], numeric_grad(entry, (x, y), 1))
    _, tangent = sg.jvp(star_args_vector, (x, y), (np.ones(2), np.zeros(2)), mode=mode)
    assert_close(tangent, jx @ np.ones(2))


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("wrt", [(0,), ("x",)])
def test_a_one_entry_wrt_tuple_gives_one_tuples_on_every_call(mode, wrt):
    def cubes(x):
        return np.sum(x**3)

    x = np.linspace(-1.0, 1.0, 4)
    for _ in range(3):  # the first call, then the cached code, then the hot path
        value, gradients = sg.value_and_grad(cubes, wrt=wrt, mode=mode)(x)
        assert np.isclose(value, np.sum(x**3))
        assert isinstance(gradients, tuple) and len(gradients) == 1
        assert np.allclose(gradients[0], 3 * x**2)
    transformed = sg.value_and_grad(cubes, wrt=wrt, mode=mode)
    results = [transformed(x) for _ in range(3)]
    assert all(isinstance(r[1], tuple) and np.allclose(r[1][0], 3 * x**2) for r in results)
    gradient = sg.grad(cubes, wrt=wrt, mode=mode)
    assert all(isinstance(gradient(x), tuple) for _ in range(3))


# ------------------------------------------------------- wrt=(0,): 1-tuples everywhere

X = np.array([1.0, -2.0, 0.5])


def weighted_sine(w, x):
    return np.sum(np.sin(w * x) * x), w[0]


def sine_loss(w):
    return weighted_sine(w, X)[0]


def _through(gradient, v):
    def through(w):
        (g,) = gradient(w)
        return np.sum(g * v) + np.sum(gradient(w)[0] ** 2)

    return through


def test_a_one_tuple_gradient_is_one_tuple_to_its_derivatives_too():
    # the generated code returns the gradient alone: a derivative of grad(f, wrt=(0,))
    # saw the bare array, so indexing [0] took its first element (a silently wrong
    # gradient in s2s and auto), and jvp / vjp gave arrays where it gives 1-tuples
    w, v = np.array([0.3, 0.5, 0.7]), np.array([0.2, 1.0, -1.0])
    for mode in ("s2s", "tape", "auto"):
        gradient = sg.grad(sine_loss, wrt=(0,), mode=mode)
        through = _through(gradient, v)
        expected = numeric_grad(through, (w,), 0)
        np.testing.assert_allclose(sg.grad(through, mode=mode)(w), expected, rtol=1e-6)
        out, tangent = sg.jvp(gradient, (w,), (v,), mode=mode)
        assert type(out) is tuple and type(tangent) is tuple and len(tangent) == 1, mode
        expected = sg.hvp(sine_loss, (w,), (v,), mode="tape")[0]
        np.testing.assert_allclose(tangent[0], expected, rtol=1e-6, err_msg=mode)
        out, pullback = sg.vjp(gradient, w, mode=mode)
        assert type(out) is tuple and len(out) == 1, mode
        np.testing.assert_allclose(pullback((v,))[0], expected, rtol=1e-6, err_msg=mode)
        (g,), aux = sg.grad(weighted_sine, wrt=(0,), has_aux=True, mode=mode)(w, X)
        np.testing.assert_allclose(g, gradient(w)[0], err_msg=mode)
        assert aux == w[0], mode
    (batched,) = sg.vmap(gradient)(np.stack([w, v]))
    np.testing.assert_allclose(batched[1], gradient(v)[0])
