"""Batched Jacobians: one pullback (pushforward) over a batch of one-hot cotangents (tangents).

Each Jacobian is checked against central finite differences and against the Jacobian built
one element at a time, and the tests assert which way it was built (``batching.stats``).
The batching rules themselves are checked example by example: a rule applied to a batch
must give, for every example, what NumPy gives for that example alone.
"""

import copy
import warnings

import numpy as np
import pytest
from oracle import numeric_jacobian

import s2sgrad as sg
from s2sgrad.batching import BatchedValue, NotBatchable, jacobians
from s2sgrad.rules.registry import jvp_rule, vjp_rule

RNG = np.random.default_rng(20240611)


def normal(*shape):
    return RNG.normal(size=shape)


@pytest.fixture
def stats():
    jacobians.stats.clear()
    return jacobians.stats


def one_at_a_time(transform, f, wrt, args):
    previous, jacobians.BATCHING = jacobians.BATCHING, False
    try:
        return transform(f, wrt)(*args)
    finally:
        jacobians.BATCHING = previous


# Functions, with the arguments to differentiate at -----------------------------------------


def elementwise(x):
    return np.sin(x) * np.exp(x) + x**3 - np.log(x**2 + 1) + np.abs(x) + np.maximum(x, 0.1)


def leaky(x):
    return np.where(x > 0, x, 0.1 * x) + np.clip(x, -0.5, 0.5)


def broadcast_binary(a, b):
    return a * b + a / (b**2 + 2) - b


def scalar_times_array(s, x):
    return s * x + s**2


def zero_d_times_array(s, x):
    return np.sin(s) * x


def reductions(x):
    return (
        np.sum(x**2, axis=0)
        + np.mean(x, axis=0, keepdims=True) * x[0]
        + np.sum(x) * x[1]
        + np.max(x, axis=0)
    )


def more_reductions(x):
    return np.prod(x, axis=0) + np.std(x, axis=1).sum() * x[0] + np.var(x) + np.cumsum(x, 1)[-1]


def matmul(a, b):
    return a @ b


def layer(x, W, b):
    return np.tanh(x @ W + b)


def two_layers(x, W, b):
    hidden = layer(x, W, b)  # a call to another function: its own generated derivative
    return hidden * 2.0


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def log_softmax_rows(x):
    m = np.max(x, axis=1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))


def indexing(x):
    return x[1:3] * x[0, 0] + x[:, 0][1:3, None] * x[2] + x[[0, 2, 2]][:2] + x[..., ::-1][:2]


def masks_and_newaxis(x):
    return x[x > 0.0].sum() * x[None, 0, ...] + x[:, None, 1] * x[2]


def reshapes(x):
    y = x.reshape(2, -1).T * np.transpose(x.reshape(2, 6)).sum()
    return y + np.swapaxes(np.expand_dims(x, 0), 1, 2).reshape(6, 2)


def joins(x):
    stacked = np.stack([x, x**2], axis=-1).sum(axis=1)
    return np.concatenate([x, x**2], axis=1)[:, 2:6] + stacked[:, :1]


def loops_and_branches(x):
    y = x
    for _ in range(3):
        if np.sum(y) > 0:  # noqa: SIM108 (a branch, not a conditional expression)
            y = np.sin(y) * 2.0
        else:
            y = y * y + 1.0
    n = 0
    while n < 2:
        y = np.cos(y) + y * 0.5
        n += 1
    return y


def in_place(x):
    y = np.zeros(3)
    y[0] = x[1]
    y[1:] = x[:2] * 2
    return y * x[3]


def products(a, b):
    return np.einsum("ij,jk->ik", a, b) + np.dot(a, b) + np.tensordot(a, b, 1)


def solve(a, b):
    return np.linalg.solve(a, b)


def array_of_list(x):
    return np.array([x[0] * x[1], np.sin(x[2]), x[3]])


def copies(x):
    return np.pad(x, 2)[1:-1] + np.tile(x, 2)[:6] + np.repeat(x, 2)[::2].sum()


def diagonals(x):
    return np.diag(x) * np.trace(x) + np.diagonal(x, 1).sum() + np.tril(x).ravel()[:3]


def tuple_output(x):
    return np.sin(x), (x[:2] * 2.0, np.sum(x))


SPD = normal(3, 3) + 3 * np.eye(3)

# name, function, arguments, wrt, which directions batch (r: jacobian, f: jacfwd)
CASES = [
    ("elementwise", elementwise, (normal(3, 4),), 0, "rf"),
    ("where and clip", leaky, (normal(3, 4),), 0, "rf"),
    ("(3,4) with (4,), wrt the matrix", broadcast_binary, (normal(3, 4), normal(4)), 0, "rf"),
    ("(3,4) with (4,), wrt the vector", broadcast_binary, (normal(3, 4), normal(4)), 1, "rf"),
    ("scalar with array, wrt the scalar", scalar_times_array, (1.7, normal(3, 4)), 0, "r"),
    ("scalar with array, wrt the array", scalar_times_array, (1.7, normal(3, 4)), 1, "rf"),
    ("0-d array with array", zero_d_times_array, (np.array(0.3), normal(2, 3)), 0, "r"),
    ("reductions: axis, keepdims, None", reductions, (normal(3, 4),), 0, "rf"),
    ("prod, std, var, cumsum", more_reductions, (RNG.uniform(0.5, 2, (3, 4)),), 0, "rf"),
    ("matmul 2-D @ 2-D, wrt a", matmul, (normal(3, 4), normal(4, 5)), 0, "rf"),
    ("matmul 2-D @ 2-D, wrt b", matmul, (normal(3, 4), normal(4, 5)), 1, "rf"),
    ("matmul 1-D @ 2-D, wrt the vector", matmul, (normal(3), normal(3, 4)), 0, "rf"),
    ("matmul 1-D @ 2-D, wrt the matrix", matmul, (normal(3), normal(3, 4)), 1, "rf"),
    ("matmul 2-D @ 1-D, wrt the matrix", matmul, (normal(3, 4), normal(4)), 0, "rf"),
    ("matmul 2-D @ 1-D, wrt the vector", matmul, (normal(3, 4), normal(4)), 1, "rf"),
    ("matmul of stacks", matmul, (normal(2, 3, 4), normal(4, 2)), 0, "rf"),
    ("MLP layer wrt W", layer, (normal(2, 4), normal(4, 6), normal(6)), 1, "rf"),
    ("MLP layer wrt x", layer, (normal(2, 4), normal(4, 6), normal(6)), 0, "rf"),
    ("MLP layer through a call", two_layers, (normal(2, 4), normal(4, 6), normal(6)), 1, "rf"),
    ("softmax", softmax, (3 * normal(5),), 0, "rf"),
    ("log-softmax of rows", log_softmax_rows, (normal(3, 4),), 0, "rf"),
    ("slices, integers, lists, ellipsis", indexing, (normal(3, 4),), 0, "rf"),
    ("masks and np.newaxis", masks_and_newaxis, (normal(3, 4),), 0, "rf"),
    ("reshape, transpose, swapaxes", reshapes, (normal(3, 4),), 0, "rf"),
    ("concatenate and stack", joins, (normal(3, 4),), 0, "rf"),
    ("loops and branches", loops_and_branches, (normal(4),), 0, "rf"),
    ("in-place updates", in_place, (normal(4),), 0, "r"),
    ("einsum, dot, tensordot", products, (normal(3, 4), normal(4, 2)), 0, "rf"),
    ("linalg.solve wrt b", solve, (SPD, normal(3)), 1, "rf"),
    ("linalg.solve wrt a", solve, (SPD, normal(3)), 0, "rf"),
    ("np.array of a list", array_of_list, (normal(4),), 0, "rf"),
    ("pad, tile, repeat", copies, (normal(4),), 0, "rf"),
    ("diag, trace, tril", diagonals, (normal(3, 3),), 0, "rf"),
]


@pytest.mark.parametrize("name, f, args, wrt, batched", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("transform", [sg.jacobian, sg.jacfwd], ids=["jacobian", "jacfwd"])
def test_batched_jacobian_matches_finite_differences_and_the_loop(
    stats, transform, name, f, args, wrt, batched
):
    got = transform(f, wrt)(*args)
    direction = "reverse" if transform is sg.jacobian else "forward"
    if direction[0] in batched:
        assert stats[f"{direction}_batched"] >= 1 and not stats[f"{direction}_loop"], stats
        assert not stats["refused"]
    else:
        assert stats[f"{direction}_loop"] >= 1
    np.testing.assert_allclose(got, numeric_jacobian(f, args, wrt), rtol=1e-6, atol=1e-7)
    loop = one_at_a_time(transform, f, wrt, args)
    np.testing.assert_allclose(got, loop, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("transform", [sg.jacobian, sg.jacfwd], ids=["jacobian", "jacfwd"])
def test_containers_of_parameters_and_of_outputs(stats, transform):
    params = {"W": normal(4, 3), "b": normal(3)}
    x = normal(5, 4)

    def net(p, x):
        return np.tanh(x @ p["W"] + p["b"])

    got = transform(net)(params, x)
    loop = one_at_a_time(transform, net, 0, (params, x))
    assert set(got) == {"W", "b"}
    for key in params:
        np.testing.assert_allclose(got[key], loop[key], rtol=1e-12, atol=1e-14)
        assert got[key].shape == (5, 3, *params[key].shape)
    w_only = numeric_jacobian(lambda w: net({"W": w, "b": params["b"]}, x), (params["W"],), 0)
    np.testing.assert_allclose(got["W"], w_only, rtol=1e-6, atol=1e-8)

    v = normal(4)
    outputs = transform(tuple_output)(v)
    expected = one_at_a_time(transform, tuple_output, 0, (v,))
    np.testing.assert_allclose(outputs[0], np.diag(np.cos(v)), atol=1e-14)
    np.testing.assert_allclose(outputs[1][0], expected[1][0], atol=1e-14)
    np.testing.assert_allclose(outputs[1][1], np.ones(4), atol=1e-14)
    assert stats[f"{'reverse' if transform is sg.jacobian else 'forward'}_batched"] >= 2


@pytest.mark.parametrize("transform", [sg.jacobian, sg.jacfwd], ids=["jacobian", "jacfwd"])
def test_float32_stays_float32(stats, transform):
    x, W, b = (a.astype(np.float32) for a in (normal(2, 4), normal(4, 3), normal(3)))
    got = transform(layer, 1)(x, W, b)
    assert got.dtype == np.float32
    assert stats[f"{'reverse' if transform is sg.jacobian else 'forward'}_batched"] == 1
    loop = one_at_a_time(transform, layer, 1, (x, W, b))
    np.testing.assert_allclose(got, loop, rtol=1e-6, atol=1e-7)


def narrowed_array(x):
    return np.array([x[0] * x[1], np.sin(x[2])], dtype=np.dtype("float32"))


@pytest.mark.parametrize("transform", [sg.jacobian, sg.jacfwd], ids=["jacobian", "jacfwd"])
def test_np_array_with_a_dtype_keeps_it(stats, transform):
    x = normal(3)
    got = transform(narrowed_array)(x)
    loop = one_at_a_time(transform, narrowed_array, 0, (x,))
    assert got.dtype == loop.dtype
    assert stats[f"{'reverse' if transform is sg.jacobian else 'forward'}_batched"] == 1
    np.testing.assert_allclose(got, loop, rtol=1e-6)


def test_hessian_and_jacobian_of_gradient_batch(stats):
    def loss(W1, W2, x, y):
        hidden = np.tanh(x @ W1)
        return np.mean((hidden @ W2 - y) ** 2)

    args = (normal(3, 4), normal(4, 2), normal(5, 3), normal(5, 2))
    hessian = sg.hessian(loss)(*args)
    assert stats["forward_batched"] == 1
    reverse_over_reverse = sg.jacobian(sg.grad(loss))(*args)
    assert stats["reverse_batched"] == 1
    loop = one_at_a_time(sg.jacfwd, sg.grad(loss), 0, args)
    np.testing.assert_allclose(hessian, loop, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(reverse_over_reverse, loop, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hessian.reshape(12, 12), hessian.reshape(12, 12).T, atol=1e-12)


def test_small_chunks_give_the_same_jacobian(stats, monkeypatch):
    args = (normal(3, 4), normal(4, 5), normal(5))
    whole = sg.jacobian(layer, 1)(*args)
    monkeypatch.setattr(jacobians, "CHUNK_ELEMENTS", 40)  # W has 20 elements: chunks of 2
    runs, passes = [], []
    original = jacobians.batched_twin

    def counting_twin(f):
        runs.append(f)
        twin = original(f)
        return lambda *args: (passes.append(1), twin(*args))[1]

    monkeypatch.setattr(jacobians, "batched_twin", counting_twin)
    chunked = sg.jacobian(layer, 1)(*args)
    np.testing.assert_allclose(chunked, whole, rtol=1e-14, atol=1e-15)
    assert stats["reverse_batched"] == 2 and len(runs) == 1
    # 15 outputs, in blocks of two rows: the largest array (W) has 20 elements
    assert len(passes) == 8


# Falling back ------------------------------------------------------------------------------


def square(x):
    return x * x


def _square_jvp(primals, tangents):
    return primals[0] ** 2, 2 * primals[0] * tangents[0]


@sg.derivative(of=square, jvp=_square_jvp)
def _square_derivative(x):
    return x * x, lambda g: 2 * x * g


def uses_custom_derivative(x):
    return square(np.sin(x)) + 1.0


def test_custom_derivative_falls_back_once_and_is_remembered(stats):
    x = normal(4)
    expected = np.diag(2 * np.sin(x) * np.cos(x))
    for transform, direction in ((sg.jacobian, "reverse"), (sg.jacfwd, "forward")):
        stats.clear()
        np.testing.assert_allclose(transform(uses_custom_derivative)(x), expected, atol=1e-14)
        assert stats[f"{direction}_loop"] == 1 and not stats[f"{direction}_batched"]
        refusals = stats["refused"]
        np.testing.assert_allclose(transform(uses_custom_derivative)(x), expected, atol=1e-14)
        assert stats["refused"] == refusals  # not tried again
    reasons = {getattr(f, "__name__", ""): why for f, why in jacobians.refused.items()}
    assert "pullbacks dispatched at run time" in reasons["uses_custom_derivative_vjp_backward"]
    assert "no batching rule" in reasons["uses_custom_derivative_jvp"]


def suffix_sums(x):
    """A primitive of these tests, whose derivative rule uses np.fft (no batching rule)."""
    return np.flip(np.cumsum(np.flip(x)))


@vjp_rule(suffix_sums)
def _suffix_sums_vjp(g, ans, x):
    return np.fft.ifft(np.fft.fft(np.cumsum(g))).real


@jvp_rule(suffix_sums)
def _suffix_sums_jvp(t, ans, x):
    return np.flip(np.cumsum(np.flip(t)))


def test_an_operation_without_a_rule_falls_back_during_the_run(stats):
    def uses_suffix_sums(x):
        return suffix_sums(x) * x

    def writes_in_place(x):  # its tangent starts as plain zeros, then gets a batch written in
        y = np.zeros(3)
        y[1:] = x[:2] * 2
        return y

    x = normal(4)
    got = sg.jacobian(uses_suffix_sums)(x)
    assert stats["refused"] == 1 and stats["reverse_loop"] == 1
    np.testing.assert_allclose(got, numeric_jacobian(uses_suffix_sums, (x,), 0), atol=1e-7)
    assert sg.jacfwd(uses_suffix_sums)(x) == pytest.approx(got, abs=1e-12)
    assert stats["forward_batched"] == 1

    stats.clear()
    got = sg.jacfwd(writes_in_place)(x)
    assert stats["refused"] == 1 and stats["forward_loop"] == 1
    np.testing.assert_allclose(got, numeric_jacobian(writes_in_place, (x,), 0), atol=1e-7)
    sg.jacfwd(writes_in_place)(x)
    assert stats["refused"] == 1 and stats["forward_loop"] == 2  # remembered, not retried


def test_functions_passed_as_arguments_and_hooks_fall_back(stats):
    def apply_twice(x, fn):
        return fn(fn(x))

    x = normal(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = sg.jacobian(apply_twice)(x, np.tanh)
    assert stats["reverse_loop"] == 1
    np.testing.assert_allclose(got, numeric_jacobian(apply_twice, (x, np.tanh), 0), atol=1e-7)

    seen = []

    def hooked(x):
        return sg.with_derivative(np.sin(x), lambda g: seen.append(np.shape(g))) * 2.0

    np.testing.assert_allclose(sg.jacobian(hooked)(x), np.diag(2 * np.cos(x)), atol=1e-14)
    assert seen == [(3,)] * 3  # the hook sees one cotangent at a time, as it would anyway


def test_the_tape_uses_the_loop(stats):
    x = normal(2, 3)
    got = sg.jacobian(softmax, mode="tape")(x[0])
    assert stats["reverse_loop"] == 1 and not stats["reverse_batched"]
    np.testing.assert_allclose(got, numeric_jacobian(softmax, (x[0],), 0), atol=1e-7)


def test_wrt_by_name_on_a_method_and_keywords(stats):
    class Model:
        def __init__(self):
            self.W = normal(4, 3)

        def __call__(self, x, scale=1.0):
            return np.tanh(x @ self.W) * scale

    model, x = Model(), normal(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the keyword goes into position: no tape fallback
        by_index = sg.jacobian(model.__call__)(x, scale=2.0)
        by_name = sg.jacobian(model.__call__, "x")(x, scale=2.0)
        forward = sg.jacfwd(model.__call__, "x")(x, scale=2.0)
    assert stats["reverse_batched"] == 2 and stats["forward_batched"] == 1
    np.testing.assert_allclose(by_index, by_name)
    np.testing.assert_allclose(forward, by_name, atol=1e-14)
    np.testing.assert_allclose(
        by_index, numeric_jacobian(lambda x: model(x, 2.0), (x,), 0), atol=1e-7
    )


def test_an_integer_argument_is_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="cannot differentiate with respect to 'n'"):
        sg.jacobian(lambda x, n: x * n, 1)(np.ones(2), 3)


# The batching rules, example by example ----------------------------------------------------

EXAMPLES = 3
X = normal(EXAMPLES, 3, 4)  # three examples of shape (3, 4)
V = normal(EXAMPLES, 4)  # three examples of shape (4,)
S = normal(EXAMPLES)  # three scalar examples


def added_in_place(x):
    y = x.copy()
    y[1:] += 1.0
    y[0] *= 2.0
    return y


def copied_then_written(x):
    y = x.copy()
    z = copy.copy(y)
    z[0] = 0.0
    return y + z


OPERATIONS = {
    "add a row": (X, lambda x: x + np.arange(4.0)),
    "scalar example with an array": (S, lambda s: s * np.ones((2, 3))),
    "array with a scalar example": (S, lambda s: np.ones((2, 3)) / (s + 3)),
    "comparison and where": (X, lambda x: np.where(x > 0, x, -x)),
    "ufunc reduce": (X, lambda x: np.add.reduce(x, axis=1)),
    "ufunc outer": (V, lambda v: np.multiply.outer(v, np.arange(2.0))),
    "sum axis=None": (X, lambda x: np.sum(x)),
    "sum negative axis, keepdims": (X, lambda x: np.sum(x, axis=-1, keepdims=True)),
    "mean over a tuple of axes": (X, lambda x: np.mean(x, axis=(0, 1))),
    "max of axis 0": (X, lambda x: x.max(0)),
    "argmax without axis": (X, lambda x: np.argmax(x)),
    "cumsum without axis": (X, lambda x: np.cumsum(x)),
    "matmul example @ matrix": (X, lambda x: x @ np.ones((4, 2))),
    "matmul matrix @ example": (X, lambda x: np.arange(6.0).reshape(2, 3) @ x),
    "matmul vector @ example": (X, lambda x: np.arange(3.0) @ x),
    "matmul example @ vector": (X, lambda x: x @ np.arange(4.0)),
    "matmul vector example @ vector": (V, lambda v: v @ np.arange(4.0)),
    "matmul vector @ vector example": (V, lambda v: np.arange(4.0) @ v),
    "matmul stack @ example": (X, lambda x: np.ones((2, 4, 3)) @ x),
    "matmul vector example @ stack": (V, lambda v: v @ np.ones((2, 4, 3))),
    "dot matrix with example": (V, lambda v: np.dot(np.ones((2, 4)), v)),
    "dot example with 3-D": (X, lambda x: np.dot(x, np.ones((5, 4, 2)))),
    "dot 3-D with example": (X, lambda x: np.dot(np.ones((2, 5, 3)), x)),
    "inner": (X, lambda x: np.inner(np.ones((2, 4)), x)),
    "vdot": (X, lambda x: np.vdot(np.arange(12.0), x)),
    "outer": (V, lambda v: np.outer(np.arange(3.0), v)),
    "tensordot of an example's axes": (X, lambda x: np.tensordot(np.ones((3, 2)), x, (0, 0))),
    "einsum implicit": (X, lambda x: np.einsum("ij,jk", x, np.ones((4, 2)))),
    "transpose": (X, lambda x: x.T),
    "transpose with axes": (X, lambda x: np.transpose(x[None], (2, 0, 1))),
    "reshape with -1": (X, lambda x: x.reshape(-1, 2)),
    "ravel": (X, lambda x: np.ravel(x)),
    "squeeze": (X, lambda x: np.squeeze(x[:, :1])),
    "expand_dims with negative axes": (X, lambda x: np.expand_dims(x, (-1, 0))),
    "moveaxis": (X, lambda x: np.moveaxis(x[None], 0, -1)),
    "broadcast_to": (V, lambda v: np.broadcast_to(v, (2, 4))),
    "concatenate with a plain array": (X, lambda x: np.concatenate([x, np.ones((3, 1))], 1)),
    "concatenate flat": (X, lambda x: np.concatenate([x, np.ones(2)], axis=None)),
    "stack at the end": (V, lambda v: np.stack([v, v * 2], axis=-1)),
    "split": (X, lambda x: np.split(x, [1], axis=1)[1]),
    "hstack of vectors": (V, lambda v: np.hstack([v, np.zeros(1)])),
    "vstack of vectors": (V, lambda v: np.vstack([v, np.zeros(4)])),
    "flip without axis": (X, lambda x: np.flip(x)),
    "roll flat": (X, lambda x: np.roll(x, 1)),
    "take flat": (X, lambda x: np.take(x, [0, 5, 11])),
    "take_along_axis": (X, lambda x: np.take_along_axis(x, np.zeros((3, 1), int), 1)),
    "diagonal with offset": (X, lambda x: np.diagonal(x, 1)),
    "diag of a vector": (V, lambda v: np.diag(v, -1)),
    "tile": (V, lambda v: np.tile(v, (2, 1))),
    "repeat on an axis": (X, lambda x: np.repeat(x, 2, axis=0)),
    "pad edge": (X, lambda x: np.pad(x, 1, mode="edge")),
    "basic index and slice": (X, lambda x: x[1, ::2]),
    "list index": (X, lambda x: x[[2, 0, 0]]),
    "two array indices side by side": (X, lambda x: x[[0, 1], [3, 2]]),
    "integer and array side by side": (X, lambda x: x[:, 1, None][[0, 0]]),
    "boolean mask of a whole example": (X, lambda x: x[np.arange(12).reshape(3, 4) % 5 == 0]),
    "ellipsis": (X, lambda x: x[..., 1]),
    "negative steps and np.newaxis inside": (X, lambda x: x[::-1, None, -2::-2]),
    "array index after a slice": (X, lambda x: x[:, [0, 2]]),
    "2-D array index": (X, lambda x: x[[[0, 1], [1, 2]]]),
    "boolean mask of the first axis": (X, lambda x: x[np.array([True, False, True])]),
    "integer then array": (X, lambda x: x[1, [0, 1, 1]]),
    "array then integer": (X, lambda x: x[[0, 2], 1]),
    "len and iteration": (X, lambda x: np.stack(list(x)) * len(x)),
    "zeros_like": (X, lambda x: np.zeros_like(x) + 1.0),
    "full_like": (X, lambda x: np.full_like(x, 2.5)),
    "astype float32": (X, lambda x: x.astype(np.float32)),
    "reshape in Fortran order": (X, lambda x: x.reshape((2, 6), order="F")),
    "ravel in Fortran order": (X, lambda x: np.ravel(x, order="F")),
    "rot90": (X, lambda x: np.rot90(x, 1)),
    "dstack": (V, lambda v: np.dstack([v, v])),
    "atleast_3d of a matrix": (X, lambda x: np.atleast_3d(x)),
    "kron with a plain matrix": (X, lambda x: np.kron(x, np.arange(4.0).reshape(2, 2))),
    "kron of a vector with one": (V, lambda v: np.kron(np.arange(3.0), v)),
    "average with 1-D weights": (X, lambda x: np.average(x, axis=1, weights=np.arange(1, 5))),
    "matmul of two batched values": (X, lambda x: x @ x.T),
    "outer of two batched values": (V, lambda v: np.outer(v, v)),
    "einsum of two batched values": (X, lambda x: np.einsum("ij,kj->ik", x, x)),
    "einsum diagonal": (X, lambda x: np.einsum("ii->i", x[:, :3])),
    "tensordot, example second": (X, lambda x: np.tensordot(np.ones((2, 3)), x, 1)),
    "dot of a scalar example": (S, lambda s: np.dot(s, np.arange(3.0))),
    "inner of vector examples": (V, lambda v: np.inner(v, np.arange(4.0))),
    "where with only the condition batched": (X, lambda x: np.where(x > 0, 1.0, 2.0)),
    "in-place add through a slice of a copy": (X, lambda x: added_in_place(x)),
    "copy.copy copies the data": (X, lambda x: copied_then_written(x)),
    "solve with a stack of right-hand sides": (X, lambda x: np.linalg.solve(np.eye(3) * 2, x)),
}


@pytest.mark.parametrize("examples, operation", OPERATIONS.values(), ids=list(OPERATIONS))
def test_rule_does_for_each_example_what_numpy_does(examples, operation):
    batched = operation(BatchedValue(examples.copy()))
    assert isinstance(batched, BatchedValue)
    for i, example in enumerate(examples):
        expected = np.asarray(operation(example))
        # equal up to rounding: a product over the batch may sum in another order
        np.testing.assert_allclose(batched.array[i], expected, rtol=1e-13, atol=1e-13)
        assert batched.shape == expected.shape
        assert batched.dtype == expected.dtype


def test_shape_queries_describe_one_example():
    b = BatchedValue(X)
    assert b.shape == (3, 4) and b.ndim == 2 and b.size == 12 and len(b) == 3
    assert np.shape(b) == (3, 4) and np.ndim(b) == 2 and np.size(b, 1) == 4
    assert np.result_type(BatchedValue(V.astype(np.float32)), 1.0) == np.float32


def test_writes_change_every_example():
    b = BatchedValue(X.copy())
    view = b[:, 1:]
    b[:, 1:] = 0.0
    b[0] += np.arange(4.0)
    expected = X.copy()
    expected[:, :, 1:] = 0.0
    expected[:, 0] += np.arange(4.0)
    np.testing.assert_array_equal(b.array, expected)
    np.testing.assert_array_equal(view.array, expected[:, :, 1:])  # a view, as for an ndarray


@pytest.mark.parametrize(
    "operation",
    [
        lambda b: float(b[0, 0]),
        lambda b: bool(b[0, 0] > 0),
        lambda b: np.asarray(b),
        lambda b: np.add(b, 1.0, out=np.zeros((3, 4))),
        lambda b: np.where(b > 0),
        lambda b: np.linalg.inv(b[:, :3]),
        lambda b: b[[0, 1], :, [0, 1]],  # separated array indices move to the front
        lambda b: b.nonexistent_method(),
        lambda b: np.cumsum(b, out=np.zeros(12)),
    ],
    ids=[
        "float",
        "bool",
        "asarray",
        "out=",
        "where of positions",
        "no rule",
        "separated array indices",
        "unknown attribute",
        "cumsum out=",
    ],
)
def test_conversions_that_would_drop_the_batch_axis_are_refused(operation):
    with pytest.raises(NotBatchable):
        operation(BatchedValue(normal(EXAMPLES, 3, 4)))


def test_writing_a_batched_value_into_a_plain_array_fails():
    plain = np.zeros((3, 4))
    with pytest.raises((NotBatchable, ValueError, TypeError)):
        plain[0] = BatchedValue(V)
    with pytest.raises((NotBatchable, ValueError, TypeError)):
        np.add.at(plain, [0], BatchedValue(V))
    np.testing.assert_array_equal(plain, 0.0)
