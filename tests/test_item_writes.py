"""Item writes whose index selects an element more than once: NumPy's meaning, differentiated.

``t[index] = v`` keeps, for each element of ``t``, the value of the LAST position of the
index (in C order) that writes it; the earlier ones reach nothing. ``t[index] += v`` means
``t[index] = t[index] + v``, so a repeated element is updated once, not once per
repetition. The gradients here are checked against central differences, in every mode,
on the first (generic) and second (specialised) call, and in forward mode.
"""

import numpy as np
import pytest
from oracle import assert_close, call_twice, directional_derivative, numeric_grad

import s2sgrad as sg
from s2sgrad.runtime import assigned_cotangent, only_last_writes


def repeated_update(s):
    t = np.zeros(4)
    t[[0, 0]] += s
    return np.sum(t**2)


def last_write_wins(a, b):
    t = np.zeros(4)
    t[[0, 0]] = np.stack([a, b])
    return np.sum(t**2) + a * 0.25


def negative_alias(a, b):
    t = np.ones(4) * a
    t[[0, -4]] = np.stack([a * b, b])
    return np.sum(t**2)


def repeated_in_two_axes(s, T):
    T = T * 1.0
    T[[0, 0], [1, 1]] += s * T[2, 2]
    T[[2, 0, 2], [0, 1, 0]] = np.sin(T[1, :])
    return np.sum(T**3)


def repeated_columns(T):
    T = T * 1.0
    T[:, [0, 0, 2]] = T[:, :3] ** 2
    return np.sum(np.sin(T))


def broadcast_into_repeats(s, x):
    t = x * 1.0
    t[[1, 1, 3, 1]] = s
    return np.sum(t**2 * x)


def masked(x):
    t = x * 1.0
    t[t > 0] = t[t > 0] ** 2
    return np.sum(t**2)


def given_indices(x, index):
    t = x * 1.0
    t[index] += x[index] * 3.0
    return np.sum(t**2)


def given_indices_written(x, index):
    t = x * 2.0
    t[index] = np.cos(x[: len(index)])
    return np.sum(t**2 * x)


def repeated_in_a_loop(x, index):
    t = np.zeros(5)
    for i in range(3):
        t[index] = t[index] * 0.5 + x[i : i + len(index)]
    return np.sum(t**2)


def constant_written_in_a_branch(x, y):
    # the branch differentiates to nothing, but must still zero dt where it wrote
    t = np.ones_like(x) * np.sin(x)
    if np.ndim(t) > 0:
        t[[0, -1, 0]] = np.tanh(np.sum(y))
    return np.sum(np.sin(t))


def constants_written_in_a_loop(x, y):
    t = np.sin(x)
    for i in range(2):
        t[i] = y[i] * 2.0
    return np.sum(np.sin(t))


def index_rebound(x):
    # k is an integer, then an array that writes an element twice
    t = np.zeros(4)
    k = 1
    t[k] = x[0]
    k = np.array([2, 2])
    t[k] = x[1:3] ** 2
    return np.sum(t**2)


RNG = np.random.default_rng(12)
VECTOR = RNG.uniform(-1.5, 1.5, size=5)
MASK = assigned_cotangent.__name__  # the helper that keeps only the last write of an index
MATRIX = RNG.uniform(-1.5, 1.5, size=(3, 3))
CASES = [
    (repeated_update, (0.7,), 0),
    (last_write_wins, (0.7, -0.4), 0),
    (last_write_wins, (0.7, -0.4), 1),
    (negative_alias, (0.7, -0.4), 0),
    (negative_alias, (0.7, -0.4), 1),
    (repeated_in_two_axes, (0.6, MATRIX), 0),
    (repeated_in_two_axes, (0.6, MATRIX), 1),
    (repeated_columns, (MATRIX,), 0),
    (broadcast_into_repeats, (0.6, VECTOR), 0),
    (broadcast_into_repeats, (0.6, VECTOR), 1),
    (masked, (VECTOR,), 0),
    (given_indices, (VECTOR, np.array([1, 3, 1, -4])), 0),
    (given_indices, (VECTOR, np.array([0, 2])), 0),
    (given_indices_written, (VECTOR, np.array([2, 2, -3, 4])), 0),
    (given_indices_written, (VECTOR, [0, 1, 2]), 0),
    (repeated_in_a_loop, (VECTOR, np.array([1, 1, 0])), 0),
    (constant_written_in_a_branch, (VECTOR, VECTOR[::-1]), 0),
    (constant_written_in_a_branch, (VECTOR, VECTOR[::-1]), 1),
    (constants_written_in_a_loop, (VECTOR, VECTOR[::-1]), 0),
    (index_rebound, (VECTOR,), 0),
]
IDS = [f"{c[0].__name__}-wrt{c[2]}" for c in CASES]


@pytest.mark.parametrize("function, args, wrt", CASES, ids=IDS)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_gradients_follow_numpy_on_repeated_elements(function, args, wrt, mode):
    gradient = call_twice(sg.grad(function, wrt=wrt, mode=mode), *args)
    assert_close(gradient, numeric_grad(function, args, wrt), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("function, args, wrt", CASES, ids=IDS)
def test_the_tape_is_right_or_refuses(function, args, wrt):
    # item writes of plain arrays are the tape's to record (or refuse), never to get wrong
    try:
        gradient = sg.grad(function, wrt=wrt, mode="tape")(*args)
    except (sg.S2SGradError, TypeError) as refused:
        assert "test_item_writes.py:" in str(refused)
        assert "instead" in str(refused) or "mode=" in str(refused)
        return
    assert_close(gradient, numeric_grad(function, args, wrt), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("function, args, wrt", CASES, ids=IDS)
def test_forward_mode_follows_numpy_on_repeated_elements(function, args, wrt):
    direction = RNG.uniform(-1.0, 1.0, size=np.shape(args[wrt]))
    direction = float(direction) if isinstance(args[wrt], float) else direction
    tangents = [direction if i == wrt else _zero_tangent(a) for i, a in enumerate(args)]
    _, tangent = sg.jvp(function, args, tuple(tangents))
    expected = np.sum(numeric_grad(function, args, wrt) * direction)
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-8)


def _zero_tangent(value):
    if isinstance(value, float):
        return 0.0
    return np.zeros(np.shape(value)) if np.asarray(value).dtype.kind == "f" else None


def rows_of_repeats(x):
    t = np.zeros((3, 2))
    t[[0, 2, 0]] = np.stack([x, x**2, np.sin(x)])
    return t


def test_jacobian_of_repeated_writes():
    # the batched backward sweep masks every seed the same way
    x = VECTOR[:2]
    jacobian = sg.jacobian(rows_of_repeats, mode="s2s")(x)
    expected = np.stack(
        [numeric_grad(lambda v, k=k: rows_of_repeats(v).ravel()[k], (x,), 0) for k in range(6)]
    ).reshape(3, 2, 2)
    np.testing.assert_allclose(jacobian, expected, rtol=1e-6, atol=1e-8)


def numpy_keeps(shape, index):
    """Which positions of ``index`` NumPy keeps when writing distinct values (the oracle)."""
    target = np.full(shape, np.nan)
    selected = target[index].shape
    values = np.arange(1.0, 1.0 + np.prod(selected)).reshape(selected)
    target[index] = values
    return target[index] == values


INDICES = [
    ((5,), [0, 0, 3]),
    ((5,), np.array([[4, -1], [2, 4]])),
    ((5,), slice(1, 4)),
    ((5,), np.array([True, False, True, True, False])),
    ((3, 4), ([0, 0, 2], [1, 1, -3])),
    ((3, 4), (slice(None), [3, -1, 0])),
    ((3, 4), ([[0], [0]], [2, 2, 3])),
    ((3, 4), (np.array([True, False, True]), [1, 1])),
    ((3, 4), (Ellipsis, [0, 0])),
    ((3, 4), (None, [1, 2, 1], slice(0, 2))),
    ((2, 3, 4), ([1, 1], slice(None), [0, 0])),  # advanced axes apart: they move first
    ((3, 4), np.array([[True, False, True, True]] * 3)),
    ((3, 4), (np.array(1), [2, 2])),
    ((3, 4), (np.array(True), [2, 2], slice(None))),
]


@pytest.mark.parametrize("shape, index", INDICES)
def test_only_last_writes_keeps_what_numpy_keeps(shape, index):
    selected = np.zeros(shape)[index].shape
    kept = only_last_writes(np.ones(selected), shape, index)
    np.testing.assert_array_equal(kept == 1.0, numpy_keeps(shape, index))


@pytest.mark.parametrize("shape, index", INDICES)
def test_assigned_cotangent_rules_are_its_adjoint(shape, index):
    # a linear map and its VJP: <h, A g> == <A^T h, g>; its JVP is the map itself
    rng = np.random.default_rng(5)
    g = rng.normal(size=shape)
    h = rng.normal(size=np.zeros(shape)[index].shape)
    rule = sg.rules.registry.get_rule(assigned_cotangent)
    forward = assigned_cotangent(g, index)
    backward, _ = rule.vjp(h, forward, g, index)
    assert np.sum(h * forward) == pytest.approx(np.sum(backward * g))
    tangent, _ = rule.jvp(g, forward, g, index)
    np.testing.assert_array_equal(tangent, forward)


def test_assigned_cotangent_is_a_copy():
    # the backward sweep zeroes dy[index] right after reading it
    g = np.arange(4.0)
    part = assigned_cotangent(g, slice(1, 3))
    g[1:3] = 0.0
    np.testing.assert_array_equal(part, [1.0, 2.0])


def shifted(x):
    t = np.zeros(5)
    for i in range(4):
        t[i + 1] = t[i] * 0.5 + x[i]
    return np.sum(t**2)


def written_at(x):
    k = x.shape[0] - 2
    t = x * 1.0
    t[k] = np.sin(x[0])
    return np.sum(t**2)


def test_integer_indices_need_no_mask():
    # i + 1 of a loop counter is an integer: a plain copy of dt[i + 1] is its cotangent
    x = VECTOR[:4]
    gradient = sg.grad(shifted, mode="s2s")
    assert MASK in sg.source(index_rebound)  # what the check looks for, where it is
    assert MASK not in sg.source(shifted)
    assert_close(call_twice(gradient, x), numeric_grad(shifted, (x,), 0), rtol=1e-6)


def test_a_name_that_is_not_always_an_integer_keeps_the_mask():
    assert MASK in sg.source(index_rebound)


def test_an_index_seen_to_be_an_integer_is_specialised_to_a_plain_copy():
    gradient = sg.grad(written_at, mode="s2s")
    assert MASK in sg.source(written_at)  # k might be an array
    for x in (VECTOR, VECTOR[:3]):
        expected = numeric_grad(written_at, (x,), 0)
        assert_close(call_twice(gradient, x), expected, rtol=1e-6)
        assert MASK not in sg.source(gradient)


def scattered_rows(x):
    T = np.zeros((3, 2))
    T[[2, 0, 2]] = np.stack([x, x**2, np.sin(x)])
    return np.sum(T**3)


SECOND_ORDER = [
    (given_indices_written, (VECTOR, np.array([2, 2, -3, 4]))),
    (scattered_rows, (VECTOR[:2],)),
]


@pytest.mark.parametrize("function, args", SECOND_ORDER, ids=[c[0].__name__ for c in SECOND_ORDER])
def test_second_order_through_repeated_writes(function, args):
    # the generated gradient calls assigned_cotangent: its own rules differentiate it
    x, rest = args[0], args[1:]
    along = RNG.uniform(-1.0, 1.0, size=x.shape)
    gradient = sg.grad(function, mode="s2s")
    expected = directional_derivative(lambda x: gradient(x, *rest), x, along, step=1e-5)
    (product, *_) = sg.hvp(function, args, (along, *(_zero_tangent(a) for a in rest)))
    np.testing.assert_allclose(product, expected, rtol=1e-6, atol=1e-7)
    hessian = sg.hessian(function, mode="s2s")(*args)
    np.testing.assert_allclose(
        np.tensordot(hessian, along, axes=along.ndim), expected, rtol=1e-6, atol=1e-7
    )


def scaled_then_scale_changed(x):
    scale = np.ones(3)
    z = x * scale
    scale[:] = 0.5
    return np.sum(z * z)


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_constant_array_changed_after_a_derivative_used_it_is_restored(mode):
    x = np.array([0.3, -0.2, 0.5])
    gradient = sg.grad(scaled_then_scale_changed, mode=mode)
    for _ in range(2):
        np.testing.assert_allclose(gradient(x), 2 * x)  # z = x: d sum(z^2)/dx = 2x


def scaled_twice_in_place(x, y):
    t = x**2 + y
    t[:] *= x[0]
    t[1:] *= x[0] * y[1]
    r = t * x + y
    return np.sum(np.tanh(r) * x[0])


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
def test_reads_of_an_array_updated_twice_keep_their_order(mode):
    """The backward sweep restores ``t`` in place between the two updates' adjoints: a
    read of ``t[:]`` saved for the second one must not be merged past that (the optimiser
    took ``t6 = t[:]`` for a name of its own, and the specialised second call was wrong)."""
    rng = np.random.default_rng(7)
    x, y = rng.uniform(-1.0, 1.0, size=3), rng.uniform(-1.0, 1.0, size=3)
    for wrt in (0, 1):
        expected = numeric_grad(scaled_twice_in_place, (x, y), wrt)
        assert_close(call_twice(sg.grad(scaled_twice_in_place, wrt=wrt, mode=mode), x, y), expected)


def slice_scaled_by_its_own_entry(x):
    t = x * 1.0
    t[1:] *= t[0]
    return np.sum(np.exp(t))


def slice_scaled_by_an_argument(x):
    t = np.sin(x)
    t[1:] *= x[0]
    t[:2] = t[:2] * t[2]
    return np.sum(np.exp(t))


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("f", [slice_scaled_by_its_own_entry, slice_scaled_by_an_argument])
def test_a_slice_read_before_it_is_written_keeps_its_old_values(f, mode):
    """``t1 = t[1:]`` is a view: the derivative of ``t[1:] = t1 * s`` reads it after the
    write unless ``t`` is restored first (it was not: a silent wrong gradient)."""
    x = np.random.default_rng(11).uniform(-1.0, 1.0, size=3)
    assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, (x,), 0))
