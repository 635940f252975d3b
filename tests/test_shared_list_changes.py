"""``b = a; b.append(v)``, then ``a`` read: the list changes through one name and is read
through another. Source transformation follows only the name the method is called on, so
it refuses (naming the line) rather than dropping ``v``'s derivative; mode "auto" then
differentiates on the tape, which follows Python's lists, rightly."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

X = np.array([0.3, -0.7, 1.2])


def append_through_alias(x):
    a = [x[0]]
    b = a
    b.append(x[1] * 2)
    return a[0] * a[1]


def append_then_read_alias(x):
    a = [x[0]]
    b = a
    a.append(x[1] * 2)
    return b[0] * b[1]


def pop_and_insert_through_alias(x):
    a = [x[0], x[1]]
    b = a
    b.pop()
    b.insert(0, x[2])
    return a[0] * a[1]


def append_own_name(x):
    a = [x[0]]
    b = a
    b.append(x[1] * 2)
    return b[0] * b[1]


@pytest.mark.parametrize(
    "f", [append_through_alias, append_then_read_alias, pop_and_insert_through_alias]
)
def test_refused_by_source_and_right_in_auto(f):
    with pytest.raises(sg.UnsupportedError, match="holds the same list") as refused:
        sg.grad(f, mode="s2s")(X)
    assert "test_shared_list_changes.py:" in str(refused.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode="auto"), X), numeric_grad(f, (X,), 0))


def test_changing_and_reading_one_name_is_transformed():
    g = call_twice(sg.grad(append_own_name, mode="s2s"), X)
    assert_close(g, numeric_grad(append_own_name, (X,), 0))


def extend_through_alias(x):
    a = [x[0], x[1]]
    b = a
    b += [x[2] * 2]
    return a[0] * a[-1]


def extend_own_name(x):
    a = [x[0]]
    a += [x[1] ** 2]
    a += [x[2]]
    return a[0] * a[1] * a[2]


def add_to_a_copied_number(x):
    a = x[0] * 2.0
    b = a
    b += x[1]
    return a * b


def test_augmented_extension_through_an_alias():
    # the source read a[-1] as x[1] (the list unchanged): a silently wrong gradient
    with pytest.raises(sg.UnsupportedError, match="changes the list b in place"):
        sg.grad(extend_through_alias, mode="s2s")(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = call_twice(sg.grad(extend_through_alias, mode="auto"), X)
    assert_close(g, numeric_grad(extend_through_alias, (X,), 0))


@pytest.mark.parametrize("f", [extend_own_name, add_to_a_copied_number])
def test_augmented_assignments_still_transformed(f):
    g = call_twice(sg.grad(f, mode="s2s"), X)
    assert_close(g, numeric_grad(f, (X,), 0))
