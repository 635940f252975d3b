"""``row + [a, b]`` where ``row`` is an array: NumPy adds item by item.

Source transformation makes ``a + b`` a join of sequences where one side is surely a list
(``layers = params[:1] + params[2:]``); with an array on the other side NumPy adds, and the
join's derivative (a split of the cotangent) raised an IndexError from generated code. It
is refused with the user's file and the fix; the fix itself, and joins of lists, are
differentiated.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle import assert_close, call_twice, numeric_grad

import s2sgrad as sg


def added_in_place(k):
    traj = np.zeros((2, 2))
    traj[0] += [k, 1.0]
    return np.sum(traj**2 * np.array([1.0, 3.0]))


def added(k, row):
    return np.sum((row + [k, k * k]) ** 2)


def added_as_array(k, row):
    return np.sum((row + np.array([k, k * k])) ** 2)


def joined(k, row):
    items = [row[0]] + [k, k * row[1]]
    return items[0] * items[1] + items[2] ** 2


@pytest.mark.parametrize("mode", ["s2s", "auto"])
def test_an_array_plus_a_list_is_refused_with_the_users_file(mode):
    for f, args in ((added_in_place, (1.3,)), (added, (1.3, np.array([0.5, -1.0])))):
        with pytest.raises(sg.UnsupportedError, match=r"np\.array") as refused:
            sg.grad(f, mode=mode)(*args)
        assert "test_array_plus_list.py:" in str(refused.value)


@pytest.mark.parametrize("f", [added_as_array, joined])
@pytest.mark.parametrize("mode", ["s2s", "auto", "tape"])
def test_the_array_and_joined_lists_are_differentiated(f, mode):
    rng = np.random.default_rng(3)
    args = (float(rng.normal()), rng.normal(size=2))
    for index in (0, 1):
        expected = numeric_grad(f, list(args), index)
        assert_close(call_twice(sg.grad(f, wrt=index, mode=mode), *args), expected, rtol=1e-6)
