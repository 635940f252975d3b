"""A specialised helper's two functions read together (``optimize/paired_saves.py``): what
its backward function never reads, its forward function no longer saves.

Each gradient is checked against central finite differences on the first call (the
probe) and on later ones (the specialised pair), in every mode, and to second order,
including helpers whose loops change a value's shape from one iteration to the next.
"""

import textwrap

import gast
import numpy as np
import pytest
from conv_helper import conv_loss
from oracle import assert_close, numeric_grad

import s2sgrad as sg
from s2sgrad.compiler.optimize.paired_saves import drop_paired_saves

MODES = ("s2s", "tape", "auto")


def grow(x, w):
    acc = x[:1] * w
    for i in range(1, x.shape[0]):
        acc = np.concatenate([acc, np.sin(acc[-1:]) * w + x[i : i + 1]])
    return acc


def grow_loss(x, w):
    return np.sum(np.cos(grow(x, w)))


def widen(b, xs):
    out = b  # (3,), then (2, 3) from the first pass on
    for t in range(xs.shape[0]):
        out = out * 0.5 + xs[t] * b
    return out


def widen_loss(b, xs):
    return np.sum(widen(b, xs) ** 3)


def recur(W, xs):
    h = np.zeros(W.shape[0])
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])  # its backward reads h: the push stays
    return h


def recur_loss(W, xs):
    return np.sum(recur(W, xs) ** 2)


def _cases():
    rng = np.random.default_rng(3)
    return {
        "conv": (
            conv_loss,
            (
                rng.normal(size=(2, 2, 2, 3)) * 0.5,
                rng.normal(size=3),
                rng.normal(size=(2, 4, 4, 2)),
            ),
        ),
        "grow": (grow_loss, (rng.normal(size=(4, 3)), rng.normal(size=3))),
        "widen": (widen_loss, (rng.normal(size=3), rng.normal(size=(3, 2, 3)))),
        "recur": (recur_loss, (rng.normal(size=(3, 3)) * 0.5, rng.normal(size=(4, 3)))),
    }


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(_cases()))
def test_gradients_of_helpers_with_loops_on_first_and_later_calls(case, mode):
    f, args = _cases()[case]
    wrt = tuple(range(len(args) - 1)) if case == "conv" else (0, 1)
    g = sg.grad(f, wrt=wrt, mode=mode)
    expected = [numeric_grad(f, args, i) for i in wrt]
    for _ in range(3):  # the probe, then the specialised pair
        for got, want in zip(g(*args), expected):
            assert_close(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(_cases()))
def test_second_order_through_helpers_with_loops(case, mode):
    f, args = _cases()[case]
    sg.check_grads(f, *args, modes=("rev",), order=2, mode=mode)


def test_the_conv_helper_saves_only_what_its_backward_reads():
    kernel, bias, x = _cases()["conv"][1]
    g = sg.grad(conv_loss, wrt=(0, 1), mode="s2s")
    g(kernel, bias, x)
    g(kernel, bias, x)
    source = sg.source(g)
    # the bias's sum is taken once, after the backward loop: nothing is pushed for it
    assert "stack" not in source and "shape_only" not in source, source
    assert "unbroadcast" not in source, source
    assert ".sum(axis=(0, 1, 2))" in source, source


def deepen(w, b):
    out = b  # (3,), (1, 3), (1, 1, 3): a sum on every visit but the first
    for t in range(3):
        out = out + w[t] * np.ones((1,) * t + (3,))
    return np.sum(np.sin(out))


def triangle(b, x):
    out = b  # the inner loop does not run on the outer loop's last pass
    for i in range(3):
        for j in range(2 - i):
            out = out + x[i, j] * b[0]
    return np.sum(out**2)


def top_level(b, xs):
    out = b
    for t in range(xs.shape[0]):
        out = out * 0.9 + xs[t]
    return np.sum(np.tanh(out))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", [deepen, triangle, top_level])
def test_accumulators_that_broadcast_on_some_passes(f, mode):
    rng = np.random.default_rng(9)
    args = {
        deepen: (rng.normal(size=(3, 3)), rng.normal(size=3)),
        triangle: (rng.normal(size=(1,)), rng.normal(size=(3, 2, 4))),
        top_level: (rng.normal(size=4), rng.normal(size=(3, 2, 4))),
    }[f]
    g = sg.grad(f, wrt=(0, 1), mode=mode)
    expected = [numeric_grad(f, args, i) for i in (0, 1)]
    for _ in range(3):
        for got, want in zip(g(*args), expected):
            assert_close(got, want, rtol=1e-5, atol=1e-7)
    sg.check_grads(f, *args, modes=("rev",), order=2, mode=mode)


def test_a_sum_on_every_pass_stays_in_the_loop():
    rng = np.random.default_rng(9)
    g = sg.grad(deepen, wrt=(0, 1), mode="s2s")
    args = (rng.normal(size=(3, 3)), rng.normal(size=3))
    g(*args)
    assert "unbroadcast(" in sg.source(g)


def _pair(forward_text, backward_text):
    forward = gast.parse(textwrap.dedent(forward_text)).body[0]
    backward = gast.parse(textwrap.dedent(backward_text)).body[0]
    return forward, backward


def _text(node):
    import ast

    return ast.unparse(gast.gast_to_ast(node))


FORWARD = """
def f_vjp(x, w):
    stack = []
    out = x
    for i in range(3):
        stack.append(shape_only(t))
        t = out * w
        stack.append(out)
        out = np.sin(t)
    return (out, (stack, w))
"""


def test_an_unread_push_goes_from_both_functions():
    forward, backward = _pair(
        FORWARD,
        """
        def f_vjp_backward(saved, g):
            stack, w = saved
            stack_ = list(stack)
            dw = 0.0
            for i in reversed(range(3)):
                out = stack_.pop()
                dt = g * np.cos(out * w)
                t = stack_.pop()
                dw = dw + np.sum(dt * out)
                g = dt * w
            return (g, dw)
        """,
    )
    assert drop_paired_saves(forward, backward, lambda call: True)
    assert "shape_only(t)" not in _text(forward)
    assert "stack.append(out)" in _text(forward)
    assert " t = stack_.pop()" not in _text(backward)
    assert "stack_.pop()" in _text(backward)


def test_pops_that_do_not_match_the_pushes_name_for_name_leave_both_alone():
    forward, backward = _pair(
        FORWARD,
        """
        def f_vjp_backward(saved, g):
            stack, w = saved
            stack_ = list(stack)
            for i in reversed(range(3)):
                out = stack_.pop()
                u = stack_.pop()
                g = g * np.cos(out * w) * w
            return (g, w)
        """,
    )
    before = _text(forward), _text(backward)
    assert not drop_paired_saves(forward, backward, lambda call: True)
    assert (_text(forward), _text(backward)) == before


def test_a_saved_value_read_before_its_first_rebinding_is_kept():
    forward, backward = _pair(
        """
        def f_vjp(x):
            out = x * 2.0
            return (out, (out, x))
        """,
        """
        def f_vjp_backward(saved, g):
            out, x = saved
            for i in range(2):
                g = g * out
                out = x
            return g
        """,
    )
    assert not drop_paired_saves(forward, backward, lambda call: True)
    assert "(out, x)" in _text(forward)


def rebinding_conv(x, kernel):
    x = x[:, 1:]  # x.shape below is this slice's, not the argument's
    out = 0.0
    for i in range(kernel.shape[0]):
        out = out + x[:, i : i + x.shape[1] - kernel.shape[0] + 1] @ kernel[i]
    return out


def rebinding_loss(kernel, x):
    return np.sum(np.tanh(rebinding_conv(x, kernel)) ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_shapes_written_as_numbers_hold_only_for_their_signature(mode):
    rng = np.random.default_rng(11)
    g = sg.grad(conv_loss, wrt=(0, 1, 2), mode=mode)
    small = (rng.normal(size=(2, 2, 2, 3)) * 0.5, rng.normal(size=3), rng.normal(size=(2, 4, 4, 2)))
    large = (rng.normal(size=(3, 2, 2, 3)) * 0.5, rng.normal(size=3), rng.normal(size=(1, 6, 5, 2)))
    for args in (small, small, large, large, small):
        for i, got in enumerate(g(*args)):
            assert_close(got, numeric_grad(conv_loss, args, i), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_a_rebound_parameter_keeps_its_own_shape(mode):
    rng = np.random.default_rng(12)
    args = (rng.normal(size=(2, 3, 2)) * 0.5, rng.normal(size=(4, 6, 3)))
    g = sg.grad(rebinding_loss, wrt=(0, 1), mode=mode)
    for _ in range(3):
        for i, got in enumerate(g(*args)):
            assert_close(got, numeric_grad(rebinding_loss, args, i), rtol=1e-5, atol=1e-7)
    sg.check_grads(rebinding_loss, *args, modes=("rev",), order=2, mode=mode)


def test_the_conv_helper_reads_its_shapes_as_numbers():
    kernel, bias, x = _cases()["conv"][1]
    g = sg.grad(conv_loss, wrt=(0, 1), mode="s2s")
    g(kernel, bias, x)
    source = sg.source(g)
    assert "range(2)" in source and ".shape" not in source.split("def dconv_loss")[0], source
    backward = source[: source.index("\n\n\n")]
    assert "    x, = saved" in backward, source  # the zeros' shape is a number too


def test_a_forward_function_that_saves_only_its_arguments_calls_the_helper():
    kernel, bias, x = _cases()["conv"][1]
    g = sg.grad(conv_loss, wrt=(0, 1), mode="s2s")
    g(kernel, bias, x)
    source = sg.source(g)
    assert "return (conv(x, kernel, bias), (x,))" in source, source


def clipped_in_place(x, w):
    y = x * 1.0
    y[0] = 0.0  # an item write: the forward function stays the generated one
    out = y * w
    for i in range(y.shape[0]):
        out = out + y[i] * w
    return out


def in_place_loss(w, x):
    return np.sum(np.sin(clipped_in_place(x, w)))


def scaled_sum(x, w, k=2.0):
    out = w
    for i in range(x.shape[0]):
        out = out + k * x[i] * w
    return out


def default_loss(w, x):
    return np.sum(np.cos(scaled_sum(x, w)))


@pytest.mark.parametrize("mode", MODES)
def test_a_helper_writing_into_an_array_keeps_its_generated_forward_function(mode):
    rng = np.random.default_rng(13)
    args = (rng.normal(size=3), rng.normal(size=(4, 3)))
    g = sg.grad(in_place_loss, wrt=(0, 1), mode=mode)
    for _ in range(3):
        for i, got in enumerate(g(*args)):
            assert_close(got, numeric_grad(in_place_loss, args, i), rtol=1e-5, atol=1e-7)
    if mode == "s2s":
        assert "return (clipped_in_place(" not in sg.source(g)


@pytest.mark.parametrize("mode", MODES)
def test_a_helper_called_with_a_default_argument(mode):
    rng = np.random.default_rng(14)
    args = (rng.normal(size=3), rng.normal(size=(4, 3)))
    g = sg.grad(default_loss, wrt=(0, 1), mode=mode)
    for _ in range(3):
        for i, got in enumerate(g(*args)):
            assert_close(got, numeric_grad(default_loss, args, i), rtol=1e-5, atol=1e-7)


def _first_helper(x, w):
    out = w
    for i in range(x.shape[0]):
        out = out + x[i] * w
    return out


def _second_helper(x, w):
    out = w
    for i in range(x.shape[0]):
        out = out * x[i] + w
    return out


swapped = _first_helper


def swapped_loss(w, x):
    return np.sum(np.tanh(swapped(x, w)))


@pytest.mark.parametrize("mode", MODES)
def test_the_called_helper_is_the_one_the_name_holds_at_each_call(mode):
    global swapped
    rng = np.random.default_rng(15)
    args = (rng.normal(size=3) * 0.5, rng.normal(size=(3, 3)) * 0.5)
    g = sg.grad(swapped_loss, wrt=(0, 1), mode=mode)
    try:
        for helper in (_first_helper, _first_helper, _second_helper, _second_helper):
            swapped = helper
            for i, got in enumerate(g(*args)):
                assert_close(got, numeric_grad(swapped_loss, args, i), rtol=1e-5, atol=1e-7)
    finally:
        swapped = _first_helper


def test_zero_buffers_of_known_shape_are_plain_zeros():
    kernel, bias, x = _cases()["conv"][1]
    g = sg.grad(conv_loss, wrt=(0, 1), mode="s2s")
    g(kernel, bias, x)
    assert "np.zeros((2, 2, 2, 3))" in sg.source(g)
    single = [a.astype(np.float32) for a in (kernel, bias, x)]
    g32 = sg.grad(conv_loss, wrt=(0, 1), mode="s2s")
    for _ in range(2):
        got = g32(*single)
        assert [a.dtype for a in got] == [np.float32, np.float32]
        for a, b in zip(got, g(kernel, bias, x)):
            assert_close(a.astype(np.float64), b, rtol=1e-3, atol=1e-4)
