"""``zip(*rows)``, ``list(reversed(xs))`` and ``sorted(xs, key=...)`` by source
transformation: each was refused in mode "s2s" (an iterator used up as it is read, or a
builtin forward mode could not follow), so that mode "auto" took the function to the tape.
Now ``zip(*rows)`` is a loop reading the ``j``-th element of each row, ``list(reversed(xs))``
a comprehension over ``reversed(xs)``, and ``sorted(xs, key=f)`` the items read in an
order found at run time (``runtime.sorted_order``, a branch taken). Each is checked against
central differences: the gradient in the three modes on a first and a later call, ``jvp``
and ``hvp``; and mode "auto" must not fall back to the tape."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from oracle import (
    assert_close,
    assert_grad_jvp_and_hvp,
    call_twice,
    numeric_grad,
    numeric_jvp,
)

import s2sgrad as sg


def _transposed_pairs(x):
    rows = [x[0:3], np.sin(x[3:6])]
    total = 0.0
    for a, b in zip(*rows):
        total = total + a * b**2
    return total


def _transposed_rows_of_vectors(x):
    rows = [x[0:6].reshape(3, 2), x[6:12].reshape(3, 2) * 2.0]
    columns = list(zip(*rows))  # three pairs of 2-vectors
    return np.sum(columns[0][0] * columns[2][1]) + np.sum(columns[1][0] ** 2 * columns[1][1])


def _transposed_matrix(x):
    grid = x[:6].reshape(2, 3)
    total = 0.0
    for column in zip(*grid):
        total = total + np.tanh(column[0]) * column[1]
    return total


def _ragged_transpose_in_a_tuple(x):
    rows = (x[:4], x[4:7] * 3.0)
    columns = tuple(zip(*rows))  # as long as the shorter row
    return columns[0][0] * columns[2][1] + columns[1][1] ** 2 + len(columns)


def _reversed_list(x):
    xs = [x[0], x[1] * 2.0, x[2] ** 2, np.sin(x[3])]
    ys = list(reversed(xs))
    return ys[0] * ys[1] + ys[2] * ys[3] ** 2


def _reversed_tuple_of_an_array(x):
    backwards = tuple(reversed(x[:4]))
    return backwards[0] * 2.0 + backwards[3] * backwards[1] ** 2


def _loop_over_a_reversed_list(x):
    xs = [x[0], x[1], x[2] * x[3]]
    state = 1.0
    for v in list(reversed(xs)):
        state = state * v + 1.0
    return state


def _sorted_by_distance(x):
    values = [x[0], x[1] * 2.0, x[2] ** 2, x[3] * x[4]]
    nearest = sorted(values, key=lambda v: abs(v - 0.3))
    return nearest[0] * 3.0 + nearest[1] * nearest[2] - nearest[3] ** 2


def _energy(row):
    return np.sum(row**2)


def _sorted_rows_by_a_named_key(x):
    rows = [x[0:2], x[2:4] * 1.5, x[4:6] - 0.5]
    ordered = sorted(rows, key=_energy, reverse=True)
    return np.sum(ordered[0] * 2.0 + ordered[1] * ordered[2] ** 2)


def _loop_over_sorted_values(x):
    values = [x[i] * (i + 1.0) for i in range(5)]
    total = 0.0
    for rank, v in enumerate(sorted(values, key=lambda t: -t)):
        total = total + v * (rank + 1.0)
    return total


def _sorted_keys_of_a_dict(x):
    params = {"b": x[0], "a": x[1] * 2.0, "c": x[2]}
    total = 0.0
    for name in sorted(params, key=lambda k: k[0]):
        total = total * 2.0 + params[name]
    return total


PROGRAMS = [
    _transposed_pairs,
    _transposed_rows_of_vectors,
    _transposed_matrix,
    _ragged_transpose_in_a_tuple,
    _reversed_list,
    _reversed_tuple_of_an_array,
    _loop_over_a_reversed_list,
    _sorted_by_distance,
    _sorted_rows_by_a_named_key,
    _loop_over_sorted_values,
    _sorted_keys_of_a_dict,
]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__.strip("_"))
@pytest.mark.parametrize("mode", ["s2s", "tape"])
def test_gradient_jvp_and_hvp_against_differences(program, mode):
    rng = np.random.default_rng(len(program.__name__))
    x, v = rng.normal(size=12), rng.normal(size=12)
    assert_grad_jvp_and_hvp(program, x, v, mode)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__.strip("_"))
def test_mode_auto_keeps_source_transformation(program):
    rng = np.random.default_rng(7 + len(program.__name__))
    x = rng.normal(size=12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sg.S2SGradWarning)  # a fallback to the tape warns
        gradient = call_twice(sg.grad(program, mode="auto"), x)
        sg.hvp(program, (x,), (rng.normal(size=12),), mode="auto")
    assert_close(gradient, numeric_grad(program, [x], 0), rtol=1e-5)


def test_the_order_changes_with_the_point_and_the_derivative_follows_it():
    # the same function at two points whose order differs: each gradient is that of the
    # order taken there (fresh at each call, not the first call's permutation)
    first, second = np.array([0.9, 0.1, 0.5, 0.2, 0.4]), np.array([0.1, 0.9, 0.5, 0.2, 0.4])
    gradient = sg.grad(_sorted_by_distance, mode="s2s")
    for x in (first, second, first):
        assert_close(gradient(x), numeric_grad(_sorted_by_distance, [x], 0), rtol=1e-5)


def test_a_loop_changing_its_rows_is_still_refused_in_s2s():
    def grows_a_row(x):
        rows = [x[:3], x[3:6]]
        total = 0.0
        for a, b in zip(*rows):
            rows[0] = rows[0] * 2.0  # zip read the old row; an index loop would see this
            total = total + a * b
        return total

    x = np.arange(1.0, 7.0)
    with pytest.raises(sg.UnsupportedError, match="zip"):
        sg.grad(grows_a_row, mode="s2s")(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.S2SGradWarning)
        got = call_twice(sg.grad(grows_a_row, mode="auto"), x)
    assert_close(got, numeric_grad(grows_a_row, [x], 0))


def _sorted_without_a_key(x):
    values = [x[0] * 1.0, x[1] * 2.0, x[2] ** 2, np.sin(x[3])]
    ordered = sorted(values)  # the builtin, called on the tape as the code runs
    return ordered[0] * 3.0 + ordered[1] * ordered[2] - ordered[3] ** 2


def test_a_builtin_called_in_forward_mode_runs_on_the_tape_as_in_reverse_mode():
    # sorted(xs) without key= stays a call of the builtin: reverse mode ran it on the tape,
    # forward mode refused it ("no source to transform"); the Hessian still refuses it
    rng = np.random.default_rng(3)
    x, v = rng.normal(size=4), rng.normal(size=4)
    _, tangent = sg.jvp(_sorted_without_a_key, (x,), (v,), mode="s2s")
    assert_close(tangent, numeric_jvp(_sorted_without_a_key, [x], 0, v), rtol=1e-5)
    with pytest.raises(sg.UnsupportedError, match="mode='auto'") as refused:
        sg.hvp(_sorted_without_a_key, (x,), (v,), mode="s2s")
    assert "test_sorted_zip_reversed_in_s2s.py:" in str(refused.value)
    assert_grad_jvp_and_hvp(_sorted_without_a_key, x, v, "auto")
