"""``for t in sg.checkpointed(range(n), snapshots=k):``: gradients equal to the plain loop's
and to finite differences on both engines, at most ``k`` snapshots kept, refusals with the
user's line."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from oracle import assert_close, numeric_complex_grad, numeric_grad, numeric_jacobian

import s2sgrad as sg
from s2sgrad.errors import FallbackWarning, UnsupportedError
from s2sgrad.runtime.revolve import CheckpointedLoop

MODES = ("s2s", "tape", "auto")


def rnn(W, U, h, c, x, k):
    for t in sg.checkpointed(range(x.shape[0]), snapshots=k):
        z = np.tanh(h @ W + x[t] @ U)
        c = 0.5 * c + z
        h = z * np.cos(c)
    return np.sum(h**2) + np.sum(c)


def rnn_plain(W, U, h, c, x, k):
    for t in range(x.shape[0]):
        z = np.tanh(h @ W + x[t] @ U)
        c = 0.5 * c + z
        h = z * np.cos(c)
    return np.sum(h**2) + np.sum(c)


def scalar_loop(a, y, n, k):
    for t in sg.checkpointed(range(n), snapshots=k):
        y = np.sin(a * y) + 0.1 * t
    return y


def scalar_loop_plain(a, y, n, k):
    for t in range(n):
        y = np.sin(a * y) + 0.1 * t
    return y


def problem(steps, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(4, 4)) * 0.4
    U = rng.normal(size=(3, 4)) * 0.4
    h, c = rng.normal(size=4), rng.normal(size=4)
    return W, U, h, c, rng.normal(size=(steps, 3))


def assert_equal_gradients(got, expected):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.fixture(autouse=True)
def _no_fallback():
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.errors.FallbackWarning)
        yield


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("steps", [0, 1, 2, 7, 50])
@pytest.mark.parametrize("snapshots", [1, 2, 3, "sqrt", "more"])
def test_equals_the_plain_loop_and_keeps_at_most_k_snapshots(mode, steps, snapshots):
    k = {"sqrt": None, "more": steps + 3}.get(snapshots, snapshots)
    W, U, h, c, x = problem(steps)
    wrt = (0, 1, 2, 3)
    expected = sg.grad(rnn_plain, wrt=wrt, mode="s2s")(W, U, h, c, x, k)
    transformed = sg.grad(rnn, wrt=wrt, mode=mode)
    for _ in range(2):  # first and second call
        CheckpointedLoop.latest = None
        assert_equal_gradients(transformed(W, U, h, c, x, k), expected)
        stats = CheckpointedLoop.latest.stats
        limit = math.isqrt(max(steps, 1)) if k is None else k
        assert stats["most_snapshots"] <= max(limit, 1)
        assert stats["taped"] == steps


@pytest.mark.parametrize("mode", MODES)
def test_against_finite_differences(mode):
    W, U, h, c, x = problem(7, seed=3)
    grads = sg.grad(rnn, wrt=(0, 1, 2, 3), mode=mode)(W, U, h, c, x, 2)
    for index, g in enumerate(grads):
        expected = numeric_grad(rnn_plain, (W, U, h, c, x, 2), index)
        np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("mode", MODES)
def test_the_data_a_loop_reads_can_be_differentiated(mode):
    W, U, h, c, x = problem(5, seed=4)
    got = sg.grad(rnn, wrt=4, mode=mode)(W, U, h, c, x, 2)
    np.testing.assert_allclose(got, sg.grad(rnn_plain, wrt=4)(W, U, h, c, x, 2), atol=1e-12)
    np.testing.assert_allclose(got, numeric_grad(rnn_plain, (W, U, h, c, x, 2), 4), atol=1e-7)


def dict_state(params, h, n):
    lengths = {"sum": 0.0}
    for t in sg.checkpointed(range(n), snapshots=3):
        h = np.tanh(params["w"] * h + params["b"])
        lengths = {"sum": lengths["sum"] + np.sum(h) * t}
    return lengths["sum"] + np.sum(h)


def dict_state_plain(params, h, n):
    lengths = {"sum": 0.0}
    for t in range(n):
        h = np.tanh(params["w"] * h + params["b"])
        lengths = {"sum": lengths["sum"] + np.sum(h) * t}
    return lengths["sum"] + np.sum(h)


@pytest.mark.parametrize("mode", MODES)
def test_containers_in_the_state_and_in_what_the_body_reads(mode):
    rng = np.random.default_rng(8)
    params, h = {"w": rng.normal(size=3), "b": rng.normal(size=3)}, rng.normal(size=3)
    got = sg.grad(dict_state, wrt=(0, 1), mode=mode)(params, h, 9)
    expected = sg.grad(dict_state_plain, wrt=(0, 1))(params, h, 9)
    for key in ("w", "b"):
        np.testing.assert_allclose(got[0][key], expected[0][key], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_scalar_loop_value_and_grad_and_vjp(mode):
    a, y = 0.9, 0.3
    value, grads = sg.value_and_grad(scalar_loop, wrt=(0, 1), mode=mode)(a, y, 30, 4)
    expected = sg.grad(scalar_loop_plain, wrt=(0, 1))(a, y, 30, 4)
    expected_value = scalar_loop_plain(a, y, 30, 4)
    assert value == pytest.approx(expected_value, abs=1e-12)
    assert_equal_gradients(grads, expected)
    out, pullback = sg.vjp(lambda a, y: scalar_loop(a, y, 30, 4), a, y, mode=mode)
    assert out == pytest.approx(expected_value, abs=1e-12)
    for _ in range(2):  # a pullback may be called again
        assert_equal_gradients([float(v) for v in pullback(2.0)], [2 * e for e in expected])


@pytest.mark.parametrize("mode", ["auto", "tape"])
def test_hessian_vector_products(mode):
    W, U, h, c, x = problem(6, seed=5)
    v = np.random.default_rng(6).normal(size=W.shape)
    (got,) = sg.hvp(lambda W: rnn(W, U, h, c, x, 2), (W,), (v,), mode=mode)
    (expected,) = sg.hvp(lambda W: rnn_plain(W, U, h, c, x, 2), (W,), (v,), mode=mode)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    step = 1e-6
    gradient = sg.grad(lambda W: rnn_plain(W, U, h, c, x, 2))
    numeric = (gradient(W + step * v) - gradient(W - step * v)) / (2 * step)
    np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
def test_forward_mode(mode):
    a, y = 0.9, 0.3
    _, tangent = sg.jvp(lambda a: scalar_loop(a, y, 20, 3), (a,), (1.0,), mode=mode)
    expected = numeric_grad(scalar_loop_plain, (a, y, 20, 3), 0)
    assert tangent == pytest.approx(expected, rel=1e-6)


def test_outside_differentiation_it_is_the_plain_loop():
    W, U, h, c, x = problem(9)
    assert rnn(W, U, h, c, x, 2) == rnn_plain(W, U, h, c, x, 2)
    assert list(sg.checkpointed([3, 4], snapshots=1)) == [3, 4]
    with pytest.raises(ValueError, match="snapshots"):
        sg.checkpointed(range(3), snapshots=0)


def leaves_early(y):
    for t in sg.checkpointed(range(5), snapshots=2):
        y = y * 2.0
        if t > 2:
            break
    return y


def writes_outside(y):
    out = np.zeros(5)
    for t in sg.checkpointed(range(5), snapshots=2):
        y = y * 2.0
        out[t] = y
    return np.sum(out)


def appends_outside(y):
    kept = []
    for _ in sg.checkpointed(range(5), snapshots=2):
        y = y * 2.0
        kept.append(y)
    return sum(kept)


def reads_the_loop_variable_after(y):
    t = 0
    for t in sg.checkpointed(range(5), snapshots=2):  # noqa: B007  (read after the loop)
        y = y * 2.0
    return y * t


def loops_over_items(y, items):
    for item in sg.checkpointed(items, snapshots=2):
        y = y * item
    return y


def reads_a_body_temporary_after(y):
    for _ in sg.checkpointed(range(5), snapshots=2):
        z = y * 2.0
        y = z
    return z


@pytest.mark.parametrize("mode", ["s2s", "tape"])
@pytest.mark.parametrize(
    "function, args, says, below",
    [
        (leaves_early, (1.0,), "'break'", 4),
        (writes_outside, (1.0,), "a write into an array", 2),
        (appends_outside, (1.0,), "a write into an array", 2),
        (loops_over_items, (1.0, [1.0, 2.0]), "range", 1),
        (reads_the_loop_variable_after, (1.0,), "loop variable 't'", 2),
        (reads_a_body_temporary_after, (1.0,), "'z' first assigned", 1),
    ],
)
def test_what_cannot_be_carried_is_refused_at_the_users_line(mode, function, args, says, below):
    line = function.__code__.co_firstlineno + below
    with pytest.raises(UnsupportedError, match=says) as refusal:
        sg.grad(function, mode=mode)(*args)
    assert f"test_checkpointed_loops.py:{line}" in str(refusal.value)


def cell(h):
    return np.sin(h)


def calls_a_global(w, h):
    for _ in sg.checkpointed(range(4), snapshots=2):
        h = cell(w * h)
    return np.sum(h)


def calls_a_global_plain(w, h):
    for _ in range(4):
        h = cell(w * h)
    return np.sum(h)


@pytest.mark.parametrize("mode", MODES)
def test_a_redefined_global_is_seen_at_the_next_call(mode, monkeypatch):
    w, h = np.array([0.7, 1.1]), np.array([0.4, -0.3])
    gradient = sg.grad(calls_a_global, mode=mode)
    np.testing.assert_allclose(gradient(w, h), sg.grad(calls_a_global_plain)(w, h), atol=1e-12)
    monkeypatch.setitem(globals(), "cell", np.tanh)
    changed = gradient(w, h)
    np.testing.assert_allclose(changed, sg.grad(calls_a_global_plain)(w, h), atol=1e-12)
    np.testing.assert_allclose(changed, numeric_grad(calls_a_global_plain, (w, h), 0), atol=1e-7)


def test_the_listing_shows_the_loop_body_as_a_step_function():
    W, U, h, c, x = problem(3)
    gradient = sg.grad(rnn, wrt=(0, 1))
    gradient(W, U, h, c, x, 2)
    text = sg.source(gradient, wrt=(0, 1))
    assert "# the body of the checkpointed loop at test_checkpointed_loops.py:" in text
    assert "def rnn_loop_step(c, h, U, W, x, t):" in text
    assert "return (c, h)" in text
    assert "run_checkpointed_vjp(rnn_loop_step, (c, h), (U, W, x)" in text


def test_forward_over_reverse_is_refused_by_source_transformation_alone():
    W, U, h, c, x = problem(4)
    with pytest.raises(UnsupportedError, match="forward mode"):
        sg.hvp(lambda W: rnn(W, U, h, c, x, 2), (W,), (W,), mode="s2s")


def damped_map(x0, k):
    x = x0
    for _ in sg.checkpointed(range(8), snapshots=3):
        x = x + 0.1 * np.sin(k * x)
    return np.sum(x**2)


def test_a_hessian_through_a_loop_is_refused_naming_the_loop_not_a_rule_to_register():
    x0 = np.array([0.3, -0.4])
    with pytest.raises(UnsupportedError, match=r"over the gradient of a loop over s2sgrad"):
        sg.hessian(damped_map, mode="s2s")(x0, 1.7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        hessian = sg.hessian(damped_map, mode="auto")(x0, 1.7)
    gradient = sg.grad(damped_map, mode="tape")
    assert_close(hessian, numeric_jacobian(lambda x: gradient(x, 1.7), [x0], 0), rtol=1e-5)


def counts_steps(w, n):
    count = 0
    for t in sg.checkpointed(range(n), snapshots=2):
        count = count + t
    return w * count


@pytest.mark.parametrize("mode", MODES)
def test_a_loop_carrying_nothing_differentiated(mode):
    assert sg.grad(counts_steps, mode=mode)(2.0, 6) == 15.0


def becomes_floating(w, n):
    acc, kept = 0, []
    for t in sg.checkpointed(range(n), snapshots=2):
        acc = acc + np.sin(w * t)
        kept = kept + [acc * w]
    return acc * w + sum(kept)


def becomes_floating_plain(w, n):
    acc, kept = 0, []
    for t in range(n):
        acc = acc + np.sin(w * t)
        kept = kept + [acc * w]
    return acc * w + sum(kept)


@pytest.mark.parametrize("mode", MODES)
def test_state_that_becomes_floating_in_the_loop(mode):
    got = sg.grad(becomes_floating, mode=mode)(0.7, 6)
    assert got == pytest.approx(numeric_grad(becomes_floating_plain, (0.7, 6), 0), rel=1e-7)
    plain = sg.grad(becomes_floating_plain, mode="tape")(0.7, 6)
    assert got == pytest.approx(plain, rel=1e-12)


def complex_state(z):
    h = z
    for t in sg.checkpointed(range(4), snapshots=2):
        h = np.sin(h) * 0.9 + z * t
    return np.sum(np.real(h * (1.0 + 2.0j)))


def test_complex_loop_state_is_differentiated():
    # complex state counted as constant: the tape and mode="auto" gave zeros
    z = np.array([0.3 + 0.2j, -0.1 + 0.5j])
    expected = numeric_complex_grad(complex_state, (z,), 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FallbackWarning)
        for mode in ("tape", "auto"):
            got = sg.grad(complex_state, mode=mode)(z)
            np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8, err_msg=mode)
    with pytest.raises(UnsupportedError, match="complex"):  # a custom derivative: the tape's
        sg.grad(complex_state, mode="s2s")(z)
