"""Writes through views on the tape (s2sgrad/tape/view_writes.py): the write is recorded on
the array the held views lie in, every held view of it reads the new elements, and a view
the tape could not see is refused when read, never read stale."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad, numeric_jvp

import s2sgrad as sg
from s2sgrad.tape.view_positions import byte_bounds, positions_within, view_at

HERE = __file__


# --- where a view's elements lie -----------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda t: t[0],
        lambda t: t.T,
        lambda t: t[:, ::-2],
        lambda t: t.reshape(-1)[1:5],
        lambda t: np.split(t, [1])[1],
        lambda t: t[::-1, 1:],
        lambda t: np.einsum("ij->ji", t)[1:],
        lambda t: t[1, 2, ...],
    ],
)
@pytest.mark.parametrize("order", ["C", "F"])
def test_positions_are_those_numpy_reads(make, order):
    t = np.asarray(np.arange(12.0).reshape(3, 4), order=order)
    view = make(t)
    positions = positions_within(view, t)
    if not np.shares_memory(view, t):  # reshape of a Fortran-ordered array copies
        assert positions is None
        return
    np.testing.assert_array_equal(t.reshape(-1)[positions], view)
    again = view_at(t, positions)
    np.testing.assert_array_equal(again, view)
    assert np.shares_memory(again, t)


def test_what_is_not_an_element_has_no_position():
    t = np.arange(6.0)
    assert positions_within(t.astype(np.float32), t) is None  # another array
    assert positions_within(np.arange(3.0), t) is None
    assert positions_within(t[1:], t[:3]) is None  # partly outside
    assert positions_within(t[:2], np.broadcast_to(t[0], (3,))) is None  # one address twice
    complex_values = np.zeros(3, complex)
    assert positions_within(complex_values.imag, complex_values) is None


def test_byte_bounds_cover_the_elements():
    t = np.arange(12.0).reshape(3, 4)
    low, high = byte_bounds(t[::-1, 1:3])
    start = t.__array_interface__["data"][0]
    assert (low, high) == (start + 8, start + 8 * 11)


# --- programs written through views ---------------------------------------------------------


def row_written(x):
    t = np.sin(x) * 1.0
    v = t[0]
    v[:] = np.tanh(x[1]) * v
    return np.sum(np.sin(t[0] * x[1] + t[1]))


def transpose_added(x):
    t = np.exp(np.tanh(x)) * 1.0
    v = t.T
    v[1] += np.cos(x[0, :2]) * 0.5
    return np.sum((t[0] * x[1] + t[1]) ** 2)


def parts_of_a_split(x):
    t = np.tanh(x) * 1.0
    a, b = np.split(t, [1])
    a[0] = np.sum(x[1] * 1.5) * x[0]
    b *= 2.0
    return np.sum((t[0] * x[1] + t[1]) ** 2)


def base_written_view_read(x):
    t = x * 1.0
    v = t[1]
    t[1, 0] = x[0, 0] ** 2
    return np.sum(v * x[0]) + np.sum(t)


def view_of_a_view(x):
    t = np.sin(x) * 2.0
    v = t.T
    w = v[1:]
    w[0, 1] = x[0, 2] * x[1, 1]
    w *= 1.5
    return np.sum(t * t) + np.sum(v[0] * x[0, :2])


def reversed_columns(x):
    t = x * 1.0
    v = t[:, ::-1]
    v[0] = x[1] * 3.0
    v[1, ::2] -= x[0, :2]
    return np.sum(np.sin(t)) + np.sum(v * v[::-1])


def rows_in_a_loop(x):
    t = np.zeros((4, 3)) + x[0]
    for i in range(1, 4):
        previous = t[i - 1]
        current = t[i]
        current[:] = np.tanh(previous) * x[1]
    return np.sum(t**2)


def row_item_written(x):
    t = np.sin(x) * 1.0
    for i in range(2):
        t[i][1:] = x[1, 1:] * t[i][0]
    return np.sum(np.sin(t))


def views_in_a_list(x):
    t = x * 1.0
    rows = [t[0], t[1]]
    rows[0][1] = x[0, 0] * x[1, 1]
    t[1] *= x[0]
    return np.sum(rows[0] * rows[1]) + np.sum(t)


def view_in_an_object(x):
    class Box:
        pass

    t = x * 1.0
    box = Box()
    box.row = t[0]
    t[0] *= x[1]
    return np.sum(box.row * x[1])


def closure_reads_the_view(x):
    t = x * 1.0
    v = t[0]

    def row():
        return v

    t[0] = x[1] * 2.0
    return np.sum(row() * x[1])


def mask_written(x):
    t = x * 1.0
    v = t[1]
    v[v > 0] = x[0][v > 0] ** 2
    return np.sum(t * x)


def _scale_the_view(a, s):
    w = a[::2]
    w *= s


def helper_writes_a_view(x):
    t = np.sin(x) * 1.0
    _scale_the_view(t[0], x[1, 0])
    return np.sum(t**2)


def rows_swapped(x):
    t = x * 1.0
    a, b = t[0], t[1]
    a[:], b[:] = b * 1.0, a * 1.0  # a write the source analysis does not flag
    return np.sum(t * np.arange(t.size).reshape(t.shape))


def overlapping_slices(x):
    t = x.ravel() * 1.0
    a = t[:4]
    b = t[2:]
    a[2:] = b[2:4] * 2.0
    return np.sum(t * x.ravel()) + np.sum(a[:2] * b[:2])


PROGRAMS = [
    rows_swapped,
    overlapping_slices,
    row_written,
    transpose_added,
    parts_of_a_split,
    base_written_view_read,
    view_of_a_view,
    reversed_columns,
    rows_in_a_loop,
    row_item_written,
    views_in_a_list,
    view_in_an_object,
    closure_reads_the_view,
    mask_written,
    helper_writes_a_view,
]


@pytest.mark.parametrize("shape", [(2, 3), (2, 4)])
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda f: f.__name__)
def test_the_tape_follows_a_write_through_a_view(program, shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(size=shape)
    if program is rows_in_a_loop and shape[1] != 3:
        x = rng.normal(size=(2, 3))
    value, _ = sg.value_and_grad(program, mode="tape")(x.copy())
    np.testing.assert_allclose(value, program(x.copy()), rtol=1e-12)
    assert_close(call_twice(sg.grad(program, mode="tape"), x), numeric_grad(program, [x], 0))
    v = rng.normal(size=x.shape)
    _, tangent = sg.jvp(program, (x,), (v,), mode="tape")
    assert_close(tangent, numeric_jvp(program, [x], 0, v), rtol=1e-5)
    hvp = sg.hvp(program, (x,), (v,), mode="tape")
    expected = numeric_jvp(lambda y: sg.grad(program, mode="tape")(y), [x], 0, v, step=1e-5)
    assert_close(np.asarray(hvp).reshape(x.shape), expected, rtol=1e-4, atol=1e-6)


def einsum_transpose_written(x):
    t = np.exp(np.tanh(x)) * 1.0
    v = np.einsum("ij->ji", t)
    v[0] = (x[1] * 1.5)[:2]
    return np.sum(np.tanh(t[0] * x[1] + t[1]) * x[0])


def hsplit_part_written(x):
    t = np.log1p(x**2) * 1.0
    a, b = np.hsplit(t, [1])
    b[:, 0] = np.tanh(x[1])[:2]
    return np.sum((t[0] * x[1] + t[1]) ** 2) * 0.5


@pytest.mark.parametrize(
    "program", [einsum_transpose_written, hsplit_part_written], ids=lambda f: f.__name__
)
def test_auto_takes_to_the_tape_what_source_transformation_refuses(program):
    x = np.random.default_rng(3).normal(size=(2, 3))
    with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+"):
        sg.grad(program, mode="s2s")(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        gradient = call_twice(sg.grad(program, mode="auto"), x)
    assert_close(gradient, numeric_grad(program, [x], 0))


# --- views the tape cannot see --------------------------------------------------------------


def view_in_a_deque(x):
    t = x * 1.0
    kept = collections.deque([t[0]])
    w = t[1]
    w[:] = x[0]
    t[0, 0] = x[1, 0] ** 2
    return np.sum(kept[0] * x[1]) + np.sum(t)


def view_deep_in_lists(x):
    t = x * 1.0
    kept = [[[[t[1]]]]]
    t[1, 1:] = x[0, :2]
    return np.sum(kept[0][0][0][0] ** 2)


def view_on_the_loops_iterator(x):
    t = np.zeros((4, 3)) + x[0]
    for i, row in enumerate(t[:-1]):
        t[i, 1:] = row[:2] * x[1, 1:]
        t[i + 1] = row * 0.5 + x[1]
    return np.sum(t**2)


@pytest.mark.parametrize(
    "program",
    [view_in_a_deque, view_deep_in_lists, view_on_the_loops_iterator],
    ids=lambda f: f.__name__,
)
def test_a_view_the_tape_could_not_see_is_refused_or_right(program):
    """Never a stale value: either right, or refused naming the line that reads it."""
    x = np.random.default_rng(4).normal(size=(2, 3))
    expected = numeric_grad(program, [x], 0)
    for mode in ("tape", "auto"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", sg.S2SGradWarning)
                gradient = sg.grad(program, mode=mode)(x.copy())
        except sg.S2SGradError as error:
            assert f"{HERE}:" in str(error), str(error)
            continue
        assert_close(gradient, expected)


def test_a_stale_view_is_refused_where_it_is_read():
    x = np.random.default_rng(5).normal(size=(2, 3))
    with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+: a view of an array is read"):
        sg.grad(view_deep_in_lists, mode="tape")(x)


def test_the_callers_array_is_left_alone():
    def written_through_a_view_of_the_argument(x):
        v = x[0]
        v[:] = x[1] * v
        return np.sum(np.sin(x))

    x = np.random.default_rng(6).normal(size=(2, 3))
    before = x.copy()
    gradient = sg.grad(written_through_a_view_of_the_argument, mode="tape")(x)
    np.testing.assert_array_equal(x, before)
    assert_close(gradient, numeric_grad(written_through_a_view_of_the_argument, [before], 0))
