"""``y[i] = [a, b]`` into a plain array the function made, on the tape.

NumPy converts a list's items one by one as it stores them, so the tape, asked to convert
the first item that it records, saw that item as the whole value written: ``traj[0] = [k,
1.0]`` was recorded as ``traj[0] = k``, a wrong gradient. The tape now refuses such a
write (naming the line, and saying to build the row with np.stack), while source
transformation differentiates it; a write of one value is taken over as before.
"""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg


def rows_from_lists(k):
    traj = np.zeros((3, 2))
    for t in range(3):
        traj[t] = [k * (t + 1), 1.0]
    return np.sum(traj**2 * np.array([1.0, 2.0]))


def row_from_tuple(k):
    out = np.zeros((2, 2))
    out[1] = (k * k, k)
    return np.sum(np.sin(out))


def row_named(k):
    out = np.zeros((2, 2))
    row = [k, 1.0]
    out[0] = row
    return np.sum(out**2 * np.array([1.0, 3.0]))


def row_appended(k):
    out = np.zeros((2, 2))
    row = []
    row.append(k * k)
    row.append(2.0)
    out[1] = row
    return np.sum(out**2 * np.array([1.0, 3.0]))


def rows_joined(k):
    out = np.zeros((2, 2))
    out[0] = [k] + [1.0]
    return np.sum(out**2 * np.array([1.0, 3.0]))


def one_value_per_write(k):
    out = np.zeros(3)
    out[0] = k * 2.0
    out[1:] = k**2
    return np.sum(out**2)


def rows_stacked(k):
    traj = np.zeros((3, 2))
    for t in range(3):
        traj[t] = np.stack([k * (t + 1), k * 0.0 + 1.0])
    return np.sum(traj**2 * np.array([1.0, 2.0]))


State = namedtuple("State", ["x", "v"])


def simulate(k, s):
    traj = np.zeros((4, 2))
    for t in range(4):
        s = State(s.x + 0.1 * s.v, s.v - 0.1 * k * s.x)
        traj[t] = [s.x, s.v]
    return traj


def simulated_loss(k, x0):
    return np.sum(simulate(k, State(x0, 0.0)) ** 2 * np.array([1.0, 3.0]))


def test_a_list_written_into_a_row_is_right_by_source_and_refused_on_the_tape():
    """The helper's State is a record made in the function (by source since round 33);
    the tape meets the list written into a row and refuses it."""
    with pytest.raises(sg.S2SGradError, match="np.stack"):
        sg.grad(simulated_loss, wrt=(0, 1), mode="tape")(1.3, 0.7)
    for mode in ("s2s", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", sg.S2SGradWarning)  # no fallback in auto
            found = sg.grad(simulated_loss, wrt=(0, 1), mode=mode)(1.3, 0.7)
        for i in (0, 1):
            assert_close(found[i], numeric_grad(simulated_loss, [1.3, 0.7], i))


@pytest.mark.parametrize(
    "f", [rows_from_lists, row_from_tuple, row_named, row_appended, rows_joined]
)
def test_the_tape_refuses_a_list_written_into_a_plain_array(f):
    with pytest.raises(sg.NonDifferentiableError, match="np.stack") as refused:
        sg.grad(f, mode="tape")(1.3)
    assert "test_tape_writes_of_lists.py:" in str(refused.value)


@pytest.mark.parametrize(
    "f", [rows_from_lists, row_from_tuple, row_named, row_appended, rows_joined]
)
@pytest.mark.parametrize("k", [0.4, 1.3, -2.1])
def test_source_transformation_differentiates_it(f, k):
    expected = numeric_grad(f, [k], 0)
    for mode in ("s2s", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = sg.grad(f, mode=mode)
            assert_close(g(k), expected, rtol=1e-6)
            assert_close(g(k), expected, rtol=1e-6)


@pytest.mark.parametrize("f", [one_value_per_write, rows_stacked])
@pytest.mark.parametrize("k", [0.4, -1.7])
def test_the_tape_still_takes_over_one_value(f, k):
    g = sg.grad(f, mode="tape")
    assert_close(g(k), numeric_grad(f, [k], 0), rtol=1e-6)
    assert_close(g(k), numeric_grad(f, [k], 0), rtol=1e-6)
