"""``items.pop(i)`` of a list the function made: ``value = items[i]`` and the rest a new
list, differentiated to second order in every mode; a list another name holds stays
refused, naming the line (pop would change what that name sees)."""

import re
import warnings

import numpy as np
import pytest
from oracle import assert_close, directional_derivative, numeric_grad

import s2sgrad as sg

HERE = re.escape(__file__)


def first_and_last(x, y):
    items = [y**2, x, y * x]
    v = items.pop()
    w = items.pop(0)
    return np.sum(np.sin(v * w + items[0]))


def queue(x, y):  # a work list consumed from the front
    pending = [x, y, x * y, np.tanh(x)]
    total = 0.0
    appended = False
    while pending:
        head = pending.pop(0)
        total = total + np.sum(head**2)
        if len(pending) == 2 and not appended:
            pending.append(head * 0.5)
            appended = True
    return total


def computed_index(x, y):
    items = [x, y, np.sin(x), np.cos(y)]
    k = 1
    middle = items.pop(k + 1)
    items.pop(-1)  # dropped
    return np.sum(middle * items[0]) + np.sum(items[1] * items[-1])


def pairs_popped(x, y):
    layers = [(x, y), (y * 2.0, x + 1.0), (x * y, y)]
    w, b = layers.pop(1)
    return np.sum(np.tanh(w * b)) + sum(np.sum(a * c) for a, c in layers)


def popped_from_a_shared_list(x, y):
    items = [x, y, x * y]
    seen = items
    v = items.pop(0)
    return np.sum(v * seen[0])


PROGRAMS = [first_and_last, queue, computed_index, pairs_popped]
RNG = np.random.default_rng(8)
X, Y = RNG.normal(size=3), RNG.normal(size=3)


@pytest.mark.parametrize("mode", ["s2s", "tape", "auto"])
@pytest.mark.parametrize("function", PROGRAMS)
def test_popped_entries_are_differentiated_to_second_order(function, mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # mode="auto" uses no tape
        gradient = sg.grad(function, wrt=(0, 1), mode=mode)(X, Y)
        along = (RNG.normal(size=3), RNG.normal(size=3))
        products = sg.hvp(function, (X, Y), along, mode=mode)
    for position in (0, 1):
        assert_close(gradient[position], numeric_grad(function, (X, Y), position), 1e-5, 1e-7)
    taped = sg.grad(function, wrt=(0, 1), mode="tape")
    expected = directional_derivative(lambda xy: taped(*xy), (X, Y), along, step=1e-5)
    for got, want in zip(products, expected, strict=True):
        assert_close(got, want, rtol=1e-4, atol=1e-6)


def test_a_pop_another_name_would_see_is_refused_at_its_line():
    with pytest.raises(sg.UnsupportedError, match=rf"{HERE}:\d+: \.pop\(\) writes into 'items'"):
        sg.grad(popped_from_a_shared_list, mode="s2s")(X, Y)
    expected = numeric_grad(popped_from_a_shared_list, (X, Y), 0)
    with pytest.warns(UserWarning):  # mode="auto" uses the tape
        assert_close(sg.grad(popped_from_a_shared_list)(X, Y), expected, 1e-5, 1e-7)


def repeated_by_a_float(x, n):
    parts = [np.sin(x)] * n
    return np.sum(parts[0])


def test_a_refusal_raised_as_generated_code_runs_names_the_users_function():
    """The runtime's own refusals (here repetition by a float, found only when it runs) start
    with the user's file and line, as the transformer's do."""
    with pytest.raises(sg.UnsupportedError, match=rf"^{HERE}:\d+: '\*' of a list by a float"):
        sg.grad(repeated_by_a_float, mode="s2s")(X, 2.5)
    with pytest.raises(sg.UnsupportedError, match=rf"^{HERE}:\d+: '\*' of a list by a float"):
        sg.jvp(lambda x: repeated_by_a_float(x, 2.5), (X,), (X,), mode="s2s")
