"""A function that updates its arguments in place (issue 13 item 6): differentiated as the
function of the arguments' values at call time, in every mode, while no transform changes
the caller's arrays (calling the function itself still does, as NumPy would)."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg

MODES = ["s2s", "tape", "auto"]
RNG = np.random.default_rng(1306)


def item_write(x):
    x[0] = x[0] * x[1]
    return np.sum(x)


def slice_update(x):
    x[1:] += x[:-1] * 2.0
    return np.sum(np.sin(x) * x)


def augmented(x):
    x *= 3.0
    x[2] -= x[0]
    return np.sum(x**2)


def second_argument_updated(w, x):
    x[::2] = x[::2] * w[0]
    return np.sum(np.tanh(x) * w)


def _scale_first(a, s):
    a[0] = a[0] * s


def helper_updates_it(x):
    _scale_first(x, x[1])
    return np.sum(x**2)


def nested_helper_updates_it(x):
    def bump(v):
        v[1:] *= v[0]

    bump(x)
    return np.sum(np.exp(x))


def updated_in_a_loop(x):
    for i in range(1, 3):
        x[i] = x[i] * x[i - 1]
    return np.sum(x)


def through_a_view_then_read(x):
    row = x[1:]
    row *= 2.0
    return np.sum(row**2)


def written_with_out(x):
    np.multiply(x, x[0], out=x)
    return np.sum(x**2)


CASES = [
    written_with_out,
    item_write,
    slice_update,
    augmented,
    helper_updates_it,
    nested_helper_updates_it,
    updated_in_a_loop,
    through_a_view_then_read,
]


def _gradient(f, args, wrt, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # auto must not fall back
        return call_twice(sg.grad(f, wrt=wrt, mode=mode), *args)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradient_of_a_function_that_updates_its_argument(f, mode):
    x = RNG.uniform(-1.0, 1.0, size=3)
    before = x.copy()
    expected = numeric_grad(lambda v: f(v.copy()), (x,), 0)
    np.testing.assert_array_equal(x, before)
    try:
        gradient = _gradient(f, (x,), 0, mode)
    except sg.UnsupportedError as error:
        # the tape refuses a helper changing its caller's array, by design
        assert mode == "tape" and "helper" in f.__name__, error
        return
    assert_close(gradient, expected)
    np.testing.assert_array_equal(x, before)  # the caller's array is left as it was


def _copied(f):
    return lambda *a: f(*(v.copy() for v in a))


@pytest.mark.parametrize("mode", MODES)
def test_the_other_argument_updated(mode):
    w, x = RNG.uniform(-1.0, 1.0, size=3), RNG.uniform(-1.0, 1.0, size=3)
    saved = w.copy(), x.copy()
    for wrt in (0, 1):
        expected = numeric_grad(_copied(second_argument_updated), (w, x), wrt)
        try:
            gradient = _gradient(second_argument_updated, (w, x), wrt, mode)
        except sg.NonDifferentiableError as error:  # w written into x, not differentiated
            assert mode == "tape" and wrt == 0 and "plain array" in str(error)
            continue
        assert_close(gradient, expected)
    np.testing.assert_array_equal(w, saved[0])
    np.testing.assert_array_equal(x, saved[1])


@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_no_transform_changes_the_callers_array(mode):
    x = RNG.uniform(-1.0, 1.0, size=3)
    before = x.copy()
    v = RNG.normal(size=3)
    value, gradient = sg.value_and_grad(slice_update, mode=mode)(x)
    assert value == pytest.approx(slice_update(before.copy()))
    assert_close(gradient, numeric_grad(_copied(slice_update), (before,), 0))
    (pulled,) = sg.vjp(slice_update, x, mode=mode)[1](1.0)
    assert_close(pulled, gradient)
    _, tangent = sg.jvp(slice_update, (x,), (v,), mode=mode)
    assert_close(tangent, numeric_jvp(_copied(slice_update), [before], 0, v))
    np.testing.assert_array_equal(x, before)
    try:
        hessian = sg.hessian(augmented, mode=mode)(x)
    except sg.UnsupportedError as error:  # second order through item writes: not in s2s yet
        assert mode == "s2s" and "in place" in str(error)
    else:
        first = sg.grad(augmented, mode="tape")
        assert_close(hessian[1], numeric_grad(lambda y: first(y.copy())[1], (before,), 0))
    np.testing.assert_array_equal(x, before)


def test_calling_the_function_itself_still_changes_the_array():
    """As NumPy would: only the transforms copy."""
    x = np.array([2.0, 3.0, 4.0])
    item_write(x)
    np.testing.assert_array_equal(x, [6.0, 3.0, 4.0])


def dict_entry_updated(d):
    d["a"] = d["a"] * 2.0
    return d["a"] * d["b"]


def list_entry_updated(ws):
    ws[0] = ws[0] * ws[1]
    return np.sum(ws[0]) + np.sum(ws[1])


@pytest.mark.parametrize(
    "f, arg, expected",
    [
        (dict_entry_updated, {"a": 1.5, "b": 2.0}, {"a": 4.0, "b": 3.0}),
        (list_entry_updated, [np.full(2, 2.0), np.full(2, 3.0)], [np.full(2, 3.0)] * 2),
    ],
    ids=["dict", "list"],
)
def test_a_container_argument_updated_in_place_is_left_to_the_tape(f, arg, expected):
    """Source transformation copies arrays, not lists or dicts: it refuses, and auto runs
    the tape. The tape updates its own copy of a list; a dict's stored entries reach the
    caller's dict as plain values, as Python's call leaves them (round 34)."""
    before = repr(arg)
    with pytest.raises(sg.UnsupportedError, match="copy it first"):
        sg.grad(f, mode="s2s")(arg)
    assert repr(arg) == before  # the refusal changed nothing
    plain = copy.deepcopy(arg)
    f(plain)
    for mode in ("tape", "auto"):
        given = copy.deepcopy(arg)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(f, mode=mode)(given)
        assert_close(gradient, expected)
        assert repr(given) == (repr(plain) if isinstance(arg, dict) else before)


def logs_its_loss(w, x, history):
    loss = np.sum((x @ w) ** 2)
    history.append(f"loss = {loss:.3f}")
    return loss


def test_a_log_list_argument_not_differentiated_is_left_to_the_tape():
    """A list the function only logs into is no value being differentiated: auto runs the
    tape, which appends to the caller's list as the function does, once per call."""
    w, x = np.array([0.5, -1.0]), np.array([[1.0, 2.0], [0.5, 0.1]])
    with pytest.raises(sg.UnsupportedError, match="copy it first"):
        sg.grad(logs_its_loss, mode="s2s")(w, x, [])
    for mode in ("tape", "auto"):
        history = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(logs_its_loss, mode=mode)(w, x, history)
        assert_close(gradient, numeric_grad(logs_its_loss, [w, x, []], 0))
        assert history == [f"loss = {logs_its_loss(w, x, []):.3f}"]


def hooked_into_a_list(x, seen):
    y = sg.with_derivative(np.sin(x), lambda g: seen.append(g))
    return np.sum(y)


@pytest.mark.parametrize("mode", MODES)
def test_a_hook_appending_to_a_list_argument_reaches_the_callers_list(mode):
    """A lambda run by the backward sweep changes the caller's list, as when f runs: only
    what the function itself writes into arrays is done on a copy."""
    seen = []
    x = RNG.uniform(-1.0, 1.0, size=3)
    assert_close(sg.grad(hooked_into_a_list, mode=mode)(x, seen), np.cos(x))
    assert len(seen) == 1


def written_through_a_view_then_read(x):
    row = x[1:]
    row[0] = 5.0 * x[0]
    return np.sum(x**2)


@pytest.mark.parametrize("mode", MODES)
def test_an_argument_written_through_a_view_and_read(mode):
    """x changes through row, a view for certain: source transformation follows it on the
    private copy (passes/view_writes.py), the tape on its own version of x
    (tape/view_writes.py). Either way the caller's array is unchanged."""
    x = RNG.uniform(-1.0, 1.0, size=3)
    before = x.copy()
    expected = numeric_grad(lambda v: written_through_a_view_then_read(v.copy()), (x,), 0)
    assert_close(sg.grad(written_through_a_view_then_read, mode=mode)(x), expected)
    np.testing.assert_array_equal(x, before)
