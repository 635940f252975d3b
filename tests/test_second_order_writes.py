"""In-place writes after a conditional that chooses between a new array and an existing one.

``v2 = np.ones_like(x) * np.flip(v1) if c else v1`` followed by ``v2[..., :1] = ...``: the
generated gradient binds ``t10 = np.flip(v1)`` in the branch where ``v2`` is new and reads
``t10`` again in the backward. The order-blind sharing analysis gave ``v2`` and ``t10`` the
common origin ``v1`` and refused to differentiate that gradient again (a Hessian), though
no run binds both to it (passes/aliases_paths.py looks along the paths). Updates whose
sharing is real stay refused. The oracle: central differences of each mode's gradient,
itself checked against central differences of the function.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import directional_derivative, numeric_grad, numeric_jacobian

import s2sgrad as sg
from s2sgrad.runtime import snapshot

MODES = ["s2s", "tape", "auto"]
X = np.array([0.3, -0.7, 1.1, 0.45])
V = np.array([0.2, -0.4, 0.9, -0.3])


def flipped_or_same(x):
    v1 = x + x
    v2 = np.ones_like(x) * np.flip(v1, axis=-1) if np.ndim(v1) else v1
    if np.ndim(v2) > 0:
        v2[..., :1] = np.tanh(v2[..., -1:]) * 2.0
    return np.sum(np.sin(v2) * 1.0)


def same_array_taken(x):
    v1 = x * x
    v2 = np.ones_like(x) * np.flip(v1, axis=-1) if np.ndim(v1) > 4 else v1
    v2[..., :1] = np.tanh(v2[..., -1:]) * 2.0
    return np.sum(np.sin(v2) * v2)


def chosen_by_a_value_test(x):
    v = x * x
    w = np.flip(v) * np.sin(np.flip(v)) if np.sum(x) > 0 else v
    w[1:3] = np.tanh(w[0:2]) * x[:2]
    return np.sum(w**2)


def updated_by_operator(x):
    v = x**3
    w = v[::-1] * v if x.size > 1 else v
    w += x**2
    return np.sum(w**2)


def view_bound_only_where_new(x):
    v = x * 2.0
    if x.size > 1:
        t = np.flip(v)
        w = t * 3.0
    else:
        t = None
        w = v
    w[0] = np.sin(w[1])
    r = np.sum(w**2)
    if t is not None:
        r = r + np.sum(t * x)
    return r


def view_of_the_written_array(x):
    v = np.sin(x)
    w = np.flip(v) * np.flip(v) if np.sum(x) > 0 else v
    w[1:3] = w[1:3] ** 2
    return np.sum(w * x)


def chosen_by_an_if_statement(x):
    v = np.cos(x) * x
    if x.shape[0] > 2:  # noqa: SIM108 (an if statement, not a conditional expression)
        w = v[::-1] * v[::-1]
    else:
        w = v
    w[0] = np.exp(w[1])
    return np.sum(w**2)


def item_operator_update(x):
    v = np.exp(x)
    w = np.flip(v) * v if x.size > 1 else v
    w[1:] += w[:-1] * x[1:]
    return np.sum(np.sin(w))


def added_at(x):
    v = x * x
    w = np.flip(v) * np.sin(v) if x.size > 1 else v
    np.add.at(w, [0, 1, 0], x[:3] ** 2)
    return np.sum(w**2)


def written_by_out(x):
    v = x * 2.0
    w = np.flip(v) * v if x.size > 1 else v
    np.multiply(w, x, out=w)
    return np.sum(np.tanh(w))


def the_argument_itself(x):
    w = x * 2.0 if x.size > 10 else x
    w[0] = np.sin(w[1])
    return np.sum(w**2)


def chosen_in_a_branch(x):
    v = np.sin(x)
    if np.sum(x) > -10:  # noqa: SIM108 (an if statement around the conditional expression)
        w = np.flip(v) * np.flip(v) if x.size > 2 else v
    else:
        w = v * 2.0
    w[0] = w[-1] ** 3
    return np.sum(w * x)


def if_without_else(x):
    v = np.cos(x)
    w = v
    if x.size > 1:
        t = np.flip(v)
        w = t * t
    w[0] = np.sin(w[-1])
    return np.sum(w * x)


def written_twice(x):
    v = x + 1.0
    w = np.flip(v) * np.flip(v) if x.size > 1 else v
    w[0] = w[1] * 2.0
    w[2:] = np.exp(w[:2])
    return np.sum(w**2)


def condition_bound_in_a_branch(x):
    v = np.sin(x)
    if np.sum(x) > -10:
        c = x.size > 1
        w = np.flip(v) * np.flip(v) if c else v
        w[0] = w[-1] ** 3
    else:
        w = v * 2.0
    return np.sum(w * x)


ACCEPTED = [
    flipped_or_same,
    same_array_taken,
    chosen_by_a_value_test,
    updated_by_operator,
    view_of_the_written_array,
    chosen_by_an_if_statement,
    item_operator_update,
    added_at,
    written_by_out,
    the_argument_itself,
    chosen_in_a_branch,
    if_without_else,
    written_twice,
    view_bound_only_where_new,
    condition_bound_in_a_branch,
]
# reverse over reverse refuses these in the forward sweep of the second pass, which writes
# in place only into names every binding of which makes a new array: in the gradient, w is
# also bound to what the stack gives back (w = stack.pop()), dw to unbroadcast(...)
NOT_TWICE_REVERSED = (if_without_else, condition_bound_in_a_branch)


def _hessian_by_differences(f, mode):
    gradient = sg.grad(f, mode=mode)
    return numeric_jacobian(lambda x: gradient(x.copy()), [X.copy()], 0, step=1e-5)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", ACCEPTED, ids=lambda f: f.__name__)
def test_gradient_matches_differences(f, mode):
    expected = numeric_grad(lambda x: f(x.copy()), [X.copy()], 0)
    np.testing.assert_allclose(sg.grad(f, mode=mode)(X.copy()), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", ACCEPTED, ids=lambda f: f.__name__)
def test_hessian_and_hvp_match_differences_of_gradients(f, mode):
    expected = _hessian_by_differences(f, mode)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # auto must not fall back to the tape
        hessian = sg.hessian(f, mode=mode)(X.copy())
        (product,) = sg.hvp(f, (X.copy(),), (V,), mode=mode)
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(product, expected @ V, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "f", [f for f in ACCEPTED if f not in NOT_TWICE_REVERSED], ids=lambda f: f.__name__
)
def test_gradient_of_gradient_matches_differences(f):
    def along(x):
        return np.sum(sg.grad(f, mode="s2s")(x) * V)

    expected = directional_derivative(lambda x: sg.grad(f, mode="s2s")(x.copy()), X.copy(), V)
    np.testing.assert_allclose(sg.grad(along, mode="s2s")(X.copy()), expected, rtol=1e-5, atol=1e-5)


def made_anew_in_each_run(x):
    acc = 0.0
    for i in range(2):
        v = x * (i + 1.0)
        w = np.flip(v) * np.flip(v) if x.size > 1 else v
        w[1:3] = w[1:3] ** 2
        acc = acc + np.sum(w * x)
    return acc


@pytest.mark.parametrize("mode", MODES)
def test_gradient_of_an_update_in_a_loop(mode):
    # refused by the order-blind analysis (v is bound in the loop); its Hessian stays
    # refused in mode="s2s": the saves of a loop are not followed, so no restore is matched
    f = made_anew_in_each_run
    expected = numeric_grad(lambda x: f(x.copy()), [X.copy()], 0)
    np.testing.assert_allclose(sg.grad(f, mode=mode)(X.copy()), expected, rtol=1e-5, atol=1e-7)


def chosen_is_read_base(x):
    v = x * 2.0
    w = v if x.size > 1 else v * 2.0
    w[0] = 0.0
    return np.sum(v * x)


def view_taken_before_the_choice(x):
    v = x * 2.0
    t = np.flip(v)
    if x.size > 1:  # noqa: SIM108 (an if statement, not a conditional expression)
        w = t * 3.0
    else:
        w = v
    w[0] = np.sin(w[1])
    return np.sum(w**2) + np.sum(t * x)


def both_made_here_one_viewed(x):
    a = x * 2.0
    b = x * 3.0
    ta = a[::-1]
    w = a if x.size > 1 else b
    w[0] = 0.0
    return np.sum(ta * x) + np.sum(w)


def chosen_in_a_loop(x):
    v = x * 1.5
    acc = 0.0
    for i in range(3):
        w = np.cos(v) * v[::-1] if i % 2 else v
        w[0] = w[1] * x[i]
        acc = acc + np.sum(w**2)
    return acc


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "f, read",
    [
        (chosen_is_read_base, "v"),
        (view_taken_before_the_choice, "t"),
        (both_made_here_one_viewed, "ta"),
        (chosen_in_a_loop, "v"),
    ],
    ids=lambda p: getattr(p, "__name__", p),
)
def test_real_sharing_stays_refused(f, read, mode):
    """Refused by source transformation; the tape follows the write through the shared
    memory (tape/view_writes.py), and mode "auto" falls back to it."""
    if mode != "s2s":
        expected = numeric_grad(lambda x: f(x.copy()), [X.copy()], 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(f, mode=mode)(X.copy())
        np.testing.assert_allclose(gradient, expected, rtol=1e-5, atol=1e-7)
        return
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.grad(f, mode=mode)(X.copy())
    assert f"'w[...] = ...' changes w in place, and '{read}', read afterwards" in str(refused.value)


# Saves and restores as the reverse sweep writes them (stack.append(snapshot(w[i])) before
# the update, w[i] = stack.pop() in the backward), here by hand: a view of w taken before
# the update has its values back after the restore, and only then.


def read_between(x):
    stack = []
    w = x * 2.0
    t = np.flip(w)[1:3]
    stack.append(snapshot(w[1:3]))
    w[1:3] = x[:2] ** 2
    y = np.sum(t * x[1:3])
    w[1:3] = stack.pop()
    return y + np.sum(w)


def read_after(x):
    stack = []
    w = x * 2.0
    t = np.flip(w)[1:3]
    stack.append(snapshot(w[1:3]))
    w[1:3] = x[:2] ** 2
    y = np.sum(w**2)
    w[1:3] = stack.pop()
    return y + np.sum(t * x[1:3])


def other_region(x):
    stack = []
    w = x * 2.0
    t = np.flip(w)[1:3]
    stack.append(snapshot(w[1:3]))
    w[1:3] = x[:2] ** 2
    y = np.sum(w**2)
    w[0:2] = stack.pop()
    return y + np.sum(t * x[1:3])


def rebound_between(x):
    stack = []
    w = x * 2.0
    t = np.flip(w)[1:3]
    stack.append(snapshot(w[1:3]))
    w[1:3] = x[:2] ** 2
    y = np.sum(w**2)
    w = w * 1.0
    w[1:3] = stack.pop()
    return y + np.sum(t * x[1:3])


def other_entry_popped(x):
    stack = []
    w = x * 2.0
    t = np.flip(w)[1:3]
    stack.append(snapshot(w[1:3]))
    w[1:3] = x[:2] ** 2
    stack.append(x[:2] * 0.0)
    y = np.sum(w**2)
    w[1:3] = stack.pop()
    return y + np.sum(t * x[1:3])


def restored_on_one_branch(x):
    stack = []
    w = x * 2.0
    t = np.flip(w)[1:3]
    stack.append(snapshot(w[1:3]))
    w[1:3] = x[:2] ** 2
    y = np.sum(w**2)
    if y > 100.0:
        w[1:3] = stack.pop()
    return y + np.sum(t * x[1:3])


def made_after_update(x):
    stack = []
    w = x * 2.0
    stack.append(snapshot(w[1:3]))
    w[1:3] = x[:2] ** 2
    u = np.flip(w)[1:3]
    w[1:3] = stack.pop()
    return np.sum(u * x[1:3])


def restored_twice_nested(x):
    stack = []
    w = x * 2.0
    t = np.flip(w)[0:3]
    c = np.sum(x) > 0
    stack.append(snapshot(w[1:3]))
    w[1:3] = x[:2] ** 2
    if c:
        stack.append(snapshot(w[0:2]))
        w[0:2] = np.sin(x[2:])
    y = np.sum(w**2)
    if c:
        w[0:2] = stack.pop()
    w[1:3] = stack.pop()
    return y + np.sum(t * x[1:])


def restored_on_the_second_run_only(x):
    stack = []
    w = x * 2.0
    t = np.flip(w)[1:3]
    y = 0.0
    for i in range(2):
        stack.append(snapshot(w[1:3]))
        w[1:3] = x[:2] ** 2 + i
        c = i > 0
        if c:
            w[1:3] = stack.pop()
        else:
            stack.pop()
        y = y + np.sum(w**2)
    return y + np.sum(t * x[1:3])


def restored_in_each_run(x):
    stack = []
    w = x * 2.0
    t = np.flip(w)[1:3]
    y = 0.0
    for i in range(2):
        stack.append(snapshot(w[1:3]))
        w[1:3] = x[:2] ** 2 + i
        y = y + np.sum(w**2)
        w[1:3] = stack.pop()
    return y + np.sum(t * x[1:3])


RESTORED = [read_after, restored_twice_nested, restored_in_each_run]
NOT_RESTORED = [
    (read_between, "t"),
    (other_region, "t"),
    (rebound_between, "t"),
    (other_entry_popped, "t"),
    (restored_on_one_branch, "t"),
    (made_after_update, "u"),
    (restored_on_the_second_run_only, "t"),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", RESTORED, ids=lambda f: f.__name__)
def test_reads_after_a_restore_are_differentiated(f, mode):
    expected = numeric_grad(lambda x: f(x.copy()), [X.copy()], 0)
    np.testing.assert_allclose(sg.grad(f, mode=mode)(X.copy()), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f, read", NOT_RESTORED, ids=lambda p: getattr(p, "__name__", p))
def test_reads_the_restore_does_not_cover_stay_refused(f, read, mode):
    """Refused by the source transformer; the tape follows the writes through the views
    (s2sgrad/tape/view_writes.py), and mode "auto" falls back to it."""
    if mode != "s2s":
        expected = numeric_grad(lambda x: f(x.copy()), [X.copy()], 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sg.S2SGradWarning)
            gradient = sg.grad(f, mode=mode)(X.copy())
        np.testing.assert_allclose(gradient, expected, rtol=1e-5, atol=1e-7)
        return
    with pytest.raises(sg.UnsupportedError) as refused:
        sg.grad(f, mode=mode)(X.copy())
    assert f"'w[...] = ...' changes w in place, and '{read}', read afterwards" in str(refused.value)
