"""End-to-end gradients of the source transformer against central finite differences."""

from __future__ import annotations

import numpy
import numpy as np
import pytest
from numpy import sin as s
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

RNG = np.random.default_rng(20261122)


def helper_scale(u, factor=2.0, *, shift=0.0):
    return np.tanh(u) * factor + shift


def two_outputs(u, v):
    return u * v, u - v


def f_chain(x, y):
    z = np.sin(x * y) + np.exp(-(x**2)) / (1.0 + y**2)
    return np.sum(z * np.log1p(y**2))


def f_reassign(x, y):
    x = x * 2.0
    x = np.cos(x) + y
    x = x * x
    return np.sum(x)


def f_unpack(x, y):
    a, b = two_outputs(x, y)
    b, a = a, b
    return np.sum(a * np.sinh(b))


def f_methods(x, y):
    t = (x * y).sum(axis=0) + x.T.mean() * y.max()
    return (t**2).sum() + x.reshape(-1).dot(x.ravel()) + x.std() + x.clip(-0.5, 0.5).sum()


def f_indexing(x, y):
    first = x[0]
    tail = x[1:, ::-1]
    picked = x[np.array([0, 1, 0]), -1]
    masked = y[y > 0]
    return np.sum(first) + np.sum(tail**2) + np.sum(picked) * np.sum(masked) + x[..., None].sum()


def f_calls(x, y):
    return np.sum(helper_scale(x) + helper_scale(y, 3.0, shift=1.0) * helper_scale(x, factor=y))


def f_builtins(x, y):
    a = abs(x[0, 0]) + float(y[1])
    b = max(x[0, 1], y[0]) - min(x[1, 1], y[1])
    return a * b + sum([x[0, 0], y[0], 2.0]) + len(y)


def f_aliases(x, y):
    return numpy.sum(s(x) * numpy.linalg.norm(y))


def f_inactive_branch_data(x, y):
    scale = np.shape(x)[0] + np.argmax(y)
    mask = (x > 0) & (y[0] < 10)
    return np.sum(np.where(mask, x, 0.0) * scale)


def f_reductions(x, y):
    return np.sum(np.mean(x, axis=1, keepdims=True) * y) + np.prod(x[0]) + np.max(x)


def f_shapes(x, y):
    stacked = np.concatenate([x, x * 2.0], axis=0)
    return np.sum(np.stack([y, y**2]) @ stacked.T) + np.sum(np.transpose(stacked) ** 2)


FUNCTIONS = [
    f_chain,
    f_reassign,
    f_unpack,
    f_methods,
    f_indexing,
    f_calls,
    f_builtins,
    f_aliases,
    f_inactive_branch_data,
    f_reductions,
    f_shapes,
]

SHAPES = {
    f_chain: [((3,), (3,)), ((2, 3), (3,)), ((4, 1), (1, 3))],
    f_reassign: [((3,), (3,)), ((2, 3), (2, 1))],
    f_unpack: [((3,), (3,)), ((2, 3), (3,))],
    f_methods: [((2, 3), (3,)), ((3, 3), (1, 3))],
    f_indexing: [((2, 3), (4,)), ((3, 4), (5,))],
    f_calls: [((3,), (3,)), ((2, 2), (2, 2))],
    f_builtins: [((2, 2), (2,))],
    f_aliases: [((3,), (4,)), ((2, 2), (3,))],
    f_inactive_branch_data: [((3,), (3,)), ((2, 3), (3,))],
    f_reductions: [((2, 3), (2, 1)), ((3, 4), (3, 4))],
    f_shapes: [((2, 3), (3,))],
}

CASES = [(f, shapes) for f in FUNCTIONS for shapes in SHAPES[f]]


@pytest.mark.parametrize(
    "f, shapes", CASES, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(CASES)]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_gradient_matches_finite_differences(f, shapes, seed):
    rng = np.random.default_rng(seed)
    args = [rng.uniform(0.2, 1.2, size) * rng.choice([-1, 1], size) for size in shapes]
    originals = [a.copy() for a in args]
    gradients = call_twice(sg.grad(f, wrt=(0, 1), mode="s2s"), *args)
    for index in range(2):
        assert_close(gradients[index], numeric_grad(f, args, index), rtol=1e-5, atol=1e-6)
        assert gradients[index].dtype == np.float64
    for before, after in zip(originals, args):
        np.testing.assert_array_equal(before, after)  # inputs are never mutated


def test_float32_in_float32_out():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    y = RNG.standard_normal(3).astype(np.float32)
    gx, gy = sg.grad(f_chain, wrt=(0, 1))(x, y)
    assert gx.dtype == np.float32 and gy.dtype == np.float32
    expected = numeric_grad(f_chain, [x.astype(float), y.astype(float)], 0)
    np.testing.assert_allclose(gx, expected, rtol=1e-3, atol=1e-4)


def test_python_floats_give_floats():
    def f(x, y):
        return x * np.sin(y) + x**3

    gx, gy = sg.grad(f, wrt=("x", "y"))(1.5, 0.3)
    assert isinstance(gx, float) and isinstance(gy, float)
    assert gx == pytest.approx(np.sin(0.3) + 3 * 1.5**2)
    assert gy == pytest.approx(1.5 * np.cos(0.3))


def test_single_wrt_gives_gradient_itself_and_tuple_gives_tuple():
    x = RNG.standard_normal(3)
    single = sg.grad(f_chain)(x, x)
    one_tuple = sg.grad(f_chain, wrt=(0,))(x, x)
    assert isinstance(single, np.ndarray)
    assert isinstance(one_tuple, tuple) and len(one_tuple) == 1
    np.testing.assert_allclose(single, one_tuple[0])


def test_decorator_forms():
    @sg.grad
    def bare(x):
        return np.sum(x**2)

    @sg.grad(wrt="y")
    def named(x, y):
        return np.sum(x * y**2)

    x = RNG.standard_normal(3)
    np.testing.assert_allclose(bare(x), 2 * x)
    np.testing.assert_allclose(named(x, x), 2 * x * x)


def test_value_and_grad_and_has_aux():
    def f(x):
        loss = np.sum(x**2)
        return loss, {"norm": np.sqrt(loss)}

    x = RNG.standard_normal(4)
    (value, aux), gradient = sg.value_and_grad(f, has_aux=True)(x)
    assert value == pytest.approx(np.sum(x**2))
    assert aux["norm"] == pytest.approx(np.linalg.norm(x))
    np.testing.assert_allclose(gradient, 2 * x)
    gradient, aux = sg.grad(f, has_aux=True)(x)
    np.testing.assert_allclose(gradient, 2 * x)
    assert aux["norm"] == pytest.approx(np.linalg.norm(x))


def test_dict_of_parameters():
    def loss(params, x):
        hidden = np.tanh(x @ params["w1"] + params["b1"])
        return np.mean((hidden @ params["w2"]) ** 2) + 0.1 * np.sum(params["w1"] ** 2)

    params = {
        "w1": RNG.standard_normal((3, 4)),
        "b1": RNG.standard_normal(4),
        "w2": RNG.standard_normal((4, 2)),
        "unused": RNG.standard_normal(2),
    }
    x = RNG.standard_normal((5, 3))
    gradient = call_twice(sg.grad(loss), params, x)
    assert_close(gradient, numeric_grad(loss, [params, x], 0), rtol=1e-5, atol=1e-7)
    assert np.all(gradient["unused"] == 0)


def test_list_and_tuple_parameters():
    def loss(layers, x):
        return np.sum(np.tanh(x @ layers[0]) * layers[1][0])

    layers = [RNG.standard_normal((2, 3)), (RNG.standard_normal(3),)]
    x = RNG.standard_normal((4, 2))
    gradient = sg.grad(loss)(layers, x)
    assert_close(gradient, numeric_grad(loss, [layers, x], 0))


def test_vjp_with_tuple_output():
    def f(x, y):
        return np.sin(x) * y, x + y**2

    x, y = RNG.standard_normal(3), RNG.standard_normal(3)
    (u, v), pullback = sg.vjp(f, x, y)
    gu, gv = RNG.standard_normal(3), RNG.standard_normal(3)
    dx, dy = pullback((gu, gv))
    np.testing.assert_allclose(dx, gu * np.cos(x) * y + gv)
    np.testing.assert_allclose(dy, gu * np.sin(x) + gv * 2 * y)


def test_lambda_nested_function_closure_and_method():
    scale = 3.0

    def outer(x):
        def inner(z):
            return np.sum(z**2) * scale

        return inner(x)

    class Model:
        def __init__(self):
            self.factor = 2.0

        def loss(self, x):
            return np.sum(np.sin(x)) * self.factor

    x = RNG.standard_normal(3)
    np.testing.assert_allclose(sg.grad(lambda z: np.sum(z**3))(x), 3 * x**2)
    np.testing.assert_allclose(sg.grad(outer, mode="s2s")(x), 6 * x)  # inner: dispatched
    np.testing.assert_allclose(sg.grad(Model().loss)(x), 2 * np.cos(x))


def test_grad_of_decorated_function():
    def noop(function):
        return function

    @noop
    def f(x):
        return np.sum(np.exp(x))

    x = RNG.standard_normal(3)
    np.testing.assert_allclose(sg.grad(f)(x), np.exp(x))


def test_cache_is_reused():
    df = sg.grad(f_chain)
    x = RNG.standard_normal(3)
    df(x, x)
    first = dict(df.code.calls)
    df(x + 1, x)
    assert df.code.calls == first


def test_inactive_output_gives_zero_gradient():
    def f(x):
        return np.sum(np.sign(x)) + 1.0

    np.testing.assert_array_equal(sg.grad(f)(np.ones(3)), np.zeros(3))


def test_numpy_scalars_give_numpy_scalars():
    def f(x):
        return x**3 * 0.5

    gradient = call_twice(sg.grad(f), np.float32(2.0))
    assert type(gradient) is np.float32 and gradient == pytest.approx(6.0)


def deletes_a_name(x):
    y = np.sin(x) * 2.0
    z = y * x
    del y
    y = z * 3.0
    return np.sum(y)


@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_del_of_a_name(mode):
    # the backward sweep read y after the del had unbound it
    x = RNG.normal(size=3)
    gradient = call_twice(sg.grad(deletes_a_name, mode=mode), x)
    assert_close(gradient, numeric_grad(deletes_a_name, (x,), 0))
    (product,) = sg.hvp(deletes_a_name, (x,), (np.ones(3),), mode=mode)
    assert_close(product, numeric_grad(lambda x: np.sum(sg.grad(deletes_a_name)(x)), (x,), 0))
