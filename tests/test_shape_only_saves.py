"""What loops save for the backward sweep, and the cotangents they keep.

* A variable each pass of a nested loop assigns before reading it (a convolution's patch
  and product) has a cotangent of its own in each pass, not one carried across the outer
  loop and reset to zeros in every inner pass.
* A value the backward sweep reads back only for its shape (``unbroadcast(g, out)`` of
  ``out = out + t``) is saved as ``shape_only(out)``: one shared read-only element, not a
  full array per iteration.
* A slice of a loop's indices (``x[:, i : i + oh, j : j + ow]``), outer loops' included,
  and an inner loop's ``range(kw)`` are computed again in the backward loop instead of
  being saved.

Every gradient is checked against central finite differences in every mode, on the first
call (the probe) and later calls (the specialised code).
"""

import numpy as np
import pytest
from conv_helper import conv_loss
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.pipeline import derivative
from s2sgrad.runtime import shape_only, tie_share, unbroadcast

MODES = ("s2s", "tape", "auto")


def conv_inline(kernel, bias, x):
    kh, kw, _, _ = kernel.shape
    oh = x.shape[1] - kh + 1
    ow = x.shape[2] - kw + 1
    out = bias
    for i in range(kh):
        for j in range(kw):
            out = out + x[:, i : i + oh, j : j + ow, :] @ kernel[i, j]
    return np.sum(np.sin(out))


def read_after_inner_loop(x):
    acc = 0.0
    for i in range(3):
        for j in range(2):
            t = x * (i + j + 1.0)
        acc = acc + np.sum(t**2)  # the inner loop's last t, read after it
    return acc


def inner_loop_may_not_run(x, n):
    acc = 0.0
    for i in range(3):
        for j in range(n - i):  # no pass at all once i reaches n
            t = np.sin(x * (j + 1.0))
            acc = acc + np.sum(t * x)
    return acc


def triangle(x, w):
    acc = w
    for i in range(3):
        for j in range(i + 1):  # the inner range depends on the outer index
            acc = acc + np.sin(x[i : i + 2] * w[j]) * (j + 1.0)
    return np.sum(acc**2)


def value_and_shape_reads(x, b):
    y = b
    for _ in range(3):
        y = y + y * x  # y read for its value and broadcast (b is a row)
    return np.sum(y**2)


def _check(g, f, args, wrt):
    expected = [numeric_grad(f, args, i) for i in wrt]
    for _ in range(2):
        actual = g(*args)
        assert_close(list(actual) if len(wrt) > 1 else [actual], expected)


def _conv_args(rng, n=2):
    return rng.normal(size=(2, 3, 3, 2)), rng.normal(size=2), rng.normal(size=(n, 5, 6, 3))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("function", [conv_loss, conv_inline])
def test_nested_loops_broadcast_into_an_accumulator(mode, function):
    rng = np.random.default_rng(0)
    g = sg.grad(function, wrt=(0, 1), mode=mode)
    for n in (2, 2, 3):  # a new shape is specialised anew
        _check(g, function, _conv_args(rng, n), (0, 1))


@pytest.mark.parametrize("mode", MODES)
def test_variable_read_after_its_inner_loop(mode):
    x = np.random.default_rng(1).normal(size=4)
    _check(sg.grad(read_after_inner_loop, mode=mode), read_after_inner_loop, (x,), (0,))


@pytest.mark.parametrize("mode", MODES)
def test_inner_loop_that_may_run_no_pass(mode):
    x = np.random.default_rng(2).normal(size=3)
    g = sg.grad(inner_loop_may_not_run, mode=mode)
    for n in (2, 3, 0):
        expected = numeric_grad(inner_loop_may_not_run, [x, n], 0)
        for _ in range(2):
            assert_close(g(x, n), expected)


@pytest.mark.parametrize("mode", MODES)
def test_inner_range_of_the_outer_index(mode):
    rng = np.random.default_rng(7)
    args = (rng.normal(size=5), rng.normal(size=(3, 2)))
    _check(sg.grad(triangle, wrt=(0, 1), mode=mode), triangle, args, (0, 1))


@pytest.mark.parametrize("mode", MODES)
def test_value_read_for_its_value_and_its_shape(mode):
    rng = np.random.default_rng(3)
    args = (rng.normal(size=(3, 4)) * 0.3, rng.normal(size=4))
    g = sg.grad(value_and_shape_reads, wrt=(0, 1), mode=mode)
    _check(g, value_and_shape_reads, args, (0, 1))


def test_shapes_alone_are_saved_for_unbroadcast():
    rng = np.random.default_rng(4)
    args = _conv_args(rng)
    generic = sg.source(sg.grad(conv_inline, wrt=(0, 1)))
    assert "stack.append(shape_only(out))" in generic
    assert "stack.append(out)" not in generic
    g = sg.grad(conv_loss, wrt=(0, 1), mode="s2s")
    # the callee returns a stand-in of its result for the backward function's unbroadcast
    assert "shape_only(out)" in sg.source(g)
    g(*args)
    code = sg.source(g)
    # specialised, the sum happens once after the loop, and no shape is saved for it
    assert "shape_only(out)" not in code and "stack" not in code, code
    fresh = derivative(conv_loss, ("kernel", "bias")).function(*args)
    for a, b in zip(g(*args), fresh):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_nested_loop_temporaries_are_not_reset_or_saved():
    rng = np.random.default_rng(5)
    g = sg.grad(conv_inline, wrt=(0, 1), mode="s2s")
    g(*_conv_args(rng))
    code = sg.source(g)
    # no cotangent carried across the outer loop and zeroed in each inner pass
    assert "zeros_like_value(t" not in code, code
    # the patch of the loops' indices is sliced again backward, not pushed each pass
    assert code.count("x[:, i:i + oh, j:j + ow, :]") == 2, code
    # nor the inner loop's range, the same in every pass: only shapes are pushed
    assert code.count("stack.append(") == code.count("stack.append(shape_only("), code


def test_shape_only_stand_in():
    x = np.arange(12.0).reshape(3, 4)
    stand_in = shape_only(x)
    assert stand_in.shape == x.shape and stand_in.dtype == x.dtype
    assert not stand_in.flags.writeable and np.all(stand_in == 0)
    assert shape_only(np.ones((3, 4))) is stand_in  # one per shape and dtype
    assert shape_only(x.astype(np.float32)).dtype == np.float32
    assert shape_only(x * 1j).dtype == np.complex128
    for value in (1.5, None, [1.0, 2.0], np.array(["a"], dtype=object)):
        assert shape_only(value) is value
    g = np.ones((2, 3, 4))
    assert_close(unbroadcast(g, shape_only(np.zeros(4))), unbroadcast(g, np.zeros(4)))
    assert_close(unbroadcast(g, shape_only(np.zeros((3, 1)))), np.full((3, 1), 8.0))


def test_second_order_through_a_loop_with_shape_saves():
    rng = np.random.default_rng(6)
    x, b = rng.normal(size=(3, 4)) * 0.3, rng.normal(size=4)

    def squared_gradient(x):
        return np.sum(sg.grad(value_and_shape_reads, mode="s2s")(x, b) ** 2)

    expected = numeric_grad(squared_gradient, [x], 0)
    for mode in ("s2s", "tape"):
        outer = sg.grad(squared_gradient, mode=mode)
        for _ in range(2):
            assert_close(outer(x), expected, rtol=1e-4, atol=1e-6)


def test_tie_share_counts_ties_only_where_there_are_some():
    g = np.arange(1.0, 4.0).reshape(3, 1)
    one_each = np.eye(3, 4, dtype=bool)
    assert tie_share(g, one_each, 1, np.float64) is g  # no tie: nothing to divide
    ties = one_each.copy()
    ties[1, 3] = True
    assert_close(tie_share(g, ties, 1, np.float64), np.array([[1.0], [1.0], [3.0]]))
    assert tie_share(g.astype(np.float32), one_each, 1, np.float64).dtype == np.float64


@pytest.mark.parametrize("mode", MODES)
def test_max_pool_gradient_with_and_without_ties(mode):
    def pool(x):
        return np.sum(np.max(np.reshape(x, (2, 2, 3, 2)), axis=(1, 3)) ** 2)

    x = np.random.default_rng(8).normal(size=(4, 6))
    g = sg.grad(pool, mode=mode)
    _check(g, pool, (x,), (0,))
    tied = np.round(x)  # whole numbers: windows with equal maxima share the cotangent
    tied[0, 0] = tied[0, 1] = tied[1, 0] = 5.0
    expected = np.zeros_like(tied)
    windows = np.reshape(tied, (2, 2, 3, 2))
    top = np.max(windows, axis=(1, 3), keepdims=True)
    hits = windows == top
    expected = np.reshape(hits * 2 * top / np.sum(hits, axis=(1, 3), keepdims=True), (4, 6))
    for _ in range(2):
        assert_close(g(tied), expected)
