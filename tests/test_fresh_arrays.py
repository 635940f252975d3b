"""Arithmetic writes into the new array it is handed (compiler/specialize/fresh_arrays.py),
where the types of the specialised code (compiler/specialize/value_types.py) show the
array new, of the result's shape and dtype: ``d = a @ b * m`` becomes ``d = a @ b`` and
``d *= m``. Gradients are those of the code without it, bit for bit, and of finite
differences; what would broadcast, cast, or write into an array others see stays."""

import types

import gast
import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler import finishing
from s2sgrad.compiler.codegen import to_source
from s2sgrad.compiler.specialize.fresh_arrays import SMALL_ARRAY_BYTES, update_fresh_arrays
from s2sgrad.compiler.specialize.value_types import ValueType, ValueTypes

MODES = ("s2s", "auto")
# types follow NumPy 2's promotion (NEP 50); before it, the pass leaves code alone
pytestmark = pytest.mark.skipif(
    np.lib.NumpyVersion(np.__version__) < "2.0.0", reason="value-based promotion"
)


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def relu_layer(W, b, X, V):
    h = np.maximum(X @ W + b, 0.0)
    return np.sum((h @ V) ** 2)


def scaled_attention(Wq, Wk, X):
    scores = (X @ Wq) @ (X @ Wk).T / 8.0
    e = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    return np.sum(e / np.sum(e, axis=1, keepdims=True) * scores)


def _layer(x, W, b):
    return np.tanh(x @ W * 0.5 + b)


def outer_energy(u, v):
    return np.sum(np.sin(u[:, None] * v[None, :] * 2.0 + 1.0))


def calls_a_helper(W, b, x):
    return np.sum(_layer(x, W, b) ** 2 - 3.0 * _layer(x, W, b))


def _rewritten(source: str, *args, **kwargs) -> str:
    function = gast.parse(source).body[0]
    update_fresh_arrays(function, {"np": np}, args, kwargs)
    return to_source(function)


def _copy(f):
    return types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__)


def _without_the_pass(f, wrt, args):
    """The specialised gradient as it is without writing into new arrays."""
    passes = finishing.PASSES
    finishing.PASSES = tuple(p for p in passes if p.name != "arithmetic writes into new arrays")
    try:
        g = sg.grad(_copy(f), wrt=wrt, mode="s2s")
        g(*args)  # the probe's result: the raw code's operations
    finally:
        finishing.PASSES = passes
    return g(*args)


def _same_as_before(f, wrt, args, mode="s2s"):
    g = sg.grad(f, wrt=wrt, mode=mode)
    first = g(*args)  # the probe's result: the raw code's operations
    later = g(*args)
    without = _without_the_pass(f, wrt, args)
    for a, b, c in zip(later, without, first):
        np.testing.assert_array_equal(a, b)  # the same operations: the same bits
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12)
    return g


# --- gradients --------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_rosenbrock_updates_its_new_arrays(mode):
    x = np.random.default_rng(0).uniform(-2, 2, size=6000)  # 47 KiB: written in place
    g = _same_as_before(rosenbrock, (0,), (x,), mode)
    code = sg.source(g)
    assert "np.subtract(x[1:], dt4, out=dt4)" in code and "dt4 *= 200.0" in code, code
    assert "out=dx[:-1])" in code, code  # made where the assignment would copy it to
    small = np.random.default_rng(1).uniform(-2, 2, size=7)
    assert_close(sg.grad(rosenbrock)(small), numeric_grad(rosenbrock, (small,), 0))


def test_relu_backward_multiplies_the_mask_into_the_product():
    rng = np.random.default_rng(2)
    W, b = rng.normal(size=(20, 96)), rng.normal(size=96)
    X, V = rng.normal(size=(128, 20)), rng.normal(size=(96, 3))
    g = _same_as_before(relu_layer, (0, 1, 3), (W, b, X, V))
    assert "*= h > 0.0" in sg.source(g), sg.source(g)
    small = (rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(5, 3)))
    small += (rng.normal(size=(4, 2)),)
    for i, got in zip((0, 1, 3), sg.grad(relu_layer, wrt=(0, 1, 3))(*small)):
        assert_close(got, numeric_grad(relu_layer, small, i))


def test_float32_stays_float32():
    rng = np.random.default_rng(5)
    W, b = rng.normal(size=(20, 160)).astype(np.float32), rng.normal(size=160).astype(np.float32)
    X, V = rng.normal(size=(256, 20)).astype(np.float32), rng.normal(size=(160, 3))  # V: f8
    g = _same_as_before(relu_layer, (0, 1, 3), (W, b, X, V))
    assert [d.dtype for d in g(W, b, X, V)] == [np.float32, np.float32, np.float64]


def test_attention_gradients_match_the_code_without_it():
    rng = np.random.default_rng(3)
    args = (rng.normal(size=(64, 64)) / 8, rng.normal(size=(64, 64)) / 8, rng.normal(size=(64, 64)))
    g = _same_as_before(scaled_attention, (0, 1), args)
    assert " *= " in sg.source(g) or "out=" in sg.source(g), sg.source(g)


def test_a_helper_function_is_rewritten_with_its_caller():
    rng = np.random.default_rng(6)
    args = (rng.normal(size=(16, 128)) / 4, rng.normal(size=128), rng.normal(size=(128, 16)))
    _same_as_before(calls_a_helper, (0, 1), args)
    small = (rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(5, 3)))
    for i, got in zip((0, 1), sg.grad(calls_a_helper, wrt=(0, 1))(*small)):
        assert_close(got, numeric_grad(calls_a_helper, small, i))


def test_code_on_small_arguments_is_left_alone():
    rng = np.random.default_rng(7)
    u, v = rng.normal(size=200), rng.normal(size=200)  # 3 KiB in all; their outer product 312
    g = _same_as_before(outer_energy, (0,), (u, v))
    assert "*=" not in sg.source(g) and "out=" not in sg.source(g), sg.source(g)


def test_small_arrays_stay_expressions():
    rng = np.random.default_rng(4)
    args = (rng.normal(size=(3, 4)), rng.normal(size=4), rng.normal(size=(5, 3)))
    g = _same_as_before(relu_layer, (0, 1, 3), (*args, rng.normal(size=(4, 2))))
    assert "*=" not in sg.source(g) and "out=" not in sg.source(g), sg.source(g)


# --- the rewrite on code ------------------------------------------------------------------

N = SMALL_ARRAY_BYTES // 8  # float64 items of an array just large enough


def test_a_chain_of_new_arrays_is_one_array():
    code = _rewritten("def f(x, y):\n    d = (x * y + y) / 2.0\n", np.ones(N), np.ones(N))
    assert "d = x * y\n" in code and "d += y\n" in code and "d /= 2.0\n" in code, code


def test_a_new_right_operand_keeps_the_operands_order():
    code = _rewritten("def f(x, y):\n    d = y - x * 2.0\n", np.ones(N), np.ones(N))
    assert "d = x * 2.0\n" in code and "np.subtract(y, d, out=d)" in code, code


def test_an_item_assignment_makes_its_value_in_place():
    source = "def f(x, y):\n    d = np.empty_like(x)\n    d[1:] = x[1:] * y\n    d[:1] = 0.0\n"
    code = _rewritten(source, np.ones(N + 1), np.ones(N))
    assert "np.multiply(x[1:], y, out=d[1:])" in code, code
    reads = "def f(x, y):\n    d = np.zeros((2, 5000))\n    d[1] = d[0] * y\n"
    assert "out=" not in _rewritten(reads, np.ones(N), np.ones(5000))  # reads d
    cast = "def f(x, y):\n    d = np.zeros((5000,))\n    d[:] = x * y\n"
    assert "out=" not in _rewritten(cast, np.ones(5000, np.float32), np.ones(5000, np.float32))


def test_a_number_on_the_left_of_a_product_multiplies_in_place():
    code = _rewritten("def f(x):\n    d = 3.0 * (x + 1.0)\n", np.ones(N))
    assert "d = x + 1.0\n" in code and "d *= 3.0\n" in code, code


@pytest.mark.parametrize(
    "source, args",
    [
        # a name, not a new array: its array is the caller's
        ("def f(x, y):\n    d = x * y\n", (np.ones(N), np.ones(N))),
        # the product broadcasts the new array to a larger shape
        ("def f(x, y):\n    d = (x + 1.0) * y\n", (np.ones((1, N)), np.ones((2, N)))),
        # the product is float64, the new array float32: += would round it
        ("def f(x, y):\n    d = (x + 1) * y\n", (np.ones(N, np.float32), np.ones(N))),
        # an ndarray subclass may make its result as it likes
        ("def f(x, y):\n    d = (x + 1.0) * y\n", (np.ones(N).view(np.matrix), np.ones(N))),
        # the other operand reads d, which is rebound first
        ("def f(x, d):\n    d = (x + 1.0) * d\n", (np.ones(N), np.ones(N))),
        # a call of another function may return an array someone else holds
        ("def f(x, y):\n    d = g(x) * y\n", (np.ones(N), np.ones(N))),
        # small arrays
        ("def f(x, y):\n    d = (x + 1.0) * y\n", (np.ones(N // 2), np.ones(N // 2))),
        # a view of an argument is the argument's memory
        ("def f(x, y):\n    d = x[1:] * y\n", (np.ones(N + 1), np.ones(N))),
        # a local np is not NumPy
        ("def f(x, y):\n    np = y\n    d = y - x * 2.0\n", (np.ones(N), np.ones(N))),
        # a name bound twice to arrays of two shapes has no type
        (
            "def f(x, y):\n    t = x\n    t = y\n    d = (t + 1.0) * x\n",
            (np.ones(N), np.ones(2 * N)),
        ),
    ],
)
def test_what_stays(source, args):
    function = gast.parse(source).body[0]
    before = to_source(function)
    assert not update_fresh_arrays(function, {"np": np, "g": np.asarray}, args, {})
    assert to_source(function) == before


def test_types_follow_numpy():
    function = gast.parse("def f(x, n):\n    t = x[:, 1:].T\n    s = t.sum(axis=0)\n").body[0]
    types = ValueTypes(function, {"np": np}, (np.ones((4, 5), np.float32), 2), {})
    assert types.names["t"] == ValueType((4, 4), np.dtype(np.float32))
    assert types.names["s"] == ValueType((4,), np.dtype(np.float32))
    assert types.names["n"] == ValueType((), int)
    expression = gast.parse("t * 2.5 + (t > n)", mode="eval").body
    assert types.of(expression) == ValueType((4, 4), np.dtype(np.float32))
    matmul = gast.parse("t @ x", mode="eval").body
    assert types.of(matmul) == ValueType((4, 5), np.dtype(np.float32))
