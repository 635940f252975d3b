"""Writes through views (``v = t[0]; v[:] = e`` changes ``t``): followed by source
transformation, checked against finite differences; what cannot be followed is refused.

The tape still refuses them (a recorded view is a new value), so ``mode='auto'`` runs the
source transformation's code.
"""

import re
import warnings

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.errors import S2SGradError

HERE = __file__
RNG = np.random.default_rng(7)


def row_written(x, y):
    t = np.sin(x) * 1.0
    v = t[0]
    v[:] = np.cos(y)
    return np.sum(t[0] * y + t[1])


def columns_scaled(x, y):
    t = np.sin(x) * 1.0
    v = t[:, 1:]
    v *= y[1:]
    return np.sum(t * t)


def transpose_added(x, y):
    t = np.sin(x) * 1.0
    v = t.T
    v[1] += np.cos(y)[:2]
    return np.sum(t[0] * y + t[1] ** 2)


def split_part_written(x, y):
    t = np.sin(x) * 1.0
    a, b = np.split(t, [1])
    a[0] = np.sum(np.cos(y))
    b *= y
    return np.sum(t[0] * y + t[1] ** 2)


def rows_filled_in_a_loop(x, y):
    out = np.zeros((2, 3))
    for i in range(2):
        row = out[i]
        row[:] = np.sin(x[i]) * y
        row[1:] *= 2.0
    return np.sum(out**2)


def stencil_on_the_interior(x, y):
    grid = np.sin(x) * 1.0
    inner = grid[:, 1:-1]
    for _ in range(3):
        inner += 0.1 * (grid[:, :-2] - 2 * inner + grid[:, 2:]) * y[0]
    return np.sum(grid**2)


def base_written_view_read(x, y):
    t = np.sin(x) * 1.0
    v = t[1]
    t[1, 0] = y[0] ** 2
    return np.sum(v * y)


def view_of_a_view(x, y):
    t = np.sin(x) * 1.0
    v = t[1]
    w = v[1:]
    w *= y[1:]
    return np.sum(t * t) + np.sum(v * y)


def two_views_of_one_array(x, y):
    t = np.cos(x) * 1.0
    top = t[0]
    right = t[:, 2]
    top[2] = y[1] * 3.0
    right[1] = top[2] * y[0]
    return np.sum(t * np.sin(t)) + np.sum(top * right[0])


def rows_scaled_in_a_loop(x, y):
    out = np.outer(y, x[0])
    for i in range(3):
        row = out[i]
        row *= y  # a row of a matrix: in place
    return np.sum(out**2)


def elements_scaled_in_a_loop(x, y):
    t = np.sin(x[0]) * 1.0
    for i in range(3):
        e = t[i]
        e *= y[i]  # an element of a vector: a new number, t unchanged
    return np.sum(t**2) + e


def transpose_scaled(x, y):
    t = np.sin(x) * 1.0
    v = t.T
    v *= np.cos(y[:2])
    return np.sum(t**2)


def array_scaled_parts_read(x, y):
    t = np.sin(x) * 1.0
    a, b = np.split(t, [1])
    t *= y
    return np.sum(a**2) + np.sum(b * y)


def reshape_written(x, y):
    t = np.sin(x) * 1.0
    v = t.reshape(-1)  # a view of a contiguous array
    v[1:3] = np.cos(y)[:2]
    return np.sum(t[0] * y + t[1])


def ravel_scaled_then_base_written(x, y):
    t = np.sin(x) * 1.0
    v = t.ravel()
    v *= y[0]
    t[0, 0] = y[1]
    return np.sum(t**2) + np.sum(v * v)


def ravel_of_a_transposed_result_written(x, y):
    t = np.sin(x).T * 1.0  # Fortran order: ravel makes a copy, which t does not see
    v = np.ravel(t)
    v[0] = np.sum(y)
    return np.sum(t**2) + np.sum(v * y[0])


def branch_writes_the_view(x, y):
    t = np.sin(x) * 1.0
    v = t[0]
    if np.sum(y) > -100.0:
        v[1:] = y[:2] ** 2
    return np.sum(t**3)


PROGRAMS = [
    row_written,
    columns_scaled,
    transpose_added,
    split_part_written,
    rows_filled_in_a_loop,
    stencil_on_the_interior,
    base_written_view_read,
    view_of_a_view,
    two_views_of_one_array,
    branch_writes_the_view,
    rows_scaled_in_a_loop,
    elements_scaled_in_a_loop,
    reshape_written,
    ravel_scaled_then_base_written,
    ravel_of_a_transposed_result_written,
    transpose_scaled,
    array_scaled_parts_read,
]


def _arguments():
    return RNG.normal(size=(2, 3)), RNG.normal(size=3)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_writes_through_views_are_followed(program, mode):
    x, y = _arguments()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sg.check_grads(program, x, y, order=1, mode=mode)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda f: f.__name__)
def test_the_value_is_numpys(program):
    x, y = _arguments()
    value, _ = sg.value_and_grad(program, wrt=(0, 1), mode="s2s")(x.copy(), y.copy())
    np.testing.assert_allclose(value, program(x, y), rtol=1e-12)


@pytest.mark.parametrize("program", [row_written, columns_scaled, view_of_a_view])
def test_hessian_vector_products_through_views(program):
    x, y = _arguments()
    sg.check_grads(program, x, y, order=2, mode="auto")


def test_the_tape_refuses_a_view_of_a_plain_array_naming_the_line():
    x, y = _arguments()
    with pytest.raises(S2SGradError, match=rf"{HERE}:\d+"):
        sg.grad(rows_filled_in_a_loop, mode="tape")(x, y)


@pytest.mark.parametrize(
    "program", [p for p in PROGRAMS if p is not rows_filled_in_a_loop], ids=lambda f: f.__name__
)
def test_the_tape_follows_writes_through_views(program):
    """The tape records the write into the array the view lies in (tape/view_writes.py)."""
    x, y = _arguments()
    sg.check_grads(program, x, y, order=2, mode="tape")


def list_holds_the_array(x, y):
    t = np.sin(x) * 1.0
    kept = [t]
    v = t[0]
    v[:] = y
    return np.sum(kept[0] ** 2)


def _zero_first(a):
    a[0] = 0.0


def helper_writes_the_view(x, y):
    t = np.sin(x) * y
    v = t[1]
    _zero_first(v)
    return np.sum(t**2)


def view_of_an_argument(x, y):
    v = x[0]
    v[:] = y
    return np.sum(x**2)


@pytest.mark.parametrize(
    "program",
    [list_holds_the_array, helper_writes_the_view],
    ids=lambda f: f.__name__,
)
def test_what_cannot_be_followed_is_refused_or_right(program):
    """Never a wrong gradient: a clear refusal naming this file, or the right answer."""
    x, y = _arguments()
    for mode in ("s2s", "auto"):
        try:
            sg.check_grads(program, x, y, order=1, mode=mode)
        except S2SGradError as error:
            assert HERE in str(error), str(error)


def test_a_view_of_an_argument_leaves_the_callers_array_alone():
    x, y = _arguments()
    sg.check_grads(view_of_an_argument, x.copy(), y, order=1, mode="auto")
    before = x.copy()
    gradient = sg.grad(view_of_an_argument, wrt=(0, 1), mode="auto")(x, y)
    np.testing.assert_array_equal(x, before)
    assert np.all(gradient[0][0] == 0.0)


def test_a_row_changed_by_op_equals_is_written_back_only_when_it_is_a_row():
    text = sg.source(rows_scaled_in_a_loop, wrt=(0, 1))
    assert re.search(r"(\w+) = ndim\(out\) > 1\n\s+if \1:\n\s+.*\n\s+out\[i\] = row", text), text


def test_the_generated_code_shows_the_write_back():
    text = sg.source(stencil_on_the_interior, wrt=(0, 1))
    assert "inner = grid[:, 1:-1].copy()" in text
    assert "grid[:, 1:-1] = inner" in text


def _parts(x):
    return [x[0] * 1.0, x[1] * 2.0, x[2] * 3.0]


def list_made_here_sliced(xs, y):
    parts = xs * 1  # a new list when xs is one: the pass cannot tell it from a new array
    tail = parts[1:]
    tail[0] = tail[0] * y
    return np.sum(parts[1] * tail[0] + parts[0])


def test_a_list_made_by_arithmetic_is_checked_when_it_runs():
    x, y = _arguments()
    with pytest.raises(S2SGradError, match=rf"{HERE}:\d+: a view of 'parts'"):
        sg.grad(list_made_here_sliced, wrt=1, mode="s2s")([x[0], x[1], y], y)


def list_slice_written(x, y):
    parts = _parts(x[0])
    tail = parts[1:]  # a new list: writing into it leaves parts alone
    tail[0] = tail[0] * y[0]
    return parts[1] * tail[0] + parts[0]


def test_a_lists_slice_is_not_taken_for_a_view():
    """A list's slice is a new list: refused, naming the line (never written back); mode
    "auto" has the tape, which follows Python's lists, differentiate it."""
    x, y = _arguments()
    with pytest.raises(S2SGradError, match=rf"{HERE}:\d+: "):
        sg.grad(list_slice_written, mode="s2s")(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        sg.check_grads(list_slice_written, x, y, order=2, mode="auto")


def slice_copied_between_writes(x, y):
    t = np.zeros(3) + np.tanh(x)
    t[::2] = t[::2] * x[0]
    v = t[::2].copy()  # its tangent must be a copy too, not a view of t's tangent
    t[::2] = v * x[0]
    return np.sum((t * y) ** 2) * 0.5


def two_scaled_views(x, y):
    t = np.zeros(3) + np.tanh(x)
    w = t[::2]
    w *= x[0]
    v = t[::2]
    v *= x[0]
    return np.sum((t * y) ** 2) * 0.5


@pytest.mark.parametrize("f", [slice_copied_between_writes, two_scaled_views])
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_hvp_through_copies_of_slices_written_again(f, mode):
    """Forward over reverse: the tangent of ``v = t[::2].copy()`` was a view of ``t``'s
    tangent, which the next write changed (a wrong hvp, pre-existing; views followed by
    source made it common)."""
    x, y = np.array([0.3, -0.5, 0.8]), np.array([1.1, 0.4, -0.9])
    along = (np.array([1.0, 0.5, -0.2]), np.array([0.3, -0.1, 0.4]))
    gradient = sg.grad(f, wrt=(0, 1), mode=mode)
    step = 1e-6
    up = gradient(x + step * along[0], y + step * along[1])
    down = gradient(x - step * along[0], y - step * along[1])
    products = sg.hvp(f, (x, y), along, mode=mode)
    for product, a, b in zip(products, up, down):
        np.testing.assert_allclose(product, (a - b) / (2 * step), rtol=1e-5, atol=1e-6)
