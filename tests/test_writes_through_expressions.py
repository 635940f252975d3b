"""Item writes into an array that an expression makes (``a.T[0] = v``, ``a[1:][0] = v``,
``a[0][1] = v``): in NumPy they change ``a``; on the tape the expression makes a new value
the write would not reach back from. Both engines refuse them naming the user's line (the
tape once returned ``a``'s old values' gradient), and writes into arrays held by lists and
dicts (``L[0][1] = v``), which reach the array, stay differentiated on the tape."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg


def item_of_row(x):
    a = np.outer(x, x)
    a[0][1] = 5.0 * x[2]
    return np.sum(a * a)


def item_of_slice(x):
    a = x * 1.0
    a[1:][0] = 5.0 * x[0]
    return np.sum(a * x)


def item_of_reshape(x):
    a = x * 1.0
    a.reshape(3)[0] = 5.0 * x[1]
    return np.sum(a * x)


def row_of_transpose_scaled(x):
    a = np.outer(x, x)
    a.T[0] *= 2.0
    return np.sum(a * a)


def item_of_column(x):
    a = np.outer(x, x)
    a[:, 0][1] = 5.0
    return np.sum(a * a)


def item_of_real_part(x):
    a = x * 1.0
    a.real[0] = 4.0
    return np.sum(a * x)


def item_of_flat(x):
    a = x * 1.0
    a.flat[0] = 4.0 * x[2]
    return np.sum(a * x)


THROUGH_VIEWS = [
    item_of_slice,
    item_of_reshape,
    row_of_transpose_scaled,
    item_of_column,
    item_of_real_part,
    item_of_flat,
]


def _write_line(f) -> str:
    lines, first = inspect.getsourcelines(f)
    offset = next(i for i, line in enumerate(lines) if "] = " in line or "] *= " in line)
    return f"{__file__}:{first + offset}"


@pytest.mark.parametrize("mode", ["s2s", "auto"])
@pytest.mark.parametrize("f", THROUGH_VIEWS, ids=lambda f: f.__name__)
def test_write_through_a_view_expression_is_refused_at_its_line(f, mode):
    # source transformation refuses it; mode "auto" then takes the tape, which follows it
    x = np.random.default_rng(0).normal(size=3)
    if mode == "auto":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))
        return
    with pytest.raises(sg.UnsupportedError) as caught:
        sg.grad(f, mode=mode)(x)
    assert _write_line(f) in str(caught.value)
    assert "a[0, 1] = ..." in str(caught.value)  # what to write instead


@pytest.mark.parametrize("f", [*THROUGH_VIEWS, item_of_row], ids=lambda f: f.__name__)
def test_the_tape_follows_a_write_through_a_view_expression(f):
    """The view the expression makes shares a's memory: the tape records the write into a
    (tape/view_writes.py)."""
    x = np.random.default_rng(0).normal(size=3)
    assert_close(call_twice(sg.grad(f, mode="tape"), x), numeric_grad(f, [x], 0))


def test_an_item_of_a_row_is_an_item_of_the_array_by_source():
    # a[0][1] = v writes a[0, 1] (a[0] is a view of a's row): source transformation writes
    # it so (passes/library_writes.chained_item_writes)
    x = np.random.default_rng(0).normal(size=3)
    for mode in ("s2s", "auto"):
        assert_close(
            call_twice(sg.grad(item_of_row, mode=mode), x), numeric_grad(item_of_row, [x], 0)
        )


def item_of_list_entry(x):
    rows = [x * 1.0, x * 2.0]
    rows[0][1] = 5.0 * x[2]
    return np.sum(rows[0] * rows[1])


def item_of_dict_entry(x):
    d = {"w": x * 1.0}
    d["w"][1] *= x[0]
    return np.sum(d["w"] * x)


def flat_reads(x):
    a = np.outer(x, x)
    return np.sum(a.flat[2] * x) + sum(v for v in a.flat)


@pytest.mark.parametrize("f", [item_of_list_entry, item_of_dict_entry, flat_reads])
def test_writes_into_container_entries_and_flat_reads_on_the_tape(f):
    x = np.random.default_rng(1).normal(size=3)
    assert_close(call_twice(sg.grad(f, mode="tape"), x), numeric_grad(f, [x], 0))
