"""``y[i] = v`` into a plain array the function made, on the tape, where ``v`` is a list
or tuple that the expression does not show: a helper's result (``traj[0] = pair(k)``), an
item of a list of rows (``traj[t] = rows[t]``), a loop's row.

NumPy converts such a list's items one by one as it stores them, and the tape, asked to
convert the one item it records, took that item for the whole value: ``traj[0] = [k,
1.0]`` was recorded as ``traj[0] = k``, a wrong gradient. The tape now takes a plain array
over only when the value written is known to be one value (looked up again in the running
frame when it is a name, an attribute or an item of a list), and otherwise refuses the
write naming the line; source transformation differentiates all of them.
"""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
import pytest
from oracle import assert_close, numeric_grad

import s2sgrad as sg

WEIGHTS = np.array([1.0, 3.0])


def pair(k):
    return [k, 1.0]


def pair_of_values(k):
    return (k, 2.0 * k)


def row_from_a_helper(k):
    traj = np.zeros((2, 2))
    traj[0] = pair(k)
    return np.sum(traj**2 * WEIGHTS)


def row_of_two_values_from_a_helper(k):
    traj = np.zeros((2, 2))
    traj[1] = pair_of_values(k)
    return np.sum(traj**2 * WEIGHTS)


def rows_from_a_list_of_lists(k):
    rows = [[k, 1.0], [2.0, k * k]]
    traj = np.zeros((2, 2))
    for t in range(2):
        traj[t] = rows[t]
    return np.sum(traj**2 * WEIGHTS)


def rows_from_a_loop(k):
    traj = np.zeros((2, 2))
    for t, row in enumerate([[k, 1.0], [2.0, k]]):
        traj[t] = row
    return np.sum(traj**2 * WEIGHTS)


State = namedtuple("State", ["x", "v"])


def rows_from_tuples(k):
    states = [(k, 1.0), (2.0, k * k)]
    traj = np.zeros((2, 2))
    for t in range(2):
        traj[t] = states[t]
    return np.sum(traj**2 * WEIGHTS)


def row_from_a_numpy_tuple(k):
    traj = np.zeros((2, 2))
    traj[0] = np.linalg.slogdet(np.diag([k, 2.0]) + 3.0)  # (sign, log|det|)
    return np.sum(traj**2 * WEIGHTS)


SEQUENCES = [
    row_from_a_helper,
    row_from_a_numpy_tuple,
    row_of_two_values_from_a_helper,
    rows_from_a_list_of_lists,
    rows_from_a_loop,
    rows_from_tuples,
]


@pytest.mark.parametrize("f", SEQUENCES)
def test_the_tape_refuses_a_sequence_it_cannot_see_written(f):
    with pytest.raises(sg.NonDifferentiableError, match="np.stack") as refused:
        sg.grad(f, mode="tape")(1.3)
    assert "test_tape_writes_of_sequences_by_name.py:" in str(refused.value)


@pytest.mark.parametrize("f", SEQUENCES)
@pytest.mark.parametrize("k", [0.4, 1.3, -2.1])
def test_source_transformation_differentiates_it(f, k):
    expected = numeric_grad(f, [k], 0)
    for mode in ("s2s", "auto"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = sg.grad(f, mode=mode)
            assert_close(g(k), expected, rtol=1e-6)
            assert_close(g(k), expected, rtol=1e-6)


def items_of_an_array(x):
    out = np.zeros((3, 2))
    for t in range(3):
        out[t] = x[t] * x[t + 1]
    return np.sum(out**2)


def items_of_a_list_of_arrays(x):
    states = [x[:2], x[1:3] * 2.0, x[2:]]
    out = np.zeros((3, 2))
    for t in range(3):
        out[t] = states[t]
    return np.sum(np.sin(out))


def fields_of_a_named_tuple(x):
    s = State(x[0], x[1])
    out = np.zeros(2)
    out[0] = s.x
    out[1] = s.v * s.x
    return np.sum(out**3)


def arithmetic_and_reductions(x):
    out = np.zeros((4, 2))
    out[0] = x[:2] if x[0] > 0 else x[1:3]
    out[1] = sum(x[i] for i in range(2))
    out[2] = x[:2] + [1.0, 2.0]
    out[3] = (x[1:3] * x[:2]).sum() + np.tanh(x[2])
    out[3, 0] = max(x[0] * x[1] - 0.1, 0.0)
    out[2, 1] = x[1] * np.random.default_rng(0).normal()
    return np.sum(out**3)


def items_of_numpy_results(x):
    out = np.zeros((3, 2))
    out[0] = np.take_along_axis(x.reshape(2, 2), np.array([[1], [0]]), axis=1)[:, 0]
    out[1] = np.linalg.solve(np.eye(2) * 2.0, x[1:3])
    out[2] = np.sum(x.reshape(2, 2), axis=0)
    return np.sum(out**3)


def columns_of_reshaped_windows(x):
    cols = np.zeros((3, 2))
    for i in range(3):
        cols[i, :] = x[i : i + 2].reshape(-1) * 1.5
        cols[i] = x[i : i + 2].reshape(-1)
    return np.sum(np.tanh(cols) ** 2)


ONE_VALUE = [
    (columns_of_reshaped_windows, (4,)),
    (items_of_numpy_results, (4,)),
    (items_of_an_array, (4,)),
    (items_of_a_list_of_arrays, (4,)),
    (fields_of_a_named_tuple, (2,)),
    (arithmetic_and_reductions, (3,)),
]


@pytest.mark.parametrize(("f", "shape"), ONE_VALUE)
def test_the_tape_still_takes_over_one_value(f, shape):
    rng = np.random.default_rng(7)
    for _ in range(3):
        x = rng.normal(size=shape)
        g = sg.grad(f, mode="tape")
        assert_close(g(x), numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8)
        assert_close(g(x), numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8)


def test_a_second_value_converted_by_the_same_write_is_refused():
    # a tuple of two values reaching the write through a call: NumPy converts both
    with pytest.raises(sg.NonDifferentiableError, match="np.stack"):
        sg.grad(row_of_two_values_from_a_helper, mode="tape")(0.0)
