"""Rules run on tape values are recorded: second derivatives of many primitives on the tape.

Each case computes a Hessian-vector product with two nested tapes (the inner tape's
backward pass runs the primitive's VJP rule on tape values, recorded by the outer tape) and
compares it with central differences of the first-order gradient.
"""

import operator
import warnings

import numpy as np
import pytest
from oracle import assert_close, directional_derivative, numeric_grad

import s2sgrad as sg
from s2sgrad.tape import GradientTape, constant

RNG = np.random.default_rng(7)
X = RNG.uniform(0.2, 0.9, size=(3, 4))  # positive and below 1: inside every domain used
W = RNG.normal(size=(4, 2))


def square(x):
    return x[:, :3] + 3.0 * np.eye(3)


def symmetric(x):
    m = x[:, :3] * np.arange(1.0, 4.0)  # distinct eigenvalues
    return m @ m.T + np.eye(3)


CASES = {
    "sin": np.sin,
    "exp_log": lambda x: np.exp(x) * np.log(x),
    "sqrt_tanh": lambda x: np.sqrt(x) + np.tanh(x),
    "arcsin_arctan": lambda x: np.arcsin(x) * np.arctan(x),
    "power": lambda x: x**3 + np.power(x, 2.5) + 2.0**x,
    "divide": lambda x: x / (x + 2.0) + np.reciprocal(x),
    "maximum": lambda x: np.maximum(x, 0.5) * x,
    "logaddexp": lambda x: np.logaddexp(x, x[::-1]),
    "arctan2_hypot": lambda x: np.arctan2(x, 1.5) + np.hypot(x, x[::-1] + 0.1),
    "sum_axis": lambda x: np.sum(x * x, axis=0) * x[0],
    "mean_var_std": lambda x: np.mean(x**2) + np.var(x, axis=1) + np.std(x),
    "prod": lambda x: np.prod(x, axis=1),
    "max": lambda x: np.max(x * x, axis=1),
    "cumsum_cumprod": lambda x: np.cumsum(x**2, axis=1) + np.cumprod(x, axis=0)[:, :1],
    "norm": lambda x: np.linalg.norm(x, axis=1),
    "getitem_integer_array": lambda x: x[[0, 2, 0], [1, 1, 3]] ** 2,
    "getitem_slices": lambda x: x[1:, ::2] * x[:2, 1::2],
    "reshape_transpose": lambda x: np.reshape(x, (6, 2)).T @ np.reshape(x**2, (6, 2)),
    "concatenate_stack": lambda x: (
        np.concatenate([x, x**2], axis=1) * np.stack([x, x], axis=1)[:, 0].repeat(2, axis=1)
    ),
    "where_clip": lambda x: np.where(x > 0.5, x**2, np.clip(x, 0.3, 0.6) * x),
    "take_tile_repeat": lambda x: np.take(x, [2, 0], axis=1) ** 2 + np.tile(x[:, :1], 2),
    "pad_roll_flip": lambda x: np.pad(x**2, 1)[1:-1, 1:-1] * np.roll(np.flip(x, 0), 1),
    "diagonal_trace": lambda x: np.diagonal(x) ** 2 + np.trace(x * x),
    "split": lambda x: np.split(x, 2, axis=1)[0] * np.split(x, 2, axis=1)[1],
    "matmul": lambda x: (x @ W) ** 2,
    "dot_outer_einsum": lambda x: (
        np.dot(x, W)[:, :1] ** 2 + np.outer(x[0], x[1])[:3] + np.einsum("ij,kj->ik", x, x**2)[:, :1]
    ),
    "tensordot": lambda x: np.tensordot(x, x**2, axes=([1], [1])),
    "inv_det": lambda x: np.linalg.inv(square(x)) * np.linalg.det(square(x)),
    "slogdet_solve": lambda x: np.linalg.slogdet(square(x))[1] + np.linalg.solve(square(x), x),
    "cholesky": lambda x: np.linalg.cholesky(symmetric(x)),
    "eigh": lambda x: np.linalg.eigh(symmetric(x))[0] + np.linalg.eigh(symmetric(x))[1][0],
    "methods": lambda x: x.sum(axis=1) * x.mean() + (x * x).max() + x.T.reshape(12)[:3].prod(),
}


def hessian_vector_product(f, x, v):
    x = constant(x)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = np.sum(np.sin(f(x)))
        g = inner.gradient(y, x)
        gv = np.sum(g * v)
    return outer.gradient(gv, x)


def gradient(f, x):
    x = constant(x)
    with GradientTape() as tape:
        tape.watch(x)
        y = np.sum(np.sin(f(x)))
    return tape.gradient(y, x)


@pytest.mark.parametrize("name", CASES)
def test_second_derivative_on_nested_tapes(name):
    f = CASES[name]
    v = np.random.default_rng(1).normal(size=X.shape)
    expected = directional_derivative(lambda x: gradient(f, x), X, v)
    got = hessian_vector_product(f, X, v)
    assert got.shape == X.shape and got.dtype == X.dtype
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv])
def test_second_derivative_of_binary_operators_with_broadcasting(op):
    def f(x):
        return op(x, x[0]) * op(x[:, :1], x)

    v = np.random.default_rng(2).normal(size=X.shape)
    expected = directional_derivative(lambda x: gradient(f, x), X, v)
    np.testing.assert_allclose(hessian_vector_product(f, X, v), expected, rtol=1e-5, atol=1e-7)


def test_third_derivative_with_three_nested_tapes():
    x = constant(0.4)
    with GradientTape() as t3:
        t3.watch(x)
        with GradientTape() as t2:
            t2.watch(x)
            with GradientTape() as t1:
                t1.watch(x)
                y = np.exp(2.0 * x) * x
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    # y = x e^{2x}: y''' = (8x + 12) e^{2x}
    assert d3 == pytest.approx((8 * 0.4 + 12) * np.exp(0.8))


def _energy(x, p):
    return np.sum((x * p["w"]) ** 2)


@pytest.mark.parametrize("inner", ["tape", "auto"])
@pytest.mark.parametrize("outer", ["tape", "auto"])
def test_an_inner_gradient_given_a_dict_of_the_outer_values_keeps_them_tracked(outer, inner):
    # the inner tape restores what the function stored on its arguments; the dict the
    # outer gradient passed in holds the outer tape's values, which are not the inner's
    def gradient_norm(p, x):
        return np.sum(sg.grad(_energy, wrt=0, mode=inner)(x, p) ** 2)

    rng = np.random.default_rng(3)
    p, x = {"w": rng.normal(size=3)}, rng.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = sg.grad(gradient_norm, mode=outer)(p, x)
    assert_close(got, numeric_grad(gradient_norm, (p, x), 0), rtol=1e-5)
    assert type(p["w"]) is np.ndarray  # the caller's dict is left as it was
