"""A loop over a part of an array that its body writes into.

``for i, row in enumerate(t[:-1]): t[i + 1] = row * 0.5 + x[1]`` reads, at each step, the
row the step before wrote (``t[:-1]`` is a view of ``t``). Source transformation read the
rows as they were before the loop, and the tape too: a silently wrong gradient in every
mode (cov13 found it). Both are refused now, naming the loop for s2s and auto
(``passes/loops.refuse_views_changed_as_visited``) and the write on the tape
(``tape_facts.view_writes_by_line``); looping over ``range`` and reading ``t[i]``, or over
a copy, is differentiated.
"""

import inspect
import warnings

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg

R = np.random.default_rng(43)


def rows_of_a_view_written_ahead(x):
    t = np.zeros((4, x.size))
    t[0] = x
    for i, row in enumerate(t[:-1]):
        t[i + 1] = row * 0.5 + x[1]
    return np.sum(t**2)


def rows_of_a_view_scaled(x):
    t = np.outer(np.ones(3), x)
    for row in t[1:]:
        t[2] = row * x  # the last row the loop visits is the one it just wrote
    return np.sum(np.tanh(t))


@pytest.mark.parametrize("f", [rows_of_a_view_written_ahead, rows_of_a_view_scaled])
@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_a_loop_over_a_view_it_writes_into_is_refused_naming_the_loop(f, mode):
    lines = inspect.getsource(f).splitlines()
    line = f.__code__.co_firstlineno + next(
        k for k, text in enumerate(lines) if text.lstrip().startswith("for ")
    )
    with (
        warnings.catch_warnings(),
        pytest.raises(
            sg.UnsupportedError, match=rf"test_loops_over_written_views\.py:{line}: .*range"
        ),
    ):
        warnings.simplefilter("ignore")
        sg.grad(f, mode=mode)(R.normal(size=3))


def rows_by_index(x):
    t = np.zeros((4, x.size))
    t[0] = x
    for i in range(3):
        t[i + 1] = t[i] * 0.5 + x[1]
    return np.sum(t**2)


def rows_of_a_copy(x):
    t = np.zeros((4, x.size))
    t[0] = x
    for i, row in enumerate(t[:-1].copy()):
        t[i + 1] = row * 0.5 + x[1]
    return np.sum(t**2)


@pytest.mark.parametrize("f", [rows_by_index, rows_of_a_copy])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_the_forms_that_say_what_they_read_are_differentiated(f, mode):
    x = R.normal(size=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(call_twice(sg.grad(f, mode=mode), x), numeric_grad(f, [x], 0))


@pytest.mark.parametrize("f", [rows_of_a_view_written_ahead, rows_of_a_view_scaled])
def test_the_tape_refuses_the_write_naming_its_line(f):
    # the loop's iterator holds a view the tape cannot see (tape_facts.view_writes_by_line)
    lines = inspect.getsource(f).splitlines()
    loop = next(k for k, text in enumerate(lines) if text.lstrip().startswith("for "))
    line = f.__code__.co_firstlineno + next(
        k for k, text in enumerate(lines) if k > loop and text.lstrip().startswith("t[")
    )
    with pytest.raises(
        sg.NonDifferentiableError, match=rf"test_loops_over_written_views\.py:{line}: .*range"
    ):
        sg.grad(f, mode="tape")(R.normal(size=3))
